"""Compile strategies: one registry entry each, turning a built workload into a callable.

The runner, the CLI, the forecast and the warm-up planner know nothing of individual
strategies by name; a new strategy is one :func:`register` call at the end of this file (its
functions above it, or in a module of its own as :mod:`.bucket`): its name, what it does,
how ``torch.compile`` treats sizes under it (``dynamic``, a :data:`DynamicMode`; ``static``
follows from it), the options only it reads (``takes``), how to check them, when it is
unavailable, and how to prepare a target. A strategy may declare itself unavailable for a
workload or for the installed torch (with the reason), which the runner records instead of
failing.

Importing this module does not import torch (``--help`` lists the names): each function
imports torch when it runs.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ..collect.graphs import GraphRunLog
from ..errors import OptionError
from ..model import MarkSpec, Shape, StrategyOptions

if TYPE_CHECKING:
    import torch

BeforeCall = Callable[[Mapping[str, Any]], None]


@dataclass(frozen=True)
class PrepareContext:
    """What a strategy may look at besides the target: the workload's inputs and stream,
    and :meth:`compile`, which every strategy uses instead of ``torch.compile`` so the
    trial records which compiled graph each call runs."""

    make_inputs: Callable[[Shape], tuple[tuple[Any, ...], dict[str, Any]]]
    stream: tuple[Shape, ...]
    graphs: GraphRunLog = field(default_factory=GraphRunLog)
    backends: dict[tuple[str, str | None, bool | None], Callable[..., Any]] = field(default_factory=dict)

    def compile(self, target: Any, options: StrategyOptions, dynamic: bool | None = None,
                guard_filter_fn: Callable[[list[Any]], list[bool]] | None = None, **extra: Any) -> Any:
        """``torch.compile(target, backend=options.backend, mode=options.mode, dynamic=…)``
        with the backend wrapped by :class:`GraphRunLog` (and ``options={"guard_filter_fn": …}``
        when one is given).

        One backend callable per (backend, mode, dynamic) for the whole trial: the compiled
        code's guards check the backend's identity, so compiling each instance of a block
        with its own callable would recompile the shared ``forward`` once per instance
        (regional compilation would then exhaust the recompile limit on its first call)."""
        import torch

        from .. import compat

        kwargs: dict[str, Any] = dict(extra)
        if guard_filter_fn is not None:
            kwargs["options"] = {"guard_filter_fn": guard_filter_fn}
        if options.recompile_limit is not None and compat.compile_accepts("recompile_limit"):
            kwargs["recompile_limit"] = options.recompile_limit
        key = (options.backend, options.mode, dynamic)
        if key not in self.backends:
            self.backends[key] = self.graphs.backend(options.backend, options.mode, dynamic)
        return torch.compile(target, backend=self.backends[key], dynamic=dynamic, **kwargs)


@dataclass(frozen=True)
class Prepared:
    """A strategy applied to a target.

    ``fn`` is what each request calls; ``before_call`` runs first with the call's named
    arguments (e.g. to ``mark_dynamic`` them); ``pad_shape`` says which bucket a request
    shape runs as; ``close`` undoes process-wide settings; ``notes`` describe what was done.
    """

    fn: Callable[..., Any]
    before_call: BeforeCall | None = None
    pad_shape: Callable[[Shape], Shape] | None = None
    close: Callable[[], None] | None = None
    notes: tuple[str, ...] = field(default=())
    eager: Callable[..., Any] | None = None  # the eager reference, when the target itself was changed
    named_target: Any = None  # what was passed to torch.compile, when not the whole target
    dropped_guards: list[Any] | None = None  # a guard filter's dropped guards, filled as frames compile


Prepare = Callable[[Callable[..., Any], StrategyOptions, PrepareContext], Prepared]
Unavailable = Callable[[Callable[..., Any], StrategyOptions], "str | None"]


DynamicMode = Literal["none", "automatic", "static", "dynamic", "marked"]
"""How ``torch.compile`` treats input sizes under a strategy: ``none`` (it compiles nothing),
``automatic`` (``dynamic=None``: static first, a size that changes becomes dynamic),
``static`` (``dynamic=False``: each graph accepts only the sizes it was traced for),
``dynamic`` (``dynamic=True``: every size symbolic from the first compile), ``marked`` (the
dims the options name are dynamic, the rest automatic)."""


@dataclass(frozen=True)
class Strategy:
    name: str
    description: str
    compiles: bool
    prepare: Prepare
    validate: Callable[[StrategyOptions], None] | None = None
    unavailable: Unavailable | None = None
    takes: tuple[str, ...] = ()  # options only this strategy reads ("marks", "dynamic_sources")
    dynamic: DynamicMode = "automatic"
    dynamic_with_marks: DynamicMode | None = None  # the mode when marks are given, where they change it
    # why the strategy cannot run a workload that calls the model through a step of its own
    # (a training step: loss, backward, optimizer); None: it can
    not_through_step: str | None = None

    def mode(self, options: StrategyOptions | None = None) -> DynamicMode:
        """The dynamic mode under ``options``."""
        if options is not None and options.marks and self.dynamic_with_marks is not None:
            return self.dynamic_with_marks
        return self.dynamic

    def static(self, options: StrategyOptions | None = None) -> bool:
        """Each graph accepts only the sizes it was traced for."""
        return self.mode(options) == "static"


_REGISTRY: dict[str, Strategy] = {}


def register(strategy: Strategy) -> Strategy:
    if strategy.name in _REGISTRY:
        raise ValueError(f"strategy {strategy.name!r} is already registered")
    _REGISTRY[strategy.name] = strategy
    return strategy


def strategy_names() -> list[str]:
    return list(_REGISTRY)


def get_strategy(name: str) -> Strategy:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise OptionError(f"unknown strategy {name!r} (known: {', '.join(_REGISTRY)})") from None


# ----------------------------------------------------------------------------- shared pieces


def limit_scope(options: StrategyOptions) -> contextlib.AbstractContextManager[None]:
    """The settings a trial runs under, patched for the whole trial: the recompile limit where
    ``torch.compile`` lacks ``recompile_limit=``, and ``options.config`` (``NAME=VALUE,…``)."""
    from .. import compat

    stack = contextlib.ExitStack()
    if options.recompile_limit is not None and not compat.compile_accepts("recompile_limit"):
        stack.enter_context(compat.recompile_limit(options.recompile_limit))
    if options.config:
        stack.callback(compat.patch_settings(config_settings(options.config)))
    return stack


def config_settings(config: str) -> dict[str, Any]:
    """``NAME=VALUE,…`` as settings: each VALUE as JSON when it parses (``true``, ``8``), ``True``
    and ``False`` as Python writes them, else text."""
    import json

    out: dict[str, Any] = {}
    for item in filter(None, (i.strip() for i in config.split(","))):
        name, _, value = item.partition("=")
        if value in ("True", "False"):
            out[name] = value == "True"
            continue
        try:
            out[name] = json.loads(value)
        except ValueError:
            out[name] = value
    return out


def _validate_compile(options: StrategyOptions) -> None:
    if options.mode is not None and options.backend != "inductor":
        raise OptionError(f"--mode {options.mode!r} only applies to the inductor backend, not {options.backend!r}")


def _closing(scope: contextlib.AbstractContextManager[Any]) -> Callable[[], None]:
    scope.__enter__()
    return lambda: scope.__exit__(None, None, None)


TORCH_DYNAMIC: dict[DynamicMode, bool | None] = {"automatic": None, "static": False, "dynamic": True, "marked": None}
"""The ``dynamic=`` argument of ``torch.compile`` each mode compiles with."""


def _compiled(mode: DynamicMode) -> Prepare:
    def prepare(target: Callable[..., Any], options: StrategyOptions, ctx: PrepareContext) -> Prepared:
        return Prepared(ctx.compile(target, options, dynamic=TORCH_DYNAMIC[mode]))

    return prepare


def _plain(name: str, description: str, mode: DynamicMode) -> Strategy:
    """A strategy that is ``torch.compile`` with the ``dynamic=`` of its mode, nothing else."""
    return Strategy(name, description, compiles=True, prepare=_compiled(mode), validate=_validate_compile,
                    dynamic=mode)


def apply_marks(marks: tuple[MarkSpec, ...], arguments: Mapping[str, Any]) -> None:
    import torch

    from .. import compat

    for mark in marks:
        value = arguments.get(mark.input)
        if not isinstance(value, torch.Tensor):
            raise OptionError(f"--mark {mark}: the workload has no tensor input named {mark.input!r}")
        if mark.dim >= value.dim():
            raise OptionError(f"--mark {mark}: input {mark.input!r} has {value.dim()} dimension(s)")
        compat.mark_dynamic(value, mark.dim, min=mark.min, max=mark.max)


def _prepare_mark_dynamic(target: Callable[..., Any], options: StrategyOptions, ctx: PrepareContext) -> Prepared:
    marks = options.marks
    return Prepared(
        ctx.compile(target, options),
        before_call=lambda arguments: apply_marks(marks, arguments),
    )


def _needs_marks(name: str) -> Callable[[StrategyOptions], None]:
    def validate(options: StrategyOptions) -> None:
        _validate_compile(options)
        if not options.marks:
            raise OptionError(f"strategy {name!r} needs --mark INPUT:DIM[:MIN:MAX] (e.g. --mark x:0)")

    return validate


# ----------------------------------------------------------------------------- dynamic sources


def _validate_dynamic_sources(options: StrategyOptions) -> None:
    _validate_compile(options)
    if not options.dynamic_sources:
        raise OptionError("strategy 'dynamic-sources' needs --dynamic-sources \"L['x'],L['y']:0\"")


_PARAM_SOURCE = re.compile(r"^L\[(?P<q>['\"])(?P<name>\w+)(?P=q)\](?P<rest>[^:]*)(?P<dim>:\d+)?$")


def through_wrapper(value: str, params: Sequence[str], packed: tuple[str, str] | None = ("args", "kwargs")) -> str:
    """``dynamic_sources`` with each ``L['name']…`` entry also as PyTorch names it in a frame
    that wraps the target as ``(*args, **kwargs)`` (a Hugging Face model's decorated
    ``forward``): ``L['kwargs']['name']…``, and ``L['args'][i]…`` for the target's i-th
    parameter. The reports name such an input by its parameter
    (:func:`compilescope.collect.records.rename_source`), so the name they print works as
    given. Used only for a target whose frame is such a wrapper (:func:`wraps_variadic`):
    another frame's ``*args``/``**kwargs`` would match the added names too. ``packed``: the
    names the wrapper gives them (a decorator's ``*a, **kw``)."""
    packed = packed or ("args", "kwargs")
    entries = [e for e in value.replace(" ", "").split(",") if e]
    out = list(entries)
    positional = list(params[:params.index("args")] if "args" in params else params)  # before a *args of its own
    for e in entries:
        m = _PARAM_SOURCE.match(e)
        if m is None or m["name"] == "self" or (m["name"] in packed and m["name"] not in params):
            continue
        rest, dim = m["rest"], m["dim"] or ""
        # passed by keyword, in the wrapper's **kwargs (whatever **kwargs of its own the target has,
        # as the reports rename it: compilescope.collect.records.rename_source); by position, in its *args
        more = [f"L['{packed[1]}']['{m['name']}']{rest}{dim}"]
        if m["name"] in positional:
            more.append(f"L['{packed[0]}'][{positional.index(m['name'])}]{rest}{dim}")
        out += [x for x in more if x not in out]
    return ",".join(out)


def wraps_variadic(target: Any) -> bool:
    """Whether the frame torch.compile enters for ``target`` is a decorator's ``(*args,
    **kwargs)`` around the function the reports name the inputs by (a Hugging Face model's
    ``forward``)."""
    import torch

    fn = target.forward if isinstance(target, torch.nn.Module) else target
    try:
        outer, inner = inspect.signature(fn, follow_wrapped=False), inspect.signature(fn)
    except (TypeError, ValueError):
        return False
    variadic = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    return outer != inner and bool(outer.parameters) and all(p.kind in variadic for p in outer.parameters.values())


def _prepare_dynamic_sources(target: Callable[..., Any], options: StrategyOptions, ctx: PrepareContext) -> Prepared:
    from .. import compat
    from ..collect.records import TargetInfo

    # torch reads dynamic_sources when a call compiles, not when torch.compile() wraps the
    # target, so the setting stays in force for the whole trial (a process of its own).
    value = options.dynamic_sources or ""
    if wraps_variadic(target):  # only then: another frame's *args/**kwargs must not match by accident
        info = TargetInfo(target).target
        value = through_wrapper(value, info.params, info.packed)
    close = _closing(compat.dynamic_sources(value))
    return Prepared(ctx.compile(target, options), close=close)


def _dynamic_sources_unavailable(target: Callable[..., Any], options: StrategyOptions) -> str | None:
    from .. import compat

    return None if compat.has_feature("dynamic_sources") else compat.unavailable("dynamic_sources")


# ----------------------------------------------------------------------------- regional / nested


def repeated_block(target: Callable[..., Any], name: str | None) -> tuple[type[torch.nn.Module], int] | str:
    """The submodule class to compile regionally: ``name`` if given, else the non-leaf class
    with the most instances (ties: more parameters). A string result says why there is none."""
    import torch

    if not isinstance(target, torch.nn.Module):
        return "the workload is a function, not an nn.Module with repeated blocks"
    counts: Counter[type[torch.nn.Module]] = Counter()
    for module in target.modules():
        if module is target or isinstance(module, (torch.nn.ModuleList, torch.nn.ModuleDict, torch.nn.Sequential)):
            continue
        if name is not None or any(True for _ in module.children()):
            counts[type(module)] += 1
    if name is not None:
        for cls, n in counts.items():
            if cls.__name__ == name or f"{cls.__module__}.{cls.__qualname__}" == name:
                return cls, n
        return f"the model has no submodule of class {name!r}"
    repeated = [(n, sum(p.numel() for p in _first(target, c).parameters()), c) for c, n in counts.items() if n >= 2]
    if not repeated:
        return "the model has no repeated block (a non-leaf submodule class appearing at least twice)"
    n, _, cls = max(repeated, key=lambda t: (t[0], t[1]))
    return cls, n


def _first(target: torch.nn.Module, cls: type[torch.nn.Module]) -> torch.nn.Module:
    return next(m for m in target.modules() if type(m) is cls)


def _block_unavailable(target: Callable[..., Any], options: StrategyOptions) -> str | None:
    found = repeated_block(target, options.block)
    return found if isinstance(found, str) else None


def _prepare_regional(target: Callable[..., Any], options: StrategyOptions, ctx: PrepareContext) -> Prepared:
    import torch

    found = repeated_block(target, options.block)
    assert not isinstance(found, str) and isinstance(target, torch.nn.Module)
    cls, n = found
    eager = copy.deepcopy(target)  # the reference keeps plain blocks; same weights
    # Swap each block for torch.compile(block). Not block.compile(): that compiles the block's
    # _call_impl as the top frame, which Dynamo skips for torch.nn built-ins such as
    # TransformerEncoderLayer (their files are in its skipfiles) — a silent no-op.
    for parent in list(target.modules()):
        for name, child in list(parent.named_children()):
            if type(child) is cls:
                parent._modules[name] = ctx.compile(child, options)
    return Prepared(
        target, eager=eager, named_target=_first(target, cls),
        notes=(f"compiled {n} instances of {cls.__name__} (torch.compile per instance, the rest eager)",),
    )


def _prepare_nested(target: Callable[..., Any], options: StrategyOptions, ctx: PrepareContext) -> Prepared:
    import torch

    found = repeated_block(target, options.block)
    assert not isinstance(found, str)
    cls, n = found
    original = cls.forward
    # A no-op outside torch.compile, so the eager reference runs the same code.
    cls.forward = torch.compiler.nested_compile_region(original)  # type: ignore[method-assign]

    def close() -> None:
        cls.forward = original  # type: ignore[method-assign]

    return Prepared(
        ctx.compile(target, options),
        close=close,
        notes=(f"{cls.__name__}.forward wrapped in nested_compile_region ({n} instances)",),
    )


def _nested_unavailable(target: Callable[..., Any], options: StrategyOptions) -> str | None:
    from .. import compat

    if not compat.has_feature("nested_compile_region"):
        return compat.unavailable("nested_compile_region")
    return _block_unavailable(target, options)


# ----------------------------------------------------------------------------- shapes_spec


def _shapes_spec_unavailable(target: Callable[..., Any], options: StrategyOptions) -> str | None:
    from .. import compat

    return None if compat.has_feature("shapes_spec") else compat.unavailable("shapes_spec")


def spec_params(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: Mapping[str, Any],
                spec_of: Callable[[str, Any], Any]) -> dict[str, Any]:
    """A ``ParamsSpec``'s dict for a call of ``fn``: each input's spec (``spec_of(name, value)``,
    None for none) keyed by the parameter the compiled frame has — the input's own name, or,
    when a decorator wraps ``fn`` as ``(*args, **kwargs)`` (a Hugging Face model's ``forward``),
    under the ``"*args"`` / ``"**kwargs"`` keys by how the call passes it; inputs are named by
    the wrapped function's parameters, as the reports name them."""
    inner = inspect.signature(fn)  # follows __wrapped__
    if not wraps_variadic(fn):
        # a workload's step may take more than the model does (a training step's labels): those are not its inputs
        taken = [p for p in inner.parameters.values() if p.kind != inspect.Parameter.VAR_KEYWORD]
        if len(taken) == len(inner.parameters):
            kwargs = {k: v for k, v in kwargs.items() if k in inner.parameters}
        if not any(p.kind == inspect.Parameter.VAR_POSITIONAL for p in taken):
            args = args[:len([p for p in taken if p.kind != inspect.Parameter.KEYWORD_ONLY])]
        named = inner.bind_partial(*args, **kwargs).arguments
        return {n: spec for n, v in named.items() if (spec := spec_of(n, v)) is not None}
    names = list(inner.parameters)
    params: dict[str, Any] = {}
    positional = [spec_of(names[i], v) if i < len(names) else None for i, v in enumerate(args)]
    if any(p is not None for p in positional):
        params["*args"] = positional
    keyword = {n: spec for n, v in kwargs.items() if (spec := spec_of(n, v)) is not None}
    if keyword:
        params["**kwargs"] = keyword
    return params


def _prepare_shapes_spec(target: Callable[..., Any], options: StrategyOptions, ctx: PrepareContext) -> Prepared:
    import torch

    from .. import compat

    ParamsSpec, ShapeVar, TensorSpec = compat.dynamic_spec_types()
    args, kwargs = ctx.make_inputs(ctx.stream[0])
    fn = target.forward if isinstance(target, torch.nn.Module) else target

    def spec_of(name: str, value: Any) -> Any:
        marks = [m for m in options.marks if m.input == name]
        if not marks or not isinstance(value, torch.Tensor):
            return None
        dims: list[Any] = [None] * value.dim()
        for m in marks:
            dims[m.dim] = ShapeVar(f"{name}_{m.dim}", min=m.min or 0, max=m.max)
        return TensorSpec(dims)

    params = spec_params(fn, args, kwargs, spec_of)
    spec = ParamsSpec(params)
    argument = compat.shapes_spec_argument() or "shapes_spec"  # dynamic_shapes on 2.14
    return Prepared(
        ctx.compile(target, options, **{argument: spec}),
        notes=(f"{argument}: {', '.join(f'{k}={v!r}' for k, v in params.items())}",),
    )


# ----------------------------------------------------------------------------- guard filters

# name → (the torch.compiler guard_filter_fn, what it stops guarding, the assumption it makes)
GUARD_FILTERS: dict[str, tuple[str, str, str]] = {
    "inbuilt-nn": ("skip_guard_on_inbuilt_nn_modules_unsafe", "no guards on torch.nn's own modules (Linear, …)",
                   "torch.nn's own modules (Linear, LayerNorm, …) are not changed after the first call: their "
                   "attributes, hooks and parameters (requires_grad included)"),
    "all-nn": ("skip_guard_on_all_nn_modules_unsafe", "no guards on any nn.Module, user-defined ones included",
               "no nn.Module is changed after the first call: no attribute (a flag, a scale), submodule, hook or "
               "parameter's requires_grad"),
    "tensors-only": ("keep_tensor_guards_unsafe", "only the guards on the input tensors (none on parameters)",
                     "nothing but the input tensors changes after the first call: module attributes, globals, "
                     "grad mode, autocast and the default device all stay as they were"),
    "no-globals": ("skip_guard_on_globals_unsafe", "no guards on globals",
                   "the globals the compiled code reads (module-level settings, imported functions) never change"),
}


def guard_filter_name(strategy: str) -> str | None:
    """``all-nn`` for ``guard-filter[all-nn]``; None for any other strategy."""
    if strategy.startswith("guard-filter[") and strategy.endswith("]"):
        key = strategy[len("guard-filter["):-1]
        return key if key in GUARD_FILTERS else None
    return None


def _prepare_guard_filter(key: str) -> Prepare:
    def prepare(target: Callable[..., Any], options: StrategyOptions, ctx: PrepareContext) -> Prepared:
        import torch

        from .. import compat

        name = GUARD_FILTERS[key][0]
        dropped: list[Any] = []
        fn = compat.recording_guard_filter(getattr(torch.compiler, name), dropped)
        return Prepared(ctx.compile(target, options, guard_filter_fn=fn), dropped_guards=dropped,
                        notes=(f"guard_filter_fn=torch.compiler.{name}",))

    return prepare


def _guard_filter_unavailable(key: str) -> Unavailable:
    def unavailable(target: Callable[..., Any], options: StrategyOptions) -> str | None:
        import torch

        name = GUARD_FILTERS[key][0]
        return None if hasattr(torch.compiler, name) else f"torch {torch.__version__} has no torch.compiler.{name}"

    return unavailable


# ----------------------------------------------------------------------------- the registry

def _prepare_bucket(target: Callable[..., Any], options: StrategyOptions, ctx: PrepareContext) -> Prepared:
    from .bucket import prepare_bucket  # imports torch: loaded when a trial prepares it

    return prepare_bucket(target, options, ctx)


register(Strategy("eager", "no compilation: the baseline", compiles=False, prepare=lambda t, o, c: Prepared(t),
                  dynamic="none"))
register(_plain("default", "torch.compile(dynamic=None): static first, automatic dynamic after a size change",
                "automatic"))
register(_plain("static", "torch.compile(dynamic=False): one graph per distinct shape", "static"))
register(_plain("dynamic", "torch.compile(dynamic=True): symbolic sizes from the first compile", "dynamic"))
register(Strategy("mark-dynamic", "torch.compile + torch._dynamo.mark_dynamic(input, dim, min, max) before each call",
                  compiles=True, prepare=_prepare_mark_dynamic, validate=_needs_marks("mark-dynamic"), takes=("marks",),
                  dynamic="marked"))
register(Strategy("dynamic-sources", "torch.compile with torch.compiler.config dynamic_sources (e.g. L['x']:0)",
                  compiles=True, prepare=_prepare_dynamic_sources, validate=_validate_dynamic_sources,
                  unavailable=_dynamic_sources_unavailable, takes=("dynamic_sources",), dynamic="marked"))
register(Strategy("regional", "compile each instance of the repeated block in place; the rest runs eager",
                  compiles=True, prepare=_prepare_regional, validate=_validate_compile,
                  unavailable=_block_unavailable, dynamic="automatic"))
register(Strategy("nested", "compile the whole model with the repeated block in nested_compile_region",
                  compiles=True, prepare=_prepare_nested, validate=_validate_compile, unavailable=_nested_unavailable,
                  dynamic="automatic"))
register(Strategy("bucket", "pad the varying dims up to bucket sizes, compile static, slice outputs back",
                  compiles=True, prepare=_prepare_bucket, validate=_validate_compile, dynamic="static",
                  dynamic_with_marks="marked",
                  not_through_step="bucket pads the model's inputs with zeros, and this workload calls the model "
                                   "through a step of its own (a training step): its loss and gradients would count "
                                   "the padding"))
register(Strategy("shapes-spec", "torch.compile(shapes_spec=ParamsSpec) from --mark (unbacked dynamic dims)",
                  compiles=True, prepare=_prepare_shapes_spec, validate=_needs_marks("shapes-spec"),
                  unavailable=_shapes_spec_unavailable, takes=("marks",), dynamic="marked"))
for _key, (_fn, _what, _assumes) in GUARD_FILTERS.items():
    register(Strategy(f"guard-filter[{_key}]", f"torch.compile with guard_filter_fn=torch.compiler.{_fn}: {_what} "
                      f"(unsafe: assumes {_assumes})", compiles=True, prepare=_prepare_guard_filter(_key),
                      validate=_validate_compile, unavailable=_guard_filter_unavailable(_key),
                      dynamic="automatic"))
