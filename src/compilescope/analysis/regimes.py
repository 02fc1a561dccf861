"""The three time regimes and the per-strategy accounting, derived from raw trial records.

* cold / warm-cache start: the first call of a trial's stream (a fresh process);
* shape-change latency: the stream calls whose shape differs from the previous request,
  with the compiles and guard failures they caused;
* warmed steady state: interleaved samples per distinct shape, compiled and eager.

Everything here is a pure function of :class:`TrialResult`/:class:`RunResult` records.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from ..model import (
    CallRecord,
    CompileEvent,
    GuardFailure,
    NumericsCheck,
    RunResult,
    Shape,
    SteadyState,
    TrialResult,
    shape_key,
)
from ..stream import distinct_shapes

IQR_WARN_THRESHOLD = 0.10  # IQR/median above this marks a steady-state figure as noisy


@dataclass(frozen=True)
class Stats:
    n: int
    median: float
    q1: float
    q3: float

    @property
    def iqr(self) -> float:
        return self.q3 - self.q1

    @property
    def relative_iqr(self) -> float:
        return self.iqr / self.median if self.median > 0 else 0.0

    @property
    def noisy(self) -> bool:
        return self.relative_iqr > IQR_WARN_THRESHOLD


def summarize_samples(samples: Sequence[float]) -> Stats | None:
    if not samples:
        return None
    if len(samples) == 1:
        return Stats(1, samples[0], samples[0], samples[0])
    q1, median, q3 = statistics.quantiles(samples, n=4, method="inclusive")
    return Stats(len(samples), median, q1, q3)


@dataclass(frozen=True)
class ShapeRow:
    """One distinct shape under one trial."""

    shape: Shape
    requests: int
    first_call_index: int
    first_call_s: float | None
    compiles: tuple[CompileEvent, ...]
    error: str | None
    steady: Stats | None
    eager: Stats | None
    numerics: NumericsCheck | None
    steady_error: str | None = None

    @property
    def compiled(self) -> bool:
        return bool(self.compiles)

    @property
    def cause(self) -> str:
        """Why the first call of this shape compiled: the first parsed guard failure."""
        if not self.compiles:
            return ""
        for event in self.compiles:
            if event.reasons:
                return event.reasons[0].describe()
        return "first compile" if self.compiles[0].compile_id.endswith("/0") else "compiled"

    @property
    def speedup(self) -> float | None:
        if self.steady is None or self.eager is None or self.steady.median <= 0:
            return None
        return self.eager.median / self.steady.median


@dataclass(frozen=True)
class ShapeChange:
    call: CallRecord
    previous: Shape
    compiles: tuple[CompileEvent, ...]

    @property
    def reasons(self) -> tuple[GuardFailure, ...]:
        return tuple(r for e in self.compiles for r in e.reasons)


@dataclass(frozen=True)
class TrialSummary:
    trial: TrialResult
    compiles: int
    recompiles: int
    failed_compiles: int
    compile_s: float
    graph_breaks: int
    first_call_s: float | None
    stream_s: float | None
    eager_stream_s: float | None
    break_even_request: int | None
    numerics_failed: int
    errors: int
    noisy_shapes: int

    @property
    def label(self) -> str:
        spec = self.trial.spec
        return spec.strategy if spec.cache == "none" else f"{spec.strategy} ({spec.cache})"


def stream_compiles(trial: TrialResult) -> dict[int, tuple[CompileEvent, ...]]:
    by_call: dict[int, list[CompileEvent]] = {}
    for event in trial.compiles:
        if event.call_index is not None and event.forward:
            by_call.setdefault(event.call_index, []).append(event)
    return {k: tuple(v) for k, v in by_call.items()}


def shape_rows(trial: TrialResult) -> list[ShapeRow]:
    compiles = stream_compiles(trial)
    steady = {shape_key(s.shape): s for s in trial.steady}
    numerics = {shape_key(n.shape): n for n in trial.numerics}
    rows = []
    for shape in distinct_shapes(tuple(c.shape for c in trial.calls)):
        key = shape_key(shape)
        calls = [c for c in trial.calls if shape_key(c.shape) == key]
        first = calls[0]
        state: SteadyState | None = steady.get(key)
        rows.append(
            ShapeRow(
                shape=shape,
                requests=len(calls),
                first_call_index=first.index,
                first_call_s=first.latency_s,
                compiles=tuple(e for c in calls for e in compiles.get(c.index, ())),
                error=next((c.error for c in calls if c.error), None),
                steady=summarize_samples(state.compiled_s) if state else None,
                eager=summarize_samples(state.eager_s) if state else None,
                numerics=numerics.get(key),
                steady_error=state.error if state else None,
            )
        )
    return rows


def shape_changes(trial: TrialResult) -> list[ShapeChange]:
    compiles = stream_compiles(trial)
    changes = []
    for prev, call in zip(trial.calls, trial.calls[1:]):
        if call.shape != prev.shape:
            changes.append(ShapeChange(call, prev.shape, compiles.get(call.index, ())))
    return changes


def cumulative(latencies: Sequence[float | None]) -> list[float]:
    total, out = 0.0, []
    for value in latencies:
        total += value or 0.0
        out.append(total)
    return out


def break_even_request(strategy_calls: Sequence[CallRecord], eager_calls: Sequence[CallRecord]) -> int | None:
    """The number of requests after which the strategy's cumulative wall time is at or below
    eager's and stays there to the end of the stream; ``None`` if that never happens."""
    n = min(len(strategy_calls), len(eager_calls))
    if n == 0:
        return None
    mine = cumulative([c.latency_s for c in strategy_calls[:n]])
    base = cumulative([c.latency_s for c in eager_calls[:n]])
    result = None
    for i in range(n - 1, -1, -1):
        if mine[i] <= base[i]:
            result = i + 1
        else:
            break
    return result


def summarize_trial(trial: TrialResult, eager: TrialResult | None) -> TrialSummary:
    forward = [e for e in trial.compiles if e.forward]
    latencies = [c.latency_s for c in trial.calls]
    eager_ok = eager is not None and eager.ok and len(eager.calls) == len(trial.calls)
    rows = shape_rows(trial)
    return TrialSummary(
        trial=trial,
        compiles=len(forward),
        recompiles=sum(e.is_recompile for e in forward),
        failed_compiles=sum(e.failed for e in forward),
        compile_s=sum(e.compile_time_s or 0.0 for e in trial.compiles),
        graph_breaks=len({(b.reason, b.filename, b.line) for b in trial.graph_breaks}),
        first_call_s=trial.calls[0].latency_s if trial.calls else None,
        stream_s=sum(v for v in latencies if v is not None) if trial.calls else None,
        eager_stream_s=sum(c.latency_s or 0.0 for c in eager.calls) if eager_ok and eager else None,
        break_even_request=break_even_request(trial.calls, eager.calls) if eager_ok and eager else None,
        numerics_failed=sum(1 for r in rows if r.numerics is not None and not r.numerics.passed),
        errors=sum(1 for c in trial.calls if c.error),
        noisy_shapes=sum(1 for r in rows for s in (r.steady, r.eager) if s is not None and s.noisy),
    )


def eager_trial(result: RunResult) -> TrialResult | None:
    return next((t for t in result.trials if t.spec.strategy == "eager" and t.ok), None)


def summarize_run(result: RunResult) -> list[TrialSummary]:
    eager = eager_trial(result)
    return [summarize_trial(t, eager) for t in result.trials]
