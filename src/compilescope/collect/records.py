"""The one builder of compile records from PyTorch's compilation metrics.

All three capture paths — a ``run`` trial, a live ``probe`` and the ``TORCH_TRACE`` reader —
feed metrics entries here in the order PyTorch wrote them, each with its reset epoch and the
guard-failure texts tied to its compile id. The rules live here once:

* an entry with ``is_forward=False`` is a lazily compiled backward: its time goes to the
  forward record with the same id (``backward_compile_s``), never a compile of its own;
* an entry refused by the recompile limit is recorded with outcome ``refused`` (it is not
  a compile); one that raised while compiling is ``failed`` (it is);
* an entry without a code location (a refused one) borrows its frame's from an earlier
  compile of the same frame in the same epoch;
* a frame that is PyTorch's own wrapper (``inner``) or a decorator around the compiled
  target is named by the target (``Linear.forward``), and guard sources PyTorch names
  through the wrapper (``L['args'][0]``, ``L['kwargs']['ids']``) by the parameter.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from .. import compat
from ..torchtext import enrich_actual, failure_key, parse_guard_failure, split_entry_reasons
from ..model import CompiledTarget, CompileId, CompileRecord, EntryGuard, GuardFailure, made_entry

CodeKey = tuple[str, str, int]
Packed = tuple[str, str]  # the names a wrapper frame gives its *args and **kwargs
PACKED = ("args", "kwargs")  # PyTorch's own wrappers' (a compiled module's ``inner``) and most decorators'


@functools.lru_cache(maxsize=64)
def _packed_patterns(packed: Packed) -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    a, k = (re.escape(n) for n in packed)
    return (re.compile(rf"^L\['{a}'\]\[(?P<i>\d+)\](?P<rest>.*)$"),
            re.compile(rf"^L\['{k}'\]\[(?P<q>['\"])(?P<name>[^'\"]+)(?P=q)\](?P<rest>.*)$"),
            re.compile(rf"L\['{a}'\]\[(?P<i>\d+)\]"),
            re.compile(rf"L\['{k}'\]\[(?P<q>['\"])(?P<name>[^'\"]+)(?P=q)\]"))


def packed_names(fn: Any) -> Packed:
    """The names a function gives its ``*args`` and ``**kwargs`` — a decorator's ``wrapper(*a,
    **kw)`` is ``("a", "kw")`` — as Dynamo names the frame's inputs (``L['a'][0]``); PyTorch's
    usual names for what it lacks."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return PACKED
    i = code.co_argcount + code.co_kwonlyargcount
    varargs = varkw = None
    if code.co_flags & inspect.CO_VARARGS:
        varargs, i = code.co_varnames[i], i + 1
    if code.co_flags & inspect.CO_VARKEYWORDS:
        varkw = code.co_varnames[i]
    return (varargs or PACKED[0], varkw or PACKED[1])


def code_key(code: Any) -> CodeKey:
    """(name, file, first line) of a code object — how compilation metrics name a frame."""
    if code is None:
        return ("", "", 0)
    return (
        str(getattr(code, "co_name", code)),
        str(getattr(code, "co_filename", "")),
        int(getattr(code, "co_firstlineno", 0) or 0),
    )


def break_location(record: Any, target: TargetInfo | None = None) -> tuple[str | None, int | None]:
    """The user's file and line of a graph-break record: its innermost frame that is not
    PyTorch's own wrapper around a compiled module (``inner`` in ``external_utils.py``,
    ``Module._call_impl``). Where the wrapper is all there is — the compiled module itself could
    not be traced (an ``nn.LSTM`` passed to ``torch.compile``) — the compiled target's code,
    as its compile record names it; PyTorch's frame only when no target is known."""
    stack = compat.graph_break_user_stack(record)
    for frame in reversed(stack):
        filename = getattr(frame, "filename", None)
        if filename is None or not compat.is_torch_internal(str(filename)):
            return filename, getattr(frame, "lineno", None)
    if target is not None and target.target.filename:
        return target.target.filename, target.target.line
    if not stack:
        return None, None
    return getattr(stack[-1], "filename", None), getattr(stack[-1], "lineno", None)


class TargetInfo:
    """What was passed to ``torch.compile``: its user-facing name and the code objects of
    the wrappers around it (decorators), which PyTorch may report as the compiled frame."""

    def __init__(self, obj: Any) -> None:
        import torch

        self.is_module = isinstance(obj, torch.nn.Module)
        fn = type(obj).forward if self.is_module else obj
        fn = compat.uncompiled_callable(fn)
        chain: list[Any] = []
        seen = 0
        current = fn
        while current is not None and seen < 32:
            chain.append(current)
            current = getattr(current, "__wrapped__", None)
            seen += 1
        innermost = chain[-1]
        self.entry_codes = frozenset(code_key(getattr(f, "__code__", None)) for f in chain if hasattr(f, "__code__"))
        # each wrapper's names for the *args/**kwargs it passes on; the function itself has none to rename
        self._wrappers = {code_key(f.__code__): packed_names(f) for f in chain[:-1] if hasattr(f, "__code__")}
        code = getattr(innermost, "__code__", None)
        if self.is_module:
            name = f"{type(obj).__name__}.forward"
        else:
            name = str(getattr(innermost, "__qualname__", None) or getattr(innermost, "__name__", None) or type(obj).__name__)
            name = name.rsplit("<locals>.", 1)[-1]  # a nested function: its own name
        try:
            params = tuple(p for p in inspect.signature(innermost).parameters if p != "self")
        except (TypeError, ValueError):
            params = ()
        self.target = CompiledTarget(
            name=name,
            filename=str(getattr(code, "co_filename", "") or ""),
            line=int(getattr(code, "co_firstlineno", 0) or 0),
            params=params,
            # the frame torch.compile enters: a module's is PyTorch's wrapper; a function's, its outermost decorator
            packed=PACKED if self.is_module else (packed_names(chain[0]) if len(chain) > 1 else None),
        )

    def names_frame(self, key: CodeKey) -> bool:
        """Whether a compiled frame is this target's entry (wrapper, decorator or itself)."""
        return bool(key[0]) and (compat.is_torch_internal(key[1]) or key in self.entry_codes)

    def packed(self, key: CodeKey) -> Packed | None:
        """The names the entry frame ``key`` gives the ``*args``/``**kwargs`` it passes on to
        the function: PyTorch's wrapper's, a decorator's own; None for the function's own frame
        (its ``*rest`` is its own parameter, not the function's)."""
        if compat.is_torch_internal(key[1]):
            return PACKED
        return self._wrappers.get(key)


def rename_source(source: str | None, params: Sequence[str], packed: Packed | None = PACKED) -> str | None:
    """``L['args'][0]`` → ``L['x']`` and ``L['kwargs']['ids']`` → ``L['ids']`` for a frame
    that is a wrapper around ``forward(self, x, ids=…)`` (``packed``: the names the wrapper
    gives its ``*args``/``**kwargs``; None: the frame is no wrapper, nothing is renamed)."""
    if source is None or packed is None:
        return source
    args, kwargs, _, _ = _packed_patterns(packed)
    if (m := args.match(source)) and int(m["i"]) < len(params):
        return f"L['{params[int(m['i'])]}']{m['rest']}"
    if m := kwargs.match(source):
        return f"L['{m['name']}']{m['rest']}"
    return source


def rename_entry_guards(guards: Sequence[EntryGuard], params: Sequence[str] | None,
                        packed: Packed | None = PACKED) -> tuple[EntryGuard, ...]:
    """An entry's recorded guards with the wrapper's sources named by the parameter, in
    their source and in their expression text."""
    if not params or packed is None:
        return tuple(guards)
    _, _, args_in_text, kwargs_in_text = _packed_patterns(packed)

    def text(t: str) -> str:
        t = args_in_text.sub(lambda m: f"L['{params[int(m['i'])]}']" if int(m["i"]) < len(params) else m[0], t)
        return kwargs_in_text.sub(lambda m: f"L['{m['name']}']", t)
    return tuple(dataclasses.replace(g, source=rename_source(g.source, params, packed), text=text(g.text))
                 for g in guards)


def parse_reasons(
    texts: Sequence[str], arguments: Mapping[str, Any] | None = None, params: Sequence[str] | None = None,
    packed: Packed | None = PACKED,
) -> tuple[GuardFailure, ...]:
    """Each rejecting entry's text → one parsed failure per failing guard."""
    out = []
    for text in texts:
        for part in split_entry_reasons(text):
            failure = parse_guard_failure(part)
            if params is not None:
                failure = dataclasses.replace(failure, source=rename_source(failure.source, params, packed))
            if arguments:
                failure = enrich_actual(failure, arguments)
            out.append(failure)
    return tuple(out)


def merge_walked(
    named: tuple[GuardFailure, ...], walked: Sequence[GuardFailure], arguments: Mapping[str, Any] | None,
    params: Sequence[str] | None, packed: Packed | None = PACKED,
) -> tuple[GuardFailure, ...]:
    """PyTorch's failures, then each failing guard the walk found that PyTorch did not name
    (per rejecting entry), marked ``found_by="compilescope"``."""
    seen = {(g.failed_entry, failure_key(g)) for g in named}
    extra = []
    for g in walked:
        if params is not None:
            g = dataclasses.replace(g, source=rename_source(g.source, params, packed))
        if arguments:
            g = enrich_actual(g, arguments)
        key = (g.failed_entry, failure_key(g))
        if key not in seen:
            seen.add(key)
            extra.append(g)
    return named + tuple(extra)


class RecordBuilder:
    """Accumulates :class:`CompileRecord`s in PyTorch's order; see the module docstring."""

    def __init__(self) -> None:
        self.records: list[CompileRecord] = []
        self.counters: Counter[str] = Counter()
        self._frames: dict[tuple[int, int], CodeKey] = {}

    def add(
        self,
        view: compat.MetricsView,
        *,
        epoch: int,
        reasons: Sequence[str] = (),
        walked: Sequence[GuardFailure] = (),
        unevaluated: Mapping[str, int] | None = None,
        arguments: Mapping[str, Any] | None = None,
        call_index: int | None = None,
        phase: str = "stream",
        target: TargetInfo | None = None,
        fallback_key: CodeKey | None = None,
        entry_guards: Sequence[EntryGuard] = (),
        entry_guards_cut: int = 0,
        fullgraph: bool | None = None,
    ) -> CompileRecord | None:
        """Add one metrics entry; returns the new frame-compile record (None for a backward,
        merged into its forward, or an entry without a compile id)."""
        cid = CompileId.parse(view.compile_id)
        if view.bad_fields:
            for name in view.bad_fields:
                self.counters[f"wrong_type:{name}"] += 1
        if cid is None:
            self.counters["metrics_without_compile_id"] += 1
            return None
        if not view.is_forward:
            self._attach_backward(cid, epoch, view)
            return None
        key: CodeKey = (view.co_name, view.co_filename, view.co_firstlineno)
        if not key[0]:
            key = self._frames.get((epoch, cid.frame)) or fallback_key or key
        else:
            self._frames.setdefault((epoch, cid.frame), key)
        named = target.target if target is not None and target.names_frame(key) else None
        params = named.params if named is not None else None
        packed = target.packed(key) if named is not None and target is not None else PACKED
        if compat.is_recompile_limit_failure(view.fail_type, view.fail_reason):
            outcome = "refused"
        elif view.fail_type:
            outcome = "failed"
        else:
            outcome = "compiled"
        record = CompileRecord(
            compile_id=cid,
            function=key[0],
            filename=key[1],
            line=key[2],
            outcome=outcome,  # type: ignore[arg-type]
            epoch=epoch,
            reasons=tuple(_strip_entry(r)[1] for r in reasons),
            rejected_by=tuple(_strip_entry(r)[0] for r in reasons),
            guard_failures=merge_walked(parse_reasons(reasons, arguments, params, packed), walked, arguments, params,
                                        packed),
            guards_unevaluated=dict(unevaluated or {}),
            compile_time_s=view.duration_s,
            phases_s=dict(view.phases_s),
            cache=dict(view.cache),
            fail_type=view.fail_type,
            fail_reason=view.fail_reason,
            call_index=call_index,
            phase=phase,
            start_time_us=view.start_time_us,
            target=named,
            entry_guards=rename_entry_guards(entry_guards, params, packed) if outcome == "compiled" else (),
            entry_guards_cut=entry_guards_cut if outcome == "compiled" else 0,
            guard_count=view.guard_count if made_entry(outcome) else None,
            guard_latency_s=view.guard_latency_us / 1e6 if made_entry(outcome) and view.guard_latency_us is not None
            else None,
            automatic_dynamic=view.automatic_dynamic if outcome == "compiled" else None,
            entries_before=view.cache_entries,
            fail_at=view.fail_user_frame if outcome == "failed" and view.fail_user_frame is not None
            and not compat.is_torch_internal(view.fail_user_frame[0]) else None,
            reached_call=compat.failure_reaches_call(view.fail_type, fullgraph, view.suppress_errors)
            if outcome == "failed" else None,
        )
        self.records.append(record)
        return record

    def _attach_backward(self, cid: CompileId, epoch: int, view: compat.MetricsView) -> None:
        for i in range(len(self.records) - 1, -1, -1):
            r = self.records[i]
            if r.compile_id == cid and r.epoch <= epoch:
                seconds = (r.backward_compile_s or 0.0) + (view.duration_s or 0.0)
                phases = dict(r.phases_s)
                phases["backward"] = seconds
                self.records[i] = dataclasses.replace(r, backward_compile_s=seconds, phases_s=phases)
                return
        self.counters["backward_without_forward"] += 1


_ENTRY = re.compile(r"^\s*(?P<entry>\d+/\d+):\s*")


def _strip_entry(text: str) -> tuple[str, str]:
    """``"0/1: tensor 'x' …"`` (first line) → (``"0/1"``, ``"tensor 'x' …"``)."""
    first = text.split("\n", 1)[0]
    m = _ENTRY.match(first)
    return (m["entry"], first[m.end():]) if m else ("", first)
