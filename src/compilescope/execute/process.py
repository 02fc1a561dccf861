"""A trial's process, as the driver holds it: started as a fresh interpreter or forked by a fork
server, it imports, says it is ready and waits for its task on stdin; its events stream back
over a pipe. Each leads its own process group and watches its parent
(:class:`~compilescope.execute.worker.ParentWatch`), so :func:`kill_group` ends it and
everything it started, and a killed driver leaves nothing behind.

How and when these processes start (spawned for the task at hand, pre-started, forked) is a
strategy of :mod:`compilescope.execute.start`; the local executor
(:mod:`compilescope.execute.local`) runs one trial in each.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field

from ..schema import ResultsError
from . import wire
from .environment import worker_environment
from .interpreter import trial_executable
from .task import CallCallback, Progress, TrialOutcome, TrialTask

KILL_GRACE_S = 2.0
READY_TIMEOUT_S = 120.0
EXIT_POLL_S = 0.05


@dataclass(frozen=True)
class Launch:
    """What a trial process is before its task comes: the environment it starts with
    (:func:`~compilescope.execute.environment.worker_environment`) and the interpreter it runs
    (``python``, ``--python``; None: this one). A process started ahead serves a task of an
    equal launch."""

    env: dict[str, str] = field(default_factory=dict)
    python: str | None = None

    @classmethod
    def of(cls, threads: int | None, python: str | None = None) -> Launch:
        """The launch of a trial with ``--threads`` ``threads`` in the interpreter ``python``."""
        return cls(worker_environment(threads), python)

    @property
    def executable(self) -> str:
        return trial_executable(self.python)


def _signal_group(proc: subprocess.Popen[bytes] | Forked, signum: int) -> bool:
    """Signal the process group ``proc`` leads; False when it is gone. A forked trial its server
    still reports running but that leads no group (it never reached ``setsid``) is signalled
    alone."""
    try:
        os.killpg(proc.pid, signum)
        return True
    except ProcessLookupError:
        if not isinstance(proc, Forked) or proc.poll() is not None:
            return False
    try:
        os.kill(proc.pid, signum)
        return True
    except ProcessLookupError:
        return False


def kill_group(proc: subprocess.Popen[bytes] | Forked) -> None:
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


# Variables a shared fork server's child may take from its launch although the server imported
# without them: read when used, never while importing (temporary directories, compilescope's own).
READ_WHEN_USED = frozenset({"TMPDIR", "TEMP", "TMP"})
READ_WHEN_USED_PREFIXES = ("COMPILESCOPE_",)


def shares_imports(server_env: dict[str, str], launch_env: dict[str, str]) -> bool:
    """Whether a process that imported under ``server_env`` is what one started under
    ``launch_env`` would be once imported: the two differ in no variable read before a fork."""
    keys = set(server_env) | set(launch_env)
    return all(server_env.get(k) == launch_env.get(k) for k in keys
               if k not in READ_WHEN_USED and not k.startswith(READ_WHEN_USED_PREFIXES))


class ForkServer:
    """A fork server of one launch, this driver's (:mod:`compilescope.execute.zygote`): started
    ahead, it imports while the driver starts up; :meth:`fork` then gives a trial process in
    milliseconds. :meth:`connect` instead joins a shared server another process started."""

    proc: subprocess.Popen[bytes] | None

    def __init__(self, launch: Launch, sock: socket.socket | None = None) -> None:
        self.launch = launch
        self.shared = sock is not None
        self.ready = threading.Event()  # imported (or died)
        self.lock = threading.Lock()  # one fork request at a time: the replies come in order
        self.changed = threading.Condition()
        self.exits: dict[int, int] = {}
        self.forked: list[int] = []
        self.replies: list[int | None] = []
        self.gone = self.broken = False
        self.errfile = tempfile.TemporaryFile()
        if sock is not None:  # a shared server, imported already
            self.sock, self.proc = sock, None
            self.ready.set()
            self.reader = threading.Thread(target=self._read, daemon=True)
            self.reader.start()
            return
        self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.proc = subprocess.Popen(
                [launch.executable, "-m", "compilescope.execute.zygote", str(theirs.fileno()), str(os.getpid()),
                 repr(time.time())],
                stdin=subprocess.DEVNULL, stdout=self.errfile, stderr=self.errfile, pass_fds=(theirs.fileno(),),
                start_new_session=True, env=launch.env,
            )
        except BaseException:
            self.sock.close()
            self.errfile.close()
            raise
        finally:
            theirs.close()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    @classmethod
    def connect(cls, path: str, launch: Launch) -> ForkServer | None:
        """The shared fork server listening at ``path`` for ``launch``, or None: none answers
        there, or it runs another interpreter or imported under an environment the launch's
        differs from before a fork (:func:`shares_imports`)."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            sock.settimeout(READY_TIMEOUT_S)
            sock.connect(path)
            hello = json.loads(sock.recv(1 << 20))
            sock.settimeout(None)
            same = (isinstance(hello, dict) and hello.get("python") == launch.executable
                    and isinstance(hello.get("env"), dict) and shares_imports(hello["env"], launch.env))
        except (OSError, ValueError):
            same = False
        if not same:
            sock.close()
            return None
        return cls(launch, sock)

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
        return not self.gone and not self.broken and (self.proc is None or self.proc.poll() is None)

    def fork(self, fds: tuple[int, int, int]) -> int | None:
        """A trial process with these stdin, output and event descriptors; None when the server
        is gone or did not answer (it is then not asked again: a late answer would be taken for
        the next request's)."""
        with self.lock:
            message: dict[str, object] = {"launched": time.time(), "driver": os.getpid()}
            if self.shared:  # the child takes the launch's environment and this working directory
                message.update(env=self.launch.env, cwd=os.getcwd())
            request = json.dumps(message).encode()
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
        """End the connection: the server's next read is its end, and it exits (status 0); a
        shared server serves on."""
        try:
            self.sock.shutdown(socket.SHUT_RDWR)  # close() alone would not wake the reader's recv
        except OSError:
            pass
        try:
            if self.proc is not None:
                self.proc.wait(KILL_GRACE_S)
        except subprocess.TimeoutExpired:
            kill_group(self.proc)
        self.reader.join(1.0)
        self.sock.close()
        self.errfile.close()


def start_shared_fork_server(path: str, env: dict[str, str], python: str | None = None) -> subprocess.Popen[bytes]:
    """A shared fork server listening at ``path`` (:mod:`compilescope.execute.zygote`), imported
    under ``env`` and watching this process; returned once it listens (drivers then reach it with
    ``COMPILESCOPE_FORK_SERVER=unix:PATH``). Ending it (``kill_group``) is the caller's."""
    proc = subprocess.Popen([trial_executable(python), "-m", "compilescope.execute.zygote", "--listen", path,
                             str(os.getpid())], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env, start_new_session=True)
    assert proc.stdout is not None
    if proc.stdout.readline().strip() != b"listening":
        kill_group(proc)
        raise OSError(f"the shared fork server at {path} did not start (exit status {proc.wait()})")
    return proc


class Forked:
    """A forked trial process, as the driver sees it (what it uses of ``Popen``): its exit
    status comes from its fork server, which is its parent."""

    def __init__(self, server: ForkServer, pid: int, stdin: int) -> None:
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


class TrialProcess:
    """One trial process: started as ``launch`` says (or forked by ``server``), it imports, says
    it is ready and waits for its task on stdin; its events stream into :attr:`progress` and
    :attr:`final`. ``start`` is how it started (recorded in the trial's environment)."""

    def __init__(self, launch: Launch, start: str, server: ForkServer | None = None) -> None:
        self.launch, self.start = launch, start
        self.progress = Progress()
        self.final: dict[str, object] = {}
        self.on_call: CallCallback | None = None
        self.ready = threading.Event()  # set once it imported (or died)
        self.ready_s: float | None = None  # from its start to the end of its imports, as it measured
        self.delivered = threading.Event()  # its whole result came: its exit is not waited for
        self.errfile = tempfile.TemporaryFile()
        read_fd, write_fd = os.pipe()
        self.started = time.perf_counter()
        self.proc: subprocess.Popen[bytes] | Forked
        try:
            if server is not None:
                self.proc = self._fork(server, write_fd)
            else:
                self.proc = subprocess.Popen(
                    [launch.executable, "-m", "compilescope.execute.worker", str(write_fd), str(os.getpid()),
                     repr(time.time()), start],
                    stdin=subprocess.PIPE, stdout=self.errfile, stderr=self.errfile, pass_fds=(write_fd,),
                    start_new_session=True, env=launch.env,
                )
        except BaseException:
            os.close(read_fd)
            self.errfile.close()
            raise
        finally:
            os.close(write_fd)
        self.reader = threading.Thread(target=_read_events, args=(read_fd, self), daemon=True)
        self.reader.start()

    def _fork(self, server: ForkServer, events: int) -> Forked:
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
        return Forked(server, pid, stdin_write)

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

    @property
    def env(self) -> dict[str, str]:
        return self.launch.env

    def discard(self) -> None:
        """End a process started ahead that no task came for: it has run nothing."""
        kill_group(self.proc)
        self.reader.join(1.0)
        self.errfile.close()


def _read_events(fd: int, worker: TrialProcess) -> None:
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
