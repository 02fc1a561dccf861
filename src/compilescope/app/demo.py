"""The demo use case: ``compilescope demo``, the main job on a built-in workload with no
arguments needed — eager against default, static and dynamic under inductor, cold starts."""

from __future__ import annotations

from pathlib import Path

from ..model import DEFAULT_STRATEGIES, MeasureOptions, StrategyOptions
from ..report import RunFile
from .progress import SILENT, Progress
from .run import run_workload

MEASURE = MeasureOptions(warmup=3, samples=100, min_samples=5, budget_s=1.0, threads=1, device="cpu")


def demo(workload: str, lifetime: int, results: Path, *, progress: Progress = SILENT) -> RunFile:
    """Run the built-in ``workload`` as the demo does, saving the run in ``results``; the
    verdict is over ``lifetime`` requests."""
    return run_workload(workload, None, ",".join(DEFAULT_STRATEGIES), results=results, cache="cold",
                        options=StrategyOptions(backend="inductor"), measure=MEASURE, timeout_s=900.0,
                        lifetime=lifetime, command="compilescope demo", progress=progress)
