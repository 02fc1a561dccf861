"""The last step of building a report: the values its renderers print that are derived from
other report fields (the verdict as a sentence, the numerics column, counts, sums, the
compiles of each request, the time axis's zero) — made here once, so no renderer computes."""

from __future__ import annotations

from dataclasses import replace

from ..model import NumericsCheck, RunResult, made_entry
from ..report import (
    CallPoint,
    CompileRow,
    FunctionReport,
    GuardShapeRow,
    GuardSourceRow,
    GuardSummary,
    NumericsState,
    ProbeReport,
    RunReport,
    ShapeRow,
    TrialReport,
)
from ..report.verify import VerifyRequest
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
        return f"n/a: {n.unjudged or 'eager varies'}", "not counted"
    err = f"{n.max_abs_err:.1e}" if n.max_abs_err is not None else None
    if not n.passed:
        return ("FAIL" if err is None else f"FAIL {err}"), "fail"
    cut = f" ({n.uncompared} part(s) not compared)" if n.uncompared else ""
    return (err or "ok") + cut, "pass"


def steady_missing(t: TrialReport, r: ShapeRow, steady_failed: bool) -> str:
    """Why a compiled trial's shape has no compiled steady figure, when that is worth marking on
    its plot (it raised, ran eagerly, its trial ended early…); "" when it has one, or for eager."""
    if not t.compiles_code or r.steady is not None:
        return ""
    if not (t.status != "ok" or r.error or r.steady_note or r.status in ("error", "eager fallback")):
        return ""
    return (r.error or (r.steady_note if steady_failed else "")
            or (f"the trial {t.status} before its steady state" if t.status != "ok" else r.status))


def finish_row(r: ShapeRow, t: TrialReport) -> ShapeRow:
    text, state = shape_numerics(r.numerics)
    steady_failed = bool(r.steady_note) and r.steady_note != "not measured"
    counted = state in ("pass", "fail") and r.numerics is not None  # a call that ran eagerly measured no error
    return replace(r, numerics_text=text, numerics_state=state,
                   numerics_pass={"pass": True, "fail": False}.get(state),
                   counted_abs_err=r.numerics.max_abs_err if counted and r.numerics else None,
                   counted_rel_err=r.numerics.max_rel_err if counted and r.numerics else None,
                   recompiled=r.status == "compiled" and r.first_call_index > 0,
                   other_fallback_calls=0 if r.status == "eager fallback" else r.fallback_calls,
                   other_partial_fallback_calls=0 if r.status == "partial eager fallback" else r.partial_fallback_calls,
                   steady_failed=steady_failed, steady_missing=steady_missing(t, r, steady_failed))


def finish_compile(c: CompileRow) -> CompileRow:
    """A compile row with whether a stream request caused it and whether it left a cache entry."""
    return replace(c, in_stream=c.phase == "stream", made_entry=made_entry(c.outcome))


def with_backward(c: CompileRow) -> CompileRow:
    """A compile row with its whole time: the forward's plus a lazily compiled backward's."""
    return replace(finish_compile(c), with_backward_s=(c.compile_s or 0.0) + (c.backward_s or 0.0))


def timeline_compiles(t: TrialReport, rows: tuple[CompileRow, ...]) -> tuple[CallPoint, ...]:
    """Each request of the timeline with the compiles it caused and, when it raised, the
    first error its shape raised."""
    by_call: dict[int, list[CompileRow]] = {}
    for c in rows:
        if c.call_index is not None:
            by_call.setdefault(c.call_index, []).append(c)
    errors = {r.shape: r.error for r in t.rows if r.error}
    return tuple(finish_point(p, tuple(by_call.get(p.index, ())), errors.get(p.shape) if p.event == "error" else None)
                 for p in t.timeline)


WENT_WRONG = ("eager fallback", "refused", "error")  # a request's events that are failures, drawn red
MARKED = ("recompile", *WENT_WRONG)  # the events a trace marks at their moment


def finish_point(p: CallPoint, compiles: tuple[CompileRow, ...], error: str | None) -> CallPoint:
    """A request with its compiles, its error, its count, and the time it takes on a trace: its
    latency, or at least its compiles' time (a request that raised has no latency)."""
    compile_s = sum((c.compile_s or 0.0) for c in compiles)
    span_s = max(compile_s if p.latency_s is None else p.latency_s, compile_s)
    return replace(p, compile_rows=compiles, error=error, count=p.index + 1, compile_s=compile_s, span_s=span_s,
                   went_wrong=p.event in WENT_WRONG, marked=p.event in MARKED, raised=p.event == "error")


def problems(t: TrialReport) -> tuple[str, ...]:
    """What did not go as planned in a trial, in words (the failure banner's items): a status
    other than ok with its error and the requests kept, the requests that raised (with the
    first), and those that ran eagerly or partly eagerly."""
    bits = []
    if t.status in ("partial", "failed") and t.call_errors and not t.error:
        bits.append(t.status)  # the requests that raised, counted once, below
    elif t.status != "ok":
        done = (f" — {t.completed} of {t.requests} requests completed and kept"
                if t.status != "unavailable" else "")
        bits.append(f"{t.status}: {t.error or 'no error recorded'}{done}")
    if t.call_errors:
        raised = next((r for r in t.rows if r.error), None)
        first = f" (first: shape {raised.shape}: {raised.error})" if raised else ""
        bits.append(f"{t.call_errors} of {t.completed} request(s) raised{first}")
    if t.fallbacks:
        bits.append(f"{t.fallbacks} request(s) ran eagerly (shapes {', '.join(t.fallback_shapes)})")
    if t.partial_fallbacks:
        bits.append(f"{t.partial_fallbacks} request(s) ran partly eagerly "
                    f"(shapes {', '.join(t.partial_fallback_shapes)})")
    return tuple(bits)


def kinds_text(kinds: tuple[tuple[str, int], ...], most: int = 3) -> str:
    """Guard kinds with their counts, the largest ``most`` named and the rest counted."""
    shown = ", ".join(f"{k} {n}" for k, n in kinds[:most])
    return shown + (f", +{sum(n for _, n in kinds[most:])} more" if len(kinds) > most else "")


def source_label(s: GuardSourceRow) -> str:
    """``48 modules self.layers[*]`` / ``parameters of self.layers[*].linear``…: a source of guards in words."""
    plural = s.owners > 1
    if s.category == "module":
        return f"{s.owners} modules {s.owner}" if plural else f"module {s.owner}"
    if s.category == "parameter":
        return f"parameters of {s.owners} modules {s.owner}" if plural else f"parameters of {s.owner}"
    if s.category == "global":
        return f"global {s.owner}"
    if s.category == "input":
        return f"input {s.owner}"
    if s.category == "ambient":
        return "the frame's global state (grad mode, default device…)"
    if s.category == "shape":
        return "symbolic shape relations"
    return s.owner


def labelled(sources: tuple[GuardSourceRow, ...]) -> tuple[GuardSourceRow, ...]:
    return tuple(replace(s, label=source_label(s)) for s in sources)


def finish_guard_row(r: GuardShapeRow) -> GuardShapeRow:
    """A shape's guard row with its kinds in words, its sources named, and the costliest source
    a user can act on (not the frame's global state or the shape relations)."""
    sources = labelled(r.sources)
    return replace(r, kinds_text=kinds_text(r.kinds), sources=sources,
                   top_source=next((s for s in sources if s.category not in ("ambient", "shape")), None))


def finish_guards(g: GuardSummary | None) -> GuardSummary | None:
    if g is None:
        return None
    return replace(g, rows=tuple(finish_guard_row(r) for r in g.rows), top=labelled(g.top))


def break_even_s(t: TrialReport, timeline: tuple[CallPoint, ...]) -> float | None:
    """The stream's cumulative time at its break-even request (counted from 1)."""
    if t.break_even_request is None:
        return None
    return timeline[t.break_even_request - 1].cumulative_s


def finish_trial(t: TrialReport) -> TrialReport:
    rows = tuple(with_backward(c) for c in t.compile_rows)
    timeline = timeline_compiles(t, rows)
    changes = tuple(replace(c, reused=c.outcome == "reused") for c in t.changes)
    died = t.status not in ("ok", "unavailable") and t.completed < t.requests
    return replace(t, compile_rows=rows, timeline=timeline, verdict_text=verdict_text(t.verdict), changes=changes,
                   reused_changes=sum(1 for c in changes if c.reused), numerics_text=numerics_text(t),
                   rows=tuple(finish_row(r, t) for r in t.rows), problems=problems(t),
                   break_even_s=break_even_s(t, timeline), guards=finish_guards(t.guards),
                   dropped_count=sum(n for _, n in t.dropped_guards), dropped_text=kinds_text(t.dropped_guards),
                   ended_badly=t.status not in ("ok", "unavailable"),
                   died=died, attempted=t.completed + 1 if died else t.completed,
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
    """``report`` with its time axis's zero, each compile's start from it, and whether a signal killed the program."""
    t0 = first_start_us(report.functions)
    functions = tuple(replace(f, compile_rows=tuple(
        replace(finish_compile(c), offset_us=None if c.start_us is None else c.start_us - t0) for c in f.compile_rows))
        for f in report.functions)
    killed = report.error is not None and report.error.startswith("killed by ")
    return replace(report, first_start_us=t0, functions=functions, killed=killed)


def plan_note(r: VerifyRequest) -> str:
    """What the plan and its forecast said of a request that did not hit after start-up: a
    forecast that predicted otherwise is named first (the plan rests on it), then where the
    shape stands in the plan."""
    if r.uncovered_why is not None:
        return f"the plan lists it as uncovered: {r.uncovered_why}"
    where = "the plan covers it" if r.covered else "not in the plan's recording"
    if r.forecast == "unknown":
        return f"{where}; the forecast could not tell (unknown)"
    if r.forecast is not None and r.forecast != r.outcome:
        return f"the forecast missed it (predicted {r.forecast}); {where}"
    return where


def finish_request(r: VerifyRequest) -> VerifyRequest:
    """A verified request with what it did and what the plan said of it, in words."""
    what = f"compiles {', '.join(r.compile_ids)}" if r.outcome == "compile" else r.outcome
    return replace(r, what=what, plan_note=plan_note(r))
