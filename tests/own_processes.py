"""The processes a test started, and no other process on the machine (CI runners are shared:
another compilescope run there has workers of its own).

A test starts the CLI with :func:`scoped_env`: a variable holding a token of its own, which
every process the CLI starts inherits (trial workers lead process groups and sessions of
their own, so a session or group id does not follow them; the environment does).
:func:`processes_of` reads ``/proc/PID/environ`` for the token: only this test's processes.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

SCOPE_VAR = "COMPILESCOPE_TEST_SCOPE"


def scoped_env(base: dict[str, str] | None = None, **extra: str) -> tuple[dict[str, str], str]:
    """``base`` (this process's environment) with ``extra`` and a token of the test's own. Its
    trials start as outside this suite (not from the session's shared fork server, whose children
    carry the server's environment, not the token), unless ``extra`` says otherwise."""
    token = uuid.uuid4().hex
    env = dict(os.environ if base is None else base)
    if env.get("COMPILESCOPE_FORK_SERVER", "").startswith("unix:"):
        del env["COMPILESCOPE_FORK_SERVER"]
    return {**env, **extra, SCOPE_VAR: token}, token


def processes_of(token: str) -> list[tuple[int, str]]:
    """(pid, command line) of each live process carrying ``token`` (zombies carry nothing)."""
    needle = f"{SCOPE_VAR}={token}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if needle in environ.split(b"\0"):
            found.append((int(entry.name), cmdline.replace(b"\0", b" ").decode(errors="replace").strip()))
    return found


def workers_of(token: str) -> list[tuple[int, str]]:
    """Trial processes: spawned workers, fork servers and the trials they forked (which carry
    their server's command line)."""
    return [p for p in processes_of(token) if "compilescope.execute.worker" in p[1] or "compilescope.execute.zygote" in p[1]]


def wait_until(predicate, timeout_s: float, poll_s: float = 0.1) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(poll_s)
    return bool(predicate())
