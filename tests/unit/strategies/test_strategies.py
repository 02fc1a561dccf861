"""The strategy matrix, in-process with real torch.compile (aot_eager / eager backends)."""

from __future__ import annotations

from pathlib import Path

import pytest

from compilescope import compat
from compilescope.errors import OptionError
from compilescope.execute.scheduler import plan_trials
from compilescope.execute.trial import run_trial
from compilescope.model import MarkSpec, MeasureOptions, StrategyOptions, TrialSpec
from compilescope.options import parse_buckets, parse_cache_modes, parse_strategies
from compilescope.strategies import strategy_names
from compilescope.strategies.bucket import bucket_size

pytestmark = pytest.mark.compat("strategies")

HERE = Path(__file__).resolve().parents[2]  # tests/
STACK = f"{HERE / 'workloads_for_tests.py'}:stack"
FAST = MeasureOptions(warmup=1, samples=3, min_samples=3, budget_s=0.01)


def needs(feature):
    """A test of ``feature``, under its own row of the version matrix: skipped where the
    running torch lacks it (the matrix reports it unavailable there)."""
    skip = pytest.mark.skipif(not compat.has_feature(feature), reason=compat.unavailable(feature))
    return lambda test: pytest.mark.compat(feature)(skip(test))


def trial(strategy, workload="sincos", stream=None, backend="aot_eager", **options):
    stream = stream or tuple({"n": n} for n in (16, 16, 32, 64, 16))
    spec = TrialSpec(workload, strategy, "cold", stream, StrategyOptions(backend=backend, **options), FAST)
    return run_trial(spec)[0]


def stream_compiles(result):
    return [e for e in result.compiles if e.is_compile and e.phase == "stream"]


def test_registry_lists_every_strategy():
    assert strategy_names() == ["eager", "default", "static", "dynamic", "mark-dynamic", "dynamic-sources",
                                "regional", "nested", "bucket", "shapes-spec", "guard-filter[inbuilt-nn]",
                                "guard-filter[all-nn]", "guard-filter[tensors-only]", "guard-filter[no-globals]"]
    assert parse_strategies("all", StrategyOptions(marks=(MarkSpec("x", 0),), dynamic_sources="L['x']")) == tuple(
        strategy_names())


@needs("dynamic_sources")
def test_dynamic_sources_makes_the_named_source_dynamic():
    default = trial("default")
    sourced = trial("dynamic-sources", dynamic_sources="L['x']")
    assert (len(stream_compiles(default)), len(stream_compiles(sourced))) == (2, 1)


@needs("dynamic_sources")
def test_dynamic_sources_named_as_the_reports_name_an_input_work_through_a_wrapper_frame():
    wrapped = f"{HERE / 'workloads_for_tests.py'}:wrapped_kwargs"
    stream = tuple({"seq": n} for n in (4, 8, 16))
    default = trial("default", workload=wrapped, stream=stream, backend="eager")
    cause = next(r for r in stream_compiles(default) if r.is_recompile).guard_failures[0]
    assert cause.source == "L['ids']"  # PyTorch's is L['kwargs']['ids']: the report names the parameter
    sourced = trial("dynamic-sources", workload=wrapped, stream=stream, backend="eager", dynamic_sources="L['ids']:1,L['mask']:1")
    assert (len(stream_compiles(default)), len(stream_compiles(sourced))) == (2, 1)


@needs("shapes_spec")
def test_a_shapes_spec_reaches_the_inputs_of_a_wrapper_frame():
    wrapped = f"{HERE / 'workloads_for_tests.py'}:wrapped_kwargs"
    stream = tuple({"seq": n} for n in (4, 8, 16))
    result = trial("shapes-spec", workload=wrapped, stream=stream, backend="eager",
                   marks=(MarkSpec("ids", 1), MarkSpec("mask", 1)))
    assert result.ok and len(stream_compiles(result)) == 1, [c.reasons for c in stream_compiles(result)]
    assert "**kwargs" in result.notes[0]


@needs("dynamic_sources")
def test_a_dynamic_source_that_matches_no_input_is_said_to_change_nothing():
    from compilescope.analysis.build import build_run_report
    from compilescope.model import RunResult

    stream = tuple({"n": n} for n in (16, 32))

    def notes(sources):  # type: ignore[no-untyped-def]
        result = trial("dynamic-sources", stream=stream, backend="eager", dynamic_sources=sources)
        report = build_run_report(RunResult(workload="sincos", stream=stream, trials=(result,)))
        return [n.text for t in report.trials for n in t.notes]

    (said,) = [n for n in notes("L['x']:0,L['y']") if "matched no input" in n]
    assert said.startswith("dynamic-sources (cold): --dynamic-sources L['y'] matched no input")
    assert "(the inputs' sources: L['x'])" in said
    assert not [n for n in notes("L\\['x.*") if "matched no input" in n]  # a pattern torch matches from the start


@needs("shapes_spec")
def test_a_training_step_gets_a_shapes_spec_on_the_models_inputs_and_no_padding():
    stream = tuple({"batch": n} for n in (8, 12, 16))
    spec = trial("shapes-spec", workload="mlp-train", stream=stream, backend="eager", marks=(MarkSpec("x", 0),))
    assert spec.ok and len(stream_compiles(spec)) == 1, spec.error  # the step's labels are no input of the model
    bucket = trial("bucket", workload="mlp-train", stream=stream, backend="eager")
    assert bucket.status == "unavailable" and "its loss and gradients would count the padding" in bucket.error


@needs("dynamic_sources")
def test_dynamic_sources_setting_is_undone_after_the_trial():
    import torch

    trial("dynamic-sources", dynamic_sources="L['x']")
    assert not torch.compiler.config.dynamic_sources


@needs("shapes_spec")
def test_shapes_spec_from_marks():
    result = trial("shapes-spec", marks=(MarkSpec("x", 0),))
    assert result.ok and len(stream_compiles(result)) == 1
    assert all(n.passed for n in result.numerics)
    assert "ShapeVar" in result.notes[0]


def test_regional_compiles_the_repeated_block_and_keeps_an_eager_reference():
    stream = ({"batch": 2, "seq": 5}, {"batch": 2, "seq": 5}, {"batch": 2, "seq": 9})
    result = trial("regional", workload=STACK, stream=stream, backend="eager")
    compiles = stream_compiles(result)
    assert result.ok and compiles and all(e.function == "forward" for e in compiles)
    assert "3 instances of Block" in result.notes[0]
    assert all(n.passed for n in result.numerics)
    # compiled vs eager was really compared: eager samples come from the untouched copy
    assert all(s.eager_s for s in result.steady)


def test_regional_on_torch_nn_builtin_blocks_really_compiles():
    stream = ({"batch": 1, "seq": 8}, {"batch": 1, "seq": 8})
    result = trial("regional", workload="transformer", stream=stream, backend="eager")
    assert "TransformerEncoderLayer" in result.notes[0]
    assert len(stream_compiles(result)) >= 1  # not the silent no-op of block.compile()


def test_regional_instances_share_their_compiled_code():
    """The 4 layers share one forward: compiled with one backend, the first instance compiles,
    the second makes it generic over instances, the rest reuse it. (Compiled with a backend
    callable each, every instance failed the backend-identity guard: 4+ compiles for one shape,
    and a model with more blocks than the recompile limit ran eagerly.)"""
    stream = ({"batch": 2, "seq": 8}, {"batch": 2, "seq": 8}, {"batch": 2, "seq": 8})
    result = trial("regional", workload="transformer", stream=stream, backend="aot_eager")
    assert result.ok and len(stream_compiles(result)) <= 2
    assert all(c.ran_eagerly is False for c in result.calls)
    assert not any("BACKEND_MATCH" in r for c in result.compiles for r in c.reasons)


@pytest.mark.parametrize("workload, reason", [("sincos", "is a function"), ("mlp", "no repeated block")])
def test_regional_and_nested_unavailable_without_a_repeated_block(workload, reason):
    stream = ({"n": 4},) if workload == "sincos" else ({"batch": 2},)
    for strategy in ("regional", "nested"):
        result = trial(strategy, workload=workload, stream=stream)
        if strategy == "nested" and not compat.has_feature("nested_compile_region"):
            reason = compat.unavailable("nested_compile_region")
        assert result.status == "unavailable" and reason in (result.error or "")


@needs("nested_compile_region")
def test_nested_compile_region_whole_model():
    from compilescope.workload import load_workload

    Block = type(load_workload(STACK).build().blocks[0])  # the class the trial itself loads
    original = Block.forward
    stream = ({"batch": 2, "seq": 5}, {"batch": 2, "seq": 9})
    result = trial("nested", workload=STACK, stream=stream, backend="eager")
    assert result.ok and stream_compiles(result)
    assert "nested_compile_region" in result.notes[0]
    assert all(n.passed for n in result.numerics)
    assert Block.forward is original  # the class is restored when the trial closes


def test_bucket_pads_to_powers_of_two_and_slices_back():
    stream = tuple({"n": n} for n in (5, 7, 8, 9, 16, 3))
    result = trial("bucket", stream=stream)
    assert [c.padded_shape["n"] for c in result.calls] == [8, 8, 8, 16, 16, 4]
    assert len(stream_compiles(result)) == 3  # buckets 8, 16, 4: static graphs, one each
    assert all(n.passed for n in result.numerics)  # elementwise: padding does not leak into outputs


def test_bucket_with_explicit_sizes():
    result = trial("bucket", stream=({"n": 5}, {"n": 30}, {"n": 70}), buckets=(16, 32, 64))
    assert [c.padded_shape["n"] for c in result.calls] == [16, 32, 70]


def test_recompile_limit_fallbacks_are_detected_per_call():
    stream = tuple({"n": n} for n in (2, 3, 4, 5, 2))
    result = trial("static", stream=stream, backend="eager", recompile_limit=2)
    assert [c.ran_eagerly for c in result.calls] == [False, False, True, True, False]
    assert [c.graphs_run for c in result.calls] == [("0/0",), ("0/1",), (), (), ("0/0",)]
    limit_hit = [e for e in result.compiles if e.refused]
    assert len(limit_hit) == 1 and compat.is_recompile_limit_failure(limit_hit[0].fail_type, limit_hit[0].fail_reason)
    assert limit_hit[0].function == "sincos"  # located through its frame's earlier compile
    assert not any(e.failed for e in result.compiles)


def test_option_parsing():
    assert parse_buckets("pow2") == () and parse_buckets("16,32") == (16, 32)
    with pytest.raises(OptionError, match="ascending"):
        parse_buckets("32,16")
    assert [bucket_size(v, ()) for v in (0, 1, 2, 3, 17)] == [1, 1, 2, 4, 32]
    assert parse_cache_modes("all") == ("cold", "warm", "mega")
    assert parse_cache_modes("mega,cold") == ("cold", "mega")
    with pytest.raises(OptionError, match="tepid"):
        parse_cache_modes("tepid")
    with pytest.raises(OptionError, match="needs --dynamic-sources"):
        parse_strategies("dynamic-sources", StrategyOptions())


def test_plan_populates_caches_for_warm_and_mega():
    base = TrialSpec("sincos", "eager", "none", ({"n": 4},))
    plan = plan_trials(base, ("eager", "default"), "warm,mega")
    rows = [(p.spec.strategy, p.spec.cache, p.report, p.save_artifacts, p.after is not None) for p in plan]
    assert rows == [
        ("eager", "none", True, False, False),
        ("default", "cold", False, True, False),  # populates the cache dir and saves artifacts
        ("default", "warm", True, False, True),
        ("default", "mega", True, False, True),
    ]
    assert not plan[1].spec.measure.steady
    assert plan[2].after == plan[3].after == plan[1].spec  # the dependence on the cold trial is explicit
    assert plan[2].cache_key == plan[1].cache_key != plan[3].cache_key


def test_two_variants_of_one_strategy_in_one_plan():
    from compilescope.api import variant

    base = TrialSpec("sincos", "eager", "none", ({"n": 4},))
    a = variant("mark-dynamic", "x:0", StrategyOptions(marks=(MarkSpec("x", 0),)))
    b = variant("mark-dynamic", "x:0:1:64", StrategyOptions(marks=(MarkSpec("x", 0, 1, 64),)))
    plan = plan_trials(base, ("eager", a, b), "cold")
    assert [p.spec.label for p in plan] == ["eager", "mark-dynamic[x:0] (cold)", "mark-dynamic[x:0:1:64] (cold)"]
    assert len({p.spec for p in plan}) == 3 and plan[1].cache_key != plan[2].cache_key
    # the cache directory never carries the variant's spaces or brackets (g++ gets the path unquoted)
    spaced = plan_trials(base, (variant("static", "limit 10", StrategyOptions(recompile_limit=10)),), "cold")
    assert all(ch.isalnum() or ch in "._-" for ch in spaced[0].cache_key)


def test_recompile_limit_falls_back_to_the_config_where_compile_lacks_the_argument(monkeypatch):
    real = compat.compile_accepts
    monkeypatch.setattr(compat, "compile_accepts", lambda arg: False if arg == "recompile_limit" else real(arg))
    before = compat.recompile_limit_value()
    stream = tuple({"n": n} for n in (2, 3, 4, 2))
    result = trial("static", stream=stream, backend="eager", recompile_limit=2)
    assert [c.ran_eagerly for c in result.calls] == [False, False, True, False]
    assert compat.recompile_limit_value() == before  # restored after the trial


def test_bucket_pads_to_multiples_and_with_marks_compiles_once():
    from compilescope.analysis.advise import multiple_buckets

    sizes = (3201, 4000, 5557, 6440, 12000)
    stream = tuple({"samples": n} for n in sizes)
    ref = f"{HERE / 'real_models.py'}:audio_frontend"
    buckets = multiple_buckets(sizes, 8)
    plain = trial("bucket", workload=ref, stream=stream, backend="eager", buckets=buckets)
    assert [c.padded_shape["samples"] for c in plain.calls] == [3208, 4000, 5560, 6440, 12000]
    assert len(stream_compiles(plain)) == len(sizes)  # static: one graph per padded size
    marked = trial("bucket", workload=ref, stream=stream, backend="eager", buckets=buckets,
                   marks=(MarkSpec("waveforms", 1),))
    assert [c.padded_shape["samples"] for c in marked.calls] == [3208, 4000, 5560, 6440, 12000]
    assert len(stream_compiles(marked)) == 1  # the padded dim marked dynamic: one graph for all
    assert all(n.passed for n in marked.numerics)


def test_bucket_pads_only_the_dims_the_stream_varies():
    stream = ({"batch": 2, "seq": 5}, {"batch": 2, "seq": 9}, {"batch": 2, "seq": 12})
    ref = f"{HERE / 'real_models.py'}:masked_encoder"
    result = trial("bucket", workload=ref, stream=stream, backend="eager", buckets=(8, 16))
    assert [c.padded_shape for c in result.calls] == [{"batch": 2, "seq": 8}, {"batch": 2, "seq": 16},
                                                      {"batch": 2, "seq": 16}]


def test_a_source_the_reports_print_is_set_as_the_wrapper_names_it_when_the_target_has_kwargs_of_its_own():
    """BertForSequenceClassification.forward(self, input_ids, …, **kwargs) under a decorator's
    (*args, **kwargs): the reports print L['input_ids'] (the wrapper's L['kwargs']['input_ids']
    renamed); given back, it was set unchanged — the target's own **kwargs stopped the alias —
    and matched nothing, so every batch size recompiled."""
    from compilescope.strategies import through_wrapper

    params = ("input_ids", "attention_mask", "labels", "kwargs")
    assert through_wrapper("L['input_ids']:0", params).split(",") == [
        "L['input_ids']:0", "L['kwargs']['input_ids']:0", "L['args'][0]:0"]
    # a parameter after the target's own *args is never reached by position
    assert through_wrapper("L['flag']", ("x", "args", "flag")).split(",") == ["L['flag']", "L['kwargs']['flag']"]


def test_bucket_says_it_cannot_pad_a_size_inside_an_object_argument():
    """The size that varies lives in a dataclass the call passes: bucket finds no argument
    tensor to pad, and says so before a call (before: every request "raised" KeyError: 'seq')."""
    import dataclasses

    import torch

    from compilescope.errors import OptionError
    from compilescope.model import StrategyOptions
    from compilescope.strategies import PrepareContext
    from compilescope.strategies.bucket import prepare_bucket

    @dataclasses.dataclass
    class Batch:
        feats: torch.Tensor

    def make_inputs(s):
        return (Batch(torch.ones(2, s["seq"])),), {}

    ctx = PrepareContext(make_inputs, ({"seq": 5}, {"seq": 9}))
    with pytest.raises(OptionError, match=r"'seq' changes none of them \(a tensor inside an object"):
        prepare_bucket(lambda b: b.feats.sum(-1), StrategyOptions(backend="eager", buckets=(16,)), ctx)
