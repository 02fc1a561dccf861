"""Recompile budgets: ``compilescope.watch`` as a context manager or a decorator.

    with compilescope.watch(max_recompiles=1) as w:
        serve(requests)
    w.compiles, w.recompiles, w.graph_breaks, w.causes

A watch counts the frame compiles, recompiles and graph breaks that happen in its own thread
while it is active (optionally only those of given functions or modules) — the same records
and definitions as ``run`` and ``probe`` (a refusal at the recompile limit and a lazy
backward compile are not compiles). When the scope ends over budget it raises
:class:`RecompileBudgetExceeded` (or warns, with ``action="warn"``) whose message gives each
reason in PyTorch's words, its guard kind and what can remove it. ``on_recompile`` receives
each recompile's :class:`~compilescope.model.CompileRecord` as it happens, for logs or
metrics.

Capture is event-driven: one process-wide hub is installed while any watch is active and
observes PyTorch's compilation-metrics deque, so a steady call (no compile) costs nothing.
Watches nest and may run in several threads; when the last one ends PyTorch is left as it
was found.
"""

from __future__ import annotations

import functools
import sys
import threading
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from . import compat
from .analysis.advice import group_causes
from .analysis.counts import count_compiles, distinct_breaks
from .analysis.outcomes import RequestOutcome, classify, failure_then
from .collect.capture import CaptureSession
from .collect.records import CodeKey, TargetInfo
from .errors import CompilescopeError
from .model import RESUME_PREFIX, CompileRecord, GraphBreak
from .report import Cause
from .shapes_record import DEFAULT_MAX_BYTES, HUB as RECORD_HUB, RecordSummary, ShapeRecorder


class RecompileBudgetExceeded(CompilescopeError, AssertionError):
    """A watched scope recompiled (or graph-broke) more than its budget."""

    def __init__(self, message: str, watch: Watch) -> None:
        super().__init__(message)
        self.watch = watch


class RecompileBudgetWarning(UserWarning):
    pass


class _Hub:
    """The one capture shared by every active watch."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.watches: list[Watch] = []
        self.session: CaptureSession | None = None
        self._undo_deque: Callable[[], None] | None = None

    def add(self, watch: Watch) -> None:
        with self.lock:
            if not self.watches:
                self.session = CaptureSession().install()
                self._undo_deque = compat.observe_compilation_metrics(self._on_entry)
            self.watches.append(watch)

    def remove(self, watch: Watch) -> None:
        with self.lock:
            if watch in self.watches:
                self._deliver()  # anything still pending (a reset's graph breaks…)
                self.watches.remove(watch)
            if not self.watches and self.session is not None:
                if self._undo_deque is not None:
                    self._undo_deque()
                self.session.uninstall()
                self.session, self._undo_deque = None, None

    def _on_entry(self, entry: Any) -> None:
        with self.lock:
            if self.session is not None:
                self.session.note_compile(entry)
            self._deliver()

    def _deliver(self) -> None:
        if self.session is None:
            return
        polled = self.session.poll(phase="watch", target=_compiled_target_on_stack())
        if not polled.compiles and not polled.graph_breaks:
            return
        thread = threading.get_ident()
        mine = [w for w in self.watches if w._thread == thread]
        owners = _modules_on_stack() if any(w._modules for w in mine) else set()
        for w in mine:
            w._take(polled.compiles, polled.graph_breaks, owners)


_HUB = _Hub()


def _compiled_target_on_stack(limit: int = 200) -> TargetInfo | None:
    """What the nearest ``torch.compile``-d module on the calling stack wraps: a compiled
    module's frame is PyTorch's wrapper (``inner``), named by it as ``Linear.forward`` with
    its arguments' sources as the parameters (``L['input']``, not ``L['args'][0]``)."""
    frame = sys._getframe(1)
    for _ in range(limit):
        if frame is None:
            return None
        owner = frame.f_locals.get("self")
        inner = compat.compiled_module_inner(owner)
        if inner is not None:
            return TargetInfo(inner)
        frame = frame.f_back
    return None


def _modules_on_stack(limit: int = 200) -> set[int]:
    """ids of the nn.Modules whose methods are on the calling stack (a compile of a
    module's frame happens under its ``__call__``)."""
    import torch

    found: set[int] = set()
    frame = sys._getframe(1)
    for _ in range(limit):
        if frame is None:
            break
        owner = frame.f_locals.get("self")
        if isinstance(owner, torch.nn.Module):
            found.add(id(owner))
            inner = compat.compiled_module_inner(owner)
            if inner is not None:
                found.add(id(inner))
        frame = frame.f_back
    return found


class Watch:
    """See the module docstring. Use through :func:`watch`."""

    def __init__(
        self,
        max_recompiles: int | None = None,
        max_graph_breaks: int | None = None,
        on_recompile: Callable[[CompileRecord], None] | None = None,
        functions: Iterable[Any] | None = None,
        action: str = "raise",
        record_shapes: str | Path | None = None,
        record_sample: float = 1.0,
        record_max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        if action not in ("raise", "warn"):
            raise ValueError(f"watch(action={action!r}): use 'raise' or 'warn'")
        for name, value in (("max_recompiles", max_recompiles), ("max_graph_breaks", max_graph_breaks)):
            if value is not None and (not isinstance(value, int) or value < 0):
                raise ValueError(f"watch({name}={value!r}): a budget is a non-negative integer")
        self.max_recompiles, self.max_graph_breaks = max_recompiles, max_graph_breaks
        self.on_recompile, self.action = on_recompile, action
        self.records: list[CompileRecord] = []
        self.breaks: list[GraphBreak] = []
        self._codes: set[CodeKey] = set()
        self._modules: set[int] = set()
        self._names: set[tuple[str, str]] = set()
        for obj in functions or ():
            self._add_target(obj)
        self._filtered = functions is not None
        self._thread: int | None = None
        self._active = False
        self._record = (record_shapes, record_sample, record_max_bytes) if record_shapes is not None else None
        if self._record is not None:
            ShapeRecorder(*self._record)  # a bad path or bound is an error now, not at the first call
        self._recorder: ShapeRecorder | None = None
        self.recorded: RecordSummary | None = None  # what record_shapes wrote, once the scope ended
        self._lost_before: tuple[str, ...] = ()

    def _add_target(self, obj: Any) -> None:
        import torch

        if isinstance(obj, torch.nn.Module):
            self._modules.add(id(obj))
            inner = compat.compiled_module_inner(obj)
            if inner is not None:
                self._modules.add(id(inner))
            return
        info = TargetInfo(obj)
        self._codes |= set(info.entry_codes)
        for name, filename, _ in info.entry_codes:
            self._names.add((name, filename))

    def _matches(self, record: CompileRecord, owners: set[int]) -> bool:
        if not self._filtered:
            return True
        key = (record.function, record.filename, record.line)
        if key in self._codes or (self._modules & owners):
            return True
        if record.function.startswith(RESUME_PREFIX):  # a graph break's resume frame of a watched function
            name = record.function[len(RESUME_PREFIX):].rsplit("_at_", 1)[0]
            return (name, record.filename) in self._names
        return False

    def _take(self, records: Iterable[CompileRecord], breaks: Iterable[GraphBreak], owners: set[int]) -> None:
        matched = [r for r in records if self._matches(r, owners)]
        self.records.extend(matched)
        if not self._filtered or matched:
            self.breaks.extend(breaks)
        if self.on_recompile is not None:
            for r in matched:
                if r.is_recompile:
                    try:
                        self.on_recompile(r)
                    except Exception as exc:  # a callback must never break the user's compile
                        warnings.warn(f"compilescope.watch on_recompile raised {type(exc).__name__}: {exc}",
                                      RuntimeWarning, stacklevel=2)

    # -- counts ------------------------------------------------------------------------

    @property
    def compiles(self) -> int:
        return count_compiles(self.records).compiles

    @property
    def recompiles(self) -> int:
        return count_compiles(self.records).recompiles

    @property
    def refused(self) -> int:
        """Attempts the recompile limit refused (those calls ran eagerly)."""
        return count_compiles(self.records).refused

    @property
    def failed(self) -> int:
        """Compiles that failed (:func:`failure_lines` says which, and whether Dynamo tried that frame again)."""
        return count_compiles(self.records).failed

    @property
    def graph_breaks(self) -> int:
        """Distinct graph breaks (:func:`~compilescope.analysis.counts.break_key`)."""
        return len(distinct_breaks(self.breaks))

    @property
    def lost_capabilities(self) -> tuple[str, ...]:
        """What compilescope could not record in this scope: each capability whose hook into
        PyTorch raised (it turned itself off; the watched calls went on), in one line each."""
        return tuple(lost.describe() for lost in compat.lost_capabilities()
                     if lost.capability not in self._lost_before)

    @property
    def causes(self) -> tuple[Cause, ...]:
        """The recompile causes, grouped per guard, with whether a shape setting removes each
        and the next step."""
        return group_causes(tuple(self.records))

    # -- scope ---------------------------------------------------------------------------

    def __enter__(self) -> Watch:
        if self._active:
            raise RuntimeError("this watch is already active; create one watch per scope")
        self._thread = threading.get_ident()
        self._active = True
        self._lost_before = tuple(lost.capability for lost in compat.lost_capabilities())
        _HUB.add(self)
        if self._record is not None:
            self._recorder = ShapeRecorder(*self._record, accept=self._accepts if self._filtered else None).start()
            RECORD_HUB.add(self._recorder)
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.stop()
        if exc_type is None:
            self.check()

    def stop(self) -> None:
        if self._active:
            _HUB.remove(self)
            self._active = False
            if self._recorder is not None:  # never raises: a recording that failed says why in `recorded`
                RECORD_HUB.remove(self._recorder)
                self.recorded = self._recorder.close()
                self._recorder = None

    def _accepts(self, target: Any) -> bool:
        """A compiled call's target is one of ``functions`` (for ``record_shapes``)."""
        import torch

        if isinstance(target, torch.nn.Module):
            return id(target) in self._modules
        return bool(set(TargetInfo(target).entry_codes) & self._codes)

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """As a decorator: a fresh watch with the same budget around each call."""
        if self._record is not None:  # each call's scope would write the file anew
            raise ValueError("watch(record_shapes=…) records one scope: use it as `with watch(…)`, not a decorator")

        @functools.wraps(fn)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            with self._clone():
                return fn(*args, **kwargs)

        return wrapped

    def _clone(self) -> Watch:
        clone = Watch(self.max_recompiles, self.max_graph_breaks, self.on_recompile, None, self.action)
        clone._codes, clone._modules, clone._names, clone._filtered = self._codes, self._modules, self._names, self._filtered
        return clone

    # -- budget --------------------------------------------------------------------------

    def over_budget(self) -> list[str]:
        out = []
        if self.max_recompiles is not None and self.recompiles > self.max_recompiles:
            out.append(f"{self.recompiles} recompile(s) exceed the budget of {self.max_recompiles}")
        if self.max_graph_breaks is not None and self.graph_breaks > self.max_graph_breaks:
            out.append(f"{self.graph_breaks} distinct graph break(s) exceed the budget of {self.max_graph_breaks}")
        return out

    def check(self) -> None:
        problems = self.over_budget()
        if not problems:
            said = list(self.lost_capabilities)  # the counts may be short: said, never silent
            said += failure_lines(self.records)  # a frame that runs eagerly for good passes no budget silently
            said += compile_lines(r for r in self.records if r.refused)  # nor one the limit closed
            if said:
                warnings.warn("compilescope.watch: " + "; ".join(s.strip() for s in said), RuntimeWarning,
                              stacklevel=3)
            return
        message = self.explain(problems)
        if self.action == "warn":
            warnings.warn(message, RecompileBudgetWarning, stacklevel=3)
        else:
            raise RecompileBudgetExceeded(message, self)

    def explain(self, problems: list[str] | None = None) -> str:
        """Every recompile with PyTorch's reasons, the guard kind and what can remove it."""
        problems = problems if problems is not None else self.over_budget()
        counts = count_compiles(self.records)
        extra = "".join(f", {n} {what}" for n, what in ((counts.failed, "failed"),
                                                          (counts.refused, "refused by the recompile limit")) if n)
        breaks = f"{self.graph_breaks} distinct graph break(s)"  # what the budget counts; probe counts occurrences
        if len(self.breaks) > self.graph_breaks:
            breaks += f" met {len(self.breaks)} times"
        lines = [f"compilescope.watch: {'; '.join(problems) or 'within budget'} "
                 f"({self.compiles} compile(s), {self.recompiles} recompile(s){extra}, {breaks})"]
        lines += compile_lines(r for r in self.records if (r.is_recompile and not r.failed) or r.refused)
        lines += failure_lines(self.records)
        causes = self.causes
        if causes:
            lines.append("  what can remove each cause:")
            for c in causes:
                reducible = "shape-reducible" if c.shape_reducible else "not shape-reducible"
                lines.append(f"    - {c.description} [{c.kind}, {reducible}]: {c.next_step}")
        if self.max_graph_breaks is not None and self.graph_breaks > self.max_graph_breaks:
            for reason, filename, line in distinct_breaks(self.breaks):
                lines.append(f"  graph break at {filename}:{line}: {reason}")
        lines += [f"  compilescope {lost}" for lost in self.lost_capabilities]
        return "\n".join(lines)


def compile_lines(records: Iterable[CompileRecord]) -> list[str]:
    """Each compile (or refusal) with the guards that failed, in PyTorch's words, as a watch
    over budget names them."""
    lines = []
    for r in records:
        outcome = classify([r])
        if outcome is RequestOutcome.REFUSED:
            what = ("refused by the recompile limit (the call ran eagerly; Dynamo runs only this frame's cached "
                    "graphs from then on, and a later input they all reject runs eagerly with no attempt on record)")
        elif outcome is RequestOutcome.RECOMPILE:
            what = "recompiled"
        else:
            what = "compiled (no cache entry of this frame was left to reject it)"
        lines.append(f"  {r.compile_id} {r.display_name} ({r.display_location}) {what}{':' if r.reasons else ''}")
        for reason, entry in zip(r.reasons, r.rejected_by):
            lines.append(f"    - {entry}: {reason.rstrip()}")
    return lines


def failure_lines(records: Iterable[CompileRecord]) -> list[str]:
    """Each failed compile in one line, with where in the user's code it failed and what
    became of the call: its error raised into it (``fullgraph=True``, or an error Dynamo does
    not suppress; the next call tries again), or Dynamo ran the frame eagerly, and whether a
    later attempt of the frame is on record."""
    records = list(records)
    out = []
    for i, r in enumerate(records):
        if r.failed:
            why = (r.fail_reason or "").strip().split("\n", 1)[0][:200]
            at = f" at {r.fail_at[0]}:{r.fail_at[1]}" if r.fail_at else ""
            again = any((o.epoch, o.compile_id.frame) == (r.epoch, r.compile_id.frame) for o in records[i + 1:])
            then = failure_then(r, again)
            out.append(f"  compile {r.compile_id} of {r.display_name} ({r.display_location}) failed{at} "
                       f"({r.fail_type or 'an error'}{': ' + why if why else ''}){then}")
    return out


def deliver_pending() -> None:
    """Hand every active watch what PyTorch recorded since the last delivery (a compile's
    records arrive as it ends; this takes what a reset or a graph break left pending)."""
    with _HUB.lock:
        _HUB._deliver()


def watch(
    max_recompiles: int | None = None,
    max_graph_breaks: int | None = None,
    on_recompile: Callable[[CompileRecord], None] | None = None,
    functions: Iterable[Any] | None = None,
    action: str = "raise",
    record_shapes: str | Path | None = None,
    record_sample: float = 1.0,
    record_max_bytes: int = DEFAULT_MAX_BYTES,
) -> Watch:
    """A recompile budget for a scope: ``with watch(max_recompiles=1): …`` or ``@watch(…)``.

    ``record_shapes="shapes.jsonl"`` also writes the inputs of every call of the watched
    compiled functions as a replayable stream (:mod:`compilescope.shapes_record`), sampled at
    ``record_sample`` and bounded by ``record_max_bytes`` per file; ``w.recorded`` says what
    was written and dropped once the scope ends."""
    return Watch(max_recompiles, max_graph_breaks, on_recompile, functions, action,
                 record_shapes, record_sample, record_max_bytes)
