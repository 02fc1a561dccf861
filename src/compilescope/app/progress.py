"""What a use case tells whoever watches it while it runs, so that slow is never taken for
hung: the trial (or dry run) now running, its phase, request i of N, each trial as it ends,
and the lines the user reads (where the results go). :class:`Progress` says nothing; the CLI's
(:mod:`compilescope.cli.progress`) draws a live bar on a terminal and writes a plain line every
few seconds in a log or a pipe."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where used: the CLI's --help imports this module and nothing heavy
    from ..execute.scheduler import CallFn, PlannedTrial, ProgressFn
    from ..model import CallRecord, TrialResult
    from ..report.progress import Tally, TrialDone


class Progress:
    """The watcher of a use case. Every method here does nothing (a Python caller that passes
    none); a watcher overrides what it shows. Calls may come from the executor's threads."""

    def note(self, text: str, style: str = "") -> None:
        """A line for the user to read (where the results go, what runs next)."""

    def status(self, text: str) -> None:
        """A passing word on what is running (slow is not hung): progress, never a result line."""

    def begin(self, total: int | None, unit: str = "trials") -> None:
        """``total`` steps (trials, dry runs) are about to run; None when not known."""

    def working(self, label: str, phase: str, done: int | None = None, total: int | None = None) -> None:
        """``label`` (a trial, a dry run) is in ``phase``, with ``done`` of its ``total`` requests."""

    def finished(self, label: str, trial: TrialDone | None = None, tally: Tally | None = None) -> None:
        """``label`` ended: one step of the ``total`` done; a trial says how it ended, and a
        batch's ``tally`` where the batch stands."""

    def end(self) -> None:
        """The steps are over (a live display goes)."""


SILENT = Progress()
CHECKING = ("checking the workload before any trial: its build() and its first inputs, run here once (then in "
            "each trial's own process) — still going")
CHECKING_SAID_AFTER_S = 3.0


class said_after:
    """``with said_after(progress, 3.0, text):`` — ``text`` as a status when the block is still
    running after ``delay_s`` seconds (a workload whose ``build()`` takes long, checked here
    before any trial): slow is said, never shown as nothing; a quick block says nothing."""

    def __init__(self, progress: Progress, delay_s: float, text: str) -> None:
        import threading

        self._timer = threading.Timer(delay_s, progress.status, (text,))
        self._timer.daemon = True

    def __enter__(self) -> None:
        self._timer.start()

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()


def trial_hooks(progress: Progress) -> tuple[ProgressFn, CallFn]:
    """The scheduler's callbacks (:func:`compilescope.execute.scheduler.run_plan`'s
    ``on_progress`` and ``on_call``) telling ``progress`` each trial's start, requests and end."""
    from ..analysis.progress import trial_done, trial_phase

    def on_progress(trial: PlannedTrial, result: TrialResult | None) -> None:
        if result is None:
            progress.working(trial.label, trial_phase(trial.spec, 0), 0, len(trial.spec.stream))
        else:
            progress.finished(trial.label, trial_done(trial.label, result))

    def on_call(trial: PlannedTrial, call: CallRecord) -> None:
        done = call.index + 1
        progress.working(trial.label, trial_phase(trial.spec, done), done, len(trial.spec.stream))

    return on_progress, on_call
