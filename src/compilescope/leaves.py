"""The tensors and plain values inside a call's arguments or outputs, by access path.

A call's argument or output is more than tensors, tuples, lists and dicts: a Hugging Face
``CausalLMOutputWithPast`` holds a ``DynamicCache`` whose ``layers[i].keys`` are the cache,
a user passes a dataclass of tensors. :func:`walk` descends, in this order, tensors (a leaf),
plain values (``None``, bool, int, float, complex, str, ``torch.dtype``/``torch.device``, an
enum member: a leaf), dicts (``['key']``), lists and tuples (``[i]``), PyTorch-registered
pytree containers (their keyed children), dataclasses (``.field``) and any other object's
instance attributes (``.name``, from ``__dict__`` and ``__slots__``). Modules, functions,
classes and the like are not descended (their contents are the program, not the call's
data); an object seen again on the same path (a cycle) is not either.

Each step is named as Dynamo names a guard's source, so ``source("L['cache']", steps)`` is
``L['cache'].layers[0].keys``, the name a guard on that tensor carries. The walk is bounded
by :data:`MAX_DEPTH` steps and :data:`MAX_LEAVES` leaves; what lies beyond is counted in
:attr:`Walk.cut`, never silently dropped.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import sys
import types
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from . import compat

MAX_DEPTH = 8
MAX_LEAVES = 4096

Step = tuple[str, Any]  # ("attr", name) or ("item", int | str)


@dataclass(frozen=True)
class Node:
    """A container or object on the way to the leaves: its type (``module.qualname``) and,
    for a list, tuple or dict, its length; for a dict, its keys in order where each is a
    plain value (Dynamo guards a dict's keys by position)."""

    type: str
    length: int | None = None
    keys: tuple[Any, ...] | None = None


@dataclass
class Walk:
    """Every leaf and node of a value, in walk order, with how many were past the bounds."""

    items: list[tuple[tuple[Step, ...], Any]] = field(default_factory=list)
    cut: int = 0

    def leaves(self) -> Iterator[tuple[tuple[Step, ...], Any]]:
        """The tensors and plain values (not the nodes)."""
        return ((p, v) for p, v in self.items if not isinstance(v, Node))

    def tensors(self) -> Iterator[tuple[tuple[Step, ...], torch.Tensor]]:
        return ((p, v) for p, v in self.items if isinstance(v, torch.Tensor))


_PLAIN = (type(None), bool, int, float, complex, str, bytes, torch.dtype, torch.device, enum.Enum)
_OPAQUE = (torch.nn.Module, types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.ModuleType,
           type, types.CodeType, types.FrameType, types.GeneratorType, property, staticmethod, classmethod)


_KINDS: dict[type, tuple[str, tuple[str, ...], str]] = {}  # type → (kind, its field or slot names, its name)


def _kind(t: type) -> tuple[str, tuple[str, ...], str]:
    """How a value of type ``t`` is walked, decided once per type: ``tensor``, ``plain``,
    ``array`` (a numpy array or scalar), ``set``, ``opaque`` (not descended), ``dict``,
    ``seq``, ``pytree``, ``dataclass`` (its fields) or ``object`` (its ``__slots__``; its
    ``__dict__`` is read per value)."""
    known = _KINDS.get(t)
    if known is not None:
        return known
    names: tuple[str, ...] = ()
    numpy = sys.modules.get("numpy")  # an array can only exist once numpy is imported
    if issubclass(t, torch.Tensor):
        kind = "tensor"
    elif numpy is not None and issubclass(t, (numpy.ndarray, numpy.generic)) and not issubclass(t, _PLAIN):
        kind = "array"
    elif issubclass(t, (set, frozenset)):
        kind = "set"
    elif issubclass(t, _PLAIN):
        kind = "plain"
    elif issubclass(t, _OPAQUE):
        kind = "opaque"
    elif issubclass(t, dict):
        kind = "dict"
    elif issubclass(t, (list, tuple)):
        kind = "seq"
    elif compat.is_pytree_node(t):
        kind = "pytree"
    elif dataclasses.is_dataclass(t):
        kind, names = "dataclass", tuple(f.name for f in dataclasses.fields(t))
    else:
        slots = [n for c in t.__mro__ for n in _slots(c) if n not in ("__dict__", "__weakref__")]
        kind, names = "object", tuple(dict.fromkeys(slots))
    known = _KINDS[t] = (kind, names, f"{t.__module__}.{t.__qualname__}")
    return known


def type_name(value: Any) -> str:
    return _kind(type(value))[2]


def is_plain(value: Any) -> bool:
    return isinstance(value, _PLAIN)


def _steps(value: Any, kind: str, names: tuple[str, ...]) -> list[tuple[Step, Any]] | None:
    if kind == "dict":
        return [(("item", k), v) for k, v in value.items()]
    if kind == "seq":
        return [(("item", i), v) for i, v in enumerate(value)]
    if kind == "pytree":
        return compat.pytree_children(value)
    if kind == "dataclass":
        return [(("attr", n), getattr(value, n, None)) for n in names]
    if kind != "object":
        return None
    attrs = getattr(value, "__dict__", None)
    if not isinstance(attrs, dict) and not names:
        return None
    out = [(("attr", k), v) for k, v in attrs.items() if isinstance(k, str)] if isinstance(attrs, dict) else []
    for n in names:
        try:
            out.append((("attr", n), getattr(value, n)))
        except AttributeError:
            continue
    return out


def children(value: Any) -> list[tuple[Step, Any]] | None:
    """The next steps into ``value``, or None when it is a leaf or is not descended."""
    kind, names, _ = _kind(type(value))
    return _steps(value, kind, names)


NOT_PLAIN = "<not a plain key>"  # a dict key that is not a plain value, by position
MAX_KEYS = 64  # a dict's keys kept by position (a state dict's are not all)


def _plain_keys(d: Any) -> tuple[Any, ...]:
    """A dict's first :data:`MAX_KEYS` keys in order, each that is not a plain value as :data:`NOT_PLAIN`."""
    out = []
    for k in d.keys():
        if len(out) >= MAX_KEYS:
            break
        out.append(k if k is None or isinstance(k, (str, int, float, bool)) else NOT_PLAIN)
    return tuple(out)


def walk(value: Any, max_depth: int = MAX_DEPTH, max_leaves: int = MAX_LEAVES, *, values: bool = False) -> Walk:
    """Every tensor, plain value and node inside ``value`` (itself included, at the empty path);
    with ``values``, each numpy array, numpy scalar and set too (outputs compared by value)."""
    out = Walk()
    items = out.items
    on_path: set[int] = set()

    def visit(v: Any, path: tuple[Step, ...]) -> None:
        if len(items) >= max_leaves:
            out.cut += 1
            return
        kind, names, name = _kind(type(v))
        if kind == "tensor" or kind == "plain" or (values and kind in ("array", "set")):
            items.append((path, v))
            return
        steps = _steps(v, kind, names)
        if steps is None:
            return
        items.append((path, Node(name, len(v) if kind in ("dict", "seq") else None,
                                 _plain_keys(v) if kind == "dict" else None)))
        if len(path) >= max_depth:
            out.cut += len(steps)
            return
        if id(v) in on_path:
            return
        on_path.add(id(v))
        try:
            for step, child in steps:
                visit(child, (*path, step))
        finally:
            on_path.discard(id(v))

    visit(value, ())
    return out


@functools.lru_cache(maxsize=8192)
def source(root: str, path: tuple[Step, ...]) -> str:
    """The path as Dynamo names a guard's source: ``L['cache']`` + ``.layers[0].keys``."""
    parts = [root]
    for kind, key in path:
        parts.append(f".{key}" if kind == "attr" else f"[{key!r}]")
    return "".join(parts)


def resolve(value: Any, path: tuple[Step, ...]) -> Any:
    """Follow ``path`` into ``value`` (instance attributes and items only); raises
    ``LookupError`` where a step does not exist."""
    for kind, key in path:
        if kind == "attr":
            if isinstance(value, torch.nn.Module):
                raise LookupError(f"a module's attribute {key!r}")
            attrs = getattr(value, "__dict__", None)
            if isinstance(attrs, dict) and key in attrs:
                value = attrs[key]
            elif dataclasses.is_dataclass(value) or any(key in _slots(c) for c in type(value).__mro__):
                try:
                    value = getattr(value, key)
                except AttributeError as exc:
                    raise LookupError(key) from exc
            else:
                raise LookupError(f"no instance attribute {key!r}")
        else:
            try:
                value = value[key]
            except (KeyError, IndexError, TypeError) as exc:
                raise LookupError(repr(key)) from exc
    return value


def _slots(cls: type) -> tuple[str, ...]:
    slots = cls.__dict__.get("__slots__", ())
    return (slots,) if isinstance(slots, str) else tuple(slots)


def map_tensors(value: Any, fn: Callable[[torch.Tensor], torch.Tensor], max_depth: int = MAX_DEPTH) -> Any:
    """``value`` with ``fn`` applied to every tensor inside it: dicts, lists and tuples are
    rebuilt; the tensors held by an object's attributes (a cache's layers) are replaced in
    place, as the object is the call's own."""
    seen: set[int] = set()

    def go(v: Any, depth: int) -> Any:
        if isinstance(v, torch.Tensor):
            return fn(v)
        if isinstance(v, _PLAIN) or isinstance(v, _OPAQUE) or depth > max_depth or id(v) in seen:
            return v
        if isinstance(v, dict):
            return type(v)((k, go(x, depth + 1)) for k, x in v.items()) if type(v) is dict else _in_place_items(v, depth)
        if isinstance(v, tuple) and hasattr(v, "_fields"):
            return type(v)(*(go(x, depth + 1) for x in v))
        if isinstance(v, (list, tuple)):
            return type(v)(go(x, depth + 1) for x in v)
        kind, names, _ = _kind(type(v))
        steps = _steps(v, kind, names) if kind in ("dataclass", "object") else None
        if not steps:
            return v
        seen.add(id(v))
        for (_, name), child in steps:
            new = go(child, depth + 1)
            if new is not child:
                try:
                    object.__setattr__(v, name, new)
                except (AttributeError, TypeError):
                    pass
        return v

    def _in_place_items(d: dict, depth: int) -> dict:
        for k in list(d):
            d[k] = go(d[k], depth + 1)
        return d

    return go(value, 0)


def input_state(named: Mapping[str, Any]) -> dict[str, Any]:
    """What a call's arguments hold, by path (``cache.layers[0].keys``): each tensor's
    identity, sizes, dtype and version counter (bumped by an in-place write), each plain
    value, each container's type and length — enough to tell whether a call changed them."""
    out: dict[str, Any] = {}
    for name, value in named.items():
        for steps, v in walk(value).items:
            if isinstance(v, torch.Tensor):
                out[source(name, steps)] = ("tensor", id(v), tuple(v.shape), v.dtype, v._version)
            else:
                out[source(name, steps)] = v
    return out


MAX_CHANGED = 16


def changed_inputs(before: Mapping[str, Any], after: Mapping[str, Any]) -> tuple[str, ...]:
    """The paths whose contents a call changed (a tensor replaced, resized or written in
    place, a value set, an item added or removed), at most :data:`MAX_CHANGED`."""
    out = []
    for path in dict.fromkeys([*before, *after]):
        a, b = before.get(path, _MISSING), after.get(path, _MISSING)
        try:
            same = a is b or (type(a) is type(b) and bool(a == b))
        except Exception:
            same = False
        if not same:
            out.append(path)
            if len(out) >= MAX_CHANGED:
                break
    return tuple(out)


_MISSING = object()
