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
from pathlib import Path
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
from ..strategies import PrepareContext, Prepared, get_strategy, limit_scope
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
        self.eager = prepared.eager or target
        self.capture = CompileCapture()
        self.compile_events: list[CompileEvent] = []
        self.graph_breaks: list[GraphBreak] = []
        self.limited_codes: list[Any] = []  # frames that hit the recompile limit

    def inputs(self, shape: Shape) -> tuple[tuple[Any, ...], dict[str, Any], dict[str, Any]]:
        args, kwargs = as_call_args(_to_device(seeded_inputs(self.workload, shape), self.measure.device))
        return args, kwargs, bind_arguments(self.target, args, kwargs)

    def _record(self, call_index: int | None, named: dict[str, Any], phase: str) -> Captured:
        got = self.capture.take(call_index, named, phase)
        self.compile_events.extend(got.compiles)
        self.graph_breaks.extend(got.graph_breaks)
        return got

    def _frame_locals(self, code: Any, args: tuple[Any, ...], kwargs: dict[str, Any], named: dict[str, Any]) -> dict[str, Any] | None:
        """The locals a compiled frame starts with, for checking its guards by hand."""
        pool = {"self": self.target, "args": args, "kwargs": kwargs, **named}
        count = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)
        params = code.co_varnames[:count]
        if not all(p in pool for p in params):
            return None
        return {p: pool[p] for p in params}

    def _ran_eagerly(self, got: Captured, args: tuple[Any, ...], kwargs: dict[str, Any], named: dict[str, Any]) -> bool | None:
        """Whether a call fell back to eager: its compile failed or hit the recompile limit,
        or a frame already past the limit had no cache entry accepting this call."""
        if not self.compiles:
            return None
        if any(e.failed for e in got.compiles):
            return True
        verdicts = []
        for code in self.limited_codes:
            f_locals = self._frame_locals(code, args, kwargs, named)
            verdicts.append(None if f_locals is None else compat.cache_entries_accept(code, f_locals))
        if any(v is False for v in verdicts):
            return True
        return None if any(v is None for v in verdicts) else False

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
            ran_eagerly = None if error else self._ran_eagerly(got, args, kwargs, named)
            self.limited_codes.extend(c for c in got.limit_hit_codes if c not in self.limited_codes)
            records.append(
                CallRecord(
                    index=index,
                    shape=shape,
                    latency_s=latency,
                    compile_ids=tuple(e.compile_id for e in got.compiles if e.forward),
                    error=error,
                    unattributed_reasons=got.unattributed,
                    ran_eagerly=ran_eagerly,
                    padded_shape=self.prepared.pad_shape(shape) if self.prepared.pad_shape else None,
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
        eager = self._call(self.eager, shape) if self.compiles else None
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
            expected = self._call(self.eager, shape)()
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
        "recompile_limit_default": str(compat.recompile_limit_value()),
    }


def run_trial(
    spec: TrialSpec,
    *,
    clocks: tuple[Clock, Clock] | None = None,
    save_artifacts: Path | None = None,
    load_artifacts: Path | None = None,
) -> TrialResult:
    """Run one trial in this process. Bad workloads raise; failures inside calls are recorded.

    ``load_artifacts`` (mega-cache start) loads ``torch.compiler`` cache artifacts before the
    first call and times it; ``save_artifacts`` writes them after the trial."""
    measure = spec.measure
    compat.reset()  # a trial never sees another's compiled code (free in a fresh process)
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

    def make_inputs(shape: Shape) -> tuple[tuple[Any, ...], dict[str, Any]]:
        return as_call_args(_to_device(seeded_inputs(workload, shape), measure.device))

    cache_load_s = None
    if load_artifacts is not None:
        data = load_artifacts.read_bytes()
        t0 = time.perf_counter()
        compat.load_cache_artifacts(data)
        cache_load_s = time.perf_counter() - t0
    with torch.set_grad_enabled(workload.grad):
        prepared = strategy.prepare(target, spec.options, PrepareContext(make_inputs, spec.stream))
    call_clock, sample_clock = clocks or clocks_for_device(measure.device)
    runner = _Runner(workload, target, prepared, strategy.compiles, measure, call_clock, sample_clock)
    try:
        with torch.set_grad_enabled(workload.grad), limit_scope(spec.options):
            calls = runner.stream(spec.stream)
            failed_shapes = {tuple(c.shape.items()) for c in calls if c.error is not None}
            shapes = [s for s in distinct_shapes(spec.stream) if tuple(s.items()) not in failed_shapes]
            steady = tuple(runner.steady(s) for s in shapes) if measure.steady else ()
            numerics = tuple(runner.numerics(s) for s in shapes) if measure.numerics and strategy.compiles else ()
    finally:
        if prepared.close is not None:
            prepared.close()
    artifacts_bytes = None
    if save_artifacts is not None:
        data_out = compat.save_cache_artifacts()
        if data_out is not None:
            save_artifacts.write_bytes(data_out)
            artifacts_bytes = len(data_out)
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
        cache_load_s=cache_load_s,
        artifacts_bytes=artifacts_bytes,
        notes=prepared.notes,
    )

