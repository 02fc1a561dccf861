"""Chrome trace events (loadable in Perfetto or chrome://tracing) — formats the report model.

One process per trial. Thread 1 holds the stream's requests as complete events laid back to
back in stream order (the requests ran one after another; time between them is not part of
the trace); each compile is a complete event inside the request that caused it, with its
exclusive phases as nested children; recompiles, refusals and eager fallbacks are instant
events. A probe gives one process per compiled function, compiles at their real start
times.
"""

from __future__ import annotations

import json
from typing import Any

from ..report import CompileRow, ProbeReport, RunReport


def _meta(pid: int, name: str) -> dict[str, Any]:
    return {"ph": "M", "pid": pid, "tid": 1, "name": "process_name", "args": {"name": name}}


def _compile_events(pid: int, tid: int, start_us: float, c: CompileRow) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    dur = (c.compile_s or 0.0) * 1e6
    out.append({"ph": "X", "pid": pid, "tid": tid, "ts": start_us, "dur": dur, "cat": "compile",
                "name": f"compile {c.compile_id} ({c.outcome})", "args": {"function": c.name, "epoch": c.epoch}})
    at = start_us
    for phase, seconds in c.exclusive_s:
        out.append({"ph": "X", "pid": pid, "tid": tid, "ts": at, "dur": seconds * 1e6, "cat": "compile phase",
                    "name": phase})
        at += seconds * 1e6
    return out


def render_run(report: RunReport) -> str:
    events: list[dict[str, Any]] = []
    for pid, t in enumerate(report.trials, 1):
        events.append(_meta(pid, t.label))
        rows = {}
        for c in t.compile_rows:
            if c.call_index is not None:
                rows.setdefault(c.call_index, []).append(c)
        start = 0.0
        for p in t.timeline:
            dur = (p.latency_s or 0.0) * 1e6
            events.append({"ph": "X", "pid": pid, "tid": 1, "ts": start, "dur": dur, "cat": "request",
                           "name": f"request {p.index} ({p.shape})",
                           "args": {"event": p.event, "compile_ids": list(p.compile_ids), "reasons": list(p.reasons)}})
            at = start
            for c in rows.get(p.index, []):
                events.extend(_compile_events(pid, 1, at, c))
                at += (c.compile_s or 0.0) * 1e6
            if p.event in ("recompile", "eager fallback", "refused"):
                events.append({"ph": "i", "pid": pid, "tid": 1, "ts": start, "s": "t", "cat": "event",
                               "name": f"{p.event} at request {p.index}"})
            start += dur
    return json.dumps({"traceEvents": events, "displayTimeUnit": "ms"}, indent=None)


def render_probe(report: ProbeReport) -> str:
    events: list[dict[str, Any]] = []
    starts = [c.start_us for f in report.functions for c in f.compile_rows if c.start_us is not None]
    t0 = min(starts) if starts else 0
    for pid, f in enumerate(report.functions, 1):
        events.append(_meta(pid, f"{f.name} ({f.location})"))
        for c in f.compile_rows:
            events.extend(_compile_events(pid, 1, float((c.start_us or t0) - t0), c))
    return json.dumps({"traceEvents": events, "displayTimeUnit": "ms"}, indent=None)
