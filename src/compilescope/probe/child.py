"""The probed program's process: the script runs as ``python SCRIPT`` runs it, and the
capture is installed the moment the script's own ``import torch`` finishes — not before.

torch reads its environment as it is imported (``TORCH_LOGS``, ``TORCH_COMPILE_DISABLE``,
``TORCHDYNAMO_*``, ``TORCHINDUCTOR_*``), and a script may set those before its ``import
torch``. So nothing of compilescope's imports torch in this process ahead of the script:
:func:`after_import` waits for the script's import (through a finder on ``sys.meta_path``,
removed once it has fired) and then installs the settings and the capture. A script that
never imports torch compiles nothing, and is observed as such.

This module imports no torch, and neither does anything it imports at the top.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys
from collections.abc import Callable
from typing import Any

from .journal import JournalStream, JournalWriter
from .script import error_line, run_as_main, trim_next_traceback


class _AfterImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: when ``name`` is looked for, it lets the finders after it find
    the module, and has the loader call ``callback`` once the module's code has run — then
    leaves ``sys.meta_path``. A look that imports nothing (``importlib.util.find_spec("torch")``,
    a library's availability check) leaves it waiting. The module's own ``__loader__`` and
    ``__spec__.loader`` are the real loader's once its code has run."""

    def __init__(self, name: str, callback: Callable[[], None]) -> None:
        self.name, self.callback, self.fired = name, callback, False

    def fire(self) -> None:
        _remove(self)
        if not self.fired:
            self.fired = True
            self.callback()

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name or self.fired:
            return None
        spec = None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None) if finder is not self else None
            spec = find(fullname, path, target) if find is not None else None
            if spec is not None:
                break
        if spec is None:  # not importable (yet): the import fails as it would; the wait goes on
            return None
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            self.fire()
            return spec
        spec.loader = _Loaded(spec.loader, self.fire)
        return spec


class _Loaded(importlib.abc.Loader):
    def __init__(self, loader: Any, callback: Callable[[], None]) -> None:
        self.loader, self.callback = loader, callback

    def __getattr__(self, name: str) -> Any:  # what the module's code asks of its loader as it runs
        return getattr(self.loader, name)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        try:
            self.loader.exec_module(module)
        finally:
            module.__loader__ = self.loader
            if getattr(module, "__spec__", None) is not None:
                module.__spec__.loader = self.loader
        self.callback()


def _remove(finder: importlib.abc.MetaPathFinder) -> None:
    try:
        sys.meta_path.remove(finder)
    except ValueError:
        pass


def after_import(name: str, callback: Callable[[], None]) -> Callable[[], None]:
    """Call ``callback`` once the module ``name`` has been imported: now, if it has been;
    else right after the program's first import of it has run the module's code. Returns
    what cancels the wait."""
    if name in sys.modules:
        callback()
        return lambda: None
    finder = _AfterImport(name, callback)
    sys.meta_path.insert(0, finder)
    return lambda: _remove(finder)


def run_child(path: str, args: list[str], journal: str,
              on_torch: Callable[[], None] = lambda: None) -> None:
    """In the child process ``probe`` starts: run ``path`` as ``python path args…`` would
    (``__main__``, its argv, its directory first on ``sys.path``), streaming every record to
    ``journal``. Once the script has imported torch, ``on_torch()`` applies what the program
    runs under (settings, the shape recording) and the capture is installed. How the script
    ended propagates: ``SystemExit`` and any exception are re-raised, and the next
    ``sys.excepthook`` call — whichever hook the script left in place — shows the traceback
    from the script's first frame, as ``python`` does."""
    stream = JournalStream(JournalWriter(journal))
    stream.header()
    sessions: list[Any] = []

    def install() -> None:
        try:
            on_torch()
        except Exception as exc:  # noqa: BLE001 - a setting or the recording lost; the capture still goes in
            _say(f"compilescope: the probe could not apply its settings or shape recording ({type(exc).__name__}: "
                 f"{exc}); the program runs on without them")
        try:
            from .capture import ProbeSession

            session = ProbeSession(stream)
            session.install()
            sessions.append(session)
        except Exception as exc:  # noqa: BLE001 - never into the program: it runs on, unobserved, and says so
            _say(f"compilescope: the probe could not observe this program ({type(exc).__name__}: {exc}); "
                 "it runs on without the capture")

    cancel = after_import("torch", install)

    def uninstall() -> None:
        cancel()
        for session in sessions:
            session.uninstall()

    script = os.path.abspath(path)
    sys.argv = [path, *args]
    sys.path[0] = os.path.dirname(script)  # the script's directory, as `python path` puts it
    try:
        run_as_main(path, restore=False)
    except SystemExit as exc:
        uninstall()
        code = exc.code
        if code is None or isinstance(code, int):
            stream.end((code or 0) & 0xFF, None)  # the exit status the process will have
        else:
            stream.end(1, str(code))
        raise
    except BaseException as exc:
        uninstall()
        stream.end(130 if isinstance(exc, KeyboardInterrupt) else 1, error_line(exc))
        trim_next_traceback(script)
        raise
    uninstall()
    stream.end(0, None)


def _say(line: str) -> None:
    try:
        sys.stderr.write(line + "\n")
    except (OSError, ValueError):
        pass
