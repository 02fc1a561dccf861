"""Workloads whose compiled requests raise, through a backend that refuses some inputs the way
a real lowering failure does (a ``LoweringException`` naming the aten op), and a model whose
resume frame after a graph break runs eagerly once the recompile limit is hit."""

from __future__ import annotations

import torch
from torch._dynamo.backends.common import aot_autograd

from compilescope import Workload

BACKEND = "faulty_lowering"
LIMIT = 32  # the backend refuses graphs whose first input has dim 0 of this size or more, or a symbolic one


def _refuses(example_inputs) -> int | None:
    for t in example_inputs:
        if isinstance(t, torch.Tensor) and t.dim() > 0:
            n = t.shape[0]
            if not isinstance(n, int):
                return -1
            if n >= LIMIT:
                return n
    return None


def _fw_compiler(gm, example_inputs):
    from torch._inductor.exc import LoweringException

    refused = _refuses(example_inputs)
    if refused is not None:
        node = next(n for n in gm.graph.nodes if n.op == "call_function")
        what = "a symbolic size" if refused < 0 else f"size {refused}"
        raise LoweringException(NotImplementedError(f"no kernel for {what}"), node.target, list(node.args),
                                dict(node.kwargs))
    return gm


if BACKEND not in torch._dynamo.list_backends(exclude_tags=()):
    torch._dynamo.register_backend(aot_autograd(fw_compiler=_fw_compiler), name=BACKEND)


def _sizes(*sizes):
    return tuple({"n": n} for n in sizes)


def sin_cos() -> Workload:
    """x.sin().cos(): under the faulty backend, sizes >= 32 (and dynamic graphs) raise."""

    def build():
        # PyTorch's default, set because a workload run earlier in the same process may have turned it
        # on: with it, a failed compile would run the frame eagerly instead of raising from the request
        torch._dynamo.config.suppress_errors = False

        def f(x):
            return x.sin().cos() + 1.0

        return f

    return Workload("sin_cos", build, lambda s: (torch.randn(s["n"]),), ("n",), _sizes(16, 32, 64, 16))


def break_then_vary() -> Workload:
    """A graph break splits ``f`` in two frames: the first uses only ``x`` (fixed size), the
    resume frame after the break uses ``y`` (size ``n``). Under ``static`` with a low recompile
    limit the resume frame hits the limit and runs eagerly while the first frame still runs
    its compiled graph: a partial eager fallback."""

    def build():
        def f(x, y):
            a = x.sin() * 2
            torch._dynamo.graph_break()
            return a.sum() + y.cos().sum()

        return f

    return Workload("break_then_vary", build, lambda s: (torch.randn(8), torch.randn(s["n"])), ("n",),
                    _sizes(4, 5, 6, 7, 4))
