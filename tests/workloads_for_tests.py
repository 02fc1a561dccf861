"""Workloads used by the tests (loaded by reference, as a user's would be)."""

from __future__ import annotations

import os
import time

import torch

from compilescope import Workload


def _shape_stream(*sizes):
    return tuple({"n": n} for n in sizes)


def wrong_when_compiled() -> Workload:
    """Gives a different answer under torch.compile: numerics must catch it."""

    def build():
        def f(x):
            return x + 1.0 if torch.compiler.is_compiling() else x

        return f

    return Workload("wrong", build, lambda s: (torch.randn(s["n"]),), ("n",), _shape_stream(8, 16))


def graph_breaks() -> Workload:
    def build():
        def f(x):
            y = x.sin()
            torch._dynamo.graph_break()
            return y.cos()

        return f

    return Workload("breaks", build, lambda s: (torch.randn(s["n"]),), ("n",), _shape_stream(8, 8))


def misbehaves() -> Workload:
    """n=7 raises in the call, n=99 kills the process, n=55 hangs."""

    def build():
        def f(x):
            n = x.shape[0]
            if n == 7:
                raise ValueError("seven is not allowed")
            if n == 99:
                os._exit(3)
            if n == 55:
                time.sleep(600)
            return x * 2

        return f

    return Workload("misbehaves", build, lambda s: (torch.randn(s["n"]),), ("n",), _shape_stream(4, 7, 4))


def two_inputs() -> Workload:
    def build():
        def f(x, y):
            return x.sum(-1) + y.sum(-1)

        return f

    return Workload(
        "two_inputs",
        build,
        lambda s: {"x": torch.randn(s["batch"], s["seq"]), "y": torch.randn(s["batch"], 8)},
        ("batch", "seq"),
        ({"batch": 2, "seq": 4}, {"batch": 4, "seq": 4}, {"batch": 4, "seq": 8}),
    )


class Block(torch.nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(width, width)

    def forward(self, x):
        return x + torch.tanh(self.fc(x))


class Stack(torch.nn.Module):
    def __init__(self, width: int = 16, depth: int = 3) -> None:
        super().__init__()
        self.blocks = torch.nn.ModuleList(Block(width) for _ in range(depth))
        self.head = torch.nn.Linear(width, 4)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def stack() -> Workload:
    def build():
        torch.manual_seed(0)
        return Stack().eval()

    return Workload(
        "stack", build, lambda s: (torch.randn(s["batch"], s["seq"], 16),), ("batch", "seq"),
        ({"batch": 2, "seq": 5}, {"batch": 2, "seq": 9}),
    )
