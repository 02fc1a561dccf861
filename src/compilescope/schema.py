"""The versioned results file: encode a :class:`RunResult` to JSON data and back.

Schema history (``schema_version``):
  1 — first release: run → trials → raw calls, compile events with parsed guard failures,
      graph breaks, interleaved steady-state samples and numerics checks.

The loader refuses versions it does not know rather than guessing.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from functools import cache
from pathlib import Path
from typing import Any, TypeVar, Union, get_args, get_origin

from .errors import ResultsError
from .model import RunResult

SCHEMA_VERSION = 1
KNOWN_VERSIONS = frozenset({1})

T = TypeVar("T")


def to_data(obj: Any) -> Any:
    """Dataclasses → dicts (field order kept), tuples → lists; everything else as is."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_data(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, (list, tuple)):
        return [to_data(v) for v in obj]
    if isinstance(obj, dict):
        return {str(k): to_data(v) for k, v in obj.items()}
    return obj


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def from_data(tp: Any, data: Any) -> Any:
    """Rebuild a value of type ``tp`` (dataclass, tuple[X, ...], dict[str, X], X | None…)."""
    if data is None:
        return None
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(data, dict):
            raise ResultsError(f"expected an object for {tp.__name__}, got {type(data).__name__}")
        hints = _hints(tp)
        kwargs = {}
        for f in dataclasses.fields(tp):
            if f.name in data:
                kwargs[f.name] = from_data(hints[f.name], data[f.name])
        return tp(**kwargs)
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return from_data(args[0], data)
        return data  # a union of scalars: JSON already holds the right value
    if origin is tuple:
        (item, *_rest) = get_args(tp)
        return tuple(from_data(item, v) for v in data)
    if origin is list:
        (item,) = get_args(tp)
        return [from_data(item, v) for v in data]
    if origin is dict:
        _, value = get_args(tp)
        return {k: from_data(value, v) for k, v in data.items()}
    if origin is typing.Literal:
        return data
    if tp is float and isinstance(data, int):
        return float(data)
    return data


def dumps(result: RunResult) -> str:
    data = to_data(dataclasses.replace(result, schema_version=SCHEMA_VERSION))
    return json.dumps(data, indent=1)


def loads(text: str, *, origin: str = "<string>") -> RunResult:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ResultsError(f"{origin} is not JSON: {exc.msg} at line {exc.lineno}") from None
    if not isinstance(data, dict) or "schema_version" not in data:
        raise ResultsError(f"{origin} is not a compilescope results file (no schema_version)")
    if data.get("kind") == "probe":
        raise ResultsError(f"{origin} is a probe result; `compilescope report` reads the results of run and demo")
    version = data["schema_version"]
    if version not in KNOWN_VERSIONS:
        known = ", ".join(str(v) for v in sorted(KNOWN_VERSIONS))
        raise ResultsError(
            f"{origin} has schema_version {version!r}; this compilescope reads {known} — upgrade compilescope"
        )
    try:
        return typing.cast(RunResult, from_data(RunResult, data))
    except (TypeError, ValueError, KeyError) as exc:
        raise ResultsError(f"{origin} does not match schema {version}: {exc}") from None


def load(path: str | Path) -> RunResult:
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise ResultsError(f"cannot read {p}: {exc.strerror}") from None
    return loads(text, origin=str(p))
