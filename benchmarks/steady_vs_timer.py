"""compilescope's steady-state median against torch.utils.benchmark on the same call.

    python benchmarks/steady_vs_timer.py [--rounds 15]

For each case (a function, a backend, an input size) one compiled callable is measured two
ways, alternating in rounds inside one process so drift hits both:

* compilescope: the steady-state sampler ``run`` uses (``WallClock`` around each call,
  warmed, interleaved with nothing else), the median of the round's samples;
* Timer: ``torch.utils.benchmark.Timer(...).blocked_autorange(min_run_time=0.2)``, its median.

Prints the median over rounds of each and their ratio (goal: within ±3%).
"""

from __future__ import annotations

import argparse
import statistics

import torch
import torch.utils.benchmark as tb

from _common import spread, write
from compilescope.collect.timer import WallClock


def sincos(x: torch.Tensor) -> torch.Tensor:
    return x.sin() + x.cos()


def mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU(), torch.nn.Linear(512, 128)).eval()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--samples", type=int, default=200)
    args = parser.parse_args()
    torch.set_num_threads(1)
    cases = [
        ("sincos n=4096 (inductor)", torch.compile(sincos), torch.randn(4096)),
        ("sincos n=262144 (inductor)", torch.compile(sincos), torch.randn(262144)),
        ("mlp batch=32 (aot_eager)", torch.compile(mlp(), backend="aot_eager"), torch.randn(32, 256)),
    ]
    clock = WallClock()
    out = {}
    print(f"{args.rounds} alternating rounds per case, 1 thread; median of per-round medians")
    print(f"{'case':<28} {'compilescope':>13} {'Timer':>11} {'ratio':>7} {'ratio IQR':>15}")
    with torch.no_grad():
        for name, fn, x in cases:
            for _ in range(20):
                fn(x)
            ours, theirs, ratios = [], [], []
            timer = tb.Timer("fn(x)", globals={"fn": fn, "x": x}, num_threads=1)
            for _ in range(args.rounds):
                samples = [clock.time_call(fn, x)[1] for _ in range(args.samples)]
                a = statistics.median(samples)
                b = timer.blocked_autorange(min_run_time=0.2).median
                ours.append(a)
                theirs.append(b)
                ratios.append(a / b)
            r = spread(ratios)
            print(f"{name:<28} {statistics.median(ours) * 1e6:10.1f} µs {statistics.median(theirs) * 1e6:8.1f} µs "
                  f"{r['median']:7.3f} {r['q1']:7.3f}–{r['q3']:.3f}")
            out[name] = {"compilescope_s": spread(ours), "timer_s": spread(theirs), "ratio": r}
    write("steady_vs_timer", {"rounds": args.rounds, "cases": out})


if __name__ == "__main__":
    main()
