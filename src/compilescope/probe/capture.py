"""Run an unmodified program with capture installed, and collect what torch.compile did.

Nothing here touches logging: the user's ``TORCH_LOGS`` and ``torch._logging`` settings stay
theirs. The same :class:`~compilescope.collect.capture.CaptureSession` that ``run`` uses reads
PyTorch's own records; on top of it the probe wraps ``torch.compile`` to learn what was
compiled (so a frame PyTorch calls ``inner`` is named ``Linear.forward``) and the input
shapes of every call. Everything installed is removed at exit, in reverse order.

``compilescope probe`` runs the program in a child process of its own
(:func:`compilescope.probe.child.run_child`, started by :mod:`compilescope.probe.launch`) that streams every record to
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
from .script import error_line as _error_line, run_as_main
from .journal import JournalStream


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
            self.stream.torch(compat.torch_version(), *self.cache_start)
        self.capture.install()
        # what only the moment a compile fails tells: whether its error raised into the call
        self.capture.add_undo(compat.observe_compilation_metrics(self.capture.note_compile))
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
