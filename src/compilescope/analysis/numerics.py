"""Compiled vs eager outputs: max abs / rel error and pass/fail with dtype-aware tolerances.

A faster wrong answer is a failure, not a win. Tolerances are named per dtype; float32 is
looser than ``torch.testing``'s default because compilers legitimately reorder reductions
and fuse ops (PyTorch's own dynamo benchmark harness accepts 1e-4 for float32).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import torch

from ..leaves import Node, source, type_name, walk
from ..model import NumericsCheck, Shape

# (atol, rtol) per dtype; a dtype not listed compares exactly.
TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float64: (1e-7, 1e-7),
    torch.float32: (1e-4, 1e-4),
    torch.bfloat16: (1e-2, 1.6e-2),
    torch.float16: (1e-3, 1e-3),
    torch.complex64: (1e-4, 1e-4),
    torch.complex128: (1e-7, 1e-7),
}


def flatten_outputs(out: Any, path: str = "out") -> Iterator[tuple[str, Any]]:
    """Leaves of a nested output, each with its path for messages: tensors and plain values
    inside tuples, lists, dicts, registered pytree containers, dataclasses and objects'
    attributes (a ``ModelOutput``'s cache, ``out['past_key_values'].layers[0].keys``), and
    each container or object on the way as a :class:`~compilescope.leaves.Node` (its type,
    and its length), bounded as :func:`compilescope.leaves.walk` is."""
    for steps, value in walk(out).items:
        yield source(path, steps), value


def _same_plain(expected: Any, actual: Any) -> bool:
    if isinstance(expected, float) and isinstance(actual, float) and math.isnan(expected) and math.isnan(actual):
        return True
    try:
        return bool(expected == actual)
    except Exception:  # an __eq__ that does not give a truth value
        return expected is actual


def compare_outputs(shape: Shape, expected: Any, actual: Any) -> NumericsCheck:
    """Compiled outputs against eager's, by value: every tensor within tolerance, every plain
    value equal, every container and object of the same type and length."""
    exp_walk, act_walk = walk(expected), walk(actual)
    exp_leaves = [(source("out", p), v) for p, v in exp_walk.items]
    act_leaves = [(source("out", p), v) for p, v in act_walk.items]
    if [p for p, _ in exp_leaves] != [p for p, _ in act_leaves]:
        return NumericsCheck(shape, None, None, None, None, None, False, "output structure differs from eager")
    worst_abs, worst_rel = 0.0, 0.0
    dtype_name: str | None = None
    atol_used: float | None = None
    rtol_used: float | None = None
    for (path, e), (_, a) in zip(exp_leaves, act_leaves):
        if isinstance(e, Node):
            if e != a:
                got = a if isinstance(a, Node) else Node(type_name(a))
                return NumericsCheck(shape, None, None, None, None, None, False,
                                     f"{path}: {got.type} of length {got.length} vs eager {e.type} of length {e.length}"
                                     if e.type == got.type else f"{path}: {got.type} vs eager {e.type}")
            continue
        if not isinstance(e, torch.Tensor):
            if isinstance(a, torch.Tensor) or not _same_plain(e, a):
                return NumericsCheck(shape, None, None, None, None, None, False, f"{path}: {a!r} != eager {e!r}")
            continue
        if not isinstance(a, torch.Tensor) or a.shape != e.shape or a.dtype != e.dtype:
            got = f"{tuple(a.shape)} {a.dtype}" if isinstance(a, torch.Tensor) else type(a).__name__
            return NumericsCheck(
                shape, str(e.dtype), None, None, None, None, False, f"{path}: {got} vs eager {tuple(e.shape)} {e.dtype}"
            )
        atol, rtol = TOLERANCES.get(e.dtype, (0.0, 0.0))
        dtype_name, atol_used, rtol_used = str(e.dtype).removeprefix("torch."), atol, rtol
        if e.numel() == 0:
            continue
        e64 = e.detach().to("cpu", torch.complex128 if e.is_complex() else torch.float64)
        a64 = a.detach().to("cpu", e64.dtype)
        nan_mismatch = bool((e64.isnan() != a64.isnan()).any())
        diff = (a64 - e64).abs().nan_to_num(0.0)
        ref = e64.abs().nan_to_num(0.0)
        worst_abs = max(worst_abs, float(diff.max()))
        worst_rel = max(worst_rel, float((diff / ref.clamp_min(1e-12)).max()))
        if nan_mismatch:
            # a NaN on one side only: the error there is NaN, not the 0 that nan_to_num leaves,
            # and no number (a NaN is not stored as one): the detail says what happened
            compiled_only = bool((a64.isnan() & ~e64.isnan()).any())
            eager_only = bool((e64.isnan() & ~a64.isnan()).any())
            count = int((e64.isnan() != a64.isnan()).sum())
            where = ("compiled and eager gave NaN at different elements" if compiled_only and eager_only
                     else f"only {'compiled' if compiled_only else 'eager'} gave NaN")
            return NumericsCheck(
                shape, dtype_name, None, None, atol, rtol, False,
                f"{path}: NaN in {count} element(s) where {where}",
            )
        if bool((diff > atol + rtol * ref).any()):
            return NumericsCheck(shape, dtype_name, worst_abs, worst_rel, atol, rtol, False, f"{path} exceeds tolerance")
    cut = max(exp_walk.cut, act_walk.cut)
    detail = f"{cut} part(s) of the outputs past the walk's bounds not compared" if cut else None
    return NumericsCheck(shape, dtype_name, worst_abs, worst_rel, atol_used, rtol_used, True, detail)
