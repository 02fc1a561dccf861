from __future__ import annotations

import json

import pytest

from compilescope.errors import ResultsError
from compilescope.model import (
    CallRecord, CompileEvent, GuardFailure, MarkSpec, MeasureOptions, NumericsCheck, RunResult, SteadyState,
    StrategyOptions, TrialResult, TrialSpec,
)
from compilescope.schema import SCHEMA_VERSION, dumps, loads


def sample_result() -> RunResult:
    spec = TrialSpec("sincos", "mark-dynamic", "cold", ({"n": 16}, {"n": 32}),
                     StrategyOptions("aot_eager", None, (MarkSpec("x", 0, 1, 1024),)), MeasureOptions(samples=7))
    g = GuardFailure("a == 0.5", "0/0", "value", "L['a']", None, 0.5, 1.5)
    trial = TrialResult(
        spec, "ok",
        calls=(CallRecord(0, {"n": 16}, 0.25, ("0/0",)),),
        compiles=(CompileEvent("0/1", "f", "f.py", 3, 0.1, {"dynamo": 0.1}, {"x": 1}, (g,), call_index=0),),
        steady=(SteadyState({"n": 16}, 3, (1.0, 2.0), (3.0, 4.0)),),
        numerics=(NumericsCheck({"n": 16}, "float32", 0.0, 0.0, 1e-4, 1e-4, True),),
        env={"torch": "2.13.0"},
    )
    return RunResult("sincos", spec.stream, (trial,), "2026-01-01T00:00:00+00:00", "compilescope run sincos")


def test_roundtrip_is_lossless():
    result = sample_result()
    text = dumps(result)
    assert json.loads(text)["schema_version"] == SCHEMA_VERSION
    assert loads(text) == result


def test_unknown_version_is_refused():
    data = json.loads(dumps(sample_result()))
    data["schema_version"] = 99
    with pytest.raises(ResultsError, match="schema_version 99"):
        loads(json.dumps(data))


def test_not_a_results_file():
    with pytest.raises(ResultsError, match="no schema_version"):
        loads('{"hello": 1}')
    with pytest.raises(ResultsError, match="not JSON"):
        loads("{")
