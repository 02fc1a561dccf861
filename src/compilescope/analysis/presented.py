"""The last step of building a report: the values its renderers print that are derived from
other report fields (the verdict as a sentence, the numerics column, counts, sums, the
compiles of each request, the time axis's zero) — made here once, so no renderer computes."""

from __future__ import annotations

from dataclasses import replace

from ..model import NumericsCheck, RunResult
from ..report import CallPoint, CompileRow, FunctionReport, NumericsState, ProbeReport, RunReport, ShapeRow, TrialReport
from .verdict import verdict_text


def numerics_text(t: TrialReport) -> str:
    """The numerics column: shapes checked compiled (passed or failed), ran eagerly, not comparable."""
    if t.numerics_failed:
        return f"{t.numerics_failed} of {t.numerics_checked} FAIL"
    parts = [f"{t.numerics_checked} pass"] if t.numerics_checked else []
    parts += [f"{t.numerics_eager} eager"] if t.numerics_eager else []
    parts += [f"{t.numerics_not_comparable} n/a"] if t.numerics_not_comparable else []
    return ", ".join(parts)


def shape_numerics(n: NumericsCheck | None) -> tuple[str, NumericsState]:
    """A shape's numerics cell and its state: the largest absolute error, FAIL before it when
    the check failed; not counted when the check ran eagerly or eager did not repeat itself."""
    if n is None:
        return "—", ""
    if n.ran_eagerly:
        return "eager: not counted", "not counted"
    if not n.comparable:
        return "n/a: eager varies", "not counted"
    err = f"{n.max_abs_err:.1e}" if n.max_abs_err is not None else None
    if not n.passed:
        return ("FAIL" if err is None else f"FAIL {err}"), "fail"
    return err or "ok", "pass"


def finish_row(r: ShapeRow) -> ShapeRow:
    text, state = shape_numerics(r.numerics)
    return replace(r, numerics_text=text, numerics_state=state)


def with_backward(c: CompileRow) -> CompileRow:
    """A compile row with its whole time: the forward's plus a lazily compiled backward's."""
    return replace(c, with_backward_s=(c.compile_s or 0.0) + (c.backward_s or 0.0))


def timeline_compiles(t: TrialReport, rows: tuple[CompileRow, ...]) -> tuple[CallPoint, ...]:
    """Each request of the timeline with the compiles it caused and, when it raised, the
    first error its shape raised."""
    by_call: dict[int, list[CompileRow]] = {}
    for c in rows:
        if c.call_index is not None:
            by_call.setdefault(c.call_index, []).append(c)
    errors = {r.shape: r.error for r in t.rows if r.error}
    return tuple(replace(p, compile_rows=tuple(by_call.get(p.index, ())),
                         error=errors.get(p.shape) if p.event == "error" else None) for p in t.timeline)


def finish_trial(t: TrialReport) -> TrialReport:
    rows = tuple(with_backward(c) for c in t.compile_rows)
    return replace(t, compile_rows=rows, timeline=timeline_compiles(t, rows), verdict_text=verdict_text(t.verdict),
                   reused_changes=sum(1 for c in t.changes if c.outcome == "reused"), numerics_text=numerics_text(t),
                   rows=tuple(finish_row(r) for r in t.rows),
                   ended_badly=t.status not in ("ok", "unavailable"),
                   died=t.status not in ("ok", "unavailable") and t.completed < t.requests,
                   failed=t.status not in ("ok", "unavailable") or bool(t.call_errors),
                   all_raised=t.status == "failed" and 0 < t.call_errors == t.completed == t.requests,
                   shown=t.status in ("ok", "partial"),
                   status_text=(t.status if t.status == "unavailable"
                                else f"{t.status} ({t.completed}/{t.requests} requests)"))


def finish_run_report(report: RunReport, result: RunResult | None = None) -> RunReport:
    """``report`` with every derived value its renderers print; the run's command and date
    from ``result``."""
    trials = tuple(finish_trial(t) for t in report.trials)
    return replace(report, trials=trials, failed=any(t.failed for t in trials) or bool(report.missing),
                   command=result.command if result is not None else report.command,
                   created=result.created if result is not None else report.created)


def first_start_us(functions: tuple[FunctionReport, ...]) -> int:
    """The earliest compile start of a probe (0 when none recorded one): the zero of its time axis."""
    starts = [c.start_us for f in functions for c in f.compile_rows if c.start_us is not None]
    return min(starts) if starts else 0


def finish_probe_report(report: ProbeReport) -> ProbeReport:
    return replace(report, first_start_us=first_start_us(report.functions))
