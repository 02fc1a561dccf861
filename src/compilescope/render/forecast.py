"""The forecast in the terminal: formats a :class:`ForecastReport`, computes nothing."""

from __future__ import annotations

import io

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from ..report.forecast import ForecastReport, StrategyForecast
from ..units import fmt_time

MAX_STALLS_SHOWN = 20


def _totals(report: ForecastReport) -> Table:
    table = Table(title=None, show_edge=False, pad_edge=False)
    for name, justify in (("strategy", "left"), ("hit", "right"), ("compile", "right"), ("eager", "right"),
                          ("error", "right"), ("traced", "right"), ("compile s (predicted)", "right"),
                          ("dry run", "right")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for s in report.strategies:
        predicted = "—" if s.predicted_compile_s is None else fmt_time(s.predicted_compile_s)
        table.add_row(Text(s.strategy), str(s.hits), Text(str(s.compiles), "yellow" if s.compiles > 1 else ""),
                      Text(str(s.eager), "red" if s.eager else ""), str(s.errors), str(s.traced), predicted,
                      fmt_time(s.dry_wall_s))
    return table


def _stalls(s: StrategyForecast) -> list[RenderableType]:
    parts: list[RenderableType] = []
    title = Text(f"\n{s.strategy}", "bold")
    title.append(f": {s.compiles} request(s) compile on the request path, {s.eager} run eagerly "
                 f"(recompile limit {s.recompile_limit})")
    parts.append(title)
    if s.compile_times is not None:
        t = s.compile_times
        parts.append(Text(f"  compile seconds estimated from measured compiles in {t.source}: first compile "
                          f"{fmt_time(t.first_s)} (median of {t.first_n}), recompile {fmt_time(t.recompile_s)} "
                          f"(median of {t.recompile_n})", "dim"))
    shown = [r for r in s.requests if r.outcome == "compile"][:MAX_STALLS_SHOWN]
    for r in shown:
        line = Text(f"  request {r.index} ({r.shape_label}): compiles {', '.join(r.compile_ids)}")
        if r.compile_s is not None:
            line.append(f", ~{fmt_time(r.compile_s)} (estimated)", "dim")
        parts.append(line)
        for g in r.guards:
            parts.append(Text(f"      {g.entry}: {g.text}  [{g.kind}]", "yellow"))
        if not r.guards and r.compile_ids and not any(c.endswith("/0") for c in r.compile_ids):
            parts.append(Text("      (no guard text recorded)", "dim"))
    if s.compiles > len(shown):
        parts.append(Text(f"  … and {s.compiles - len(shown)} more compiling request(s)", "dim"))
    eager = [r for r in s.requests if r.outcome == "eager"]
    if eager:
        first = eager[0]
        parts.append(Text(f"  {len(eager)} request(s) run eagerly at the recompile limit, the first: request "
                          f"{first.index} ({first.shape_label})", "red"))
    for note in s.notes:
        parts.append(Text(f"  note: {note}", "dim"))
    return parts


def renderables(report: ForecastReport) -> list[RenderableType]:
    head = Text(f"compilescope forecast ({report.mode}): {report.workload}", "bold")
    head.append(f" — {report.stream_length} request(s), {report.distinct_shapes} distinct shape(s), backend "
                f"{report.backend} (traced with {report.dry_backend} on the meta device), torch "
                f"{report.torch_version}, {fmt_time(report.wall_s)}")
    parts: list[RenderableType] = [head, _totals(report)]
    for s in report.strategies:
        parts += _stalls(s)
    for note in report.notes:
        parts.append(Text(f"note: {note}", "dim"))
    return [Group(*parts)]


def render(report: ForecastReport, width: int = 100) -> str:
    """The console text of ``report``."""
    out = io.StringIO()
    Console(file=out, width=width, no_color=True, highlight=False).print(*renderables(report))
    return out.getvalue()
