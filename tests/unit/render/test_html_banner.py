"""The HTML page says what happened and no more: the banner mentions requests that raised
only when some did, and the eager trial's row leaves the compiled trials' columns empty, as
the console does."""

from __future__ import annotations

import pytest

from compilescope.analysis.build import build_run_report
from compilescope.model import CallRecord, CompileId, CompileRecord, MeasureOptions, RunResult, TrialResult, TrialSpec
from compilescope.render import get
from compilescope.report import RunFile

pytest.importorskip("plotly")

STREAM = ({"n": 16}, {"n": 32})


def _page(default_calls: tuple[CallRecord, ...]) -> str:
    eager = TrialResult(TrialSpec("w", "eager", "none", STREAM, measure=MeasureOptions()), "ok",
                        calls=tuple(CallRecord(i, s, 1e-3) for i, s in enumerate(STREAM)))
    default = TrialResult(TrialSpec("w", "default", "cold", STREAM, measure=MeasureOptions()), "ok",
                          calls=default_calls,
                          compiles=(CompileRecord(CompileId(0, 0), "f", "f.py", 1, call_index=0, phase="stream"),))
    run = RunResult(workload="w", stream=STREAM, trials=(eager, default))
    return get("html").render(RunFile(run, build_run_report(run)))


def test_a_banner_for_requests_that_ran_eagerly_says_nothing_of_requests_that_raised():
    page = _page((CallRecord(0, STREAM[0], 0.5, ("0/0",), graphs_run=("0/0",), ran_eagerly=False),
                  CallRecord(1, STREAM[1], 1e-3, graphs_run=(), ran_eagerly=True)))
    banner = page.split('id="failure-banner"', 1)[1].split("</div>", 1)[0]
    assert "Some requests ran eagerly." in banner and "raised" not in banner and "✕" not in banner
    raised = _page((CallRecord(0, STREAM[0], 0.5, ("0/0",), graphs_run=("0/0",), ran_eagerly=False),
                    CallRecord(1, STREAM[1], None, error="ValueError: no")))
    assert "Requests that raised are marked ✕" in raised.split('id="failure-banner"', 1)[1].split("</div>", 1)[0]


def test_the_eager_trials_row_leaves_the_compiled_columns_empty():
    page = _page((CallRecord(0, STREAM[0], 0.5, ("0/0",), graphs_run=("0/0",), ran_eagerly=False),
                  CallRecord(1, STREAM[1], 1e-3, graphs_run=("0/0",), ran_eagerly=False)))
    row = page.split('<td class="">eager</td>', 1)[1].split("</tr>", 1)[0]
    cells = [c.split(">", 1)[1] for c in row.split("</td>")[:-1]]
    assert cells[1:5] == ["", "", "", ""] and cells[5] == "2 ms", cells  # compiles, compile s, breaks, fallbacks
