"""The one executor interface: what runs trial tasks, and what it can do.

An executor takes a :class:`~compilescope.execute.task.TrialTask` and returns a future of its
:class:`~compilescope.execute.task.TrialOutcome`. It runs each trial in a fresh process and
never fails the future for a trial that crashes, hangs or fails — that is a result, recorded
in the outcome. Only an interrupt (``KeyboardInterrupt``,
:class:`~compilescope.execute.local.Interrupted`) propagates, and then the scheduler calls
:meth:`Executor.shutdown`.

Four members, one name each — :attr:`~Executor.capabilities`, :meth:`~Executor.expect`,
:meth:`~Executor.submit`, :meth:`~Executor.shutdown` — implemented by
:class:`~compilescope.execute.local.LocalExecutor` (a subprocess per trial, one at a time,
started as its :mod:`~compilescope.execute.start` strategy says),
:class:`~compilescope.execute.ray_executor.RayExecutor` (a Ray task per trial) and
:class:`~compilescope.execute.inprocess.InProcessExecutor` (a trial in the caller's process,
for the forecast's dry run: the one that is no fresh process, said in its docstring).
:func:`~compilescope.execute.scheduler.run_plan` drives any of them for ``run``, ``advise``,
``sweep`` and ``warmup``. A new executor is one file with a class of these four members and
one line in :data:`compilescope.execute.registry.EXECUTORS` (``--executor NAME``).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ..model import TrialSpec
from .task import CallCallback, TrialOutcome, TrialTask


@dataclass(frozen=True)
class Capabilities:
    """What the scheduler may ask of an executor.

    ``slots``: how many trials may run at once (1: timings never overlap). ``shared_disk``:
    a trial reads and writes ``task.cache_dir`` on the driver's disk, so a warm trial starts on
    the directory its cold trial populated; without one, the cold trial returns its cache
    directory as tar bytes (``return_cache``) and the warm trial's task carries them
    (``cache_tar``). ``streams_calls``: ``on_call`` is called as each stream call finishes."""

    slots: int = 1
    shared_disk: bool = True
    streams_calls: bool = True


@runtime_checkable
class Executor(Protocol):
    @property
    def capabilities(self) -> Capabilities: ...

    def expect(self, specs: Sequence[TrialSpec]) -> None:
        """The trials about to be submitted, in order, before the first is: an executor may
        prepare for them (start their processes ahead). :meth:`shutdown` ends what it
        prepared and no task came for."""
        ...

    def submit(self, task: TrialTask, timeout_s: float, on_call: CallCallback | None = None) -> Future[TrialOutcome]:
        """Start the trial; the future holds its outcome (a failed trial is an outcome too)."""
        ...

    def shutdown(self) -> None:
        """Stop every trial still running (an interrupted run: their results are not kept)
        and end what :meth:`expect` prepared. The executor takes new tasks afterwards."""
        ...


def done_future(outcome: TrialOutcome) -> Future[TrialOutcome]:
    """A future already holding ``outcome``."""
    out: Future[TrialOutcome] = Future()
    out.set_result(outcome)
    return out
