"""Running a script as ``python SCRIPT`` runs it, and ending as it ends. Imports no torch."""

from __future__ import annotations

import os
import sys
from typing import Any


def run_as_main(path: str, restore: bool = True) -> None:
    """Run ``path`` as ``python path`` does. A source file runs as the module ``__main__``, its
    ``__file__`` and code named by the absolute path (as Python 3.9+ names them) and
    ``sys.argv[0]`` left as given — ``runpy.run_path`` would put the path it is handed there;
    a directory, zip archive or compiled file goes to ``runpy.run_path`` as given, which runs
    them as ``python`` does. ``restore``: put the previous ``__main__`` back after (not in a
    process that ends with the script: its threads and ``atexit`` handlers still run, and see
    the script's ``__main__``, as under ``python``)."""
    import builtins
    import io
    import runpy
    import types
    import zipfile

    script = os.path.abspath(path)
    if not os.path.isfile(script) or zipfile.is_zipfile(script) or script.endswith((".pyc", ".pyo")):
        runpy.run_path(path, run_name="__main__")
        return
    with io.open_code(script) as f:
        code = compile(f.read(), script, "exec", dont_inherit=True)
    module = types.ModuleType("__main__")
    module.__dict__.update(__file__=script, __cached__=None, __loader__=None, __package__=None, __spec__=None,
                           __builtins__=builtins)
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = module
    try:
        exec(code, module.__dict__)
    finally:
        if restore and saved is not None:
            sys.modules["__main__"] = saved


def error_line(exc: BaseException) -> str:
    if isinstance(exc, KeyboardInterrupt):
        return "KeyboardInterrupt"
    from ..torchtext import headline

    return headline(type(exc).__name__, str(exc))


def trim_next_traceback(script: str) -> None:
    """The next uncaught exception's traceback starts at the script's first frame (without
    one, as for a syntax error, only the exception), leaves out the probe's own import hook
    (between the script's ``import torch`` and torch's code) and importlib's frames, as Python
    leaves them out, then goes to whichever
    ``sys.excepthook`` the script left in place."""
    hook = sys.excepthook
    ours = os.path.join(os.path.dirname(os.path.abspath(__file__)), "child.py")

    def trimmed(kind: type[BaseException], value: BaseException, tb: Any) -> None:
        sys.excepthook = hook
        while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename) != script:
            tb = tb.tb_next
        link = tb
        while link is not None and link.tb_next is not None:
            name = link.tb_next.tb_frame.f_code.co_filename
            # and importlib's frames around it, which Python leaves out of an import's traceback
            if name.startswith("<frozen importlib._bootstrap") or os.path.abspath(name) == ours:
                link.tb_next = link.tb_next.tb_next
            else:
                link = link.tb_next
        hook(kind, value.with_traceback(tb), tb)  # Python's own hook prints the exception's traceback

    sys.excepthook = trimmed
