"""Build the report model from the records, once. Every figure any renderer shows is made
here (see :mod:`compilescope.report` for the definitions)."""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Sequence

from ..model import (
    CompileRecord,
    GraphBreak,
    GuardFailure,
    ProbeResult,
    RunResult,
    Shape,
    TrialResult,
    shape_key,
    shape_label,
)
from ..report import (
    BreakRow,
    CallPoint,
    CauseRow,
    ChangeRow,
    CompileCounts,
    CompileRow,
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


def timeline(trial: TrialResult, by_call: dict[int, list[CompileRecord]]) -> tuple[CallPoint, ...]:
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
    counts: dict[tuple[str, str | None, int | None], int] = {}
    for b in breaks:
        key = (b.reason.strip().split("\n", 1)[0], b.filename, b.line)
        counts[key] = counts.get(key, 0) + 1
    return tuple(BreakRow(r, f, ln, n) for (r, f, ln), n in counts.items())


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
    steady = {shape_key(s.shape): s for s in trial.steady}
    numerics = {shape_key(n.shape): n for n in trial.numerics}
    eager_steady = {shape_key(s.shape): s for s in (eager.steady if eager is not None and eager.ok else ())}

    rows: list[ShapeRow] = []
    row_shapes: dict[str, Shape] = {}
    for shape in distinct_shapes(tuple(c.shape for c in trial.calls)):
        key = shape_key(shape)
        calls = [c for c in trial.calls if shape_key(c.shape) == key]
        first = calls[0]
        made = [r for c in calls for r in by_call.get(c.index, ()) if r.is_compile]
        fallback_calls = sum(1 for c in calls if c.ran_eagerly)
        error = next((c.error for c in calls if c.error), None)
        if first.error:
            status, cause = "error", first.error
        elif not compiles_code:
            status, cause = "eager", ""
        elif first.ran_eagerly:
            status, cause = "eager fallback", _fallback_cause(first.index, trial.compiles, limit)
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
        elif state is None and trial.ok:
            note = "not measured"
        compiled_steady = s_stats if not note else None
        speedup = None
        speed_class = ""
        if compiles_code and compiled_steady is not None and e_stats is not None and compiled_steady.median > 0:
            speedup = e_stats.median / compiled_steady.median
            speed_class = _classify(compiled_steady, e_stats)
        check = numerics.get(key)
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

    changes = tuple(_changes(trial, by_call))
    reused = [c.latency_s for c in changes if c.outcome == "reused" and c.latency_s is not None]
    eager_ok = eager is not None and eager.ok and len(eager.calls) == len(trial.calls) == len(trial.spec.stream)
    complete = [c for c in trial.calls if c.latency_s is not None]
    report = TrialReport(
        label=trial.label,
        strategy=trial.spec.name,
        cache=trial.spec.cache,
        status=trial.status,
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
        eager_stream_s=sum(c.latency_s or 0.0 for c in eager.calls) if eager_ok and eager else None,
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
        call_errors=sum(1 for c in trial.calls if c.error),
        padding_waste=waste,
        cache_load_s=trial.cache_load_s,
        rows=tuple(rows),
        changes=changes,
        reused_median_s=statistics.median(reused) if reused else None,
        timeline=timeline(trial, by_call),
        compile_rows=tuple(compile_row(r) for r in trial.compiles),
        verdict=(),
        notes=(),
    )
    report = dataclasses.replace(report, notes=tuple(_trial_notes(trial, report, limit)))
    if trial.ok and compiles_code:
        report = dataclasses.replace(report, verdict=tuple(verdict_clauses(report, limit)))
    return report


def _changes(trial: TrialResult, by_call: dict[int, list[CompileRecord]]) -> list[ChangeRow]:
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
        elif made:
            outcome = "recompiled"
        else:
            outcome = "reused"
        reasons = grouped_reasons([g for r in records for g in r.guard_failures])
        out.append(ChangeRow(call.index, shape_label(prev.shape), shape_label(call.shape), call.latency_s,
                             tuple(str(r.compile_id) for r in made), reasons, outcome))  # type: ignore[arg-type]
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
    if not trial.ok:
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
        out.append(Note("error", f"{t.label}: outputs differ from eager on {t.numerics_failed} shape(s)"))
    noisy = sum(1 for r in t.rows for s in (r.steady, r.eager) if s is not None and s.noisy)
    if noisy:
        from ..report import IQR_WARN_THRESHOLD

        out.append(Note("noise", f"{t.label}: {noisy} steady-state figure(s) have IQR/median > "
                                 f"{IQR_WARN_THRESHOLD:.0%} (marked ~); treat differences there with care"))
    for c in trial.calls:
        if c.error:
            out.append(Note("error", f"{t.label}: request {c.index} ({shape_label(c.shape)}) raised {c.error}"))
    return out


def eager_trial(result: RunResult) -> TrialResult | None:
    return next((t for t in result.trials if t.spec.strategy == "eager" and t.ok), None)


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
            for cause in group_causes(tuple(records))
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
