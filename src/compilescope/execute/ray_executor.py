"""Trials as Ray tasks: each in a worker process that runs exactly one trial.

The Ray task (``max_calls=1``: its worker process exits after it) runs the trial through
:class:`~compilescope.execute.local.LocalExecutor` — a fresh child process of its own, with
the same timeout, crash and stderr handling as a local run — and returns the outcome as
JSON. Nothing is shared through a path: a warm trial's task carries its cold trial's cache
directory as a tar, mega-cache artifacts travel as bytes. A worker lost mid-trial (its node
or process died) is retried once by Ray (``max_retries=1``); a second loss is recorded as a
failed trial. Ray is the optional extra ``compilescope[ray]``.
"""

from __future__ import annotations

import base64
import io
import json
import tarfile
import tempfile
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from ..errors import CompilescopeError
from ..model import TrialResult
from ..schema import from_data, to_data
from .task import TrialOutcome, TrialTask

RAY_EXTRA = "pip install 'compilescope[ray]'"


def require_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise CompilescopeError(f"--executor ray needs Ray: {RAY_EXTRA}") from None
    return ray


def _tar(directory: Path) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(str(directory), arcname=".")
    return buf.getvalue()


def _untar(blob: bytes, directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
        tar.extractall(str(directory), filter="data")


def run_task_here(task_json: str, timeout_s: float) -> str:
    """The body of the Ray task: one trial through a local fresh process, on a private cache
    directory (unpacked from the task's tar for a warm start)."""
    from .local import LocalExecutor

    task = TrialTask.from_json(task_json)
    with tempfile.TemporaryDirectory(prefix="compilescope-ray-") as tmp:
        cache = Path(tmp) / "cache"
        if task.cache_tar is not None:
            _untar(task.cache_tar, cache)
        local = TrialTask(task.spec, str(cache), task.save_artifacts, task.load_artifacts)
        outcome = LocalExecutor().run(local, timeout_s=timeout_s)
        back = _tar(cache) if task.return_cache and cache.exists() else None
    return json.dumps({
        "result": to_data(outcome.result),
        "artifacts": None if outcome.artifacts is None else base64.b64encode(outcome.artifacts).decode(),
        "cache_tar": None if back is None else base64.b64encode(back).decode(),
    })


def _outcome(text: str) -> TrialOutcome:
    data = json.loads(text)
    blob, cache = data.get("artifacts"), data.get("cache_tar")
    return TrialOutcome(from_data(TrialResult, data["result"]), base64.b64decode(blob) if blob else None,
                        base64.b64decode(cache) if cache else None)


class RayExecutor:
    """Submits each trial as a Ray task and returns a future of its outcome."""

    hands_over_cache = True
    concurrent = True

    def __init__(self, address: str | None = None, cpus_per_trial: float = 1.0, gpus_per_trial: float = 0.0,
                 init: bool = True) -> None:
        ray = require_ray()
        self.ray = ray
        if init and not ray.is_initialized():
            ray.init(address=address, include_dashboard=False, log_to_driver=False, configure_logging=False)
        self.refs: list[Any] = []
        self.remote = ray.remote(num_cpus=cpus_per_trial, num_gpus=gpus_per_trial, max_calls=1,
                                 max_retries=1, retry_exceptions=False)(run_task_here)

    def submit(self, task: TrialTask, timeout_s: float) -> Future[TrialOutcome]:
        ref = self.remote.remote(task.to_json(), timeout_s)
        self.refs.append(ref)
        raw = ref.future()
        out: Future[TrialOutcome] = Future()

        def done(f: Future[Any]) -> None:
            try:
                out.set_result(_outcome(f.result()))
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
