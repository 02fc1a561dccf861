"""The interpreter a trial runs in: this one, or another (``run --python PATH``).

Trials in another interpreter measure another torch (or Python) on the same workload: each
trial's process is that interpreter's ``python -m compilescope.execute.worker``, and records
its own torch, Python and compilescope versions in its :class:`~compilescope.model.TrialEnv`.
Before the first trial, :func:`check_interpreter` runs the interpreter once to see that it
imports torch and this compilescope (the wire format between driver and trial is this
version's), and says how to install it there when it does not.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from ..errors import OptionError

_ASK = (
    "import json, platform, sys\n"
    "out = {'python': platform.python_version(), 'executable': sys.executable}\n"
    "try:\n"
    "    import torch\n"
    "    out['torch'] = str(torch.__version__)\n"
    "except Exception as e:\n"
    "    out['torch_error'] = f'{type(e).__name__}: {e}'.splitlines()[0][:300]\n"
    "try:\n"
    "    import compilescope\n"
    "    out['compilescope'] = compilescope.__version__\n"
    "    out['compilescope_path'] = compilescope.__file__\n"
    "except Exception as e:\n"
    "    out['compilescope_error'] = f'{type(e).__name__}: {e}'.splitlines()[0][:300]\n"
    "print('COMPILESCOPE-INTERPRETER ' + json.dumps(out))\n"
)
CHECK_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class Interpreter:
    """What ``path`` runs: its Python, torch and compilescope versions."""

    path: str
    python: str
    torch: str
    compilescope: str


def trial_executable(python: str | None) -> str:
    """The interpreter a trial's process runs: ``python`` when given, else this one."""
    return python or sys.executable


def _install_hint(path: str) -> str:
    from .. import __file__ as package_file

    root = Path(package_file).resolve().parents[2]
    if (root / "pyproject.toml").exists():
        return f"{path} -m pip install -e {root}"
    from .. import __version__

    return f"{path} -m pip install compilescope=={__version__}"


@cache
def check_interpreter(path: str) -> Interpreter:
    """Run ``path`` once: it must be a Python that imports torch and this compilescope
    version. One :class:`OptionError` line otherwise, with the way to fix it."""
    from .. import __version__

    if not os.path.isfile(path) or not os.access(path, os.X_OK):
        raise OptionError(f"--python {path}: no such executable")
    try:
        proc = subprocess.run([path, "-c", _ASK], capture_output=True, text=True, timeout=CHECK_TIMEOUT_S,
                              stdin=subprocess.DEVNULL, env=dict(os.environ))
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise OptionError(f"--python {path}: could not run it ({type(exc).__name__})") from None
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("COMPILESCOPE-INTERPRETER ")), None)
    if line is None:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1][:200]
        raise OptionError(f"--python {path}: not a Python interpreter compilescope can use ({last})")
    found = json.loads(line.split(" ", 1)[1])
    if "torch" not in found:
        raise OptionError(f"--python {path}: torch is not importable there ({found.get('torch_error')}); "
                          f"install it with: {path} -m pip install torch")
    if "compilescope" not in found:
        raise OptionError(f"--python {path}: compilescope is not importable there; install it with: "
                          f"{_install_hint(path)}")
    if found["compilescope"] != __version__:
        raise OptionError(f"--python {path}: it has compilescope {found['compilescope']}, this is {__version__} "
                          f"(trials speak this version's wire format); install it with: {_install_hint(path)}")
    return Interpreter(path, found["python"], found["torch"], found["compilescope"])


def interpreter_note(interpreter: Interpreter) -> str | None:
    """The one line said when the interpreter's torch is outside the checked range."""
    from ..compat import version_note

    return version_note(interpreter.torch)
