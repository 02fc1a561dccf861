"""advise's judgement claims no more than its measurements: it states the horizon it judged
over and where the pick changes, never picks a range taken from the few sizes seen on a gap
inside the noise, gives one answer per cause, and shows every trial it ran. Trials are built
from records, as a run writes them."""

from __future__ import annotations

import dataclasses

import pytest

from compilescope import compat
from compilescope.analysis.advise import EAGER, judge, score
from compilescope.analysis.build import build_run_report
from compilescope.model import (
    CallRecord, CompileId, CompileRecord, MarkSpec, RunResult, SteadyState, StrategyOptions, TrialResult, TrialSpec,
)
from compilescope.report import CodeFix, Proposal, Snippet

STREAM = tuple({"n": n} for n in (16, 32, 16, 64, 32, 16))


def _trial(strategy: str, first_s: float, steady_s: float, *, variant: str = "", compiles: int = 1,
           eager_s: float = 1e-3, cache: str = "cold") -> TrialResult:
    """A trial whose first request compiles for ``first_s`` and whose steady calls take
    ``steady_s`` (eager ``eager_s`` in the same process)."""
    eager = strategy == "eager"
    spec = TrialSpec("w", strategy, "none" if eager else cache, STREAM, variant=variant)
    calls = tuple(CallRecord(i, s, first_s if (i < compiles and not eager) else steady_s,
                             () if eager or i >= compiles else (f"0/{i}",),
                             graphs_run=None if eager else ("0/0",), ran_eagerly=None if eager else False)
                  for i, s in enumerate(STREAM))
    records = () if eager else tuple(
        CompileRecord(CompileId.parse(f"0/{i}"), "f", "f.py", 1, outcome="compiled", compile_time_s=first_s,
                      call_index=i, phase="stream") for i in range(compiles))
    steady = tuple(SteadyState(s, 3, tuple(steady_s * (1 + 0.001 * k) for k in range(12)),
                               () if eager else tuple(eager_s * (1 + 0.001 * k) for k in range(12)),
                               ran_eagerly=None if eager else False)
                   for s in ({"n": 16}, {"n": 32}, {"n": 64}))
    return TrialResult(spec, "ok", calls=calls, compiles=records, steady=steady)


def _report(*trials: TrialResult):
    return build_run_report(RunResult(workload="w", stream=STREAM, trials=trials))


def _proposal(strategy: str, name: str, marks=()):
    return Proposal(name, strategy, StrategyOptions(marks=tuple(marks)), ("L['x'] dim 0 varied",), Snippet("compiled = model"))


def test_a_short_stream_states_its_horizon_and_from_how_many_requests_compiling_is_picked():
    report = _report(_trial("eager", 1e-3, 1e-3), _trial("default", 2.0, 0.5e-3))
    advice = judge(report, [], "total", None, [])
    assert advice.recommendation is not None and advice.recommendation.proposal is EAGER
    text = advice.horizon
    assert text.startswith("judged over this 6-request stream (no --lifetime given): eager is the pick; from ")
    n = int(text.split("; from ")[1].split(" requests")[0].replace(",", ""))
    assert text.endswith(f"from {n:,} requests, default (cold) (within 5% (the noise) of eager from there: a tie, no pay-off; the narrower change is preferred)")
    by = {t.label: t for t in report.trials}

    def picked(requests: int) -> str:
        return judge(report, [], "total", requests, []).horizon.split(": ", 1)[1].split(" is the pick")[0]

    assert picked(n) == "default (cold)" and picked(n - 1) == "eager"
    # the same pick rule at that horizon: the default within 5% of eager is the narrower change
    assert score(by["default (cold)"], "total", n) <= score(by["eager"], "total", n) * 1.05
    assert judge(report, [], "p99", None, []).horizon.startswith("judged on the stream's p99: the lifetime")


def test_a_range_from_the_sizes_seen_is_never_the_pick_inside_the_noise():
    bounded = _proposal("mark-dynamic", "x:0:16:64", [MarkSpec("x", 0, 16, 64)])
    unbounded = _proposal("mark-dynamic", "x:0", [MarkSpec("x", 0)])
    report = _report(_trial("eager", 1e-3, 1e-3), _trial("default", 0.5, 0.5e-3, compiles=3),
                     _trial("mark-dynamic", 0.30, 0.5e-3, variant="x:0:16:64"),
                     _trial("mark-dynamic", 0.31, 0.5e-3, variant="x:0"))
    advice = judge(report, [bounded, unbounded], "total", 10_000, [])
    assert advice.recommendation.label == "mark-dynamic[x:0] (cold)"
    assert "its range is taken from the sizes this stream fed" in advice.tie
    # beyond the noise it may be picked: it is then the only candidate near the best
    clear = _report(_trial("eager", 1e-3, 1e-3), _trial("default", 0.5, 0.5e-3, compiles=3),
                    _trial("mark-dynamic", 0.05, 0.2e-3, variant="x:0:16:64"),
                    _trial("mark-dynamic", 0.31, 0.5e-3, variant="x:0"))
    assert judge(clear, [bounded, unbounded], "total", 10_000, []).recommendation.label == \
        "mark-dynamic[x:0:16:64] (cold)"


def test_one_answer_per_cause_padding_kept_in_one_variant_is_not_said_to_be_rejected():
    plain = Proposal("multiples of 8", "bucket", StrategyOptions(buckets=(16, 32, 64)), ("relation",),
                     Snippet("compiled = model"))
    marked = dataclasses.replace(plain, name="multiples of 8, marked dynamic")
    report = _report(_trial("eager", 1e-3, 1e-3), _trial("default", 0.5, 0.5e-3, compiles=3),
                     _trial("bucket", 0.5, 0.5e-3, variant="multiples of 8", compiles=3),  # does not reduce
                     _trial("bucket", 0.2, 0.5e-3, variant="multiples of 8, marked dynamic"))
    fix = CodeFix("Eq(Mod(s0, 2), 0)", "", relations=("Eq(Mod(s0, 2), 0)", "s0 // 2"), involves=("L['x'] dim 0",))
    advice = judge(report, [plain, marked], "total", 10_000, [fix])
    verdicts = {r.label: r.verdict for r in advice.rows}
    assert verdicts["bucket[multiples of 8] (cold)"] == "rejected"
    assert verdicts["bucket[multiples of 8, marked dynamic] (cold)"] in ("accepted", "recommended")
    (step,) = [f.step for f in advice.code_fixes]
    assert "was measured and kept (bucket[multiples of 8, marked dynamic] (cold)" in step
    assert "rejected" not in step


def test_every_trial_the_advice_ran_is_shown():
    report = _report(_trial("eager", 1e-3, 1e-3), _trial("default", 0.5, 0.5e-3, compiles=3),
                     _trial("static", 0.4, 0.4e-3, compiles=3))
    advice = judge(report, [], "total", 10_000, [])
    rows = {r.label: r for r in advice.rows}
    assert set(rows) == {"eager", "default (cold)", "static (cold)"}
    assert rows["static (cold)"].verdict == "reference" and "not a proposal" in rows["static (cold)"].why
    assert advice.recommendation is None or advice.recommendation.label != "static (cold)"


@pytest.mark.parametrize("objective", ["total", "p99", "steady"])
def test_the_horizon_is_in_the_rendered_advice(objective):
    from compilescope.render.console import advice_renderables, to_text

    report = _report(_trial("eager", 1e-3, 1e-3), _trial("default", 2.0, 0.5e-3))
    advice = judge(report, [], objective, None, [])
    text = " ".join(to_text(advice_renderables(advice), width=300).split())
    assert advice.horizon and advice.horizon in text


def test_pytorchs_own_hint_on_a_graph_break_is_a_measured_proposal():
    from compilescope.analysis.advise import hint_proposals
    from compilescope.model import GraphBreak

    text = ("Dynamic shape operator\n  Explanation: Operator `aten.nonzero.default`'s output shape depends on input "
            "Tensor data.\n  Hint: Enable tracing of dynamic shape operators with "
            "`torch._dynamo.config.capture_dynamic_output_shape_ops = True`\n")
    default = dataclasses.replace(_trial("default", 0.5, 0.5e-3, compiles=3),
                                  graph_breaks=(GraphBreak(text, "w.py", 7), GraphBreak(text, "w.py", 7)))
    (p,) = hint_proposals(default, StrategyOptions(backend="eager"))
    assert (p.strategy, p.name, p.options.config, p.target) == (
        "default", "capture_dynamic_output_shape_ops=True", "capture_dynamic_output_shape_ops=True", "breaks")
    assert p.snippet.setup.startswith("torch._dynamo.config.capture_dynamic_output_shape_ops = True\n")
    assert "PyTorch's hint on 2 graph break(s): Dynamic shape operator" in p.addresses[0]
    same = dataclasses.replace(default, spec=dataclasses.replace(default.spec, variant=p.name))
    fewer = dataclasses.replace(_trial("default", 0.5, 0.5e-3, compiles=1), spec=same.spec)
    for measured, verdict in ((same, "rejected"), (fewer, "accepted")):
        advice = judge(_report(_trial("eager", 1e-3, 1e-3), default, measured), [p], "total", 10_000, [])
        row = next(r for r in advice.rows if r.label == "default[capture_dynamic_output_shape_ops=True] (cold)")
        assert row.verdict in (verdict, "recommended" if verdict == "accepted" else verdict), row.why
    assert "graph break(s)" in row.why


def test_staying_eager_is_scored_on_the_eager_samples_beside_the_defaults_compiled_calls():
    # the default: 1.0 ms a call compiled, 0.9 ms eager in its own process (the speedup's comparison:
    # compiling is slower); the eager trial's own process measured 1.5 ms
    report = _report(_trial("eager", 1e-3, 1.5e-3), _trial("default", 0.2, 1.0e-3, eager_s=0.9e-3))
    advice = judge(report, [], "total", 1_000_000, [])
    eager = next(r for r in advice.rows if r.proposal is EAGER)
    assert eager.score == pytest.approx(eager.trial.stream_s + (1_000_000 - 6) * 0.9e-3, rel=1e-2)
    assert advice.recommendation is not None and advice.recommendation.proposal is EAGER
    # on the eager trial's own figure compiling would have "paid off" from about 400 requests
    assert "eager is the pick" in advice.horizon and "default (cold) is the pick" not in advice.horizon


@pytest.mark.compat("shapes_spec")
@pytest.mark.skipif(not compat.has_feature("shapes_spec"), reason=compat.unavailable("shapes_spec"))
def test_a_shapes_spec_snippet_for_a_wrapper_frame_keys_its_inputs_as_the_frame_receives_them():
    import torch

    from compilescope import watch
    from compilescope.analysis.advise import _shapes_spec_snippet
    from tests.workloads_for_tests import _Wrapped

    # a decorated forward: the frame is (*args, **kwargs), and PyTorch names ids L['kwargs']['ids']
    snippet = _shapes_spec_snippet([("ids", 1), ("mask", 1)], {"ids": 2, "mask": 2}, StrategyOptions(backend="eager"),
                                   {"ids": "L['kwargs']['ids']"})
    assert ("ParamsSpec({'**kwargs': {'ids': TensorSpec([None, ShapeVar('ids_1', min=0)]), "
            "'mask': TensorSpec([None, ShapeVar('mask_1', min=0)])}})") in snippet.setup, snippet.setup
    ns = {"torch": torch, "model": _Wrapped()}
    torch.compiler.reset()
    with torch.no_grad(), watch() as w:
        exec(snippet.setup, ns)  # noqa: S102 - the snippet runs as printed
        for seq in (1, 4, 8):
            ns["compiled"](ids=torch.ones(2, seq), mask=torch.ones(2, seq))
    torch.compiler.reset()
    assert w.compiles == 1


def test_a_proposal_for_compile_time_is_accepted_on_its_compile_time():
    regional = Proposal("Block", "regional", StrategyOptions(), ("compile time",), Snippet("compiled = model"),
                        target="compile_s")
    report = _report(_trial("eager", 1e-3, 1e-3), _trial("default", 2.0, 0.5e-3),
                     _trial("regional", 0.5, 0.5e-3, variant="Block"))
    row = next(r for r in judge(report, [regional], "total", None, []).rows if r.proposal is regional)
    assert row.verdict in ("accepted", "recommended")
    assert row.why.startswith("measured: 0.5 s compiling against the default's 2.0 s; 1 compile(s) against 1"), row.why
    # each trial's compile time is one sample: a few percent less is within its jitter, no reduction
    close = _report(_trial("eager", 1e-3, 1e-3), _trial("default", 4.7, 0.5e-3),
                    _trial("regional", 4.5, 0.5e-3, variant="Block"))
    row = next(r for r in judge(close, [regional], "total", None, []).rows if r.proposal is regional)
    assert row.verdict == "rejected"
    assert row.why == ("did not reduce what it targets beyond one sample's jitter: 4.5 s compiling against the "
                       "default's 4.7 s (within ±25%)"), row.why


def test_a_slowdown_the_mix_tells_apart_but_no_shape_alone_says_which_told_it():
    from types import SimpleNamespace

    from compilescope.analysis.verdict import steady_clauses
    from compilescope.report.run import SpeedGroup, SteadySummary

    none = SpeedGroup(0, None, None, ())
    summary = SteadySummary(3, 0.88, 0.89, none, none, none, "", False, SpeedGroup(3, 0.84, 0.94, ("8", "16", "32")), 3)
    head, shapes = steady_clauses(SimpleNamespace(steady=summary, saving_significant=True))
    assert head.startswith("steady-state execution was slower than eager on this stream's mix of shapes")
    assert shapes == ("3 of 3 shapes could not be told apart from eager (×0.84–0.94; too few "
                      "samples to test them); the stream's mix, all its samples together, could")
    _, alone = steady_clauses(SimpleNamespace(steady=summary, saving_significant=False, saving_per_request_s=None, saving_beyond_band=False,
                                              saving_noise_s=None))
    assert "together" not in alone


def test_a_0_1_specialisation_is_worded_as_such_and_left_to_the_measured_unbacked_proposal():
    """'L['input_ids'] dim 0 outside its range: 2 <= …' under 'needs a code change (not
    measured)', while the unbacked proposal was measured in the same run: no range was set
    (sizes 0 and 1 are always specialised), and the measured proposal is its fix."""
    from compilescope.analysis.advice import describe
    from compilescope.analysis.advise import _unbacked_covers
    from compilescope.report import Cause

    cause = Cause("L['input_ids']", "specialization", 0, ("2 <= L['input_ids'].size()[0]",), ("0/2",), True,
                  "use mark_unbacked", example="2 <= L['input_ids'].size()[0]")
    assert describe(cause) == ("L['input_ids'] dim 0 specialised (a size of 0 or 1 is compiled for apart): "
                               "2 <= L['input_ids'].size()[0] → 1 compile(s)")
    assert _unbacked_covers(cause, {("input_ids", 0): [1, 2, 4]})
    assert not _unbacked_covers(cause, {("input_ids", 0): [2, 4]}) and not _unbacked_covers(cause, {})


def _never_compiled(t: TrialResult) -> TrialResult:
    """``t`` as it runs when its only frame fails to compile: every call eager, no compiled figure."""
    failed = CompileRecord(CompileId.parse("0/0"), "f", "f.py", 1, outcome="failed", call_index=0, phase="stream")
    calls = tuple(dataclasses.replace(c, graphs_run=(), ran_eagerly=True, compile_ids=("0/0",) if c.index == 0 else ())
                  for c in t.calls)
    steady = tuple(dataclasses.replace(s, ran_eagerly=True) for s in t.steady)
    return dataclasses.replace(t, calls=calls, compiles=(failed,), steady=steady)


def test_a_setting_whose_frame_never_compiles_is_never_the_pick_and_a_fix_is_judged_against_its_fallbacks():
    # every setting falls back alike (the frame never compiles): a proposal is not rejected for
    # the default's own fallbacks, and neither is picked over eager, whose figures they repeat
    default = _never_compiled(_trial("default", 0.01, 1e-3))
    marked = _never_compiled(_trial("mark-dynamic", 0.01, 1e-3, variant="x:0"))
    report = _report(_trial("eager", 1e-3, 1e-3), default, marked)
    advice = judge(report, [_proposal("mark-dynamic", "x:0", [MarkSpec("x", 0)])], "total", 10 ** 6, [])
    rows = {r.label: r for r in advice.rows}
    assert "ran eagerly" not in rows["mark-dynamic[x:0] (cold)"].why  # judged on what it targets
    assert advice.recommendation is not None and advice.recommendation.proposal is EAGER
    assert "eager is the pick" in advice.horizon


def test_a_shape_proposal_claims_only_the_causes_it_can_remove():
    """gpt2-tiny's batch went 1 → 2 and its sequence 8 → 16; a cache's length varied too. A
    backed mark (mark_dynamic, dynamic_sources) specialises sizes 0 and 1 all the same, and
    marks only the dims it names: it addresses the sequence alone; dynamic=True every dim but
    the batch; the unbacked spec the dims it names, the batch included."""
    from compilescope.analysis.advise import _addressed
    from compilescope.report import Cause

    batch = Cause("L['input_ids']", "size", 0, (1, 2), ("0/1",), True, "", description="batch")
    seq = Cause("L['input_ids']", "size", 1, (8, 16), ("0/1",), True, "", description="seq")
    cache = Cause("L['past'].layers[0].keys", "size", 2, (12, 13), ("0/2",), True, "", description="cache")
    chosen = [("input_ids", 0), ("input_ids", 1)]
    assert _addressed((batch, seq, cache), chosen, backed=True) == ("seq",)
    assert _addressed((batch, seq, cache), None, backed=True) == ("seq", "cache")
    assert _addressed((batch, seq, cache), chosen, backed=False) == ("batch", "seq")


def test_a_rejection_for_running_eagerly_says_why_the_frame_did():
    """A shapes-spec proposal whose own compile failed (a data-dependent UserError) and whose
    model then ran its outer frame eagerly: the rejection names the failed compile, as the
    run's table does, not only the count."""
    from types import SimpleNamespace

    from compilescope.analysis.advise import _rejection

    row = SimpleNamespace(partial_fallback_calls=1, fallback_calls=0,
                          cause="frame 0 (GPT2LMHeadModel.forward) ran eagerly: compile 0/0 failed (UserError)")
    t = SimpleNamespace(status="ok", call_errors=0, fallbacks=0, partial_fallbacks=1, numerics_failed=0, rows=(row,))
    default = SimpleNamespace(fallbacks=0, partial_fallbacks=0)
    assert _rejection(t, default) == ("1 request(s) ran partly eagerly (frame 0 (GPT2LMHeadModel.forward) ran "
                                      "eagerly: compile 0/0 failed (UserError))")


def test_a_size_inside_an_object_argument_is_listed_as_a_code_change_not_dropped(tmp_path, monkeypatch):
    """The default recompiled on ``b.feats`` dim 1, a tensor inside a dataclass: no input dim a
    proposal marks, so before it was neither proposed nor listed (``proposals: [],
    code_fixes: []``); its mark is listed as the change it needs."""
    from pathlib import Path

    from compilescope.analysis.advise import propose
    from compilescope.execute.trial import run_trial
    from compilescope.model import MeasureOptions, StrategyOptions, TrialSpec
    from compilescope.workload import load_workload

    ref = f"{Path(__file__).resolve().parents[2] / 'workloads_for_tests.py'}:dataclass_argument"
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))
    spec = TrialSpec(ref, "default", "cold", load_workload(ref).default_stream, StrategyOptions(backend="eager"),
                     MeasureOptions(steady=False, numerics=False))
    default = run_trial(spec)[0]
    assert sum(r.outcome == "compiled" for r in default.compiles) == 2  # the recompile is real
    _, fixes = propose(default, StrategyOptions(backend="eager"), {}, 3, compat.recompile_limit_value())
    (fix,) = [f for f in fixes if "L['b'].feats dim 1" in f.cause]
    assert "torch._dynamo.mark_dynamic(b.feats, 1)" in fix.step, fix


def test_a_training_steps_mark_offers_no_setting_it_cannot_name(tmp_path, monkeypatch):
    """The step's inputs (x, y) do not bind to the model's ``forward(input)``: the mark
    proposal names them arg0/arg1 as the workload makes them, and the no-code-change setting
    would have to name them as the compiled frame does — which no cause gives for y (the
    model never receives it). Before, ``dynamic_sources = "L['arg0']:0,L['arg1']:0"`` was
    printed, unmeasured; it marks nothing (2 graphs, as without it)."""
    from pathlib import Path

    from compilescope.analysis.advise import propose
    from compilescope.execute.trial import run_trial
    from compilescope.model import MeasureOptions, StrategyOptions, TrialSpec
    from compilescope.workload import load_workload

    ref = f"{Path(__file__).resolve().parents[2] / 'workloads_for_tests.py'}:training_step"
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))
    spec = TrialSpec(ref, "default", "cold", load_workload(ref).default_stream, StrategyOptions(backend="eager"),
                     MeasureOptions(steady=False, numerics=False))
    default = run_trial(spec)[0]
    sizes = {("arg0", 0): [16, 24, 48], ("arg1", 0): [16, 24, 48]}
    proposals, _ = propose(default, StrategyOptions(backend="eager"), sizes, 3, compat.recompile_limit_value())
    (marks,) = [p for p in proposals if p.name == "arg0:0,arg1:0"]
    assert marks.alternative is None
    assert all("L['arg" not in (p.alternative.setup if p.alternative else "") for p in proposals)


def test_static_graphs_are_said_faster_only_where_the_samples_test_says_so():
    """The default's dynamic graphs against static ones, each through its own process's
    interleaved eager / compiled ratios: a shape counts only where Mann–Whitney (held over the
    shapes) says static is faster; one noisy shape's ×5 alone is no claim, and too few
    samples to ever test is "could not tell", never "they do"."""
    from types import SimpleNamespace

    from compilescope.analysis.advise import _dynamic_slower
    from compilescope.analysis.advise_guards import Interleaved

    def report(label):
        rows = tuple(SimpleNamespace(shape=s, speedup=1.0, status="compiled") for s in ("8", "16", "32"))
        return SimpleNamespace(label=label, rows=rows)

    default, static = report("default (cold)"), report("static (cold)")

    def spread(center, n=12):
        return [center * (1 + 0.01 * (k - n // 2)) for k in range(n)]

    faster = {"default (cold)": Interleaved({s: spread(1.0) for s in ("8", "16", "32")}),
              "static (cold)": Interleaved({s: spread(1.5) for s in ("8", "16", "32")})}
    told, untold = _dynamic_slower(default, static, faster)
    assert told.startswith("static graphs were ×1.50 faster relative to eager on 3 of 3 shapes") and not untold
    # one shape ×5 faster, but two sampled alike: not "most shapes"
    one = {"default (cold)": faster["default (cold)"],
           "static (cold)": Interleaved({"8": spread(5.0), "16": spread(1.0), "32": spread(1.0)})}
    assert _dynamic_slower(default, static, one) == ("", "")
    few = {k: Interleaved({s: v[:3] for s, v in x.ratios.items()}) for k, x in faster.items()}
    told, untold = _dynamic_slower(default, static, few)
    assert not told and untold == "3 against 3 samples a shape cannot reach 1% over 3 shape(s)"
    assert _dynamic_slower(default, static, {}) == ("", "no interleaved samples to test")
    # one shape testable of three: no majority could ever be shown, so no "not on most shapes" either
    mixed = {k: Interleaved({s: (v if s == "8" else v[:3]) for s, v in x.ratios.items()}) for k, x in faster.items()}
    told, untold = _dynamic_slower(default, static, mixed)
    assert not told and untold == "3 against 3 samples a shape cannot reach 1% over 3 shape(s) (1 could)", untold
