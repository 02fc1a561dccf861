"""Files of an older schema are migrated on load, not refused.

``schema_files/run-schema-1.json`` is a results file written by compilescope at schema 1
(``compilescope run sincos --stream 8,8,16,4 --strategies eager,default --backend eager``,
torch 2.13), file paths in it made neutral. It loads as a file of the current schema would:
as a results file, as journal lines and as results-store rows.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from compilescope.analysis.build import build_run_report
from compilescope.errors import ResultsError
from compilescope.execute.journal import read_journal
from compilescope.model import SCHEMA_VERSION, CompileId, RunResult
from compilescope.schema import MIGRATIONS, dumps, known_versions, load, loads, migrate
from compilescope.store import Store

V1 = Path(__file__).resolve().parents[1] / "schema_files" / "run-schema-1.json"
# written at schema 2 (``compilescope run sincos --stream 8,8,16,4 --strategies eager,default
# --backend eager --samples 5``, torch 2.13), paths made neutral: no guard cost was measured then
V2 = Path(__file__).resolve().parents[1] / "schema_files" / "run-schema-2.json"


def _v1() -> dict:
    return json.loads(V1.read_text())


def test_a_schema_1_run_loads_with_its_compiles_as_records():
    raw = _v1()
    assert raw["schema_version"] == 1 and "kind" not in raw
    result = load(V1)
    assert isinstance(result, RunResult) and result.schema_version == SCHEMA_VERSION
    default = next(t for t in result.trials if t.spec.strategy == "default")
    old = next(t for t in raw["trials"] if t["spec"]["strategy"] == "default")
    events = old["compiles"]
    assert [c.compile_id for c in default.compiles] == [CompileId.parse(e["compile_id"]) for e in events]
    assert [c.outcome for c in default.compiles] == ["compiled"] * len(events)
    assert [c.compile_time_s for c in default.compiles] == [e["compile_time_s"] for e in events]
    recompile = default.compiles[1]
    # schema 1 kept the parsed guard failures under ``reasons``: now ``guard_failures``, with
    # the rejecting entry and PyTorch's text beside them
    assert [g.kind for g in recompile.guard_failures] == [g["kind"] for g in events[1]["reasons"]] == ["size"]
    assert recompile.rejected_by == ("0/0",)
    assert recompile.reasons == ("tensor 'x' size mismatch at index 0. expected 8, actual 16",)
    # the calls still point at the compiles that ran them
    assert [c.compile_ids for c in default.calls] == [tuple(c["compile_ids"]) for c in old["calls"]]


def test_a_migrated_run_reports_and_writes_the_current_schema():
    result = load(V1)
    report = build_run_report(result)
    default = next(t for t in report.trials if t.label.startswith("default"))
    assert (default.stream.compiles, default.stream.recompiles) == (2, 1)
    again = loads(dumps(result))
    assert json.loads(dumps(result))["schema_version"] == SCHEMA_VERSION
    assert again == result


def test_a_schema_2_run_loads_with_no_guard_cost_and_reports_as_before():
    raw = json.loads(V2.read_text())
    assert raw["schema_version"] == 2 and all("guard_costs" not in t for t in raw["trials"])
    result = load(V2)
    assert isinstance(result, RunResult) and result.schema_version == SCHEMA_VERSION
    default = next(t for t in result.trials if t.spec.strategy == "default")
    assert default.guard_costs == () and default.soundness == () and default.dropped_guards == {}
    assert all(r.guard_latency_s is None for r in default.compiles)
    old = next(t for t in raw["trials"] if t["spec"]["strategy"] == "default")
    assert [c.latency_s for c in default.calls] == [c["latency_s"] for c in old["calls"]]
    report = build_run_report(result)
    trial = next(t for t in report.trials if t.label.startswith("default"))
    assert trial.guards is None and trial.guard_extra_s is None  # nothing measured: nothing derived
    assert (trial.stream.compiles, trial.stream.recompiles) == (2, 1)
    assert loads(dumps(result)) == result


def test_schema_1_backward_events_fold_into_their_forward_and_a_reset_starts_an_epoch():
    event = {"function": "f", "filename": "m.py", "line": 3, "compile_time_s": 0.5, "phases_s": {}, "cache": {},
             "reasons": [], "fail_type": None, "fail_reason": None, "call_index": 0, "forward": True,
             "phase": "stream"}
    compiles = [
        {**event, "compile_id": "0/0"},
        {**event, "compile_id": "0/0", "forward": False, "compile_time_s": 0.25},
        {**event, "compile_id": "0/1", "fail_type": "Unsupported",
         "fail_reason": "Dynamo recompile limit exceeded", "compile_time_s": None},
        {**event, "compile_id": "0/0", "call_index": 5},  # after torch._dynamo.reset()
    ]
    doc = {"schema_version": 1, "workload": "w", "stream": [{"n": 1}], "trials": [
        {"spec": {"workload": "w", "strategy": "default", "cache": "cold", "stream": [{"n": 1}]},
         "status": "ok", "compiles": compiles}]}
    trial = loads(json.dumps(doc)).trials[0]  # type: ignore[union-attr]
    assert [(str(c.compile_id), c.epoch, c.outcome, c.backward_compile_s) for c in trial.compiles] == [
        ("0/0", 0, "compiled", 0.25), ("0/1", 0, "refused", None), ("0/0", 1, "compiled", None)]


def test_a_schema_1_journal_resumes_with_its_trials_migrated(tmp_path):
    raw = _v1()
    journal = tmp_path / "r.json.journal"
    header = {"journal": 1, "workload": raw["workload"], "stream": raw["stream"]}
    journal.write_text("".join(json.dumps(line) + "\n" for line in
                               [header, *({"trial": t} for t in raw["trials"])]))
    state = read_journal(journal)
    assert [t.spec.strategy for t in state.trials] == ["eager", "default"]
    assert [str(c.compile_id) for c in state.trials[1].compiles] == ["0/0", "0/1"]
    assert state.trials[1].compiles[1].guard_failures[0].kind == "size"


def test_a_journal_of_an_unknown_schema_is_refused(tmp_path):
    journal = tmp_path / "r.json.journal"
    journal.write_text(json.dumps({"journal": SCHEMA_VERSION + 1}) + "\n")
    with pytest.raises(ResultsError, match="not a compilescope journal of schema"):
        read_journal(journal)


def test_a_store_row_of_schema_1_is_read_migrated(tmp_path):
    raw = _v1()
    result = load(V1)
    path = tmp_path / "s.sqlite"
    with Store(path) as store:
        for trial in result.trials:
            store.add(trial, torch_version="2.13.0")
    # rewrite the rows as a schema-1 compilescope wrote them
    with sqlite3.connect(path) as db:
        for old in raw["trials"]:
            db.execute("update trials set result = ?, schema_version = 1 where strategy = ?",
                       (json.dumps(old), old["spec"]["strategy"]))
    with Store(path, readonly=True) as store:
        trials = store.trials([("strategy", "default")])
    assert len(trials) == 1 and [str(c.compile_id) for c in trials[0].compiles] == ["0/0", "0/1"]
    assert trials[0].compiles[1].rejected_by == ("0/0",)


def test_versions_read_are_the_current_one_and_those_a_chain_of_steps_leads_from():
    assert SCHEMA_VERSION in known_versions() and 1 in known_versions()
    assert all(v in MIGRATIONS for v in known_versions() if v != SCHEMA_VERSION)
    current = {"schema_version": SCHEMA_VERSION, "kind": "run"}
    assert migrate(dict(current)) == current


@pytest.mark.parametrize("version, hint", [(SCHEMA_VERSION + 1, "upgrade compilescope"),
                                           (0, "re-run to write the current schema")])
def test_a_version_with_no_way_to_it_is_refused_with_the_way_out(version, hint):
    with pytest.raises(ResultsError, match=f"schema_version {version}; .* {hint}"):
        loads(json.dumps({"schema_version": version, "workload": "w", "stream": [], "trials": []}))


def test_a_schema_1_probe_file_is_refused_not_guessed():
    with pytest.raises(ResultsError, match="cannot be migrated"):
        loads(json.dumps({"schema_version": 1, "kind": "probe", "compiles": []}))
