"""``compilescope sweep SWEEP.toml``: workloads × strategies × start modes × settings.

A sweep file (read by :func:`compilescope.options.load_sweep`) names the matrix; every combination becomes the same planned trials ``run``
makes (eager once per workload and setting, each compiled strategy in each start mode, warm
and mega-cache trials after their cold one). Trials run through an executor — local
subprocesses one at a time (timings never overlap), or Ray tasks — and each finished trial
goes straight into the results store, so an interrupted sweep, run again, runs only what is
missing::

    name = "nightly"
    workloads = ["sincos", "mlp"]
    strategies = ["eager", "default", "static", "dynamic"]
    cache = ["cold", "warm"]

    [settings]                 # each a list: the sweep takes every combination
    backend = ["eager", "aot_eager"]
    recompile_limit = [8]
    threads = [1]
    python = [".venv/bin/python", ".venv-torch-2.10.0/bin/python"]   # the interpreters trials run in

    [streams]                  # per workload; a workload without one uses its default stream
    sincos = "16,16,32,32,64"

    [measure]
    samples = 10
    budget = 0.2
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .execute.executor import Executor
from .execute.scheduler import CallFn, PlannedTrial, cache_key, plan_trials, run_plan
from .model import StrategyOptions, TrialResult, TrialSpec
from .options import SweepConfig
from .store import Store, trial_key


def default_store_path(name: str, results_dir: Path = Path("compilescope-results")) -> Path:
    """``compilescope-results/sweep-NAME.sqlite``, with NAME made a plain file name: a sweep
    file's ``name = "../../x"`` never puts its store outside the results directory."""
    from .paths import safe_name

    return results_dir / f"sweep-{safe_name(name, 'sweep')}.sqlite"


def plan_sweep(config: SweepConfig) -> list[PlannedTrial]:
    """Every trial of the sweep, validated up front (workload, stream, backend, strategies)."""
    from .prepare import prepare_run

    plan: list[PlannedTrial] = []
    for workload in config.workloads:
        for combo in config.settings:
            options = StrategyOptions(backend=combo.get("backend", "inductor"), mode=combo.get("mode"),
                                      recompile_limit=combo.get("recompile_limit"))
            python = combo.get("python")
            measure = dataclasses.replace(config.measure, threads=combo.get("threads", config.measure.threads),
                                          python=None if python is None else os.path.abspath(python))
            stream = combo.get("stream", config.streams.get(workload))
            _, base, names = prepare_run(workload, stream, config.strategies, options=options, measure=measure)
            tag = hashlib.sha1(json.dumps([workload, combo], sort_keys=True).encode()).hexdigest()[:8]
            for p in plan_trials(base, names, ",".join(config.cache)):
                plan.append(dataclasses.replace(p, cache_key=cache_key(f"{workload}-{tag}-{p.cache_key}")))
    return plan


@dataclass
class SweepProgress:
    total: int
    skipped: int
    done: int = 0
    running: int = 0
    failed: int = 0
    seconds: list[float] = field(default_factory=list)

    def left_s(self, parallel: int) -> float | None:
        if not self.seconds:
            return None
        remaining = self.total - self.done
        return sum(self.seconds) / len(self.seconds) * remaining / max(1, parallel)


Event = Callable[[SweepProgress, PlannedTrial, TrialResult | None], None]


def run_sweep(config: SweepConfig, plan: list[PlannedTrial], executor: Executor, store: Store, *,
              on_event: Event | None = None, on_start: Callable[[SweepProgress], None] | None = None,
              on_call: CallFn | None = None) -> SweepProgress:
    """Run every planned trial the store does not already hold, through the one scheduler
    (:func:`~compilescope.execute.scheduler.run_plan`); each finished trial is stored the
    moment it finishes. A warm or mega trial whose cold trial is stored but whose cache is
    gone re-runs the cold one, unreported, to rebuild it. ``on_start`` sees the counts before
    the first trial; ``on_call``: as :func:`~compilescope.execute.scheduler.run_plan`'s."""
    from . import compat

    def torch_of(spec: TrialSpec) -> str:
        """The torch a trial runs: its interpreter's (a ``python`` setting) or this one."""
        if spec.measure.python is None:
            return compat.torch_version()
        from .execute.interpreter import check_interpreter

        return check_interpreter(spec.measure.python).torch

    finished = store.finished_keys()
    done = {p.spec for p in plan if p.report and trial_key(p.spec, torch_of(p.spec)) in finished}
    progress = SweepProgress(total=sum(1 for p in plan if p.report) - len(done), skipped=len(done))
    started: dict[TrialSpec, float] = {}

    def on_progress(p: PlannedTrial, result: TrialResult | None) -> None:
        if result is not None:
            return
        started[p.spec] = time.perf_counter()
        progress.running += p.report
        if on_event:
            on_event(progress, p, None)

    def on_result(p: PlannedTrial, result: TrialResult) -> None:
        store.add(result, torch_version=torch_of(p.spec), sweep=config.name)
        progress.running -= 1
        progress.done += 1
        progress.failed += result.status != "ok"
        progress.seconds.append(time.perf_counter() - started.pop(p.spec))
        if on_event:
            on_event(progress, p, result)

    if on_start:
        on_start(progress)
    run_plan(plan, executor, config.timeout_s, on_progress=on_progress, on_result=on_result, on_call=on_call,
             done=done, kind="sweep")
    return progress
