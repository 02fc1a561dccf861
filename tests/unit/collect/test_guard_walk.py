"""Every failing guard, PyTorch checking us.

For each scenario one call changes several things at once. PyTorch's reason for that call
names fewer guards than changed; applied one at a time, each change gives its own reason.
compilescope walks every guard of the rejecting entry, so the set it reports for the
combined call must equal the union of PyTorch's reasons for the single changes.
"""

from __future__ import annotations

import pytest
import torch

from compilescope.collect.capture import CaptureSession

pytestmark = pytest.mark.compat("every failing guard")

FLAG = True


def _key(g):
    return (g.kind, g.source, g.dim if g.kind in ("size", "stride") else None)


def _reasons(fn, base, changed, walk):
    """Compile ``fn`` fresh, call it on ``base`` then on ``changed``; the recompile's
    failures (PyTorch's only, or with compilescope's walk)."""
    global FLAG
    torch.compiler.reset()
    compiled = torch.compile(fn, backend="eager", dynamic=False)
    session = CaptureSession(walk_guards=walk).install()
    try:
        FLAG = True
        compiled(**base())
        flag, kwargs = changed()
        FLAG = flag
        compiled(**kwargs)
        session.poll()
    finally:
        FLAG = True
        session.uninstall()
    (recompile,) = [r for r in session.records if r.is_recompile]
    return recompile.guard_failures


def two_tensors(x, y):
    return x.sum() + y.sum()


def with_flag(x, y):
    return x * 2 if FLAG else y


def with_int(x, n):
    return x * n


def with_stride(x, y):
    return x.sum() + (y * 2).sum()


def t(*shape, **kw):
    return torch.ones(*shape, **kw)


SCENARIOS = {
    # name: (fn, base kwargs, {change: (FLAG, kwargs)}, the combined call (FLAG, kwargs))
    "size and dtype": (two_tensors, lambda: dict(x=t(4, 3), y=t(2)), {
        "x size": lambda: (True, dict(x=t(5, 3), y=t(2))),
        "y dtype": lambda: (True, dict(x=t(4, 3), y=t(2, dtype=torch.float64))),
    }, lambda: (True, dict(x=t(5, 3), y=t(2, dtype=torch.float64)))),
    "size and a Python flag": (with_flag, lambda: dict(x=t(4), y=t(4)), {
        "x size": lambda: (True, dict(x=t(6), y=t(4))),
        "flag": lambda: (False, dict(x=t(4), y=t(4))),
    }, lambda: (False, dict(x=t(6), y=t(4)))),
    "two inputs' ranks": (two_tensors, lambda: dict(x=t(4, 3), y=t(2)), {
        "x rank": lambda: (True, dict(x=t(4, 3, 1), y=t(2))),
        "y rank": lambda: (True, dict(x=t(4, 3), y=t(2, 1))),
    }, lambda: (True, dict(x=t(4, 3, 1), y=t(2, 1)))),
    "size and an int argument": (with_int, lambda: dict(x=t(4), n=2), {
        "x size": lambda: (True, dict(x=t(8), n=2)),
        "n value": lambda: (True, dict(x=t(4), n=3)),
    }, lambda: (True, dict(x=t(8), n=3))),
    "dtype and requires_grad": (two_tensors, lambda: dict(x=t(4), y=t(4)), {
        "x dtype": lambda: (True, dict(x=t(4, dtype=torch.float64), y=t(4))),
        "y requires_grad": lambda: (True, dict(x=t(4), y=t(4, requires_grad=True))),
    }, lambda: (True, dict(x=t(4, dtype=torch.float64), y=t(4, requires_grad=True)))),
    "two dims of one input and another's layout": (with_stride, lambda: dict(x=t(4, 3), y=t(3, 5)), {
        "x dim 0": lambda: (True, dict(x=t(6, 3), y=t(3, 5))),
        "x dim 1": lambda: (True, dict(x=t(4, 7), y=t(3, 5))),
        "y transposed": lambda: (True, dict(x=t(4, 3), y=t(5, 3).t())),
    }, lambda: (True, dict(x=t(6, 7), y=t(5, 3).t()))),
    "three things at once": (two_tensors, lambda: dict(x=t(4), y=t(4)), {
        "x size": lambda: (True, dict(x=t(6), y=t(4))),
        "x requires_grad": lambda: (True, dict(x=t(4, requires_grad=True), y=t(4))),
        "y dtype": lambda: (True, dict(x=t(4), y=t(4, dtype=torch.float64))),
    }, lambda: (True, dict(x=t(6, requires_grad=True), y=t(4, dtype=torch.float64)))),
}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_every_failing_guard_equals_the_union_of_pytorchs_single_change_reasons(name):
    fn, base, changes, combined = SCENARIOS[name]
    union = set()
    for change in changes.values():
        union |= {_key(g) for g in _reasons(fn, base, change, walk=False)}
    assert len(union) == len(changes), union
    ours = _reasons(fn, base, combined, walk=True)
    assert {_key(g) for g in ours} == union
    pytorch_named = {_key(g) for g in ours if g.found_by == "pytorch"}
    assert pytorch_named < union  # PyTorch's own reason for the combined call names fewer
    assert all(g.found_by == "compilescope" for g in ours if _key(g) not in pytorch_named)


def test_unevaluable_guards_are_counted_by_name_not_guessed():
    torch.compiler.reset()
    compiled = torch.compile(two_tensors, backend="eager", dynamic=False)
    session = CaptureSession().install()
    try:
        compiled(x=t(4), y=t(4))
        compiled(x=t(5), y=t(4))
        session.poll()
    finally:
        session.uninstall()
    (recompile,) = [r for r in session.records if r.is_recompile]
    assert recompile.guards_unevaluated == {"NO_TENSOR_ALIASING": 2}
