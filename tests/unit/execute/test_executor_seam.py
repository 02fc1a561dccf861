"""One executor seam: ``run`` and ``advise`` take the executors ``sweep`` does, through one
scheduler, with one wire encoding of tasks, outcomes and a worker's events."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from compilescope.errors import ResultsError
from compilescope.execute import wire
from compilescope.execute.executor import Capabilities, Executor
from compilescope.execute.local import LocalExecutor
from compilescope.execute.task import TrialOutcome, TrialTask
from compilescope.model import CallRecord, MeasureOptions, RunResult, StrategyOptions, TrialResult, TrialSpec
from compilescope.schema import load

from ...conftest import cli_here, forked_trials_here, run_cli

RUN = ["run", "sincos", "--stream", "16,16,32,64", "--strategies", "eager,default,static", "--cache", "cold,warm",
       "--backend", "eager", "--samples", "3", "--budget", "0.02", "--warmup", "1"]


def cli_in(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # RAY_ADDRESS="": a local Ray cluster of the test's own, never one found on the machine
    return run_cli(*args, cwd=directory, timeout=900, env=dict(os.environ, RAY_ADDRESS=""))


def compiles(path: Path) -> dict[str, tuple]:
    """Per trial: status, and each stream compile's id and reasons."""
    result = load(path)
    assert isinstance(result, RunResult)
    return {t.spec.label: (t.status, tuple((str(c.compile_id), c.reasons) for c in t.compiles if c.phase == "stream"))
            for t in result.trials}


@pytest.mark.processes
def test_run_with_the_ray_executor_gives_the_compile_counts_of_the_local_one(tmp_path):
    pytest.importorskip("ray")
    with forked_trials_here():  # the local side in this process, its trials forked: compiles are compared, no times
        local = cli_here(*RUN, "--json", "local.json", cwd=tmp_path, env=dict(os.environ, RAY_ADDRESS=""))
    assert local.returncode == 0, local.stderr[-2000:]
    ray = cli_in(tmp_path, *RUN, "--executor", "ray", "--cpus-per-trial", "1", "--json", "ray.json")
    assert ray.returncode == 0, ray.stderr[-2000:]
    a, b = compiles(tmp_path / "local.json"), compiles(tmp_path / "ray.json")
    assert list(a) == ["eager", "default (cold)", "default (warm)", "static (cold)", "static (warm)"]
    assert a == b  # same trials, statuses, compile ids and reasons, warm trials included
    assert [cid for cid, _ in a["static (cold)"][1]] == ["0/0", "0/1", "0/2"]  # one compile per distinct shape
    assert all(status == "ok" for status, _ in b.values())


@pytest.mark.processes  # `run` starts its trial processes ahead
def test_executor_options_are_shared_and_ray_ones_refused_with_the_local_executor(main):
    for command in (["run", "sincos", "--ray-timeout", "5"], ["advise", "sincos", "--cpus-per-trial", "2"],
                    ["sweep", "s.toml", "--ray-address", "127.0.0.1:1"]):
        code, _, err = main(*command)
        flag = command[2]
        assert code == 2 and f"{flag} cannot be combined with --executor local" in err, err
        assert len(err.strip().splitlines()) == 1


@pytest.mark.processes
def test_run_with_the_ray_executor_without_ray_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` fails, as where the extra is not installed
    proc = cli_here("run", "sincos", "--backend", "eager", "--executor", "ray", "--json", "r.json", cwd=tmp_path)
    assert proc.returncode == 2 and "pip install 'compilescope[ray]'" in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1


@pytest.mark.processes
def test_the_local_executor_is_an_executor_that_streams_each_call_as_it_finishes(tmp_path):
    executor = LocalExecutor()
    assert isinstance(executor, Executor)
    assert executor.capabilities == Capabilities(slots=1, shared_disk=True, streams_calls=True)
    spec = TrialSpec("sincos", "default", "cold", ({"n": 16}, {"n": 32}), StrategyOptions(backend="eager"),
                     MeasureOptions(warmup=0, samples=1, min_samples=1, budget_s=0.0, steady=False, numerics=False))
    seen: list[CallRecord] = []
    outcome = executor.submit(TrialTask(spec, str(tmp_path / "cache")), 120, on_call=seen.append).result()
    assert outcome.result.status == "ok", outcome.result.error
    assert seen == list(outcome.result.calls) and [c.shape for c in seen] == [{"n": 16}, {"n": 32}]


def _spec() -> TrialSpec:
    return TrialSpec("sincos", "default", "warm", ({"n": 16}, {"n": 32}))


def test_a_task_and_an_outcome_cross_the_wire_unchanged_bytes_included():
    task = TrialTask(_spec(), "/tmp/c", save_artifacts=True, load_artifacts=b"\x00\xffmega", launched_at=12.5,
                     cache_tar=b"tar\x00", return_cache=True)
    assert wire.decode_task(wire.encode_task(task)) == task
    outcome = TrialOutcome(TrialResult(_spec(), "failed", error="boom [red]"), b"\x01", None)
    assert wire.decode_outcome(wire.encode_outcome(outcome)) == outcome
    final = wire.read_event(wire.result_event(outcome.result, outcome.artifacts))
    assert final == TrialOutcome(outcome.result, b"\x01")


def test_worker_events_a_torn_line_is_skipped_an_unreadable_result_is_an_error():
    call = CallRecord(index=0, shape={"n": 16}, latency_s=0.001)
    line = wire.call_event(call, [], [])
    assert line.endswith("\n") and wire.read_event(line) == wire.CallEvent(call)
    assert wire.read_event(line[: len(line) // 2]) is None  # a dying worker's last, torn line
    with pytest.raises(ResultsError, match="status"):
        wire.read_event('{"result": {"spec": {"workload": "w", "strategy": "s", "cache": "cold", "stream": []},'
                        ' "status": 3}, "artifacts": null}')
    with pytest.raises(ResultsError, match="load_artifacts: not valid base64"):
        wire.decode_task(wire.encode_task(TrialTask(_spec(), "/tmp/c")).replace('"load_artifacts": null',
                                                                                '"load_artifacts": "!!"'))
