"""One trial in-process with real torch.compile (backend aot_eager/eager)."""

from __future__ import annotations

from pathlib import Path

import pytest

from compilescope.execute.trial import run_trial
from compilescope.model import MarkSpec, MeasureOptions, StrategyOptions, TrialSpec

HERE = Path(__file__).resolve().parents[2]  # tests/
SEED_STREAM = tuple({"n": n} for n in (16, 16, 32, 32, 64, 16))
FAST = MeasureOptions(warmup=1, samples=5, min_samples=3, budget_s=0.05)


def trial(strategy, workload="sincos", stream=SEED_STREAM, marks=(), backend="aot_eager", measure=FAST):
    spec = TrialSpec(workload, strategy, "cold", stream, StrategyOptions(backend=backend, marks=marks), measure)
    return run_trial(spec)[0]


@pytest.mark.parametrize(
    "strategy, marks, compiles",
    [("default", (), 2), ("static", (), 3), ("dynamic", (), 1), ("mark-dynamic", (MarkSpec("x", 0),), 1)],
)
def test_compile_counts_match_pytorch(strategy, marks, compiles):
    result = trial(strategy, marks=marks)
    assert result.ok
    stream_compiles = [e for e in result.compiles if e.phase == "stream"]
    assert len(stream_compiles) == compiles
    assert [c.index for c in result.calls if c.compiled][0] == 0
    assert all(c.latency_s is not None and c.latency_s > 0 for c in result.calls)


def test_default_recompile_is_attributed_to_the_call_with_its_reason():
    result = trial("default")
    recompile = next(e for e in result.compiles if e.is_recompile)
    assert recompile.call_index == 2 and result.calls[2].compile_ids == (str(recompile.compile_id),)
    assert recompile.reasons == ("tensor 'x' size mismatch at index 0. expected 16, actual 32",)
    assert recompile.rejected_by == ("0/0",)
    (reason,) = recompile.guard_failures
    assert reason.reason == "tensor 'x' size mismatch at index 0. expected 16, actual 32"
    assert (reason.source, reason.kind, reason.dim, reason.expected, reason.actual) == ("L['x']", "size", 0, 16, 32)
    assert recompile.compile_time_s is not None and recompile.compile_time_s > 0
    assert "dynamo" in recompile.phases_s


def test_steady_state_keeps_raw_interleaved_samples_and_checks_numerics():
    result = trial("default")
    assert [s.shape for s in result.steady] == [{"n": 16}, {"n": 32}, {"n": 64}]
    for s in result.steady:
        assert len(s.compiled_s) == len(s.eager_s) >= 3
    assert [n.passed for n in result.numerics] == [True, True, True]
    assert all(n.dtype == "float32" for n in result.numerics)


def test_eager_trial_has_no_compiles_and_no_eager_column():
    result = trial("eager")
    assert result.compiles == () and all(not c.compiled for c in result.calls)
    assert all(s.eager_s == () and s.compiled_s for s in result.steady)
    assert result.numerics == ()


def test_numerics_failure_is_detected():
    result = trial("default", workload=f"{HERE / 'workloads_for_tests.py'}:wrong_when_compiled",
                   stream=({"n": 8}, {"n": 16}), backend="eager")
    assert [n.passed for n in result.numerics] == [False, False]
    assert result.numerics[0].max_abs_err == pytest.approx(1.0)


def test_graph_breaks_with_user_location():
    ref = f"{HERE / 'workloads_for_tests.py'}:graph_breaks"
    result = trial("default", workload=ref, stream=({"n": 8}, {"n": 8}), backend="eager")
    (brk,) = {(b.filename, b.line) for b in result.graph_breaks}
    assert brk[0].endswith("workloads_for_tests.py")
    source = (HERE / "workloads_for_tests.py").read_text().splitlines()
    assert "graph_break()" in source[brk[1] - 1]
    assert all(b.call_index == 0 for b in result.graph_breaks)


def test_a_raising_call_is_recorded_and_the_trial_goes_on():
    ref = f"{HERE / 'workloads_for_tests.py'}:misbehaves"
    result = trial("default", workload=ref, stream=({"n": 4}, {"n": 7}, {"n": 4}), backend="eager")
    assert result.status == "partial"  # one of three requests raised: not "ok"
    assert result.calls[1].error == "ValueError: seven is not allowed"
    assert result.calls[2].error is None and result.calls[2].latency_s is not None
    assert [s.shape for s in result.steady] == [{"n": 4}]


def test_mark_dynamic_on_one_of_two_inputs():
    ref = f"{HERE / 'workloads_for_tests.py'}:two_inputs"
    stream = ({"batch": 2, "seq": 4}, {"batch": 4, "seq": 4}, {"batch": 4, "seq": 8})
    marked = trial("mark-dynamic", workload=ref, stream=stream, marks=(MarkSpec("x", 0), MarkSpec("y", 0)),
                   backend="eager")
    static = trial("static", workload=ref, stream=stream, backend="eager")
    assert len([e for e in marked.compiles if e.phase == "stream"]) == 2  # seq still specialised
    assert len([e for e in static.compiles if e.phase == "stream"]) == 3
    reasons = [r for e in marked.compiles for r in e.guard_failures]
    assert [(r.source, r.dim, r.expected, r.actual) for r in reasons] == [("L['x']", 1, 4, 8)]


def test_calls_record_the_graphs_they_ran_and_a_module_is_named_by_its_class():
    result = trial("default", workload="mlp", stream=tuple({"batch": b} for b in (2, 2, 4)), backend="eager")
    assert [c.graphs_run for c in result.calls] == [("0/0",), ("0/0",), ("0/1",)]
    assert [c.ran_eagerly for c in result.calls] == [False, False, False]
    first = result.compiles[0]
    assert first.function == "inner" and first.target is not None  # PyTorch's wrapper frame…
    assert first.display_name == "Sequential.forward" and first.target.params == ("input",)
    assert result.compiles[1].guard_failures[0].source == "L['input']"  # …and its L['args'][0], by parameter


def test_a_trial_whose_only_compile_failed_ran_every_call_eagerly():
    # no graph was ever compiled, so "none ran" alone cannot tell; the failed compile does
    from compilescope.analysis.outcomes import RequestOutcome, classify_calls

    ref = f"{HERE / 'workloads_for_tests.py'}:never_compiles"
    result = trial("default", workload=ref, stream=tuple({"n": n} for n in (4, 4, 6)), backend="eager",
                   measure=FAST)
    assert [e.outcome for e in result.compiles if e.phase == "stream"] == ["failed"]
    assert [c.ran_eagerly for c in result.calls] == [True, True, True]
    outcomes = [c.outcome for c in classify_calls(result.calls, result.compiles)]
    assert outcomes == [RequestOutcome.EAGER_FALLBACK] * 3
    assert result.steady and all(s.ran_eagerly for s in result.steady)  # never a compiled figure
    assert result.numerics and all(n.ran_eagerly for n in result.numerics)


def test_a_refusal_where_every_graph_is_empty_leaves_the_hits_hits():
    # no graph ever reached the backend and the limit refused size 4: calls 3 and 4 still ran
    # entries 0/0 and 0/1, which "no graph ran" cannot tell from running eagerly
    from compilescope.analysis.outcomes import RequestOutcome, classify_calls

    ref = f"{HERE / 'workloads_for_tests.py'}:empty_graphs"
    spec = TrialSpec(ref, "static", "cold", tuple({"n": n} for n in (2, 3, 4, 2, 3)),
                     StrategyOptions(backend="eager", recompile_limit=2), FAST)
    result = run_trial(spec)[0]
    assert [e.outcome for e in result.compiles if e.function == "f"] == ["compiled", "compiled", "refused"]
    assert [c.ran_eagerly for c in result.calls] == [None] * 5
    outcomes = [c.outcome for c in classify_calls(result.calls, result.compiles)]
    assert outcomes[2] is RequestOutcome.REFUSED and outcomes[3:] == [RequestOutcome.HIT] * 2


def test_a_failed_compile_makes_later_calls_of_every_shape_eager_fallbacks():
    ref = f"{HERE / 'workloads_for_tests.py'}:fails_to_compile_at_32"
    result = trial("default", workload=ref, stream=tuple({"n": n} for n in (16, 16, 32, 16, 64)), backend="eager")
    assert result.ok
    failed = [e for e in result.compiles if e.failed]
    assert failed and failed[0].call_index == 2
    assert [c.ran_eagerly for c in result.calls] == [False, False, True, True, True]
