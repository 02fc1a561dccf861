"""Probe reports: the terminal summary per compiled function, the JSON, the shape stream."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from ..analysis.advice import function_reports, group_breaks
from ..model import ProbeResult
from ..schema import to_data
from .console import fmt_time, to_text


def probe_data(result: ProbeResult) -> dict[str, Any]:
    shapes: dict[str, list[dict[str, list[int]]]] = {}
    for call in result.calls:
        shapes.setdefault(call.function, []).append(call.inputs)
    return {
        "schema_version": result.schema_version,
        "kind": "probe",
        "source": result.source,
        "torch": result.torch_version,
        "exit_code": result.exit_code,
        "error": result.error,
        "recompile_limit": result.recompile_limit,
        "compiles": [
            {
                "compile_id": c.compile_id,
                "function": c.function,
                "filename": c.filename,
                "line": c.line,
                "reasons": [r.partition(": ")[2] if r[:1].isdigit() else r for r in c.reasons],
                "rejected_by": [r.partition(": ")[0] for r in c.reasons if r[:1].isdigit()],
                "guard_failures": to_data(c.guard_failures),
                "compile_time_s": c.compile_time_s,
                "phases_s": c.phases_s,
                "fail_type": c.fail_type,
                "fail_reason": c.fail_reason,
                "recompile_limit_hit": c.recompile_limit_hit,
            }
            for c in result.compiles
        ],
        "graph_breaks": [
            {"reason": g.reason, "filename": g.filename, "line": g.line, "count": g.count}
            for g in group_breaks(result.graph_breaks)
        ],
        "graph_break_occurrences": to_data(result.graph_breaks),
        "shapes": shapes,
        "counters": result.counters,
    }


def render_json(result: ProbeResult) -> str:
    return json.dumps(probe_data(result), indent=1)


def stream_lines(result: ProbeResult) -> list[dict[str, int]]:
    """The input shapes of the most-recompiled compiled function, as a stream (``x.0`` = dim
    0 of ``x``; only the dims that varied, or all when none did)."""
    by_fn: dict[str, list[dict[str, list[int]]]] = {}
    for call in result.calls:
        by_fn.setdefault(call.function, []).append(call.inputs)
    if not by_fn:
        return []
    compiles = {r.function: len(r.compiles) for r in function_reports(result)}
    function = max(by_fn, key=lambda f: (compiles.get(f, 0), len(by_fn[f])))
    flat = [{f"{name}.{d}": size for name, shape in inputs.items() for d, size in enumerate(shape)}
            for inputs in by_fn[function]]
    keys = list(dict.fromkeys(k for row in flat for k in row))
    varying = [k for k in keys if len({row.get(k) for row in flat}) > 1] or keys
    return [{k: row[k] for k in varying if k in row} for row in flat]


def renderables(result: ProbeResult) -> list[RenderableType]:
    parts: list[RenderableType] = []
    reports = function_reports(result)
    total = sum(r.compile_s for r in reports)
    head = Text(f"compilescope probe: {result.source}", style="bold")
    head.append(f"  — {len(result.compiles)} compile(s) in {len(reports)} frame(s), {fmt_time(total)} compiling, "
                f"{len(result.graph_breaks)} graph break(s)", style="")
    parts.append(head)
    for r in reports:
        recompiles = sum(1 for c in r.compiles if not c.compile_id.endswith("/0"))
        title = Text(f"\n{r.function}", style="bold")
        title.append(f"  {r.filename}:{r.line} — {len(r.compiles)} compile(s), {recompiles} recompile(s), "
                     f"{fmt_time(r.compile_s)} compiling", style="")
        parts.append(title)
        table = Table(show_header=True)
        table.add_column("cause")
        table.add_column("shape-reducible?", no_wrap=True)
        table.add_column("next step")
        for cause in r.causes:
            table.add_row(cause.describe(), Text("yes", style="green") if cause.shape_reducible else Text("no", style="yellow"),
                          cause.next_step)
        if r.limit_hits:
            limit = f" ({result.recompile_limit})" if result.recompile_limit is not None else ""
            table.add_row(Text(f"recompile limit{limit} hit {r.limit_hits} time(s)", style="bold red"), "",
                          "later calls with new inputs ran EAGERLY (no compile, no error) — raise "
                          "torch._dynamo.config.recompile_limit or remove the causes above")
        failed = [c for c in r.compiles if c.failed and not c.recompile_limit_hit]
        for c in failed:
            table.add_row(Text(f"compile {c.compile_id} failed: {c.fail_type}", style="red"), "",
                          (c.fail_reason or "").strip().split("\n", 1)[0][:200])
        if not r.causes and not r.limit_hits and not failed:
            table.add_row("first compile only", "", "")
        parts.append(table)
    breaks = group_breaks(result.graph_breaks)
    if breaks:
        parts.append(Text(f"\ngraph breaks: {len(result.graph_breaks)} occurrence(s), {len(breaks)} distinct",
                          style="bold"))
        table = Table()
        table.add_column("where", no_wrap=True)
        table.add_column("count", justify="right")
        table.add_column("reason")
        for b in breaks:
            table.add_row(f"{b.filename}:{b.line}", str(b.count), b.reason)
        parts.append(table)
    if result.counters:
        parts.append(Text("trace counters: " + ", ".join(f"{k}={v}" for k, v in sorted(result.counters.items())),
                          style="yellow"))
    if result.error:
        parts.append(Text(f"the program raised {result.error} (exit status {result.exit_code})", style="red"))
    return [Group(*parts)]


def render(result: ProbeResult, width: int = 160) -> str:
    return to_text(renderables(result), width)
