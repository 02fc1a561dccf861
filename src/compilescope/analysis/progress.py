"""What a running command says of a trial as it ends (:class:`~compilescope.report.progress.TrialDone`)
and which phase a running trial is in, from the records streamed so far."""

from __future__ import annotations

from ..collect.graphs import eager_frames
from ..model import TrialResult, TrialSpec, trial_status
from ..report.progress import TrialDone

STARTING = "starting"  # the process starting and importing (and a warm-up's start-up calls, said with their count)
REQUESTS = "requests"  # the stream's requests, i of N


def trial_done(label: str, result: TrialResult) -> TrialDone:
    """The line of a finished trial: its status by the one rule (:func:`compilescope.model.trial_status`),
    the requests that raised, and those that ran wholly or partly eagerly."""
    return TrialDone(
        label=label, status=trial_status(result.status, result.calls), process_s=result.process_s,
        workload=result.spec.workload, ended=result.status, error=result.error, errors=sum(1 for c in result.calls if c.error is not None), requests=len(result.calls),
        eager=sum(1 for c in result.calls if c.ran_eagerly),
        partly=len(eager_frames(result.calls, result.compiles)),
        wrong=sum(1 for n in result.numerics if n.comparable and not n.passed),
        checked=sum(1 for n in result.numerics if n.comparable),
    )


def after_stream(spec: TrialSpec) -> str:
    """The phase of a trial once its last request has run: what it still measures."""
    steady, numerics = spec.measure.steady, spec.measure.numerics
    if steady and numerics:
        return "steady state, numerics"
    return "steady state" if steady else "numerics" if numerics else "finishing"


def trial_phase(spec: TrialSpec, requests_done: int) -> str:
    """The phase of a trial that has run ``requests_done`` of its stream's requests."""
    if requests_done <= 0:
        # a warm-up's start-up calls stream nothing back: what they are is said, not where they are
        return f"{STARTING}, then warming up {len(spec.startup)} shape(s)" if spec.startup else STARTING
    return REQUESTS if requests_done < len(spec.stream) else after_stream(spec)
