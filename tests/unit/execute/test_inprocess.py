"""The in-process executor runs a trial in the caller's process behind the executor interface
and puts back what the trial changed there."""

from __future__ import annotations

import os

import pytest
import torch

from compilescope.execute.executor import Executor
from compilescope.execute.inprocess import InProcessExecutor
from compilescope.execute.task import TrialTask
from compilescope.model import MeasureOptions, StrategyOptions, TrialSpec

ONE_THREAD = MeasureOptions(warmup=0, samples=1, min_samples=1, budget_s=0.0, steady=False, numerics=False, threads=1)
SPEC = TrialSpec("mlp", "default", "cold", ({"batch": 2}, {"batch": 4}), StrategyOptions(backend="eager"), ONE_THREAD)


class Stop(Exception):
    pass


@pytest.fixture
def driver_state(tmp_path, monkeypatch):
    """The caller's own settings, unlike a trial's: its cache directory, two threads."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "drivers"))
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    torch.manual_seed(123)
    yield str(tmp_path / "drivers")
    torch.set_num_threads(threads)


def test_a_trial_in_this_process_puts_back_the_cache_dir_threads_and_random_state(tmp_path, driver_state):
    during = []

    def sink(call, compiles, breaks):  # what the trial ran under
        during.append((os.environ["TORCHINDUCTOR_CACHE_DIR"], torch.get_num_threads(), call.index))

    executor = InProcessExecutor(sink=sink)
    assert isinstance(executor, Executor)
    rng = torch.get_rng_state()
    seen = []
    outcome = executor.submit(TrialTask(SPEC, str(tmp_path / "trial")), 60, on_call=seen.append).result()
    result = outcome.result
    assert result.ok, result.error
    assert result.env.start == "in-process" and result.env.pid == os.getpid()
    assert result.env.cache_dir == str(tmp_path / "trial") and (tmp_path / "trial").is_dir()
    assert during == [(str(tmp_path / "trial"), 1, 0), (str(tmp_path / "trial"), 1, 1)]
    assert seen == list(result.calls) and result.calls[0].compile_ids == ("0/0",)
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == driver_state and torch.get_num_threads() == 2
    assert torch.equal(torch.get_rng_state(), rng)  # mlp's build seeds the generator: put back


def test_what_the_trial_raises_fails_the_future_and_the_process_is_still_put_back(tmp_path, driver_state):
    def stop(call, compiles, breaks):
        raise Stop(call.index)

    future = InProcessExecutor(sink=stop).submit(TrialTask(SPEC, str(tmp_path / "trial")), 60)
    with pytest.raises(Stop):
        future.result()
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == driver_state and torch.get_num_threads() == 2
