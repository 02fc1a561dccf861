"""Build the report model from the records, once. Every figure any renderer shows is made
here (see :mod:`compilescope.report` for the definitions)."""

from __future__ import annotations

import dataclasses
import math
import re
import statistics
from collections.abc import Sequence

from ..collect.graphs import eager_frames
from ..model import (
    CallRecord,
    CompileRecord,
    ErrorInfo,
    GraphBreak,
    GuardFailure,
    ProbeResult,
    RunResult,
    Shape,
    TrialResult,
    shape_key,
    shape_label,
    trial_status,
)
from ..report import (
    BreakRow,
    CallPoint,
    CauseRow,
    ChangeRow,
    CompileCounts,
    CompileRow,
    ErrorGroup,
    FunctionReport,
    GuardRow,
    Note,
    ProbeReport,
    RunReport,
    ShapeRow,
    SpeedGroup,
    StartRow,
    Stats,
    SteadySummary,
    TrialReport,
)
from ..stream import distinct_shapes
from ..units import fmt_time
from .advice import group_causes
from .guards import failure_key
from .regimes import break_even_request, summarize_samples
from .verdict import STEADY_TOLERANCE, verdict_clauses

START_MODES = ("cold", "warm", "mega")


def count_compiles(records: Sequence[CompileRecord]) -> CompileCounts:
    compiles = [r for r in records if r.is_compile]
    return CompileCounts(
        compiles=len(compiles),
        recompiles=sum(r.is_recompile for r in compiles),
        failed=sum(r.failed for r in compiles),
        refused=sum(r.refused for r in records),
        compile_s=sum((r.compile_time_s or 0.0) + (r.backward_compile_s or 0.0) for r in compiles),
        backward_s=sum(r.backward_compile_s or 0.0 for r in compiles),
    )


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


def timeline(trial: TrialResult, by_call: dict[int, list[CompileRecord]],
             partial: dict[int, tuple[int, ...]] | None = None) -> tuple[CallPoint, ...]:
    out = []
    total = 0.0
    for c in trial.calls:
        total += c.latency_s or 0.0
        records = by_call.get(c.index, [])
        made = [r for r in records if r.is_compile]
        if c.error:
            event = "error"
        elif any(r.refused for r in records):
            event = "refused"
        elif c.ran_eagerly:
            event = "eager fallback"
        elif partial and c.index in partial:
            event = "partial eager fallback"
        elif any(r.is_recompile for r in made):
            event = "recompile"
        elif made:
            event = "first compile"
        else:
            event = ""
        # PyTorch's own words, with the user's source line it quotes (the hover shows them)
        reasons = tuple(f"{entry}: {text}" for r in records for entry, text in zip(r.rejected_by, r.reasons))
        out.append(CallPoint(c.index, shape_label(c.shape), c.latency_s, total, event,  # type: ignore[arg-type]
                             tuple(str(r.compile_id) for r in made), reasons))
    return tuple(out)


def group_breaks(breaks: Sequence[GraphBreak]) -> tuple[BreakRow, ...]:
    """Each distinct break (first line, file, line) once, with its count, PyTorch's whole text
    (the first occurrence's), its explanation and hints."""
    from .breaks import split_break_text

    counts: dict[tuple[str, str | None, int | None], int] = {}
    texts: dict[tuple[str, str | None, int | None], str] = {}
    for b in breaks:
        key = (b.reason.strip().split("\n", 1)[0], b.filename, b.line)
        counts[key] = counts.get(key, 0) + 1
        texts.setdefault(key, b.reason.strip())
    rows = []
    for (r, f, ln), n in counts.items():
        parts = split_break_text(texts[(r, f, ln)])
        rows.append(BreakRow(r, f, ln, n, texts[(r, f, ln)], parts.explanation, parts.hints))
    return tuple(rows)


def _classify(steady: Stats, eager: Stats) -> str:
    ratio = eager.median / steady.median
    separated = steady.q3 < eager.q1 or steady.q1 > eager.q3
    if separated and ratio >= 1 + STEADY_TOLERANCE:
        return "faster"
    if separated and ratio <= 1 / (1 + STEADY_TOLERANCE):
        return "slower"
    return "matched"


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


def _fallback_cause(call_index: int, records: Sequence[CompileRecord], limit: int | None) -> str:
    """Why the call at ``call_index`` ran eagerly, from what happened up to it."""
    earlier = [r for r in records if r.call_index is not None and r.call_index <= call_index]
    if any(r.refused for r in earlier):
        return f"recompile limit ({limit}) hit" if limit is not None else "recompile limit hit"
    failed = [r for r in earlier if r.failed]
    if failed:
        return f"compile {failed[0].compile_id} failed ({failed[0].fail_type}); Dynamo runs the frame eagerly since"
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
        return f"recompile limit ({limit}) hit" if limit is not None else "recompile limit hit"
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


def _trial_limit(trial: TrialResult) -> int | None:
    if trial.spec.options.recompile_limit is not None:
        return trial.spec.options.recompile_limit
    default = trial.env.get("recompile_limit_default")
    return int(default) if default and default.isdigit() else None


def build_trial(trial: TrialResult, eager: TrialResult | None, lifetime: int | None) -> TrialReport:
    from ..strategies import get_strategy

    try:
        compiles_code = get_strategy(trial.spec.strategy).compiles
    except Exception:
        compiles_code = trial.spec.cache != "none"
    limit = _trial_limit(trial)
    stream_records = [r for r in trial.compiles if r.phase == "stream"]
    later_records = [r for r in trial.compiles if r.phase != "stream"]
    by_call: dict[int, list[CompileRecord]] = {}
    for r in stream_records:
        if r.call_index is not None:
            by_call.setdefault(r.call_index, []).append(r)
    partial = eager_frames(trial.calls, stream_records)
    names = _frame_names(trial.compiles)
    steady = {shape_key(s.shape): s for s in trial.steady}
    numerics = {shape_key(n.shape): n for n in trial.numerics}
    eager_steady = {shape_key(s.shape): s for s in (eager.steady if eager is not None else ())}

    rows: list[ShapeRow] = []
    row_shapes: dict[str, Shape] = {}
    for shape in distinct_shapes(tuple(c.shape for c in trial.calls)):
        key = shape_key(shape)
        calls = [c for c in trial.calls if shape_key(c.shape) == key]
        first = calls[0]
        made = [r for c in calls for r in by_call.get(c.index, ()) if r.is_compile]
        fallback_calls = sum(1 for c in calls if c.ran_eagerly)
        partial_calls = sum(1 for c in calls if c.index in partial)
        error_calls = sum(1 for c in calls if c.error is not None)
        error = next((c.error for c in calls if c.error is not None), None)
        if first.error:
            status, cause = "error", first.error
        elif not compiles_code:
            status, cause = "eager", ""
        elif first.ran_eagerly:
            status, cause = "eager fallback", _fallback_cause(first.index, trial.compiles, limit)
        elif first.index in partial:
            status = "partial eager fallback"
            cause = _partial_text(partial[first.index], first.index, trial.compiles, limit, names)
        elif made and made[0].call_index == first.index:
            status = "compiled"
            reasons = [g for r in made for g in r.guard_failures]
            cause = reasons[0].describe() if reasons else ("first compile" if not made[0].is_recompile else "recompiled")
        else:
            status, cause = "reused", ""
        state = steady.get(key)
        s_stats = summarize_samples(state.compiled_s) if state else None
        e_stats = summarize_samples(state.eager_s) if state else None
        e_trial = eager_steady.get(key)
        note = ""
        if state is not None and state.error:
            note = state.error
        elif state is not None and state.ran_eagerly:
            note = "eager fallback"
        elif state is not None and partial_calls:
            note = "partial eager fallback"
        elif state is None and error_calls:
            note = "a request raised"
        elif state is None and (trial.ok or trial.ran_through):
            note = "not measured"
        compiled_steady = s_stats if not note else None
        speedup = None
        speed_class = ""
        if compiles_code and compiled_steady is not None and e_stats is not None and compiled_steady.median > 0:
            speedup = e_stats.median / compiled_steady.median
            speed_class = _classify(compiled_steady, e_stats)
        check = numerics.get(key)
        if check is not None and partial_calls:  # a frame ran eagerly: not a check of compiled code
            check = dataclasses.replace(check, ran_eagerly=True)
        label = shape_label(shape)
        row_shapes[label] = shape
        rows.append(ShapeRow(
            shape=label,
            requests=len(calls),
            first_call_index=first.index,
            first_call_s=first.latency_s,
            status=status,  # type: ignore[arg-type]
            cause=cause,
            compile_ids=tuple(str(r.compile_id) for r in made),
            fallback_calls=fallback_calls,
            error=error,
            steady=compiled_steady if compiles_code else s_stats,
            eager=e_stats,
            eager_trial=summarize_samples(e_trial.compiled_s) if e_trial is not None else None,
            speedup=speedup,
            speed_class=speed_class,  # type: ignore[arg-type]
            numerics=check,
            steady_note=note,
            error_calls=error_calls,
            partial_fallback_calls=partial_calls,
        ))

    # steady state over the shapes that ran compiled
    measured = [r for r in rows if r.speedup is not None and r.steady is not None and r.eager is not None]
    summary = None
    saving = noise = None
    significant = False
    if measured:
        weight = sum(r.requests * r.steady.median for r in measured if r.steady)
        weighted = sum(r.requests * r.eager.median for r in measured if r.eager) / weight if weight > 0 else 1.0
        faster_rows = [r for r in measured if r.speed_class == "faster"]
        slower_rows = [r for r in measured if r.speed_class == "slower"]
        summary = SteadySummary(
            shapes=len(measured),
            weighted_ratio=weighted,
            median_ratio=statistics.median(r.speedup for r in measured if r.speedup is not None),
            faster=_group(measured, "faster"),
            slower=_group(measured, "slower"),
            matched=_group(measured, "matched"),
            size_note=_size_note([row_shapes[r.shape] for r in faster_rows], [row_shapes[r.shape] for r in slower_rows]),
            noisy=any(s is not None and s.noisy for r in measured for s in (r.steady, r.eager)),
        )
        n = sum(r.requests for r in measured)
        saving = sum(r.requests * (r.eager.median - r.steady.median) for r in measured if r.eager and r.steady) / n
        noise = sum(r.requests * (r.eager.iqr + r.steady.iqr) / 2 for r in measured if r.eager and r.steady) / n
        significant = abs(saving) > noise

    steady_by_shape = {r.shape: r.steady.median for r in rows if r.steady is not None}
    cost = 0.0
    for call in trial.calls:
        if call.compiled and call.latency_s is not None:
            cost += max(0.0, call.latency_s - steady_by_shape.get(shape_label(call.shape), 0.0))
    n_star = math.ceil(cost / saving) if significant and saving is not None and saving > 0 else None
    gain = lifetime * saving - cost if lifetime is not None and saving is not None and significant else None

    fallback_calls = [c for c in trial.calls if c.ran_eagerly]
    fallback_shapes = tuple(dict.fromkeys(shape_label(c.shape) for c in fallback_calls))
    checked = [r for r in rows if r.numerics is not None and r.numerics.ran_eagerly is not True and r.numerics.comparable]
    not_comparable = [r for r in rows if r.numerics is not None and r.numerics.ran_eagerly is not True
                      and not r.numerics.comparable]
    eager_checks = [r for r in rows if r.numerics is not None and r.numerics.ran_eagerly is True]
    errs = [r.numerics.max_abs_err for r in checked if r.numerics and r.numerics.max_abs_err is not None]
    padded = [c for c in trial.calls if c.padded_shape is not None]
    waste = None
    if padded:
        real = sum(_volume(c.shape) for c in padded)
        waste = (sum(_volume(c.padded_shape or {}) for c in padded) / real - 1.0) if real else None

    changes = tuple(_changes(trial, by_call, partial, names))
    reused = [c.latency_s for c in changes if c.outcome == "reused" and c.latency_s is not None]
    eager_ok = (eager is not None and trial_status(eager.status, eager.calls) == "ok"
                and len(eager.calls) == len(trial.calls) == len(trial.spec.stream))
    complete = [c for c in trial.calls if c.latency_s is not None]
    status = trial_status(trial.status, trial.calls)  # records written before "partial" existed say "ok"
    report = TrialReport(
        label=trial.label,
        strategy=trial.spec.name,
        cache=trial.spec.cache,
        status=status,
        error=trial.error,
        compiles_code=compiles_code,
        requests=len(trial.spec.stream),
        completed=len(trial.calls),
        stream=count_compiles(stream_records),
        later=count_compiles(later_records),
        graph_breaks=group_breaks(trial.graph_breaks),
        fallbacks=len(fallback_calls),
        fallback_shapes=fallback_shapes,
        first_call_s=trial.calls[0].latency_s if trial.calls else None,
        stream_s=sum(c.latency_s or 0.0 for c in complete) if complete else None,
        # over the same requests as stream_s: those that raised here are left out on both sides
        eager_stream_s=sum(e.latency_s or 0.0 for c, e in zip(trial.calls, eager.calls) if c.latency_s is not None)
        if eager_ok and eager and complete else None,
        break_even_request=break_even_request(trial.calls, eager.calls) if eager_ok and eager and compiles_code else None,
        steady=summary,
        saving_per_request_s=saving,
        saving_noise_s=noise,
        saving_significant=significant,
        compile_cost_s=cost,
        n_star=n_star,
        lifetime=lifetime,
        lifetime_gain_s=gain,
        numerics_checked=len(checked),
        numerics_failed=sum(1 for r in checked if r.numerics is not None and not r.numerics.passed),
        numerics_eager=len(eager_checks),
        numerics_not_comparable=len(not_comparable),
        max_abs_err=max(errs) if errs else None,
        call_errors=sum(1 for c in trial.calls if c.error is not None),
        padding_waste=waste,
        cache_load_s=trial.cache_load_s,
        rows=tuple(rows),
        changes=changes,
        reused_median_s=statistics.median(reused) if reused else None,
        timeline=timeline(trial, by_call, partial),
        compile_rows=tuple(compile_row(r) for r in trial.compiles),
        verdict=(),
        notes=(),
        errors=group_errors(trial.calls),
        partial_fallbacks=len(partial),
        partial_fallback_shapes=tuple(dict.fromkeys(shape_label(c.shape) for c in trial.calls if c.index in partial)),
    )
    report = dataclasses.replace(report, notes=tuple(_trial_notes(trial, report, limit)))
    if status == "ok" and compiles_code:
        report = dataclasses.replace(report, verdict=tuple(verdict_clauses(report, limit)))
    return report


def _changes(trial: TrialResult, by_call: dict[int, list[CompileRecord]], partial: dict[int, tuple[int, ...]],
             names: dict[int, str]) -> list[ChangeRow]:
    out = []
    for prev, call in zip(trial.calls, trial.calls[1:]):
        if call.shape == prev.shape:
            continue
        records = by_call.get(call.index, [])
        made = [r for r in records if r.is_compile]
        if call.error:
            outcome = "error"
        elif call.ran_eagerly:
            outcome = "refused" if any(r.refused for r in records) else "eager fallback"
        elif call.index in partial:
            outcome = "partial eager fallback"
        elif made:
            outcome = "recompiled"
        else:
            outcome = "reused"
        reasons = grouped_reasons([g for r in records for g in r.guard_failures])
        frames = tuple(names.get(f, f"frame {f}") for f in partial.get(call.index, ()))
        out.append(ChangeRow(call.index, shape_label(prev.shape), shape_label(call.shape), call.latency_s,
                             tuple(str(r.compile_id) for r in made), reasons, outcome, frames))  # type: ignore[arg-type]
    return out


def grouped_reasons(failures: Sequence[GuardFailure]) -> tuple[str, ...]:
    """One line per distinct guard: PyTorch's text for the newest rejecting entry, and how
    many older entries rejected the input on the same guard (``dynamic=False`` keeps one
    entry per size, so the same guard fails on each)."""
    groups: dict[tuple[object, ...], list[GuardFailure]] = {}
    for g in failures:
        groups.setdefault(failure_key(g), []).append(g)
    out = []
    for items in groups.values():
        text = items[0].reason
        if len(items) > 1:
            text += f" (the same guard on {len(items) - 1} older cache entr{'y' if len(items) == 2 else 'ies'})"
        out.append(text)
    return tuple(out)


def _trial_notes(trial: TrialResult, t: TrialReport, limit: int | None) -> list[Note]:
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
        stream_records = [r for r in trial.compiles if r.phase == "stream"]
        names = _frame_names(trial.compiles)
        frames = list(dict.fromkeys(_partial_text(fs, i, trial.compiles, limit, names)
                                    for i, fs in eager_frames(trial.calls, stream_records).items()))
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
        out.append(Note("warning", f"{t.label}: the steady-state/numerics phases caused {' and '.join(parts)} "
                                   "that the stream did not; shown apart from the stream's counts"))
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
    trials = tuple(build_trial(t, eager, result.lifetime) for t in result.trials)
    shapes: list[str] = []
    for t in trials:
        for r in t.rows:
            if r.shape not in shapes:
                shapes.append(r.shape)
    modes = tuple(m for m in START_MODES if any(t.spec.cache == m for t in result.trials))
    spread = [abs(r.eager_trial.median / r.eager.median - 1.0)
              for t in trials for r in t.rows if r.eager is not None and r.eager_trial is not None and r.eager.median > 0]
    notes = []
    if result.missing:
        notes.append(Note("warning", f"{len(result.missing)} planned trial(s) did not finish: {', '.join(result.missing)}"))
    return RunReport(
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
    )


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
            "n_star": t.n_star,
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
        }
        for t in report.trials
    }


# ----------------------------------------------------------------------------- probe


def guard_rows(records: Sequence[CompileRecord]) -> tuple[GuardRow, ...]:
    """Each distinct failing guard once, with its count and the entries it failed on."""
    rows: dict[tuple[object, ...], dict[str, object]] = {}
    for r in records:
        for g in r.guard_failures:
            row = rows.setdefault(failure_key(g), {"g": g, "count": 0, "entries": [], "compiles": [], "pytorch": False})
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
                            int(row["count"]), tuple(row["entries"]), tuple(row["compiles"]), g.user_line))  # type: ignore[arg-type]
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


def build_probe_report(result: ProbeResult) -> ProbeReport:
    groups: dict[tuple[str, str, str], list[CompileRecord]] = {}
    for c in result.compiles:
        groups.setdefault((c.display_name, c.display_location, f"{c.function} {c.filename}:{c.line}"), []).append(c)
    functions = []
    for (name, location, frame), records in groups.items():
        counts = count_compiles(records)
        causes = tuple(
            CauseRow(cause.describe(), cause.kind, cause.source, cause.dim, cause.shape_reducible, cause.next_step,
                     cause.compiles)
            for cause in group_causes(tuple(records), **caller_inputs(result, name))
        )
        failures = tuple(
            f"compile {c.compile_id} failed: {c.fail_type}: {(c.fail_reason or '').strip().split(chr(10), 1)[0][:200]}"
            for c in records if c.failed
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
                                        tuple(sorted(unevaluated.items())), tuple(compile_row(r) for r in records)))
    totals = count_compiles(result.compiles)
    return ProbeReport(
        source=result.source,
        compiles=totals.compiles,
        frames=len(groups),
        compile_s=totals.compile_s,
        graph_break_count=len(result.graph_breaks),
        graph_breaks=group_breaks(result.graph_breaks),
        functions=tuple(functions),
        recompile_limit=result.recompile_limit,
        cache_start=result.cache_start,
        counters=tuple(sorted(result.counters.items())),
        error=result.error,
        exit_code=result.exit_code,
    )


def probe_stream(result: ProbeResult) -> list[dict[str, int]]:
    """The input shapes of the most-recompiled compiled function, as a stream for
    ``run --stream @FILE`` (``x.0`` = dim 0 of ``x``; only the dims that varied, or all
    when none did)."""
    by_fn: dict[str, list[dict[str, list[int]]]] = {}
    for call in result.calls:
        by_fn.setdefault(call.function, []).append(call.inputs)
    if not by_fn:
        return []
    compiles: dict[str, int] = {}
    for c in result.compiles:
        if c.is_compile:
            compiles[c.display_name] = compiles.get(c.display_name, 0) + 1
    function = max(by_fn, key=lambda f: (compiles.get(f, 0), len(by_fn[f])))
    flat = [{f"{name}.{d}": size for name, shape in inputs.items() for d, size in enumerate(shape)}
            for inputs in by_fn[function]]
    keys = list(dict.fromkeys(k for row in flat for k in row))
    varying = [k for k in keys if len({row.get(k) for row in flat}) > 1] or keys
    return [{k: row[k] for k in varying if k in row} for row in flat]
