"""Workloads whose arguments and outputs are objects holding tensors (loaded by reference)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from compilescope import Workload


class Memory:
    """A plain object holding a tensor, as a cache is: ``keys`` of (length, 4)."""

    def __init__(self, keys: torch.Tensor) -> None:
        self.keys = keys
        self.ready = True


@dataclass
class Result:
    """An output that is a dataclass holding a tensor and an object holding another."""

    scores: torch.Tensor
    memory: Memory
    count: int


def _memory(s):
    return {"x": torch.randn(4), "memory": Memory(torch.randn(s["length"], 4))}


def reads_memory() -> Workload:
    """``x`` against every row of ``memory.keys``: the rows' count drives the recompiles."""

    def build():
        def attend(x, memory):
            return (memory.keys @ x).softmax(0)

        return attend

    return Workload("reads-memory", build, _memory, ("length",), tuple({"length": n} for n in (3, 3, 5, 7, 5)))


def returns_object() -> Workload:
    """Returns a dataclass holding a tensor and an object holding another: compared by value."""

    def build():
        def summarize(x, memory):
            return Result((memory.keys @ x).tanh(), Memory(memory.keys * 2), memory.keys.shape[0])

        return summarize

    return Workload("returns-object", build, _memory, ("length",), tuple({"length": n} for n in (3, 5)))


def appends_to_memory() -> Workload:
    """A decode step: appends ``x`` to ``memory.keys`` (the argument grows) and attends over it."""

    def build():
        def step(x, memory):
            memory.keys = torch.cat([memory.keys, x[None]])
            return (memory.keys @ x).softmax(0)

        return step

    return Workload("appends", build, _memory, ("length",), tuple({"length": n} for n in (3, 4, 5, 6)))


MODE = [0]


def alternates() -> Workload:
    """Each call flips a global the code branches on: with a recompile limit of 1, every other
    call is refused and runs eagerly, the others run the compiled graph."""

    def build():
        def flip(x):
            mode = MODE[0]
            MODE[0] = 1 - mode
            return x.sin() if mode else x.cos()

        return flip

    return Workload("alternates", build, lambda s: (torch.randn(s["n"]),), ("n",), ({"n": 8},))


def _graph(s):
    g = torch.Generator().manual_seed(s["nodes"] * 1000 + s["edges"])
    return (torch.randn(s["nodes"], 4), torch.randint(0, s["nodes"], (2, s["edges"]), generator=g))


class _Layer(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, h, edges):
        active = (h.sum(1) > 0).nonzero().squeeze(1)  # a data-dependent size
        return self.lin(h).index_add(0, edges[1], h[edges[0]]) + h[active].sum(0)


class _LayerLoop(torch.nn.Module):
    """Message-passing layers in a loop that branches on a value: Dynamo cannot resume the
    frame after the break inside the loop, so the function's own frame runs eagerly and the
    layers' frames are compiled instead."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList([_Layer(), _Layer()])

    def forward(self, nodes, edges):
        h = nodes
        for layer in self.layers:
            h = layer(h, edges)
            if bool((h.sum() > 0).item()):
                h = h * 2
        return h.sum(0)


def graph_layers() -> Workload:
    def build():
        torch.manual_seed(0)
        return _LayerLoop().eval()

    return Workload("graph-layers", build, _graph, ("nodes", "edges"),
                    tuple({"nodes": n, "edges": e} for n, e in ((6, 10), (6, 10), (9, 20))))


def _wrong_when_compiled() -> float:
    """1.0 inside a compiled graph, 0.0 eagerly: a known numerics difference."""
    return 1.0 if torch.compiler.is_compiling() else 0.0


def accumulates() -> Workload:
    """Returns the very buffer each call adds to in place (a running sum): the outputs of two
    calls are one tensor object, so each call's must be copied before the next."""

    class Accumulator(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("total", torch.zeros(()))

        def forward(self, x):
            self.total.add_(x.sum())
            return self.total

    return Workload("accumulates", Accumulator, lambda s: (torch.randn(s["n"]),), ("n",), ({"n": 4},))


def odd_outputs() -> Workload:
    """Outputs of kinds a walk of containers misses: a numpy array, a numpy scalar, a set, a
    sparse tensor, a Python float from ``.item()``, an int64 past 2**53, a complex NaN — the
    array wrong when compiled, the rest right."""

    def build():
        def f(x):
            s = (x.exp() * 1.37).sum()
            return {"array": (x * 2 + _wrong_when_compiled()).numpy(), "scalar": x.numpy().sum(),
                    "set": {int(x.shape[0])}, "sparse": (x * 2).to_sparse(), "item": s.item(),
                    "big": torch.full((2,), 2**53, dtype=torch.int64) + x.shape[0] * 0, "nan": complex("nan")}

        return f

    return Workload("odd_outputs", build, lambda s: (torch.randn(s["n"]),), ("n",), ({"n": 4},))


class Counting(torch.nn.Module):
    """A graph break, then a counter the rest branches on: the resume frame recompiles on each
    call until the recompile limit refuses it; from then on it runs eagerly."""

    def __init__(self) -> None:
        super().__init__()
        self.n = 0

    def forward(self, x):
        y = x * 2
        torch._dynamo.graph_break()
        self.n += 1
        return y + self.n


def counts_past_a_break() -> Workload:
    return Workload("counts_past_a_break", Counting, lambda s: (torch.randn(s["n"]),), ("n",), ({"n": 4},))


SHARED = [torch.zeros(4)]


def one_global_input() -> Workload:
    """``make_inputs`` gives back one global tensor, which each call grows in place."""

    def build():
        def grow(x):
            x.add_(1)
            return x * 2

        return grow

    return Workload("one_global_input", build, lambda s: (SHARED[0],), ("n",), ({"n": 4},))
