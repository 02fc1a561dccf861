"""advise: proposals from the default's recorded causes, each measured in the same run."""

from __future__ import annotations

import json
import re

from hypothesis import given
from hypothesis import strategies as st

from compilescope.analysis.advise import distribution_buckets
from compilescope.model import MeasureOptions

from ..conftest import forked_trials_here

FAST = MeasureOptions(warmup=1, samples=5, min_samples=5, budget_s=0.05)


SINCOS_STREAM = tuple({"n": n} for n in (16, 16, 32, 32, 64, 16))


def test_sincos_proposes_marking_x_dim_0_and_measures_one_compile(advised_runs):
    result, advice = advised_runs("sincos", SINCOS_STREAM)  # the run test_advice_snippets reads
    rows = {r.label: r for r in advice.rows}
    assert rows["default (cold)"].trial.stream.compiles == 2
    marked = [r for r in advice.rows if r.proposal is not None and r.proposal.strategy == "mark-dynamic"]
    assert {r.label for r in marked} == {"mark-dynamic[x:0:16:64] (cold)", "mark-dynamic[x:0] (cold)"}
    assert all(r.trial.stream.compiles == 1 and r.verdict in ("accepted", "recommended") for r in marked)
    rec = advice.recommendation
    # with the eager backend every compile takes milliseconds, so whether a proposal beats the
    # default — and which — is timing; a recommendation, when made, is one that measured 1 compile
    if rec is not None and rec.proposal.strategy != "eager":
        assert rec.proposal is not None and rec.trial.stream.compiles == 1
        assert "mark_dynamic(x, 0" in rec.proposal.code or rec.proposal.strategy in ("dynamic", "eager")
    assert {t.spec.name for t in result.trials} >= {"eager", "default", "mark-dynamic[x:0:16:64]"}


def test_transformer_proposes_both_varying_dims_and_rejects_what_fails(advised_runs):
    from compilescope.workload import load_workload

    _, advice = advised_runs("transformer", tuple(load_workload("transformer").default_stream))
    proposals = [r.proposal for r in advice.rows if r.proposal is not None]
    assert proposals
    marked = {(m.input, m.dim) for p in proposals if p.strategy == "mark-dynamic" for m in p.options.marks}
    assert marked == {("x", 0), ("x", 1)}  # batch and sequence, though PyTorch's reason named only the first
    for row in advice.rows:
        if row.verdict == "rejected":
            assert row.why  # a rejection always says why
    if advice.recommendation is not None:
        assert advice.recommendation.trial.fallbacks == 0 and advice.recommendation.trial.status == "ok"
    # compile time dominates a 8-request stream and the encoder has 4 identical layers:
    # regional and nested compilation are measured, each judged on compile seconds
    blocks = {r.proposal.strategy: r for r in advice.rows if r.proposal and r.proposal.target == "compile_s"}
    assert set(blocks) == {"regional", "nested"}
    assert all(r.proposal.options.block == "TransformerEncoderLayer" for r in blocks.values())
    for r in blocks.values():
        assert r.verdict == "rejected" and "compiling" in r.why or r.verdict in ("accepted", "recommended")
    # dynamic=True is measured beside the narrow marks
    assert any(r.proposal and r.proposal.strategy == "dynamic" for r in advice.rows)


def test_run_advise_is_advise(cli_in_process, tmp_path):
    out = tmp_path / "a.json"
    with forked_trials_here():  # what each proposal compiles is read, not a cold start's time
        proc = cli_in_process("run", "sincos", "--stream", "16,16,32,32,64,16", "--advise", "--backend", "eager",
                              "--samples", "5", "--budget", "0.05", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())
    assert "advise — objective: total" in text
    # which proposal wins depends on milliseconds of timing with the eager backend; what each
    # proposal measured does not
    # piped, each row of the advise table is one record on one line
    assert re.search(r"^mark-dynamic\[x:0\] \(cold\) · verdict: (accepted|recommended) · compiles \(re\): 1 \(0\) ·",
                     proc.stdout, re.M)
    assert re.search(r"^default \(cold\) · verdict: baseline · compiles \(re\): 2 \(1\) ·", proc.stdout, re.M)
    assert ("recommended: mark-dynamic[x:0" in text or "recommended: dynamic[everything]" in text
            or "recommended: eager" in text or "no measured proposal beat the default" in text)
    # staying eager is judged beside the proposals, on the same objective
    assert re.search(r"^eager · verdict: (accepted|recommended) · compiles \(re\): 0 \(0\) ·", proc.stdout, re.M)
    trials = {t["spec"]["variant"] or t["spec"]["strategy"]: t for t in json.loads(out.read_text())["trials"]}
    assert len([c for c in trials["x:0"]["compiles"] if c["phase"] == "stream"]) == 1


def test_distribution_buckets_are_observed_sizes_within_the_waste_bound():
    values = [16] * 5 + [17, 18, 30, 31, 32, 32, 100, 120]
    buckets = distribution_buckets(values, 0.125)
    assert set(buckets) <= set(values) and max(buckets) == 120
    # from the top: 120 also takes 100 (mean waste 8.3%); 32 takes 30–32 and 18 (10.6%), not 17;
    # 17 takes 16 and 17
    assert buckets == (17, 32, 120)


@given(st.lists(st.integers(1, 4096), min_size=1, max_size=60), st.floats(0.0, 0.5))
def test_distribution_buckets_bound_the_mean_padding_waste(values, bound):
    buckets = distribution_buckets(values, bound)
    assert set(buckets) <= set(values) and max(buckets) == max(values)
    padded = [next(b for b in buckets if b >= v) for v in values]
    groups: dict[int, list[float]] = {}
    for v, b in zip(values, padded):
        groups.setdefault(b, []).append((b - v) / b)
    assert all(sum(w) / len(w) <= bound + 1e-9 for w in groups.values())  # per bucket, so overall too


def test_buckets_from_the_distribution_are_proposed_only_when_static_beat_dynamic():
    from types import SimpleNamespace

    from compilescope.analysis.advise import propose
    from compilescope.model import StrategyOptions, TrialResult, TrialSpec

    spec = TrialSpec("sincos", "default", "cold", ({"n": 16},), StrategyOptions(backend="eager"), FAST)
    default = TrialResult(spec, "ok")

    from compilescope.analysis.advise_guards import Interleaved

    def report(label, *speedups):
        return SimpleNamespace(label=label, rows=[SimpleNamespace(shape=str(i), speedup=x, status="compiled")
                                                  for i, x in enumerate(speedups)])

    def sampled(static, default):  # each trial's interleaved eager / compiled ratios, 12 a shape
        return {label: Interleaved({str(i): [x * (1 + 0.01 * k) for k in range(-6, 6)] for i, x in enumerate(xs)})
                for label, xs in (("static (cold)", static), ("default (cold)", default))}

    values = {"n": [16, 17, 18, 30, 31, 32, 100, 120]}
    static, dflt = report("static (cold)", 1.3, 1.3, 1.3), report("default (cold)", 1.0, 1.0, 1.2)
    slow_dynamic = propose(default, spec.options, {}, 8, 8, static=static, default_report=dflt, stream_values=values,
                           samples=sampled((1.3, 1.3, 1.3), (1.0, 1.0, 1.2)))[0]
    (bucket,) = slow_dynamic
    assert bucket.strategy == "bucket" and bucket.options.buckets == (18, 32, 120) and bucket.target == "steady"
    assert "pads n up to the next of 18, 32, 120" in bucket.code
    same = propose(default, spec.options, {}, 8, 8, static=static, default_report=dflt, stream_values=values,
                   samples=sampled((1.0, 1.0, 1.0), (1.0, 1.0, 1.0)))[0]
    assert same == []  # no evidence that static graphs are faster: no buckets
    untested = propose(default, spec.options, {}, 8, 8, static=static, default_report=dflt, stream_values=values)[0]
    assert untested == []  # no samples to test the medians by: no claim, no buckets
    two_dims = propose(default, spec.options, {}, 8, 8, static=report("static (cold)", 1.3, 1.3),
                       default_report=report("default (cold)", 1.0, 1.0),
                       stream_values={"batch": [1, 2, 4], "seq": [16, 32, 48]}, samples=sampled((1.3, 1.3), (1.0, 1.0)))[0]
    assert two_dims == []  # one bucket list would pad batch to sequence sizes: not proposed


# ----------------------------------------------------------------------------- judged from records

from types import SimpleNamespace  # noqa: E402

from compilescope.analysis.advice import group_causes, relation_step  # noqa: E402
from compilescope.analysis.advise import EAGER, Proposal, Snippet, judge, multiple_buckets, propose  # noqa: E402
from compilescope.torchtext import parse_guard_failure  # noqa: E402
from compilescope.model import CompileId, CompileRecord, StrategyOptions, TrialResult, TrialSpec  # noqa: E402
from compilescope.report import CompileCounts  # noqa: E402


def _trial(label, strategy, stream_s, compiles=1, recompiles=0, entries=0, why_status="ok", partial_fallbacks=0):
    """A trial report with only what judging reads: its stream wall, compile counts, and the
    compiles each frame holds."""
    rows = (SimpleNamespace(shape="n=16", steady=SimpleNamespace(median=stream_s / 10), eager=None, requests=10,
                            fallback_calls=0, partial_fallback_calls=partial_fallbacks, cause=""),)
    compile_rows = tuple(SimpleNamespace(outcome="compiled", phase="stream", epoch=0, compile_id=f"1/{i}",
                                         name="Block.forward") for i in range(entries))
    return SimpleNamespace(label=label, strategy=strategy, status=why_status, error=None, call_errors=0, fallbacks=0,
                           partial_fallbacks=partial_fallbacks, numerics_failed=0, stream=CompileCounts(compiles, recompiles, 0, 0, stream_s / 2),
                           rows=rows, timeline=(), stream_s=stream_s, requests=10, compile_rows=compile_rows,
                           graph_breaks=(), compiles_code=strategy != "eager", completed=10)


def _proposal(name, strategy="mark-dynamic", target="recompiles", **options):
    return Proposal(name, strategy, StrategyOptions(backend="eager", **options), ("x",),
                    Snippet("compiled = torch.compile(model, backend='eager')"), target)


def test_staying_eager_is_recommended_when_it_wins_over_the_lifetime():
    trials = (_trial("eager", "eager", 0.68, compiles=0), _trial("default (cold)", "default", 12.1, 3, 2),
              _trial("mark-dynamic[x:0] (cold)", "mark-dynamic", 9.0))
    report = SimpleNamespace(trials=trials, requests=10)
    advice = judge(report, [_proposal("x:0")], "total", 10, [])
    assert advice.recommendation is not None and advice.recommendation.proposal is EAGER
    assert advice.recommendation.label == "eager" and advice.recommendation.proposal.snippet.setup == "compiled = model"
    # over a long enough lifetime compiling pays: the same trials, a compiled pick
    slow_eager = (_trial("eager", "eager", 0.68 * 40, compiles=0),) + trials[1:]
    advice = judge(SimpleNamespace(trials=slow_eager, requests=10), [_proposal("x:0")], "total", 10_000, [])
    assert advice.recommendation is not None and advice.recommendation.proposal.strategy == "mark-dynamic"


def test_a_pick_within_the_noise_says_so_and_prefers_the_narrower_change():
    trials = (_trial("eager", "eager", 50.0, compiles=0), _trial("default (cold)", "default", 9.0, 3, 2),
              _trial("mark-dynamic[x:0] (cold)", "mark-dynamic", 1.02), _trial("dynamic[everything] (cold)", "dynamic", 1.0))
    proposals = [_proposal("x:0"), _proposal("everything", "dynamic")]
    picks = {judge(SimpleNamespace(trials=trials, requests=10), proposals, "total", 10, []).recommendation.label
             for _ in range(3)}
    assert picks == {"mark-dynamic[x:0] (cold)"}  # the narrower of the two, every time
    advice = judge(SimpleNamespace(trials=trials, requests=10), proposals, "total", 10, [])
    assert "within 5% (the noise) of dynamic[everything] (cold)" in advice.tie


def test_a_proposal_that_ends_at_the_recompile_limit_is_not_recommended():
    trials = (_trial("eager", "eager", 50.0, compiles=0), _trial("default (cold)", "default", 9.0, 8, 7),
              _trial("regional[Block] (cold)", "regional", 1.0, compiles=8, entries=8))
    advice = judge(SimpleNamespace(trials=trials, requests=10), [_proposal("Block", "regional", "compile_s",
                                                                             block="Block")], "total", 10, [],
                   recompile_limit=8)
    row = next(r for r in advice.rows if r.label == "regional[Block] (cold)")
    assert row.verdict == "rejected" and "at the recompile limit: Block.forward holds 8 entries (limit 8)" in row.why
    assert advice.recommendation is None


def test_a_proposal_that_ran_partly_eagerly_is_rejected_and_a_partial_default_is_no_candidate():
    trials = (_trial("eager", "eager", 50.0, compiles=0), _trial("default (cold)", "default", 9.0, 3, 2),
              _trial("mark-dynamic[x:0] (cold)", "mark-dynamic", 1.0, partial_fallbacks=2))
    advice = judge(SimpleNamespace(trials=trials, requests=10), [_proposal("x:0")], "total", 10, [])
    row = next(r for r in advice.rows if r.label == "mark-dynamic[x:0] (cold)")
    assert row.verdict == "rejected" and row.why == "2 request(s) ran partly eagerly"
    assert advice.recommendation is None  # the default stays
    # a default whose requests raised counts them as no time: staying eager is measured, it is not
    trials = (_trial("eager", "eager", 5.0, compiles=0), _trial("default (cold)", "default", 1.0, why_status="partial"))
    advice = judge(SimpleNamespace(trials=trials, requests=10), [], "total", 10, [])
    assert advice.recommendation is not None and advice.recommendation.label == "eager"
    # a score of 0 is the lowest, not missing
    trials = (_trial("eager", "eager", 5.0, compiles=0), _trial("default (cold)", "default", 0.0))
    advice = judge(SimpleNamespace(trials=trials, requests=10), [], "total", 10, [])
    assert advice.recommendation is None


def _default_with(reasons, sizes_fed):
    spec = TrialSpec("w", "default", "cold", tuple({"n": n} for n in sizes_fed), StrategyOptions(backend="eager"), FAST)
    compiles = tuple(
        CompileRecord(CompileId(0, i), "forward", "m.py", 1, guard_failures=tuple(parse_guard_failure(r) for r in rs),
                      reasons=tuple(rs))
        for i, rs in enumerate(reasons))
    return TrialResult(spec, "ok", compiles=compiles)


def test_padding_to_a_multiple_pads_the_sizes_fed_and_is_measured_with_marks():
    fed = (3201, 4000, 5557, 6440, 12000)
    default = _default_with([[], ["tensor 'waveforms' size mismatch at index 1. expected 3201, actual 4000"],
                             ["Eq(Mod(waveforms.size()[1], 8), 0)  # y = f(x)  # sep.py:12 in forward (_refs/x.py:1 in r)"]],
                            fed)
    sizes = {("waveforms", 1): list(fed)}
    proposals, fixes = propose(default, default.spec.options, sizes, 5, 8, ranks={"waveforms": 2})
    buckets = {p.name: p for p in proposals if p.strategy == "bucket"}
    assert set(buckets) == {"multiples of 8", "multiples of 8, marked dynamic"}
    plain = buckets["multiples of 8"].options.buckets
    assert plain == multiple_buckets(fed, 8) == (3208, 4000, 5560, 6440, 12000)  # every size fed pads up
    assert buckets["multiples of 8, marked dynamic"].options.marks[0].input == "waveforms"
    for p in proposals:
        assert "…" not in p.code and "min=1," not in p.code and "min=0," not in p.code
        for m in p.options.marks:
            assert m.min is None or (m.min >= 2 and m.max >= max(fed))
    (fix,) = fixes
    assert "ceil_mode" not in fix.step and "sep.py:12 in forward" in fix.step


def test_unreachable_sources_are_never_marked():
    default = _default_with([[], ["tensor '___stack0' size mismatch at index 0. expected 5, actual 7"],
                             ["tensor 'x' size mismatch at index 0. expected 5, actual 9"]], (5, 7, 9))
    proposals, _ = propose(default, default.spec.options, {("x", 0): [5, 7, 9]}, 3, 8, ranks={"x": 2})
    marked = {m.input for p in proposals for m in p.options.marks}
    assert marked == {"x"}
    assert all("___stack0" not in p.code for p in proposals)
    shapes_spec = propose(default, default.spec.options, {("x", 0): [1, 7, 9]}, 3, 8, ranks={"x": 2})[0]
    (spec,) = [p for p in shapes_spec if p.strategy == "shapes-spec"]
    assert "TensorSpec([ShapeVar('x_0', min=0), None])" in spec.snippet.setup and "…" not in spec.code


def test_a_rejected_padding_is_not_offered_again_as_text():
    from compilescope.analysis.advise import CodeFix, Judged, _checked_fixes

    texts = ("Eq(Mod(x.size()[0], 40), 0)",)
    fix = CodeFix("relation", relation_step(texts, ("L['x'] dim 0",)), texts, ("L['x'] dim 0",))
    assert "pad L['x'] dim 0 to a multiple of 40" in fix.step
    rejected = Judged("bucket[multiples of 40] (cold)", _proposal("multiples of 40", "bucket"), None, 1.0, "rejected",
                      "did not reduce what it targets")
    (again,) = _checked_fixes([fix], [rejected])
    assert "pad L['x'] dim 0 to a multiple" not in again.step
    assert "measured and rejected (bucket[multiples of 40] (cold): did not reduce what it targets)" in again.step


def test_observed_values_are_listed_completely_or_with_how_many_more():
    default = _default_with([[], ["tensor 'x' size mismatch at index 0. expected 64, actual 48"]], ())
    fed = {("x", 0): [1, 32, 40, 48, 64, 100]}
    (cause,) = group_causes(default.compiles, observed=fed)
    assert "varied over 1, 32, 40, 48, 64, 100 →" in cause.description
    assert "min=1" not in cause.next_step and "mark_unbacked(x, 0)" in cause.next_step
    many = {("x", 0): list(range(2, 40))}
    (cause,) = group_causes(default.compiles, observed=many)
    assert "13 and 28 more" in cause.description  # 2..39 fed, 48 and 64 from the guard


def test_a_size_threshold_is_not_a_mark_dynamic_range_unless_mark_dynamic_was_called():
    threshold = ("6440 <= waveforms.size()[1] <= 12879  # h = self.conv(w)  # sep.py:12 in forward "
                 "(_meta_registrations.py:2410 in meta_conv)")
    default = _default_with([[], [threshold]], ())
    (cause,) = group_causes(default.compiles)
    assert cause.kind == "relation" and "widen" not in cause.next_step and "mark_dynamic was" not in cause.next_step
    unknown = _default_with([[], ["6440 <= waveforms.size()[1] <= 12879"]], ())
    (cause,) = group_causes(unknown.compiles, marked=False)
    assert cause.kind == "range" and "widen" not in cause.next_step and "threshold" in cause.next_step
    (cause,) = group_causes(unknown.compiles, marked=True)
    assert "outside the range given to mark_dynamic" in cause.next_step
