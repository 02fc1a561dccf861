"""The warm-up report: the plan (a dry-run forecast) beside what trials measured of it —
frozen records a renderer formats and nothing recomputes.

``plan`` is the :class:`~compilescope.model.WarmupPlan` the report is of (with ``recommended``
set by the verdict when measured). Without
measurement (``warmup --no-measure``) ``measured`` is empty and ``verdict`` None: every
figure shown is then the plan's, a forecast.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..model import WarmupPlan
from .verify import VerifyReport


@dataclass(frozen=True)
class AfterStartup:
    """A frame compile (or an eager run) that happened on the request path after start-up,
    measured: the plan did not hold for this request."""

    index: int  # the stream request
    shape: str
    what: str  # "compile 0/3", "eager fallback"
    guards: tuple[str, ...] = ()  # PyTorch's words, of the entries that rejected it


@dataclass(frozen=True)
class MeasuredStart:
    """One start mode of a strategy's plan, measured by a trial: start-up calls, then the stream."""

    cache: str  # cold, warm, mega
    status: str  # the trial's status
    startup_s: float | None  # sum of the start-up calls' latencies
    load_s: float | None  # mega: loading the cache artifacts, before the first call
    startup_compiles: int  # frame compiles during start-up
    after: tuple[AfterStartup, ...] = ()  # compiles and eager runs after start-up (the plan's check)
    error: str | None = None
    artifacts_bytes: int | None = None

    @property
    def after_text(self) -> str:
        """What happened after start-up, counted apart: "0", "2 compile(s)", "5 eager", "1 compile(s), 3 eager"."""
        compiled = sum(1 for a in self.after if a.what.startswith("compile "))
        eager = len(self.after) - compiled
        return ", ".join(p for p in (f"{compiled} compile(s)" if compiled else "", f"{eager} eager" if eager else "")
                         if p) or "0"

    @property
    def total_s(self) -> float | None:
        if self.startup_s is None:
            return None
        return self.startup_s + (self.load_s or 0.0)


@dataclass(frozen=True)
class StrategyMeasured:
    strategy: str
    starts: tuple[MeasuredStart, ...]
    steady_s: float | None  # per request, the per-shape medians weighted by the stream's shape frequencies
    steady_q1_s: float | None  # the same weighting of the per-shape quartiles
    steady_q3_s: float | None
    steady_shapes: int  # distinct shapes with steady samples
    steady_missing: tuple[str, ...] = ()  # shapes without (label: why)
    notes: tuple[str, ...] = ()
    # shapes whose steady calls ran eagerly (past the recompile limit), "label (N requests)": their
    # eager time is in steady_s, as it is what their requests cost under the plan
    steady_eager: tuple[str, ...] = ()
    steady_eager_requests: int = 0  # how many of the recording's requests those shapes are

    def start(self, cache: str) -> MeasuredStart | None:
        for s in self.starts:
            if s.cache == cache:
                return s
        return None


@dataclass(frozen=True)
class VerdictRow:
    strategy: str
    cache: str
    startup_s: float
    steady_s: float
    total_s: float  # start-up + lifetime × steady


@dataclass(frozen=True)
class Verdict:
    lifetime: int
    lifetime_basis: str  # "--lifetime 10000", "the recorded stream's 300 requests"
    rows: tuple[VerdictRow, ...]
    recommended: str | None
    why: str
    steady_noise: tuple[str, ...] = ()  # pairs whose steady-state IQRs overlap: no steady difference
    other_starts: tuple[str, ...] = ()  # the start modes measured besides the ranked one whose best differs


@dataclass(frozen=True)
class WarmupReport:
    plan: WarmupPlan
    measured: tuple[StrategyMeasured, ...] = ()
    verdict: Verdict | None = None
    trial_stream: str = ""  # what the trials replayed after start-up
    wall_s: float = 0.0
    notes: tuple[str, ...] = field(default=())
    verified: VerifyReport | None = None  # ``warmup --verify``: the replay of a held-out stream after start-up

    def strategy(self, name: str) -> StrategyMeasured:
        found = self.measured_for(name)
        if found is None:
            raise KeyError(name)
        return found

    def measured_for(self, name: str) -> StrategyMeasured | None:
        """The trials of the plan's strategy ``name`` (None when it was not measured): the one
        join of plan rows to measured rows."""
        return next((s for s in self.measured if s.strategy == name), None)
