"""The dry-run forecast against real trials: the same per-request hit/compile/eager
sequence and the same guard texts, on built-ins under default/static/dynamic.

The real side is :func:`run_trial` on the CPU with real tensors and a real backend — what a
``run`` worker process executes for each trial — with an empty cache directory, as a cold
trial has; one case goes through ``compilescope.run`` itself (a fresh process per trial)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

from compilescope import compat
from compilescope.forecast import forecast, request_outcomes
from compilescope.forecast.engine import EMPTY_NOTE, EVERY_NOTE, INPUTS_NOTE, STATE_NOTE
from compilescope.model import MeasureOptions, StrategyOptions, TrialSpec
from compilescope.stream import parse_stream
from compilescope.workload import load_workload

pytestmark = pytest.mark.compat("forecast")

STRATEGIES = ("default", "static", "dynamic")
# (workload, backend, stream spec or None for the workload's default stream, forecast's fake:
# None lets the forecast pick the cheaper way, True keeps it on fake tensors)
CASES = (
    ("sincos", "aot_eager", "random:count=60;seed=3;n=8|16|24|32|40|48|56|64|72|80|1", None),
    ("transformer", "eager", None, True),
    ("convnet", "eager", None, True),  # static passes the recompile limit: later new sizes run eagerly
)


def _real(workload: str, strategy: str, stream, backend: str, tmp_path, monkeypatch):
    from compilescope.execute.trial import run_trial

    cache = tmp_path / f"cache-{workload.rsplit(':', 1)[-1]}-{strategy}-{backend}"
    cache.mkdir()
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(cache))
    spec = TrialSpec(workload, strategy, "cold", tuple(stream), StrategyOptions(backend=backend),
                     MeasureOptions(steady=False, numerics=False))
    result, _ = run_trial(spec)
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR")
    return result


def _compare(case, tmp_path, monkeypatch):
    workload, backend, spec, fake = case
    w = load_workload(workload)
    stream = parse_stream(spec, w.dims) if spec else w.default_stream
    report = forecast(workload, stream, STRATEGIES, backend=backend, fake=fake)
    misses, total = [], 0
    for s in report.strategies:
        real = _real(workload, s.strategy, stream, backend, tmp_path, monkeypatch)
        observed = request_outcomes(real.calls, real.compiles)
        assert len(observed) == len(s.requests) == len(stream)
        for predicted, seen in zip(s.requests, observed):
            total += 1
            if predicted.outcome != seen.outcome:
                misses.append(f"{workload}/{s.strategy} request {predicted.index} ({predicted.shape_label}): "
                              f"forecast {predicted.outcome} ({predicted.basis}), real {seen.outcome}")
            elif predicted.outcome == "compile":
                texts = sorted(g.text for g in predicted.guards)
                if texts != sorted(g.text for g in seen.guards):
                    misses.append(f"{workload}/{s.strategy} request {predicted.index}: guards {texts} vs "
                                  f"{sorted(g.text for g in seen.guards)}")
    return report, misses, total


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_dry_run_agrees_with_real_trials(case, tmp_path, monkeypatch):
    report, misses, total = _compare(case, tmp_path, monkeypatch)
    assert total == len(STRATEGIES) * report.stream_length
    agreement = 1 - len(misses) / total
    assert agreement >= 0.99, f"agreement {agreement:.3f}; misses:\n" + "\n".join(misses)
    outcomes = {r.outcome for s in report.strategies for r in s.requests}
    assert "compile" in outcomes and "hit" in outcomes
    if case[0] in ("sincos", "convnet"):  # the cases built to pass the recompile limit under static
        static = report.strategy("static")
        assert static.eager > 0 and static.compiles == static.recompile_limit
        refused = next(r for r in static.requests if r.outcome == "eager")  # the limit's first refusal: its guards
        assert len({g.entry for g in refused.guards}) == static.recompile_limit  # every entry it failed
        assert all("size mismatch" in g.text for g in refused.guards)


@pytest.mark.inductor
@pytest.mark.compat("forecast, inductor dry run")
def test_the_inductor_dry_run_sees_the_guards_inductor_adds_while_lowering(tmp_path, monkeypatch):
    """ceil-mode pooling: inductor guards a dynamic size's parity while it lowers, so an even
    size after an odd one compiles again; the inductor dry run predicts it. A trace with
    aot_eager predicts what aot_eager does (on 2.13 it hits there; 2.6 and 2.10 guard the parity
    while tracing too) and says what it cannot model."""
    workload = f"{Path(__file__).resolve().parents[2] / 'workloads_forecast.py'}:ceil_pool"
    stream = load_workload(workload).default_stream
    exact = forecast(workload, stream, "default", backend="inductor")
    fast = forecast(workload, stream, "default", backend="inductor", dry_backend="aot_eager")
    real = _real(workload, "default", stream, "inductor", tmp_path, monkeypatch)
    seen = [o.outcome for o in request_outcomes(real.calls, real.compiles)]
    assert seen == ["compile", "compile", "compile", "hit", "hit", "hit", "hit"], real.calls[0].error
    assert [r.outcome for r in exact.strategies[0].requests] == seen
    assert exact.dry_backend == "inductor-lowering" and "its guards modelled" in " ".join(exact.notes)
    assert not any("could not lower" in n for n in exact.strategies[0].notes), exact.strategies[0].notes
    parity = [g.text for g in exact.strategies[0].requests[2].guards]
    # the parity relation the even size fails: (x.size()[2] - 1) // 2 … on 2.13, ((-1) + x.size()[2]) % 2 on 2.10
    assert any("//" in text or "% 2" in text for text in parity), parity
    aot = _real(workload, "default", stream, "aot_eager", tmp_path, monkeypatch)
    assert [r.outcome for r in fast.strategies[0].requests] == [
        o.outcome for o in request_outcomes(aot.calls, aot.compiles)]
    assert "not modelled" in " ".join(fast.notes)


@pytest.mark.compat("forecast, inductor dry run")
def test_a_graph_inductor_cannot_lower_dry_is_traced_as_aot_eager_and_said(monkeypatch):
    from torch._inductor.async_compile import AsyncCompile
    from torch._inductor.graph import GraphLowering

    built = AsyncCompile.cpp, AsyncCompile.cpp_pybinding
    workload = f"{Path(__file__).resolve().parents[2] / 'workloads_forecast.py'}:ceil_pool"
    traced = forecast(workload, "8,9,10", "default", backend="inductor", dry_backend="aot_eager")

    def fails(self, *args):
        raise RuntimeError("no lowering here")

    monkeypatch.setattr(GraphLowering, "run", fails)
    report = forecast(workload, "8,9,10", "default", backend="inductor")
    assert [r.outcome for r in report.strategies[0].requests] == [r.outcome for r in traced.strategies[0].requests]
    assert [r.outcome for r in report.strategies[0].requests][:2] == ["compile", "compile"]
    # the first graph has no symbolic size: no backend can add a guard to it, and it is not lowered
    symbolic = report.strategies[0].compiles - 1  # every compile after the first (static) one
    assert any(f"inductor could not lower {symbolic} graph(s)" in n and "no lowering here" in n
               for n in report.strategies[0].notes), report.strategies[0].notes
    assert (AsyncCompile.cpp, AsyncCompile.cpp_pybinding) == built  # nothing of the dry run left patched


def test_a_torch_whose_cached_graphs_fail_under_a_fake_mode_is_forecast_computing_for_real(monkeypatch):
    """torch 2.6's tensor guard fails every cached graph while a fake mode is active: there the
    dry run computes every call (said), or, told not to compute, leaves every request unknown."""
    has = compat.has_feature
    lacks = "dry_run_on_fake_tensors"
    if has(lacks):  # a torch that has it is made to take the path of one that does not
        monkeypatch.setattr(compat, "has_feature", lambda name: name != lacks and has(name))
    computed = forecast("sincos", "8,16,32,64,16", "default", backend="eager").strategy("default")
    assert [r.outcome for r in computed.requests] == ["compile", "compile", "hit", "hit", "hit"]
    assert computed.computed and any("has no dry run on fake tensors" in n for n in computed.notes), computed.notes
    stopped = forecast("sincos", "8,16,32", "default", backend="eager", compute=False).strategy("default")
    assert [r.outcome for r in stopped.requests] == ["unknown"] * 3
    assert any("has no dry run on fake tensors" in n for n in stopped.notes), stopped.notes


def test_the_dynamic_sources_strategy_is_forecast_with_its_option(tmp_path, monkeypatch, main):
    """Before, ``forecast --strategies dynamic-sources`` asked for ``--dynamic-sources``, an
    option ``forecast`` did not have."""
    from compilescope.execute.trial import run_trial

    stream = ({"n": 8}, {"n": 16}, {"n": 8}, {"n": 32})
    predicted = forecast("sincos", stream, "dynamic-sources", backend="eager",
                         dynamic_sources="L['x']:0").strategy("dynamic-sources")
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "cache"))
    real, _ = run_trial(TrialSpec("sincos", "dynamic-sources", "cold", stream,
                                  StrategyOptions(backend="eager", dynamic_sources="L['x']:0"),
                                  MeasureOptions(steady=False, numerics=False)))
    assert [r.outcome for r in predicted.requests] == [o.outcome for o in request_outcomes(real.calls, real.compiles)]
    assert [r.outcome for r in predicted.requests] == ["compile", "hit", "hit", "hit"]  # x's dim 0 dynamic from the start
    code, out, err = main("forecast", "sincos", "--stream", "8,16", "--backend", "eager", "--strategies",
                          "dynamic-sources", "--dynamic-sources", "L['x']:0")
    assert code == 0 and "dynamic-sources: 1 compile, 1 hit" in out, err


def test_repeats_are_predicted_without_tracing_again():
    stream = [{"n": n} for n in (8, 16, 8, 16, 32) * 200]
    report = forecast("sincos", stream, "static", backend="eager")
    s = report.strategy("static")
    assert s.traced == 3 and len(s.requests) == 1000
    assert [r.outcome for r in s.requests[:5]] == ["compile", "compile", "hit", "hit", "compile"]
    assert s.compiles == 3 and s.hits == 997 and s.stalls == (0, 1, 4)
    # called: each new shape; a shape again after an entry was made since it ran (8 and 16 after 16
    # and 32 compiled); each shape once more the first time it would repeat (7 and 9, a check);
    # every other request repeats its shape's last call
    assert [r.index for r in s.requests if r.basis == "traced"] == [0, 1, 2, 3, 4, 5, 6, 7, 9]


@pytest.mark.parametrize("name", ["counts_calls", "grows_a_cache"])
def test_calls_that_carry_state_are_called_in_stream_order_never_a_wrong_hit(name, tmp_path, monkeypatch):
    """A call count the guards read, a cache the module grows: a repeated shape compiles again
    in the real run, so a repeat does not repeat its first outcome (before: a confident hit).
    The dry run calls the stream in order, and calls a repeat again while entries are made
    since its shape last ran, or the first time it would repeat: here every request is called,
    and each outcome is the real trial's; a request it did not call, after calls that changed
    the state, would be unknown."""
    ref = f"{FORECAST_WORKLOADS}:{name}"
    stream = load_workload(ref).default_stream
    report = forecast(ref, stream, STRATEGIES, backend="eager")
    for s in report.strategies:
        real = _real(ref, s.strategy, stream, "eager", tmp_path, monkeypatch)
        seen = request_outcomes(real.calls, real.compiles)
        for predicted, o in zip(s.requests, seen):
            assert predicted.outcome in (o.outcome, "unknown"), (s.strategy, predicted, o)
            if predicted.outcome == "unknown":
                assert predicted.basis == "repeat" and predicted.why.startswith(STATE_NOTE), predicted
    static = report.strategy("static").requests
    assert [r.outcome for r in static[:3]] == ["compile"] * 3  # a repeat recompiles on the state, as it runs
    if name == "counts_calls":  # under default the count goes dynamic and the third call hits
        assert [r.outcome for r in report.strategy("default").requests] == ["compile", "compile", "hit"]


@pytest.mark.parametrize("name", ["evaluates_every_third", "sets_a_global_in_make_inputs", "keeps_a_class_table",
                                  "keeps_a_table_elsewhere", "turns_on_deterministic_algorithms",
                                  "keeps_a_schedule_object", "counts_in_a_module_functions_closure",
                                  "a_bound_method_that_counts", "a_partial_of_a_bound_method",
                                  "turns_grad_off_every_third_input", "lazy_linear", "keeps_a_schedule_module",
                                  "counts_in_a_hook", "counts_in_a_default", "inputs_count_in_a_closure"])
def test_state_changed_outside_the_compiled_call_never_gives_a_wrong_outcome(name, tmp_path, monkeypatch):
    """Before, each was a confident outcome the real run contradicted: a step that evaluates
    under no_grad every third call (its copied repeats skipped the step), ``make_inputs``
    setting a global the forward reads (changed between calls, never during one), and a table
    kept on the module's class or in a helper module the workload's imports (not put back
    between dry runs, not read around calls); deterministic algorithms turned on, or grad mode
    turned off by an ``itertools.count``, in ``make_inputs`` (torch's settings, and the count,
    left as the probe and the last strategy's dry run made them); a count kept by an object of
    the user's class, by a module-level function's closure, by the object a compiled method is
    bound to, behind a ``functools.partial``, by a module-level module, a hook's closure, a
    mutable default, ``make_inputs``' own closure (none of them read around calls); a lazy
    module (reading its parameter's sizes raised: every request an error). Now a workload with a step
    has every request called; all of that state is put back before each strategy's dry run
    and read around calls, and where a call (or a ``make_inputs`` between two) changed it, the
    stream is run again with every request called: each outcome known, and the real run's."""
    ref = f"{FORECAST_WORKLOADS}:{name}"
    loaded = load_workload(ref)
    stream, home = loaded.default_stream, sys.modules[loaded.build.__module__]
    report = forecast(ref, stream, STRATEGIES, backend="eager")
    assert not torch.are_deterministic_algorithms_enabled()  # the forecast put torch's settings back
    try:
        for s in report.strategies:
            home.fresh_state()  # each real trial here runs in this process: its state as a fresh process has it
            real = _real(ref, s.strategy, stream, "eager", tmp_path, monkeypatch)
            seen = request_outcomes(real.calls, real.compiles)
            assert len(seen) == len(s.requests)
            for predicted, o in zip(s.requests, seen):
                assert predicted.outcome in (o.outcome, "unknown"), (s.strategy, predicted, o)
    finally:
        home.fresh_state()
    default = report.strategy("default")
    assert "unknown" not in {r.outcome for r in default.requests}, default.requests
    if name not in ("keeps_a_class_table", "keeps_a_table_elsewhere", "lazy_linear"):
        # a call (or a make_inputs) changed what the next one meets: every request called, in order
        assert all(r.basis == "traced" for r in default.requests), default.requests
    if name == "evaluates_every_third":
        assert default.requests[2].outcome == "compile"  # the first evaluation: grad mode changed
    elif name == "sets_a_global_in_make_inputs":
        assert any(n.startswith(EVERY_NOTE) and "between two calls" in n for n in default.notes), default.notes
    elif name == "turns_on_deterministic_algorithms":  # under static, 8 after 64 compiles again: the setting changed
        assert [r.outcome for r in report.strategy("static").requests] == ["compile", "compile", "compile", "hit"]
    elif name == "lazy_linear":  # its parameter read around calls before it has sizes: no error of the dry run's
        assert "error" not in {r.outcome for r in default.requests} and default.requests[0].outcome == "compile"


def test_a_workload_whose_inputs_are_drawn_at_random_is_not_forecast():
    """``make_inputs`` adds a random 0-3 to each length: the dry run's requests are not the real
    run's, and a copied request repeated a call of another length. Before: confident hits and
    compiles that a run contradicted; now every request is unknown, saying why."""
    ref = f"{FORECAST_WORKLOADS}:draws_its_length"
    loaded = load_workload(ref)
    sys.modules[loaded.build.__module__]._DRAWS.seed(0)
    report = forecast(ref, loaded.default_stream, "default,static", backend="eager")
    for s in report.strategies:
        assert {r.outcome for r in s.requests} == {"unknown"}, s.requests
        assert s.requests[-1].why.startswith(INPUTS_NOTE) and "args[0]" in s.requests[-1].why


def test_state_the_one_extra_call_does_not_show_has_every_request_called(tmp_path, monkeypatch):
    """Under dynamic the call count is a dynamic int: the repeat check's one extra call hits,
    yet the path changes after the third call and a later request compiles in the real run.
    Before, the repeats were the confident hits the run contradicted (then: unknown). The calls
    changed the count, so the dry run runs the stream again calling every request, in order:
    each outcome is the real trial's, and a note says why."""
    ref = f"{FORECAST_WORKLOADS}:warms_after_three"
    stream = load_workload(ref).default_stream
    report = forecast(ref, stream, ("dynamic",), backend="eager")
    real = _real(ref, "dynamic", stream, "eager", tmp_path, monkeypatch)
    seen = [o.outcome for o in request_outcomes(real.calls, real.compiles)]
    assert "compile" in seen[1:]
    dynamic = report.strategy("dynamic")
    assert [r.outcome for r in dynamic.requests] == seen and all(r.basis == "traced" for r in dynamic.requests)
    assert f"{EVERY_NOTE}, because {STATE_NOTE} (calls[0]: 0 → 1)" in dynamic.notes, dynamic.notes
    # a module-level flag each call flips: read among the globals of the function's module
    # (each call compiles on it, so every request is called, in stream order: the real trial's outcomes)
    ref = f"{FORECAST_WORKLOADS}:flips_a_global"
    flips = forecast(ref, None, ("static",), backend="eager").strategy("static")
    real = _real(ref, "static", load_workload(ref).default_stream, "eager", tmp_path, monkeypatch)
    assert [r.outcome for r in flips.requests] == [o.outcome for o in request_outcomes(real.calls, real.compiles)]
    assert all(r.basis == "traced" for r in flips.requests) and any(STATE_NOTE in n for n in flips.notes)


def test_a_seen_shape_that_a_newer_entry_takes_into_a_new_resume_frame_compiles_as_in_a_real_trial(
        tmp_path, monkeypatch):
    """A repeated shape was forecast to repeat its first outcome (a hit): under default the
    newer, dynamic entry takes it into a resume frame compiled for another size, and it
    compiles; the next new size, which the forecast said compiles, hits. The dry run calls a
    repeat again when an entry was made since its shape last ran."""
    report = _agrees_with_real(f"{FORECAST_WORKLOADS}:breaks_once_dynamic", "eager", tmp_path, monkeypatch)
    default = report.strategy("default")
    assert [r.outcome for r in default.requests[:4]] == ["compile", "compile", "compile", "hit"]
    assert default.requests[2].basis == "traced" and default.unknown == 0


def test_a_frame_dynamo_skips_at_the_first_request_runs_every_later_one_eagerly_never_a_hit(tmp_path, monkeypatch):
    """The first request's graph has no op: Dynamo skips the code for good and checks no guard
    after it. The real trial and the forecast said ``hit`` for every later request (no graph
    was ever compiled, so "ran none" could not be told); they run eagerly."""
    report = _agrees_with_real(f"{FORECAST_WORKLOADS}:passes_through_first", "eager", tmp_path, monkeypatch)
    for s in report.strategies:
        assert [r.outcome for r in s.requests] == ["compile", "eager", "eager", "eager"], s.strategy


def test_a_request_whose_entry_depends_on_an_order_the_dry_run_did_not_replay_is_unknown(tmp_path, monkeypatch):
    """Request 4 hits the older entry, which Dynamo then tries first: request 5, a repeat of a
    shape the newer entry ran, takes the older one into the resume frame and compiles there.
    The dry run copied request 5 (a confident hit); it is unknown, with the two entries."""
    ref = f"{FORECAST_WORKLOADS}:order_across_a_break"
    stream = load_workload(ref).default_stream
    report = forecast(ref, stream, ("default", "dynamic"), backend="eager")
    for s in report.strategies:
        real = request_outcomes(*(lambda t: (t.calls, t.compiles))(
            _real(ref, s.strategy, stream, "eager", tmp_path, monkeypatch)))
        assert real[5].outcome == "compile", s.strategy
        assert all(r.outcome in (o.outcome, "unknown") for r, o in zip(s.requests, real)), (s.strategy, s.requests)
        assert s.requests[5].outcome == "unknown" and "0/0, 0/1" in (s.requests[5].why or ""), s.requests[5]


@pytest.mark.parametrize("name, why", [
    ("counts_in_a_buffer", "self._buffers['steps']: [0] → [1]"),  # a buffer's value, not its size
    ("draws_its_path", "the CPU random generator's state"),
    ("holds_an_object", "state.calls: 0 → 1"),  # an object of the user's class in the closure
])
def test_state_a_path_past_a_break_reads_has_every_request_called(name, why, tmp_path, monkeypatch):
    """Each path changes on a later call (the fourth, or a draw): the dry run copied those
    requests as hits where the real run compiled (then: unknown). A call changed what such a
    path can read, so the dry run runs the stream again calling every request, in order: each
    outcome is the real trial's, and a note says why."""
    ref = f"{FORECAST_WORKLOADS}:{name}"
    stream = load_workload(ref).default_stream
    s = forecast(ref, stream, ("default",), backend="eager").strategy("default")
    real = _real(ref, "default", stream, "eager", tmp_path, monkeypatch)
    seen = request_outcomes(real.calls, real.compiles)
    assert "compile" in [o.outcome for o in seen[1:]]
    assert [r.outcome for r in s.requests] == [o.outcome for o in seen], s.requests
    assert all(r.basis == "traced" for r in s.requests), s.requests
    assert any(n.startswith(EVERY_NOTE) and why in n for n in s.notes), s.notes


def test_requests_no_entry_accepts_past_the_limit_leave_the_order_check_nothing_to_doubt(tmp_path, monkeypatch):
    """A graph break and more sizes than the limit: a request no entry of the function's own
    frame accepts (refused) has no entry to take, whatever the order; its repeats are eager
    and an early size hits — before, every request from the first repeat of a refused size on
    was unknown ("0 entries … accept")."""
    report = _agrees_with_real(f"{FORECAST_WORKLOADS}:breaks_past_the_limit", "eager", tmp_path, monkeypatch,
                               ("static",))
    s = report.strategy("static")
    assert s.unknown == 0 and [r.outcome for r in s.requests[8:]] == ["eager"] * 5 + ["hit", "eager"], s.requests


def test_without_computing_a_call_the_dry_run_kept_no_record_of_and_its_repeats_are_unknown():
    """With compute off, a call that met fake tensors beside real ones stops the dry run before
    its record is kept: it, and a later repeat of an earlier shape, are unknown with why — not
    copies of that shape's first outcome."""
    ref = f"{FORECAST_WORKLOADS}:inner_frame_gets_input_or_computed"
    s = forecast(ref, None, ("default",), backend="eager", compute=False, fake=True).strategy("default")
    assert [r.outcome for r in s.requests] == ["compile", "unknown", "unknown"], s.requests
    assert (s.requests[1].why or "").startswith("not computed: ") and "type" in s.requests[1].why


def test_values_no_path_reads_leave_the_copied_requests_known(tmp_path, monkeypatch):
    """Dropout draws on every call, past it an explicit graph break: the generator's state
    changes, yet no break reads a value — the copies stand, and agree with a real trial."""
    report = _agrees_with_real(f"{FORECAST_WORKLOADS}:drops_then_breaks", "eager", tmp_path, monkeypatch,
                               ("default",), fake=False)  # computing for real: the draws are real
    s = report.strategy("default")
    assert s.unknown == 0 and any(r.basis == "repeat" for r in s.requests), s.requests


def test_each_strategy_meets_the_workloads_module_as_a_fresh_process_does_and_it_is_put_back(tmp_path, monkeypatch):
    """A flag the first call sets: the probe's eager calls and the first strategy's dry run
    set it, and the next strategy met it set (its second request forecast a hit where a real
    trial compiles). The module's state is put back before each strategy and after, an input
    changed in place too, and so is the caller's random generator (``build`` seeds it)."""
    import sys

    import torch

    ref = f"{FORECAST_WORKLOADS}:warms_up_once"
    report = forecast(ref, None, ("static", "dynamic"), backend="eager")
    module = next(m for name, m in sys.modules.items()
                  if name.startswith("_compilescope_workload_") and hasattr(m, "WARMED"))
    assert module.WARMED == {"done": False}
    real = _real(ref, "dynamic", load_workload(ref).default_stream, "eager", tmp_path, monkeypatch)  # as a fresh process
    seen = request_outcomes(real.calls, real.compiles)
    dynamic = report.strategy("dynamic").requests
    assert [r.outcome for r in dynamic] == [o.outcome for o in seen] == ["compile", "compile"]
    assert [g.text for g in dynamic[1].guards] == [g.text for g in seen[1].guards] == ["G['WARMED']['done'] == False"]
    with torch.random.fork_rng(devices=[]):  # this test's own draws leave the suite's generator as it was
        _the_callers_generator_is_put_back(module)
    # a module-level lru_cache a dry run on fake tensors filled is emptied: the caller's next
    # call computes a real tensor (before: it got the dry run's fake one back)
    forecast(f"{FORECAST_WORKLOADS}:memoizes_a_table", None, "static", backend="eager", fake=True)
    assert module._memo_table.cache_info().currsize == 0 and type(module._memo_table(8)) is torch.Tensor


def _the_callers_generator_is_put_back(module):
    import torch

    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    module.WARMED["done"] = False
    forecast(f"{FORECAST_WORKLOADS}:warms_up_once", None, "dynamic", backend="eager")
    forecast(f"{FORECAST_WORKLOADS}:changes_its_input", None, "static", backend="eager")
    assert torch.equal(torch.rand(3), expected)
    assert module.WARMED == {"done": False} and not module.SHARED_BUFFER.any()


def test_a_frame_meeting_a_fake_tensor_beside_real_inputs_is_computed_for_real(tmp_path, monkeypatch):
    """A frame after eager code gets a tensor computed there (fake, in a dry run on fake
    tensors) or a real input: its entry's type guard fails on the other where a real run's
    does not (before: a compile the real run never made). The dry run computes for real."""
    report = _agrees_with_real(f"{FORECAST_WORKLOADS}:inner_frame_gets_input_or_computed", "aot_eager", tmp_path,
                               monkeypatch)
    assert not FAKE or all("a guard on a tensor's type failed" in " ".join(s.notes) for s in report.strategies)


def test_a_restart_computing_for_real_meets_the_module_as_a_fresh_process_does(tmp_path, monkeypatch):
    """The fake attempt left fake tables in the module's lru_cache; the restart computing for
    real empties it first (before: the request read a fake table's value and was an error)."""
    report = _agrees_with_real(f"{FORECAST_WORKLOADS}:memoizes_then_reads_a_value", "eager", tmp_path, monkeypatch)
    assert not any(s.errors for s in report.strategies)


def test_where_real_kernels_cost_less_than_fake_tensors_the_dry_run_computes_for_real_and_says_why():
    """sincos's kernels on 16 floats cost less than a fake tensor's bookkeeping: every
    strategy computes for real from its first call (the same outcomes), said with both
    timings; asked for fake tensors, it keeps them (on torch 2.6, which has no dry run on fake
    tensors, both compute for real, said with that reason)."""
    cheaper = forecast("sincos", "16,16,32,8", "default,static", backend="eager")
    kept = forecast("sincos", "16,16,32,8", "default,static", backend="eager", fake=True)
    for a, b in zip(cheaper.strategies, kept.strategies):
        assert a.computed and b.computed != FAKE
        assert [r.outcome for r in a.requests] == [r.outcome for r in b.requests]
        assert [[g.text for g in r.guards] for r in a.requests] == [[g.text for g in r.guards] for r in b.requests]
        note = next(n for n in a.notes if n.startswith("computed for real"))
        assert ("with real kernels" if FAKE else NO_FAKE) in note and "on fake tensors" in note, note
    assert [r.outcome for r in cheaper.strategy("static").requests] == ["compile", "hit", "compile", "compile"]


def test_where_kernels_cost_more_than_fake_tensors_the_dry_run_stays_on_fake_tensors():
    """A 1536-square matrix product: its kernel costs far more than a fake tensor's bookkeeping."""
    from compilescope.forecast.engine import cheaper_for_real

    w = load_workload(f"{FORECAST_WORKLOADS}:big_matmul")
    assert cheaper_for_real(w, w.build(), {"n": 1536}) is None
    raises = load_workload(f"{FORECAST_WORKLOADS}:keeps_positive")  # nonzero: it needs values
    why = cheaper_for_real(raises, raises.build(), raises.default_stream[0])
    assert why is not None and "raised on fake tensors" in why


@pytest.mark.processes
def test_compile_seconds_come_from_a_results_file(tmp_path):
    from compilescope.api import run

    results = tmp_path / "run.json"
    run("sincos", "16,32,64", "default,static", backend="eager", results_path=results,
        measure=MeasureOptions(warmup=1, samples=3, min_samples=1, budget_s=0.1))
    report = forecast("sincos", "16,32,64,128", "static", backend="eager", results=results)
    s = report.strategy("static")
    times = s.compile_times
    assert times is not None and times.first_n == 1 and times.recompile_n == 2 and str(results) in times.source
    assert s.compiles == 4
    expected = times.first_s + 3 * times.recompile_s
    assert s.predicted_compile_s == pytest.approx(expected)
    assert [r.compile_s for r in s.requests] == pytest.approx([times.first_s] + [times.recompile_s] * 3)


def test_cli_forecast_writes_json_and_reports(main, tmp_path):
    code, out, err = main("forecast", "sincos", "--stream", "16,16,32,32,64,16", "--strategies", "static",
                          "--backend", "eager", "--json", "f.json")
    assert code == 0, err
    assert "request 2 (32): compiles 0/1" in out
    assert f"0/0: tensor '{compat.reason_name('x')}' size mismatch at index 0. expected 16, actual 32" in out
    data = json.loads((tmp_path / "f.json").read_text())
    assert data["kind"] == "forecast"
    assert [r["outcome"] for r in data["strategies"][0]["requests"]] == ["compile", "hit", "compile", "hit",
                                                                        "compile", "hit"]


@pytest.mark.parametrize("args, message", [
    (("sincos", "--backend", "tvm"), "forecast backend 'tvm'"),
    (("sincos", "--dry-backend", "eager"), "--dry-backend 'eager' for backend inductor: use inductor-lowering or aot_eager"),
    (("sincos", "--stream", "m=3"), "unknown dimension 'm'"),
    (("sincos", "--strategies", "eager"), "no compiling strategy"),
    (("sincos", "--results", "missing.json"), "is not a file"),
    (("nosuch",), "unknown workload 'nosuch'"),
])
def test_cli_forecast_bad_input_is_one_line(main, args, message):
    code, out, err = main("forecast", *args)
    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_a_strategy_that_does_not_apply_is_a_note():
    report = forecast("sincos", "8,16", "static,regional", backend="eager")
    assert [s.strategy for s in report.strategies] == ["static"]
    assert any(n.startswith("regional is unavailable: the workload is a function") for n in report.notes)


def _agrees_with_real(ref, backend, tmp_path, monkeypatch, strategies=STRATEGIES, fake=True):
    """The forecast of ``ref``'s default stream and, per strategy, its requests' outcomes
    beside a real trial's (guard texts of the compiles too). ``fake``: the forecast's (True:
    on fake tensors, the premise these small workloads were built to test, though real
    kernels would be cheaper for them)."""
    stream = load_workload(ref).default_stream
    report = forecast(ref, stream, strategies, backend=backend, fake=fake)
    for s in report.strategies:
        real = _real(ref, s.strategy, stream, backend, tmp_path, monkeypatch)
        seen = request_outcomes(real.calls, real.compiles)
        assert [r.outcome for r in s.requests] == [o.outcome for o in seen], s.strategy
        for predicted, o in zip(s.requests, seen):
            assert sorted(g.text for g in predicted.guards) == sorted(g.text for g in o.guards), predicted.index
    return report


FORECAST_WORKLOADS = str(Path(__file__).resolve().parents[2] / "workloads_forecast.py")
# torch 2.6 has no dry run on fake tensors (compat.FEATURE_SINCE): every call is computed for real, said
FAKE = compat.has_feature("dry_run_on_fake_tensors")
NO_FAKE = "has no dry run on fake tensors"


def test_the_dry_runs_own_reading_failing_is_never_a_requests_error(monkeypatch):
    """Reading the state around a call raised (a lazy parameter's sizes did): the call was
    recorded as raising it, and every request forecast a confident ``error``. Now the state is
    taken as changed — what the next call meets is not known — and every request is called."""
    from compilescope.forecast import engine

    def unreadable(fn, workload=None):
        raise RuntimeError("cannot read this")

    monkeypatch.setattr(engine, "state_of", unreadable)
    s = forecast("sincos", "8,8,8,16,8", ("default",), backend="eager").strategy("default")
    assert [r.outcome for r in s.requests] == ["compile", "hit", "hit", "compile", "hit"], s.requests
    assert all(r.basis == "traced" for r in s.requests)
    assert any("could not be read: RuntimeError: cannot read this" in n for n in s.notes), s.notes


def test_a_request_with_an_empty_dimension_on_fake_tensors_is_unknown(tmp_path, monkeypatch):
    """On fake tensors a reduction over an empty dimension gives a tensor; the real kernel
    raises. Before: a confident compile and hit where the real run raised. Now those requests
    are unknown, saying why; the others agree with the real run."""
    ref = f"{FORECAST_WORKLOADS}:best_of_no_candidates"
    stream = load_workload(ref).default_stream
    s = forecast(ref, stream, ("default",), backend="eager", fake=True).strategy("default")
    real = request_outcomes(*(lambda t: (t.calls, t.compiles))(_real(ref, "default", stream, "eager", tmp_path,
                                                                     monkeypatch)))
    assert [o.outcome for o in real] == ["compile", "hit", "error", "compile", "error", "hit"]
    assert [r.outcome for r in s.requests] == ["compile", "hit", "unknown", "compile", "unknown", "hit"], s.requests
    assert s.requests[2].why == EMPTY_NOTE and s.requests[4].why == EMPTY_NOTE


def test_a_backend_failure_on_a_subclass_input_of_a_static_graph_is_forecast(tmp_path, monkeypatch):
    """A static graph is handed to no backend in the dry run (a backend adds no guard to it),
    so AOT autograd's failure on a ``__torch_function__`` subclass input was forecast as a
    compile where the real run raised. A subclass input's graph is compiled now."""
    report = _agrees_with_real(f"{FORECAST_WORKLOADS}:a_subclass_input_for_long_requests", "aot_eager", tmp_path,
                               monkeypatch, ("default", "static"))
    assert [r.outcome for r in report.strategy("static").requests] == ["error", "hit", "compile", "error", "hit"]


def test_past_the_limit_an_eager_fallback_that_reads_values_is_computed_and_still_eager(tmp_path, monkeypatch):
    """The eager code reads a value (``.item()``), which fake tensors cannot give: the dry run
    computes for real, and the requests past the limit are eager, as in a real trial."""
    report = _agrees_with_real(f"{FORECAST_WORKLOADS}:eager_reads_values", "eager", tmp_path, monkeypatch, ("static",))
    s = report.strategy("static")
    assert s.compiles == s.recompile_limit and s.eager == report.stream_length - s.compiles and s.errors == 0
    why = "DataDependentOutputException" if FAKE else NO_FAKE
    assert s.computed and any(n.startswith("computed for real") and why in n for n in s.notes), s.notes


def test_the_cpu_convolution_size_threshold_guards_are_forecast(tmp_path, monkeypatch):
    """A strided Conv1d over one waveform: past 5,120 samples the CPU convolution changes
    backend, and PyTorch guards it — so a longer request compiles again under default and
    dynamic. On the meta device there is no CPU backend choice, and the guard never appeared.
    Torch 2.6 has no such guard (a real trial hits there, as forecast)."""
    report = _agrees_with_real(f"{FORECAST_WORKLOADS}:strided_conv1d", "aot_eager", tmp_path, monkeypatch)
    for name in ("default", "dynamic") if compat.at_least("2.10") else ():
        s = report.strategy(name)
        threshold = next(r for r in s.requests if r.shape == (("n", 6000),))
        assert threshold.outcome == "compile" and any("<= 5120" in g.text for g in threshold.guards), threshold
    assert not any(s.computed == FAKE or s.unknown or s.errors for s in report.strategies)


def test_a_nonzero_in_the_frame_is_computed_for_real_not_an_error(tmp_path, monkeypatch):
    """``nonzero`` cannot run on fake tensors (its output size is the data's): the dry run
    computes that strategy for real and says so; the resume frame's recompiles, decided by how
    many values are positive, are forecast as they happen."""
    report = _agrees_with_real(f"{FORECAST_WORKLOADS}:keeps_positive", "aot_eager", tmp_path, monkeypatch)
    assert all(s.computed and s.errors == 0 and s.unknown == 0 for s in report.strategies)
    assert all(("aten.nonzero" if FAKE else NO_FAKE) in " ".join(s.notes) for s in report.strategies)
    assert report.strategy("static").compiles >= 3


def test_without_computing_a_request_that_needs_values_is_unknown_and_said():
    ref = f"{FORECAST_WORKLOADS}:keeps_positive"
    report = forecast(ref, "8,8,16", "default", backend="eager", compute=False)
    s = report.strategy("default")
    assert [r.outcome for r in s.requests] == ["unknown"] * 3 and s.unknown == 3 and s.known == 0
    assert s.traced <= 1  # the shapes it ran: it stopped at the first (before: every distinct shape counted)
    if FAKE:
        assert "aten.nonzero" in (s.requests[0].why or "") and "unknown" in (s.requests[2].why or "")
    else:
        assert any(NO_FAKE in n for n in s.notes), s.notes
    from compilescope.render.forecast import headline, render

    assert headline(s) == "no request predicted (0 compile, 0 hit, 3 unknown)"
    text = render(report)
    assert "no request predicted" in text and "0 request(s) compile" not in text


def test_a_tensor_made_on_the_inputs_device_inside_the_frame_and_a_cache_argument(tmp_path, monkeypatch):
    """A decode step whose cache is an argument: made inside the frame on the key's device
    when empty, then grown. Its tensors are the real device's, as the inputs are, so the
    dry run traces it as a real call does (on meta: a device mismatch on every request)."""
    report = _agrees_with_real(f"{FORECAST_WORKLOADS}:cached_attention", "aot_eager", tmp_path, monkeypatch)
    assert not any(s.computed == FAKE or s.unknown or s.errors for s in report.strategies)
    # cache.keys on 2.10 and newer; 2.6 names the source its own way (the texts equal the real trial's above)
    assert any(("cache.keys" if FAKE else "keys") in g.text for r in report.strategy("default").requests for g in r.guards)


def test_a_value_guard_inside_an_argument_is_named_the_arguments_not_a_modules():
    report = forecast(f"{FORECAST_WORKLOADS}:flagged_cache", None, "static", backend="eager")
    guards = [(g.kind, g.source) for r in report.strategy("static").requests for g in r.guards]
    assert ("argument_attribute", "L['cache'].ready") in guards, guards
    assert not any(kind == "module_attribute" for kind, _ in guards), guards


def test_a_request_that_raises_for_real_is_an_error_and_the_headline_says_every_request_raises(main, tmp_path):
    code, out, err = main("forecast", f"{FORECAST_WORKLOADS}:always_raises", "--strategies", "default",
                          "--backend", "eager")
    assert code == 1, err  # every request of every strategy raises: as run, exit 1
    assert "every request raises (0 compile, 0 hit, 3 error)" in out
    assert "0 request(s) compile" not in out and "ValueError: no such row" in out


def test_progress_off_a_terminal_is_a_plain_line_on_stderr(main, monkeypatch):
    from compilescope.cli import progress

    monkeypatch.setattr(progress, "EVERY_S", 0.0)  # every call: the test needs no 5 s wait
    monkeypatch.setenv("COLUMNS", "200")  # one line each
    code, out, err = main("forecast", "sincos", "--stream", "16,16,32", "--strategies", "static", "--backend", "eager")
    assert code == 0, err
    lines = [ln for ln in err.splitlines() if "distinct shapes run" in ln]
    # sincos's kernels cost less than fake tensors: the dry run computes for real, and says so
    assert lines[0].startswith("[0:")
    assert "] static: 1/2 distinct shapes run, 1 cache entry traced, computing for real, request 1/3 (" in lines[0]
    assert "] static: 2/2 distinct shapes run, 2 cache entries traced, computing for real, request 3/3 (" in lines[-1]
    assert lines[-1].endswith(" · strategies done: 0")
    assert "distinct shapes run" not in out  # the report's own stream is untouched
    # one meaning of "traced" (a cache entry Dynamo traced): the table counts the shapes the dry run called
    header = next(ln for ln in out.splitlines() if "strategy" in ln and "hit" in ln)
    assert "shapes run" in header and "traced" not in header, header
    assert "2 compile, 1 hit" in out


@pytest.mark.processes  # the measured run is a trial process
def test_the_entries_each_hit_will_try_are_forecast_and_timed_from_a_measured_run(tmp_path):
    from compilescope.api import run

    stream = "8,16,8,16,32,32"
    s = forecast("sincos", stream, "static", backend="eager").strategy("static")
    # Dynamo tries the most recently hit entry first: 8 after 16 tries 16's entry then its own
    assert [r.entries_tried for r in s.requests] == [None, None, 2, 2, None, 1]
    assert s.lookups is not None and (s.lookups.most_tried, s.lookups.per_request_s) == (2, None)
    results = tmp_path / "run.json"
    run("sincos", stream, "static", backend="eager", results_path=results,
        measure=MeasureOptions(warmup=1, samples=3, min_samples=3, budget_s=0.05))
    timed = forecast("sincos", stream, "static", backend="eager", results=results).strategy("static")
    assert timed.lookups is not None and timed.lookups.timed == 3 and str(results) in (timed.lookups.source or "")
    assert all(r.lookup_s is not None and r.lookup_s > 0 for r in timed.requests if r.outcome == "hit")


def test_a_compiles_failed_guards_are_grouped_by_the_entry_that_failed_them():
    """Dynamo gives each entry's first failure, then compilescope finds the rest: shown as they
    came, the two entries' guards interleave; a reader wants each entry's together, newest first."""
    s = forecast(f"{FORECAST_WORKLOADS}:two_inputs", None, "default", backend="eager").strategy("default")
    assert [r.outcome for r in s.requests] == ["compile", "compile", "compile"]
    entries = [g.entry for g in s.requests[2].guards]
    assert entries[0] == "0/1" and set(entries) == {"0/0", "0/1"}, entries
    assert entries == sorted(entries, key=entries.index), entries  # each entry's guards together
    assert len(entries) >= 4, entries  # more than each entry's first failure


def test_a_repeated_shape_runs_the_first_entry_that_accepts_it_as_the_real_lookup_does():
    from compilescope.execute.trial import run_trial

    stream = tuple({"n": n} for n in (16, 32, 16, 64, 16))
    report = forecast("sincos", stream, "default", backend="eager")
    (s,) = report.strategies
    # 16 compiles a static entry, 32 a dynamic one that accepts 16 too: the repeats run the dynamic one,
    # tried first, as the real trial's lookups do
    real = run_trial(TrialSpec("sincos", "default", "cold", stream, StrategyOptions(backend="eager"),
                               MeasureOptions(steady=False, numerics=False, guards=False)))[0]
    assert [c.graphs_run for c in real.calls] == [("0/0",), ("0/1",), ("0/1",), ("0/1",), ("0/1",)]
    assert [r.entries_tried for r in s.requests if r.outcome == "hit"] == [1, 1, 1]


def test_hits_whose_entry_the_recorded_guards_cannot_tell_are_left_out_of_the_lookups_and_said_so(monkeypatch):
    import dataclasses

    from compilescope.forecast import engine
    from compilescope.render.forecast import _stalls
    from compilescope.render.grid import to_text

    monkeypatch.setattr(engine, "acceptance", lambda workload, dry: (0, lambda entry, shape: None))
    stream = tuple({"n": n} for n in (16, 32, 16, 64, 16))
    s = engine.forecast_strategy("sincos", "default", stream, StrategyOptions(backend="eager"),
                                 workload=load_workload("sincos"))
    hits = [r for r in s.requests if r.outcome == "hit"]
    assert [r.entries_tried for r in hits] == [None, None, None] and s.lookups is None  # none told: no figure
    monkeypatch.setattr(engine, "acceptance", lambda workload, dry: (0, lambda entry, shape: entry == "0/1" or None))
    s = engine.forecast_strategy("sincos", "default", stream, StrategyOptions(backend="eager"),
                                 workload=load_workload("sincos"))
    assert [r.entries_tried for r in s.requests if r.outcome == "hit"] == [1, 1, 1] and s.lookups.untold == 0
    told = dataclasses.replace(s, lookups=dataclasses.replace(s.lookups, untold=2))
    assert "2 hit(s) left out: which entry they run, the recorded guards could not tell" in to_text(_stalls(told), 200)


def test_a_workload_whose_every_request_raises_is_forecast_so_with_the_ops_own_error_and_exits_1(tmp_path):
    """Before: exit 0, the error as Dynamo's title alone ('RuntimeError when making fake tensor
    call'), and some 200 lines of the fake-tensor mode's error log with tracebacks."""
    import logging

    from tests.conftest import cli_here

    heard: list[logging.LogRecord] = []

    class Ear(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            heard.append(record)

    ear = Ear(level=logging.DEBUG)
    logger = logging.getLogger("torch._subclasses.fake_tensor")
    logger.addHandler(ear)
    try:
        ref = f"{Path(__file__).resolve().parents[2] / 'workloads_forecast.py'}:wrong_width"
        proc = cli_here("forecast", ref, "--backend", "aot_eager", "--strategies", "default,dynamic", cwd=tmp_path)
    finally:
        logger.removeHandler(ear)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "2 error" in proc.stdout and "a and b must have same reduction dim" in proc.stdout, proc.stdout
    assert not [r for r in heard if "failed while attempting to run meta" in r.getMessage()]


def test_dynamos_fake_tensor_failure_is_headlined_with_the_ops_own_error_read_as_python_reads_it():
    from compilescope.torchtext import headline

    said = ("RuntimeError when making fake tensor call\n  Explanation: Dynamo failed to run FX node with fake tensors: "
            "call_function <built-in function linear>(*(FakeTensor(..., size=(2, 5)),), **{}): got "
            "RuntimeError(\"it's [2, 5] X [4, 4]\\nmore\")\n  Hint: …")
    assert headline("TorchRuntimeError", said) == (
        "TorchRuntimeError: RuntimeError when making fake tensor call: RuntimeError: it's [2, 5] X [4, 4]")
    assert headline("TorchRuntimeError", "RuntimeError when making fake tensor call") == (
        "TorchRuntimeError: RuntimeError when making fake tensor call")


def test_a_frame_whose_compile_fails_is_forecast_eager_after_it_with_why(tmp_path, monkeypatch):
    """The only frame fails to compile: the request that tries stalls on it, every later one
    runs eagerly — never a hit — and the forecast says why, not "at the recompile limit"."""
    ref = f"{Path(__file__).resolve().parents[2] / 'workloads_for_tests.py'}:never_compiles"
    report = _agrees_with_real(ref, "eager", tmp_path, monkeypatch, ("default",), fake=False)
    s = report.strategy("default")
    assert [r.outcome for r in s.requests] == ["compile", "eager", "eager"]
    assert "0/0 fails (Unsupported)" in (s.requests[0].why or "")
    assert "compile 0/0 of" in (s.requests[2].why or "") and "failed (Unsupported)" in (s.requests[2].why or "")
    # a repeat of request 0's shape, called again (its compile failed since): eager, and why
    assert "compile 0/0 of" in (s.requests[1].why or "") and s.requests[1].basis == "traced"


def test_a_call_that_raises_its_own_error_after_a_suppressed_failure_leaves_the_frame_skipped(tmp_path, monkeypatch):
    """n=7 raises the user's ValueError — from the frame Dynamo ran eagerly once its compile
    failed softly, not the compile's own error raised into the call — so the frame is skipped
    from then on: 4 and 8 again run eagerly, not on their graphs (before, forecast "hit")."""
    ref = f"{Path(__file__).resolve().parents[2] / 'workloads_for_tests.py'}:raises_at_7"
    report = _agrees_with_real(ref, "eager", tmp_path, monkeypatch, ("default",), fake=False)
    s = report.strategy("default")
    assert [r.outcome for r in s.requests] == ["compile", "compile", "error", "eager", "eager", "eager"]
    assert "compile 0/2 of" in (s.requests[3].why or "") and "failed (Unsupported)" in (s.requests[3].why or "")


def test_a_shape_repeated_after_a_failed_compile_is_forecast_eager_as_it_runs(tmp_path, monkeypatch):
    """16 compiled, then 32's compile fails and Dynamo runs the frame eagerly: 16 again runs
    eagerly, not on its old graph (the caches did not only grow: the frame is skipped)."""
    ref = f"{Path(__file__).resolve().parents[2] / 'workloads_for_tests.py'}:fails_to_compile_at_32"
    report = _agrees_with_real(ref, "eager", tmp_path, monkeypatch, ("default",), fake=False)
    s = report.strategy("default")
    assert [r.outcome for r in s.requests] == ["compile", "hit", "compile", "eager", "eager"]
    assert s.requests[3].basis == "traced" and "failed" in (s.requests[3].why or "")  # called again: it failed since
