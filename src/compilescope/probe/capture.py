"""Run an unmodified program with capture installed, and collect what torch.compile did.

Nothing here touches logging: the user's ``TORCH_LOGS`` and ``torch._logging`` settings stay
theirs. Capture reads PyTorch's own records —

* compilation metrics (one per frame compile, failed ones included), read at the end;
* each guard-failure reason as it is recorded (an observing list inside
  ``guard_failures``), with its time, so it can be tied to the compile that followed;
* graph-break records, read before every ``reset()`` and at the end;
* the input shapes of every call of a function or module passed to ``torch.compile``.

Everything installed is removed at exit, in reverse order.
"""

from __future__ import annotations

import functools
import inspect
import os
import runpy
import sys
import traceback
from collections.abc import Callable
from typing import Any

import torch

from .. import compat
from ..analysis.guards import parse_guard_failure
from ..collect.capture import break_location, code_key
from ..model import ProbeCall, ProbeCompile, ProbeGraphBreak, ProbeResult

CodeKey = tuple[str, str, int]


def split_entry_reasons(text: str) -> list[str]:
    """One rejecting entry's text (``0/0: a == 1; b == True`` when several guards failed,
    as ``recompiles_verbose`` words it) → one guard text each, prefix kept."""
    first = text.split("\n", 1)[0]
    entry, sep, rest = first.partition(": ")
    if not sep or "/" not in entry:
        return [first]
    # "; " also occurs inside a guard's trailing "(…)" comment: keep pieces whose
    # parentheses are still open joined to the guard they belong to.
    guards: list[str] = []
    for piece in rest.split("; "):
        if guards and guards[-1].count("(") > guards[-1].count(")"):
            guards[-1] += "; " + piece
        else:
            guards.append(piece)
    return [f"{entry}: {g.strip()}" for g in guards if g.strip()]


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


class ProbeSession:
    """Install with :meth:`install`, run the program, then :meth:`uninstall` and :meth:`result`."""

    def __init__(self) -> None:
        self.failures: list[tuple[str | None, CodeKey, str]] = []  # (compile id, code, text)
        self.breaks: list[ProbeGraphBreak] = []
        self.calls: list[ProbeCall] = []
        self._undo: list[Callable[[], None]] = []
        self._metrics_start = 0
        self._breaks_seen = 0

    # -- installation -------------------------------------------------------------------

    def install(self) -> None:
        compat.enable_compilation_metrics()
        self._metrics_start = len(compat.compilation_metrics())
        self._breaks_seen = len(compat.graph_break_reasons())
        self._undo.append(compat.observe_guard_failures(self._on_failure))
        self._undo.append(compat.force_verbose_guard_reasons())
        self._undo.append(compat.before_reset(self._read_breaks_before_reset))
        self._undo.append(self._patch_compile())

    def uninstall(self) -> None:
        self._read_breaks()
        while self._undo:
            self._undo.pop()()

    def _on_failure(self, code: Any, text: str) -> None:
        self.failures.append((compat.current_compile_id(), code_key(code), text))

    def _read_breaks(self) -> None:
        records = compat.graph_break_reasons()
        for record in records[self._breaks_seen :]:
            filename, line = break_location(record)
            self.breaks.append(ProbeGraphBreak(str(getattr(record, "reason", record)), filename, line))
        self._breaks_seen = len(records)

    def _read_breaks_before_reset(self) -> None:
        self._read_breaks()
        self._breaks_seen = 0  # reset() empties the list

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
        name = getattr(model, "__qualname__", None) or type(model).__name__
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
            self.calls.append(ProbeCall(name, _shapes(named)))

        if isinstance(compiled, torch.nn.Module):
            compiled.register_forward_pre_hook(lambda _m, args, kwargs: record(args, kwargs), with_kwargs=True)
            return compiled

        @functools.wraps(compiled)
        def call(*args: Any, **kwargs: Any) -> Any:
            record(args, kwargs)
            return compiled(*args, **kwargs)

        return call

    # -- results --------------------------------------------------------------------------

    def compiles(self) -> list[ProbeCompile]:
        raw = compat.compilation_metrics()[self._metrics_start :]
        metrics = [compat.view_metrics(m) for m in raw]
        starts = [compat.metrics_start_us(m) for m in raw]
        # A recompile's reasons are computed inside its compile, under its compile id; ids
        # restart after reset(), so each failure goes to the next unclaimed compile with that id.
        assigned: list[list[str]] = [[] for _ in metrics]
        keys: list[CodeKey | None] = [None for _ in metrics]
        cursor = 0
        for cid, key, text in self.failures:
            for i in range(cursor, len(metrics)):
                if metrics[i].compile_id == cid:
                    assigned[i].append(text)
                    keys[i] = key
                    cursor = i
                    break
        out = []
        for i, (m, start, reasons) in enumerate(zip(metrics, starts, assigned)):
            key = (m.co_name, m.co_filename, m.co_firstlineno) if m.co_name else (keys[i] or ("", "", 0))
            parsed = tuple(parse_guard_failure(part) for r in reasons for part in split_entry_reasons(r))
            out.append(
                ProbeCompile(
                    compile_id=m.compile_id,
                    function=key[0],
                    filename=key[1],
                    line=key[2],
                    reasons=tuple(r.split("\n", 1)[0] for r in reasons),
                    guard_failures=parsed,
                    compile_time_s=m.duration_s,
                    phases_s=m.phases_s,
                    fail_type=m.fail_type,
                    fail_reason=m.fail_reason,
                    recompile_limit_hit=compat.is_recompile_limit_failure(m.fail_type, m.fail_reason),
                    start_time_us=start,
                )
            )
        return out

    def result(self, source: str, exit_code: int, error: str | None) -> ProbeResult:
        return ProbeResult(
            source=source,
            compiles=tuple(self.compiles()),
            graph_breaks=tuple(self.breaks),
            calls=tuple(self.calls),
            exit_code=exit_code,
            error=error,
            recompile_limit=compat.recompile_limit_value(),
            torch_version=compat.torch_version(),
        )


def run_script(path: str, args: list[str]) -> tuple[int, str | None]:
    """Run ``path`` as ``python path args…`` would, in this process: as ``__main__``, with
    its own ``sys.argv`` and ``sys.path[0]``. Returns (exit status, error line or None)."""
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = [path, *args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        runpy.run_path(os.path.abspath(path), run_name="__main__")
        return 0, None
    except SystemExit as exc:
        code = exc.code
        if code is None:
            return 0, None
        if isinstance(code, int):
            return code, None
        print(code, file=sys.stderr)
        return 1, str(code)
    except KeyboardInterrupt as exc:
        _print_user_traceback(exc, path)
        return 130, "KeyboardInterrupt"
    except BaseException as exc:  # the script's own error: show it as Python would, keep the report
        _print_user_traceback(exc, path)
        return 1, f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
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
