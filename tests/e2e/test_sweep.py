"""compilescope sweep: the matrix from a file, a SQLite results store, resume, and Ray."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from ..conftest import FORKED_TRIALS, cli_here, run_cli

HERE = Path(__file__).resolve().parents[1]  # tests/
ROOT = HERE.parent

SWEEP = """
name = "t"
workloads = ["sincos", "{tests}/workloads_for_tests.py:fault_segfault"]
strategies = ["eager", "default", "static"]
cache = ["cold", "warm"]

[settings]
backend = ["eager"]

[streams]
sincos = "16,16,32,64"

[measure]
samples = 3
budget = 0.02
warmup = 1
"""


def write_sweep(tmp_path: Path, text: str = SWEEP) -> Path:
    path = tmp_path / "sweep.toml"
    path.write_text(text.replace("{tests}", str(HERE)))
    return path


def rows(store: Path) -> list[dict]:
    db = sqlite3.connect(str(store))
    db.row_factory = sqlite3.Row
    out = [dict(r) for r in db.execute("select * from trials order by rowid")]
    db.close()
    return out


def counts(store: Path) -> dict[tuple[str, str], tuple]:
    """Per trial: status, compile ids and the reasons of each compile."""
    out = {}
    for r in rows(store):
        result = json.loads(r["result"])
        compiles = tuple((c["compile_id"], tuple(c["reasons"])) for c in result["compiles"] if c["phase"] == "stream")
        out[(r["workload"].rsplit(":", 1)[-1], r["label"])] = (r["status"], compiles)
    return out


def cli_in(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI as a process of its own (a Ray sweep starts a local cluster: not in this process)."""
    return run_cli(*args, cwd=directory, timeout=900, env=dict(os.environ, RAY_ADDRESS=""))


def cli_here_in(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI in this process (its trials are processes of their own all the same): for the
    commands whose output and store are read, not their process."""
    return cli_here(*args, cwd=directory, env=dict(os.environ, RAY_ADDRESS=""))


@pytest.fixture(scope="module")
def local_sweep(tmp_path_factory):
    """The sweep run with the local executor, killed (SIGTERM) once three trials are in the
    store and run again to the end: one sweep that the tests read as interrupted, as resumed
    and as finished (its store; they run it again too)."""
    directory = tmp_path_factory.mktemp("local-sweep")
    sweep = write_sweep(directory)
    store = directory / "s.sqlite"
    cmd = [sys.executable, "-m", "compilescope.cli", "sweep", str(sweep), "--store", str(store)]
    # its trials forked from a fork server: the store's records, the crash and the resume are read, no
    # cold start (the killed sweep is still a CLI process of its own, its trials processes of theirs)
    env = dict(os.environ, RAY_ADDRESS="", **FORKED_TRIALS)
    proc = subprocess.Popen(cmd, cwd=directory, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.time() + 300
    while time.time() < deadline and (not store.exists() or len(rows(store)) < 3):
        time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=120)
    before = {r["key"]: r["finished"] for r in rows(store)}
    again = subprocess.run(cmd, cwd=directory, capture_output=True, text=True, timeout=900, env=env)
    assert again.returncode == 0, again.stderr
    after = {r["key"]: r["finished"] for r in rows(store)}
    return SimpleNamespace(directory=directory, sweep=sweep, killed_rc=proc.returncode, before=before, again=again,
                           after=after)


def test_local_sweep_stores_every_trial_records_a_crash_and_resumes_with_nothing_to_do(local_sweep):
    tmp_path, sweep = local_sweep.directory, local_sweep.sweep

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return cli_here_in(tmp_path, *args)

    got = counts(tmp_path / "s.sqlite")
    assert len(got) == 10  # per workload: eager + (default, static) × (cold, warm)
    assert got[("sincos", "default (cold)")][0] == "ok"
    assert [cid for cid, _ in got[("sincos", "static (cold)")][1]] == ["0/0", "0/1", "0/2"]
    crashed = rows(tmp_path / "s.sqlite")
    dead = [r for r in crashed if r["workload"].endswith("fault_segfault") and r["status"] == "failed"]
    assert dead and all("SIGSEGV" in json.loads(r["result"])["error"] for r in dead)
    assert all(r["torch"] and r["host"] and r["device"] == "cpu" for r in crashed)
    again = cli("sweep", str(sweep), "--store", "s.sqlite")
    assert again.returncode == 0 and "10 trial(s) already in the store were skipped" in again.stdout
    assert len(rows(tmp_path / "s.sqlite")) == 10
    # report and compare read the store
    report = cli("report", "--store", "s.sqlite", "--where", "workload=sincos")
    assert report.returncode == 0 and "static (warm)" in report.stdout and "fault_segfault" not in report.stdout
    cmp = cli("compare", "--store", "s.sqlite", "--pair-by", "strategy", "workload=sincos,cache=cold",
              "workload=sincos,cache=warm")
    assert cmp.returncode == 0, cmp.stderr
    bad = cli("report", "--store", "s.sqlite", "--where", "colour=red")
    assert bad.returncode == 2 and "unknown --where column 'colour'" in bad.stderr


def test_killed_sweep_reruns_only_the_missing_trials(local_sweep):
    before, again, after = local_sweep.before, local_sweep.again, local_sweep.after
    assert local_sweep.killed_rc == 128 + signal.SIGTERM
    assert 3 <= len(before) < 10
    assert again.returncode == 0, again.stderr
    assert f"{len(before)} trial(s) already in the store were skipped" in again.stdout
    assert len(after) == 10 and all(after[k] == v for k, v in before.items())  # finished trials untouched
    ran = [line for line in again.stdout.splitlines() if " done · " in line]
    assert len(ran) == 10 - len(before)


@pytest.mark.parametrize("text, message", [
    ('workloads = "sincos"\nbogus = 1', "unknown key 'bogus'"),
    ("strategies = ['eager']", "no workloads"),
    ("workloads = ['sincos']\n[settings]\nbackend = [1]", "settings.backend: expected str values"),
    ("workloads = ['sincos'\n", "not valid TOML"),
    ("workloads = ['nope']", "unknown workload 'nope'"),
    ("workloads = ['sincos']\n[measure]\nbudget = inf", "[measure] budget inf is not a finite number"),
    ("workloads = ['sincos']\n[measure]\nsamples = -1", "[measure] samples -1 is below 1"),
    ("workloads = ['sincos']\ntimeout = nan", "timeout must be a positive number of seconds"),
])
def test_bad_sweep_files_are_one_line_errors(cli_in_process, tmp_path, text, message):
    (tmp_path / "bad.toml").write_text(text)
    proc = cli_in_process("sweep", "bad.toml")  # refused before any trial: the CLI in this process
    assert proc.returncode == 2 and message in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr


def test_ray_executor_without_ray_names_the_extra(tmp_path, monkeypatch):
    sweep = write_sweep(tmp_path)
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` fails, as where the extra is not installed
    proc = cli_here("sweep", str(sweep), "--executor", "ray", cwd=tmp_path)
    assert proc.returncode == 2 and "pip install 'compilescope[ray]'" in proc.stderr
    assert proc.stderr.count("\n") == 1


def test_ray_sweep_matches_the_local_sweep_trial_for_trial(local_sweep, tmp_path):
    pytest.importorskip("ray")
    local_dir, sweep = local_sweep.directory, local_sweep.sweep
    # RAY_ADDRESS="" (cli_in): a local cluster of its own, never one found on the machine
    ray = cli_in(tmp_path, "sweep", str(sweep), "--executor", "ray", "--store", "ray.sqlite")
    assert ray.returncode == 0, ray.stderr[-2000:]
    a, b = counts(local_dir / "s.sqlite"), counts(tmp_path / "ray.sqlite")
    assert a.keys() == b.keys() and a == b  # same statuses, compile ids and reasons
    crashed = [r for r in rows(tmp_path / "ray.sqlite") if r["status"] == "failed"]
    assert crashed and all(json.loads(r["result"])["stderr_tail"] is not None for r in crashed)
