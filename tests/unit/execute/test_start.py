"""How a local trial's process starts is a strategy each executor owns: processes one starts
ahead are its own, never another executor's."""

from __future__ import annotations

import pytest

from compilescope.execute.environment import worker_environment
from compilescope.execute.local import LocalExecutor
from compilescope.execute.process import kill_group, shares_imports, start_shared_fork_server
from compilescope.execute.start import ForkStart, PreStart, default_start
from compilescope.execute.task import TrialTask
from compilescope.model import MeasureOptions, StrategyOptions, TrialSpec

FAST = MeasureOptions(warmup=0, samples=1, min_samples=1, budget_s=0.0, steady=False, numerics=False)


@pytest.mark.processes
def test_each_executor_owns_the_processes_it_started_ahead(tmp_path):
    spec = TrialSpec("sincos", "eager", "none", ({"n": 8},), StrategyOptions(backend="eager"), FAST)
    a, b = LocalExecutor(PreStart()), LocalExecutor(PreStart())
    try:
        a.expect([spec])
        b.expect([spec, spec])
        theirs = [p.proc for p in a.start.idle]
        mine = [p.proc.pid for p in b.start.idle]
        assert len(theirs) == 1 and len(mine) == 2
        a.shutdown()  # ends a's processes started ahead, and only those
        assert all(p.poll() is not None for p in theirs)
        assert all(p.proc.poll() is None for p in b.start.idle)
        result = b.submit(TrialTask(spec, str(tmp_path / "cache")), 120).result().result
        assert result.ok, (result.error, result.stderr_tail)
        assert result.env.start == "pre-started" and result.env.pid in mine
        assert [p.proc.pid for p in b.start.idle] == [pid for pid in mine if pid != result.env.pid]
    finally:
        a.shutdown()
        b.shutdown()
    assert b.start.idle == []


def test_the_default_start_forks_only_when_asked():
    assert type(default_start({})) is PreStart
    assert type(default_start({"COMPILESCOPE_FORK_SERVER": "0"})) is PreStart
    assert type(default_start({"COMPILESCOPE_FORK_SERVER": "1"})) is ForkStart
    shared = default_start({"COMPILESCOPE_FORK_SERVER": "unix:/run/s"})
    assert type(shared) is ForkStart and shared.shared == "/run/s"  # type: ignore[attr-defined]
    assert type(default_start({"COMPILESCOPE_FORK_SERVER": "unix:"})) is PreStart


def test_a_shared_server_serves_only_a_launch_that_imports_as_it_did():
    server = {"PATH": "/bin", "TMPDIR": "/tmp/a", "COMPILESCOPE_X": "1", "TORCH_LOGS": "+dynamo"}
    assert shares_imports(server, {**server, "TMPDIR": "/tmp/b", "COMPILESCOPE_X": "2", "COMPILESCOPE_Y": "3"})
    assert not shares_imports(server, {**server, "TORCH_LOGS": ""})
    assert not shares_imports(server, {k: v for k, v in server.items() if k != "TORCH_LOGS"})
    assert not shares_imports(server, {**server, "OMP_NUM_THREADS": "2"})


WHERE = """
import os, tempfile, torch
from compilescope import Workload


def build():
    with open(os.environ["COMPILESCOPE_WHERE_OUT"], "w") as f:
        f.write(f"{os.getpid()} {os.getppid()} {os.getcwd()} {tempfile.gettempdir()}")
    return lambda x: x * 2


w = Workload("where", build, lambda s: (torch.randn(s["n"]),), ("n",), ({"n": 8},))
"""


@pytest.mark.processes
def test_a_shared_fork_server_forks_each_drivers_trials_in_their_own_environment(tmp_path, monkeypatch):
    """Executors (drivers' worth) fork their trials from one shared server: each trial is a
    child of that server, in the working directory, temporary directory and environment of the
    driver that asked; a launch whose environment the server did not import under (a TORCH_
    variable more) gets a fork server of its own."""
    monkeypatch.delenv("COMPILESCOPE_FORK_SERVER", raising=False)
    (tmp_path / "where.py").write_text(WHERE)
    path = str(tmp_path / "s")
    server = start_shared_fork_server(path, worker_environment(1))
    try:
        spec = TrialSpec(f"{tmp_path / 'where.py'}:w", "default", "none", ({"n": 8}, {"n": 16}),
                         StrategyOptions(backend="eager"), FAST)
        for i, extra in enumerate(({}, {"TMPDIR": str(tmp_path)}, {"TORCH_SHOW_CPP_STACKTRACES": "0"})):
            here = tmp_path / f"driver{i}"
            here.mkdir()
            monkeypatch.chdir(here)
            for k, v in {"COMPILESCOPE_WHERE_OUT": str(here / "where.txt"), **extra}.items():
                monkeypatch.setenv(k, v)
            executor = LocalExecutor(ForkStart(shared=path))
            try:
                executor.expect([spec])
                (own,) = executor.start.servers  # type: ignore[attr-defined]
                result = executor.submit(TrialTask(spec, str(tmp_path / f"cache{i}")), 120).result().result
            finally:
                executor.shutdown()
            assert result.ok and result.env.start == "forked", (result.error, result.stderr_tail)
            assert len([c for c in result.compiles if c.is_compile]) == 2
            pid, parent, cwd, tmp = (here / "where.txt").read_text().split()
            assert int(pid) == result.env.pid and cwd == str(here)
            assert own.shared == (i < 2) and (int(parent) == server.pid) == (i < 2)  # TORCH_…: a server of its own
            assert (tmp == str(tmp_path)) == (i > 0)  # the TMPDIR of the driver that asked (set from the second on)
    finally:
        kill_group(server)
