"""A probe observes and never changes the program: the same scripts under ``python`` and under
``compilescope probe`` must end the same way (exit status or signal), print the same stdout,
see the same argv and have their own signal handlers run the same way — and the probe's JSON
must hold the records made before the program ended, however it ended."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ..conftest import CliServer

TIMEOUT = 300
PAIRS_AT_ONCE = 3
COMPILE = "import torch\nf = torch.compile(lambda x: x + 1, backend='eager')\n"

SCRIPTS = {
    "normal.py": COMPILE + (
        "for n in (2, 3):\n"
        "    print('sum', float(f(torch.ones(n)).sum()))\n"
    ),
    "exit3.py": COMPILE + (
        "import sys\n"
        "f(torch.ones(2))\n"
        "print('exiting', flush=True)\n"
        "sys.exit(3)\n"
    ),
    "sigterm.py": COMPILE + (
        "import os, signal\n"
        "f(torch.ones(2))\n"
        "print('before', flush=True)\n"
        "os.kill(os.getpid(), signal.SIGTERM)\n"
        "print('after SIGTERM')\n"
    ),
    "own_handlers.py": COMPILE + (
        "import os, signal, time\n"
        "f(torch.ones(2))\n"
        "try:\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "    time.sleep(30)\n"
        "    print('SIGINT never arrived')\n"
        "except KeyboardInterrupt:\n"
        "    print('caught KeyboardInterrupt', flush=True)\n"
        "seen = []\n"
        "signal.signal(signal.SIGUSR1, lambda signum, frame: seen.append(signum))\n"
        "os.kill(os.getpid(), signal.SIGUSR1)\n"
        "time.sleep(0.1)\n"
        "print('own SIGUSR1 handler ran', len(seen), 'time(s)')\n"
        "print('dispositions', [getattr(signal.getsignal(s), 'name', '?') for s in (signal.SIGTERM, signal.SIGHUP)])\n"
        "print('SIGINT handler is default_int_handler', signal.getsignal(signal.SIGINT) is signal.default_int_handler)\n"
    ),
    "os_exit.py": COMPILE + (
        "import os\n"
        "f(torch.ones(2))\n"
        "f(torch.ones(3))\n"
        "print('leaving with os._exit', flush=True)\n"
        "os._exit(4)\n"
    ),
    "raises.py": COMPILE + "f(torch.ones(2))\n\ndef g():\n    raise ValueError('from g')\n\ng()\n",
    "forks.py": COMPILE + (
        "import os\n"
        "f(torch.ones(2))\n"
        "pid = os.fork()\n"
        "if pid == 0:  # a worker: its compiles are its own\n"
        "    f(torch.ones(3))\n"
        "    f(torch.ones(5))\n"
        "    os._exit(0)\n"
        "os.waitpid(pid, 0)\n"
        "print('worker done')\n"
    ),
    # the whole argv, its first element as typed (runpy would make it the absolute path)
    "argv.py": "import sys\nprint('argv', sys.argv)\n" + COMPILE + "f(torch.ones(2))\n",
}

# name → (arguments after the script under python, probe's own arguments, arguments after the script under probe)
CASES = {
    "normal": ("normal.py", [], [], []),
    "exit3": ("exit3.py", [], [], []),
    "sigterm": ("sigterm.py", [], [], []),
    "own_handlers": ("own_handlers.py", [], [], []),
    "os_exit": ("os_exit.py", [], [], []),
    # `--` after the script is the script's, as under python: nothing written to ./y
    "argv_dashdash": ("argv.py", ["--", "--json", "y"], [], ["--", "--json", "y"]),
    # `--` before the script ends probe's options; probe's option names after it are the script's
    "argv_options": ("argv.py", ["--html", "o.html", "--stream-out", "s", "--", "--json", "y"], ["--"],
                     ["--html", "o.html", "--stream-out", "s", "--", "--json", "y"]),
    "raises": ("raises.py", [], [], []),
    "forks": ("forks.py", [], [], []),
}


# Each command starts from the dispositions a user's shell gives (a test runner started in the
# background inherits SIGINT ignored): the default for SIGINT, SIGTERM and SIGHUP.
DEFAULTS = ("import os, signal, sys\n"
            "for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):\n"
            "    signal.signal(s, signal.SIG_DFL)\n")
EXEC = "os.execv(sys.argv[1], sys.argv[1:])\n"


def _cmd(*args: str) -> list[str]:
    return [sys.executable, "-c", DEFAULTS + EXEC, *args]


def _probe(*args: str) -> list[str]:
    return _cmd(sys.executable, "-m", "compilescope.cli", "probe", *args)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Every case once under python (a fresh interpreter) and once under probe, each in a
    directory of its own, a few pairs at a time. The probe side is forked by the session's CLI
    server where it can be (tests/cli_server.py, from the start-up signal dispositions a shell
    gives, as ``_cmd`` gives them), while the python side runs: the program itself runs in the
    process ``probe`` forks either way."""
    root = tmp_path_factory.mktemp("transparency")
    out = {}
    cases = list(CASES.items())
    server = CliServer.serving(dict(os.environ))
    for first in range(0, len(cases), PAIRS_AT_ONCE):
        started = {}
        for case, (name, plain_args, probe_opts, probe_args) in cases[first:first + PAIRS_AT_ONCE]:
            dirs = {kind: root / case / kind for kind in ("python", "probe")}
            for d in dirs.values():
                d.mkdir(parents=True)
                (d / name).write_text(SCRIPTS[name])
            json_path = dirs["probe"] / "probe.json"
            plain = subprocess.Popen(_cmd(sys.executable, name, *plain_args), cwd=dirs["python"],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            argv = ["probe", "--json", str(json_path), *probe_opts, name, *probe_args]
            probed = None if server is not None else subprocess.Popen(
                _probe(*argv[1:]), cwd=dirs["probe"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            started[case] = (plain, probed, argv, json_path, dirs["probe"])
        for case, (plain, probed, argv, json_path, probe_dir) in started.items():
            if probed is None:
                done = server.run({"argv": argv, "default_signals": True}, cwd=probe_dir, env=dict(os.environ),
                                  timeout=TIMEOUT)
                q_rc, q_out, q_err = done.returncode, done.stdout, done.stderr
            else:
                q_out, q_err = probed.communicate(timeout=TIMEOUT)
                q_rc = probed.returncode
            p_out, p_err = plain.communicate(timeout=TIMEOUT)
            out[case] = dict(
                plain=(plain.returncode, p_out, p_err), probe=(q_rc, q_out, q_err),
                data=json.loads(json_path.read_text()) if json_path.exists() else None, dir=probe_dir,
                journal=json_path.with_name(json_path.name + ".journal"),
            )
    return out


@pytest.mark.parametrize("case", list(CASES))
def test_same_exit_status_and_stdout_as_python(runs, case):
    run = runs[case]
    (plain_rc, plain_out, plain_err), (probe_rc, probe_out, probe_err) = run["plain"], run["probe"]
    assert probe_rc == plain_rc, probe_err[-3000:]
    assert probe_out == plain_out, probe_err[-3000:]
    assert "compilescope probe" in probe_err  # the report, on stderr
    assert run["data"] is not None and not run["journal"].exists()


def test_exit_statuses_are_the_scripts(runs):
    assert [runs[c]["probe"][0] for c in ("normal", "exit3", "sigterm", "own_handlers", "os_exit")] == [
        0, 3, -signal.SIGTERM, 0, 4]


def test_sigterm_to_self_ends_by_the_signal_and_keeps_the_records(runs):
    run = runs["sigterm"]
    assert run["probe"][0] == -signal.SIGTERM  # a shell reports 143, not 1
    assert "Interrupted" not in run["probe"][2] and "after SIGTERM" not in run["probe"][1]
    data = run["data"]
    assert [c["compile_id"] for c in data["compiles"]] == ["0/0"]
    assert data["exit_code"] == 128 + signal.SIGTERM and data["error"] == "killed by SIGTERM"
    assert "the program was killed by SIGTERM (exit status 143)" in run["probe"][2]


def test_scripts_own_handlers_run_as_under_python(runs):
    run = runs["own_handlers"]
    out = run["probe"][1]
    assert "caught KeyboardInterrupt" in out and "SIGINT never arrived" not in out
    assert "own SIGUSR1 handler ran 1 time(s)" in out
    assert "dispositions ['SIG_DFL', 'SIG_DFL']" in out  # none of probe's
    assert "SIGINT handler is default_int_handler True" in out
    assert [c["compile_id"] for c in run["data"]["compiles"]] == ["0/0"] and run["data"]["exit_code"] == 0


def test_os_exit_keeps_the_records_made_before_it(runs):
    run = runs["os_exit"]
    data = run["data"]
    assert run["probe"][0] == 4 and data["exit_code"] == 4
    assert [c["compile_id"] for c in data["compiles"]] == ["0/0", "0/1"]  # both, streamed before os._exit
    assert [call["inputs"] for call in data["calls"]] == [{"x": [2]}, {"x": [3]}]
    assert "2 compile(s)" in run["probe"][2]


def test_arguments_after_the_script_are_the_scripts(runs):
    assert runs["argv_dashdash"]["probe"][1].startswith("argv ['argv.py', '--', '--json', 'y']")
    assert runs["argv_options"]["probe"][1].startswith(
        "argv ['argv.py', '--html', 'o.html', '--stream-out', 's', '--', '--json', 'y']")
    for case in ("argv_dashdash", "argv_options"):
        written = sorted(p.name for p in runs[case]["dir"].iterdir())
        assert written == ["argv.py", "probe.json"], written  # no ./y, ./o.html or ./s
        assert [c["compile_id"] for c in runs[case]["data"]["compiles"]] == ["0/0"]


def test_an_uncaught_exceptions_traceback_is_pythons(runs):
    (plain_rc, _, plain_err), (probe_rc, _, probe_err) = runs["raises"]["plain"], runs["raises"]["probe"]
    assert probe_rc == plain_rc == 1
    assert plain_err.startswith("Traceback") and "ValueError: from g" in plain_err
    plain_err = plain_err.replace("/raises/python/", "/raises/probe/")
    assert probe_err.startswith(plain_err)  # as python prints it, from the script's first frame; then the report
    assert runs["raises"]["data"]["error"] == "ValueError: from g"


def test_a_forked_workers_records_stay_out_of_the_programs(runs):
    assert runs["forks"]["probe"][1] == "worker done\n"
    assert [c["compile_id"] for c in runs["forks"]["data"]["compiles"]] == ["0/0"]
    # and the report says a process it forked compiled too, unrecorded
    assert runs["forks"]["data"]["forked_unobserved"] == 1
    assert "1 process(es) the program forked compiled or called compiled code too: not recorded here" in \
        runs["forks"]["probe"][2]
    assert runs["normal"]["data"]["forked_unobserved"] == 0


# -- signals from outside: the terminal's Ctrl-C and `kill PID` ----------------------------------------

WAITS_FOR_SIGNALS = COMPILE + """
import signal, sys, time
f(torch.ones(2))
counts = {"INT": 0, "TERM": 0}
def on_term(signum, frame):
    counts["TERM"] += 1
signal.signal(signal.SIGTERM, on_term)
try:
    print("ready", flush=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not counts["TERM"]:
        time.sleep(0.05)
except KeyboardInterrupt:
    counts["INT"] += 1
    time.sleep(1)  # a second SIGINT, were one sent, would arrive here
print("handled", counts, flush=True)
sys.exit(5)
"""


def _in_terminal(cmd: list[str], cwd: Path) -> tuple[int, str]:
    """Run ``cmd`` as a session leader on a new pseudo-terminal, press Ctrl-C once it printed
    ``ready``, and return its exit status and everything it wrote to the terminal."""
    master, slave = os.openpty()
    leader = DEFAULTS + "import fcntl, termios\nos.setsid()\nfcntl.ioctl(0, termios.TIOCSCTTY, 0)\n" + EXEC
    proc = subprocess.Popen([sys.executable, "-c", leader, *cmd], stdin=slave, stdout=slave, stderr=slave, cwd=cwd)
    os.close(slave)
    seen, pressed = b"", False
    deadline = time.monotonic() + TIMEOUT
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1.0)
            if not ready:
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: every process on the terminal is gone
                break
            if not chunk:
                break
            seen += chunk
            if not pressed and b"ready" in seen:
                os.write(master, b"\x03")  # Ctrl-C: the terminal signals its foreground process group
                pressed = True
        return proc.wait(timeout=TIMEOUT), seen.decode(errors="replace")
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()


def test_ctrl_c_reaches_the_scripts_own_handler_once(tmp_path):
    script = tmp_path / "waits.py"
    script.write_text(WAITS_FOR_SIGNALS)
    plain_rc, plain_tty = _in_terminal([sys.executable, str(script)], tmp_path)
    probe_rc, probe_tty = _in_terminal(_probe("--json", str(tmp_path / "p.json"), str(script))[3:], tmp_path)
    assert plain_rc == 5 and "handled {'INT': 1, 'TERM': 0}" in plain_tty, plain_tty
    assert probe_rc == 5 and "handled {'INT': 1, 'TERM': 0}" in probe_tty, probe_tty
    assert "interrupted" not in probe_tty  # compilescope itself was not interrupted
    data = json.loads((tmp_path / "p.json").read_text())
    assert data["exit_code"] == 5 and [c["compile_id"] for c in data["compiles"]] == ["0/0"]


def test_kill_pid_reaches_the_scripts_own_handler_once(tmp_path):
    script = tmp_path / "waits.py"
    script.write_text(WAITS_FOR_SIGNALS)
    results = {}
    for kind, cmd in (("python", _cmd(sys.executable, str(script))), ("probe", _probe(str(script)))):
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                                start_new_session=True)
        assert proc.stdout is not None
        assert proc.stdout.readline() == "ready\n"
        os.kill(proc.pid, signal.SIGTERM)  # as `kill PID` does: to the pid the user started
        out, err = proc.communicate(timeout=TIMEOUT)
        results[kind] = (proc.returncode, out)
    assert results["probe"] == results["python"] == (5, "handled {'INT': 0, 'TERM': 1}\n")


def test_signals_ignored_at_start_stay_ignored(tmp_path):
    """As under ``nohup``: a signal ignored when probe starts is ignored in the program too."""
    script = tmp_path / "dispositions.py"
    script.write_text("import signal\nprint([signal.getsignal(s).name for s in (signal.SIGHUP, signal.SIGINT)])\n")
    ignoring = ("import os, signal, sys\nsignal.signal(signal.SIGHUP, signal.SIG_IGN)\n"
                "signal.signal(signal.SIGINT, signal.SIG_IGN)\n" + EXEC)
    plain = subprocess.run([sys.executable, "-c", ignoring, sys.executable, str(script)], capture_output=True,
                           text=True, timeout=TIMEOUT)
    probed = subprocess.run([sys.executable, "-c", ignoring, sys.executable, "-m", "compilescope.cli", "probe",
                             str(script)], capture_output=True, text=True, timeout=TIMEOUT)
    assert plain.stdout == "['SIG_IGN', 'SIG_IGN']\n"
    assert probed.returncode == 0 and probed.stdout == plain.stdout, probed.stderr


def test_the_program_dies_with_probe(tmp_path):
    """SIGKILL cannot be caught or passed on: the program is killed with probe, not left running."""
    script = tmp_path / "sleeps.py"
    script.write_text("import os, time\nprint(os.getpid(), flush=True)\ntime.sleep(120)\n")
    # a probe killed so leaves its temporary journal behind: in this test's own folder
    proc = subprocess.Popen(_probe(str(script)), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=tmp_path, start_new_session=True, env=dict(os.environ, TMPDIR=str(tmp_path)))
    assert proc.stdout is not None
    program = int(proc.stdout.readline())
    assert program != proc.pid
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=TIMEOUT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{program}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            break
        if state in ("Z", "X"):
            break
        time.sleep(0.1)
    else:
        os.kill(program, signal.SIGKILL)
        pytest.fail("the program outlived probe")


ENV_BEFORE_TORCH = '''
import importlib.util
import os
import sys
import threading

print("torch imported before the script's own import:", "torch" in sys.modules)
os.environ["TORCHDYNAMO_CAPTURE_SCALAR_OUTPUTS"] = "1"
os.environ["TORCH_LOGS"] = "recompiles"
print("torch available:", importlib.util.find_spec("torch") is not None)  # a look that imports nothing
loader = threading.Thread(target=lambda: __import__("torch"))  # torch first imported in another thread
loader.start()
loader.join()
import torch

print("capture_scalar_outputs", torch._dynamo.config.capture_scalar_outputs)


@torch.compile(backend="eager")
def f(x):
    return x * x.sum().item()


for n in (2, 3):
    f(torch.ones(n))
print("graph breaks", sum(torch._dynamo.utils.counters["graph_break"].values()))
if os.fork() == 0:  # a worker that compiles nothing and exits as Python does
    sys.exit(0)
os.wait()
'''


def test_what_a_script_sets_before_importing_torch_is_read_by_torch_as_under_python(tmp_path):
    """torch reads its environment as it is imported, so the probe imports no torch in the
    program's process before the script's own ``import torch`` (the capture goes in as that
    import ends): a variable the script sets first — here one that keeps ``.item()`` in the graph,
    and its own ``TORCH_LOGS`` — acts as under python, with ``--config`` and ``--record-shapes``
    too (checked in a fresh interpreter: the tests' CLI server has torch imported). A look for
    torch first (``find_spec``) leaves the capture waiting for the import; torch imported first
    in another thread still records the main thread's calls; a forked worker that compiled
    nothing is not said to have."""
    (tmp_path / "s.py").write_text(ENV_BEFORE_TORCH)
    plain = subprocess.run(_cmd(sys.executable, "s.py"), cwd=tmp_path, capture_output=True, text=True,
                           timeout=TIMEOUT)
    probed = subprocess.run(_probe("--json", "p.json", "--config", "recompile_limit=4", "--record-shapes",
                                   "shapes.jsonl", "s.py"), cwd=tmp_path, capture_output=True, text=True,
                            timeout=TIMEOUT)
    assert plain.returncode == probed.returncode == 0, probed.stderr[-3000:]
    assert probed.stdout == plain.stdout, probed.stderr[-3000:]
    assert "before the script's own import: False" in plain.stdout and "capture_scalar_outputs True" in plain.stdout
    assert "graph breaks 0" in plain.stdout
    assert "Recompiling function f" in plain.stderr and "Recompiling function f" in probed.stderr
    data = json.loads((tmp_path / "p.json").read_text())
    assert data["graph_breaks"] == [] and len(data["compiles"]) == 2 and data["torch_version"]
    assert data["settings"] == ["recompile_limit=4"] and data["recompile_limit"] == 4
    assert (tmp_path / "shapes.jsonl").read_text().count('"x.0"') == 2
    assert data["forked_unobserved"] == 0 and "process(es) the program forked" not in probed.stderr
