"""What a command shows while it runs: the one line a finished trial gets (its status, how
long its process took, what raised or ran eagerly), derived by
:func:`compilescope.analysis.progress.trial_done` and formatted by the CLI."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TrialDone:
    """A trial that ended: ``status`` is the one trial status (``ok`` only when no request
    raised); ``eager``/``partly`` count the requests that ran wholly or partly eagerly;
    ``errors`` the requests that raised, of ``requests``; ``wrong`` the shapes, of ``checked``,
    whose outputs differed from eager's."""

    label: str
    status: str
    process_s: float | None = None
    workload: str = ""
    ended: str = ""  # the runner's word for how the trial's process ended (ok, failed, timeout…)
    error: str | None = None
    errors: int = 0
    requests: int = 0
    eager: int = 0
    partly: int = 0
    wrong: int = 0  # shapes whose compiled outputs differed from eager's beyond the tolerance
    checked: int = 0  # shapes whose numerics were compared

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def fell_back(self) -> bool:
        """It ran, but not all of it compiled: never shown as a success."""
        return self.ok and bool(self.eager or self.partly)


@dataclass(frozen=True)
class Tally:
    """Where a batch of trials stands as one ends (a sweep): done, still running and failed of
    ``total``, and the time left at the mean so far (None before any ended)."""

    done: int
    total: int
    running: int
    failed: int
    left_s: float | None = None
