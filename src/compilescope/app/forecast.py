"""The forecast use case: ``compilescope forecast`` — what torch.compile will do on each
request of a stream, by a dry run of Dynamo (:func:`compilescope.forecast.forecast`), from the
guards a results file recorded (:func:`~compilescope.forecast.forecast_recorded`), or both
side by side."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..errors import OptionError
from ..model import MarkSpec
from ..options import scratch_inductor_cache
from ..report import ForecastReport
from .progress import SILENT, Progress

METHODS = ("dry-run", "recorded", "both")


def forecast_stream(
    workload: str,
    stream: str | None,
    strategies: str,
    *,
    method: str = "dry-run",
    backend: str = "inductor",
    dry_backend: str | None = None,
    marks: Sequence[MarkSpec] = (),
    dynamic_sources: str | None = None,
    recompile_limit: int | None = None,
    results: Path | None = None,
    recorded: Path | None = None,
    function: str | None = None,
    compute: bool = True,
    progress: Progress = SILENT,
    recorded_backend: str | None = None,
) -> ForecastReport:
    """The forecast ``method`` makes (``recorded`` and ``both`` read the guards ``recorded``,
    a run's or probe's results file, holds); ``results``: a run whose measured compile times
    predict the compile seconds; ``compute`` False: a request that needs tensor values is
    unknown rather than computed for real. Dynamo runs in this process, on a scratch inductor
    cache; ``progress`` hears each strategy's dry run, request by request. ``recorded_backend``:
    the backend asked for with ``recorded``, which must be the recording's own (its guards are
    that backend's)."""
    from ..forecast import compare_forecasts, forecast, forecast_recorded

    with scratch_inductor_cache():  # Dynamo runs here: no torchinductor_* left
        from_records = dry = None
        if method != "dry-run":
            from_records = forecast_recorded(workload, stream, recorded, strategies, times=results,
                                             recompile_limit=recompile_limit, function=function)
            if recorded_backend is not None and recorded_backend != from_records.backend:
                whose = ("a probed program's guards, its own backend" if from_records.backend == "as probed"
                         else f"{from_records.backend}'s guards")
                raise OptionError(f"--backend {recorded_backend}: {recorded} recorded {whose} (--method recorded "
                                  "forecasts the backend it recorded): leave --backend out, or --method both to "
                                  "dry-run another backend beside it")
        if method != "recorded":
            dry = _watched_forecast(progress, lambda on_step: forecast(
                workload, stream, strategies, backend=backend, recompile_limit=recompile_limit, marks=tuple(marks),
                dynamic_sources=dynamic_sources, results=results, dry_backend=dry_backend, progress=on_step,
                compute=compute))
    if dry is not None and from_records is not None:
        if from_records.backend not in (dry.backend, "as probed"):  # said: the two forecast different compilers
            dry = dataclasses.replace(dry, notes=(*dry.notes, (
                f"the dry run forecasts {dry.backend} and the recording {from_records.backend}: they may differ "
                f"where the two backends' guards do; --backend {from_records.backend} compares like with like")))
        return compare_forecasts(dry, from_records)
    report = dry or from_records
    assert report is not None
    return report


def _watched_forecast(progress: Progress, work: Callable[[Callable[[Any], None]], ForecastReport]) -> ForecastReport:
    """Run ``work`` with a dry-run progress callback telling ``progress`` each strategy's dry
    run: the requests it has covered, its distinct shapes run and cache entries traced."""
    now: list[str] = []

    def on_step(step: Any) -> None:  # a compilescope.forecast.engine.Progress
        if now and now[0] != step.strategy:
            progress.finished(now.pop())
        if not now:
            now.append(step.strategy)
        computing = ", computing for real" if step.computed else ""
        entries = f"{step.traced} cache entr{'y' if step.traced == 1 else 'ies'} traced"
        progress.working(step.strategy, f"{step.shapes}/{step.distinct} distinct shapes run, {entries}{computing}, "
                         f"request {step.requests}/{step.stream_length}")

    progress.begin(None, "strategies")
    try:
        report = work(on_step)
        if now:
            progress.finished(now.pop())
        return report
    finally:
        progress.end()


def exit_status(report: ForecastReport) -> int:
    """1 when every request of every strategy forecast is to raise (as ``run`` exits 1 when
    every compiled trial failed): the workload as given cannot run at all; else 0."""
    rows = report.strategies
    return 1 if rows and all(s.requests and s.errors == len(s.requests) for s in rows) else 0
