"""Terminal report of a run: formats the report model, computes nothing.

Every string that comes from user code, paths or PyTorch goes into a ``rich.text.Text``
(never parsed as markup), so ``[/x]`` in a path or a reason prints literally.
"""

from __future__ import annotations

import io

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from ..analysis.verdict import verdict_text
from ..report import Note, RunReport, ShapeRow, TrialReport
from ..units import fmt_time, n_star_text

_NOTE_STYLE = {"error": "bold red", "warning": "yellow", "noise": "yellow", "info": "dim"}
_NOTE_MARK = {"error": "!", "warning": "!", "noise": "~", "info": "·"}


def T(text: object, style: str = "") -> Text:
    """Plain text: never markup."""
    return Text("" if text is None else str(text), style=style)


def _steady_cell(row: ShapeRow) -> Text:
    if row.steady is None:
        return T(row.steady_note or "—", "red" if row.steady_note and row.steady_note != "not measured" else "")
    text = T(f"{fmt_time(row.steady.median)} ±{fmt_time(row.steady.iqr / 2)}")
    if row.steady.noisy:
        text.append(" ~", style="yellow")
    return text


def _eager_cell(row: ShapeRow) -> Text:
    if row.eager is None:
        return T("—")
    text = T(fmt_time(row.eager.median))
    if row.eager.noisy:
        text.append(" ~", style="yellow")
    return text


def _error_cell(row: ShapeRow) -> Text:
    n = row.numerics
    if n is None:
        return T("—")
    if n.ran_eagerly:
        return T("eager: not counted", "dim")
    if not n.comparable:
        return T("n/a: eager varies", "dim")
    if not n.passed:
        return T(f"FAIL {n.max_abs_err:.1e}" if n.max_abs_err is not None else "FAIL", "bold red")
    return T(f"{n.max_abs_err:.1e}" if n.max_abs_err is not None else "ok")


def _speedup_cell(row: ShapeRow) -> Text:
    s = row.speedup
    if s is None:
        return T("—")
    style = {"faster": "green", "slower": "red"}.get(row.speed_class, "")
    return T(f"×{s:.2f}", style)


def _status_cell(row: ShapeRow) -> Text:
    if row.status == "compiled":
        text = T(f"compiled: {row.cause}", "yellow" if row.first_call_index > 0 else "")
    elif row.status == "reused":
        text = T("reused a graph")
    elif row.status == "eager fallback":
        text = T(f"EAGER FALLBACK: {row.cause}", "bold red")
    elif row.status == "error":
        text = T(f"error: {row.cause[:60]}", "red")
    else:
        text = T("eager")
    if row.fallback_calls and row.status != "eager fallback":
        text.append(f"; {row.fallback_calls} of {row.requests} call(s) ran eagerly", style="bold red")
    return text


def shape_table(report: RunReport) -> Table:
    table = Table(title=T(f"{report.workload} — per shape"), title_justify="left")
    for name, justify in (
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
    ):
        table.add_column(T(name), justify=justify, no_wrap=name != "how it ran / cause",  # type: ignore[arg-type]
                         min_width=24 if name == "how it ran / cause" else None)
    trials = [t for t in report.trials if t.rows]
    for label in report.shapes:
        present = [(t, next((r for r in t.rows if r.shape == label), None)) for t in trials]
        present = [(t, r) for t, r in present if r is not None]
        for i, (trial, row) in enumerate(present):
            assert row is not None
            table.add_row(
                T(label if i == 0 else ""),
                T(trial.label),
                T(row.requests),
                T(fmt_time(row.first_call_s)) if not row.error else T((row.error or "")[:40], "red"),
                _status_cell(row),
                _steady_cell(row),
                _eager_cell(row),
                _speedup_cell(row),
                T(fmt_time(row.eager_trial.median) if row.eager_trial and trial.compiles_code else ""),
                _error_cell(row),
                end_section=i == len(present) - 1,
            )
    return table


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


def summary_table(report: RunReport) -> Table:
    table = Table(title=T("per strategy"), title_justify="left")
    for name, justify in (
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
    ):
        table.add_column(T(name), justify=justify,  # type: ignore[arg-type]
                         no_wrap=name in ("strategy", "break-even", "stream total (eager)", "compiles (re)", "numerics"))
    for t in report.trials:
        if t.status != "ok":
            style = "dim" if t.status == "unavailable" else "bold red"
            done = f" ({t.completed}/{t.requests} requests)" if t.status != "unavailable" else ""
            table.add_row(T(t.label), T(t.status + done, style), *[T("")] * 8)
            continue
        if not t.compiles_code:
            table.add_row(T(t.label), T(fmt_time(t.first_call_s)), *[T("")] * 4, T(fmt_time(t.stream_s)), *[T("")] * 3)
            continue
        be = "not within the stream" if t.break_even_request is None else f"after request {t.break_even_request}"
        n_star = n_star_text(t.n_star, t.saving_per_request_s, t.saving_significant)
        if t.numerics_failed:
            numerics = T(f"{t.numerics_failed} of {t.numerics_checked} FAIL", "bold red")
        else:
            parts = [f"{t.numerics_checked} pass"] if t.numerics_checked else []
            parts += [f"{t.numerics_eager} eager"] if t.numerics_eager else []
            parts += [f"{t.numerics_not_comparable} n/a"] if t.numerics_not_comparable else []
            numerics = T(", ".join(parts))
        first = fmt_time(t.first_call_s)
        table.add_row(
            T(t.label),
            T(first) if not t.call_errors else T(f"{first}, {t.call_errors} error(s)", "red"),
            _counts_cell(t),
            T(fmt_time(t.stream.compile_s)),
            T(len(t.graph_breaks)),
            T(t.fallbacks, "bold red" if t.fallbacks else ""),
            T(f"{fmt_time(t.stream_s)} ({fmt_time(t.eager_stream_s)})"),
            T(be),
            T(n_star),
            numerics,
        )
    return table


_OUTCOME = {
    "recompiled": ("recompiled", "yellow"),
    "refused": ("recompile REFUSED (limit) — ran eagerly", "bold red"),
    "eager fallback": ("ran EAGERLY", "bold red"),
    "error": ("raised", "red"),
}


def shape_change_lines(report: RunReport) -> list[Text]:
    """Shape changes that recompiled or ran eagerly, each with every guard failure; those
    that reused a compiled graph are counted."""
    lines = []
    for t in report.trials:
        if t.status != "ok" or not t.compiles_code:
            continue
        reused = [c for c in t.changes if c.outcome == "reused"]
        for c in t.changes:
            if c.outcome == "reused":
                continue
            word, style = _OUTCOME[c.outcome]
            text = T(f"  {t.label}: request {c.index} ")
            text.append(f"{c.previous} → {c.shape}", style="bold")
            text.append(f"  {fmt_time(c.latency_s)}  ")
            text.append(word + (" " + ", ".join(c.compile_ids) if c.compile_ids else ""), style=style)
            if c.reasons:
                text.append(" — " + "; ".join(c.reasons))
            lines.append(text)
        if reused:
            lines.append(T(f"  {t.label}: {len(reused)} other shape change(s) ran a compiled graph without "
                           f"recompiling (median {fmt_time(t.reused_median_s)})", "green"))
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
            if c.outcome != "compiled" or c.phase != "stream":
                continue
            forward = c.compile_s or 0.0
            text = T(f"  {t.label}: {c.compile_id} {c.name}"
                     + (f" at request {c.call_index}" if c.call_index is not None else "") + "  ")
            if c.backward_s:
                text.append(f"{fmt_time(forward + c.backward_s)}", style="bold")
                text.append(f" = forward {fmt_time(forward)} + backward {fmt_time(c.backward_s)} (at the first backward)")
            else:
                text.append(f"{fmt_time(forward)}", style="bold")
                text.append(" = forward with its backward compiled inside it (no separate backward compile)")
            lines.append(text)
    return lines


def start_table(report: RunReport) -> Table | None:
    if not report.start_modes:
        return None
    table = Table(title=T("start modes: first call (compiles)"), title_justify="left")
    table.add_column(T("strategy"))
    names = {"cold": "cold cache", "warm": "warm on-disk cache", "mega": "mega-cache"}
    for mode in report.start_modes:
        table.add_column(T(names[mode]), justify="right")
    for row in report.start_rows:
        table.add_row(T(row.strategy), *[T(c) for c in row.cells])
    return table


def note_line(note: Note) -> Text:
    return T(f"{_NOTE_MARK[note.level]} {note.text}", _NOTE_STYLE[note.level])


def renderables(report: RunReport) -> list[RenderableType]:
    parts: list[RenderableType] = [shape_table(report)]
    if report.eager_spread is not None:
        parts.append(T(
            "speedup = eager p50 / compiled p50, both sampled interleaved in the same trial process; the eager "
            f"trial's own process measured up to {report.eager_spread:.0%} apart from it on these shapes", "dim"))
    parts.append(summary_table(report))
    starts = start_table(report)
    if starts is not None:
        parts.append(starts)
    changes = shape_change_lines(report)
    if changes:
        parts.append(Group(T("shape changes (stream order)", "bold"), *changes))
    backward = backward_lines(report)
    if backward:
        parts.append(Group(T("frame compiles with their backward", "bold"), *backward))
    verdicts = [Text.assemble(("  " + t.label + ": ", "bold"), verdict_text(t.verdict)) for t in report.trials if t.verdict]
    if verdicts:
        head = "verdict" + (f" (lifetime {report.lifetime:,} requests)" if report.lifetime else "")
        parts.append(Group(T(head, "bold"), *verdicts))
    notes = [n for t in report.trials for n in t.notes] + list(report.notes)
    if notes:
        parts.append(Group(*[note_line(n) for n in notes]))
    return parts


def to_text(parts: list[RenderableType], width: int = 160) -> str:
    """Rich renderables as plain text (no colour), for files and tests."""
    buf = io.StringIO()
    console = Console(file=buf, width=width, color_system=None, force_terminal=False)
    for part in parts:
        console.print(part)
    return buf.getvalue()


def render(report: RunReport, width: int = 160) -> str:
    """The whole terminal report as plain text."""
    return to_text(renderables(report), width)


def compare_renderables(report: object) -> list[RenderableType]:
    """``compilescope compare``: every compared figure, flagged ones coloured."""
    from ..analysis.compare import CompareReport

    assert isinstance(report, CompareReport)
    table = Table(title=T(f"compare: A = {report.a}, B = {report.b}"), title_justify="left")
    for name, justify in (("trial", "left"), ("shape", "left"), ("figure", "left"), ("A", "right"), ("B", "right"),
                          ("change", "right"), ("flag", "left"), ("why", "left")):
        table.add_column(T(name), justify=justify)  # type: ignore[arg-type]

    def value(c: object, v: float | None) -> str:
        if v is None:
            return "—"
        figure = getattr(c, "figure")
        if figure == "compiles":
            return str(int(v))
        if figure == "steady p50 / eager":
            return f"{v:.3f}"
        return fmt_time(v)

    for c in report.changes:
        style = {"regression": "bold red", "improvement": "green"}.get(c.flag, "")
        table.add_row(T(c.trial), T(c.shape), T(c.figure), T(value(c, c.a)), T(value(c, c.b)),
                      T("—" if c.change is None else f"{c.change:+.1%}", style), T(c.flag or "·", style), T(c.why, "dim"))
    parts: list[RenderableType] = [table]
    for label in report.only_in_a:
        parts.append(T(f"! only in A: {label}", "yellow"))
    for label in report.only_in_b:
        parts.append(T(f"! only in B: {label}", "yellow"))
    n = len(report.regressions)
    parts.append(T(f"{n} flagged regression(s)" if n else "no regression beyond the noise", "bold red" if n else "green"))
    return parts


def advice_renderables(advice: object) -> list[RenderableType]:
    """``compilescope advise``: the default and each proposal, measured, with the verdict."""
    from ..analysis.advise import AdviceReport

    assert isinstance(advice, AdviceReport)
    table = Table(title=T(f"advise — objective: {advice.objective} over {advice.lifetime:,} requests"),
                  title_justify="left")
    for name, justify in (("trial", "left"), ("verdict", "left"), ("compiles (re)", "right"), ("compile time", "right"),
                          ("stream total", "right"), ("fallbacks", "right"), ("numerics", "left"),
                          ("score", "right"), ("why", "left")):
        table.add_column(T(name), justify=justify, no_wrap=name not in ("why",),  # type: ignore[arg-type]
                         min_width=40 if name == "why" else None)
    styles = {"recommended": "bold green", "accepted": "green", "rejected": "red", "baseline": "dim"}
    for row in advice.rows:
        t = row.trial
        numerics = "FAIL" if t.numerics_failed else (f"{t.numerics_checked} pass" if t.numerics_checked else "—")
        table.add_row(
            T(row.label), T(row.verdict, styles[row.verdict]), T(f"{t.stream.compiles} ({t.stream.recompiles})"),
            T(fmt_time(t.stream.compile_s)), T(fmt_time(t.stream_s)), T(t.fallbacks), T(numerics),
            T(fmt_time(row.score)), T(row.why),
        )
    parts: list[RenderableType] = [table]
    if advice.recommendation is not None and advice.recommendation.proposal is not None:
        rec = advice.recommendation
        assert rec.proposal is not None
        line = T("recommended: ", "bold green")
        line.append(f"{rec.label} — {rec.proposal.code}")
        parts.append(line)
        parts.append(T("  addresses: " + "; ".join(rec.proposal.addresses), "dim"))
    else:
        parts.append(T("no measured proposal beat the default on this objective", "yellow"))
    if advice.code_fixes:
        parts.append(T("needs a code change (not measured):", "bold"))
        for fix in advice.code_fixes:
            parts.append(T(f"  - {fix.cause}: {fix.step}"))
    return parts


def script_advice_renderables(advice: object) -> list[RenderableType]:
    """``compilescope advise --script``: the script as it is and under each setting, measured."""
    from ..script_advise import ScriptAdvice

    assert isinstance(advice, ScriptAdvice)
    table = Table(title=T(f"advise --script {advice.command}: each a fresh process, cold cache"), title_justify="left")
    for name, justify in (("run", "left"), ("verdict", "left"), ("exit", "right"), ("compiles (re)", "right"),
                          ("refused", "right"), ("compile time", "right"), ("script wall", "right"), ("why", "left")):
        table.add_column(T(name), justify=justify, no_wrap=name != "why",  # type: ignore[arg-type]
                         min_width=36 if name == "why" else None)
    styles = {"recommended": "bold green", "accepted": "green", "rejected": "red", "baseline": "dim"}
    for r in advice.rows:
        table.add_row(T(r.label), T(r.verdict, styles[r.verdict]), T(r.exit_code), T(f"{r.compiles} ({r.recompiles})"),
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
