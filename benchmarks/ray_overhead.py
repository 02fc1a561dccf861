"""The Ray executor against the local one on the same sweep.

    python benchmarks/ray_overhead.py [--repeat 2] [--sweep examples/sweep.toml]

Runs the sweep alternately with ``--executor local`` and ``--executor ray`` (a fresh local Ray
cluster each time, started by the command), each into a fresh store, and reports the wall
time of the whole command and the sum of the trials' own process time (from the store).
Ray runs as many trials at once as ``--cpus-per-trial`` allows; it is measured twice: with
every CPU of the machine reserved per trial (one trial at a time, like local: the pure
overhead of Ray) and with one CPU per trial (trials in parallel).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import spread, write

ROOT = Path(__file__).resolve().parents[1]


def once(sweep: Path, extra: list[str]) -> tuple[float, float, int]:
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "s.sqlite"
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "compilescope.cli", "sweep", str(sweep), "--store", str(store), *extra],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp,
                       env=dict(os.environ, RAY_ADDRESS=""))
        wall = time.perf_counter() - start
        db = sqlite3.connect(str(store))
        process = [json.loads(r)["process_s"] or 0.0 for (r,) in db.execute("select result from trials")]
        db.close()
    return wall, sum(process), len(process)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--sweep", default=str(ROOT / "examples" / "sweep.toml"))
    args = parser.parse_args()
    cpus = os.cpu_count() or 1
    modes = {"local": [], f"ray, {cpus} CPUs per trial": ["--executor", "ray", "--cpus-per-trial", str(cpus)],
             "ray, 1 CPU per trial": ["--executor", "ray", "--cpus-per-trial", "1"]}
    samples: dict[str, list[tuple[float, float, int]]] = {m: [] for m in modes}
    for _ in range(args.repeat):
        for mode, extra in modes.items():
            samples[mode].append(once(Path(args.sweep), extra))
    base = spread([w for w, _, _ in samples["local"]])["median"]
    print(f"sweep {Path(args.sweep).name}, {args.repeat} runs per executor, alternating; median wall of the command")
    print(f"{'executor':<24} {'trials':>6} {'wall':>8} {'trial processes':>16} {'vs local':>9}")
    out = {}
    for mode, got in samples.items():
        wall = spread([w for w, _, _ in got])
        proc = spread([p for _, p, _ in got])
        print(f"{mode:<24} {got[0][2]:>6} {wall['median']:7.1f}s {proc['median']:15.1f}s {wall['median'] / base:8.2f}x")
        out[mode] = {"wall_s": wall, "trial_process_s": proc, "trials": got[0][2], "vs_local": wall["median"] / base}
    write("ray_overhead", {"sweep": args.sweep, "modes": out})


if __name__ == "__main__":
    main()
