"""Statistics and accounting on constructed records (no torch timing involved)."""

from __future__ import annotations

import pytest

from compilescope.analysis.regimes import (
    break_even_request,
    shape_changes,
    shape_rows,
    summarize_samples,
    summarize_trial,
)
from compilescope.model import CallRecord, CompileEvent, GuardFailure, SteadyState, TrialResult, TrialSpec


def calls(latencies, shapes=None):
    shapes = shapes or [16] * len(latencies)
    return tuple(CallRecord(i, {"n": s}, t) for i, (t, s) in enumerate(zip(latencies, shapes)))


def test_median_and_iqr():
    s = summarize_samples([1.0, 2.0, 3.0, 4.0, 100.0])
    assert s.median == 3.0 and s.q1 == 2.0 and s.q3 == 4.0 and s.n == 5
    assert s.noisy  # IQR 2 over median 3
    assert not summarize_samples([10.0, 10.1, 10.0, 9.9]).noisy
    assert summarize_samples([]) is None


def test_break_even_found_when_cumulative_stays_below_eager():
    compiled = calls([5.0, 1.0, 1.0, 1.0, 1.0, 1.0])
    eager = calls([2.0] * 6)
    # cumulative: compiled 5,6,7,8,9,10 vs eager 2,4,6,8,10,12 → at/below from request 4 on
    assert break_even_request(compiled, eager) == 4


def test_break_even_not_within_the_stream():
    assert break_even_request(calls([5.0, 1.0, 1.0]), calls([2.0, 2.0, 2.0])) is None


def test_a_late_recompile_pushes_break_even_back():
    compiled = calls([3.0, 1.0, 1.0, 1.0, 4.0, 1.0])
    eager = calls([2.0] * 6)
    # cumulative 3,4,5,6,10,11 vs 2,4,6,8,10,12: below at 2..4, still ≤ at 5 and 6
    assert break_even_request(compiled, eager) == 2


def _trial(strategy="default"):
    spec = TrialSpec("sincos", strategy, "cold", ())
    failure = GuardFailure("tensor 'x' size mismatch at index 0. expected 16, actual 32", "0/0", "size", "L['x']", 0, 16, 32)
    return TrialResult(
        spec, "ok",
        calls=(CallRecord(0, {"n": 16}, 0.5, ("0/0",)), CallRecord(1, {"n": 16}, 0.001),
               CallRecord(2, {"n": 32}, 0.3, ("0/1",)), CallRecord(3, {"n": 16}, 0.001)),
        compiles=(CompileEvent("0/0", "f", "f.py", 1, 0.45, call_index=0),
                  CompileEvent("0/1", "f", "f.py", 1, 0.25, reasons=(failure,), call_index=2)),
        steady=(SteadyState({"n": 16}, 3, (1.0, 1.0, 1.0), (2.0, 2.0, 2.0)),
                SteadyState({"n": 32}, 3, (1.0, 1.1, 0.9), (1.0, 1.0, 1.0))),
    )


def test_shape_rows_and_changes():
    rows = shape_rows(_trial())
    assert [(r.shape["n"], r.requests, r.first_call_s, r.compiled) for r in rows] == [(16, 3, 0.5, True), (32, 1, 0.3, True)]
    assert rows[0].cause == "first compile"
    assert rows[1].cause == "L['x'] dim 0 size: 16 → 32"
    assert rows[0].speedup == pytest.approx(2.0) and rows[1].speedup == pytest.approx(1.0)
    changes = shape_changes(_trial())
    assert [(c.call.index, bool(c.compiles)) for c in changes] == [(2, True), (3, False)]
    assert changes[0].reasons[0].actual == 32


def test_trial_summary_counts():
    eager = TrialResult(TrialSpec("sincos", "eager", "none", ()), "ok", calls=calls([0.01] * 4, [16, 16, 32, 16]))
    s = summarize_trial(_trial(), eager)
    assert (s.compiles, s.recompiles, s.compile_s) == (2, 1, pytest.approx(0.7))
    assert s.first_call_s == 0.5 and s.stream_s == pytest.approx(0.802)
    assert s.eager_stream_s == pytest.approx(0.04) and s.break_even_request is None
