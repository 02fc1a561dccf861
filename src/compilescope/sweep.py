"""``compilescope sweep SWEEP.toml``: workloads × strategies × start modes × settings.

A sweep file names the matrix; every combination becomes the same planned trials ``run``
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

    [streams]                  # per workload; a workload without one uses its default stream
    sincos = "16,16,32,32,64"

    [measure]
    samples = 10
    budget = 0.2
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import tempfile
import time
import tomllib
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import OptionError
from .execute.local import LocalExecutor, PlannedTrial, cache_key, plan_trials
from .execute.task import TrialOutcome, TrialTask
from .model import MeasureOptions, StrategyOptions, TrialResult, TrialSpec
from .store import Store, trial_key

SETTING_KEYS = {"backend": str, "mode": str, "recompile_limit": int, "threads": int, "stream": str}
MEASURE_KEYS = {"warmup": int, "samples": int, "budget": float, "device": str}
TOP_KEYS = {"name", "workloads", "strategies", "cache", "settings", "streams", "measure", "timeout"}


@dataclass(frozen=True)
class SweepConfig:
    name: str
    workloads: tuple[str, ...]
    strategies: tuple[str, ...]
    cache: tuple[str, ...]
    settings: tuple[dict[str, Any], ...]  # each combination
    streams: dict[str, str] = field(default_factory=dict)
    measure: MeasureOptions = MeasureOptions()
    timeout_s: float = 900.0


def _list(value: Any, where: str, kind: type) -> list[Any]:
    items = value if isinstance(value, list) else [value]
    for item in items:
        if kind is float and isinstance(item, int) and not isinstance(item, bool):
            continue
        if not isinstance(item, kind) or isinstance(item, bool):
            raise OptionError(f"{where}: expected {kind.__name__} values, got {item!r}")
    if not items:
        raise OptionError(f"{where} is empty")
    return items


def load_sweep(path: str | Path) -> SweepConfig:
    """Read and check a sweep file; every problem is one line naming the key."""
    from .paths import read_capped

    p = Path(path)
    if not p.exists() and not p.is_symlink():
        raise OptionError(f"sweep file {str(p)!r} does not exist")
    try:
        data = tomllib.loads(read_capped(p, f"sweep file {str(p)!r}", OptionError).decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise OptionError(f"cannot read sweep file {str(p)!r}: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise OptionError(f"{p}: not valid TOML: {exc}") from None
    unknown = sorted(set(data) - TOP_KEYS)
    if unknown:
        raise OptionError(f"{p}: unknown key {unknown[0]!r} (use {', '.join(sorted(TOP_KEYS))})")
    if "workloads" not in data:
        raise OptionError(f"{p}: no workloads = [...]")
    workloads = _list(data["workloads"], "workloads", str)
    strategies = _list(data.get("strategies", ["eager", "default", "static", "dynamic"]), "strategies", str)
    cache = _list(data.get("cache", ["cold"]), "cache", str)
    settings = data.get("settings", {})
    if not isinstance(settings, dict):
        raise OptionError(f"{p}: [settings] must be a table")
    axes = []
    for key, value in settings.items():
        if key not in SETTING_KEYS:
            raise OptionError(f"{p}: unknown setting {key!r} (use {', '.join(SETTING_KEYS)})")
        axes.append([(key, v) for v in _list(value, f"settings.{key}", SETTING_KEYS[key])])
    combos = tuple(dict(c) for c in itertools.product(*axes)) if axes else ({},)
    streams = data.get("streams", {})
    if not isinstance(streams, dict) or not all(isinstance(v, str) for v in streams.values()):
        raise OptionError(f"{p}: [streams] maps a workload to a stream string")
    measure_data = data.get("measure", {})
    if not isinstance(measure_data, dict):
        raise OptionError(f"{p}: [measure] must be a table")
    measure = MeasureOptions()
    for key, value in measure_data.items():
        if key not in MEASURE_KEYS:
            raise OptionError(f"{p}: unknown measure key {key!r} (use {', '.join(MEASURE_KEYS)})")
        (v,) = _list(value, f"measure.{key}", MEASURE_KEYS[key])
        measure = dataclasses.replace(measure, **{"budget_s" if key == "budget" else key: v})
    timeout = data.get("timeout", 900.0)
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0:
        raise OptionError(f"{p}: timeout must be a positive number of seconds")
    name = data.get("name", p.stem)
    if not isinstance(name, str) or not name:
        raise OptionError(f"{p}: name must be a non-empty string")
    return SweepConfig(name, tuple(workloads), tuple(strategies), tuple(cache), combos, dict(streams), measure,
                       float(timeout))


def default_store_path(name: str, results_dir: Path = Path("compilescope-results")) -> Path:
    """``compilescope-results/sweep-NAME.sqlite``, with NAME made a plain file name: a sweep
    file's ``name = "../../x"`` never puts its store outside the results directory."""
    from .paths import safe_name

    return results_dir / f"sweep-{safe_name(name, 'sweep')}.sqlite"


def plan_sweep(config: SweepConfig) -> list[PlannedTrial]:
    """Every trial of the sweep, validated up front (workload, stream, backend, strategies)."""
    from .api import _prepare

    plan: list[PlannedTrial] = []
    for workload in config.workloads:
        for combo in config.settings:
            options = StrategyOptions(backend=combo.get("backend", "inductor"), mode=combo.get("mode"),
                                      recompile_limit=combo.get("recompile_limit"))
            measure = dataclasses.replace(config.measure, threads=combo.get("threads", config.measure.threads))
            stream = combo.get("stream", config.streams.get(workload))
            _, _, base, names = _prepare(workload, stream, config.strategies, options=options, measure=measure)
            tag = hashlib.sha1(json.dumps([workload, combo], sort_keys=True).encode()).hexdigest()[:8]
            for p in plan_trials(base, names, ",".join(config.cache)):
                plan.append(dataclasses.replace(p, cache_key=cache_key(f"{workload}-{tag}-{p.cache_key}")))
    return plan


class LocalSweepExecutor:
    """One trial at a time, each in a fresh local process (timings never overlap)."""

    hands_over_cache = False
    concurrent = False

    def __init__(self) -> None:
        self.local = LocalExecutor()

    def submit(self, task: TrialTask, timeout_s: float) -> Future[TrialOutcome]:
        out: Future[TrialOutcome] = Future()
        out.set_result(self.local.run(task, timeout_s=timeout_s))
        return out

    def shutdown(self) -> None:
        pass


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


def run_sweep(config: SweepConfig, plan: list[PlannedTrial], executor: Any, store: Store, *,
              on_event: Event | None = None, parallel: int = 1) -> SweepProgress:
    """Run every planned trial the store does not already hold; each finished trial is
    stored the moment it finishes. A warm or mega trial whose cold trial is stored but whose
    cache is gone re-runs the cold one, unreported, to rebuild it."""
    from . import compat

    torch_version = compat.torch_version()
    finished = store.finished_keys()
    missing = [p for p in plan if p.report and trial_key(p.spec, torch_version) not in finished]
    needed = {p.after for p in missing if p.after is not None}
    items: list[PlannedTrial] = []
    for p in plan:
        stored = p.report and trial_key(p.spec, torch_version) in finished
        if stored and p.spec in needed:
            items.append(dataclasses.replace(p, report=False))
        elif not stored and (p.report or p.spec in needed):
            items.append(p)
    progress = SweepProgress(total=sum(1 for p in items if p.report), skipped=len(plan) - len(missing)
                             - sum(1 for p in plan if not p.report))
    outcomes: dict[TrialSpec, TrialOutcome] = {}
    pending = list(items)
    running: dict[Future[TrialOutcome], tuple[PlannedTrial, float]] = {}
    limit = parallel if executor.concurrent else 1
    from .execute.local import remove_orphaned_dirs
    from .execute.worker import run_dir_prefix

    remove_orphaned_dirs()
    with tempfile.TemporaryDirectory(prefix=run_dir_prefix("sweep")) as cache_root:
        try:
            while pending or running:
                for p in list(pending):
                    if len(running) >= limit:
                        break
                    if p.after is not None and p.after not in outcomes and any(q.spec == p.after for q in items):
                        continue
                    pending.remove(p)
                    task = _task(p, items, outcomes, executor, cache_root)
                    if p.report:
                        progress.running += 1
                    if on_event:
                        on_event(progress, p, None)
                    running[_submit(executor, p, task, config.timeout_s)] = (p, time.perf_counter())
                if not running:
                    break
                done, _ = wait(list(running), return_when=FIRST_COMPLETED)
                for f in done:
                    p, started = running.pop(f)
                    outcome = f.result()
                    outcomes[p.spec] = outcome
                    if not p.report:
                        continue
                    store.add(outcome.result, torch_version=torch_version, sweep=config.name)
                    progress.running -= 1
                    progress.done += 1
                    progress.failed += outcome.result.status != "ok"
                    progress.seconds.append(time.perf_counter() - started)
                    if on_event:
                        on_event(progress, p, outcome.result)
        finally:
            executor.shutdown()
    return progress


def _submit(executor: Any, p: PlannedTrial, task: TrialTask, timeout_s: float) -> Future[TrialOutcome]:
    if p.spec.cache == "mega" and task.load_artifacts is None:
        out: Future[TrialOutcome] = Future()
        out.set_result(TrialOutcome(TrialResult(
            p.spec, "unavailable", error="no cache artifacts to load: the cold run failed or "
                                         "torch.compiler.save_cache_artifacts() returned none")))
        return out
    return executor.submit(task, timeout_s)


def _task(p: PlannedTrial, items: list[PlannedTrial], outcomes: dict[TrialSpec, TrialOutcome], executor: Any,
          cache_root: str) -> TrialTask:
    cold = outcomes.get(p.after) if p.after is not None else None
    dependents = [q for q in items if q.after == p.spec]
    return TrialTask(
        spec=p.spec,
        cache_dir=str(Path(cache_root) / p.cache_key),
        save_artifacts=p.save_artifacts,
        load_artifacts=cold.artifacts if cold is not None and p.spec.cache == "mega" else None,
        cache_tar=cold.cache_tar if cold is not None and p.spec.cache == "warm" else None,
        return_cache=executor.hands_over_cache and any(q.spec.cache == "warm" for q in dependents),
    )
