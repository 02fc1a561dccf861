"""Terminal report of a run: formats the report model, computes nothing.

Every string that comes from user code, paths or PyTorch goes into a ``rich.text.Text``
(never parsed as markup), so ``[/x]`` in a path or a reason prints literally.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Group, RenderableType
from rich.text import Text

from ..report import (
    LEGEND,
    AdviceReport,
    BreakRow,
    CompareReport,
    Note,
    RunReport,
    ScriptAdvice,
    ShapeRow,
    Snippet,
    Stats,
    TrialReport,
)
from ..units import fmt_time
from .grid import Grid, T, indent, one_line, to_text

_NOTE_STYLE = {"error": "bold red", "warning": "yellow", "noise": "yellow", "info": "dim"}
_NOTE_MARK = {"error": "!", "warning": "!", "noise": "~", "info": "·"}
SCRIPT_VERDICT_STYLES = {"recommended": "bold green", "accepted": "green", "rejected": "red", "baseline": "dim"}

def _steady_cell(row: ShapeRow) -> Text:
    if row.steady is None:
        return T(row.steady_note or "—", "red" if row.steady_failed else "")
    text = T(f"{fmt_time(row.steady.median)} ±{fmt_time(row.steady.half_iqr)}")
    if row.steady.noisy:
        text.append(" ~", style="yellow")
    return text


def _eager_cell(row: ShapeRow) -> Text:
    return _p50(row.eager) if row.eager is not None else T("—")


def _p50(stats: Stats) -> Text:
    """A median with the noise mark, as every eager p50 cell shows it."""
    text = T(fmt_time(stats.median))
    if stats.noisy:
        text.append(" ~", style="yellow")
    return text


_NUMERICS_STYLE = {"fail": "bold red", "not counted": "dim"}
_STATUS_STYLE = {"unavailable": "dim"}  # a trial that did not run its stream; any other status is bold red


def _error_cell(row: ShapeRow) -> Text:
    return T(row.numerics_text, _NUMERICS_STYLE.get(row.numerics_state, ""))


def _speedup_cell(row: ShapeRow) -> Text:
    s = row.speedup
    if s is None:
        return T("—")
    style = {"faster": "green", "slower": "red"}.get(row.speed_class, "")
    return T(f"×{s:.2f}", style)


# how a shape's first call ran: its words (with the cause) and their style; any other status ran eager
_ROW_STATUS = {
    "compiled": ("compiled: {cause}", ""),
    "reused": ("reused a graph", ""),
    "eager fallback": ("EAGER FALLBACK: {cause}", "bold red"),
    "error": ("error: {cause}", "red"),
    "partial eager fallback": ("PARTIAL EAGER FALLBACK: {cause}", "bold red"),
}


def _status_cell(row: ShapeRow) -> Text:
    words, style = _ROW_STATUS.get(row.status, ("eager", ""))
    text = T(words.format(cause=row.cause), "yellow" if row.recompiled else style)
    if row.other_fallback_calls:
        text.append(f"; {row.other_fallback_calls} of {row.requests} call(s) ran eagerly", style="bold red")
    if row.other_partial_fallback_calls:
        text.append(f"; {row.other_partial_fallback_calls} of {row.requests} call(s) ran partly eagerly",
                    style="bold red")
    if row.error_calls:
        text.append(f"; {row.error_calls} of {row.requests} raised", style="bold red")
    return text


def shape_table(report: RunReport) -> Grid:
    table = Grid(T(f"{one_line(report.workload)} — per shape"), (
        ("shape", "left"),
        ("strategy", "left"),
        ("reqs", "right"),
        ("first call", "right"),
        ("how it ran / cause", "left"),
        ("p50 ±IQR/2", "right"),
        ("eager p50\nsame process", "right"),
        ("speedup", "right"),
        ("eager trial\np50", "right"),
        ("max abs err", "right"),
    ), keys=2, once=(0,), keep=("reqs", "first call", "p50 ±IQR/2", "speedup", "max abs err"))
    trials = [t for t in report.trials if t.rows]
    for label in report.shapes:
        present = [(t, next((r for r in t.rows if r.shape == label), None)) for t in trials]
        present = [(t, r) for t, r in present if r is not None]
        for i, (trial, row) in enumerate(present):
            assert row is not None
            table.add_row(
                T(label),
                T(trial.label),
                T(row.requests),
                T(fmt_time(row.first_call_s)) if row.first_call_s is not None or not row.error else T("raised", "red"),
                _status_cell(row),
                _steady_cell(row),
                _eager_cell(row),
                _speedup_cell(row),
                _p50(row.eager_trial) if row.eager_trial and trial.compiles_code else T(""),
                _error_cell(row),
                end_section=i == len(present) - 1,
            )
    return table


def _fallbacks_cell(t: TrialReport) -> Text:
    """The stream's eager fallbacks, the partial ones (a frame of the call ran eagerly) beside."""
    return T(f"{t.fallbacks} + {t.partial_fallbacks} partial" if t.partial_fallbacks else t.fallbacks,
             "bold red" if t.fallbacks or t.partial_fallbacks else "")


def _counts_cell(t: TrialReport) -> Text:
    text = T(f"{t.stream.compiles} ({t.stream.recompiles})")
    extras = []
    if t.stream.refused:
        extras.append(f"{t.stream.refused} refused")
    if t.stream.failed:
        extras.append(f"{t.stream.failed} failed")
    if t.later.compiles:
        extras.append(f"+{t.later.compiles} later")
    if extras:
        text.append(" " + ", ".join(extras), style="yellow")
    return text


def summary_table(report: RunReport) -> Grid:
    table = Grid(T("per strategy"), (
        ("strategy", "left"),
        ("first call", "right"),
        ("compiles (re)", "right"),
        ("compile time", "right"),
        ("graph breaks", "right"),
        ("eager fallbacks", "right"),
        ("stream total (eager)", "right"),
        ("break-even", "left"),
        ("projected N*", "right"),
        ("numerics", "left"),
    ), keep=("first call", "compiles (re)", "compile time", "stream total (eager)", "break-even", "projected N*",
             "numerics"))
    for t in report.trials:
        if t.all_raised:
            table.add_row(T(t.label), T(f"failed: all {t.requests} requests raised", "bold red"), *[T("")] * 8)
            continue
        if not t.shown:
            table.add_row(T(t.label), T(t.status_text, _STATUS_STYLE.get(t.status, "bold red")), *[T("")] * 8)
            continue
        first = fmt_time(t.first_call_s)
        first_cell = T(first) if not t.call_errors else T(f"{first}, {t.call_errors} of {t.requests} raised", "bold red")
        if not t.compiles_code:
            table.add_row(T(t.label), first_cell, *[T("")] * 4, T(fmt_time(t.stream_s)), *[T("")] * 3)
            continue
        be = "not within the stream" if t.break_even_request is None else f"after {t.break_even_request:,} requests"
        n_star = t.n_star_text
        numerics = T(t.numerics_text, "bold red" if t.numerics_failed else "")
        table.add_row(
            T(t.label),
            first_cell,
            _counts_cell(t),
            T(fmt_time(t.stream.compile_s)),
            T(len(t.graph_breaks)),
            _fallbacks_cell(t),
            T(f"{fmt_time(t.stream_s)} ({fmt_time(t.eager_stream_s)})"),
            T(be),
            T(n_star),
            numerics,
        )
    return table


_OUTCOME = {
    "recompiled": ("recompiled", "yellow"),
    "compiled": ("compiled", "yellow"),
    "refused": ("recompile REFUSED (limit) — ran eagerly", "bold red"),
    "eager fallback": ("ran EAGERLY", "bold red"),
    "error": ("raised", "red"),
    "partial eager fallback": ("ran PARTLY EAGERLY", "bold red"),
}


def shape_change_lines(report: RunReport) -> list[Text]:
    """Shape changes that recompiled or ran eagerly, each with every guard failure; those
    that reused a compiled graph are counted."""
    lines = []
    for t in report.trials:
        if not t.shown or not t.compiles_code:
            continue
        for c in t.changes:
            if c.reused:
                continue
            word, style = _OUTCOME[c.outcome]
            text = T(f"  {t.label}: request {c.index} ")
            text.append(f"{c.previous} → {c.shape}", style="bold")
            text.append(f"  {fmt_time(c.latency_s)}  ")
            text.append(word + (" " + ", ".join(c.compile_ids) if c.compile_ids else ""), style=style)
            if c.eager_frames:
                text.append(" (" + ", ".join(c.eager_frames) + " ran eagerly)", style=style)
            if c.reasons:
                text.append(" — " + "; ".join(c.reasons))
            lines.append(text)
        if t.reused_changes:
            lines.append(T(f"  {t.label}: {t.reused_changes} other shape change(s) ran a compiled graph without "
                           f"recompiling (median {fmt_time(t.reused_median_s)})", "green"))
    return lines


def break_lines(breaks: Sequence[BreakRow], spaces: int = 2) -> list[RenderableType]:
    """Each distinct graph break: where, how often, PyTorch's first line, then its hints
    (the explanation and the rest are in the JSON and the HTML report)."""
    lines: list[RenderableType] = []
    for b in breaks:
        text = T(f"{b.filename}:{b.line}" if b.filename else "(unknown location)")
        text.append(f" ({b.count}×) ", style="dim")
        text.append(b.reason, style="bold")
        lines.append(indent(text, spaces))
        for hint in b.hints:
            lines.append(indent(T(f"hint: {hint}", "dim"), spaces + 4))
    return lines


def backward_lines(report: RunReport) -> list[Text]:
    """Each frame compile of a run that compiled a backward: forward and backward seconds.

    AOTAutograd traces the joint forward+backward graph when the forward compiles; the backward
    graph's own compile runs either lazily at the first backward call (a separate PyTorch
    metrics entry, merged here into its frame) or, when it needs the forward's symbolic sizes,
    inside the forward compile. Either way its time is part of the frame compile."""
    trials = [t for t in report.trials if any(c.backward_s for c in t.compile_rows)]
    lines = []
    for t in trials:
        for c in t.compile_rows:
            if not c.made_entry or not c.in_stream:
                continue
            forward = c.compile_s or 0.0
            text = T(f"  {t.label}: {c.compile_id} {c.name}"
                     + (f" at request {c.call_index}" if c.call_index is not None else "") + "  ")
            if c.backward_s:
                text.append(f"{fmt_time(c.with_backward_s)}", style="bold")
                text.append(f" = forward {fmt_time(forward)} + backward {fmt_time(c.backward_s)} (at the first backward)")
            else:
                text.append(f"{fmt_time(forward)}", style="bold")
                text.append(" = forward with its backward compiled inside it (no separate backward compile)")
            lines.append(text)
    return lines


def start_table(report: RunReport) -> Grid | None:
    if not report.start_modes:
        return None
    names = {"cold": "cold cache", "warm": "warm on-disk cache", "mega": "mega-cache"}
    table = Grid(T("start modes: first call (compiles)"),
                 [("strategy", "left"), *((names[mode], "right") for mode in report.start_modes)])
    for row in report.start_rows:
        table.add_row(T(row.strategy), *[T(c) for c in row.cells])
    return table


def _lookup_cell(stats: Stats | None) -> Text:
    if stats is None:
        return T("—", "dim")
    return T(f"{fmt_time(stats.median)} ±{fmt_time(stats.half_iqr)}" + (" ~" if stats.noisy else ""))


def _count_cell(n: int | None) -> Text:
    return T("—", "dim") if n is None else T(n)


def guard_table(report: RunReport) -> Grid | None:
    """Per compiled trial and shape: what a call's guard checks cost with its entry tried first,
    the entries a lookup could try, the guards by kind and the costliest source."""
    trials = [t for t in report.trials if t.guards is not None and t.guards.rows]
    if not trials:
        return None
    table = Grid(T("guards: what every call pays before the compiled code runs"), (
        ("strategy", "left"), ("shape", "left"), ("entries", "right"), ("lookup\n(entry first)", "right"),
        ("of the call", "right"), ("one rejecting\nentry", "right"), ("guards", "right"), ("by kind", "left"),
        ("PyTorch's\nguard_latency", "right"), ("costliest source", "left")),
        keys=2, once=(0,), keep=("entries", "lookup\n(entry first)", "of the call", "guards"))
    for t in trials:
        assert t.guards is not None
        for i, r in enumerate(t.guards.rows):
            top = r.top_source
            top_text = "" if top is None else f"{top.label}: {top.guards} guards" + (
                f", the lookup {top.share:.0%} shorter without them" if top.share is not None
                else " (the most guards; its time not told apart from the noise)")
            table.add_row(T(t.label), T(r.shape), _count_cell(r.entries), _lookup_cell(r.lookup),
                          T(f"{r.share:.0%}" if r.share is not None else ""), T(fmt_time(r.miss_s) if r.miss_s else ""),
                          _count_cell(r.guards), T(r.kinds_text, "dim"),
                          T(fmt_time(r.pytorch_latency_s) if r.pytorch_latency_s is not None else ""),
                          T(top_text or r.note, "dim" if not top_text else ""),
                          end_section=i == len(t.guards.rows) - 1)
    return table


def guard_lines(report: RunReport) -> list[Text]:
    """Each compiled trial's guard findings in words: the stream's order, the top sources, and
    a guard filter's soundness checks."""
    lines = []
    for t in report.trials:
        g = t.guards
        if g is not None and g.text:
            lines.append(Text.assemble(("  " + t.label + ": ", "bold"), g.text))
        if g is not None and g.top_text:
            lines.append(Text.assemble(("  " + t.label + " — costliest guards: ", "bold"), g.top_text))
        if t.dropped_guards:
            lines.append(T(f"  {t.label}: its guard filter dropped {t.dropped_count:,} guards ({t.dropped_text})", "dim"))
        for c in t.soundness:
            style = {"stale": "bold red", "sound": "green"}.get(c.verdict, "dim")
            lines.append(Text.assemble(("  " + t.label + ": ", "bold"), (c.verdict.upper() + " ", style), c.detail))
    return lines


def note_line(note: Note) -> Text:
    return T(f"{_NOTE_MARK[note.level]} {note.text}", _NOTE_STYLE[note.level])


def renderables(report: RunReport) -> list[RenderableType]:
    parts: list[RenderableType] = [shape_table(report)]
    if report.eager_spread is not None:
        parts.append(T(
            "speedup = eager p50 / compiled p50, both sampled interleaved in the same trial process; the eager "
            f"trial's own process measured up to ×{report.eager_spread:.2f} apart from it on these shapes", "dim"))
    parts.append(summary_table(report))
    starts = start_table(report)
    if starts is not None:
        parts.append(starts)
    guards = guard_table(report)
    if guards is not None:
        parts.append(guards)
    found = guard_lines(report)
    if found:
        parts.append(Group(T("guards (lookup = the guard checks before the compiled code runs)", "bold"), *found))
    changes = shape_change_lines(report)
    if changes:
        parts.append(Group(T("shape changes (stream order)", "bold"), *changes))
    breaks = [line for t in report.trials if t.graph_breaks
              for line in [T(f"  {t.label}:"), *break_lines(t.graph_breaks, 4)]]
    if breaks:
        parts.append(Group(T("graph breaks (PyTorch's words; its explanation is in the JSON and HTML)", "bold"),
                           *breaks))
    backward = backward_lines(report)
    if backward:
        parts.append(Group(T("frame compiles with their backward", "bold"), *backward))

    verdicts = verdict_group(report)
    if verdicts is not None:
        parts.append(verdicts)
    notes = [n for t in report.trials for n in t.notes] + list(report.notes)
    if notes:
        parts.append(Group(*[note_line(n) for n in notes]))
    return parts


def verdict_group(report: RunReport) -> Group | None:
    """Each trial's verdict sentences under one heading (None when no trial has one)."""
    verdicts = [Text.assemble(("  " + t.label + ": ", "bold"), t.verdict_text) for t in report.trials if t.verdict]
    if not verdicts:
        return None
    head = "verdict" + (f" (lifetime {report.lifetime:,} requests)" if report.lifetime else "")
    return Group(T(head, "bold"), *verdicts)


def render(report: RunReport, width: int = 160) -> str:
    """The whole terminal report as plain text."""
    return to_text(renderables(report), width)


def compare_renderables(report: CompareReport) -> list[RenderableType]:
    """``compilescope compare``: every compared figure, flagged ones coloured."""
    table = Grid(T(f"compare: A = {report.a}, B = {report.b}"), (
        ("trial", "left"), ("shape", "left"), ("figure", "left"), ("A", "right"), ("B", "right"), ("change", "right"),
        ("flag", "left"), ("why", "left")), keys=3, keep=("A", "B", "change", "flag"))
    for c in report.changes:
        style = {"regression": "bold red", "improvement": "green"}.get(c.flag, "")
        table.add_row(T(c.trial), T(c.shape), T(c.figure), T(c.a_text), T(c.b_text),
                      T("—" if c.change is None else f"{c.change:+.1%}", style), T(c.flag or "·", style), T(c.why, "dim"))
    parts: list[RenderableType] = []
    if report.pairing:
        parts.append(T(f"pairs: {report.pairing}", "dim"))
    if report.versions:
        parts.append(T(f"A and B ran on different versions: {'; '.join(report.versions)} (every pair)", "bold"))
    for warning in report.warnings:
        parts.append(T(f"! {warning}: this pair's figures include that difference", "yellow"))
    parts += [table, T(LEGEND, "dim")]
    for label in report.only_in_a:
        parts.append(T(f"! only in A: {label}", "yellow"))
    for label in report.only_in_b:
        parts.append(T(f"! only in B: {label}", "yellow"))
    n = len(report.regressions)
    paired = f"{len(report.pairs)} trial pair(s) compared"
    parts.append(T(f"{n} flagged regression(s) among {paired}" if n else f"no regression beyond the noise ({paired})",
                   "bold red" if n else "green"))
    return parts


def advice_renderables(advice: AdviceReport) -> list[RenderableType]:
    """``compilescope advise``: the default and each proposal, measured, with the verdict."""
    table = Grid(T(f"advise — objective: {advice.objective} over {advice.lifetime:,} requests"), (
        ("trial", "left"), ("verdict", "left"), ("compiles (re)", "right"), ("compile time", "right"),
        ("stream total", "right"), ("fallbacks", "right"), ("numerics", "left"), ("score", "right"), ("why", "left")),
        keep=("verdict", "compiles (re)", "compile time", "stream total", "fallbacks", "numerics", "score"))
    styles = {"recommended": "bold green", "accepted": "green", "rejected": "red", "baseline": "dim", "reference": "dim"}
    for row in advice.rows:
        t = row.trial
        table.add_row(
            T(row.label), T(row.verdict, styles[row.verdict]), _counts_cell(t),
            T(fmt_time(t.stream.compile_s) if t.compiles_code else "—"), T(fmt_time(t.stream_s)),
            _fallbacks_cell(t) if t.compiles_code else T("—"),
            T(t.numerics_text, "bold red" if t.numerics_failed else "") if t.compiles_code else T("—"),
            T(fmt_time(row.score)), T(row.why),
        )
    parts: list[RenderableType] = [table]
    if advice.recommendation is not None and advice.recommendation.proposal is not None:
        rec = advice.recommendation
        assert rec.proposal is not None
        line = T("recommended: ", "bold green")
        line.append(rec.label)
        parts.append(line)
        parts.extend(snippet_renderables(rec.proposal.snippet))
        if rec.proposal.alternative is not None:
            parts.append(T("  or, with no code change:", "green"))
            parts.extend(snippet_renderables(rec.proposal.alternative))
        parts.append(T("  addresses: " + ("; ".join(rec.proposal.addresses) or "—"), "dim"))
    else:
        parts.append(T("no measured proposal beat the default on this objective", "yellow"))
    if advice.tie:
        parts.append(T("  " + advice.tie, "yellow"))
    if advice.horizon:
        parts.append(T("  " + advice.horizon, "dim"))
    for note in advice.notes:
        parts.append(T(note, "yellow"))
    if advice.code_fixes:
        parts.append(T("needs a code change (not measured):", "bold"))
        for fix in advice.code_fixes:
            parts.append(T(f"  - {fix.cause}: {fix.step}"))
    return parts


def snippet_renderables(snippet: Snippet) -> list[RenderableType]:
    """A proposal's code as it runs: once (binds ``compiled`` from ``model``), then before
    each call (the call's inputs by parameter name)."""
    out: list[RenderableType] = [T("    once:", "dim")]
    out.extend(T(f"      {line}") for line in snippet.setup.splitlines())
    if snippet.before_call:
        out.append(T("    before each call:", "dim"))
        out.append(T(f"      {snippet.before_call}"))
    if snippet.note:
        out.append(T(f"    then: {snippet.note}", "dim"))
    return out


def script_advice_renderables(advice: ScriptAdvice) -> list[RenderableType]:
    """``compilescope advise --script``: the script as it is and under each setting, measured."""
    table = Grid(T(f"advise --script {advice.command}: each a fresh process, cold cache"), (
        ("run", "left"), ("verdict", "left"), ("exit", "right"), ("compiles (re)", "right"), ("refused", "right"),
        ("compile time", "right"), ("script wall", "right"), ("why", "left")),
        keep=("verdict", "exit", "compiles (re)", "refused", "compile time", "script wall"))
    for r in advice.rows:
        table.add_row(T(r.label), T(r.verdict, SCRIPT_VERDICT_STYLES[r.verdict]), T(r.exit_code), T(f"{r.compiles} ({r.recompiles})"),
                      T(r.refused), T(fmt_time(r.compile_s)), T(fmt_time(r.wall_s)), T(r.why or r.error or ""))
    parts: list[RenderableType] = [table]
    rec = advice.recommendation
    if rec is not None and rec.proposal is not None:
        line = T("recommended: ", "bold green")
        line.append(f"{rec.proposal.code}  (in the script, before the first compiled call)")
        env = rec.proposal.env
        if env:
            parts.append(line)
            line = T("  or with no code change: ", "green")
            line.append(f"{env} python {advice.command}")
        parts.append(line)
        parts.append(T("  addresses: " + rec.proposal.addresses, "dim"))
    else:
        parts.append(T("no setting measured better than the script as it is", "yellow"))
    if advice.code_fixes:
        parts.append(T("needs a code change (not measured):", "bold"))
        for cause, step in advice.code_fixes:
            parts.append(T(f"  - {cause}: {step}"))
    return parts
