"""Run an unmodified program with capture installed, and collect what torch.compile did.

Nothing here touches logging: the user's ``TORCH_LOGS`` and ``torch._logging`` settings stay
theirs. The same :class:`~compilescope.collect.capture.CaptureSession` that ``run`` uses reads
PyTorch's own records; on top of it the probe wraps ``torch.compile`` to learn what was
compiled (so a frame PyTorch calls ``inner`` is named ``Linear.forward``) and the input
shapes of every call. Everything installed is removed at exit, in reverse order.

``compilescope probe`` runs the program in a child process of its own
(:func:`run_child`, started by :mod:`compilescope.probe.launch`) that streams every record to
a journal as it is captured; :func:`probe_script` runs one in this process.
"""

from __future__ import annotations

import datetime as _dt
import functools
import inspect
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from .. import compat
from ..collect.capture import CaptureSession
from ..collect.records import TargetInfo
from ..model import ProbeCall, ProbeResult
from .journal import JournalStream, JournalWriter


def _shapes(names: dict[str, Any]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for name, value in names.items():
        if isinstance(value, torch.Tensor):
            out[name] = list(value.shape)
        elif isinstance(value, (list, tuple)):
            for i, v in enumerate(value):
                if isinstance(v, torch.Tensor):
                    out[f"{name}[{i}]"] = list(v.shape)
        elif isinstance(value, dict):
            for k, v in value.items():
                if isinstance(v, torch.Tensor):
                    out[f"{name}[{k!r}]"] = list(v.shape)
    return out


def cache_start() -> tuple[str, str]:
    """Whether the inductor cache directory held anything when the program started
    (``cold``/``warm``), and its path: compile times depend on it."""
    path = compat.inductor_cache_dir()
    if path is None:
        return "unknown", ""
    p = Path(path)
    try:
        warm = p.is_dir() and any(p.iterdir())
    except OSError:
        return "unknown", str(p)
    return ("warm" if warm else "cold"), str(p)


def lost_capabilities() -> tuple[str, ...]:
    """Each capability lost in this process (a hook that raised), described in one line."""
    return tuple(lost.describe() for lost in compat.lost_capabilities())


class ProbeSession:
    """Install with :meth:`install`, run the program, then :meth:`uninstall` and :meth:`result`."""

    def __init__(self, stream: JournalStream | None = None) -> None:
        self.capture = CaptureSession()
        self.calls: list[ProbeCall] = []
        self._active: list[TargetInfo] = []
        self.stream = stream

    def install(self) -> None:
        self.cache_start = cache_start()
        if self.stream is not None:
            self.stream.header(compat.torch_version(), *self.cache_start)
        self.capture.install()
        self.capture.add_undo(self._patch_compile())

    def uninstall(self) -> None:
        compat.contained("compile records", self._poll)()  # the program's exit status stays its own
        compat.contained("compile records", self._sync)()
        self.capture.uninstall()

    def _poll(self) -> None:
        if self.capture.has_news():
            self.capture.poll(phase="script", target=self._active[-1] if self._active else None)
            self._sync()

    def _sync(self) -> None:
        if self.stream is not None:
            self.stream.sync(self.capture.records, self.capture.graph_breaks, dict(self.capture.builder.counters),
                             compat.recompile_limit_value(), lost_capabilities())

    def _enter(self, info: TargetInfo) -> None:
        self._poll()  # what happened before belongs to the enclosing context
        self._active.append(info)

    def _exit(self) -> None:
        self._poll()
        if self._active:
            self._active.pop()

    def _patch_compile(self) -> Callable[[], None]:
        original = torch.compile
        session = self

        @functools.wraps(original)
        def compile(model: Any = None, **kwargs: Any) -> Any:
            if model is None:
                return lambda m: session._record_calls(original(m, **kwargs), m)
            return session._record_calls(original(model, **kwargs), model)

        torch.compile = compile  # type: ignore[assignment]

        def undo() -> None:
            torch.compile = original  # type: ignore[assignment]

        return undo

    def _record_calls(self, compiled: Any, model: Any) -> Any:
        try:
            info = TargetInfo(model)
        except Exception:
            return compiled
        name = info.target.name
        target = model.forward if isinstance(model, torch.nn.Module) else model
        try:
            signature: inspect.Signature | None = inspect.signature(target)
        except (TypeError, ValueError):
            signature = None

        def record(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
            named: dict[str, Any]
            try:
                named = dict(signature.bind_partial(*args, **kwargs).arguments) if signature else {}
            except TypeError:
                named = {}
            if not named:
                named = {f"args[{i}]": a for i, a in enumerate(args)} | kwargs
            call = ProbeCall(name, _shapes(named))
            self.calls.append(call)
            if self.stream is not None:
                self.stream.call(call)

        # run inside the user's call: an error of compilescope's loses its capability, never the call
        record = compat.contained("call inputs", record)
        enter = compat.contained("compile records", self._enter)
        leave = compat.contained("compile records", self._exit)
        # Called from inside another compiled function, these are Dynamo's to trace as it traces
        # the caller (there they do nothing, so that it inlines the function as it would unprobed,
        # rather than tracing the probe's own bookkeeping and breaking its graph on it), or to run
        # as frames of their own in the caller's compiled region after a break (run as Python,
        # never compiled: compat.run_uncompiled).
        if isinstance(compiled, torch.nn.Module):
            def pre(_m: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
                if torch.compiler.is_compiling():
                    return
                record(args, kwargs)
                enter(info)

            def post(*_: Any) -> None:
                if not torch.compiler.is_compiling():
                    leave()

            compiled.register_forward_pre_hook(compat.run_uncompiled(pre), with_kwargs=True)
            compiled.register_forward_hook(compat.run_uncompiled(post), always_call=True)
            return compiled

        @functools.wraps(compiled)
        def call(*args: Any, **kwargs: Any) -> Any:
            if torch.compiler.is_compiling():
                return compiled(*args, **kwargs)
            record(args, kwargs)
            enter(info)
            try:
                return compiled(*args, **kwargs)
            finally:
                leave()

        return compat.run_uncompiled(call)

    def result(self, source: str, exit_code: int, error: str | None) -> ProbeResult:
        counters = dict(self.capture.builder.counters)
        state, cache_dir = self.cache_start
        return ProbeResult(
            source=source,
            compiles=tuple(self.capture.records),
            graph_breaks=tuple(self.capture.graph_breaks),
            calls=tuple(self.calls),
            exit_code=exit_code,
            error=error,
            recompile_limit=compat.recompile_limit_value(),
            counters=counters,
            torch_version=compat.torch_version(),
            cache_start=state,
            cache_dir=cache_dir,
            created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            lost_capabilities=lost_capabilities(),
        )


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


def run_script(path: str, args: list[str]) -> tuple[int, str | None]:
    """Run ``path`` as ``python path args…`` would, in this process: as ``__main__``, with
    its own ``sys.argv`` and ``sys.path[0]``. Returns (exit status, error line or None)."""
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = [path, *args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        run_as_main(path)
        return 0, None
    except SystemExit as exc:
        code = exc.code
        if code is None:
            return 0, None
        if isinstance(code, int):
            return code & 0xFF, None  # the exit status the process would have
        print(code, file=sys.stderr)
        return 1, str(code)
    except KeyboardInterrupt as exc:
        _print_user_traceback(exc, path)
        return 130, "KeyboardInterrupt"
    except BaseException as exc:  # the script's own error: show it as Python would, keep the report
        _print_user_traceback(exc, path)
        return 1, _error_line(exc)
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path


def run_child(path: str, args: list[str], journal: str) -> None:
    """In the child process ``probe`` starts: run ``path`` as ``python path args…`` would
    (``__main__``, its argv, its directory first on ``sys.path``), streaming every record to
    ``journal``. How the script ended propagates: ``SystemExit`` and any exception are
    re-raised, and the next ``sys.excepthook`` call — whichever hook the script left in
    place — shows the traceback from the script's first frame, as ``python`` does."""
    stream = JournalStream(JournalWriter(journal))
    session = ProbeSession(stream)
    session.install()
    script = os.path.abspath(path)
    sys.argv = [path, *args]
    sys.path[0] = os.path.dirname(script)  # the script's directory, as `python path` puts it
    try:
        run_as_main(path, restore=False)
    except SystemExit as exc:
        session.uninstall()
        code = exc.code
        if code is None or isinstance(code, int):
            stream.end((code or 0) & 0xFF, None)  # the exit status the process will have
        else:
            stream.end(1, str(code))
        raise
    except BaseException as exc:
        session.uninstall()
        stream.end(130 if isinstance(exc, KeyboardInterrupt) else 1, _error_line(exc))
        _trim_next_traceback(script)
        raise
    session.uninstall()
    stream.end(0, None)


def _error_line(exc: BaseException) -> str:
    if isinstance(exc, KeyboardInterrupt):
        return "KeyboardInterrupt"
    from ..execute.trial import headline  # at call time: the trial worker's imports stay out of a probe's start

    return headline(type(exc).__name__, str(exc))


def _trim_next_traceback(script: str) -> None:
    """The next uncaught exception's traceback starts at the script's first frame (without
    one, as for a syntax error, only the exception), then goes to whichever
    ``sys.excepthook`` the script left in place."""
    hook = sys.excepthook

    def trimmed(kind: type[BaseException], value: BaseException, tb: Any) -> None:
        sys.excepthook = hook
        while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename) != script:
            tb = tb.tb_next
        hook(kind, value.with_traceback(tb), tb)  # Python's own hook prints the exception's traceback

    sys.excepthook = trimmed


def _print_user_traceback(exc: BaseException, path: str) -> None:
    """The traceback from the script's first frame on, as ``python script.py`` prints it."""
    tb = exc.__traceback__
    script = os.path.abspath(path)
    while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename) != script:
        tb = tb.tb_next
    traceback.print_exception(type(exc), exc, tb or exc.__traceback__)


def probe_script(path: str, args: list[str]) -> ProbeResult:
    session = ProbeSession()
    session.install()
    try:
        exit_code, error = run_script(path, args)
    finally:
        session.uninstall()
    return session.result(" ".join([path, *args]), exit_code, error)
