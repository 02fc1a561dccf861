"""`compilescope run`'s wall time against the work its trials do.

    python benchmarks/run_overhead.py [--repeat 2] [--workload mlp] [--backend inductor]

Runs ``compilescope run WORKLOAD --strategies eager,default,static`` as a user would (fresh
processes, cold caches) and compares its wall time with

* the trials' own work: each trial's time after its process imported torch and compilescope
  (build, stream, steady state, numerics), summed over trials;
* the trials' processes: the same plus each process's start and imports (a process started
  ahead of its task waits idle for it: that wait is in neither, shown apart).

The ratio wall / work is the price of isolation and orchestration (goal ≤ 1.15×).
``benchmarks/trial_startup.py`` breaks the rest down.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import spread, write


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--workload", default="mlp")
    parser.add_argument("--backend", default="inductor")
    args = parser.parse_args()
    runs = []
    load = os.getloadavg()[0]
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "r.json"
            cmd = [sys.executable, "-m", "compilescope.cli", "run", args.workload, "--strategies",
                   "eager,default,static", "--backend", args.backend, "--samples", "10", "--budget", "0.2",
                   "--json", str(out)]
            start = time.perf_counter()
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=dict(os.environ, OMP_NUM_THREADS="1"))
            wall = time.perf_counter() - start
            trials = json.loads(out.read_text())["trials"]
        work = sum(t["process_s"] - t["import_s"] for t in trials)
        processes = sum(t["process_s"] for t in trials)
        waited = sum(t.get("wait_s") or 0.0 for t in trials)
        runs.append({"wall_s": wall, "work_s": work, "processes_s": processes, "wait_s": waited, "trials": len(trials),
                     "wall_vs_work": wall / work, "wall_vs_processes": wall / processes})
    print(f"compilescope run {args.workload} --strategies eager,default,static --backend {args.backend}, "
          f"{args.repeat} runs")
    print(f"load average at start {load:.1f} on {os.cpu_count()} CPUs")
    print(f"{'run':<4} {'wall':>8} {'trial work':>11} {'trial processes':>16} {'idle wait':>10} {'wall/work':>10} "
          f"{'wall/processes':>15}")
    for i, r in enumerate(runs):
        print(f"{i:<4} {r['wall_s']:7.1f}s {r['work_s']:10.1f}s {r['processes_s']:15.1f}s {r['wait_s']:9.1f}s "
              f"{r['wall_vs_work']:10.3f} {r['wall_vs_processes']:15.3f}")
    ratio = spread([r["wall_vs_work"] for r in runs])
    print(f"median wall / trial work {ratio['median']:.3f}x (goal ≤ 1.15x)")
    write("run_overhead", {"workload": args.workload, "backend": args.backend, "load": load, "runs": runs,
                           "wall_vs_work": ratio})


if __name__ == "__main__":
    main()
