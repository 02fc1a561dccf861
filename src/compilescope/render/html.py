"""A self-contained HTML report (plotly.js inlined: it opens offline) — formats the report
model, computes no figure.

Every string from user code, paths or PyTorch is data: escaped with ``html.escape`` in the
page, and the plots' JSON, which sits inside a ``<script>`` element, has ``<``, ``>``, ``&``
and the line separators written as ``\\uXXXX`` escapes, so a ``</script>`` or an
``<img onerror=…>`` in a guard's quoted source line renders as text.

Needs the optional extra ``compilescope[html]`` (plotly).
"""

from __future__ import annotations

import html
import json
from typing import Any

from ..errors import OptionError
from ..report import ProbeReport, RunReport, Stats, TrialReport
from ..units import fmt_time, n_star_text

EXTRA = "pip install 'compilescope[html]'"
COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
EVENT_SYMBOLS = {"first compile": "diamond", "recompile": "triangle-up", "eager fallback": "x", "refused": "x",
                 "error": "circle-open"}


def require_plotly() -> Any:
    try:
        import plotly.graph_objects as go  # noqa: F401
        import plotly.offline  # noqa: F401
    except ImportError:
        raise OptionError(f"the HTML report needs plotly: {EXTRA}") from None
    import plotly

    return plotly


def e(text: object) -> str:
    return html.escape("" if text is None else str(text), quote=True)


def script_json(data: Any) -> str:
    """JSON safe inside a <script> element: no character can end the element or open a tag."""
    import plotly.utils

    text = json.dumps(data, cls=plotly.utils.PlotlyJSONEncoder)
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:24px;color:#222;max-width:1500px}
h1{font-size:22px} h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ddd;padding-bottom:4px}
table{border-collapse:collapse;font-size:13px;margin:8px 0} th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;
vertical-align:top} th{background:#f4f4f4} td.num{text-align:right;font-variant-numeric:tabular-nums}
.bad{color:#b00020;font-weight:600} .warn{color:#9a6700} .good{color:#1a7f37} .dim{color:#777}
.verdict li{margin:4px 0} .plot{width:100%;height:420px} code{background:#f4f4f4;padding:1px 3px}
"""


class _Page:
    def __init__(self, title: str) -> None:
        self.title = title
        self.parts: list[str] = []
        self.figures: list[tuple[str, Any]] = []

    def add(self, fragment: str) -> None:
        self.parts.append(fragment)

    def figure(self, fig: Any, caption: str) -> None:
        div = f"plot{len(self.figures)}"
        self.figures.append((div, fig))
        self.add(f'<div class="plot" id="{div}" data-caption="{e(caption)}"></div>')

    def render(self) -> str:
        plotly = require_plotly()
        js = plotly.offline.get_plotlyjs()
        calls = []
        for div, fig in self.figures:
            spec = fig.to_plotly_json()
            calls.append(f"Plotly.newPlot({json.dumps(div)}, {script_json(spec['data'])}, "
                         f"{script_json(spec['layout'])}, {{responsive: true, displaylogo: false}});")
        return (
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{e(self.title)}</title><style>{STYLE}</style>"
            f"<script>{js}</script></head><body>\n"
            + "\n".join(self.parts)
            + "\n<script>\n" + "\n".join(calls) + "\n</script>\n</body></html>\n"
        )


def _table(head: list[str], rows: list[list[tuple[str, str]]]) -> str:
    """``rows`` of (text, css class) cells; the text is escaped here."""
    out = ["<table><tr>" + "".join(f"<th>{e(h)}</th>" for h in head) + "</tr>"]
    for row in rows:
        out.append("<tr>" + "".join(f'<td class="{cls}">{e(text)}</td>' for text, cls in row) + "</tr>")
    out.append("</table>")
    return "".join(out)


def _stats(s: Stats | None) -> str:
    return "—" if s is None else f"{fmt_time(s.median)} ±{fmt_time(s.iqr / 2)}"


def _summary_rows(report: RunReport) -> list[list[tuple[str, str]]]:
    rows = []
    for t in report.trials:
        if t.status != "ok":
            rows.append([(t.label, ""), (f"{t.status} ({t.completed}/{t.requests} requests)", "bad")] + [("", "")] * 7)
            continue
        counts = f"{t.stream.compiles} ({t.stream.recompiles})" + (f", {t.stream.refused} refused" if t.stream.refused else "")
        n_star = n_star_text(t.n_star, t.saving_per_request_s, t.saving_significant)
        rows.append([
            (t.label, ""), (fmt_time(t.first_call_s), "num"), (counts if t.compiles_code else "", "num"),
            (fmt_time(t.stream.compile_s) if t.compiles_code else "", "num"), (str(len(t.graph_breaks)), "num"),
            (str(t.fallbacks), "num bad" if t.fallbacks else "num"),
            (f"{fmt_time(t.stream_s)} ({fmt_time(t.eager_stream_s)})", "num"),
            ("—" if t.break_even_request is None else f"after request {t.break_even_request}", ""),
            (n_star if t.compiles_code else "", "num"),
        ])
    return rows


def _timeline_figure(report: RunReport) -> Any:
    import plotly.graph_objects as go

    fig = go.Figure()
    for i, t in enumerate(report.trials):
        if not t.timeline:
            continue
        color = COLORS[i % len(COLORS)]
        xs = [p.index for p in t.timeline]
        ys = [p.latency_s * 1e3 if p.latency_s is not None else None for p in t.timeline]
        hover = [f"request {p.index} · {p.shape}<br>{fmt_time(p.latency_s)}"
                 + (f"<br>{p.event} {' '.join(p.compile_ids)}" if p.event else "")
                 + "".join(f"<br>· {r}" for r in p.reasons[:4]) for p in t.timeline]
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines+markers", name=t.label, line={"color": color},
                                 marker={"size": 5}, hovertext=hover, hoverinfo="text"))
        marked = [p for p in t.timeline if p.event]
        if marked:
            fig.add_trace(go.Scatter(
                x=[p.index for p in marked], y=[(p.latency_s or 0) * 1e3 for p in marked], mode="markers",
                name=f"{t.label}: compiles / fallbacks", showlegend=False, hoverinfo="skip",
                marker={"symbol": [EVENT_SYMBOLS.get(p.event, "circle") for p in marked], "size": 13,
                        "color": ["#d62728" if p.event in ("eager fallback", "refused", "error") else color for p in marked],
                        "line": {"width": 1, "color": "#222"}}))
    fig.update_layout(title="latency per request (◆ first compile, ▲ recompile, ✕ eager fallback)",
                      xaxis_title="request", yaxis_title="latency (ms, log)", yaxis_type="log", hovermode="closest",
                      margin={"t": 50})
    return fig


def _cumulative_figure(report: RunReport) -> Any:
    import plotly.graph_objects as go

    fig = go.Figure()
    for i, t in enumerate(report.trials):
        if not t.timeline:
            continue
        color = COLORS[i % len(COLORS)]
        fig.add_trace(go.Scatter(x=[p.index + 1 for p in t.timeline], y=[p.cumulative_s for p in t.timeline],
                                 mode="lines", name=t.label, line={"color": color, "dash": "dot" if not t.compiles_code else "solid"}))
        if t.break_even_request is not None:
            at = t.timeline[t.break_even_request - 1]
            fig.add_trace(go.Scatter(x=[t.break_even_request], y=[at.cumulative_s], mode="markers+text",
                                     marker={"size": 12, "color": color, "symbol": "star"}, showlegend=False,
                                     text=[f"break-even: {t.label}"], textposition="top center", hoverinfo="text"))
    fig.update_layout(title="cumulative wall time of the stream (★ measured break-even against eager)",
                      xaxis_title="requests", yaxis_title="cumulative seconds (log)", yaxis_type="log", margin={"t": 50})
    return fig


def _steady_figure(report: RunReport) -> Any:
    import plotly.graph_objects as go

    fig = go.Figure()
    for i, t in enumerate(report.trials):
        rows = [r for r in t.rows if r.steady is not None]
        if not rows:
            continue
        fig.add_trace(go.Bar(
            x=[r.shape for r in rows], y=[r.steady.median * 1e3 for r in rows if r.steady], name=t.label,
            marker={"color": COLORS[i % len(COLORS)]},
            error_y={"type": "data", "symmetric": False,
                     "array": [(r.steady.q3 - r.steady.median) * 1e3 for r in rows if r.steady],
                     "arrayminus": [(r.steady.median - r.steady.q1) * 1e3 for r in rows if r.steady]},
            hovertext=[f"{t.label} · {r.shape}<br>p50 {fmt_time(r.steady.median if r.steady else None)} "
                       f"(IQR {fmt_time(r.steady.q1 if r.steady else None)}–{fmt_time(r.steady.q3 if r.steady else None)})"
                       + (f"<br>×{r.speedup:.2f} vs eager in the same process" if r.speedup else "") for r in rows],
            hoverinfo="text"))
    fig.update_layout(title="warmed steady state per shape: p50 with IQR whiskers (eager fallbacks left out)",
                      barmode="group", xaxis_title="shape", yaxis_title="ms per call", xaxis_type="category",
                      margin={"t": 50})
    return fig


def _phases_figure(rows: list[tuple[str, Any]]) -> Any:
    import plotly.graph_objects as go

    fig = go.Figure()
    labels = [label for label, _ in rows]
    phases: list[str] = []
    for _, r in rows:
        for name, _ in r.exclusive_s:
            if name not in phases:
                phases.append(name)
    for j, phase in enumerate(phases):
        fig.add_trace(go.Bar(y=labels, x=[dict(r.exclusive_s).get(phase, 0.0) for _, r in rows], name=phase,
                             orientation="h", marker={"color": COLORS[j % len(COLORS)]}))
    if any(r.backward_s for _, r in rows):
        fig.add_trace(go.Bar(y=labels, x=[r.backward_s or 0.0 for _, r in rows], name="backward (lazy)",
                             orientation="h", marker={"color": "#444"}))
    fig.update_layout(title="compile time per compile, by phase (exclusive seconds)", barmode="stack",
                      xaxis_title="seconds", yaxis={"autorange": "reversed", "type": "category"},
                      height=max(300, 26 * len(rows) + 120), margin={"t": 50, "l": 260})
    return fig


def _trial_tables(t: TrialReport) -> str:
    rows = []
    for r in t.rows:
        cls = "bad" if r.status in ("eager fallback", "error") else ""
        n = r.numerics
        numerics = "—" if n is None else ("eager: not counted" if n.ran_eagerly else "n/a: eager varies"
                                          if not n.comparable else ("FAIL " if not n.passed else "") +
                                          (f"{n.max_abs_err:.1e}" if n.max_abs_err is not None else "ok"))
        rows.append([
            (r.shape, ""), (str(r.requests), "num"), (fmt_time(r.first_call_s), "num"),
            (f"{r.status}: {r.cause}" if r.cause else r.status, cls),
            (_stats(r.steady) if r.steady else r.steady_note or "—", "num"), (_stats(r.eager), "num"),
            ("—" if r.speedup is None else f"×{r.speedup:.2f}", "num " + {"faster": "good", "slower": "bad"}.get(r.speed_class, "")),
            (_stats(r.eager_trial) if t.compiles_code else "", "num"), (numerics, "num"),
        ])
    return _table(["shape", "reqs", "first call", "how it ran / cause", "p50 ±IQR/2", "eager p50 (same process)",
                   "speedup", "eager trial p50", "max abs err"], rows)


def render_run(report: RunReport, *, title: str | None = None, command: str = "", created: str = "") -> str:
    require_plotly()
    page = _Page(title or f"compilescope — {report.workload}")
    page.add(f"<h1>compilescope — {e(report.workload)}</h1>")
    meta = [f"{report.requests} requests"]
    if report.lifetime:
        meta.append(f"verdict over a lifetime of {report.lifetime:,} requests")
    if created:
        meta.append(f"created {created}")
    page.add(f"<p class=\"dim\">{e(' · '.join(meta))}</p>")
    if command:
        page.add(f"<p><code>{e(command)}</code></p>")
    page.add("<h2>Verdict</h2><ul class=\"verdict\">" + "".join(
        f"<li><b>{e(t.label)}</b>: {e('; '.join(t.verdict))}.</li>" for t in report.trials if t.verdict) + "</ul>")
    page.add("<h2>Per strategy</h2>" + _table(
        ["strategy", "first call", "compiles (re)", "compile time", "graph breaks", "eager fallbacks",
         "stream total (eager)", "break-even", "projected N*"], _summary_rows(report)))
    page.add("<h2>Latency timeline</h2>")
    page.figure(_timeline_figure(report), "latency timeline")
    page.add("<h2>Cumulative time against eager</h2>")
    page.figure(_cumulative_figure(report), "cumulative time")
    page.add("<h2>Steady state per shape</h2>")
    page.figure(_steady_figure(report), "steady state")
    if report.eager_spread is not None:
        page.add(f"<p class=\"dim\">speedup = eager p50 / compiled p50, both sampled interleaved in the same trial "
                 f"process; the eager trial's own process measured up to {report.eager_spread:.0%} apart.</p>")
    rows = [(f"{t.label} · {c.compile_id}" + (f" (epoch {c.epoch})" if c.epoch else "") + f" · {c.name}", c)
            for t in report.trials for c in t.compile_rows if c.compile_s]
    if rows:
        page.add("<h2>Compile time by phase</h2>")
        page.figure(_phases_figure(rows), "compile phases")
    for t in report.trials:
        if not t.rows:
            continue
        page.add(f"<h2>{e(t.label)} — per shape</h2>" + _trial_tables(t))
        changes = [c for c in t.changes if c.outcome != "reused"]
        if changes:
            page.add(_table(["request", "shape change", "latency", "what happened", "reasons (PyTorch's words)"], [
                [(str(c.index), "num"), (f"{c.previous} → {c.shape}", ""), (fmt_time(c.latency_s), "num"),
                 (f"{c.outcome} {' '.join(c.compile_ids)}", "bad" if c.outcome in ("eager fallback", "refused") else ""),
                 ("; ".join(c.reasons), "")] for c in changes]))
        if t.graph_breaks:
            page.add(_table(["graph break at", "count", "reason"], [
                [(f"{b.filename}:{b.line}", ""), (str(b.count), "num"), (b.reason, "")] for b in t.graph_breaks]))
    notes = [n for t in report.trials for n in t.notes] + list(report.notes)
    if notes:
        page.add("<h2>Notes</h2><ul>" + "".join(
            f"<li class=\"{'bad' if n.level == 'error' else 'warn' if n.level in ('warning', 'noise') else 'dim'}\">"
            f"{e(n.text)}</li>" for n in notes) + "</ul>")
    return page.render()


def render_probe(report: ProbeReport) -> str:
    import plotly.graph_objects as go

    require_plotly()
    page = _Page(f"compilescope probe — {report.source}")
    page.add(f"<h1>compilescope probe — {e(report.source)}</h1>")
    page.add(f"<p>{report.compiles} compile(s) in {report.frames} frame(s), {e(fmt_time(report.compile_s))} compiling "
             f"({e(report.cache_start)} compile cache), {report.graph_break_count} graph break(s)</p>")
    fig = go.Figure()
    for i, f in enumerate(report.functions):
        points = [c for c in f.compile_rows if c.start_us is not None]
        if not points:
            continue
        t0 = min(c.start_us or 0 for fn in report.functions for c in fn.compile_rows if c.start_us is not None)
        fig.add_trace(go.Scatter(
            x=[((c.start_us or 0) - t0) / 1e6 for c in points], y=[c.compile_s or 0.0 for c in points],
            mode="markers+lines", name=f.name, marker={"size": 10, "color": COLORS[i % len(COLORS)],
                                                        "symbol": ["x" if c.outcome != "compiled" else "circle" for c in points]},
            hovertext=[f"{f.name} {c.compile_id} · {c.outcome}<br>{fmt_time(c.compile_s)}" for c in points],
            hoverinfo="text"))
    fig.update_layout(title="compiles over time, per function (✕ failed or refused)", xaxis_title="seconds since the "
                      "first compile", yaxis_title="compile seconds", margin={"t": 50})
    page.figure(fig, "compiles over time")
    for f in report.functions:
        page.add(f"<h2>{e(f.name)} <span class=\"dim\">{e(f.location)}</span></h2>")
        page.add(f"<p>{f.compiles} compile(s), {f.recompiles} recompile(s), {e(fmt_time(f.compile_s))} compiling"
                 + (f", recompile limit refused {f.refused}" if f.refused else "") + "</p>")
        if f.causes:
            page.add(_table(["cause", "shape-reducible?", "next step"], [
                [(c.description, ""), ("yes" if c.shape_reducible else "no", "good" if c.shape_reducible else "warn"),
                 (c.next_step, "")] for c in f.causes]))
        if f.guards:
            page.add(_table(["failing guard", "kind", "found by", "count", "rejecting entries"], [
                [(g.text, ""), (g.kind, ""), (g.found_by, ""), (str(g.count), "num"), (" ".join(g.entries), "")]
                for g in f.guards]))
    if report.graph_breaks:
        page.add("<h2>Graph breaks</h2>" + _table(["where", "count", "reason"], [
            [(f"{b.filename}:{b.line}", ""), (str(b.count), "num"), (b.reason, "")] for b in report.graph_breaks]))
    return page.render()


def render_compare(report: object) -> str:
    """Side by side: every compared figure of A and B, flagged ones marked."""
    from ..analysis.compare import CompareReport

    assert isinstance(report, CompareReport)
    require_plotly()
    page = _Page(f"compilescope compare — {report.a} vs {report.b}")
    page.add(f"<h1>compare</h1><p>A = <code>{e(report.a)}</code><br>B = <code>{e(report.b)}</code></p>")
    rows = []
    for c in report.changes:
        fmt = (lambda v: "—" if v is None else str(int(v))) if c.figure == "compiles" else (
            (lambda v: "—" if v is None else f"{v:.3f}") if c.figure == "steady p50 / eager" else fmt_time)
        cls = {"regression": "bad", "improvement": "good"}.get(c.flag, "")
        rows.append([(c.trial, ""), (c.shape, ""), (c.figure, ""), (fmt(c.a), "num"), (fmt(c.b), "num"),
                     ("—" if c.change is None else f"{c.change:+.1%}", "num " + cls), (c.flag or "·", cls), (c.why, "dim")])
    page.add(_table(["trial", "shape", "figure", "A", "B", "change", "flag", "why"], rows))
    import plotly.graph_objects as go

    steady = [c for c in report.changes if c.figure.startswith("steady") and c.a is not None and c.b is not None]
    if steady:
        fig = go.Figure()
        labels = [f"{c.trial} · {c.shape}" for c in steady]
        fig.add_trace(go.Bar(x=labels, y=[c.a for c in steady], name="A"))
        fig.add_trace(go.Bar(x=labels, y=[c.b for c in steady], name="B"))
        fig.update_layout(title="steady state, A against B (compiled trials: p50 relative to same-process eager)",
                          barmode="group", xaxis_type="category", margin={"t": 50})
        page.figure(fig, "compare steady")
    return page.render()
