"""The executor registry: ``--executor NAME`` is validated against it, and a new executor is
one file plus one registry line — its settings become options of the commands that run
trials, refused with another executor."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from compilescope.errors import OptionError
from compilescope.execute.executor import Executor
from compilescope.execute.local import LocalExecutor
from compilescope.execute.registry import EXECUTORS, executor_entry, make_executor
from compilescope.execute.start import PreStart
from compilescope.schema import load

ROOT = Path(__file__).resolve().parents[3]

# The one registry line a new executor needs, added before the command line is built; then
# each command line of argv, its exit status and stderr printed as one JSON line.
WITH_A_NEW_EXECUTOR = f"""
import contextlib, io, json, sys
sys.path.insert(0, {str(ROOT)!r})
from compilescope.execute import registry
registry.EXECUTORS["logging"] = registry.ExecutorEntry(
    "logging", "tests.executors_for_tests:LoggingExecutor", "each trial in the driver, logged",
    (registry.Setting("log_to", "the file each call is logged to."),))
from compilescope.cli import main
for argv in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(argv)
    print(json.dumps([code, err.getvalue()]), flush=True)
"""


@pytest.mark.processes
def test_a_new_executor_is_one_file_and_a_registry_line(tmp_path):
    quick = ["--backend", "eager", "--samples", "1", "--warmup", "0", "--budget", "0"]
    argv = [
        ["run", "sincos", "--stream", "8,16", "--strategies", "eager,default", *quick, "--executor", "logging",
         "--log-to", "log.txt", "--json", "r.json"],
        ["run", "sincos", "--log-to", "other.txt"],  # a setting of another executor than local
        ["sweep", "s.toml", "--executor", "logging", "--ray-timeout", "5"],
        ["advise", "sincos", "--executor", "nosuch"],
        ["run", "--help"],
    ]
    proc = subprocess.run([sys.executable, "-c", WITH_A_NEW_EXECUTOR, json.dumps(argv)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ran, other, ray_only, unknown, helped = [json.loads(line) for line in proc.stdout.splitlines()
                                             if line.startswith("[")]
    assert ran[0] == 0, ran[1]
    assert (tmp_path / "log.txt").read_text().splitlines() == ["expect 2", "submit eager", "submit default (cold)",
                                                               "shutdown"]
    result = load(tmp_path / "r.json")
    assert [(t.spec.label, t.status, t.env.start) for t in result.trials] == [
        ("eager", "ok", "in-process"), ("default (cold)", "ok", "in-process")]
    assert other == [2, "compilescope: error: --log-to cannot be combined with --executor local: it applies to "
                        "--executor logging\n"]
    assert ray_only[0] == 2 and "--ray-timeout cannot be combined with --executor logging: it applies to " \
                                "--executor ray" in ray_only[1]
    assert unknown[0] == 2 and len(unknown[1].strip().splitlines()) == 1
    assert "'nosuch' is not one of 'local', 'ray', 'logging'" in unknown[1], unknown[1]
    flat = " ".join(proc.stdout.split())  # the help, unwrapped
    assert "--log-to TEXT logging: the file each call is logged to." in flat
    assert "logging: each trial in the driver, logged. [default: local]" in flat
    assert not (tmp_path / "other.txt").exists()


def test_the_registry_makes_its_executors_and_names_an_unknown_one():
    assert list(EXECUTORS) == ["local", "ray"]
    with pytest.raises(OptionError, match=r"^unknown --executor 'nosuch': use one of local, ray$"):
        executor_entry("nosuch")
    start = PreStart()
    local = make_executor("local", start=start)
    assert isinstance(local, LocalExecutor) and isinstance(local, Executor) and local.start is start
    assert isinstance(make_executor("local").start, PreStart)  # a start strategy of its own
    assert make_executor("local").start is not make_executor("local").start


@pytest.mark.processes
def test_the_command_line_and_the_registry_import_neither_ray_nor_torch():
    code = ("import sys\nimport compilescope.cli, compilescope.execute.registry\n"
            "print('ray' in sys.modules, 'torch' in sys.modules)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.stdout.split() == ["False", "False"], proc.stderr


def test_every_executor_has_the_protocols_four_names_and_no_second_name_for_one():
    from compilescope.execute.inprocess import InProcessExecutor
    from compilescope.execute.ray_executor import RayExecutor

    protocol = {"capabilities", "expect", "submit", "shutdown"}
    for cls in (LocalExecutor, RayExecutor, InProcessExecutor):
        public = {name for name in vars(cls) if not name.startswith("_")}
        assert protocol - {"capabilities"} <= public, cls  # Ray's capabilities are the cluster's, set when made
        assert public - protocol <= {"from_settings"}, (cls, public - protocol)  # Ray's factory
