"""What an executor receives and returns: one serialisable task per trial.

A :class:`TrialTask` holds everything the trial's fresh process needs — the spec, the
compile-cache directory to start on, the mega-cache artifact bytes to load, whether to
return its own artifacts — so a local subprocess and a remote worker take the same thing.
Warm and mega-cache trials depend on their strategy's cold trial: the plan says so
(:attr:`PlannedTrial.after`), and the driver hands the cold trial's cache over.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from ..model import CallRecord, CompileRecord, GraphBreak, TrialResult, TrialSpec
from ..schema import from_data, to_data


@dataclass(frozen=True)
class TrialTask:
    spec: TrialSpec
    cache_dir: str
    save_artifacts: bool = False
    load_artifacts: bytes | None = None
    launched_at: float = 0.0
    # executors without a shared disk (Ray): the cold trial's cache directory as a tar to
    # start a warm trial from, and whether to send this trial's own back for one
    cache_tar: bytes | None = None
    return_cache: bool = False

    def to_json(self) -> str:
        data = {
            "spec": to_data(self.spec),
            "cache_dir": self.cache_dir,
            "save_artifacts": self.save_artifacts,
            "load_artifacts": None if self.load_artifacts is None else base64.b64encode(self.load_artifacts).decode(),
            "launched_at": self.launched_at,
            "cache_tar": None if self.cache_tar is None else base64.b64encode(self.cache_tar).decode(),
            "return_cache": self.return_cache,
        }
        return json.dumps(data)

    @classmethod
    def from_json(cls, text: str) -> TrialTask:
        data = json.loads(text)
        blob, cache = data.get("load_artifacts"), data.get("cache_tar")
        return cls(
            spec=from_data(TrialSpec, data["spec"]),
            cache_dir=str(data["cache_dir"]),
            save_artifacts=bool(data.get("save_artifacts")),
            load_artifacts=None if blob is None else base64.b64decode(blob),
            launched_at=float(data.get("launched_at") or 0.0),
            cache_tar=None if cache is None else base64.b64decode(cache),
            return_cache=bool(data.get("return_cache")),
        )


@dataclass(frozen=True)
class TrialOutcome:
    result: TrialResult
    artifacts: bytes | None = None
    cache_tar: bytes | None = None  # the trial's cache directory, when the task asked for it


@dataclass
class Progress:
    """What a running trial has finished so far (streamed by its worker)."""

    calls: list[CallRecord] = field(default_factory=list)
    compiles: list[CompileRecord] = field(default_factory=list)
    graph_breaks: list[GraphBreak] = field(default_factory=list)


CallCallback = Callable[[CallRecord], None]


class Executor(Protocol):
    """Runs one trial task in a fresh process and returns its outcome; never raises for a
    trial that crashes, hangs or fails (that is a result), only for an interrupt."""

    def run(self, task: TrialTask, *, timeout_s: float, on_call: CallCallback | None = None) -> TrialOutcome: ...
