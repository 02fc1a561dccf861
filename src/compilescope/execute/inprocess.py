"""The in-process executor: a trial run in the caller's own process, behind the executor
interface, with the caller's process put back as it was.

A trial sets what a fresh process would start with: the compile cache directory
(``TORCHINDUCTOR_CACHE_DIR``, the task's), torch's thread count (``--threads``), Dynamo's
caches (reset, as a trial starts), the random generator (a built-in workload seeds it). Here
each is read before the trial and put back after it, Dynamo's caches reset again so no graph
of the trial is left behind; the recompile limit, a strategy's configuration and
compilescope's hooks into Dynamo undo themselves as in any trial. What a trial cannot give
back is the caller's own compiled code: the reset at its start drops it (it compiles again
on its next call).

For what must run in the driver — the forecast's dry run, which compiles nothing real — never
for a measurement: a cold start is a fresh process. So the command line does not offer it
(:mod:`compilescope.execute.registry`), and its trials record their start as ``in-process``.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from ..model import CallRecord, CompileRecord, GraphBreak, TrialSpec
from .executor import Capabilities
from .task import CallCallback, TrialOutcome, TrialTask

if TYPE_CHECKING:
    from ..collect.timer import Clock
    from .trial import CallSink

CACHE_VAR = "TORCHINDUCTOR_CACHE_DIR"


@contextmanager
def restored() -> Iterator[None]:
    """Put back, at the end of the block, what a trial changes in its process (the module's
    docstring), and leave none of its compiled graphs behind."""
    import torch

    from .. import compat

    cache_dir, threads = os.environ.get(CACHE_VAR), torch.get_num_threads()
    try:
        with torch.random.fork_rng(devices=[]):
            yield
    finally:
        compat.reset()
        torch.set_num_threads(threads)
        if cache_dir is None:
            os.environ.pop(CACHE_VAR, None)
        else:
            os.environ[CACHE_VAR] = cache_dir
        compat.forget_inductor_cache_files()  # what inductor remembers of the trial's directory


class InProcessExecutor:
    """Runs each task in this process, one at a time, in :meth:`submit` itself
    (:func:`restored` around it). ``clocks``: how calls are timed (the trial's default:
    the device's clocks); ``sink``: each stream call's records as the call finishes, compiles
    and graph breaks included (``on_call`` gets the call alone).

    Two things differ from an executor of fresh processes, both because the trial is the
    caller's own code path: ``timeout_s`` is not enforced (nothing stops a call of this
    process from outside), and what the trial raises — a workload that cannot be built, or
    the ``sink`` ending the trial on purpose — fails the future with that exception rather
    than becoming a failed outcome (an interrupt propagates from :meth:`submit`)."""

    capabilities = Capabilities(slots=1, shared_disk=True, streams_calls=True)

    def __init__(self, *, clocks: tuple[Clock, Clock] | None = None, sink: CallSink | None = None) -> None:
        self.clocks, self.sink = clocks, sink

    def expect(self, specs: Sequence[TrialSpec]) -> None:
        """Nothing to start ahead."""

    def submit(self, task: TrialTask, timeout_s: float, on_call: CallCallback | None = None) -> Future[TrialOutcome]:
        from .trial import run_trial

        out: Future[TrialOutcome] = Future()
        Path(task.cache_dir).mkdir(parents=True, exist_ok=True)
        sink = self.sink

        def each_call(call: CallRecord, compiles: tuple[CompileRecord, ...], breaks: tuple[GraphBreak, ...]) -> None:
            if on_call is not None:
                on_call(call)
            if sink is not None:
                sink(call, compiles, breaks)

        started = time.perf_counter()
        try:
            with restored():
                result, artifacts = run_trial(
                    task.spec, clocks=self.clocks, save_artifacts=task.save_artifacts,
                    load_artifacts=task.load_artifacts, sink=each_call, cache_dir=task.cache_dir, start="in-process",
                )
        except Exception as exc:  # noqa: BLE001 - the caller's: see the class docstring
            out.set_exception(exc)
            return out
        result = dataclasses.replace(result, process_s=time.perf_counter() - started)
        out.set_result(TrialOutcome(result, artifacts))
        return out

    def shutdown(self) -> None:
        """Nothing runs once :meth:`submit` has returned."""

