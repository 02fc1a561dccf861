"""The cost of ``watch(record_shapes=…)`` on a steady compiled call, side by side in one process.

    python benchmarks/record_shapes_overhead.py [--calls 20000] [--size 12000]

A compiled call of about 50 µs (aot_eager, sin + cos over --size elements, one thread), in
alternating blocks of 50 calls: plain, then recorded at each sampling rate (1, 0.1, 0.01).
Each rate has one recorder for the whole run (the production use: one long-lived scope),
switched on around its blocks outside the timed calls, and written out at the end; the
time to format and write its lines is inside the recorded calls (it happens every 512).

Prints each one's median per call, interquartile range and ratio to plain. The goal for
rate 1 is ≤ 1.02×.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path


from _common import spread, steady_compiled_call, write
from compilescope.shapes_record import HUB, ShapeRecorder

RATES = (1.0, 0.1, 0.01)


def main() -> None:
    args, f, x = steady_compiled_call()
    tmp = Path(tempfile.mkdtemp(prefix="record-bench-"))
    recorders = {rate: ShapeRecorder(tmp / f"rate-{rate}.jsonl", sample=rate) for rate in RATES}
    samples: dict[str, list[float]] = {"plain": [], **{f"rate {r}": [] for r in RATES}}

    def block(into: list[float]) -> None:
        for _ in range(args.block):
            t0 = time.perf_counter()
            f(x)
            into.append(time.perf_counter() - t0)

    for _ in range(max(1, args.calls // args.block)):
        block(samples["plain"])
        for rate, recorder in recorders.items():
            HUB.add(recorder)
            block(samples[f"rate {rate}"])
            HUB.remove(recorder)
    written = {rate: r.close() for rate, r in recorders.items()}
    stats = {name: spread(values) for name, values in samples.items()}
    base = stats["plain"]["median"]
    print(f"{args.calls} interleaved calls per variant of a compiled sin+cos over {args.size} floats (aot_eager), "
          "per call")
    for name, s in stats.items():
        print(f"{name:<11} median {s['median'] * 1e6:8.2f} µs  IQR {s['q1'] * 1e6:7.2f}–{s['q3'] * 1e6:7.2f} µs  "
              f"{s['median'] / base:6.3f}x  ({(s['median'] - base) * 1e6:+.2f} µs)")
    for rate, summary in written.items():
        lines = sum(f.written for f in summary.files)
        print(f"rate {rate}: {lines} line(s) written, {summary.sampled_out} call(s) sampled out")
    write("record_shapes_overhead", {"calls": args.calls, "size": args.size, "stats": stats,
                                     "ratio_to_plain": {k: v["median"] / base for k, v in stats.items()},
                                     "median_ratio_spread": statistics.median(samples["plain"]) / base})


if __name__ == "__main__":
    main()
