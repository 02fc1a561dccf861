"""Nothing long is silent: a run whose output is a pipe (a log, CI) says every few seconds on
stderr what runs — the trial, its phase, request i/N, for how long, the trials done — and the
report on stdout carries none of it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from ..own_processes import scoped_env

TEST_WORKLOADS = Path(__file__).resolve().parents[1] / "workloads_for_tests.py"
LINE = re.compile(r"^\[\d+:\d\d\] ")


def test_a_run_in_a_pipe_says_what_runs_every_few_seconds(tmp_path):
    # each request sleeps 3 s: two requests and a steady-state sample outlast the 5 s between lines
    env, _ = scoped_env(COMPILESCOPE_TEST_SLEEP="3", COLUMNS="80", TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "ind"))
    cmd = [sys.executable, "-m", "compilescope.cli", "run", f"{TEST_WORKLOADS}:slow_eager", "--stream", "4,4",
           "--strategies", "eager", "--backend", "eager", "--samples", "1", "--budget", "0", "--warmup", "0",
           "--json", str(tmp_path / "r.json")]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if LINE.match(line)]
    assert lines, proc.stderr
    pattern = re.compile(r"^\[\d+:\d\d\] eager: (starting|request [12]/2|steady state, numerics|steady state) "
                         r"\(\d+:\d\d\) · 0/1 trials done$")
    assert any(pattern.match(line) for line in lines), lines
    assert all(len(line) <= 80 for line in lines), lines  # the width of the log it is written to
    assert not any(LINE.match(line) for line in proc.stdout.splitlines())  # the report stays clean
    assert "✓ eager" in proc.stdout
