from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[1]

# One environment for every test, whatever the shell or CI runner that starts the suite sets.
# Removed for the session (in the controller and in each xdist worker, before any test): what
# changes what compilescope, PyTorch or rich do or print — the terminal width and colour, the
# torch logs, trace, compile and cache settings, compilescope's own switches, a Ray cluster to
# join. A test that wants one sets it itself (monkeypatch, or its subprocess's env). Kept: what
# a process needs to run on this machine (PATH, HOME, locale, temporary directory, proxies) and
# the machine's CPU and thread settings (OPENBLAS_CORETYPE, OMP_NUM_THREADS, LD_PRELOAD…), which
# trials inherit and record on purpose: the tests that read a trial's recorded variables account
# for them (tests/e2e/test_trialenv.py).
AMBIENT = ("COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR", "CLICOLOR", "CLICOLOR_FORCE", "TTY_COMPATIBLE",
           "TTY_INTERACTIVE", "JUPYTER_COLUMNS", "JUPYTER_LINES", "RAY_ADDRESS", "PYTEST_ADDOPTS")
AMBIENT_PREFIXES = ("TORCH_", "TORCHDYNAMO_", "TORCHINDUCTOR_", "INDUCTOR_", "TRITON_", "COMPILESCOPE_")
SUITE_SWITCHES = ("COMPILESCOPE_CONCURRENCY_CHECK", "COMPILESCOPE_REGENERATE_GOLDEN")  # options of this suite


def _without_ambient(environ: dict[str, str]) -> list[str]:
    return [k for k in environ if (k in AMBIENT or k.startswith(AMBIENT_PREFIXES)) and k not in SUITE_SWITCHES]


for _name in _without_ambient(dict(os.environ)):
    del os.environ[_name]


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    """Each in-process test starts with empty dynamo caches (reset is public API). Where torch
    is not imported yet there is nothing to reset, and a test that needs no torch imports none."""
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.compiler.reset()
    yield
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.compiler.reset()


def _cli_env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor-cache"))
    env["COLUMNS"] = "150"  # one width for the text these tests read (test_cli_conventions tries others)
    return env


def _cli_process(tmp_path: Path):  # type: ignore[no-untyped-def]
    def run(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "compilescope.cli", *args],
            capture_output=True, text=True, timeout=timeout, cwd=tmp_path, env=_cli_env(tmp_path),
        )

    return run


@pytest.fixture
def cli(tmp_path):
    """Run the real ``compilescope`` CLI in a subprocess, as a user would."""
    return _cli_process(tmp_path)


@pytest.fixture
def cli_subprocess(tmp_path):
    """``cli`` by a name of its own, for a module whose ``cli`` runs in this process."""
    return _cli_process(tmp_path)


@pytest.fixture
def cli_in_process(tmp_path):
    """As ``cli``, with the CLI in this process (its trials are processes of their own all the
    same): for tests that read the CLI's output and results, not its process."""

    def run(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return cli_here(*args, cwd=tmp_path, env=_cli_env(tmp_path))

    return run


def cli_here(*args: object, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``compilescope ARGS…`` in this process (fast: torch is already imported), in ``cwd``, with
    ``env`` as the environment for the call (its trials inherit it); the exit status, stdout and
    stderr as a CompletedProcess. For module fixtures and helpers, where ``main`` (a
    function-scoped fixture) cannot be used; cwd, environment and signal handlers are put back."""
    from compilescope.cli import main as cli_main

    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    out, err = io.StringIO(), io.StringIO()
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli_main([str(a) for a in args])
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        for s, handler in saved.items():
            signal.signal(s, handler)
    return subprocess.CompletedProcess(["compilescope", *map(str, args)], code, out.getvalue(), err.getvalue())


@pytest.fixture
def main(tmp_path, monkeypatch, capsys):
    """``compilescope ARGS…`` in this process (fast: torch is already imported), in tmp_path;
    returns (exit status, stdout, stderr). The CLI's signal handlers are put back after."""
    from compilescope.cli import main as cli_main

    monkeypatch.chdir(tmp_path)

    def run(*args: str) -> tuple[int, str, str]:
        saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
        try:
            code = cli_main(list(args))
        finally:
            for s, handler in saved.items():
                signal.signal(s, handler)
        out, err = capsys.readouterr()
        return code, out, err

    return run


# `make test` hands each test file to one xdist worker whole (--dist loadfile: its module
# fixtures are computed once); the files named here share one worker, so that a session
# fixture they both read (``advised_runs``) is computed once too.
SHARED_GROUPS = {"test_advise.py": "advise", "test_advice_snippets.py": "advise"}
# The files that take longest (by CPU: per-file profiles of `pytest -n 0`, their trial and CLI
# processes included; by `make test`'s --durations for test_edges_*), handed out first so that
# the workers finish together (`make test` keeps this order: --no-loadscope-reorder); the rest,
# short files that fill the end, follow in collection order. A stale list changes only the
# order, never what runs.
LONGEST_FIRST = ("test_advice_snippets.py", "test_advise.py", "test_edges_pipes.py", "test_docs.py",
                 "test_edges_causes.py", "test_probe.py", "test_warmup_verify.py", "test_trialenv.py",
                 "test_real_models.py", "test_probe_transparency.py", "test_reliability.py", "test_sweep.py",
                 "test_inductor.py", "test_warmup_plan.py", "test_forecast.py", "test_request_errors.py",
                 "test_hostile_inputs.py", "test_cli.py", "test_probe_behaviour.py", "test_html.py",
                 "test_cli_conventions.py", "test_executor_seam.py", "test_script_advise.py",
                 "test_hostile_outputs.py", "test_compare.py", "test_forecast_recorded.py", "test_zoo.py",
                 "test_record_shapes.py", "test_fuzz.py", "test_watch.py")


@pytest.fixture(autouse=True)
def _no_processes(request, monkeypatch):
    """Under --no-processes a test that starts a process fails, naming the marker it needs."""
    if not request.config.getoption("--no-processes"):
        yield
        return

    def refuse(*args, **kwargs):  # type: ignore[no-untyped-def]
        pytest.fail(f"{request.node.nodeid} starts a process: mark it @pytest.mark.processes", pytrace=False)

    import platform

    platform.processor()  # runs `uname -p` once and keeps it: a trial's environment reads it (with or without xdist)

    monkeypatch.setattr(subprocess.Popen, "_execute_child", refuse)
    monkeypatch.setattr(os, "fork", refuse)
    monkeypatch.setattr(os, "posix_spawn", refuse)
    yield


def pytest_collection_modifyitems(config, items):  # type: ignore[no-untyped-def]
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: each file's own order kept


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist's: nothing without it
def pytest_xdist_make_scheduler(config, log):  # type: ignore[no-untyped-def]
    """--dist loadfile, with the files of SHARED_GROUPS one unit of work."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class FileGroups(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return SHARED_GROUPS.get(path.rsplit("/", 1)[-1], path)

    return FileGroups(config, log)


@pytest.fixture
def pytester_compiled(request):
    """``pytester`` for an in-process pytest that compiles, taken once this process has compiled:
    the modules torch imports at its first compile are then outside the module snapshot that
    each in-process pytest restores after it, so a second one does not import them again (torch
    refuses to register their cache artifacts twice). Without it such a test passed only after
    another test of its process had compiled."""
    import torch

    torch.compile(lambda x: x + 1, backend="eager")(torch.ones(1))
    torch.compiler.reset()  # the inner pytest's compiles are numbered from 0/0 again
    return request.getfixturevalue("pytester")


FORK_SERVER_VAR = "COMPILESCOPE_FORK_SERVER"  # execute.start.FORK_SERVER_VAR, read when an executor is made
FORKED_TRIALS = {FORK_SERVER_VAR: "1"}


@pytest.fixture(scope="session", autouse=True)
def _shared_fork_server(request, tmp_path_factory):
    """Forked trials for the whole session, from one fork server per test process that imported
    torch and Dynamo once (``COMPILESCOPE_FORK_SERVER=unix:PATH``, :mod:`compilescope.execute.
    zygote`): the drivers this process runs and the CLI processes it starts (their environment is
    this one's) fork each trial from it, where their launch's environment is the one it imported
    under (else they start a fork server of their own). A forked trial records the same compiles,
    guards, outputs and failures as a fresh interpreter (tests/e2e/test_trialenv.py,
    test_inductor.py); only its cold first call and compile time differ (a few percent), and no
    test here measures a cold start's time. The tests of how trial processes start, end and are
    cleaned up choose their start themselves: ``monkeypatch.delenv(FORK_SERVER_VAR)`` (fresh
    interpreters), ``scoped_env`` (tests that look for their processes by their environment), an
    explicit starter."""
    if request.config.getoption("--no-processes") or os.environ.get(FORK_SERVER_VAR):
        yield
        return
    from compilescope.execute.environment import worker_environment
    from compilescope.execute.process import kill_group, start_shared_fork_server
    from compilescope.execute.start import fork_server_supported

    if not fork_server_supported():
        yield
        return
    path = str(tmp_path_factory.mktemp("fork-server") / "s")
    server = start_shared_fork_server(path, worker_environment(1))
    os.environ[FORK_SERVER_VAR] = f"unix:{path}"
    try:
        yield
    finally:
        os.environ.pop(FORK_SERVER_VAR, None)
        kill_group(server)


@contextlib.contextmanager
def forked_trials_here() -> Iterator[None]:
    """Trials forked by a fork server that imported torch once (``COMPILESCOPE_FORK_SERVER=1``),
    for the drivers this process runs and the CLI processes it starts (their environment is
    this one's): each trial then costs no interpreter start and ``import torch`` of its own. A
    forked trial records the same compiles, guards, outputs and failures as a fresh interpreter
    (tests/e2e/test_trialenv.py, test_inductor.py); only its cold first call and compile time
    differ (a few percent), so it is for tests that do not measure a cold start. The session's
    shared fork server (:func:`_shared_fork_server`) is kept where it runs."""
    saved = {k: os.environ.get(k) for k in FORKED_TRIALS}
    if not os.environ.get(FORK_SERVER_VAR, "").startswith("unix:"):
        os.environ.update(FORKED_TRIALS)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture(scope="module")
def forked_trials():
    """:func:`forked_trials_here` for a module's tests (``pytestmark =
    pytest.mark.usefixtures("forked_trials")``; a module fixture of the file starts after it)."""
    with forked_trials_here():
        yield


@pytest.fixture(scope="session")
def advised_runs():
    """``advise(ref, stream)`` on the eager backend with few samples, computed once per
    session for each (ref, stream) and shared by the files that read the same advice."""
    from compilescope.api import advise
    from compilescope.model import MeasureOptions

    measure = MeasureOptions(warmup=1, samples=3, min_samples=3, budget_s=0.02)
    done: dict[tuple, object] = {}

    def get(ref: str, stream: tuple[dict[str, int], ...]):  # type: ignore[no-untyped-def]
        key = (ref, tuple(tuple(sorted(s.items())) for s in stream))
        if key not in done:
            # the proposals these tests pin are for recompiles; guard filters have their own tests
            # (tests/unit/strategies/test_guard_filters.py)
            with forked_trials_here():  # the advice's compiles and snippets are read, no cold start
                done[key] = advise(ref, list(stream), backend="eager", measure=measure, timeout_s=600,
                                   guard_filters=False)
        return done[key]

    return get


# ----------------------------------------------------------------------------- the version matrix
# `make test-torch TORCH=X` runs the tests marked `compat(capability)` under torch X and writes
# each one's outcome, by capability, with --capability-report (matrix/run.py reads it).


def pytest_addoption(parser):  # type: ignore[no-untyped-def]
    parser.addoption("--capability-report", default=None, metavar="PATH",
                     help="write the outcome of every compat-marked test, by capability, to PATH (JSON)")
    parser.addoption("--no-processes", action="store_true", default=False,  # `make check` (_no_processes)
                     help="fail a test that starts a process (`make check`: its tests are the unit tests "
                          "that start none; a test that does is marked `processes`)")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):  # type: ignore[no-untyped-def]
    outcome = yield
    marker = item.get_closest_marker("compat")
    if marker is not None and marker.args:
        outcome.get_result().user_properties.append(("capability", str(marker.args[0])))


def pytest_runtest_logreport(report):  # type: ignore[no-untyped-def]
    capability = dict(report.user_properties).get("capability")
    if capability is None or not (report.when == "call" or report.outcome != "passed"):
        return
    reason = ""
    if report.skipped and isinstance(report.longrepr, tuple):
        reason = str(report.longrepr[2]).removeprefix("Skipped: ")
    elif report.failed:
        reason = str(getattr(report.longrepr, "reprcrash", None) and report.longrepr.reprcrash.message or "")[:300]
    _OUTCOMES.append((capability, report.nodeid, report.outcome, reason))


_OUTCOMES: list[tuple[str, str, str, str]] = []


def pytest_sessionfinish(session):  # type: ignore[no-untyped-def]
    path = session.config.getoption("--capability-report")
    if path and not hasattr(session.config, "workerinput"):  # the controller (or a run without xdist)
        import json

        import torch

        Path(path).write_text(json.dumps({
            "torch": torch.__version__, "python": sys.version.split()[0],
            "outcomes": [dict(zip(("capability", "test", "outcome", "reason"), o)) for o in _OUTCOMES],
        }, indent=1))
