"""Prove a warm-up plan by replay: :func:`verify_plan` runs, per strategy, a measured trial
that calls the plan's start-up shapes and then replays a held-out stream, and the same
strategy without the warm-up, through the scheduler and an executor as ``run`` does (each a
fresh process on an empty compile cache, steady state and numerics off). Beside the
measurement: the dry-run forecast of the same start-up and stream
(:func:`compilescope.forecast.engine.forecast_strategy`).

The report (:class:`~compilescope.report.verify.VerifyReport`) names each held-out request
that still compiled, ran eagerly or raised after start-up, with the guards that failed;
the stall-free fraction (requests that hit a warmed graph); p50/p99 request latency with
and without the warm-up; and the start-up cost (the start-up calls' latencies, summed)
against the stall cost avoided (the latencies of the requests that compiled on the request
path, summed, without the warm-up minus with it: the wall their callers waited, first-call
set-up included as in the start-up cost; PyTorch's compile seconds of each are beside).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .. import compat
from ..analysis.counts import count_compiles
from ..analysis.presented import finish_request
from ..analysis.regimes import percentile
from ..errors import OptionError
from ..execute.executor import Executor
from ..forecast.engine import DRY_BACKENDS, Observed, forecast_strategy, request_outcomes
from ..model import MeasureOptions, Shape, StrategyOptions, TrialResult, TrialSpec, shape_key
from ..report.forecast import StrategyForecast
from ..report.verify import Latency, StrategyVerify, VerifyReport, VerifyRequest
from ..model import StrategyPlan, WarmupPlan
from .planfile import load_plan

DEFAULT_MEASURE = MeasureOptions(steady=False, numerics=False)
WARMED = "warm-up"  # the variant that names the warmed trial: "default[warm-up] (cold)"


def _strategies(plan: WarmupPlan, strategy: str | None) -> list[StrategyPlan]:
    if strategy == "all":
        if not plan.plans:
            raise OptionError("the plan file holds no strategy's plan")
        return list(plan.plans)
    return [plan.plan(strategy)]


def _heldout(plan: WarmupPlan, heldout: str | Sequence[Shape]) -> tuple[str, tuple[Shape, ...]]:
    """The workload's reference and the held-out stream, checked."""
    from ..options import check_sizes
    from ..stream import parse_stream
    from ..workload import load_workload

    loaded = load_workload(plan.workload)
    shapes = parse_stream(heldout, loaded.dims, loaded.recorded_dims) if isinstance(heldout, str) else tuple(dict(s) for s in heldout)
    if not shapes:
        raise OptionError("the held-out stream is empty")
    check_sizes(shapes)
    assert loaded.ref is not None
    return loaded.ref, shapes


def _options(sp: StrategyPlan, backend: str | None) -> StrategyOptions:
    options = sp.options if backend is None else dataclasses.replace(sp.options, backend=backend)
    if sp.recompile_limit is not None:
        options = dataclasses.replace(options, recompile_limit=sp.recompile_limit)
    return options


def trial_specs(ref: str, sp: StrategyPlan, stream: tuple[Shape, ...], options: StrategyOptions,
                measure: MeasureOptions, baseline: bool) -> list[TrialSpec]:
    """The warmed trial, and the same strategy without the warm-up (``baseline``)."""
    warmed = TrialSpec(ref, sp.strategy, "cold", stream, options, measure, variant=WARMED,
                       startup=tuple(dict(s) for s in sp.shapes))
    return [warmed, dataclasses.replace(warmed, variant="", startup=())] if baseline else [warmed]


def _run(specs: list[TrialSpec], executor: Executor | None, timeout_s: float, on_progress: Any = None,
         on_call: Any = None) -> dict[TrialSpec, TrialResult]:
    from ..execute.local import LocalExecutor
    from ..execute.scheduler import PlannedTrial, cache_key, run_plan

    planned = [PlannedTrial(s, cache_key(s.name)) for s in specs]
    results = run_plan(planned, executor or LocalExecutor(), timeout_s, on_progress=on_progress, on_call=on_call)
    return {r.spec: r for r in results}


FEW = 20  # held-out requests below which the percentiles are said to be read with care


def latency(trial: TrialResult, observed: list[Observed]) -> Latency:
    """The held-out stream's measured latencies and what compiled on the request path."""
    times = [c.latency_s for c in trial.calls if c.latency_s is not None and c.error is None]
    stream = [r for r in trial.compiles if r.phase == "stream"]
    return Latency(
        requests=len(times), p50_s=percentile(times, 50), p99_s=percentile(times, 99), max_s=max(times, default=None),
        compiling_requests=sum(o.outcome == "compile" for o in observed),
        compile_s=count_compiles(stream).compile_s, eager_requests=sum(o.outcome == "eager" for o in observed),
        stall_s=sum(c.latency_s or 0.0 for c, o in zip(trial.calls, observed) if o.outcome == "compile"))


def _failures(sp: StrategyPlan, trial: TrialResult, observed: list[Observed],
              predicted: list[str] | None) -> tuple[VerifyRequest, ...]:
    why = {shape_key(u.shape): u.why for u in sp.uncovered}
    out = []
    for call, o in zip(trial.calls, observed):
        if o.outcome == "hit":
            continue
        key = shape_key(call.shape)
        out.append(finish_request(VerifyRequest(
            index=call.index, shape=key, outcome=o.outcome, compile_ids=o.compile_ids, guards=o.guards,
            covered=sp.covered(call.shape), uncovered_why=why.get(key),
            forecast=predicted[call.index] if predicted is not None else None,  # type: ignore[arg-type]
            latency_s=call.latency_s, error=o.error)))
    return tuple(out)


def dry_forecast(ref: str, sp: StrategyPlan, stream: tuple[Shape, ...], options: StrategyOptions,
                 progress: Any = None) -> tuple[StrategyForecast | None, str | None]:
    """The dry-run forecast of start-up + held-out stream, or why there is none (``progress``:
    told each request, :class:`compilescope.forecast.engine.Progress`)."""
    if options.backend not in DRY_BACKENDS:
        return None, f"no forecast: the dry run models backends {', '.join(DRY_BACKENDS)}, not {options.backend!r}"
    from ..forecast.isolation import put_back
    from ..workload import load_workload

    loaded = load_workload(ref)
    with put_back(loaded):  # the dry trial meets the workload's module as a fresh process
        got = forecast_strategy(ref, sp.strategy, (*sp.shapes, *stream), options, progress=progress, workload=loaded)
    return (None, got) if isinstance(got, str) else (got, None)


def _beside(fc: StrategyForecast | None, n_startup: int, observed: list[Observed]) -> dict[str, object]:
    """The forecast's figures for the held-out part, and where it agrees with the measurement:
    of the requests it predicted (an unknown one is counted apart, never as agreeing)."""
    if fc is None:
        return {}
    predicted = [r.outcome for r in fc.requests[n_startup:]]
    measured = [o.outcome for o in observed]
    known = [(i, p, m) for i, (p, m) in enumerate(zip(predicted, measured)) if p != "unknown"]
    disagree = tuple(i for i, p, m in known if p != m)
    return {"forecast_compiles": sum(p == "compile" for p in predicted),
            "forecast_eager": sum(p == "eager" for p in predicted),
            "forecast_stall_free": sum(p == "hit" for p in predicted) / len(predicted) if predicted else None,
            "agreement": 1 - len(disagree) / len(known) if known else None,
            "disagreements": disagree, "forecast_wall_s": fc.dry_wall_s,
            "forecast_unknown": len(predicted) - len(known)}


def _unmeasured(sp: StrategyPlan, stream: tuple[Shape, ...], trial: TrialResult | None) -> StrategyVerify:
    error = "the trial did not run" if trial is None else (trial.error or f"the trial ended {trial.status}")
    return StrategyVerify(sp.strategy, len(sp.shapes), len(stream), trial.status if trial else "missing", (),
                          None, None, None, None, 0, None, error=error)


def strategy_verify(sp: StrategyPlan, stream: tuple[Shape, ...], warmed: TrialResult | None,
                    bare: TrialResult | None, fc: StrategyForecast | None, notes: list[str]) -> StrategyVerify:
    """One strategy's verification from its two trials and its forecast."""
    if warmed is None or not warmed.ran_through:
        return _unmeasured(sp, stream, warmed)
    observed = request_outcomes(warmed.calls, warmed.compiles)
    beside = _beside(fc, len(sp.shapes), observed)
    predicted = [r.outcome for r in fc.requests[len(sp.shapes):]] if fc is not None else None
    with_ = latency(warmed, observed)
    without = latency(bare, request_outcomes(bare.calls, bare.compiles)) if bare is not None and bare.ran_through else None
    if bare is not None and without is None:
        notes.append(f"the trial without the warm-up ended {bare.status}: {bare.error or 'no error recorded'}")
    if with_.requests < FEW:
        notes.append(f"{with_.requests} held-out request(s): p50 and p99 interpolate between requests (numpy's "
                     "linear rule), so they may be no request's latency; p99 is about the slowest")
    startup = [c.latency_s for c in warmed.startup if c.latency_s is not None]
    return StrategyVerify(
        strategy=sp.strategy, startup_shapes=len(sp.shapes), heldout=len(stream), status=warmed.status,
        failures=_failures(sp, warmed, observed, predicted),
        stall_free=sum(o.outcome == "hit" for o in observed) / len(observed) if observed else None,
        with_warmup=with_, without_warmup=without,
        startup_s=sum(startup) if len(startup) == len(warmed.startup) else None,
        startup_compiles=count_compiles([r for r in warmed.compiles if r.phase == "startup"]).compiles,
        stall_avoided_s=None if without is None else without.stall_s - with_.stall_s,
        startup_compile_s=count_compiles([r for r in warmed.compiles if r.phase == "startup"]).compile_s,
        notes=tuple(notes), **beside)  # type: ignore[arg-type]


def verify_plan(plan: WarmupPlan | str | Path, heldout: str | Sequence[Shape], *, strategy: str | None = None,
                executor: Executor | None = None, backend: str | None = None,
                measure: MeasureOptions = DEFAULT_MEASURE, timeout_s: float = 900.0, baseline: bool = True,
                forecast: bool = True, on_progress: Any = None, on_call: Any = None,
                on_dry: Any = None) -> VerifyReport:
    """Replay ``heldout`` after the plan's start-up, and without it; see the module docstring.

    ``strategy``: the plan's recommended one (default), a name, or ``"all"``. ``backend``
    replaces the plan's (e.g. ``eager`` to check a plan's compiles cheaply). ``baseline``:
    also run the trial without the warm-up (the with/without figures need it);
    ``forecast``: the dry run beside the measurement. ``on_progress``/``on_call``: the
    scheduler's callbacks (:func:`compilescope.execute.scheduler.run_plan`); ``on_dry``: the
    dry run's, request by request (:class:`compilescope.forecast.engine.Progress`)."""
    started = time.perf_counter()
    if not isinstance(plan, WarmupPlan):
        plan = load_plan(plan)
    plans = _strategies(plan, strategy)
    ref, stream = _heldout(plan, heldout)
    specs = {sp.strategy: trial_specs(ref, sp, stream, _options(sp, backend), measure, baseline) for sp in plans}
    got = _run([s for pair in specs.values() for s in pair], executor, timeout_s, on_progress, on_call)
    rows = []
    for sp in plans:
        notes: list[str] = []
        fc, why = dry_forecast(ref, sp, stream, _options(sp, backend), on_dry) if forecast else (None, None)
        if why:
            notes.append(why)
        pair = specs[sp.strategy]
        rows.append(strategy_verify(sp, stream, got.get(pair[0]), got.get(pair[1]) if baseline else None, fc, notes))
    return VerifyReport(
        workload=plan.workload, plan_stream=plan.stream, heldout=len(stream), backend=backend or plan.backend,
        torch_version=compat.torch_version(), strategies=tuple(rows), recommended=plan.recommended,
        wall_s=time.perf_counter() - started,
        notes=() if baseline else ("measured with the warm-up only: no figures without it",))
