"""The dry-run forecast: the real Dynamo on the real code, on the ``meta`` device.

Each strategy runs as a trial does (:func:`compilescope.execute.trial.run_trial`, the same
strategy set-up, capture and records) with three differences: parameters and inputs live on
the ``meta`` device, so no kernel computes anything; the backend builds nothing (``eager``
and ``aot_eager`` as they are; for ``inductor``, :func:`compilescope.compat.dry_inductor_backend`:
inductor's lowering and kernel source on fake tensors, whose guards are inductor's own, with
no kernel compiled — or, asked for, ``aot_eager``, faster and blind to those guards); and
each distinct shape is traced once, in stream order. A request repeating an earlier shape repeats its outcome: Dynamo's
caches only grow within a process, so inputs one entry accepted are accepted again (a hit),
and a frame refused at the recompile limit stays refused (eager). Steady state and numerics
are not run.

Outcomes are read from the trial's records with :func:`request_outcomes`, the one rule a
real run's records are compared with as well.
"""

from __future__ import annotations

import dataclasses
import os
import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import compat
from ..analysis.outcomes import dry_run_word, limit_in_force, repeat_word
from ..errors import OptionError, ResultsError
from ..model import (
    CallRecord, CompileId, CompileRecord, MeasureOptions, RunResult, Shape, StrategyOptions, TrialResult, TrialSpec,
    shape_key,
)
from ..stream import distinct_shapes
from ..report.forecast import (
    CompileTimes, ForecastReport, ForecastRequest, ForecastGuard, Outcome, StrategyForecast,
)

DRY_BACKENDS = {"eager": "eager", "aot_eager": "aot_eager", "inductor": compat.DRY_INDUCTOR}
# what else a backend's forecast may be traced with: faster, and blind to the backend's own guards
FAST_DRY_BACKENDS = {"inductor": ("aot_eager",)}


def dry_backend_for(backend: str, dry_backend: str | None = None) -> str:
    """The backend a forecast for ``backend`` traces with, or a one-line error."""
    if backend not in DRY_BACKENDS:
        raise OptionError(f"forecast backend {backend!r}: use one of {', '.join(DRY_BACKENDS)}")
    allowed = (DRY_BACKENDS[backend], *FAST_DRY_BACKENDS.get(backend, ()))
    if dry_backend is None:
        return DRY_BACKENDS[backend]
    if dry_backend not in allowed:
        raise OptionError(f"--dry-backend {dry_backend!r} for backend {backend}: use {' or '.join(allowed)}")
    return dry_backend


def dry_note(backend: str, dry_backend: str) -> str | None:
    """What a forecast traced with ``dry_backend`` models of ``backend``'s decisions, when it is not all."""
    if dry_backend == compat.DRY_INDUCTOR:
        return ("inductor traced by its own lowering and kernel code generation on fake tensors (its guards "
                "modelled; no kernel built)")
    if dry_backend != backend:
        return f"traced with {dry_backend} on meta: guards {backend} adds in its own lowering are not modelled"
    return None
DEFAULT_FORECAST_STRATEGIES = ("default", "static", "dynamic")


@dataclass(frozen=True)
class Observed:
    """One request's outcome as a trial recorded it; ``eager_part``: some frame of the call
    ran eagerly (refused at the limit), whatever else it did."""

    outcome: Outcome
    eager_part: bool
    compile_ids: tuple[str, ...]
    guards: tuple[ForecastGuard, ...]
    error: str | None


def _guards(records: Sequence[CompileRecord]) -> tuple[ForecastGuard, ...]:
    """The guards that failed on a call's frames: those of a compile, and those of an attempt
    the recompile limit refused (why the request ran eagerly)."""
    rows = []
    for r in records:
        if r.guard_failures:
            rows += [ForecastGuard(g.failed_entry or "?", g.reason, g.kind, g.source, g.dim,
                              None if g.expected is None else str(g.expected),
                              None if g.actual is None else str(g.actual)) for g in r.guard_failures]
        else:
            rows += [ForecastGuard(entry, text, "other") for text, entry in zip(r.reasons, r.rejected_by)]
    return tuple(rows)


def request_outcomes(calls: Sequence[CallRecord], compiles: Sequence[CompileRecord]) -> list[Observed]:
    """Each stream call's outcome (:func:`~compilescope.analysis.outcomes.classify`) in the
    forecast's words (:func:`~compilescope.analysis.outcomes.forecast_word`): ``compile``
    when it compiled a frame, else ``eager`` when it ran eagerly, wholly or a frame of it,
    else ``hit``; ``error`` when it raised."""
    from ..analysis.outcomes import classify_calls, forecast_word

    out = []
    for c in classify_calls(calls, compiles):
        word = forecast_word(c.outcome, bool(c.made))
        out.append(Observed(word, c.outcome.ran_eagerly, c.compile_ids, _guards(c.records), c.call.error))
    return out


def dry_outcomes(trial: TrialResult) -> tuple[list[Observed], int]:
    """A dry trial's outcomes, with the requests past the recompile limit whose eager
    fallback raised on the meta device taken as what they are: eager (the limit refused the
    compile before the eager code ran; on real tensors it would have run). Also returns how
    many were."""
    observed = request_outcomes(trial.calls, trial.compiles)
    refused = [r.call_index for r in trial.compiles if r.phase == "stream" and r.refused and r.call_index is not None]
    if not refused:
        return observed, 0
    since, out, fallbacks = min(refused), [], 0
    for index, o in enumerate(observed):
        word = dry_run_word(o.outcome, bool(o.compile_ids), index >= since, o.error)
        if word != o.outcome:
            o = dataclasses.replace(o, outcome=word, eager_part=True, error=None)
            fallbacks += 1
        out.append(o)
    return out, fallbacks


def expand(stream: Sequence[Shape], traced: Sequence[Observed]) -> list[ForecastRequest]:
    """The whole stream's requests from the outcomes of its distinct shapes (in order of
    first appearance)."""
    firsts: dict[tuple[tuple[str, int], ...], Observed] = {}
    it = iter(traced)
    out = []
    for index, shape in enumerate(stream):
        key = shape_key(shape)
        if key in firsts:
            out.append(ForecastRequest(index, key, repeat_word(firsts[key].outcome, firsts[key].eager_part), "repeat"))
            continue
        seen = firsts[key] = next(it)
        out.append(ForecastRequest(index, key, seen.outcome, "traced", seen.compile_ids, seen.guards, seen.error))
    return out


# ----------------------------------------------------------------------------- compile times


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
    return ([r.compile_time_s for r in done if not r.compile_id.is_recompile],  # type: ignore[misc]
            [r.compile_time_s for r in done if r.compile_id.is_recompile])  # type: ignore[misc]


def _predicted(requests: list[ForecastRequest], times: CompileTimes | None) -> tuple[list[ForecastRequest], float | None]:
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


# ----------------------------------------------------------------------------- running


class _CacheDir:
    """A fresh, empty ``TORCHINDUCTOR_CACHE_DIR`` for one strategy, as a cold trial has:
    Dynamo's local profile-guided dynamism reads earlier frames' decisions from it."""

    def __enter__(self) -> str:
        self._tmp = tempfile.TemporaryDirectory(prefix="compilescope-forecast-")
        self._old = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = self._tmp.name
        return self._tmp.name

    def __exit__(self, *exc: Any) -> None:
        if self._old is None:
            os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
        else:
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = self._old
        self._tmp.cleanup()


def dry_trial(workload_ref: str, strategy: str, shapes: Sequence[Shape], options: StrategyOptions,
              threads: int | None = 1, sink: Any = None, dry_backend: str | None = None) -> TrialResult:
    """One strategy's trial on the meta device with a backend that builds nothing
    (:func:`dry_backend_for`). Like a trial it starts from ``torch.compiler.reset()``; the
    thread count is put back after. ``sink`` sees each call's records as it finishes (an
    exception it raises ends the dry run and is raised here). A graph the dry inductor could
    not lower is a note of the result."""
    import torch

    from ..execute.trial import run_trial

    dry = dataclasses.replace(options, backend=dry_backend_for(options.backend, dry_backend))
    spec = TrialSpec(workload_ref, strategy, "cold", tuple(dict(s) for s in shapes), dry,
                     MeasureOptions(device="meta", steady=False, numerics=False, threads=threads))
    before = torch.get_num_threads()
    loud = compat.quiet_recompile_limit_warnings()  # the forecast says where the limit refuses
    compat.dry_lowering_failures()
    with _CacheDir():
        try:
            result, _ = run_trial(spec, sink=sink)
        finally:
            loud()
            failed = compat.dry_lowering_failures()
            compat.reset()  # leave no meta graphs behind
            torch.set_num_threads(before)
    if failed:
        note = (f"inductor could not lower {len(failed)} graph(s) in the dry run (the first: {failed[0]}): they were "
                "traced as aot_eager, without inductor's own guards")
        result = dataclasses.replace(result, notes=(*result.notes, note))
    return result


def forecast_strategy(workload_ref: str, strategy: str, stream: Sequence[Shape], options: StrategyOptions,
                      results: tuple[RunResult, str | Path] | None = None,
                      dry_backend: str | None = None) -> StrategyForecast | str:
    """One strategy's forecast, or why the strategy does not apply to the workload."""
    started = time.perf_counter()
    distinct = distinct_shapes(tuple(stream))
    trial = dry_trial(workload_ref, strategy, distinct, options, dry_backend=dry_backend)
    notes = list(trial.notes)
    if trial.status == "unavailable":
        return f"{strategy} is unavailable: {trial.error}"
    observed, fallbacks = dry_outcomes(trial)
    if fallbacks:
        notes.append(f"{fallbacks} request(s) past the recompile limit are predicted eager: their eager fallback "
                     "cannot run on the meta device, but the limit refused their compile first")
    if len(observed) != len(distinct):  # the trial stopped early (it never does without a crash)
        raise OptionError(f"the dry run of {strategy!r} recorded {len(observed)} of {len(distinct)} shapes")
    requests = expand(stream, observed)
    times = measured_compile_times(results[0], results[1], strategy) if results is not None else None
    if results is not None and times is None:
        notes.append(f"{results[1]} has no measured compile times for {strategy!r}: no compile seconds predicted")
    requests, predicted = _predicted(requests, times)
    counts = {o: sum(1 for r in requests if r.outcome == o) for o in ("hit", "compile", "eager", "error")}
    first_error = next((r.error for r in requests if r.error), None)
    if first_error:
        notes.append(f"{counts['error']} request(s) could not run on the meta device; the first: {first_error}")
    limit = limit_in_force(options.recompile_limit)
    return StrategyForecast(
        strategy=strategy, requests=tuple(requests), hits=counts["hit"], compiles=counts["compile"],
        eager=counts["eager"], errors=counts["error"], traced=len(distinct), recompile_limit=limit,
        dry_wall_s=time.perf_counter() - started,
        stalls=tuple(r.index for r in requests if r.outcome == "compile"),
        predicted_compile_s=predicted, compile_times=times, notes=tuple(notes),
    )


def forecast(
    workload: str,
    stream: str | Sequence[Shape] | None = None,
    strategies: str | Sequence[str] = DEFAULT_FORECAST_STRATEGIES,
    *,
    backend: str = "inductor",
    recompile_limit: int | None = None,
    marks: Sequence[Any] = (),
    results: str | Path | None = None,
    dry_backend: str | None = None,
) -> ForecastReport:
    """Predict, per request of ``stream``, what each strategy's ``torch.compile`` does: hit,
    compile (with the guards that fail) or eager at the recompile limit. Raises a
    :class:`~compilescope.errors.CompilescopeError` on bad input.

    Each strategy's dry run starts, as a trial does, from ``torch.compiler.reset()``: called
    in a process that has compiled code of its own, that code is compiled again on its next
    call. ``dry_backend``: what to trace with instead of the default (:data:`FAST_DRY_BACKENDS`)."""
    from ..prepare import prepare_run

    traced = dry_backend_for(backend, dry_backend)
    if results is not None and not Path(results).is_file():
        raise OptionError(f"--results {str(results)!r} is not a file")
    options = StrategyOptions(backend=backend, recompile_limit=recompile_limit, marks=tuple(marks))
    started = time.perf_counter()
    loaded, base, names = prepare_run(workload, stream, strategies, options=options,
                                      measure=MeasureOptions(device="cpu"))
    from ..strategies import get_strategy

    skipped = [n for n in names if not get_strategy(n).compiles]
    compiled = [n for n in names if get_strategy(n).compiles]
    if not compiled:
        raise OptionError("no compiling strategy to forecast (eager compiles nothing)")
    measured = (load_run(results, base.workload), results) if results is not None else None
    done = [forecast_strategy(base.workload, n, base.stream, options, measured, traced) for n in compiled]
    rows = tuple(d for d in done if isinstance(d, StrategyForecast))
    notes = [d for d in done if isinstance(d, str)]
    if not rows:
        raise OptionError("; ".join(notes))
    if (note := dry_note(backend, traced)) is not None:
        notes.append(note)
    if [s for s in skipped if s != "eager" or "eager" in _asked(strategies)]:
        notes.append(f"not forecast (they compile nothing): {', '.join(skipped)}")
    return ForecastReport(
        workload=base.workload, stream_length=len(base.stream), distinct_shapes=len(distinct_shapes(base.stream)),
        backend=backend, dry_backend=traced, torch_version=compat.torch_version(),
        wall_s=time.perf_counter() - started, strategies=rows, notes=tuple(notes),
    )


def _asked(strategies: str | Sequence[str]) -> list[str]:
    text = strategies if isinstance(strategies, str) else ",".join(strategies)
    return [s.strip() for s in text.split(",")]
