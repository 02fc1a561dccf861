"""Parse PyTorch's guard-failure text into :class:`GuardFailure` records.

The texts are those of ``torch._dynamo.guard_failures`` / ``TORCH_LOGS=recompiles_verbose``
on torch 2.13, e.g.::

    0/0: tensor 'x' size mismatch at index 0. expected 16, actual 32
    0/1: 2 <= x.size()[0]  # def f(x): ...  # file.py:13 in f (...)
    0/0: G['FLAG'] == True    # return x + 1 if FLAG else x - 1  # file.py:18 in g
    0/0: GLOBAL_STATE changed: grad_mode

Text that matches no known form is kept whole with kind ``other`` — never dropped.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..model import GuardFailure, Scalar

_PREFIX = re.compile(r"^\s*(?P<entry>\d+/\d+):\s*(?P<rest>.*)$", re.S)
# The tensor's name may itself hold quotes: tensor 'kwargs['input_ids']' size mismatch …
_TENSOR = r"tensor '(?P<name>.+?)'(?= (?:size|stride|rank|dtype|device|requires_grad|dispatch|\w+ mismatch))"
_SIZE_STRIDE = re.compile(
    _TENSOR + r" (?P<kind>size|stride) mismatch at index (?P<dim>\d+)\. expected (?P<exp>[^,]+), actual (?P<act>.+)$"
)
_RANK = re.compile(_TENSOR + r" rank mismatch\. expected (?P<exp>\d+), actual (?P<act>\d+)$")
_DTYPE = re.compile(_TENSOR + r" dtype mismatch\. expected (?P<exp>\S+), actual (?P<act>\S+)$")
_DEVICE = re.compile(_TENSOR + r" device mismatch\. expected (?P<exp>.+), actual (?P<act>.+)$")
_REQUIRES_GRAD = re.compile(_TENSOR + r" requires_grad mismatch\. expected requires_grad=(?P<exp>[01])")
_TENSOR_OTHER = re.compile(r"tensor '(?P<name>.+?)' (?P<what>.+)$")
_GRAD_MODE = re.compile(r"GLOBAL_STATE changed:.*grad_mode")
# A symbolic-shape guard: "2 <= x.size()[0]", "4 <= x.size()[0] <= 64", "x.size()[0] == 16".
_SYM_SIZE = re.compile(r"(?P<name>[A-Za-z_][\w\[\]'\".]*)\.(?P<kind>size|stride)\(\)\[(?P<dim>\d+)\]")
_LEN = re.compile(r"^len\((?P<src>[^)]+)\)\s*==\s*(?P<exp>\d+)$")
_DICT_KEYS = re.compile(r"^list\(dict\.keys\((?P<src>[^)]+)\)\)\[(?P<idx>\d+)\]\s*==\s*(?P<exp>.+)$")
_GLOBAL = re.compile(r"^G\[(?P<q>['\"])(?P<name>[^'\"]+)(?P=q)\](?P<attr>\S*)\s*==\s*(?P<exp>.+)$")
_VALUE = re.compile(r"^(?P<src>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*|\[[^\]]+\])*)\s*==\s*(?P<exp>.+)$")


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


def split_reason(text: str) -> tuple[str | None, str]:
    """``"0/1: tensor 'x' ..."`` → (``"0/1"``, ``"tensor 'x' ..."``), with the first line only
    and any trailing ``  # source`` comment cut off."""
    m = _PREFIX.match(text)
    entry, rest = (m.group("entry"), m.group("rest")) if m else (None, text)
    first = rest.split("\n", 1)[0]
    first = first.split("  #", 1)[0].split(" #", 1)[0] if "#" in first else first
    return entry, first.strip()


def local_source(name: str) -> str:
    """PyTorch names locals ``x`` in tensor messages and ``L['x']`` in sources; use the latter."""
    if name.startswith(("L[", "G[")):
        return name
    root, sep, tail = name.partition(".")
    bracket = root.find("[")
    if bracket > 0:
        root, tail, sep = root[:bracket], root[bracket:] + sep + tail, ""
    return f"L['{root}']" + (sep + tail if sep else tail)


def _literal(text: str) -> Scalar:
    t = text.strip()
    if t in ("True", "False"):
        return t == "True"
    if t == "None":
        return None
    try:
        return int(t)
    except ValueError:
        pass
    try:
        return float(t)
    except ValueError:
        pass
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "'\"":
        return t[1:-1]
    return t


def parse_guard_failure(text: str) -> GuardFailure:
    """Parse one reason (with or without its ``0/0:`` prefix)."""
    entry, reason = split_reason(text)

    def make(kind: str, **kw: Any) -> GuardFailure:
        return GuardFailure(reason=reason, failed_entry=entry, kind=kind, **kw)

    if m := _SIZE_STRIDE.match(reason):
        return make(
            m["kind"],
            source=local_source(m["name"]),
            dim=int(m["dim"]),
            expected=_literal(m["exp"]),
            actual=_literal(m["act"]),
        )
    if m := _RANK.match(reason):
        return make("rank", source=local_source(m["name"]), expected=int(m["exp"]), actual=int(m["act"]))
    if m := _DTYPE.match(reason):
        return make("dtype", source=local_source(m["name"]), expected=m["exp"], actual=m["act"])
    if m := _DEVICE.match(reason):
        return make("device", source=local_source(m["name"]), expected=m["exp"].strip(), actual=m["act"].strip())
    if m := _REQUIRES_GRAD.match(reason):
        expected = m["exp"] == "1"
        return make("requires_grad", source=local_source(m["name"]), expected=expected, actual=not expected)
    if m := _TENSOR_OTHER.match(reason):
        return make("other", source=local_source(m["name"]))
    if _GRAD_MODE.search(reason):
        return make("grad_mode")
    if m := _SYM_SIZE.search(reason):
        return make(m["kind"], source=local_source(m["name"]), dim=int(m["dim"]), expected=reason)
    if m := _LEN.match(reason):
        return make("length", source=local_source(m["src"]), expected=int(m["exp"]))
    if m := _DICT_KEYS.match(reason):
        return make("dict_keys", source=local_source(m["src"]), dim=int(m["idx"]), expected=_literal(m["exp"]))
    if m := _GLOBAL.match(reason):
        source = f"G['{m['name']}']{m['attr']}"
        return make("global", source=source, expected=_literal(m["exp"]))
    if m := _VALUE.match(reason):
        kind = "module_attribute" if "." in m["src"] else "value"
        return make(kind, source=local_source(m["src"]), expected=_literal(m["exp"]))
    return make("other")


def enrich_actual(failure: GuardFailure, arguments: Mapping[str, Any]) -> GuardFailure:
    """Fill ``actual`` from the call's own arguments when PyTorch's text leaves it out
    (symbolic size guards such as ``2 <= x.size()[0]``, and Python-value guards)."""
    import dataclasses

    if failure.actual is not None or failure.source is None:
        return failure
    m = re.fullmatch(r"L\['(?P<name>[^']+)'\](?P<attr>(?:\.\w+)*)", failure.source)
    if not m or m["name"] not in arguments:
        return failure
    value = arguments[m["name"]]
    for attr in filter(None, m["attr"].split(".")):
        value = getattr(value, attr, None)
    actual: Scalar = None
    if failure.kind in ("size", "stride") and failure.dim is not None and hasattr(value, failure.kind):
        try:
            actual = int(getattr(value, failure.kind)(failure.dim))
        except (IndexError, RuntimeError):
            return failure
    elif failure.kind == "length" and hasattr(value, "__len__"):
        actual = len(value)
    elif failure.kind in ("value", "module_attribute") and isinstance(value, (bool, int, float, str)):
        actual = value
    else:
        return failure
    return dataclasses.replace(failure, actual=actual)
