"""The one encoding of what crosses a process boundary: tasks, outcomes and a worker's events.

Everything is JSON text, records through :mod:`compilescope.schema`, bytes (mega-cache
artifacts, a cache directory as a tar) as base64. Three messages:

- a **task** (:class:`TrialTask`): driver → worker on stdin, driver → Ray task as its argument;
- **events**, one JSON line each, worker → driver over a pipe: ``{"ready": seconds}`` once it
  has imported, ``{"call": …, "compiles": […], "graph_breaks": […]}`` as each stream call
  finishes, then ``{"result": …, "artifacts": …}``;
- an **outcome** (:class:`TrialOutcome`): Ray task → driver, as its return value.

Decoding never imports torch (a worker reads its task before torch is imported).
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

from ..errors import ResultsError
from ..model import CallRecord, CompileRecord, GraphBreak, TrialResult, TrialSpec
from ..schema import from_data, to_data
from .task import TrialOutcome, TrialTask


def _b64(blob: bytes | None) -> str | None:
    return None if blob is None else base64.b64encode(blob).decode()


def _bytes(text: Any, what: str) -> bytes | None:
    if text is None:
        return None
    if not isinstance(text, str):
        raise ResultsError(f"field {what}: expected base64 text, got {type(text).__name__}")
    try:
        return base64.b64decode(text, validate=True)
    except ValueError:
        raise ResultsError(f"field {what}: not valid base64") from None


def _object(text: str, what: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ResultsError(f"{what} is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ResultsError(f"{what}: expected an object, got {type(data).__name__}")
    return data


# ----------------------------------------------------------------------------- tasks


def encode_task(task: TrialTask) -> str:
    return json.dumps({
        "spec": to_data(task.spec),
        "cache_dir": task.cache_dir,
        "save_artifacts": task.save_artifacts,
        "load_artifacts": _b64(task.load_artifacts),
        "launched_at": task.launched_at,
        "cache_tar": _b64(task.cache_tar),
        "return_cache": task.return_cache,
    })


def decode_task(text: str) -> TrialTask:
    """The task :func:`encode_task` wrote; :class:`ResultsError` naming the field otherwise."""
    data = _object(text, "the trial task")
    if not isinstance(data.get("cache_dir"), str):
        raise ResultsError("field cache_dir: expected a path")
    return TrialTask(
        spec=from_data(TrialSpec, data.get("spec")),
        cache_dir=data["cache_dir"],
        save_artifacts=bool(data.get("save_artifacts")),
        load_artifacts=_bytes(data.get("load_artifacts"), "load_artifacts"),
        launched_at=float(data.get("launched_at") or 0.0),
        cache_tar=_bytes(data.get("cache_tar"), "cache_tar"),
        return_cache=bool(data.get("return_cache")),
    )


# ----------------------------------------------------------------------------- outcomes


def _outcome_data(outcome: TrialOutcome) -> dict[str, Any]:
    return {"result": to_data(outcome.result), "artifacts": _b64(outcome.artifacts),
            "cache_tar": _b64(outcome.cache_tar)}


def _outcome(data: dict[str, Any]) -> TrialOutcome:
    return TrialOutcome(from_data(TrialResult, data.get("result")), _bytes(data.get("artifacts"), "artifacts"),
                        _bytes(data.get("cache_tar"), "cache_tar"))


def encode_outcome(outcome: TrialOutcome) -> str:
    return json.dumps(_outcome_data(outcome))


def decode_outcome(text: str) -> TrialOutcome:
    return _outcome(_object(text, "the trial outcome"))


# ----------------------------------------------------------------------------- a worker's events


@dataclass(frozen=True)
class Ready:
    """The worker has imported and waits for its task: ``seconds`` from its start."""

    seconds: float | None


def ready_event(seconds: float) -> str:
    return json.dumps({"ready": seconds}) + "\n"


@dataclass(frozen=True)
class CallEvent:
    """One finished stream call, with the compiles and graph breaks it caused."""

    call: CallRecord
    compiles: tuple[CompileRecord, ...] = ()
    graph_breaks: tuple[GraphBreak, ...] = ()


def call_event(call: CallRecord, compiles: tuple[CompileRecord, ...] | list[CompileRecord],
               graph_breaks: tuple[GraphBreak, ...] | list[GraphBreak]) -> str:
    """The line a worker writes the moment a call finishes."""
    return json.dumps({"call": to_data(call), "compiles": to_data(compiles),
                       "graph_breaks": to_data(graph_breaks)}) + "\n"


def result_event(result: TrialResult, artifacts: bytes | None) -> str:
    """The worker's last line: its whole result."""
    return json.dumps(_outcome_data(TrialOutcome(result, artifacts))) + "\n"


def read_event(line: str) -> Ready | CallEvent | TrialOutcome | None:
    """A worker's line: ready, a call, its final outcome, or ``None`` for a line that is not one (a
    torn last line from a dying worker, an unreadable call). An unreadable *result* raises
    :class:`ResultsError`: the trial ended but what it sent cannot be used."""
    try:
        data = json.loads(line)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    if "ready" in data:
        ready = data["ready"]
        return Ready(float(ready) if isinstance(ready, (int, float)) and not isinstance(ready, bool) else None)
    if "result" in data:
        return _outcome(data)
    try:
        return CallEvent(from_data(CallRecord, data.get("call")),
                         from_data(tuple[CompileRecord, ...], data.get("compiles") or []),
                         from_data(tuple[GraphBreak, ...], data.get("graph_breaks") or []))
    except ResultsError:
        return None
