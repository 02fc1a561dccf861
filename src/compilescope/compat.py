"""Every private PyTorch API compilescope touches, in one place.

Each accessor names the torch versions it was checked on (:data:`CHECKED_VERSIONS`: those
``make test-matrix`` runs the compat-marked tests under) and, where an API moved between
them, which spelling each release has. When a torch release moves one of these, this file is
the one to change; the rest of the package only calls the helpers below. Public APIs
(``torch.compile``, ``torch.compiler.*``) are used directly elsewhere, through
:func:`has_feature` where a release lacks them.
"""

from __future__ import annotations

import collections
import json
import operator
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch

# Fields of torch._dynamo.utils.CompilationMetrics (checked on 2.6.0, 2.10.0, 2.13.0, 2.14.1) that hold compile
# phases in microseconds. They nest: dynamo ⊇ aot_autograd ⊇ inductor ⊇ inductor code gen.
PHASE_FIELDS_US: tuple[tuple[str, str], ...] = (
    ("dynamo", "dynamo_cumulative_compile_time_us"),
    ("aot_autograd", "aot_autograd_cumulative_compile_time_us"),
    ("inductor", "inductor_cumulative_compile_time_us"),
    ("inductor_codegen", "inductor_code_gen_cumulative_compile_time_us"),
    ("pre_grad_passes", "pre_grad_pass_time_us"),
    ("joint_graph_passes", "joint_graph_pass_time_us"),
    ("post_grad_passes", "post_grad_pass_time_us"),
    ("backward", "backward_cumulative_compile_time_us"),
    ("autotune", "compile_time_autotune_time_us"),
    ("gc", "gc_time_us"),
)
CACHE_FIELDS: tuple[str, ...] = (
    "inductor_fx_local_cache_hit_count",
    "inductor_fx_local_cache_miss_count",
    "aotautograd_local_cache_hit_count",
    "aotautograd_local_cache_miss_count",
)


# The file PyTorch names in a guard's provenance, "(_dynamo/variables/builder.py:4960 in
# <lambda>)", when the variable builder installed mark_dynamic's min/max — checked on 2.6.0, 2.10.0, 2.13.0, 2.14.1.
MARK_DYNAMIC_GUARD_SOURCE = "_dynamo/variables/builder.py"


def torch_version() -> str:
    return str(torch.__version__)


# ----------------------------------------------------------------------------- torch versions
#
# The torch releases every accessor below was checked on: each of them passes
# ``make test-torch TORCH=X`` (the compat-marked tests and the probe/TORCH_LOGS cross-check in
# a side environment with that torch). Where an API moved between them, the accessor says
# which spelling each release has and takes the one the running torch has.

CHECKED_VERSIONS: tuple[str, ...] = ("2.6.0", "2.7.0", "2.8.0", "2.10.0", "2.12.0", "2.13.0", "2.14.1")
PINNED_VERSION = "2.13.0"  # constraints.txt: what `make test` and CI run


def release(version: str | None = None) -> tuple[int, int, int]:
    """``"2.10.0+cu128"`` → ``(2, 10, 0)``; the running torch's when ``version`` is None."""
    import re

    text = torch_version() if version is None else version
    parts = [int(p) for p in re.findall(r"\d+", text.split("+", 1)[0])[:3]]
    return tuple((parts + [0, 0, 0])[:3])  # type: ignore[return-value]


def at_least(version: str) -> bool:
    """Whether the running torch is ``version`` or newer (pre-releases count as the release)."""
    return release() >= release(version)


def version_note(version: str | None = None) -> str | None:
    """One line when torch ``version`` (the running one by default) is outside the checked
    range (None inside it): which versions compilescope was checked on and which one runs."""
    version = torch_version() if version is None else version
    low, high = release(CHECKED_VERSIONS[0])[:2], release(CHECKED_VERSIONS[-1])[:2]
    if low <= release(version)[:2] <= high:
        return None
    return (f"compilescope was checked on torch {CHECKED_VERSIONS[0]} to {CHECKED_VERSIONS[-1]}; "
            f"this is torch {version}: what it reports of PyTorch's internals may be incomplete")


def _say_version_note() -> None:
    """Said once, when compilescope first imports torch, on stderr."""
    import sys

    note = version_note()
    if note is not None:
        print(f"compilescope: {note}", file=sys.stderr)


# What a torch release may lack, with the first release that has it — checked on the releases
# of CHECKED_VERSIONS (the matrix records which are ``unavailable`` on each).
FEATURE_SINCE: dict[str, str] = {
    "dynamic_sources": "2.7",  # torch.compiler.config.dynamic_sources
    "mega_cache": "2.7",  # torch.compiler.save_cache_artifacts / load_cache_artifacts
    "nested_compile_region": "2.8",  # torch.compiler.nested_compile_region
    "shapes_spec": "2.13",  # torch.compile(shapes_spec=…), dynamic_shapes=… from 2.14
    # a compiled frame's cached graphs reusable while a fake mode is active (the forecast's dry run
    # on fake tensors): 2.6.0's tensor guard compares the input's dispatch keys with the thread's
    # included keys added, and the active mode adds Python and PythonTLSSnapshot, which the guard,
    # built while Dynamo traced outside it, lacks — every cached graph fails, with an empty reason.
    # 2.10.0, 2.12.0, 2.13.0 and 2.14.1 reuse them (2.7.0 and 2.8.0 compute for real: whether they
    # reuse them was not checked).
    "dry_run_on_fake_tensors": "2.10",
}


def has_feature(name: str) -> bool:
    """Whether the running torch has ``name`` of :data:`FEATURE_SINCE`, by looking for it."""
    if name == "dynamic_sources":
        return hasattr(torch.compiler, "config") and hasattr(torch.compiler.config, "dynamic_sources")
    if name == "mega_cache":
        return hasattr(torch.compiler, "save_cache_artifacts") and hasattr(torch.compiler, "load_cache_artifacts")
    if name == "nested_compile_region":
        return hasattr(torch.compiler, "nested_compile_region")
    if name == "shapes_spec":
        return shapes_spec_argument() is not None
    if name == "dry_run_on_fake_tensors":  # by release: a check would compile under a fake mode
        return at_least("2.10")
    raise KeyError(name)


def unavailable(name: str) -> str:
    """Why a feature of :data:`FEATURE_SINCE` is missing, in one line naming the release that has it."""
    return f"torch {torch_version()} has no {name.replace('_', ' ')} (torch {FEATURE_SINCE[name]} or newer has it)"


def reason_name(name: str) -> str:
    """How PyTorch's guard-failure reasons name the frame's input ``name`` (``tensor 'x' size
    mismatch …``, ``2 <= x.size()[0]``): ``x`` on 2.7.0, 2.8.0, 2.10.0, 2.13.0 and 2.14.1, ``L['x']``
    on 2.6.0. The parsed source is ``L['x']`` on all of them."""
    return name if at_least("2.7") else f"L['{name}']"


def shapes_spec_argument() -> str | None:
    """The ``torch.compile`` argument that takes a ``ParamsSpec``: ``shapes_spec`` on 2.13,
    ``dynamic_shapes`` on 2.14.1 (checked on both); None where neither exists (2.6, 2.10)."""
    for name in ("shapes_spec", "dynamic_shapes"):
        if compile_accepts(name):
            return name
    return None


# Backends torch always has — checked on 2.6.0, 2.10.0, 2.13.0, 2.14.1. Validating one of these needs no
# list_backends(), which imports every backend module (~2 s of a run's start-up).
CORE_BACKENDS = frozenset({"inductor", "eager", "aot_eager", "aot_eager_decomp_partition"})


def backend_names() -> set[str]:
    """Every backend name ``torch.compile`` accepts, debug ones (eager, aot_eager) included.

    ``torch._dynamo.list_backends(exclude_tags=())`` — checked on 2.6.0, 2.10.0, 2.13.0, 2.14.1."""
    import torch._dynamo

    return set(torch._dynamo.list_backends(exclude_tags=())) | {"inductor"}


def backend_callable(name: str, mode: str | None, dynamic: bool | None = None) -> Callable[..., Any]:
    """The compiler function ``torch.compile(backend=name, mode=mode)`` would use, so it can
    be wrapped (to record which compiled graph each call runs) without changing what is
    compiled: ``torch._TorchCompileInductorWrapper(mode, None, dynamic)`` for inductor
    (it applies the mode's config), ``torch._dynamo.lookup_backend`` otherwise — checked
    on 2.13.0."""
    import torch._dynamo

    if name == "inductor":
        return torch._TorchCompileInductorWrapper(mode, None, dynamic)  # type: ignore[attr-defined,no-any-return]
    if name == DRY_INDUCTOR:
        inner = dry_inductor_backend(mode, dynamic)
    else:
        inner = torch._dynamo.lookup_backend(name)
    return _dry_runs[-1].backend(inner) if _dry_runs else inner  # type: ignore[no-any-return]


# ----------------------------------------------------------------------------- the dry run's compute

# What a fake tensor raises where an op needs tensor values (a data-dependent output size, a
# value read) or has no fake kernel — ``torch._subclasses.fake_tensor``, checked on 2.13.0.
VALUE_ERRORS = frozenset({"DynamicOutputShapeException", "DataDependentOutputException",
                          "UnsupportedOperatorException", "UnsupportedFakeTensorException"})


def is_real_tensor(value: Any) -> bool:
    """A tensor whose values can be read: not a fake tensor (``torch._subclasses.fake_tensor.
    is_fake``, checked on 2.13.0) and not on the meta device."""
    from torch._subclasses.fake_tensor import is_fake

    return not is_fake(value) and value.device.type != "meta"


class DryCompute:
    """How a dry run's calls compute, while it is entered (one trial).

    ``fake``: each call runs under ``FakeTensorMode(allow_non_fake_inputs=True)`` — the
    inputs and parameters stay real tensors on the real device, so Dynamo sees, guards and
    fakes them as in a real call (the device's kernels' fake implementations, such as the
    CPU convolution's backend choice, add their guards), while every op the call runs, compiled
    graph or eager code, gives a fake tensor of the real device: sizes, strides, dtype and
    device, no kernel run. An op that needs values (``nonzero``, ``.item()``) or has no fake
    kernel raises one of :data:`VALUE_ERRORS` (or another error) instead of computing.
    Not ``fake``: the calls compute for real (the fallback when values are needed).

    Either way each graph is compiled by the backend outside the fake mode, as a real compile
    is, except that a graph with no symbolic size in it and no tensor subclass among its
    inputs is handed to no backend (``static_shortcut``): a backend adds guards only through
    the frame's shape environment, as relations between symbolic sizes, and such a graph has
    none — its compile cannot change what the frame guards. (A subclass input is compiled:
    AOT autograd can fail on it, and the request then raises.)

    Checked on 2.13.0: FakeTensorMode is an infra dispatch mode, which Dynamo traces under
    (``convert_frame`` skips frames only under non-infra modes, ``any_torch_dispatch_mode_on_stack``);
    ``unset_fake_temporarily`` lifts it; a placeholder's fake value is its ``meta["example_value"]``;
    ``free_symbols`` gives a value's symbols."""

    def __init__(self, fake: bool, static_shortcut: bool = True) -> None:
        from torch._subclasses.fake_tensor import FakeTensorMode

        self.fake, self.static_shortcut = fake, static_shortcut
        self.mode = FakeTensorMode(allow_non_fake_inputs=True) if fake else None
        self.graphs = self.static_graphs = self.shaped_calls = 0

    def __enter__(self) -> DryCompute:
        _dry_runs.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        _dry_runs.remove(self)

    def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)`` as the dry run computes it."""
        if self.mode is None:
            return fn(*args, **kwargs)
        with self.mode:
            return fn(*args, **kwargs)

    def backend(self, inner: Callable[..., Any]) -> Callable[..., Any]:
        from torch._subclasses.fake_tensor import unset_fake_temporarily

        def dry_backend(gm: torch.fx.GraphModule, example_inputs: list[Any], **kwargs: Any) -> Any:
            self.graphs += 1
            if self.static_shortcut and not _symbolic(gm) and not _subclass_input(example_inputs):
                self.static_graphs += 1
                compiled: Any = gm.forward
            else:
                with unset_fake_temporarily():
                    compiled = inner(gm, example_inputs, **kwargs)
            return self._by_shape(gm, example_inputs, compiled) if self.fake else compiled

        return dry_backend

    def _by_shape(self, gm: torch.fx.GraphModule, example_inputs: list[Any], compiled: Any) -> Any:
        """``compiled``, or where :class:`_OutputShapes` can give its outputs, a callable that
        gives them on fake tensors without running the graph: the outputs' sizes and strides
        are the traced graph's expressions in its inputs' sizes, evaluated on the call's."""
        shapes = _OutputShapes.of(gm, example_inputs)
        if shapes is None:
            return compiled
        boxed = bool(getattr(compiled, "_boxed_call", False))

        def run(*args: Any) -> Any:
            # a boxed callable may be called either way: with the list of arguments, or with them
            listed = boxed and len(args) == 1 and isinstance(args[0], list)
            flat = list(args[0]) if listed else list(args)
            try:
                got = shapes(flat) if torch._C._get_dispatch_mode(torch._C._TorchDispatchModeKey.FAKE) is not None else None
            except Exception:  # noqa: BLE001 - sizes it cannot work out: the graph runs as traced
                got = None
            if got is None:
                return compiled(*args)
            self.shaped_calls += 1
            if listed:
                args[0].clear()
            return got

        run._boxed_call = boxed  # type: ignore[attr-defined]
        return run


_dry_runs: list[DryCompute] = []

# in-place Python operators a Dynamo graph may call (``x += y`` on a tensor)
_INPLACE_OPERATORS = frozenset({"setitem", "delitem", "iadd", "isub", "imul", "itruediv", "ifloordiv", "imod",
                                "ipow", "iand", "ior", "ixor", "ilshift", "irshift", "imatmul"})


_OPERATORS = frozenset(getattr(operator, n) for n in dir(operator) if not n.startswith("__"))


class _OutputShapes:
    """A Dynamo graph's outputs as fake tensors of the sizes, strides, dtypes and device its
    trace gave them, each size and stride evaluated on a call's inputs — what running the graph
    on fake tensors gives, for a graph that (read from its nodes) mutates nothing, returns no
    alias of an input or of another output, needs no gradient, holds only tensors, sizes and
    plain constants, and whose frame defers no runtime assertion. A call whose inputs'
    sizes leave an output's size unknown (an unbacked size) gives None: the graph runs.

    Checked on 2.13.0: a graph's values are its nodes' ``meta["example_value"]``, with the
    frame's symbols in their sizes; a placeholder per flattened graph input, in order;
    ``ShapeEnv.deferred_runtime_asserts``; a fake tensor's ``untyped_storage()`` is shared by
    its views."""

    def __init__(self, inputs: list[Any], outputs: list[Any]) -> None:
        self.inputs, self.outputs = inputs, outputs

    @staticmethod
    def of(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> _OutputShapes | None:
        from torch._guards import detect_fake_mode
        from torch._ops import HigherOrderOperator

        try:
            fake = detect_fake_mode(example_inputs)
            if fake is not None and fake.shape_env is not None and any(fake.shape_env.deferred_runtime_asserts.values()):
                return None
            inputs, outputs, storages = [], [], set()
            for node in gm.graph.nodes:
                name = getattr(node.target, "__name__", str(node.target))
                if node.op == "placeholder":
                    value = node.meta.get("example_value")
                    inputs.append(value)
                    if isinstance(value, torch.Tensor):
                        storages.add(value.untyped_storage()._cdata)
                elif node.op == "call_module" or (node.op == "call_function" and isinstance(node.target, HigherOrderOperator)):
                    return None
                elif node.op in ("call_function", "call_method") and (
                        (name in _INPLACE_OPERATORS if node.target in _OPERATORS
                         else name.endswith("_") and not name.startswith("__"))  # and_, not_: operator's own
                        or node.kwargs.get("inplace") or "out" in node.kwargs):
                    return None
                elif node.op == "output":
                    for out in torch.utils._pytree.tree_leaves(node.args[0]):
                        value = out.meta.get("example_value", _MISSING) if isinstance(out, torch.fx.Node) else out
                        if isinstance(value, torch.Tensor):
                            if value.requires_grad or type(value).__name__ != "FakeTensor" or value.is_sparse:
                                return None
                            storage = value.untyped_storage()._cdata
                            if storage in storages:
                                return None
                            storages.add(storage)
                        elif not isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool, int, float, bool,
                                                    type(None))):
                            return None
                        outputs.append(value)
                    if not isinstance(node.args[0], (tuple, list)) or len(outputs) != len(node.args[0]):
                        return None
            if len(inputs) != len(example_inputs):
                return None
            return _OutputShapes(inputs, outputs)
        except Exception:  # noqa: BLE001 - a graph it cannot read runs as it is
            return None

    def __call__(self, args: list[Any]) -> tuple[Any, ...] | None:
        import sympy

        if len(args) != len(self.inputs):
            return None
        known: dict[Any, int] = {}
        for value, arg in zip(self.inputs, args):
            if isinstance(value, torch.Tensor):
                if not isinstance(arg, torch.Tensor) or arg.dim() != value.dim():
                    return None
                for sym, got in zip((*value.size(), *value.stride()), (*arg.size(), *arg.stride())):
                    if isinstance(sym, torch.SymInt) and isinstance(sym.node.expr, sympy.Symbol):
                        known[sym.node.expr] = int(got)
            elif isinstance(value, torch.SymInt) and isinstance(value.node.expr, sympy.Symbol):
                known[value.node.expr] = int(arg)

        def number(v: Any) -> Any:
            if not isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool)):
                return v
            got = v.node.expr.xreplace(known)
            if getattr(got, "free_symbols", None):
                raise LookupError(v)
            return int(got) if isinstance(v, torch.SymInt) else float(got) if isinstance(v, torch.SymFloat) else bool(got)

        try:
            out = []
            for value in self.outputs:
                if isinstance(value, torch.Tensor):
                    out.append(torch.empty_strided([number(d) for d in value.size()],
                                                   [number(d) for d in value.stride()],
                                                   dtype=value.dtype, device=value.device))
                else:
                    out.append(number(value))
        except LookupError:
            return None
        return tuple(out)


_MISSING = object()


def _subclass_input(example_inputs: list[Any]) -> bool:
    """Whether a graph input is a tensor subclass (one with ``__torch_function__``, a wrapper
    subclass): a backend may fail on it (AOT autograd's dispatch), so its graph is compiled."""
    from torch._subclasses.fake_tensor import FakeTensor

    plain = (torch.Tensor, torch.nn.Parameter, FakeTensor)
    return any(isinstance(x, torch.Tensor) and type(x) not in plain for x in example_inputs)


def _symbolic(gm: torch.fx.GraphModule) -> bool:
    """Whether any value of ``gm`` (an input, an intermediate, an output) has a symbolic size,
    stride or value."""
    from torch.fx.experimental.symbolic_shapes import free_symbols

    for node in gm.graph.nodes:
        value = node.meta.get("example_value")
        if value is None:
            continue
        try:
            for leaf in torch.utils._pytree.tree_leaves(value):
                if isinstance(leaf, (torch.Tensor, torch.SymInt, torch.SymFloat, torch.SymBool)) and free_symbols(leaf):
                    return True
        except Exception:  # noqa: BLE001 - a value it cannot read: taken as symbolic (the backend runs)
            return True
    return False


# ----------------------------------------------------------------------------- the dry inductor

# The dry run's backend for an inductor forecast: inductor's own pipeline on the graph's fake
# tensors, up to the machine code. Its guards (a ceil-mode pooled size's parity, decided while
# lowering; a reduction's size, while generating a kernel) are what make inductor recompile
# where aot_eager does not.
DRY_INDUCTOR = "inductor-lowering"
_dry_lowering_failures: list[str] = []


def _cpu_device(value: Any) -> Any:
    return torch.device("cpu") if isinstance(value, torch.device) and value.type == "meta" else value


def _cpu_copy(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """A copy of ``gm`` whose device arguments say ``cpu`` for ``meta``, its subgraphs (the
    bodies of higher-order ops) copied the same way; ``gm`` is left as it was."""
    graph = torch.fx.Graph()
    graph.output(graph.graph_copy(gm.graph, {}))
    for node in graph.nodes:
        node.args = torch.fx.node.map_aggregate(node.args, _cpu_device)
        node.kwargs = torch.fx.node.map_aggregate(node.kwargs, _cpu_device)
    copy = torch.fx.GraphModule(gm, graph)
    for name, child in list(copy.named_children()):
        if isinstance(child, torch.fx.GraphModule):
            setattr(copy, name, _cpu_copy(child))
    copy.meta = dict(gm.meta)
    return copy


def _refake(value: Any, fake: Any) -> bool:
    """Whether the dry inductor hands inductor a new fake tensor, in the backend's fake mode
    ``fake``, for a placeholder's fake ``value``: one on the meta device (made ``cpu``), and on
    torch before 2.13 one of another fake mode. Dynamo gives the backend a new fake mode on the
    frame's shape environment; the placeholders' values are in the mode Dynamo traced with. The
    inductor of 2.6.0 and 2.10.0 asks for one fake mode over its inputs (``detect_fake_mode`` in
    its pre-grad fusion passes asserts they agree) and fails on the mixture; 2.13.0 and 2.14.1
    take the tracing context's mode and the values as they are (the releases between were not
    checked)."""
    from torch._subclasses.fake_tensor import FakeTensor

    if not isinstance(value, torch.Tensor):
        return False
    if value.device.type == "meta":
        return True
    return not at_least("2.13") and isinstance(value, FakeTensor) and value.fake_mode is not fake


def _no_machine_code(*_args: Any, **_kwargs: Any) -> None:
    return None


def dry_inductor_backend(mode: str | None, dynamic: bool | None) -> Callable[..., Any]:
    """A backend that runs inductor (``mode``'s config applied) on a copy of each Dynamo graph
    — AOT autograd with inductor's decompositions, lowering, scheduling and C++ kernel source —
    without building a kernel, then returns the graph itself, which runs on the dry run's meta
    tensors. Every guard inductor adds lands in the frame's ShapeEnv before Dynamo builds the
    entry's guards, as in a real compile. Inductor has no meta-device code generation, so the
    copy's fake tensors and device arguments say ``cpu``; the kernels' source is made, never
    compiled. A graph inductor cannot lower that way is traced as ``aot_eager`` instead, and
    said (:func:`dry_lowering_failures`).

    Checked on 2.13.0: Dynamo hands a backend the real (meta) inputs; the fake tensors, with
    the frame's symbolic sizes, are the placeholders' ``meta["example_value"]``;
    ``AsyncCompile.cpp``/``cpp_pybinding`` are where generated C++ goes to the compiler; the
    FX-graph and AOT-autograd caches are turned off so no unbuilt kernel is cached."""
    import torch._dynamo
    import torch._functorch.config as functorch_config
    import torch._inductor.config as inductor_config
    from torch._dynamo.exc import SkipFrame, TensorifyScalarRestartAnalysis
    from torch._guards import detect_fake_mode
    from torch._inductor.async_compile import AsyncCompile

    inductor = torch._TorchCompileInductorWrapper(mode, None, dynamic)  # type: ignore[attr-defined]
    aot_eager = torch._dynamo.lookup_backend("aot_eager")
    # what Dynamo itself acts on when a backend raises it (a restart of the analysis, a skipped
    # frame, an IndexError shown as one — output_graph's call of the backend, 2.13.0): passed
    # on as a real inductor's would be. inductor's own errors (InductorError) are not: one
    # raised by the copy may be the copy's, and the graph is traced as aot_eager, with a note
    passed_on = (SkipFrame, TensorifyScalarRestartAnalysis, IndexError)

    def backend(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
        try:
            fake = detect_fake_mode(example_inputs)
            values = [n.meta["example_value"] for n in gm.graph.nodes if n.op == "placeholder"]
            with fake:
                inputs = [torch.empty_strided(v.size(), v.stride(), dtype=v.dtype, device=_cpu_device(v.device),
                                              requires_grad=v.requires_grad)
                          if _refake(v, fake) else v for v in values]
            lowered = _cpu_copy(gm)
            built = AsyncCompile.cpp, AsyncCompile.cpp_pybinding
            AsyncCompile.cpp = lambda self, source: _no_machine_code  # type: ignore[method-assign,assignment]
            AsyncCompile.cpp_pybinding = lambda self, argtypes, source: _no_machine_code  # type: ignore[method-assign,assignment]
            try:
                with inductor_config.patch(fx_graph_cache=False, compile_threads=1), \
                        functorch_config.patch(enable_autograd_cache=False):
                    inductor(lowered, inputs)
            finally:
                AsyncCompile.cpp, AsyncCompile.cpp_pybinding = built  # type: ignore[method-assign]
        except passed_on:
            raise
        except Exception as e:  # noqa: BLE001 - said in the forecast; the graph is traced as aot_eager
            _dry_lowering_failures.append(f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}")
            return aot_eager(gm, example_inputs)
        return gm.forward

    return backend


def dry_lowering_failures() -> list[str]:
    """What the dry inductor could not lower since the last call (and forget them)."""
    out = list(_dry_lowering_failures)
    _dry_lowering_failures.clear()
    return out


def is_torch_internal(filename: str) -> bool:
    """A frame PyTorch itself wraps around the user's code when it compiles a module
    (``inner`` in ``torch/_dynamo/external_utils.py``, ``Module._call_impl``) — 2.13.0."""
    norm = filename.replace("\\", "/")
    return "/torch/_dynamo/" in norm or norm.endswith("/torch/nn/modules/module.py")


def inductor_cache_dir() -> str | None:
    """The on-disk compile cache directory (``TORCHINDUCTOR_CACHE_DIR`` or its default).

    ``torch._inductor.runtime.cache_dir_utils.cache_dir`` — checked on 2.6.0, 2.10.0, 2.13.0, 2.14.1."""
    try:
        from torch._inductor.runtime.cache_dir_utils import cache_dir

        return str(cache_dir())
    except Exception:
        return None


def forget_inductor_cache_files() -> None:
    """Make inductor forget the files of its cache directory it remembers in memory, after the
    directory changed: ``torch._inductor.utils.clear_caches`` (2.10.0, 2.13.0, 2.14.1),
    ``clear_inductor_caches`` on 2.6.0, whose ``cpp_prefix_path`` keeps the header it wrote in
    the first directory (a later C++ compile includes it from a directory since removed).
    Nothing to forget where inductor was not imported."""
    import sys

    utils = sys.modules.get("torch._inductor.utils")
    if utils is None:
        return
    clear = getattr(utils, "clear_caches", None) or getattr(utils, "clear_inductor_caches", None)
    if clear is not None:
        clear()


def enable_compilation_metrics(limit: int = 100_000) -> Callable[[], None]:
    """Raise the metrics deque bound (64 by default) so no compile is dropped; returns the
    undo, which puts the previous bound back.

    ``torch._dynamo.utils.set_compilation_metrics_limit`` — checked on 2.6.0, 2.10.0, 2.13.0, 2.14.1.
    """
    from torch._dynamo import utils

    previous = utils._compilation_metrics.maxlen
    if previous is not None and previous >= limit:
        return lambda: None

    def bound(maxlen: int) -> None:  # PyTorch's setter makes a plain deque: an observing one stays observing
        utils.set_compilation_metrics_limit(maxlen)
        if _metrics_observers and not isinstance(utils._compilation_metrics, _ObservingDeque):
            utils._compilation_metrics = _ObservingDeque(utils._compilation_metrics, maxlen=maxlen)

    bound(limit)

    def undo() -> None:
        if previous is not None:
            bound(previous)

    return undo


def compilation_metrics_count() -> int:
    """How many entries the metrics deque holds, without copying it (a steady call's cost).

    ``torch._dynamo.utils._compilation_metrics`` — checked on 2.6.0, 2.10.0, 2.13.0, 2.14.1."""
    from torch._dynamo import utils

    return len(utils._compilation_metrics)


def compilation_metrics_since(start: int) -> list[Any]:
    """The entries from index ``start`` on (``get_compilation_metrics()[start:]``)."""
    import itertools

    from torch._dynamo import utils

    return list(itertools.islice(utils._compilation_metrics, start, None))


def graph_break_reasons() -> list[Any]:
    """Graph-break records (``GraphCompileReason``: ``reason``, ``user_stack``).

    ``torch._dynamo.graph_break_reasons`` — checked on 2.6.0, 2.10.0, 2.13.0, 2.14.1; cleared by reset.
    """
    import torch._dynamo

    return torch._dynamo.graph_break_reasons  # type: ignore[attr-defined,no-any-return]


def graph_break_user_stack(record: Any) -> list[Any]:
    """The user frames (``FrameSummary``: ``filename``, ``lineno``) of a graph-break record,
    innermost last: ``GraphCompileReason.user_stack`` — checked on 2.6.0, 2.10.0, 2.13.0, 2.14.1."""
    return list(getattr(record, "user_stack", None) or [])


def compiled_module_inner(obj: Any) -> Any | None:
    """The module a ``torch.compile``-d module wraps (``OptimizedModule._orig_mod``), or None
    for anything else — checked on 2.6.0, 2.10.0, 2.13.0, 2.14.1."""
    return getattr(obj, "_orig_mod", None) if obj is not None else None


def uncompiled_callable(fn: Any) -> Any:
    """What ``torch.compile`` (or ``torch._dynamo.optimize``) wrapped, for a function it
    returned (``_torchdynamo_orig_callable``); ``fn`` itself otherwise — checked on 2.6.0, 2.10.0, 2.13.0, 2.14.1."""
    return getattr(fn, "_torchdynamo_orig_callable", fn)


def dynamic_spec_types() -> tuple[Any, Any, Any]:
    """``(ParamsSpec, ShapeVar, TensorSpec)`` of ``torch.fx.experimental.dynamic_spec``, the
    types ``torch.compile(shapes_spec=…)`` takes on 2.13.0 and ``dynamic_shapes=…`` on 2.14.1
    (checked on both; experimental: absent where :func:`shapes_spec_argument` is None)."""
    from torch.fx.experimental.dynamic_spec import ParamsSpec, ShapeVar, TensorSpec

    return ParamsSpec, ShapeVar, TensorSpec


def mark_dynamic(t: torch.Tensor, dim: int, min: int | None = None, max: int | None = None) -> None:
    """``torch._dynamo.mark_dynamic`` with an optional range — checked on 2.6.0, 2.10.0, 2.13.0, 2.14.1."""
    import torch._dynamo

    kwargs: dict[str, int] = {}
    if min is not None:
        kwargs["min"] = min
    if max is not None:
        kwargs["max"] = max
    torch._dynamo.mark_dynamic(t, dim, **kwargs)


def reset() -> None:
    """``torch.compiler.reset()`` (public); also clears guard_failures and graph_break_reasons."""
    torch.compiler.reset()


def recompile_limit_name() -> str:
    """The name of Dynamo's per-frame limit in ``torch._dynamo.config``: ``recompile_limit``
    on 2.10.0, 2.13.0 and 2.14.1 (``cache_size_limit`` an alias of it), ``cache_size_limit``
    on 2.6.0 (no ``recompile_limit``)."""
    import torch._dynamo

    return "recompile_limit" if hasattr(torch._dynamo.config, "recompile_limit") else "cache_size_limit"


@contextmanager
def recompile_limit(limit: int | None) -> Iterator[None]:
    """Dynamo's recompile limit (:func:`recompile_limit_name`) patched for the block —
    checked on 2.6.0, 2.10.0, 2.13.0, 2.14.1."""
    if limit is None:
        yield
        return
    import torch._dynamo

    with torch._dynamo.config.patch(**{recompile_limit_name(): limit}):
        yield


@dataclass(frozen=True)
class MetricsView:
    """The fields of one ``CompilationMetrics`` entry compilescope reads, with safe defaults.
    ``bad_fields`` names fields whose value had the wrong type (a hand-edited trace)."""

    compile_id: str
    co_name: str
    co_filename: str
    co_firstlineno: int
    duration_s: float | None
    phases_s: dict[str, float]
    cache: dict[str, int]
    fail_type: str | None
    fail_reason: str | None
    recompile_reason: str | None
    is_forward: bool
    graph_op_count: int | None
    guard_count: int | None
    start_time_us: int | None
    bad_fields: tuple[str, ...] = ()
    guard_latency_us: float | None = None  # the new entry's guards evaluated once, on a flushed cache
    automatic_dynamic: bool | None = None  # a dim whose size changed was compiled dynamic (None: not recorded)
    cache_entries: int | None = None  # the frame's cache entries (same ID_MATCH'd objects) when it compiled
    fail_user_frame: tuple[str, int] | None = None  # the user code being traced when the compile failed
    suppress_errors: bool | None = None  # ``torch._dynamo.config.suppress_errors`` at that compile


def view_metrics(m: Any) -> MetricsView:
    """Read one ``CompilationMetrics`` entry (a dataclass with 99 fields on 2.13.0), or the
    same fields as a mapping (a ``TORCH_TRACE`` ``compilation_metrics`` event). A field of
    the wrong type reads as absent and is named in ``bad_fields``."""
    bad: list[str] = []

    def get(name: str, kinds: tuple[type, ...]) -> Any:
        value = m.get(name) if isinstance(m, Mapping) else getattr(m, name, None)
        if value is None:
            return None
        if isinstance(value, bool) and bool not in kinds:
            bad.append(name)
            return None
        if not isinstance(value, kinds):
            bad.append(name)
            return None
        return value

    num = (int, float)
    duration_us = get("duration_us", num)
    if duration_us is None and get("entire_frame_compile_time_s", num) is not None:
        duration_us = float(get("entire_frame_compile_time_s", num)) * 1e6
    phases = {label: float(v) / 1e6 for label, f in PHASE_FIELDS_US if (v := get(f, num)) is not None}
    cache = {f: int(v) for f in CACHE_FIELDS if (v := get(f, (int,))) is not None}
    is_forward = get("is_forward", (bool,))
    start = get("start_time_us", num)
    line = get("co_firstlineno", (int,))
    latency = get("guard_latency_us", num)
    fail_file, fail_line = get("fail_user_frame_filename", (str,)), get("fail_user_frame_lineno", (int,))
    return MetricsView(
        compile_id=str(get("compile_id", (str,)) or ""),
        co_name=str(get("co_name", (str,)) or ""),
        co_filename=str(get("co_filename", (str,)) or ""),
        co_firstlineno=int(line or 0),
        duration_s=None if duration_us is None else float(duration_us) / 1e6,
        phases_s=phases,
        cache=cache,
        fail_type=get("fail_type", (str,)),
        fail_reason=get("fail_reason", (str,)),
        recompile_reason=get("recompile_reason", (str,)),
        is_forward=True if is_forward is None else bool(is_forward),
        graph_op_count=get("graph_op_count", (int,)),
        guard_count=get("guard_count", (int,)),
        start_time_us=None if start is None else int(start),
        bad_fields=tuple(bad),
        guard_latency_us=None if latency is None else float(latency),
        automatic_dynamic=automatic_dynamic(m.get("dynamo_config") if isinstance(m, Mapping)
                                            else getattr(m, "dynamo_config", None)),
        cache_entries=get("cache_size", (int,)),
        fail_user_frame=(fail_file, int(fail_line)) if fail_file and fail_line is not None else None,
        suppress_errors=get("config_suppress_errors", (bool,)),
    )


# Dynamo's exception types it suppresses outside fullgraph, falling back to running the frame
# eagerly (``ConvertFrame.__call__``'s ``soft_fail``; ``fail_type`` is the type's qualname) —
# checked on 2.13.0. Any other error raises into the call unless ``suppress_errors`` is on.
SOFT_FAILURES = frozenset({"Unsupported", "UserError"})
ALWAYS_RAISED = frozenset({"UncapturedHigherOrderOpError", "ResumePrologueTracingError"})  # never suppressed
_CONVERT_FRAME = os.path.join("_dynamo", "convert_frame.py")


def compiling_fullgraph(limit: int = 120) -> bool | None:
    """Whether the frame compile running on the calling thread's stack raises any failure into
    the call, as ``fullgraph=True`` does: read from Dynamo's ``convert_frame._compile`` frame —
    its ``one_graph`` argument, or its ``convert_frame_box.error_on_graph_break`` (set before the
    compile's metrics are recorded; on under ``torch._dynamo.error_on_graph_break(True)``) —
    checked on 2.13.0. None when no such frame is on the stack (or it has no such argument)."""
    frame = sys._getframe(1)
    for _ in range(limit):
        if frame is None:
            return None
        code = frame.f_code
        if code.co_name == "_compile" and code.co_filename.endswith(_CONVERT_FRAME):
            one_graph = frame.f_locals.get("one_graph")
            box = getattr(frame.f_locals.get("convert_frame_box"), "error_on_graph_break", None)
            if one_graph is True or box is True:
                return True
            return one_graph if isinstance(one_graph, bool) else None
        frame = frame.f_back
    return None


def failure_reaches_call(fail_type: str | None, fullgraph: bool | None, suppress_errors: bool | None) -> bool | None:
    """Whether a compile that failed with ``fail_type`` raised into the user's call (True) or
    Dynamo ran the frame eagerly instead (False), as ``ConvertFrame.__call__`` decides — checked
    on 2.13.0: under fullgraph every failure raises; otherwise the soft ones fall back, and the
    rest raise unless ``suppress_errors`` (two types raise always). None when not known."""
    if not fail_type:
        return None
    if fullgraph or fail_type in ALWAYS_RAISED:
        return True
    if fullgraph is None:
        return None
    if fail_type in SOFT_FAILURES:
        return False
    return None if suppress_errors is None else not suppress_errors


def automatic_dynamic(dynamo_config: Any) -> bool | None:
    """Whether Dynamo compiled a dim dynamic once its size had changed, read from a metrics
    entry's ``dynamo_config`` (a JSON text of Dynamo's settings at that compile, ``torch.compile
    (dynamic=…)``'s patch included; checked on 2.13.0): on when
    ``automatic_dynamic_shapes`` is, or when ``assume_static_by_default`` is off (every dim
    dynamic from the start). None when the entry has no such text."""
    if isinstance(dynamo_config, str):
        try:
            dynamo_config = json.loads(dynamo_config)
        except ValueError:
            return None
    if not isinstance(dynamo_config, Mapping):
        return None
    auto, static = dynamo_config.get("automatic_dynamic_shapes"), dynamo_config.get("assume_static_by_default")
    if not isinstance(auto, bool) or not isinstance(static, bool):
        return None
    return auto or not static


def compile_accepts(argument: str) -> bool:
    """Whether ``torch.compile`` takes ``argument`` (``recompile_limit`` and ``shapes_spec``
    appeared in 2.13; ``shapes_spec`` is ``dynamic_shapes`` on 2.14.1)."""
    import inspect

    return argument in inspect.signature(torch.compile).parameters


# How Dynamo words a refusal at the recompile limit in the metrics entry it records, per
# release: 2.13.0 and 2.14.1 fail_type 'Unsupported', fail_reason 'Dynamo recompile limit
# exceeded …'; 2.10.0 fail_type 'RecompileLimitExceeded', fail_reason '… recompile_limit
# reached …'; 2.6.0 fail_type 'CacheLimitExceeded', fail_reason '… cache_size_limit reached …'.
_LIMIT_FAIL_TYPES = frozenset({"RecompileLimitExceeded", "CacheLimitExceeded", "FailOnRecompileLimitHit"})
_LIMIT_WORDS = ("recompile limit", "recompile_limit", "cache_size_limit", "cache size limit")


def is_recompile_limit_failure(fail_type: str | None, fail_reason: str | None) -> bool:
    """Whether a metrics entry is Dynamo refusing a frame at the recompile limit (the call then
    runs eagerly), not a compile that failed — each release's wording (above), checked on
    2.6.0, 2.10.0, 2.13.0 and 2.14.1."""
    if fail_type and str(fail_type).rsplit(".", 1)[-1] in _LIMIT_FAIL_TYPES:
        return True
    reason = str(fail_reason or "").lower()
    return any(w in reason for w in _LIMIT_WORDS)


def run_uncompiled(fn: Any) -> Any:
    """Have Dynamo run ``fn``'s frames, and every frame they call, as Python, never compiling
    them, where a compiled region is running (``set_code_exec_strategy`` with
    ``FrameAction.SKIP`` for the frame and what it calls, as ``torch._dynamo.disable`` runs
    its region; ``skip_code`` for the frame alone where those are absent) — 2.13.0. A
    ``torch.compile``-d function called from there still compiles: it sets its own callback.
    Unlike ``torch._dynamo.disable`` it leaves ``fn`` as it is, so that Dynamo *tracing* a
    caller inlines it. Returns ``fn``."""
    try:
        from torch._dynamo import eval_frame

        code = fn.__code__
        strategy = getattr(eval_frame, "set_code_exec_strategy", None)
        if strategy is not None:
            from torch._dynamo.types import FrameAction, FrameExecStrategy

            strategy(code, FrameExecStrategy(FrameAction.SKIP, FrameAction.SKIP))
        else:
            eval_frame.skip_code(code)
    except Exception:
        pass
    return fn


def recompile_limit_value() -> int:
    """Dynamo's recompile limit in force (default 8) — :func:`recompile_limit_name`."""
    import torch._dynamo

    return int(getattr(torch._dynamo.config, recompile_limit_name()))


def set_recompile_limit(limit: int) -> None:
    """Set Dynamo's recompile limit for the process — :func:`recompile_limit_name`."""
    import torch._dynamo

    setattr(torch._dynamo.config, recompile_limit_name(), int(limit))


def save_cache_artifacts() -> bytes | None:
    """``torch.compiler.save_cache_artifacts()`` (public, 2.7+): the mega-cache bytes; None
    where the release has none (2.6.0) or nothing was compiled."""
    saver = getattr(torch.compiler, "save_cache_artifacts", None)
    if saver is None:
        return None
    got = saver()
    return None if got is None else bytes(got[0])


def load_cache_artifacts(data: bytes) -> None:
    """``torch.compiler.load_cache_artifacts(bytes)`` (public, 2.7+); on an older release
    raises :class:`Unavailable` naming the release that has it."""
    if not has_feature("mega_cache"):
        raise Unavailable(unavailable("mega_cache"))
    torch.compiler.load_cache_artifacts(data)


class Unavailable(RuntimeError):
    """A feature the running torch lacks (the message names the release that has it)."""


# ----------------------------------------------------------------------------- hooks that never raise
#
# Every function compilescope installs into Dynamo (an observing list or deque, a patched
# module function, a testing hook) runs inside the user's call. Its own work goes through
# :func:`contained`: an exception there is caught, the hook stops doing its work for the rest
# of the process (it still does PyTorch's part), and the capability it served is recorded as
# lost — :func:`lost_capabilities` — for the report to say. The user's call goes on as if
# compilescope were not there.

CAPABILITIES: dict[str, str] = {
    "compile records": "each compile's record as it ends (watch and the pytest plugin count from them)",
    "guard failures": "the guard-failure reasons of each recompile",
    "every failing guard": "every failing guard of a rejecting cache entry (PyTorch's reason names the first)",
    "entry guards": "the guards of each new cache entry (the forecast from recorded runs reads them)",
    "graph breaks across reset": "graph breaks recorded before a torch.compiler.reset()",
    "call inputs": "the inputs of each compiled call (probe's shapes, watch(record_shapes=…))",
}


@dataclass(frozen=True)
class LostCapability:
    """A hook that raised: the capability it served (a key of :data:`CAPABILITIES`) and the
    exception, in one line."""

    capability: str
    error: str

    def describe(self) -> str:
        what = CAPABILITIES.get(self.capability, self.capability)
        return f"lost {self.capability} ({what}): its hook raised {self.error} and turned itself off"


_lost: dict[str, LostCapability] = {}


def lost_capabilities() -> tuple[LostCapability, ...]:
    """The capabilities whose hook raised in this process, in the order they were lost."""
    return tuple(_lost.values())


def forget_lost_capabilities() -> None:
    """Start counting lost capabilities afresh (a hook turned off stays off)."""
    _lost.clear()


def contained(capability: str, work: Callable[..., Any]) -> Callable[..., Any]:
    """``work`` that never raises: the first exception turns it off for good and records
    ``capability`` as lost; it then returns None at once."""
    off = False

    def run(*args: Any, **kwargs: Any) -> Any:
        nonlocal off
        if off:
            return None
        try:
            return work(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - recorded, and the user's call goes on
            off = True
            first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
            _lost.setdefault(capability, LostCapability(capability, f"{type(exc).__name__}: {first}".rstrip(": ")))
            return None

    return run


# ----------------------------------------------------------------------------- probe hooks


_failure_observers: list[Callable[[Any, str], None]] = []
_failure_factory: list[Any] = []  # the factory found before the first observer (while any observes)


class _ObservingList(list):  # type: ignore[type-arg]
    """A list of ``guard_failures`` that tells every observer of each append."""

    def append(self, item: Any) -> None:
        super().append(item)
        if _failure_observers:
            from torch._dynamo.utils import guard_failures as failures

            code = next((c for c, other in failures.items() if other is self), None)
            for observe in list(_failure_observers):
                observe(code, str(item))


def observe_guard_failures(on_failure: Callable[[Any, str], None]) -> Callable[[], None]:
    """Call ``on_failure(code, reason)`` as each guard-failure reason is recorded.

    ``torch._dynamo.utils.guard_failures`` is a ``defaultdict(list)`` appended to once per
    rejecting cache entry (``guards.get_guard_fail_reason``) — checked on 2.6.0, 2.10.0, 2.13.0, 2.14.1. Swapping
    its ``default_factory`` for an observing list sees every append, whether or not any
    logging is on, and survives ``reset()`` (which only clears the dict); the lists already
    there (a code that failed a guard before, under an earlier observer) are swapped for
    observing ones too. Observers nest (a ``probe`` of a program that opens a ``watch`` of its
    own): each sees every reason while it observes. The last undo puts the factory back and
    turns the lists it made back into the previous factory's kind, so PyTorch is left as it
    was found.
    """
    from torch._dynamo.utils import guard_failures as failures

    observe = contained("guard failures", on_failure)
    if not _failure_observers:
        _failure_factory[:] = [failures.default_factory]
        failures.default_factory = _ObservingList
        for code, lst in list(failures.items()):  # a code that failed a guard before: its list is observed too
            if not isinstance(lst, _ObservingList):
                failures[code] = _ObservingList(lst)
    _failure_observers.append(observe)

    def undo() -> None:
        if observe in _failure_observers:
            _failure_observers.remove(observe)
        if _failure_observers or not _failure_factory:
            return
        previous = _failure_factory.pop()
        failures.default_factory = previous
        for code, lst in list(failures.items()):
            if type(lst) is _ObservingList:
                failures[code] = (previous or list)(lst)

    return undo


_metrics_observers: list[Callable[[Any], None]] = []


class _ObservingDeque(collections.deque):  # type: ignore[type-arg]
    """The compilation metrics' deque, calling each observer as an entry is appended."""

    def append(self, item: Any) -> None:
        super().append(item)
        for observe in list(_metrics_observers):
            observe(item)


def observe_compilation_metrics(on_entry: Callable[[Any], None]) -> Callable[[], None]:
    """Call ``on_entry(metrics)`` in the compiling thread as each compilation-metrics entry
    is recorded (a frame compile ends, fails or is refused; a lazy backward ends).

    ``torch._dynamo.utils._compilation_metrics`` is a module-level deque that
    ``record_compilation_metrics`` appends to — checked on 2.6.0, 2.10.0, 2.13.0, 2.14.1. It is swapped for an
    observing deque with the same entries and bound, shared by every observer (a probe and a
    ``watch`` in the program it runs); the last undo swaps a plain deque with the entries
    back in."""
    from torch._dynamo import utils

    observe = contained("compile records", on_entry)
    _metrics_observers.append(observe)
    current = utils._compilation_metrics
    if not isinstance(current, _ObservingDeque):
        utils._compilation_metrics = _ObservingDeque(current, maxlen=current.maxlen)

    def undo() -> None:
        if observe in _metrics_observers:
            _metrics_observers.remove(observe)
        now = utils._compilation_metrics
        if not _metrics_observers and isinstance(now, _ObservingDeque):
            utils._compilation_metrics = collections.deque(now, maxlen=now.maxlen)

    return undo


def force_verbose_guard_reasons() -> Callable[[], None]:
    """Make Dynamo compute every failing guard of each rejecting entry, as
    ``TORCH_LOGS=recompiles_verbose`` does, without touching the user's logging.

    ``guards.get_guard_fail_reason_helper`` stops at the first failing guard unless
    ``guards.is_recompiles_verbose_enabled()``; the same function also picks which logger
    gets the recompile message, so the patch answers True only to the reason helper —
    checked on 2.6.0, 2.10.0, 2.13.0, 2.14.1. Returns the undo.
    """
    import sys

    from torch._dynamo import guards

    original = guards.is_recompiles_verbose_enabled
    asked_by_helper = contained("every failing guard",
                                 lambda frame: frame.f_back.f_code.co_name == "get_guard_fail_reason_helper")

    def patched() -> bool:
        return bool(asked_by_helper(sys._getframe(0))) or original()

    guards.is_recompiles_verbose_enabled = patched  # type: ignore[assignment]

    def undo() -> None:
        guards.is_recompiles_verbose_enabled = original  # type: ignore[assignment]

    return undo


def before_reset(hook: Callable[[], None]) -> Callable[[], None]:
    """Run ``hook`` before every ``torch._dynamo.reset()`` (``torch.compiler.reset()`` calls
    it through the module attribute), so records it clears can be read first. Returns the undo."""
    import torch._dynamo

    original = torch._dynamo.reset
    safe_hook = contained("graph breaks across reset", hook)

    def reset() -> None:
        safe_hook()
        original()

    torch._dynamo.reset = reset  # type: ignore[assignment]

    def undo() -> None:
        torch._dynamo.reset = original  # type: ignore[assignment]

    return undo


def current_compile_id() -> str | None:
    """The compile id Dynamo is working on right now (``"0/1"``), if any.

    ``torch._guards.CompileContext.current_compile_id()`` — checked on 2.6.0, 2.10.0, 2.13.0, 2.14.1: while a
    recompile's guard-failure reasons are computed it is already the *new* compile's id
    (the same id ``TORCH_LOGS=recompiles`` prints in brackets).
    """
    try:
        from torch._guards import CompileContext

        cid = CompileContext.current_compile_id()
    except Exception:
        return None
    if cid is None:
        return None
    frame_id = getattr(cid, "frame_id", None)
    attempt = getattr(cid, "frame_compile_id", None)
    if frame_id is None or attempt is None:
        return None
    return f"{frame_id}/{attempt}"


# ----------------------------------------------------------------------------- guard walking


@dataclass(frozen=True)
class LeafCheck:
    """One guard of a rejecting cache entry, evaluated against the call's inputs.

    ``kind`` is the leaf guard's class name (``TENSOR_MATCH``, ``EQUALS_MATCH``…) or
    ``EPILOGUE`` for a symbolic-shape relation; ``text`` its first verbose code part (PyTorch's
    words, with the trailing user-source comment); ``failed`` None when it could not be
    evaluated; ``value`` the guarded value (a tensor, for explaining a TENSOR_MATCH)."""

    source: str
    kind: str
    text: str
    failed: bool | None
    value: Any = None


MAX_GUARD_LEAVES = 50_000


def rejecting_entry() -> tuple[Any, dict[str, Any]] | None:
    """Inside a guard-failure observer: the rejecting entry's guard manager and the call's
    frame locals, read from ``guards.get_guard_fail_reason``'s frame — checked on 2.6.0, 2.10.0, 2.13.0, 2.14.1."""
    import sys

    frame = sys._getframe(1)
    for _ in range(12):
        if frame is None:
            return None
        if frame.f_code.co_name == "get_guard_fail_reason":
            manager, f_locals = frame.f_locals.get("guard_manager"), frame.f_locals.get("f_locals")
            if manager is None or not isinstance(f_locals, dict):
                return None
            return manager, f_locals
        frame = frame.f_back
    return None


def _failed_leaf_text(leaf: Any, value: Any, text: str) -> str:
    """The text of a leaf guard that failed. ``GLOBAL_STATE``'s verbose part holds the state
    it expects on 2.13.0 and 2.14.1 (``___check_global_state() against {…}``), only
    ``___check_global_state()`` on 2.6.0 and 2.10.0: there its ``check_verbose(value)`` says
    what changed (``GLOBAL_STATE changed: grad_mode``), as PyTorch's own reason does."""
    if type(leaf).__name__ != "GLOBAL_STATE" or " against " in text:
        return text
    try:
        parts = leaf.check_verbose(value).verbose_code_parts
    except Exception:
        return text
    return str(parts[0]).strip() if parts else text


def walk_guards(guard_manager: Any, f_locals: dict[str, Any]) -> list[LeafCheck]:
    """Evaluate every guard of one cache entry against ``f_locals``; return those that fail
    or cannot be evaluated. Walks ``guard_manager.root``: each manager's ``get_source()``,
    ``get_leaf_guards()`` (callable on the source's value) and ``get_child_managers()``, then
    the root's ``get_epilogue_lambda_guards()`` (symbolic-shape relations, one Python
    expression per verbose part) — checked on 2.6.0, 2.10.0, 2.13.0, 2.14.1."""
    env: dict[str, Any] = {}
    env.update(getattr(guard_manager, "closure_vars", None) or {})
    env.update(getattr(guard_manager, "global_scope", None) or {})
    env["L"] = f_locals
    out: list[LeafCheck] = []
    seen = 0

    def first_part(leaf: Any) -> str:
        try:
            parts = leaf.verbose_code_parts()
        except Exception:
            return type(leaf).__name__
        return str(parts[0]).split("\n", 1)[0] if parts else type(leaf).__name__

    def visit(manager: Any) -> None:
        nonlocal seen
        try:
            source = str(manager.get_source())
        except Exception:
            return
        value: Any
        try:
            value = f_locals if source == "L" else eval(source, env)  # noqa: S307 (PyTorch's own source text)
            got_value = True
        except Exception:
            value, got_value = None, False
        for leaf in manager.get_leaf_guards():
            seen += 1
            if seen > MAX_GUARD_LEAVES:
                return
            kind = type(leaf).__name__
            if not got_value:
                out.append(LeafCheck(source, kind, first_part(leaf), None))
                continue
            try:
                ok = bool(leaf(value))
            except Exception:
                out.append(LeafCheck(source, kind, first_part(leaf), None))
                continue
            if not ok:
                out.append(LeafCheck(source, kind, _failed_leaf_text(leaf, value, first_part(leaf)), True, value))
        for child in manager.get_child_managers():
            visit(child)

    root = getattr(guard_manager, "root", guard_manager)
    visit(root)
    try:
        epilogue = root.get_epilogue_lambda_guards()
    except Exception:
        epilogue = []
    for leaf in epilogue:
        try:
            parts = [str(p) for p in leaf.verbose_code_parts()]
        except Exception:
            continue
        for part in parts:
            expr = part.split("  #", 1)[0].strip()
            try:
                ok = bool(eval(expr, env))  # noqa: S307
            except Exception:
                out.append(LeafCheck("", "EPILOGUE", part.split("\n", 1)[0], None))
                continue
            if not ok:
                out.append(LeafCheck("", "EPILOGUE", part.split("\n", 1)[0], True))
    return out


def import_compiler() -> None:
    """Import Dynamo (``torch._dynamo``) ahead of any compile, as a fork server does before it
    forks trials — checked on 2.6.0 to 2.14.1: its import compiles nothing and starts no
    thread. 2.13.0's asks inductor for its cache directory while importing
    (``torch._dynamo.package``), which creates the default one (``$TMPDIR/torchinductor_<user>``)
    and sets ``TORCHINDUCTOR_CACHE_DIR`` in the process: where the variable is not set, the
    import is pointed at a temporary directory of its own, removed after it, and the variable
    unset again (a trial sets its task's before it compiles). The directory is named as this
    process's (:func:`compilescope.paths.run_dir_prefix`), so that a process ended while
    it imports — a fork server whose driver was killed — leaves none behind: its parent watch
    removes it on the way out, and the next run removes a dead process's."""
    if "torch._dynamo" in sys.modules or os.environ.get("TORCHINDUCTOR_CACHE_DIR"):
        import torch._dynamo  # noqa: F401
        return
    from .paths import run_dir_prefix

    scratch = tempfile.mkdtemp(prefix=run_dir_prefix("import"))
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = scratch
    try:
        import torch._dynamo  # noqa: F401
    finally:
        os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
        shutil.rmtree(scratch, ignore_errors=True)


class dynamic_sources:  # noqa: N801 — used as a function: ``with compat.dynamic_sources(v):``
    """``torch.compiler.config.dynamic_sources`` set to ``value`` while in force — checked on
    2.7.0, 2.8.0, 2.10.0, 2.13.0 and 2.14.1. 2.7 parses the setting once per process and keeps
    it (``torch._dynamo.variables.builder._DYNAMIC_SOURCES``), so a value set after anything
    compiled was never read: that cache is emptied on entry and on exit (later releases key
    theirs by the setting's hash). 2.7 also takes whole sources only (``L['x']``; a
    ``L['x']:0`` names no source there, so advice proposing it is measured as changing nothing
    and rejected). A class, not a generator: a setting applied for a whole
    program is entered and never exited, and a generator's frame would be closed — the setting
    undone — when it is collected."""

    def __init__(self, value: str) -> None:
        self._patch = torch.compiler.config.patch(dynamic_sources=value)

    @staticmethod
    def _forget() -> None:
        import sys

        builder = sys.modules.get("torch._dynamo.variables.builder")
        if builder is not None and hasattr(builder, "_DYNAMIC_SOURCES"):
            builder._DYNAMIC_SOURCES = None

    def __enter__(self) -> None:
        self._patch.__enter__()
        self._forget()

    def __exit__(self, *exc: object) -> None:
        try:
            self._patch.__exit__(*exc)
        finally:
            self._forget()


def patch_settings(settings: Mapping[str, Any]) -> Callable[[], None]:
    """Apply setting-only remedies for a whole program and return their undo — checked on
    2.6.0, 2.10.0, 2.13.0, 2.14.1: ``dynamic_sources`` lives in ``torch.compiler.config``
    (2.7+; :class:`Unavailable` before); ``recompile_limit`` (``cache_size_limit`` on 2.6),
    ``automatic_dynamic_shapes``, ``assume_static_by_default``, the two settings PyTorch's
    graph-break hints name (``capture_dynamic_output_shape_ops``, ``capture_scalar_outputs``)
    and ``force_parameter_static_shapes`` in ``torch._dynamo.config``;
    ``inductor.NAME`` in ``torch._inductor.config``. An unknown name raises ``KeyError``."""
    import contextlib

    import torch._dynamo
    import torch._inductor.config as inductor_config

    stack = contextlib.ExitStack()
    try:
        for key, value in settings.items():
            if key == "dynamic_sources":
                if not has_feature("dynamic_sources"):
                    raise Unavailable(unavailable("dynamic_sources"))
                stack.enter_context(dynamic_sources(value))
            elif key == "recompile_limit":
                stack.enter_context(torch._dynamo.config.patch(**{recompile_limit_name(): value}))
            elif key in ("automatic_dynamic_shapes", "assume_static_by_default",
                         "capture_dynamic_output_shape_ops", "capture_scalar_outputs", "force_parameter_static_shapes"):
                stack.enter_context(torch._dynamo.config.patch(**{key: value}))
            elif key.startswith("inductor.") and hasattr(inductor_config, key.removeprefix("inductor.")):
                name = key.removeprefix("inductor.")
                _check_like(key, value, getattr(inductor_config, name))
                stack.enter_context(inductor_config.patch(**{name: value}))
            else:
                raise KeyError(key)
    except BaseException:
        stack.close()
        raise
    return stack.close


def _check_like(key: str, value: Any, default: Any) -> None:
    """``value`` of the kind ``default`` is (a number where a float is; None, which several
    settings take, and a setting whose default is None or another object are not checked);
    TypeError otherwise."""
    if value is None:
        return
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, (int, float)):
        ok = isinstance(value, (int, float) if isinstance(default, float) else int) and not isinstance(value, bool)
    elif isinstance(default, str):
        ok = isinstance(value, str)
    else:
        return
    if not ok:
        kind = type(default).__name__
        raise TypeError(f"{key} takes {'an' if kind[0] in 'aeiou' else 'a'} {kind} (its default is {default!r}), "
                        f"not {value!r}")


_call_observers: list[Callable[[Any], None]] = []
_call_patch: list[tuple[Any, Any]] = []  # (the wrapper installed, what it wraps) while any observer is


def observe_compiled_calls(on_call: Callable[[Any], None]) -> Callable[[], None]:
    """Call ``on_call(frame)`` at every call of a ``torch.compile``-d function or module, hit
    or not, before it runs; ``frame`` is the wrapper's frame, read with
    :func:`compiled_call_arguments`.

    Every compiled callable is ``_TorchDynamoContext.__call__``'s ``compile_wrapper``, which
    looks up the module-level ``torch._dynamo.eval_frame._callback_from_stance`` once per
    call with its compile callback (also called, with no callback or from ``__enter__``, by
    disable contexts and ``with optimize(...)``) — checked on 2.6.0, 2.10.0, 2.13.0, 2.14.1. The global is swapped
    for one wrapper, shared by every observer (a wrapper around a wrapper would see the other
    wrapper as its caller, not the ``compile_wrapper``), that passes the caller's frame on when
    it is a ``compile_wrapper``; the last undo puts the original back."""
    import sys

    from torch._dynamo import eval_frame

    safe_on_call = contained("call inputs", on_call)
    _call_observers.append(safe_on_call)
    if not _call_patch:
        original = eval_frame._callback_from_stance
        getframe = sys._getframe

        def observed(callback: Any) -> Any:
            if callback:
                frame = getframe(1)
                if frame.f_code.co_name == "compile_wrapper":
                    for observe in list(_call_observers):
                        observe(frame)
            return original(callback)

        eval_frame._callback_from_stance = observed
        _call_patch.append((observed, original))

    def undo() -> None:
        if safe_on_call in _call_observers:
            _call_observers.remove(safe_on_call)
        if not _call_observers and _call_patch:
            observed, original = _call_patch.pop()
            if eval_frame._callback_from_stance is observed:
                eval_frame._callback_from_stance = original

    return undo


def compiled_call_arguments(frame: Any) -> tuple[Any, tuple[Any, ...], dict[str, Any]]:
    """``(fn, args, kwargs)`` of a ``compile_wrapper`` frame: the callable it compiles (a
    function, a module's ``__call__``, or ``wrap_inline(module)``) and the call's arguments
    — the wrapper's own local names, checked on 2.6.0, 2.10.0, 2.13.0, 2.14.1."""
    local = frame.f_locals
    return local["fn"], local["args"], local["kwargs"]


def compiled_callable_target(fn: Any) -> Any:
    """What a ``compile_wrapper``'s ``fn`` runs: the module behind ``module.__call__`` or
    ``external_utils.wrap_inline(module)`` (its ``__wrapped__``), else ``fn`` itself."""
    owner = getattr(fn, "__self__", None)
    if isinstance(owner, torch.nn.Module):
        return owner
    wrapped = getattr(fn, "__wrapped__", None)
    if isinstance(wrapped, torch.nn.Module):
        return wrapped
    return fn


# ----------------------------------------------------------------------------- new cache entries


def observe_new_entries(on_entry: Callable[[Any, Mapping[str, Any], Any], None]) -> Callable[[], None]:
    """Call ``on_entry(guard_manager, f_locals, code)`` once per new cache entry, at compile
    time, after Dynamo built its guards: ``f_locals`` are the frame's inputs of the compiling
    call, ``code`` the frame's code object (the builder's ``f_code``; None if it has none).

    ``torch._dynamo.guards.guard_manager_testing_hook_fn`` is a module-level hook that
    ``CheckFunctionManager.__init__`` calls after its own guard check of each new entry (not
    for an export, nor where the output graph skips that check): with ``(guard_manager,
    local_scope, builder)`` on 2.10.0, 2.13.0 and 2.14.1, with ``(guard_manager,
    local_scope)`` on 2.6.0 — the hook takes either. An existing hook is kept and called
    first; the undo puts it back. Never called on a call that hits."""
    from torch._dynamo import guards

    previous = guards.guard_manager_testing_hook_fn
    safe_on_entry = contained(
        "entry guards",
        lambda manager, scope, code: on_entry(manager, scope if isinstance(scope, Mapping) else {}, code))

    def hook(guard_manager: Any, local_scope: Any = None, *rest: Any) -> None:
        if previous is not None:
            previous(guard_manager, local_scope, *rest)
        safe_on_entry(guard_manager, local_scope, getattr(rest[0], "f_code", None) if rest else None)

    guards.guard_manager_testing_hook_fn = hook

    def undo() -> None:
        if guards.guard_manager_testing_hook_fn is hook:
            guards.guard_manager_testing_hook_fn = previous

    return undo


@dataclass(frozen=True)
class EntryLeaf:
    """One guard of a new cache entry: its manager's source (``L['x']``; ``""`` for a
    symbolic-shape relation), the leaf guard's class name (``TENSOR_MATCH``, ``EQUALS_MATCH``…,
    ``EPILOGUE`` for a relation) and each verbose code part's first line (PyTorch's words)."""

    source: str
    kind: str
    parts: tuple[str, ...]


def entry_leaves(guard_manager: Any, skip: Callable[[str], bool], max_leaves: int = 2_000) -> tuple[list[EntryLeaf], int]:
    """The leaf guards of one cache entry whose manager's source ``skip`` does not refuse
    (a refused source's children are not visited; at most ``max_leaves``), then the root's
    epilogue lambda guards (the shape environment's relations); with how many leaves were
    past ``max_leaves``.
    Walks ``guard_manager.root`` by ``get_source()``, ``get_leaf_guards()``,
    ``get_child_managers()``, ``get_epilogue_lambda_guards()`` and each leaf's
    ``verbose_code_parts()`` — checked on 2.6.0, 2.10.0, 2.13.0, 2.14.1; a dict's manager
    (``DictGuardManager``) checks the dict's length itself, with no leaf (a ``DICT_LENGTH``
    leaf with no parts stands for it), and holds each guarded item's key and value managers
    apart, by ``get_key_value_managers()`` (index → (key manager, value manager), either
    None) — checked on 2.13.0."""
    out: list[EntryLeaf] = []
    cut = 0

    def parts(leaf: Any) -> tuple[str, ...]:
        try:
            return tuple(str(p).split("\n", 1)[0] for p in leaf.verbose_code_parts())
        except Exception:
            return ()

    def add(leaf: EntryLeaf) -> None:
        nonlocal cut
        if len(out) >= max_leaves:
            cut += 1
        else:
            out.append(leaf)

    def visit(manager: Any, depth: int) -> None:
        try:
            source = str(manager.get_source())
        except Exception:
            return
        if depth and skip(source):
            return
        if depth:
            for leaf in manager.get_leaf_guards():
                add(EntryLeaf(source, type(leaf).__name__, parts(leaf)))
        for child in manager.get_child_managers():
            visit(child, depth + 1)
        pairs = getattr(manager, "get_key_value_managers", None)  # a dict's: its length is the manager's own check
        if pairs is not None and depth:
            add(EntryLeaf(source, "DICT_LENGTH", ()))
            try:
                found = list(pairs().values())
            except Exception:
                found = []
            for pair in found:
                for child in pair:
                    if child is not None:
                        visit(child, depth + 1)

    root = getattr(guard_manager, "root", guard_manager)
    visit(root, 0)
    try:
        epilogue = list(root.get_epilogue_lambda_guards())
    except Exception:
        epilogue = []
    out += [EntryLeaf("", "EPILOGUE", parts(leaf)) for leaf in epilogue]  # the caller bounds what it keeps
    return out, cut


class _DropLimitWarnings:
    def filter(self, record: Any) -> bool:
        return not str(record.msg).startswith("torch._dynamo hit config.")


def quiet_recompile_limit_warnings() -> Callable[[], None]:
    """Drop Dynamo's "torch._dynamo hit config.recompile_limit (N)" warnings until the undo: a
    forecast that predicts the limit says so itself. Logged by ``torch._dynamo.convert_frame``'s
    module logger, the message starting so — checked on 2.6.0, 2.10.0, 2.13.0, 2.14.1."""
    import logging

    logger = logging.getLogger("torch._dynamo.convert_frame")
    drop = _DropLimitWarnings()
    logger.addFilter(drop)  # type: ignore[arg-type]
    return lambda: logger.removeFilter(drop)  # type: ignore[arg-type]


class _DropMetaFailures:
    def filter(self, record: Any) -> bool:
        return not str(record.msg).startswith("failed while attempting to run meta for")


def quiet_fake_kernel_errors() -> Callable[[], None]:
    """Drop the fake-tensor mode's "failed while attempting to run meta for <op>" error logs,
    with their tracebacks, until the undo: in a dry run an op that raises on fake tensors is an
    outcome the forecast reports (the request computed for real, or an error), not a crash.
    Logged by ``torch._subclasses.fake_tensor``'s module logger (``log.exception``) — checked on
    2.13.0."""
    import logging

    logger = logging.getLogger("torch._subclasses.fake_tensor")
    drop = _DropMetaFailures()
    logger.addFilter(drop)  # type: ignore[arg-type]
    return lambda: logger.removeFilter(drop)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- pytree containers


def view_base(t: Any) -> Any:
    """The tensor ``t`` is a view of (None when it is none), as Dynamo's guards on a view name
    it (``L['x']._base``) — ``Tensor._base``, checked on 2.13.0."""
    return getattr(t, "_base", None)


def is_pytree_node(t: type) -> bool:
    """``t`` is a registered pytree container (``torch.utils._pytree.SUPPORTED_NODES``) —
    checked on 2.13.0."""
    from torch.utils import _pytree as pytree

    return t in pytree.SUPPORTED_NODES


def pytree_children(value: Any) -> list[tuple[tuple[str, Any], Any]] | None:
    """A registered pytree container's children, each with its step (``("attr", name)`` for
    a ``GetAttrKey``, ``("item", key)`` for a ``MappingKey`` or ``SequenceKey``); None when
    ``type(value)`` is not registered or its keys are of another kind. Reads
    ``torch.utils._pytree.SUPPORTED_NODES[type].flatten_with_keys_fn`` (else ``flatten_fn``,
    children numbered) — checked on 2.6.0, 2.10.0, 2.13.0, 2.14.1."""
    from torch.utils import _pytree as pytree

    node = pytree.SUPPORTED_NODES.get(type(value))
    if node is None:
        return None
    try:
        if node.flatten_with_keys_fn is None:
            children, _ = node.flatten_fn(value)
            return [(("item", i), c) for i, c in enumerate(children)]
        keyed, _ = node.flatten_with_keys_fn(value)
    except Exception:
        return None
    out: list[tuple[tuple[str, Any], Any]] = []
    for key, child in keyed:
        if isinstance(key, pytree.GetAttrKey):
            out.append((("attr", key.name), child))
        elif isinstance(key, pytree.MappingKey):
            out.append((("item", key.key), child))
        elif isinstance(key, pytree.SequenceKey):
            out.append((("item", key.idx), child))
        else:
            return None
    return out
# ----------------------------------------------------------------------------- guard cost
# What the guards charge on every call: the frames a call runs compiled code for, with the
# inputs their guards read; each frame's cache entries in lookup order; each entry's guard
# tree; a part of that tree evaluated alone. All read-only: nothing here changes what Dynamo
# does on a call, and no hook here can raise into the user's code.

# The profiler event Dynamo's cache lookup records around the guard evaluation of a frame's
# entries (``torch/csrc/dynamo/eval_frame.c``) — checked on 2.13.0.
CACHE_LOOKUP_EVENT = "TorchDynamo Cache Lookup"
MAX_FRAME_CALLS = 256  # frame entries noted for one call (a regionally compiled block: one per instance)


@dataclass(frozen=True)
class FrameCall:
    """A frame a call ran compiled code for: the frame's own code object (whose cache entries
    the lookup tried), the frame's locals at entry (what its guards read as ``L[...]``) and its
    globals (``G[...]``)."""

    code: Any
    inputs: dict[str, Any]
    globals: dict[str, Any]
    # the inputs as the lookup saw them: each plain dict or list among them copied at entry, since
    # the frame's own code may change it as it runs (a wrapper's ``kwargs[name] = value``)
    at_entry: dict[str, Any] = field(default_factory=dict)


def compiled_frame_calls(call: Callable[[], Any], limit: int = MAX_FRAME_CALLS) -> tuple[Any, list[FrameCall]]:
    """Run ``call()`` once and note, in order, each frame it ran a compiled entry's code for.

    Dynamo runs a compiled entry's code (its transformed bytecode) in place of the frame;
    ``torch._dynamo.utils.orig_code_map`` maps that code back to the frame's own (its
    ``values`` dict, keyed by the code's id) — checked on 2.13.0. A profile function
    (``sys.setprofile``, the previous one put back after) sees each such frame start, its
    locals then being the frame's inputs, as the lookup saw them. The hook calls no Python
    function (Dynamo, active during the call, would compile one) and is itself skipped by
    Dynamo (``eval_frame.skip_code``); it never raises, and what ``call`` raises is the
    caller's. Each frame's inputs are also kept as they were at entry (``at_entry``): a
    frame's code may change a dict or list it was given (Hugging Face's output-capturing
    wrapper adds to its ``kwargs``) after the lookup read it. Returns what ``call`` returned."""
    import sys

    from torch._dynamo.eval_frame import skip_code
    from torch._dynamo.utils import orig_code_map

    originals = orig_code_map.values
    seen: list[tuple[Any, dict[str, Any], dict[str, Any], dict[str, Any]]] = []
    previous = sys.getprofile()

    def hook(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and len(seen) < limit:
            try:
                code = originals.get(id(frame.f_code))
                if code is not None:
                    inputs = dict(frame.f_locals)
                    entry = dict(inputs)
                    for name, value in inputs.items():  # a loop, not a comprehension: no Python function called
                        if type(value) is dict:
                            entry[name] = dict(value)
                        elif type(value) is list:
                            entry[name] = list(value)
                    seen.append((code, inputs, frame.f_globals, entry))
            except Exception:  # noqa: BLE001 - a hook never raises into the program
                pass

    skip_code(hook.__code__)
    sys.setprofile(hook)
    try:
        out = call()
    finally:
        sys.setprofile(previous)
    return out, [FrameCall(code, inputs, scope, entry) for code, inputs, scope, entry in seen]


def at_frame_entry(call: Callable[[], Any], visitors: Mapping[int, Callable[[dict[str, Any]], None]]) -> Any:
    """Run ``call()`` once; at the first start of each compiled frame whose own code's id is in
    ``visitors``, call its visitor with the frame's locals as they are then — the inputs the
    cache lookup has just read, before the frame's code changes them (a decode step growing
    the cache it was given). Found as :func:`compiled_frame_calls` finds them. Dynamo's frame
    evaluation is off while a visitor runs (``torch._C._dynamo.eval_frame.set_eval_frame(None)``,
    which returns the callback it replaces, put back after — checked on 2.13.0), so a visitor
    may call Python code that Dynamo, active in the call, would otherwise compile. A visitor
    that raises is skipped; what ``call`` raises is the caller's. Returns what ``call`` returned."""
    import sys

    from torch._C._dynamo.eval_frame import set_eval_frame
    from torch._dynamo.eval_frame import skip_code
    from torch._dynamo.utils import orig_code_map

    originals = orig_code_map.values
    visited: set[int] = set()
    previous = sys.getprofile()

    def hook(frame: Any, event: str, arg: Any) -> None:
        if event != "call":
            return
        try:
            code = originals.get(id(frame.f_code))
            visit = None if code is None or id(code) in visited else visitors.get(id(code))
            if visit is None:
                return
            visited.add(id(code))
            inputs = dict(frame.f_locals)
            saved = set_eval_frame(None)
            try:
                visit(inputs)
            finally:
                set_eval_frame(saved)
        except Exception:  # noqa: BLE001 - a hook never raises into the program
            pass

    skip_code(hook.__code__)
    sys.setprofile(hook)
    try:
        return call()
    finally:
        sys.setprofile(previous)


def cache_entries(code: Any) -> list[Any]:
    """A frame's cache entries in the order the next lookup tries them: the most recently hit
    first (Dynamo moves a hit entry to the front), a new entry at the front.
    ``torch._dynamo.eval_frame._debug_get_cache_entry_list`` — checked on 2.13.0."""
    from torch._dynamo.eval_frame import _debug_get_cache_entry_list

    try:
        return list(_debug_get_cache_entry_list(code))
    except Exception:  # noqa: BLE001 - not a code object Dynamo knows
        return []


def entry_compile_id(entry: Any) -> str | None:
    """The compile id (``"0/3"``) of the compile that made a cache entry (``CacheEntry.compile_id``,
    a ``CompileId`` with ``frame_id`` and ``frame_compile_id``) — checked on 2.13.0."""
    cid = getattr(entry, "compile_id", None)
    frame, attempt = getattr(cid, "frame_id", None), getattr(cid, "frame_compile_id", None)
    return None if frame is None or attempt is None else f"{frame}/{attempt}"


def entry_guard_check(entry: Any) -> Callable[[dict[str, Any]], bool]:
    """The entry's whole guard check, as the lookup runs it: ``guard_manager.check(f_locals)``
    (the C++ root manager; ``True`` when every guard passes) — checked on 2.13.0."""
    return entry.guard_manager.check  # type: ignore[no-any-return]


@dataclass(frozen=True)
class GuardLeafInfo:
    """One guard of a cache entry: the source its manager guards (``L['x']``,
    ``L['self']._modules['layers']._modules['0'].scale``, ``G['torch']``; ``L`` for the frame's
    ambient state — grad mode, default device…; ``""`` for a symbolic-shape relation), the leaf
    guard's kind (its class name: ``TENSOR_MATCH``, ``TYPE_MATCH``…, ``EPILOGUE`` for a
    relation) and the sources of the managers from the root down to its own (a part of the
    tree holding it is built from these)."""

    source: str
    kind: str
    path: tuple[str, ...]


def _guard_children(manager: Any) -> list[Any]:
    """A manager's children: a dict manager's key and value managers too (which
    ``get_child_managers`` leaves out) — checked on 2.13.0."""
    from torch._C._dynamo.guards import DictGuardManager

    out = []
    if isinstance(manager, DictGuardManager):
        for pair in manager.get_key_value_managers().values():
            out += [m for m in pair if m is not None]
    out += [m for m in manager.get_child_managers() if m is not None]
    return out


def entry_guard_leaves(entry: Any, limit: int = 50_000) -> tuple[list[GuardLeafInfo], int]:
    """Every guard of a cache entry (each manager's leaf guards, dict managers' keys and
    values included, then the root's symbolic-shape relations), with how many were past
    ``limit``. Walks ``guard_manager.root`` by ``get_source``, ``get_leaf_guards``,
    ``get_child_managers``, ``DictGuardManager.get_key_value_managers`` and
    ``get_epilogue_lambda_guards`` — checked on 2.13.0."""
    out: list[GuardLeafInfo] = []
    cut = 0
    root = entry.guard_manager.root
    stack: list[tuple[Any, tuple[str, ...]]] = [(root, ())]
    while stack:
        manager, above = stack.pop()
        try:
            source = str(manager.get_source())
            path = (*above, source)
            leaves = manager.get_leaf_guards()
            children = _guard_children(manager)
        except Exception:  # noqa: BLE001 - a node this torch does not describe
            continue
        for leaf in leaves:
            if len(out) >= limit:
                cut += 1
            else:
                out.append(GuardLeafInfo(source, type(leaf).__name__, path))
        stack.extend((child, path) for child in reversed(children))
    try:
        relations = list(root.get_epilogue_lambda_guards())
    except Exception:  # noqa: BLE001
        relations = []
    out += [GuardLeafInfo("", "EPILOGUE", ("L",)) for _ in relations]
    return out, cut


def entry_guard_part(entry: Any, sources: frozenset[str]) -> Callable[[dict[str, Any]], bool] | None:
    """A check of a part of the entry's guards: a copy of its guard tree keeping only the
    managers whose source is in ``sources`` (give a manager's ancestors too: a manager is kept
    under a kept parent) and their leaf guards. ``RootGuardManager.clone_manager(filter)``,
    which Dynamo uses for its diff guards — checked on 2.13.0. None when the copy fails."""
    try:
        part = entry.guard_manager.root.clone_manager(lambda m: m.get_source() in sources)
    except Exception:  # noqa: BLE001
        return None
    return None if part is None else part.check  # type: ignore[no-any-return]


@dataclass(frozen=True)
class DroppedGuard:
    """A guard a ``guard_filter_fn`` told Dynamo not to keep: its name as Dynamo gives it
    (``self._modules['layers']._modules['0'].scale``, ``G['CLAMP']``), its kind
    (``CONSTANT_MATCH``, ``TENSOR_MATCH``…), whether it is on a global, and the value it held."""

    name: str
    kind: str
    is_global: bool
    value: Any = None


def recording_guard_filter(fn: Callable[[list[Any]], list[bool]], dropped: list[DroppedGuard],
                           limit: int = 10_000) -> Callable[[list[Any]], list[bool]]:
    """``fn`` as a ``guard_filter_fn`` that also appends each guard it drops to ``dropped``.
    Dynamo calls it with ``GuardFilterEntry`` records (``name``, ``guard_type``, ``is_global``,
    ``value``, ``has_value``) — checked on 2.13.0. Recording never changes what ``fn`` decides,
    nor raises."""

    def recording(entries: list[Any]) -> list[bool]:
        keep = list(fn(entries))  # an iterator would be used up by the recording below
        try:
            for entry, kept in zip(entries, keep):
                if not kept and len(dropped) < limit:
                    dropped.append(DroppedGuard(str(entry.name), str(entry.guard_type), bool(entry.is_global),
                                                entry.value if getattr(entry, "has_value", False) else None))
        except Exception:  # noqa: BLE001 - the record is ours; the filter's answer stands
            pass
        return keep

    recording.__name__ = getattr(fn, "__name__", "guard_filter")
    return recording


def local_scope_name(name: str) -> str:
    """A guard filter entry's name with the frame's local scope put back: Dynamo strips
    ``L['self']`` to ``self`` (``strip_local_scope``) — checked on 2.13.0."""
    if name.startswith(("L[", "G[")) or not name:
        return name
    head, sep, rest = name.partition(".")
    head, bracket, tail = head.partition("[")
    return f"L[{head!r}]" + (bracket + tail if bracket else "") + (sep + rest if sep else "")


def cache_lookup_times(call: Callable[[], Any], n: int) -> list[float]:
    """Seconds of each ``TorchDynamo Cache Lookup`` event over ``n`` calls of ``call`` under
    ``torch.profiler.profile`` (public; the event name is Dynamo's, checked on 2.13.0). The
    profiler slows every op it records: for cross-checking, never inside timed samples."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(n):
            call()
    return [e.cpu_time_total / 1e6 for e in prof.events() if e.name == CACHE_LOOKUP_EVENT]


_say_version_note()
