"""The advise use cases: ``compilescope advise`` (:func:`advise_workload`; the engine,
:func:`advise`: run the default strategy, propose the narrowest fix for each recorded cause,
measure every proposal in the same run and judge them) and ``advise --script``
(:func:`advise_unmodified_script`: an unmodified script re-run under each setting-only fix).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..analysis.advise import judge, observed_sizes, propose
from ..analysis.advise_guards import interleaved
from ..analysis.advise_record import to_record
from ..analysis.build import build_run_report
from ..analysis.outcomes import limit_in_force
from ..analysis.outputs import run_file
from ..execute.executor import Executor
from ..execute.scheduler import CallFn, ProgressFn
from ..model import MeasureOptions, RunResult, Shape, StrategyOptions, call_arguments
from ..options import check_writable, parse_objective
from ..prepare import prepare_run, prepare_run_with_target
from ..report import RunFile, ScriptAdvice
from ..strategies import get_strategy, repeated_block
from ..stream import distinct_shapes
from ..workload import Workload, bind_arguments, seeded_inputs
from .progress import SILENT, Progress
from .run import DEFAULT_TIMEOUT_S, ExecutorStart, _watched, execute_run, variant, write_results


def advise(
    workload: str | Workload,
    stream: str | Sequence[Shape] | None = None,
    *,
    backend: str = "inductor",
    mode: str | None = None,
    measure: MeasureOptions = MeasureOptions(),
    timeout_s: float = DEFAULT_TIMEOUT_S,
    lifetime: int | None = None,
    objective: str = "total",
    on_progress: ProgressFn | None = None,
    results_path: str | Path | None = None,
    command: str = "",
    max_waste: float = 0.125,
    executor: Executor | None = None,
    on_call: CallFn | None = None,
    guard_filters: bool | None = None,
) -> tuple[RunResult, Any]:
    """Run the default strategy, propose the narrowest fix for each recorded cause, run every
    proposal as a cold trial of the same run, and judge them (see
    :mod:`compilescope.analysis.advise`). Returns the run and the advice report.
    ``guard_filters``: measure PyTorch's guard filters always (True), never (False), or when
    the default's guard checks are a share of its call worth it (None,
    :mod:`compilescope.analysis.advise_guards`)."""
    parse_objective(objective)
    options = StrategyOptions(backend=backend, mode=mode)
    loaded, target, base, _ = prepare_run_with_target(workload, stream, ("eager", "default"), options=options,
                                                      measure=measure)
    first = execute_run(base, ("eager", "default"), "cold", timeout_s=timeout_s, on_progress=on_progress,
                        command=command, lifetime=lifetime, executor=executor, on_call=on_call)
    default = next(t for t in first.trials if t.spec.strategy == "default")
    distinct = distinct_shapes(base.stream)
    named_inputs = [bind_arguments(target, *call_arguments(seeded_inputs(loaded, shape))) for shape in distinct]
    sizes = observed_sizes(named_inputs)
    ranks = {k: v.dim() for named in named_inputs[:1] for k, v in named.items() if hasattr(v, "dim")}
    stream_values = {d: [int(shape[d]) for shape in base.stream] for d in base.stream[0]} if base.stream else {}
    found = repeated_block(target, None)
    block = None if isinstance(found, str) else found[0].__name__
    limit = limit_in_force(base.options.recompile_limit)
    proposals, fixes = (propose(default, base.options, sizes, len(distinct), limit, block=block, ranks=ranks)
                        if default.ok else ([], []))
    if default.ok and guard_filters is not False:  # the third cost: the guards every call pays
        from ..analysis.advise import compile_call
        from ..analysis.advise_guards import guard_proposals

        default_report = next(t for t in build_run_report(first).trials if t.strategy == "default")
        proposals += guard_proposals(default_report, base.options, compile_call(base.options), always=bool(guard_filters))
    trials = list(first.trials)

    def more(names: list[Any]) -> None:
        if names:
            second = execute_run(base, names, "cold", timeout_s=timeout_s, on_progress=on_progress, command=command,
                                 lifetime=lifetime, executor=executor, on_call=on_call)
            trials.extend(t for t in second.trials if t.spec.strategy != "eager")

    # static alongside the proposals when the default went dynamic: is the dynamic graph slower?
    went_dynamic = default.ok and any(r.is_recompile for r in default.compiles if r.phase == "stream")
    more([variant(p.strategy, p.name, p.options) for p in proposals] + (["static"] if went_dynamic else []))
    if went_dynamic:
        so_far = RunResult(workload=base.workload, stream=base.stream, trials=tuple(trials))
        by = {t.label: t for t in build_run_report(so_far).trials}
        extra, _ = propose(default, base.options, sizes, len(distinct), limit, static=by.get("static (cold)"),
                           default_report=by.get("default (cold)"), stream_values=stream_values, max_waste=max_waste,
                           ranks=ranks, samples=interleaved(so_far))
        extra = [p for p in extra if p.strategy == "bucket" and p.target == "steady"]
        more([variant(p.strategy, p.name, p.options) for p in extra])
        proposals += extra
    result = RunResult(workload=base.workload, stream=base.stream, trials=tuple(trials), created=first.created,
                       command=command, lifetime=lifetime, advice=to_record(objective, proposals, fixes))
    if results_path is not None:
        check_writable(Path(results_path), "results")
        write_results(result, Path(results_path))
    return result, judge(build_run_report(result), proposals, objective, lifetime, fixes, recompile_limit=limit,
                         result=result)


def advise_workload(
    workload: str,
    stream: str | None,
    *,
    results: Path,
    backend: str = "inductor",
    mode: str | None = None,
    objective: str = "total",
    lifetime: int | None = None,
    measure: MeasureOptions = MeasureOptions(),
    timeout_s: float = DEFAULT_TIMEOUT_S,
    max_waste: float = 0.125,
    command: str = "",
    executor: ExecutorStart | None = None,
    check_first: bool = False,
    progress: Progress = SILENT,
    guard_filters: bool | None = None,
) -> RunFile:
    """``compilescope advise``: :func:`advise`, its run saved in ``results``; returns what the
    results file holds with the advice judged when the run ended. ``check_first``: check the
    workload before the executor starts (joining a Ray cluster takes long)."""
    options = StrategyOptions(backend=backend, mode=mode)
    if check_first:
        prepare_run(workload, stream, ("eager", "default"), options=options, measure=measure)
    else:  # the options at least, before the results line (a --mode beside another backend is one line)
        check = get_strategy("default").validate
        if check is not None:
            check(options)
    runner = executor() if executor is not None else None
    progress.note(f"results: {results} (default first, then each proposal, one fresh process per trial)", "dim")
    result, advice = _watched(progress, None, lambda on_progress, on_call: advise(
        workload, stream, backend=backend, mode=mode, measure=measure, timeout_s=timeout_s, lifetime=lifetime,
        objective=objective, on_progress=on_progress, on_call=on_call, results_path=results, command=command,
        max_waste=max_waste, executor=runner, guard_filters=guard_filters))
    return dataclasses.replace(run_file(result), advice=advice)


def advise_unmodified_script(script: str, args: Sequence[str], *, timeout_s: float = DEFAULT_TIMEOUT_S,
                             progress: Progress = SILENT) -> ScriptAdvice:
    """``compilescope advise --script``: the script re-run unmodified, under probe, as it is and
    under each setting-only fix (:func:`compilescope.script_advise.advise_script`)."""
    from ..script_advise import advise_script

    progress.note("each run: the script in a fresh process, under probe, with an empty inductor cache", "dim")
    running: list[str] = []

    def on_progress(label: str) -> None:
        if running:
            progress.finished(running.pop())
        progress.note(f"running: {label}", "dim")
        progress.working(label, "running the script")
        running.append(label)

    progress.begin(None, "runs")
    try:
        return advise_script(script, list(args), timeout_s=timeout_s, on_progress=on_progress)
    finally:
        progress.end()
