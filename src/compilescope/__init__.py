"""compilescope: what torch.compile really costs and gains on your workload, across shapes."""

from __future__ import annotations

from .api import RunInterrupted, advise, execute_run, prepare_run, resume_run, run, variant
from .errors import (
    CompilescopeError,
    OptionError,
    ResultsError,
    StrategyError,
    StreamError,
    WorkloadError,
)
from .model import (
    CompileId,
    CompileRecord,
    GraphBreak,
    GuardFailure,
    MarkSpec,
    MeasureOptions,
    ProbeResult,
    RunResult,
    StrategyOptions,
    TrialResult,
    TrialSpec,
)
from .schema import SCHEMA_VERSION, load
from .watch import RecompileBudgetExceeded, RecompileBudgetWarning, Watch, watch
from .workload import Workload, load_workload

__version__ = "0.2.0"

__all__ = [
    "SCHEMA_VERSION",
    "CompileId",
    "CompileRecord",
    "CompilescopeError",
    "GraphBreak",
    "GuardFailure",
    "MarkSpec",
    "MeasureOptions",
    "OptionError",
    "ProbeResult",
    "RecompileBudgetExceeded",
    "RecompileBudgetWarning",
    "ResultsError",
    "RunInterrupted",
    "RunResult",
    "StrategyError",
    "StrategyOptions",
    "StreamError",
    "TrialResult",
    "TrialSpec",
    "Watch",
    "Workload",
    "WorkloadError",
    "advise",
    "execute_run",
    "load",
    "load_workload",
    "prepare_run",
    "resume_run",
    "run",
    "variant",
    "watch",
]
