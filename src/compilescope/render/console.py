"""Terminal report: per-shape table, per-strategy summary, shape changes and warnings."""

from __future__ import annotations

import io

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from ..analysis.regimes import (
    IQR_WARN_THRESHOLD,
    ShapeRow,
    TrialSummary,
    eager_trial,
    shape_changes,
    shape_rows,
    summarize_run,
)
from ..analysis.verdict import Evidence, gather_evidence, verdict_text
from ..model import RunResult, TrialResult, shape_label


def fmt_time(seconds: float | None) -> str:
    """A duration with its unit, three significant figures: ``98.1 µs``, ``1.23 ms``, ``20.5 s``."""
    if seconds is None:
        return "—"
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if seconds >= scale:
            value = seconds / scale
            return f"{value:.3g} {unit}" if value < 100 else f"{value:.0f} {unit}"
    return f"{seconds * 1e9:.0f} ns"


def _steady_cell(row: ShapeRow) -> Text:
    if row.steady is None:
        return Text(row.steady_error or "—", style="red" if row.steady_error else "")
    text = Text(f"{fmt_time(row.steady.median)} ±{fmt_time(row.steady.iqr / 2)}")
    if row.steady.noisy:
        text.append(" ~", style="yellow")
    return text


def _error_cell(row: ShapeRow) -> Text:
    n = row.numerics
    if n is None:
        return Text("—")
    if not n.passed:
        return Text(f"FAIL {n.max_abs_err:.1e}" if n.max_abs_err is not None else "FAIL", style="bold red")
    return Text(f"{n.max_abs_err:.1e}" if n.max_abs_err is not None else "ok")


def _speedup_cell(row: ShapeRow) -> Text:
    s = row.speedup
    if s is None:
        return Text("—")
    return Text(f"×{s:.2f}", style="green" if s >= 1.05 else "red" if s <= 0.95 else "")


def shape_table(result: RunResult) -> Table:
    table = Table(title=f"{result.workload} — per shape", title_justify="left", show_lines=False)
    for name, justify in (
        ("shape", "left"),
        ("strategy", "left"),
        ("reqs", "right"),
        ("first call", "right"),
        ("compiled? / cause", "left"),
        ("steady p50 ±IQR/2", "right"),
        ("eager p50", "right"),
        ("speedup", "right"),
        ("max abs err", "right"),
    ):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    rows_by_trial = [(t, shape_rows(t)) for t in result.trials if t.ok]
    shapes: list[str] = []
    for _, rows in rows_by_trial:
        for r in rows:
            if shape_label(r.shape) not in shapes:
                shapes.append(shape_label(r.shape))
    for label in shapes:
        for i, (trial, rows) in enumerate(rows_by_trial):
            row = next((r for r in rows if shape_label(r.shape) == label), None)
            if row is None:
                continue
            compiled = Text(
                f"yes: {row.cause}" if row.compiled else ("error" if row.error else "no"),
                style="yellow" if row.compiled and row.first_call_index > 0 else ("red" if row.error else ""),
            )
            eager_p50 = fmt_time(row.eager.median) if row.eager else "—"
            table.add_row(
                label if i == 0 else "",
                _trial_label(trial),
                str(row.requests),
                fmt_time(row.first_call_s) if not row.error else Text(row.error[:40], style="red"),
                compiled,
                _steady_cell(row),
                eager_p50,
                _speedup_cell(row),
                _error_cell(row),
                end_section=i == len(rows_by_trial) - 1,
            )
    return table


def _trial_label(trial: TrialResult) -> str:
    spec = trial.spec
    return spec.strategy if spec.cache == "none" else f"{spec.strategy} ({spec.cache})"


def run_evidence(result: RunResult) -> list[Evidence | None]:
    """The verdict evidence of each trial (None for eager and failed trials), derived once."""
    eager = eager_trial(result)
    return [gather_evidence(t, eager, result.lifetime) if t.ok and t.spec.cache != "none" else None
            for t in result.trials]


def summary_table(summaries: list[TrialSummary], evidence: list[Evidence | None]) -> Table:
    table = Table(title="per strategy", title_justify="left")
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
        table.add_column(name, justify=justify, no_wrap=name in ("strategy", "break-even", "stream total (eager)", "numerics"))  # type: ignore[arg-type]
    for s, e in zip(summaries, evidence):
        t = s.trial
        if not t.ok:
            style = "dim" if t.status == "unavailable" else "bold red"
            table.add_row(_trial_label(t), Text(t.status, style=style), *([""] * 8))
            continue
        if e is None:
            table.add_row(_trial_label(t), fmt_time(s.first_call_s), *([""] * 4), fmt_time(s.stream_s), *([""] * 3))
            continue
        be = "not within the stream" if s.break_even_request is None else f"after request {s.break_even_request}"
        if e.n_star is not None:
            n_star = f"{e.n_star:,}"
        else:
            n_star = "never" if e.saving_per_request_s is not None else "—"
        if s.numerics_failed:
            numerics: str | Text = Text(f"{s.numerics_failed} shape(s) FAIL", style="bold red")
        else:
            numerics = "all pass" if t.numerics else ""
        first = fmt_time(s.first_call_s)
        table.add_row(
            _trial_label(t),
            first if not s.errors else Text(f"{first}, {s.errors} error(s)", style="red"),
            f"{s.compiles} ({s.recompiles})",
            fmt_time(s.compile_s),
            str(s.graph_breaks),
            Text(str(e.fallbacks), style="bold red") if e.fallbacks else "0",
            f"{fmt_time(s.stream_s)} ({fmt_time(s.eager_stream_s)})",
            be,
            n_star,
            numerics,
        )
    return table


def shape_change_lines(result: RunResult) -> list[Text]:
    """Shape changes that recompiled, each with its latency and every guard failure;
    the ones that reused a compiled graph are counted."""
    lines = []
    for trial in result.trials:
        if not trial.ok or trial.spec.cache == "none":
            continue
        changes = shape_changes(trial)
        reused = [c for c in changes if not c.compiles]
        for change in changes:
            if not change.compiles:
                continue
            call = change.call
            text = Text(f"  {_trial_label(trial)}: request {call.index} ")
            text.append(f"{shape_label(change.previous)} → {shape_label(call.shape)}", style="bold")
            text.append(f"  {fmt_time(call.latency_s)}")
            text.append(f"  recompiled {', '.join(e.compile_id for e in change.compiles)}", style="yellow")
            if change.reasons:
                text.append(" — " + "; ".join(r.reason for r in change.reasons))
            lines.append(text)
        if reused:
            latencies = sorted(c.call.latency_s or 0.0 for c in reused)
            lines.append(
                Text(
                    f"  {_trial_label(trial)}: {len(reused)} other shape change(s) reused a compiled graph "
                    f"(median {fmt_time(latencies[len(latencies) // 2])})",
                    style="green",
                )
            )
    return lines


def start_table(result: RunResult) -> Table | None:
    """First-call latency per start mode, when more than one mode ran."""
    modes = [m for m in ("cold", "warm", "mega") if any(t.spec.cache == m for t in result.trials)]
    if len(modes) < 2:
        return None
    table = Table(title="start modes: first call (compiles)", title_justify="left")
    table.add_column("strategy")
    for mode in modes:
        table.add_column({"cold": "cold cache", "warm": "warm on-disk cache", "mega": "mega-cache"}[mode], justify="right")
    strategies = list(dict.fromkeys(t.spec.strategy for t in result.trials if t.spec.cache != "none"))
    for name in strategies:
        cells: list[str | Text] = [name]
        for mode in modes:
            t = next((x for x in result.trials if x.spec.strategy == name and x.spec.cache == mode), None)
            if t is None:
                cells.append("")
            elif not t.ok:
                cells.append(Text(t.status, style="red" if t.status != "unavailable" else "dim"))
            else:
                n = sum(1 for e in t.compiles if e.forward)
                cell = f"{fmt_time(t.calls[0].latency_s if t.calls else None)} ({n})"
                if t.cache_load_s is not None:
                    cell += f" +{fmt_time(t.cache_load_s)} load"
                cells.append(cell)
        table.add_row(*cells)
    return table


def verdict_lines(result: RunResult, evidence: list[Evidence | None]) -> list[Text]:
    lines = []
    for t, e in zip(result.trials, evidence):
        if e is None:
            continue
        text = verdict_text(e)
        if text:
            lines.append(Text.assemble(("  " + _trial_label(t) + ": ", "bold"), text))
    return lines


def warning_lines(result: RunResult, summaries: list[TrialSummary]) -> list[Text]:
    out = []
    for s in summaries:
        t = s.trial
        if not t.ok:
            style = "dim" if t.status == "unavailable" else "red"
            out.append(Text(f"! {_trial_label(t)} {t.status}: {t.error}", style=style))
            continue
        if t.spec.cache != "none" and not any(e.forward for e in t.compiles):
            out.append(
                Text(
                    f"! {_trial_label(t)}: no frame was compiled — torch.compile never captured this code "
                    "(all of it in Dynamo's skipfiles?); its figures are eager's",
                    style="bold red",
                )
            )
        if s.numerics_failed:
            out.append(Text(f"! {_trial_label(t)}: outputs differ from eager on {s.numerics_failed} shape(s)", style="bold red"))
        if s.noisy_shapes:
            out.append(
                Text(
                    f"~ {_trial_label(t)}: {s.noisy_shapes} steady-state figure(s) have IQR/median > "
                    f"{IQR_WARN_THRESHOLD:.0%} (marked ~); treat differences there with care",
                    style="yellow",
                )
            )
        for c in t.calls:
            if c.error:
                out.append(Text(f"! {_trial_label(t)}: request {c.index} ({shape_label(c.shape)}) raised {c.error}", style="red"))
    return out


def renderables(result: RunResult) -> list[RenderableType]:
    summaries = summarize_run(result)
    evidence = run_evidence(result)
    parts: list[RenderableType] = [shape_table(result), summary_table(summaries, evidence)]
    starts = start_table(result)
    if starts is not None:
        parts.append(starts)
    changes = shape_change_lines(result)
    if changes:
        parts.append(Group(Text("shape changes (stream order)", style="bold"), *changes))
    verdicts = verdict_lines(result, evidence)
    if verdicts:
        parts.append(Group(Text("verdict" + (f" (lifetime {result.lifetime:,} requests)" if result.lifetime else ""),
                                style="bold"), *verdicts))
    warnings = warning_lines(result, summaries)
    if warnings:
        parts.append(Group(*warnings))
    return parts


def to_text(parts: list[RenderableType], width: int = 160) -> str:
    """Rich renderables as plain text (no colour), for files and tests."""
    buf = io.StringIO()
    console = Console(file=buf, width=width, color_system=None, force_terminal=False)
    for part in parts:
        console.print(part)
    return buf.getvalue()


def render(result: RunResult, width: int = 160) -> str:
    """The whole terminal report as plain text."""
    return to_text(renderables(result), width)
