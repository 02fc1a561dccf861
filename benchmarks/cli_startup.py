"""How long the CLI takes to answer when it runs nothing: ``--version``, ``--help``, a
command's ``--help`` and a shell-completion TAB, beside a bare ``python -c pass``.

    python benchmarks/cli_startup.py [--repeat 9]

Each command is a fresh process, run --repeat times in rotation (so a slow moment of a shared
machine spreads over all of them); prints each one's median wall time and CPU time (user +
system, which a loaded machine inflates less), and the excess over ``python -c pass``. The
goal: ``compilescope --help`` under 0.5 s wall — torch is imported only when a command runs.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from _common import spread, write

GOAL_S = 0.5


def compilescope_command() -> list[str]:
    """The installed entry point beside this interpreter, else ``python -m compilescope.cli``."""
    script = Path(sys.executable).with_name("compilescope")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "compilescope.cli"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    cs = compilescope_command()
    complete_env = {"_COMPILESCOPE_COMPLETE": "bash_complete", "COMP_WORDS": "compilescope run --str",
                    "COMP_CWORD": "2"}
    cases: list[tuple[str, list[str], dict[str, str]]] = [
        ("python -c pass", [sys.executable, "-c", "pass"], {}),
        ("compilescope --version", [*cs, "--version"], {}),
        ("compilescope --help", [*cs, "--help"], {}),
        ("compilescope run --help", [*cs, "run", "--help"], {}),
        ("completion TAB (run --str…)", cs, complete_env),
    ]
    times: dict[str, list[float]] = {name: [] for name, _, _ in cases}
    cpu: dict[str, list[float]] = {name: [] for name, _, _ in cases}
    for name, argv, extra in cases:  # once untimed: the page cache, not the first read from disk
        subprocess.run(argv, capture_output=True, env={**os.environ, **extra}, check=True)
    for _ in range(args.repeat):
        for name, argv, extra in cases:
            env = {**os.environ, **extra}
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            subprocess.run(argv, capture_output=True, env=env, check=True)
            times[name].append(time.perf_counter() - t0)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu[name].append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    stats = {name: spread(values) for name, values in times.items()}
    cpu_stats = {name: spread(values) for name, values in cpu.items()}
    base, cpu_base = stats["python -c pass"]["median"], cpu_stats["python -c pass"]["median"]
    print(f"a fresh process each, median of {args.repeat} (wall IQR), {' '.join(cs)}; load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"{'command':<30} {'wall':>8} {'q1–q3':>14} {'over python':>12} {'cpu':>8} {'over python':>12}")
    for name, s in stats.items():
        c = cpu_stats[name]["median"]
        over = "" if name == "python -c pass" else f"+{(s['median'] - base) * 1e3:.0f} ms"
        cpu_over = "" if name == "python -c pass" else f"+{(c - cpu_base) * 1e3:.0f} ms"
        print(f"{name:<30} {s['median'] * 1e3:5.0f} ms {s['q1'] * 1e3:5.0f}–{s['q3'] * 1e3:.0f} ms {over:>12} "
              f"{c * 1e3:5.0f} ms {cpu_over:>12}")
    helped = stats["compilescope --help"]["median"]
    print(f"goal: compilescope --help under {GOAL_S} s — {'met' if helped < GOAL_S else 'NOT met'} "
          f"({helped:.3f} s)")
    write("cli_startup", {"repeat": args.repeat, "command": cs, "goal_s": GOAL_S,
                          "seconds": stats, "cpu_seconds": cpu_stats, "load_average": os.getloadavg()[0],
                          "help_under_goal": helped < GOAL_S})


if __name__ == "__main__":
    main()
