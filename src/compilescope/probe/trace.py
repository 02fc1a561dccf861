"""Read a ``TORCH_TRACE`` directory into the same :class:`ProbeResult` a live probe gives.

Format (torch 2.13): each line is a glog prefix and a one-line JSON *envelope* holding one
event-kind key plus context keys (``frame_id``, ``frame_compile_id``, ``attempt``…). An
envelope with ``has_payload`` (an md5) is followed by tab-indented payload lines. ``str``
envelopes intern file names. Parsers are registered per event kind, each a pair "does it
apply?" / "parse it"; an unknown kind, a malformed line or a payload whose md5 does not
match increments a named counter instead of failing (``--strict`` turns counters into an
error that names them).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import compat
from ..errors import CompilescopeError
from ..collect.records import RecordBuilder
from ..model import GraphBreak, ProbeResult

_LINE = re.compile(r"^[VIWEC]\d{4} [\d:.]+ +\d+ [^\]]*\] (\{.*\})\s*$")
_BREAK_AT = re.compile(r"Graph break in user code at (?P<file>.+):(?P<line>\d+)\s*$", re.M)
_BREAK_REASON = re.compile(r"Graph Break Reason: (?P<reason>.*)", re.S)

# Event kinds torch 2.13 writes that the probe does not need: known, so not "unknown".
KNOWN_IGNORED = frozenset({
    "dynamo_start", "dynamo_output_graph", "aot_inference_graph", "aot_joint_graph", "aot_forward_graph",
    "aot_backward_graph", "inductor_post_grad_graph", "inductor_pre_grad_graph", "inductor_output_code",
    "aot_inference_graph",
    "dynamo_cpp_guards_str", "dynamo_guards", "create_symbol", "guard_added_fast", "guard_added",
    "symbolic_shape_specialization", "describe_storage", "describe_tensor", "describe_source", "chromium_event",
    "optimize_ddp_split_graph", "optimize_ddp_split_child", "compiled_autograd_graph",
    "aot_autograd_backward_compilation_metrics", "graph_execution", "dynamo_cache_entries", "propagate_real_tensors",
    "guard_on_data_dependent_error", "link", "exported_program", "missing_fake_kernel", "mismatched_fake_kernel",
    "torch_version", "frame_locals", "expression_created", "unbacked_symbol_created",
})


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


def _compile_id(env: Envelope) -> str | None:
    if "frame_id" not in env or "frame_compile_id" not in env:
        return None
    return f"{env['frame_id']}/{env['frame_compile_id']}"


def _parse_str(state: TraceState, env: Envelope, payload: str | None) -> None:
    text, index = env["str"]
    state.strings[int(index)] = str(text)


def _parse_start(state: TraceState, env: Envelope, payload: str | None) -> None:
    state.begin(_compile_id(env))


def _parse_metrics(state: TraceState, env: Envelope, payload: str | None) -> None:
    meta = env["compilation_metrics"]
    if not isinstance(meta, dict):
        raise TypeError("compilation_metrics is not an object")
    cid = meta.get("compile_id") if isinstance(meta.get("compile_id"), str) else _compile_id(env)
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
            limit = json.loads(config).get("recompile_limit")
            state.limit = limit if isinstance(limit, int) and not isinstance(limit, bool) else None
        except (ValueError, AttributeError):
            pass


def _parse_bwd_metrics(state: TraceState, env: Envelope, payload: str | None) -> None:
    meta = env["bwd_compilation_metrics"]
    if not isinstance(meta, dict):
        raise TypeError("bwd_compilation_metrics is not an object")
    cid = meta.get("compile_id") if isinstance(meta.get("compile_id"), str) else _compile_id(env)
    state.builder.add(compat.view_metrics({**meta, "compile_id": cid, "is_forward": False}), epoch=state.epoch)


def _parse_recompile_reasons(state: TraceState, env: Envelope, payload: str | None) -> None:
    cid = _compile_id(env)
    if cid is None or payload is None:
        state.counters["recompile_reasons_without_compile_id"] += 1
        return
    # Declared "json", but a single reason is written as raw text (torch 2.13 guards.py).
    try:
        data = json.loads(payload)
        texts = [str(t) for t in data] if isinstance(data, list) else [str(data)]
    except ValueError:
        texts = [payload]
    state.pending.setdefault(cid, []).extend(texts)


def _parse_graph_break(state: TraceState, env: Envelope, payload: str | None) -> None:
    if payload is None:
        state.counters["graph_break_without_payload"] += 1
        return
    at = _BREAK_AT.search(payload)
    why = _BREAK_REASON.search(payload)
    reason = why["reason"].strip() if why else payload.strip()
    # PyTorch's reason proper follows a one-line preamble ("Encountered graph break when …:").
    lines = [ln for ln in reason.split("\n") if ln.strip()]
    if len(lines) > 1 and lines[0].startswith("Encountered graph break"):
        reason = "\n".join(lines[1:])
    state.breaks.append(
        GraphBreak(
            reason=reason,
            filename=at["file"] if at else None,
            line=int(at["line"]) if at else None,
            compile_id=_compile_id(env),
            phase="script",
        )
    )


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
_CONTEXT_KEYS = {"frame_id", "frame_compile_id", "attempt", "compiled_autograd_id", "rank", "subgraph_name",
                 "stack", "has_payload"}


def _dispatch(state: TraceState, env: Envelope, payload: str | None) -> None:
    kinds = [k for k in env if k not in _CONTEXT_KEYS]
    if len(kinds) != 1:
        state.counters["envelope_without_one_kind"] += 1
        return
    kind = kinds[0]
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
    i = 0
    while i < len(lines):
        m = _LINE.match(lines[i])
        i += 1
        if not m:
            if lines[i - 1].strip():
                state.counters["malformed_line"] += 1
            continue
        try:
            env = json.loads(m.group(1))
        except (ValueError, RecursionError):
            state.counters["malformed_envelope"] += 1
            continue
        if not isinstance(env, dict):
            state.counters["malformed_envelope"] += 1
            continue
        payload = None
        if "has_payload" in env:
            body = []
            while i < len(lines) and lines[i].startswith("\t"):
                body.append(lines[i][1:])
                i += 1
            payload = "\n".join(body)
            if hashlib.md5(payload.encode(errors="replace")).hexdigest() != env["has_payload"]:
                state.counters["payload_md5_mismatch"] += 1
        _dispatch(state, env, payload)


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
