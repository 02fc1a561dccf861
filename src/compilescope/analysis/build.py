"""Build the report model from the records, once. Every figure any renderer shows is made
here (see :mod:`compilescope.report` for the definitions).

A trial's report (:func:`trial_report`) is composed of named derivations, each of a few
fields: :func:`trial_records` (the records as the others read them), :func:`shape_row`
per distinct shape (:func:`first_call_status`, :func:`steady_note`, :func:`classify_speed`),
:func:`steady_summary`, :func:`saving` and :func:`payback`, :func:`numerics_counts`,
:func:`padding_waste`, :func:`stream_times`, :func:`fallback_counts`; then
:func:`trial_notes` and the verdict (:mod:`.verdict`), which read the figures. The counts
are :mod:`.counts`', the noise rules :mod:`.regimes`'."""

from __future__ import annotations

import dataclasses
import math
import re
import statistics
from collections import Counter
from collections.abc import Sequence
from typing import Any

from ..collect.graphs import eager_frames
from ..model import (
    CallRecord,
    CompileRecord,
    ErrorInfo,
    GraphBreak,
    GuardFailure,
    NumericsCheck,
    ProbeResult,
    RunResult,
    Shape,
    SteadyState,
    TrialResult,
    shape_key,
    shape_label,
    trial_status,
)
from ..report import (
    BreakRow,
    CallPoint,
    Cause,
    ChangeRow,
    CompileRow,
    ErrorGroup,
    FunctionReport,
    GuardRow,
    Note,
    ProbeReport,
    RunReport,
    ScriptRun,
    ShapeRow,
    SpeedGroup,
    StartRow,
    Stats,
    SteadySummary,
    TrialReport,
)
from ..stream import distinct_shapes
from ..units import fmt_time, n_star_text
from .advice import credited_failures, frame_source, is_buffer_size, group_causes, unbacked_mark, whole_path
from .guards import guard_data, guard_summary, soundness_fields
from ..torchtext import failure_key
from .counts import count_compiles, distinct_breaks
from .presented import finish_probe_report, finish_run_report
from .outcomes import (
    CHANGE_OUTCOME, FIRST_CALL_STATUS, FIRST_COMPILE_CAUSE, TIMELINE_EVENT, Classified, RequestOutcome, by_call, classify_calls, failure_then,
    speedup, tolerance_side, trial_limit,
)
from .noise import ALPHA, DRIFT_RATIO, busy, drift, holm, mann_whitney_p, reachable, sign_test_p
from .regimes import break_even_request, iqr_separated, summarize_samples
from .verdict import verdict_clauses

START_MODES = ("cold", "warm", "mega")


NESTED_PHASES = (("dynamo", "aot_autograd"), ("aot_autograd", "inductor"), ("inductor", "inductor_codegen"),
                 ("inductor_codegen", None))


def compile_row(r: CompileRecord) -> CompileRow:
    """A compile with its time in exclusive phases: each nested phase minus the one inside it,
    the rest (outside dynamo's own count) as "other"."""
    phases = r.phases_s
    parts: list[tuple[str, float]] = []
    for outer, inner in NESTED_PHASES:
        if outer in phases:
            value = phases[outer] - (phases.get(inner, 0.0) if inner else 0.0)
            if value > 0:
                parts.append((outer, value))
    total = r.compile_time_s or 0.0
    accounted = sum(v for _, v in parts)
    if total - accounted > 1e-6:
        parts.append(("other", total - accounted))
    return CompileRow(str(r.compile_id), r.epoch, r.display_name, r.outcome, r.phase, r.call_index, r.compile_time_s,
                      r.backward_compile_s, tuple(parts), r.start_time_us)


def timeline(trial: TrialResult, outcomes: Sequence[Classified]) -> tuple[CallPoint, ...]:
    """Each stream call as the latency plot shows it, its event its outcome's
    (:data:`~.outcomes.TIMELINE_EVENT`)."""
    out = []
    total = 0.0
    for c, o in zip(trial.calls, outcomes):
        total += c.latency_s or 0.0
        # PyTorch's own words, with the user's source line it quotes (the hover shows them)
        reasons = tuple(f"{entry}: {text}" for r in o.records for entry, text in zip(r.rejected_by, r.reasons))
        out.append(CallPoint(c.index, shape_label(c.shape), c.latency_s, total, TIMELINE_EVENT[o.outcome],  # type: ignore[arg-type]
                             o.compile_ids, reasons))
    return tuple(out)


def group_breaks(breaks: Sequence[GraphBreak]) -> tuple[BreakRow, ...]:
    """Each distinct break (first line, file, line) once, with its count, PyTorch's whole text
    (the first occurrence's), its explanation and hints."""
    from .breaks import split_break_text

    rows = []
    for (r, f, ln), items in distinct_breaks(breaks).items():
        text = items[0].reason.strip()
        parts = split_break_text(text)
        rows.append(BreakRow(r, f, ln, len(items), text, parts.explanation, parts.hints))
    return tuple(rows)


def _group(rows: Sequence[ShapeRow], cls: str) -> SpeedGroup:
    chosen = [r for r in rows if r.speed_class == cls and r.speedup is not None]
    ratios = [r.speedup for r in chosen if r.speedup is not None]
    return SpeedGroup(len(chosen), min(ratios) if ratios else None, max(ratios) if ratios else None,
                      tuple(r.shape for r in chosen))


def _volume(shape: Shape) -> int:
    return math.prod(shape.values()) if shape else 0


def _size_note(faster: list[Shape], slower: list[Shape]) -> str:
    if not faster or not slower:
        return ""
    if min(map(_volume, faster)) > max(map(_volume, slower)):
        return "the larger ones"
    if max(map(_volume, faster)) < min(map(_volume, slower)):
        return "the smaller ones"
    return ""


def _limit_hit(limit: int | None) -> str:
    return f"recompile limit ({limit}) hit" if limit is not None else "recompile limit hit"


def _fallback_cause(call_index: int, records: Sequence[CompileRecord], limit: int | None) -> str:
    """Why the call at ``call_index`` ran eagerly, from what happened up to it."""
    earlier = [r for r in records if r.call_index is not None and r.call_index <= call_index]
    if any(r.refused for r in earlier):
        return _limit_hit(limit)
    failed = [r for r in earlier if r.failed]
    if failed:
        return (f"compile {failed[0].compile_id} failed ({failed[0].fail_type}); Dynamo runs the frame eagerly "
                "from then on")
    return "no compiled graph ran (a frame Dynamo skips)"


def _frame_names(records: Sequence[CompileRecord]) -> dict[int, str]:
    names: dict[int, str] = {}
    for r in records:
        names.setdefault(r.compile_id.frame, f"frame {r.compile_id.frame} ({r.display_name})")
    return names


def _frame_cause(frame: int, call_index: int, records: Sequence[CompileRecord], limit: int | None) -> str:
    """Why ``frame`` ran eagerly at ``call_index``: the refusal or failed compile that blocked it."""
    earlier = [r for r in records if r.compile_id.frame == frame and r.call_index is not None
               and r.call_index <= call_index]
    if any(r.refused for r in earlier):
        return _limit_hit(limit)
    failed = next((r for r in earlier if r.failed), None)
    if failed is not None:
        return f"compile {failed.compile_id} failed ({failed.fail_type})"
    return "no compiled graph of it ran"


def _partial_text(frames: Sequence[int], call_index: int, records: Sequence[CompileRecord], limit: int | None,
                  names: dict[int, str]) -> str:
    return "; ".join(f"{names.get(f, f'frame {f}')} ran eagerly: {_frame_cause(f, call_index, records, limit)}"
                     for f in frames)


_NUMBER = re.compile(r"\d+")


def call_error_info(call: CallRecord) -> ErrorInfo | None:
    """The call's exception; from its one-line text for records written before it was kept whole."""
    if call.error is None:
        return None
    if call.error_info is not None:
        return call.error_info
    kind, _, message = call.error.partition(": ")
    return ErrorInfo(kind or "Exception", message)


def _listed(items: Sequence[object], most: int = 10) -> str:
    shown = ", ".join(str(i) for i in items[:most])
    return shown + (f" and {len(items) - most} more" if len(items) > most else "")


def group_errors(calls: Sequence[CallRecord]) -> tuple[ErrorGroup, ...]:
    """Each distinct request error once, with its count: errors whose headline and op line
    differ only in numbers (a size, an index) are one, from the same user frame."""
    groups: dict[tuple[object, ...], list[tuple[CallRecord, ErrorInfo]]] = {}
    for c in calls:
        info = call_error_info(c)
        if info is None:
            continue
        key = (info.type, _NUMBER.sub("#", c.error or ""), _NUMBER.sub("#", info.op_line or ""), info.user_frame)
        groups.setdefault(key, []).append((c, info))
    out = []
    for items in groups.values():
        first, info = items[0]
        out.append(ErrorGroup(info.type, first.error or info.type, info.message, info.op_line, info.user_frame,
                              len(items), tuple(c.index for c, _ in items),
                              tuple(dict.fromkeys(shape_label(c.shape) for c, _ in items))))
    return tuple(out)


def error_group_text(g: ErrorGroup) -> str:
    """One line for a grouped error: ``×45 (requests …; shapes …) Type: … — op: … — at file:line``."""
    text = f"×{g.count} (request{'s' if g.count > 1 else ''} {_listed(g.requests)}; " \
           f"shape{'s' if len(g.shapes) > 1 else ''} {_listed(g.shapes)}) {g.headline}"
    if g.op_line and g.op_line not in g.headline:
        text += f" — op: {g.op_line}"
    if g.user_frame:
        text += f" — at {g.user_frame}"
    return text


@dataclasses.dataclass(frozen=True)
class TrialRecords:
    """A trial's records as the derivations read them: which compiles the stream caused, the
    compiles each call caused, the calls that ran a frame eagerly and each frame's name."""

    trial: TrialResult
    compiles_code: bool  # the strategy compiles (False for eager)
    limit: int | None  # the recompile limit the trial ran under
    stream: tuple[CompileRecord, ...]
    later: tuple[CompileRecord, ...]  # the steady-state and numerics phases' compiles
    by_call: dict[int, list[CompileRecord]]
    partial: dict[int, tuple[int, ...]]  # call index → the frames that ran eagerly in it
    names: dict[int, str]
    outcomes: tuple[Classified, ...]  # each stream call's outcome, in call order


def strategy_compiles(trial: TrialResult) -> bool:
    """Whether the trial's strategy compiles (for an unknown one, whether it had a cache)."""
    from ..strategies import get_strategy

    try:
        return get_strategy(trial.spec.strategy).compiles
    except Exception:
        return trial.spec.cache != "none"


def trial_records(trial: TrialResult) -> TrialRecords:
    stream = tuple(r for r in trial.compiles if r.phase == "stream")
    caused = by_call(stream)
    partial = eager_frames(trial.calls, stream)
    compiles_code = strategy_compiles(trial)
    return TrialRecords(trial, compiles_code, trial_limit(trial), stream,
                        tuple(r for r in trial.compiles if r.phase not in ("stream", "soundness")), caused, partial,
                        _frame_names(trial.compiles), tuple(classify_calls(trial.calls, stream, compiles_code, partial)))


def first_call_status(rec: TrialRecords, first: CallRecord, made: Sequence[CompileRecord]) -> tuple[str, str]:
    """How a shape's first request ran (its outcome's :data:`~.outcomes.FIRST_CALL_STATUS`), and why."""
    outcome = rec.outcomes[first.index].outcome
    status = FIRST_CALL_STATUS[outcome]
    if outcome is RequestOutcome.RAISED:
        return status, first.error or ""
    if outcome in (RequestOutcome.REFUSED, RequestOutcome.EAGER_FALLBACK):
        return status, _fallback_cause(first.index, rec.trial.compiles, rec.limit)
    if outcome is RequestOutcome.PARTIAL:
        return status, _partial_text(rec.partial[first.index], first.index, rec.trial.compiles, rec.limit, rec.names)
    if outcome.compiled:
        reasons = [g for r in made for g in credited_failures(r)]  # what failed every entry: the compile's cause
        return status, reasons[0].describe() if reasons else FIRST_COMPILE_CAUSE[outcome]
    return status, ""


def steady_note(trial: TrialResult, state: SteadyState | None, partial_calls: int, error_calls: int) -> str:
    """Why a shape has no compiled steady-state figure ('' when it has one)."""
    if state is not None and state.error:
        return state.error
    if state is not None and state.ran_eagerly:
        return RequestOutcome.EAGER_FALLBACK.value
    if state is not None and (partial_calls or state.partly_eager):
        return RequestOutcome.PARTIAL.value
    if state is not None and not state.compiled_s and state.compiling:
        return "every steady-state sample compiled"
    if state is None and error_calls:
        return "a request raised"
    if state is None and (trial.ok or trial.ran_through):
        return "not measured"
    return ""


def classify_speed(steady: Stats, eager: Stats, significant: bool = True) -> str:
    """faster / slower than eager only beyond the tolerance and beyond the noise: the IQRs
    apart and the samples' test ``significant`` (:mod:`.noise`, held over all of the trial's
    shapes at once); within the tolerance "matched"; else "indistinct" — a ratio the samples
    could not tell apart from eager's."""
    side = tolerance_side(eager.median / steady.median)
    if not side:
        return "matched"
    if significant and iqr_separated((steady.q1, steady.q3), (eager.q1, eager.q3)):
        return "faster" if side > 0 else "slower"
    return "indistinct"


def judge_speeds(rows: Sequence[ShapeRow]) -> tuple[ShapeRow, ...]:
    """Each measured row's speed class with the test held across the trial's shapes (Holm, at
    :data:`~.noise.ALPHA`): a trial of 13 shapes is one family of claims, not 13 chances."""
    verdicts = holm([r.p_value if r.speed_class else None for r in rows])
    return tuple(dataclasses.replace(r, speed_class=classify_speed(r.steady, r.eager, ok))  # type: ignore[arg-type]
                 if r.speed_class and r.steady is not None and r.eager is not None else r
                 for r, ok in zip(rows, verdicts))


def shape_row(rec: TrialRecords, shape: Shape, state: SteadyState | None, check: NumericsCheck | None,
              e_trial: SteadyState | None) -> ShapeRow:
    """One distinct shape of the stream under the trial, with its steady-state samples and
    numerics check, and the eager trial's steady-state samples of it."""
    trial, key = rec.trial, shape_key(shape)
    calls = [c for c in trial.calls if shape_key(c.shape) == key]
    first = calls[0]
    made = [r for r in rec.by_call.get(first.index, ()) if r.is_compile]  # the first request's own compiles
    partial_calls = sum(1 for c in calls if c.index in rec.partial)
    error_calls = sum(1 for c in calls if c.error is not None)
    status, cause = first_call_status(rec, first, made)
    s_stats = summarize_samples(state.compiled_s) if state else None
    e_stats = summarize_samples(state.eager_s) if state else None
    note = steady_note(trial, state, partial_calls, error_calls)
    compiled_steady = s_stats if not note else None
    ratio, speed_class, p_value = None, "", None
    if rec.compiles_code and compiled_steady is not None and e_stats is not None and compiled_steady.median > 0:
        ratio, speed_class = speedup(e_stats.median, compiled_steady.median), classify_speed(compiled_steady, e_stats)
        p_value = mann_whitney_p(state.compiled_s, state.eager_s) if state is not None else None
    if check is not None and partial_calls:  # a frame ran eagerly: not a check of compiled code
        check = dataclasses.replace(check, ran_eagerly=True)
    return ShapeRow(
        shape=shape_label(shape), requests=len(calls), first_call_index=first.index, first_call_s=first.latency_s,
        status=status, cause=cause, compile_ids=tuple(str(r.compile_id) for r in made),  # type: ignore[arg-type]
        fallback_calls=sum(1 for c in calls if c.ran_eagerly),
        error=next((c.error for c in calls if c.error is not None), None),
        steady=compiled_steady if rec.compiles_code else s_stats, eager=e_stats,
        eager_trial=summarize_samples(e_trial.compiled_s) if e_trial is not None else None,
        speedup=ratio, speed_class=speed_class, numerics=check, steady_note=note,  # type: ignore[arg-type]
        error_calls=error_calls, partial_fallback_calls=partial_calls, p_value=p_value,
    )


def shape_rows(rec: TrialRecords, eager: TrialResult | None) -> tuple[ShapeRow, ...]:
    steady = {shape_key(s.shape): s for s in rec.trial.steady}
    numerics = {shape_key(n.shape): n for n in rec.trial.numerics}
    eager_steady = {shape_key(s.shape): s for s in (eager.steady if eager is not None else ())}
    rows = tuple(shape_row(rec, shape, steady.get(shape_key(shape)), numerics.get(shape_key(shape)),
                           eager_steady.get(shape_key(shape)))
                 for shape in distinct_shapes(tuple(c.shape for c in rec.trial.calls)))
    return judge_speeds(rows)


def measured_rows(rows: Sequence[ShapeRow]) -> list[ShapeRow]:
    """The shapes that ran compiled with both steady-state figures: what the steady summary covers."""
    return [r for r in rows if r.speedup is not None and r.steady is not None and r.eager is not None]


def steady_summary(rows: Sequence[ShapeRow], trial: TrialResult) -> SteadySummary | None:
    """The steady state over the shapes that ran compiled: stream-weighted and per-shape."""
    measured = measured_rows(rows)
    if not measured:
        return None
    weight = sum(r.requests * r.steady.median for r in measured if r.steady)
    weighted = sum(r.requests * r.eager.median for r in measured if r.eager) / weight if weight > 0 else 1.0
    shapes = {shape_label(s): s for s in distinct_shapes(tuple(c.shape for c in trial.calls))}
    return SteadySummary(
        shapes=len(measured),
        weighted_ratio=weighted,
        median_ratio=statistics.median(r.speedup for r in measured if r.speedup is not None),
        faster=_group(measured, "faster"),
        slower=_group(measured, "slower"),
        matched=_group(measured, "matched"),
        size_note=_size_note([shapes[r.shape] for r in measured if r.speed_class == "faster"],
                             [shapes[r.shape] for r in measured if r.speed_class == "slower"]),
        noisy=any(s is not None and s.noisy for r in measured for s in (r.steady, r.eager)),
        indistinct=_group(measured, "indistinct"),
        too_few=sum(1 for r in measured if r.speed_class == "indistinct" and r.steady and r.eager
                    and not reachable(r.steady.n, r.eager.n, len(measured))),
    )


def saving(rows: Sequence[ShapeRow]) -> tuple[float | None, float | None, bool]:
    """(saving per request, its noise, whether it is beyond the noise): the stream-weighted
    eager − compiled p50, and the stream-weighted mean of the two IQRs around it, per request
    of the stream — a request of a shape that ran eagerly (past the recompile limit, or after
    a failed compile) saves nothing, and counts in the mean as such."""
    measured = measured_rows(rows)
    if not measured:
        return None, None, False
    n = sum(r.requests for r in measured) + sum(r.requests for r in rows if r.status == "eager fallback")
    value = sum(r.requests * (r.eager.median - r.steady.median) for r in measured if r.eager and r.steady) / n
    noise = sum(r.requests * (r.eager.iqr + r.steady.iqr) / 2 for r in measured if r.eager and r.steady) / n
    return value, noise, abs(value) > noise and backed(measured, value > 0)


def backed(measured: Sequence[ShapeRow], faster: bool) -> bool:
    """A stream-wide difference has evidence in the samples: a shape's test says so in its
    direction, or the shapes lean that way more often than chance (:func:`~.noise.sign_test_p`)."""
    if any(r.speed_class == ("faster" if faster else "slower") for r in measured):
        return True
    above = sum(1 for r in measured if r.speedup is not None and r.speedup > 1)
    below = sum(1 for r in measured if r.speedup is not None and r.speedup < 1)
    return (above > below) == faster and above != below and sign_test_p(above, below) < ALPHA


def testable(measured: Sequence[ShapeRow]) -> bool:
    """Whether these shapes' samples could ever back a stream-wide difference (:func:`backed`):
    some shape's test can reach significance among them, or enough shapes for the sign test."""
    return (any(r.steady is not None and r.eager is not None and reachable(r.steady.n, r.eager.n, len(measured))
                for r in measured)
            or sign_test_p(len(measured), 0) < ALPHA)


def payback(trial: TrialResult, rows: Sequence[ShapeRow], lifetime: int | None,
            guard_extra_s: float | None = None) -> dict[str, Any]:
    """What compiling cost (the compiled calls' latency over their shape's steady p50), the
    saving that repays it, and when it is repaid: the report's saving and break-even fields.
    ``guard_extra_s`` is the lookup per request the stream's order adds to the steady calls
    (which tried each shape's entry first): the saving a request of this stream sees is the
    steady saving less it, beyond the noise only where the samples' test backs its direction too
    (the lookup alone never turns a difference inside the noise into a claim)."""
    value, noise, significant = saving(rows)
    if value is not None and guard_extra_s is not None:
        value -= guard_extra_s
        significant = abs(value) > (noise or 0.0) and backed(measured_rows(rows), value > 0)
    steady_by_shape = {r.shape: r.steady.median for r in rows if r.steady is not None}
    cost = 0.0
    for call in trial.calls:
        if call.compiled and call.latency_s is not None:
            cost += max(0.0, call.latency_s - steady_by_shape.get(shape_label(call.shape), 0.0))
    beyond = value is not None and noise is not None and abs(value) > noise
    n_star = math.ceil(cost / value) if significant and value is not None and value > 0 else None
    return dict(
        saving_per_request_s=value, saving_noise_s=noise, saving_significant=significant,
        saving_beyond_band=beyond, saving_testable=testable(measured_rows(rows)), compile_cost_s=cost,
        n_star=n_star, n_star_text=n_star_text(n_star, value, significant, beyond),
        lifetime=lifetime,
        lifetime_gain_s=lifetime * value - cost if lifetime is not None and value is not None and significant else None,
    )


def _steady_notes(trial: TrialResult, label: str) -> list[Note]:
    """What the steady-state samples ran on: a frame run eagerly, inputs the call changes, a
    state that grew as they were taken."""
    partly = [shape_label(s.shape) for s in trial.steady if s.partly_eager]
    out = [Note("error", f"{label}: steady-state samples of shape(s) {', '.join(partly)} ran a frame eagerly "
                         "(refused at the recompile limit or failed after it compiled); those shapes have no "
                         "compiled steady-state figure")] if partly else []
    return out + _stateful_note(trial, label) + _drift_note(trial, label)


def _stateful_note(trial: TrialResult, label: str) -> list[Note]:
    """A call that changes its inputs: whether its steady-state samples each had inputs made afresh."""
    stateful = [s for s in trial.steady if s.changed_inputs]
    if not stateful:
        return []
    paths = list(dict.fromkeys(p for s in stateful for p in s.changed_inputs))
    shown = ", ".join(paths[:4]) + (f" and {len(paths) - 4} more" if len(paths) > 4 else "")
    stale = [shape_label(s.shape) for s in stateful if s.stale_inputs]
    if stale:
        return [Note("warning", f"{label}: the call changes its inputs ({shown}), and the workload's inputs made "
                                f"afresh held the same tensors or containers (shape(s) {', '.join(stale)}): those steady-state "
                                "samples ran on a state grown by the samples before them")]
    return [Note("info", f"{label}: the call changes its inputs ({shown}) on {len(stateful)} shape(s); each "
                         "steady-state sample was given inputs made afresh, so none ran on a state grown by the "
                         "samples before it")]


def _drift_note(trial: TrialResult, label: str) -> list[Note]:
    """Shapes whose steady-state samples grew as they were taken (:func:`~.noise.drift`)."""
    tests = [(shape_label(s.shape), found) for s in trial.steady for series in (s.compiled_s, s.eager_s)
             if (found := drift(series)) is not None]
    held = holm([p for _, (p, _, _) in tests])  # every series tested is one claim of the family
    grew = list({shape: (a, b) for (shape, (_, a, b)), ok in zip(tests, held)
                 if ok and a > 0 and b / a >= DRIFT_RATIO}.items())
    if not grew:
        return []
    shown = "; ".join(f"shape {shape}: {fmt_time(a)} → {fmt_time(b)}" for shape, (a, b) in grew[:4])
    more = f" and {len(grew) - 4} more" if len(grew) > 4 else ""
    return [Note("warning", f"{label}: steady-state samples grew as they were taken on {len(grew)} shape(s) (the "
                            f"first third's p50 against the last third's: {shown}{more}; a rank test held over the "
                            f"trial's shapes at {ALPHA}): "
                            "something each call keeps (a module attribute, a list, a cache) may grow — or the "
                            "machine's load rose while they were taken — and those figures are of no one state")]


def numerics_counts(rows: Sequence[ShapeRow]) -> dict[str, Any]:
    """The numerics checks counted over the shapes that ran compiled; those that ran eagerly
    or got no verdict (eager did not repeat itself or raised, the outputs were not comparable), apart."""
    compiled = [r.numerics for r in rows if r.numerics is not None and r.numerics.ran_eagerly is not True]
    checked = [n for n in compiled if n.comparable]
    errs = [n.max_abs_err for n in checked if n.max_abs_err is not None]
    return dict(
        numerics_checked=len(checked),
        numerics_failed=sum(1 for n in checked if not n.passed),
        numerics_eager=sum(1 for r in rows if r.numerics is not None and r.numerics.ran_eagerly is True),
        numerics_not_comparable=sum(1 for n in compiled if not n.comparable),
        numerics_unjudged=tuple(dict.fromkeys(n.unjudged or "eager varies" for n in compiled if not n.comparable)),
        numerics_uncompared=sum(n.uncompared for n in checked),
        max_abs_err=max(errs) if errs else None,
    )


def padding_waste(calls: Sequence[CallRecord]) -> float | None:
    """The extra elements bucketing padded the stream with, as a share of the real ones."""
    padded = [c for c in calls if c.padded_shape is not None]
    if not padded:
        return None
    real = sum(_volume(c.shape) for c in padded)
    return (sum(_volume(c.padded_shape or {}) for c in padded) / real - 1.0) if real else None


def stream_times(rec: TrialRecords, eager: TrialResult | None) -> dict[str, Any]:
    """The stream's wall times, the eager trial's over the same requests, and the break-even
    request within the stream (only against an eager trial that ran every request)."""
    trial = rec.trial
    eager_ok = (eager is not None and trial_status(eager.status, eager.calls) == "ok"
                and len(eager.calls) == len(trial.calls) == len(trial.spec.stream))
    complete = [c for c in trial.calls if c.latency_s is not None]
    return dict(
        first_call_s=trial.calls[0].latency_s if trial.calls else None,
        stream_s=sum(c.latency_s or 0.0 for c in complete) if complete else None,
        # over the same requests as stream_s: those that raised here are left out on both sides
        eager_stream_s=sum(e.latency_s or 0.0 for c, e in zip(trial.calls, eager.calls) if c.latency_s is not None)
        if eager_ok and eager and complete else None,
        break_even_request=break_even_request(trial.calls, eager.calls)
        if eager_ok and eager and rec.compiles_code else None,
    )


def fallback_counts(trial: TrialResult, partial: dict[int, tuple[int, ...]]) -> dict[str, Any]:
    """The requests that ran eagerly, whole or a frame of them, and their shapes."""
    return dict(
        fallbacks=sum(1 for c in trial.calls if c.ran_eagerly),
        fallback_shapes=tuple(dict.fromkeys(shape_label(c.shape) for c in trial.calls if c.ran_eagerly)),
        partial_fallbacks=len(partial),
        partial_fallback_shapes=tuple(dict.fromkeys(shape_label(c.shape) for c in trial.calls if c.index in partial)),
    )


def trial_report(trial: TrialResult, eager: TrialResult | None, lifetime: int | None) -> TrialReport:
    """The trial's report: each figure from its named derivation, then the notes and the
    verdict, which read the figures."""
    rec = trial_records(trial)
    rows = shape_rows(rec, eager)
    changes = tuple(_changes(rec))
    reused = [c.latency_s for c in changes if c.outcome == "reused" and c.latency_s is not None]
    status = trial_status(trial.status, trial.calls)  # records written before "partial" existed say "ok"
    guards = guard_summary(trial, rows) if rec.compiles_code else None
    extra = guards.extra_s if guards is not None and guards.significant else None
    report = TrialReport(
        label=trial.label, strategy=trial.spec.name, cache=trial.spec.cache, status=status, error=trial.error,
        compiles_code=rec.compiles_code, requests=len(trial.spec.stream), completed=len(trial.calls),
        stream=count_compiles(rec.stream), later=count_compiles(rec.later),
        graph_breaks=group_breaks(trial.graph_breaks),
        steady=steady_summary(rows, trial),
        call_errors=sum(1 for c in trial.calls if c.error is not None),
        padding_waste=padding_waste(trial.calls),
        cache_load_s=trial.cache_load_s,
        rows=rows,
        changes=changes,
        reused_median_s=statistics.median(reused) if reused else None,
        timeline=timeline(trial, rec.outcomes),
        compile_rows=tuple(compile_row(r) for r in trial.compiles),
        verdict=(),
        notes=(),
        errors=group_errors(trial.calls),
        **stream_times(rec, eager), **payback(trial, rows, lifetime, extra), **numerics_counts(rows),
        **fallback_counts(trial, rec.partial),
        guards=guards, guard_extra_s=extra, **soundness_fields(trial),
    )
    report = dataclasses.replace(report, notes=tuple(trial_notes(rec, report)))
    if status == "ok" and rec.compiles_code:
        report = dataclasses.replace(report, verdict=tuple(verdict_clauses(report, rec.limit)))
    return report


def _changes(rec: TrialRecords) -> list[ChangeRow]:
    """Each call whose shape differs from the call before it, its outcome the call's
    (:data:`~.outcomes.CHANGE_OUTCOME`)."""
    out = []
    calls = rec.trial.calls
    for prev, call, o in zip(calls, calls[1:], rec.outcomes[1:]):
        if call.shape == prev.shape:
            continue
        reasons = grouped_reasons([g for r in o.records for g in r.guard_failures])
        frames = tuple(rec.names.get(f, f"frame {f}") for f in o.eager_frames)
        out.append(ChangeRow(call.index, shape_label(prev.shape), shape_label(call.shape), call.latency_s,
                             o.compile_ids, reasons, CHANGE_OUTCOME[o.outcome], frames))  # type: ignore[arg-type]
    return out


def grouped_reasons(failures: Sequence[GuardFailure]) -> tuple[str, ...]:
    """One line per distinct guard of a frame: PyTorch's text for the frame's newest rejecting
    entry, and how many older entries of that frame rejected the input on the same guard
    (``dynamic=False`` keeps one entry per size, so the same guard fails on each) — with what
    each of them expected, when any expected something else."""
    groups: dict[tuple[object, ...], list[GuardFailure]] = {}
    for g in failures:
        groups.setdefault((failure_key(g), _entry_number(g)[0]), []).append(g)
    out = []
    for items in groups.values():
        items = sorted(items, key=lambda g: -_entry_number(g)[1])  # the newest entry's first
        text, older = items[0].reason, items[1:]
        if older:
            n = f"{len(older)} older cache entr{'y' if len(older) == 1 else 'ies'}"
            said = [str(g.expected) for g in older]
            shown = ", ".join(said[:OLDER_SHOWN]) + (", …" if len(said) > OLDER_SHOWN else "")
            text += (f" (the same guard on {n})" if set(said) == {str(items[0].expected)}
                     else f" (it failed on {n} too, which expected {shown})")
        out.append(text)
    return tuple(out)


OLDER_SHOWN = 6  # older entries' expectations listed, newest first


def _entry_number(g: GuardFailure) -> tuple[str, int]:
    """The frame of the entry that failed and its number in the frame (-1 when not told)."""
    frame, _, number = (g.failed_entry or "").partition("/")
    return frame, int(number) if number.isdigit() else -1


def input_sources(trial: Any) -> list[str]:
    """The sources of the compiled frames' inputs the trial's entries guard, as recorded
    (an input of a wrapper frame named by its parameter, ``L['ids']``)."""
    return list(dict.fromkeys(g.source for r in trial.compiles for g in r.entry_guards
                              if g.source and g.kind == "tensor"))


def unmatched_sources(trial: Any) -> list[str]:
    """The ``--dynamic-sources`` items that match none of the inputs' sources, as torch
    matches them (the exact name, or a regular expression from the start), each source also
    tried in the wrapper's words (:func:`compilescope.strategies.through_wrapper`). Nothing
    when an entry's guards were not recorded (nothing to tell by)."""
    from ..options import split_dynamic_sources
    from ..strategies import through_wrapper

    made = [r for r in trial.compiles if r.made_entry]
    if not made or any(not r.entry_guards or r.entry_guards_cut for r in made):
        return []
    target = next((r.target for r in made if r.target is not None), None)
    params, packed = (target.params, target.packed) if target is not None else ((), ("args", "kwargs"))
    names = through_wrapper(",".join(input_sources(trial)), params, packed).split(",")
    out = []
    for item, pattern in split_dynamic_sources(trial.spec.options.dynamic_sources or ""):
        try:
            found = any(n == pattern or re.match(pattern, n) for n in names if n)
        except re.error:
            found = True  # refused when given; not ours to judge here
        if not found:
            out.append(item)
    return out


def _unmatched_note(trial: Any, label: str) -> list[Note]:
    unmatched = unmatched_sources(trial) if trial.spec.strategy == "dynamic-sources" else []
    if not unmatched:
        return []
    return [Note("warning", f"{label}: --dynamic-sources {', '.join(unmatched)} matched no input of a compiled "
                            f"frame, so it changed nothing there (the inputs' sources: "
                            f"{', '.join(input_sources(trial)[:6])})")]


def trial_notes(rec: TrialRecords, t: TrialReport) -> list[Note]:
    """What the reader must know before trusting the trial's figures, worst first."""
    trial, limit = rec.trial, rec.limit
    out: list[Note] = []
    if t.status in ("partial", "failed") and (trial.ok or trial.ran_through):
        which = "every request" if t.status == "failed" else f"{t.call_errors} of {t.requests} requests"
        out.append(Note("error", f"{t.label} {t.status}: {which} raised ({len(t.errors)} distinct error"
                                 f"{'s' if len(t.errors) != 1 else ''}); those requests are left out of every "
                                 "figure"))
    elif not trial.ok:
        level = "info" if trial.status == "unavailable" else "error"
        done = f" ({t.completed} of {t.requests} requests completed and kept)" if trial.status != "unavailable" else ""
        out.append(Note(level, f"{t.label} {trial.status}: {trial.error}{done}"))  # type: ignore[arg-type]
        return out
    if t.compiles_code and t.stream.compiles == 0 and t.later.compiles == 0:
        out.append(Note("error", f"{t.label}: no frame was compiled — torch.compile never captured this code "
                                 "(all of it in Dynamo's skipfiles?); its figures are eager's"))
    if t.fallbacks:
        out.append(Note("error", f"{t.label}: {t.fallbacks} request(s) ran eagerly (shapes {', '.join(t.fallback_shapes)}); "
                                 "they are left out of the compiled steady-state, saving and numerics figures"))
    if t.partial_fallbacks:
        frames = list(dict.fromkeys(_partial_text(fs, i, trial.compiles, limit, rec.names)
                                    for i, fs in rec.partial.items()))
        out.append(Note("error", f"{t.label}: {t.partial_fallbacks} request(s) ran partly eagerly — a frame ran "
                                 f"eagerly while the others ran compiled (shapes {', '.join(t.partial_fallback_shapes)}"
                                 f"{'; ' + '; '.join(frames) if frames else ''}); those shapes are left out of the "
                                 "compiled steady-state, saving and numerics figures"))
    if t.later.compiles or t.later.refused:
        parts = []
        if t.later.compiles:
            parts.append(f"{t.later.compiles} compile(s) ({fmt_time(t.later.compile_s)})")
        if t.later.refused:
            lim = f" ({limit})" if limit is not None else ""
            parts.append(f"{t.later.refused} recompile-limit hit(s){lim}")
        dropped = sum(s.compiling for s in trial.steady)
        out.append(Note("warning", f"{t.label}: the steady-state/numerics phases caused {' and '.join(parts)} "
                                   "that the stream did not; shown apart from the stream's counts"
                                   + (f"; the {dropped} steady-state sample(s) that compiled are left out of the "
                                      "figures" if dropped else "")))
    out += _unmatched_note(trial, t.label) + _steady_notes(trial, t.label)
    if t.numerics_failed:
        first = next((r.numerics.detail for r in t.rows if r.numerics is not None and not r.numerics.passed
                      and r.numerics.comparable and r.numerics.ran_eagerly is not True and r.numerics.detail), None)
        out.append(Note("error", f"{t.label}: outputs differ from eager on {t.numerics_failed} shape(s)"
                                 + (f" (first: {first})" if first else "")))
    noisy = sum(1 for r in t.rows for s in (r.steady, r.eager) if s is not None and s.noisy)
    if noisy:
        from ..report import IQR_WARN_THRESHOLD

        out.append(Note("noise", f"{t.label}: {noisy} steady-state figure(s) have IQR/median > "
                                 f"{IQR_WARN_THRESHOLD:.0%} (marked ~); treat differences there with care"))
    for g in t.errors:
        out.append(Note("error", f"{t.label}: {error_group_text(g)}"))
    return out


def busy_note(trials: Sequence[TrialResult]) -> Note | None:
    """A warning when the machine was busy while trials ran (their recorded load average above
    the CPUs they could use): as pyperf warns, timings taken so are unreliable."""
    loads = [(t.spec.label, busy(t.env), t.env.cpus) for t in trials]
    hit = [(label, load, cpus) for label, load, cpus in loads if load is not None]
    if not hit:
        return None
    worst = max(load for _, load, _ in hit)
    cpus = hit[0][2]
    shown = f"{worst:.1f}" if cpus is None or round(worst, 1) > cpus else f"{worst:.2f}"  # 2.02 is not "2.0" on 2
    return Note("warning", f"the machine was busy during {len(hit)} of {len(trials)} trial(s) ({', '.join(h[0] for h in hit)}): "
                           f"load average up to {shown} on {cpus} CPU(s); other work competed with the "
                           "measurement, so timings and speed verdicts are less reliable — re-run on a quiet machine")


def eager_trial(result: RunResult) -> TrialResult | None:
    """The run's eager trial, when it ran through: one whose requests partly raised still gives
    the eager figures of the shapes that did not (its stream totals need every request)."""
    return next((t for t in result.trials if t.spec.strategy == "eager"
                 and trial_status(t.status, t.calls) in ("ok", "partial")), None)


def _start_rows(result: RunResult, modes: tuple[str, ...]) -> tuple[StartRow, ...]:
    rows = []
    names = list(dict.fromkeys(t.spec.name for t in result.trials if t.spec.cache != "none"))
    for name in names:
        cells = []
        for mode in modes:
            t = next((x for x in result.trials if x.spec.name == name and x.spec.cache == mode), None)
            if t is None:
                cells.append("")
            elif not t.ok:
                cells.append(t.status)
            else:
                n = count_compiles([r for r in t.compiles if r.phase == "stream"]).compiles
                cell = f"{fmt_time(t.calls[0].latency_s if t.calls else None)} ({n})"
                if t.cache_load_s is not None:
                    cell += f" +{fmt_time(t.cache_load_s)} load"
                cells.append(cell)
        rows.append(StartRow(name, tuple(cells)))
    return tuple(rows)


def build_run_report(result: RunResult) -> RunReport:
    eager = eager_trial(result)
    trials = tuple(trial_report(t, eager, result.lifetime) for t in result.trials)
    shapes: list[str] = []
    for t in trials:
        for r in t.rows:
            if r.shape not in shapes:
                shapes.append(r.shape)
    modes = tuple(m for m in START_MODES if any(t.spec.cache == m for t in result.trials))
    spread = [max(r.eager_trial.median / r.eager.median, r.eager.median / r.eager_trial.median)
              for t in trials for r in t.rows if r.eager is not None and r.eager_trial is not None
              and r.eager.median > 0 and r.eager_trial.median > 0]
    notes = []
    if result.missing:
        notes.append(Note("warning", f"{len(result.missing)} planned trial(s) did not finish: {', '.join(result.missing)}"))
    loaded = busy_note(result.trials)
    if loaded is not None:
        notes.append(loaded)
    return finish_run_report(RunReport(
        workload=result.workload,
        requests=len(result.stream),
        lifetime=result.lifetime,
        trials=trials,
        shapes=tuple(shapes),
        start_modes=modes if len(modes) > 1 else (),
        start_rows=_start_rows(result, modes) if len(modes) > 1 else (),
        eager_spread=max(spread) if spread else None,
        missing=result.missing,
        notes=tuple(notes),
    ), result)


def run_summary(report: RunReport) -> dict[str, object]:
    """The derived figures a results file carries beside its raw records (ignored on load)."""
    return {
        t.label: {
            "status": t.status,
            "compiles": t.stream.compiles,
            "recompiles": t.stream.recompiles,
            "refused_by_recompile_limit": t.stream.refused,
            "failed_compiles": t.stream.failed,
            "compile_s": t.stream.compile_s,
            "later_phase_compiles": t.later.compiles,
            "eager_fallbacks": t.fallbacks,
            "eager_fallback_shapes": list(t.fallback_shapes),
            "stream_s": t.stream_s,
            "steady_weighted_ratio": t.steady.weighted_ratio if t.steady else None,
            "steady_median_ratio": t.steady.median_ratio if t.steady else None,
            "saving_per_request_s": t.saving_per_request_s,
            "saving_significant": t.saving_significant,
            "saving_beyond_band": t.saving_beyond_band,
            "n_star": t.n_star,
            "projected_n_star": t.n_star_text if t.compiles_code else None,
            "numerics_checked": t.numerics_checked,
            "numerics_failed": t.numerics_failed,
            "numerics_not_comparable": t.numerics_not_comparable,
            "verdict": list(t.verdict),
            "request_errors": t.call_errors,
            "errors": [dataclasses.asdict(g) for g in t.errors],
            "partial_eager_fallbacks": t.partial_fallbacks,
            "partial_eager_fallback_shapes": list(t.partial_fallback_shapes),
            "shapes": {r.shape: {"requests": r.requests, "how_it_ran": r.status, "request_errors": r.error_calls,
                                 "eager_fallbacks": r.fallback_calls,
                                 "partial_eager_fallbacks": r.partial_fallback_calls} for r in t.rows},
            "guards": guard_data(t.guards),
            "soundness": [dataclasses.asdict(c) for c in t.soundness],
            "dropped_guards": dict(t.dropped_guards),
        }
        for t in report.trials
    }


# ----------------------------------------------------------------------------- probe


def guard_rows(records: Sequence[CompileRecord]) -> tuple[GuardRow, ...]:
    """Each distinct failing guard once, with its count and the entries it failed on."""
    rows: dict[tuple[object, ...], dict[str, object]] = {}
    for r in records:
        for g in r.guard_failures:
            row = rows.setdefault(failure_key(g), {"g": g, "count": 0, "entries": [], "compiles": [], "pytorch": False,
                                                   "file": r.filename})
            row["count"] = int(row["count"]) + 1  # type: ignore[call-overload]
            if g.failed_entry and g.failed_entry not in row["entries"]:  # type: ignore[operator]
                row["entries"].append(g.failed_entry)  # type: ignore[union-attr]
            if str(r.compile_id) not in row["compiles"]:  # type: ignore[operator]
                row["compiles"].append(str(r.compile_id))  # type: ignore[union-attr]
            row["pytorch"] = bool(row["pytorch"]) or g.found_by == "pytorch"
    out = []
    for row in rows.values():
        g = row["g"]
        assert isinstance(g, GuardFailure)
        out.append(GuardRow(g.reason, g.kind, g.source, g.involves, "pytorch" if row["pytorch"] else "compilescope",
                            int(row["count"]), tuple(row["entries"]), tuple(row["compiles"]),  # type: ignore[arg-type]
                            whole_path(g.user_line, str(row["file"]))))
    return tuple(out)


def caller_inputs(result: ProbeResult, function: str) -> dict[str, object]:
    """What the program's calls of a compiled function fed it: (input, dim) → every size, and
    the input names — none when the probe recorded calls of other functions only (a frame the
    caller does not call directly); nothing known when it recorded no calls at all."""
    calls = [c for c in result.calls if c.function == function]
    if not calls:
        return {"inputs": ()} if result.calls else {}
    observed: dict[tuple[str, int], set[int]] = {}
    for c in calls:
        for name, shape in c.inputs.items():
            for d, size in enumerate(shape):
                observed.setdefault((name, d), set()).add(int(size))
    return {"observed": {k: sorted(v) for k, v in observed.items()}, "inputs": {n for n, _ in observed}}


def checked_cause(cause: Cause, checks: Sequence[ScriptRun]) -> Cause:
    """A cause whose fix was run (``probe --check-fixes``): the dims marked dynamic by a
    ``dynamic_sources`` run that changed nothing are no fix to print — the step says what the
    run found instead; one that reduced the compiles says so; one whose run broke something (an
    error, another exit status, failed compiles) says that, and nothing of the specialisation
    it could not see; so does one run that marked several sizes at once and changed nothing
    (which of them the program specialises, that run cannot tell). The setting named is the
    one the run had."""
    item = f"{cause.frame_source or cause.source}:{cause.dim}"
    run = next((r for r in checks if r.proposal is not None
                and item in str(r.proposal.settings.get("dynamic_sources", "")).split(",")), None)
    if cause.kind != "size" or not cause.reachable or run is None or run.proposal is None:
        return cause
    setting = str(run.proposal.settings["dynamic_sources"])
    under = f"the script run again under dynamic_sources=\"{setting}\""
    if run.verdict == "rejected" and not run.why.startswith("did not reduce what it targets"):
        return dataclasses.replace(cause, next_step=f"{cause.next_step} — checked, {under} was rejected: {run.why}")
    if run.verdict == "rejected" and setting != item:
        return dataclasses.replace(cause, next_step=(
            f"{cause.next_step} — checked with the other sizes marked at once ({under}) and {run.why}: the program "
            "specialises one of them or more, which one that run cannot tell"))
    if run.verdict == "rejected":
        return dataclasses.replace(cause, shape_reducible=False, next_step=(
            f"marking it dynamic was run ({under}) and {run.why}: the "
            "program specialises this size — find where it turns the size into a Python number (a loop over it, "
            "a branch on it), or hold one graph per size (raise torch._dynamo.config.recompile_limit)"))
    return dataclasses.replace(cause, next_step=f"{cause.next_step} — checked, {under}: {run.why}")


def automatic_dynamic_evidence(cause: Cause, records: Sequence[CompileRecord]) -> tuple[str, CompileRecord] | None:
    """What the run itself shows of marking a size cause's dim dynamic: Dynamo's automatic
    dynamic shapes compiles a dim dynamic once its size has changed, so the first compile a
    change of this size triggered with that setting on (``automatic_dynamic``) already ran
    the fix. ``("specialised", c)``: ``c``'s entry still fixes the dim at a size other than 0
    or 1 (the program turned it into a Python number: marking it changes nothing);
    ``("dynamic", c)``: ``c``'s entry holds it dynamic and no later call recompiled on it.
    None when no such compile is on record (automatic dynamic off, ``dynamic=False``, an
    older file)."""
    if cause.kind != "size" or cause.dim is None or cause.source is None:
        return None
    ids = set(cause.compile_ids)
    for i, c in enumerate(records):
        if str(c.compile_id) not in ids or not c.made_entry or c.automatic_dynamic is not True:
            continue
        tensor = next((g for g in c.entry_guards if g.kind == "tensor" and g.source == cause.source
                       and len(g.sizes) > cause.dim), None)
        if tensor is None:
            return None
        size = tensor.sizes[cause.dim]
        if size is not None:
            return ("specialised", c) if size not in (0, 1) else None
        later = [str(r.compile_id) for r in records[i + 1:]]
        return ("dynamic", c) if not ids.intersection(later) else None
    return None


def evidenced_cause(cause: Cause, records: Sequence[CompileRecord]) -> tuple[Cause, bool]:
    """A size cause's fix as the run's own compiles judge it (:func:`automatic_dynamic_evidence`),
    and whether they did: a size the program specialises is no mark-dynamic fix to print."""
    if not (cause.kind == "size" and cause.reachable and cause.shape_reducible):
        return cause, True
    evidence = automatic_dynamic_evidence(cause, records)
    if evidence is None:
        return cause, False
    verdict, c = evidence
    if verdict == "specialised":
        size = next(g for g in c.entry_guards if g.kind == "tensor" and g.source == cause.source).sizes[cause.dim or 0]
        return dataclasses.replace(cause, shape_reducible=False, next_step=(
            f"the program specialises this size: PyTorch's automatic dynamic shapes compiled it dynamic at compile "
            f"{c.compile_id} (its size had changed) and the program made it static again (that entry fixes it at "
            f"{size}), so marking it dynamic changes nothing — find where it turns the size into a Python number (a "
            "loop over it, a branch on it, int(x.shape[0])), or hold one graph per size (raise "
            "torch._dynamo.config.recompile_limit)")), True
    ids = list(cause.compile_ids)
    upto = ids[: ids.index(str(c.compile_id)) + 1]
    by_id = {str(r.compile_id): r for r in records}
    # a recompile that left size 0 or 1 happens whether or not the dim is marked: marking saves it not
    specialised = sorted({g.expected for i in upto for g in by_id[i].guard_failures
                          if (g.source, g.dim) == (cause.source, cause.dim) and g.expected in (0, 1)})
    took = sum(not any((g.source, g.dim) == (cause.source, cause.dim) and g.expected in (0, 1)
                       for g in by_id[i].guard_failures) for i in upto)
    companions = [g for g in credited_failures(c) if g.kind == "size" and (g.source, g.dim) != (cause.source, cause.dim)]
    others = sorted({f"{g.source} dim {g.dim}" for g in companions})
    # the setting that marks them all, each as the frame names it (the cause's every name, a companion's own)
    joint = [f"{s}:{cause.dim}" for s in cause.frame_sources or (cause.source,)]
    joint += sorted({f"{frame_source(g.reason) or g.source}:{g.dim}" for g in companions} - set(joint))
    marked = (f"marked from the first call on, together with {', '.join(others)} (changed at that compile too; "
              f"dynamic_sources=\"{','.join(joint)}\" marks them all)") if others else "marked from the first call on"
    seen = (f"seen in this run: PyTorch's automatic dynamic shapes compiled it dynamic at compile {c.compile_id} "
            "and no later size recompiled it")
    left = " or ".join(map(str, specialised))
    if specialised and not took:  # only a mark that keeps sizes 0 and 1 dynamic saves what it took
        return dataclasses.replace(cause, next_step=(
            f"mark it unbacked before each call: {unbacked_mark(cause.source, cause.dim)} (read from the guards, "
            f"not run) — the {len(upto)} "
            f"recompile(s) it took left size {left}, which Dynamo specialises even in a marked dim, so "
            f"mark_dynamic or dynamic_sources saves none of them; {seen}")), True
    saves = (f"it saves the {took} recompile(s) that took" if not specialised else
             f"it saves {took} of the {len(upto)} recompile(s) that took (the others left size {left}, which a "
             "marked dim still specialises)")
    return dataclasses.replace(cause, next_step=f"{cause.next_step} — {seen}; {marked}, {saves}"), True


def build_probe_report(result: ProbeResult, checks: Sequence[ScriptRun] = ()) -> ProbeReport:
    groups: dict[tuple[str, str, str, tuple[int, int] | None], list[CompileRecord]] = {}
    unjudged = 0  # mark-dynamic fixes printed that neither a run nor the run's own compiles judged
    for c in result.compiles:
        # a function's frames are one code object; two resume frames of one name and line are two
        # (Dynamo makes one per graph that breaks there), each with its own entries and limit
        own = (c.epoch, c.compile_id.frame) if c.resumes else None
        groups.setdefault((c.display_name, c.display_location, f"{c.function} {c.filename}:{c.line}", own), []).append(c)
    named = Counter((name, location) for name, location, _, _ in groups)
    functions = []
    for (name, location, frame, own), records in groups.items():
        if own is not None and named[(name, location)] > 1:  # after a reset, frame ids start again
            name = f"{name} [frame {own[1]}{f' after reset {own[0]}' if own[0] else ''}]"
        counts = count_compiles(records)
        causes = tuple(checked_cause(c, checks) for c in group_causes(tuple(records), **caller_inputs(result, name)))
        if not checks:  # no fix was run: the run's own compiles judge the mark-dynamic ones they can
            judged = [evidenced_cause(c, records) for c in causes]
            causes = tuple(c for c, _ in judged)
            unjudged += sum(not seen for _, seen in judged) + sum(is_buffer_size(c) for c in causes)
        failures = tuple(
            f"compile {c.compile_id} failed{f' at {c.fail_at[0]}:{c.fail_at[1]}' if c.fail_at else ''}: "
            f"{c.fail_type}: {(c.fail_reason or '').strip().split(chr(10), 1)[0][:200]}"
            f"{failure_then(c, any((o.epoch, o.compile_id.frame) == (c.epoch, c.compile_id.frame) for o in records[i + 1:]))}"
            for i, c in enumerate(records) if c.failed
        )
        first = records[0]
        renamed = first.target is not None and (first.display_location != f"{first.filename}:{first.line}")
        shown_frame = frame if renamed else ""
        unevaluated: dict[str, int] = {}
        for r in records:
            for k, v in r.guards_unevaluated.items():
                unevaluated[k] = unevaluated.get(k, 0) + v
        functions.append(FunctionReport(name, location, shown_frame, counts.compiles, counts.recompiles, counts.refused,
                                        counts.compile_s, counts.backward_s, causes, failures, guard_rows(records),
                                        tuple(sorted(unevaluated.items())), tuple(compile_row(r) for r in records),
                                        causes_overlap=sum(len(c.compile_ids) for c in causes) > counts.recompiles + counts.refused))
    totals = count_compiles(result.compiles)
    return finish_probe_report(ProbeReport(
        source=result.source,
        compiles=totals.compiles,
        frames=len(groups),
        compile_s=totals.compile_s,
        graph_break_count=len(result.graph_breaks),
        graph_breaks=group_breaks(result.graph_breaks),
        functions=tuple(functions),
        recompile_limit=result.recompile_limit,
        # the compile cache (inductor's FX graphs, AOT autograd's) matters only where a compile looked in it
        cache_start=result.cache_start if any(sum(c.cache.values()) for c in result.compiles) else None,
        counters=tuple(sorted(result.counters.items())),
        error=result.error,
        exit_code=result.exit_code,
        lost_capabilities=result.lost_capabilities,
        checks=tuple(checks),
        fixes_unchecked=unjudged > 0,
        settings=result.settings,
        forked_unobserved=result.forked_unobserved,
    ))


def probe_stream(result: ProbeResult) -> list[dict[str, int]]:
    """The input shapes of the most-recompiled compiled function, as a stream for
    ``run --stream @FILE`` (``x.0`` = dim 0 of ``x``; only the dims that varied, or all
    when none did)."""
    by_fn: dict[str, list[dict[str, list[int]]]] = {}
    for call in result.calls:
        by_fn.setdefault(call.function, []).append(call.inputs)
    if not by_fn:
        return []
    records: dict[str, list[CompileRecord]] = {}
    for c in result.compiles:
        records.setdefault(c.display_name, []).append(c)
    compiles = {name: count_compiles(rs).compiles for name, rs in records.items()}
    function = max(by_fn, key=lambda f: (compiles.get(f, 0), len(by_fn[f])))
    flat = [{f"{name}.{d}": size for name, shape in inputs.items() for d, size in enumerate(shape)}
            for inputs in by_fn[function]]
    keys = list(dict.fromkeys(k for row in flat for k in row))
    varying = [k for k in keys if len({row.get(k) for row in flat}) > 1] or keys
    return [{k: row[k] for k in varying if k in row} for row in flat]
