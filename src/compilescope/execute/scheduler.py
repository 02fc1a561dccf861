"""The plan of a run and the one scheduler that runs it on any executor.

Cold means a fresh process on an empty ``TORCHINDUCTOR_CACHE_DIR``; warm means a fresh
process on the directory its strategy's cold trial populated; mega means an empty directory
plus the cold trial's ``torch.compiler.save_cache_artifacts()`` bytes. :func:`plan_trials`
makes the plan (warm and mega trials name the cold trial they start after);
:func:`run_plan` runs it through an :class:`~compilescope.execute.executor.Executor` for
``run``, ``advise`` and ``sweep`` alike: each trial once its cold trial has finished, as many
at once as the executor's slots allow, caches handed over by path (a shared disk) or as tar
bytes, finished trials of a resumed run skipped. An interrupt stops what is still running,
removes the temporary cache directories and keeps every finished trial (``on_result`` has
had it).
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass
from pathlib import Path

from ..model import CallRecord, TrialResult, TrialSpec
from ..options import parse_cache_modes
from .executor import Capabilities, Executor, done_future
from .local import remove_orphaned_dirs
from .task import TrialOutcome, TrialTask
from ..paths import run_dir_prefix

NO_ARTIFACTS = ("no cache artifacts to load: the cold run failed, or its torch has no "
                "torch.compiler.save_cache_artifacts() (torch 2.7 or newer has it) or it returned none")


@dataclass(frozen=True)
class PlannedTrial:
    """A trial to run. ``report`` is False for a pass that only populates a cache;
    ``after`` is the cold trial this one starts from (warm: its cache directory, mega: its
    artifacts); ``cache_key`` names the cache directory the strategy's trials share."""

    spec: TrialSpec
    cache_key: str
    report: bool = True
    save_artifacts: bool = False
    after: TrialSpec | None = None

    @property
    def label(self) -> str:
        if not self.report:
            return f"{self.spec.name}: populating cache"
        return self.spec.label


def plan_trials(base: TrialSpec, strategies: Iterable[str | tuple[str, str, object]], cache: str) -> list[PlannedTrial]:
    """Eager once (cache does not apply), then each compiled strategy in the asked start modes.

    ``strategies`` holds names, or (name, variant, options) for a variant of a strategy.
    Warm and mega-cache starts need a cold run of the same strategy first: it is reported
    when cold was asked for, and otherwise runs stream-only to populate the cache.
    """
    from ..strategies import get_strategy

    modes = parse_cache_modes(cache)
    plan: list[PlannedTrial] = []
    for item in strategies:
        if isinstance(item, str):
            spec = dataclasses.replace(base, strategy=item)
        else:
            name, variant, options = item
            spec = dataclasses.replace(base, strategy=name, variant=variant, options=options)  # type: ignore[arg-type]
        strategy = get_strategy(spec.strategy)
        key = cache_key(spec.name)
        if not strategy.compiles:
            plan.append(PlannedTrial(dataclasses.replace(spec, cache="none"), key))
            continue
        cold = dataclasses.replace(spec, cache="cold")
        mega = "mega" in modes
        if "cold" in modes:
            plan.append(PlannedTrial(cold, key, save_artifacts=mega))
        elif "warm" in modes or mega:
            populate = dataclasses.replace(cold, measure=dataclasses.replace(spec.measure, steady=False, numerics=False))
            plan.append(PlannedTrial(populate, key, report=False, save_artifacts=mega))
            cold = populate
        if "warm" in modes:
            plan.append(PlannedTrial(dataclasses.replace(spec, cache="warm"), key, after=cold))
        if mega:
            plan.append(PlannedTrial(dataclasses.replace(spec, cache="mega"), f"{key}-mega", after=cold))
    return plan


def cache_key(name: str) -> str:
    """A directory name for a strategy's compile cache: letters, digits, ``._-`` only (inductor
    passes the cache path to g++ unquoted: a space or a bracket in it breaks every compile),
    with a short hash so two variants never share one."""
    import hashlib
    import re

    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_")[:48] or "trial"
    return f"{safe}-{hashlib.sha1(name.encode()).hexdigest()[:8]}" if safe != name else safe


ProgressFn = Callable[[PlannedTrial, "TrialResult | None"], None]
ResultFn = Callable[[PlannedTrial, TrialResult], None]
CallFn = Callable[[PlannedTrial, CallRecord], None]


def to_run(plan: list[PlannedTrial], done: Iterable[TrialSpec]) -> list[PlannedTrial]:
    """What of ``plan`` still has to run, given the reported trials already ``done``: every
    other reported trial, and the cold trials those start after — a done one runs again,
    unreported, to rebuild its cache (the cache of an earlier run is gone)."""
    finished = set(done)
    needed = {p.after for p in plan if p.report and p.spec not in finished and p.after is not None}
    items: list[PlannedTrial] = []
    for p in plan:
        if p.spec in needed:
            items.append(p if p.spec not in finished else dataclasses.replace(p, report=False))
        elif p.report and p.spec not in finished:
            items.append(p)
    return items


class _Handover:
    """The cold trials' outcomes their warm and mega trials start from, each kept until the
    last trial that starts from it has been given it."""

    def __init__(self, items: list[PlannedTrial], capabilities: Capabilities, cache_root: str) -> None:
        self.items, self.capabilities, self.root = items, capabilities, cache_root
        self.waiting = {p.after: sum(1 for q in items if q.after == p.after) for p in items if p.after is not None}
        self.outcomes: dict[TrialSpec, TrialOutcome] = {}
        self.finished: set[TrialSpec] = set()
        self.planned = {p.spec for p in items}

    def ready(self, p: PlannedTrial) -> bool:
        return p.after is None or p.after in self.finished or p.after not in self.planned

    def task(self, p: PlannedTrial) -> TrialTask:
        cold = self.outcomes.get(p.after) if p.after is not None else None
        by_path = self.capabilities.shared_disk
        task = TrialTask(
            spec=p.spec,
            cache_dir=str(Path(self.root) / p.cache_key),
            save_artifacts=p.save_artifacts,
            load_artifacts=cold.artifacts if cold is not None and p.spec.cache == "mega" else None,
            cache_tar=cold.cache_tar if cold is not None and p.spec.cache == "warm" and not by_path else None,
            return_cache=not by_path and any(q.after == p.spec and q.spec.cache == "warm" for q in self.items),
        )
        if p.after is not None:
            self.waiting[p.after] -= 1
            if not self.waiting[p.after]:
                self.outcomes.pop(p.after, None)  # its bytes are no longer needed
        return task

    def finish(self, p: PlannedTrial, outcome: TrialOutcome) -> None:
        self.finished.add(p.spec)
        if self.waiting.get(p.spec):
            self.outcomes[p.spec] = outcome


def _start(executor: Executor, task: TrialTask, timeout_s: float,
           on_call: Callable[[CallRecord], None] | None) -> Future[TrialOutcome]:
    if task.spec.cache == "mega" and task.load_artifacts is None:
        return done_future(TrialOutcome(TrialResult(task.spec, "unavailable", error=NO_ARTIFACTS)))
    return executor.submit(task, timeout_s, on_call) if on_call else executor.submit(task, timeout_s)


def run_plan(
    plan: list[PlannedTrial],
    executor: Executor,
    timeout_s: float,
    *,
    on_progress: ProgressFn | None = None,
    on_result: ResultFn | None = None,
    on_call: CallFn | None = None,
    done: Iterable[TrialSpec] = (),
    kind: str = "cache",
) -> list[TrialResult]:
    """Run each planned trial not ``done`` through ``executor``; return the reported ones, in
    plan order.

    ``on_progress(trial, None)`` as a trial starts and ``on_progress(trial, result)`` as it
    ends (cache-populating passes included); ``on_result(trial, result)`` for each reported
    trial as it ends — the place to save it; ``on_call(trial, call)`` as each stream request of
    a running trial finishes, where the executor streams them. Cache directories live in one temporary
    directory (``compilescope-KIND-PID-HOST-…``), removed whatever happens, an interrupt
    included; on an interrupt the executor's running trials are stopped."""
    items = to_run(plan, done)
    slots = max(1, executor.capabilities.slots)
    pending = list(items)
    running: dict[Future[TrialOutcome], PlannedTrial] = {}
    reported: dict[TrialSpec, TrialResult] = {}
    remove_orphaned_dirs()
    with tempfile.TemporaryDirectory(prefix=run_dir_prefix(kind)) as cache_root:
        handover = _Handover(items, executor.capabilities, cache_root)
        try:
            executor.expect([p.spec for p in items])
            while pending or running:
                for p in [p for p in pending if handover.ready(p)][: slots - len(running)]:
                    pending.remove(p)
                    if on_progress:
                        on_progress(p, None)
                    calls = (lambda call, p=p: on_call(p, call)) if on_call else None  # type: ignore[misc]
                    running[_start(executor, handover.task(p), timeout_s, calls)] = p
                if not running:
                    break  # never with a plan from plan_trials: a cold trial comes before its warm ones
                finished, _ = wait(list(running), return_when=FIRST_COMPLETED)
                for future in sorted(finished, key=lambda f: items.index(running[f])):
                    p = running.pop(future)
                    outcome = future.result()
                    handover.finish(p, outcome)
                    if on_progress:
                        on_progress(p, outcome.result)
                    if p.report:
                        reported[p.spec] = outcome.result
                        if on_result:
                            on_result(p, outcome.result)
        finally:
            executor.shutdown()
    return [reported[p.spec] for p in items if p.spec in reported]
