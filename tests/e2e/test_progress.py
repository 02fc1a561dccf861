"""Nothing long is silent: a run whose output is a pipe (a log, CI) says every few seconds on
stderr what runs — the trial, its phase, request i/N, for how long, the trials done — and the
report on stdout carries none of it."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from ..conftest import run_cli

TEST_WORKLOADS = Path(__file__).resolve().parents[1] / "workloads_for_tests.py"
LINE = re.compile(r"^\[\d+:\d\d\] ")


def test_a_run_in_a_pipe_says_what_runs_every_few_seconds(tmp_path):
    # each request sleeps 3 s: two requests and a steady-state sample outlast the 5 s between lines
    env = dict(os.environ, COMPILESCOPE_TEST_SLEEP="3", COLUMNS="80", TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "ind"))
    proc = run_cli("run", f"{TEST_WORKLOADS}:slow_eager", "--stream", "4,4", "--strategies", "eager", "--backend",
                   "eager", "--samples", "1", "--budget", "0", "--warmup", "0", "--json", tmp_path / "r.json",
                   env=env, cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if LINE.match(line)]
    assert lines, proc.stderr
    pattern = re.compile(r"^\[\d+:\d\d\] eager: (starting|request [12]/2|steady state, numerics|steady state) "
                         r"\(\d+:\d\d\) · 0/1 trials done$")
    assert any(pattern.match(line) for line in lines), lines
    assert all(len(line) <= 80 for line in lines), lines  # the width of the log it is written to
    assert not any(LINE.match(line) for line in proc.stdout.splitlines())  # the report stays clean
    assert "✓ eager" in proc.stdout


def _piped(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI with stdout and stderr pipes at ``COLUMNS=80``, each request of ``slow_eager``
    sleeping half a second: long enough for several progress lines, whatever the machine.
    Trials are forked (no cold start is read here)."""
    env = dict(os.environ, COMPILESCOPE_TEST_SLEEP="0.5", COLUMNS="80", TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "ind"))
    if not env.get("COMPILESCOPE_FORK_SERVER", "").startswith("unix:"):  # the session's shared one, else one of its own
        env["COMPILESCOPE_FORK_SERVER"] = "1"
    return run_cli(*args, env=env, cwd=tmp_path, timeout=600)


def _progress(proc: subprocess.CompletedProcess[str], label: str, of: str) -> list[str]:
    """The progress lines on stderr; at least one names ``label`` at work with its phase and
    the trials done (``of``: ``/N`` when the total is known, else empty: ``trials done: N``), each within the
    log's 80 columns, and none on stdout."""
    lines = [line for line in proc.stderr.splitlines() if LINE.match(line)]
    working = re.compile(rf"^\[\d+:\d\d\] {re.escape(label)}: (starting|request [12]/2|steady state[\w ,]*) "
                         rf"\(\d+:\d\d\) · " + (rf"\d+{of} trials done$" if of else r"trials done: \d+$"))
    assert any(working.match(line) for line in lines), (label, lines, proc.stderr)
    assert all(len(line) <= 80 for line in lines), lines
    assert not any(LINE.match(line) for line in proc.stdout.splitlines())
    return lines


def test_advise_in_a_pipe_says_what_runs_every_few_seconds(tmp_path):
    proc = _piped(tmp_path, "advise", f"{TEST_WORKLOADS}:slow_eager", "--stream", "4,4", "--backend", "eager",
                  "--samples", "1", "--budget", "0", "--warmup", "0", "--json", str(tmp_path / "a.json"))
    assert proc.returncode == 0, proc.stderr
    _progress(proc, "default (cold)", "")  # advise adds trials as it goes: no total to show
    assert "✓ default (cold)" in proc.stdout


def test_a_sweep_in_a_pipe_says_what_runs_every_few_seconds(tmp_path):
    (tmp_path / "s.toml").write_text(f"""
name = "slow"
workloads = ["{TEST_WORKLOADS}:slow_eager"]
strategies = ["eager", "default"]
cache = ["cold"]

[settings]
backend = ["eager"]

[streams]
"{TEST_WORKLOADS}:slow_eager" = "4,4"

[measure]
samples = 1
budget = 0
warmup = 0
""")
    proc = _piped(tmp_path, "sweep", "s.toml")
    assert proc.returncode == 0, proc.stderr
    _progress(proc, "default (cold)", "/2")  # its trials are planned: the total is known
    assert re.search(r"^\[2/2 done · 0 running · 0 failed\] \S+slow_eager default \(cold\) ok$", proc.stdout, re.M), \
        proc.stdout


def test_a_warmups_verification_says_where_its_dry_run_is(main, monkeypatch):
    """After its two trials, ``--verify`` runs the dry run of start-up + held-out stream: before,
    only "2/2 trials done" ticked while it ran (11.5 s on a T5)."""
    from compilescope.cli import progress

    monkeypatch.setattr(progress, "EVERY_S", 0.0)  # a line at each report: the test needs no 5 s wait
    monkeypatch.setenv("COLUMNS", "200")
    code, _, err = main("warmup", "sincos", "--stream", "8,16,8", "--strategies", "default", "--backend", "eager",
                        "--samples", "3", "--verify", "8,32")
    assert code == 0, err
    assert re.search(r"dry run of default: request \d+/\d+ \(", err), err
