"""Capture of what torch.compile does, the same way for a ``run`` trial and a ``probe``.

Installed once per process (:meth:`CaptureSession.install`), it reads PyTorch's own records
and touches no logging, so the user's ``TORCH_LOGS`` stays theirs:

* compilation metrics, one entry per frame compile attempt (failed and refused ones too) and
  one per lazily compiled backward — turned into records by the one
  :class:`~compilescope.collect.records.RecordBuilder`;
* each guard-failure reason as PyTorch records it (an observing list inside
  ``guard_failures``), tagged with the compile id being compiled and the reset epoch, with
  every failing guard of each rejecting entry (as ``recompiles_verbose`` computes them);
* graph-break records, read before every ``reset()`` (which clears them) and at each poll;
* each new cache entry's guards on the frame's inputs, read once when the entry is built
  (:mod:`~compilescope.collect.entry_guards`), onto its record's ``entry_guards``.

``torch._dynamo.reset()`` restarts compile ids; the session counts resets as *epochs*, so
``0/0`` before and after a reset are two compiles. :meth:`poll` turns what is new since the
last poll into records; the hot path (a steady call) only compares two lengths.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import compat
from ..torchtext import enrich_actual, explain_checks, in_process_break_reason, parse_guard_failure
from ..model import CompileRecord, EntryGuard, GraphBreak, GuardFailure
from .entry_guards import entry_guards
from .records import CodeKey, RecordBuilder, TargetInfo, break_location, code_key


@dataclass(frozen=True)
class Polled:
    compiles: tuple[CompileRecord, ...]  # new frame-compile records (refused ones included)
    graph_breaks: tuple[GraphBreak, ...]
    unattributed: tuple[GuardFailure, ...]  # reasons recorded outside any compile


def _plain(tagged: Sequence[Observed]) -> dict[str, Any] | None:
    """The plain arguments the call that the rejecting entries were checked against held."""
    out: dict[str, Any] = {}
    for o in tagged:
        out.update(o.plain)
    return out or None


@dataclass(frozen=True)
class Observed:
    """One rejecting entry's reason as PyTorch recorded it, and what walking that entry's
    guards against the same call found (every failing guard; those it could not evaluate)."""

    code: CodeKey
    text: str
    walked: tuple[GuardFailure, ...] = ()
    unevaluated: dict[str, int] = field(default_factory=dict)
    plain: dict[str, Any] = field(default_factory=dict)  # the call's plain arguments (ints, flags…), when read


def _merge_counts(counts: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for c in counts:
        for k, v in c.items():
            out[k] = out.get(k, 0) + v
    return out


class CaptureSession:
    """``walk_guards``: on each recompile, evaluate every guard of each rejecting entry (to
    find the failures PyTorch's reason does not name). It runs only when a call is rejected,
    never on a steady call. ``record_entries``: keep each new cache entry's guards on its
    inputs (read once per compile)."""

    def __init__(self, walk_guards: bool = True, record_entries: bool = True) -> None:
        self.walk_guards = walk_guards
        self.record_entries = record_entries
        self._entries: dict[tuple[int, str], tuple[tuple[EntryGuard, ...], int]] = {}
        self.builder = RecordBuilder()
        self.graph_breaks: list[GraphBreak] = []
        self.epoch = 0
        self._failures: dict[tuple[int, str], list[Observed]] = {}
        self._loose_failures: list[str] = []
        self._boundaries: list[int] = []  # metrics index where each later epoch starts
        self._metrics_seen = 0
        self._breaks_seen = 0
        self._fullgraph: dict[int, bool | None] = {}  # id of a failed compile's metrics entry → fullgraph
        self._pending_breaks: list[Any] = []
        self._undo: list[Callable[[], None]] = []

    @property
    def records(self) -> list[CompileRecord]:
        return self.builder.records

    # -- installation -------------------------------------------------------------------

    def install(self) -> CaptureSession:
        self._undo.append(compat.enable_compilation_metrics())
        self._metrics_seen = compat.compilation_metrics_count()
        self._breaks_seen = len(compat.graph_break_reasons())
        self._undo.append(compat.observe_guard_failures(self._on_failure))
        self._undo.append(compat.force_verbose_guard_reasons())
        self._undo.append(compat.before_reset(self._before_reset))
        if self.record_entries:
            self._undo.append(compat.observe_new_entries(self._on_entry))
        return self

    def uninstall(self) -> None:
        while self._undo:
            self._undo.pop()()

    def add_undo(self, undo: Callable[[], None]) -> None:
        self._undo.append(undo)

    def _on_failure(self, code: Any, text: str) -> None:
        cid = compat.current_compile_id()
        if cid is None:
            self._loose_failures.append(text)
            return
        walked: tuple[GuardFailure, ...] = ()
        unevaluated: dict[str, int] = {}
        context = compat.rejecting_entry() if self.walk_guards else None
        plain = {k: v for k, v in context[1].items()
                 if isinstance(v, (bool, int, float)) or isinstance(v, str) and len(v) <= 200} if context else {}
        if context is not None:
            entry = text.split(":", 1)[0].strip() if ":" in text else None
            try:
                found, unevaluated = explain_checks(compat.walk_guards(*context), entry)
                walked = tuple(found)
            except Exception as exc:  # never break PyTorch's compile decision
                unevaluated = {f"walk raised {type(exc).__name__}": 1}
        self._failures.setdefault((self.epoch, cid), []).append(Observed(code_key(code), text, walked, unevaluated, plain))

    def _on_entry(self, guard_manager: Any, f_locals: Mapping[str, Any], code: Any = None) -> None:
        cid = compat.current_compile_id()
        if cid is not None:
            self._entries[(self.epoch, cid)] = entry_guards(guard_manager, f_locals, code)

    def note_compile(self, entry: Any) -> None:
        """Called in the compiling thread as a metrics entry is recorded: what only that
        moment can tell of a failed compile — whether it ran under ``fullgraph=True``."""
        if getattr(entry, "fail_type", None):
            self._fullgraph[id(entry)] = compat.compiling_fullgraph()

    def _before_reset(self) -> None:
        records = compat.graph_break_reasons()
        self._pending_breaks.extend(records[self._breaks_seen :])
        self._breaks_seen = 0  # reset() empties the list
        self._boundaries.append(compat.compilation_metrics_count())
        self.epoch += 1

    # -- polling --------------------------------------------------------------------------

    def has_news(self) -> bool:
        return (
            compat.compilation_metrics_count() != self._metrics_seen
            or len(compat.graph_break_reasons()) != self._breaks_seen
            or bool(self._pending_breaks)
            or bool(self._loose_failures)
        )

    def _epoch_of(self, index: int) -> int:
        return sum(1 for b in self._boundaries if b <= index)

    def poll(
        self,
        *,
        call_index: int | None = None,
        phase: str = "script",
        arguments: Mapping[str, Any] | None = None,
        target: TargetInfo | None = None,
    ) -> Polled:
        """Records for everything PyTorch did since the last poll."""
        count = compat.compilation_metrics_count()
        if count < self._metrics_seen:  # someone cleared the metrics
            self._metrics_seen = 0
            self._boundaries = []
        new = compat.compilation_metrics_since(self._metrics_seen) if count > self._metrics_seen else []
        start = self._metrics_seen
        self._metrics_seen = count
        compiles = []
        for offset, raw in enumerate(new):
            view = compat.view_metrics(raw)
            epoch = self._epoch_of(start + offset)
            tagged = self._failures.pop((epoch, view.compile_id), []) if view.is_forward else []
            guards, cut = self._entries.pop((epoch, view.compile_id), ((), 0)) if view.is_forward else ((), 0)
            record = self.builder.add(
                view,
                epoch=epoch,
                reasons=[o.text for o in tagged],
                walked=[g for o in tagged for g in o.walked],
                unevaluated=_merge_counts(o.unevaluated for o in tagged),
                # a Python value's guard names no actual value: the call's own, where the capture read it
                arguments=arguments if arguments is not None else _plain(tagged),
                call_index=call_index,
                phase=phase,
                target=target,
                fallback_key=tagged[0].code if tagged else None,
                entry_guards=guards,
                entry_guards_cut=cut,
                fullgraph=self._fullgraph.pop(id(raw), None),
            )
            if record is not None:
                compiles.append(record)
        self._fullgraph.clear()
        breaks = self._take_breaks(call_index, phase, target)
        loose = tuple(
            enrich_actual(parse_guard_failure(t), arguments or {}) for t in self._loose_failures
        )
        self._loose_failures = []
        return Polled(tuple(compiles), breaks, loose)

    def _take_breaks(self, call_index: int | None, phase: str, target: TargetInfo | None) -> tuple[GraphBreak, ...]:
        records = compat.graph_break_reasons()
        raw = self._pending_breaks + list(records[self._breaks_seen :])
        self._pending_breaks = []
        self._breaks_seen = len(records)
        out = []
        for record in raw:
            filename, line = break_location(record, target)
            reason = in_process_break_reason(str(getattr(record, "reason", record)))
            out.append(GraphBreak(reason, filename, line, call_index, phase=phase))
        self.graph_breaks.extend(out)
        return tuple(out)
