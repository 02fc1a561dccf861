"""Hostile inputs and environments: every case is refused up front with one line and exit 2,
or recorded as the workload's failure; nothing unbounded, nothing left behind.

Grouped by kind: inputs that used to be accepted; resume; Ray; temporary directories and
orphaned workers. Most cases run the CLI in this process (the refusals come before any
trial); the ones about processes and signals run it as a subprocess of its own.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from compilescope.analysis.numerics import compare_outputs
from compilescope.api import _header, prepare_run
from compilescope.execute.journal import Journal, journal_path, read_journal
from compilescope.execute.local import LocalExecutor, remove_orphaned_dirs
from compilescope.execute.task import TrialTask
from compilescope.paths import host_tag, run_dir_prefix
from compilescope.model import MeasureOptions, StrategyOptions, TrialSpec
from compilescope.options import MAX_LIFETIME, MAX_SIZE, parse_dynamic_sources, parse_lifetime
from compilescope.schema import dumps, load

from ..conftest import run_cli
from ..own_processes import processes_of, scoped_env, wait_until, workers_of
from ..unit.test_schema import sample_result

HERE = Path(__file__).resolve().parents[1]  # tests/
TEST_WORKLOADS = HERE / "workloads_for_tests.py"
FAST = MeasureOptions(warmup=1, samples=3, min_samples=3, budget_s=0.01)
QUICK = ["--backend", "eager", "--samples", "3", "--budget", "0.01", "--warmup", "1"]


@pytest.fixture
def cli_here(main):
    """conftest's in-process ``main``, taking paths as arguments too."""
    return lambda *args: main(*(str(a) for a in args))


def refused(got: tuple[int, str, str], *words: str) -> str:
    rc, _, err = got
    assert rc == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    for word in words:
        assert word in err, err
    return err


def _cli(*args: str, env: dict[str, str] | None = None, cwd: Path, timeout: float = 300,
         ) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, env=env, cwd=cwd, timeout=timeout, new_session=True)


# ----------------------------------------------------------------- inputs accepted that should not be


@pytest.mark.parametrize("stream, shown", [
    ("99999999999999999999", "99999999999999999999"),
    (f"n={MAX_SIZE + 1}", str(MAX_SIZE + 1)),
])
def test_a_size_past_the_maximum_is_refused_before_any_trial(cli_here, stream, shown):
    got = cli_here("run", "sincos", "--stream", stream, *QUICK, "--json", "r.json")
    refused(got, "--stream", shown, f"above the maximum {MAX_SIZE}")
    assert not Path("r.json").exists() and not journal_path(Path("r.json")).exists()


@pytest.mark.parametrize("lifetime, qps", [
    ("1" + "0" * 40 + "h", "1e308"),  # the duration times the rate is no finite number
    ("1e32h", "1e308"),
    ("9" * 40, None),
    (str(MAX_LIFETIME + 1), None),
])
def test_a_lifetime_beyond_any_machine_is_refused_not_an_overflow(cli_here, lifetime, qps):
    got = cli_here("run", "sincos", "--lifetime", lifetime, *(["--qps", qps] if qps else []), *QUICK)
    refused(got, "--lifetime")
    assert parse_lifetime("8h", 10.0) == 8 * 3600 * 10 and parse_lifetime(str(MAX_LIFETIME)) == MAX_LIFETIME


EXITS_IN_BUILD = '''
import sys
import torch
from compilescope import Workload


def build():
    sys.exit(5)


w = Workload("exits", build, lambda s: (torch.randn(s["n"]),), ("n",), ({"n": 4},))
'''


def test_sys_exit_in_build_is_the_workloads_error_not_the_runs_exit(cli_here, tmp_path):
    (tmp_path / "exits.py").write_text(EXITS_IN_BUILD)
    got = cli_here("run", f"{tmp_path / 'exits.py'}:w", *QUICK)
    refused(got, "build() called sys.exit(5)", "'exits'")


def test_sys_exit_in_build_inside_a_trial_fails_that_trial(tmp_path):
    (tmp_path / "exits.py").write_text(EXITS_IN_BUILD)
    spec = TrialSpec(f"{tmp_path / 'exits.py'}:w", "default", "cold", ({"n": 4},), StrategyOptions(backend="eager"), FAST)
    result = LocalExecutor().submit(TrialTask(spec, str(tmp_path / "cache")), 120).result().result
    assert result.status == "failed"
    assert result.error is not None and "build() called sys.exit(5)" in result.error, result.error
    assert "exited with status 1" in result.error  # the worker failed on the error, not on the user's status 5


@pytest.mark.parametrize("command", [["run", "sincos"], ["advise", "sincos"]])
def test_qps_without_a_lifetime_is_refused(cli_here, command):
    refused(cli_here(*command, "--qps", "5", *QUICK), "--qps", "--lifetime")


def test_advise_refuses_a_mode_beside_another_backend_before_naming_a_results_file(cli_here):
    refused(cli_here("advise", "sincos", "--mode", "max-autotune-no-cudagraphs", "--json", "-", *QUICK), "--mode",
            "only applies to the inductor backend, not 'eager'")


@pytest.mark.parametrize("option", [["--strategies", "static"], ["--cache", "warm"], ["--mark", "x:0"],
                                    ["--fail-on", "crash"]])
def test_run_advise_refuses_the_options_it_would_ignore(cli_here, option):
    refused(cli_here("run", "sincos", "--advise", *option), option[0], "cannot be combined with --advise")


@pytest.mark.parametrize("option", [["--samples", "3"], ["--stream", "4"], ["--backend", "eager"]])
def test_advise_script_refuses_the_options_it_would_ignore(cli_here, tmp_path, option):
    (tmp_path / "s.py").write_text("print('never run')\n")
    refused(cli_here("advise", *option, "--script", "s.py"), option[0], "cannot be combined with --script")


@pytest.mark.parametrize("option", [["--backend", "eager"], ["--stream", "4"], ["--strategies", "static"],
                                    ["--samples", "3"], ["--json", "other.json"], ["--lifetime", "10"]])
def test_resume_refuses_options_that_would_change_the_run(cli_here, option):
    refused(cli_here("run", "--resume", "r.json", *option), option[0], "cannot be combined with --resume")


@pytest.mark.parametrize("sources, tail", [("L['x']:abc", ":abc"), ("L['x']:", "':'"), ("L['x'],L['y']:-1", ":-1")])
def test_dynamic_sources_whose_dim_is_no_integer_are_refused(cli_here, sources, tail):
    got = cli_here("run", "sincos", "--strategies", "dynamic-sources", "--dynamic-sources", sources, *QUICK)
    refused(got, "--dynamic-sources", tail, "not a dim")


@pytest.mark.parametrize("sources", ["L['x']", "L['x']:0", "L['x']:0,L['x']:2", r"L\['x.*'\]:0", "(?:L|G)\\['x'\\]", ".*"])
def test_dynamic_sources_torch_reads_are_accepted(sources):
    assert parse_dynamic_sources(sources) == sources


def test_a_string_schema_version_is_a_malformed_file_not_a_newer_one(cli_here, tmp_path):
    data = json.loads(dumps(sample_result()))
    data["schema_version"] = "2"
    (tmp_path / "r.json").write_text(json.dumps(data))
    err = refused(cli_here("report", "r.json"), "malformed", "schema_version", "'2'")
    assert "upgrade" not in err


MARKER_TEST = """
import pytest


@pytest.mark.max_recompiles({args})
def test_budget():
    pass
"""


@pytest.mark.parametrize("args", ["1, 2", "1, n=2", "m=1", ""])
def test_max_recompiles_with_other_than_one_argument_is_an_error(pytester_compiled, args):
    pytester = pytester_compiled
    # pytest in this process, the plugin loaded by its entry point
    pytester.makepyfile(MARKER_TEST.format(args=args))
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*max_recompiles takes one non-negative integer (n), got (*"])


def test_max_recompiles_takes_n_by_name(pytester_compiled):
    pytester = pytester_compiled
    pytester.makepyfile(MARKER_TEST.format(args="n=0"))
    pytester.runpytest_inprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_a_nan_only_when_compiled_is_a_nan_error_not_zero():
    eager = torch.ones(4)
    compiled = torch.tensor([1.0, float("nan"), 1.0, 1.0])
    check = compare_outputs({"n": 4}, eager, compiled)
    assert not check.passed and check.max_abs_err is None and check.max_rel_err is None  # not 0.0
    assert check.detail == "out: NaN in 1 element(s) where only compiled gave NaN"
    both = compare_outputs({"n": 4}, compiled, compiled.clone())  # the same NaN on both sides is a match
    assert both.passed and both.max_abs_err == 0.0
    elsewhere = compare_outputs({"n": 4}, torch.tensor([float("nan"), 1.0, 1.0, 1.0]), compiled)
    assert not elsewhere.passed
    assert elsewhere.detail == "out: NaN in 2 element(s) where compiled and eager gave NaN at different elements"
    eager_only = compare_outputs({"n": 4}, compiled, eager)
    assert eager_only.detail == "out: NaN in 1 element(s) where only eager gave NaN"


NAN_WHEN_COMPILED = '''
import torch
from compilescope import Workload


def build():
    def f(x):
        y = x.sin()
        if torch.compiler.is_compiling():
            y = y + float("nan")
        return y
    return f


w = Workload("nan", build, lambda s: (torch.randn(s["n"]),), ("n",), ({"n": 4}, {"n": 8}))
'''


def test_a_run_whose_compiled_outputs_are_nan_says_nan(cli_here, tmp_path):
    (tmp_path / "nan.py").write_text(NAN_WHEN_COMPILED)
    rc, out, err = cli_here("run", f"{tmp_path / 'nan.py'}:w", "--strategies", "default", *QUICK, "--json", "r.json",
                            "--fail-on", "numerics")
    assert rc == 1, err  # --fail-on numerics
    text = " ".join(out.split())
    assert "outputs differed from eager on 2 of 2 compiled shape(s)." in text, out  # and no max abs err figure
    assert ("default (cold): outputs differ from eager on 2 shape(s) (first: out: NaN in 4 element(s) where only "
            "compiled gave NaN)") in text
    assert "0.0e+00" not in text
    trial = load(tmp_path / "r.json").trials[1]
    assert [n.detail for n in trial.numerics] == ["out: NaN in 4 element(s) where only compiled gave NaN",
                                                 "out: NaN in 8 element(s) where only compiled gave NaN"]


# ----------------------------------------------------------------- resume


RESUMABLE = '''
import torch
from compilescope import Workload


def build():
    return lambda x: x * 2


w = Workload("twice", build, lambda s: (torch.randn(s["n"]),), ("n",), ({"n": 4},))
'''


def _journal_of_an_interrupted_run(tmp_path: Path) -> tuple[Path, Path, bytes]:
    """A run that stopped before its first trial: its journal holds only the run description."""
    workload = tmp_path / "twice.py"
    workload.write_text(RESUMABLE)
    out = tmp_path / "r.json"
    _, base, names = prepare_run(f"{workload}:w", "4,8", "eager,default", options=StrategyOptions(backend="eager"),
                                 measure=FAST)
    Journal(out).start(_header(base, names, "cold", 120.0, "compilescope run twice.py:w", None,
                               "2026-01-01T00:00:00+00:00"))
    return workload, out, journal_path(out).read_bytes()


def _completed(proc: subprocess.CompletedProcess[str]) -> tuple[int, str, str]:
    return proc.returncode, proc.stdout, proc.stderr


def test_resume_checks_the_workload_first_and_keeps_the_journal(tmp_path):
    workload, out, journal = _journal_of_an_interrupted_run(tmp_path)
    workload.unlink()
    resume = ("run", "--resume", str(out))
    refused(_completed(_cli(*resume, cwd=tmp_path)), f"cannot resume {out}", "does not exist")
    assert journal_path(out).read_bytes() == journal and not out.exists()  # nothing ran, nothing removed

    workload.write_text(RESUMABLE.replace("return lambda x: x * 2", "raise RuntimeError('no weights')"))
    refused(_completed(_cli(*resume, cwd=tmp_path)), "cannot resume", "RuntimeError: no weights")
    assert journal_path(out).read_bytes() == journal

    workload.write_text(RESUMABLE)  # put back: the same run resumes and completes
    proc = _cli(*resume, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    done = load(out)
    assert [(t.spec.strategy, t.status) for t in done.trials] == [("eager", "ok"), ("default", "ok")]
    assert done.missing == () and not journal_path(out).exists()


def test_resume_refuses_a_journal_whose_backend_is_gone(cli_here, tmp_path):
    _, out, _ = _journal_of_an_interrupted_run(tmp_path)
    lines = journal_path(out).read_text().splitlines()
    header = json.loads(lines[0])
    header["base"]["options"]["backend"] = "no_such_backend"
    journal_path(out).write_text(json.dumps(header) + "\n")
    refused(cli_here("run", "--resume", str(out)), "cannot resume", "unknown --backend 'no_such_backend'")
    assert read_journal(journal_path(out)).header["base"]["options"]["backend"] == "no_such_backend"


# ----------------------------------------------------------------- Ray

SWEEP = 'workloads = ["sincos"]\nstrategies = ["eager"]\n[settings]\nbackend = ["eager"]\n'


def _closed_port() -> int:
    """A port of ours on 127.0.0.1 that nothing listens on: connecting to it is refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_unreachable_ray_cluster_is_one_line_within_the_timeout(tmp_path):
    (tmp_path / "s.toml").write_text(SWEEP)
    address = f"127.0.0.1:{_closed_port()}"
    proc = _cli("sweep", "s.toml", "--executor", "ray", "--ray-address", address, "--ray-timeout", "5",
                "--store", "s.sqlite", cwd=tmp_path, timeout=120)  # the timeout: not Ray's minutes of retries
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert f"cannot reach the Ray cluster at {address}" in proc.stderr


def test_a_ray_address_that_never_answers_times_out(tmp_path):
    (tmp_path / "s.toml").write_text(SWEEP)
    with socket.socket() as silent:  # accepts connections, never speaks Ray
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        address = f"127.0.0.1:{silent.getsockname()[1]}"
        proc = _cli("sweep", "s.toml", "--executor", "ray", "--ray-address", address, "--ray-timeout", "5",
                    "--store", "s.sqlite", cwd=tmp_path, timeout=120)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert f"the Ray cluster at {address} did not answer within 5 s (--ray-timeout)" in proc.stderr


def test_ray_options_with_the_local_executor_are_refused(cli_here, tmp_path):
    (tmp_path / "s.toml").write_text(SWEEP)
    refused(cli_here("sweep", "s.toml", "--ray-timeout", "5"), "--ray-timeout", "--executor local")


# ----------------------------------------------------------------- temporary directories, orphaned workers


def _bare_env(scratch: Path, **extra: str) -> tuple[dict[str, str], str]:
    env = {k: v for k, v in os.environ.items() if k != "TORCHINDUCTOR_CACHE_DIR"}
    return scoped_env(env, TMPDIR=str(scratch), **extra)


def test_a_failed_backend_check_leaves_nothing_in_tmpdir(tmp_path):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env, _ = _bare_env(scratch)
    proc = _cli("run", "sincos", "--backend", "no_such_backend", env=env, cwd=tmp_path)
    assert proc.returncode == 2 and "unknown --backend 'no_such_backend'" in proc.stderr, proc.stderr
    assert list(scratch.iterdir()) == []  # no torchinductor_USER left behind


@pytest.mark.parametrize("fork_server", ["0", "1"], ids=["fresh-interpreter", "fork-server"])
def test_a_killed_orchestrator_takes_its_worker_and_cache_dir_with_it(tmp_path, fork_server):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env, scope = _bare_env(scratch, COMPILESCOPE_TEST_SLEEP="5", COMPILESCOPE_FORK_SERVER=fork_server)
    proc = subprocess.Popen(
        [sys.executable, "-m", "compilescope.cli", "run", f"{TEST_WORKLOADS}:slow_eager", "--strategies", "eager",
         *QUICK, "--json", str(tmp_path / "r.json")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=tmp_path, start_new_session=True)
    try:
        # workers start ahead, before the run's cache directory exists: wait for the directory,
        # then for the trial to be under way (each of its calls sleeps 5 s, so it runs far longer)
        # (only the run's own directory is looked for: an interpreter importing torch may hold a
        # short-lived temporary file of its own there, as one did on a CI machine: 'bm_pxfum')
        def ours():
            return [p for p in scratch.iterdir() if p.name.startswith("compilescope-")]

        assert wait_until(lambda: workers_of(scope) and ours(), 120), "no trial started"
        assert [p.name for p in ours()][0].startswith("compilescope-cache-")
        time.sleep(4)
        os.kill(proc.pid, signal.SIGKILL)  # nothing can catch this: the worker must notice
        proc.wait(30)
        # 30 s: a heavily loaded CI machine; the watch thread polls its parent every 0.5 s
        assert wait_until(lambda: not processes_of(scope), 30), processes_of(scope)
        assert ours() == []  # the worker removed the run's cache directory on its way out
    finally:
        for pid, _ in processes_of(scope):
            os.kill(pid, signal.SIGKILL)


ORPHAN = """
import sys, time
import compilescope.execute.worker as worker
if sys.argv[3] == "no-pdeathsig":
    worker.PR_SET_PDEATHSIG = -1  # an invalid prctl option: the parent-pid watch thread alone
else:
    worker.PARENT_POLL_S = 3600  # the watch thread asleep: the kernel's signal alone
worker.ParentWatch(int(sys.argv[1]), sys.argv[2]).install()
print("ready", flush=True)
while True:
    time.sleep(0.05)
"""

PARENT = """
import os, subprocess, sys, tempfile, time
from compilescope.paths import host_tag, run_dir_prefix
root = tempfile.mkdtemp(prefix=run_dir_prefix("cache"), dir=sys.argv[1])
os.mkdir(os.path.join(root, "key"))
known = os.path.join(root, "key") if sys.argv[4] == "task" else ""  # before its task: no directory known
child = subprocess.Popen([sys.executable, "-c", sys.argv[2], str(os.getpid()), known, sys.argv[3]],
                         stdout=subprocess.PIPE, text=True, start_new_session=True)
child.stdout.readline()
print(child.pid, flush=True)
time.sleep(600)
"""


@pytest.mark.parametrize("mode, task", [("pdeathsig", "task"), ("no-pdeathsig", "task"), ("pdeathsig", "no-task")])
def test_a_worker_whose_parent_dies_removes_the_runs_cache_dir_and_exits(tmp_path, mode, task):
    """With its task, the worker knows its run's directory; before it, it removes the dead
    driver's run directories in its temporary directory."""
    env, scope = scoped_env(TMPDIR=str(tmp_path))
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(tmp_path), ORPHAN, mode, task], stdout=subprocess.PIPE,
                              text=True, env=env, start_new_session=True)
    try:
        assert parent.stdout is not None
        _killed_parent_takes_its_worker(parent, int(parent.stdout.readline()), scope, tmp_path)
    finally:
        for pid, _ in processes_of(scope):
            os.kill(pid, signal.SIGKILL)


def _killed_parent_takes_its_worker(parent: subprocess.Popen[str], child: int, scope: str, run_root: Path) -> None:
    assert len(list(run_root.iterdir())) == 1
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait(30)
    assert wait_until(lambda: not any(pid == child for pid, _ in processes_of(scope)), 10)
    assert list(run_root.iterdir()) == []  # the worker removed the run's directory on its way out


THREADED_PARENT = """
import os, subprocess, sys, tempfile, threading, time
from compilescope.paths import run_dir_prefix
root = tempfile.mkdtemp(prefix=run_dir_prefix("cache"), dir=sys.argv[1])
os.mkdir(os.path.join(root, "key"))
children = []
def start():
    children.append(subprocess.Popen([sys.executable, "-c", sys.argv[2], str(os.getpid()), os.path.join(root, "key"),
                                      "pdeathsig"], stdout=subprocess.PIPE, text=True, start_new_session=True))
    children[0].stdout.readline()
starter = threading.Thread(target=start)
starter.start()
starter.join()  # the thread that started the worker has ended: the kernel signalled the worker
for _ in range(4):  # threads that end one by one when this process is killed: a signal each
    threading.Thread(target=time.sleep, args=(600,), daemon=True).start()
print(children[0].pid, flush=True)
time.sleep(600)
"""


def test_a_worker_outlives_the_end_of_the_driver_thread_that_started_it_and_not_the_driver(tmp_path):
    """The kernel's signal alone (the watch thread asleep): it comes when the starting thread
    ends, the driver still alive, and again per thread when the driver is killed."""
    env, scope = scoped_env()
    parent = subprocess.Popen([sys.executable, "-c", THREADED_PARENT, str(tmp_path), ORPHAN], stdout=subprocess.PIPE,
                              text=True, env=env, start_new_session=True)
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        time.sleep(1.0)
        assert any(pid == child for pid, _ in processes_of(scope)), "the worker ended while its driver lives"
        _killed_parent_takes_its_worker(parent, child, scope, tmp_path)
    finally:
        for pid, _ in processes_of(scope):
            os.kill(pid, signal.SIGKILL)


SIGNALLED_AGAIN = """
import os, sys, tempfile
import compilescope.execute.worker as worker
from compilescope.paths import run_dir_prefix
GONE = 2 ** 22 + 1  # above any pid_max: no process, so not our parent (which may be pid 1 in a container)
root = tempfile.mkdtemp(prefix=run_dir_prefix("cache", GONE), dir=sys.argv[1])
os.mkdir(os.path.join(root, "key"))
watch = worker.ParentWatch(GONE, os.path.join(root, "key"))
worker.signal.signal(worker.PARENT_DIED, watch._on_parent_died)
remove, calls = worker.shutil.rmtree, []
def rmtree(path, **kw):  # the signal comes twice more while the first one is being handled
    calls.append(path)
    if len(calls) == 1:
        os.kill(os.getpid(), worker.PARENT_DIED)
        os.kill(os.getpid(), worker.PARENT_DIED)
    remove(path, **kw)
worker.shutil.rmtree = rmtree
os.kill(os.getpid(), worker.PARENT_DIED)
"""


def test_a_worker_signalled_again_on_its_way_out_still_cleans_up_and_exits(tmp_path):
    proc = subprocess.run([sys.executable, "-c", SIGNALLED_AGAIN, str(tmp_path)], capture_output=True, text=True,
                          timeout=20, start_new_session=True)
    assert proc.returncode == -signal.SIGKILL, proc.stderr  # its own process group, killed by itself
    assert list(tmp_path.iterdir()) == []


ENDED_WHILE_IMPORTING = """
import sys, tempfile
tempfile.tempdir = sys.argv[1]
import compilescope.execute.worker as worker
from compilescope import compat
made = tempfile.mkdtemp
def mkdtemp(*args, **kwargs):  # the scratch directory is made: the driver dies now, mid-import
    path = made(*args, **kwargs)
    worker.ParentWatch(2 ** 22 + 1, "").install()  # not its parent: the watch ends this process at once
    return path
tempfile.mkdtemp = mkdtemp
compat.import_compiler()
"""


def test_a_fork_server_ended_while_it_imports_dynamo_leaves_no_scratch_directory(tmp_path):
    """A fork server imports Dynamo pointed at a scratch cache directory of its own; its driver
    killed meanwhile (a loaded machine's slow import), its parent watch removes that directory
    on the way out, as it removes the run's."""
    env = {k: v for k, v in os.environ.items() if k != "TORCHINDUCTOR_CACHE_DIR"}  # unset, as a fork server's
    proc = subprocess.run([sys.executable, "-c", ENDED_WHILE_IMPORTING, str(tmp_path)], capture_output=True,
                          text=True, timeout=60, start_new_session=True, env=env)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_cache_dirs_of_dead_runs_are_removed_on_the_next_start(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        names = {
            "dead": run_dir_prefix("cache", dead.pid) + "a",
            "dead-ray": run_dir_prefix("ray", dead.pid) + "b",
            "dead-sweep": run_dir_prefix("sweep", dead.pid) + "g",
            "dead-import": run_dir_prefix("import", dead.pid) + "h",  # ended while it imported Dynamo
            "alive": run_dir_prefix("cache", alive.pid) + "c",
            "alive-import": run_dir_prefix("import", alive.pid) + "i",
            "mine": run_dir_prefix("cache") + "d",
            "other-host": f"compilescope-cache-{dead.pid}-{'000000' if host_tag() != '000000' else 'ffffff'}-e",
            "unrelated": f"compilescope-cache-{dead.pid}",
        }
        for name in names.values():
            (tmp_path / name).mkdir()
            (tmp_path / name / "f").write_text("x")
        removed = remove_orphaned_dirs(str(tmp_path))
        gone = ("dead", "dead-ray", "dead-sweep", "dead-import")
        assert sorted(p.name for p in removed) == sorted(names[k] for k in gone)
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(v for k, v in names.items() if k not in gone)
    finally:
        alive.kill()
        alive.wait()

