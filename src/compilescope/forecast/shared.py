"""What both forecasts (the dry run's, :mod:`.engine`, and the recorded guards',
:mod:`.recorded`) use: a failed guard as a forecast's request shows it, and a ``run``
results file's measured compile times, which predict a forecast's compile seconds."""

from __future__ import annotations

import dataclasses
import statistics
from pathlib import Path

from ..analysis.advice import guard_kind
from ..errors import ResultsError
from ..model import CompileId, GuardFailure, RunResult, TrialResult
from ..report.forecast import CompileTimes, ForecastGuard, ForecastRequest


def forecast_guard(entry: str, g: GuardFailure) -> ForecastGuard:
    """A failed guard as a forecast's request shows it (its kind: :func:`guard_kind`)."""
    return ForecastGuard(entry, g.reason, guard_kind(g.kind, g.source), g.source, g.dim,
                         None if g.expected is None else str(g.expected), None if g.actual is None else str(g.actual))


def load_run(path: str | Path, workload_ref: str) -> RunResult:
    """A ``run`` results file of ``workload_ref``, or a one-line error."""
    from ..schema import load

    result = load(path)
    if not isinstance(result, RunResult):
        raise ResultsError(f"{path} is a probe result, not a run's; --results needs a file written by run")
    if result.workload != workload_ref:
        raise ResultsError(f"{path} measured workload {result.workload!r}, not {workload_ref!r}")
    return result


def measured_compile_times(result: RunResult, path: str | Path, strategy: str) -> CompileTimes | None:
    """Medians of the measured stream compiles of ``strategy`` in a ``run`` result (its cold
    trial when there is one); None when it has no compile times for it."""
    trials = sorted((t for t in result.trials if t.spec.strategy == strategy and t.spec.variant == ""),
                    key=lambda t: t.spec.cache != "cold")
    for trial in trials:
        firsts, recompiles = _times(trial)
        if firsts or recompiles:
            return CompileTimes(f"{path} [{trial.label}, backend {trial.spec.options.backend}]",
                                statistics.median(firsts) if firsts else None, len(firsts),
                                statistics.median(recompiles) if recompiles else None, len(recompiles))
    return None


def _times(trial: TrialResult) -> tuple[list[float], list[float]]:
    done = [r for r in trial.compiles if r.phase == "stream" and r.is_compile and r.compile_time_s is not None]
    # priced by attempt, as a prediction names its compiles by id (a frame's first attempt, or a later one)
    return ([r.compile_time_s for r in done if not r.compile_id.is_recompile],  # type: ignore[misc]
            [r.compile_time_s for r in done if r.compile_id.is_recompile])  # type: ignore[misc]


def predict_compile_s(requests: list[ForecastRequest], times: CompileTimes | None) -> tuple[list[ForecastRequest], float | None]:
    if times is None:
        return requests, None
    total, out, known = 0.0, [], True
    for r in requests:
        if r.outcome != "compile":
            out.append(r)
            continue
        seconds = 0.0
        for text in r.compile_ids:
            cid = CompileId.parse(text)
            each = times.recompile_s if cid is not None and cid.is_recompile else times.first_s
            each = each if each is not None else (times.first_s or times.recompile_s)
            if each is None:
                known = False
                continue
            seconds += each
        total += seconds
        out.append(dataclasses.replace(r, compile_s=seconds))
    return out, total if known else None
