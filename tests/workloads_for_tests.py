"""Workloads used by the tests (loaded by reference, as a user's would be)."""

from __future__ import annotations

import functools
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


def fails_to_compile_at_32() -> Workload:
    """Tracing raises at n=32 (eager is fine); with suppress_errors Dynamo records a failed
    compile and from then on runs the whole frame eagerly, shapes it had compiled included."""

    def build():
        torch._dynamo.config.suppress_errors = True

        def f(x):
            if torch.compiler.is_compiling() and x.shape[0] == 32:
                raise RuntimeError("this shape does not compile")
            return x.sin() + 1

        return f

    return Workload("fails_at_32", build, lambda s: (torch.randn(s["n"]),), ("n",), _shape_stream(16, 16, 32, 16, 64))


def dataclass_argument() -> Workload:
    """The varying size is a tensor's inside a dataclass the call passes (``b.feats``)."""
    import dataclasses

    @dataclasses.dataclass
    class Batch:
        feats: torch.Tensor

    return Workload("dataclass_argument", lambda: (lambda b: b.feats.sin().sum(-1)),
                    lambda s: (Batch(torch.randn(2, s["seq"])),), ("seq",), tuple({"seq": n} for n in (5, 9, 13)))


def training_step() -> Workload:
    """A training step: the workload's inputs (x, y) go to ``step``, which passes only x to
    the compiled model (``Sequential.forward(input)``) and y to the loss."""
    state = {}

    def build():
        torch.manual_seed(0)
        state["m"] = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
        return state["m"]

    def step(fn, x, y):
        loss = torch.nn.functional.mse_loss(fn(x), y)
        loss.backward()
        return loss.detach()

    return Workload("training_step", build, lambda s: (torch.randn(s["b"], 8), torch.randn(s["b"], 1)), ("b",),
                    tuple({"b": b} for b in (16, 24, 48)), grad=True, step=step)


def int_keyword() -> Workload:
    """A keyword-only int that a loop turns into a Python number: made symbolic once it has
    changed (or by dynamic=True), then specialised — its guard (``L['repeats'] == 2``) is in
    the shape environment's epilogue, not an ``EQUALS_MATCH``."""

    class KW(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(8, 8)

        def forward(self, x, *, repeats: int):
            for _ in range(repeats):
                x = torch.relu(self.lin(x))
            return x.sum(-1)

    def build():
        torch.manual_seed(0)
        return KW().eval()

    stream = ((4, 1), (8, 1), (8, 2), (16, 2), (16, 3), (4, 1), (32, 3))
    return Workload("int_keyword", build, lambda s: ((torch.randn(s["n"], 8),), {"repeats": s["r"]}), ("n", "r"),
                    tuple({"n": n, "r": r} for n, r in stream))


def raises_at_7() -> Workload:
    """The function raises for n=7 (eager too): Dynamo traces the ``raise``, its compile fails
    softly (Unsupported), the frame runs eagerly and raises the user's error — and from then
    on Dynamo skips the frame, its graphs for 4 and 8 included."""

    def f(x):
        if x.shape[0] == 7:
            raise ValueError("no sevens")
        return x.sin() * 2

    return Workload("raises_at_7", lambda: f, lambda s: (torch.randn(s["n"]),), ("n",),
                    _shape_stream(4, 8, 7, 4, 8, 16))


def never_compiles() -> Workload:
    """A module whose only frame fails to compile (Dynamo does not trace an ``nn.LSTM``): no
    graph is ever compiled, and every call runs eagerly."""

    def build():
        torch.manual_seed(0)
        return torch.nn.LSTM(8, 8, batch_first=True).eval()

    return Workload("never_compiles", build, lambda s: (torch.randn(2, s["n"], 8),), ("n",), _shape_stream(4, 4, 6))


def empty_graphs() -> Workload:
    """A function whose graphs are empty (a size read, a graph break, the input returned): its
    entries never reach the backend, so no call runs a graph the backend saw, hit or not."""

    def build():
        def f(x):
            n = x.shape[0]
            torch._dynamo.graph_break()
            return x, n

        return f

    return Workload("empty_graphs", build, lambda s: (torch.randn(s["n"]),), ("n",), _shape_stream(2, 3, 4, 2, 3))


def dies_at_request_1() -> Workload:
    """Finishes request 0, then the process dies (exit status 3) while a warning is on stderr."""
    calls = []

    def build():
        def f(x):
            calls.append(1)
            if len(calls) == 2:
                import warnings

                warnings.warn("an unrelated warning line")
                os._exit(3)
            return x * 2

        return f

    return Workload("dies", build, lambda s: (torch.randn(s["n"]),), ("n",), _shape_stream(16, 32, 64))


def _fault(kind: str) -> Workload:
    """Request 0 finishes; request 1 raises / exits / hangs / segfaults / gets SIGTERM."""
    import signal

    calls = []

    def build():
        def f(x):
            calls.append(1)
            if len(calls) == 2:
                if kind == "raise":
                    raise ValueError("request 1 raised")
                if kind == "exit":
                    os._exit(3)
                if kind == "hang":
                    time.sleep(600)
                if kind == "segfault":
                    os.kill(os.getpid(), signal.SIGSEGV)
                if kind == "sigterm":
                    os.kill(os.getpid(), signal.SIGTERM)
            return x * 2

        return f

    return Workload(f"fault_{kind}", build, lambda s: (torch.randn(s["n"]),), ("n",), _shape_stream(16, 32, 64))


def fault_raise() -> Workload:
    return _fault("raise")


def fault_exit() -> Workload:
    return _fault("exit")


def fault_hang() -> Workload:
    return _fault("hang")


def fault_segfault() -> Workload:
    return _fault("segfault")


def fault_sigterm() -> Workload:
    return _fault("sigterm")


def slow_eager() -> Workload:
    """Each call sleeps: a run long enough to interrupt mid-way."""

    def build():
        def f(x):
            time.sleep(float(os.environ.get("COMPILESCOPE_TEST_SLEEP", "2")))
            return x * 2

        return f

    return Workload("slow", build, lambda s: (torch.randn(s["n"]),), ("n",), _shape_stream(4, 8))


def compiled_slowdown() -> Workload:
    """With COMPILESCOPE_TEST_SLOWDOWN=1 the compiled graph carries 300 extra ops that eager
    never runs: compiled code slower, eager unchanged (an injected regression)."""

    def build():
        slow = bool(os.environ.get("COMPILESCOPE_TEST_SLOWDOWN"))

        def f(x):
            y = x.sin() + x.cos()
            if slow and torch.compiler.is_compiling():
                for _ in range(300):
                    y = y * 1.0
            return y

        return f

    return Workload("slowdown", build, lambda s: (torch.randn(s["n"]),), ("n",), _shape_stream(64, 64, 128))


def _fills_a_default(forward):  # as Hugging Face's output-capturing decorator: the frame is (*args, **kwargs)
    @functools.wraps(forward)
    def wrapper(self, *args, **kwargs):
        kwargs.setdefault("scale", 2.0)
        return forward(self, *args, **kwargs)

    return wrapper


class _Wrapped(torch.nn.Module):
    @_fills_a_default
    def forward(self, ids, mask, scale=None):
        return (ids * mask).sum(-1) * scale


def wrapped_kwargs() -> Workload:
    """A module whose ``forward`` a decorator wraps as ``(*args, **kwargs)``, called with keyword
    arguments: PyTorch names its inputs ``L['kwargs']['ids']``, the reports ``L['ids']``."""
    return Workload(
        "wrapped_kwargs",
        _Wrapped,
        lambda s: {"ids": torch.randn(2, s["seq"]), "mask": torch.ones(2, s["seq"])},
        ("seq",),
        ({"seq": 4}, {"seq": 8}, {"seq": 16}),
    )


def dict_of_tensors() -> Workload:
    """A dict of tensors whose key count, key order and sizes change: Dynamo guards the dict's
    length and its keys by position (a ``DictGuardManager``, whose length check has no leaf)."""

    class DictSum(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(8, 8)

        def forward(self, feats):
            out = 0
            for key, x in feats.items():
                out = out + self.lin(x).mean(0) * len(key)
            return out

    def build():
        torch.manual_seed(0)
        return DictSum()

    def inputs(s):
        keys = [f"f{'x' * i}" for i in range(s["k"])]
        return ({k: torch.randn(s["n"], 8) for k in (keys[::-1] if s["r"] else keys)},)

    stream = ((2, 4, 0), (3, 4, 0), (2, 6, 0), (2, 6, 1), (3, 4, 0), (3, 8, 1), (2, 4, 1))
    return Workload("dict_of_tensors", build, inputs, ("k", "n", "r"),
                    tuple({"k": k, "n": n, "r": r} for k, n, r in stream))


def raises_in_compile_at_3() -> Workload:
    """A convolution whose kernel is longer than the input for n=3: the compile fails on fake
    tensors and raises into the call (eager raises too); other sizes compile."""

    def f(x):
        return torch.nn.functional.conv1d(x.view(1, 1, -1), torch.ones(1, 1, 5)).sum()

    return Workload("raises_in_compile_at_3", lambda: f, lambda s: (torch.randn(s["n"]),), ("n",),
                    _shape_stream(8, 16, 3, 8, 32, 3, 24))


def _iterates_kwargs(forward):  # a decorator that copies **kwargs item by item: a dict guard manager on it
    @functools.wraps(forward)
    def wrapper(self, *args, **kwargs):
        kw = {k: v for k, v in kwargs.items()}
        return forward(self, *args, **kw)

    return wrapper


class _IteratedKwargs(torch.nn.Module):
    @_iterates_kwargs
    def forward(self, ids, mask):
        return (ids * mask).sum(-1)


def iterated_kwargs() -> Workload:
    """``wrapped_kwargs`` with a decorator that iterates ``**kwargs``: Dynamo guards that dict's
    length and keys in order, which requests name by the function's parameters instead."""
    return Workload("iterated_kwargs", _IteratedKwargs,
                    lambda s: {"ids": torch.randn(2, s["seq"]), "mask": torch.ones(2, s["seq"])}, ("seq",),
                    ({"seq": 4}, {"seq": 8}, {"seq": 16}, {"seq": 8}, {"seq": 32}))


def layouts() -> Workload:
    """One input whose sizes stay while its layout (``t``: transposed), ``requires_grad``
    (``g``) or aliasing (``a``: the same tensor passed twice) change: each a guard the recorded
    sizes and dtypes do not hold."""

    def build():
        def pair(x, y):
            return (x * 2 + y).sum(0)

        return pair

    def inputs(s):
        x = torch.randn(8, s["n"]).t() if s["t"] else torch.randn(s["n"], 8)
        x.requires_grad_(bool(s["g"]))
        return (x, x if s["a"] else torch.randn(s["n"], 8))

    stream = ((4, 0, 0, 0), (4, 0, 0, 0), (4, 1, 0, 0), (4, 0, 1, 0), (4, 0, 0, 1), (6, 0, 0, 0))
    return Workload("layouts", build, inputs, ("n", "t", "g", "a"),
                    tuple({"n": n, "t": t, "g": g, "a": a} for n, t, g, a in stream), grad=True)


class _GrowsABuffer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("seen", torch.zeros(1))

    def forward(self, x):
        self.seen = torch.cat([self.seen, x.sum().reshape(1)])
        return x * self.seen.numel()


def grows_a_buffer() -> Workload:
    """Each call grows a registered buffer: under static every call, the same input's too,
    recompiles on the buffer's size, which no input holds."""
    return Workload("grows_a_buffer", _GrowsABuffer, lambda s: (torch.randn(s["n"]),), ("n",),
                    tuple({"n": 4} for _ in range(4)))


def reads_y_after_a_break() -> Workload:
    """``y`` is read only after a graph break: its size decides the resume frame's recompiles
    while the function's own frame, which guards ``x`` alone, hits."""

    def build():
        def f(x, y):
            a = x * 2
            torch._dynamo.graph_break()
            return a + y.sum()

        return f

    return Workload("reads_y_after_a_break", build, lambda s: (torch.randn(s["n"]), torch.randn(s["m"])), ("n", "m"),
                    tuple({"n": 8, "m": m} for m in (8, 16, 24, 8)))


def optional_mask() -> Workload:
    """A keyword argument some requests leave out (``m``: 0 leaves ``mask`` out)."""

    def build():
        def masked(x, mask=None):
            return x.sum() if mask is None else (x * mask).sum()

        return masked

    def inputs(s):
        return ((torch.randn(s["n"]),), {"mask": torch.ones(s["n"])}) if s["m"] else ((torch.randn(s["n"]),), {})

    return Workload("optional_mask", build, inputs, ("n", "m"), ({"n": 4, "m": 1}, {"n": 4, "m": 1}, {"n": 4, "m": 0}))


def sums_varargs() -> Workload:
    """``f(*xs)``: Dynamo sees ``xs`` as one tuple and guards its length (``c``: how many)."""

    def build():
        def total(*xs):
            out = xs[0]
            for x in xs[1:]:
                out = out + x
            return out.sin()

        return total

    return Workload("sums_varargs", build, lambda s: tuple(torch.randn(s["n"]) for _ in range(s["c"])), ("n", "c"),
                    ({"n": 8, "c": 2}, {"n": 8, "c": 3}, {"n": 8, "c": 2}, {"n": 8, "c": 1}))


SCALE = 1  # set by ``scales_by_a_global``'s make_inputs; its function reads it


def scales_by_a_global() -> Workload:
    """Each request sets a module global the function reads (``k``): Dynamo guards
    ``G['SCALE'] == 1``, which no input holds."""

    def build():
        def scaled(x):
            return x * SCALE + 1

        return scaled

    def make_inputs(s):
        global SCALE
        SCALE = s["k"]
        return (torch.ones(s["n"]),)

    return Workload("scales_by_a_global", build, make_inputs, ("n", "k"),
                    tuple({"n": 4, "k": k} for k in (1, 2, 1, 3)))
