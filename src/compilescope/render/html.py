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
from ..model import SCHEMA_VERSION
from ..report import (
    IQR_WARN_THRESHOLD,
    LEGEND,
    CompareReport,
    ProbeFile,
    ProbeReport,
    RunFile,
    RunReport,
    ShapeRow,
    Stats,
    TrialReport,
    VerifyReport,
)
from ..report.warmup import WarmupReport
from ..units import fmt_time
from . import ByKind

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
.banner{border:2px solid #b00020;background:#fdecee;color:#5f0010;padding:8px 14px;margin:12px 0;border-radius:4px}
.banner.warnonly{border-color:#9a6700;background:#fff8e1;color:#4d3300} .banner ul{margin:4px 0}
.noise{color:#9a6700;font-weight:600}
td.text{white-space:pre-wrap}
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
            f"<meta name=\"compilescope-schema-version\" content=\"{SCHEMA_VERSION}\">"
            f"<title>{e(self.title)}</title><style>{STYLE}</style>"
            f"<script>{js}</script></head><body>\n"
            + "\n".join(self.parts)
            + "\n<script>\n" + "\n".join(calls) + "\n</script>\n</body></html>\n"
        )


class Noisy(str):
    """A cell's text that gets the console's noise mark, styled."""


# the css class of what happened, by its word (a shape's first call, a shape change, a note)
OUTCOME_CLASS = {"eager fallback": "bad", "refused": "bad", "error": "bad", "partial eager fallback": "bad"}
NOTE_CLASS = {"error": "bad", "warning": "warn", "noise": "warn"}
SOUNDNESS_CLASS = {"stale": "bad"}  # a guard filter's dropped guard, changed: the compiled call went stale


def _cell(text: str, cls: str) -> str:
    if isinstance(text, Noisy):
        return (f'<td class="{cls}">{e(text)} <span class="noise" title="IQR/median above '
                f'{IQR_WARN_THRESHOLD:.0%}: noisy">~</span></td>')
    return f'<td class="{cls}">{e(text)}</td>'


def _table(head: list[str], rows: list[list[tuple[str, str]]], attrs: str = "") -> str:
    """``rows`` of (text, css class) cells; the text is escaped here."""
    out = [f"<table{attrs}><tr>" + "".join(f"<th>{e(h)}</th>" for h in head) + "</tr>"]
    for row in rows:
        out.append("<tr>" + "".join(_cell(text, cls) for text, cls in row) + "</tr>")
    out.append("</table>")
    return "".join(out)


def _stats(s: Stats | None) -> str:
    if s is None:
        return "—"
    text = f"{fmt_time(s.median)} ±{fmt_time(s.half_iqr)}"
    return Noisy(text) if s.noisy else text


def _p50(s: Stats | None) -> str:
    """The console's eager-p50 cell: the median, with the noise mark."""
    return "—" if s is None else Noisy(fmt_time(s.median)) if s.noisy else fmt_time(s.median)


def _numerics_summary(t: TrialReport) -> tuple[str, str]:
    """The console's numerics column, styled."""
    return t.numerics_text, "bad" if t.numerics_failed else ""


STATUS_CLASS = {"unavailable": "dim"}  # a trial that did not run its stream; any other status is bad
NUMERICS_CLASS = {"fail": "num bad"}  # a shape's numerics check, by its state


def _summary_rows(report: RunReport) -> list[list[tuple[str, str]]]:
    rows = []
    for t in report.trials:
        if not t.shown:
            errors = f", {t.call_errors} raised" if t.call_errors else ""
            rows.append([(t.label, ""), (f"{t.status_text}{errors}", STATUS_CLASS.get(t.status, "bad"))]
                        + [("", "")] * 8)
            continue
        counts = f"{t.stream.compiles} ({t.stream.recompiles})" + "".join(
            f", {n} {what}" for n, what in ((t.stream.refused, "refused"), (t.stream.failed, "failed"),
                                           (t.later.compiles, "later")) if n)
        n_star = t.n_star_text
        rows.append([
            (t.label, ""), (fmt_time(t.first_call_s) + (f", {t.call_errors} of {t.requests} raised" if t.call_errors else ""),
                            "num bad" if t.call_errors else "num"), (counts if t.compiles_code else "", "num"),
            (fmt_time(t.stream.compile_s) if t.compiles_code else "", "num"),
            (str(len(t.graph_breaks)) if t.compiles_code else "", "num"),  # as the console: none for eager
            (("" if not t.compiles_code else f"{t.fallbacks} + {t.partial_fallbacks} partial" if t.partial_fallbacks
              else str(t.fallbacks)), "num bad" if t.fallbacks or t.partial_fallbacks else "num"),
            (f"{fmt_time(t.stream_s)} ({fmt_time(t.eager_stream_s)})" if t.compiles_code else fmt_time(t.stream_s),
             "num"),
            ("" if not t.compiles_code else "not within the stream" if t.break_even_request is None
             else f"after {t.break_even_request:,} requests", ""),
            (n_star if t.compiles_code else "", "num"),
            _numerics_summary(t) if t.compiles_code else ("", ""),
        ])
    return rows


def _banner(report: RunReport) -> str:
    """Every trial that did not finish as planned, or whose requests raised, at the top of the
    page: a status other than ok (whatever it is), its error, and the requests that raised."""
    items = [f'<li data-trial="{e(t.label)}" data-status="{e(t.status)}"><b>{e(t.label)}</b> '
             f"{e('; '.join(t.problems))}</li>" for t in report.trials if t.problems]
    items += [f'<li data-trial="{e(label)}" data-status="missing"><b>{e(label)}</b> did not finish (the run was '
              "interrupted)</li>" for label in report.missing]
    if not items:
        return ""
    head = ("Not every trial succeeded." if report.failed else "Some requests ran eagerly.")
    raised = (" Requests that raised are marked ✕ in the plots; their figures are left out of the compiled ones."
              if any(t.call_errors for t in report.trials) else "")
    return (f'<div class="banner{"" if report.failed else " warnonly"}" id="failure-banner" role="alert">'
            f"<b>{e(head)}</b>{raised}<ul>{''.join(items)}</ul></div>")


ERROR_MARK = {"symbol": "x", "size": 12, "color": "#d62728", "line": {"width": 1, "color": "#5f0010"}}
# requests that raised have no latency: they are drawn on an overlaid axis, at the bottom
ERROR_AXIS = {"overlaying": "y", "range": [0, 1], "visible": False, "fixedrange": True}


def _error_traces(fig: Any, t: TrialReport, color: str, y_of: Any, axis: str) -> None:
    """Mark every request of ``t`` that raised (✕, hover with the error), and where a trial
    died, the request it died in: never silently dropped from a plot."""
    import plotly.graph_objects as go

    failed = [p for p in t.timeline if p.raised]
    if failed:
        fig.add_trace(go.Scatter(
            x=[p.count if axis == "cumulative" else p.index for p in failed], y=[y_of(p) for p in failed],
            yaxis="y2" if axis == "timeline" else "y", mode="markers", name=f"{e(t.label)}: request raised",
            legendgroup=t.label, marker=ERROR_MARK,
            hovertext=[f"{e(t.label)} · request {p.index} · {e(p.shape)}<br>raised: {e((p.error or '?')[:300])}"
                       + ("<br>(its time is not counted)" if axis == "cumulative" else "") for p in failed],
            hoverinfo="text"))
    if t.died:
        at = t.attempted if axis == "cumulative" else t.completed
        last = t.timeline[-1].cumulative_s if t.timeline else None
        fig.add_trace(go.Scatter(
            x=[at], y=[0.5 if axis == "timeline" else last], yaxis="y2" if axis == "timeline" else "y",
            mode="markers+text", name=f"{e(t.label)}: trial {e(t.status)}", legendgroup=t.label,
            marker={**ERROR_MARK, "symbol": "x-thin", "size": 18, "line": {"width": 3, "color": color}},
            text=[f"{e(t.label)} {e(t.status)}"], textposition="top center",
            hovertext=[f"{e(t.label)} {e(t.status)} in request {t.completed}: {e((t.error or '')[:300])}"],
            hoverinfo="text"))


def _timeline_figure(report: RunReport) -> Any:
    import plotly.graph_objects as go

    fig = go.Figure()
    for i, t in enumerate(report.trials):
        color = COLORS[i % len(COLORS)]
        if t.timeline:
            xs = [p.index for p in t.timeline]
            ys = [p.latency_s * 1e3 if p.latency_s is not None else None for p in t.timeline]
            hover = [f"request {p.index} · {e(p.shape)}<br>{fmt_time(p.latency_s)}"
                     + (f"<br>{e(p.event)} {e(' '.join(p.compile_ids))}" if p.event else "")
                     + "".join(f"<br>· {e(r)}" for r in p.reasons[:4]) for p in t.timeline]
            fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines+markers", name=e(t.label), line={"color": color},
                                     legendgroup=t.label, marker={"size": 5}, hovertext=hover, hoverinfo="text"))
            marked = [p for p in t.timeline if p.event and p.latency_s is not None]
            if marked:
                fig.add_trace(go.Scatter(
                    x=[p.index for p in marked], y=[(p.latency_s or 0) * 1e3 for p in marked], mode="markers",
                    name=f"{e(t.label)}: compiles / fallbacks", showlegend=False, hoverinfo="skip", legendgroup=t.label,
                    marker={"symbol": [EVENT_SYMBOLS.get(p.event, "circle") for p in marked], "size": 13,
                            "color": ["#d62728" if p.went_wrong else color for p in marked],
                            "line": {"width": 1, "color": "#222"}}))
        _error_traces(fig, t, color, lambda p: 0.04, "timeline")
    fig.update_layout(title="latency per request (◆ first compile, ▲ recompile, ✕ eager fallback; red ✕ at the "
                            "bottom: the request raised)",
                      xaxis_title="request", yaxis_title="latency (ms, log)", yaxis_type="log", hovermode="closest",
                      yaxis2=ERROR_AXIS, margin={"t": 50})
    return fig


def _cumulative_figure(report: RunReport) -> Any:
    import plotly.graph_objects as go

    fig = go.Figure()
    for i, t in enumerate(report.trials):
        color = COLORS[i % len(COLORS)]
        if t.timeline:
            fig.add_trace(go.Scatter(x=[p.count for p in t.timeline], y=[p.cumulative_s for p in t.timeline],
                                     mode="lines", name=e(t.label), legendgroup=t.label,
                                     line={"color": color, "dash": "dot" if not t.compiles_code else "solid"}))
        if t.break_even_request is not None:
            fig.add_trace(go.Scatter(x=[t.break_even_request], y=[t.break_even_s], mode="markers+text",
                                     marker={"size": 12, "color": color, "symbol": "star"}, showlegend=False,
                                     text=[f"break-even: {e(t.label)}"], textposition="top center", hoverinfo="text"))
        _error_traces(fig, t, color, lambda p: p.cumulative_s or None, "cumulative")
    fig.update_layout(title="cumulative wall time of the stream (★ measured break-even against eager; ✕ a request "
                            "that raised)",
                      xaxis_title="requests", yaxis_title="cumulative seconds (log)", yaxis_type="log", margin={"t": 50})
    return fig


def _lighter(color: str) -> str:
    r, g, b = (int(color[i:i + 2], 16) for i in (1, 3, 5))
    return "#" + "".join(f"{int(v + (255 - v) * 0.55):02x}" for v in (r, g, b))


def _speedup_text(r: ShapeRow) -> str:
    """The per-shape table's speedup cell, exactly."""
    return "—" if r.speedup is None else f"×{r.speedup:.2f}"


def _steady_figure(report: RunReport) -> Any:
    """Per shape, each compiled trial's p50 beside the eager p50 sampled interleaved in that
    trial's own process — the pair the table's speedup is the ratio of (written on the bar)."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for i, t in enumerate(report.trials):
        if not t.compiles_code:
            continue  # the eager trial's p50 is another process's: the table shows it, apart
        color = COLORS[i % len(COLORS)]
        rows = [r for r in t.rows if r.steady is not None and r.eager is not None and r.speedup is not None]
        if rows:
            for kind, pick in (("compiled", lambda r: r.steady), ("eager, same process", lambda r: r.eager)):
                stats = [pick(r) for r in rows]
                compiled = kind == "compiled"
                fig.add_trace(go.Bar(
                    x=[e(r.shape) for r in rows], y=[s.median * 1e3 for s in stats],
                    name=e(t.label) if compiled else f"{e(t.label)}: eager, same process", legendgroup=t.label,
                    offsetgroup=f"{i}-{kind}", meta=[t.label, kind],
                    marker={"color": color if compiled else _lighter(color), "line": {"color": color, "width": 1},
                            "pattern": {"shape": "" if compiled else "/"}},
                    text=[_speedup_text(r) if compiled else "" for r in rows], textposition="outside",
                    error_y={"type": "data", "symmetric": False, "array": [s.above * 1e3 for s in stats],
                             "arrayminus": [s.below * 1e3 for s in stats]},
                    hovertext=[f"{e(t.label)} · {e(r.shape)} · {kind}<br>p50 {fmt_time(s.median)} (IQR {fmt_time(s.q1)}–"
                               f"{fmt_time(s.q3)})" + (NOISE_HOVER if s.noisy else "")
                               + f"<br>speedup {_speedup_text(r)} ({r.speed_class or 'n/a'})"
                               for r, s in zip(rows, stats)],
                    hoverinfo="text"))
        missing = [r for r in t.rows if r.steady_missing]
        if missing:
            fig.add_trace(go.Scatter(
                x=[e(r.shape) for r in missing], y=[0] * len(missing), mode="markers", legendgroup=t.label,
                name=f"{e(t.label)}: no compiled figure", marker={**ERROR_MARK, "color": color},
                hovertext=[f"{e(t.label)} · {e(r.shape)}: {e(r.steady_missing[:300])}" for r in missing],
                hoverinfo="text"))
    fig.update_layout(title="steady state per shape: compiled p50 beside the same process's eager p50 (hatched); "
                            "label: speedup = eager / compiled",
                      barmode="group", xaxis_title="shape", yaxis_title="ms per call", xaxis_type="category",
                      yaxis={"rangemode": "tozero"}, margin={"t": 50})
    return fig


NOISE_HOVER = "<br>~ noisy: IQR/median above " + f"{IQR_WARN_THRESHOLD:.0%}"


def _phases_figure(rows: list[tuple[str, Any]]) -> Any:
    import plotly.graph_objects as go

    fig = go.Figure()
    labels = [e(label) for label, _ in rows]
    phases: list[str] = []
    for _, r in rows:
        for name, _ in r.exclusive_s:
            if name not in phases:
                phases.append(name)
    for j, phase in enumerate(phases):
        fig.add_trace(go.Bar(y=labels, x=[dict(r.exclusive_s).get(phase, 0.0) for _, r in rows], name=e(phase),
                             orientation="h", marker={"color": COLORS[j % len(COLORS)]}))
    if any(r.backward_s for _, r in rows):
        fig.add_trace(go.Bar(y=labels, x=[r.backward_s or 0.0 for _, r in rows], name="backward (lazy)",
                             orientation="h", marker={"color": "#444"}))
    fig.update_layout(title="compile time per compile, by phase (exclusive seconds)", barmode="stack",
                      xaxis_title="seconds", yaxis={"autorange": "reversed", "type": "category"},
                      height=max(300, 26 * len(rows) + 120), margin={"t": 50, "l": 260})
    return fig


def _guard_figure(report: RunReport) -> Any:
    """Each stream request's guard checks against how many cache entries its lookup tried
    (the entry's position in the lookup order), and each shape's with its entry tried first."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for i, t in enumerate(report.trials):
        g = t.guards
        if g is None:
            continue
        color = COLORS[i % len(COLORS)]
        hits = [p for p in g.points if p.lookup_s is not None]
        if hits:
            fig.add_trace(go.Scatter(
                x=[p.tried for p in hits], y=[p.lookup_s * 1e6 for p in hits], mode="markers", name=f"{e(t.label)}: stream",
                legendgroup=t.label, marker={"color": color, "size": 8},
                hovertext=[f"request {p.index} · {e(p.shape)}<br>{p.tried} entries tried · {fmt_time(p.lookup_s)}"
                           for p in hits], hoverinfo="text"))
        first = [r for r in g.rows if r.lookup is not None]
        if first:
            fig.add_trace(go.Scatter(
                x=[1] * len(first), y=[r.lookup.median * 1e6 for r in first if r.lookup], mode="markers",
                name=f"{e(t.label)}: its size repeated", legendgroup=t.label,
                marker={"color": color, "size": 12, "symbol": "diamond-open"},
                hovertext=[f"{e(r.shape)} repeated: {fmt_time(r.lookup.median if r.lookup else None)}" for r in first],
                hoverinfo="text"))
    fig.update_layout(title="guard checks of each request against the position of its cache entry in the lookup "
                            "(◇ the size repeated: its entry tried first)",
                      xaxis_title="cache entries tried (the hit included)", yaxis_title="lookup (µs)",
                      hovermode="closest", margin={"t": 50})
    return fig


def _guard_table(t: TrialReport) -> str:
    assert t.guards is not None
    rows = [[(r.shape, ""), ("—" if r.entries is None else str(r.entries), "num"), (_stats(r.lookup) if r.lookup else "—", "num"),
             (f"{r.share:.0%}" if r.share is not None else "", "num"), (fmt_time(r.miss_s) if r.miss_s else "", "num"),
             ("—" if r.guards is None else str(r.guards), "num"), (", ".join(f"{k} {n}" for k, n in r.kinds), "text"),
             (fmt_time(r.pytorch_latency_s) if r.pytorch_latency_s is not None else "", "num"),
             ("; ".join(f"{s.label}: {s.guards} guards" + (f", the lookup {s.share:.0%} shorter without them" if s.share is not None
                                                           else "") for s in r.sources[:3]) or r.note, "text")]
            for r in t.guards.rows]
    return _table(["shape", "cache entries", "lookup, entry first (p50 ±IQR/2)", "of the call", "one rejecting entry",
                   "guards", "by kind", "PyTorch's guard_latency (once, cold)", "costliest sources"], rows,
                  f' class="guards" data-trial="{e(t.label)}"')


def _trial_tables(t: TrialReport) -> str:
    rows = []
    for r in t.rows:
        cls = "bad" if OUTCOME_CLASS.get(r.status) or r.error_calls or r.fallback_calls else ""
        rows.append([
            (r.shape, ""), (str(r.requests), "num"), (fmt_time(r.first_call_s), "num"),
            ((f"{r.status}: {r.cause}" if r.cause else r.status)
             + (f"; {r.error_calls} of {r.requests} raised" if r.error_calls else "")
             + (f"; {r.other_partial_fallback_calls} of {r.requests} ran partly eagerly"
                if r.other_partial_fallback_calls else "")
             + (f"; {r.other_fallback_calls} of {r.requests} call(s) ran eagerly"
                if r.other_fallback_calls else ""), cls),
            (_stats(r.steady) if r.steady else r.steady_note or "—",
             "num bad" if not r.steady and r.steady_failed else "num"),
            (_p50(r.eager), "num"),
            (_speedup_text(r), "num speedup " + {"faster": "good", "slower": "bad"}.get(r.speed_class, "")),
            (_p50(r.eager_trial) if t.compiles_code else "", "num"),
            (r.numerics_text, NUMERICS_CLASS.get(r.numerics_state, "num")),
        ])
    return _table(["shape", "reqs", "first call", "how it ran / cause", "p50 ±IQR/2", "eager p50 (same process)",
                   "speedup (eager / compiled)", "eager trial p50", "numerics: max abs err"], rows,
                  f' class="shapes" data-trial="{e(t.label)}"')


def render_run(report: RunReport, *, title: str | None = None, command: str | None = None,
               created: str | None = None) -> str:
    """The page of a run (``command``, ``created``: the report's own unless given)."""
    command = report.command if command is None else command
    created = report.created if created is None else created
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
    page.add(_banner(report))
    page.add("<h2>Verdict</h2><ul class=\"verdict\">" + "".join(
        f"<li><b>{e(t.label)}</b>: {e(t.verdict_text)}</li>" for t in report.trials if t.verdict) + "</ul>")
    page.add("<h2>Per strategy</h2>" + _table(
        ["strategy", "first call", "compiles (re)", "compile time", "graph breaks", "eager fallbacks",
         "stream total (eager)", "break-even", "projected N*", "numerics"], _summary_rows(report),
        ' class="summary"'))
    page.add("<h2>Latency timeline</h2>")
    page.figure(_timeline_figure(report), "latency timeline")
    page.add("<h2>Cumulative time against eager</h2>")
    page.figure(_cumulative_figure(report), "cumulative time")
    page.add("<h2>Steady state per shape</h2>")
    page.figure(_steady_figure(report), "steady state")
    page.add("<p class=\"dim\">speedup = eager p50 / compiled p50, both sampled interleaved in the same trial "
             "process: the hatched bar beside each compiled bar is that eager sample"
             + (f"; the eager trial's own process measured up to ×{report.eager_spread:.2f} apart (its p50 is in "
                "the tables, not drawn here)" if report.eager_spread is not None else "")
             + f". ~ marks a figure whose IQR/median is above {IQR_WARN_THRESHOLD:.0%}.</p>")
    rows = [(f"{t.label} · {c.compile_id}" + (f" (epoch {c.epoch})" if c.epoch else "") + f" · {c.name}", c)
            for t in report.trials for c in t.compile_rows if c.compile_s]
    if rows:
        page.add("<h2>Compile time by phase</h2>")
        page.figure(_phases_figure(rows), "compile phases")
    if any(t.guards is not None and t.guards.points for t in report.trials):
        page.add("<h2>Guards: what every call pays</h2>")
        page.figure(_guard_figure(report), "guard checks by entry position")
        page.add("<ul>" + "".join(f"<li><b>{e(t.label)}</b>: {e(t.guards.text)}"
                                  + (f"<br>costliest guards: {e(t.guards.top_text)}" if t.guards.top_text else "")
                                  + "</li>" for t in report.trials if t.guards is not None and t.guards.text) + "</ul>")
    for t in report.trials:
        if not t.rows:
            continue
        page.add(f"<h2>{e(t.label)} — per shape</h2>" + _trial_tables(t))
        if t.guards is not None and t.guards.rows:
            page.add(_guard_table(t))
        if t.soundness:
            page.add(_table(["changed", "guard dropped", "shape", "verdict", "what happened"], [
                [(c.mutation, "text"), (c.guard, "text"), (c.shape, ""), (c.verdict, SOUNDNESS_CLASS.get(c.verdict, "")),
                 (c.detail, "text")] for c in t.soundness]))
        changes = [c for c in t.changes if not c.reused]
        if changes:
            page.add(_table(["request", "shape change", "latency", "what happened", "reasons (PyTorch's words)"], [
                [(str(c.index), "num"), (f"{c.previous} → {c.shape}", ""), (fmt_time(c.latency_s), "num"),
                 (f"{c.outcome} {' '.join(c.compile_ids)}" + (f" ({', '.join(c.eager_frames)} ran eagerly)" if c.eager_frames else ""),
                  OUTCOME_CLASS.get(c.outcome, "")),
                 ("; ".join(c.reasons), "")] for c in changes]))
        if t.graph_breaks:
            page.add(_table(["graph break at", "count", "reason"], [
                [(f"{b.filename}:{b.line}", ""), (str(b.count), "num"), (b.text or b.reason, "text")]
                for b in t.graph_breaks]))
    notes = [n for t in report.trials for n in t.notes] + list(report.notes)
    if notes:
        page.add("<h2>Notes</h2><ul>" + "".join(
            f"<li class=\"{NOTE_CLASS.get(n.level, 'dim')}\">"
            f"{e(n.text)}</li>" for n in notes) + "</ul>")
    return page.render()


def render_probe(report: ProbeReport) -> str:
    import plotly.graph_objects as go

    require_plotly()
    page = _Page(f"compilescope probe — {report.source}")
    page.add(f"<h1>compilescope probe — {e(report.source)}</h1>")
    cache = f" ({e(report.cache_start)} compile cache)" if report.compiles and report.cache_start else ""
    page.add(f"<p>{report.compiles} compile(s) in {report.frames} frame(s), {e(fmt_time(report.compile_s))} compiling"
             f"{cache}, {len(report.graph_breaks)} distinct graph break(s) met {report.graph_break_count} time(s) "
             "while tracing</p>")
    if report.settings:
        page.add(f"<p>run under --config {e(' '.join(report.settings))}</p>")
    if report.forked_unobserved:
        page.add(f"<p>{report.forked_unobserved} process(es) the program forked compiled or called compiled code "
                 "too: not recorded here — each has its own compile cache</p>")
    fig = go.Figure()
    for i, f in enumerate(report.functions):
        points = [c for c in f.compile_rows if c.start_us is not None]
        if not points:
            continue
        fig.add_trace(go.Scatter(
            x=[(c.offset_us or 0) * 1e-6 for c in points], y=[c.compile_s or 0.0 for c in points],
            mode="markers+lines", name=e(f.name), marker={"size": 10, "color": COLORS[i % len(COLORS)],
                                                        "symbol": ["x" if not c.made_entry else "circle" for c in points]},
            hovertext=[f"{e(f.name)} {e(c.compile_id)} · {e(c.outcome)}<br>{fmt_time(c.compile_s)}" for c in points],
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
            [(f"{b.filename}:{b.line}", ""), (str(b.count), "num"), (b.text or b.reason, "text")]
            for b in report.graph_breaks]))
    return page.render()


def render_compare(report: CompareReport) -> str:
    """Side by side: every compared figure of A and B, flagged ones marked."""
    require_plotly()
    page = _Page(f"compilescope compare — {report.a} vs {report.b}")
    page.add(f"<h1>compare{(' — ' + e(report.workload)) if report.workload else ''}</h1><p>A = <code>{e(report.a)}"
             f"</code><br>B = <code>{e(report.b)}</code><br><span class=\"dim\">{len(report.pairs)} trial pair(s), "
             f"{e(report.pairing or 'paired by ' + report.pair_by)}</span></p>")
    if report.versions:
        page.add(f"<p><b>A and B ran on different versions:</b> {e('; '.join(report.versions))} (every pair)</p>")
    if report.warnings:
        page.add('<div class="banner warnonly" id="compare-warnings" role="alert"><b>These pairs differ in more than '
                 "their results; their figures include these differences:</b><ul>"
                 + "".join(f"<li>{e(w)}</li>" for w in report.warnings) + "</ul></div>")
    rows = []
    for c in report.changes:
        cls = {"regression": "bad", "improvement": "good"}.get(c.flag, "")
        rows.append([(c.trial, ""), (c.shape, ""), (c.figure, ""), (c.a_text, "num"), (c.b_text, "num"),
                     ("—" if c.change is None else f"{c.change:+.1%}", "num " + cls), (c.flag or "·", cls), (c.why, "dim")])
    page.add(_table(["trial", "shape", "figure", "A", "B", "change", "flag", "why"], rows, ' class="compare"'))
    page.add(f"<p class=\"dim\">{e(LEGEND)}</p>")
    for side, labels in (("A", report.only_in_a), ("B", report.only_in_b)):
        if labels:
            page.add(f"<p class=\"warn\">only in {side}: {e(', '.join(labels))}</p>")
    n = len(report.regressions)
    page.add(f"<p class=\"{'bad' if n else 'good'}\">"
             + e(f"{n} flagged regression(s)" if n else "no regression beyond the noise") + "</p>")
    import plotly.graph_objects as go

    speedups = report.speedups
    if speedups:
        fig = go.Figure()
        labels = [f"{e(c.trial)} · {e(c.shape)}" for c in speedups]
        for side, values, texts in (("A", [c.a for c in speedups], [c.a_text for c in speedups]),
                                    ("B", [c.b for c in speedups], [c.b_text for c in speedups])):
            fig.add_trace(go.Bar(x=labels, y=values, name=side, text=[e(x) for x in texts], textposition="outside"))
        fig.add_hline(y=1.0, line_dash="dot", annotation_text="eager")
        fig.update_layout(title="speedup per shape, A against B (eager p50 / compiled p50 in each trial's own "
                                "process; higher is better)", barmode="group", xaxis_type="category", margin={"t": 50})
        page.figure(fig, "compare speedup")
    return page.render()


def _warmup_shapes(shapes: Any) -> str:
    return ", ".join(str(next(iter(s.values()))) if len(s) == 1 else ",".join(f"{k}={v}" for k, v in s.items())
                     for s in shapes) or "none"


def _warmup_rows(report: WarmupReport) -> list[list[tuple[str, str]]]:
    """One row per strategy and start mode: the plan's forecast beside the trial's measurement."""
    rows = []
    for p in report.plan.plans:
        limit = f"default ({p.recompile_limit_default})" if p.recompile_limit is None else str(p.recompile_limit)
        if p.forecast_failed:
            limit = "— (every dry run failed)"
        forecast = [(p.strategy, ""), (f"{len(p.shapes)}: {_warmup_shapes(p.shapes)}", "text"),
                    (str(len(p.covers)), "num"), (str(len(p.uncovered)), "num bad" if p.uncovered else "num"),
                    (p.entries_text, "num"),
                    (limit, "warn" if p.recompile_limit is not None and not p.forecast_failed else "")]
        measured = report.measured_for(p.strategy)
        for s in (measured.starts if measured is not None else ()) or (None,):
            if s is None or measured is None:
                rows.append(forecast + [("not measured", "dim")] + [("", "")] * 4)
                continue
            rows.append(forecast + [(s.cache, ""), (fmt_time(s.total_s), "num"), (fmt_time(s.load_s), "num"),
                                    (s.after_text, "num bad" if s.after else "num good"),
                                    (fmt_time(measured.steady_s), "num")])
    return rows


def render_warmup(report: WarmupReport) -> str:
    """A plain page (no plot, no script): the plan (forecast) beside the trials (measured)."""
    plan = report.plan
    head = ["strategy", "start-up shapes (forecast)", "covers", "uncovered", "entries/frame", "recompile_limit",
            "start (measured)", "start-up", "artifact load", "after start-up", "steady / request"]
    parts = [f"<h1>warmup — {e(plan.workload)}</h1><p class=\"dim\">recording {e(plan.stream)} "
             f"({plan.requests} requests), backend {e(plan.backend)}, torch {e(plan.torch_version)}; replayed: "
             f"{e(report.trial_stream or 'not measured')}</p>", _table(head, _warmup_rows(report), ' class="warmup"')]
    for p in plan.plans:
        items = [f"<li>{e(p.strategy)}: {e(_warmup_shapes([u.shape]))} ({e(u.outcome)}): {e(u.why)}</li>"
                 for u in p.uncovered]
        measured = report.measured_for(p.strategy)
        items += [f"<li>{e(p.strategy)} ({e(s.cache)}): request {a.index} ({e(a.shape)}): {e(a.what)} "
                  f"{e('; '.join(a.guards))}</li>" for s in (measured.starts if measured is not None else ())
                  for a in s.after]
        parts.append(f"<h2>{e(p.strategy)}</h2><p class=\"dim\">minimal: {e(p.minimal)}</p>"
                     + (f"<ul>{''.join(items)}</ul>" if items else ""))
    if report.verdict is not None:
        parts.append(f"<h2>verdict (measured)</h2><p>{e(report.verdict.why)}</p>")
    parts += [f"<p class=\"dim\">note: {e(n)}</p>" for n in (*plan.notes, *report.notes)]
    if report.verified is not None:
        parts += _verify_parts(report.verified)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"compilescope-schema-version\" content=\"{SCHEMA_VERSION}\">"
            f"<title>{e('compilescope warmup — ' + str(plan.workload))}</title><style>{STYLE}</style></head><body>\n"
            + "\n".join(parts) + "\n</body></html>\n")


def render_verify(report: VerifyReport) -> str:
    """A warm-up plan's verification: per strategy the figures, measured beside forecast, and
    each held-out request that did not hit after start-up with its guards."""
    page = _Page(f"compilescope warmup --verify — {report.workload}")
    for part in _verify_parts(report):
        page.add(part)
    return page.render()


def _verify_parts(report: VerifyReport) -> list[str]:
    """The verification's headings, tables and notes (its own page, or after a warm-up report's)."""
    from .verify import rows, verdict

    parts: list[str] = []
    parts.append(f"<h1>warm-up verified by replay — {e(report.workload)}</h1><p class=\"dim\">plan from "
                 f"<code>{e(report.plan_stream)}</code>, {report.heldout} held-out request(s), "
                 f"backend {e(report.backend)}, torch {e(report.torch_version)}</p>")
    for s in report.strategies:
        parts.append(f"<h2>{e(s.strategy)}</h2><p>{e(verdict(s).plain.strip())}</p>")
        parts.append(_table(["figure", "measured", "forecast"],
                            [[(f, ""), (m, "num"), (fc, "num")] for f, m, fc in rows(s)], ' class="verify"'))
        if s.failures:
            parts.append(_table(["held-out request", "shape", "measured", "forecast", "guards that failed", "plan"], [
                    [(str(r.index), "num"), (r.shape_label, ""), (r.outcome, ""), (r.forecast or "—", ""),
                     ("\n".join(f"{g.entry}: {g.text} [{g.kind}]" for g in r.guards) or (r.error or ""), "text"),
                     (r.plan_note, "dim")] for r in s.failures], ' class="failures"'))
        parts.append("".join(f"<p class=\"dim\">note: {e(n)}</p>" for n in s.notes))
    parts.append("".join(f"<p class=\"dim\">note: {e(n)}</p>" for n in report.notes))
    return parts


def _run(file: RunFile) -> str:
    assert file.report is not None, "a run's page needs its report"
    return render_run(file.report)


def _probe(file: ProbeFile) -> str:
    return render_probe(file.report)


# a self-contained page with plots, of a run, a probe or a comparison; a plain page of a warm-up or a verification
RENDERER = ByKind("html", (".html", ".htm"), "html report", {
    RunFile: _run, ProbeFile: _probe, CompareReport: render_compare, WarmupReport: render_warmup,
    VerifyReport: render_verify}, help=".html", requires=require_plotly)
