"""What loading a large results file costs: seconds and peak memory (goal ≤ 5 s at 50 MB).

    python benchmarks/load_results.py [--mb 50] [--repeat 3]

Builds the file from a real run (``run mlp`` over 2000 random batch sizes, eager, default and
dynamic with the eager backend), its trials repeated (each a distinct variant) until the
file written as ``run`` writes it reaches ``--mb`` megabytes. Each repeat loads it in a
fresh process and reports, side by side:

* ``compilescope.schema.load`` — read, parse, check every field's type and rebuild the records;
* ``json.loads`` of the same bytes — the floor: parsing alone, no checks, no records.

Peak memory is the loading process's maximum resident set, beside what it held after its
imports (before the load).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import spread, write

CHILD = r"""
import json, sys, time
from pathlib import Path
from compilescope.schema import load

def status_mb(key):  # VmHWM: this process's peak resident set (ru_maxrss would count its parent's)
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    raise KeyError(key)

path, how = sys.argv[1], sys.argv[2]
before = status_mb("VmHWM")
start = time.perf_counter()
if how == "load":
    result = load(path)
    n = len(result.trials)
else:
    data = json.loads(Path(path).read_bytes())
    n = len(data["trials"])
took = time.perf_counter() - start
print(json.dumps({"seconds": took, "peak_mb": status_mb("VmHWM"), "imports_mb": before, "trials": n}))
"""


def build(directory: Path, megabytes: float) -> Path:
    from compilescope.api import write_results
    from compilescope.schema import load

    seed = directory / "seed.json"
    subprocess.run([sys.executable, "-m", "compilescope.cli", "run", "mlp", "--stream",
                    "random:count=2000;seed=0;batch=1..64", "--strategies", "eager,default,dynamic", "--backend",
                    "eager", "--samples", "5", "--budget", "0.1", "--json", str(seed)],
                   check=True, stdout=subprocess.DEVNULL, cwd=directory, env=dict(os.environ, OMP_NUM_THREADS="1"))
    run = load(seed)
    per_copy = seed.stat().st_size
    copies = max(1, round(megabytes * 1e6 / per_copy))
    trials = tuple(dataclasses.replace(t, spec=dataclasses.replace(t.spec, variant=f"copy{i}"))
                   for i in range(copies) for t in run.trials)
    big = directory / "big.json"
    write_results(dataclasses.replace(run, trials=trials), big)
    return big


def measure(path: Path, how: str) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", CHILD, str(path), how], check=True, capture_output=True, text=True,
                         env=dict(os.environ, COMPILESCOPE_MAX_READ_MB="1000"))
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=50.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = build(Path(tmp), args.mb)
        size_mb = path.stat().st_size / 1e6
        rows = {"schema.load": [], "json.loads": []}
        for _ in range(args.repeat):
            for how, name in (("load", "schema.load"), ("json", "json.loads")):
                rows[name].append(measure(path, how))
    trials = rows["schema.load"][0]["trials"]
    print(f"results file: {size_mb:.1f} MB, {trials} trials; {args.repeat} fresh processes each")
    print(f"{'':<12} {'seconds (median)':>17} {'peak RSS':>10} {'after imports':>14}")
    summary = {}
    for name, got in rows.items():
        seconds = spread([r["seconds"] for r in got])
        peak = spread([r["peak_mb"] for r in got])
        imports = spread([r["imports_mb"] for r in got])
        summary[name] = {"seconds": seconds, "peak_mb": peak, "imports_mb": imports}
        print(f"{name:<12} {seconds['median']:16.2f}s {peak['median']:8.0f}MB {imports['median']:12.0f}MB")
    load_s = summary["schema.load"]["seconds"]["median"]
    ratio = load_s / summary["json.loads"]["seconds"]["median"]
    print(f"load / parse alone: {ratio:.2f}x; load {load_s:.2f} s for {size_mb:.0f} MB (goal ≤ 5 s at 50 MB)")
    write("load_results", {"size_mb": size_mb, "trials": trials, "repeat": args.repeat, "runs": rows,
                           "summary": summary, "load_vs_parse": ratio})


if __name__ == "__main__":
    main()
