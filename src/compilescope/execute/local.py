"""The local executor: one fresh subprocess per trial, one trial at a time.

A trial that raises, exits, is killed by a signal or runs past its timeout is recorded as
such with every call it finished and its stderr tail apart; the other trials still run. An
interrupt (SIGINT, SIGTERM, SIGHUP) kills the running trial's whole process group; the
scheduler (:mod:`compilescope.execute.scheduler`) then removes temporary directories and
keeps every finished trial.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future
from pathlib import Path

from ..model import Shape, TrialEnv, TrialResult, TrialSpec, shape_label
from ..schema import ResultsError
from . import wire
from .environment import recorded_variables, worker_environment
from .executor import Capabilities, done_future
from .interpreter import trial_executable
from .task import CallCallback, Progress, TrialOutcome, TrialTask
from .worker import RUN_DIR, alive, host_tag

STDERR_TAIL_CHARS = 4000
KILL_GRACE_S = 2.0


class Interrupted(BaseException):
    """Raised in the driver by SIGTERM/SIGHUP (SIGINT raises KeyboardInterrupt)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _tail(text: str) -> str:
    return text[-STDERR_TAIL_CHARS:]


def _where(stream: tuple[Shape, ...], done: int) -> str:
    if done < len(stream):
        return f"at request {done} ({shape_label(stream[done])})"
    return "after the stream (steady-state / numerics phase)"


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def _signal_group(proc: subprocess.Popen[bytes] | _Forked, signum: int) -> bool:
    """Signal the process group ``proc`` leads; False when it is gone. A forked trial its server
    still reports running but that leads no group (it never reached ``setsid``) is signalled
    alone."""
    try:
        os.killpg(proc.pid, signum)
        return True
    except ProcessLookupError:
        if not isinstance(proc, _Forked) or proc.poll() is not None:
            return False
    try:
        os.kill(proc.pid, signum)
        return True
    except ProcessLookupError:
        return False


def kill_group(proc: subprocess.Popen[bytes] | _Forked) -> None:
    """End a trial process and everything it started (it leads its own process group)."""
    if proc.poll() is not None:
        return
    if not _signal_group(proc, signal.SIGTERM):
        return
    try:
        proc.wait(KILL_GRACE_S)
    except subprocess.TimeoutExpired:
        pass
    _signal_group(proc, signal.SIGKILL)
    proc.wait()


MAX_PRESTART = 3  # trial processes started ahead of their tasks (~300 MB each once torch is imported)
READY_TIMEOUT_S = 120.0
EXIT_POLL_S = 0.05


# COMPILESCOPE_FORK_SERVER=1: trial processes forked by a fork server
# (:mod:`compilescope.execute.zygote`) that imported torch once, where the platform can pass
# file descriptors. Off by default: a forked trial records the same compiles, but its cold
# first call and compile measure ~4-5% faster than a fresh interpreter's
# (benchmarks/trial_startup.py), so a fresh interpreter per trial, started ahead of its task,
# stays what a cold start is measured in.
FORK_SERVER_VAR = "COMPILESCOPE_FORK_SERVER"


def fork_server_enabled() -> bool:
    return (sys.platform.startswith("linux") and hasattr(socket, "send_fds")
            and os.environ.get(FORK_SERVER_VAR, "0") == "1")


class _ForkServer:
    """A fork server of one worker environment, this driver's: started ahead, it imports
    while the driver starts up; :meth:`fork` then gives a trial process in milliseconds."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.ready = threading.Event()  # imported (or died)
        self.lock = threading.Lock()  # one fork request at a time: the replies come in order
        self.changed = threading.Condition()
        self.exits: dict[int, int] = {}
        self.forked: list[int] = []
        self.replies: list[int | None] = []
        self.gone = self.broken = False
        self.errfile = tempfile.TemporaryFile()
        self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "compilescope.execute.zygote", str(theirs.fileno()), str(os.getpid()),
                 repr(time.time())],
                stdin=subprocess.DEVNULL, stdout=self.errfile, stderr=self.errfile, pass_fds=(theirs.fileno(),),
                start_new_session=True, env=env,
            )
        except BaseException:
            self.sock.close()
            self.errfile.close()
            raise
        finally:
            theirs.close()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        try:
            while True:
                try:
                    data = self.sock.recv(65536)
                except OSError:
                    break
                if not data:
                    break
                try:
                    message = json.loads(data)
                except ValueError:
                    continue
                with self.changed:
                    if "ready" in message:
                        self.ready.set()
                    elif "forked" in message:
                        pid = message["forked"]
                        if pid is not None:
                            self.exits.pop(int(pid), None)  # an earlier process of that pid's
                        self.replies.append(None if pid is None else int(pid))
                    elif "exit" in message:
                        self.exits[int(message["exit"])] = int(message["rc"])
                    self.changed.notify_all()
        finally:
            with self.changed:
                self.gone = True
                self.replies.append(None)
                self.changed.notify_all()
                # its children end with it (each watches it): their status is that SIGKILL
                for pid in [p for p in self.forked if p not in self.exits]:
                    self._watch_end(pid)
            self.ready.set()

    def _watch_end(self, pid: int) -> None:
        threading.Thread(target=self._await_end, args=(pid,), daemon=True).start()

    def _await_end(self, pid: int) -> None:
        while _running(pid):
            time.sleep(EXIT_POLL_S)
        with self.changed:
            self.exits.setdefault(pid, -signal.SIGKILL)
            self.changed.notify_all()

    def usable(self) -> bool:
        self.ready.wait(READY_TIMEOUT_S)
        return not self.gone and not self.broken and self.proc.poll() is None

    def fork(self, fds: tuple[int, int, int]) -> int | None:
        """A trial process with these stdin, output and event descriptors; None when the server
        is gone or did not answer (it is then not asked again: a late answer would be taken for
        the next request's)."""
        with self.lock:
            request = json.dumps({"launched": time.time(), "driver": os.getpid()}).encode()
            try:
                socket.send_fds(self.sock, [request], list(fds))
            except OSError:
                self.broken = True
                return None
            with self.changed:
                if not self.changed.wait_for(lambda: bool(self.replies), READY_TIMEOUT_S):
                    self.broken = True
                    return None
                pid = self.replies.pop(0)
                if pid is not None:
                    self.forked.append(pid)
                    if self.gone:  # it ended just after answering: so does the child
                        self._watch_end(pid)
                return pid

    def returncode(self, pid: int) -> int | None:
        with self.changed:
            return self.exits.get(pid)

    def wait(self, pid: int, timeout: float | None) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: pid in self.exits, timeout)

    def close(self) -> None:
        """End the connection: the server's next read is its end, and it exits (status 0)."""
        try:
            self.sock.shutdown(socket.SHUT_RDWR)  # close() alone would not wake the reader's recv
        except OSError:
            pass
        try:
            self.proc.wait(KILL_GRACE_S)
        except subprocess.TimeoutExpired:
            kill_group(self.proc)
        self.reader.join(1.0)
        self.sock.close()
        self.errfile.close()


class _Forked:
    """A forked trial process, as the driver sees it (what it uses of ``Popen``): its exit
    status comes from its fork server, which is its parent."""

    def __init__(self, server: _ForkServer, pid: int, stdin: int) -> None:
        self.server, self.pid = server, pid
        self.stdin = os.fdopen(stdin, "wb")

    @property
    def returncode(self) -> int | None:
        return self.server.returncode(self.pid)

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int | None:
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.server.wait(self.pid, 1.0 if deadline is None else min(1.0, deadline - time.monotonic())):
            if not _running(self.pid) and self.server.gone:  # no one left to say how it ended
                return self.returncode if self.returncode is not None else -signal.SIGKILL
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(f"trial process {self.pid}", timeout or 0.0)
        return self.returncode


def _running(pid: int) -> bool:
    """Alive and not a zombie (an orphan's zombie waits on a reaper that may never come)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[-1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False


class _Worker:
    """One trial process: started with its environment (or forked by ``server``), it imports,
    says it is ready and waits for its task on stdin; its events stream into :attr:`progress`
    and :attr:`final`."""

    def __init__(self, env: dict[str, str], start: str, server: _ForkServer | None = None,
                 python: str | None = None) -> None:
        self.env, self.start, self.python = env, start, python
        self.progress = Progress()
        self.final: dict[str, object] = {}
        self.on_call: CallCallback | None = None
        self.ready = threading.Event()  # set once it imported (or died)
        self.ready_s: float | None = None  # from its start to the end of its imports, as it measured
        self.delivered = threading.Event()  # its whole result came: its exit is not waited for
        self.errfile = tempfile.TemporaryFile()
        read_fd, write_fd = os.pipe()
        self.started = time.perf_counter()
        self.proc: subprocess.Popen[bytes] | _Forked
        try:
            if server is not None:
                self.proc = self._fork(server, write_fd)
            else:
                self.proc = subprocess.Popen(
                    [trial_executable(python), "-m", "compilescope.execute.worker", str(write_fd), str(os.getpid()),
                     repr(time.time()), start],
                    stdin=subprocess.PIPE, stdout=self.errfile, stderr=self.errfile, pass_fds=(write_fd,),
                    start_new_session=True, env=env,
                )
        except BaseException:
            os.close(read_fd)
            self.errfile.close()
            raise
        finally:
            os.close(write_fd)
        self.reader = threading.Thread(target=_read_events, args=(read_fd, self), daemon=True)
        self.reader.start()

    def _fork(self, server: _ForkServer, events: int) -> _Forked:
        stdin_read, stdin_write = os.pipe()
        try:
            pid = server.fork((stdin_read, self.errfile.fileno(), events))
        except BaseException:
            os.close(stdin_write)
            raise
        finally:
            os.close(stdin_read)
        if pid is None:
            os.close(stdin_write)
            raise OSError("the fork server ended")
        return _Forked(server, pid, stdin_write)

    def send(self, task: TrialTask) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(wire.encode_task(task).encode())
            self.proc.stdin.close()
        except BrokenPipeError:
            pass

    def stderr(self) -> str:
        self.errfile.seek(0)
        text = self.errfile.read().decode(errors="replace")
        self.errfile.close()
        return text

    def discard(self) -> None:
        """End a process started ahead that no task came for: it has run nothing."""
        kill_group(self.proc)
        self.reader.join(1.0)
        self.errfile.close()


class _Ahead:
    """The processes started ahead of their tasks, this driver's (one set, whichever
    executor takes them) and the environments of the tasks still to come."""

    def __init__(self) -> None:
        self.idle: list[_Worker] = []
        self.servers: list[_ForkServer] = []
        self.coming: list[dict[str, str]] = []
        self.python: str | None = None  # the interpreter of the processes started ahead
        self.hooked = False

    def start(self, threads: Iterable[int | None], python: str | None = None) -> None:
        if any(w.python != python for w in self.idle):  # started ahead in another interpreter
            for worker in self.idle:
                worker.discard()
            self.idle = []
        self.coming = [worker_environment(t) for t in threads]
        self.python = python
        if not self.hooked:  # a driver that stops early (bad input, an error) ends them too
            atexit.register(self.close)
            self.hooked = True
        if fork_server_enabled() and python is None:  # a fork server is this interpreter
            for env in self.coming:  # one server per environment the coming trials need
                if len(self.servers) < MAX_PRESTART and all(s.env != env for s in self.servers):
                    self.servers.append(_ForkServer(env))
        self.fill()

    def fill(self) -> None:
        if not self.idle and not self.servers:
            self.idle = [_Worker(env, "pre-started", python=self.python) for env in self.coming[:MAX_PRESTART]]

    def take(self, env: dict[str, str], python: str | None = None) -> _Worker:
        if self.coming and self.coming[0] == env:
            self.coming.pop(0)
        for server in self.servers:
            if python is None and server.env == env and server.usable():  # a fork server is this interpreter
                try:
                    return _Worker(env, "forked", server)
                except OSError:
                    break  # the server is gone: a fresh process
        for worker in self.idle:
            if worker.env == env and worker.python == python and worker.proc.poll() is None:
                self.idle.remove(worker)
                return worker
        return _Worker(env, "spawned", python=python)

    def settle(self) -> None:
        """Wait until every process started ahead has done its imports (none runs during a trial)."""
        for other in self.idle:
            other.ready.wait(READY_TIMEOUT_S)
        for server in self.servers:
            server.ready.wait(READY_TIMEOUT_S)

    def close(self) -> None:
        for worker in self.idle:
            worker.discard()
        for server in self.servers:
            server.close()
        self.idle, self.servers, self.coming = [], [], []


AHEAD = _Ahead()


def start_ahead(threads: Iterable[int | None], python: str | None = None) -> None:
    """Start the processes of the first coming trials now (their ``--threads``, in order, in
    the interpreter ``python`` or this one), while the driver is still starting up: see
    :class:`LocalExecutor`."""
    AHEAD.start(threads, python)


class LocalExecutor:
    """Each task in a fresh ``python -m compilescope.execute.worker`` process of its own
    process group, with the environment :func:`~.environment.worker_environment` builds;
    records stream back over a pipe as each call finishes.

    After :meth:`prestart` (or :func:`start_ahead`), up to :data:`MAX_PRESTART` processes of
    the coming tasks are started ahead, together, so their interpreter start and ``import
    torch`` overlap each other and the driver's own start-up. Each is still a fresh process
    that has run nothing: it waits, idle, on its stdin until its task comes, and a task is only
    sent once every process started ahead has finished importing, so no import runs while a
    trial is measured. A trial's ``wait_s`` is that idle time, kept out of its ``process_s``.
    :meth:`close` ends those no task came for. As an
    :class:`~compilescope.execute.executor.Executor`: one trial at a time, in the caller's
    thread (timings never overlap; an interrupt there ends the trial); :meth:`expect` starts
    processes ahead, :meth:`shutdown` ends those no task came for."""

    capabilities = Capabilities(slots=1, shared_disk=True, streams_calls=True)

    def expect(self, specs: Sequence[TrialSpec]) -> None:
        self.prestart([s.measure.threads for s in specs], specs[0].measure.python if specs else None)

    def submit(self, task: TrialTask, timeout_s: float, on_call: CallCallback | None = None) -> Future[TrialOutcome]:
        return done_future(self.run(task, timeout_s=timeout_s, on_call=on_call))

    def shutdown(self) -> None:
        self.close()

    @property
    def idle(self) -> list[_Worker]:
        return AHEAD.idle

    def prestart(self, threads: Iterable[int | None], python: str | None = None) -> None:
        """The coming tasks' ``--threads``, in order: start the first processes now (in the
        interpreter ``python``, or this one)."""
        AHEAD.start(threads, python)

    def close(self) -> None:
        AHEAD.close()

    @contextlib.contextmanager
    def ahead(self, threads: Iterable[int | None]) -> Iterator[LocalExecutor]:
        """:meth:`prestart` for the tasks to come, :meth:`close` when they are done."""
        try:
            self.prestart(threads)
            yield self
        finally:
            self.close()

    def run(self, task: TrialTask, *, timeout_s: float, on_call: CallCallback | None = None) -> TrialOutcome:
        spec = task.spec
        Path(task.cache_dir).mkdir(parents=True, exist_ok=True)
        AHEAD.settle()  # every process started ahead is idle before this trial starts (or forks)
        worker = AHEAD.take(worker_environment(spec.measure.threads), spec.measure.python)
        worker.on_call = on_call
        timed_out = False
        try:
            sent = time.perf_counter()
            worker.send(task)
            timed_out = not _delivered_or_exited(worker, timeout_s)
        finally:
            kill_group(worker.proc)  # its teardown, a trial past its timeout, or on an interrupt the trial
        worker.reader.join(5.0)
        elapsed = time.perf_counter() - worker.started
        ready_s = worker.ready_s if worker.start == "pre-started" else None
        waited = 0.0 if ready_s is None else max(0.0, sent - worker.started - ready_s)
        AHEAD.fill()
        return _outcome(task, worker, worker.stderr(), elapsed - waited, waited, timed_out, timeout_s)


def _delivered_or_exited(worker: _Worker, timeout_s: float) -> bool:
    """Wait until the worker sent its whole result or exited; False past ``timeout_s``. A
    process that delivered is ended rather than waited for: its interpreter's teardown (an
    inductor compile pool's shutdown, ~1 s) measures nothing and holds nothing still to come."""
    deadline = time.monotonic() + timeout_s
    while not worker.delivered.wait(EXIT_POLL_S):
        if worker.proc.poll() is not None:
            return True
        if time.monotonic() > deadline:
            return False
    return True


def _outcome(task: TrialTask, worker: _Worker, stderr: str, process_s: float, wait_s: float, timed_out: bool,
             timeout_s: float) -> TrialOutcome:
    spec, progress, final, proc = task.spec, worker.progress, worker.final, worker.proc
    env = TrialEnv(pid=proc.pid, host=platform.node(), start=worker.start,  # type: ignore[arg-type]
                   cache_dir=task.cache_dir, device=spec.measure.device,
                   variables=recorded_variables(worker.env, spec.measure.threads))
    partial = dict(
        calls=tuple(progress.calls), compiles=tuple(progress.compiles), graph_breaks=tuple(progress.graph_breaks),
        stderr_tail=_tail(stderr), process_s=process_s, wait_s=wait_s, env=env,
    )
    where = _where(spec.stream, len(progress.calls))
    if timed_out:
        return TrialOutcome(TrialResult(
            spec, "timeout", error=f"timed out after {timeout_s:g} s {where} and was killed", **partial,  # type: ignore[arg-type]
        ))
    if "unreadable" in final:
        error = f"unreadable trial result: {final['unreadable']}"
        return TrialOutcome(TrialResult(spec, "failed", error=error, **partial))  # type: ignore[arg-type]
    if "outcome" in final:
        return final["outcome"]  # type: ignore[return-value]
    rc = proc.returncode
    how = f"exited with status {rc}" if rc is not None and rc >= 0 else f"killed by signal {_signal_name(-(rc or 0))}"
    last = _last_error_line(stderr)
    error = f"trial process {how} {where}" + (f": {last}" if last else "")
    return TrialOutcome(TrialResult(spec, "failed", error=error[:600], **partial))  # type: ignore[arg-type]


def _last_error_line(stderr: str) -> str | None:
    """The exception line of a Python traceback in stderr, if there is one (not a warning's
    source line)."""
    lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
    if "Traceback (most recent call last):" not in stderr:
        return None
    for line in reversed(lines):
        if not line.startswith((" ", "\t")) and ":" in line:
            return line.strip()[:300]
    return None


def _read_events(fd: int, worker: _Worker) -> None:
    progress = worker.progress
    try:
        with os.fdopen(fd, "r", errors="replace") as stream:
            for line in stream:
                try:
                    event = wire.read_event(line)
                except ResultsError as exc:
                    worker.final["unreadable"] = exc
                    continue
                if isinstance(event, wire.Ready):
                    worker.ready_s = event.seconds
                    worker.ready.set()
                elif isinstance(event, TrialOutcome):
                    worker.final["outcome"] = event
                    worker.delivered.set()
                elif event is not None:
                    progress.calls.append(event.call)
                    progress.compiles.extend(event.compiles)
                    progress.graph_breaks.extend(event.graph_breaks)
                    if worker.on_call is not None:
                        worker.on_call(event.call)
    finally:
        worker.ready.set()  # a process that died importing is not waited for


def remove_orphaned_dirs(root: str | None = None) -> list[Path]:
    """Remove temporary cache directories whose run died without removing them (SIGKILL):
    ``compilescope-cache-PID-HOST-…`` (``-sweep-``, ``-ray-``) of this host and a PID that no
    longer runs. A live run's directories, and other hosts', are never touched."""
    import shutil

    removed: list[Path] = []
    base = Path(root or tempfile.gettempdir())
    try:
        entries = list(base.iterdir())
    except OSError:
        return removed
    host = host_tag()
    for entry in entries:
        m = RUN_DIR.fullmatch(entry.name)
        if m is None or m["host"] != host or int(m["pid"]) == os.getpid() or alive(int(m["pid"])):
            continue
        if entry.is_symlink() or not entry.is_dir():
            continue
        shutil.rmtree(entry, ignore_errors=True)
        removed.append(entry)
    return removed
