"""Chrome trace events (loadable in Perfetto or chrome://tracing) — formats the report model.

One process per trial. Thread 1 holds the stream's requests as complete events laid back to
back in stream order (the requests ran one after another; time between them is not part of
the trace); each compile is a complete event inside the request that caused it, with its
exclusive phases as nested children; recompiles, refusals, eager fallbacks and requests
that raised are instant events, and a request that raised sits where it ran (its compiles'
time, the part of it measured, keeps the requests after it in place). A trial that died
ends with an instant event at the request it died in. A probe gives one process per compiled
function, compiles at their real start times.
"""

from __future__ import annotations

from typing import Any

from ..model import SCHEMA_VERSION
from ..report import CompileRow, ProbeFile, ProbeReport, RunFile, RunReport
from . import ByKind
from .json import write


def _trace(events: list[dict[str, Any]]) -> str:
    """The trace file: strict JSON (no NaN or infinity), one line ending with a newline, as every JSON
    compilescope writes."""
    return write({"traceEvents": events, "displayTimeUnit": "ms",
                  "otherData": {"compilescope_schema_version": SCHEMA_VERSION}}, indent=None)


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
        start = 0.0
        for p in t.timeline:
            raised = p.raised
            # a request that raised has no latency of its own: it took at least its compiles' time,
            # so the requests after it stay where they ran
            dur = (p.latency_s if p.latency_s is not None else p.compile_s) * 1e6
            args: dict[str, Any] = {"event": p.event, "compile_ids": list(p.compile_ids), "reasons": list(p.reasons)}
            if raised:
                args["error"] = p.error
                if p.latency_s is None:
                    args["duration"] = "not measured (the request raised): at least its compile time is shown"
            events.append({"ph": "X", "pid": pid, "tid": 1, "ts": start, "dur": dur,
                           "cat": "request error" if raised else "request",
                           "name": f"request {p.index} ({p.shape})" + (" raised" if raised else ""), "args": args})
            at = start
            for c in p.compile_rows:
                events.extend(_compile_events(pid, 1, at, c))
                at += (c.compile_s or 0.0) * 1e6
            if p.marked:
                events.append({"ph": "i", "pid": pid, "tid": 1, "ts": start, "s": "t", "cat": "event",
                               "name": f"{'request raised' if raised else p.event} at request {p.index}",
                               **({"args": {"error": p.error}} if raised else {})})
            start += p.span_s * 1e6
        if t.ended_badly:
            events.append({"ph": "i", "pid": pid, "tid": 1, "ts": start, "s": "p", "cat": "event",
                           "name": f"trial {t.status} in request {t.completed}", "args": {"error": t.error}})
    return _trace(events)


def render_probe(report: ProbeReport) -> str:
    events: list[dict[str, Any]] = []
    for pid, f in enumerate(report.functions, 1):
        events.append(_meta(pid, f"{f.name} ({f.location})"))
        for c in f.compile_rows:
            events.extend(_compile_events(pid, 1, float(c.offset_us or 0), c))
    return _trace(events)


def _run(file: RunFile) -> str:
    assert file.report is not None, "a run's trace needs its report"
    return render_run(file.report)


def _probe(file: ProbeFile) -> str:
    return render_probe(file.report)


# Chrome trace events of a run's requests and compiles, or of a probe's compiles
RENDERER = ByKind("perfetto", (".perfetto.json", ".trace.json"), "perfetto trace", {RunFile: _run, ProbeFile: _probe},
                  help=".perfetto.json or .trace.json (Chrome/Perfetto trace)")
