"""What a use case tells its watcher while trials run: each trial's start, its requests i/N as
the executor streams them, the phase after the last one, and how it ended — from the
scheduler's callbacks (:func:`compilescope.app.progress.trial_hooks`)."""

from __future__ import annotations

from compilescope.app.progress import Progress, trial_hooks
from compilescope.execute.scheduler import PlannedTrial
from compilescope.model import CallRecord, MeasureOptions, TrialResult, TrialSpec


class Recorder(Progress):
    def __init__(self) -> None:
        self.events: list[tuple] = []

    def working(self, label, phase, done=None, total=None):
        self.events.append(("working", label, phase, done, total))

    def finished(self, label, trial=None, tally=None):
        self.events.append(("finished", label, trial))


def _trial(measure: MeasureOptions) -> PlannedTrial:
    spec = TrialSpec("sincos", "default", "cold", ({"n": 4}, {"n": 8}, {"n": 4}), measure=measure)
    return PlannedTrial(spec, "default")


def test_a_trial_is_told_from_its_start_through_each_request_to_its_end():
    trial = _trial(MeasureOptions())
    watcher = Recorder()
    on_progress, on_call = trial_hooks(watcher)
    on_progress(trial, None)
    calls = [CallRecord(i, s, 0.01) for i, s in enumerate(trial.spec.stream)]
    for call in calls:
        on_call(trial, call)
    on_progress(trial, TrialResult(trial.spec, "ok", calls=tuple(calls)))
    label = "default (cold)"
    assert watcher.events[:4] == [
        ("working", label, "starting", 0, 3),
        ("working", label, "requests", 1, 3),
        ("working", label, "requests", 2, 3),
        ("working", label, "steady state, numerics", 3, 3),  # the last request run: what it still measures
    ]
    kind, ended, done = watcher.events[4]
    assert (kind, ended, done.label, done.status, done.requests, done.workload) == (
        "finished", label, label, "ok", 3, "sincos")


def test_a_warm_up_trial_says_it_warms_up_its_start_up_shapes_before_its_first_request():
    """A warm-up's start-up calls stream nothing back: before, its trial said "starting" through
    them (minutes, on a model whose start-up compiles are slow)."""
    import dataclasses

    trial = _trial(MeasureOptions())
    warmed = PlannedTrial(dataclasses.replace(trial.spec, startup=({"n": 4}, {"n": 8})), "default")
    watcher = Recorder()
    on_progress, on_call = trial_hooks(watcher)
    on_progress(warmed, None)
    on_call(warmed, CallRecord(0, {"n": 4}, 0.01))
    assert watcher.events == [("working", "default (cold)", "starting, then warming up 2 shape(s)", 0, 3),
                              ("working", "default (cold)", "requests", 1, 3)]


def test_the_phase_after_the_stream_names_what_is_still_measured():
    for measure, phase in ((MeasureOptions(numerics=False), "steady state"),
                           (MeasureOptions(steady=False), "numerics"),
                           (MeasureOptions(steady=False, numerics=False), "finishing")):
        trial = _trial(measure)
        watcher = Recorder()
        _, on_call = trial_hooks(watcher)
        on_call(trial, CallRecord(2, {"n": 4}, 0.01))
        assert watcher.events == [("working", "default (cold)", phase, 3, 3)]


def test_a_trial_whose_requests_raised_never_ends_as_ok():
    trial = _trial(MeasureOptions())
    watcher = Recorder()
    on_progress, _ = trial_hooks(watcher)
    calls = tuple(CallRecord(i, s, None, error="RuntimeError: boom") for i, s in enumerate(trial.spec.stream))
    on_progress(trial, TrialResult(trial.spec, "ok", calls=calls))
    done = watcher.events[0][2]
    assert (done.status, done.ended, done.errors, done.ok) == ("failed", "ok", 3, False)
