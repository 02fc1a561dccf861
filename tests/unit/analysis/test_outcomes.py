"""The one request-outcome classifier and the shared rules of :mod:`compilescope.analysis.outcomes`,
on the records real runs wrote (``tests/data/derivations``)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from compilescope.analysis.outcomes import (
    RequestOutcome,
    call_arguments,
    classify_calls,
    forecast_word,
    limit_in_force,
    repeat_word,
    speedup,
    tolerance_side,
    trial_limit,
    within_tolerance,
)
from compilescope.analysis.regimes import TOLERANCE
from compilescope.collect.graphs import eager_frames
from compilescope.model import RunResult
from compilescope.schema import load

DATA = Path(__file__).resolve().parents[2] / "data" / "derivations"
RUNS = sorted(p for p in DATA.glob("run_*.json") if not p.name.endswith(".golden.json"))


def _trials():
    for path in RUNS:
        result = load(path)
        assert isinstance(result, RunResult)
        for trial in result.trials:
            yield path.stem, trial


def test_each_recorded_call_has_the_outcome_its_records_show():
    seen = set()
    for name, trial in _trials():
        compiles = trial.spec.strategy != "eager"
        partial = eager_frames(trial.calls, trial.compiles)
        for c in classify_calls(trial.calls, trial.compiles, compiles_code=compiles):
            seen.add(c.outcome)
            call, where = c.call, f"{name} {trial.label} call {c.call.index}"
            refused_here = any(r.refused for r in c.records)
            assert (c.outcome is RequestOutcome.RAISED) == (call.error is not None), where
            if call.error is None and not compiles:
                assert c.outcome is RequestOutcome.EAGER, where
            elif call.error is None and call.ran_eagerly:  # whole calls first: refused or not, by the cause
                assert c.outcome is (RequestOutcome.REFUSED if refused_here else RequestOutcome.EAGER_FALLBACK), where
            elif call.error is None and call.index in partial:  # then a part, before what compiled
                assert c.outcome is RequestOutcome.PARTIAL, where
                assert c.eager_frames == partial[call.index]
            elif call.error is None and refused_here:
                assert c.outcome is RequestOutcome.REFUSED, where
            elif call.error is None:
                made = [r for r in c.records if r.is_compile]
                expected = (RequestOutcome.RECOMPILE if any(r.is_recompile for r in made) else
                            RequestOutcome.COMPILE if made else RequestOutcome.HIT)
                assert c.outcome is expected, where
            assert c.compile_ids == call.compile_ids, where  # the call's own record of what it compiled
    # the recordings reach every branch a run can take (unknown is a forecast's)
    assert seen == set(RequestOutcome) - {RequestOutcome.UNKNOWN}, seen


def test_a_request_that_ran_eagerly_is_never_called_compiled():
    for name, trial in _trials():
        for c in classify_calls(trial.calls, trial.compiles, compiles_code=trial.spec.strategy != "eager"):
            if c.call.ran_eagerly or c.eager_frames:
                assert c.outcome.ran_eagerly and not c.outcome.compiled, (name, trial.label, c.call.index)


def test_the_forecast_words_keep_a_stall_and_an_eager_part_apart():
    assert forecast_word(RequestOutcome.PARTIAL, compiled_a_frame=True) == "compile"
    assert forecast_word(RequestOutcome.PARTIAL, compiled_a_frame=False) == "eager"
    assert forecast_word(RequestOutcome.REFUSED, compiled_a_frame=False) == "eager"
    assert forecast_word(RequestOutcome.RECOMPILE, compiled_a_frame=True) == "compile"
    assert forecast_word(RequestOutcome.HIT, compiled_a_frame=False) == "hit"
    assert forecast_word(RequestOutcome.RAISED, compiled_a_frame=True) == "error"
    assert forecast_word(RequestOutcome.UNKNOWN, compiled_a_frame=False) == "unknown"
    assert [repeat_word(w) for w in ("hit", "compile", "eager", "error", "unknown")] == \
        ["hit", "hit", "eager", "error", "unknown"]
    assert repeat_word("compile", eager_part=True) == "eager"


def test_the_tolerance_is_symmetric_and_its_edge_is_a_difference():
    edge = 1 + TOLERANCE
    assert within_tolerance(1.0, 1.0) and within_tolerance(0.0, 0.0)
    for a, b in [(1.0, 1.049), (100.0, 104.0), (0.951, 0.97), (2.0, 1.99)]:
        assert within_tolerance(a, b) and within_tolerance(b, a)
    for a, b in [(1.0, edge), (1.0, 1.06), (1.0, 0.95), (0.0, 1e-9), (-1.0, 1.0)]:
        assert not within_tolerance(a, b) and not within_tolerance(b, a)
    assert tolerance_side(edge) == 1 and tolerance_side(1 / edge) == -1 and tolerance_side(1.04) == 0
    assert tolerance_side(1 / 1.04) == 0


def test_speedup_is_eager_over_compiled():
    assert speedup(2.0, 1.0) == 2.0
    assert speedup(1.0, 0.0) is None and speedup(None, 1.0) is None and speedup(1.0, None) is None


def test_the_recompile_limit_in_force():
    import torch

    assert limit_in_force(3, 8) == 3
    assert limit_in_force(None, 5) == 5
    assert limit_in_force(None, None) == torch._dynamo.config.recompile_limit
    assert limit_in_force(None, None, here=False) is None
    for _, trial in _trials():
        expected = (trial.spec.options.recompile_limit if trial.spec.options.recompile_limit is not None
                    else trial.env.recompile_limit_default)
        assert trial_limit(trial) == expected


@pytest.mark.parametrize("inputs, expected", [
    ({"x": 1}, ((), {"x": 1})),
    (((1,), {"n": 2}), ((1,), {"n": 2})),
    ((1, 2), ((1, 2), {})),
    ([1], ((1,), {})),
    (((1,), (2,)), (((1,), (2,)), {})),  # two tuples: two positional arguments
    (((1,), {"n": 2}, 3), (((1,), {"n": 2}, 3), {})),  # three items: positional
    (7, ((7,), {})),
])
def test_the_make_inputs_rule(inputs, expected):
    assert call_arguments(inputs) == expected


def test_every_table_of_a_run_report_says_the_same_of_a_call():
    """The timeline, the shape-change table and a shape's first call read one outcome: a call
    is never refused in one and a partial eager fallback in another."""
    from compilescope.analysis.build import build_run_report

    same = {"refused": "refused", "partial eager fallback": "partial eager fallback", "eager fallback": "eager fallback",
            "error": "error", "recompile": "recompiled", "first compile": "recompiled", "": "reused"}
    checked = 0
    for path in RUNS:
        report = build_run_report(load(path))
        for t in report.trials:
            if not t.compiles_code:
                continue
            events = {p.index: p.event for p in t.timeline}
            for change in t.changes:
                assert same[events[change.index]] == change.outcome, (path.stem, t.label, change.index)
                checked += 1
            for row in t.rows:
                event = events[row.first_call_index]
                if row.status == "partial eager fallback" or event == "partial eager fallback":
                    assert row.status == event, (path.stem, t.label, row.shape)
                if event == "refused":
                    assert row.status == "eager fallback" and "recompile limit" in row.cause
    assert checked


def test_a_resume_frame_whose_first_compile_failed_runs_eagerly_in_every_call_after():
    # frame 1 (after a graph break) failed at its first compile, so it never had a graph: each
    # call from then on ran frame 0 compiled and frame 1 eagerly — partly eager, never a hit
    from compilescope.model import CallRecord, CompileId, CompileRecord

    records = (CompileRecord(CompileId(0, 0), "forward", "m.py", 1, call_index=0),
               CompileRecord(CompileId(1, 0), "torch_dynamo_resume_in_forward_at_3", "m.py", 3, outcome="failed",
                             call_index=0),
               CompileRecord(CompileId(0, 1), "forward", "m.py", 1, call_index=2))
    calls = (CallRecord(0, {"n": 2}, 1e-3, compile_ids=("0/0", "1/0"), graphs_run=("0/0",), ran_eagerly=False),
             CallRecord(1, {"n": 2}, 1e-3, graphs_run=("0/0",), ran_eagerly=False),
             CallRecord(2, {"n": 4}, 1e-3, compile_ids=("0/1",), graphs_run=("0/1",), ran_eagerly=False))
    assert eager_frames(calls, records) == {0: (1,), 1: (1,), 2: (1,)}
    assert [c.outcome for c in classify_calls(calls, records)] == [RequestOutcome.PARTIAL] * 3
    # another function's frame that failed where only the first call entered it (a lazy set-up):
    # the calls after it are not known to have run it
    helper = records[:1] + (CompileRecord(CompileId(1, 0), "build_table", "m.py", 9, outcome="failed",
                                          call_index=0),) + records[2:]
    assert eager_frames(calls, helper) == {0: (1,)}


def test_two_resume_frames_of_one_name_and_line_are_two_functions_in_a_probe_report():
    # Dynamo makes a resume frame per graph that breaks at a line: one name, two code objects,
    # each with its own entries and recompile limit
    from compilescope.analysis.build import build_probe_report
    from compilescope.model import CompileId, CompileRecord, ProbeResult

    resume = "torch_dynamo_resume_in_forward_at_10"
    records = (CompileRecord(CompileId(0, 0), "forward", "m.py", 8),
               CompileRecord(CompileId(1, 0), resume, "m.py", 10),
               CompileRecord(CompileId(0, 1), "forward", "m.py", 8),
               CompileRecord(CompileId(3, 0), resume, "m.py", 10))
    report = build_probe_report(ProbeResult(compiles=records))
    assert report.frames == 3
    assert [f.name for f in report.functions] == ["forward", f"{resume} [frame 1]", f"{resume} [frame 3]"]


def test_a_target_whose_own_frame_failed_runs_it_eagerly_at_every_later_call():
    """A model whose outer frame failed to compile (a shapes spec's data-dependent UserError)
    while Dynamo compiled the inner frame it calls: every later call enters the outer frame
    eagerly around the compiled inner one — partly eager, not only the call it failed at. A
    failed frame of another function, entered once, counts at that call alone."""
    from compilescope.model import CallRecord, CompiledTarget, CompileId, CompileRecord

    target = CompiledTarget("GPT2LMHeadModel.forward", "modeling_gpt2.py", 647)
    outer = CompileRecord(CompileId(0, 0), "forward", "modeling_gpt2.py", 647, outcome="failed", fail_type="UserError",
                          call_index=0, target=target)
    inner = CompileRecord(CompileId(1, 0), "forward", "modeling_gpt2.py", 400, call_index=0)
    calls = tuple(CallRecord(i, {"seq": 8 + i}, 0.01, ("1/0",) if i == 0 else (), graphs_run=("1/0",),
                             ran_eagerly=False) for i in range(3))
    assert eager_frames(calls, (outer, inner)) == {0: (0,), 1: (0,), 2: (0,)}
    setup = dataclasses.replace(outer, target=None)  # another function's frame: entered at its failure only
    assert eager_frames(calls, (setup, inner)) == {0: (0,)}


def test_a_failed_compile_skips_its_frame_unless_its_own_error_reached_the_call():
    """Dynamo skips a frame whose compile failure it suppressed; one raised into the call is
    tried again. The call's error tells them apart where nothing recorded it: the compile's
    own type, bare or wrapped by Dynamo, raised into it; another (the frame, run eagerly,
    raised the user's error) means the failure was suppressed."""
    from compilescope.analysis.outcomes import failure_skips_frame
    from compilescope.model import CompileId, CompileRecord

    def failed(fail_type, reached=None):
        return CompileRecord(CompileId(0, 0), "f", "f.py", 1, outcome="failed", fail_type=fail_type,
                             reached_call=reached)

    assert failure_skips_frame(failed("Unsupported"), None)  # the call went on: eagerly
    assert failure_skips_frame(failed("Unsupported"), "ValueError: no sevens")  # the frame raised, eagerly
    assert not failure_skips_frame(failed("Unsupported"), "Unsupported: Call to graph_break()")  # fullgraph
    assert not failure_skips_frame(failed("KeyError"), "InternalTorchDynamoError: KeyError: 'k'")  # wrapped
    assert not failure_skips_frame(failed(None), "RuntimeError: ?")
    assert failure_skips_frame(failed("KeyError", reached=False), "InternalTorchDynamoError: KeyError: 'k'")
