"""The run report: every figure a run's report shows, computed once by
:mod:`compilescope.analysis.build` from the records. Renderers only format these values;
none computes a figure of its own. The definitions of compile, recompile, eager fallback,
partial eager fallback, request error and speedup are stated once, in :mod:`compilescope.report`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ..model import NumericsCheck

if TYPE_CHECKING:
    from .guards import GuardSummary

IQR_WARN_THRESHOLD = 0.10  # IQR/median above this marks a steady-state figure as noisy


@dataclass(frozen=True)
class Stats:
    n: int
    median: float
    q1: float
    q3: float

    @property
    def iqr(self) -> float:
        return self.q3 - self.q1

    @property
    def relative_iqr(self) -> float:
        return self.iqr / self.median if self.median > 0 else 0.0

    @property
    def noisy(self) -> bool:
        return self.relative_iqr > IQR_WARN_THRESHOLD

    @property
    def half_iqr(self) -> float:
        """The ± printed beside the median."""
        return self.iqr / 2

    @property
    def above(self) -> float:
        """From the median up to the third quartile (an error bar's upper arm)."""
        return self.q3 - self.median

    @property
    def below(self) -> float:
        """From the first quartile up to the median (an error bar's lower arm)."""
        return self.median - self.q1


RowStatus = Literal["compiled", "reused", "eager fallback", "error", "eager", "partial eager fallback"]
SpeedClass = Literal["faster", "slower", "matched", "indistinct", ""]
# a shape's numerics check: none ran, it passed, it failed, or it is not counted (it ran
# eagerly, or eager itself did not repeat its outputs)
NumericsState = Literal["", "pass", "fail", "not counted"]


@dataclass(frozen=True)
class ShapeRow:
    """One distinct shape under one trial."""

    shape: str
    requests: int
    first_call_index: int
    first_call_s: float | None
    status: RowStatus  # how the shape's first call ran
    cause: str  # why it compiled, or why it ran eagerly
    compile_ids: tuple[str, ...]
    fallback_calls: int  # calls of this shape that ran eagerly
    error: str | None
    steady: Stats | None  # this strategy's samples (None when they ran eagerly)
    eager: Stats | None  # eager, interleaved in the same process
    eager_trial: Stats | None  # the eager trial's own process, for comparison
    speedup: float | None  # eager.median / steady.median, same process
    speed_class: SpeedClass
    numerics: NumericsCheck | None
    steady_note: str  # why steady figures are missing ("eager fallback", an error…)
    error_calls: int = 0  # requests of this shape that raised
    partial_fallback_calls: int = 0  # requests of this shape that ran a frame eagerly, others compiled
    p_value: float | None = None  # Mann–Whitney U of the compiled against the eager samples (two-sided)
    numerics_text: str = "—"  # the numerics cell: "1.5e-07", "FAIL 3.0e-02", "eager: not counted"…
    numerics_state: NumericsState = ""
    numerics_pass: bool | None = None  # the check passed (False: failed); None when not counted or not run
    counted_abs_err: float | None = None  # the check's max abs error where it counts (None: not counted or not run)
    counted_rel_err: float | None = None  # … and its max relative error
    # made by analysis/presented.py's finish_row:
    recompiled: bool = False  # its first call compiled after the stream's first request (a recompile or a new frame's)
    other_fallback_calls: int = 0  # calls that ran eagerly besides what its status says
    other_partial_fallback_calls: int = 0  # calls that ran partly eagerly besides what its status says
    steady_failed: bool = False  # its steady figures are missing for a reason worth marking (an error, a fallback)
    steady_missing: str = ""  # a compiled trial's shape with no compiled steady figure worth marking: why ("" if none)


@dataclass(frozen=True)
class ChangeRow:
    """A request whose shape differs from the previous one."""

    index: int
    previous: str
    shape: str
    latency_s: float | None
    compile_ids: tuple[str, ...]
    reasons: tuple[str, ...]  # PyTorch's words, one per failing guard
    outcome: Literal["recompiled", "compiled", "reused", "eager fallback", "refused", "error", "partial eager fallback"]
    eager_frames: tuple[str, ...] = ()  # the frames that ran eagerly in a partial eager fallback
    reused: bool = False  # it ran a compiled graph without recompiling (analysis/presented.py)


@dataclass(frozen=True)
class CallPoint:
    """One stream request, for timelines: its latency, the running total, and what happened."""

    index: int
    shape: str
    latency_s: float | None
    cumulative_s: float
    event: Literal["first compile", "recompile", "eager fallback", "refused", "error", "partial eager fallback", ""]
    compile_ids: tuple[str, ...]
    reasons: tuple[str, ...]
    compile_rows: tuple[CompileRow, ...] = ()  # the compiles this request caused, in order
    error: str | None = None  # for a request that raised: the first error its shape raised
    # made by analysis/presented.py's timeline_compiles:
    count: int = 0  # requests run by its end (index + 1): the cumulative plot's x
    compile_s: float = 0.0  # its compiles' time, summed
    span_s: float = 0.0  # its place on a trace of requests back to back: its latency, at least its compiles' time
    went_wrong: bool = False  # it ran eagerly, the recompile limit refused it, or it raised
    marked: bool = False  # a recompile, or it went wrong: what a trace marks at its moment
    raised: bool = False  # the request raised


@dataclass(frozen=True)
class CompileRow:
    """One compile attempt, with its time split into exclusive phases (PyTorch's phases nest:
    dynamo ⊇ aot_autograd ⊇ inductor ⊇ inductor code gen)."""

    compile_id: str
    epoch: int
    name: str
    outcome: str
    phase: str
    call_index: int | None
    compile_s: float | None
    backward_s: float | None
    exclusive_s: tuple[tuple[str, float], ...]  # (phase, seconds) that add up to compile_s
    start_us: int | None
    with_backward_s: float | None = None  # compile_s + backward_s: the frame compile's whole time
    offset_us: int | None = None  # a probe's: start_us from its first compile's start (the time axis's zero)
    # made by analysis/presented.py's finish_compile:
    in_stream: bool = False  # caused by a stream request (not the steady-state or numerics phase)
    made_entry: bool = False  # the attempt compiled and left a cache entry (not failed, not refused)


@dataclass(frozen=True)
class CompileCounts:
    compiles: int = 0
    recompiles: int = 0
    failed: int = 0
    refused: int = 0  # attempts the recompile limit refused (not compiles)
    compile_s: float = 0.0  # forward + backward compile time of the compiles
    backward_s: float = 0.0


@dataclass(frozen=True)
class SpeedGroup:
    count: int
    lo: float | None
    hi: float | None
    shapes: tuple[str, ...]


@dataclass(frozen=True)
class SteadySummary:
    shapes: int  # shapes with compiled and eager samples (eager fallbacks left out)
    weighted_ratio: float  # Σ requests·eager p50 / Σ requests·compiled p50 over the stream's mix
    median_ratio: float  # the true median of the per-shape speedups
    faster: SpeedGroup
    slower: SpeedGroup
    matched: SpeedGroup
    size_note: str  # "the larger ones" when every faster shape is larger than every slower one
    noisy: bool
    indistinct: SpeedGroup = SpeedGroup(0, None, None, ())  # beyond the tolerance, not beyond the noise
    too_few: int = 0  # of which: shapes with too few samples for the test ever to tell them apart


@dataclass(frozen=True)
class BreakRow:
    reason: str  # the first line of PyTorch's text
    filename: str | None
    line: int | None
    count: int
    text: str = ""  # PyTorch's whole text
    explanation: str | None = None
    hints: tuple[str, ...] = ()


@dataclass(frozen=True)
class ErrorGroup:
    """One distinct exception the requests of a trial raised, with how many raised it
    (messages that differ only in numbers, such as a size, are one error)."""

    type: str
    headline: str  # "Type: first line" of the first occurrence
    message: str  # its full message
    op_line: str | None  # the line naming the PyTorch op that failed
    user_frame: str | None  # the last frame in the user's code
    count: int
    requests: tuple[int, ...]
    shapes: tuple[str, ...]


@dataclass(frozen=True)
class Note:
    level: Literal["error", "warning", "noise", "info"]
    text: str


@dataclass(frozen=True)
class TrialReport:
    label: str
    strategy: str
    cache: str
    status: str
    error: str | None
    compiles_code: bool  # the strategy compiles (False for eager)
    requests: int
    completed: int  # requests with a record (a dying trial keeps those it finished)
    stream: CompileCounts  # compiles caused by stream requests
    later: CompileCounts  # compiles in the steady-state and numerics phases, apart
    graph_breaks: tuple[BreakRow, ...]
    fallbacks: int
    fallback_shapes: tuple[str, ...]
    first_call_s: float | None
    stream_s: float | None  # wall time of the stream's requests that completed
    eager_stream_s: float | None  # the eager trial's, when it ran the same requests
    break_even_request: int | None  # measured within the stream
    steady: SteadySummary | None
    saving_per_request_s: float | None  # stream-weighted eager − compiled p50
    saving_noise_s: float | None  # the IQR band around that saving
    saving_significant: bool
    saving_beyond_band: bool  # the saving lies outside its IQR band (whether or not the test bears it out)
    saving_testable: bool  # the samples could ever bear a stream-wide difference out (not too few)
    compile_cost_s: float  # excess latency of the calls that compiled
    n_star: int | None  # projected break-even request count (only from a significant saving)
    n_star_text: str  # the projection in words: the count, "never", "could not tell", "within noise" or "—"
    lifetime: int | None
    lifetime_gain_s: float | None
    numerics_checked: int  # shapes checked while running compiled
    numerics_failed: int
    numerics_eager: int  # shapes whose check ran eagerly: not counted
    numerics_not_comparable: int  # shapes with no verdict (eager varied or raised, outputs not comparable)
    numerics_unjudged: tuple[str, ...]  # why, each reason once (NumericsCheck.unjudged)
    numerics_uncompared: int  # parts of checked outputs past the walk's bounds, not compared
    max_abs_err: float | None
    call_errors: int
    padding_waste: float | None
    cache_load_s: float | None
    rows: tuple[ShapeRow, ...]
    changes: tuple[ChangeRow, ...]
    reused_median_s: float | None  # median latency of the shape changes that reused a graph
    timeline: tuple[CallPoint, ...]
    compile_rows: tuple[CompileRow, ...]
    verdict: tuple[str, ...]
    notes: tuple[Note, ...]
    errors: tuple[ErrorGroup, ...] = ()  # the request errors, grouped
    partial_fallbacks: int = 0  # requests that ran a frame eagerly while others ran compiled
    partial_fallback_shapes: tuple[str, ...] = ()
    verdict_text: str = ""  # the verdict clauses as one sentence
    reused_changes: int = 0  # shape changes that ran a compiled graph without recompiling
    numerics_text: str = ""  # "2 pass, 1 eager", "1 of 3 FAIL": the numerics column
    guards: GuardSummary | None = None  # what the guards charged every call (compiled trials that measured it)
    guard_extra_s: float | None = None  # per request: the lookup the stream's order added, taken from the saving
    soundness: tuple[SoundnessRow, ...] = ()  # a guard filter's dropped guards, changed in the trial
    dropped_guards: tuple[tuple[str, int], ...] = ()  # the kinds of guards a guard filter dropped
    ended_badly: bool = False  # it did not finish as planned: a status other than ok or unavailable
    died: bool = False  # it ended badly before its last request (the request it died in: ``completed``)
    failed: bool = False  # it ended badly, or a request raised
    all_raised: bool = False  # it failed because every request raised
    shown: bool = False  # it ran its stream (ok or partial): its figures are shown
    status_text: str = ""  # "failed (3/10 requests)", "unavailable": its status, with the requests it completed
    problems: tuple[str, ...] = ()  # what did not go as planned, in words: its status and error, what raised, ran eagerly
    break_even_s: float | None = None  # the stream's cumulative time at the break-even request
    dropped_count: int = 0  # the guards a guard filter dropped, summed over their kinds
    dropped_text: str = ""  # their kinds, the largest three named ("TYPE_MATCH 144, …, +9 more")
    attempted: int = 0  # requests it ran: those it completed and, when it died, the one it died in


@dataclass(frozen=True)
class SoundnessRow:
    """A change to something a guard filter stopped guarding, and what the compiled call did."""

    mutation: str  # the change, as code
    kind: str
    guard: str
    shape: str
    verdict: Literal["stale", "sound", "no effect", "unknown"]  # stale: compiled ≠ eager after the change
    detail: str


@dataclass(frozen=True)
class StartRow:
    strategy: str
    cells: tuple[str, ...]  # per start mode: "13.3 s (2)" or a status


@dataclass(frozen=True)
class RunReport:
    workload: str
    requests: int
    lifetime: int | None
    trials: tuple[TrialReport, ...]
    shapes: tuple[str, ...]
    start_modes: tuple[str, ...]
    start_rows: tuple[StartRow, ...]
    eager_spread: float | None  # the largest ratio, ≥ 1, between the eager trial's p50 and the same-process eager p50 of a shape
    missing: tuple[str, ...]  # planned trials not finished (an interrupted run)
    notes: tuple[Note, ...]
    command: str = ""  # the command that made the run
    created: str = ""
    failed: bool = False  # a trial failed (:attr:`TrialReport.failed`) or a planned one did not finish
