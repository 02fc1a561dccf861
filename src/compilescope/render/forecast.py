"""The forecast in the terminal: formats a :class:`ForecastReport`, computes nothing."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from ..report.forecast import ForecastReport, StrategyForecast
from ..units import fmt_time
from .grid import Grid, T, one_line, to_text

MAX_STALLS_SHOWN = 20


def _totals(reports: list[ForecastReport]) -> Grid:
    both = len(reports) > 1
    recorded = any(r.recorded for r in reports)
    columns = [("strategy", "left")] + ([("method", "left")] if both else []) + [
        ("hit", "right"), ("compile", "right"), ("eager", "right"), ("error", "right"), ("unknown", "right"),
        ("shapes run" if not recorded else "evaluated", "right")] + ([("estimated", "right")] if recorded else []) + [
        ("compile s (predicted)", "right"), ("wall" if recorded else "dry run", "right")]
    table = Grid(None, columns, keys=2 if both else 1, keep=[name for name, _ in columns[1:]])
    rows = [(r.forecast_of(base.strategy), r) for base in reports[0].strategies for r in reports]
    for s, r in rows:
        if s is None:
            continue
        predicted = "—" if s.predicted_compile_s is None else fmt_time(s.predicted_compile_s)
        row: list[Text] = [T(s.strategy)] + ([T(r.method)] if both else []) + [
            T(s.hits), T(s.compiles, "yellow" if s.several_compiles else ""),
            T(s.eager, "red" if s.eager else ""), T(s.errors, "red" if s.errors else ""),
            T(s.unknown, "magenta" if s.unknown else ""), T(s.traced)]
        if recorded:
            row.append(T(s.estimated if r.recorded else "—", "dim" if s.estimated else ""))
        table.add_row(*row, T(predicted), T(fmt_time(s.dry_wall_s)))
    return table


def headline(s: StrategyForecast) -> str:
    """A strategy's outcome counts in one line: "3 compile, 9 hit, 2 unknown" — compile and hit
    always, the others when there are any; a forecast with no prediction, or whose every
    request raises, says so first."""
    counts = s.counts()
    said = ", ".join(f"{n} {word}" for word, n in counts.items() if n or word in ("compile", "hit"))
    if not s.known:
        return f"no request predicted ({said})"
    if s.every_request_raises:
        return f"every request raises ({said})"
    return said


def _stalls(s: StrategyForecast) -> list[RenderableType]:
    parts: list[RenderableType] = []
    title = Text(f"\n{s.strategy}", "bold")
    title.append(f": {headline(s)} (recompile limit {s.recompile_limit})")
    parts.append(title)
    if s.compile_times is not None:
        t = s.compile_times
        parts.append(Text(f"  compile seconds estimated from measured compiles in {t.source}: first compile "
                          f"{fmt_time(t.first_s)} (median of {t.first_n}), recompile {fmt_time(t.recompile_s)} "
                          f"(median of {t.recompile_n})", "dim"))
    compiling = s.with_outcome("compile")
    shown, more = compiling[:MAX_STALLS_SHOWN], compiling[MAX_STALLS_SHOWN:]
    for r in shown:
        line = Text(f"  request {r.index} ({r.shape_label}): compiles {', '.join(r.compile_ids)}")
        if r.estimated:
            line.append(" (estimated)", "dim")
        if r.compile_s is not None:
            line.append(f", ~{fmt_time(r.compile_s)} (estimated)", "dim")
        if r.why and not r.estimated:
            line.append(f" — {r.why}", "red")
        parts.append(line)
        for g in r.guards:
            parts.append(Text(f"      {g.entry}: {g.text}  [{g.kind}]", "yellow"))
        if r.guards_unrecorded:
            parts.append(Text("      (no guard text recorded)", "dim"))
    if more:
        parts.append(Text(f"  … and {len(more)} more compiling request(s)", "dim"))
    eager = s.with_outcome("eager")
    if eager:
        first = eager[0]
        parts.append(Text(f"  {len(eager)} request(s) run eagerly, the first: request {first.index} "
                          f"({first.shape_label}){f': {first.why}' if first.why else ''}", "red"))
    unknown = s.with_outcome("unknown")
    if unknown:
        parts.append(Text(f"  {len(unknown)} request(s) unknown, the first: request {unknown[0].index} "
                          f"({unknown[0].shape_label}): {unknown[0].why}", "magenta"))
    first_estimated = next((r for r in s.requests if r.estimated), None)
    if first_estimated is not None:
        parts.append(Text(f"  {s.estimated} request(s) estimated, from request {first_estimated.index}: "
                          f"{first_estimated.why}", "dim"))
    if s.recorded_from:
        parts.append(Text(f"  guards recorded in {s.recorded_from}", "dim"))
    if s.lookups is not None:
        lk = s.lookups
        line = Text(f"  guard lookups: a hit tries {lk.mean_tried:.1f} cache entries on average, its own included "
                    f"({lk.most_tried} at most)")
        if lk.per_request_s is not None:
            line.append(f"; ~{fmt_time(lk.per_request_s)} a request from the checks measured in {lk.source} "
                        f"({lk.timed} hits timed)", "dim")
        else:
            line.append("; their time is unknown without a measured run of this strategy (--results)", "dim")
        if lk.untold:
            line.append(f"; {lk.untold} hit(s) left out: which entry they run, the recorded guards could not tell",
                        "dim")
        parts.append(line)
    for note in s.notes:
        parts.append(Text(f"  note: {note}", "dim"))
    return parts


def _agreement(report: ForecastReport) -> list[RenderableType]:
    if report.compared is None:
        return []
    parts: list[RenderableType] = [Text(f"\n{report.method} vs {report.compared.method}, request by request", "bold")]
    for a in report.agreement:
        line = Text(f"  {a.strategy}: {a.agree} / {a.requests} agree ({a.share:.1%})")
        parts.append(line)
        for index, first, second in a.differ[:MAX_STALLS_SHOWN]:
            parts.append(Text(f"      request {index}: {report.method} {first}, {report.compared.method} {second}",
                              "yellow"))
        if len(a.differ) > MAX_STALLS_SHOWN:
            parts.append(Text(f"      … and {len(a.differ) - MAX_STALLS_SHOWN} more", "dim"))
    return parts


def _head(report: ForecastReport) -> Text:
    head = Text(f"compilescope forecast ({report.method}): {one_line(report.workload)}", "bold")
    how = (f"traced with {report.dry_backend} on fake tensors of the real device" if not report.recorded
           else "from the guards of recorded cache entries, no model run")
    head.append(f" — {report.stream_length} request(s), {report.distinct_shapes} distinct shape(s), backend "
                f"{report.backend} ({how}), torch {report.torch_version}, {fmt_time(report.wall_s)}")
    return head


def renderables(report: ForecastReport) -> list[RenderableType]:
    reports = [report] + ([report.compared] if report.compared is not None else [])
    parts: list[RenderableType] = [_head(report)] + ([_head(report.compared)] if report.compared else [])
    parts.append(_totals(reports))
    for r in reports:
        for s in r.strategies:
            parts += _stalls(s) if len(reports) == 1 else [Text(f"\n[{r.method}]", "dim"), *_stalls(s)]
    parts += _agreement(report)
    for r in reports:
        for note in r.notes:
            parts.append(Text(f"note: {note}", "dim"))
    return [Group(*parts)]


def render(report: ForecastReport, width: int = 100) -> str:
    """The console text of ``report``."""
    return to_text(renderables(report), width)
