"""The third cost: what the guards charge on every call — captured on real torch.compile
(backend eager), derived into the report, rendered. No timing is asserted: which entry
passes, how many were tried, the guard groups and the stream's lookup order are."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from compilescope import compat
from compilescope.analysis.build import build_run_report
from compilescope.analysis.guards import shape_guard_row, stream_points
from compilescope.collect.guard_cost import measure_guard_cost
from compilescope.torchtext import classify_source as classify, readable
from compilescope.execute.trial import run_trial
from compilescope.model import (
    CallRecord,
    CompileId,
    CompileRecord,
    EntryCheck,
    FrameGuards,
    GuardCost,
    MeasureOptions,
    RunResult,
    StrategyOptions,
    TrialResult,
    TrialSpec,
)
from compilescope.render import csv, text
from compilescope.report import RunFile
from compilescope.zoo import Layers, layers_workload

FAST = MeasureOptions(warmup=1, samples=4, min_samples=3, budget_s=0.05)
MIXED = tuple({"batch": b} for b in (1, 2, 3, 1, 3, 2, 3, 1, 2))


def _compiled_layers(n: int = 4, dynamic: bool | None = False):  # type: ignore[no-untyped-def]
    model = layers_workload(n).build()
    return model, torch.compile(model, backend="eager", dynamic=dynamic)


def test_readable_sources_and_categories():
    src = "L['self']._modules['layers']._modules['3']._modules['linear']._parameters['weight']"
    assert readable(src) == "self.layers[3].linear.weight"
    assert readable("G['__import_torch_dot_nn_dot_modules_dot_module']._global_forward_hooks") == \
        "torch.nn.modules.module._global_forward_hooks"
    inputs = {"self": Layers(1), "x": torch.ones(1)}
    assert classify(src, "TENSOR_MATCH", inputs) == ("parameter", "L['self']._modules['layers']._modules['3']._modules['linear']")
    assert classify("L['self']._modules['layers']._modules['3'].scale", "EQUALS_MATCH", inputs) == \
        ("module", "L['self']._modules['layers']._modules['3']")
    assert classify("list(dict.keys(L['self']._modules['layers']._modules))[2]", "EQUALS_MATCH", inputs) == \
        ("module", "L['self']._modules['layers']")
    assert classify("L['x']", "TENSOR_MATCH", inputs) == ("input", "L['x']")
    assert classify("G['LAYERS_CLAMP']", "EQUALS_MATCH", inputs) == ("global", "G['LAYERS_CLAMP']")
    assert classify("L", "GLOBAL_STATE", inputs) == ("ambient", "frame state")


def test_a_shapes_guards_are_measured_on_its_own_entry_and_compile_nothing():
    model, compiled = _compiled_layers(4)
    xs = {b: torch.randn(b, 16) for b in (1, 2, 3)}
    with torch.no_grad():
        for b in (1, 2, 3):
            compiled(xs[b])
        metrics = compat.compilation_metrics_count()
        cost = measure_guard_cost(lambda: compiled(xs[2]), {"batch": 2}, min_rounds=3, max_rounds=3)
        assert compat.compilation_metrics_count() == metrics  # the capture compiled nothing (its hook included)
    assert cost.error is None and cost.rounds == 3
    (frame,) = cost.frames
    assert frame.calls == 1 and frame.function.startswith("forward (zoo.py:")
    assert set(frame.order) == {"0/0", "0/1", "0/2"} and len(frame.checks) == 3
    (passed,) = [c for c in frame.checks if c.passed]
    assert passed.entry == "0/1" and frame.checks[0] is passed  # the shape's own entry, timed first
    assert all(len(c.samples_s) == 3 and min(c.samples_s) > 0 for c in frame.checks)
    groups = {(g.category, g.owner): g for g in frame.groups}
    assert groups[("module", "self.layers[*]")].owners == 4
    assert groups[("parameter", "self.layers[*].linear")].kinds["TENSOR_MATCH"] == 8  # weight and bias of each
    assert ("input", "x") in groups and ("global", "LAYERS_CLAMP") in groups and ("ambient", "frame state") in groups
    assert frame.guards == sum(g.guards for g in frame.groups)
    timed = [g for g in frame.groups if g.samples_s]
    assert timed and all(len(g.samples_s) == 3 for g in timed) and len(frame.copy_s) == 3


def _sets_its_default(forward):  # type: ignore[no-untyped-def]
    """As Hugging Face's output-capturing wrapper does: fill a keyword argument the caller left out."""
    def wrapper(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        if kwargs.get("scale") is None:
            kwargs["scale"] = 2.0
        return forward(self, *args, **kwargs)
    return wrapper


class _KwargsModel(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)

    @_sets_its_default
    def forward(self, x, mask, scale=None):  # type: ignore[no-untyped-def]
        return self.linear(x) * mask * scale


def test_a_frame_that_changes_its_kwargs_is_measured_on_them_as_the_lookup_saw_them():
    compiled = torch.compile(_KwargsModel(), backend="eager", dynamic=False)
    inputs = {n: {"x": torch.randn(n, 8), "mask": torch.ones(n, 8)} for n in (2, 3)}
    with torch.no_grad():
        for n in (2, 3):
            compiled(**inputs[n])
        _, (seen, *_) = compat.compiled_frame_calls(lambda: compiled(**inputs[3]))
        assert set(seen.inputs["kwargs"]) == {"x", "mask", "scale"}  # as the frame left it
        assert set(seen.at_entry["kwargs"]) == {"x", "mask"}  # as the lookup read it
        cost = measure_guard_cost(lambda: compiled(**inputs[3]), {"n": 3}, min_rounds=2, max_rounds=2)
    assert cost.error is None, cost.error
    (frame,) = cost.frames
    assert frame.error is None, frame.error
    (passed,) = [c for c in frame.checks if c.passed]
    assert passed.entry == "0/1" and len(frame.checks) == 2


class _Cache:
    def __init__(self, length: int) -> None:
        self.keys = torch.ones(1, length)


class _Grows(torch.nn.Module):
    """A decode step: extends the cache it is given."""

    def forward(self, x, cache):  # type: ignore[no-untyped-def]
        cache.keys = torch.cat([cache.keys, x], dim=1)
        return cache.keys.sum(dim=1)


def test_a_call_that_grows_its_argument_is_measured_on_fresh_inputs_as_the_lookup_read_them():
    compiled = torch.compile(_Grows(), backend="eager", dynamic=False)
    x = torch.ones(1, 1)
    with torch.no_grad():
        for length in (3, 4):
            compiled(x, _Cache(length))
        metrics = compat.compilation_metrics_count()
        made: list[_Cache] = []

        def fresh():  # type: ignore[no-untyped-def]
            made.append(_Cache(4))
            return lambda: compiled(x, made[-1])

        grown = measure_guard_cost(fresh(), {"past": 4}, min_rounds=3, max_rounds=3)
        cost = measure_guard_cost(fresh(), {"past": 4}, min_rounds=3, max_rounds=3, fresh=fresh)
        assert compat.compilation_metrics_count() == metrics  # nothing compiled, the visitors included
    (frame,) = grown.frames
    assert frame.error is not None  # after the call the cache no longer has the length the lookup read
    assert cost.error is None and cost.rounds == 3
    (frame,) = cost.frames
    assert frame.error is None, frame.error
    (passed,) = [c for c in frame.checks if c.passed]
    assert passed.entry == "0/1" and frame.checks[0] is passed and len(frame.checks) == 2
    assert all(len(c.samples_s) == 3 and min(c.samples_s) > 0 for c in frame.checks)
    assert all(c.keys.shape == (1, 5) for c in made[2:])  # each request on its own fresh cache, grown once


def test_counts_not_read_are_no_figures():
    unmeasured = shape_guard_row(GuardCost({"n": 2}, error="not measured: the call changes its inputs"), None, ())
    assert (unmeasured.entries, unmeasured.guards) == (None, None)
    refused = shape_guard_row(GuardCost({"n": 2}, (FrameGuards("f (m.py:1)", 0, 1, ("0/1", "0/0"),
                                                               error="no cache entry's guards passed"),)), None, ())
    assert (refused.entries, refused.guards) == (2, None)  # its entries counted; guards of none that passed
    spec = TrialSpec("w", "default", "cold", ({"n": 2},), StrategyOptions(backend="eager"), FAST)
    t = TrialResult(spec, "ok", calls=(CallRecord(0, {"n": 2}, 1e-3, compile_ids=("0/0",)),),
                    compiles=(CompileRecord(CompileId(0, 0), "f", "m.py", 1, call_index=0),),
                    guard_costs=(GuardCost({"n": 2}, error="not measured"),))
    run = RunResult(workload="w", stream=({"n": 2},), trials=(t,))
    lines = text.RENDERER.render(RunFile(run, build_run_report(run))).splitlines()
    header = next(i for i, ln in enumerate(lines) if ln.startswith("guards: what every call pays"))
    cells = [c.strip() for c in next(ln for ln in lines[header:] if "not measured" in ln).split("│")[1:-1]]
    assert (cells[2], cells[6]) == ("—", "—"), cells  # entries, guards
    measured = (GuardCost({"n": 2}, (FrameGuards("f (m.py:1)", 0, 1, ("0/0",), _checks(("0/0",), "0/0"), 7),), 3),)
    b = RunResult(workload="w", stream=({"n": 2},), trials=(dataclasses.replace(t, guard_costs=measured),))
    from compilescope.analysis.compare import compare_runs

    figures = [(c.shape, c.figure) for c in compare_runs(run, b).changes]
    assert ("2", "guards") not in figures  # a count not read is no change (it was 0 → 7: a "regression")
    assert ("2", "guards") in [(c.shape, c.figure) for c in compare_runs(b, b).changes]


def test_a_call_that_runs_no_compiled_frame_is_said_so():
    cost = measure_guard_cost(lambda: torch.ones(2) + 1, {"n": 2})
    assert cost.frames == () and "no compiled frame ran" in (cost.error or "")


def test_a_hook_that_fails_never_reaches_the_call(monkeypatch):
    _, compiled = _compiled_layers(2)
    x = torch.randn(2, 16)
    with torch.no_grad():
        compiled(x)
        out, calls = compat.compiled_frame_calls(lambda: compiled(x), limit=0)  # the hook notes nothing
    assert calls == [] and out.shape == (2, 16)


def _checks(order, hit, miss_s=2e-6, hit_s=10e-6):  # type: ignore[no-untyped-def]
    return tuple(EntryCheck(e, e == hit, (hit_s if e == hit else miss_s,) * 3) for e in order)


def test_the_stream_order_is_replayed_and_each_lookup_summed_from_the_checks():
    order = ("0/2", "0/1", "0/0")
    costs = tuple(GuardCost({"n": n}, (FrameGuards("f (m.py:1)", 0, 1, order, _checks(order, f"0/{i}")),), 3)
                  for i, n in enumerate((8, 16, 32)))
    made = [CompileRecord(CompileId(0, i), "f", "m.py", 1, call_index=i) for i in range(3)]
    sizes = (8, 16, 32, 8, 8, 32, 16)
    calls = tuple(CallRecord(i, {"n": n}, 1e-3, compile_ids=("0/%d" % i,) if i < 3 else (),
                             graphs_run=(f"0/{(8, 16, 32).index(n)}",)) for i, n in enumerate(sizes))
    spec = TrialSpec("w", "static", "cold", tuple({"n": n} for n in sizes))
    trial = TrialResult(spec, "ok", calls=calls, compiles=tuple(made), guard_costs=costs)
    points, _ = stream_points(trial, {(("n", n),): 10e-6 for n in (8, 16, 32)})
    # entries in lookup order after the three compiles: 0/2, 0/1, 0/0; request 3 (8 → 0/0) tries all three,
    # request 4 (8 again) tries one, 5 (32 → 0/2, now second) two, 6 (16 → 0/1, third) three
    assert [p.tried for p in points] == [0, 1, 2, 3, 1, 2, 3]
    assert [p.compiled for p in points] == [True, True, True, False, False, False, False]
    assert [p.lookup_s for p in points[3:]] == pytest.approx([14e-6, 10e-6, 12e-6, 14e-6])


def test_a_hit_whose_entry_a_later_one_shadows_at_the_end_has_no_lookup_figure():
    # request 1 hit 0/0; the dynamic 0/1 compiled after it accepts its size too, so the checks
    # timed after the stream read 0/0 as rejecting it: that is not what request 1 paid
    order = ("0/1", "0/0")
    both = tuple(GuardCost({"n": n}, (FrameGuards("f (m.py:1)", 0, 1, order, _checks(order, "0/1")),), 3)
                 for n in (2, 4))
    made = [CompileRecord(CompileId(0, i), "f", "m.py", 1, call_index=c) for i, c in ((0, 0), (1, 2))]
    calls = (CallRecord(0, {"n": 2}, 1e-3, compile_ids=("0/0",), graphs_run=("0/0",)),
             CallRecord(1, {"n": 2}, 1e-3, graphs_run=("0/0",)),
             CallRecord(2, {"n": 4}, 1e-3, compile_ids=("0/1",), graphs_run=("0/1",)))
    spec = TrialSpec("w", "default", "cold", tuple(c.shape for c in calls))
    trial = TrialResult(spec, "ok", calls=calls, compiles=tuple(made), guard_costs=both)
    points, noises = stream_points(trial, {(("n", n),): 10e-6 for n in (2, 4)})
    assert [p.tried for p in points] == [0, 1, 1] and points[1].lookup_s is None and noises == []


@pytest.fixture(scope="module")
def mixed_static():  # type: ignore[no-untyped-def]
    spec = TrialSpec("layers:4", "static", "cold", MIXED, StrategyOptions(backend="eager"), FAST)
    return run_trial(spec)[0]


def test_a_static_trial_records_the_guard_cost_of_every_shape_and_the_stream_order(mixed_static):
    t = mixed_static
    assert t.ok and [c.shape for c in t.guard_costs] == [{"batch": 1}, {"batch": 2}, {"batch": 3}]
    assert not [r for r in t.compiles if r.phase != "stream"]  # the guard phase compiled nothing
    assert all(r.guard_count and r.guard_latency_s for r in t.compiles)  # PyTorch's own figures, kept
    report = build_run_report(RunResult(workload="layers:4", stream=MIXED, trials=(t,)))
    g = report.trials[0].guards
    assert g is not None and [r.shape for r in g.rows] == ["1", "2", "3"]
    assert all(r.entries == 3 and r.lookup is not None and r.guards > 0 for r in g.rows)
    assert g.requests == 6 and g.mean_tried is not None and g.mean_tried > 1  # sizes alternate: others' entries first
    assert [p.tried for p in g.points[3:]] == [3, 2, 3, 2, 3, 3]
    top = {(s.category, s.owner) for s in g.top}
    assert ("module", "self.layers[*]") in top or ("parameter", "self.layers[*].linear") in top
    page = text.RENDERER.render(RunFile(RunResult(workload="layers:4", stream=MIXED, trials=(t,)), report))
    assert "guards: what every call pays" in page and "entries tried" in page
    assert "guard_lookup_s" in csv.render(report).splitlines()[0]


def test_one_repeated_size_tries_its_entry_first():
    stream = tuple({"batch": b} for b in (1, 2, 2, 2, 2))
    spec = TrialSpec("layers:2", "static", "cold", stream, StrategyOptions(backend="eager"),
                     dataclasses.replace(FAST, numerics=False))
    t = run_trial(spec)[0]
    g = build_run_report(RunResult(workload="layers:2", stream=stream, trials=(t,))).trials[0].guards
    assert g is not None and [p.tried for p in g.points] == [0, 1, 1, 1, 1] and g.mean_tried == 1


def test_a_forecast_replays_the_entries_each_request_will_try_from_the_dry_run():
    from compilescope.analysis.guards import forecast_lookups

    # the dry run traced the distinct shapes 8, 16, 32 in order, each compiling an entry
    made = [CompileRecord(CompileId(0, i), "f", "m.py", 1, call_index=i) for i in range(3)]
    dry_calls = tuple(CallRecord(i, {"n": n}, None, compile_ids=(f"0/{i}",), graphs_run=(f"0/{i}",))
                      for i, n in enumerate((8, 16, 32)))
    spec = TrialSpec("w", "static", "cold", tuple({"n": n} for n in (8, 16, 32)))
    dry = TrialResult(spec, "ok", calls=dry_calls, compiles=tuple(made))
    stream = tuple({"n": n} for n in (8, 16, 8, 32, 32, 16))
    got = forecast_lookups(stream, dry)
    # 8 compiles (no entry yet), 16 compiles (8's entry rejected it), 8 tries 16's then its own, 32 compiles
    # (both rejected it), 32 again first, 16 behind 32's and 8's
    assert [tried for tried, _ in got] == [0, 1, 2, 2, 1, 3] and all(lookup is None for _, lookup in got)
    order = ("0/2", "0/1", "0/0")
    costs = tuple(GuardCost({"n": n}, (FrameGuards("f (m.py:1)", 0, 1, order, _checks(order, f"0/{i}")),), 3)
                  for i, n in enumerate((8, 16, 32)))
    measured = dataclasses.replace(dry, guard_costs=costs)
    got = forecast_lookups(stream, dry, measured)
    assert [lookup for _, lookup in got] == pytest.approx([None, None, 12e-6, None, 10e-6, 14e-6])


def test_a_forecast_replays_both_frames_a_call_with_a_graph_break_compiled():
    """A call that graph-breaks compiles two frames, so two entries: the forecast's replay keeps
    both (keeping only the last, a later request's first frame had no known entry: its entries
    tried and lookup were lost). The forecast from a dry run of each size once must be what the
    real trial of the whole stream shows, request by request."""
    from compilescope.analysis.guards import forecast_lookups

    from ...workloads_for_tests import __file__ as workloads

    options, measure = StrategyOptions(backend="eager"), dataclasses.replace(FAST, numerics=False)
    ref = f"{workloads}:graph_breaks"
    sizes = tuple({"n": n} for n in (8, 16, 32))
    dry = run_trial(TrialSpec(ref, "static", "cold", sizes, options, measure))[0]
    assert dry.ok and all(len(c.compile_ids) == 2 for c in dry.calls)  # every first call compiled two frames
    assert all(len(g.frames) == 2 for g in dry.guard_costs)
    stream = tuple({"n": n} for n in (8, 16, 8, 32, 32, 16, 8))
    real = run_trial(TrialSpec(ref, "static", "cold", stream, options, measure))[0]
    g = build_run_report(RunResult(workload=ref, stream=stream, trials=(real,))).trials[0].guards
    assert g is not None
    got = forecast_lookups(stream, dry, dry)
    assert [tried for tried, _ in got] == [p.tried for p in g.points] == [0, 2, 4, 4, 2, 6, 6]
    hits = [lookup for (_, lookup), p in zip(got, g.points) if not p.compiled]
    assert len(hits) == 4 and all(lookup is not None and lookup > 0 for lookup in hits)


def test_a_request_that_ran_eagerly_has_no_entries_tried_to_compare():
    from compilescope.analysis.compare import _tried
    from compilescope.report.guards import GuardPoint, GuardSummary

    points = (GuardPoint(0, "8", 0, None, None, compiled=True), GuardPoint(1, "8", 1, 1e-5, 1e-5),
              GuardPoint(2, "16", 0, None, None))  # 16: refused at the recompile limit, ran eagerly
    summary = GuardSummary((), points, 1, None, None, None, None, None, None, False, None, None, (), "", "")
    assert _tried(summary) == {"8": 1}
