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

A *shared* server (``python -m compilescope.execute.zygote --listen PATH OWNER``) serves
every driver that connects to its socket at ``PATH`` (``COMPILESCOPE_FORK_SERVER=unix:PATH``;
a test session starts one per worker process), one connection a driver, the same protocol on
each. Its ``ready`` message carries the interpreter and environment it imported with: a driver
uses it only for a launch of the same interpreter whose environment differs from it in no
variable read before the fork (:func:`~compilescope.execute.process.shares_imports`), and
sends the launch's environment and working directory with each request, which the child takes
before its task. It watches ``OWNER`` (ending with it); each of its children watches the
driver that asked for it too, so a killed driver leaves none behind.

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
_OPEN: set[socket.socket] = set()  # a shared server's listener and connections: none is a child's


def _send(sock: socket.socket, lock: threading.Lock, message: dict[str, object]) -> None:
    with lock:
        try:
            sock.send(json.dumps(message).encode())
        except OSError:
            pass  # the driver is gone: its watch ends this process


class _Routes:
    """Which connection asked for each child: its exit goes back there."""

    def __init__(self) -> None:
        self.lock = threading.Lock()  # held from a fork until its child's route is known
        self.by_pid: dict[int, tuple[socket.socket, threading.Lock]] = {}
        self.forked = threading.Event()


def _reap(routes: _Routes) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:  # none running: sleep until the next fork
            routes.forked.wait()
            routes.forked.clear()
            continue
        with routes.lock:
            route = routes.by_pid.pop(pid, None)
        if route is not None:
            _send(route[0], route[1], {"exit": pid, "rc": os.waitstatus_to_exitcode(status)})


def _start_time(pid: int) -> bytes | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[-1].split()[19]
    except (OSError, IndexError):
        return None


def _watch_driver(pid: int, started: bytes, watch: Any) -> None:
    """A shared server's child: end with the driver that asked for it (its parent, the server,
    outlives drivers)."""
    while _start_time(pid) == started:
        time.sleep(0.2)
    watch.parent_gone()


def _child(sock: socket.socket, fds: list[int], request: dict[str, Any], server: int,
           filters: list[Any], driver_started: bytes | None = None) -> None:
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
        for other in list(_OPEN):
            other.close()
        from .worker import ParentWatch, serve

        shared = isinstance(request.get("env"), dict)
        if shared:  # a shared server's child: the launch's own environment and working directory
            os.environ.clear()
            os.environ.update({str(k): str(v) for k, v in request["env"].items()})
            os.chdir(str(request.get("cwd") or os.getcwd()))
            import tempfile

            tempfile.tempdir = None  # read again from the launch's TMPDIR (the watch's run directory is there)
        watch = ParentWatch(server, "", owner=int(request["driver"]))
        watch.install()
        if shared and driver_started is not None:
            threading.Thread(target=_watch_driver, args=(int(request["driver"]), driver_started, watch),
                             name="compilescope-driver-watch", daemon=True).start()
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


def _imported() -> None:
    from .worker import preload

    preload()
    # Dynamo too (~1.4 s of CPU a trial otherwise: every trial compiles, and torch.compile
    # imports it before the first call is timed); each child still starts with empty caches.
    from .. import compat

    compat.import_compiler()


def _serve(sock: socket.socket, routes: _Routes, shared: bool) -> int:
    """Fork a child for each request on ``sock`` until its driver ends the connection."""
    lock = threading.Lock()
    while True:
        try:
            message, fds, _flags, _addr = socket.recv_fds(sock, MAX_MESSAGE, 3)
        except OSError:
            return 0
        if not message:
            return 0  # the driver is done with this server (or, shared, with its connection)
        try:
            request = json.loads(message)
        except ValueError:
            request = None
        if len(fds) != 3 or not isinstance(request, dict) or (shared and not isinstance(request.get("env"), dict)):
            for fd in fds:
                os.close(fd)
            _send(sock, lock, {"forked": None})
            continue
        sys.stdout.flush()
        sys.stderr.flush()
        server, filters = os.getpid(), list(warnings.filters)
        driver_started = _start_time(int(request.get("driver") or 0)) if shared else None
        # under the lock until the driver has the pid: the reaper's exit of it comes after
        with lock, warnings.catch_warnings():
            # Python 3.12+ warns on fork() with threads (this server's watch and reaper); the
            # child starts single-threaded, and its filters are put back as they were
            warnings.filterwarnings("ignore", message=r".*fork\(\)", category=DeprecationWarning)
            with routes.lock:
                pid = os.fork()
                if pid == 0:
                    _child(sock, fds, request, server, filters, driver_started)
                routes.by_pid[pid] = (sock, lock)
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
        routes.forked.set()


def listen(path: str, owner: int) -> int:
    """A shared server: import once, then serve each driver that connects to ``path``."""
    from .worker import ParentWatch

    started_with = dict(os.environ)  # what drivers compare their launches with (importing may add to it)
    ParentWatch(owner, "").install()
    _imported()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path)
    listener.listen(16)
    _OPEN.add(listener)
    routes = _Routes()
    threading.Thread(target=_reap, args=(routes,), name="compilescope-reaper", daemon=True).start()
    hello = json.dumps({"ready": 0.0, "python": sys.executable, "env": started_with}).encode()
    print("listening", flush=True)  # to the starter: the socket is there
    while True:
        conn, _ = listener.accept()
        try:
            conn.send(hello)
        except OSError:
            conn.close()
            continue
        _OPEN.add(conn)
        threading.Thread(target=_connection, args=(conn, routes), name="compilescope-fork-connection",
                         daemon=True).start()


def _connection(conn: socket.socket, routes: _Routes) -> None:
    try:
        _serve(conn, routes, shared=True)
    finally:
        _OPEN.discard(conn)
        conn.close()


def main(argv: list[str]) -> int:
    if argv[:1] == ["--listen"]:
        return listen(argv[1], int(argv[2]))
    sock = socket.socket(fileno=int(argv[0]))
    parent, launched = int(argv[1]), float(argv[2])
    from .worker import ParentWatch

    ParentWatch(parent, "").install()
    _imported()
    routes = _Routes()
    _send(sock, threading.Lock(), {"ready": time.time() - launched})
    threading.Thread(target=_reap, args=(routes,), name="compilescope-reaper", daemon=True).start()
    return _serve(sock, routes, shared=False)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
