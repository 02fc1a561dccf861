"""compilescope.watch's cost on a steady compiled call, side by side in one process.

    python benchmarks/watch_overhead.py [--calls 20000] [--size 12000]

A compiled call of about 50 µs (aot_eager, sin + cos over --size elements), in alternating
blocks of 50 calls:

* plain: no watch active;
* in a watch: inside a ``with compilescope.watch():`` scope entered before the block and left
  after it (the production use: one long-lived scope);
* watch per call: a fresh watch entered and left around each call (the decorator use).

Prints medians and each one's ratio to plain. The goal for "in a watch" is ≤ 1.01×.
"""

from __future__ import annotations

import statistics
import time


import compilescope
from _common import steady_compiled_call, write


def main() -> None:
    args, f, x = steady_compiled_call()
    plain: list[float] = []
    inside: list[float] = []
    per_call: list[float] = []
    for _ in range(max(1, args.calls // args.block)):
        for _ in range(args.block):
            t0 = time.perf_counter()
            f(x)
            plain.append(time.perf_counter() - t0)
        with compilescope.watch(max_recompiles=0):  # entered and left outside the timed calls
            for _ in range(args.block):
                t0 = time.perf_counter()
                f(x)
                inside.append(time.perf_counter() - t0)
        for _ in range(args.block):
            t0 = time.perf_counter()
            with compilescope.watch(max_recompiles=0):
                f(x)
            per_call.append(time.perf_counter() - t0)
    med = {"plain": statistics.median(plain), "in a watch": statistics.median(inside),
           "watch per call": statistics.median(per_call)}
    base = med["plain"]
    print(f"{args.calls} interleaved calls of a compiled sin+cos over {args.size} floats (aot_eager), median per call")
    for name, value in med.items():
        print(f"{name:<15} {value * 1e6:8.2f} µs  {value / base:6.3f}x  ({(value - base) * 1e6:+.2f} µs)")
    write("watch_overhead", {"calls": args.calls, "size": args.size, "median_s": med,
                             "ratio_to_plain": {k: v / base for k, v in med.items()}})


if __name__ == "__main__":
    main()
