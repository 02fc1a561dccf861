"""Fork server: ``python -m compilescope.execute.zygote SOCKFD PARENT LAUNCHED``.

A trial process spends most of its start importing torch (~1.5 s of CPU, more than many
trials' own work). A fork server imports what a trial process imports before its task
(:func:`compilescope.execute.worker.preload`: torch and the trial machinery; nothing that
compiles, runs a kernel or starts a thread of torch's), and Dynamo, once, then forks one child
per trial.
Each child is what a spawned worker is once its imports are done: a process of its own
session that has compiled nothing, reads its task from its own stdin, writes its events to
its own pipe and its output to its own file; Dynamo, inductor and their caches start in it as
they would in a fresh process: it records the same compiles, cache hits and misses
(``tests/e2e/test_trialenv.py``). Its cold first call and compile measure 4-5% faster than a
fresh interpreter's, though (``benchmarks/trial_startup.py`` times them side by side), so
it serves only when asked (``COMPILESCOPE_FORK_SERVER=1``); the default is a fresh
interpreter per trial.

The driver talks to the server over a ``SOCK_SEQPACKET`` socket, one JSON object a message:

* driver → server: ``{"launched": t, "driver": pid}`` with three file descriptors (the child's
  stdin, its output file, its event pipe); the end of the connection ends the server;
* server → driver: ``{"ready": seconds}`` once imported; ``{"forked": pid}`` per request (null
  for a malformed one), sent once the child leads its own session (so the driver can signal
  its group at once) and before any ``{"exit": pid, "rc": returncode}`` of it, sent as each
  child ends (``-N``: killed by signal N).

The server watches the driver as a worker does (:class:`~compilescope.execute.worker.ParentWatch`)
and each child watches the server, so a killed driver leaves neither behind.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
import traceback
import warnings
from typing import Any

MAX_MESSAGE = 65536


def _send(sock: socket.socket, lock: threading.Lock, message: dict[str, object]) -> None:
    with lock:
        try:
            sock.send(json.dumps(message).encode())
        except OSError:
            pass  # the driver is gone: its watch ends this process


def _reap(sock: socket.socket, lock: threading.Lock, forked: threading.Event) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:  # none running: sleep until the next fork
            forked.wait()
            forked.clear()
            continue
        _send(sock, lock, {"exit": pid, "rc": os.waitstatus_to_exitcode(status)})


def _child(sock: socket.socket, fds: list[int], request: dict[str, object], server: int,
           filters: list[Any]) -> None:
    """The forked trial process: its own session and standard streams, then a worker's task."""
    code = 1
    try:
        os.setsid()
        warnings.filters[:] = filters  # as they were before the fork
        getattr(warnings, "_filters_mutated", lambda: None)()
        stdin, output, events = fds
        os.dup2(stdin, 0)
        os.dup2(output, 1)
        os.dup2(output, 2)
        os.close(stdin)
        os.close(output)
        sock.close()
        from .worker import ParentWatch, serve

        watch = ParentWatch(server, "", owner=int(request["driver"]))  # type: ignore[call-overload]
        watch.install()
        out = os.fdopen(events, "w", buffering=1)
        code = serve(out, watch, float(request["launched"]), time.time(), "forked")  # type: ignore[arg-type]
    except SystemExit as e:  # as the interpreter ends on one
        if e.code is None or isinstance(e.code, int):
            code = e.code or 0
        else:
            print(e.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001 - a trial process's uncaught error: its traceback, status 1
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001
                pass
        os._exit(code)


def main(argv: list[str]) -> int:
    sock = socket.socket(fileno=int(argv[0]))
    parent, launched = int(argv[1]), float(argv[2])
    from .worker import ParentWatch, preload

    ParentWatch(parent, "").install()
    preload()
    # Dynamo too (~1.4 s of CPU a trial otherwise: every trial compiles, and torch.compile
    # imports it before the first call is timed); each child still starts with empty caches.
    from .. import compat

    compat.import_compiler()
    lock, forked = threading.Lock(), threading.Event()
    _send(sock, lock, {"ready": time.time() - launched})
    threading.Thread(target=_reap, args=(sock, lock, forked), name="compilescope-reaper", daemon=True).start()
    while True:
        try:
            message, fds, _flags, _addr = socket.recv_fds(sock, MAX_MESSAGE, 3)
        except OSError:
            return 0
        if not message:
            return 0  # the driver is done with this server
        try:
            request = json.loads(message)
        except ValueError:
            request = None
        if len(fds) != 3 or not isinstance(request, dict):
            for fd in fds:
                os.close(fd)
            _send(sock, lock, {"forked": None})
            continue
        sys.stdout.flush()
        sys.stderr.flush()
        server, filters = os.getpid(), list(warnings.filters)
        # under the lock until the driver has the pid: the reaper's exit of it comes after
        with lock, warnings.catch_warnings():
            # Python 3.12+ warns on fork() with threads (this server's watch and reaper); the
            # child starts single-threaded, and its filters are put back as they were
            warnings.filterwarnings("ignore", message=r".*fork\(\)", category=DeprecationWarning)
            pid = os.fork()
            if pid == 0:
                _child(sock, fds, request, server, filters)
            for fd in fds:
                os.close(fd)
            deadline = time.monotonic() + 5.0
            while time.monotonic() < deadline:  # the child leads its session before the driver hears of it
                try:
                    if os.getsid(pid) == pid:
                        break
                except ProcessLookupError:
                    break  # it ended already: its exit comes from the reaper
                time.sleep(0.0005)
            try:
                sock.send(json.dumps({"forked": pid}).encode())
            except OSError:
                pass
        forked.set()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
