"""Read a ``TORCH_TRACE`` directory into the same :class:`ProbeResult` a live probe gives.

The format (glog-prefixed JSON envelopes, payload lines, the texts in them) is read by
:mod:`compilescope.torchtext`; ``str`` envelopes intern file names. Parsers are registered
per event kind, each a pair "does it apply?" / "parse it"; an unknown kind, a malformed line
or a payload whose md5 does not match increments a named counter instead of failing
(``--strict`` turns counters into an error that names them).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import compat
from ..collect.records import RecordBuilder
from ..errors import CompilescopeError
from ..model import GraphBreak, ProbeResult
from ..torchtext import (
    KNOWN_IGNORED, break_given_up, envelope_compile_id, envelope_kind, graph_break_text, recompile_reason_texts,
    trace_events,
)


class TraceError(CompilescopeError):
    pass


@dataclass
class TraceState:
    strings: dict[int, str] = field(default_factory=dict)
    builder: RecordBuilder = field(default_factory=RecordBuilder)
    epoch: int = 0
    done: set[str] = field(default_factory=set)  # compile ids completed in the current epoch
    pending: dict[str, list[str]] = field(default_factory=dict)  # compile id → rejecting entries' texts
    breaks: list[GraphBreak] = field(default_factory=list)
    counters: Counter[str] = field(default_factory=Counter)
    limit: int | None = None

    def begin(self, cid: str | None) -> None:
        """A compile of ``cid`` starts: an id already completed means a reset came between."""
        if cid is not None and cid in self.done:
            self.epoch += 1
            self.done.clear()


Envelope = dict[str, Any]
Parser = tuple[Callable[[str, Envelope], bool], Callable[[TraceState, Envelope, str | None], None]]


def _parse_str(state: TraceState, env: Envelope, payload: str | None) -> None:
    text, index = env["str"]
    state.strings[int(index)] = str(text)


def _parse_start(state: TraceState, env: Envelope, payload: str | None) -> None:
    state.begin(envelope_compile_id(env))


def _parse_metrics(state: TraceState, env: Envelope, payload: str | None) -> None:
    meta = env["compilation_metrics"]
    if not isinstance(meta, dict):
        raise TypeError("compilation_metrics is not an object")
    cid = meta.get("compile_id") if isinstance(meta.get("compile_id"), str) else envelope_compile_id(env)
    if cid is None:
        state.counters["metrics_without_compile_id"] += 1
        return
    state.begin(cid)  # no dynamo_start seen for it (a trimmed trace)
    meta = {**meta, "compile_id": cid}
    state.builder.add(compat.view_metrics(meta), epoch=state.epoch, reasons=state.pending.pop(cid, []), phase="script")
    state.done.add(cid)
    config = meta.get("dynamo_config")
    if isinstance(config, str) and state.limit is None:
        try:
            settings = json.loads(config)  # the limit's name: cache_size_limit on torch 2.6
            limit = settings.get("recompile_limit", settings.get("cache_size_limit"))
            state.limit = limit if isinstance(limit, int) and not isinstance(limit, bool) else None
        except (ValueError, AttributeError):
            pass


def _parse_bwd_metrics(state: TraceState, env: Envelope, payload: str | None) -> None:
    meta = env["bwd_compilation_metrics"]
    if not isinstance(meta, dict):
        raise TypeError("bwd_compilation_metrics is not an object")
    if compat.is_recompile_limit_failure(meta.get("fail_type"), meta.get("fail_reason")):
        # torch 2.6 logs a refusal at the recompile limit as backward metrics: it is the frame's
        _parse_metrics(state, {"compilation_metrics": {**meta, "is_forward": True}}, payload)
        return
    cid = meta.get("compile_id") if isinstance(meta.get("compile_id"), str) else envelope_compile_id(env)
    state.builder.add(compat.view_metrics({**meta, "compile_id": cid, "is_forward": False}), epoch=state.epoch)


def _parse_recompile_reasons(state: TraceState, env: Envelope, payload: str | None) -> None:
    cid = envelope_compile_id(env)
    if cid is None or payload is None:
        state.counters["recompile_reasons_without_compile_id"] += 1
        return
    state.pending.setdefault(cid, []).extend(recompile_reason_texts(payload))


def _parse_graph_break(state: TraceState, env: Envelope, payload: str | None) -> None:
    if payload is None:
        state.counters["graph_break_without_payload"] += 1
        return
    reason, filename, line = graph_break_text(payload)
    cid = envelope_compile_id(env)
    given_up = break_given_up(reason)
    if given_up is not None and any((b.compile_id, b.filename, b.line) == (cid, filename, line)
                                    and _headline(b.reason) == _headline(given_up) for b in state.breaks):
        # the same break (same frame compile, place and headline; the tracebacks differ) logged
        # again as Dynamo gives the frame up, which the compile's failure says: one break, as the
        # in-process capture counts it
        return
    state.breaks.append(
        GraphBreak(
            reason=reason,
            filename=filename,
            line=line,
            compile_id=cid,
            phase="script",
        )
    )


def _headline(text: str) -> str:
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), "")


def _artifact(name: str) -> Callable[[str, Envelope], bool]:
    return lambda kind, env: kind == "artifact" and isinstance(env["artifact"], dict) and env["artifact"].get("name") == name


PARSERS: list[Parser] = [
    (lambda kind, env: kind == "str", _parse_str),
    (lambda kind, env: kind == "dynamo_start", _parse_start),
    (lambda kind, env: kind == "compilation_metrics", _parse_metrics),
    (lambda kind, env: kind == "bwd_compilation_metrics", _parse_bwd_metrics),
    (_artifact("recompile_reasons"), _parse_recompile_reasons),
    (_artifact("dynamo_graph_break_reason"), _parse_graph_break),
]


def _dispatch(state: TraceState, env: Envelope, payload: str | None) -> None:
    kind = envelope_kind(env)
    if kind is None:
        state.counters["envelope_without_one_kind"] += 1
        return
    for applies, parse in PARSERS:
        if applies(kind, env):
            try:
                parse(state, env, payload)
            except (KeyError, TypeError, ValueError, IndexError, AttributeError, OverflowError, RecursionError):
                state.counters[f"malformed_event:{kind}"] += 1
            return
    if kind != "artifact" and kind not in KNOWN_IGNORED:
        state.counters[f"unknown_event:{kind}"] += 1


def read_lines(lines: list[str], state: TraceState) -> None:
    for event in trace_events(lines):
        if isinstance(event, str):
            state.counters[event] += 1
        else:
            _dispatch(state, *event)


def read_trace(directory: str | Path, *, strict: bool = False) -> ProbeResult:
    root = Path(directory)
    if not root.is_dir():
        raise TraceError(f"trace directory {str(directory)!r} does not exist")
    files = sorted(p for p in root.iterdir() if p.is_file() and p.suffix == ".log")
    if not files:
        raise TraceError(f"{str(directory)!r} holds no TORCH_TRACE .log file")
    state = TraceState()
    for path in files:
        try:
            text = path.read_text(errors="replace")
        except OSError as exc:
            raise TraceError(f"cannot read {str(path)!r}: {exc.strerror}") from None
        read_lines(text.splitlines(), state)
    state.counters["recompile_reasons_without_compile"] += len(state.pending)
    counters = state.counters + state.builder.counters
    if not state.builder.records and not state.breaks and counters:
        raise TraceError(f"{str(directory)!r} is not a TORCH_TRACE directory (no event could be read)")
    if strict and counters:
        worst = ", ".join(f"{k}={v}" for k, v in sorted(counters.items()))
        raise TraceError(f"--strict: the trace had events this reader could not use: {worst}")
    return ProbeResult(
        source=str(directory),
        compiles=tuple(state.builder.records),
        graph_breaks=tuple(state.breaks),
        recompile_limit=state.limit,
        counters=dict(counters),
        torch_version="",
    )
