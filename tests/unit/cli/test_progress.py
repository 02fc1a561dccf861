"""Progress as the CLI shows it: off a terminal, a plain line every few seconds while work
runs (what runs, its phase and request i/N, for how long, the steps done), never after the
work ended; on a terminal, a live line that leaves only the finished trials' lines."""

from __future__ import annotations

import time

from rich.console import Console

from compilescope.analysis.progress import REQUESTS, STARTING
from compilescope.cli.progress import ConsoleProgress
from compilescope.report.progress import Tally, TrialDone


def _consoles(terminal: bool = False) -> tuple[Console, Console]:
    return (Console(record=True, width=100, color_system=None, force_terminal=terminal),
            Console(record=True, width=100, color_system=None))


def _wait_for(log: Console, text: str, seconds: float = 10.0) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        got = log.export_text(clear=False)
        if text in got:
            return got
        time.sleep(0.02)
    raise AssertionError(f"{text!r} never shown; shown: {log.export_text(clear=False)!r}")


def test_off_a_terminal_a_plain_line_comes_every_few_seconds_and_stops_with_the_work():
    console, log = _consoles()
    progress = ConsoleProgress(console, live=False, log=log, every_s=0.05)
    progress.begin(3)
    progress.working("default (cold)", STARTING, 0, 10)
    _wait_for(log, "default (cold): starting")
    progress.working("default (cold)", REQUESTS, 4, 10)
    lines = _wait_for(log, "default (cold): request 4/10").splitlines()
    assert all(line.startswith("[0:0") and line.endswith("0/3 trials done") for line in lines), lines
    progress.finished("default (cold)", TrialDone("default (cold)", "ok", process_s=1.25, requests=10))
    _wait_for(log, "] 1/3 trials done")  # between trials: the time and the steps done
    progress.end()
    shown = log.export_text(clear=True)
    time.sleep(0.2)
    assert log.export_text() == ""  # nothing once the work ended
    assert "default (cold)" in shown
    assert console.export_text().strip() == "✓ default (cold) 1.2 s"  # the report's console has the trial line


def test_the_plain_line_names_the_steps_it_counts_and_an_unknown_total():
    console, log = _consoles()
    progress = ConsoleProgress(console, live=False, log=log, every_s=0.05)
    progress.begin(None, "runs")
    progress.working("as it is", "running the script")
    _wait_for(log, "as it is: running the script (0:0")
    _wait_for(log, "runs done: 0")
    progress.end()


def test_on_a_terminal_the_live_line_goes_and_the_finished_trials_stay():
    console, log = _consoles(terminal=True)
    progress = ConsoleProgress(console, log=log)
    assert progress.live
    progress.begin(2)
    progress.working("mark-dynamic[x:0] (cold)", REQUESTS, 1, 2)  # brackets in a label are text, not markup
    progress.finished("mark-dynamic[x:0] (cold)", TrialDone("mark-dynamic[x:0] (cold)", "ok", eager=1, requests=2))
    progress.working("static (cold)", STARTING, 0, 2)
    progress.finished("static (cold)", TrialDone("static (cold)", "timeout", error="timed out after 9 s"))
    progress.end()
    shown = console.export_text()
    assert "! eager fallback mark-dynamic[x:0] (cold) — 1 request(s) ran eagerly" in shown
    assert "✗ timeout static (cold) — timed out after 9 s" in shown
    assert "static (cold): starting" in shown  # the live line, drawn last before it went
    assert log.export_text() == ""  # a terminal gets no plain lines


def test_a_trial_of_a_batch_says_where_the_batch_stands():
    console, log = _consoles()
    progress = ConsoleProgress(console, live=False, log=log)
    done = TrialDone("default (cold)", "failed", workload="sincos", ended="ok", errors=2, requests=2)
    progress.finished("default (cold)", done, Tally(done=3, total=8, running=1, failed=1, left_s=125.0))
    assert console.export_text().strip() == "[3/8 done · 1 running · 1 failed · ~125 s left] sincos default (cold) ok"


def test_off_a_terminal_a_long_progress_line_stays_one_line():
    console, log = _consoles()  # 100 columns
    progress = ConsoleProgress(console, live=False, log=log, every_s=0.05)
    progress.begin(2)
    label = "mark-dynamic[" + ",".join(f"input_{i}:0" for i in range(12)) + "] (cold)"
    progress.working(label, REQUESTS, 7, 40)
    line = next(line for line in _wait_for(log, "request 7/40").splitlines() if "request 7/40" in line)
    progress.end()
    assert len(label) > 100 and label in line and line.endswith("0/2 trials done"), line


def test_a_trial_whose_outputs_differ_from_eager_gets_no_tick():
    from compilescope.cli.progress import trial_line

    wrong = trial_line(TrialDone("default (cold)", "ok", process_s=2.8, requests=2, wrong=2, checked=2)).plain
    assert wrong == "  ! wrong outputs default (cold) 2.8 s — outputs differed from eager on 2 of 2 shape(s)"
    assert "✓" not in wrong
    assert trial_line(TrialDone("default (cold)", "ok", requests=2, checked=2)).plain.startswith("  ✓ default")
