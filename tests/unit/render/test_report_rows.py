"""The console report of a run whose requests raised: an eager trial says how many raised as a
compiled one does, and an error in the per-shape table is shown whole (cells wrap, never cut).
A real eager trial in this process."""

from __future__ import annotations

import pytest

from compilescope.analysis.build import build_run_report
from compilescope.execute.trial import run_trial
from compilescope.model import MeasureOptions, RunResult, StrategyOptions, TrialSpec
from compilescope.render import console as console_render

MESSAGE = "seven is refused by this workload, and the end of this long message is " + "x" * 40 + " THE-END"
WORKLOAD = f'''
import torch

from compilescope import Workload


def raises_at_7():
    def build():
        def f(x):
            if x.shape[0] == 7:
                raise ValueError({MESSAGE!r})
            return x * 2

        return f

    return Workload("raises_at_7", build, lambda s: (torch.randn(s["n"]),), ("n",),
                    tuple({{"n": n}} for n in (4, 7, 4)))
'''


@pytest.fixture(scope="module")
def eager_run(tmp_path_factory):
    path = tmp_path_factory.mktemp("rows") / "w.py"
    path.write_text(WORKLOAD)
    stream = ({"n": 4}, {"n": 7}, {"n": 4})
    spec = TrialSpec(f"{path}:raises_at_7", "eager", "none", stream, StrategyOptions(backend="eager"),
                     MeasureOptions(warmup=1, samples=3, min_samples=2, budget_s=0.02))
    trial = run_trial(spec)[0]
    return RunResult(workload="raises_at_7", stream=stream, trials=(trial,))


def test_an_eager_trial_with_raised_requests_says_so_in_the_summary(eager_run):
    (trial,) = eager_run.trials
    assert trial.status == "partial" and sum(1 for c in trial.calls if c.error) == 1
    text = console_render.render(build_run_report(eager_run), width=400)
    assert "1 of 3 raised" in text, text  # the first-call cell, as a compiled trial's says it


def test_an_error_in_the_per_shape_table_is_never_cut(eager_run):
    report = build_run_report(eager_run)
    (row,) = [r for t in report.trials for r in t.rows if r.status == "error"]
    assert len(row.cause) > 60 and row.cause.endswith("THE-END")
    text = console_render.render(report, width=400)
    cells = [ln for ln in text.splitlines() if "error: ValueError: seven" in ln and not ln.lstrip().startswith("!")]
    assert cells and all(f"error: ValueError: {MESSAGE}" in ln for ln in cells), text


def test_csv_gives_no_numerics_figure_for_a_call_that_ran_eagerly():
    """A shape that ran eagerly (past the recompile limit, or a frame of it) measured no
    compiled error: its ``max_abs_err`` is empty, as its ``numerics_pass`` is and as the
    console says "eager: not counted" (before: 0.0)."""
    import csv
    import io
    from pathlib import Path

    from compilescope.analysis.outputs import run_file
    from compilescope.render import csv as csv_render
    from compilescope.schema import load

    data = Path(__file__).resolve().parents[2] / "data" / "derivations"
    for name in ("run_recompile_limit", "run_partial_fallback"):
        rows = list(csv.DictReader(io.StringIO(csv_render.render(run_file(load(data / f"{name}.json")).report))))
        eager = [r for r in rows if r["numerics_ran_eagerly"] == "True"]
        assert eager and all(r["max_abs_err"] == r["max_rel_err"] == r["numerics_pass"] == "" for r in eager), name
        assert any(r["max_abs_err"] == "0.0" for r in rows if r["numerics_ran_eagerly"] == "False"), name
