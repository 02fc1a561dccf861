"""Nothing lost, nothing hidden: dying trials, signals to the orchestrator, resume, and
text that looks like markup. Real subprocess trials (eager / aot_eager backends)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from compilescope.execute.journal import journal_path, read_journal
from compilescope.execute.local import LocalExecutor
from compilescope.execute.task import TrialTask
from compilescope.model import MeasureOptions, StrategyOptions, TrialSpec
from compilescope.schema import load

from ..conftest import cli_here, run_cli
from ..own_processes import processes_of, scoped_env

HERE = Path(__file__).resolve().parents[1]  # tests/
TEST_WORKLOADS = HERE / "workloads_for_tests.py"
FAST = MeasureOptions(warmup=1, samples=3, min_samples=3, budget_s=0.01)
STREAM = ({"n": 16}, {"n": 32}, {"n": 64})


def _gone(pid: int) -> bool:
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return True
    return False


def _run_fault(kind: str, tmp_path: Path, strategy: str = "default", timeout: float = 60):
    spec = TrialSpec(f"{TEST_WORKLOADS}:fault_{kind}", strategy, "cold", STREAM, StrategyOptions(backend="eager"), FAST)
    return LocalExecutor().submit(TrialTask(spec, str(tmp_path / "cache")), timeout).result().result


@pytest.mark.parametrize("kind, status, words", [
    ("exit", "failed", "trial process exited with status 3 at request 1 (32)"),
    ("segfault", "failed", "trial process killed by signal SIGSEGV at request 1 (32)"),
    ("sigterm", "failed", "trial process killed by signal SIGTERM at request 1 (32)"),
    ("hang", "timeout", "timed out after 15 s at request 1 (32) and was killed"),
])
def test_a_dying_trial_keeps_the_requests_it_finished(kind, status, words, tmp_path):
    result = _run_fault(kind, tmp_path, timeout=15)
    assert result.status == status
    assert result.error is not None and result.error.startswith(words), result.error
    assert [c.shape["n"] for c in result.calls] == [16]  # request 0 finished before the fault
    assert result.calls[0].latency_s is not None and result.calls[0].compile_ids == ("0/0",)
    assert [str(c.compile_id) for c in result.compiles] == ["0/0"]
    assert _gone(result.env.pid)  # its whole process group is gone


def test_a_raising_request_is_a_result_and_the_trial_goes_on(tmp_path):
    result = _run_fault("raise", tmp_path)
    assert result.status == "partial"  # a request that raised is an outcome, never ok; the others ran
    assert [c.error for c in result.calls] == [None, "ValueError: request 1 raised", None]


def test_the_error_is_the_exit_not_an_unrelated_warning_line(tmp_path):
    spec = TrialSpec(f"{TEST_WORKLOADS}:dies_at_request_1", "eager", "none", STREAM, StrategyOptions(backend="eager"), FAST)
    result = LocalExecutor().submit(TrialTask(spec, str(tmp_path / "c")), 60).result().result
    assert result.error == "trial process exited with status 3 at request 1 (32)"
    assert "unrelated warning" in (result.stderr_tail or "")  # kept apart


def _journal_trials(path: Path) -> int:
    jp = journal_path(path)
    if not jp.exists():
        return 0
    return sum(1 for line in jp.read_text().splitlines() if line.startswith('{"trial"'))


@pytest.mark.parametrize("sig, code, fork_server", [(signal.SIGINT, 130, "0"), (signal.SIGTERM, 143, "1")],
                         ids=["SIGINT-pre-started", "SIGTERM-forked"])
def test_interrupted_run_keeps_finished_trials_and_resumes(sig, code, fork_server, tmp_path):
    """Under each start: trials in fresh interpreters started ahead, and forked by a fork server
    of the run's own (COMPILESCOPE_FORK_SERVER=1)."""
    out = tmp_path / "r.json"
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    # each call sleeps 0.1 s: a trial takes seconds (about 40 calls), so the signal sent 1.5 s after
    # the first trial finished lands while the second runs
    env, scope = scoped_env(COMPILESCOPE_TEST_SLEEP="0.1", TMPDIR=str(scratch), COMPILESCOPE_FORK_SERVER=fork_server)
    cmd = [sys.executable, "-m", "compilescope.cli", "run", f"{TEST_WORKLOADS}:slow_eager", "--stream", "4,8",
           "--strategies", "eager,default,static", "--backend", "eager", "--samples", "3", "--budget", "0.01",
           "--warmup", "1", "--json", str(out)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path,
                            start_new_session=True)
    deadline = time.time() + 240
    while _journal_trials(out) < 1 and time.time() < deadline and proc.poll() is None:
        time.sleep(0.2)
    time.sleep(1.5)  # the second trial is under way
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == code, stderr
    assert "resume with: compilescope run --resume" in stderr
    assert processes_of(scope) == []  # its workers are gone (only this test's processes are looked at)
    assert list(scratch.iterdir()) == []  # temporary cache directories removed
    partial = load(out)
    assert [t.spec.strategy for t in partial.trials] == ["eager"] and partial.trials[0].ok
    assert partial.missing == ("default (cold)", "static (cold)")
    assert len(read_journal(journal_path(out)).trials) == 1

    resumed = subprocess.run([sys.executable, "-m", "compilescope.cli", "run", "--resume", str(out)],
                             capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    done = load(out)
    assert [(t.spec.strategy, t.status) for t in done.trials] == [("eager", "ok"), ("default", "ok"), ("static", "ok")]
    assert done.trials[0] == partial.trials[0]  # the finished trial was not re-run
    assert done.missing == () and not journal_path(out).exists()


MARKUP_WORKLOAD = '''
import torch
from compilescope import Workload


def build():
    def f(x):
        y = x.sin()
        print("[bold red]not markup[/]")  # a graph break whose reason quotes this line
        return y.cos()
    return f


w = Workload("w[/x]", build, lambda s: (torch.randn(s["n"]),), ("n",), ({"n": 4}, {"n": 8}))
'''

MARKUP_SCRIPT = '''
import torch

@torch.compile(backend="eager", dynamic=False)
def f(x):
    return x * 2

for n in (4, 8):
    f(torch.ones(n))
'''


def test_paths_and_reasons_that_look_like_markup_print_literally(tmp_path):
    folder = tmp_path / "mk[/x]"  # a folder "mk[" holding "x]": the path reads mk[/x]
    folder.mkdir(parents=True)
    (folder / "t[").mkdir()
    (folder / "p[").mkdir()
    (folder / "w.py").write_text(MARKUP_WORKLOAD)
    (folder / "s.py").write_text(MARKUP_SCRIPT)
    out = folder / "E4[red].json"
    # run and report in this process (what is read is their output; the trials are processes)
    proc = cli_here("run", f"{folder / 'w.py'}:w", "--strategies", "default", "--backend", "eager", "--samples", "3",
                    "--budget", "0.01", "--json", str(out), "--csv", str(folder / "t[/b].csv"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert str(out) in proc.stdout and "mk[/x]" in proc.stdout and "Traceback" not in proc.stderr
    assert load(out).trials[1].ok and (folder / "t[/b].csv").exists()
    report = cli_here("report", str(out), cwd=tmp_path)
    assert report.returncode == 0 and "E4[red].json" not in report.stderr
    probe = run_cli("probe", "--json", folder / "p[/i].json", folder / "s.py", cwd=tmp_path, timeout=120)
    assert probe.returncode == 0, probe.stderr
    assert f"{folder / 's.py'}" in probe.stderr.replace("\n", "")
    assert json.loads((folder / "p[/i].json").read_text())["kind"] == "probe"


def test_results_are_written_before_rendering_and_fail_on_selects_exit(tmp_path):
    out = tmp_path / "f.json"
    proc = cli_here("run", f"{TEST_WORKLOADS}:fails_to_compile_at_32", "--strategies", "default", "--backend", "eager",
                    "--samples", "3", "--budget", "0.01", "--json", str(out), "--fail-on", "fallback", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr  # --fail-on fallback
    data = json.loads(out.read_text())
    summary = data["summary"]["default (cold)"]
    assert summary["eager_fallbacks"] == 3 and summary["eager_fallback_shapes"] == ["32", "16", "64"]
    # the verdict wraps at the pipe's width wherever its timings put the break: compare its words
    assert "EAGER FALLBACK" in proc.stdout and "ran eagerly after a compile failed" in " ".join(proc.stdout.split())
