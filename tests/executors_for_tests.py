"""An executor added the way a new one is: this file, and one line in
``compilescope.execute.registry.EXECUTORS`` (``tests/unit/execute/test_registry.py`` adds the
line when it runs)."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future

from compilescope.execute.executor import Capabilities
from compilescope.execute.inprocess import InProcessExecutor
from compilescope.execute.task import CallCallback, TrialOutcome, TrialTask
from compilescope.model import TrialSpec


class LoggingExecutor:
    """Each trial in the driver (:class:`InProcessExecutor`), each member's call appended to the
    file ``log_to`` (its one setting)."""

    def __init__(self, log_to: str) -> None:
        self.log_to, self.inner = log_to, InProcessExecutor()

    def _log(self, line: str) -> None:
        with open(self.log_to, "a") as f:
            f.write(line + "\n")

    @property
    def capabilities(self) -> Capabilities:
        return self.inner.capabilities

    def expect(self, specs: Sequence[TrialSpec]) -> None:
        self._log(f"expect {len(specs)}")

    def submit(self, task: TrialTask, timeout_s: float, on_call: CallCallback | None = None) -> Future[TrialOutcome]:
        self._log(f"submit {task.spec.label}")
        return self.inner.submit(task, timeout_s, on_call)

    def shutdown(self) -> None:
        self._log("shutdown")
