"""What happened to a request, and the small rules every report shares: each stated here once.

**The request outcome** (:class:`RequestOutcome`) is decided by :func:`classify`, from the
call's record and the stream compile records it caused, in one precedence, first match wins:

1. ``raised`` — the request raised;
2. ``eager`` — the strategy compiles nothing (the baseline);
3. the whole call ran eagerly (``CallRecord.ran_eagerly``): ``refused`` when the recompile
   limit refused a frame at this call, else ``eager fallback`` (a failed compile, a frame
   blocked earlier, a skipped frame);
4. ``partial eager fallback`` — some compiled graphs ran while a frame of the call ran eagerly
   (:func:`compilescope.collect.graphs.eager_frames`);
5. ``refused`` — the limit refused a frame at this call, and no frame with a compiled graph is
   known to have run eagerly (no graph was compiled yet, or the refused frame never had one);
6. ``recompile`` — the call compiled a frame that already had a cache entry;
7. ``compile`` — the call compiled a frame for the first time;
8. ``hit`` — an existing graph accepted the call.

How much of the call ran eagerly comes before why: a refusal that left the other frames running
compiled is a *partial* eager fallback, not a refused request — and a call that ran eagerly,
wholly or partly, is never shown as compiled, even when it also compiled a frame. Every
table (the latency timeline, the shape-change table, a shape's first call, the forecast, the
warm-up's measurement and verification) reads this one outcome, each in its own words
(:data:`TIMELINE_EVENT`, :data:`CHANGE_OUTCOME`, :data:`FIRST_CALL_STATUS`) — so a call is
never ``refused`` in one table and a partial eager fallback in another. ``unknown`` is a
forecast's: a request whose outcome cannot be predicted.

A forecast asks a narrower question — did the request stall on a compile, run eagerly, or
hit? — in its own words (:func:`forecast_word`): ``error`` when it raised, ``compile`` when it
compiled a frame (even if another frame ran eagerly: the stall is what a forecast warns of),
``eager`` when it ran eagerly, wholly or partly, ``unknown`` when it cannot be told, else
``hit``. A request repeating an earlier shape repeats its outcome (:func:`repeat_word`).

**A compile** is a frame compile attempt that compiled or failed while compiling
(:attr:`CompileRecord.is_compile <compilescope.model.CompileRecord.is_compile>`, the record's
own property, so capture and ``watch`` count as reports do); a refusal at the recompile limit
is not one. A cache entry exists only for an attempt that compiled
(:attr:`~compilescope.model.CompileRecord.made_entry`).

**The recompile limit in force** (:func:`limit_in_force`): the limit asked for
(``torch.compile(recompile_limit=…)``, ``--recompile-limit``), else the default a trial
recorded, else this process's (:func:`compilescope.compat.recompile_limit_value`).

**The tolerance** (:func:`within_tolerance`, :func:`tolerance_side`): two figures differ by
less than :data:`~compilescope.analysis.regimes.TOLERANCE` when the larger is below the
smaller × (1 + tolerance); the test is symmetric (a is within it of b exactly when b is of a)
and a difference of exactly the tolerance is a difference.

**A speedup** (:func:`speedup`) is eager p50 / compiled p50.

**A shape's label** (:func:`compilescope.model.shape_label`: ``16``, ``batch=4,seq=32``) and
**what ``make_inputs`` returns** (:func:`compilescope.model.call_arguments`: a ``dict`` is
keyword arguments; a pair ``(tuple, dict)`` is positional and keyword arguments; any other
tuple or list is the positional arguments; anything else is the one positional argument) are
defined with the records, where the report model and the trial runner read them too, and
re-exported here.
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, overload

from ..model import CallRecord, CompileRecord, call_arguments, shape_label
from .regimes import TOLERANCE

__all__ = [
    "CHANGE_OUTCOME", "FIRST_CALL_STATUS", "FIRST_COMPILE_CAUSE", "TIMELINE_EVENT", "Classified", "RequestOutcome", "by_call",
    "call_arguments", "classify", "classify_calls", "dry_run_word", "forecast_word", "limit_in_force", "repeat_word", "shape_label",
    "speedup", "tolerance_side", "trial_limit", "within_tolerance",
]


class RequestOutcome(str, enum.Enum):
    """What happened to one request (see the module docstring for the precedence)."""

    HIT = "hit"
    COMPILE = "compile"
    RECOMPILE = "recompile"
    REFUSED = "refused"
    EAGER_FALLBACK = "eager fallback"
    PARTIAL = "partial eager fallback"
    RAISED = "raised"
    EAGER = "eager"  # the strategy compiles nothing
    UNKNOWN = "unknown"  # a forecast that cannot be made

    @property
    def ran_eagerly(self) -> bool:
        """The request ran eagerly, wholly or a frame of it, though the strategy compiles."""
        return self in (RequestOutcome.REFUSED, RequestOutcome.EAGER_FALLBACK, RequestOutcome.PARTIAL)

    @property
    def compiled(self) -> bool:
        """The request compiled a frame and ran compiled graphs only."""
        return self in (RequestOutcome.COMPILE, RequestOutcome.RECOMPILE)


# ----------------------------------------------------------------------------- one request


def classify(records: Sequence[CompileRecord], *, error: str | None = None, ran_eagerly: bool | None = None,
             eager_frames: Collection[int] = (), compiles_code: bool = True) -> RequestOutcome:
    """The one classifier: a request's outcome from the compile records it caused, whether it
    raised (``error``), ran no compiled graph (``ran_eagerly``; None: cannot be told) and the
    frames it ran eagerly while others ran compiled (``eager_frames``)."""
    if error is not None:
        return RequestOutcome.RAISED
    if not compiles_code:
        return RequestOutcome.EAGER
    refused = any(r.refused for r in records)
    if ran_eagerly:
        return RequestOutcome.REFUSED if refused else RequestOutcome.EAGER_FALLBACK
    if eager_frames:
        return RequestOutcome.PARTIAL
    if refused:
        return RequestOutcome.REFUSED
    made = [r for r in records if r.is_compile]
    if any(r.is_recompile for r in made):
        return RequestOutcome.RECOMPILE
    return RequestOutcome.COMPILE if made else RequestOutcome.HIT


@dataclass(frozen=True)
class Classified:
    """One stream call with its outcome, the stream compile records it caused (``records``:
    compiles and refusals; ``made``: its compiles) and the frames it ran eagerly while others
    ran compiled."""

    call: CallRecord
    outcome: RequestOutcome
    records: tuple[CompileRecord, ...]
    eager_frames: tuple[int, ...] = ()

    @property
    def made(self) -> tuple[CompileRecord, ...]:
        return tuple(r for r in self.records if r.is_compile)

    @property
    def compile_ids(self) -> tuple[str, ...]:
        return tuple(str(r.compile_id) for r in self.made)


def by_call(compiles: Sequence[CompileRecord], phase: str = "stream") -> dict[int, list[CompileRecord]]:
    """The records of ``phase`` by the index of the call that caused them."""
    out: dict[int, list[CompileRecord]] = {}
    for r in compiles:
        if r.phase == phase and r.call_index is not None:
            out.setdefault(r.call_index, []).append(r)
    return out


def classify_calls(calls: Sequence[CallRecord], compiles: Sequence[CompileRecord], compiles_code: bool = True,
                   partial: Mapping[int, tuple[int, ...]] | None = None) -> list[Classified]:
    """Each stream call classified (:func:`classify`); ``partial``: the eager frames per call
    when already known (:func:`compilescope.collect.graphs.eager_frames` otherwise)."""
    from ..collect.graphs import eager_frames

    caused = by_call(compiles)
    frames = partial if partial is not None else eager_frames(calls, compiles)
    out = []
    for c in calls:
        mine = tuple(caused.get(c.index, ()))
        eager = tuple(frames.get(c.index, ()))
        outcome = classify(mine, error=c.error, ran_eagerly=c.ran_eagerly, eager_frames=eager,
                           compiles_code=compiles_code)
        out.append(Classified(c, outcome, mine, eager))
    return out


# ----------------------------------------------------------------------------- each table's words

TIMELINE_EVENT: dict[RequestOutcome, str] = {
    RequestOutcome.RAISED: "error", RequestOutcome.REFUSED: "refused",
    RequestOutcome.EAGER_FALLBACK: "eager fallback", RequestOutcome.PARTIAL: "partial eager fallback",
    RequestOutcome.RECOMPILE: "recompile", RequestOutcome.COMPILE: "first compile", RequestOutcome.HIT: "",
    RequestOutcome.EAGER: "", RequestOutcome.UNKNOWN: "",
}
"""The latency timeline's event for each outcome (a hit marks nothing)."""

CHANGE_OUTCOME: dict[RequestOutcome, str] = {
    RequestOutcome.RAISED: "error", RequestOutcome.REFUSED: "refused",
    RequestOutcome.EAGER_FALLBACK: "eager fallback", RequestOutcome.PARTIAL: "partial eager fallback",
    RequestOutcome.RECOMPILE: "recompiled", RequestOutcome.COMPILE: "compiled", RequestOutcome.HIT: "reused",
    RequestOutcome.EAGER: "reused", RequestOutcome.UNKNOWN: "reused",
}
"""The shape-change table's outcome: a change of shape either reused a graph or compiled one —
a recompile where the frame held an entry, a compile where it held none (a frame first reached
there, or one whose earlier compile failed and left no entry)."""

FIRST_CALL_STATUS: dict[RequestOutcome, str] = {
    RequestOutcome.RAISED: "error", RequestOutcome.EAGER: "eager", RequestOutcome.REFUSED: "eager fallback",
    RequestOutcome.EAGER_FALLBACK: "eager fallback", RequestOutcome.PARTIAL: "partial eager fallback",
    RequestOutcome.RECOMPILE: "compiled", RequestOutcome.COMPILE: "compiled", RequestOutcome.HIT: "reused",
    RequestOutcome.UNKNOWN: "reused",
}
"""How a shape's first request ran, in the shape table (a refusal is an eager fallback whose
cause names the limit)."""

FIRST_COMPILE_CAUSE: dict[RequestOutcome, str] = {RequestOutcome.COMPILE: "first compile",
                                                  RequestOutcome.RECOMPILE: "recompiled"}
"""A compiling first call's cause when no guard failed (a frame's first compile)."""

ForecastWord = Literal["hit", "compile", "eager", "error", "unknown"]


def failure_then(record: CompileRecord, again: bool) -> str:
    """What became of a failed compile's call, in words (empty when nothing is known):
    ``again``: a later attempt of the frame is on record."""
    if record.reached_call:
        return ": the error raised into the call"
    if record.reached_call is False:
        return ": Dynamo ran the frame eagerly" + ("" if again else "; no later attempt of it is on record")
    return "" if again else ": no later attempt of that frame is on record"


def failure_skips_frame(record: CompileRecord, call_error: str | None) -> bool:
    """Whether a failed compile left its frame to run eagerly from then on — Dynamo suppressed
    the failure and skips the frame's code, its cached graphs too — rather than raising it into
    the call (``fullgraph``, an error Dynamo never suppresses: the frame is tried again at the
    next call). Recorded as ``reached_call`` where it was seen (``watch``); else read from the
    call: one that did not raise, or raised an error other than the compile's own (the frame,
    run eagerly after the failure, raised it itself — a ``raise`` Dynamo traced), was not
    raised into. The compile's own error may reach the call wrapped
    (``InternalTorchDynamoError: KeyError: …``); a failure of no known type that raised is
    taken as raised into it."""
    if record.reached_call is not None:
        return not record.reached_call
    if call_error is None:
        return True
    if not record.fail_type:
        return False
    return record.fail_type not in (part.strip() for part in call_error.split(":", 2)[:2])


def forecast_word(outcome: RequestOutcome, compiled_a_frame: bool) -> ForecastWord:
    """The forecast's word for a request: ``error``, ``unknown``, ``compile`` when it compiled
    a frame (a stall on the request path), ``eager`` when it ran eagerly, wholly or partly,
    else ``hit``."""
    if outcome is RequestOutcome.RAISED:
        return "error"
    if outcome is RequestOutcome.UNKNOWN:
        return "unknown"
    if compiled_a_frame:
        return "compile"
    return "eager" if outcome.ran_eagerly else "hit"


def dry_run_word(word: ForecastWord, computed: bool, after_unknown: bool) -> ForecastWord:
    """A dry run's request in the forecast's words: ``unknown`` after a request whose outcome
    is unknown (the cache state it meets is not known), or when it raised on fake tensors in a
    dry run that did not compute for real (it needed tensor values); otherwise its word — one
    that raised in a dry run computing for real raises in a real run too (``error``)."""
    if after_unknown or (word == "error" and not computed):
        return "unknown"
    return word


def repeat_word(first: ForecastWord, eager_part: bool = False) -> ForecastWord:
    """A request repeating an earlier shape: Dynamo's caches only grow, so it hits what the
    first request compiled, and a frame the limit refused stays refused (eager); the first's
    error or unknown stands."""
    if first in ("error", "unknown"):
        return first
    return "eager" if eager_part or first == "eager" else "hit"


# ----------------------------------------------------------------------------- the recompile limit


@overload
def limit_in_force(asked: int | None, recorded: int | None = None, *, here: Literal[True] = True) -> int: ...


@overload
def limit_in_force(asked: int | None, recorded: int | None = None, *, here: bool) -> int | None: ...


def limit_in_force(asked: int | None, recorded: int | None = None, *, here: bool = True) -> int | None:
    """The recompile limit in force: ``asked`` (the strategy option, ``torch.compile``'s
    argument), else ``recorded`` (the default a trial recorded in its process), else — with
    ``here`` — this process's (:func:`compilescope.compat.recompile_limit_value`); None when
    none is known."""
    if asked is not None:
        return asked
    if recorded is not None:
        return recorded
    if here:
        from .. import compat

        return compat.recompile_limit_value()
    return None


def trial_limit(trial: Any, *, here: bool = False) -> int | None:
    """The limit a recorded trial ran under (its option, else its process's default)."""
    return limit_in_force(trial.spec.options.recompile_limit, trial.env.recompile_limit_default, here=here)


# ----------------------------------------------------------------------------- tolerance and speedup


def within_tolerance(a: float, b: float) -> bool:
    """Whether two figures of the same sign differ by less than the tolerance: the larger in
    magnitude is below the smaller × (1 + ``TOLERANCE``). Symmetric; exactly the tolerance
    apart is a difference."""
    if a == b:
        return True
    lo, hi = sorted((abs(a), abs(b)))
    return (a >= 0) == (b >= 0) and hi < lo * (1 + TOLERANCE)


SINGLE_SAMPLE_TOLERANCE = 0.25  # one sample of a figure (a compile time): its jitter is not the spread of many
SINGLE_SAMPLE_MIN_S = 0.05  # and at least this many seconds: a tiny compile's jitter is no difference


def one_sample_apart(a: float, b: float) -> bool:
    """Whether two single samples of seconds (two trials' compile time) differ beyond one
    sample's jitter: by more than ``SINGLE_SAMPLE_TOLERANCE`` of the smaller, and by at least
    ``SINGLE_SAMPLE_MIN_S``."""
    lo, hi = sorted((a, b))
    return hi - lo >= SINGLE_SAMPLE_MIN_S and hi > lo * (1 + SINGLE_SAMPLE_TOLERANCE)


def tolerance_side(ratio: float) -> Literal[-1, 0, 1]:
    """Where a ratio to 1 lies: 1 above the tolerance, -1 below it, 0 within it."""
    if within_tolerance(ratio, 1.0):
        return 0
    return 1 if ratio > 1 else -1


def speedup(eager_s: float | None, compiled_s: float | None) -> float | None:
    """Eager time over compiled time (p50 over p50); None without both or with no compiled time."""
    if eager_s is None or compiled_s is None or compiled_s <= 0:
        return None
    return eager_s / compiled_s
