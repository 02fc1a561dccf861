"""A piped report is one record per line for every command, at ``COLUMNS=80`` and with
``COLUMNS`` unset: each guard text and each value its JSON holds is found by ``grep`` on one
line, and nothing is cut (no ``…``). ``run``, ``advise`` and ``report`` of a run are checked in
test_cli_conventions.py; here ``report`` of a probe (what ``probe`` prints), ``compare``,
``forecast``, ``warmup``, ``sweep`` and ``demo``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from .test_sweep import SWEEP as FULL_SWEEP

DATA = Path(__file__).resolve().parents[1] / "data" / "derivations"


@pytest.fixture(params=["80", None], ids=["COLUMNS=80", "COLUMNS unset"])
def columns(request, monkeypatch):
    if request.param is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", request.param)
    return request.param


def _on_a_line(part: str, text: str) -> bool:
    """``part`` is found whole on one line of ``text``, as ``grep`` finds it."""
    return any(part in line for line in text.splitlines())


def _missing(parts: set[str], text: str) -> list[str]:
    return sorted(p for p in parts if not _on_a_line(p, text))


def _row(text: str, name: str, after: str = "") -> dict[str, str]:
    """A table's row named ``name`` (the first after the line starting ``after``) as column →
    value, whichever form the pipe got: a table (every cell fits the width) or one record a
    line (``name · column: value · …``)."""
    lines = text.splitlines()
    lines = lines[next(i for i, ln in enumerate(lines) if ln.startswith(after)):]
    for i, line in enumerate(lines):
        if line.startswith(f"{name} · "):
            return dict(f.split(": ", 1) for f in line.split(" · ")[1:])
        cells = [c.strip() for c in line.strip("│").split("│")]
        if line.startswith("│") and cells[0] == name:
            header = next(ln for ln in reversed(lines[:i]) if ln.startswith("┃"))
            return dict(zip([c.strip() for c in header.strip("┃").split("┃")][1:], cells[1:]))
    raise AssertionError(f"no row {name!r} in:\n{text}")


@pytest.mark.parametrize("name", ["probe_two_dims", "probe_recompile_limit", "probe_dtype_change",
                                  "probe_break_print"])
def test_a_piped_probe_report_keeps_every_cause_and_break_on_one_line(main, columns, name):
    from compilescope.analysis.build import build_probe_report
    from compilescope.schema import load

    code, out, err = main("report", str(DATA / f"{name}.json"))
    assert code == 0, err
    report = build_probe_report(load(DATA / f"{name}.json"))
    parts = {p for f in report.functions for c in f.causes for p in (c.description, c.next_step)}
    parts |= {b.reason.splitlines()[0] for b in report.graph_breaks if b.reason}
    assert parts, name
    assert not _missing(parts, out), (_missing(parts, out), out)
    for f in report.functions:  # each cause's description and next step on one line together
        for c in f.causes:
            assert any(c.description in ln and c.next_step in ln for ln in out.splitlines()), (c, out)
    assert "…" not in out


def test_a_piped_compare_shows_every_change_on_one_line(main, columns, tmp_path):
    code, out, err = main("compare", str(DATA / "run_sincos.json"), str(DATA / "run_sincos_again.json"),
                          "--json", str(tmp_path / "c.json"))
    assert code == 0, err
    changes = json.loads((tmp_path / "c.json").read_text())["changes"]
    assert changes
    for c in changes:  # one record a line: the trial, the figure, both values, the change and why
        line = next((ln for ln in out.splitlines() if ln.startswith(f"{c['trial']} · ")
                     and f" {c['figure']} · " in ln and f"A: {c['a_text']} · B: {c['b_text']} · " in ln), None)
        assert line is not None and c["why"] in line, (c, out)
    assert "…" not in out


def test_a_piped_forecast_shows_every_guard_on_one_line(main, columns, tmp_path):
    code, out, err = main("forecast", "sincos", "--stream", "16,32,64,16,8", "--strategies", "default,static",
                          "--backend", "eager", "--json", str(tmp_path / "f.json"))
    assert code == 0, err
    data = json.loads((tmp_path / "f.json").read_text())
    guards = {g["text"] for s in data["strategies"] for r in s["requests"] for g in r["guards"]}
    assert len(guards) >= 4, guards
    assert not _missing(guards, out), (_missing(guards, out), out)
    for s in data["strategies"]:  # its totals, whole
        row = _row(out, s["strategy"])
        for word in ("hit", "compile", "eager", "error", "unknown"):
            assert row[word] == str(sum(r["outcome"] == word for r in s["requests"])), (word, row)
    assert "…" not in out


def test_a_piped_warmup_plan_shows_every_start_up_shape_and_uncovered_guard_on_one_line(main, columns, tmp_path):
    code, out, err = main("warmup", "sincos", "--stream", "16,32,64,16,8", "--strategies", "default,static",
                          "--backend", "eager", "--recompile-limit", "2", "--no-measure",
                          "--plan-out", str(tmp_path / "plan.json"))
    assert code == 0, err
    plan = json.loads((tmp_path / "plan.json").read_text())
    whys = {u["why"] for p in plan["plans"] for u in p["uncovered"]}
    assert whys, plan  # static under a limit of 2 leaves shapes uncovered, each with its guard
    assert not _missing(whys, out), (_missing(whys, out), out)
    for p in plan["plans"]:
        row = _row(out, p["strategy"], after="plan (forecast, dry run)")
        assert (row["covers"], row["uncovered"]) == (str(len(p["covers"])), str(len(p["uncovered"]))), row
        assert row["start-up shapes, in order"].startswith(f"{len(p['shapes'])}: "), row
    assert "…" not in out


# --------------------------------------------------------------------------------------------
# sweep and demo: trials of their own (forked: no figure here reads a cold start)
# --------------------------------------------------------------------------------------------

SWEEP = (FULL_SWEEP.replace('name = "t"', 'name = "piped"')  # test_sweep.py's, without its crashing workload
         .replace(', "{tests}/workloads_for_tests.py:fault_segfault"', "").replace('"cold", "warm"', '"cold"'))


@pytest.mark.usefixtures("forked_trials")
def test_a_piped_sweep_shows_every_value_of_its_trials_on_one_line(main, columns, tmp_path):
    from .test_cli_conventions import assert_summary_shown

    (tmp_path / "s.toml").write_text(SWEEP)
    code, out, err = main("sweep", "s.toml")
    assert code == 0, err
    store = tmp_path / "compilescope-results" / "sweep-piped.sqlite"
    code, saved, err = main("report", "--store", str(store), "--where", "workload=sincos", "--json", "-")
    assert code == 0, err
    data = json.loads(saved)
    assert set(data["summary"]) == {"eager", "default (cold)", "static (cold)"}
    assert_summary_shown(data["summary"], out)  # each trial's record, whole, on one line
    for label in data["summary"]:  # each trial's end, with where the batch stood
        assert any(ln.startswith("[") and ln.endswith(f"] sincos {label} ok") for ln in out.splitlines()), out
    assert "…" not in out.replace("--where workload=…", "")  # the store's hint names a placeholder, nothing cut


DEMO_WORKLOAD = """
import torch
from compilescope import Workload


def build():
    def f(x):
        return x * 2 + 1
    return f


w = Workload("tiny", build, lambda s: (torch.randn(s["n"]),), ("n",), ({"n": 4}, {"n": 8}))
"""


@pytest.mark.inductor
@pytest.mark.usefixtures("forked_trials")
def test_a_piped_demo_shows_every_value_and_guard_on_one_line(tmp_path, monkeypatch):
    """The demo as it runs (inductor, every strategy, cold), on the smallest workload that
    recompiles: two sizes of a one-line function. It runs once, at ``COLUMNS=80``; the same
    results printed again by ``report`` with ``COLUMNS`` unset (the demo prints them with that
    renderer) are checked alike."""
    from ..conftest import cli_here
    from .test_cli_conventions import assert_summary_shown

    (tmp_path / "wl.py").write_text(DEMO_WORKLOAD)
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env["TORCHINDUCTOR_CACHE_DIR"] = str(tmp_path / "inductor")
    demo = cli_here("demo", "--workload", "wl.py:w", "--out", "res", cwd=tmp_path, env={**env, "COLUMNS": "80"})
    assert demo.returncode == 0, demo.stderr
    again = cli_here("report", "res/demo.json", cwd=tmp_path, env=env)
    assert again.returncode == 0, again.stderr
    data = json.loads((tmp_path / "res" / "demo.json").read_text())
    assert set(data["summary"]) == {"eager", "default (cold)", "static (cold)", "dynamic (cold)"}
    reasons = {r for t in data["trials"] for c in t["compiles"] for r in c["reasons"]}
    assert "tensor 'x' size mismatch at index 0. expected 4, actual 8" in reasons
    for out in (demo.stdout, again.stdout):
        assert_summary_shown(data["summary"], out)
        assert not _missing(reasons, out), (_missing(reasons, out), out)  # grep finds each guard
        assert "…" not in out


@pytest.mark.processes
def test_a_run_whose_reader_stops_reading_goes_on_saves_every_trial_and_exits_with_its_own_status(tmp_path):
    """``run … | head -1``: before, click ended the run at the next write (status 1, no word)
    and its results stayed in the journal; the line it had printed said each trial is saved."""
    import subprocess
    import sys

    from compilescope.schema import load

    out = tmp_path / "r.json"
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor-cache"), COLUMNS="150")
    proc = subprocess.Popen([sys.executable, "-m", "compilescope.cli", "run", "sincos", "--stream", "16,32",
                             "--backend", "eager", "--strategies", "default,static", "--samples", "3", "--json",
                             str(out)], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    first = proc.stdout.readline()
    proc.stdout.close()  # the reader leaves, as head -1 does
    assert proc.wait(timeout=600) == 0
    assert first.startswith(b"results: ")
    assert sorted(t.spec.strategy for t in load(out).trials) == ["default", "eager", "static"]


@pytest.mark.processes
def test_a_probed_program_meets_a_closed_pipe_as_it_would_alone(tmp_path):
    """The CLI's own guard against a reader leaving is not the program's: a program that prints
    until its reader leaves gets BrokenPipeError and ends, under probe as alone (same status)."""
    import subprocess
    import sys

    (tmp_path / "gen.py").write_text("i = 0\nwhile True:\n    print(i)\n    i += 1\n")

    def ended(*argv: str) -> int:
        proc = subprocess.Popen([sys.executable, *argv], cwd=tmp_path, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, env=dict(os.environ, COLUMNS="150"))
        assert proc.stdout is not None
        proc.stdout.readline()
        proc.stdout.close()
        return proc.wait(timeout=300)

    alone = ended("gen.py")
    assert alone == 1 and ended("-m", "compilescope.cli", "probe", "gen.py") == alone


@pytest.mark.processes
@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
@pytest.mark.parametrize("args", [("--version",), ("--help",), ("report", "run-schema-2.json"),
                                  ("report", "run-schema-2.json", "--csv", "-")])
def test_an_output_that_cannot_be_written_is_one_line_and_exit_1_on_a_full_device(args):
    """Standard output on a full device (``> /dev/full``): one line naming it, exit 1, no traceback."""
    import subprocess
    import sys

    here = Path(__file__).resolve().parents[1] / "schema_files"
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "compilescope.cli", *args], stdout=full, stderr=subprocess.PIPE,
                              text=True, cwd=here, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.strip() == "compilescope: error: No space left on device", proc.stderr
