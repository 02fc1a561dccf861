"""A new cache entry's guards on its inputs, as :class:`~compilescope.model.EntryGuard` records.

Read once per compile (never on a call that hits) from the leaves
:func:`compilescope.compat.entry_leaves` returns: the ``TENSOR_MATCH`` of each input tensor
(static sizes, ``None`` where dynamic, with the sizes it was compiled for), each scalar
input's ``EQUALS_MATCH`` and the shape environment's relations over the inputs' sizes and
strides. Guards on ``L['self']`` (parameters, modules), globals and the frame's ambient
state are left out: a stream of requests to the same program does not change them.
Bounded: at most :data:`MAX_LEAVES` leaves read, :data:`MAX_ENTRY_GUARDS` guards kept an
entry and :data:`MAX_GUARD_TEXT` characters a text; what is cut is counted.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .. import compat
from ..model import EntryGuard
from ..torchtext import parse_guard_failure, split_reason, tensor_match_fields, _literal

MAX_ENTRY_GUARDS = 200
MAX_LEAVES = 5_000  # leaves read (most are type and identity checks, not kept)
MAX_GUARD_TEXT = 400
_INPUT_SOURCE = re.compile(r"^L\[(?P<q>['\"])(?P<name>[^'\"]+)(?P=q)\](?P<rest>(?:\[\d+\]|\[(?P<q2>['\"])[^'\"]+(?P=q2)\])*)$")
_ITEM = re.compile(r"\[(?:(?P<i>\d+)|(['\"])(?P<k>[^'\"]+)\2)\]")
_SIZE_OF = re.compile(r"\.(?:size|stride)\(\)\[\d+\]")
_NOT_INPUT = re.compile(r"G\[|L\[(['\"])self\1\]|___")
_EQUALS = re.compile(r"^(?P<src>.+?) == (?P<exp>.+)$")


def is_input_source(source: str) -> bool:
    """``L['x']``, ``L['args'][0]``, ``L['kwargs']['ids']`` — not ``L['self']…`` nor globals."""
    m = _INPUT_SOURCE.match(source)
    return m is not None and m["name"] != "self"


def _value(source: str, f_locals: Mapping[str, Any]) -> Any:
    m = _INPUT_SOURCE.match(source)
    if m is None:
        return None
    value: Any = f_locals.get(m["name"])
    for item in _ITEM.finditer(m["rest"]):
        try:
            value = value[int(item["i"])] if item["i"] is not None else value[item["k"]]
        except Exception:
            return None
    return value


def _cut(text: str) -> str:
    return text if len(text) <= MAX_GUARD_TEXT else text[: MAX_GUARD_TEXT - 1] + "…"


def _from_leaf(leaf: compat.EntryLeaf, f_locals: Mapping[str, Any]) -> list[EntryGuard]:
    if leaf.kind == "EPILOGUE":
        out = []
        for part in leaf.parts:
            g = parse_guard_failure(part)
            if _SIZE_OF.search(g.reason) and not _NOT_INPUT.search(g.reason):
                out.append(EntryGuard(g.kind, g.source, g.dim, None, _cut(g.reason)))
        return out
    if not leaf.parts:
        return []
    _, text = split_reason(leaf.parts[0])
    if leaf.kind == "TENSOR_MATCH":
        fields = tensor_match_fields(leaf.parts[0])
        if fields is None:
            return [EntryGuard("other", leaf.source, text=_cut(text))]
        dtype, sizes = fields
        value = _value(leaf.source, f_locals)
        example = tuple(int(s) for s in value.shape) if hasattr(value, "shape") else ()
        return [EntryGuard("tensor", leaf.source, sizes=tuple(sizes), example=example, dtype=dtype)]
    if leaf.kind == "EQUALS_MATCH" and (m := _EQUALS.match(text)):
        return [EntryGuard("value", leaf.source, None, _literal(m["exp"]), _cut(text))]
    return []  # a type, identity or marking check: a stream of the same program does not change it


def entry_guards(guard_manager: Any, f_locals: Mapping[str, Any]) -> tuple[tuple[EntryGuard, ...], int]:
    """The recorded guards of one new cache entry and how many were cut."""
    leaves, cut = compat.entry_leaves(guard_manager, lambda s: not is_input_source(s), MAX_LEAVES)
    out: list[EntryGuard] = []
    for leaf in leaves:
        out += [g for g in _from_leaf(leaf, f_locals) if g not in out]
    cut += max(0, len(out) - MAX_ENTRY_GUARDS)
    return tuple(out[:MAX_ENTRY_GUARDS]), cut
