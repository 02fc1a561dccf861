"""The local executor: one fresh subprocess per trial, one trial at a time, started as its
process-start strategy says (:mod:`compilescope.execute.start`).

A trial that raises, exits, is killed by a signal or runs past its timeout is recorded as
such with every call it finished and its stderr tail apart; the other trials still run. An
interrupt (SIGINT, SIGTERM, SIGHUP) kills the running trial's whole process group; the
scheduler (:mod:`compilescope.execute.scheduler`) then removes temporary directories and
keeps every finished trial.
"""

from __future__ import annotations

import os
import platform
import signal
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import Future
from pathlib import Path

from ..model import Shape, TrialEnv, TrialResult, TrialSpec, shape_label
from ..paths import RUN_DIR, host_tag
from .environment import recorded_variables
from .executor import Capabilities, done_future
from .process import EXIT_POLL_S, Launch, TrialProcess, kill_group
from .start import ProcessStarter, default_start
from .task import CallCallback, TrialOutcome, TrialTask
from .worker import alive

STDERR_TAIL_CHARS = 4000


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


class LocalExecutor:
    """Each task in a fresh ``python -m compilescope.execute.worker`` process of its own process
    group, with the environment :func:`~.environment.worker_environment` builds; records stream
    back over a pipe as each call finishes. How those processes start is ``start``, a strategy
    of :mod:`compilescope.execute.start` this executor owns (default:
    :func:`~.start.default_start`, processes started ahead of their tasks): :meth:`expect`
    starts the coming trials' processes ahead, :meth:`shutdown` ends those no task came for.
    One trial at a time, in the caller's thread: timings never overlap, and an interrupt there
    ends the trial's whole process group."""

    capabilities = Capabilities(slots=1, shared_disk=True, streams_calls=True)

    def __init__(self, start: ProcessStarter | None = None) -> None:
        self.start = start if start is not None else default_start()

    def expect(self, specs: Sequence[TrialSpec]) -> None:
        self.start.expect([launch_for(s) for s in specs])

    def submit(self, task: TrialTask, timeout_s: float, on_call: CallCallback | None = None) -> Future[TrialOutcome]:
        """Runs the trial to its end before it returns: the future holds its outcome."""
        spec = task.spec
        Path(task.cache_dir).mkdir(parents=True, exist_ok=True)
        worker = self.start.take(launch_for(spec))  # every process started ahead is idle by now
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
        self.start.after_trial()
        return done_future(_outcome(task, worker, worker.stderr(), elapsed - waited, waited, timed_out, timeout_s))

    def shutdown(self) -> None:
        self.start.close()


def launch_for(spec: TrialSpec) -> Launch:
    """The launch of ``spec``'s trial process: the environment of its ``--threads`` and its
    interpreter (``--python``) — the one place that reads what of a spec decides how its
    process starts."""
    return Launch.of(spec.measure.threads, spec.measure.python)


def _delivered_or_exited(worker: TrialProcess, timeout_s: float) -> bool:
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


def _outcome(task: TrialTask, worker: TrialProcess, stderr: str, process_s: float, wait_s: float, timed_out: bool,
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


def remove_orphaned_dirs(root: str | None = None) -> list[Path]:
    """Remove temporary cache directories whose run died without removing them (SIGKILL):
    ``compilescope-cache-PID-HOST-…`` (``-sweep-``, ``-ray-``, ``-import-``) of this host and a PID that no
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
