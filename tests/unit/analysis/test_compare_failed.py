"""compare does not call a frame that stopped compiling an improvement: fewer compiles where
B's compile failed (and its frame ran eagerly from then on) are shown, not flagged, beside a
row of failed compiles. Trials run for real (eager backend)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from compilescope.analysis.compare import compare_runs
from compilescope.execute.trial import run_trial
from compilescope.model import MeasureOptions, RunResult, StrategyOptions, TrialSpec

TESTS = Path(__file__).resolve().parents[2] / "workloads_for_tests.py"
STREAM = tuple({"n": n} for n in (16, 16, 32, 16, 64))
QUICK = MeasureOptions(warmup=1, samples=3, min_samples=3, budget_s=0.02, numerics=False, guards=False)


def _run(workload: str) -> RunResult:
    spec = TrialSpec(workload, "static", "cold", STREAM, StrategyOptions(backend="eager"), QUICK)
    trial = run_trial(spec)[0]
    return RunResult(workload="w", stream=STREAM, trials=(dataclasses.replace(trial, spec=dataclasses.replace(
        trial.spec, workload="w")),))


def test_fewer_compiles_because_a_compile_failed_are_no_improvement():
    a, b = _run("sincos"), _run(f"{TESTS}:fails_to_compile_at_32")
    rows = {c.figure: c for c in compare_runs(a, b).changes if c.shape == ""}
    assert (rows["failed compiles"].a, rows["failed compiles"].b, rows["failed compiles"].flag) == (0, 1, "regression")
    assert rows["compiles"].b < rows["compiles"].a and rows["compiles"].flag == ""
    assert "failed to compile or ran eagerly more: not flagged" in rows["compiles"].why
