"""Objects that carry tensors: outputs compared by value, calls that change their arguments,
steady samples that ran eagerly, the tensors inside object arguments recorded and their guards
forecast, and the ``causal-lm`` built-in (a decoder whose cache is an argument it extends and
an output it returns)."""

from __future__ import annotations

import pytest
import torch

from compilescope.analysis.build import build_run_report
from compilescope.analysis.numerics import compare_outputs
from compilescope.execute.trial import run_trial
from compilescope.forecast import forecast_recorded, request_outcomes
from compilescope.model import MeasureOptions, RunResult, StrategyOptions, TrialSpec
from compilescope.schema import dumps
from compilescope.shapes_record import read_recorded
from compilescope.stream import parse_stream
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


@pytest.fixture(scope="module")
def causal_lm_run(tmp_path_factory):
    """``causal-lm`` under default (eager backend): a prefill of 4 tokens and two decode
    steps, steady state and numerics included, saved as a results file."""
    from compilescope import zoo

    stream = zoo.decode_stream((4,), (2,))
    result = _trial("causal-lm", "default", stream)
    path = tmp_path_factory.mktemp("causal-lm") / "run.json"
    path.write_text(dumps(RunResult(workload="causal-lm", stream=stream, trials=(result,))))
    return result, path


def test_causal_lm_run_compares_its_numerics_and_measures_decode_on_a_fresh_cache(causal_lm_run):
    result, _ = causal_lm_run
    assert result.ok, result.error
    # the prefill, the first decode step (input_ids 4 → 1), the second (the cache's length 4 → 5)
    assert [str(r.compile_id) for r in result.compiles if r.phase == "stream"] == ["0/0", "0/1", "0/2"]
    assert not [r for r in result.compiles if r.phase != "stream"]  # no sample ran on a grown cache
    # logits and the extended cache compared by value: checked, not skipped as nondeterministic
    assert len(result.numerics) == 3 and all(n.passed and n.comparable for n in result.numerics)
    assert all("cache.layers[0].keys" in s.changed_inputs for s in result.steady)
    guarded = {g.source for r in result.compiles for g in r.entry_guards if g.kind == "tensor"}
    assert "L['cache'].layers[1].values" in guarded  # the guards on the tensors inside the cache are recorded
    # the guards of each decode step timed on a fresh cache, as the lookup read it (not grown by the call)
    assert len(result.guard_costs) == 3 and all(c.error is None for c in result.guard_costs), result.guard_costs
    frames = [f for c in result.guard_costs for f in c.frames]
    assert frames and all(f.error is None and f.guards > 0 and any(e.passed for e in f.checks) for f in frames)


def test_a_recorded_decode_loop_forecasts_as_it_ran(causal_lm_run, tmp_path):
    """A generation loop over one growing cache, recorded by watch(record_shapes=…): the
    recording holds the cache's sizes, replays as the workload's requests, and the guards of
    the run above forecast each of the loop's calls as it really went."""
    import compilescope
    from compilescope import zoo
    from compilescope.watch import deliver_pending

    _, results = causal_lm_run
    w = load_workload("causal-lm")
    model = torch.compile(w.build(), backend="eager")
    compiled = []
    with torch.no_grad(), compilescope.watch(record_shapes=tmp_path / "loop.jsonl", action="warn") as watch:
        cache = transformers_cache(w)
        ids = torch.randint(0, zoo.CAUSAL_LM_VOCAB, (1, 4))
        for _ in range(6):
            seen = len(watch.records)
            ids = model(input_ids=ids, cache=cache).logits[:, -1:].argmax(-1)
            deliver_pending()
            compiled.append(any(r.is_compile for r in watch.records[seen:]))
    rows, _ = read_recorded(tmp_path / "loop.jsonl")
    assert [r["shape"].get("cache.layers[0].keys.2") for r in rows] == [None, 4, 5, 6, 7, 8]
    assert rows[0]["scalars"]["cache.layers[0].is_initialized"] is False and rows[0]["other"]["cache"] == "DynamicCache"
    stream = parse_stream(f"@{tmp_path / 'loop.jsonl'}", w.dims, w.recorded_dims)
    assert stream == zoo.decode_stream((4,), (5,))
    forecast = forecast_recorded("causal-lm", stream, results, "default").strategy("default")
    assert forecast.unknown == 0 and not forecast.estimated
    assert [r.outcome == "compile" for r in forecast.requests] == compiled == [True, True, True, False, False, False]
    assert "tensor 'cache.layers[0].keys' size mismatch at index 2. expected 4, actual 5" in [
        g.text for g in forecast.requests[2].guards]


def transformers_cache(w):
    from transformers import DynamicCache

    from compilescope import zoo

    return DynamicCache(config=zoo.causal_lm_config())


@pytest.mark.parametrize("strategy", ("default", "static", "dynamic"))
def test_a_tensor_inside_an_object_argument_drives_recompiles_and_its_recorded_guards_forecast_them(strategy, tmp_path):
    ref = REF + "reads_memory"
    lengths = lambda *ns: tuple({"length": n} for n in ns)  # noqa: E731
    recorded = _trial(ref, strategy, lengths(3, 5), measure=MeasureOptions(steady=False, numerics=False))
    real = _trial(ref, strategy, lengths(3, 3, 7, 5, 9, 7, 1), measure=MeasureOptions(steady=False, numerics=False))
    assert any(g.source == "L['memory'].keys" and g.kind == "tensor" for r in recorded.compiles for g in r.entry_guards)
    path = tmp_path / "run.json"
    path.write_text(dumps(RunResult(workload=ref, stream=recorded.spec.stream, trials=(recorded,))))
    forecast = forecast_recorded(ref, real.spec.stream, path, strategy).strategy(strategy)
    seen = [o.outcome for o in request_outcomes(real.calls, real.compiles)]
    assert [r.outcome for r in forecast.requests] == seen and forecast.unknown == 0
    assert "compile" in seen[2:]  # the memory's length, not x's, made the later compiles


def test_a_recording_names_the_tensors_inside_an_object_argument(tmp_path):
    import compilescope

    w = load_workload(REF + "reads_memory")
    f = torch.compile(w.build(), backend="eager")
    with compilescope.watch(record_shapes=tmp_path / "rec.jsonl", action="warn"):
        for n in (3, 5, 5):
            f(**seeded_inputs(w, {"length": n}))
    rows, _ = read_recorded(tmp_path / "rec.jsonl")
    assert rows[0]["shape"] == {"x.0": 4, "memory.keys.0": 3, "memory.keys.1": 4}
    assert rows[0]["dtypes"]["memory.keys"] == "float32" and rows[0]["scalars"] == {"memory.ready": True}
    assert rows[0]["other"] == {"memory": "Memory"}
    assert parse_stream(f"@{tmp_path / 'rec.jsonl'}", w.dims) == ({"length": 3}, {"length": 5}, {"length": 5})


def test_recorded_guards_on_a_function_whose_own_frame_never_compiled_are_unknown(tmp_path):
    ref = REF + "graph_layers"
    w = load_workload(ref)
    trial = _trial(ref, "default", w.default_stream, measure=MeasureOptions(steady=False, numerics=False))
    assert not [r for r in trial.compiles if r.target is not None and r.outcome == "compiled"]
    path = tmp_path / "run.json"
    path.write_text(dumps(RunResult(workload=ref, stream=w.default_stream, trials=(trial,))))
    forecast = forecast_recorded(ref, w.default_stream, path, "default").strategy("default")
    assert [r.outcome for r in forecast.requests] == ["unknown"] * 3 and forecast.unknown == 3
    assert "own frame (_LayerLoop.forward) never compiled" in forecast.requests[0].why


def test_an_output_a_later_call_writes_in_place_is_copied_before_that_call():
    """The buffer returned is the one the next call adds to: compared as the same object, the
    eager reference and the compiled output were always "equal". Copied, two eager calls differ
    (the running sum grew), so no verdict is given, rather than a pass."""
    result = _trial(REF + "accumulates", "default", ({"n": 4},))
    (check,) = result.numerics
    assert (check.comparable, check.unjudged) == (False, "eager varies"), check


def test_outputs_of_every_kind_are_compared_and_a_numpy_difference_is_found():
    result = _trial(REF + "odd_outputs", "default", ({"n": 4},))
    assert result.ok, result.error
    (check,) = result.numerics
    assert check.comparable and not check.passed and check.detail == "out['array'] exceeds tolerance", check
    same = dict.fromkeys(("scalar", "set", "sparse", "item", "big", "nan"))
    x = torch.randn(4)
    eager = workloads_objects.odd_outputs().build()(x)
    assert compare_outputs({}, {k: eager[k] for k in same}, {k: eager[k] for k in same}).passed  # a complex NaN too
    moved = {"item": eager["item"] * (1 + 1e-6), "big": eager["big"] + 1, "set": {5}}
    assert compare_outputs({}, {"item": eager["item"]}, {"item": moved["item"]}).passed  # float32's tolerance
    big = compare_outputs({}, {"big": eager["big"]}, {"big": moved["big"]})
    assert not big.passed and big.max_abs_err == 1.0  # exact, not through float64
    assert compare_outputs({}, {"set": eager["set"]}, {"set": moved["set"]}).detail == "out['set']: {5} != eager {4}"


def test_steady_samples_that_compiled_or_ran_a_refused_frame_eagerly_are_no_compiled_figure():
    result = _trial(REF + "counts_past_a_break", "default", ({"n": 4}, {"n": 4}),
                    measure=MeasureOptions(warmup=0, samples=6, min_samples=6, budget_s=0.02), recompile_limit=4)
    (state,) = result.steady
    assert state.compiling >= 1 and state.partly_eager >= 1 and state.ran_eagerly is False, state
    report = build_run_report(RunResult(workload="counts", stream=result.spec.stream, trials=(result,)))
    row = report.trials[0].rows[0]
    assert row.steady is None and row.steady_note == "partial eager fallback", row
    # the shape's first request is the first compile; its second request's recompile is not its cause
    assert (row.status, row.cause) == ("compiled", "first compile"), row
    notes = [n.text for t in report.trials for n in t.notes]
    assert any("steady-state samples of shape(s) 4 ran a frame eagerly" in n for n in notes), notes


def test_inputs_made_afresh_that_are_the_same_tensor_are_said_to_carry_the_state():
    result = _trial(REF + "one_global_input", "default", ({"n": 4},))
    (state,) = result.steady
    assert state.changed_inputs == ("x",) and state.stale_inputs, state
    report = build_run_report(RunResult(workload="one", stream=result.spec.stream, trials=(result,)))
    notes = [n.text for t in report.trials for n in t.notes]
    assert any("held the same tensors" in n and "grown by the samples before them" in n for n in notes), notes


def test_outputs_no_comparison_can_read_are_not_comparable_not_nondeterministic():
    nested = torch.nested.nested_tensor([torch.ones(2, 3), torch.ones(4, 3)], layout=torch.jagged)
    for out in ({"n": nested}, {"s": {torch.ones(1)}}):
        check = compare_outputs({}, out, out)
        assert (check.comparable, check.unjudged) == (False, "not comparable"), check


def test_inputs_made_afresh_carry_state_only_where_the_call_changed_them():
    from compilescope.execute.trial import _carries_state

    weight, cache = torch.ones(4), torch.zeros(4)
    old = {"w": weight, "cache": [torch.zeros(4)]}
    fresh = {"w": weight, "cache": [torch.zeros(4)]}  # the same weight, never written; a fresh cache
    assert not _carries_state(old, fresh, ("cache",))
    assert _carries_state({"c": cache[:2]}, {"c": cache[:2]}, ("c",))  # fresh views of one buffer: the same storage
    assert not _carries_state({"m": Memory(cache)}, {"m": Memory(torch.zeros(4))}, ("m.ready",))  # a flag set alike
    shared = [torch.zeros(1)]
    assert _carries_state({"l": shared}, {"l": shared}, ("l",))  # one list, appended to by every call
