"""PyTorch's guard filters as strategies: each trial records what its filter dropped, changes
it and says whether the compiled call went stale; advise judges a stale one unsafe, naming the
change. Real torch.compile, backend eager, in this process."""

from __future__ import annotations

import re

import pytest
import torch

from compilescope.analysis.advise import compile_call, judge
from compilescope.analysis.advise_guards import guard_proposals
from compilescope.analysis.build import build_run_report
from compilescope.collect.soundness import changes, soundness_checks
from compilescope import compat
from compilescope.execute.trial import run_trial
from compilescope.model import MeasureOptions, RunResult, StrategyOptions, TrialSpec
from compilescope.render.console import advice_renderables, to_text
from compilescope.strategies import GUARD_FILTERS, get_strategy, strategy_names
from compilescope.zoo import layers_workload

FAST = MeasureOptions(warmup=1, samples=4, min_samples=3, budget_s=0.05)
STREAM = tuple({"batch": b} for b in (2, 3, 2, 2))
OPTIONS = StrategyOptions(backend="eager")


def _trial(strategy: str):  # type: ignore[no-untyped-def]
    return run_trial(TrialSpec("layers:4", strategy, "cold", STREAM, OPTIONS, FAST))[0]


@pytest.fixture(scope="module")
def trials():  # type: ignore[no-untyped-def]
    return {name: _trial(name) for name in ("eager", "default", "guard-filter[all-nn]", "guard-filter[inbuilt-nn]",
                                            "guard-filter[no-globals]")}


def test_every_filter_is_a_registered_strategy():
    for key, (fn, _, _) in GUARD_FILTERS.items():
        name = f"guard-filter[{key}]"
        assert name in strategy_names() and get_strategy(name).compiles and hasattr(torch.compiler, fn)


def test_a_stale_filter_is_caught_by_changing_what_it_stopped_guarding(trials):
    t = trials["guard-filter[all-nn]"]
    assert t.ok and t.dropped_guards["CONSTANT_MATCH"] > 0  # the layers' scale and residual attributes
    stale = [c for c in t.soundness if c.stale]
    assert stale and stale[0].kind == "module_attribute" and stale[0].eager_changed
    assert stale[0].mutation.startswith("model.layers[") and stale[0].max_abs_err > 0
    # every change was undone: the numerics before it passed, and the model is as built
    assert all(n.passed for n in t.numerics)
    assert layers_workload(4).build().layers[0].scale == 0.5


def test_a_global_the_code_reads_goes_stale_without_its_guard(trials):
    (check,) = trials["guard-filter[no-globals]"].soundness
    assert check.kind == "global" and check.mutation.startswith("LAYERS_CLAMP = ") and check.stale


def test_the_default_follows_the_same_change():
    model = layers_workload(2).build()
    x = torch.randn(2, 16)
    dropped: list[compat.DroppedGuard] = []
    filtered = torch.compile(model, backend="eager", options={
        "guard_filter_fn": compat.recording_guard_filter(torch.compiler.skip_guard_on_all_nn_modules_unsafe, dropped)})
    with torch.no_grad():
        filtered(x)
        _, frames = compat.compiled_frame_calls(lambda: filtered(x))
        kinds = changes(dropped, frames[0])
        assert "module_attribute" in kinds
        stale = soundness_checks(dropped, {"batch": 2}, lambda: filtered(x), lambda: model(x))
        assert any(c.stale for c in stale)
        # the same change on an unfiltered model (the filtered entries gone: they would accept any
        # Layers as self): Dynamo's guard sees the change and compiles again — seen even when the
        # process has made more compiles than PyTorch's metrics keep by default (64)
        for _ in range(65):
            torch.compiler.reset()
            torch.compile(torch.relu, backend="eager")(x)
        torch.compiler.reset()
        plain_model = layers_workload(2).build()
        plain = torch.compile(plain_model, backend="eager")
        plain(x)
        sound = soundness_checks(dropped, {"batch": 2}, lambda: plain(x), lambda: plain_model(x))
        assert all(c.stale is False for c in sound if c.eager_changed) and any(c.recompiled for c in sound)


def test_advise_rejects_the_stale_filter_as_unsafe_naming_the_change(trials):
    result = RunResult(workload="layers:4", stream=STREAM, trials=tuple(trials.values()))
    report = build_run_report(result)
    default = next(t for t in report.trials if t.strategy == "default")
    proposals = guard_proposals(default, OPTIONS, compile_call(OPTIONS), always=True)
    assert [p.strategy for p in proposals] == [f"guard-filter[{k}]" for k in GUARD_FILTERS]
    advice = judge(report, proposals, "total", 100_000, [], 8, result=result)
    rows = {r.label: r for r in advice.rows}
    unsafe = rows["guard-filter[all-nn] (cold)"]
    assert unsafe.verdict == "rejected" and unsafe.why.startswith("unsafe: after `model.layers[")
    assert "no nn.Module is changed after the first call" in unsafe.why
    assert rows["guard-filter[no-globals] (cold)"].verdict == "rejected"
    inbuilt = rows["guard-filter[inbuilt-nn] (cold)"]  # 4 samples a shape (or a busy machine): not judged
    assert inbuilt.verdict == "rejected" and ("not lower beyond" in inbuilt.why or inbuilt.why.startswith(
        "could not tell whether the whole compiled call got slower: "))
    text = " ".join(to_text(advice_renderables(advice), 300).split())
    assert "unsafe: after `model.layers[" in text
    snippet = next(p for p in proposals if p.strategy == "guard-filter[all-nn]").snippet
    assert "options={'guard_filter_fn': torch.compiler.skip_guard_on_all_nn_modules_unsafe}" in snippet.setup
    assert snippet.note.startswith("unsafe: it assumes no nn.Module is changed")


@pytest.mark.parametrize("key", sorted(GUARD_FILTERS))
def test_each_filter_snippet_runs_as_printed_and_compiles_as_its_trial_did(key, trials):
    from compilescope import watch
    from compilescope.model import call_arguments
    from compilescope.workload import seeded_inputs

    snippet = next(p for p in guard_proposals(None, OPTIONS, compile_call(OPTIONS), always=True)
                   if p.strategy == f"guard-filter[{key}]").snippet
    loaded = layers_workload(4)
    torch.compiler.reset()
    ns = {"torch": torch, "model": loaded.build()}
    with torch.no_grad(), watch() as w:
        exec(snippet.setup, ns)  # noqa: S102 — the text runs as printed
        for shape in STREAM:
            args, _ = call_arguments(seeded_inputs(loaded, shape))
            ns["compiled"](*args)
    torch.compiler.reset()
    trial = trials.get(f"guard-filter[{key}]") or _trial(f"guard-filter[{key}]")
    assert w.compiles == len([r for r in trial.compiles if r.phase == "stream" and r.is_compile])


def test_compare_pairs_a_strategy_change_and_sets_the_guard_cost_side_by_side(trials, tmp_path, main):
    """Run A with ``default``, run B with ``guard-filter[inbuilt-nn]``: labels never pair, so
    the one compiled strategy of each run pairs (said so), or ``--pair`` names them; per shape
    the guards (exact, the kinds the filter dropped), the entries tried and the lookup, the
    lookup claimed only beyond the noise (four rounds can never tell A from B at 1%)."""
    from compilescope.analysis.compare import compare_runs
    from compilescope.errors import OptionError
    from compilescope.schema import dumps

    def run(*names):  # type: ignore[no-untyped-def]
        return RunResult(workload="layers:4", stream=STREAM, trials=tuple(trials[n] for n in names))

    eager = trials["eager"].spec.label
    a, b = run("eager", "default"), run("eager", "guard-filter[inbuilt-nn]")
    report = compare_runs(a, b)
    assert [(p.a, p.b) for p in report.pairs] == [("default (cold)", "guard-filter[inbuilt-nn] (cold)"),
                                                  (eager, eager)]
    assert report.pairing.startswith("default with guard-filter[inbuilt-nn]: each run has one compiled strategy")
    assert not report.only_in_a and not report.only_in_b
    pair = "default (cold) → guard-filter[inbuilt-nn] (cold)"
    rows = {(c.shape, c.figure): c for c in report.changes if c.trial == pair}
    shapes = sorted({str(s["batch"]) for s in STREAM})
    dropped = {k: n for k, n in trials["guard-filter[inbuilt-nn]"].dropped_guards.items()}
    assert dropped
    for shape in shapes:
        guards = rows[(shape, "guards")]
        assert guards.b < guards.a and guards.flag == "improvement"  # exact counts: fewer is better
        fewer = re.findall(r"−[\d,]+ (\w+)", guards.why)
        # torch.nn.Linear's parameters no longer guarded; nothing guarded more
        assert "TENSOR_MATCH" in fewer and "TENSOR_MATCH" in dropped and "+" not in guards.why
        tried = rows.get((shape, "entries tried"))  # none for 3: its one request compiled
        assert tried is not None if shape == "2" else tried is None
        assert tried is None or (tried.a == tried.b and not tried.flag)  # the filter kept every compile
        lookup = rows[(shape, "guard lookup")]
        assert lookup.a is not None and lookup.b is not None and lookup.a_text and lookup.b_text
        assert not lookup.flag, lookup  # 4 against 4 rounds: the smallest possible p is 2/70, never 1%
    # PyTorch's own count is made before the filter drops guards: said so
    assert "made before guard-filter[inbuilt-nn] dropped guards" in rows[("", "PyTorch's guards per entry")].why
    # an explicit pairing, where each run holds more than one compiled strategy
    both = run("eager", "default", "guard-filter[all-nn]")
    plain = compare_runs(both, b)
    assert [(p.a, p.b) for p in plain.pairs] == [(eager, eager)]
    assert plain.only_in_b == ("guard-filter[inbuilt-nn] (cold)",) and plain.pairing == "trials paired by label"
    asked = compare_runs(both, b, pairs=[("default", "guard-filter[inbuilt-nn] (cold)")])
    assert [p.name for p in asked.pairs] == [pair, eager] and asked.only_in_a == ("guard-filter[all-nn] (cold)",)
    assert asked.pairing.startswith("default with guard-filter[inbuilt-nn] (cold): as --pair asked")
    with pytest.raises(OptionError, match=r"--pair: B has no trial .static. \(its trials: eager.*, guard-filter\[inbuilt-nn\] \(cold\)\)"):
        compare_runs(both, b, pairs=[("default", "static")])
    # the command says how it paired, and prints the figures
    (tmp_path / "a.json").write_text(dumps(both))
    (tmp_path / "b.json").write_text(dumps(b))
    code, out, err = main("compare", "a.json", "b.json", "--pair", "default=guard-filter[inbuilt-nn]")
    assert code == 0, out + err
    flat = " ".join(out.split())
    assert "pairs: default with guard-filter[inbuilt-nn]: as --pair asked; the other trials by label" in flat
    assert "entries tried" in flat and "guard lookup" in flat and "TENSOR_MATCH" in flat
    for bad, says in (("default", "expected A_NAME=B_NAME"), ("default=static", "B has no trial 'static'")):
        code, out, err = main("compare", "a.json", "b.json", "--pair", bad)
        assert code == 2 and out == "" and says in err and err.strip().count("\n") == 0, err


def _as_filtered(default, trial, slower, guard_factor=0.3, n=20):  # type: ignore[no-untyped-def]
    """The filter's ``trial`` given the default's figures, drawn ``n`` times a shape about its
    recorded samples: its compiled call ``slower`` times the default's against the eager call
    interleaved with it, its guard checks ``guard_factor`` times the default's; both on a quiet
    machine. The guard checks then drop exactly; what the whole call did is the question."""
    import dataclasses
    import random

    rng = random.Random(11)

    def drawn(values, factor=1.0):  # type: ignore[no-untyped-def]
        return tuple(values[i % len(values)] * factor * rng.uniform(0.99, 1.01) for i in range(n))

    def checks(c):  # type: ignore[no-untyped-def]
        return dataclasses.replace(c, samples_s=tuple(x * guard_factor for x in c.samples_s))

    steady = tuple(dataclasses.replace(s, compiled_s=drawn(s.compiled_s, slower), eager_s=drawn(s.eager_s))
                   for s in default.steady)
    costs = tuple(dataclasses.replace(g, frames=tuple(dataclasses.replace(f, checks=tuple(map(checks, f.checks)))
                                                      for f in g.frames)) for g in default.guard_costs)
    quiet = dataclasses.replace(default.env, load=(0.5,), cpus=2)
    return dataclasses.replace(trial, steady=steady, guard_costs=costs, compiles=default.compiles, calls=default.calls,
                               env=quiet)


@pytest.mark.parametrize("slower, verdict", [(1.0, "accepted"), (3.0, "rejected")])
def test_a_filter_is_accepted_only_when_its_whole_call_is_not_slower_beyond_the_noise(trials, slower, verdict):
    """The guard checks dropped (×0.3), yet a filter whose whole compiled call got slower
    against the eager call interleaved with it is rejected with the figures; the same call
    with the same samples is accepted, saying what the test showed."""
    import dataclasses

    default = trials["default"]
    base = _as_filtered(default, default, 1.0, guard_factor=1.0)
    filtered = _as_filtered(default, trials["guard-filter[inbuilt-nn]"], slower)
    assert not [c for c in filtered.soundness if c.stale]
    result = RunResult(workload="layers:4", stream=STREAM, trials=(trials["eager"], base, filtered))
    report = build_run_report(result)
    proposals = [p for p in guard_proposals(None, OPTIONS, compile_call(OPTIONS), always=True)
                 if p.strategy == "guard-filter[inbuilt-nn]"]
    row = next(r for r in judge(report, proposals, "total", 100_000, [], 8, result=result).rows
               if r.label == "guard-filter[inbuilt-nn] (cold)")
    assert row.verdict == verdict, row.why
    if slower > 1:
        assert row.why.startswith("the whole compiled call got slower beyond the noise: shape ")
        assert "Mann–Whitney p=" in row.why and "compiled call p50" in row.why
    else:
        assert "guard checks" in row.why and "the whole call not slower beyond the noise" in row.why
    # the same figures from a busy machine: not told, never accepted
    busy = dataclasses.replace(filtered, env=dataclasses.replace(filtered.env, load=(7.5,)))
    result = dataclasses.replace(result, trials=(trials["eager"], base, busy))
    row = next(r for r in judge(build_run_report(result), proposals, "total", 100_000, [], 8, result=result).rows
               if r.label == "guard-filter[inbuilt-nn] (cold)")
    assert row.verdict == "rejected" and row.why.startswith(
        "could not tell whether the whole compiled call got slower: the machine was busy (its load 7.5 on 2 CPU(s))")
    # 4 samples a shape can never reach 1% over two shapes: not told either
    few = (_as_filtered(default, default, 1.0, guard_factor=1.0, n=4),
           _as_filtered(default, trials["guard-filter[inbuilt-nn]"], slower, n=4))
    result = dataclasses.replace(result, trials=(trials["eager"], *few))
    row = next(r for r in judge(build_run_report(result), proposals, "total", 100_000, [], 8, result=result).rows
               if r.label == "guard-filter[inbuilt-nn] (cold)")
    assert row.verdict == "rejected" and row.why.startswith("could not tell whether the whole compiled call got "
                                                            "slower: 4 against 4 samples a shape cannot reach 1%")


def test_beside_a_mode_no_filter_is_proposed_and_the_advice_says_why(trials):
    """torch.compile takes mode= or options=, not both: beside --mode a guard filter's snippet
    could not run as printed, so none is proposed — and the advice says so in one line."""
    import dataclasses

    from compilescope.analysis.advise_record import advice_summary

    moded = dataclasses.replace(OPTIONS, mode="max-autotune-no-cudagraphs")
    assert guard_proposals(None, moded, compile_call(moded), always=True) == []
    default = trials["default"]
    ran = dataclasses.replace(default, spec=dataclasses.replace(default.spec, options=moded))
    result = RunResult(workload="layers:4", stream=STREAM, trials=(trials["eager"], ran))
    advice = judge(build_run_report(result), [], "total", 100_000, [], 8, result=result)
    (note,) = advice.notes
    assert note.startswith("guard filters: none proposed beside --mode max-autotune-no-cudagraphs — torch.compile "
                           "takes mode= or options=, not both")
    lines = [line for line in to_text(advice_renderables(advice), 400).splitlines() if "guard filters:" in line]
    assert lines == [note] and advice_summary(advice)["notes"] == [note]
    plain = RunResult(workload="layers:4", stream=STREAM, trials=(trials["eager"], default))
    assert judge(build_run_report(plain), [], "total", 100_000, [], 8, result=plain).notes == ()


def _guard_checks(trial, factor, n):  # type: ignore[no-untyped-def]
    """``trial`` with each guard check ``factor`` times its recorded median, ``n`` rounds drawn
    within 1% of it (tight: any difference is beyond the half-IQR noise), on a quiet machine."""
    import dataclasses
    import random
    import statistics

    rng = random.Random(5)

    def checks(c):  # type: ignore[no-untyped-def]
        s = c.samples_s
        return dataclasses.replace(c, samples_s=tuple(statistics.median(s) * factor * rng.uniform(0.99, 1.01)
                                                      for _ in range(n)) if s else s)

    costs = tuple(dataclasses.replace(g, frames=tuple(dataclasses.replace(f, checks=tuple(map(checks, f.checks)))
                                                      for f in g.frames)) for g in trial.guard_costs)
    return dataclasses.replace(trial, guard_costs=costs, env=dataclasses.replace(trial.env, load=(0.5,), cpus=2))


@pytest.mark.parametrize("rounds, flagged", [(4, False), (20, True)])
def test_the_stream_order_lookup_is_claimed_only_with_the_per_shape_test(trials, rounds, flagged):
    """Every guard check three times slower, the same entries tried: with 4 rounds a shape no
    shape's lookup can be told apart at 1%, so the stream's mean lookup (derived from the same
    samples) is shown, not claimed; with 20 rounds the shapes' test tells, and it is claimed."""
    from compilescope.analysis.compare import compare_runs

    eager, default = trials["eager"], trials["default"]
    a = RunResult(workload="layers:4", stream=STREAM, trials=(eager, _guard_checks(default, 1.0, rounds)))
    b = RunResult(workload="layers:4", stream=STREAM, trials=(eager, _guard_checks(default, 3.0, rounds)))
    changes = {(c.shape, c.figure): c for c in compare_runs(a, b).changes if c.trial == default.spec.label}
    stream = changes[("", "guard lookup, stream order")]
    assert stream.b > 2 * stream.a and not changes[("2", "entries tried")].flag
    assert bool(changes[("2", "guard lookup")].flag) is flagged
    assert stream.flag == ("regression" if flagged else ""), stream
    if not flagged:
        assert "not told apart" in stream.why


def test_a_nan_on_one_side_is_said_not_measured_as_no_difference():
    """max() drops NaN: an output that became NaN on one side only measured "max abs err 0".
    It is said as the NaN it is, with no number."""
    from compilescope.collect.soundness import _difference

    a, b = torch.tensor([1.0, float("nan"), 3.0]), torch.tensor([1.0, 2.0, 3.5])
    assert _difference(a, b) == (False, None, "NaN in 1 element(s) on one side only")
    assert _difference(a, a.clone()) == (True, 0.0, None)  # NaN on both sides is the same output
    assert _difference(b, b + 0.25) == (False, 0.25, None)
