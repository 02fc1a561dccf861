from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    """Each in-process test starts with empty dynamo caches (reset is public API)."""
    import torch

    torch.compiler.reset()
    yield
    torch.compiler.reset()


@pytest.fixture
def cli(tmp_path):
    """Run the real ``compilescope`` CLI in a subprocess, as a user would."""

    def run(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        env = dict(os.environ)
        env.setdefault("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor-cache"))
        env["COLUMNS"] = "150"  # one width for the text these tests read (test_cli_conventions tries others)
        return subprocess.run(
            [sys.executable, "-m", "compilescope.cli", *args],
            capture_output=True, text=True, timeout=timeout, cwd=tmp_path, env=env,
        )

    return run


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
