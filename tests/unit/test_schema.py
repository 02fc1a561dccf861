from __future__ import annotations

import json
import re

import pytest

from compilescope.errors import ResultsError
from compilescope.model import (
    CallRecord, CompileId, CompileRecord, GuardFailure, MarkSpec, MeasureOptions, NumericsCheck, ProbeResult,
    RunResult, SteadyState, StrategyOptions, TrialEnv, TrialResult, TrialSpec,
)
from compilescope.schema import SCHEMA_VERSION, dumps, loads


def sample_result() -> RunResult:
    spec = TrialSpec("sincos", "mark-dynamic", "cold", ({"n": 16}, {"n": 32}),
                     StrategyOptions("aot_eager", None, (MarkSpec("x", 0, 1, 1024),)), MeasureOptions(samples=7))
    g = GuardFailure("a == 0.5", "0/0", "value", "L['a']", None, 0.5, 1.5)
    trial = TrialResult(
        spec, "ok",
        calls=(CallRecord(0, {"n": 16}, 0.25, ("0/0",)),),
        compiles=(CompileRecord(CompileId(0, 1), "f", "f.py", 3, reasons=("a == 0.5",), rejected_by=("0/0",),
                                guard_failures=(g,), compile_time_s=0.1, phases_s={"dynamo": 0.1}, cache={"x": 1},
                                call_index=0, epoch=1, backward_compile_s=0.05),),
        steady=(SteadyState({"n": 16}, 3, (1.0, 2.0), (3.0, 4.0)),),
        numerics=(NumericsCheck({"n": 16}, "float32", 0.0, 0.0, 1e-4, 1e-4, True),),
        env=TrialEnv(torch="2.13.0", threads=1, variables={"TORCH_LOGS": "recompiles"}),
    )
    return RunResult(workload="sincos", stream=spec.stream, trials=(trial,), created="2026-01-01T00:00:00+00:00",
                     command="compilescope run sincos", missing=("static (cold)",))


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


def test_probe_roundtrip_and_kind():
    from compilescope.analysis.outputs import probe_file
    from compilescope.render.json import RENDERER

    probe = ProbeResult(source="s.py", compiles=sample_result().trials[0].compiles, cache_start="warm")
    assert loads(RENDERER.render(probe_file(probe))) == probe
    assert loads(dumps(probe)) == probe


@pytest.mark.parametrize("path, value, message", [
    (("trials", 0, "calls", 0, "latency_s"), "fast", "trials[0].calls[0].latency_s: expected a number"),
    (("trials", 0, "compiles", 0, "compile_id"), "zero", "compile id"),
    (("trials", 0, "status"), "meh", "is not one of"),
    (("trials", 0, "calls"), {"a": 1}, "expected a list"),
    (("trials",), "x", "expected a list"),
    (("trials", 0, "spec", "stream", 0, "n"), 1.5, "expected an integer"),
])
def test_wrong_types_are_one_error_naming_the_field(path, value, message):
    data = json.loads(dumps(sample_result()))
    node = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    with pytest.raises(ResultsError, match=re.escape(message)):
        loads(json.dumps(data))
