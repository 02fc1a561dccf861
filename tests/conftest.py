from __future__ import annotations

import contextlib
import io
import os
import signal
import socket
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

# What loading a real-model workload sets in its process (compilescope.zoo._need: nothing downloads,
# no tokenizer threads), set from the start: the environment the session's fork servers imported
# under (and that their launches are compared with) stays this process's after a test loads one.
for _name, _value in (("HF_HUB_OFFLINE", "1"), ("TRANSFORMERS_OFFLINE", "1"), ("TOKENIZERS_PARALLELISM", "false")):
    os.environ.setdefault(_name, _value)

# One OpenMP thread per process unless the machine says otherwise (set before any test imports
# torch, so the workers, the CLI and trial fork servers and every process they start inherit it):
# the suite runs two workers and their trials and commands side by side, and a pool of a thread
# per core in each of them oversubscribes the cores, its idle threads spinning for time the others
# need — `make check` took 155 s with torch's default pools and 91 s with one thread, on 2 cores.
# Trials already run on one thread (`--threads`); the tests of other counts set theirs.
os.environ.setdefault("OMP_NUM_THREADS", "1")


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    """Each in-process test starts with empty dynamo caches (reset is public API), and leaves
    ``suppress_errors`` as it found it (a test workload's ``build()`` sets it, and a later
    test in the same worker — a probe forked from it — would run under it). Where torch is not
    imported yet there is nothing to reset, and a test that needs no torch imports none."""
    torch = sys.modules.get("torch")
    suppress = None
    if torch is not None:
        torch.compiler.reset()
        suppress = torch._dynamo.config.suppress_errors
    yield
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.compiler.reset()
        if suppress is not None and torch._dynamo.config.suppress_errors != suppress:
            torch._dynamo.config.suppress_errors = suppress


def _cli_env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor-cache"))
    env["COLUMNS"] = "150"  # one width for the text these tests read (test_cli_conventions tries others)
    return env


def _cli_process(tmp_path: Path, forked: bool = True):  # type: ignore[no-untyped-def]
    def run(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return run_cli(*args, cwd=tmp_path, env=_cli_env(tmp_path), timeout=timeout, forked=forked)

    return run


def run_cli(*args: object, cwd: Path, env: dict[str, str] | None = None, timeout: float = 600,
            new_session: bool = False, forked: bool = True) -> subprocess.CompletedProcess[str]:
    """``compilescope ARGS…`` in a process of its own, as ``subprocess.run(…, capture_output=True,
    text=True)`` runs it (stdout and stderr pipes, the exit status, ``TimeoutExpired``): forked by
    this test process's CLI server (:mod:`tests.cli_server`, torch imported once) where ``env``
    allows it, else a fresh interpreter (``forked=False``: always)."""
    env = dict(os.environ) if env is None else env
    argv = [str(a) for a in args]
    server = CliServer.serving(env) if forked else None
    if server is not None:
        return server.run({"argv": argv}, cwd=Path(cwd), env=env, timeout=timeout, new_session=new_session)
    return subprocess.run([sys.executable, "-m", "compilescope.cli", *argv], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd, env=env, start_new_session=new_session)


def run_python_code(code: str, *, cwd: Path, env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """``python -c CODE`` as :func:`run_cli` runs the CLI: forked by the CLI server where ``env``
    allows it, else a fresh interpreter."""
    server = CliServer.serving(env)
    if server is not None:
        return server.run({"code": code}, cwd=Path(cwd), env=env, timeout=timeout)
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture
def cli(tmp_path):
    """Run the real ``compilescope`` CLI in a process of its own, as a user would: forked by the
    session's CLI server (:mod:`tests.cli_server`, torch imported once) where the environment
    allows, else a fresh interpreter."""
    return _cli_process(tmp_path)


@pytest.fixture
def cli_subprocess(tmp_path):
    """``compilescope`` in a fresh interpreter, always: for the tests of the process itself (its
    start, its imports, signals) and for a module whose ``cli`` runs in this process."""
    return _cli_process(tmp_path, forked=False)


# What a forked CLI process may take from its launch although the server imported without it: read
# when used, never while importing (temporary directories, compilescope's own switches, the
# terminal's width and colour, inductor's cache directory, the Ray cluster to join, the test pytest
# runs). A launch that carries a test's process token (own_processes.scoped_env) is one whose
# processes the test looks for by their environment: a fresh interpreter, whose /proc environment
# shows it.
CLI_READ_WHEN_USED = frozenset({"TMPDIR", "TEMP", "TMP", "COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR",
                                "TORCHINDUCTOR_CACHE_DIR", "RAY_ADDRESS", "PYTEST_CURRENT_TEST"})


class CliServer:
    """The client of this test process's CLI fork server (:mod:`tests.cli_server`)."""

    current: CliServer | None = None

    def __init__(self, path: str, env: dict[str, str]) -> None:
        self.path, self.env = path, env

    @classmethod
    def serving(cls, env: dict[str, str]) -> CliServer | None:
        """The server, where a launch under ``env`` is what it imported as; else None."""
        from .own_processes import SCOPE_VAR

        server = cls.current
        if server is None or SCOPE_VAR in env:
            return None
        keys = set(server.env) | set(env)
        same = all(server.env.get(k) == env.get(k) for k in keys
                   if k not in CLI_READ_WHEN_USED and not k.startswith("COMPILESCOPE_"))
        return server if same else None

    def run(self, what: dict[str, object], cwd: Path, env: dict[str, str], timeout: float,
            new_session: bool = False) -> subprocess.CompletedProcess[str]:
        """``what``: ``{"argv": [...]}`` (``python -m compilescope.cli ARGV…``), ``{"code": CODE}``
        (``python -c CODE``) or ``{"script": PATH, "args": [...]}`` (``python PATH ARGS…``)."""
        import json
        import locale
        import threading
        import time

        cmd = ([sys.executable, str(what["script"]), *what.get("args", [])] if "script" in what  # type: ignore[misc]
               else [sys.executable, "-c", str(what["code"])] if "code" in what
               else [sys.executable, "-m", "compilescope.cli", *what["argv"]])  # type: ignore[misc]
        deadline = time.monotonic() + timeout
        chunks: dict[int, list[bytes]] = {}

        def drain(fd: int) -> None:
            with open(fd, "rb", buffering=0) as f:
                while data := f.read(65536):
                    chunks[fd].append(data)

        readers = []
        with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as sock, open(os.devnull, "rb") as stdin:
            sock.connect(self.path)
            pipes = [os.pipe(), os.pipe()]
            request = json.dumps({**what, "env": env, "cwd": str(cwd), "session": new_session}).encode()
            try:
                socket.send_fds(sock, [request], [stdin.fileno(), pipes[0][1], pipes[1][1]])
            finally:
                for _, w in pipes:
                    os.close(w)
            for r, _ in pipes:
                chunks[r] = []
                readers.append(threading.Thread(target=drain, args=(r,), daemon=True))
                readers[-1].start()
            pid = json.loads(sock.recv(65536))["pid"]
            sock.settimeout(max(0.0, deadline - time.monotonic()))
            try:
                reply = sock.recv(65536)
            except TimeoutError:
                reply = None
            for t in readers:
                t.join(max(0.0, deadline - time.monotonic()))
            if reply is None or any(t.is_alive() for t in readers):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                raise subprocess.TimeoutExpired(cmd, timeout)
            if not reply:
                raise RuntimeError(f"the CLI server ended before {' '.join(cmd)} did")
        code = json.loads(reply)["rc"]
        encoding = locale.getpreferredencoding(False)
        out, err = (b"".join(chunks[r]).decode(encoding).replace("\r\n", "\n").replace("\r", "\n")
                    for r, _ in pipes)
        return subprocess.CompletedProcess(cmd, code, out, err)


@contextlib.contextmanager
def started_cli_server(path: Path, env: dict[str, str]) -> Iterator[CliServer | None]:
    """A CLI fork server (:mod:`tests.cli_server`) listening at ``path``, imported under ``env``;
    None where none can start (no ``socket.send_fds``). Ended, with what it forked, on the way out."""
    if not hasattr(socket, "send_fds"):
        yield None
        return
    proc = subprocess.Popen([sys.executable, str(ROOT / "tests" / "cli_server.py"), str(path)], env=env,
                            stdout=subprocess.PIPE, start_new_session=True)
    try:
        ready = proc.stdout.readline() if proc.stdout is not None else b""
        yield CliServer(str(path), env) if ready.strip() == b"listening" else None
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


@pytest.fixture(scope="session", autouse=True)
def _cli_server(request, tmp_path_factory, _shared_fork_server):
    """One CLI fork server per test process (:mod:`tests.cli_server`), for :func:`run_cli` and the
    ``cli`` fixture: each ``compilescope`` process a test starts then costs no interpreter start
    and no ``import torch`` of its own. Started under this process's environment (the session's
    shared trial fork server named in it), after the ambient variables are gone."""
    if request.config.getoption("--no-processes"):
        yield
        return
    with started_cli_server(tmp_path_factory.mktemp("cli-server") / "s", dict(os.environ)) as server:
        CliServer.current = server
        try:
            yield
        finally:
            CliServer.current = None


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
# The files that take longest (by their wall time in a `make test` run), handed out first so that
# the workers finish together (`make test` keeps this order: --no-loadscope-reorder); the rest,
# short files that fill the end, follow in collection order. A stale list changes only the
# order, never what runs.
LONGEST_FIRST = ("test_probe_transparency.py", "test_trialenv.py", "test_reliability.py", "test_advice_snippets.py",
                 "test_advise.py", "test_warmup_verify.py", "test_edges_pipes.py", "test_forecast.py", "test_cli.py",
                 "test_sweep.py", "test_hostile_inputs.py", "test_progress.py", "test_real_models.py",
                 "test_inductor.py", "test_probe_behaviour.py", "test_executor_seam.py", "test_html.py",
                 "test_warmup_plan.py", "test_docs.py", "test_cli_conventions.py", "test_edges_causes.py",
                 "test_probe.py", "test_edges_user_files.py", "test_script_advise.py", "test_interpreters.py",
                 "test_edges_bounds.py", "test_forecast_recorded.py", "test_compare.py", "test_hostile_outputs.py",
                 "test_record_shapes.py", "test_torch_versions.py", "test_objects.py", "test_start.py")


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
def _lazy_names_resolved():
    """Every name the ``compilescope`` package resolves lazily, resolved (see ``pytester``)."""
    import compilescope

    for name in compilescope._LAZY:
        getattr(compilescope, name)


@pytest.fixture
def pytester(_lazy_names_resolved, pytester):
    """pytest's ``pytester``, made once the ``compilescope`` package has resolved every name it
    resolves lazily. An in-process pytest restores ``sys.modules`` to the snapshot taken when
    ``pytester`` is made, dropping the modules first imported inside it; the package keeps the
    names it resolved there (``compilescope.watch``, the function), bound to the dropped modules,
    and a later ``import compilescope.collect.capture`` in this process loads a second copy of
    a module the first still uses (a test that patched one saw the other run)."""
    return pytester


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
