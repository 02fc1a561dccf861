"""Shared by the benchmark scripts: robust summaries and the JSON each one writes."""

from __future__ import annotations

import json
import os
import platform
import re
import statistics
from pathlib import Path
from typing import Any

RESULTS = Path(os.environ.get("COMPILESCOPE_BENCH_DIR", "bench-results"))


def spread(values: list[float]) -> dict[str, float]:
    """Median, interquartile range and extremes of a list of samples."""
    ordered = sorted(values)
    q = statistics.quantiles(ordered, n=4) if len(ordered) > 1 else [ordered[0]] * 3
    return {"median": statistics.median(ordered), "q1": q[0], "q3": q[2], "min": ordered[0], "max": ordered[-1],
            "n": len(ordered)}


def write(name: str, data: dict[str, Any]) -> Path:
    """Write ``bench-results/<name>.json`` (with the machine it ran on) and return its path."""
    import torch

    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{re.sub(r'[^A-Za-z0-9_.,=+-]+', '_', name).strip('._') or 'results'}.json"  # a workload path names it too
    env = {"torch": torch.__version__, "python": platform.python_version(), "cpus": os.cpu_count(),
           "machine": platform.machine()}
    path.write_text(json.dumps({"benchmark": name, "env": env, **data}, indent=1))
    print(f"(results in {path})")
    return path


def steady_compiled_call(description: str = "") -> tuple[Any, Any, Any]:
    """The ``--calls/--size/--block`` options and a warmed-up, steady compiled call (sin + cos
    under ``aot_eager``, one thread) that the per-call overhead benchmarks time: (args, f, x)."""
    import argparse

    import torch

    parser = argparse.ArgumentParser(description=description or None)
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--size", type=int, default=12_000)
    parser.add_argument("--block", type=int, default=50)
    args = parser.parse_args()
    torch.set_num_threads(1)
    f = torch.compile(lambda x: x.sin() + x.cos(), backend="aot_eager")
    x = torch.randn(args.size)
    for _ in range(200):
        f(x)
    return args, f, x
