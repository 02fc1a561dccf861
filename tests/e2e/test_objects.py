"""Objects that carry tensors: outputs compared by value, calls that change their arguments,
steady samples that ran eagerly, and the ``causal-lm`` built-in (a decoder whose cache is an
argument it extends and an output it returns)."""

from __future__ import annotations

import pytest
import torch

from compilescope.analysis.build import build_run_report
from compilescope.analysis.numerics import compare_outputs
from compilescope.execute.trial import run_trial
from compilescope.model import MeasureOptions, RunResult, StrategyOptions, TrialSpec
from compilescope.workload import load_workload, seeded_inputs

from .. import workloads_objects
from ..workloads_objects import Memory, Result

REF = f"{workloads_objects.__file__}:"
FAST = MeasureOptions(warmup=1, samples=4, min_samples=3, budget_s=0.02)


def _trial(ref, strategy, stream, measure=FAST, **options):
    spec = TrialSpec(ref, strategy, "cold", tuple(stream), StrategyOptions(backend="eager", **options), measure)
    return run_trial(spec)[0]


def test_an_output_object_holding_tensors_is_compared_by_value():
    result = _trial(REF + "returns_object", "default", ({"length": 3}, {"length": 5}))
    assert result.ok and len(result.numerics) == 2
    # two eager calls gave equal objects: the check is made, not called "state or randomness"
    assert all(n.passed and n.comparable and n.dtype == "float32" for n in result.numerics)
    keys = torch.ones(3, 4)
    same = compare_outputs({}, Result(keys.sum(0), Memory(keys), 3), Result(keys.sum(0), Memory(keys.clone()), 3))
    assert same.passed
    moved = compare_outputs({}, Result(keys.sum(0), Memory(keys), 3), Result(keys.sum(0), Memory(keys + 1), 3))
    assert not moved.passed and moved.detail == "out.memory.keys exceeds tolerance"
    count = compare_outputs({}, Result(keys.sum(0), Memory(keys), 3), Result(keys.sum(0), Memory(keys), 4))
    assert not count.passed and count.detail == "out.count: 4 != eager 3"


def test_a_call_that_appends_to_its_argument_is_measured_on_inputs_made_afresh():
    result = _trial(REF + "appends_to_memory", "static", ({"length": 3}, {"length": 4}))
    assert result.ok
    assert [s.changed_inputs for s in result.steady] == [("memory.keys",)] * 2
    # each sample ran on a memory of the shape's own length: under static a grown one would
    # have compiled again (or, past the limit, run eagerly) inside the steady state
    assert [r.phase for r in result.compiles] == ["stream", "stream"]
    assert all(s.ran_eagerly is False and len(s.compiled_s) >= 3 for s in result.steady)
    assert all(n.passed and n.comparable for n in result.numerics)
    report = build_run_report(RunResult(workload="appends", stream=result.spec.stream, trials=(result,)))
    notes = [n.text for t in report.trials for n in t.notes]
    assert any("changes its inputs (memory.keys)" in n and "made afresh" in n for n in notes), notes


def test_a_steady_sample_that_ran_eagerly_is_not_in_a_compiled_figure():
    workloads_objects.MODE[0] = 0
    result = _trial(REF + "alternates", "default", ({"n": 8},), measure=MeasureOptions(warmup=0, samples=4, min_samples=4),
                    recompile_limit=1)
    # the first call compiled; then every other call is refused by the limit and runs eagerly
    assert [r.outcome for r in result.compiles if r.phase == "stream"] == ["compiled"]
    assert result.steady[0].ran_eagerly is True
    report = build_run_report(RunResult(workload="alternates", stream=result.spec.stream, trials=(result,)))
    row = report.trials[0].rows[0]
    assert row.steady is None and row.steady_note == "eager fallback"


def test_causal_lm_inputs_are_the_same_in_every_process_and_the_cache_has_the_shape_s_length():
    w = load_workload("causal-lm")
    a, b = seeded_inputs(w, {"batch": 2, "past": 5, "seq": 1}), seeded_inputs(w, {"batch": 2, "past": 5, "seq": 1})
    assert a["input_ids"].shape == (2, 1) and torch.equal(a["input_ids"], b["input_ids"])
    assert [tuple(layer.keys.shape) for layer in a["cache"].layers] == [(2, 2, 5, 16)] * 2
    assert all(torch.equal(x.keys, y.keys) and torch.equal(x.values, y.values)
               for x, y in zip(a["cache"].layers, b["cache"].layers))
    prefill = seeded_inputs(w, {"batch": 1, "past": 0, "seq": 7})
    assert prefill["cache"].get_seq_length() == 0 and prefill["input_ids"].shape == (1, 7)


def test_causal_lm_run_compares_its_numerics_and_measures_decode_on_a_fresh_cache():
    stream = ({"batch": 1, "past": 0, "seq": 4}, {"batch": 1, "past": 4, "seq": 1})
    result = _trial("causal-lm", "default", stream)
    assert result.ok, result.error
    assert [str(r.compile_id) for r in result.compiles if r.phase == "stream"] == ["0/0", "0/1"]
    assert not [r for r in result.compiles if r.phase != "stream"]  # no sample ran on a grown cache
    # logits and the extended cache compared by value: checked, not skipped as nondeterministic
    assert len(result.numerics) == 2 and all(n.passed and n.comparable for n in result.numerics)
    assert all("cache.layers[0].keys" in s.changed_inputs for s in result.steady)
