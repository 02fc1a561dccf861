"""How a local trial's process starts: a strategy, one object owned by the executor that uses it
(:class:`~compilescope.execute.local.LocalExecutor`); nothing is shared between two of them.

* :class:`SpawnStart` (``spawned``): a fresh interpreter per trial, started when its task
  comes; its interpreter start and ``import torch`` fall inside the trial's ``process_s``.
* :class:`PreStart` (``pre-started``, the default): up to :data:`MAX_PRESTART` fresh
  interpreters of the coming trials are started ahead, together, so their starts and imports
  overlap each other and the driver's own start-up. Each is still a fresh process that has
  run nothing: it waits, idle, on its stdin until its task comes, and a task is only handed
  over once every process started ahead has finished importing, so no import runs while a
  trial is measured. A trial's ``wait_s`` is that idle time, kept out of its ``process_s``.
* :class:`ForkStart` (``forked``, ``COMPILESCOPE_FORK_SERVER=1``): a fork server per launch of
  the coming trials (:mod:`compilescope.execute.zygote`) imports once; each trial process is
  forked from it in milliseconds. It records the same compiles, but its cold first call and
  compile measure ~4-5% faster than a fresh interpreter's (``benchmarks/trial_startup.py``),
  so a fresh interpreter stays what a cold start is measured in. Where the platform cannot
  pass file descriptors, for a launch no server runs, and for trials in another interpreter
  (``--python``), it starts trials as :class:`PreStart` does.

Each strategy has four members: :meth:`~SpawnStart.expect` (the launches of the coming trials,
in order: start what it starts ahead), :meth:`~SpawnStart.take` (the process of the task at
hand), :meth:`~SpawnStart.after_trial` (a trial ended: start the next ones ahead, never while
one is measured) and :meth:`~SpawnStart.close` (end what no task came for; also done when the
driver exits). The interpreter a trial runs (``--python``) is part of its
:class:`~.process.Launch`, with its environment: a process started ahead serves only a task
of an equal launch, and one started for a launch no coming trial has is ended.
"""

from __future__ import annotations

import atexit
import os
import socket
import sys
import weakref
from collections.abc import Mapping, Sequence
from typing import Protocol

from ..model import ProcessStart
from .process import READY_TIMEOUT_S, ForkServer, Launch, TrialProcess

MAX_PRESTART = 3  # trial processes (or fork servers) started ahead (~300 MB each once torch is imported)
FORK_SERVER_VAR = "COMPILESCOPE_FORK_SERVER"


class ProcessStarter(Protocol):
    name: ProcessStart

    def expect(self, launches: Sequence[Launch]) -> None: ...

    def take(self, launch: Launch) -> TrialProcess: ...

    def after_trial(self) -> None: ...

    def close(self) -> None: ...


def fork_server_supported() -> bool:
    """The platform passes file descriptors between processes (what a fork server needs)."""
    return sys.platform.startswith("linux") and hasattr(socket, "send_fds")


class SpawnStart:
    """A fresh interpreter per trial, started when its task comes."""

    name: ProcessStart = "spawned"

    def expect(self, launches: Sequence[Launch]) -> None:
        """Nothing is started ahead."""

    def take(self, launch: Launch) -> TrialProcess:
        return self._started(launch) or TrialProcess(launch, "spawned")

    def _started(self, launch: Launch) -> TrialProcess | None:
        return None

    def after_trial(self) -> None:
        pass

    def close(self) -> None:
        pass


class PreStart(SpawnStart):
    """Fresh interpreters of the coming trials started ahead (the module's docstring); a trial
    whose launch none of them has is spawned."""

    name: ProcessStart = "pre-started"

    def __init__(self, ahead: int = MAX_PRESTART) -> None:
        self.ahead = ahead
        self.idle: list[TrialProcess] = []
        self.coming: list[Launch] = []
        self._hooked = False

    def expect(self, launches: Sequence[Launch]) -> None:
        self.coming = list(launches)
        for process in [p for p in self.idle if p.launch not in self.coming]:  # started for trials no longer coming
            self.idle.remove(process)
            process.discard()
        if not self._hooked:  # a driver that stops early (bad input, an error) ends them too
            ref = weakref.ref(self)
            atexit.register(lambda: (me := ref()) is not None and me.close())
            self._hooked = True
        self._start_ahead()

    def _start_ahead(self) -> None:
        if not self.idle:
            self.idle = [TrialProcess(launch, "pre-started") for launch in self.coming[:self.ahead]]

    def _settle(self) -> None:
        """Wait until every process started ahead has done its imports (none runs during a trial)."""
        for process in self.idle:
            process.ready.wait(READY_TIMEOUT_S)

    def take(self, launch: Launch) -> TrialProcess:
        self._settle()
        if self.coming and self.coming[0] == launch:
            self.coming.pop(0)
        return super().take(launch)

    def _started(self, launch: Launch) -> TrialProcess | None:
        for process in self.idle:
            if process.launch == launch and process.proc.poll() is None:
                self.idle.remove(process)
                return process
        return None

    def after_trial(self) -> None:
        self._start_ahead()

    def close(self) -> None:
        for process in self.idle:
            process.discard()
        self.idle, self.coming = [], []


class ForkStart(PreStart):
    """Trial processes forked by fork servers started ahead, one per launch of the coming
    trials (the module's docstring)."""

    name: ProcessStart = "forked"

    def __init__(self, ahead: int = MAX_PRESTART, shared: str | None = None) -> None:
        super().__init__(ahead)
        self.servers: list[ForkServer] = []
        self.shared = shared  # the socket of a shared fork server to use where it can serve

    def expect(self, launches: Sequence[Launch]) -> None:
        if fork_server_supported():
            for launch in launches:
                if launch.python is not None:  # a fork server runs this interpreter only
                    continue
                if len(self.servers) < self.ahead and all(s.launch != launch for s in self.servers):
                    server = ForkServer.connect(self.shared, launch) if self.shared else None
                    self.servers.append(server or ForkServer(launch))
        super().expect(launches)

    def _start_ahead(self) -> None:
        if not self.servers:  # no fork server: fresh interpreters started ahead
            super()._start_ahead()

    def _settle(self) -> None:
        super()._settle()
        for server in self.servers:
            server.ready.wait(READY_TIMEOUT_S)

    def _started(self, launch: Launch) -> TrialProcess | None:
        for server in self.servers:
            if server.launch == launch and server.usable():
                try:
                    return TrialProcess(launch, "forked", server)
                except OSError:
                    break  # the server is gone: a fresh process
        return super()._started(launch)

    def close(self) -> None:
        super().close()
        for server in self.servers:
            server.close()
        self.servers = []


STARTS: dict[ProcessStart, type[SpawnStart]] = {"spawned": SpawnStart, "pre-started": PreStart, "forked": ForkStart}


def default_start(environ: Mapping[str, str] = os.environ) -> ProcessStarter:
    """:class:`ForkStart` when ``COMPILESCOPE_FORK_SERVER=1`` (a fork server of its own per
    launch) or ``=unix:PATH`` (the shared server listening at PATH where it can serve a launch,
    :mod:`compilescope.execute.zygote`), else :class:`PreStart`."""
    value = environ.get(FORK_SERVER_VAR, "0")
    if value.startswith("unix:") and len(value) > 5:
        return ForkStart(shared=value[5:])
    return ForkStart() if value == "1" else PreStart()
