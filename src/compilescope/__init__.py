"""compilescope: what torch.compile really costs and gains on your workload, across shapes.

The public names are imported on first use, so ``import compilescope`` (and the CLI's
``--help`` and shell completion) does not import torch."""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

from .errors import (
    CompilescopeError,
    OptionError,
    ResultsError,
    StreamError,
    WorkloadError,
)

__version__ = "0.2.0"

# public name → the module that defines it (imported when the name is first used)
_LAZY = {
    **dict.fromkeys(("RunInterrupted", "advise", "execute_run", "prepare_run", "resume_run", "run", "variant"), "api"),
    **dict.fromkeys(("CompileId", "CompileRecord", "GraphBreak", "GuardFailure", "MarkSpec", "MeasureOptions",
                     "ProbeResult", "RunResult", "StrategyOptions", "TrialResult", "TrialSpec"), "model"),
    **dict.fromkeys(("SCHEMA_VERSION", "load"), "schema"),
    **dict.fromkeys(("RecompileBudgetExceeded", "RecompileBudgetWarning", "Watch", "watch"), "watch"),
    **dict.fromkeys(("Workload", "load_workload"), "workload"),
    **dict.fromkeys(("WarmUpResult", "warm_up"), "warmup.api"),
    **dict.fromkeys(("VerifyReport", "verify_plan"), "warmup.verify"),
}

if TYPE_CHECKING:
    from .api import RunInterrupted, advise, execute_run, prepare_run, resume_run, run, variant
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
    from .warmup.api import WarmUpResult, warm_up
    from .warmup.verify import VerifyReport, verify_plan


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'compilescope' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


class _Package(types.ModuleType):
    """``compilescope.watch`` is the function: importing the submodule of the same name (which
    binds the submodule on its package) binds the function instead, as an eager import did."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "watch" and isinstance(value, types.ModuleType) and hasattr(value, "watch"):
            value = value.watch
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


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
    "StrategyOptions",
    "StreamError",
    "TrialResult",
    "TrialSpec",
    "VerifyReport",
    "WarmUpResult",
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
    "verify_plan",
    "warm_up",
    "watch",
]
