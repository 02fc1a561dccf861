"""Worker entry: ``python -m compilescope.execute.worker FD PARENT SPAWNED START``, the task as
JSON on stdin (an empty stdin: no task came, it exits).

Runs one trial in this fresh process. Once its imports are done it writes ``{"ready":
seconds}`` to file descriptor FD, then reads its task; each finished stream call is written
to FD as one JSON line the moment it finishes (``{"call": …, "compiles": […],
"graph_breaks": […]}``), then the whole result (``{"result": …, "artifacts": base64}``), so a
trial that dies mid-stream still gives its parent every call it completed. The compile
cache directory is set from the task before anything compiles; torch is imported before the
task is read, so the driver may start the process ahead of its task (it then waits, idle).

A worker never outlives the process that started it: the kernel signals it when its parent
dies (``PR_SET_PDEATHSIG``, with a real-time signal nothing else sends, so the worker's own
SIGTERM handling is untouched; a thread watching the parent's pid covers other systems and a
main thread busy in native code). It then removes the run's temporary cache directory,
which its dead parent can no longer remove, and ends its process group.

The kernel sends that signal when the parent *thread* that started the worker ends, and again
each time the worker is handed to another thread of the same process as those end (a killed
driver's threads end one by one). So the signal alone proves nothing: the worker acts only
once its parent pid is no longer the driver's, and the signal coming again while it is on its
way out goes on with the same way out. A trial forked by a fork server watches the server;
the driver's directory is removed only when the driver is gone too.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from ..paths import RUN_DIR, host_tag

PR_SET_PDEATHSIG = 1
PARENT_POLL_S = 0.5
PARENT_DIED = getattr(signal, "SIGRTMIN", 34) + 2


def _orphaned_root(cache_dir: str, parent: int, host: str | None = None) -> Path | None:
    """The run's temporary directory holding ``cache_dir``, when the dead parent created it."""
    root = Path(cache_dir).parent
    m = RUN_DIR.fullmatch(root.name)
    return root if m is not None and int(m["pid"]) == parent and m["host"] == (host or host_tag()) else None


def _owned_dirs(tmp: str, owner: int, host: str, kind: str | None = None) -> list[Path]:
    """The run directories ``owner`` made in ``tmp`` (this host's; of ``kind`` alone when given):
    a process whose task had not come yet does not know which is its run's, and its dead driver
    made them all."""
    try:
        entries = list(Path(tmp).iterdir())
    except OSError:
        return []
    return [e for e in entries if (m := RUN_DIR.fullmatch(e.name)) is not None and int(m["pid"]) == owner
            and (kind is None or m["kind"] == kind)
            and m["host"] == host and e.is_dir() and not e.is_symlink()]


class ParentWatch:
    """End this worker (and its process group) when ``parent`` is no longer its parent, and
    remove the run directory of ``owner`` (the driver; ``parent`` unless a fork server stands
    between them) that holds ``cache_dir``."""

    def __init__(self, parent: int, cache_dir: str, owner: int | None = None) -> None:
        self.parent, self.cache_dir = parent, cache_dir
        self.owner = parent if owner is None else owner
        self.pid = os.getpid()
        self.lock = threading.RLock()
        # computed now: a parent's death may come while the main thread holds an import lock
        # (importing torch), and nothing on the way out may wait for one
        self.host, self.tmp = host_tag(), tempfile.gettempdir()

    def install(self) -> None:
        if sys.platform.startswith("linux"):
            try:
                import ctypes

                signal.signal(PARENT_DIED, self._on_parent_died)  # before the kernel may send it
                libc = ctypes.CDLL(None, use_errno=True)
                libc.prctl(PR_SET_PDEATHSIG, PARENT_DIED, 0, 0, 0)
            except (OSError, AttributeError, ValueError):
                pass  # the watch thread alone
        threading.Thread(target=self._poll, name="compilescope-parent-watch", daemon=True).start()
        if os.getppid() != self.parent:  # it died before the watch was in place
            self.parent_gone()

    def _on_parent_died(self, signum: int, _frame: object) -> None:
        # a process forked from the worker inherits the handler, not the role; a thread of the
        # driver that ended while the driver lives hands the worker to another of its threads
        if os.getpid() == self.pid and os.getppid() != self.parent:
            self.parent_gone()

    def _poll(self) -> None:
        while os.getppid() == self.parent:
            time.sleep(PARENT_POLL_S)
        self.parent_gone()

    def parent_gone(self) -> None:
        """Remove the run's directory (once its owner is gone too) and end the process group.
        The lock is re-entrant: the signal handler run again inside a first call, in the thread
        that holds it, goes on rather than waiting for itself; another thread waits, its trial
        paused, until the first ends the process."""
        with self.lock:
            for gone in _owned_dirs(self.tmp, self.pid, self.host, "import"):  # ended while importing Dynamo
                shutil.rmtree(gone, ignore_errors=True)
            if self.owner == self.parent or not alive(self.owner):  # a driver still alive keeps its directory
                root = _orphaned_root(self.cache_dir, self.owner, self.host)
                for gone in [root] if root is not None else _owned_dirs(self.tmp, self.owner, self.host):
                    shutil.rmtree(gone, ignore_errors=True)
            try:
                os.killpg(os.getpgid(0), signal.SIGKILL)  # this worker and whatever it started
            finally:
                os._exit(1)


def alive(pid: int) -> bool:
    """A process ``pid`` runs (someone else's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def preload() -> None:
    """What a trial process imports before its task: torch and the trial machinery. Nothing
    here compiles, runs a kernel or starts a thread; a fork server imports the same."""
    import torch  # noqa: F401  (timed: import cost is reported apart from the first call)

    from . import trial, wire  # noqa: F401


def main(argv: list[str]) -> int:
    """``FD PARENT SPAWNED START``: the event pipe, the driver's pid, when the driver started
    this process (``time.time()``) and how (``spawned`` for a task at hand, ``pre-started``)."""
    fd = int(argv[0])
    parent = int(argv[1]) if len(argv) > 1 else os.getppid()
    launched = float(argv[2]) if len(argv) > 2 else time.time()
    start = argv[3] if len(argv) > 3 else "spawned"
    out = os.fdopen(fd, "w", buffering=1)
    watch = ParentWatch(parent, "")
    watch.install()
    # Imports first, then the task: the environment (threads, the torch variables) is the
    # driver's doing, so this process can be started before its task is known. Nothing here
    # compiles or reads the cache directory; the task's is set before the first compile.
    preload()
    return serve(out, watch, launched, time.time(), "pre-started" if start == "pre-started" else "spawned")


def serve(out: Any, watch: ParentWatch, launched: float, imported: float, start: str) -> int:
    """Say ready, read the task from stdin, run it, streaming its events to ``out``."""
    import dataclasses

    from . import wire
    from .trial import run_trial

    out.write(wire.ready_event(imported - launched))
    text = sys.stdin.read()
    received = time.time()
    if not text.strip():
        return 0  # a pre-started process the driver no longer needs
    task = wire.decode_task(text)
    watch.cache_dir = task.cache_dir

    def sink(call, compiles, breaks):  # type: ignore[no-untyped-def]
        out.write(wire.call_event(call, compiles, breaks))

    result, artifacts = run_trial(
        task.spec, save_artifacts=task.save_artifacts, load_artifacts=task.load_artifacts, sink=sink,
        cache_dir=task.cache_dir, start=start,
    )
    wait = received - imported
    result = dataclasses.replace(result, import_s=imported - launched, wait_s=wait,
                                 process_s=time.time() - launched - wait)
    out.write(wire.result_event(result, artifacts))
    out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
