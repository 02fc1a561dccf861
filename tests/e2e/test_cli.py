"""The CLI end to end: real subprocess trials, real torch.compile (aot_eager).

These tests read what the trials compile, return and record, not a cold start's time: their
trials are forked from a fork server (conftest.forked_trials), which records the same compiles
as a fresh interpreter; each trial is still a process of its own. The crash and hang test keeps
the default start (fresh interpreters), the one a user's run has."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from compilescope.model import SCHEMA_VERSION
from compilescope.schema import load

from ..conftest import cli_here

HERE = Path(__file__).resolve().parents[1]  # tests/
TEST_WORKLOADS = HERE / "workloads_for_tests.py"
QUICK = ("--samples", "5", "--budget", "0.05", "--warmup", "1")
pytestmark = pytest.mark.usefixtures("forked_trials")


@pytest.fixture
def cli(cli_in_process):
    """The CLI in this process: these tests read its output and results (each trial is still a
    process of its own); probe, which forks, runs as a process (test_report_reads_a_probe_json)."""
    return cli_in_process


@pytest.fixture(scope="module")
def acceptance_run(tmp_path_factory):
    """The acceptance command, run once for the module."""
    import os

    tmp = tmp_path_factory.mktemp("acceptance")
    out = tmp / "out.json"
    proc = cli_here(
        "run", "sincos", "--stream", "16,16,32,32,64,16",
        "--strategies", "default,static,dynamic,mark-dynamic", "--mark", "x:0", "--backend", "aot_eager",
        "--json", str(out), "--csv", str(tmp / "out.csv"), *QUICK, cwd=tmp, env=dict(os.environ, COLUMNS="150"),
    )
    assert proc.returncode == 0, proc.stderr
    return proc, out, tmp / "out.csv"


def test_acceptance_compile_counts(acceptance_run):
    _, out, _ = acceptance_run
    result = load(out)
    counts = {t.spec.strategy: sum(1 for e in t.compiles if e.is_compile and e.phase == 'stream') for t in result.trials}
    assert counts == {"eager": 0, "default": 2, "static": 3, "dynamic": 1, "mark-dynamic": 1}
    assert all(t.ok and t.env.pid for t in result.trials)
    assert len({t.env.pid for t in result.trials}) == len(result.trials)  # one process per trial


def test_acceptance_reason_text_and_structure(acceptance_run):
    _, out, _ = acceptance_run
    data = json.loads(out.read_text())
    assert data["schema_version"] == SCHEMA_VERSION and data["kind"] == "run"
    default = next(t for t in data["trials"] if t["spec"]["strategy"] == "default")
    (recompile,) = [e for e in default["compiles"] if e["compile_id"] == "0/1"]
    assert recompile["reasons"] == ["tensor 'x' size mismatch at index 0. expected 16, actual 32"]
    assert recompile["rejected_by"] == ["0/0"] and recompile["outcome"] == "compiled"
    (reason,) = recompile["guard_failures"]
    assert reason["reason"] == "tensor 'x' size mismatch at index 0. expected 16, actual 32"
    assert (reason["source"], reason["kind"], reason["dim"], reason["expected"], reason["actual"]) == (
        "L['x']", "size", 0, 16, 32)
    assert recompile["call_index"] == 2
    assert default["calls"][2]["compile_ids"] == ["0/1"] and default["calls"][2]["graphs_run"] == ["0/1"]
    # the derived summary agrees with the records
    assert data["summary"]["default (cold)"]["compiles"] == 2 and data["summary"]["static (cold)"]["compiles"] == 3


def test_acceptance_table_and_csv(acceptance_run):
    proc, _, csv_path = acceptance_run
    assert "per shape" in proc.stdout and "per strategy" in proc.stdout
    assert "tensor 'x' size mismatch at index 0. expected 16, actual 32" in proc.stdout
    assert "not within the stream" in proc.stdout
    rows = list(csv.DictReader(io.StringIO(csv_path.read_text())))
    assert {r["strategy"] for r in rows} == {"eager", "default", "static", "dynamic", "mark-dynamic"}
    static_rows = [r for r in rows if r["strategy"] == "static"]
    assert [r["shape"] for r in static_rows] == ["16", "32", "64"]
    assert all(r["trial_compiles"] == "3" and r["numerics_pass"] == "True" for r in static_rows)


def test_report_rereads_results(acceptance_run, cli):
    _, out, _ = acceptance_run
    proc = cli("report", str(out))
    assert proc.returncode == 0 and "per strategy" in proc.stdout


def test_unknown_schema_version_is_refused(acceptance_run, cli, tmp_path):
    _, out, _ = acceptance_run
    data = json.loads(out.read_text())
    data["schema_version"] = 42
    bad = tmp_path / "future.json"
    bad.write_text(json.dumps(data))
    proc = cli("report", str(bad))
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "schema_version 42" in proc.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["run", "no_such_workload"], "unknown workload 'no_such_workload'"),
        (["run", "missing.py:w"], "does not exist"),
        (["run", f"{TEST_WORKLOADS}:nothing_here"], "has no attribute 'nothing_here'"),
        (["run", "sincos", "--stream", "16,abc"], "'abc'"),
        (["run", "sincos", "--strategies", "default,warp-speed"], "unknown strategy 'warp-speed'"),
        (["run", "sincos", "--strategies", "mark-dynamic", "--mark", "x:zero"], "malformed --mark 'x:zero'"),
        (["run", "sincos", "--strategies", "mark-dynamic"], "needs --mark"),
        (["run", "sincos", "--strategies", "mark-dynamic", "--mark", "y:0"], "no tensor input named 'y'"),
        (["run", "sincos", "--strategies", "mark-dynamic", "--mark", "x:3"], "has 1 dimension"),
        (["run", "sincos", "--cache", "lukewarm"], "lukewarm"),
        (["run", "sincos", "--backend", "aot_eager", "--mode", "max-autotune"], "only applies to the inductor"),
        (["report", "nothing.json"], "cannot read nothing.json"),
        (["frobnicate"], "No such command"),
        (["run", "sincos", "--backend", "nosuch"], "unknown --backend 'nosuch'"),
        (["run", "sincos", "--device", "cuda"], "sees no CUDA device"),
        (["run", "sincos", "--device", "tpu"], "malformed --device 'tpu'"),
        (["run", "sincos", "--strategies", "dynamic-sources", "--dynamic-sources", "("], "is not a pattern"),
        (["run", "sincos", "--fail-on", "sadness"], "unknown --fail-on 'sadness'"),
        (["run", "sincos", "--json", "/proc/nope/r.json"], "cannot write results"),
        (["run", "--resume", "never.json"], "nothing to resume"),
        (["run", "sincos", "--budget", "inf"], "'inf' is not a finite number"),  # results no loader reads
        (["run", "sincos", "--timeout", "nan"], "'nan' is not a finite number"),  # the watchdog off
        (["run", "sincos", "--executor", "ray", "--cpus-per-trial", "nan"], "'nan' is not a finite number"),
        (["advise", "sincos", "--max-waste", "nan"], "'nan' is not a finite number"),
        (["run", "sincos", "--threads", "99999999999"], "not in the range 0<=x<=4096"),
        (["compare", "a.json", "b.json", "--fail-on-regression", "nan%"], "'nan%' is not a finite number"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(cli, args, message):
    proc = cli(*args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert message in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "Traceback" not in proc.stderr


def test_workload_that_raises_while_building(cli, tmp_path):
    path = tmp_path / "bad_build.py"
    path.write_text(
        "import torch\nfrom compilescope import Workload\n"
        "def boom():\n    raise RuntimeError('missing weights')\n"
        "w = Workload('bad', boom, lambda s: (torch.ones(s['n']),), ('n',), ({'n': 2},))\n"
    )
    proc = cli("run", f"{path}:w")
    assert proc.returncode == 2
    assert "raised while building: RuntimeError: missing weights" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("command", [("run",), ("forecast",), ("advise",), ("warmup", "--stream", "2,3", "--no-measure")])
def test_workload_whose_make_inputs_raises_is_one_line_before_any_trial(cli, tmp_path, command):
    path = tmp_path / "bad_inputs.py"
    path.write_text(
        "import torch\nfrom compilescope import Workload\n"
        "w = Workload('bad', lambda: torch.sin, lambda s: (torch.ones(s['m']),), ('n',), ({'n': 2},))\n"
    )
    out = tmp_path / "r.json"
    proc = cli(*command[:1], f"{path}:w", "--backend", "eager", *command[1:],
               *(("--json", str(out)) if command[0] in ("run", "advise") else ()))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "make_inputs({'n': 2}) raised KeyError: 'm'" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert [line for line in proc.stderr.splitlines() if "error" in line] == proc.stderr.strip().splitlines()[-1:]
    assert not out.exists()  # run and advise: refused before any trial ran, no results written


def test_a_new_run_does_not_delete_an_interrupted_runs_journal(cli, tmp_path):
    from compilescope.execute.journal import Journal

    out = tmp_path / "r.json"
    journal = tmp_path / "r.json.journal"
    Journal(out).start({"base": {"workload": "sincos"}})  # a run's header: what resume reads first
    kept = journal.read_text()
    for args in (("run", "sincos"), ("advise", "sincos")):
        proc = cli(*args, "--stream", "4", "--backend", "eager", "--json", str(out))
        assert proc.returncode == 2, proc.stderr
        assert "holds the finished trials of an interrupted run: resume it with compilescope run --resume" in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
    assert journal.read_text() == kept and not out.exists()
    journal.write_text('{"not": "a run journal"}\n')  # another command's (a probe's): no resume offered
    proc = cli("run", "sincos", "--stream", "4", "--backend", "eager", "--json", str(out))
    assert proc.returncode == 2 and "is another command's record" in proc.stderr and "--resume" not in proc.stderr


def test_report_of_a_run_not_written_yet_names_its_journal(cli, tmp_path):
    (tmp_path / "r.json.journal").write_text("a run's journal\n")
    proc = cli("report", str(tmp_path / "r.json"))
    assert proc.returncode == 2 and "r.json is not written yet" in proc.stderr and "run --resume" in proc.stderr
    proc = cli("report", str(tmp_path / "r.json.journal"))
    assert proc.returncode == 2 and "is a run's journal, not a results file" in proc.stderr, proc.stderr
    (tmp_path / "cut.json").write_text('{"schema_version": "')
    proc = cli("report", str(tmp_path / "cut.json"))
    assert proc.returncode == 2 and "is not JSON: Unterminated string starting at (line 1)" in proc.stderr, proc.stderr


def test_no_output_replaces_a_runs_journal_or_lock(cli, tmp_path):
    """Another command's output on a live (or interrupted) run's journal or lock would lose its
    trials or free its path: refused, the file left as it was."""
    from compilescope.paths import write_atomic

    results = tmp_path / "r.json"
    proc = cli("run", "sincos", "--stream", "4", "--strategies", "eager", "--backend", "eager", "--samples", "1",
               "--json", str(results))
    assert proc.returncode == 0, proc.stderr
    for name, option in (("live.json.journal", "--csv"), ("live.json.lock", "--json")):
        write_atomic(tmp_path / name, "held\n")
        proc = cli("report", str(results), option, str(tmp_path / name))
        assert proc.returncode == 2 and "it is a run's" in proc.stderr and "never replaced" in proc.stderr, proc.stderr
        assert (tmp_path / name).read_text() == "held\n"


def test_crash_and_hang_are_recorded_and_other_trials_go_on(cli, tmp_path, monkeypatch):
    monkeypatch.delenv("COMPILESCOPE_FORK_SERVER")  # the default start: fresh interpreters
    ref = f"{TEST_WORKLOADS}:misbehaves"
    out = tmp_path / "r.json"
    proc = cli("run", ref, "--stream", "4,99", "--strategies", "eager,default", "--backend", "eager",
               "--json", str(out), *QUICK)
    assert proc.returncode == 1, proc.stderr  # every compiled trial failed
    result = load(out)
    assert [(t.spec.strategy, t.status) for t in result.trials] == [("eager", "failed"), ("default", "failed")]
    assert "exited with status 3 at request 1 (99)" in (result.trials[0].error or "")
    assert [c.shape["n"] for c in result.trials[0].calls] == [4]  # the finished request is kept

    proc = cli("run", ref, "--stream", "4,4", "--strategies", "default", "--backend", "eager",
               "--json", str(out), *QUICK)
    assert proc.returncode == 0
    assert [t.status for t in load(out).trials] == ["ok", "ok"]

    hang = tmp_path / "hang.json"
    proc = cli("run", ref, "--stream", "4,55", "--strategies", "default", "--backend", "eager", "--timeout", "12",
               "--json", str(hang), *QUICK)
    assert proc.returncode == 1, proc.stderr
    trials = load(hang).trials
    assert [t.status for t in trials] == ["timeout", "timeout"]
    assert "timed out after 12 s at request 1 (55)" in (trials[1].error or "")
    assert "timeout" in proc.stdout


def test_warm_cache_runs_a_fresh_process_on_a_populated_directory(cli, tmp_path):
    out = tmp_path / "warm.json"
    proc = cli("run", "sincos", "--stream", "8,16", "--strategies", "default", "--backend", "aot_eager",
               "--cache", "both", "--json", str(out), *QUICK)
    assert proc.returncode == 0, proc.stderr
    trials = load(out).trials
    assert [(t.spec.strategy, t.spec.cache) for t in trials] == [("eager", "none"), ("default", "cold"),
                                                                  ("default", "warm")]
    cold, warm = trials[1], trials[2]
    assert cold.env.cache_dir == warm.env.cache_dir and cold.env.pid != warm.env.pid


def test_stream_from_jsonl_file(cli, tmp_path):
    shapes = tmp_path / "shapes.jsonl"
    shapes.write_text('{"n": 8}\n{"n": 8}\n{"n": 12}\n')
    out = tmp_path / "j.json"
    proc = cli("run", "sincos", "--stream", f"@{shapes}", "--strategies", "static", "--backend", "eager",
               "--json", str(out), *QUICK)
    assert proc.returncode == 0, proc.stderr
    static = load(out).trials[1]
    assert [c.shape["n"] for c in static.calls] == [8, 8, 12]
    assert [c.compiled for c in static.calls] == [True, False, True]


def test_unavailable_strategy_is_recorded_not_fatal(cli, tmp_path):
    out = tmp_path / "u.json"
    proc = cli("run", "sincos", "--stream", "8,8", "--strategies", "default,regional", "--backend", "eager",
               "--json", str(out), *QUICK)
    assert proc.returncode == 0, proc.stderr
    statuses = {t.spec.strategy: (t.status, t.error) for t in load(out).trials}
    assert statuses["default"][0] == "ok"
    assert statuses["regional"][0] == "unavailable" and "is a function" in statuses["regional"][1]
    assert "verdict" in proc.stdout


def test_lifetime_verdict_and_bad_lifetime(cli, acceptance_run):
    _, out, _ = acceptance_run
    proc = cli("report", str(out), "--lifetime", "8h", "--qps", "20")
    assert proc.returncode == 0
    assert "lifetime 576,000 requests" in proc.stdout
    proc = cli("report", str(out), "--lifetime", "8h")
    assert proc.returncode == 2 and "--qps" in proc.stderr


def test_past_the_recompile_limit_table_verdict_and_json_agree(cli, tmp_path):
    """dynamic=False over 10 sizes, limit 8: PyTorch compiles 8 frames and refuses the 9th;
    the last two requests run eagerly and are named, and left out of the compiled figures."""
    out = tmp_path / "limit.json"
    proc = cli("run", "sincos", "--stream", ",".join(str(n) for n in range(2, 12)), "--strategies", "static",
               "--backend", "eager", "--json", str(out), *QUICK)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    static = data["summary"]["static (cold)"]
    records = [c for c in data["trials"][1]["compiles"] if c["phase"] == "stream"]
    assert [c["outcome"] for c in records] == ["compiled"] * 8 + ["refused"]
    assert (static["compiles"], static["recompiles"], static["refused_by_recompile_limit"]) == (8, 7, 1)
    assert static["eager_fallback_shapes"] == ["10", "11"]
    assert static["numerics_checked"] == 8
    text = " ".join(proc.stdout.split())
    assert "8 (7) 1 refused" in text
    assert "7 recompile(s) among 8 compile(s)" in text
    assert "2 request(s) ran eagerly after the recompile limit (8) refused to compile: shapes 10, 11" in text
    assert text.count("EAGER FALLBACK") == 2 and "recompile limit (8)" in text
    assert "outputs matched eager on every shape that ran compiled (8" in text


def test_report_reads_a_probe_json(cli_subprocess, tmp_path):
    cli = cli_subprocess
    script = HERE / "probe_scenarios" / "shape_static.py"
    out = tmp_path / "p.json"
    proc = cli("probe", "--json", str(out), str(script))
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    assert data["kind"] == "probe" and data["cache_start"] in ("cold", "warm")
    assert data["compiles"][1]["reasons"] == ["tensor 'x' size mismatch at index 0. expected 16, actual 32"]
    report = cli("report", str(out))
    assert report.returncode == 0, report.stderr
    assert "3 compile(s), 2 recompile(s)" in report.stdout
    assert "L['x'] dim 0 varied over" in report.stdout
