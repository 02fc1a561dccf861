"""What an executor receives and returns: one serialisable task per trial.

A :class:`TrialTask` holds everything the trial's fresh process needs — the spec, the
compile-cache directory to start on, the mega-cache artifact bytes to load, whether to
return its own artifacts — so a local subprocess and a remote worker take the same thing
(encoded by :mod:`compilescope.execute.wire`). Warm and mega-cache trials depend on their
strategy's cold trial: the plan says so (:attr:`PlannedTrial.after`), and the scheduler
hands the cold trial's cache over.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..model import CallRecord, CompileRecord, GraphBreak, TrialResult, TrialSpec


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
