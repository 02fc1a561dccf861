"""The report model and the verdict, from hand-made records (no torch timing involved)."""

from __future__ import annotations

import statistics

import pytest

from compilescope.analysis.build import build_run_report, trial_report
from compilescope.analysis.regimes import break_even_request, summarize_samples
from compilescope.analysis.verdict import verdict_text
from compilescope.errors import OptionError
from compilescope.model import (
    CallRecord,
    CompileId,
    CompileRecord,
    GuardFailure,
    NumericsCheck,
    RunResult,
    SteadyState,
    TrialEnv,
    TrialResult,
    TrialSpec,
)
from compilescope.options import parse_lifetime
from compilescope.render import console, csv


def calls(latencies, shapes=None):
    shapes = shapes or [16] * len(latencies)
    return tuple(CallRecord(i, {"n": s}, t) for i, (t, s) in enumerate(zip(latencies, shapes)))


def rec(cid, call_index, outcome="compiled", seconds=0.2, reasons=(), phase="stream", backward=None):
    return CompileRecord(CompileId.parse(cid), "f", "f.py", 1, outcome=outcome, compile_time_s=seconds,
                         guard_failures=tuple(reasons), call_index=call_index, phase=phase, backward_compile_s=backward,
                         fail_type="Unsupported" if outcome == "refused" else None)


def steady(n, compiled, eager, ran_eagerly=False):
    return SteadyState({"n": n}, 3, tuple(compiled), tuple(eager), ran_eagerly=ran_eagerly)


def samples(center, spread=0.01):
    return [center * (1 + spread * k) for k in (-2, -1, 0, 1, 2)]


def test_median_and_iqr_are_the_true_ones():
    s = summarize_samples([1.0, 2.0, 3.0, 4.0, 100.0])
    assert s.median == 3.0 and s.q1 == 2.0 and s.q3 == 4.0 and s.n == 5
    assert summarize_samples([1.0, 2.0, 3.0, 4.0]).median == 2.5  # not the upper middle value
    assert s.noisy
    assert summarize_samples([]) is None


def test_break_even():
    assert break_even_request(calls([5.0, 1.0, 1.0, 1.0, 1.0, 1.0]), calls([2.0] * 6)) == 4
    assert break_even_request(calls([5.0, 1.0, 1.0]), calls([2.0, 2.0, 2.0])) is None
    failed = (CallRecord(0, {"n": 16}, 1.0), CallRecord(1, {"n": 16}, None, error="boom"))
    assert break_even_request(failed, calls([2.0, 2.0])) is None


def _split_trial():
    """Compiling is faster on the 5 large shapes (×1.12–1.75) and slower on the 5 small ones."""
    sizes = [8, 10, 12, 14, 16, 1000, 1200, 1400, 1600, 1800]
    ratios = [0.71, 0.75, 0.78, 0.80, 0.81, 1.12, 1.3, 1.5, 1.6, 1.75]
    spec = TrialSpec("w", "static", "cold", tuple({"n": n} for n in sizes))
    cs = tuple(CallRecord(i, {"n": n}, 0.5, (f"0/{i}",), graphs_run=(f"0/{i}",), ran_eagerly=False)
               for i, n in enumerate(sizes))
    compiles = tuple(rec(f"0/{i}", i) for i in range(len(sizes)))
    many = lambda center: [center * (1 + 0.002 * k) for k in range(-6, 6)]  # noqa: E731  # 12: enough to test
    st = tuple(steady(n, many(1e-3), many(1e-3 * r)) for n, r in zip(sizes, ratios))
    return TrialResult(spec, "ok", calls=cs, compiles=compiles, steady=st), ratios


def test_verdict_states_the_split_with_both_ranges_and_the_true_median():
    trial, ratios = _split_trial()
    t = trial_report(trial, None, None)
    assert t.steady is not None
    assert t.steady.median_ratio == pytest.approx(statistics.median(ratios))
    assert (t.steady.faster.count, t.steady.slower.count) == (5, 5)
    text = verdict_text(t.verdict)
    assert "faster on 5 of 10 shapes (the larger ones, ×1.12–1.75), slower on 5 (×0.71–0.81)" in text
    assert f"per-shape median ×{statistics.median(ratios):.2f}" in text
    # the headline follows the stream-weighted time: equal requests, so Σeager/Σcompiled
    assert t.steady.weighted_ratio == pytest.approx(sum(ratios) / len(ratios))


def test_eager_fallbacks_are_left_out_of_compiled_figures_and_counts_agree():
    # 10 shapes, dynamic=False, limit 8: 8 compiles, 0/8 refused at request 8, requests 8 and 9 eager
    sizes = list(range(10, 20))
    spec = TrialSpec("w", "static", "cold", tuple({"n": n} for n in sizes))
    cs = []
    for i, n in enumerate(sizes):
        eager = i >= 8
        cs.append(CallRecord(i, {"n": n}, 0.01 if eager else 0.5, () if eager else (f"0/{i}",),
                             graphs_run=() if eager else (f"0/{i}",), ran_eagerly=eager))
    compiles = tuple(rec(f"0/{i}", i) for i in range(8)) + (rec("0/8", 8, outcome="refused", seconds=0.001),)
    st = tuple(steady(n, samples(1e-3), samples(2e-3), ran_eagerly=i >= 8) for i, n in enumerate(sizes))
    checks = tuple(NumericsCheck({"n": n}, "float32", 0.0, 0.0, 1e-5, 1e-5, True, ran_eagerly=i >= 8)
                   for i, n in enumerate(sizes))
    trial = TrialResult(spec, "ok", calls=tuple(cs), compiles=compiles, steady=st, numerics=checks,
                        env=TrialEnv(recompile_limit_default=8))
    report = build_run_report(RunResult(workload="w", stream=spec.stream, trials=(trial,)))
    t = report.trials[0]
    assert (t.stream.compiles, t.stream.recompiles, t.stream.refused) == (8, 7, 1)
    assert t.fallbacks == 2 and t.fallback_shapes == ("18", "19")
    assert t.steady.shapes == 8 and t.numerics_checked == 8 and t.numerics_eager == 2
    rows = {r.shape: r for r in t.rows}
    assert rows["18"].status == "eager fallback" and "recompile limit (8)" in rows["18"].cause
    assert rows["18"].speedup is None and rows["18"].steady is None and rows["18"].steady_note == "eager fallback"
    text = verdict_text(t.verdict)
    assert "2 request(s) ran eagerly after the recompile limit (8) refused to compile: shapes 18, 19" in text
    assert "7 recompile(s) among 8 compile(s)" in text
    assert "matched eager on every shape that ran compiled (8" in text and "2 shape(s) ran eagerly" in text
    out = console.render(report, width=250)
    assert out.count("EAGER FALLBACK") == 2 and "8 (7) 1 refused" in out
    assert "reused" not in out.split("shape changes")[1]  # no eager call is called a reused graph
    table = csv.render(report)
    assert table.count("eager fallback") == 2


def test_a_saving_inside_the_noise_projects_no_break_even():
    spec = TrialSpec("w", "default", "cold", ({"n": 16},) * 4)
    cs = (CallRecord(0, {"n": 16}, 0.5, ("0/0",), graphs_run=("0/0",), ran_eagerly=False),) + tuple(
        CallRecord(i, {"n": 16}, 1e-3, graphs_run=("0/0",), ran_eagerly=False) for i in (1, 2, 3))
    noisy = steady(16, [0.9e-3, 1.0e-3, 1.1e-3, 1.2e-3, 0.95e-3], [1.0e-3, 1.05e-3, 1.15e-3, 0.9e-3, 1.1e-3])
    trial = TrialResult(spec, "ok", calls=cs, compiles=(rec("0/0", 0),), steady=(noisy,))
    t = trial_report(trial, None, 10_000)
    assert not t.saving_significant and t.n_star is None and t.lifetime_gain_s is None
    text = verdict_text(t.verdict)
    assert "inside the noise" in text and "no break-even is projected" in text and "repaid" not in text


def test_a_difference_too_few_samples_can_test_is_could_not_tell_not_within_noise():
    """Compiled twice as slow, far outside the IQRs, on 3 samples a side: the exact test can
    never reach significance (p ≥ 0.1), so the table says "could not tell" (not "within
    noise") and the verdict says why: too few samples, not a test that came out negative."""
    from compilescope.units import n_star_text

    spec = TrialSpec("w", "default", "cold", ({"n": 16},) * 3)
    cs = (CallRecord(0, {"n": 16}, 0.1, ("0/0",), graphs_run=("0/0",), ran_eagerly=False),) + tuple(
        CallRecord(i, {"n": 16}, 2e-3, graphs_run=("0/0",), ran_eagerly=False) for i in (1, 2))
    few = steady(16, [2.0e-3, 2.02e-3, 1.98e-3], [1.0e-3, 1.01e-3, 0.99e-3])
    t = trial_report(TrialResult(spec, "ok", calls=cs, compiles=(rec("0/0", 0),), steady=(few,)), None, None)
    assert not t.saving_significant and t.saving_beyond_band and not t.saving_testable and t.n_star is None
    assert n_star_text(t.n_star, t.saving_per_request_s, t.saving_significant, t.saving_beyond_band) == "could not tell"
    text = verdict_text(t.verdict)
    assert "could not be told apart from eager: too few samples to test the difference" in text, text
    assert "was not tested (too few samples): no break-even is projected" in text, text
    assert "does not bear" not in text and "not borne out" not in text


def test_significant_saving_projects_break_even_and_lifetime():
    spec = TrialSpec("w", "default", "cold", ({"n": 16},) * 3)
    cs = (CallRecord(0, {"n": 16}, 0.101, ("0/0",), graphs_run=("0/0",), ran_eagerly=False),
          CallRecord(1, {"n": 16}, 1e-3, graphs_run=("0/0",), ran_eagerly=False),
          CallRecord(2, {"n": 16}, 1e-3, graphs_run=("0/0",), ran_eagerly=False))
    trial = TrialResult(spec, "ok", calls=cs, compiles=(rec("0/0", 0),), steady=(steady(16, samples(1e-3), samples(2e-3)),))
    t = trial_report(trial, None, 1_000_000)
    assert t.saving_significant and t.n_star == 100  # 0.1 s of stall / 1 ms saved
    assert "repaid after ~100 requests" in verdict_text(t.verdict)


def test_backward_and_refused_records_are_not_compiles_and_later_phases_are_apart():
    spec = TrialSpec("w", "default", "cold", ({"n": 16},))
    cs = (CallRecord(0, {"n": 16}, 0.5, ("0/0",), graphs_run=("0/0",), ran_eagerly=False),)
    compiles = (rec("0/0", 0, backward=0.3), rec("0/1", None, phase="steady"), rec("0/2", None, outcome="refused", phase="steady"))
    t = trial_report(TrialResult(spec, "ok", calls=cs, compiles=compiles), None, None)
    assert (t.stream.compiles, t.stream.recompiles, t.stream.compile_s) == (1, 0, pytest.approx(0.5))
    assert (t.later.compiles, t.later.refused) == (1, 1)
    assert "steady-state/numerics phases caused 1 more compile(s) and 1 recompile-limit hit(s)" in verdict_text(t.verdict)


def test_every_clause_has_its_figure_and_none_without_evidence():
    spec = TrialSpec("w", "default", "cold", ({"n": 16},))
    t = trial_report(TrialResult(spec, "ok"), None, None)
    assert t.verdict == ()


def test_reasons_shown_for_a_recompile():
    failure = GuardFailure("tensor 'x' size mismatch at index 0. expected 16, actual 32", "0/0", "size", "L['x']", 0, 16, 32)
    spec = TrialSpec("w", "default", "cold", ({"n": 16}, {"n": 32}))
    cs = (CallRecord(0, {"n": 16}, 0.5, ("0/0",), graphs_run=("0/0",), ran_eagerly=False),
          CallRecord(1, {"n": 32}, 0.3, ("0/1",), graphs_run=("0/1",), ran_eagerly=False))
    trial = TrialResult(spec, "ok", calls=cs, compiles=(rec("0/0", 0), rec("0/1", 1, reasons=(failure,))))
    t = trial_report(trial, None, None)
    assert [r.cause for r in t.rows] == ["first compile", "L['x'] dim 0 size: 16 → 32"]
    assert t.changes[0].outcome == "recompiled" and t.changes[0].reasons == (failure.reason,)


def test_a_compiles_cause_is_what_failed_every_entry_not_the_oldest_entrys_first_failure():
    """T5 under default: 0/1 is dynamic in the batch; a request of a new batch and a longer
    target fails 0/0 on both and 0/1 on the target alone. The compile is the target's (what
    ``probe`` and advise count it for); the row named the batch, the oldest entry's first."""
    def fail(entry, source, dim, expected, actual):
        return GuardFailure(f"tensor '{source}' size mismatch at index {dim}. expected {expected}, actual {actual}",
                            entry, "size", source, dim, expected, actual)

    spec = TrialSpec("w", "default", "cold", ({"b": 1, "t": 4}, {"b": 2, "t": 4}, {"b": 4, "t": 6}))
    cs = tuple(CallRecord(i, dict(s), 0.5, (f"0/{i}",), graphs_run=(f"0/{i}",), ran_eagerly=False)
               for i, s in enumerate(spec.stream))
    third = (fail("0/0", "L['ids']", 0, 1, 4), fail("0/0", "L['dec']", 1, 4, 6), fail("0/1", "L['dec']", 1, 4, 6))
    trial = TrialResult(spec, "ok", calls=cs, compiles=(
        rec("0/0", 0), rec("0/1", 1, reasons=(fail("0/0", "L['ids']", 0, 1, 2),)), rec("0/2", 2, reasons=third)))
    t = trial_report(trial, None, None)
    assert [r.cause for r in t.rows] == ["first compile", "L['ids'] dim 0 size: 1 → 2", "L['dec'] dim 1 size: 4 → 6"]


def test_parse_lifetime():
    assert parse_lifetime("10000") == 10000 and parse_lifetime("1h", qps=2) == 7200 and parse_lifetime(None) is None
    with pytest.raises(OptionError, match="--qps"):
        parse_lifetime("8h")
    with pytest.raises(OptionError, match="malformed --lifetime"):
        parse_lifetime("soon")


def test_the_guard_lookup_a_stream_adds_never_makes_a_difference_inside_the_noise_a_claim():
    """The saving a request sees is the steady saving less the lookup the stream's order adds;
    a lookup that carries a difference past the IQR band is no test: the samples must back it."""
    from compilescope.analysis.build import payback

    spec = TrialSpec("w", "default", "cold", ({"n": 16},) * 4)
    cs = (CallRecord(0, {"n": 16}, 0.5, ("0/0",), graphs_run=("0/0",), ran_eagerly=False),) + tuple(
        CallRecord(i, {"n": 16}, 1e-3, graphs_run=("0/0",), ran_eagerly=False) for i in (1, 2, 3))
    noisy = steady(16, [0.9e-3, 1.0e-3, 1.1e-3, 1.2e-3, 0.95e-3], [1.0e-3, 1.05e-3, 1.15e-3, 0.9e-3, 1.1e-3])
    trial = TrialResult(spec, "ok", calls=cs, compiles=(rec("0/0", 0),), steady=(noisy,))
    rows = trial_report(trial, None, None).rows
    plain = payback(trial, rows, None)
    assert not plain["saving_significant"]
    past = payback(trial, rows, None, guard_extra_s=plain["saving_noise_s"] * 3)
    assert abs(past["saving_per_request_s"]) > past["saving_noise_s"]  # past the band…
    assert not past["saving_significant"] and past["n_star"] is None  # …yet untested: no claim


def test_a_compile_after_a_failed_first_compile_is_a_compile_in_the_shape_changes_too():
    """The first request's compile failed and left no entry (Dynamo ran it eagerly); the next
    shape's compile is the frame's first entry: 0 recompiles, and the shape-change line says
    "compiled 0/1", never "recompiled"."""
    spec = TrialSpec("w", "default", "cold", ({"n": 0}, {"n": 4}))
    cs = (CallRecord(0, {"n": 0}, 0.3, ("0/0",), ran_eagerly=True),
          CallRecord(1, {"n": 4}, 0.2, ("0/1",), graphs_run=("0/1",), ran_eagerly=False))
    failed = CompileRecord(CompileId.parse("0/0"), "f", "f.py", 1, outcome="failed", compile_time_s=0.1,
                           call_index=0, phase="stream", fail_type="RuntimeError", entries_before=0)
    second = CompileRecord(CompileId.parse("0/1"), "f", "f.py", 1, outcome="compiled", compile_time_s=0.2,
                           call_index=1, phase="stream", entries_before=0)
    t = trial_report(TrialResult(spec, "ok", calls=cs, compiles=(failed, second)), None, None)
    assert (t.stream.compiles, t.stream.recompiles, t.stream.failed) == (2, 0, 1)
    (change,) = t.changes
    assert change.outcome == "compiled" and change.compile_ids == ("0/1",), change
    out = console.render(build_run_report(RunResult(workload="w", stream=spec.stream, trials=(
        TrialResult(spec, "ok", calls=cs, compiles=(failed, second)),))), width=250)
    assert "compiled 0/1" in out.split("shape changes")[1] and "recompiled" not in out.split("shape changes")[1]
