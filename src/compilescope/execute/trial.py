"""One trial, in this process: the stream, then warmed steady state, then numerics.

Order matters. The stream runs first, on a fresh process, so its first call is the true
cold (or warm-cache) start and every later compile is attributed to the request that caused
it. Steady state and numerics come after, per distinct shape, and any compile they trigger
is recorded with its phase instead of being mixed into the stream.
"""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Callable
from typing import Any

import torch

from .. import compat
from ..analysis.numerics import compare_outputs
from ..collect.capture import Captured, CompileCapture
from ..collect.timer import Clock, clocks_for_device
from ..model import (
    CallRecord,
    CompileEvent,
    GraphBreak,
    MeasureOptions,
    NumericsCheck,
    Shape,
    SteadyState,
    TrialResult,
    TrialSpec,
)
from ..strategies import Prepared, get_strategy
from ..stream import distinct_shapes
from ..workload import Workload, as_call_args, bind_arguments, build_target, load_workload, seeded_inputs


def _to_device(value: Any, device: str) -> Any:
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, dict):
        return {k: _to_device(v, device) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_to_device(v, device) for v in value)
    return value


def _error_text(exc: BaseException) -> str:
    first = str(exc).strip().split("\n", 1)[0]
    return f"{type(exc).__name__}: {first}"[:500]


class _Runner:
    """Holds one trial's callables and records; the public entry is :func:`run_trial`."""

    def __init__(
        self,
        workload: Workload,
        target: Callable[..., Any],
        prepared: Prepared,
        compiles: bool,
        measure: MeasureOptions,
        call_clock: Clock,
        sample_clock: Clock,
    ) -> None:
        self.workload, self.target, self.prepared, self.compiles = workload, target, prepared, compiles
        self.measure, self.call_clock, self.sample_clock = measure, call_clock, sample_clock
        self.capture = CompileCapture()
        self.compile_events: list[CompileEvent] = []
        self.graph_breaks: list[GraphBreak] = []

    def inputs(self, shape: Shape) -> tuple[tuple[Any, ...], dict[str, Any], dict[str, Any]]:
        args, kwargs = as_call_args(_to_device(seeded_inputs(self.workload, shape), self.measure.device))
        return args, kwargs, bind_arguments(self.target, args, kwargs)

    def _record(self, call_index: int | None, named: dict[str, Any], phase: str) -> Captured:
        got = self.capture.take(call_index, named, phase)
        self.compile_events.extend(got.compiles)
        self.graph_breaks.extend(got.graph_breaks)
        return got

    def stream(self, stream: tuple[Shape, ...]) -> list[CallRecord]:
        records = []
        for index, shape in enumerate(stream):
            args, kwargs, named = self.inputs(shape)
            latency: float | None = None
            error = None
            try:
                if self.prepared.before_call is not None:
                    self.prepared.before_call(named)
                _, latency = self.call_clock.time_call(self.prepared.fn, *args, **kwargs)
            except Exception as exc:  # a failing call is a result, not a crash
                error = _error_text(exc)
            got = self._record(index, named, "stream")
            records.append(
                CallRecord(
                    index=index,
                    shape=shape,
                    latency_s=latency,
                    compile_ids=tuple(e.compile_id for e in got.compiles if e.forward),
                    error=error,
                    unattributed_reasons=got.unattributed,
                )
            )
        return records

    def _call(self, fn: Callable[..., Any], shape: Shape) -> Callable[[], Any]:
        args, kwargs, named = self.inputs(shape)
        before = self.prepared.before_call if fn is self.prepared.fn else None

        def call() -> Any:
            if before is not None:
                before(named)
            return fn(*args, **kwargs)

        return call

    def steady(self, shape: Shape) -> SteadyState:
        m = self.measure
        compiled = self._call(self.prepared.fn, shape)
        eager = self._call(self.target, shape) if self.compiles else None
        try:
            for _ in range(m.warmup):
                compiled()
                if eager is not None:
                    eager()
            compiled_s: list[float] = []
            eager_s: list[float] = []
            deadline = time.perf_counter() + m.budget_s
            # Interleave compiled and eager samples so drift on a shared machine hits both.
            while len(compiled_s) < m.samples and (
                len(compiled_s) < m.min_samples or time.perf_counter() < deadline
            ):
                compiled_s.append(self.sample_clock.time_call(compiled)[1])
                if eager is not None:
                    eager_s.append(self.sample_clock.time_call(eager)[1])
        except Exception as exc:
            self._record(None, {}, "steady")
            return SteadyState(shape, m.warmup, (), (), _error_text(exc))
        self._record(None, {}, "steady")
        return SteadyState(shape, m.warmup, tuple(compiled_s), tuple(eager_s))

    def numerics(self, shape: Shape) -> NumericsCheck:
        try:
            expected = self._call(self.target, shape)()
            actual = self._call(self.prepared.fn, shape)()
        except Exception as exc:
            self._record(None, {}, "numerics")
            return NumericsCheck(shape, None, None, None, None, None, False, _error_text(exc))
        self._record(None, {}, "numerics")
        return compare_outputs(shape, expected, actual)


def _env(measure: MeasureOptions) -> dict[str, str]:
    return {
        "torch": compat.torch_version(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "threads": str(torch.get_num_threads()),
        "device": measure.device,
        "cache_dir": os.environ.get("TORCHINDUCTOR_CACHE_DIR", ""),
        "pid": str(os.getpid()),
    }


def run_trial(spec: TrialSpec, *, clocks: tuple[Clock, Clock] | None = None) -> TrialResult:
    """Run one trial in this process. Bad workloads raise; failures inside calls are recorded."""
    measure = spec.measure
    if measure.threads is not None:
        torch.set_num_threads(measure.threads)
    started = time.perf_counter()
    workload = load_workload(spec.workload)
    strategy = get_strategy(spec.strategy)
    target = build_target(workload)
    if isinstance(target, torch.nn.Module):
        target = target.to(measure.device)
    build_s = time.perf_counter() - started
    if strategy.unavailable is not None:
        reason = strategy.unavailable(target, spec.options)
        if reason is not None:
            return TrialResult(spec, "unavailable", error=reason, env=_env(measure), build_s=build_s)
    prepared = strategy.prepare(target, spec.options)
    call_clock, sample_clock = clocks or clocks_for_device(measure.device)
    runner = _Runner(workload, target, prepared, strategy.compiles, measure, call_clock, sample_clock)
    with torch.set_grad_enabled(workload.grad):
        calls = runner.stream(spec.stream)
        failed_shapes = {tuple(c.shape.items()) for c in calls if c.error is not None}
        shapes = [s for s in distinct_shapes(spec.stream) if tuple(s.items()) not in failed_shapes]
        steady = tuple(runner.steady(s) for s in shapes) if measure.steady else ()
        numerics = tuple(runner.numerics(s) for s in shapes) if measure.numerics and strategy.compiles else ()
    return TrialResult(
        spec=spec,
        status="ok",
        calls=tuple(calls),
        compiles=tuple(runner.compile_events),
        graph_breaks=tuple(runner.graph_breaks),
        steady=steady,
        numerics=numerics,
        env=_env(measure),
        build_s=build_s,
    )

