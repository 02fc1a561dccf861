"""The dry-run forecast: the real Dynamo on the real code, with the real device's guards and no
kernel run.

Each strategy runs as a trial does (:func:`compilescope.execute.trial.run_trial`, the same
strategy set-up, capture and records) with these differences (:class:`compilescope.compat.DryCompute`):

- the parameters and inputs are real tensors on the real device, so Dynamo sees and guards
  them as in a real call, and traces with fake tensors of that device (the CPU convolution's
  backend choice adds its size guards; a tensor made on an input's device inside the frame is
  made there);
- every op a call runs — a compiled graph or the eager code around it — runs on fake tensors
  of that device: sizes, strides and dtypes, no kernel. A call that needs tensor values (a
  ``nonzero``, an ``.item()``) raises there; the strategy's dry run then starts again and
  computes for real (real kernels on the real inputs, graphs compiled as before, no kernel
  built), and says so;
- the backend builds nothing: ``eager`` and ``aot_eager`` as they are; for ``inductor``,
  :func:`compilescope.compat.dry_inductor_backend` (inductor's lowering and kernel source on
  fake tensors, whose guards are inductor's own, with no kernel compiled — or, asked for,
  ``aot_eager``, faster and blind to those guards); and a graph without a symbolic size is
  handed to no backend, as no backend can add a guard to it;
- the stream is run in order (:class:`Replay`): a request is called when its shape is new,
  when a frame compile happened since its shape last ran (the newest entry is tried first,
  and a newer one can take a seen shape into a resume frame with no entry for it), and the
  first time its shape would repeat (a check); any other request repeats its shape's last
  outcome without a call — the caches hold the same entries as then — unless a call
  changed what the compiled module or function holds (:func:`state_of`, read around each
  call): then those requests are unknown. Steady state and numerics are not run;
- the workload's module state is put back before each dry trial, as a fresh trial process
  meets it, and after the forecast with the CPU random generator
  (:mod:`~compilescope.forecast.isolation`).

Outcomes are read from the trial's records with :func:`request_outcomes`, the one rule a
real run's records are compared with as well.
"""

from __future__ import annotations

import dataclasses
import math
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import compat
from ..analysis.counts import count_compiles
from ..analysis.outcomes import dry_run_word, limit_in_force, repeat_word
from ..errors import OptionError
from ..model import (
    CallRecord, CompileRecord, MeasureOptions, RunResult, Shape, StrategyOptions, TrialResult,
    TrialSpec, shape_key, shape_label,
)
from ..stream import distinct_shapes
from ..torchtext import fake_real_mixup, reads_values, split_reason
from ..workload import load_workload, resolve_reference
from .isolation import before_a_dry_run, put_back
from .shared import forecast_guard, load_run, measured_compile_times, predict_compile_s
from ..report.forecast import (
    ForecastReport, ForecastRequest, ForecastGuard, Lookups, Outcome, StrategyForecast,
)

DRY_BACKENDS = {"eager": "eager", "aot_eager": "aot_eager", "inductor": compat.DRY_INDUCTOR}
# what else a backend's forecast may be traced with: faster, and blind to the backend's own guards
# (aot_eager traced by Dynamo alone: AOT autograd's trace of a graph with symbolic sizes is most
# of its dry run, and can add relations between those sizes)
FAST_DRY_BACKENDS = {"inductor": ("aot_eager",), "aot_eager": ("eager",)}


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
        return (f"traced with {dry_backend}: guards {backend} adds while it traces or lowers a graph with symbolic "
                "sizes are not modelled")
    return None
DEFAULT_FORECAST_STRATEGIES = ("default", "static", "dynamic")


@dataclass(frozen=True)
class Observed:
    """One request's outcome as a trial recorded it; ``eager_part``: some frame of the call
    ran eagerly (refused at the limit), whatever else it did; ``why``: why an ``unknown``
    outcome is, why an ``eager`` one ran eagerly, or that a ``compile`` fails."""

    outcome: Outcome
    eager_part: bool
    compile_ids: tuple[str, ...]
    guards: tuple[ForecastGuard, ...]
    error: str | None
    why: str | None = None
    blocks: int | None = None  # the frame a compile of this call failed for (Dynamo runs it eagerly from then on)


def _guards(records: Sequence[CompileRecord]) -> tuple[ForecastGuard, ...]:
    """The guards that failed on a call's frames: those of a compile, and those of an attempt
    the recompile limit refused (why the request ran eagerly). Each record's are grouped by the
    entry that failed them, the entries in the order Dynamo tried them (a record lists each
    entry's first failure, as Dynamo's reasons do, before the others found on it)."""
    rows: list[ForecastGuard] = []
    for r in records:
        by_entry: dict[str, list[ForecastGuard]] = {}
        if r.guard_failures:
            found = [forecast_guard(g.failed_entry or "?", g) for g in r.guard_failures]
        else:
            found = [ForecastGuard(entry, text, "other") for text, entry in zip(r.reasons, r.rejected_by)]
        for g in found:
            by_entry.setdefault(g.entry, []).append(g)
        rows += [g for group in by_entry.values() for g in group]
    return tuple(rows)


def request_outcomes(calls: Sequence[CallRecord], compiles: Sequence[CompileRecord]) -> list[Observed]:
    """Each stream call's outcome (:func:`~compilescope.analysis.outcomes.classify`) in the
    forecast's words (:func:`~compilescope.analysis.outcomes.forecast_word`): ``compile``
    when it compiled a frame, else ``eager`` when it ran eagerly, wholly or a frame of it,
    else ``hit``; ``error`` when it raised."""
    from ..analysis.outcomes import classify_calls, failure_skips_frame, forecast_word

    out = []
    blocked: str | None = None  # why a frame runs eagerly from some call on
    for c in classify_calls(calls, compiles):
        word = forecast_word(c.outcome, bool(c.made))
        # a compile whose failure raised into the call is tried again next time: no frame is skipped
        failed = next((r for r in c.records if r.failed and failure_skips_frame(r, c.call.error)), None)
        why = None
        if failed is not None:
            blocked = (f"compile {failed.compile_id} of {failed.display_name} failed ({failed.fail_type or 'an error'}): "
                       "Dynamo runs that frame eagerly from then on")
            why = f"{failed.compile_id} fails ({failed.fail_type or 'an error'}): Dynamo runs that frame eagerly from then on"
        elif any(r.refused for r in c.records):
            blocked = "the recompile limit refuses a frame of the call"
            why = blocked
        elif c.outcome.ran_eagerly:
            why = blocked or "a frame of the call runs eagerly"
        out.append(Observed(word, c.outcome.ran_eagerly, c.compile_ids, _guards(c.records), c.call.error, why,
                            failed.compile_id.frame if failed is not None else None))
    return out


def dry_outcomes(trial: TrialResult, shapes: int | None = None) -> list[Observed]:
    """A dry trial's outcomes, for its ``shapes`` calls (default: those it recorded). A call
    that raised in a dry run computing for real raises in a real run too (``error``); one
    that raised on fake tensors, in a dry run that did not compute (:func:`dry_trial` with
    ``compute`` off), is ``unknown``, with the error. A call after an unknown one, or not run,
    is unknown too: the cache state it meets is not known."""
    computed = any(n.startswith(COMPUTED_NOTE) for n in trial.notes)
    out: list[Observed] = []
    after: str | None = None
    for o in request_outcomes(trial.calls, trial.compiles):
        word = dry_run_word(o.outcome, computed, after is not None)
        if word != o.outcome:
            o = dataclasses.replace(o, outcome=word, why=after or (
                f"it raised on fake tensors and was not computed for real (compute off): {o.error}"))
        after = after or (f"after a request whose outcome is unknown ({o.why})" if word == "unknown" else None)
        out.append(o)
    missing = (shapes or len(out)) - len(out)
    out += [Observed("unknown", False, (), (), None, after or "not run") for _ in range(max(0, missing))]
    return out


# ----------------------------------------------------------------------------- compile times


# ----------------------------------------------------------------------------- running


COMPUTED_NOTE = "computed for real"


class _ValuesNeeded(Exception):
    """A call of a dry run on fake tensors raised: it needs tensor values (or has no fake kernel)."""

    def __init__(self, shape: Shape, error: str) -> None:
        self.shape, self.error = shape, error


class Replay:
    """Which requests of a stream a dry run calls, in stream order, and which repeat the
    outcome of the last call of their shape without being called.

    A request is called when its shape is new; when a frame compile (an entry made, a
    compile failed, a frame first refused at the recompile limit) happened since its shape
    was last called — the entry a repeat runs can then be a newer one, with a graph break
    into a resume frame that has no entry for it; and once more, the first time it would
    repeat, to see that it does (a call that sets something up, or a guard on a count, shows
    there). Otherwise Dynamo's caches hold the same entries as when the shape last ran, and
    it does what it did then (:func:`~compilescope.analysis.outcomes.repeat_word`). A repeat
    not called is ``copied``; the calls carry no other state the dry run cannot see
    (:func:`state_of`, read around each call). ``startup``: calls the trial makes before the
    stream, all called. ``every``: every request called, none copied (a workload whose
    ``step`` runs code of the user's around each call: what it does between calls, to a flag,
    a counter or torch's grad mode, is not state the dry run can read)."""

    def __init__(self, stream: Sequence[Shape], startup: int = 0, every: bool = False) -> None:
        self.keys = shared_keys(stream)
        self.startup, self.every = startup, every
        self.reset()

    def reset(self) -> None:
        """Before an attempt (a restart computing for real replays the stream anew)."""
        self.at, self.epoch = -self.startup, 0
        self.last: dict[Any, int] = {}  # shape → the compile count after its last call
        self.checked: set[Any] = set()  # shapes called once where a repeat would have been copied
        self.called: set[int] = set()
        self.refused: set[int] = set()  # frames refused at the limit (the first refusal changes what a miss does)
        self.empty: set[int] = set()  # requests called on fake tensors with an empty dimension (:data:`EMPTY_NOTE`)

    def next_call(self) -> bool:
        """Whether the trial's next call is made (False: it is copied)."""
        i, self.at = self.at, self.at + 1
        if not 0 <= i < len(self.keys):
            return True
        key = self.keys[i]
        if self.last.get(key) == self.epoch and not self.every:
            if key in self.checked:
                return False
            self.checked.add(key)
        self.called.add(i)
        return True

    def after(self, record: CallRecord, compiles: Sequence[CompileRecord]) -> None:
        """Take in a stream call's compiles (a copied call has none)."""
        for r in compiles:
            if r.made_entry or r.failed or (r.refused and r.compile_id.frame not in self.refused):
                self.epoch += 1
            if r.refused:
                self.refused.add(r.compile_id.frame)
        if record.index in self.called:
            self.last[self.keys[record.index]] = self.epoch


@dataclass(frozen=True)
class _DryClock:
    """Times a call as the dry run computes it (:meth:`compilescope.compat.DryCompute.call`),
    and notes the first change a call made to the state it can reach (``changed``). With a
    ``replay``, a request it copies is skipped (:meth:`skip_next`, asked by the trial's loop
    before it makes the request's inputs)."""

    compute: Any
    changed: list[str] = dataclasses.field(default_factory=list)
    replay: Replay | None = None
    valued: list[str] = dataclasses.field(default_factory=list)  # the first change :func:`values_of` saw
    ended: list[dict[str, Any]] = dataclasses.field(default_factory=list)  # the state the last call left
    made: dict[Any, tuple[int, dict[str, Any]]] = dataclasses.field(default_factory=dict)  # shape → its first inputs
    unlike: list[str] = dataclasses.field(default_factory=list)  # the first shape made two ways
    met: list[Any] = dataclasses.field(default_factory=list)  # the trial's own workload (what make_inputs keeps)

    def meet_workload(self, workload: Any) -> None:
        """The trial's loaded workload, told before its calls (:meth:`compilescope.execute.trial`)."""
        self.met[:] = [workload]

    def skip_next(self) -> bool:
        """Whether the trial's next request is copied, not called (it is then not made at all)."""
        return self.replay is not None and not self.replay.next_call()

    def time_call(self, fn: Any, *args: Any, **kwargs: Any) -> tuple[Any, float]:
        if self.replay is not None and not self.unlike:
            try:
                self._compare_inputs(self.replay.at - 1, args, kwargs)
            except Exception as exc:  # noqa: BLE001 - the dry run's own reading: never the call's error
                self.unlike.append(f"request {self.replay.at - 1}'s inputs could not be read ({_said(exc)})")
        if self.replay is not None and self.compute.fake and _empty_dimension((args, kwargs)):
            self.replay.empty.add(self.replay.at - 1)
        before = self._state(fn) if not self.changed else None
        if before is not None and self.ended:  # changed since the last call ended: by the workload's make_inputs
            self.changed.extend(f"{c}, between two calls" for c in state_change(self.ended[0], before)[:1])
        values = _values_or_none(fn) if not self.valued else None
        started = time.perf_counter()
        try:
            out = self.compute.call(fn, *args, **kwargs)
        finally:
            took = time.perf_counter() - started
            if before is not None and (after := self._state(fn)) is not None:
                self.changed.extend(state_change(before, after)[:1])
                self.ended[:] = [after]
            if values is not None and (after := _values_or_none(fn)) is not None:
                self.valued.extend(state_change(values, after)[:1])
        return out, took

    def _state(self, fn: Any) -> dict[str, Any] | None:
        """:func:`state_of` ``fn``; where reading it raises, None, and the state taken as changed
        (what the next call meets is not known): never an error of the call's."""
        try:
            return state_of(fn, *self.met)
        except Exception as exc:  # noqa: BLE001 - the dry run's own reading
            self.changed.append(f"it could not be read: {_said(exc)}")
            return None

    def _compare_inputs(self, index: int, args: Any, kwargs: Any) -> None:
        """Request ``index``'s inputs against those of the first call of its shape: a shape the
        workload's ``make_inputs`` makes with other sizes, dtypes, plain values or structure (a
        random length, an optional argument drawn at random) is not the function of the shape a
        copied request takes it to be (:data:`INPUTS_NOTE`)."""
        assert self.replay is not None
        if not 0 <= index < len(self.replay.keys):
            return
        key, made = self.replay.keys[index], inputs_of(args, kwargs)
        first = self.made.setdefault(key, (index, made))
        if first[0] != index and (differ := state_change(first[1], made)):
            self.unlike.append(f"request {index} against request {first[0]}: {differ[0]}")


STATE_NOTE = "a call changed the state the next one meets"
EMPTY_NOTE = ("an input has an empty dimension, and the dry run ran on fake tensors: a real kernel can raise for it "
              "where its fake one does not (a reduction over no element), so whether it raises is not forecast")
EVERY_NOTE = "every request called, in the stream's order, as the run makes them"
VALUES_NOTE = "a call changed values a path past a graph break can branch on"
INPUTS_NOTE = "the workload made one shape's inputs two ways"


def _empty_dimension(value: Any) -> bool:
    """Whether a tensor in ``value`` (a call's arguments) has a dimension of size 0."""
    import torch

    from ..leaves import walk

    return any(isinstance(v, torch.Tensor) and 0 in v.shape for _, v in walk(value).items)


def _said(exc: BaseException) -> str:
    from ..torchtext import headline

    return headline(type(exc).__name__, str(exc))


def inputs_of(args: Any, kwargs: Any) -> dict[str, Any]:
    """A request's inputs by path (``args[0]``, ``kwargs['mask']``): each tensor's sizes and
    dtype, each plain value, each container's type and length (bounded as
    :func:`compilescope.leaves.walk` is) — what a guard can read of them."""
    import torch

    from ..leaves import Node, source, walk

    out: dict[str, Any] = {}
    for root, value in (("args", args), ("kwargs", kwargs)):
        for steps, v in walk(value).items:
            if isinstance(v, torch.Tensor):
                out[source(root, steps)] = (tuple(v.shape), str(v.dtype))
            elif isinstance(v, Node):
                out[source(root, steps)] = (v.type, v.length)
            else:
                out[source(root, steps)] = repr(v)
    return out


def state_of(fn: Any, workload: Any = None) -> dict[str, Any]:
    """What a call of ``fn`` can leave for the next one, by path (:func:`_state_roots`) — each
    tensor's type, sizes and dtype (not its values: a guard never reads them), each plain
    value, each container's type and length (bounded as :func:`compilescope.leaves.walk` is) —
    and torch's settings that Dynamo guards (:func:`~compilescope.forecast.isolation.torch_settings`)."""
    import torch

    from ..leaves import Node, source, walk

    from .isolation import torch_settings

    out: dict[str, Any] = {name: repr(value) for name, value in torch_settings().items()}
    for name, root in _state_roots(fn, workload).items():
        for steps, v in walk(root).items:
            if isinstance(v, torch.Tensor):
                try:
                    out[source(name, steps)] = (type(v).__name__, tuple(v.shape), str(v.dtype))
                except Exception:  # noqa: BLE001 - a lazy module's parameter has no sizes until its first call
                    out[source(name, steps)] = (type(v).__name__, "no sizes")
            elif isinstance(v, Node):
                out[source(name, steps)] = (v.type, v.length)
            else:
                out[source(name, steps)] = repr(v)
    return out


def _kept(value: Any) -> bool:
    import torch

    from ..leaves import is_plain

    return is_plain(value) or isinstance(value, (list, tuple, dict, set, torch.Tensor))


def _function_roots(name: str, fn: Any) -> dict[str, Any]:
    """What a function keeps between calls: its closure cells (and those of what it wraps) and
    its mutable defaults (``def forward(self, x, _calls=[0])``)."""
    from .isolation import closure_cells

    roots: dict[str, Any] = {}
    for cell, value, _ in closure_cells(fn):
        roots.update(_held(f"{name}.__closure__[{cell!r}]", value, modules=False))
    for i, value in enumerate(getattr(fn, "__defaults__", None) or ()):
        if isinstance(value, (list, dict, set)):
            roots[f"{name}.__defaults__[{i}]"] = value
    for key, value in (getattr(fn, "__kwdefaults__", None) or {}).items():
        if isinstance(value, (list, dict, set)):
            roots[f"{name}.__kwdefaults__[{key!r}]"] = value
    return roots


def _module_roots(name: str, module: Any) -> dict[str, Any]:
    """A module's attributes, its submodules' (parameters and buffers among them), and what
    its hooks' closures keep (a forward hook counting calls)."""
    module = compat.compiled_module_inner(module) or module
    roots: dict[str, Any] = {}
    for prefix, sub in module.named_modules():
        at = f"{name}.{prefix}" if prefix else name
        for key, value in vars(sub).items():
            if key.endswith("hooks"):
                for hook_id, hook in (value.items() if isinstance(value, dict) else ()):
                    roots.update(_function_roots(f"{at}.{key}[{hook_id}]", hook))
            elif key != "_modules":
                roots[f"{at}.{key}"] = value
    return roots


def _held(name: str, value: Any, modules: bool = True) -> dict[str, Any]:
    """What ``value`` keeps that a call can change: a module's attributes (``modules``: any; else
    one of the user's classes), itself where plain, a container or a tensor, an object of the
    user's class's own attributes, an ``itertools.count``'s next number."""
    import itertools

    import torch

    from .isolation import user_module, user_object

    if isinstance(value, torch.nn.Module):
        mine = user_module(type(value).__module__, sys.modules.get(type(value).__module__))
        return _module_roots(name, value) if modules or mine else {}
    if _kept(value):
        return {name: value}
    if type(value) is itertools.count:
        return {name: repr(value)}
    if user_object(value):  # walked as a whole: its attributes, an object it holds (its own, in turn)
        return {name: value}
    return {}


def _reached_modules(layers: list[Any], workload: Any) -> list[Any]:
    """The user's modules of the workload's own functions and of the functions the compiled
    code's closures hold (a forward calling a helper another file defines); ``layers``: the
    compiled callable and what it wraps."""
    import torch

    from .isolation import closure_cells, user_module

    fns = [getattr(workload, p, None) for p in ("build", "make_inputs", "step")]
    fns += [getattr(type(t), "forward", None) if isinstance(t, torch.nn.Module) else t for t in layers]
    found: dict[str, Any] = {}
    for fn in fns:
        for f in [fn, *(v for _, v, _ in closure_cells(fn) if callable(v))] if fn is not None else []:
            name = getattr(f, "__module__", None)
            module = sys.modules.get(name) if isinstance(name, str) else None
            if module is not None and user_module(name, module):
                found.setdefault(name, module)
    return list(found.values())


def _state_roots(fn: Any, workload: Any = None) -> dict[str, Any]:
    """The compiled module's attributes (its submodules', parameters' and buffers' too, its
    hooks' closures), or a function's closure cells, mutable defaults and the object it is
    bound to, or a callable object's attributes — through what wraps it (a
    ``functools.partial``, with its bound arguments; a function's ``__wrapped__``, as
    ``torch.compile`` wraps a partial or an object); the closures of the ``workload``'s
    ``make_inputs`` and ``step`` (a count they keep); and among the user's module that defines
    it and the user's modules that one reaches by name
    (:func:`~compilescope.forecast.isolation.workload_modules`; another by its own name,
    ``rope.CACHE``): the plain values, containers and tensors it holds (``G['name']``), the
    attributes of the objects and modules of the user's classes it holds (``G['SCHED'].step``)
    and of the classes it defines (``G['Rope']._table``), and the closure cells and mutable
    defaults of its functions and its classes' methods (``G['is_warm'].__closure__['count']``).
    An optimizer or another object a training step closes over runs eagerly: not the compiled
    code's."""
    import functools
    import types

    import torch

    from .isolation import user_module, user_object, workload_modules

    roots: dict[str, Any] = {}
    home: Any = None
    target, seen = compat.compiled_module_inner(fn) or compat.uncompiled_callable(fn), set()
    layers: list[Any] = []  # what wraps what, down to the module or function called
    for _ in range(8):  # through what wraps what: a partial, a function's ``__wrapped__`` (torch.compile's of a partial or object)
        if target is None or id(target) in seen:
            break
        seen.add(id(target))
        target = compat.compiled_module_inner(target) or target
        if isinstance(target, functools.partial):  # its bound arguments, then what it calls
            for i, v in enumerate(target.args):
                roots.update(_held(f"partial.args[{i}]", v))
            for k, v in target.keywords.items():
                roots.update(_held(f"partial.keywords[{k!r}]", v))
            target = target.func
            continue
        if isinstance(target, torch.nn.Module):
            roots.update(_module_roots("self", target))
        else:
            code = getattr(target, "__code__", None)
            for name, cell in zip(getattr(code, "co_freevars", ()), getattr(target, "__closure__", None) or ()):
                try:
                    roots.update(_held(name, cell.cell_contents))
                except ValueError:  # an empty cell
                    continue
            roots.update({k: v for k, v in _function_roots("fn", getattr(target, "__func__", target)).items()
                          if ".__closure__" not in k})  # its own defaults (its closure: above, by name)
            owner = getattr(target, "__self__", None)  # a bound method's object; a callable object itself
            if owner is not None and not isinstance(owner, types.ModuleType):
                roots.update(_held("self", owner))
            elif user_object(target):
                roots.update(_held("self", target))
        name = type(target).__module__ if isinstance(target, torch.nn.Module) else getattr(target, "__module__", None)
        module = sys.modules.get(name) if isinstance(name, str) else None
        if home is None and user_module(name, module):
            home = module
        layers.append(target)
        if isinstance(target, torch.nn.Module):
            break
        target = getattr(target, "__wrapped__", None)
    for part in ("make_inputs", "step"):  # what the workload's own functions keep between requests
        maker = getattr(workload, part, None)
        if maker is not None:
            roots.update(_function_roots(part, maker))
    reached = _reached_modules(layers, workload)
    if home is not None and user_module(home.__name__, home) or reached:
        homes = [home] if home is not None and user_module(home.__name__, home) else []
        for module in workload_modules([*homes, *(m for m in reached if m is not home)]):
            prefix = "G[{!r}]" if module is home else f"{module.__name__}.{{}}"  # another: by its own name
            for name, value in vars(module).items():
                if name.startswith("__"):
                    continue
                key = prefix.format(name)
                if isinstance(value, type):  # a class the module defines: what it keeps for all its instances
                    if value.__module__ == module.__name__:
                        for k, v in vars(value).items():
                            if isinstance(v, types.FunctionType):  # a method's mutable defaults
                                roots.update(_function_roots(f"{key}.{k}", v))
                            elif not k.startswith("__"):
                                roots.update(_held(f"{key}.{k}", v, modules=False))
                elif isinstance(value, types.FunctionType):  # a function of the module's: its closure, defaults
                    if value.__module__ == module.__name__:
                        roots.update(_function_roots(key, value))
                else:
                    roots.update(_held(key, value, modules=False))
    return roots


_RUNNING_STAT = re.compile(r"\['(running_mean|running_var|num_batches_tracked)'\]$")  # a norm layer's, in training


def values_of(fn: Any) -> dict[str, Any]:
    """What a call of ``fn`` can leave that only a value-dependent path reads: the values of
    the small tensors (8 elements at most) :func:`state_of` reads the sizes of (a step count in
    a buffer or a global) — not parameters, which a training step's optimizer changes, nor a
    norm layer's running statistics — and the CPU random generator's state (a path that
    draws). A guard never reads them; a graph break that branches on a value, or reads one
    (``.item()``), does (the dry run then computes for real)."""
    import torch

    from ..leaves import source, walk

    out: dict[str, Any] = {}
    for name, root in _state_roots(fn).items():
        for steps, v in walk(root).items:
            path = source(name, steps)
            if (isinstance(v, torch.Tensor) and not isinstance(v, torch.nn.Parameter)
                    and not torch.nn.parameter.is_lazy(v) and v.numel() <= 8
                    and compat.is_real_tensor(v) and not _RUNNING_STAT.search(path)):
                out[path] = repr(v.detach().flatten().tolist())
    out["the CPU random generator's state"] = f"#{hash(torch.random.get_rng_state().numpy().tobytes()) & 0xFFFF:04x}"
    return out


def _values_or_none(fn: Any) -> dict[str, Any] | None:
    try:
        return values_of(fn)
    except Exception:  # noqa: BLE001 - a tensor that cannot be read: no values, never an error of the dry run
        return None


def state_change(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """The paths whose value differs after a call, each as ``path: before → after``."""
    def said(value: Any) -> str:
        return "absent" if value is None else value if isinstance(value, str) else " ".join(map(str, value))

    return [f"{path}: {said(before.get(path))} → {said(after.get(path))}"
            for path in (*before, *(p for p in after if p not in before)) if before.get(path) != after.get(path)]


def _on_fake(sink: Any, kept: list[tuple[CallRecord, Any]] | None) -> Any:
    """The fake attempt's sink: a call that raised ends it (before ``sink`` sees that call: it
    is run again, computing, or not at all); ``kept`` collects the calls made until then."""
    def on_call(record: CallRecord, compiles: Any, breaks: Any) -> None:
        mixed = next((text for r in compiles for text in r.reasons if fake_real_mixup(text)), None)
        if mixed is not None:  # a frame met a real tensor where its entry had a fake one, or the reverse:
            # that call's compile is the dry run's own, kept by no record (with compute off it is unknown)
            raise _ValuesNeeded(dict(record.shape), f"a guard on a tensor's type failed ({split_reason(mixed)[1]}): "
                                "a frame after eager code meets fake tensors made there beside real inputs")
        if kept is not None:
            kept.append((record, compiles))
        if record.error is not None:
            raise _ValuesNeeded(dict(record.shape), record.error)
        if sink is not None:
            sink(record, compiles, breaks)
    return on_call


def _replaying(replay: Replay, sink: Any) -> Any:
    def on_call(record: CallRecord, compiles: Any, breaks: Any) -> None:
        replay.after(record, compiles)
        if sink is not None:
            sink(record, compiles, breaks)
    return on_call


def _attempt(spec: TrialSpec, fake: bool, sink: Any, replay: Replay | None = None) -> TrialResult:
    """One attempt at a dry trial, run in this process by the in-process executor
    (:class:`~compilescope.execute.inprocess.InProcessExecutor`) on a fresh, empty compile cache
    directory, as a cold trial has (Dynamo's local profile-guided dynamism reads earlier frames'
    decisions from it); the executor puts back the cache directory, the thread count and the
    random generator after, and leaves no dry graph behind."""
    from ..execute.inprocess import InProcessExecutor
    from ..execute.task import TrialTask

    before_a_dry_run()  # the workload's module as a fresh trial process meets it (a restart computing for real too)
    quiet = (compat.quiet_recompile_limit_warnings(),  # the forecast says where the limit refuses
             compat.quiet_fake_kernel_errors())  # and which requests raise
    compat.dry_lowering_failures()
    compute = compat.DryCompute(fake)
    clock = _DryClock(compute, replay=replay)
    if replay is not None:
        replay.reset()
        sink = _replaying(replay, sink)
    executor = InProcessExecutor(clocks=(clock, clock), sink=sink)
    with tempfile.TemporaryDirectory(prefix="compilescope-forecast-") as cache, compute:
        try:
            result = executor.submit(TrialTask(spec, cache), math.inf).result().result
        finally:
            for undo in quiet:
                undo()
            failed = compat.dry_lowering_failures()
    if failed:
        note = (f"inductor could not lower {len(failed)} graph(s) in the dry run (the first: {failed[0]}): they were "
                "traced as aot_eager, without inductor's own guards")
        result = dataclasses.replace(result, notes=(*result.notes, note))
    if clock.changed:
        result = dataclasses.replace(result, notes=(*result.notes, f"{STATE_NOTE} ({clock.changed[0]})"))
    if clock.unlike:
        result = dataclasses.replace(result, notes=(*result.notes, f"{INPUTS_NOTE} ({clock.unlike[0]})"))
    if clock.valued:
        result = dataclasses.replace(result, notes=(*result.notes, f"{VALUES_NOTE} ({clock.valued[0]})"))
    return result


def dry_trial(workload_ref: str, strategy: str, shapes: Sequence[Shape], options: StrategyOptions,
              threads: int | None = 1, sink: Any = None, dry_backend: str | None = None, compute: bool = True,
              on_compute: Callable[[str], None] | None = None, real_first: str | None = None,
              replay: Replay | None = None) -> TrialResult:
    """One strategy's dry trial (the module's docstring): real inputs and parameters, calls on
    fake tensors of the real device, a backend that builds nothing (:func:`dry_backend_for`).
    When a call raises on fake tensors (it needs values, or an op has no fake kernel), the
    trial starts again computing for real — ``on_compute`` is told why — and a note says so
    (:data:`COMPUTED_NOTE`); with ``compute`` False it does not, and the trial ends there,
    recording the calls made (the rest are unknown, :func:`dry_outcomes`). Like a trial it
    starts from ``torch.compiler.reset()``; the thread count is put back after. ``sink`` sees
    each call's records as it finishes (an exception it raises ends the dry run and is raised
    here). A graph the dry inductor could not lower is a note of the result. ``real_first``
    (with ``compute``): why the calls compute for real from the start (:func:`cheaper_for_real`:
    real kernels cost less than fake tensors here) — the same trial as the fallback's, said.
    ``replay``: the calls it makes of ``shapes`` (a stream, in order) and those it copies
    (:class:`Replay`); without one, each shape is called."""
    dry = dataclasses.replace(options, backend=dry_backend_for(options.backend, dry_backend))
    spec = TrialSpec(workload_ref, strategy, "cold", tuple(dict(s) for s in shapes), dry,
                     MeasureOptions(device="cpu", steady=False, numerics=False, threads=threads))
    if not compat.has_feature("dry_run_on_fake_tensors"):
        return _without_fake_tensors(spec, sink, compute, on_compute, replay)
    if compute and real_first is not None:
        return _computed(spec, sink, real_first, on_compute, replay)
    kept: list[tuple[CallRecord, Any]] = []
    try:
        return _attempt(spec, True, _on_fake(sink, kept if not compute else None), replay)
    except _ValuesNeeded as needed:
        why = f"shape {shape_label(needed.shape)} could not run on fake tensors ({needed.error})"
        if not compute:
            return _stopped(spec, kept, needed, why)
        return _computed(spec, sink, why, on_compute, replay)


def _computed(spec: TrialSpec, sink: Any, why: str, on_compute: Callable[[str], None] | None,
              replay: Replay | None = None) -> TrialResult:
    """The dry trial computing for real, with a note that says ``why``."""
    if on_compute is not None:
        on_compute(why)
    result = _attempt(spec, False, sink, replay)
    note = (f"{COMPUTED_NOTE}: {why}, so this strategy's dry run computed every call with real kernels on the "
            "real inputs (its graphs compiled as before, no kernel built)")
    return dataclasses.replace(result, notes=(*result.notes, note))


def cheaper_for_real(workload: Any, target: Any, shape: Shape) -> str | None:
    """Why a dry run should compute for real from its first call, or None: an eager call of
    ``shape`` (the stream's first) costs less with real kernels on the real inputs than on
    fake tensors of the device — as for a small model, where a fake tensor's bookkeeping per
    op outweighs the kernel — or raises on fake tensors while it runs for real (it needs
    values: the dry run would compute anyway). Computing for real is the real run itself, less
    the backend's build, so it sees what fake tensors see and more; fake tensors are the
    cheaper way only where kernels cost. Each way is timed as the better of two calls, one
    thread (as a dry trial runs), the global RNG left as it was."""
    import torch

    from ..model import call_arguments
    from ..units import fmt_time
    from ..workload import seeded_inputs

    def seconds(fake: bool) -> float | None:
        compute = compat.DryCompute(fake)
        fn = target if workload.step is None else (lambda *a, **k: workload.step(target, *a, **k))
        best = None
        for _ in range(2):
            args, kwargs = call_arguments(seeded_inputs(workload, shape))
            started = time.perf_counter()
            try:
                with torch.set_grad_enabled(workload.grad):
                    compute.call(fn, *args, **kwargs)
            except Exception:  # noqa: BLE001 - a call that raises is not timed; the dry run meets it as it is
                return None
            took = time.perf_counter() - started
            best = took if best is None else min(best, took)
        return best

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.random.fork_rng(devices=[]):
            real = seconds(False)
            if real is None:
                return None
            fake = seconds(True)
    finally:
        torch.set_num_threads(threads)
    if fake is None:
        return f"an eager call of {shape_label(shape)} raised on fake tensors and ran for real ({fmt_time(real)})"
    if real < fake:
        return (f"an eager call of {shape_label(shape)} took {fmt_time(real)} with real kernels, "
                f"{fmt_time(fake)} on fake tensors")
    return None


STOPPED_NOTE = "not computed"


def _without_fake_tensors(spec: TrialSpec, sink: Any, compute: bool,
                          on_compute: Callable[[str], None] | None, replay: Replay | None = None) -> TrialResult:
    """A dry trial on a torch whose cached graphs fail every call under a fake mode
    (:func:`compilescope.compat.has_feature`): every call computed for real, said; with
    ``compute`` off, no call is run and every request is unknown."""
    why = compat.unavailable("dry_run_on_fake_tensors")
    if not compute:
        return TrialResult(spec, "ok", notes=(f"{STOPPED_NOTE}: {why}; the dry run did not compute for real "
                                              "(compute off), so it ran no call",))
    return _computed(spec, sink, why, on_compute, replay)


def _stopped(spec: TrialSpec, kept: list[tuple[CallRecord, Any]], needed: _ValuesNeeded, why: str) -> TrialResult:
    """The calls a dry run on fake tensors made before one raised, that one with its error (the
    rest unrun): a trial whose records end there."""
    calls = tuple(c for c, _ in kept)
    compiles = tuple(r for _, got in kept for r in got)
    note = f"{STOPPED_NOTE}: {why}; the dry run did not compute for real (compute off), so it stopped there"
    return TrialResult(spec, "ok", calls=calls, compiles=compiles, notes=(note,))


@dataclass(frozen=True)
class Progress:
    """Where a dry run is: ``strategy``'s ``requests`` of ``stream_length`` covered (its
    ``shapes`` of ``distinct`` distinct shapes run), ``traced`` frame compiles (distinct guard
    states traced) so far, ``elapsed_s`` since the forecast began; ``computed``: this
    strategy's dry run computes for real."""

    strategy: str
    requests: int
    stream_length: int
    shapes: int
    distinct: int
    traced: int
    elapsed_s: float
    computed: bool = False


ProgressFn = Callable[[Progress], None]


class _Progress:
    """A dry run's sink that reports :class:`Progress` after each request it calls (a copied
    one is not made: the count moves on at the next call)."""

    def __init__(self, strategy: str, stream: Sequence[Shape], distinct: int, progress: ProgressFn,
                 started: float) -> None:
        self.strategy, self.progress, self.started, self.distinct = strategy, progress, started, distinct
        self.length, self.traced, self.computed = len(stream), 0, False
        self.seen: set[Any] = set()

    def compute(self, why: str) -> None:
        self.traced, self.computed, self.seen = 0, True, set()

    def again(self) -> None:
        """The stream from its start once more (every request called)."""
        self.traced, self.seen = 0, set()

    def __call__(self, record: CallRecord, compiles: Any, breaks: Any) -> None:
        self.traced += count_compiles(compiles).compiles
        self.seen.add(shape_key(record.shape))
        self.progress(Progress(self.strategy, min(record.index + 1, self.length), self.length, len(self.seen),
                               self.distinct, self.traced, time.perf_counter() - self.started, self.computed))


def forecast_strategy(workload_ref: str, strategy: str, stream: Sequence[Shape], options: StrategyOptions,
                      results: tuple[RunResult, str | Path] | None = None,
                      dry_backend: str | None = None, progress: ProgressFn | None = None,
                      started: float | None = None, compute: bool = True,
                      real_first: str | None = None, workload: Any = None) -> StrategyForecast | str:
    """One strategy's forecast, or why the strategy does not apply to the workload
    (``real_first``: :func:`dry_trial`'s; ``workload``: the loaded workload, whose inputs tell
    which entry a repeated shape's lookup runs, :func:`acceptance`)."""
    begun = time.perf_counter()
    distinct = distinct_shapes(tuple(stream))
    every = workload is not None and workload.step is not None
    sink = _Progress(strategy, stream, len(distinct), progress, started or begun) if progress is not None else None
    for _ in range(2):
        replay = Replay(stream, every=every)
        trial = dry_trial(workload_ref, strategy, tuple(stream), options, dry_backend=dry_backend, sink=sink,
                          compute=compute, on_compute=sink.compute if sink is not None else None,
                          real_first=real_first, replay=replay)
        if trial.status == "unavailable":
            return f"{strategy} is unavailable: {trial.error}"
        unlike = next((n for n in trial.notes if n.startswith(INPUTS_NOTE)), None)
        changed = next((n for n in trial.notes if n.startswith(STATE_NOTE)), None)
        if changed is None and any(reads_values(b.reason) for b in trial.graph_breaks):  # a path reads values:
            changed = next((n for n in trial.notes if n.startswith(VALUES_NOTE)), None)  # those a call changed
        if changed is None or every or unlike is not None or len(replay.called) == len(stream):
            break
        # the calls carry state that changes what a copied request does: the stream once more, every request
        # called in its order, as the run makes them (a request then is what it does, not a copy)
        every = True
        if sink is not None:
            sink.again()
    notes = list(trial.notes)
    if replay.every and changed is not None:  # said once, with what it led to
        notes = [n for n in notes if n != changed] + [f"{EVERY_NOTE}, because {changed}"]
    requests = replayed(stream, trial, replay.called)
    accepts = acceptance(workload, trial) if workload is not None else None
    requests = order_checked(requests, trial, accepts)
    if replay.empty:  # a shape with an empty dimension, called on fake tensors: may it raise for real?
        empty = {requests[i].shape for i in replay.empty if i < len(requests)}
        requests = [dataclasses.replace(r, outcome="unknown", compile_ids=(), guards=(), why=EMPTY_NOTE)
                    if r.shape in empty else r for r in requests]
    if unlike is not None:  # the dry run's requests are not the ones a run makes of the same shapes
        requests = [dataclasses.replace(r, outcome="unknown", compile_ids=(), guards=(), why=(
            f"{unlike}: a request is not a function of its shape (a random length, an argument drawn at random), "
            "so the dry run's requests are not the real run's and none is forecast")) for r in requests]
    if changed is not None:
        requests = unknown_from_first_copy(requests, (
            f"{changed}: a request the dry run did not call again may not repeat its shape's earlier outcome, so "
            "from the first such request on, what a request does is not forecast"))
    times = measured_compile_times(results[0], results[1], strategy) if results is not None else None
    if results is not None and times is None:
        notes.append(f"{results[1]} has no measured compile times for {strategy!r}: no compile seconds predicted")
    requests, predicted = predict_compile_s(requests, times)
    firsts = first_calls(trial, replay.called)
    requests, lookups = with_lookups(requests, stream, firsts, results, strategy, accepts)
    counts = {o: sum(1 for r in requests if r.outcome == o) for o in ("hit", "compile", "eager", "error", "unknown")}
    first_error = next((r.error for r in requests if r.outcome == "error"), None)
    computed = any(n.startswith(COMPUTED_NOTE) for n in trial.notes)
    if first_error:
        notes.append(f"{counts['error']} request(s) raise (in the dry run{' computing for real' if computed else ''}); "
                     f"the first: {first_error}")
    limit = limit_in_force(options.recompile_limit)
    return StrategyForecast(
        strategy=strategy, requests=tuple(requests), hits=counts["hit"], compiles=counts["compile"],
        eager=counts["eager"], errors=counts["error"], traced=len({shape_key(stream[i]) for i in replay.called}),
        recompile_limit=limit, dry_wall_s=time.perf_counter() - begun,
        stalls=tuple(r.index for r in requests if r.outcome == "compile"),
        predicted_compile_s=predicted, compile_times=times, notes=tuple(notes), unknown=counts["unknown"],
        computed=computed, lookups=lookups,
    )


def replayed(stream: Sequence[Shape], trial: TrialResult, called: set[int]) -> list[ForecastRequest]:
    """Every request of ``stream`` from a replaying dry trial (:class:`Replay`): a request the
    trial called has its own outcome (:func:`dry_outcomes`), one it copied repeats the outcome
    of its shape's last call (:func:`~compilescope.analysis.outcomes.repeat_word`). A request
    after one whose outcome is unknown, or from a call the trial made but kept no record of
    (it stopped there), is unknown."""
    made = tuple(c for c in trial.calls if c.index in called)
    observed = dict(zip((c.index for c in made), dry_outcomes(dataclasses.replace(trial, calls=made))))
    stop = min((i for i in called if i not in observed), default=len(stream))  # a call it made and kept no record of
    last: dict[Any, Observed] = {}
    lost: str | None = None  # why the outcomes from some request on are unknown
    out = []
    for index, key in enumerate(shared_keys(stream)):
        seen = observed.get(index)
        if index >= stop:
            out.append(ForecastRequest(index, key, "unknown", "traced" if index in called else "repeat",
                                       why=lost or next((n for n in trial.notes if n.startswith(STOPPED_NOTE)),
                                                        "not run: the dry run stopped before it")))
        elif seen is not None:
            last[key] = seen
            out.append(ForecastRequest(index, key, seen.outcome, "traced", seen.compile_ids, seen.guards,
                                       seen.error, why=seen.why))
        elif key in last and lost is None:
            first = last[key]
            out.append(ForecastRequest(index, key, repeat_word(first.outcome, first.eager_part), "repeat",
                                       why=first.why))
        else:
            out.append(ForecastRequest(index, key, "unknown", "repeat", why=lost or "not run"))
        if lost is None and out[-1].outcome == "unknown":
            lost = f"after a request whose outcome is unknown ({out[-1].why})"
    return out


ORDER_WHY = ("{n} entries of the function's own frame may accept this request's inputs ({entries}), and Dynamo tries "
             "first the one that last ran or was made; {what} Which path it takes past the graph break after that "
             "frame, and the requests after it, are not forecast")


def order_checked(requests: list[ForecastRequest], trial: TrialResult,
                  accepts: tuple[int, Callable[[str, Shape], bool | None]] | None) -> list[ForecastRequest]:
    """The requests, unknown from the first one whose entry of the compiled function's own
    frame depends on an order the dry run did not replay. Dynamo tries a frame's entries newest
    or last run first; the dry run does not make the requests it copies, so its own order can
    differ from the real run's. Where two entries accept a request and the frame is followed by
    others (a graph break, a nested compiled function), the two may lead into different resume
    frames. The order is replayed twice — over every request (the real run's) and over the
    calls the dry run made (its own) — and the entry each request's lookup takes is the first
    in the order that accepts it (:func:`acceptance`); where the real run's would be another
    than the one the dry run took (or copied), or cannot be told, that request and the ones
    after it are unknown. A frame alone (no other frame ever compiled) runs a whole graph
    whichever entry accepts: nothing to check."""
    from ..analysis.guards import _Order
    from ..model import CompileId

    if accepts is None or all(r.compile_id.frame == accepts[0] for r in trial.compiles):
        return requests
    frame, accepted = accepts
    called = {c.index for c in trial.calls}
    made: dict[int, list[CompileId]] = {}
    for r in trial.compiles:
        if r.phase == "stream" and r.made_entry and r.call_index is not None and r.compile_id.frame == frame:
            made.setdefault(r.call_index, []).append(r.compile_id)

    def first(order: _Order, shape: Shape) -> str | None:  # "" when no entry accepts
        for e in order.entries.get(frame, []):
            said = accepted(e, shape)
            if said is None or said:
                return e if said else None
        return ""

    real, dry, took = _Order({}), _Order({}), {}
    for r in requests:
        if r.outcome == "unknown":
            continue
        if r.index in made:
            for cid in made[r.index]:
                real.compiled(cid)
                dry.compiled(cid)
            took[r.shape] = str(made[r.index][-1])
            continue
        shape = dict(r.shape)
        could = [e for e in real.entries.get(frame, []) if accepted(e, shape) is not False]
        if len(could) < 2:  # one entry at most can take it: whatever the order, that one
            theirs = ours = could[0] if could else ""
        else:
            theirs = first(real, shape)
            ours = first(dry, shape) if r.index in called else took.get(r.shape)
            if theirs is None or ours is None or theirs != ours:
                what = (f"the dry run took {ours}, where the real run's order tries {theirs} first."
                        if theirs and ours else "which of them comes first could not be told.")
                why = ORDER_WHY.format(n=len(could), entries=", ".join(could), what=what)
                return requests[:r.index] + [dataclasses.replace(q, outcome="unknown", compile_ids=(), guards=(),
                                                                 why=why) for q in requests[r.index:]]
        took[r.shape] = theirs
        if theirs:
            real.hit(frame, theirs)
            if r.index in called:
                dry.hit(frame, theirs)
    return requests


def shared_keys(stream: Sequence[Shape]) -> list[Any]:
    """Each request's shape key, one key object per distinct shape (a long recording's
    requests share their shape's dict: its key is made once)."""
    by_id: dict[int, Any] = {}
    one: dict[Any, Any] = {}
    out = []
    for shape in stream:
        key = by_id.get(id(shape))
        if key is None:
            made = shape_key(shape)
            key = by_id[id(shape)] = one.setdefault(made, made)
        out.append(key)
    return out


def first_calls(trial: TrialResult, called: set[int]) -> TrialResult:
    """A replaying dry trial as the stream's distinct shapes in order of first appearance,
    each its first call (what :func:`with_lookups` replays the entries' order from) — or,
    when a later call of a shape compiled (the order of entries then depends on calls not
    kept here), no calls."""
    firsts: dict[Any, CallRecord] = {}
    for c in trial.calls:
        if c.index in called:
            firsts.setdefault(shape_key(c.shape), c)
    kept = {c.index for c in firsts.values()}
    late = any(r.phase == "stream" and r.call_index is not None and r.call_index not in kept for r in trial.compiles)
    return dataclasses.replace(trial, calls=() if late else tuple(firsts.values()))


def unknown_from_first_copy(requests: list[ForecastRequest], why: str) -> list[ForecastRequest]:
    """Every request from the first one the dry run copied (:class:`Replay`) on, ``unknown``:
    before it the dry run called the very sequence the stream makes; after it, not."""
    first = next((r.index for r in requests if r.basis == "repeat"), len(requests))
    return [r if r.index < first else dataclasses.replace(r, outcome="unknown", compile_ids=(), guards=(), why=why)
            for r in requests]


def acceptance(workload: Any, dry: TrialResult) -> tuple[int, Callable[[str, Shape], bool | None]] | None:
    """Whether an entry of the compiled function's own frame accepts a shape, by the guards
    the dry run recorded for it on the shape's inputs (:func:`compilescope.forecast.recorded.check`):
    True, False, or None where it cannot tell (a guard outside the evaluator, guards past the
    recording's bounds, no guards recorded). None when the dry run names no such frame."""
    from .recorded import check, entry_frame, workload_inputs

    frame, _ = entry_frame(dry.compiles)
    target = next((r.target for r in dry.compiles if r.compile_id.frame == frame and r.target is not None), None)
    if frame is None or target is None or not target.params:
        return None
    entries = {str(r.compile_id): r for r in dry.compiles if r.made_entry and r.compile_id.frame == frame}
    inputs = workload_inputs(workload, target.params)
    requests: dict[Any, Any] = {}
    told: dict[tuple[str, Any], bool | None] = {}

    def accepts(entry: str, shape: Shape) -> bool | None:
        key = (entry, shape_key(shape))
        if key not in told:
            r = entries.get(entry)
            if r is None or not r.entry_guards:
                told[key] = None
            else:
                request = requests.get(key[1]) or requests.setdefault(key[1], inputs(shape))
                failed, unknown = check(r.entry_guards, request)
                told[key] = False if failed else None if unknown or r.entry_guards_cut else True
        return told[key]

    return frame, accepts


def with_lookups(requests: list[ForecastRequest], stream: Sequence[Shape], dry: TrialResult,
                 results: tuple[RunResult, str | Path] | None, strategy: str,
                 accepts: tuple[int, Callable[[str, Shape], bool | None]] | None = None
                 ) -> tuple[list[ForecastRequest], Lookups | None]:
    """The guard lookups the stream's hits will pay (:func:`compilescope.analysis.guards.forecast_lookups`):
    the entries each tries, and their time when the results file holds a measured run of the
    strategy with its guard checks. None when the dry run did not record the graphs it ran.
    ``accepts``: :func:`acceptance`."""
    from ..analysis.guards import forecast_lookups

    if not dry.calls or any(c.graphs_run is None for c in dry.calls):
        return requests, None
    measured = next((t for t in results[0].trials if t.spec.name == strategy and t.guard_costs), None) \
        if results is not None else None
    found = forecast_lookups(stream, dry, measured, accepts)
    out = [dataclasses.replace(r, entries_tried=tried, lookup_s=lookup) if r.outcome == "hit" else r
           for r, (tried, lookup) in zip(requests, found)]
    hits = [r for r in out if r.outcome == "hit" and r.entries_tried]
    if not hits:
        return out, None
    timed = [r.lookup_s for r in hits if r.lookup_s is not None]
    untold = sum(1 for r in out if r.outcome == "hit" and r.entries_tried is None)
    return out, Lookups(statistics.mean(r.entries_tried or 0 for r in hits), max(r.entries_tried or 0 for r in hits),
                        statistics.mean(timed) if timed else None, len(timed),
                        f"{results[1]} ({measured.spec.label})" if measured is not None and results is not None else None,
                        untold)


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
    progress: ProgressFn | None = None,
    compute: bool = True,
    fake: bool | None = None,
    dynamic_sources: str | None = None,
) -> ForecastReport:
    """Predict, per request of ``stream``, what each strategy's ``torch.compile`` does: hit,
    compile (with the guards that fail) or eager at the recompile limit. Raises a
    :class:`~compilescope.errors.CompilescopeError` on bad input.

    Each strategy's dry run starts, as a trial does, from ``torch.compiler.reset()``: called
    in a process that has compiled code of its own, that code is compiled again on its next
    call. ``dry_backend``: what to trace with instead of the default (:data:`FAST_DRY_BACKENDS`);
    ``progress`` is called after each call of the dry runs (:class:`Progress`); ``compute``
    False: a request that needs tensor values is ``unknown`` rather than computed for real.
    ``fake``: None (default) runs the calls on fake tensors unless real kernels are cheaper
    (:func:`cheaper_for_real`, measured once on the stream's first shape; then every strategy
    computes for real, and says why); True, on fake tensors (computing for real only when
    values are needed); False, for real. With ``compute`` False they run on fake tensors.
    ``marks`` and ``dynamic_sources``: the options of the strategies that read them, as for a run.
    The workload's module state and the CPU random generator are put back after
    (:mod:`~compilescope.forecast.isolation`), the module state before each strategy's dry run too."""
    traced = dry_backend_for(backend, dry_backend)
    if results is not None and not Path(results).is_file():
        raise OptionError(f"--results {str(results)!r} is not a file")
    options = StrategyOptions(backend=backend, recompile_limit=recompile_limit, marks=tuple(marks),
                              dynamic_sources=dynamic_sources)
    started = time.perf_counter()
    with put_back(load_workload(resolve_reference(workload))):
        return _forecast(workload, stream, strategies, options, traced, results, progress, compute, fake, started)


def _forecast(workload: str, stream: str | Sequence[Shape] | None, strategies: str | Sequence[str],
              options: StrategyOptions, traced: str, results: str | Path | None, progress: ProgressFn | None,
              compute: bool, fake: bool | None, started: float) -> ForecastReport:
    """:func:`forecast`'s work (inside :func:`~.isolation.put_back`)."""
    from ..prepare import prepare_run_with_target

    backend = options.backend
    loaded, target, base, names = prepare_run_with_target(workload, stream, strategies, options=options,
                                                          measure=MeasureOptions(device="cpu"))
    from ..strategies import get_strategy

    skipped = [n for n in names if not get_strategy(n).compiles]
    compiled = [n for n in names if get_strategy(n).compiles]
    if not compiled:
        raise OptionError("no compiling strategy to forecast (eager compiles nothing)")
    measured = (load_run(results, base.workload), results) if results is not None else None
    real_first = None
    if compute and fake is None:
        real_first = cheaper_for_real(loaded, target, base.stream[0])
    elif compute and fake is False:
        real_first = "asked to compute for real"
    del target
    done = [forecast_strategy(base.workload, n, base.stream, options, measured, traced, progress, started, compute,
                              real_first, loaded) for n in compiled]  # each dry trial meets the module put back
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
