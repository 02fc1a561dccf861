"""A fork server for the ``compilescope`` processes the tests start: ``python tests/cli_server.py PATH``
(and for the docs' Python examples, ``python -c CODE``, and scripts, ``python SCRIPT``).

A ``compilescope`` process spends about 2.5 s of CPU importing torch and Dynamo before its
command does anything, and the suite starts over a hundred of them. This server (one per test
process, started by ``conftest._cli_server``) imports what the CLI's commands import once and
forks one child per request: the child takes the request's standard streams, environment,
working directory and argv, and runs ``python -m compilescope.cli`` as the interpreter runs it
(``runpy``, ``sys.exit``'s status, an uncaught exception's traceback and status 1, non-daemon
threads joined and ``atexit`` functions run at the end). A test reads what a fresh
``compilescope`` process gives — exit status, stdout, stderr, files — except for what happens
before the first line of ``main``: the interpreter's start and the imports.

It serves only a launch whose environment differs from the one it imported under in no
variable read while importing (``conftest.CliServer.serving``); any other launch, and every
test of how the process itself behaves (signals sent to it, a pipe's reader leaving, ``--help``
importing no torch, a torch variable set for the command), starts a fresh interpreter as before.

Protocol, over a ``SOCK_SEQPACKET`` socket at PATH, one JSON object a message: the client sends
``{"argv": [...], "env": {...}, "cwd": "...", "session": false}`` with three file descriptors
(stdin, stdout, stderr). In place of ``argv``: ``"code": CODE`` (``python -c CODE``) or
``"script": PATH, "args": [...]`` (``python PATH ARGS…``); ``"session": true``: the child leads a
session of its own; ``"default_signals": true``: SIGINT, SIGTERM and SIGHUP as a shell gives
them, whatever the server inherited. The server answers ``{"pid": N}`` once forked and
``{"rc": R}`` when the child has ended (``-N``: killed by signal N), then closes the connection.
It ends with the process that started it.
"""

from __future__ import annotations

import atexit
import builtins
import json
import os
import runpy
import select
import signal
import socket
import sys
import tempfile
import threading
import traceback
import types

from compilescope.probe.launch import _exit_status, _flush  # as the interpreter ends, as probe's child does

MAX_MESSAGE = 1 << 20


def _imports() -> None:
    import torch  # noqa: F401

    import compilescope.cli  # noqa: F401  (click, rich and each command)
    from compilescope import compat

    compat.import_compiler()  # Dynamo: every command that compiles or reads guards imports it
    import compilescope.api  # noqa: F401  (the use cases and the feature packages under them)


def _child(request: dict, fds: list[int], closing: list[int]) -> None:
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        if request.get("session"):
            os.setsid()
        if request.get("default_signals"):  # as a shell starts a command: Python's own start-up dispositions
            signal.signal(signal.SIGINT, signal.default_int_handler)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.signal(signal.SIGHUP, signal.SIG_DFL)
        for fd in closing:
            os.close(fd)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in request["env"].items()})
        os.chdir(request["cwd"])
        tempfile.tempdir = None
        try:
            if "script" in request:  # python SCRIPT ARGS…
                script = str(request["script"])
                sys.path[0] = os.path.dirname(os.path.abspath(script))
                sys.argv = [script, *request.get("args", [])]
                runpy.run_path(script, run_name="__main__")
            elif "code" in request:  # python -c CODE
                sys.path[0] = ""
                sys.argv = ["-c"]
                main = types.ModuleType("__main__")
                main.__dict__["__builtins__"] = builtins
                sys.modules["__main__"] = main
                exec(compile(request["code"], "<string>", "exec"), main.__dict__)
            else:  # python -m compilescope.cli ARGV…
                sys.path[0] = os.getcwd()  # as `python -m` puts it
                sys.argv = ["-m", *request["argv"]]  # runpy sets argv[0] to the module's file, as `-m` does
                runpy.run_module("compilescope.cli", run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as exc:
            code = _exit_status(exc.code)
        except KeyboardInterrupt:
            traceback.print_exc()
            code = -signal.SIGINT
        except BaseException:  # noqa: BLE001 - as the interpreter reports an uncaught error
            traceback.print_exc()
            code = 1
        threading._shutdown()  # type: ignore[attr-defined]
        atexit._run_exitfuncs()
    except BaseException:  # noqa: BLE001 - this server's own fault: shown, status 1
        traceback.print_exc()
    finally:
        _flush()
        if code < 0:  # an uncaught KeyboardInterrupt ends the process by SIGINT, as Python does
            signal.signal(-code, signal.SIG_DFL)
            os.kill(os.getpid(), -code)
        os._exit(code)


def serve(path: str) -> int:
    owner = os.getppid()
    _imports()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path)
    listener.listen(64)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    os.set_blocking(wake_r, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    waiting: dict[int, socket.socket] = {}
    print("listening", flush=True)
    while os.getppid() == owner:
        ready, _, _ = select.select([listener, wake_r], [], [], 1.0)
        if wake_r in ready:
            try:
                os.read(wake_r, 4096)
            except BlockingIOError:
                pass
        if listener in ready:
            conn, _ = listener.accept()
            try:
                message, fds, _flags, _addr = socket.recv_fds(conn, MAX_MESSAGE, 3)
                request = json.loads(message)
            except (OSError, ValueError):
                conn.close()
                continue
            if len(fds) != 3:
                for fd in fds:
                    os.close(fd)
                conn.close()
                continue
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                _child(request, fds, [listener.fileno(), conn.fileno(), wake_r, wake_w,
                                      *(c.fileno() for c in waiting.values())])
            for fd in fds:
                os.close(fd)
            try:
                conn.send(json.dumps({"pid": pid}).encode())
            except OSError:
                pass
            waiting[pid] = conn
        while waiting:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            conn = waiting.pop(pid, None)
            if conn is not None:
                try:
                    conn.send(json.dumps({"rc": os.waitstatus_to_exitcode(status)}).encode())
                except OSError:
                    pass
                conn.close()
    return 0


if __name__ == "__main__":
    sys.exit(serve(sys.argv[1]))
