"""Compile seconds compilescope attributes, against PyTorch's own count and the caller's wall.

    python benchmarks/compile_attribution.py [--processes 3]

Each process (fresh, with its own empty inductor cache) runs one cold trial of the built-in
``mlp`` workload with inductor over a stream that compiles, recompiles and reuses, then reads
three figures per compiling request:

* attributed: the compile seconds compilescope records for the request (its frame compiles,
  backward included);
* PyTorch: ``torch._dynamo.utils.compilation_time_metrics["_compile.compile_inner"]``,
  PyTorch's own timer around each frame compile, read independently in the same process;
* first-call wall: the request's latency measured by the caller minus the steady-state
  median of the same shape (what the user waits for beyond a warm call).

Prints the per-process sums and the ratios attributed / PyTorch and attributed / wall.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

from _common import spread, write

CHILD = r"""
import json, statistics, torch
from compilescope.execute.trial import run_trial
from compilescope.model import MeasureOptions, StrategyOptions, TrialSpec
stream = tuple({"batch": b} for b in (8, 8, 32, 32, 4, 8))
spec = TrialSpec("mlp", "default", "cold", stream, StrategyOptions(backend="inductor"),
                 MeasureOptions(warmup=3, samples=30, min_samples=10, budget_s=0.5, numerics=False))
result, _ = run_trial(spec)
steady = {tuple(s.shape.items()): statistics.median(s.compiled_s) for s in result.steady}
rows = []
for c in result.calls:
    if not c.compile_ids:
        continue
    mine = [r for r in result.compiles if r.call_index == c.index and r.phase == "stream"]
    rows.append({"request": c.index, "attributed_s": sum((r.compile_time_s or 0) + (r.backward_compile_s or 0) for r in mine),
                 "wall_s": c.latency_s - steady[tuple(c.shape.items())]})
pytorch = torch._dynamo.utils.compilation_time_metrics.get("_compile.compile_inner", [])
print(json.dumps({"rows": rows, "pytorch_s": list(pytorch)}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--processes", type=int, default=3)
    args = parser.parse_args()
    per_process = []
    for i in range(args.processes):
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache, OMP_NUM_THREADS="1")
            out = subprocess.run([sys.executable, "-c", CHILD], env=env, check=True, capture_output=True, text=True)
        data = json.loads(out.stdout.strip().splitlines()[-1])
        attributed = sum(r["attributed_s"] for r in data["rows"])
        wall = sum(r["wall_s"] for r in data["rows"])
        pytorch = sum(data["pytorch_s"])
        per_process.append({"compiles": len(data["pytorch_s"]), "attributed_s": attributed, "pytorch_s": pytorch,
                            "wall_s": wall, "vs_pytorch": attributed / pytorch, "vs_wall": attributed / wall})
    print(f"mlp workload, inductor, cold cache, {args.processes} fresh processes; compile seconds per process")
    print(f"{'process':<8} {'compiles':>8} {'attributed':>11} {'PyTorch':>9} {'call wall':>10} {'/PyTorch':>9} {'/wall':>7}")
    for i, p in enumerate(per_process):
        print(f"{i:<8} {p['compiles']:>8} {p['attributed_s']:10.2f}s {p['pytorch_s']:8.2f}s {p['wall_s']:9.2f}s "
              f"{p['vs_pytorch']:9.3f} {p['vs_wall']:7.3f}")
    vs_p = spread([p["vs_pytorch"] for p in per_process])
    vs_w = spread([p["vs_wall"] for p in per_process])
    print(f"median attributed / PyTorch {vs_p['median']:.3f} (range {vs_p['min']:.3f}–{vs_p['max']:.3f}); "
          f"attributed / first-call wall {vs_w['median']:.3f} (range {vs_w['min']:.3f}–{vs_w['max']:.3f})")
    write("compile_attribution", {"processes": per_process, "vs_pytorch": vs_p, "vs_wall": vs_w})


if __name__ == "__main__":
    main()
