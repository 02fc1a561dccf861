"""Every kind of JSON document compilescope writes loads back through ``schema``: written as the
command writes it, read with :func:`compilescope.schema.loads_document`, it is the same record
— run, advise run, probe, ``advise --script``, forecast, warm-up report and plan, verification,
comparison. Another kind than the one asked for, or a version this compilescope does not read,
is one line."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from compilescope import compat
from compilescope.analysis.advise import propose
from compilescope.analysis.advise_record import to_record
from compilescope.analysis.compare import compare_runs
from compilescope.analysis.outputs import probe_file, run_file
from compilescope.errors import ResultsError
from compilescope.model import SCHEMA_VERSION
from compilescope.render import get
from compilescope.render.json import render_script_advice
from compilescope.schema import document_types, load, loads_document
from compilescope.warmup.planfile import dumps_plan, loads_plan

from .render.test_golden import script_advice

DATA = Path(__file__).resolve().parents[1] / "data" / "derivations"
JSON = get("json")


@pytest.fixture(scope="module")
def runs():
    return load(DATA / "run_sincos.json"), load(DATA / "run_sincos_again.json")


@pytest.fixture(scope="module")
def forecast_report():
    from compilescope.forecast import forecast

    return forecast("sincos", "16,32,64,16,100", ("default", "static"), backend="eager")


@pytest.fixture(scope="module")
def plan():
    from compilescope.warmup.plan import plan_warmup

    return plan_warmup("sincos", "16,32,64,16,48", ("default", "static"), backend="eager")


def _back(text: str, kind: str):
    data = json.loads(text)
    assert (data["schema_version"], data.get("kind", "run")) == (SCHEMA_VERSION, kind)
    return loads_document(text, kinds=(kind,))


def test_a_run_and_an_advise_run_load_back(runs):
    run, _ = runs
    assert _back(JSON.render(run_file(run)), "run") == run
    default = next(t for t in run.trials if t.spec.strategy == "default")
    sizes = {("x", 0): sorted({s["n"] for s in run.stream})}
    proposals, fixes = propose(default, default.spec.options, sizes, len(sizes[("x", 0)]),
                               compat.recompile_limit_value())
    assert proposals  # the default recompiled on x's size: there is something to propose
    advised = dataclasses.replace(run, advice=to_record("total", proposals, fixes))
    back = _back(JSON.render(run_file(advised)), "run")
    assert back == advised and back.advice.proposals == advised.advice.proposals


def test_a_probe_loads_back():
    probe = load(DATA / "probe_two_dims.json")
    assert _back(JSON.render(probe_file(probe)), "probe") == probe


def test_script_advice_loads_back():
    advice = script_advice()
    assert _back(render_script_advice(advice), "advise-script") == advice


def test_a_comparison_loads_back(runs):
    report = compare_runs(*runs, "a.json", "b.json")
    assert report.changes  # the figures of every paired trial are compared
    assert _back(JSON.render(report), "compare") == report


def test_a_forecast_loads_back(forecast_report):
    assert [s.strategy for s in forecast_report.strategies] == ["default", "static"]
    assert _back(JSON.render(forecast_report), "forecast") == forecast_report


def test_a_plan_file_and_a_warmup_report_load_back(plan):
    from compilescope.warmup.measure import dry_report

    assert plan.plans and all(p.shapes for p in plan.plans)
    assert _back(dumps_plan(plan), "warmup-plan") == plan == loads_plan(dumps_plan(plan))
    report = dry_report(plan, 1.5)
    back = _back(JSON.render(report), "warmup")
    assert back == report and back.plan == plan  # the plan inside is a typed record again


def test_a_measured_warmup_report_loads_back(plan, runs):
    from compilescope.report.warmup import WarmupReport
    from compilescope.warmup.measure import _strategy_rows, verdict

    run, _ = runs  # its default and static trials, read as the plan's cold starts
    measured = _strategy_rows(plan, run.trials, run.stream)
    assert [m.strategy for m in measured] == ["default", "static"] and all(m.starts for m in measured)
    report = WarmupReport(plan, measured, verdict(measured, 1000, len(run.stream)), "the recorded stream", 2.0)
    assert report.verdict is not None and report.verdict.rows
    assert _back(JSON.render(report), "warmup") == report


def test_a_verification_loads_back(plan, runs):
    from compilescope.report.verify import VerifyReport
    from compilescope.warmup.verify import dry_forecast, strategy_verify

    run, _ = runs
    static = next(t for t in run.trials if t.spec.strategy == "static")
    sp = plan.plan("static")
    fc, _ = dry_forecast("sincos", sp, run.stream, sp.options)  # the plan's start-up, then the run's stream
    assert fc is not None
    row = strategy_verify(sp, run.stream, static, static, fc, [])
    assert row.failures and row.with_warmup is not None  # requests that compiled after "start-up"
    report = VerifyReport(workload="sincos", plan_stream=plan.stream, heldout=len(run.stream), backend="eager",
                          torch_version=compat.torch_version(), strategies=(row,), recommended=None, wall_s=3.0)
    assert _back(JSON.render(report), "verify") == report


def test_every_kind_is_covered_here():
    assert set(document_types()) == {"run", "probe", "advise-script", "forecast", "warmup", "warmup-plan", "verify",
                                     "compare"}


def test_another_kind_or_version_is_one_line(runs, plan):
    run, _ = runs
    text = JSON.render(run_file(run))
    with pytest.raises(ResultsError, match="is a run file, not forecast"):
        loads_document(text, kinds=("forecast",))
    data = json.loads(dumps_plan(plan))
    data["schema_version"] = SCHEMA_VERSION + 1
    with pytest.raises(ResultsError, match=f"schema_version {SCHEMA_VERSION + 1}; .*upgrade compilescope"):
        loads_document(json.dumps(data))
    data["schema_version"], data["kind"] = SCHEMA_VERSION, "horoscope"
    with pytest.raises(ResultsError, match="unknown kind 'horoscope'"):
        loads_document(json.dumps(data))
    data["kind"], data["plans"] = "warmup-plan", [{"strategy": 3}]
    with pytest.raises(ResultsError, match=r"plans\[0\]\.strategy: expected a string"):
        loads_document(json.dumps(data))
    with pytest.raises(ResultsError, match="is a warmup-plan file, not a run's or a probe's results"):
        load_text = dumps_plan(plan)
        from compilescope.schema import loads

        loads(load_text)  # a results file's reader (report, compare) reads runs and probes, as before


def test_a_file_of_another_kind_or_a_run_without_trials_is_refused_in_one_line_naming_it():
    from compilescope.schema import decode

    with pytest.raises(ResultsError, match="^x.json is a warmup file, not a run's or a probe's results$"):
        decode({"schema_version": SCHEMA_VERSION, "kind": "warmup"}, origin="x.json")
    with pytest.raises(ResultsError, match=r"^x.json is a run's results without its trials \(no \"trials\" list\)$"):
        decode({"schema_version": SCHEMA_VERSION, "kind": "run"}, origin="x.json")
