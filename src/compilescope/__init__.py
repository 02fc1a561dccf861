"""compilescope: what torch.compile really costs and gains on your workload, across shapes."""

from __future__ import annotations

from .api import run
from .errors import CompilescopeError, ResultsError, StrategyError, StreamError, WorkloadError
from .model import GuardFailure, MarkSpec, MeasureOptions, RunResult, TrialResult
from .schema import SCHEMA_VERSION, load
from .workload import Workload, load_workload

__version__ = "0.1.0"

__all__ = [
    "SCHEMA_VERSION",
    "CompilescopeError",
    "GuardFailure",
    "MarkSpec",
    "MeasureOptions",
    "ResultsError",
    "RunResult",
    "StrategyError",
    "StreamError",
    "TrialResult",
    "Workload",
    "WorkloadError",
    "load",
    "load_workload",
    "run",
]
