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
