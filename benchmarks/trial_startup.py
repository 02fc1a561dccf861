"""Where a run's time goes that is not its trials' work, and what a pre-started process changes.

    python benchmarks/trial_startup.py [--workload mlp] [--backend inductor] [--rounds 3]

1. **A trial process's start**, each step timed in fresh processes (median of 3): the
   interpreter, ``import torch``, compilescope's trial machinery, decoding a task.
2. **The driver's timeline** of ``compilescope run WORKLOAD --strategies eager,default,static``
   (the CLI, in a fresh process, its phases timed by wrapping the functions it calls): start-up
   and imports, validation (``prepare_run``: builds the workload), planning, the trials, writing
   and reporting; and per trial its process's imports, its idle wait and its own work.
3. **First call and compile, forked and pre-started against spawned**: the same cold trial in
   a process spawned for it, one started ahead of its task, and one forked by a fork server,
   in a rotating order (its first call holds its compile: a process that imported torch
   before its task, or a fork of one, must not make it cheaper).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import write

STEPS = (
    ("interpreter", "pass"),
    ("+ import torch", "import torch"),
    ("+ compilescope's trial modules", "import torch; import compilescope.execute.trial, compilescope.execute.task"),
)

DRIVER = r"""
import json, os, sys, time
t_main = time.time()
from compilescope import api, cli
from compilescope.execute import local
marks = {"imported": time.time()}

def timed(owner, name, key):
    inner = getattr(owner, name)
    def wrapper(*a, **k):
        marks[key + "_start"] = time.time()
        try:
            return inner(*a, **k)
        finally:
            marks[key + "_end"] = time.time()
    setattr(owner, name, wrapper)

timed(api, "prepare_run", "prepare")
timed(api, "run_plan", "trials")
timed(api, "write_results", "write")
sys.argv = ["compilescope", *sys.argv[2:]]
try:
    cli.main()
except SystemExit:
    pass
marks["main"] = t_main
marks["exit"] = time.time()
with open(os.environ["STARTUP_MARKS"], "w") as f:
    json.dump(marks, f)
"""


def _median_wall(code: str, env: dict[str, str], n: int = 3) -> float:
    walls = []
    for _ in range(n):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, env=env)
        walls.append(time.perf_counter() - start)
    return statistics.median(walls)


def process_steps(env: dict[str, str]) -> list[tuple[str, float]]:
    out, before = [], 0.0
    for name, code in STEPS:
        total = _median_wall(code, env)
        out.append((name, total - before))
        before = total
    from compilescope.execute import wire
    from compilescope.execute.task import TrialTask
    from compilescope.model import TrialSpec

    text = wire.encode_task(TrialTask(TrialSpec("mlp", "default", "cold", tuple({"batch": b} for b in (8, 16, 32, 64))),
                                      "cache"))  # the task is only encoded and decoded: no directory is made
    start = time.perf_counter()
    for _ in range(1000):
        wire.decode_task(text)
    out.append(("task decode", (time.perf_counter() - start) / 1000))
    return out


def driver_timeline(args: argparse.Namespace, env: dict[str, str]) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        marks_path, out = Path(tmp) / "marks.json", Path(tmp) / "r.json"
        cmd = [sys.executable, "-c", DRIVER, "-", "run", args.workload, "--strategies", "eager,default,static",
               "--backend", args.backend, "--samples", "10", "--budget", "0.2", "--json", str(out)]
        start = time.time()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=dict(env, STARTUP_MARKS=str(marks_path)))
        wall = time.time() - start
        m = json.loads(marks_path.read_text())
        trials = json.loads(out.read_text())["trials"]
    phases = {
        # (this wrapper imports compilescope.api, hence torch, before the CLI starts processes ahead)
        "interpreter + import compilescope.cli, .api (torch)": m["imported"] - start,
        "validation (prepare_run: imports torch, builds the workload)": m["prepare_end"] - m["prepare_start"],
        "planning, journal": m["trials_start"] - m["prepare_end"],
        "trials (run_plan)": m["trials_end"] - m["trials_start"],
        "writing and reporting": m["exit"] - m["trials_end"],
    }
    phases["other (option parsing, exit)"] = wall - sum(phases.values())
    per_trial = [{"label": t["spec"]["strategy"] + ("" if t["spec"]["cache"] == "none" else f" ({t['spec']['cache']})"),
                  "start": (t.get("env") or {}).get("start", ""), "import_s": t["import_s"],
                  "wait_s": t.get("wait_s") or 0.0, "work_s": t["process_s"] - t["import_s"]} for t in trials]
    return {"wall_s": wall, "phases": phases, "trials": per_trial}


MODES = ("spawned", "pre-started", "forked")


def first_calls(args: argparse.Namespace) -> dict[str, dict[str, list[float]]]:
    """Per way of starting a trial process, the cold trial's first-call latency and first
    compile's seconds, the ways taken in a rotating order each round."""
    from compilescope.execute.local import LocalExecutor
    from compilescope.execute.start import STARTS
    from compilescope.execute.task import TrialTask
    from compilescope.model import MeasureOptions, StrategyOptions, TrialSpec

    spec = TrialSpec(args.first_call_workload, "default", "cold", ({"n": 256}, {"n": 256}),
                     StrategyOptions(backend=args.backend), MeasureOptions(warmup=1, samples=3, min_samples=3,
                                                                          budget_s=0.01, numerics=False))
    got: dict[str, dict[str, list[float]]] = {m: {"first_call_s": [], "compile_s": []} for m in MODES}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.rounds):
            for how in MODES[i % 3:] + MODES[:i % 3]:
                task = TrialTask(spec, f"{tmp}/{how}-{i}")
                executor = LocalExecutor(STARTS[how]())
                executor.expect([spec])  # spawned: nothing started ahead
                try:
                    if how != "spawned":
                        time.sleep(1.0)  # it imports, then waits
                    result = executor.submit(task, 600).result().result
                finally:
                    executor.shutdown()
                assert result.ok and result.env.start == how, (result.error, result.env.start)
                got[how]["first_call_s"].append(result.calls[0].latency_s or float("nan"))
                got[how]["compile_s"].append(result.compiles[0].compile_time_s or float("nan"))
    return got


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workload", default="mlp")
    parser.add_argument("--backend", default="inductor")
    parser.add_argument("--rounds", type=int, default=3, help="first-call rounds (each: spawned, pre-started, forked)")
    parser.add_argument("--first-call-workload", default="sincos")
    args = parser.parse_args()
    env = dict(os.environ, OMP_NUM_THREADS="1")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"load average at start {load:.1f} on {os.cpu_count()} CPUs")
    steps = process_steps(env)
    print("\n1. a trial process's start (median of 3 fresh processes)")
    for name, seconds in steps:
        print(f"   {name:<34} {seconds * 1000:9.1f} ms")
    timeline = driver_timeline(args, env)
    print(f"\n2. compilescope run {args.workload} --strategies eager,default,static --backend {args.backend}: "
          f"{timeline['wall_s']:.1f} s")
    for name, seconds in timeline["phases"].items():  # type: ignore[union-attr]
        print(f"   {name:<62} {seconds:7.2f} s")
    print(f"   {'trial':<18} {'process':<12} {'imports':>8} {'idle wait':>10} {'work':>8}")
    for t in timeline["trials"]:  # type: ignore[union-attr]
        print(f"   {t['label']:<18} {t['start']:<12} {t['import_s']:7.2f}s {t['wait_s']:9.2f}s {t['work_s']:7.2f}s")
    work = sum(t["work_s"] for t in timeline["trials"])  # type: ignore[union-attr]
    print(f"   wall / trials' work {timeline['wall_s'] / work:.3f}x")  # type: ignore[operator]
    calls = first_calls(args)
    print(f"\n3. a cold {args.first_call_workload} trial ({args.backend}), {args.rounds} rounds: first call, first compile")
    print(f"   {'round':<6}" + "".join(f" {m:>22}" for m in MODES))
    for i in range(args.rounds):
        print(f"   {i:<6}" + "".join(f" {calls[m]['first_call_s'][i]:9.3f}s {calls[m]['compile_s'][i]:9.3f}s" for m in MODES))
    ratios = {}
    for m in MODES[1:]:
        for key in ("first_call_s", "compile_s"):
            ratios[f"{m}/spawned {key}"] = statistics.median(calls[m][key]) / statistics.median(calls["spawned"][key])
    print("   medians, against spawned: " + ", ".join(f"{k} {v:.3f}" for k, v in ratios.items()))
    write("trial_startup", {"load": load, "process_steps": dict(steps), "driver": timeline, "first_calls": calls,
                            "ratios": ratios})


if __name__ == "__main__":
    main()
