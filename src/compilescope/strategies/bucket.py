"""The bucketing strategy: pad the varying dims of each request up to a bucket size,
run a static compiled graph per bucket, and slice the outputs back to the request's size.

Which tensor dims follow which shape dim is found by probing the workload's own input
factory (and the target's outputs) at the stream's first shape and one size larger. Only the
shape dims the stream varies are padded. With ``marks`` the padded dims are also marked
dynamic (unbounded) and the target compiled with automatic dynamic: one graph for every
padded size, where the padding keeps the divisibility guards true.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import torch

from .. import compat
from ..errors import OptionError
from ..model import Shape, StrategyOptions

if TYPE_CHECKING:
    from . import PrepareContext, Prepared


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


def prepare_bucket(target: Callable[..., Any], options: StrategyOptions, ctx: PrepareContext) -> Prepared:
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
    varying = {d for d in base if len({s.get(d) for s in ctx.stream}) > 1}
    input_dims = {d: t for d, t in input_dims.items() if d in varying}
    untied = sorted(d for d, t in input_dims.items() if not t)
    if untied:  # nothing to pad: the size lives inside an object the call passes, say
        raise OptionError(f"strategy 'bucket' pads the tensors a call passes as arguments; "
                          f"{', '.join(map(repr, untied))} changes none of them (a tensor inside an object or "
                          "container it passes?), so it cannot pad it")
    from . import TORCH_DYNAMIC, get_strategy

    marked = get_strategy("bucket").mode(options) == "marked"
    compiled = ctx.compile(target, options, dynamic=TORCH_DYNAMIC["marked" if marked else "static"])

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
        if marked:
            for tied in input_dims.values():
                for (kind, key), dims in tied.items():
                    for d in dims:
                        compat.mark_dynamic(padded[kind][key], d)
        padded_args, padded_kwargs = padded["arg"], padded["kwarg"]
        out = compiled(*padded_args, **padded_kwargs)
        return _slice_back(out, shape, target_shape, output_dims)

    from . import Prepared

    return Prepared(
        run,
        pad_shape=pad_shape,
        notes=(
            "buckets: " + ("powers of two" if not buckets else ",".join(map(str, buckets)))
            + (" (padded dims marked dynamic)" if marked else ""),
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
