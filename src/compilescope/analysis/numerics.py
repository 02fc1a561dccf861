"""Compiled vs eager outputs: max abs / rel error and pass/fail with dtype-aware tolerances.

A faster wrong answer is a failure, not a win. Tolerances are named per dtype; float32 is
looser than ``torch.testing``'s default because compilers legitimately reorder reductions
and fuse ops (PyTorch's own dynamo benchmark harness accepts 1e-4 for float32).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any, NamedTuple

import torch

from ..leaves import Node, Walk, is_plain, source, type_name, walk
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


# a Python float or complex: most come from a float32 tensor's ``.item()`` (a loss value)
PLAIN_TOLERANCE = TOLERANCES[torch.float32]


class _Leaf(NamedTuple):
    """One leaf compared: passed, why not, and the errors where numbers were compared."""

    passed: bool
    detail: str | None = None
    dtype: str | None = None
    abs_err: float | None = None
    rel_err: float | None = None
    atol: float | None = None
    rtol: float | None = None
    unjudged: bool = False  # no comparison can read it (a tensor with no dense form, a set of tensors)


def frozen_outputs(out: Any) -> Walk:
    """``out``'s leaves as they are now, each tensor and array copied: a later call may write
    in place the very tensor this one returned (a buffer it updates), and the comparison is of
    what each call gave."""
    found = walk(out, values=True)
    return Walk([(p, _copied(v)) for p, v in found.items], found.cut)


def _copied(value: Any) -> Any:
    try:
        if isinstance(value, torch.Tensor):
            return value.detach().clone()
        if isinstance(value, (set, frozenset)) or hasattr(value, "__array_interface__"):
            return value.copy()
    except Exception:  # a tensor subclass that cannot be copied: compared as it is
        pass
    return value


def _as_tensor(value: Any) -> torch.Tensor | None:
    """A tensor (dense, detached) or a numpy array or scalar as one; None when it cannot be
    (an object array, a layout with no dense form)."""
    try:
        if isinstance(value, torch.Tensor):
            value = value.detach()
            return value if value.layout == torch.strided else value.to_dense()
        import numpy

        return torch.from_numpy(numpy.ascontiguousarray(value))
    except Exception:
        return None


def _same_plain(expected: Any, actual: Any) -> bool:
    try:
        same = expected == actual
        return bool(same.all() if hasattr(same, "all") else same)
    except Exception:  # an __eq__ that does not give a truth value
        return expected is actual


def _plain_number(expected: complex, actual: complex) -> _Leaf:
    """A Python float or complex: NaN equals NaN and an infinity itself (each part), the rest
    within :data:`PLAIN_TOLERANCE`."""
    atol, rtol = PLAIN_TOLERANCE
    e, a = complex(expected), complex(actual)
    parts = ((e.real, a.real), (e.imag, a.imag))
    if any(not math.isfinite(x) or not math.isfinite(y) for x, y in parts):
        if not all(x == y or (math.isnan(x) and math.isnan(y)) for x, y in parts if not math.isfinite(x + y)):
            return _Leaf(False, None, type(expected).__name__)
    diff = abs(complex(*(y - x if math.isfinite(x + y) else 0.0 for x, y in parts)))
    ref = abs(complex(*(x if math.isfinite(x) else 0.0 for x, _ in parts)))
    return _Leaf(diff <= atol + rtol * ref, None, type(expected).__name__, diff, diff / max(ref, 1e-12), atol, rtol)


def _leaf(path: str, e: Any, a: Any) -> _Leaf:
    """Eager's leaf ``e`` against the compiled one ``a`` at ``path``."""
    if isinstance(e, Node):
        if e == a:
            return _Leaf(True)
        got = a if isinstance(a, Node) else Node(type_name(a))
        return _Leaf(False, f"{path}: {got.type} of length {got.length} vs eager {e.type} of length {e.length}"
                     if e.type == got.type else f"{path}: {got.type} vs eager {e.type}")
    if type(e) is not type(a) and not (isinstance(e, torch.Tensor) and isinstance(a, torch.Tensor)) \
            and not (is_plain(e) and is_plain(a)):
        return _Leaf(False, f"{path}: {type_name(a)} vs eager {type_name(e)}")
    if isinstance(e, torch.Tensor) or hasattr(e, "__array_interface__"):
        et, at = _as_tensor(e), _as_tensor(a)
        if et is not None and at is not None:
            return _tensors(path, et, at)
        if isinstance(e, torch.Tensor):
            return _Leaf(False, f"{path}: a {e.layout} tensor no comparison can read", unjudged=True)
        return _Leaf(_same_plain(e, a), None if _same_plain(e, a) else f"{path}: differs from eager")
    if isinstance(e, (set, frozenset)) and not all(is_plain(v) and v == v for v in (*e, *a)):
        return _Leaf(False, f"{path}: a set of values no comparison can read (tensors, NaN)", unjudged=True)
    if isinstance(e, (float, complex)) and isinstance(a, (float, complex)):
        leaf = _plain_number(e, a)
        return leaf if leaf.passed else leaf._replace(detail=f"{path}: {a!r} != eager {e!r}")
    return _Leaf(True) if _same_plain(e, a) else _Leaf(False, f"{path}: {a!r} != eager {e!r}")


def _tensors(path: str, e: torch.Tensor, a: torch.Tensor) -> _Leaf:
    """Two dense tensors: same sizes and dtype, then floating values within their dtype's
    tolerance (NaN where eager has NaN) and integers and booleans exactly."""
    if a.shape != e.shape or a.dtype != e.dtype:
        return _Leaf(False, f"{path}: {tuple(a.shape)} {a.dtype} vs eager {tuple(e.shape)} {e.dtype}", str(e.dtype))
    atol, rtol = TOLERANCES.get(e.dtype, (0.0, 0.0))
    dtype = str(e.dtype).removeprefix("torch.")
    if e.numel() == 0:
        return _Leaf(True, None, dtype, None, None, atol, rtol)
    exact = not (e.is_floating_point() or e.is_complex())
    wide = torch.int64 if exact else torch.complex128 if e.is_complex() else torch.float64
    e64, a64 = e.to("cpu", wide), a.to("cpu", wide)
    diff = (a64 - e64).abs().to(torch.float64).nan_to_num(0.0)
    ref = e64.abs().to(torch.float64).nan_to_num(0.0)
    worst_abs, worst_rel = float(diff.max()), float((diff / ref.clamp_min(1e-12)).max())
    if exact:
        same = bool(torch.equal(e64, a64))
        return _Leaf(same, None if same else f"{path} differs from eager", dtype, worst_abs, worst_rel, 0.0, 0.0)
    nans = e64.isnan() != a64.isnan()
    if bool(nans.any()):
        # a NaN on one side only: the error there is NaN, not the 0 that nan_to_num leaves,
        # and no number (a NaN is not stored as one): the detail says what happened
        compiled_only = bool((a64.isnan() & ~e64.isnan()).any())
        eager_only = bool((e64.isnan() & ~a64.isnan()).any())
        where = ("compiled and eager gave NaN at different elements" if compiled_only and eager_only
                 else f"only {'compiled' if compiled_only else 'eager'} gave NaN")
        return _Leaf(False, f"{path}: NaN in {int(nans.sum())} element(s) where {where}", dtype, None, None, atol, rtol)
    ok = not bool((diff > atol + rtol * ref).any())
    return _Leaf(ok, None if ok else f"{path} exceeds tolerance", dtype, worst_abs, worst_rel, atol, rtol)


def compare_outputs(shape: Shape, expected: Any, actual: Any) -> NumericsCheck:
    """Compiled outputs against eager's, by value (each a value, or its :func:`frozen_outputs`):
    every tensor and numpy array within its dtype's tolerance (integers exactly), every Python
    float within float32's, every other plain value and set equal, every container and object
    of the same type and length."""
    exp = expected if isinstance(expected, Walk) else walk(expected, values=True)
    act = actual if isinstance(actual, Walk) else walk(actual, values=True)
    exp_leaves = [(source("out", p), v) for p, v in exp.items]
    act_leaves = [(source("out", p), v) for p, v in act.items]
    if [p for p, _ in exp_leaves] != [p for p, _ in act_leaves]:
        return NumericsCheck(shape, None, None, None, None, None, False, "output structure differs from eager")
    worst = _Leaf(True)  # the leaf with the largest error: its dtype and tolerances are shown with it
    worst_abs, worst_rel = 0.0, 0.0
    for (path, e), (_, a) in zip(exp_leaves, act_leaves):
        leaf = _leaf(path, e, a)
        if leaf.atol is not None and (worst.atol is None or (leaf.abs_err or 0.0) >= worst_abs):
            worst = leaf
        worst_abs = max(worst_abs, leaf.abs_err or 0.0)
        worst_rel = max(worst_rel, leaf.rel_err or 0.0)
        if leaf.unjudged:
            return NumericsCheck(shape, None, None, None, None, None, False, leaf.detail, comparable=False,
                                 unjudged="not comparable")
        if not leaf.passed:
            numbers = leaf.abs_err is not None
            return NumericsCheck(shape, leaf.dtype, worst_abs if numbers else None, worst_rel if numbers else None,
                                 leaf.atol, leaf.rtol, False, leaf.detail)
    cut = max(exp.cut, act.cut)
    detail = f"{cut} part(s) of the outputs past the walk's bounds not compared" if cut else None
    return NumericsCheck(shape, worst.dtype, worst_abs, worst_rel, worst.atol, worst.rtol, True, detail, uncompared=cut)
