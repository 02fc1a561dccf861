"""compilescope's own cost on a steady-state call, measured against a bare timing loop.

    python benchmarks/steady_overhead.py

Times a near-empty compiled call (aot_eager, a 16-element add) three ways in one process:
a bare perf_counter loop, compilescope's WallClock (the steady-state path), and a stream
call (WallClock + the per-call compile capture diff). Prints medians and the added cost.
"""

from __future__ import annotations

import statistics
import time

import torch

from compilescope.collect.capture import CompileCapture
from compilescope.collect.timer import WallClock

N = 20_000


def main() -> None:
    torch.set_num_threads(1)
    f = torch.compile(lambda x: x + 1, backend="aot_eager")
    x = torch.ones(16)
    for _ in range(100):
        f(x)
    clock = WallClock()
    capture = CompileCapture()
    bare, wall, stream = [], [], []
    for _ in range(N):
        t0 = time.perf_counter()
        f(x)
        bare.append(time.perf_counter() - t0)
        wall.append(clock.time_call(f, x)[1])
        t0 = time.perf_counter()
        clock.time_call(f, x)
        capture.take(0, {"x": x})
        stream.append(time.perf_counter() - t0)
    b, w, s = (statistics.median(v) * 1e6 for v in (bare, wall, stream))
    print(f"{N} interleaved calls of a compiled 16-element add (aot_eager), median µs per call")
    print(f"bare perf_counter loop           {b:8.2f}")
    print(f"steady state (WallClock)          {w:8.2f}   +{w - b:.2f} µs")
    print(f"stream call (WallClock + capture) {s:8.2f}   +{s - b:.2f} µs (once per request, not in steady state)")


if __name__ == "__main__":
    main()
