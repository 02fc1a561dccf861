"""The warm-up plan and its measurement in the terminal: formats a :class:`WarmupReport`,
computes nothing. The plan's figures are labelled forecast (a dry run), the trials' measured.
Every string (shapes, guards, errors) is printed as ``Text``: data, never markup."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from ..model import shape_label
from ..report.warmup import StrategyMeasured, WarmupReport
from ..units import fmt_time
from .grid import Grid, T, one_line

MAX_SHAPES_SHOWN = 12
MAX_LISTED = 10


def shapes_text(shapes: Any) -> str:
    labels = [shape_label(s) for s in shapes]
    more = f" … (+{len(labels) - MAX_SHAPES_SHOWN})" if len(labels) > MAX_SHAPES_SHOWN else ""
    return (", ".join(labels[:MAX_SHAPES_SHOWN]) + more) or "none"


def limit_text(p: Any) -> str:
    if p.forecast_failed:
        return "— (every dry run failed)"
    if p.recompile_limit is None:
        return f"default ({p.recompile_limit_default})"
    return f"{p.recompile_limit} (default {p.recompile_limit_default})"


def _plan_table(plan: Any) -> Grid:
    table = Grid(T("plan (forecast, dry run)"), (
        ("strategy", "left"), ("start-up shapes, in order", "left"), ("covers", "right"), ("uncovered", "right"),
        ("entries/frame", "right"), ("recompile_limit", "left")),
        keep=("covers", "uncovered", "entries/frame", "recompile_limit"))
    for p in plan.plans:
        table.add_row(T(p.strategy), T(f"{len(p.shapes)}: {shapes_text(p.shapes)}"), T(len(p.covers)),
                      T(len(p.uncovered), "red" if p.uncovered else ""),
                      T(p.entries_text),
                      T(limit_text(p), "yellow" if p.recompile_limit is not None else ""))
    return table


def _plan_details(plan: Any) -> list[RenderableType]:
    parts: list[RenderableType] = []
    for p in plan.plans:
        parts.append(Text(f"  {p.strategy}: minimal: {p.minimal}", "dim"))
        for u in p.uncovered[:MAX_LISTED]:
            parts.append(Text(f"    uncovered {shape_label(u.shape)} ({u.outcome}): {u.why}", "red"))
        if len(p.uncovered) > MAX_LISTED:
            parts.append(Text(f"    … and {len(p.uncovered) - MAX_LISTED} more uncovered shape(s)", "dim"))
    return parts


def _measured_table(report: WarmupReport) -> Grid:
    table = Grid(T(f"measured (trials: start-up, then {report.trial_stream})"), (
        ("strategy", "left"), ("start", "left"), ("start-up (+ load)", "right"), ("artifact load", "right"),
        ("start-up compiles", "right"), ("after start-up", "right"), ("steady / request", "right"),
        ("status", "left")), keys=2,
        keep=("start-up (+ load)", "artifact load", "start-up compiles", "after start-up",
              "steady / request", "status"))
    for m in report.measured:
        for i, s in enumerate(m.starts):  # steady state is the strategy's, measured once: on its first row
            table.add_row(T(m.strategy), T(s.cache), T(fmt_time(s.total_s)), T(fmt_time(s.load_s)),
                          T(s.startup_compiles), T(s.after_text, "red" if s.after else "green"),
                          T(fmt_time(m.steady_s) if i == 0 else ""), T(s.status))
    return table


def _after(m: StrategyMeasured) -> list[RenderableType]:
    parts: list[RenderableType] = []
    for s in m.starts:
        for a in s.after[:MAX_LISTED]:
            parts.append(Text(f"  {m.strategy} ({s.cache}): request {a.index} ({a.shape}): {a.what}", "red"))
            for g in a.guards:
                parts.append(Text(f"      {g}", "yellow"))
        if len(s.after) > MAX_LISTED:
            parts.append(Text(f"  … and {len(s.after) - MAX_LISTED} more after start-up", "dim"))
    for missing in m.steady_missing:
        parts.append(Text(f"  {m.strategy}: no steady state for {missing}", "dim"))
    if m.steady_eager:
        parts.append(Text(f"  {m.strategy}: its steady / request holds {m.steady_eager_requests} request(s) that run "
                          f"eagerly, at their eager time: {', '.join(m.steady_eager)}", "dim"))
    for note in m.notes:
        parts.append(Text(f"  note: {note}", "dim"))
    return parts


def _verdict(report: WarmupReport) -> list[RenderableType]:
    v = report.verdict
    if v is None:
        return []
    table = Grid(T(f"over {v.lifetime_basis} (measured start-up + lifetime × measured steady)"), (
        ("strategy", "left"), ("start", "left"), ("start-up", "right"), ("steady / request", "right"),
        ("total", "right")), keys=2, keep=("start-up", "steady / request", "total"))
    for r in v.rows:
        table.add_row(T(r.strategy), T(r.cache), T(fmt_time(r.startup_s)), T(fmt_time(r.steady_s)),
                      T(fmt_time(r.total_s)))
    head = Text("verdict (measured): ", "bold")
    head.append(v.why if v.recommended else f"none recommended: {v.why}")
    return [table, head, *[Text(f"  {n}", "dim") for n in (*v.steady_noise, *v.other_starts)]]


def renderables(report: WarmupReport) -> list[RenderableType]:
    plan = report.plan
    head = Text(f"compilescope warmup: {one_line(plan.workload)}", "bold")
    head.append(f" — recording {plan.stream} ({plan.requests:,} request(s)), backend {plan.backend}, torch "
                f"{plan.torch_version}")
    parts: list[RenderableType] = [head, _plan_table(plan), *_plan_details(plan)]
    if report.measured:
        parts.append(_measured_table(report))
        for m in report.measured:
            parts += _after(m)
    parts += _verdict(report)
    for note in (*plan.notes, *report.notes):
        parts.append(Text(f"note: {note}", "dim"))
    return [Group(*parts)]
