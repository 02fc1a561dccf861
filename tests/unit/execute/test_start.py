"""How a local trial's process starts is a strategy each executor owns: processes one starts
ahead are its own, never another executor's."""

from __future__ import annotations

import pytest

from compilescope.execute.local import LocalExecutor
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
