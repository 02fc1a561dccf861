"""The sweep use case: ``compilescope sweep`` — every trial of a sweep file's workloads ×
strategies × start modes × settings that its results store lacks, each stored the moment it
finishes (:func:`compilescope.sweep.run_sweep`), then each stored run's summary."""

from __future__ import annotations

from dataclasses import dataclass

from ..analysis.build import build_run_report
from ..analysis.progress import trial_done
from ..execute.scheduler import PlannedTrial
from ..model import TrialResult
from ..options import SweepConfig
from ..report import RunReport
from ..report.progress import Tally
from ..store import Store
from ..sweep import SweepProgress, plan_sweep, run_sweep
from .progress import SILENT, Progress, trial_hooks
from .run import ExecutorStart


@dataclass(frozen=True)
class SweptRun:
    """One run of the sweep the store holds (a workload, stream, backend and torch version)."""

    workload: str
    backend: str
    report: RunReport


@dataclass(frozen=True)
class SweepOutcome:
    """What a sweep did: the trials it ran, failed and skipped (already stored), the store's
    warnings, and the report of each run of this sweep the store holds."""

    done: int
    failed: int
    skipped: int
    warnings: tuple[str, ...]
    runs: tuple[SweptRun, ...]

    @property
    def all_failed(self) -> bool:
        return bool(self.failed) and self.failed == self.done


def sweep(config: SweepConfig, store: Store, *, executor: ExecutorStart, executor_name: str = "local",
          progress: Progress = SILENT) -> SweepOutcome:
    """Run the sweep ``config`` into ``store`` (opened, and checked writable, by the caller)."""
    plan = plan_sweep(config)
    runner = executor()
    parallel = runner.capabilities.slots
    on_progress, on_call = trial_hooks(progress)

    def on_event(counts: SweepProgress, trial: PlannedTrial, result: TrialResult | None) -> None:
        if result is None:
            on_progress(trial, None)
            return
        tally = Tally(counts.done, counts.total, counts.running, counts.failed, counts.left_s(parallel))
        progress.finished(trial.label, trial_done(trial.label, result), tally)

    progress.note(f"sweep {config.name}: {len(plan)} planned trial(s), executor {executor_name}, store {store.path}",
                  "dim")
    try:
        counts = run_sweep(config, plan, runner, store, on_event=on_event, on_call=on_call,
                           on_start=lambda counts: progress.begin(counts.total))
    finally:
        progress.end()
    if counts.skipped:
        progress.note(f"{counts.skipped} trial(s) already in the store were skipped", "dim")
    runs = store.runs([("sweep", config.name)])
    return SweepOutcome(counts.done, counts.failed, counts.skipped, tuple(store.warnings),
                        tuple(SweptRun(run.workload, run.trials[0].spec.options.backend, build_run_report(run))
                              for run in runs))
