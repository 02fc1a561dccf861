"""Trials as Ray tasks: each in a worker process that runs exactly one trial.

The Ray task (``max_calls=1``: its worker process exits after it) runs the trial through
:class:`~compilescope.execute.local.LocalExecutor` — a fresh child process of its own (spawned
when the task comes, :class:`~compilescope.execute.start.SpawnStart`), with
the same timeout, crash and stderr handling as a local run — and returns the outcome as
JSON. Nothing is shared through a path: a warm trial's task carries its cold trial's cache
directory as a tar, mega-cache artifacts travel as bytes. A worker lost mid-trial (its node
or process died) is retried once by Ray (``max_retries=1``); a second loss is recorded as a
failed trial. Ray is the optional extra ``compilescope[ray]``.
"""

from __future__ import annotations

import io
import os
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from ..errors import CompilescopeError
from ..model import TrialResult, TrialSpec
from . import wire
from .executor import Capabilities
from .task import CallCallback, TrialOutcome, TrialTask

RAY_EXTRA = "pip install 'compilescope[ray]'"
DEFAULT_CONNECT_TIMEOUT_S = 30.0
# Joining a cluster that does not answer, ray.init() retries for minutes; a throwaway process
# tries it first, and is killed at the timeout.
_PROBE = """
import sys
import ray
ray.init(address=sys.argv[1], include_dashboard=False, log_to_driver=False, configure_logging=False)
ray.shutdown()
"""


def require_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise CompilescopeError(f"--executor ray needs Ray: {RAY_EXTRA}") from None
    return ray


def _host_port(address: str) -> tuple[str, int] | None:
    rest = address.removeprefix("ray://")
    host, sep, port = rest.rpartition(":")
    if not sep or not host or not port.isdigit():
        return None
    return host.strip("[]"), int(port)


def check_cluster(address: str, timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S) -> None:
    """Raise :class:`CompilescopeError` (one line) unless the Ray cluster at ``address`` takes a
    driver within ``timeout_s`` seconds: first a TCP connection, then a real ``ray.init`` in a
    process of its own, killed at the deadline."""
    deadline = time.monotonic() + timeout_s
    where = _host_port(address)
    if where is not None:
        try:
            socket.create_connection(where, timeout=timeout_s).close()
        except OSError as exc:
            reason = exc.strerror or str(exc) or type(exc).__name__
            raise CompilescopeError(f"cannot reach the Ray cluster at {address}: {reason}") from None
    left = max(0.5, deadline - time.monotonic())
    proc = subprocess.Popen([sys.executable, "-c", _PROBE, address], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        _, err = proc.communicate(timeout=left)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.communicate()
        raise CompilescopeError(f"the Ray cluster at {address} did not answer within {timeout_s:g} s "
                                "(--ray-timeout)") from None
    if proc.returncode != 0:
        lines = [ln.strip() for ln in err.decode(errors="replace").splitlines() if ln.strip()]
        errors = [ln for ln in lines if "Error" in ln.split(":", 1)[0]]
        last = (errors or lines or [f"exit status {proc.returncode}"])[-1][:300]
        raise CompilescopeError(f"cannot join the Ray cluster at {address}: {last}")


def _tar(directory: Path) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(str(directory), arcname=".")
    return buf.getvalue()


def _untar(blob: bytes, directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
        tar.extractall(str(directory), filter="data")


def run_task_here(task_text: str, timeout_s: float) -> str:
    """The body of the Ray task: one trial through a local fresh process, on a private cache
    directory (unpacked from the task's tar for a warm start)."""
    from .local import LocalExecutor
    from .start import SpawnStart
    from ..paths import run_dir_prefix

    task = wire.decode_task(task_text)

    with tempfile.TemporaryDirectory(prefix=run_dir_prefix("ray")) as tmp:
        cache = Path(tmp) / "cache"
        if task.cache_tar is not None:
            _untar(task.cache_tar, cache)
        local = TrialTask(task.spec, str(cache), task.save_artifacts, task.load_artifacts)
        outcome = LocalExecutor(SpawnStart()).submit(local, timeout_s).result()
        back = _tar(cache) if task.return_cache and cache.exists() else None
    return wire.encode_outcome(TrialOutcome(outcome.result, outcome.artifacts, back))


class RayExecutor:
    """Submits each trial as a Ray task and returns a future of its outcome. As many trials
    run at once as the cluster's CPUs hold ``cpus_per_trial``; nothing is shared through a
    path (caches travel as bytes); calls are not streamed back as they finish."""

    def __init__(self, address: str | None = None, cpus_per_trial: float = 1.0, gpus_per_trial: float | None = None,
                 init: bool = True, connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S) -> None:
        ray = require_ray()
        self.ray = ray
        if init and not ray.is_initialized():
            target = address or os.environ.get("RAY_ADDRESS")
            if target:  # joining a cluster (no address starts a local one)
                check_cluster(target, connect_timeout_s)
            ray.init(address=address, include_dashboard=False, log_to_driver=False, configure_logging=False)
        self.refs: list[Any] = []
        self.gpus_per_trial = gpus_per_trial  # None: one for a trial on a CUDA device, else none
        self.remote = ray.remote(num_cpus=cpus_per_trial, max_calls=1,
                                 max_retries=1, retry_exceptions=False)(run_task_here)
        slots = int(ray.cluster_resources().get("CPU", 1) // cpus_per_trial)
        self.capabilities = Capabilities(slots=max(1, slots), shared_disk=False, streams_calls=False)

    @classmethod
    def from_settings(cls, ray_address: str | None = None, cpus_per_trial: float = 1.0,
                      ray_timeout: float = DEFAULT_CONNECT_TIMEOUT_S) -> RayExecutor:
        """The executor ``--executor ray`` makes (:mod:`compilescope.execute.registry`): a trial on
        a CUDA device reserves one of the cluster's GPUs."""
        return cls(ray_address, cpus_per_trial=cpus_per_trial, connect_timeout_s=ray_timeout)

    def expect(self, specs: Sequence[TrialSpec]) -> None:
        """Nothing to prepare: Ray starts each task's worker process as the cluster has room."""

    def submit(self, task: TrialTask, timeout_s: float, on_call: CallCallback | None = None) -> Future[TrialOutcome]:
        """``on_call`` is not called (:attr:`capabilities`: calls are not streamed)."""
        gpus = self.gpus_per_trial
        if gpus is None:
            gpus = 1.0 if task.spec.measure.device.startswith("cuda") else 0.0
        ref = self.remote.options(num_gpus=gpus).remote(wire.encode_task(task), timeout_s)
        self.refs.append(ref)
        raw = ref.future()
        out: Future[TrialOutcome] = Future()

        def done(f: Future[Any]) -> None:
            try:
                out.set_result(wire.decode_outcome(f.result()))
            except Exception as exc:  # the worker was lost twice, or the task could not run
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
                out.set_result(TrialOutcome(TrialResult(
                    task.spec, "failed", error=f"Ray worker lost (retried once): {type(exc).__name__}: {first}"[:600])))

        raw.add_done_callback(done)
        return out

    def shutdown(self) -> None:
        """Cancel what is still running (an interrupted sweep): its trials are not in the store
        and run again next time."""
        for ref in self.refs:
            try:
                ready, _ = self.ray.wait([ref], timeout=0)
                if not ready:
                    self.ray.cancel(ref, force=True)
            except Exception:  # the cluster may already be gone
                pass
        self.refs.clear()
