"""compilescope's own cost on a steady-state call, side by side in one process.

    python benchmarks/steady_overhead.py [--calls 20000]

A near-empty compiled call (aot_eager, a 16-element add), interleaved four ways:

* plain: ``torch.compile(f, backend="aot_eager")``, a bare perf_counter around it;
* counted: the same function compiled through compilescope's wrapped backend (which notes
  the compiled graph each call runs — how ``run`` tells eager fallbacks apart);
* steady sample: the counted call timed by ``WallClock`` (the steady-state path);
* stream request: the counted call timed, plus ``GraphRunLog.start/taken`` and the
  ``CaptureSession.poll`` that follows every stream request (after the timed interval).

Prints medians and each one's ratio to plain.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from _common import write
from compilescope.collect.capture import CaptureSession
from compilescope.collect.graphs import GraphRunLog
from compilescope.collect.timer import WallClock


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=20_000)
    n = parser.parse_args().calls
    torch.set_num_threads(1)

    def add(x: torch.Tensor) -> torch.Tensor:
        return x + 1

    plain = torch.compile(add, backend="aot_eager")
    graphs = GraphRunLog()
    counted = torch.compile(lambda x: x + 1, backend=graphs.backend("aot_eager"))
    x = torch.ones(16)
    for _ in range(200):
        plain(x)
        counted(x)
    clock = WallClock()
    capture = CaptureSession().install()
    rows: dict[str, list[float]] = {"plain": [], "counted": [], "steady sample": [], "stream request": []}
    try:
        for _ in range(n):
            t0 = time.perf_counter()
            plain(x)
            rows["plain"].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            counted(x)
            rows["counted"].append(time.perf_counter() - t0)
            rows["steady sample"].append(clock.time_call(counted, x)[1])
            t0 = time.perf_counter()
            graphs.start()
            clock.time_call(counted, x)
            graphs.taken()
            capture.poll(call_index=0, phase="stream", arguments={"x": x})
            rows["stream request"].append(time.perf_counter() - t0)
    finally:
        capture.uninstall()
    med = {k: statistics.median(v) * 1e6 for k, v in rows.items()}
    base = med["plain"]
    print(f"{n} interleaved calls of a compiled 16-element add (aot_eager), median µs per call")
    for name, value in med.items():
        print(f"{name:<16} {value:8.2f} µs  {value / base:6.3f}x  ({value - base:+.2f} µs)")
    write("steady_overhead", {"calls": n, "median_us": med, "ratio_to_plain": {k: v / base for k, v in med.items()}})


if __name__ == "__main__":
    main()
