"""The versioned results files: a run's or a probe's records as JSON data, and back.

Schema history (``schema_version``):
  1 — first release: run → trials → raw calls, compile events with parsed guard failures,
      graph breaks, interleaved steady-state samples and numerics checks. Probe JSON had no
      loader.
  2 — one record family: ``CompileRecord`` (typed compile id ``"0/1"`` plus its reset
      ``epoch``, outcome compiled/failed/refused, backward compile time attached,
      the compiled target's name) and ``GraphBreak`` for runs, probes and traces; calls
      carry the compiled graphs they ran; ``kind`` is ``"run"`` or ``"probe"``; trial
      specs carry a ``variant``; a run file may hold a derived ``summary`` (ignored on load).

The loader refuses versions it does not know rather than guessing, and checks every field's
type: a file that does not match gives one :class:`ResultsError` naming the field.
"""

from __future__ import annotations

import dataclasses
import json
import math
import types
import typing
from functools import cache
from pathlib import Path
from typing import Any, Union, get_args, get_origin

from .errors import ResultsError
from .model import CompileId, ProbeResult, RunResult

SCHEMA_VERSION = 2
KNOWN_VERSIONS = frozenset({2})
KINDS: dict[str, type] = {"run": RunResult, "probe": ProbeResult}
MAX_DEPTH = 64


def to_data(obj: Any) -> Any:
    """Dataclasses → dicts (field order kept), tuples → lists, compile ids → ``"0/1"``."""
    if isinstance(obj, CompileId):
        return str(obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_data(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, (list, tuple)):
        return [to_data(v) for v in obj]
    if isinstance(obj, dict):
        return {str(k): to_data(v) for k, v in obj.items()}
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _fail(path: str, want: str, data: Any) -> ResultsError:
    return ResultsError(f"field {path or '<root>'}: expected {want}, got {type(data).__name__}")


def from_data(tp: Any, data: Any, path: str = "", depth: int = 0) -> Any:
    """Rebuild a value of type ``tp`` (dataclass, tuple[X, ...], dict[str, X], X | None…),
    checking each value's type; raises :class:`ResultsError` naming the first bad field."""
    if depth > MAX_DEPTH:
        raise ResultsError(f"field {path}: nested too deeply")
    if tp is Any:
        return data
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        args = get_args(tp)
        if data is None and type(None) in args:
            return None
        non_none = [a for a in args if a is not type(None)]
        if len(non_none) == 1:
            return from_data(non_none[0], data, path, depth)
        if isinstance(data, (int, float, str, bool)):
            return data  # a union of scalars: JSON already holds the right value
        raise _fail(path, "a scalar", data)
    if tp is CompileId:
        cid = CompileId.parse(data)
        if cid is None:
            raise ResultsError(f"field {path}: expected a compile id like \"0/1\", got {str(data)[:40]!r}")
        return cid
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(data, dict):
            raise _fail(path, f"an object ({tp.__name__})", data)
        hints = _hints(tp)
        kwargs = {}
        for f in dataclasses.fields(tp):
            if f.name in data:
                kwargs[f.name] = from_data(hints[f.name], data[f.name], f"{path}.{f.name}".lstrip("."), depth + 1)
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ResultsError(f"field {path}.{f.name}: missing".replace(" .", " "))
        try:
            return tp(**kwargs)
        except (TypeError, ValueError) as exc:
            raise ResultsError(f"field {path or tp.__name__}: {exc}") from None
    if origin is tuple or origin is list:
        if not isinstance(data, list):
            raise _fail(path, "a list", data)
        (item, *_rest) = get_args(tp)
        items = [from_data(item, v, f"{path}[{i}]", depth + 1) for i, v in enumerate(data)]
        return tuple(items) if origin is tuple else items
    if origin is dict:
        if not isinstance(data, dict):
            raise _fail(path, "an object", data)
        _, value = get_args(tp)
        return {str(k): from_data(value, v, f"{path}[{k!r}]", depth + 1) for k, v in data.items()}
    if origin is typing.Literal:
        if data not in get_args(tp):
            raise ResultsError(f"field {path}: {str(data)[:40]!r} is not one of {', '.join(map(str, get_args(tp)))}")
        return data
    if tp is float:
        if isinstance(data, bool) or not isinstance(data, (int, float)):
            raise _fail(path, "a number", data)
        return float(data)
    if tp is int:
        if isinstance(data, bool) or not isinstance(data, int):
            raise _fail(path, "an integer", data)
        return data
    if tp is bool:
        if not isinstance(data, bool):
            raise _fail(path, "true or false", data)
        return data
    if tp is str:
        if not isinstance(data, str):
            raise _fail(path, "a string", data)
        return data
    return data


def encode(result: RunResult | ProbeResult, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    data = to_data(dataclasses.replace(result, schema_version=SCHEMA_VERSION))
    if extra:
        data.update(extra)
    return typing.cast(dict[str, Any], data)


def dumps(result: RunResult | ProbeResult, extra: dict[str, Any] | None = None) -> str:
    return json.dumps(encode(result, extra), indent=1, allow_nan=False)


def decode(data: Any, *, origin: str = "<data>") -> RunResult | ProbeResult:
    if not isinstance(data, dict) or "schema_version" not in data:
        raise ResultsError(f"{origin} is not a compilescope results file (no schema_version)")
    version = data["schema_version"]
    if version not in KNOWN_VERSIONS or isinstance(version, bool):
        known = ", ".join(str(v) for v in sorted(KNOWN_VERSIONS))
        hint = "re-run to write the current schema" if version == 1 else "upgrade compilescope"
        shown = version if isinstance(version, int) else repr(str(version)[:20])
        raise ResultsError(f"{origin} has schema_version {shown}; this compilescope reads {known} — {hint}")
    kind = data.get("kind", "run")
    if not isinstance(kind, str) or kind not in KINDS:
        raise ResultsError(f"{origin} has an unknown kind {str(kind)[:20]!r} (run or probe)")
    if kind == "probe" and "graph_break_occurrences" in data:
        data = {**data, "graph_breaks": data["graph_break_occurrences"]}
    try:
        return typing.cast("RunResult | ProbeResult", from_data(KINDS[kind], data))
    except ResultsError as exc:
        raise ResultsError(f"{origin} does not match schema {version}: {exc}") from None
    except RecursionError:
        raise ResultsError(f"{origin} is nested too deeply") from None


def loads(text: str | bytes, *, origin: str = "<string>") -> RunResult | ProbeResult:
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise ResultsError(f"{origin} is not a text file (not UTF-8)") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ResultsError(f"{origin} is not JSON: {exc.msg} at line {exc.lineno}") from None
    except RecursionError:
        raise ResultsError(f"{origin} is nested too deeply") from None
    except ValueError as exc:  # e.g. an integer too long to convert
        raise ResultsError(f"{origin} is not readable JSON: {str(exc)[:80]}") from None
    return decode(data, origin=origin)


def load(path: str | Path) -> RunResult | ProbeResult:
    """Read a results file written by ``run``, ``demo`` or ``probe``."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise ResultsError(f"cannot read {p}: {exc.strerror}") from None
    except ValueError as exc:  # e.g. a NUL byte in the path
        raise ResultsError(f"cannot read {str(path)!r}: {exc}") from None
    return loads(raw, origin=str(p))
