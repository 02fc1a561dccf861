"""What the guards charge on every call: compilescope's figure against PyTorch's own, and
what measuring it costs a steady call.

    python benchmarks/guard_cost.py [--layers 48] [--calls 400] [--processes 3]

Each of ``--processes`` fresh interpreters builds the built-in ``layers`` workload (a
ModuleList of user-defined Linear+ReLU layers, width 16), compiles it with ``dynamic=False``
and backend ``eager`` on one thread, calls it once with each of 8 batch sizes (8 cache
entries), then, on the same calls:

* **compilescope** — :func:`compilescope.collect.guard_cost.measure_guard_cost` on each size
  (each cache entry's guard check on the size's inputs, each sample right after a real call):
  a call's lookup with its entry tried first (one size repeated), and, for a sequence mixing
  the 8 sizes, each call's lookup derived as the report derives it — every entry tried before
  the hit (in the order Dynamo keeps them), plus the hit;
* **profiler** — the mean (and median) of PyTorch's ``TorchDynamo Cache Lookup`` event over
  the same calls, one size repeated and then the same mixed sequence, under
  ``torch.profiler.profile`` (which records every op of the call too);
* **guard_latency_us** — PyTorch's compilation metrics: each entry's guards evaluated once
  at compile time, after a cache flush (``profile_guard_manager``).

It prints the three side by side with their ratios, per process. Then the capture's overhead
on a steady call: the same model compiled twice (two copies of its ``forward``, so two caches),
steady calls of the two interleaved in blocks (which goes first alternating), the ratio of
their medians; then one of them is measured by the guard-cost capture (every entry's guards
checked, parts of its guard tree copied and timed) and the two are timed again. Two copies
differ by a few percent on their own, so the overhead is the ratio after the capture over the
ratio before it (goal ≤ 1.02).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import time
import types
from typing import Any

SIZES = (1, 2, 3, 4, 5, 6, 7, 8)


def _model(layers: int) -> Any:
    from compilescope.zoo import layers_workload

    return layers_workload(layers).build()


def _copy_forward(model: Any) -> Any:
    """The model with its own copy of ``forward``'s code: a cache of its own."""
    cls = type(model)
    clone = type(cls.__name__ + "Copy", (cls,), {"forward": types.FunctionType(
        cls.forward.__code__.replace(), cls.forward.__globals__, "forward")})
    model.__class__ = clone
    return model


def _mixed(n: int) -> list[int]:
    """A sequence mixing the sizes, each size's entry rarely first: seeded, as a service's."""
    rng = random.Random(0)
    return [rng.choice(SIZES) for _ in range(n)]


def _replayed(order: list[str], sequence: list[int], costs: dict[int, Any]) -> list[float]:
    """Each call's lookup in the sequence: the entries ahead of its hit (each as measured on
    its size), then the hit, the hit moved first — as the report derives it."""
    out = []
    for size in sequence:
        frame = costs[size].frames[0]
        checks = {c.entry: statistics.median(c.samples_s) for c in frame.checks}
        hit = next(c.entry for c in frame.checks if c.passed)
        ahead = order[: order.index(hit)]
        out.append(sum(checks[e] for e in ahead) + checks[hit])
        order.remove(hit)
        order.insert(0, hit)
    return out


def child(layers: int, calls: int) -> dict[str, Any]:
    import torch

    from compilescope import compat
    from compilescope.collect.guard_cost import measure_guard_cost

    torch.set_num_threads(1)
    torch.set_grad_enabled(False)
    undo = compat.enable_compilation_metrics()
    model = _model(layers)
    compiled = torch.compile(model, backend="eager", dynamic=False)
    xs = {b: torch.randn(b, 16) for b in SIZES}
    for b in SIZES:
        compiled(xs[b])
    latency = [m.guard_latency_us for m in compat.compilation_metrics_since(0) if m.guard_latency_us is not None]
    costs = {b: measure_guard_cost(lambda b=b: compiled(xs[b]), {"batch": b}, min_rounds=30, max_rounds=30,
                                   budget_s=60, parts=False) for b in SIZES}
    repeated = statistics.median(next(c for c in costs[8].frames[0].checks if c.passed).samples_s)
    sequence = _mixed(calls)
    # the order the entries stand in as the sequence starts: the last call was measure_guard_cost's of size 8
    order = list(costs[8].frames[0].order)
    compiled(xs[8])
    mixed = _replayed(order, sequence, costs)
    prof_repeated = compat.cache_lookup_times(lambda: compiled(xs[8]), calls)
    compiled(xs[8])
    it = iter(sequence)
    prof_mixed = compat.cache_lookup_times(lambda: compiled(xs[next(it)]), calls)
    undo()
    return {"compilescope_repeated_s": repeated, "compilescope_mixed_mean_s": statistics.mean(mixed),
            "profiler_repeated_mean_s": statistics.mean(prof_repeated),
            "profiler_repeated_median_s": statistics.median(prof_repeated),
            "profiler_mixed_mean_s": statistics.mean(prof_mixed), "profiler_mixed_median_s": statistics.median(prof_mixed),
            "guard_latency_mean_s": statistics.mean(latency) / 1e6 if latency else None,
            "entries": len(costs[8].frames[0].order), "guards": costs[8].frames[0].guards,
            "overhead": overhead(layers, calls)}


def _interleaved(fns: dict[str, Any], x: Any, calls: int, block: int) -> dict[str, float]:
    """Median seconds a call of each function, timed in blocks that alternate which goes first."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    names = list(fns)
    for i in range(max(1, calls // block)):
        for name in names if i % 2 == 0 else reversed(names):
            fn = fns[name]
            t0 = time.perf_counter()
            for _ in range(block):
                fn(x)
            times[name].append((time.perf_counter() - t0) / block)
    return {name: statistics.median(v) for name, v in times.items()}


def overhead(layers: int, calls: int, block: int = 20) -> dict[str, float]:
    """Steady calls of a model the guard-cost capture measured against a copy it never touched.

    Two compiled copies of one model differ by a few percent on their own (where their code and
    caches sit in memory), so the copies are timed against each other before the capture and again
    after it: the overhead is the ratio after over the ratio before."""
    import torch

    from compilescope.collect.guard_cost import measure_guard_cost

    plain = torch.compile(_copy_forward(_model(layers)), backend="eager", dynamic=False)
    measured = torch.compile(_copy_forward(_model(layers)), backend="eager", dynamic=False)
    x = torch.randn(8, 16)
    for _ in range(50):
        plain(x)
        measured(x)
    before = _interleaved({"plain": plain, "measured": measured}, x, calls, block)
    measure_guard_cost(lambda: measured(x), {"batch": 8}, min_rounds=30, max_rounds=30, budget_s=60)
    after = _interleaved({"plain": plain, "measured": measured}, x, calls, block)
    ratio_before = before["measured"] / before["plain"]
    ratio_after = after["measured"] / after["plain"]
    return {"plain_median_s": after["plain"], "measured_median_s": after["measured"],
            "ratio_before": ratio_before, "ratio_after": ratio_after, "ratio": ratio_after / ratio_before}


def _us(v: float | None) -> str:
    return "—" if v is None else f"{v * 1e6:8.1f} µs"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layers", type=int, default=48)
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.layers, args.calls)))
        return
    from _common import write

    runs = []
    for i in range(args.processes):
        proc = subprocess.run([sys.executable, __file__, "--child", "--layers", str(args.layers), "--calls",
                               str(args.calls)], capture_output=True, text=True, check=True)
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    print(f"layers={args.layers}, dynamic=False, backend eager, 8 batch sizes, {args.calls} calls a figure, "
          f"{args.processes} processes")
    print("process  compilescope  profiler mean (median)  ratio | mixed: compilescope  profiler mean (median)  ratio "
          "| guard_latency_us  ratio | overhead (copies before → after)")
    for i, r in enumerate(runs):
        lat = r["guard_latency_mean_s"]
        print(f"{i:7d}  {_us(r['compilescope_repeated_s'])}  {_us(r['profiler_repeated_mean_s'])} "
              f"({_us(r['profiler_repeated_median_s'])})  {r['compilescope_repeated_s'] / r['profiler_repeated_mean_s']:5.2f} "
              f"| {_us(r['compilescope_mixed_mean_s'])}  {_us(r['profiler_mixed_mean_s'])} "
              f"({_us(r['profiler_mixed_median_s'])})  {r['compilescope_mixed_mean_s'] / r['profiler_mixed_mean_s']:5.2f} "
              f"| {_us(lat)}  {r['compilescope_repeated_s'] / lat if lat else float('nan'):5.2f} "
              f"| ×{r['overhead']['ratio']:.3f} ({r['overhead']['ratio_before']:.3f} → {r['overhead']['ratio_after']:.3f})")
    write("guard_cost", {"layers": args.layers, "calls": args.calls, "processes": runs})


if __name__ == "__main__":
    main()
