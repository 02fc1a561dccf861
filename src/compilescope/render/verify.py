"""A warm-up plan's verification by replay in the terminal (and the rows the HTML page shows,
:func:`compilescope.render.html.render_verify`): formats a :class:`VerifyReport`, computes nothing. Every measured figure is labelled measured, every
predicted one forecast; every string from PyTorch or the user is data (rich ``Text``, HTML
escaped)."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from ..report.verify import Latency, StrategyVerify, VerifyReport, VerifyRequest
from ..units import fmt_seconds, fmt_time
from .grid import Grid, T, one_line, to_text

MAX_SHOWN = 20


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.1%}"


def _count(value: int | None) -> str:
    return "—" if value is None else str(value)


def _avoided(seconds: float | None) -> str:
    """What the warm-up took off the compiling requests' wall; none when they took longer."""
    if seconds is None or seconds >= 0:
        return fmt_time(seconds)
    return f"none ({fmt_time(-seconds)} more with the warm-up)"


def rows(s: StrategyVerify) -> list[tuple[str, str, str]]:
    """(figure, measured, forecast) — the table both the console and the page show."""
    w, b = s.with_warmup, s.without_warmup

    def lat(x: Latency | None, attr: str) -> str:
        return fmt_seconds(None if x is None else getattr(x, attr))

    return [
        ("requests compiling after start-up", _count(w.compiling_requests if w else None), _count(s.forecast_compiles)),
        ("requests run eagerly after start-up", _count(w.eager_requests if w else None), _count(s.forecast_eager)),
        ("stall-free fraction", _pct(s.stall_free), _pct(s.forecast_stall_free)),
        ("p50 request, with warm-up / without", f"{lat(w, 'p50_s')} / {lat(b, 'p50_s')}", "—"),
        ("p99 request, with warm-up / without", f"{lat(w, 'p99_s')} / {lat(b, 'p99_s')}", "—"),
        ("start-up cost (start-up calls' wall, summed)", fmt_time(s.startup_s), "—"),
        ("  of which compile s", fmt_seconds(s.startup_compile_s), "—"),
        ("compiling requests' wall, with / without", f"{lat(w, 'stall_s')} / {lat(b, 'stall_s')}", "—"),
        ("  of which compile s, with / without", f"{lat(w, 'compile_s')} / {lat(b, 'compile_s')}", "—"),
        ("stall cost avoided (compiling requests' wall)", _avoided(s.stall_avoided_s), "—"),
        ("forecast agrees with the measurement (of those predicted)", "—", _pct(s.agreement)),
        ("requests the forecast could not predict (unknown)", "—",
         _count(s.forecast_unknown if s.forecast_wall_s is not None else None)),
    ]


def verdict(s: StrategyVerify) -> Text:
    if s.error is not None:
        return Text(f"  not measured: {s.error}", "red")
    if not s.failures:
        return Text("  measured: no held-out request compiled or ran eagerly after start-up", "green")
    style = "green" if s.passed else "yellow"
    return Text(f"  measured: {len(s.failures)} held-out request(s) compiled, ran eagerly or raised after "
                f"start-up; {s.listed_uncovered} of them the plan lists as uncovered", style)


def _request_lines(r: VerifyRequest) -> list[RenderableType]:
    line = Text(f"  request {r.index} ({r.shape_label}): {r.what} (measured, {fmt_time(r.latency_s)})")
    line.append(f"; forecast {r.forecast or '—'}; {r.plan_note}", "dim")
    out: list[RenderableType] = [line]
    out += [Text(f"      {g.entry}: {g.text}  [{g.kind}]", "yellow") for g in r.guards]
    if r.error:
        out.append(Text(f"      raised: {r.error}", "red"))
    return out


def _strategy(s: StrategyVerify) -> list[RenderableType]:
    title = Text(f"\n{s.strategy}", "bold")
    title.append(f": {s.startup_shapes} start-up shape(s), then {s.heldout} held-out request(s) "
                 f"(trial {s.status}; start-up compiled {s.startup_compiles} frame(s))")
    table = Grid(None, (("figure", "left"), ("measured", "right"), ("forecast", "right")),
                 keep=("measured", "forecast"))
    for figure, measured, forecast in rows(s):
        table.add_row(T(figure), T(measured), T(forecast))
    parts: list[RenderableType] = [title, table, verdict(s)]
    for r in s.failures[:MAX_SHOWN]:
        parts += _request_lines(r)
    if len(s.failures) > MAX_SHOWN:
        parts.append(Text(f"  … and {len(s.failures) - MAX_SHOWN} more", "dim"))
    if s.disagreements:
        shown = ", ".join(map(str, s.disagreements[:MAX_SHOWN]))
        parts.append(Text(f"  forecast and measurement differ at held-out request(s) {shown}", "dim"))
    parts += [Text(f"  note: {n}", "dim") for n in s.notes]
    return parts


def renderables(report: VerifyReport) -> list[RenderableType]:
    head = Text(f"compilescope warmup --verify: {one_line(report.workload)}", "bold")
    head.append(f" — plan from {report.plan_stream}, {report.heldout} held-out request(s), backend {report.backend}, "
                f"torch {report.torch_version}, {fmt_time(report.wall_s)}")
    parts: list[RenderableType] = [head]
    for s in report.strategies:
        parts += _strategy(s)
    parts += [Text(f"note: {n}", "dim") for n in report.notes]
    return [Group(*parts)]


def render(report: VerifyReport, width: int = 120) -> str:
    """The console text of ``report``."""
    return to_text(renderables(report), width)
