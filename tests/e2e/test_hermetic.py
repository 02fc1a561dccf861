"""Tests look only at their own processes: on a shared CI runner another compilescope run, or
another copy of this suite, has workers of its own at the same moment.

The concurrency check runs two copies of the reliability suite's process-checking test at
once, beside a third, unrelated compilescope run whose worker stays alive throughout: a
machine-wide "no worker is running" assertion fails there every time; a scoped one never
does. It takes minutes, so it runs when ``COMPILESCOPE_CONCURRENCY_CHECK=1`` (a CI job of its
own); the check of the scoping itself runs always, in a second.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from ..own_processes import processes_of, scoped_env, wait_until, workers_of

ROOT = Path(__file__).resolve().parents[2]
TEST_WORKLOADS = Path(__file__).resolve().parents[1] / "workloads_for_tests.py"
PROCESS_CHECK = "test_interrupted_run_keeps_finished_trials_and_resumes and 15-143"  # the SIGTERM case


def _sleeper(env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], env=env, start_new_session=True)


def test_a_scope_sees_its_own_processes_and_no_other():
    mine_env, mine = scoped_env()
    other_env, other = scoped_env()
    a, b = _sleeper(mine_env), _sleeper(other_env)
    try:
        assert wait_until(lambda: len(processes_of(mine)) == 1 and len(processes_of(other)) == 1, 30)
        assert [pid for pid, _ in processes_of(mine)] == [a.pid]
        assert [pid for pid, _ in processes_of(other)] == [b.pid]
    finally:
        for p in (a, b):
            p.kill()
            p.wait()
    assert processes_of(mine) == [] and processes_of(other) == []  # a reaped process carries nothing


def _stop(proc: subprocess.Popen[bytes], scope: str) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)  # the run ends its running trial's process group itself
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    for pid, _ in processes_of(scope):
        os.kill(pid, signal.SIGKILL)


@pytest.mark.skipif(os.environ.get("COMPILESCOPE_CONCURRENCY_CHECK") != "1",
                    reason="runs two reliability suites at once (minutes): set COMPILESCOPE_CONCURRENCY_CHECK=1")
def test_two_reliability_suites_and_another_run_at_once_pass(tmp_path):
    foreign_env, foreign = scoped_env(COMPILESCOPE_TEST_SLEEP="120", TMPDIR=str(tmp_path))
    other_run = subprocess.Popen(
        [sys.executable, "-m", "compilescope.cli", "run", f"{TEST_WORKLOADS}:slow_eager", "--strategies", "eager",
         "--backend", "eager", "--samples", "3", "--budget", "0.01", "--warmup", "1", "--json",
         str(tmp_path / "other.json")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=foreign_env, cwd=tmp_path, start_new_session=True)
    suites = []
    try:
        assert wait_until(lambda: workers_of(foreign), 120), "the other run started no worker"
        for name in ("a", "b"):
            suites.append(subprocess.Popen(
                [sys.executable, "-m", "pytest", "tests/e2e/test_reliability.py", "-k", PROCESS_CHECK, "-q",
                 "-p", "no:cacheprovider", "--basetemp", str(tmp_path / f"suite-{name}")],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT, start_new_session=True))
        outputs = [s.communicate(timeout=900)[0] for s in suites]
        still_running = bool(workers_of(foreign))
    finally:
        for s in suites:
            if s.poll() is None:
                os.killpg(s.pid, signal.SIGKILL)
                s.wait()
        _stop(other_run, foreign)
    for suite, output in zip(suites, outputs):
        assert suite.returncode == 0, output
        assert "1 passed" in output, output
    assert still_running  # the other run's worker was there the whole time, and no suite minded it
