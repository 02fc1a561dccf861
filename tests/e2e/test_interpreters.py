"""Trials in another Python interpreter (``run --python PATH``) and the upgrade question
(``compare`` of the same workload under two torch versions).

The run under a second torch needs a second environment: `make test-torch TORCH=X` builds
``.venv-torch-X`` beside this checkout; without one the test skips and says so.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from compilescope import __version__, compat
from compilescope.app.progress import CHECKING

from ..conftest import run_cli

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def cli(cli_in_process):
    """The CLI in this process: these tests read its messages and results, not its process;
    the trials run in the interpreter given (--python), processes of their own."""
    return cli_in_process


def _other_interpreter() -> tuple[str, str] | None:
    """(python, its torch) of a side environment whose torch is not this one's."""
    from compilescope.errors import OptionError
    from compilescope.execute.interpreter import check_interpreter

    for python in sorted(ROOT.glob(".venv-torch-*/bin/python")):
        try:
            found = check_interpreter(str(python))
        except OptionError:
            continue
        if found.torch != compat.torch_version():
            return str(python), found.torch
    return None


def test_an_interpreter_that_cannot_run_trials_is_one_line_naming_the_fix(cli, tmp_path):
    missing = cli("run", "sincos", "--python", str(tmp_path / "nowhere" / "python"), "--backend", "eager")
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1
    assert "--python" in missing.stderr and "no such executable" in missing.stderr
    # an interpreter with torch but no compilescope: how to install it there, before any trial
    wrapper = tmp_path / "python-without-compilescope"
    wrapper.write_text(f"#!{sys.executable}\nimport sys\nsys.modules['compilescope'] = None\n"
                       "exec(compile(sys.argv[2], '<string>', 'exec'))\n")
    wrapper.chmod(0o755)
    without = cli("run", "sincos", "--python", str(wrapper), "--backend", "eager")
    # the check starts that interpreter (it imports torch): past 3 s, a loaded machine's, the
    # progress line says the check is still going, before the error
    error = [line for line in without.stderr.splitlines() if line != CHECKING]
    assert without.returncode == 2 and len(error) == 1, without.stderr
    assert "compilescope is not importable there; install it with: " in without.stderr
    assert f"{wrapper} -m pip install -e {ROOT}" in without.stderr
    assert not list(tmp_path.glob("compilescope-results/*.json"))  # no trial ran


def test_trials_in_an_interpreter_record_its_versions(cli, tmp_path):
    """This interpreter named explicitly: the trials record its path, versions and the
    compilescope version they ran."""
    done = cli("run", "sincos", "--python", sys.executable, "--strategies", "default", "--backend", "eager",
               "--stream", "8,16", "--samples", "3", "--budget", "0.01", "--json", "run.json")
    assert done.returncode == 0, done.stderr[-2000:]
    trials = json.loads((tmp_path / "run.json").read_text())["trials"]
    envs = {(t["env"]["executable"], t["env"]["torch"], t["env"]["compilescope"]) for t in trials}
    assert envs == {(sys.executable, compat.torch_version(), __version__)}


def test_the_same_run_under_another_torch_compares_with_the_version_difference(cli, tmp_path):
    other = _other_interpreter()
    if other is None:
        pytest.skip("no second torch installed: `make test-torch TORCH=2.10.0` builds one (.venv-torch-2.10.0)")
    python, torch_b = other
    args = ("run", "sincos", "--strategies", "default,static", "--backend", "eager", "--stream", "8,8,16,32,8",
            "--samples", "5", "--budget", "0.05")
    a = cli(*args, "--json", "a.json")
    b = cli(*args, "--python", python, "--json", "b.json")
    assert a.returncode == 0 and b.returncode == 0, (a.stderr[-1500:], b.stderr[-1500:])
    run_b = json.loads((tmp_path / "b.json").read_text())
    assert {t["env"]["torch"] for t in run_b["trials"]} == {torch_b}
    assert {t["env"]["executable"] for t in run_b["trials"]} == {python}
    compared = cli("compare", "a.json", "b.json")
    assert compared.returncode in (0, 1), compared.stderr
    out = compared.stdout
    assert f"torch {compat.torch_version()} → {torch_b}" in out
    for figure in ("compiles", "recompile causes", "PyTorch's guards per entry", "graph breaks", "refused at the limit",
                   "compile s", "speedup"):
        assert figure in out, figure
    assert "torch differs" not in out  # said once, above the table, not per pair


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs a POSIX system")
def test_forecast_runs_in_the_interpreter_it_is_given(tmp_path):
    proc = run_cli("forecast", "sincos", "--backend", "eager", "--stream", "8,16", "--strategies", "static",
                   "--python", sys.executable, "--json", "f.json", cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads((tmp_path / "f.json").read_text())
    assert data["torch_version"] == compat.torch_version()
