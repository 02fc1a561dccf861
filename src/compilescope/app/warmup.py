"""The warm-up use case: ``compilescope warmup`` — plan each strategy's start-up calls by dry
run (:func:`compilescope.warmup.plan.plan_warmup`), measure the plans in trials
(:func:`~compilescope.warmup.measure.measure_plan`: cold, warm and mega starts, steady state,
the verdict), save the plan file and the mega-cache artifacts, and with a held-out stream
verify the recommended plan by replay (:func:`~compilescope.warmup.verify.verify_plan`)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..analysis.progress import REQUESTS
from ..errors import StreamError
from ..model import MarkSpec
from ..options import scratch_inductor_cache
from ..report.verify import VerifyReport
from ..report.warmup import WarmupReport
from ..model import WarmupPlan
from .progress import SILENT, Progress
from .run import DEFAULT_TIMEOUT_S, ExecutorStart, _watched


def check_heldout(workload: str, heldout: str) -> None:
    """A bad held-out stream is an error before any planning."""
    from ..stream import parse_stream
    from ..workload import load_workload

    try:
        loaded = load_workload(workload)
        parse_stream(heldout, loaded.dims, loaded.recorded_dims)
    except StreamError as exc:
        raise StreamError(f"--verify: {exc}") from None


def warmup(
    workload: str,
    stream: str,
    strategies: str,
    *,
    backend: str = "inductor",
    marks: Sequence[MarkSpec] = (),
    recompile_limit: int | None = None,
    lifetime: int | None = None,
    caches: Sequence[str] = ("cold", "warm", "mega"),
    samples: int = 10,
    threads: int | None = 1,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    measure: bool = True,
    plan_out: Path | None = None,
    artifacts: Path | None = None,
    heldout: str | None = None,
    executor: ExecutorStart | None = None,
    on_report: Callable[[WarmupReport], None] | None = None,
    progress: Progress = SILENT,
) -> WarmupReport:
    """Plan, measure (unless not ``measure``), save the plan in ``plan_out`` and the artifacts
    in ``artifacts``; ``on_report`` sees the report then, before a ``heldout`` stream is
    replayed after the recommended plan's start-up (unmeasured: the first strategy's), whose
    verification the returned report carries."""
    from ..warmup.plan import plan_warmup
    from ..warmup.planfile import save_plan

    with scratch_inductor_cache():  # Dynamo runs here: no torchinductor_* left
        if heldout is not None:
            check_heldout(workload, heldout)
        started = time.perf_counter()
        plan = _planned(progress, lambda on_begin, on_step: plan_warmup(
            workload, stream, strategies, backend=backend, recompile_limit=recompile_limit, marks=tuple(marks),
            on_begin=on_begin, on_step=on_step))
        report = _measured(plan, stream, measure, lifetime, caches, samples, threads, timeout_s, executor,
                           artifacts, plan_out, time.perf_counter() - started, progress)
        if plan_out is not None:
            save_plan(report.plan, plan_out)
        if on_report is not None:
            on_report(report)
        if heldout is None:
            return report
        return dataclasses.replace(report, verified=_verify(report, heldout, executor, progress))


def _planned(progress: Progress, work: Callable[..., WarmupPlan]) -> WarmupPlan:
    """Run the planning ``work`` telling ``progress`` each strategy's dry-run phase (``plan
    default: dropping each of 3 start-up shape(s) in turn``) and each plan done: the dry runs of a
    large model under inductor take minutes, never silent ones."""
    begun = False

    def on_begin(total: int) -> None:
        nonlocal begun
        progress.begin(total, "plans")
        begun = True

    def on_step(strategy: str, phase: str | None) -> None:
        if phase is None:
            progress.finished(f"plan {strategy}")
        else:
            progress.working(f"plan {strategy}", phase)

    try:
        return work(on_begin, on_step)
    finally:
        if begun:
            progress.end()


def _measured(plan: WarmupPlan, stream: str, measure: bool, lifetime: int | None, caches: Sequence[str], samples: int,
              threads: int | None, timeout_s: float, executor: ExecutorStart | None, artifacts: Path | None,
              plan_out: Path | None, plan_s: float, progress: Progress) -> WarmupReport:
    from ..execute.local import LocalExecutor
    from ..warmup.measure import MEASURE, KeepArtifacts, dry_report, measure_plan, save_artifacts, start_modes, \
        trial_plan

    if not measure:
        return dry_report(plan, plan_s)
    options = dataclasses.replace(MEASURE, samples=samples, min_samples=min(MEASURE.min_samples, samples),
                                  threads=threads or None)
    keep = KeepArtifacts(executor() if executor is not None else LocalExecutor())
    total = len(trial_plan(plan, (), start_modes(plan, caches)[0], options))
    report: WarmupReport = _watched(progress, total, lambda on_progress, on_call: measure_plan(
        plan, stream, lifetime=lifetime, caches=caches, measure=options, timeout_s=timeout_s,
        on_progress=on_progress, on_call=on_call, keep=keep))
    if artifacts is not None and plan_out is not None:
        saved, written = save_artifacts(report.plan, keep.artifacts, artifacts, plan_out.parent)
        progress.note(f"artifacts: {artifacts} ({', '.join(written) or 'none: no cold trial returned any'})")
        report = dataclasses.replace(report, plan=saved)
    return report


def _verify(report: WarmupReport, heldout: str, executor: ExecutorStart | None, progress: Progress) -> VerifyReport:
    from ..warmup.verify import verify_plan

    which = report.plan.recommended or report.plan.plans[0].strategy
    if report.plan.recommended is None:
        progress.note(f"--verify: nothing was measured to recommend a strategy, so the first one's plan is "
                      f"verified: {which}")
    runner = executor() if executor is not None else None
    def on_dry(step: Any) -> None:  # the dry run beside the replay, after its two trials
        progress.working(f"dry run of {step.strategy}", REQUESTS, step.requests, step.stream_length)

    verified: VerifyReport = _watched(progress, 2, lambda on_progress, on_call: verify_plan(  # with and without
        report.plan, heldout, strategy=which, executor=runner, on_progress=on_progress, on_call=on_call,
        on_dry=on_dry))
    return verified


def exit_status(report: WarmupReport) -> int:
    """1 when the verification's replay did not hold, or when every strategy's dry run failed
    on every recorded shape (no plan at all: as ``run`` exits 1 when every compiled trial
    failed); else 0."""
    if report.verified is not None and not report.verified.passed:
        return 1
    plans = report.plan.plans
    return 1 if plans and all(p.forecast_failed for p in plans) else 0
