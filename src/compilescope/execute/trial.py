"""One trial, in this process: the stream, then warmed steady state, then numerics.

Order matters. The stream runs first, on a fresh process, so its first call is the true
cold (or warm-cache) start and every later compile is attributed to the request that caused
it. Steady state and numerics come after, per distinct shape, and any compile they trigger
is recorded with its phase instead of being mixed into the stream.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import platform
import re
import sys
import sysconfig
import time
import traceback
from collections import Counter
from collections.abc import Callable
from typing import Any

import torch

from .. import __version__, compat
from ..analysis.numerics import compare_outputs, frozen_outputs
from ..collect.capture import CaptureSession, Polled
from ..collect.guard_cost import measure_guard_cost
from ..collect.soundness import soundness_checks
from ..collect.graphs import GraphRunLog, frames_of
from ..collect.records import TargetInfo
from ..collect.timer import Clock, clocks_for_device
from ..leaves import changed_inputs, input_state, is_plain, map_tensors, resolve, source, walk
from ..torchtext import headline
from ..model import (
    CallRecord,
    CompileRecord,
    ErrorInfo,
    GraphBreak,
    GuardCost,
    SoundnessCheck,
    MeasureOptions,
    NumericsCheck,
    ProcessStart,
    Shape,
    SteadyState,
    TrialEnv,
    TrialResult,
    TrialSpec,
    call_arguments,
    shape_key,
    trial_status,
)
from ..strategies import PrepareContext, Prepared, get_strategy, limit_scope
from ..stream import distinct_shapes
from ..workload import Workload, bind_arguments, build_target, load_workload, seeded_inputs
from .environment import cpu_frequency, load_average, recorded_variables, usable_cpus


def _to_device(value: Any, device: str) -> Any:
    """The inputs on ``device``: tensors inside dicts, lists, tuples and objects (a cache's
    layers) included."""
    if device == "cpu" and not any(t.device.type != "cpu" for _, t in walk(value).tensors()):
        return value
    return map_tensors(value, lambda t: t.to(device))


MESSAGE_LIMIT = 4000  # characters of an exception's message kept in the records
_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
_OWN_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_STDLIB_DIR = os.path.abspath(sysconfig.get_paths()["stdlib"]) + os.sep


def _package_dir(name: str) -> str | None:
    try:
        spec = importlib.util.find_spec(name)  # locates without importing it
    except (ImportError, ValueError):
        return None
    origin = spec.origin if spec is not None else None
    return os.path.dirname(os.path.abspath(origin)) + os.sep if origin else None


# compiler code that is not the user's: PyTorch, this package, the standard library and what
# PyTorch's compilers run on
_NOT_USER = tuple(d for d in (_TORCH_DIR, _OWN_DIR, _STDLIB_DIR, *map(_package_dir, ("sympy", "triton"))) if d)
# where a PyTorch error names the op it failed on, most specific first: an Inductor lowering's
# "  target: aten.x.default", an FX node's "call_function[target=torch.ops.aten.x.default]",
# any other line naming an op overload
_OP_PATTERNS = (
    re.compile(r"^\s*target:\s*\S"),
    re.compile(r"call_function\[target="),
    re.compile(r"\b(?:aten|prims|torch\.ops\.\w+)\.[A-Za-z_]\w*|\baten::[A-Za-z_]\w*"),
)
_USER_CODE_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+), in (\S+)')


def _chain(exc: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and seen not in out and len(out) < 8:
        out.append(seen)
        seen = seen.__cause__ or seen.__context__
    return out


def _op_line(chain: list[BaseException]) -> str | None:
    texts = [str(e) for e in chain]
    for pattern in _OP_PATTERNS:
        for text in texts:
            for line in text.splitlines():
                if pattern.search(line):
                    return line.strip()[:300]
    return None


def _is_user_file(filename: str) -> bool:
    path = os.path.abspath(filename)
    return not (filename.startswith("<") or path.startswith(_NOT_USER))


def _user_frame(chain: list[BaseException]) -> str | None:
    """The last frame in the user's code: the innermost of Dynamo's "from user code:" stack
    when the message has one, else the innermost traceback frame outside PyTorch, this
    package and the standard library."""
    for e in chain:
        lines = str(e).splitlines()
        if "from user code:" in lines:
            frames = [m for ln in lines[lines.index("from user code:"):] if (m := _USER_CODE_FRAME.match(ln))]
            if frames:
                name, line, fn = frames[-1].groups()
                return f"{name}:{line} in {fn}"
    for e in reversed(chain):  # the innermost exception was raised deepest
        frames = [f for f in traceback.extract_tb(e.__traceback__) if _is_user_file(f.filename)]
        if frames:
            return f"{frames[-1].filename}:{frames[-1].lineno} in {frames[-1].name}"
    return None


def error_info(exc: BaseException) -> ErrorInfo:
    """The whole exception: type, full message, the op line and the last user frame."""
    chain = _chain(exc)
    message = str(exc).strip()
    if len(message) > MESSAGE_LIMIT:
        message = message[:MESSAGE_LIMIT] + f"… ({len(message) - MESSAGE_LIMIT} more characters)"
    return ErrorInfo(type(exc).__name__, message, _op_line(chain), _user_frame(chain))


def _error_text(exc: BaseException) -> str:
    return headline(type(exc).__name__, str(exc))


GUARD_ROUNDS = 20  # guard-check samples per entry at most (each after its own real call)
CallSink = Callable[[CallRecord, tuple[CompileRecord, ...], tuple[GraphBreak, ...]], None]


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
        graphs: GraphRunLog,
        capture: CaptureSession,
    ) -> None:
        self.workload, self.target, self.prepared, self.compiles = workload, target, prepared, compiles
        self.measure, self.call_clock, self.sample_clock = measure, call_clock, sample_clock
        self.eager = prepared.eager or target
        self.graphs, self.capture = graphs, capture
        self.target_info = TargetInfo(prepared.named_target if prepared.named_target is not None else target)

    def inputs(self, shape: Shape) -> tuple[tuple[Any, ...], dict[str, Any], dict[str, Any]]:
        args, kwargs = call_arguments(_to_device(seeded_inputs(self.workload, shape), self.measure.device))
        return args, kwargs, bind_arguments(self.target, args, kwargs)

    def _poll(self, call_index: int | None, named: dict[str, Any], phase: str) -> Polled:
        got = self.capture.poll(call_index=call_index, phase=phase, arguments=named, target=self.target_info)
        self.graphs.note(got.compiles)
        return got

    def stream(self, stream: tuple[Shape, ...], sink: CallSink | None = None, phase: str = "stream") -> list[CallRecord]:
        records = []
        skip = getattr(self.call_clock, "skip_next", None)  # a dry run's clock skips the requests it copies
        meet = getattr(self.call_clock, "meet_workload", None)  # and reads what the workload's functions keep
        if meet is not None:
            meet(self.workload)
        for index, shape in enumerate(stream):
            if skip is not None and skip():
                continue
            args, kwargs, named = self.inputs(shape)
            latency: float | None = None
            error = None
            info = None
            self.graphs.start()
            try:
                if self.prepared.before_call is not None:
                    self.prepared.before_call(named)
                _, latency = self.call_clock.time_call(self.prepared.fn, *args, **kwargs)
            except Exception as exc:  # a failing call is a result, not a crash
                error, info = _error_text(exc), error_info(exc)
            ran = self.graphs.taken()
            got = self._poll(index, named, phase)
            failed = next((r for r in got.compiles if r.failed), None)
            if info is not None and info.user_frame is None and failed is not None:
                # a compile-time error has no user frame on the Python stack: the frame being compiled is it
                info = dataclasses.replace(info, user_frame=f"{failed.display_location} in {failed.display_name}")
            record = CallRecord(
                index=index,
                shape=shape,
                latency_s=latency,
                compile_ids=tuple(str(e.compile_id) for e in got.compiles if e.is_compile),
                error=error,
                unattributed_reasons=got.unattributed,
                ran_eagerly=None if error or not self.compiles else self.graphs.ran_eagerly(ran),
                padded_shape=self.prepared.pad_shape(shape) if self.prepared.pad_shape else None,
                graphs_run=ran if self.compiles else None,
                error_info=info,
            )
            records.append(record)
            if sink is not None:
                sink(record, got.compiles, got.graph_breaks)
        return records

    def _call(self, fn: Callable[..., Any], shape: Shape) -> Callable[[], Any]:
        args, kwargs, named = self.inputs(shape)
        before = self.prepared.before_call if fn is self.prepared.fn else None

        def call() -> Any:
            if before is not None:
                before(named)
            return fn(*args, **kwargs)

        call.named = named  # type: ignore[attr-defined]
        return call

    def steady(self, shape: Shape) -> SteadyState:
        """Warmed samples of ``shape``, compiled and eager interleaved. A call that changes its
        inputs (a decode step extending the cache it is passed) is detected on its first call;
        every later call then gets inputs made afresh (outside the timed call), so no sample
        runs on a state grown by the samples before it. ``ran_eagerly`` is True when any
        compiled sample ran no compiled graph. A sample during which Dynamo compiled a frame
        (or failed to) is no steady sample: it is dropped and counted (``compiling``), at
        most :attr:`MeasureOptions.samples` of them; one that ran none of the graphs of a frame
        refused or failed since it compiled is counted (``partly_eager``)."""
        m = self.measure
        compiled = self._call(self.prepared.fn, shape)
        eager = self._call(self.eager, shape) if self.compiles else None
        changed: tuple[str, ...] = ()
        checked = False
        eager_samples = compiling = partly = 0
        stale = False  # the inputs made afresh hold the very tensors the last call changed

        def run_compiled() -> tuple[float, bool, bool, bool]:
            nonlocal compiled, changed, checked, stale
            if changed:
                fresh = self._call(self.prepared.fn, shape)
                stale = stale or _carries_state(compiled.named, fresh.named, changed)  # type: ignore[attr-defined]
                compiled = fresh
            before = None if checked else input_state(compiled.named)  # type: ignore[attr-defined]
            count = compat.compilation_metrics_count()
            self.graphs.start()
            seconds = self.sample_clock.time_call(compiled)[1]
            ran = self.graphs.taken()
            busy = False  # a sample that compiled (a refused attempt is no compile: that sample ran eagerly)
            if compat.compilation_metrics_count() != count:  # which frame was refused or failed, too
                busy = any(r.is_compile for r in self._poll(None, {}, "steady").compiles)
            ran_eagerly = bool(self.graphs.ran_eagerly(ran))
            # a frame with a compiled graph, refused or failed since, that this sample ran none of
            # (as for a stream call: :func:`~compilescope.collect.graphs.eager_frames`)
            part = not ran_eagerly and bool(self.graphs.blocked & frames_of(self.graphs.compiled) - frames_of(ran))
            if before is not None:
                checked = True
                changed = changed_inputs(before, input_state(compiled.named))  # type: ignore[attr-defined]
            return seconds, ran_eagerly, busy, part

        def run_eager() -> float:
            nonlocal eager
            if changed:
                eager = self._call(self.eager, shape)
            return self.sample_clock.time_call(eager)[1]  # type: ignore[arg-type]

        try:
            for _ in range(m.warmup):
                run_compiled()
                if eager is not None:
                    run_eager()
            compiled_s: list[float] = []
            eager_s: list[float] = []
            deadline = time.perf_counter() + m.budget_s
            # Interleave compiled and eager samples so drift on a shared machine hits both.
            while len(compiled_s) < m.samples and compiling < m.samples and (
                len(compiled_s) < m.min_samples or time.perf_counter() < deadline
            ):
                seconds, ran_eagerly, busy, part = run_compiled()
                if busy:
                    compiling += 1
                    continue
                compiled_s.append(seconds)
                eager_samples += ran_eagerly
                partly += part
                if eager is not None:
                    eager_s.append(run_eager())
        except Exception as exc:
            self._poll(None, {}, "steady")
            return SteadyState(shape, m.warmup, (), (), _error_text(exc), changed_inputs=changed)
        self._poll(None, {}, "steady")
        ran = (eager_samples > 0) if self.compiles and self.graphs.told else None
        return SteadyState(shape, m.warmup, tuple(compiled_s), tuple(eager_s), ran_eagerly=ran, changed_inputs=changed,
                           compiling=compiling, partly_eager=partly, stale_inputs=stale)

    def guards(self, shape: Shape, parts: bool, changes_inputs: bool = False) -> GuardCost:
        """What the guards charge a call of ``shape``: timed after its steady state, apart
        from the steady samples (:mod:`compilescope.collect.guard_cost`); ``parts``: which
        sources cost, too (done for the stream's most requested shape). A call that changes
        its inputs (a decode step growing its cache) is made on inputs made afresh each time,
        its guards timed on them as the lookup read them."""
        m = self.measure
        fresh = (lambda: self._call(self.prepared.fn, shape)) if changes_inputs else None
        cost = measure_guard_cost(self._call(self.prepared.fn, shape), shape, min_rounds=min(m.min_samples, m.samples),
                                  max_rounds=min(m.samples, GUARD_ROUNDS), budget_s=m.budget_s / 4, parts=parts,
                                  fresh=fresh)
        self._poll(None, {}, "steady")
        return cost

    def soundness(self, shape: Shape) -> list[SoundnessCheck]:
        """A guard filter's dropped guards, changed one kind at a time on ``shape``: does the
        compiled call go stale against eager (:mod:`compilescope.collect.soundness`)?"""
        dropped = self.prepared.dropped_guards or []
        checks = soundness_checks(dropped, shape, self._call(self.prepared.fn, shape), self._call(self.eager, shape))
        self._poll(None, {}, "soundness")
        return checks

    def numerics(self, shape: Shape) -> NumericsCheck:
        restore = self.workload.snapshot() if self.workload.snapshot is not None else None

        def from_same_state(fn: Callable[..., Any]) -> Any:
            if restore is not None:
                restore()
            return frozen_outputs(self._call(fn, shape)())  # copied now: a later call may write it in place

        try:
            expected = from_same_state(self.eager)
            again = from_same_state(self.eager)
        except Exception as exc:  # nothing to compare against: no verdict on the compiled code
            self._poll(None, {}, "numerics")
            return NumericsCheck(shape, None, None, None, None, None, False, f"eager raised: {_error_text(exc)}",
                                 comparable=False, unjudged="eager raised")
        try:
            self.graphs.start()
            actual = from_same_state(self.prepared.fn)
            if restore is not None:
                restore()
        except Exception as exc:
            self._poll(None, {}, "numerics")
            return NumericsCheck(shape, None, None, None, None, None, False, _error_text(exc))
        ran = self.graphs.taken()
        self._poll(None, {}, "numerics")
        try:
            check = dataclasses.replace(compare_outputs(shape, expected, actual), ran_eagerly=self.graphs.ran_eagerly(ran))
            repeat = compare_outputs(shape, expected, again)
        except Exception as exc:  # outputs no comparison can read: said, and the trial goes on
            return NumericsCheck(shape, None, None, None, None, None, False, f"could not compare: {_error_text(exc)}",
                                 ran_eagerly=self.graphs.ran_eagerly(ran), comparable=False, unjudged="not comparable")
        if not repeat.passed and repeat.comparable:  # a training step, dropout, sampling: eager is no fixed reference
            detail = "eager gave different outputs on two calls with the same input (state or randomness)"
            return dataclasses.replace(check, comparable=False, passed=False, detail=detail, unjudged="eager varies")
        return check


def _carries_state(old: dict[str, Any], new: dict[str, Any], changed: tuple[str, ...]) -> bool:
    """Whether inputs made afresh hold, at a path the call changed, what the old ones held
    there: the same container, or a tensor on the same storage (one global buffer, or views of
    it) — the call's changes then carry over to the next sample."""
    paths = set(changed)
    for name, value in old.items():
        for steps, _ in walk(value).items:
            if source(name, steps) not in paths or name not in new:
                continue
            try:
                before, after = resolve(value, steps), resolve(new[name], steps)
            except LookupError:
                continue
            if isinstance(before, torch.Tensor) and isinstance(after, torch.Tensor):
                if _storage(before) is not None and _storage(before) == _storage(after):
                    return True
            elif before is after and not is_plain(before):  # one container (an int is shared by every object)
                return True
    return False


def _storage(t: torch.Tensor) -> int | None:
    try:
        return t.untyped_storage().data_ptr() or None  # 0: an empty storage, shared by nothing
    except Exception:  # a tensor with no storage of its own (a subclass, meta)
        return None


def _through_step(step: Callable[..., Any], prepared: Prepared, target: Callable[..., Any]) -> Prepared:
    """Run each request as the workload's step (e.g. forward, loss, backward, optimizer step)
    around the compiled target, and the eager reference as the same step around the eager one."""
    compiled, eager = prepared.fn, prepared.eager or target

    def run_compiled(*args: Any, **kwargs: Any) -> Any:
        return step(compiled, *args, **kwargs)

    def run_eager(*args: Any, **kwargs: Any) -> Any:
        return step(eager, *args, **kwargs)

    return dataclasses.replace(prepared, fn=run_compiled, eager=run_eager)


def _kinds(dropped: list[Any] | None) -> dict[str, int]:
    """A guard filter's dropped guards counted by kind."""
    out: dict[str, int] = {}
    for g in dropped or ():
        out[g.kind] = out.get(g.kind, 0) + 1
    return out


def trial_env(measure: MeasureOptions, cache_dir: str | None, start: ProcessStart) -> TrialEnv:
    """This process's :class:`TrialEnv`: what it runs on, the threads torch uses, the
    recompile limit in force, the torch-affecting variables it inherited, and the machine's
    load and CPU frequency as it starts (:func:`finished_env` adds the load at its end)."""
    governor, mhz = cpu_frequency()
    load = load_average()
    return TrialEnv(
        torch=compat.torch_version(),
        python=platform.python_version(),
        host=platform.node(),
        platform=platform.platform(),
        device=measure.device,
        threads=torch.get_num_threads(),
        recompile_limit_default=compat.recompile_limit_value(),
        start=start,
        pid=os.getpid(),
        cache_dir=cache_dir or "",
        variables=recorded_variables(os.environ, measure.threads),
        load=() if load is None else (load,),
        cpus=usable_cpus(),
        cpu_governor=governor,
        cpu_mhz=mhz,
        compilescope=__version__,
        executable=sys.executable,
    )


def finished_env(env: TrialEnv) -> TrialEnv:
    """``env`` with the load average as the trial ends appended."""
    load = load_average()
    return env if load is None else dataclasses.replace(env, load=(*env.load, load))


def capability_notes(save_artifacts: bool = False) -> tuple[str, ...]:
    """What this process could not record: each capability whose hook into Dynamo raised (and
    turned itself off, the user's calls going on), and a mega-cache this torch cannot save."""
    notes = tuple(f"compilescope {lost.describe()}" for lost in compat.lost_capabilities())
    if save_artifacts and not compat.has_feature("mega_cache"):
        notes += (f"mega-cache: {compat.unavailable('mega_cache')}",)
    return notes


def run_trial(
    spec: TrialSpec,
    *,
    clocks: tuple[Clock, Clock] | None = None,
    save_artifacts: bool = False,
    load_artifacts: bytes | None = None,
    sink: CallSink | None = None,
    cache_dir: str | None = None,
    start: ProcessStart = "in-process",
) -> tuple[TrialResult, bytes | None]:
    """Run one trial in this process. Bad workloads raise; failures inside calls are recorded.

    ``cache_dir`` is the compile cache directory the trial starts on; it is made this
    process's before anything compiles (``None``: the process's own, recorded as unknown).
    ``start`` is how this process started (recorded in :class:`TrialEnv`).

    ``load_artifacts`` (mega-cache start) are ``torch.compiler`` cache artifacts loaded and
    timed before the first call; with ``save_artifacts`` the trial's own are returned.
    ``sink`` receives each stream call's records as soon as the call finishes."""
    measure = spec.measure
    if cache_dir is not None:  # read by Inductor when it first compiles, nothing before
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache_dir
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
    env = trial_env(measure, cache_dir, start)
    if strategy.unavailable is not None:
        reason = strategy.unavailable(target, spec.options)
        if reason is not None:
            return TrialResult(spec, "unavailable", error=reason, env=env, build_s=build_s), None
    if workload.step is not None and strategy.not_through_step is not None:
        return TrialResult(spec, "unavailable", error=strategy.not_through_step, env=env, build_s=build_s), None

    def make_inputs(shape: Shape) -> tuple[tuple[Any, ...], dict[str, Any]]:
        return call_arguments(_to_device(seeded_inputs(workload, shape), measure.device))

    cache_load_s = None
    if load_artifacts is not None and not compat.has_feature("mega_cache"):
        return TrialResult(spec, "unavailable", error=compat.unavailable("mega_cache"), env=env, build_s=build_s), None
    if load_artifacts is not None:
        t0 = time.perf_counter()
        compat.load_cache_artifacts(load_artifacts)
        cache_load_s = time.perf_counter() - t0
    graphs = GraphRunLog()
    with torch.set_grad_enabled(workload.grad):
        prepared = strategy.prepare(target, spec.options, PrepareContext(make_inputs, spec.startup + spec.stream, graphs))
    if workload.step is not None:
        prepared = _through_step(workload.step, prepared, target)
    call_clock, sample_clock = clocks or clocks_for_device(measure.device)
    capture = CaptureSession().install()
    runner = _Runner(workload, target, prepared, strategy.compiles, measure, call_clock, sample_clock, graphs, capture)
    try:
        with torch.set_grad_enabled(workload.grad), limit_scope(spec.options):
            startup = runner.stream(spec.startup, phase="startup") if spec.startup else []
            calls = runner.stream(spec.stream, sink)
            failed_shapes = {tuple(c.shape.items()) for c in calls if c.error is not None}
            shapes = [s for s in distinct_shapes(spec.stream) if tuple(s.items()) not in failed_shapes]
            steady = tuple(runner.steady(s) for s in shapes) if measure.steady else ()
            requested = Counter(shape_key(r) for r in spec.stream)
            busiest = max(shapes, key=lambda s: requested[shape_key(s)], default=None)
            guard_costs = tuple(runner.guards(s, s == busiest, bool(st.changed_inputs)) for s, st in zip(shapes, steady)
                                ) if (measure.guards and measure.steady and strategy.compiles) else ()
            numerics = tuple(runner.numerics(s) for s in shapes) if measure.numerics and strategy.compiles else ()
            # last: it changes the model (each change undone) and may compile again
            soundness = tuple(runner.soundness(busiest)) if prepared.dropped_guards is not None and busiest is not None else ()
    finally:
        capture.uninstall()
        if prepared.close is not None:
            prepared.close()
    artifacts = compat.save_cache_artifacts() if save_artifacts else None
    status = trial_status("ok", calls)
    raised = [c for c in calls if c.error is not None]
    error = None
    if raised:
        which = "every request" if status == "failed" else f"{len(raised)} of {len(calls)} requests"
        error = f"{which} raised; the first: {raised[0].error}"
    return TrialResult(
        spec=spec,
        status=status,
        error=error,
        calls=tuple(calls),
        compiles=tuple(capture.records),
        graph_breaks=tuple(capture.graph_breaks),
        steady=steady,
        numerics=numerics,
        guard_costs=guard_costs,
        soundness=soundness,
        dropped_guards=_kinds(prepared.dropped_guards),
        env=finished_env(env),
        build_s=build_s,
        cache_load_s=cache_load_s,
        artifacts_bytes=None if artifacts is None else len(artifacts),
        notes=prepared.notes + capability_notes(save_artifacts),
        startup=tuple(startup),
    ), artifacts

