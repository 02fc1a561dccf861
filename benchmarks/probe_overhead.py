"""Wall time of `compilescope probe` against the plain run and against TORCH_TRACE + tlparse.

    python benchmarks/probe_overhead.py [--repeat 5] [--backend aot_eager]

Each command runs --repeat times in fresh processes, alternating, on the same script
(benchmarks/probe_target.py), each run on its own empty inductor cache directory (cold); the
table gives the median and the ratio to the plain run.
tlparse comes from the `bench` extra (`pip install -e '.[bench]'`); without it that row is skipped.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import spread, write

HERE = Path(__file__).resolve().parent
TARGET = HERE / "probe_target.py"


def timed(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--backend", default="aot_eager")
    args = parser.parse_args()
    tlparse = shutil.which("tlparse") or (str(Path(sys.executable).parent / "tlparse")
                                          if (Path(sys.executable).parent / "tlparse").exists() else None)
    base_env = dict(os.environ, OMP_NUM_THREADS="1")
    samples: dict[str, list[float]] = {"plain": [], "probe": [], "TORCH_TRACE": [], "TORCH_TRACE + tlparse": []}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeat):

            def env_for(name: str, i: int = i) -> dict[str, str]:
                # every run compiles cold: its own empty inductor cache directory
                return dict(base_env, TORCHINDUCTOR_CACHE_DIR=f"{tmp}/cache-{name}-{i}")

            samples["plain"].append(timed([sys.executable, str(TARGET), args.backend], env_for("plain")))
            samples["probe"].append(timed([sys.executable, "-m", "compilescope.cli", "probe", "--json",
                                           f"{tmp}/probe-{i}.json", str(TARGET), args.backend], env_for("probe")))
            trace = f"{tmp}/trace-{i}"
            env = env_for("trace")
            t = timed([sys.executable, str(TARGET), args.backend], dict(env, TORCH_TRACE=trace))
            samples["TORCH_TRACE"].append(t)
            if tlparse:
                (log,) = Path(trace).glob("*.log")
                t += timed([tlparse, str(log), "-o", f"{tmp}/tl-{i}", "--overwrite", "--no-browser"], env)
                samples["TORCH_TRACE + tlparse"].append(t)
    plain = statistics.median(samples["plain"])
    print(f"script: {TARGET.name} (backend {args.backend}), {args.repeat} runs each, fresh processes, median wall")
    print(f"{'command':<24} {'median s':>9} {'min s':>7} {'max s':>7} {'vs plain':>9}")
    for name, values in samples.items():
        if not values:
            print(f"{name:<24} {'skipped: tlparse not installed (pip install -e .[bench])':>40}")
            continue
        med = statistics.median(values)
        print(f"{name:<24} {med:9.2f} {min(values):7.2f} {max(values):7.2f} {med / plain:8.2f}x")
    write(f"probe_overhead_{args.backend}", {"backend": args.backend, "repeat": args.repeat,
                                             "wall_s": {k: spread(v) for k, v in samples.items() if v},
                                             "vs_plain": {k: statistics.median(v) / plain for k, v in samples.items() if v}})


if __name__ == "__main__":
    main()
