"""A trial's environment: built by the driver, the torch-affecting part inherited and recorded
(``TrialEnv``), warned about when two runs differ; processes started ahead of their tasks give
the same cold records as processes spawned for them."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from compilescope.analysis.compare import compare_runs
from compilescope.execute.environment import is_recorded, recorded_variables, worker_environment
from compilescope.execute.local import LocalExecutor
from compilescope.execute.start import ForkStart, PreStart, SpawnStart
from compilescope.execute.task import TrialTask
from compilescope.model import MeasureOptions, RunResult, StrategyOptions, TrialEnv, TrialResult, TrialSpec
from compilescope.schema import dumps, load, loads
from compilescope.store import Store

from ..conftest import run_cli

FAST = MeasureOptions(warmup=1, samples=3, min_samples=3, budget_s=0.01)
QUICK = ("--backend", "eager", "--samples", "3", "--budget", "0.01", "--warmup", "1")

LEAK_WORKLOAD = """
import os

import torch

from compilescope import Workload


def build():
    if os.environ.get("NOT_FOR_TRIALS"):
        raise RuntimeError("NOT_FOR_TRIALS reached the trial")
    if os.environ.get("MY_WORKLOAD_SETTING") != "on":
        raise RuntimeError("MY_WORKLOAD_SETTING did not reach the trial")
    return lambda x: x.sin()


w = Workload("leak", build, lambda s: (torch.randn(s["n"]),), ("n",), ({"n": 8},))
"""


def _cli(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, cwd=cwd, env=dict(os.environ, **env), timeout=600)


def test_a_torch_variable_is_recorded_and_compare_warns_about_it(tmp_path):
    plain, tuned = tmp_path / "plain.json", tmp_path / "tuned.json"
    for out, env in ((plain, {}), (tuned, {"TORCHINDUCTOR_MAX_AUTOTUNE": "1"})):
        base = {k: v for k, v in os.environ.items() if k != "TORCHINDUCTOR_MAX_AUTOTUNE"}
        proc = subprocess.run([sys.executable, "-m", "compilescope.cli", "run", "sincos", "--stream", "8,16",
                               "--strategies", "default", *QUICK, "--json", str(out)], capture_output=True, text=True,
                              cwd=tmp_path, env=dict(base, **env), timeout=600)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    a, b = load(plain), load(tuned)
    assert all(t.env.variables.get("TORCHINDUCTOR_MAX_AUTOTUNE") == "1" for t in b.trials)
    assert all("TORCHINDUCTOR_MAX_AUTOTUNE" not in t.env.variables for t in a.trials)
    assert all(t.env.threads == 1 and t.env.recompile_limit_default == 8 and t.env.torch for t in b.trials)
    assert {t.env.start for t in b.trials} in ({"forked"}, {"pre-started"}, {"forked", "spawned"},
                                              {"pre-started", "spawned"})
    report = compare_runs(a, b)
    assert "default (cold): TORCHINDUCTOR_MAX_AUTOTUNE differs (A unset, B 1)" in report.warnings
    assert "eager: TORCHINDUCTOR_MAX_AUTOTUNE differs (A unset, B 1)" in report.warnings
    proc = _cli("compare", str(plain), str(tuned), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "TORCHINDUCTOR_MAX_AUTOTUNE differs (A unset, B 1)" in " ".join(proc.stdout.split())
    assert compare_runs(a, a).warnings == ()


def test_only_the_documented_environment_reaches_a_trial(tmp_path, monkeypatch):
    (tmp_path / "leak.py").write_text(LEAK_WORKLOAD)
    spec = TrialSpec(f"{tmp_path / 'leak.py'}:w", "eager", "none", ({"n": 8},), StrategyOptions(backend="eager"), FAST)
    # The machine's own settings of the recorded kinds (OPENBLAS_CORETYPE, MKL_DEBUG_CPU_TYPE… where
    # the machine sets them) reach the trial and are recorded too, on purpose: expected beside the
    # test's own. Read before the test sets anything; OMP_NUM_THREADS is compilescope's (threads=1).
    machine = {k: v for k, v in os.environ.items() if is_recorded(k) and k != "OMP_NUM_THREADS"}
    monkeypatch.setenv("NOT_FOR_TRIALS", "1")  # neither torch's nor named: never passed
    monkeypatch.setenv("MY_WORKLOAD_SETTING", "on")
    monkeypatch.setenv("COMPILESCOPE_PASS_ENV", "MY_WORKLOAD_SETTING")
    monkeypatch.setenv("TORCHDYNAMO_VERBOSE", "0")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "someone-elses"))  # compilescope owns the caches
    monkeypatch.setenv("PYTHONPATH", os.environ.get("PYTHONPATH") or str(tmp_path))  # what a process needs: passed
    result = LocalExecutor(SpawnStart()).submit(TrialTask(spec, str(tmp_path / "cache")), 120).result().result
    assert result.ok, (result.error, result.stderr_tail)
    assert result.env.variables == {**machine, "MY_WORKLOAD_SETTING": "on", "TORCHDYNAMO_VERBOSE": "0"}
    assert result.env.cache_dir == str(tmp_path / "cache") and result.env.start == "spawned"
    env = worker_environment(2)
    assert env["OMP_NUM_THREADS"] == "2" and env["PYTHONPATH"] == os.environ["PYTHONPATH"]
    assert "NOT_FOR_TRIALS" not in env and "TRITON_CACHE_DIR" not in env and "TORCHINDUCTOR_CACHE_DIR" not in env
    assert "OMP_NUM_THREADS" not in recorded_variables(env, 2)  # compilescope's, recorded as threads
    assert recorded_variables({"OMP_NUM_THREADS": "4"}, None) == {"OMP_NUM_THREADS": "4"}  # the user's


def _cold_calls(result: TrialResult) -> tuple[int, int, int]:
    first = result.compiles[0].cache
    return (len(result.compiles), first.get("inductor_fx_local_cache_hit_count", 0),
            first.get("inductor_fx_local_cache_miss_count", 0))


AHEAD_STREAM = ({"n": 64}, {"n": 64})  # one compile, then a hit: a cold trial's cache read in full
AHEAD_COLD = TrialSpec("sincos", "default", "cold", AHEAD_STREAM, StrategyOptions(backend="inductor"), FAST)


@pytest.fixture(scope="module")
def spawned_cold(tmp_path_factory):
    """One cold inductor trial in a process spawned for it, and the cache directory it
    populated: what each way of starting ahead is compared with (computed once for both)."""
    cache = tmp_path_factory.mktemp("spawned") / "a"
    executor = LocalExecutor(PreStart())
    try:  # none expected: spawned
        return executor.submit(TrialTask(AHEAD_COLD, str(cache)), 600).result().result, cache
    finally:
        executor.shutdown()


@pytest.mark.inductor
@pytest.mark.parametrize("ahead_as", ["forked", "pre-started"])
def test_a_trial_started_ahead_records_what_a_spawned_one_does(tmp_path, ahead_as, spawned_cold):
    """A fork server, or a process started ahead, imports torch before a task says which cache
    directory it starts on: the trial must still start cold on its own directory (its first
    call compiling, nothing read from a cache), and warm on a populated one."""
    cold, warm = AHEAD_COLD, dataclasses.replace(AHEAD_COLD, cache="warm")
    spawned, populated = spawned_cold
    start = ForkStart() if ahead_as == "forked" else PreStart()
    executor = LocalExecutor(start)
    executor.expect([cold, warm, cold])
    try:
        ahead = executor.submit(TrialTask(cold, str(tmp_path / "b")), 600).result().result
        warm_ahead = executor.submit(TrialTask(warm, str(populated)), 600).result().result
        left = [p.proc for p in start.idle] + [s.proc for s in getattr(start, "servers", [])]
    finally:
        executor.shutdown()
    assert left and all(p.poll() is not None for p in left)  # what no task came for is ended
    if ahead_as == "forked":
        assert [p.returncode for p in left] == [0]  # the server ended at the end of its connection
    assert (spawned.env.start, ahead.env.start, warm_ahead.env.start) == ("spawned", ahead_as, ahead_as)
    assert spawned.ok and ahead.ok and warm_ahead.ok, (ahead.error, ahead.stderr_tail)
    assert _cold_calls(spawned) == _cold_calls(ahead) == (1, 0, 1)  # cold: a miss, no hit
    assert [c.compiled for c in ahead.calls] == [c.compiled for c in spawned.calls] == [True, False]
    assert ahead.calls[0].compile_ids == spawned.calls[0].compile_ids == ("0/0",)  # the first call compiled
    assert [r.compile_id for r in ahead.compiles] == [r.compile_id for r in spawned.compiles]
    assert any((tmp_path / "b").iterdir())  # it wrote to its own directory
    assert warm_ahead.compiles[0].cache.get("inductor_fx_local_cache_hit_count") == 1  # and read the one it was given
    assert ahead.wait_s is not None and ahead.import_s is not None and ahead.process_s is not None
    assert spawned.wait_s is not None and (ahead_as == "forked" or warm_ahead.wait_s > 0)  # idle, imports done
    assert ahead.env.pid not in (spawned.env.pid, warm_ahead.env.pid, os.getpid())  # a process per trial


def test_a_fork_server_killed_mid_trial_ends_the_trial_and_keeps_the_drivers_directory(tmp_path, monkeypatch):
    """The server's child ends with it (killed, its calls so far kept); the run directory it
    would remove on its way out is the driver's, still alive: it stays."""
    from compilescope.paths import run_dir_prefix

    monkeypatch.setenv("COMPILESCOPE_TEST_SLEEP", "1")
    run_dir = tmp_path / (run_dir_prefix("cache") + "test")
    spec = TrialSpec(f"{Path(__file__).resolve().parents[1] / 'workloads_for_tests.py'}:slow_eager", "eager", "none",
                     tuple({"n": n} for n in (4, 8, 4, 8, 4, 8)), StrategyOptions(backend="eager"), FAST)
    start = ForkStart()
    executor = LocalExecutor(start)
    executor.expect([spec])
    try:
        (server,) = start.servers
        kill = lambda call: call.index == 0 and os.kill(server.proc.pid, signal.SIGKILL)  # noqa: E731
        result = executor.submit(TrialTask(spec, str(run_dir / "eager")), 120, on_call=kill).result().result
    finally:
        executor.shutdown()
    assert result.status == "failed" and result.env.start == "forked"
    assert "killed by signal SIGKILL" in (result.error or ""), result.error
    assert 1 <= len(result.calls) < len(spec.stream)
    assert run_dir.is_dir()


def test_older_files_env_is_migrated_on_load(tmp_path):
    spec = TrialSpec("sincos", "eager", "none", ({"n": 8},))
    text = dumps(RunResult(workload="sincos", stream=spec.stream, trials=(TrialResult(spec, "ok"),)))
    data = json.loads(text)
    data["trials"][0]["env"] = {"torch": "2.13.0", "python": "3.11.7", "host": "h", "platform": "Linux",
                                "threads": "1", "device": "cpu", "cache_dir": str(tmp_path / "cache"), "pid": "41",
                                "recompile_limit_default": "8"}
    trial = loads(json.dumps(data)).trials[0]
    assert trial.env == TrialEnv(torch="2.13.0", python="3.11.7", host="h", platform="Linux", device="cpu",
                                 threads=1, recompile_limit_default=8, pid=41, cache_dir=str(tmp_path / "cache"))
    data["trials"][0]["env"] = {}  # a failed trial's, or none at all
    assert loads(json.dumps(data)).trials[0].env == TrialEnv()


def test_the_store_warns_when_a_trial_joins_trials_of_another_environment(tmp_path):
    spec = TrialSpec("sincos", "eager", "none", ({"n": 8},))
    env = TrialEnv(torch="2.13.0", device="cpu", threads=1, variables={})
    with Store(tmp_path / "s.sqlite") as store:
        store.add(TrialResult(spec, "ok", env=env), torch_version="2.13.0")
        store.add(TrialResult(spec, "ok", env=TrialEnv(torch="2.13.0", device="cpu", threads=1)),
                  torch_version="2.13.0")  # the same trial again replaces itself: nothing to compare
        assert store.warnings == []
        other = TrialSpec("sincos", "default", "cold", ({"n": 8},))
        tuned = TrialEnv(torch="2.13.0", device="cpu", threads=2, variables={"TORCHINDUCTOR_MAX_AUTOTUNE": "1"})
        store.add(TrialResult(other, "ok", env=tuned), torch_version="2.13.0")
        assert any("threads differs (A 1, B 2)" in w for w in store.warnings)
        assert any("TORCHINDUCTOR_MAX_AUTOTUNE differs (A unset, B 1)" in w for w in store.warnings)
        assert all(w.startswith("sincos default (cold) joins trials in the store") for w in store.warnings)
