"""Compile strategies: one registry entry each, turning a built workload into a callable.

The runner knows nothing of individual strategies; a new strategy is one :func:`register`
call. A strategy may declare itself unavailable for a workload or for the installed torch
(with the reason), which the runner records instead of failing.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from . import compat
from .errors import StrategyError
from .model import MarkSpec, Shape, StrategyOptions

BeforeCall = Callable[[Mapping[str, Any]], None]


@dataclass(frozen=True)
class PrepareContext:
    """What a strategy may look at besides the target: the workload's inputs and stream."""

    make_inputs: Callable[[Shape], tuple[tuple[Any, ...], dict[str, Any]]]
    stream: tuple[Shape, ...]


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


Prepare = Callable[[Callable[..., Any], StrategyOptions, PrepareContext], Prepared]
Unavailable = Callable[[Callable[..., Any], StrategyOptions], "str | None"]


@dataclass(frozen=True)
class Strategy:
    name: str
    description: str
    compiles: bool
    prepare: Prepare
    validate: Callable[[StrategyOptions], None] | None = None
    unavailable: Unavailable | None = None


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
        raise StrategyError(f"unknown strategy {name!r} (known: {', '.join(_REGISTRY)})") from None


def parse_strategies(text: str, options: StrategyOptions) -> tuple[str, ...]:
    if text.strip() == "all":
        text = ",".join(_REGISTRY)
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    if not names:
        raise StrategyError("no strategy given")
    for name in names:
        strategy = get_strategy(name)
        if strategy.validate is not None:
            strategy.validate(options)
    return names


def parse_mark(text: str) -> MarkSpec:
    """``x:0`` or ``x:0:1:1024`` (``x:0::1024`` leaves the minimum open)."""
    parts = text.split(":")
    if len(parts) not in (2, 4) or not parts[0].strip():
        raise StrategyError(f"malformed --mark {text!r}: expected INPUT:DIM or INPUT:DIM:MIN:MAX")

    def num(token: str, what: str, optional: bool) -> int | None:
        if optional and token == "":
            return None
        try:
            value = int(token)
        except ValueError:
            raise StrategyError(f"malformed --mark {text!r}: {what} {token!r} is not an integer") from None
        if value < 0:
            raise StrategyError(f"malformed --mark {text!r}: {what} must be >= 0")
        return value

    dim = num(parts[1], "dim", optional=False)
    assert dim is not None
    lo = hi = None
    if len(parts) == 4:
        lo, hi = num(parts[2], "min", True), num(parts[3], "max", True)
        if lo is not None and hi is not None and lo > hi:
            raise StrategyError(f"malformed --mark {text!r}: min {lo} is above max {hi}")
    return MarkSpec(input=parts[0].strip(), dim=dim, min=lo, max=hi)


def parse_buckets(text: str) -> tuple[int, ...]:
    """``pow2`` (empty tuple) or an ascending list such as ``16,32,64,128``."""
    if text.strip() in ("", "pow2"):
        return ()
    try:
        values = tuple(int(v) for v in text.split(","))
    except ValueError:
        raise StrategyError(f"malformed --buckets {text!r}: expected pow2 or a list of integers") from None
    if any(v <= 0 for v in values) or list(values) != sorted(set(values)):
        raise StrategyError(f"malformed --buckets {text!r}: sizes must be positive and ascending")
    return values


# ----------------------------------------------------------------------------- shared pieces


def compile_kwargs(options: StrategyOptions) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"backend": options.backend}
    if options.mode is not None:
        kwargs["mode"] = options.mode
    if options.recompile_limit is not None and compat.compile_accepts("recompile_limit"):
        kwargs["recompile_limit"] = options.recompile_limit
    return kwargs


def limit_scope(options: StrategyOptions) -> contextlib.AbstractContextManager[None]:
    """Where ``torch.compile`` lacks ``recompile_limit=``, the runner patches the config for the trial."""
    if options.recompile_limit is not None and not compat.compile_accepts("recompile_limit"):
        return compat.recompile_limit(options.recompile_limit)
    return contextlib.nullcontext()


def _validate_compile(options: StrategyOptions) -> None:
    if options.mode is not None and options.backend != "inductor":
        raise StrategyError(f"--mode {options.mode!r} only applies to the inductor backend, not {options.backend!r}")


def _closing(scope: contextlib.AbstractContextManager[Any]) -> Callable[[], None]:
    scope.__enter__()
    return lambda: scope.__exit__(None, None, None)


def _compiled(dynamic: bool | None) -> Prepare:
    def prepare(target: Callable[..., Any], options: StrategyOptions, ctx: PrepareContext) -> Prepared:
        return Prepared(torch.compile(target, dynamic=dynamic, **compile_kwargs(options)))

    return prepare


def apply_marks(marks: tuple[MarkSpec, ...], arguments: Mapping[str, Any]) -> None:
    for mark in marks:
        value = arguments.get(mark.input)
        if not isinstance(value, torch.Tensor):
            raise StrategyError(f"--mark {mark}: the workload has no tensor input named {mark.input!r}")
        if mark.dim >= value.dim():
            raise StrategyError(f"--mark {mark}: input {mark.input!r} has {value.dim()} dimension(s)")
        compat.mark_dynamic(value, mark.dim, min=mark.min, max=mark.max)


def _prepare_mark_dynamic(target: Callable[..., Any], options: StrategyOptions, ctx: PrepareContext) -> Prepared:
    marks = options.marks
    return Prepared(
        torch.compile(target, **compile_kwargs(options)),
        before_call=lambda arguments: apply_marks(marks, arguments),
    )


def _needs_marks(name: str) -> Callable[[StrategyOptions], None]:
    def validate(options: StrategyOptions) -> None:
        _validate_compile(options)
        if not options.marks:
            raise StrategyError(f"strategy {name!r} needs --mark INPUT:DIM[:MIN:MAX] (e.g. --mark x:0)")

    return validate


# ----------------------------------------------------------------------------- dynamic sources


def _validate_dynamic_sources(options: StrategyOptions) -> None:
    _validate_compile(options)
    if not options.dynamic_sources:
        raise StrategyError("strategy 'dynamic-sources' needs --dynamic-sources \"L['x'],L['y']:0\"")


def _prepare_dynamic_sources(target: Callable[..., Any], options: StrategyOptions, ctx: PrepareContext) -> Prepared:
    # torch reads dynamic_sources when a call compiles, not when torch.compile() wraps the
    # target, so the setting stays in force for the whole trial (a process of its own).
    close = _closing(torch.compiler.config.patch(dynamic_sources=options.dynamic_sources))
    return Prepared(torch.compile(target, **compile_kwargs(options)), close=close)


def _dynamic_sources_unavailable(target: Callable[..., Any], options: StrategyOptions) -> str | None:
    if not hasattr(torch.compiler.config, "dynamic_sources"):
        return f"torch {torch.__version__} has no torch.compiler.config.dynamic_sources"
    return None


# ----------------------------------------------------------------------------- regional / nested


def repeated_block(target: Callable[..., Any], name: str | None) -> tuple[type[torch.nn.Module], int] | str:
    """The submodule class to compile regionally: ``name`` if given, else the non-leaf class
    with the most instances (ties: more parameters). A string result says why there is none."""
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
    found = repeated_block(target, options.block)
    assert not isinstance(found, str) and isinstance(target, torch.nn.Module)
    cls, n = found
    eager = copy.deepcopy(target)  # the reference keeps plain blocks; same weights
    kwargs = compile_kwargs(options)
    # Swap each block for torch.compile(block). Not block.compile(): that compiles the block's
    # _call_impl as the top frame, which Dynamo skips for torch.nn built-ins such as
    # TransformerEncoderLayer (their files are in its skipfiles) — a silent no-op.
    for parent in list(target.modules()):
        for name, child in list(parent.named_children()):
            if type(child) is cls:
                parent._modules[name] = torch.compile(child, **kwargs)
    return Prepared(
        target, eager=eager,
        notes=(f"compiled {n} instances of {cls.__name__} (torch.compile per instance, the rest eager)",),
    )


def _prepare_nested(target: Callable[..., Any], options: StrategyOptions, ctx: PrepareContext) -> Prepared:
    found = repeated_block(target, options.block)
    assert not isinstance(found, str)
    cls, n = found
    original = cls.forward
    # A no-op outside torch.compile, so the eager reference runs the same code.
    cls.forward = torch.compiler.nested_compile_region(original)  # type: ignore[method-assign]

    def close() -> None:
        cls.forward = original  # type: ignore[method-assign]

    return Prepared(
        torch.compile(target, **compile_kwargs(options)),
        close=close,
        notes=(f"{cls.__name__}.forward wrapped in nested_compile_region ({n} instances)",),
    )


def _nested_unavailable(target: Callable[..., Any], options: StrategyOptions) -> str | None:
    if not hasattr(torch.compiler, "nested_compile_region"):
        return f"torch {torch.__version__} has no torch.compiler.nested_compile_region"
    return _block_unavailable(target, options)


# ----------------------------------------------------------------------------- bucketing


def bucket_size(value: int, buckets: tuple[int, ...]) -> int:
    """The smallest bucket >= value: a power of two, or the next size in ``buckets``
    (a value above the largest bucket runs unpadded)."""
    if not buckets:
        return 1 if value <= 1 else 1 << (value - 1).bit_length()
    return next((b for b in buckets if b >= value), value)


Slot = tuple[str, Any]  # ("arg", position) or ("kwarg", name)


def _tensor_leaves(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> list[tuple[Slot, torch.Tensor]]:
    out: list[tuple[Slot, torch.Tensor]] = [(("arg", i), a) for i, a in enumerate(args) if isinstance(a, torch.Tensor)]
    out += [(("kwarg", k), v) for k, v in kwargs.items() if isinstance(v, torch.Tensor)]
    return out


def _tied_dims(before: list[tuple[Slot, torch.Tensor]], after: list[tuple[Slot, torch.Tensor]]) -> dict[Slot, list[int]]:
    """Tensor dims whose size changed between two probes: those follow the probed shape dim."""
    tied: dict[Slot, list[int]] = {}
    for (path, a), (_, b) in zip(before, after):
        if a.dim() == b.dim():
            dims = [i for i in range(a.dim()) if a.shape[i] != b.shape[i]]
            if dims:
                tied[path] = dims
    return tied


def _outputs(out: Any) -> list[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in _outputs(o)]
    if isinstance(out, dict):
        return [t for o in out.values() for t in _outputs(o)]
    return []


def _prepare_bucket(target: Callable[..., Any], options: StrategyOptions, ctx: PrepareContext) -> Prepared:
    buckets = options.buckets
    base = ctx.stream[0]
    args0, kwargs0 = ctx.make_inputs(base)
    leaves0 = _tensor_leaves(args0, kwargs0)
    with torch.no_grad():
        out0 = _outputs(target(*args0, **kwargs0))
    input_dims: dict[str, dict[Slot, list[int]]] = {}
    output_dims: dict[str, list[list[int]]] = {}
    for dim in base:
        probe = dict(base, **{dim: base[dim] + 1})
        args1, kwargs1 = ctx.make_inputs(probe)
        input_dims[dim] = _tied_dims(leaves0, _tensor_leaves(args1, kwargs1))
        with torch.no_grad():
            out1 = _outputs(target(*args1, **kwargs1))
        output_dims[dim] = [
            [i for i in range(a.dim()) if a.dim() == b.dim() and a.shape[i] != b.shape[i]] for a, b in zip(out0, out1)
        ]
    compiled = torch.compile(target, dynamic=False, **compile_kwargs(options))

    def current_shape(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Shape:
        leaves = dict(_tensor_leaves(args, kwargs))
        shape: Shape = {}
        for dim, tied in input_dims.items():
            if tied:
                slot, dims = next(iter(tied.items()))
                shape[dim] = int(leaves[slot].shape[dims[0]])
        return shape

    def pad_shape(shape: Shape) -> Shape:
        return {d: bucket_size(v, buckets) if input_dims.get(d) else v for d, v in shape.items()}

    def run(*args: Any, **kwargs: Any) -> Any:
        shape = current_shape(args, kwargs)
        target_shape = pad_shape(shape)
        padded: dict[str, Any] = {"arg": list(args), "kwarg": dict(kwargs)}
        for dim, tied in input_dims.items():
            grow = target_shape[dim] - shape[dim]
            if grow <= 0:
                continue
            for (kind, key), dims in tied.items():
                t = padded[kind][key]
                for d in dims:
                    t = torch.nn.functional.pad(t, [0, 0] * (t.dim() - d - 1) + [0, grow])
                padded[kind][key] = t
        padded_args, padded_kwargs = padded["arg"], padded["kwarg"]
        out = compiled(*padded_args, **padded_kwargs)
        return _slice_back(out, shape, target_shape, output_dims)

    return Prepared(
        run,
        pad_shape=pad_shape,
        notes=(
            "buckets: " + ("powers of two" if not buckets else ",".join(map(str, buckets))),
            "padded with zeros along " + ", ".join(
                f"{d}→" + "/".join(f"{k[1]}:{ds}" for k, ds in t.items()) for d, t in input_dims.items() if t
            ),
        ),
    )


def _slice_back(out: Any, shape: Shape, padded: Shape, output_dims: dict[str, list[list[int]]]) -> Any:
    counter = iter(range(1 << 30))

    def visit(o: Any) -> Any:
        if isinstance(o, torch.Tensor):
            i = next(counter)
            for dim, per_output in output_dims.items():
                if padded[dim] == shape[dim] or i >= len(per_output):
                    continue
                for d in per_output[i]:
                    o = o.narrow(d, 0, o.shape[d] - (padded[dim] - shape[dim]))
            return o
        if isinstance(o, tuple):
            return type(o)(*[visit(v) for v in o]) if hasattr(o, "_fields") else tuple(visit(v) for v in o)
        if isinstance(o, list):
            return [visit(v) for v in o]
        if isinstance(o, dict):
            return type(o)({k: visit(v) for k, v in o.items()})
        return o

    return visit(out)


# ----------------------------------------------------------------------------- shapes_spec


def _shapes_spec_unavailable(target: Callable[..., Any], options: StrategyOptions) -> str | None:
    if not compat.compile_accepts("shapes_spec"):
        return f"torch {torch.__version__}'s torch.compile has no shapes_spec argument"
    return None


def _prepare_shapes_spec(target: Callable[..., Any], options: StrategyOptions, ctx: PrepareContext) -> Prepared:
    from torch.fx.experimental.dynamic_spec import ParamsSpec, ShapeVar, TensorSpec

    args, kwargs = ctx.make_inputs(ctx.stream[0])
    fn = target.forward if isinstance(target, torch.nn.Module) else target
    named = inspect.signature(fn).bind(*args, **kwargs).arguments
    params: dict[str, Any] = {}
    for name, value in named.items():
        marks = [m for m in options.marks if m.input == name]
        if not marks or not isinstance(value, torch.Tensor):
            continue
        dims: list[Any] = [None] * value.dim()
        for m in marks:
            dims[m.dim] = ShapeVar(f"{name}_{m.dim}", min=m.min or 0, max=m.max)
        params[name] = TensorSpec(dims)
    spec = ParamsSpec(params)
    return Prepared(
        torch.compile(target, shapes_spec=spec, **compile_kwargs(options)),
        notes=(f"shapes_spec: {', '.join(f'{k}={v!r}' for k, v in params.items())}",),
    )


# ----------------------------------------------------------------------------- the registry

register(Strategy("eager", "no compilation: the baseline", compiles=False, prepare=lambda t, o, c: Prepared(t)))
register(Strategy("default", "torch.compile(dynamic=None): static first, automatic dynamic after a size change",
                  compiles=True, prepare=_compiled(None), validate=_validate_compile))
register(Strategy("static", "torch.compile(dynamic=False): one graph per distinct shape",
                  compiles=True, prepare=_compiled(False), validate=_validate_compile))
register(Strategy("dynamic", "torch.compile(dynamic=True): symbolic sizes from the first compile",
                  compiles=True, prepare=_compiled(True), validate=_validate_compile))
register(Strategy("mark-dynamic", "torch.compile + torch._dynamo.mark_dynamic(input, dim, min, max) before each call",
                  compiles=True, prepare=_prepare_mark_dynamic, validate=_needs_marks("mark-dynamic")))
register(Strategy("dynamic-sources", "torch.compile with torch.compiler.config dynamic_sources (e.g. L['x']:0)",
                  compiles=True, prepare=_prepare_dynamic_sources, validate=_validate_dynamic_sources,
                  unavailable=_dynamic_sources_unavailable))
register(Strategy("regional", "compile each instance of the repeated block in place; the rest runs eager",
                  compiles=True, prepare=_prepare_regional, validate=_validate_compile,
                  unavailable=_block_unavailable))
register(Strategy("nested", "compile the whole model with the repeated block in nested_compile_region",
                  compiles=True, prepare=_prepare_nested, validate=_validate_compile, unavailable=_nested_unavailable))
register(Strategy("bucket", "pad the varying dims up to bucket sizes, compile static, slice outputs back",
                  compiles=True, prepare=_prepare_bucket, validate=_validate_compile))
register(Strategy("shapes-spec", "torch.compile(shapes_spec=ParamsSpec) from --mark (unbacked dynamic dims)",
                  compiles=True, prepare=_prepare_shapes_spec, validate=_needs_marks("shapes-spec"),
                  unavailable=_shapes_spec_unavailable))
