"""Probe summary in the terminal: formats the probe report model, computes nothing."""

from __future__ import annotations

from rich.console import Group, RenderableType

from ..report import ProbeReport
from ..units import fmt_time
from .console import SCRIPT_VERDICT_STYLES
from .grid import Grid, T, to_text


def renderables(report: ProbeReport) -> list[RenderableType]:
    parts: list[RenderableType] = []
    head = T(f"compilescope probe: {report.source}", "bold")
    breaks = f"{len(report.graph_breaks)} graph break(s)" + (
        f" met {report.graph_break_count} times" if report.graph_break_count > len(report.graph_breaks) else "")
    if report.compiles:
        head.append(f"  — {report.compiles} compile(s) in {report.frames} frame(s), {fmt_time(report.compile_s)} "
                    f"compiling{f' ({report.cache_start} compile cache)' if report.cache_start else ''}, "
                    f"{breaks}")
    else:  # no compile time, no cache state: nothing used them
        head.append(f"  — nothing compiled, {breaks}")
    parts.append(head)
    if report.settings:
        parts.append(T(f"run under --config {' '.join(report.settings)}", "dim"))
    if report.forked_unobserved:
        parts.append(T(f"{report.forked_unobserved} process(es) the program forked compiled or called compiled code "
                       "too: not recorded here — each has its own compile cache", "yellow"))
    for f in report.functions:
        title = T(f"\n{f.name}", "bold")
        title.append(f"  {f.location} — {f.compiles} compile(s), {f.recompiles} recompile(s), "
                     f"{fmt_time(f.compile_s)} compiling")
        if f.backward_s:
            title.append(f" (backward {fmt_time(f.backward_s)})")
        if f.frame:
            title.append(f"  [frame {f.frame}]", style="dim")
        parts.append(title)
        table = Grid(None, (("cause", "left"), ("shape-reducible?", "left"), ("next step", "left")),
                     keep=("shape-reducible?",))
        for cause in f.causes:
            table.add_row(T(cause.description), T("yes", "green") if cause.shape_reducible else T("no", "yellow"),
                          T(cause.next_step))
        if f.refused:
            limit = f" ({report.recompile_limit})" if report.recompile_limit is not None else ""
            table.add_row(T(f"recompile limit{limit} refused {f.refused} attempt(s) to compile", "bold red"), T(""),
                          T("from then on every call no cache entry accepts runs EAGERLY (no compile, no error; "
                            "Dynamo records no such call, so they are not counted here) — raise "
                            "torch._dynamo.config.recompile_limit or remove the causes above"))
        for failure in f.failures:
            table.add_row(T(failure, "red"), T(""), T(""))
        if not f.causes and not f.refused and not f.failures:
            table.add_row(T("first compile only"), T(""), T(""))
        parts.append(table)
        if f.causes_overlap:
            parts.append(T("  the causes' compile counts overlap: one recompile can have several causes", "dim"))
    if report.fixes_unchecked:
        parts.append(T("\nthe setting fixes above (mark_dynamic, dynamic_sources, a config) are read from the guards, not run: probe --check-fixes (or "
                       "advise --script) runs the script again under each and prints a fix only as its run judged it",
                       "dim"))
    if report.checks:
        parts.append(T("\nfixes checked: the script run again under each setting, judged as advise --script judges",
                       "bold"))
        table = Grid(None, (("setting", "left"), ("verdict", "left"), ("compiles (re)", "right"), ("why", "left")),
                     keep=("verdict", "compiles (re)"))
        for run in report.checks:
            code = run.proposal.code if run.proposal is not None else ""
            table.add_row(T(code or run.label), T(run.verdict, SCRIPT_VERDICT_STYLES[run.verdict]),
                          T(f"{run.compiles} ({run.recompiles})"), T(run.why))
        parts.append(table)
    if report.graph_breaks:
        parts.append(T(f"\ngraph breaks: {len(report.graph_breaks)} distinct, met {report.graph_break_count} time(s) "
                       "while tracing (once per compile that reached the line, not per call)", "bold"))
        table = Grid(None, (("where", "left"), ("traced", "right"), ("reason", "left")), keep=("where", "traced"))
        for b in report.graph_breaks:
            reason = T(b.reason)
            for hint in b.hints:
                reason.append(f"\nhint: {hint}", style="dim")
            table.add_row(T(f"{b.filename}:{b.line}"), T(b.count), reason)
        parts.append(table)
    for lost in report.lost_capabilities:
        parts.append(T(f"compilescope {lost}", "yellow"))
    if report.counters:
        parts.append(T("trace counters: " + ", ".join(f"{k}={v}" for k, v in report.counters), "yellow"))
    if report.error:
        what = f"was {report.error}" if report.killed else f"raised {report.error}"
        parts.append(T(f"the program {what} (exit status {report.exit_code})", "red"))
    return [Group(*parts)]


def render(report: ProbeReport, width: int = 160) -> str:
    return to_text(renderables(report), width)
