"""A new cache entry's guards on its inputs, as :class:`~compilescope.model.EntryGuard` records.

Read once per compile (never on a call that hits) from the leaves
:func:`compilescope.compat.entry_leaves` returns, on the frame's inputs and on what they hold
(a ``DynamicCache`` argument's ``L['cache'].layers[0].keys``): the ``TENSOR_MATCH`` of each
tensor (static sizes, ``None`` where dynamic, with the sizes it was compiled for), each
plain value's ``EQUALS_MATCH``/``TRUE_MATCH``/``FALSE_MATCH``/``NONE_MATCH`` (and an
``ID_MATCH`` on ``None``, ``True`` or ``False``), each object's ``TYPE_MATCH`` (its type's
qualified name, read from the input it was compiled for), each list's ``LENGTH_CHECK`` and
each dict's length (its manager's own check) and keys by position
(``list(dict.keys(L['feats']))[1] == 'fx'``: Dynamo guards a dict's keys in order), and the
shape environment's relations over the inputs' sizes and strides.

An input is a parameter of the compiled frame (``L['x']``; a wrapper's ``L['args'][0]``,
``L['kwargs']['ids']``) and what lies inside it through items and instance attributes. Guards
on ``L['self']``, on a module met on the way (parameters, submodules), on a closure's cells,
on globals, on types (``type(L['x'])…``) and on the frame's ambient state are left out: a
stream of requests to the same program does not change them; so are identity checks of other
objects. Bounded: at most :data:`MAX_LEAVES` leaves read, :data:`MAX_ENTRY_GUARDS` guards kept
an entry and :data:`MAX_GUARD_TEXT` characters a text; what is cut is counted.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any

import torch

from .. import compat
from ..leaves import resolve, type_name
from ..torchtext import parse_source
from ..model import EntryGuard
from ..torchtext import parse_guard_failure, split_reason, tensor_match_fields, _literal

MAX_ENTRY_GUARDS = 1000
MAX_LEAVES = 20_000  # leaves read (most are type and identity checks, not kept)
MAX_GUARD_TEXT = 400
_SIZE_OF = re.compile(r"\.(?:size|stride)\(\)\[\d+\]")
_NOT_INPUT = re.compile(r"G\[|L\[(['\"])self\1\]|___")
_EQUALS = re.compile(r"^(?P<src>.+?) == (?P<exp>.+)$")
_IS_NONE = re.compile(r"^(?P<src>.+?) is None$")
_SOURCE = re.compile(r"L\[['\"][^'\"]+['\"]\](?:\[[^\]]+\]|\.[A-Za-z_]\w*)*")
_MISSING = object()
_DICT_KEY = re.compile(r"^list\(dict\.keys\((?P<src>.+)\)\)\[(?P<i>\d+)\]$")  # a dict's key by position


class _Inputs:
    """Which guard sources are the frame's inputs, and their values when the entry was made."""

    def __init__(self, f_locals: Mapping[str, Any], params: Collection[str] | None, packed: str | None = None) -> None:
        self.f_locals, self.params = f_locals, params
        self.packed = f"L['{packed}']" if packed else None  # a wrapper's ``**kwargs``: requests name what is in it
        self._cache: dict[str, Any] = {}

    def value(self, source: str) -> Any:
        """The input's value at ``source`` (``_MISSING``: not an input, or not found); a dict
        key by its position (``list(dict.keys(L['feats']))[1]``, as Dynamo names it) too."""
        if source in self._cache:
            return self._cache[source]
        if (key := _DICT_KEY.match(source)) is not None:
            held = self.value(key["src"])
            keys = list(held.keys()) if isinstance(held, dict) else []
            found = keys[int(key["i"])] if int(key["i"]) < len(keys) else _MISSING
            self._cache[source] = found
            return found
        parsed = parse_source(source)
        found: Any = _MISSING
        if parsed is not None and parsed[0] != "self" and (self.params is None or parsed[0] in self.params):
            name, steps = parsed
            value = self.f_locals.get(name, _MISSING)
            try:
                for i in range(len(steps) + 1):
                    if isinstance(value, torch.nn.Module) or value is _MISSING:
                        value = _MISSING
                        break
                    if i < len(steps):
                        value = resolve(value, steps[i:i + 1])
            except LookupError:
                value = _MISSING
            found = value
        self._cache[source] = found
        return found

    def skip(self, source: str) -> bool:
        return self.value(source) is _MISSING


def is_input_source(source: str) -> bool:
    """``L['x']``, ``L['args'][0]``, ``L['kwargs']['ids']``, ``L['cache'].layers[0].keys`` —
    not ``L['self']…``, globals, types or dunders (by the text alone)."""
    parsed = parse_source(source)
    return parsed is not None and parsed[0] != "self"


def _cut(text: str) -> str:
    return text if len(text) <= MAX_GUARD_TEXT else text[: MAX_GUARD_TEXT - 1] + "…"


def _from_leaf(leaf: compat.EntryLeaf, inputs: _Inputs) -> list[EntryGuard]:
    if leaf.kind == "DICT_LENGTH":
        return _dict_length(leaf, inputs)
    if (key := _DICT_KEY.match(leaf.source)) is not None and key["src"] == inputs.packed:
        return []  # the order a wrapper's keyword arguments came in: requests name them by parameter
    if leaf.kind == "EPILOGUE":
        out = []
        for part in leaf.parts:
            g = parse_guard_failure(part)
            if _NOT_INPUT.search(g.reason):
                continue
            if _SIZE_OF.search(g.reason):
                out.append(EntryGuard(g.kind, g.source, g.dim, None, _cut(g.reason)))
            elif g.kind == "value" and g.source is not None and _number(inputs.value(g.source)):
                # a Python number made symbolic (automatic dynamic, dynamic=True), then specialised: ``L['n'] == 2``
                out.append(EntryGuard("value", g.source, None, g.expected, _cut(g.reason)))
            elif " is " not in g.reason and (named := _SOURCE.findall(g.reason)) and all(
                    _number(inputs.value(s)) for s in named):
                out.append(EntryGuard("scalar", None, None, None, _cut(g.reason)))  # ``2 <= L['n']``
        return out
    if not leaf.parts:
        return []
    _, text = split_reason(leaf.parts[0])
    if leaf.kind == "TENSOR_MATCH":
        fields = tensor_match_fields(leaf.parts[0])
        if fields is None:
            return [EntryGuard("other", leaf.source, text=_cut(text))]
        dtype, sizes = fields
        value = inputs.value(leaf.source)
        example = tuple(int(s) for s in value.shape) if hasattr(value, "shape") else ()
        return [EntryGuard("tensor", leaf.source, sizes=tuple(sizes), example=example, dtype=dtype)]
    if leaf.kind in ("EQUALS_MATCH", "TRUE_MATCH", "FALSE_MATCH") and (m := _EQUALS.match(text)):
        return [EntryGuard("value", leaf.source, None, _literal(m["exp"]), _cut(text))]
    if leaf.kind == "NONE_MATCH" and _IS_NONE.match(text):
        return [EntryGuard("value", leaf.source, None, None, _cut(text))]
    value = inputs.value(leaf.source)
    if leaf.kind == "ID_MATCH" and (value is None or isinstance(value, bool)):
        return [EntryGuard("value", leaf.source, None, value, f"{leaf.source} is {value!r}")]
    if leaf.kind == "TYPE_MATCH" and value is not _MISSING:
        return [EntryGuard("type", leaf.source, None, type_name(value), f"type({leaf.source}) is {type_name(value)}")]
    if leaf.kind == "LENGTH_CHECK" and isinstance(value, (list, tuple, dict)):
        return [EntryGuard("length", leaf.source, None, len(value), _cut(text))]
    return []  # an identity or marking check: a stream of the same program does not change it


def _dict_length(leaf: compat.EntryLeaf, inputs: _Inputs) -> list[EntryGuard]:
    """A dict's manager checks its length itself (no leaf of its own): the length it was compiled
    for — not a wrapper's ``**kwargs``, which requests name by the function's parameters."""
    if leaf.source == inputs.packed:
        return []
    value = inputs.value(leaf.source)
    if isinstance(value, dict):
        return [EntryGuard("length", leaf.source, None, len(value), f"len({leaf.source}) == {len(value)}")]
    return []  # a dict that is no input's (a module's buffers): not recorded


def _number(value: Any) -> bool:
    """A Python number input (what a symbolic int or float guard is about)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _varkw(code: Any) -> str | None:
    """The name of a code object's ``**kwargs`` parameter, if it has one."""
    try:
        if not code.co_flags & 0x08:
            return None
        return code.co_varnames[code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & 0x04)]
    except (AttributeError, IndexError):
        return None


def frame_params(code: Any) -> tuple[str, ...] | None:
    """A code object's parameter names (``*args`` and ``**kwargs`` included); None when unknown."""
    try:
        n = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)
        return tuple(code.co_varnames[:n])
    except AttributeError:
        return None


def entry_guards(guard_manager: Any, f_locals: Mapping[str, Any], code: Any = None) -> tuple[tuple[EntryGuard, ...], int]:
    """The recorded guards of one new cache entry and how many were cut (``code``: the
    compiled frame's code, whose parameters are its inputs; without it every local is)."""
    inputs = _Inputs(f_locals, frame_params(code) if code is not None else None, _varkw(code))
    leaves, cut = compat.entry_leaves(guard_manager, inputs.skip, MAX_LEAVES)
    out: list[EntryGuard] = []
    seen: set[EntryGuard] = set()
    for leaf in leaves:
        for g in _from_leaf(leaf, inputs):
            if g not in seen:
                seen.add(g)
                out.append(g)
    cut += max(0, len(out) - MAX_ENTRY_GUARDS)
    return tuple(out[:MAX_ENTRY_GUARDS]), cut
