"""A workload for the forecast tests: its eager path reads a tensor value, which the meta
device cannot, while the code Dynamo traces does not."""

from __future__ import annotations

import functools
import itertools
from typing import Any

import torch
import workloads_forecast_table  # a module of the user's beside this one (the loader puts this folder on sys.path)

from compilescope import Workload


def _build():
    def checked(x: torch.Tensor) -> torch.Tensor:
        if not torch.compiler.is_compiling():  # eager only: e.g. a validation a library runs
            assert x.abs().sum().item() >= 0
        return x.sin() + x.cos()

    return checked


def eager_reads_values() -> Workload:
    return Workload(name="eager-reads-values", build=_build, make_inputs=lambda s: (torch.randn(s["n"]),),
                    dims=("n",), default_stream=tuple({"n": n} for n in range(8, 120, 8)))


def ceil_pool() -> Workload:
    """One ceil-mode max pooling: inductor guards a dynamic size's parity while it lowers (a
    pooled size that ceil mode leaves unchanged drops the mode), so an even size after an odd
    one compiles again under inductor and hits under aot_eager."""

    def build():
        def pool(x: torch.Tensor) -> torch.Tensor:
            return torch.nn.functional.max_pool2d(x, 2, 2, ceil_mode=True)

        return pool

    return Workload(name="ceil-pool", build=build, make_inputs=lambda s: (torch.randn(1, 2, s["n"], s["n"]),),
                    dims=("n",), default_stream=tuple({"n": n} for n in (8, 9, 10, 11, 12, 9, 8)))


def strided_conv1d() -> Workload:
    """A speech front end's strided Conv1d over one waveform of varying length. The CPU
    convolution picks its backend by size (mkldnn for a batch of one only above 20,480 input
    elements), and PyTorch guards that choice: a length past 5,120 samples (4 channels) after
    a shorter one compiles again under default and dynamic. The meta device picks no CPU backend,
    so a trace there never sees the guard."""

    def build():
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Conv1d(4, 8, 5, stride=2), torch.nn.ReLU(),
                                   torch.nn.Conv1d(8, 8, 3, stride=2)).eval()

    lengths = (1000, 2000, 3000, 6000, 8000, 2000, 4000, 12000)
    return Workload(name="strided-conv1d", build=build, make_inputs=lambda s: (torch.randn(1, 4, s["n"]),),
                    dims=("n",), default_stream=tuple({"n": n} for n in lengths))


def keeps_positive() -> Workload:
    """A ``nonzero`` in the frame: Dynamo breaks the graph there, and the resume frame's input
    has as many rows as the input has positive values — a size only values decide."""

    def build():
        def keep(x: torch.Tensor) -> torch.Tensor:
            rows = (x > 0).nonzero().squeeze(-1)
            return x[rows].sin().sum() + x.cos().sum()

        return keep

    sizes = (8, 8, 16, 12, 16, 24, 8)
    return Workload(name="keeps-positive", build=build, make_inputs=lambda s: (torch.randn(s["n"]),),
                    dims=("n",), default_stream=tuple({"n": n} for n in sizes))


class KeyCache:
    """A decode cache as Hugging Face's ``DynamicCache`` layers keep one: empty until its first
    update, which makes its keys on the new keys' device inside the compiled frame."""

    def __init__(self, keys: torch.Tensor | None = None) -> None:
        self.keys = keys

    def update(self, new: torch.Tensor) -> torch.Tensor:
        if self.keys is None:
            self.keys = torch.tensor([], dtype=new.dtype, device=new.device)
        self.keys = torch.cat([self.keys, new], dim=-2)
        return self.keys


def cached_attention() -> Workload:
    """One decode step with its cache passed as an argument: the step appends its key to the
    cache (made inside the frame on the key's device when empty) and attends over all of it.
    The cache's length (``past``) is a size Dynamo guards through the object."""

    def build():
        torch.manual_seed(0)
        proj = torch.nn.Linear(8, 8)

        def step(x: torch.Tensor, cache: KeyCache) -> torch.Tensor:
            keys = cache.update(proj(x))
            return torch.softmax(x @ keys.transpose(-1, -2), dim=-1) @ keys

        return step

    def make_inputs(s):
        past = s["past"]
        return torch.randn(1, 1, 8), KeyCache(torch.randn(1, past, 8) if past else None)

    pasts = (0, 0, 4, 7, 7, 12, 0, 20)
    return Workload(name="cached-attention", build=build, make_inputs=make_inputs, dims=("past",),
                    default_stream=tuple({"past": p} for p in pasts))


class FlagCache:
    """A cache whose flag says whether it holds anything, as ``DynamicCache``'s layers'
    ``is_initialized`` does: a Python value inside an argument, which Dynamo guards."""

    def __init__(self, keys: torch.Tensor) -> None:
        self.keys, self.ready = keys, keys.shape[-2] > 0


def flagged_cache() -> Workload:
    """A step that reads its cache argument's flag: a request whose flag differs from every
    entry's fails a value guard on ``L['cache'].ready``, the caller's, no module's."""

    def build():
        def step(x: torch.Tensor, cache: FlagCache) -> torch.Tensor:
            return x @ cache.keys.transpose(-1, -2) if cache.ready else x * 2

        return step

    def make_inputs(s):
        return torch.randn(1, 1, 8), FlagCache(torch.randn(1, s["past"], 8))

    return Workload(name="flagged-cache", build=build, make_inputs=make_inputs, dims=("past",),
                    default_stream=tuple({"past": p} for p in (0, 4, 4)))


def always_raises() -> Workload:
    """Every call raises, on fake tensors and for real alike."""

    def build():
        def fails(x: torch.Tensor) -> torch.Tensor:
            y = x.sin()
            if y.sum().item() > -1e9:  # a value read: the dry run computes, and the call raises for real
                raise ValueError("no such row")
            return y

        return fails

    return Workload(name="always-raises", build=build, make_inputs=lambda s: (torch.randn(s["n"]),), dims=("n",),
                    default_stream=tuple({"n": n} for n in (4, 8, 16)))


def big_matmul() -> Workload:
    """A square matrix product whose kernel costs far more than a fake tensor's bookkeeping."""

    def build():
        def product(x: torch.Tensor) -> torch.Tensor:
            return x @ x

        return product

    return Workload(name="big-matmul", build=build, make_inputs=lambda s: (torch.randn(s["n"], s["n"]),),
                    dims=("n",), default_stream=({"n": 1536},))


def counts_calls() -> Workload:
    """A step that multiplies by how many calls came before it: Dynamo guards that count, so
    under static every call compiles again — a shape called at start-up included, so no
    warm-up covers it. Under default the count becomes dynamic after its second compile."""

    def build():
        calls = [0]

        def step(x: torch.Tensor) -> torch.Tensor:
            calls[0] += 1
            return x * calls[0]

        return step

    return Workload(name="counts-calls", build=build, make_inputs=lambda s: (torch.randn(s["n"]),),
                    dims=("n",), default_stream=tuple({"n": n} for n in (8, 16, 8)))


def two_inputs() -> Workload:
    """Two tensors of the same sizes: after a batch change (its second entry dynamic in the
    batch), a length change fails guards on both tensors in both entries."""

    def build():
        return lambda x, y: x.sin() + y.cos()

    def make_inputs(s):
        return torch.randn(s["b"], s["n"]), torch.randn(s["b"], s["n"])

    return Workload(name="two-inputs", build=build, make_inputs=make_inputs, dims=("b", "n"),
                    default_stream=({"b": 4, "n": 8}, {"b": 6, "n": 8}, {"b": 6, "n": 10}))


def wrong_width() -> Workload:
    """A Linear(4, 4) given inputs 5 wide: every request raises, compiled or not."""
    return Workload(name="wrong-width", build=lambda: torch.nn.Linear(4, 4),
                    make_inputs=lambda s: (torch.randn(s["n"], 5),), dims=("n",), default_stream=({"n": 2}, {"n": 3}))


class _GrowsACache(torch.nn.Module):
    """A rotary-style cache on the module, grown when a longer input comes."""

    def __init__(self) -> None:
        super().__init__()
        self.cached = torch.zeros(8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[0] > self.cached.shape[0]:
            self.cached = torch.zeros(x.shape[0])
        return x + self.cached[: x.shape[0]]


def grows_a_cache() -> Workload:
    """The module's cache, grown by 16, makes a later 8 compile again: a repeated shape does
    not repeat its outcome."""
    return Workload(name="grows-a-cache", build=_GrowsACache, make_inputs=lambda s: (torch.randn(s["n"]),),
                    dims=("n",), default_stream=tuple({"n": n} for n in (8, 16, 8, 16, 8)))


WARMED = {"done": False}  # set by ``warms_up_once``'s first call, as a fresh process meets it unset
SHARED_BUFFER = torch.zeros(64)  # ``changes_its_input``'s inputs are views of it


def warms_up_once() -> Workload:
    """The first call sets a module-level flag the function reads (and Dynamo guards): a
    fresh trial process meets it unset, so a dry run must too, whatever ran before it."""

    def build():
        torch.manual_seed(0)  # as a user's build may: the caller's random generator is put back

        def f(x: torch.Tensor) -> torch.Tensor:
            if not WARMED["done"]:
                WARMED["done"] = True
                return x * 2
            return x + 1

        return f

    return Workload(name="warms-up-once", build=build, make_inputs=lambda s: (torch.ones(s["n"]),), dims=("n",),
                    default_stream=({"n": 8}, {"n": 16}))


def changes_its_input() -> Workload:
    """Each request's input is a view of a module-level tensor, changed in place after a
    graph break: the dry run must leave it as it found it."""

    def build():
        def g(x: torch.Tensor) -> torch.Tensor:
            y = x.sin()
            torch._dynamo.graph_break()
            x.add_(1)
            return y

        return g

    return Workload(name="changes-its-input", build=build, make_inputs=lambda s: (SHARED_BUFFER[: s["n"]],),
                    dims=("n",), default_stream=({"n": 8}, {"n": 16}))


def _inner_frame(h: torch.Tensor) -> torch.Tensor:
    return h.cos() + 1


def inner_frame_gets_input_or_computed() -> Workload:
    """A graph break in a loop: Dynamo runs the function eagerly and compiles ``_inner_frame``
    as a frame of its own, which gets the input itself (``k`` 0) or a tensor computed from it
    (``k`` 1) — on fake tensors a fake one beside the real input, whose type guard fails."""

    def build():
        def f(x: torch.Tensor, k: int) -> torch.Tensor:
            h = x.sin() if k else x
            for _ in range(1):
                torch._dynamo.graph_break()
            return _inner_frame(h)

        return f

    return Workload(name="inner-frame", build=build, make_inputs=lambda s: (torch.randn(s["n"]), s["k"]),
                    dims=("n", "k"), default_stream=({"n": 8, "k": 1}, {"n": 8, "k": 0}, {"n": 8, "k": 1}))


@functools.lru_cache(maxsize=None)
def _memo_table(n: int) -> torch.Tensor:
    return torch.arange(n, dtype=torch.float32)


def memoizes_a_table() -> Workload:
    """A module-level ``lru_cache`` helper, called from code Dynamo skips: a dry run on fake
    tensors fills it with a fake tensor, which must not outlive the forecast."""

    @torch.compiler.disable
    def table(n: int) -> torch.Tensor:
        return _memo_table(n)

    def build():
        def f(x: torch.Tensor) -> torch.Tensor:
            return x + table(x.shape[0])

        return f

    return Workload(name="memoizes-a-table", build=build, make_inputs=lambda s: (torch.randn(s["n"]),), dims=("n",),
                    default_stream=({"n": 8}, {"n": 16}, {"n": 8}))


def memoizes_then_reads_a_value() -> Workload:
    """The memoized table as above, and a value read for the larger size: the dry run on fake
    tensors restarts computing for real, and must not meet the fake tables its first attempt
    left in the cache (it raised where the real run compiles)."""

    @torch.compiler.disable
    def table(n: int) -> torch.Tensor:
        return _memo_table(n)

    def build():
        def f(x: torch.Tensor) -> torch.Tensor:
            y = x + table(x.shape[0])
            if x.shape[0] > 10:
                return y * float(table(x.shape[0]).sum().item())
            return y

        return f

    return Workload(name="memoizes-then-reads", build=build, make_inputs=lambda s: (torch.randn(s["n"]),),
                    dims=("n",), default_stream=({"n": 8}, {"n": 16}, {"n": 8}))


def warms_after_three() -> Workload:
    """A call count in a closure, and a path that changes after the third call: under default
    the count goes dynamic after its second compile, so one more call of a shape (the repeat
    check) hits, yet a later call takes the other path and compiles."""

    def build():
        calls = [0]

        def step(x: torch.Tensor) -> torch.Tensor:
            calls[0] += 1
            return x * 2 if calls[0] > 3 else x + calls[0]

        return step

    return Workload(name="warms-after-three", build=build, make_inputs=lambda s: (torch.randn(s["n"]),),
                    dims=("n",), default_stream=tuple({"n": 8} for _ in range(6)))


FLIPS = {"on": False}  # ``flips_a_global``'s calls flip it


def flips_a_global() -> Workload:
    """Each call flips a module-level flag its path reads: the repeat check's one extra call
    meets the flag as the first call of its shape did (a hit), the stream's repeat does not."""

    def build():
        def f(x: torch.Tensor) -> torch.Tensor:
            FLIPS["on"] = not FLIPS["on"]
            return x * 2 if FLIPS["on"] else x + 1

        return f

    return Workload(name="flips-a-global", build=build, make_inputs=lambda s: (torch.randn(s["n"]),), dims=("n",),
                    default_stream=tuple({"n": n} for n in (8, 8, 16, 16)))


def breaks_once_dynamic() -> Workload:
    """A graph break only where the size is symbolic (``sorted`` of a size): under default the
    first size compiles a static entry whole; the second a dynamic one that breaks into a
    resume frame compiled for that size. The first size again then runs the newer entry (the
    newest is tried first) into the resume frame, which has no entry for it: it compiles,
    though its shape was seen — and the next new size hits."""

    def build():
        def f(x: torch.Tensor) -> torch.Tensor:
            k = sorted([x.shape[0], 4])[0]
            return x.sin() * k

        return f

    return Workload(name="breaks-once-dynamic", build=build, make_inputs=lambda s: (torch.randn(s["n"]),),
                    dims=("n",), default_stream=tuple({"n": n} for n in (8, 16, 8, 10, 16, 8, 12, 8)))


def passes_through_first() -> Workload:
    """The first request's list holds one tensor: the loop adds nothing, the graph has no op,
    and Dynamo skips the frame for good — every later request runs eagerly (no guard checked),
    though each does real work: never a hit."""

    def build():
        def f(xs: list[torch.Tensor]) -> torch.Tensor:
            out = xs[0]
            for t in xs[1:]:
                out = out + t
            return out

        return f

    return Workload(name="passes-through-first", build=build,
                    make_inputs=lambda s: ([torch.randn(s["n"]) for _ in range(s["k"])],), dims=("n", "k"),
                    default_stream=tuple({"n": n, "k": k} for n, k in ((8, 1), (8, 2), (16, 2), (8, 2))))


def order_across_a_break() -> Workload:
    """Two entries of the function's own frame accept one request: the first (made where ``y``
    and ``z`` are one size) breaks the graph before it reads ``x``, the second reads ``x``
    first. Dynamo tries the one that last ran first, so which runs — and whether the resume
    frame after the break has an entry for ``x`` — depends on the order the calls before left,
    which a dry run that copies repeats does not replay."""
    from torch.fx.experimental.symbolic_shapes import statically_known_true

    def build():
        def f(x: torch.Tensor, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
            if statically_known_true(y.shape[0] == z.shape[0]):
                torch._dynamo.graph_break()
            return x * 2 if x.shape[0] > 10 else x * 3

        return f

    return Workload(name="order-across-a-break", build=build,
                    make_inputs=lambda s: (torch.randn(s["x"]), torch.randn(s["y"]), torch.randn(s["z"])),
                    dims=("x", "y", "z"), default_stream=tuple({"x": x, "y": 8, "z": z} for x, z in (
                        (4, 8), (16, 12), (16, 8), (16, 8), (4, 8), (16, 8))))


class _Steps(torch.nn.Module):
    """Counts its calls in a buffer and branches on the count past a graph break."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("steps", torch.zeros((), dtype=torch.long))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.steps += 1
        return x.cos() if self.steps > 3 else x * 2


def counts_in_a_buffer() -> Workload:
    """The path changes at the fourth call, on a buffer's value (a graph break reads it)."""
    return Workload(name="counts-in-a-buffer", build=_Steps, make_inputs=lambda s: (torch.randn(s["n"]),),
                    dims=("n",), default_stream=tuple({"n": 8} for _ in range(6)))


def draws_its_path() -> Workload:
    """Each call draws a number and branches on it past a graph break: a repeat's path is the
    generator's, not its shape's."""

    def build():
        torch.manual_seed(0)

        def f(x: torch.Tensor) -> torch.Tensor:
            return x.cos() if torch.rand(()) > 0.85 else x * 2

        return f

    return Workload(name="draws-its-path", build=build, make_inputs=lambda s: (torch.randn(s["n"]),),
                    dims=("n",), default_stream=tuple({"n": 8} for _ in range(12)))


class _Warmth:
    def __init__(self) -> None:
        self.calls = 0
        self.warm = False


@torch._dynamo.disable
def _tick(state: _Warmth) -> None:
    state.calls += 1
    state.warm = state.calls > 3


def holds_an_object() -> Workload:
    """A closure over an object of the user's class whose flag flips at the fourth call."""

    def build():
        state = _Warmth()

        def f(x: torch.Tensor) -> torch.Tensor:
            _tick(state)
            return x.cos() if state.warm else x * 2

        return f

    return Workload(name="holds-an-object", build=build, make_inputs=lambda s: (torch.randn(s["n"]),),
                    dims=("n",), default_stream=tuple({"n": 8} for _ in range(6)))


def breaks_past_the_limit() -> Workload:
    """A graph break in every call, and more sizes than the recompile limit: under static the
    function's own frame is refused from the ninth size on (no entry accepts it), and its
    repeats run eagerly; a size seen early still hits."""

    def build():
        def f(x: torch.Tensor) -> torch.Tensor:
            y = x.sin()
            torch._dynamo.graph_break()
            return y * 2

        return f

    return Workload(name="breaks-past-the-limit", build=build, make_inputs=lambda s: (torch.randn(s["n"]),),
                    dims=("n",), default_stream=tuple({"n": n} for n in (*range(1, 11), 9, 10, 9, 1, 10)))


class _DropsThenBreaks(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.drop = torch.nn.Dropout(0.5)
        self.head = torch.nn.Linear(8, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.drop(x)
        torch._dynamo.graph_break()  # no value read past it
        return self.head(y)


def drops_then_breaks() -> Workload:
    """Dropout in train mode draws from the generator every call, and an explicit graph break
    follows it: no path reads a value, so a repeat repeats (before, every copied request was
    unknown on the generator's state)."""
    return Workload(name="drops-then-breaks", build=_DropsThenBreaks,
                    make_inputs=lambda s: (torch.randn(s["n"], 8),), dims=("n",),
                    default_stream=tuple({"n": n} for n in (4, 4, 8, 4, 8, 8)))


class _Scored(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x).relu().sum()


def evaluates_every_third() -> Workload:
    """A training loop that evaluates under ``no_grad`` every third step: the step's own count
    decides torch's grad mode, which Dynamo guards. A repeat copied without its step would
    repeat a training call's hit where the real run compiles for inference."""
    calls = [0]

    def step(fn, x):
        calls[0] += 1
        if calls[0] % 3 == 0:
            with torch.no_grad():
                return fn(x)
        loss = fn(x)
        loss.backward()
        return loss.detach()

    return Workload(name="evaluates-every-third", build=_Scored, make_inputs=lambda s: (torch.randn(s["n"], 4),),
                    dims=("n",), default_stream=tuple({"n": n} for n in (8, 8, 8, 8, 8, 16, 16, 16, 8, 8)),
                    grad=True, step=step)


SCALE = [0]  # set by make_inputs below, read by the compiled forward


class _ScaledByAGlobal(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.sin() * (SCALE[0] + 1)


def sets_a_global_in_make_inputs() -> Workload:
    """``make_inputs`` sets a global the forward reads (a setting reloaded with the previous
    request's value): a change between two calls, which no call of the compiled module makes."""
    previous = [0]

    def make_inputs(s):
        SCALE[0], previous[0] = previous[0], s["k"]
        return (torch.randn(s["n"]),)

    return Workload(name="sets-a-global-in-make-inputs", build=_ScaledByAGlobal, make_inputs=make_inputs,
                    dims=("n", "k"), default_stream=tuple({"n": 8, "k": k} for k in (0, 0, 5, 0, 0, 3, 5, 0)))


class _ClassTable(torch.nn.Module):
    table = torch.zeros(4)  # one table for every instance, grown on demand

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[0]
        if n > _ClassTable.table.shape[0]:
            _ClassTable.table = torch.arange(2 * n, dtype=torch.float32)
        return x * _ClassTable.table[:n]


def keeps_a_class_table() -> Workload:
    """A table kept on the module's class and grown by calls: a fresh process meets it small;
    the forecast's process, after the workload's check and each strategy's dry run, grown."""
    return Workload(name="keeps-a-class-table", build=_ClassTable, make_inputs=lambda s: (torch.randn(s["n"]),),
                    dims=("n",), default_stream=tuple({"n": n} for n in (8, 16, 8, 12, 32, 20, 8, 64, 16)))


class _TableElsewhere(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * workloads_forecast_table.table(x.shape[0])


def keeps_a_table_elsewhere() -> Workload:
    """The class table's case with the table in another module of the user's, which this one
    imports: a fresh process meets it small."""
    return Workload(name="keeps-a-table-elsewhere", build=_TableElsewhere,
                    make_inputs=lambda s: (torch.randn(s["n"]),), dims=("n",),
                    default_stream=tuple({"n": n} for n in (8, 16, 8, 12, 32, 20, 8, 64, 16)))


class _Sin(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.sin()


def turns_on_deterministic_algorithms() -> Workload:
    """``make_inputs`` turns deterministic algorithms on for good once a request is long, a
    setting of torch's that Dynamo guards on every frame: a fresh process meets it off, the
    forecast's process, after an earlier strategy's dry run, on."""

    def make(s: dict[str, int]) -> tuple[torch.Tensor]:
        if s["n"] >= 64:
            torch.use_deterministic_algorithms(True)
        return (torch.randn(s["n"]),)

    return Workload(name="turns-on-deterministic-algorithms", build=_Sin, make_inputs=make, dims=("n",),
                    default_stream=tuple({"n": n} for n in (8, 64, 8, 8)))


class _Warmup:
    """A schedule the user's module keeps: the first ``steps`` calls take the warm-up path."""

    def __init__(self, steps: int) -> None:
        self.step, self.steps = 0, steps

    def tick(self) -> bool:
        self.step += 1
        return self.step > self.steps


SCHEDULE = _Warmup(3)


class _Scheduled(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.sin() if SCHEDULE.tick() else x.cos()


def keeps_a_schedule_object() -> Workload:
    """The forward ticks an object of the user's class that the module keeps (the step is
    its attribute): a fresh process meets it at 0."""
    return Workload(name="keeps-a-schedule-object", build=_Scheduled, make_inputs=lambda s: (torch.randn(s["n"]),),
                    dims=("n",), default_stream=tuple({"n": n} for n in (8, 8, 8, 8, 8, 16, 8)))


def _warmed_after(steps: int) -> Any:
    count = [0]

    @torch.compiler.disable
    def warmed() -> bool:
        count[0] += 1
        return count[0] > steps

    return warmed


is_warmed = _warmed_after(3)  # a module-level function whose closure counts its calls


class _CountsInAClosure(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x * 2
        return y.sin() if is_warmed() else y.cos()


def counts_in_a_module_functions_closure() -> Workload:
    """The forward asks a module-level function, made by a factory, whose closure counts the
    calls (run eagerly: ``torch.compiler.disable``): the fast path after the third."""
    return Workload(name="counts-in-a-module-functions-closure", build=_CountsInAClosure,
                    make_inputs=lambda s: (torch.randn(s["n"]),), dims=("n",),
                    default_stream=tuple({"n": n} for n in (8, 8, 8, 8, 8, 16, 8)))


class _Engine:
    """Not a module: an object whose method is the compiled function; it counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    @torch.compiler.disable
    def _tick(self) -> bool:
        self.calls += 1
        return self.calls > 3

    def predict(self, x: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
        y = x.sin() * scale
        return y * 2 if self._tick() else y.cos()


def a_bound_method_that_counts() -> Workload:
    """The compiled function is a method bound to an object of the user's class (its count)."""
    return Workload(name="a-bound-method-that-counts", build=lambda: _Engine().predict,
                    make_inputs=lambda s: (torch.randn(s["n"]),), dims=("n",),
                    default_stream=tuple({"n": n} for n in (8, 8, 8, 8, 8, 16, 8)))


def a_partial_of_a_bound_method() -> Workload:
    """The same behind a ``functools.partial`` (a keyword bound): ``torch.compile`` wraps it."""
    return Workload(name="a-partial-of-a-bound-method", build=lambda: functools.partial(_Engine().predict, scale=0.5),
                    make_inputs=lambda s: (torch.randn(s["n"]),), dims=("n",),
                    default_stream=tuple({"n": n} for n in (8, 8, 8, 8, 8, 16, 8)))


_TICKS = itertools.count()  # a hidden counter the module keeps


def turns_grad_off_every_third_input() -> Workload:
    """``make_inputs`` turns grad mode off for every third request by a module's
    ``itertools.count`` (the probe's and an earlier strategy's calls advance it; a fresh
    process's starts at 0)."""

    def make(s: dict[str, int]) -> tuple[torch.Tensor]:
        torch.set_grad_enabled(next(_TICKS) % 3 != 2)
        return (torch.randn(s["n"], 4),)

    return Workload(name="turns-grad-off-every-third-input", build=_Scored, make_inputs=make, dims=("n",),
                    default_stream=tuple({"n": n} for n in (8, 8, 8, 8, 8, 16, 8)), grad=True)


class _Lazy(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.lin = torch.nn.LazyLinear(8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x).relu()


def lazy_linear() -> Workload:
    """A lazy module: its parameter has no sizes until the first call sets them."""
    return Workload(name="lazy-linear", build=_Lazy, make_inputs=lambda s: (torch.randn(s["n"], 16),),
                    dims=("n",), default_stream=tuple({"n": n} for n in (8, 16, 8, 24, 16)))


class _WarmupModule(torch.nn.Module, _Warmup):
    """The schedule made a module, kept by the user's module (no trial builds it anew)."""

    def __init__(self, steps: int) -> None:
        torch.nn.Module.__init__(self)
        _Warmup.__init__(self, steps)


SCHEDULE_MODULE = _WarmupModule(3)


class _ScheduledByAModule(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.sin() if SCHEDULE_MODULE.tick() else x.cos()


def keeps_a_schedule_module() -> Workload:
    return Workload(name="keeps-a-schedule-module", build=_ScheduledByAModule,
                    make_inputs=lambda s: (torch.randn(s["n"]),), dims=("n",),
                    default_stream=tuple({"n": n} for n in (8, 8, 8, 8, 8, 16, 8)))


def _hooked() -> torch.nn.Module:
    count = [0]

    def hook(module: torch.nn.Module, args: Any, out: torch.Tensor) -> torch.Tensor:
        count[0] += 1
        return out * 2 if count[0] > 3 else out

    model = _Scored()
    model.lin.register_forward_hook(hook)
    return model


def counts_in_a_hook() -> Workload:
    """A forward hook, registered by ``build``, whose closure counts the calls."""
    return Workload(name="counts-in-a-hook", build=_hooked, make_inputs=lambda s: (torch.randn(s["n"], 4),),
                    dims=("n",), default_stream=tuple({"n": n} for n in (8, 8, 8, 8, 8, 16, 8)))


class _CountsInADefault(torch.nn.Module):
    def forward(self, x: torch.Tensor, _calls: list[int] = [0]) -> torch.Tensor:  # noqa: B006 - the point
        _calls[0] += 1
        return x.sin() if _calls[0] > 3 else x.cos()


def counts_in_a_default() -> Workload:
    """A mutable default argument that counts the calls: the class's, kept across trials."""
    return Workload(name="counts-in-a-default", build=_CountsInADefault, make_inputs=lambda s: (torch.randn(s["n"]),),
                    dims=("n",), default_stream=tuple({"n": n} for n in (8, 8, 8, 8, 8, 16, 8)))


def inputs_count_in_a_closure() -> Workload:
    """``make_inputs`` counts its requests in its own closure and turns grad mode off for
    every third: a change only a copied request's inputs would make."""
    seen = [0]

    def make(s: dict[str, int]) -> tuple[torch.Tensor]:
        seen[0] += 1
        torch.set_grad_enabled(seen[0] % 3 != 0)
        return (torch.randn(s["n"], 4),)

    return Workload(name="inputs-count-in-a-closure", build=_Scored, make_inputs=make, dims=("n",),
                    default_stream=tuple({"n": 8} for _ in range(7)), grad=True)


class _Tagged(torch.Tensor):
    """A tensor subclass with ``__torch_function__`` (a user's tagging type)."""

    @classmethod
    def __torch_function__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        return super().__torch_function__(func, types, args, kwargs or {})


def a_subclass_input_for_long_requests() -> Workload:
    """Long requests come as a ``__torch_function__`` subclass: AOT autograd fails on it, and
    the request raises under aot_eager (a graph with static sizes that the dry run handed to no
    backend: before, forecast as a compile)."""

    def build():
        def f(x: torch.Tensor) -> torch.Tensor:
            return (x.sin() * 2).sum(0)

        return f

    def make(s: dict[str, int]) -> tuple[torch.Tensor]:
        x = torch.randn(s["n"], 4)
        return (x.as_subclass(_Tagged) if s["n"] >= 32 else x,)

    return Workload(name="a-subclass-input-for-long-requests", build=build, make_inputs=make, dims=("n",),
                    default_stream=tuple({"n": n} for n in (32, 32, 8, 64, 8)))


def best_of_no_candidates() -> Workload:
    """The best of ``n`` candidates' scores: with none, the real kernel raises (a reduction over
    an empty dimension) where its fake one gives a tensor."""

    def build():
        def best(x: torch.Tensor) -> torch.Tensor:
            return (x * 2).max(dim=0).values

        return best

    return Workload(name="best-of-no-candidates", build=build, make_inputs=lambda s: (torch.randn(s["n"], 4),),
                    dims=("n",), default_stream=tuple({"n": n} for n in (8, 8, 0, 16, 0, 8)))


def fresh_state() -> None:
    """This module's state, and torch's settings its workloads change, as a fresh process meets
    them (the forecast tests run real trials in their own process)."""
    global _TICKS, is_warmed
    SCALE[0], _ClassTable.table = 0, torch.zeros(4)
    workloads_forecast_table.TABLE["t"] = torch.zeros(4)
    SCHEDULE.step = SCHEDULE_MODULE.step = 0
    _CountsInADefault.forward.__defaults__[0][0] = 0
    is_warmed, _TICKS = _warmed_after(3), itertools.count()
    torch.use_deterministic_algorithms(False)
    torch.set_grad_enabled(True)


_DRAWS = __import__("random").Random(0)


def draws_its_length() -> Workload:
    """``make_inputs`` draws each request's length at random around its ``n``: a shape's
    requests are not a function of the shape, which a copied request takes them to be."""

    def build():
        def f(x: torch.Tensor) -> torch.Tensor:
            return x.sin() * 2

        return f

    return Workload(name="draws-its-length", build=build,
                    make_inputs=lambda s: (torch.randn(s["n"] + _DRAWS.randint(0, 3)),), dims=("n",),
                    default_stream=tuple({"n": n} for n in (8, 8, 8, 8, 16, 16, 16, 8, 8, 8, 16, 16)))
