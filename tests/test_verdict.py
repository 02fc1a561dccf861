"""The verdict generator: each clause appears exactly when its evidence does, always with a number."""

from __future__ import annotations

import re

import pytest

from compilescope.analysis.verdict import Evidence, gather_evidence, parse_lifetime, verdict_clauses, verdict_text
from compilescope.errors import StrategyError
from compilescope.model import CallRecord, CompileEvent, NumericsCheck, SteadyState, TrialResult, TrialSpec

CLAUSES = {
    "improved": "steady-state execution improved",
    "slower": "steady-state execution was slower",
    "matched": "steady-state execution matched eager",
    "recompiled": "shape transitions triggered recompilation",
    "reused": "shape transitions reused compiled graphs",
    "fallback": "ran eagerly after the recompile limit",
    "breaks": "graph break",
    "padding": "bucketing padded",
    "repaid": "compile cost is repaid after",
    "never": "compile cost is never repaid",
    "saves": "compiling saves",
    "costs": "compiling costs",
    "outputs ok": "outputs matched eager on every shape",
    "outputs bad": "outputs differed from eager",
    "errors": "request(s) raised",
}


def present(e: Evidence) -> set[str]:
    text = " | ".join(verdict_clauses(e))
    return {k for k, phrase in CLAUSES.items() if phrase in text}


BASE = Evidence(label="default (cold)", stream_len=10)


def test_no_evidence_no_clause():
    assert verdict_clauses(BASE) == [] and verdict_text(BASE) == ""


@pytest.mark.parametrize(
    "changes, expected",
    [
        (dict(steady_ratio=1.8, steady_shapes=3), {"improved"}),
        (dict(steady_ratio=0.7, steady_shapes=3), {"slower"}),
        (dict(steady_ratio=1.02, steady_shapes=3), {"matched"}),
        (dict(recompiles=3, recompile_s=4.1, shape_changes=5), {"recompiled"}),
        (dict(shape_changes=5), {"reused"}),
        (dict(fallbacks=4, recompile_limit=8), {"fallback"}),
        (dict(graph_breaks=2), {"breaks"}),
        (dict(padding_waste=0.31), {"padding"}),
        (dict(saving_per_request_s=0.002, n_star=1500, compile_cost_s=3.0), {"repaid"}),
        (dict(saving_per_request_s=-0.001, compile_cost_s=3.0), {"never"}),
        (dict(saving_per_request_s=0.002, n_star=1500, compile_cost_s=3.0, lifetime=10_000, lifetime_gain_s=17.0),
         {"repaid", "saves"}),
        (dict(saving_per_request_s=-0.001, compile_cost_s=3.0, lifetime=10_000, lifetime_gain_s=-13.0),
         {"never", "costs"}),
        (dict(numerics_checked=4, numerics_failed=0, max_abs_err=1e-6), {"outputs ok"}),
        (dict(numerics_checked=4, numerics_failed=1, max_abs_err=0.3), {"outputs bad"}),
        (dict(call_errors=2), {"errors"}),
    ],
)
def test_each_clause_exactly_when_its_evidence_is_present(changes, expected):
    import dataclasses

    e = dataclasses.replace(BASE, **changes)
    assert present(e) == expected
    for clause in verdict_clauses(e):
        assert re.search(r"\d", clause), f"clause without a number: {clause!r}"


def test_recompile_clause_quotes_count_and_time():
    import dataclasses

    (clause,) = verdict_clauses(dataclasses.replace(BASE, recompiles=3, recompile_s=4.1, shape_changes=3))
    assert clause == "shape transitions triggered recompilation (3 recompile(s), 4.1 s)"


def test_measured_break_even_is_cited_with_the_projection():
    import dataclasses

    e = dataclasses.replace(BASE, saving_per_request_s=0.01, n_star=7, compile_cost_s=0.07, break_even_request=8)
    (clause,) = verdict_clauses(e)
    assert "~7 requests" in clause and "from request 8" in clause


def _records():
    spec = TrialSpec("sincos", "bucket", "cold", ())
    calls = (
        CallRecord(0, {"n": 5}, 1.0, ("0/0",), padded_shape={"n": 8}),
        CallRecord(1, {"n": 8}, 0.001, padded_shape={"n": 8}),
        CallRecord(2, {"n": 8}, 0.001, padded_shape={"n": 8}),
        CallRecord(3, {"n": 3}, 0.5, ("0/1",), padded_shape={"n": 4}, ran_eagerly=True),
    )
    compiles = (CompileEvent("0/0", "f", "f.py", 1, 0.9, call_index=0),
                CompileEvent("0/1", "f", "f.py", 1, 0.45, call_index=3))
    steady = (SteadyState({"n": 5}, 1, (0.001,) * 3, (0.003,) * 3), SteadyState({"n": 8}, 1, (0.001,) * 3, (0.003,) * 3),
              SteadyState({"n": 3}, 1, (0.001,) * 3, (0.002,) * 3))
    numerics = tuple(NumericsCheck({"n": n}, "float32", 0.0, 0.0, 1e-4, 1e-4, True) for n in (5, 8, 3))
    return TrialResult(spec, "ok", calls=calls, compiles=compiles, steady=steady, numerics=numerics)


def test_gather_evidence_from_records():
    e = gather_evidence(_records(), None, lifetime=10_000)
    # saving per request on the mix: (1×2 ms + 2×2 ms + 1×1 ms) / 4 = 1.75 ms
    assert e.saving_per_request_s == pytest.approx(0.00175)
    # compile stalls: (1.0 − 0.001) + (0.5 − 0.001)
    assert e.compile_cost_s == pytest.approx(1.498)
    assert e.n_star == 856
    assert e.lifetime_gain_s == pytest.approx(10_000 * 0.00175 - 1.498)
    assert e.fallbacks == 1 and e.recompiles == 1 and e.recompile_s == pytest.approx(0.45)
    assert e.padding_waste == pytest.approx((8 + 8 + 8 + 4) / (5 + 8 + 8 + 3) - 1)
    assert e.steady_ratio == pytest.approx(3.0)
    assert present(e) == {"improved", "recompiled", "fallback", "padding", "repaid", "saves", "outputs ok"}


def test_parse_lifetime():
    assert parse_lifetime("10000") == 10_000
    assert parse_lifetime("8h", 20) == 576_000
    assert parse_lifetime("30m", 2.5) == 4500
    with pytest.raises(StrategyError, match="--qps"):
        parse_lifetime("8h")
    with pytest.raises(StrategyError, match="malformed --lifetime"):
        parse_lifetime("forever")
