"""What finding every failing guard costs on a recompile (it never runs on a steady call).

    python benchmarks/guard_walk_cost.py [--rounds 10]

The built-in transformer (4 encoder layers: a guard tree over every parameter and buffer) is
compiled with the eager backend and dynamic=False; each round calls it at a new batch size,
so every call recompiles and each cached entry rejects it. Interleaved per round in one
process: the recompiling call's wall time with the guard walk off and on
(``CaptureSession(walk_guards=False|True)``), and the walk alone (evaluating every guard of
every rejecting entry). Prints medians.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from _common import write
from compilescope import compat
from compilescope.torchtext import explain_checks
from compilescope.collect.capture import CaptureSession
from compilescope.zoo import transformer_workload


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=10)
    rounds = parser.parse_args().rounds
    torch.set_num_threads(1)
    workload = transformer_workload()
    timings: dict[str, list[float]] = {"recompile, walk off": [], "recompile, walk on": [], "walk alone": []}
    leaves: list[int] = []
    with torch.no_grad():
        for walk in (False, True) * rounds:
            torch.compiler.reset()
            model = torch.compile(workload.build(), backend="eager", dynamic=False)
            model(torch.randn(1, 16, 128))
            session = CaptureSession(walk_guards=walk).install()
            contexts = []
            undo = compat.observe_guard_failures(lambda code, text: contexts.append(compat.rejecting_entry()))
            try:
                t0 = time.perf_counter()
                model(torch.randn(2, 16, 128))
                elapsed = time.perf_counter() - t0
            finally:
                undo()
                session.uninstall()
            timings["recompile, walk on" if walk else "recompile, walk off"].append(elapsed)
            if walk and contexts and contexts[0] is not None:
                t0 = time.perf_counter()
                checks = compat.walk_guards(*contexts[0])
                explain_checks(checks, "0/0")
                timings["walk alone"].append(time.perf_counter() - t0)
                leaves.append(_count_leaves(contexts[0][0]))
    print(f"transformer (4 layers), eager backend, {rounds} recompiles each way; median ms")
    for name, values in timings.items():
        print(f"{name:<22} {statistics.median(values) * 1e3:9.2f} ms")
    off, on = (statistics.median(timings[k]) for k in ("recompile, walk off", "recompile, walk on"))
    print(f"walk on / off          {on / off:9.3f}x   ({leaves[0] if leaves else '?'} guards walked per entry)")
    write("guard_walk_cost", {"rounds": rounds, "median_s": {k: statistics.median(v) for k, v in timings.items()},
                              "walk_on_vs_off": on / off, "guards_per_entry": leaves[0] if leaves else None})


def _count_leaves(manager: object) -> int:
    root = getattr(manager, "root", manager)
    count = 0
    stack = [root]
    while stack:
        m = stack.pop()
        count += len(m.get_leaf_guards())  # type: ignore[attr-defined]
        stack.extend(m.get_child_managers())  # type: ignore[attr-defined]
    return count


if __name__ == "__main__":
    main()
