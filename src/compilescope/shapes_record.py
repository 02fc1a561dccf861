"""Record the shapes a program's compiled functions see, as replayable streams.

``compilescope.watch(record_shapes="shapes.jsonl")`` writes, per call of each compiled
function (hit or not), one JSON line in the ``@shapes.jsonl`` stream format that ``run``,
``advise``, ``sweep`` and ``forecast`` read::

    {"shape": {"x.0": 4, "x.1": 32}, "dtypes": {"x": "float32"}, "scalars": {"n": 3}}

``shape`` holds the tensor inputs' sizes (``x.0`` = dim 0 of input ``x``), ``dtypes`` their
dtypes, ``scalars`` the Python scalar arguments (``other`` names the type of anything
else). Keyword arguments are named as the function's parameters. One function writes the
given path; when several compiled functions are called, each gets its own file,
``shapes.<function>.jsonl``. The last line of a file, written when the watch ends, says what
was recorded and what was dropped::

    {"compilescope": {"record": "shapes", "function": "f", "calls": 1000, "written": 100, ...}}

Recording is bounded: ``sample`` (a rate in (0, 1]: every call at 1, one call in ten at 0.1,
spread evenly) and ``max_bytes`` per file; calls left out are counted, never silently lost.
The per-call cost is a look at the call's arguments; lines are formatted once per distinct
signature and written in batches.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import compat
from .errors import OptionError
from .paths import check_output
from .stream import META_KEY

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
FLUSH_EVERY = 512
_ONE = 1 << 20


@dataclass(frozen=True)
class RecordedFile:
    """What one compiled function's recording holds."""

    function: str
    path: str
    calls: int  # calls of the function seen while sampled in
    written: int  # lines written
    dropped_by_size: int  # sampled calls not written: the file reached max_bytes


@dataclass(frozen=True)
class RecordSummary:
    files: tuple[RecordedFile, ...]
    sample: float
    sampled_out: int  # calls of compiled functions that sampling left out (all functions)
    errors: int  # calls whose arguments could not be read (never the call's own failure)


def _item(value: Any, tensor: type) -> Any:
    if isinstance(value, tensor):
        return (value.shape, value.dtype)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return ("seq", type(value).__name__, tuple(_item(v, tensor) for v in value))
    if isinstance(value, dict):
        return ("map", tuple((str(k), _item(v, tensor)) for k, v in value.items()))
    return ("other", type(value).__qualname__)


def _flatten(name: str, item: Any, line: dict[str, dict[str, Any]]) -> None:
    if isinstance(item, tuple) and len(item) == 2 and type(item[0]).__name__ == "Size":
        shape, dtype = item
        for d, size in enumerate(shape):
            line["shape"][f"{name}.{d}"] = int(size)
        line["dtypes"][name] = str(dtype).removeprefix("torch.")
    elif isinstance(item, tuple) and item and item[0] == "seq":
        for i, v in enumerate(item[2]):
            _flatten(f"{name}[{i}]", v, line)
    elif isinstance(item, tuple) and item and item[0] == "map":
        for k, v in item[1]:
            _flatten(f"{name}[{k!r}]", v, line)
    elif isinstance(item, tuple) and item and item[0] == "other":
        line["other"][name] = item[1]
    else:
        line["scalars"][name] = item


def _function_name(target: Any) -> tuple[str, list[str]]:
    """The compiled target's name and its parameter names (``self`` left out)."""
    import torch

    if isinstance(target, torch.nn.Module):
        name, fn = f"{type(target).__name__}.forward", target.forward
    else:
        fn = inspect.unwrap(target)
        name = str(getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(target).__name__)
        name = name.rsplit("<locals>.", 1)[-1]
    try:
        params = [p.name for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name != "self"]
    except (TypeError, ValueError):
        params = []
    return name, params


class _Function:
    """One compiled function's file and counts."""

    def __init__(self, name: str, params: list[str], path: Path, max_bytes: int) -> None:
        self.name, self.params, self.path, self.max_bytes = name, params, path, max_bytes
        self.calls = self.written = self.dropped = self.bytes = 0
        self.lines: dict[Any, str] = {}
        self.handle: Any = None
        self.failed = ""  # why the file could not be written: every line is then dropped

    def _open(self) -> bool:
        """Open the file once, refusing what is not ours to write; never raises into a call."""
        if self.handle is None and not self.failed:
            try:
                self.handle = open(check_output(self.path, "the shape recording"), "w", encoding="utf-8")
            except (OSError, OptionError) as exc:
                self.failed = str(exc)
        return self.handle is not None

    def line(self, key: Any) -> str:
        text = self.lines.get(key)
        if text is None:
            args, kwargs = key
            out: dict[str, dict[str, Any]] = {"shape": {}, "dtypes": {}, "scalars": {}, "other": {}}
            for i, item in enumerate(args):
                _flatten(self.params[i] if i < len(self.params) else f"args[{i}]", item, out)
            for k, item in kwargs:
                _flatten(k, item, out)
            text = self.lines[key] = json.dumps({k: v for k, v in out.items() if v or k == "shape"}) + "\n"
        return text

    def write(self, keys: list[Any]) -> None:
        chunk = []
        for key in keys:
            text = self.line(key)
            if self.bytes + len(text) > self.max_bytes:
                self.dropped += 1
                continue
            self.bytes += len(text)
            self.written += 1
            chunk.append(text)
        if chunk:
            if not self._open():
                self.written -= len(chunk)
                self.dropped += len(chunk)
                return
            self.handle.write("".join(chunk))

    def close(self, meta: dict[str, Any]) -> None:
        if not self._open():
            return
        self.handle.write(json.dumps({META_KEY: {"record": "shapes", "function": self.name, "calls": self.calls,
                                                 "written": self.written, "dropped_by_size": self.dropped,
                                                 **meta}}) + "\n")
        self.handle.close()


class ShapeRecorder:
    """Records the calls of compiled functions made in the thread that starts it; see the
    module docstring. ``accept(target)`` limits it to some targets (a watch's ``functions``)."""

    def __init__(self, path: str | Path, sample: float = 1.0, max_bytes: int = DEFAULT_MAX_BYTES,
                 accept: Callable[[Any], bool] | None = None) -> None:
        if not isinstance(sample, (int, float)) or isinstance(sample, bool) or not 0 < sample <= 1:
            raise OptionError(f"record_shapes sample={sample!r}: a rate in (0, 1]")
        if not isinstance(max_bytes, int) or isinstance(max_bytes, bool) or max_bytes < 1:
            raise OptionError(f"record_shapes max_bytes={max_bytes!r}: a positive number of bytes")
        self.path = check_output(path, "the shape recording")  # refuses a device, a directory, a foreign link
        if not self.path.parent.is_dir():
            raise OptionError(f"record_shapes path {str(path)!r}: no directory {str(Path(path).parent)!r}")
        self.sample, self.max_bytes, self.accept = float(sample), max_bytes, accept
        self.sampled_out = self.errors = 0
        # sampling in integer steps of 1/_ONE, the first call always recorded
        self._step = max(1, round(self.sample * _ONE))
        self._acc = _ONE - self._step
        self._pending: list[tuple[Any, Any]] = []
        self._functions: dict[Any, _Function | None] = {}  # fn → its file (None: not accepted)
        self._order: list[_Function] = []
        self._thread = threading.get_ident()
        self._tensor: type = _tensor_type()
        self._summary: RecordSummary | None = None

    def on_call(self, frame: Any) -> None:
        if threading.get_ident() != self._thread:
            return
        if self._step < _ONE:
            self._acc += self._step
            if self._acc < _ONE:
                self.sampled_out += 1
                return
            self._acc -= _ONE
        try:
            fn, args, kwargs = compat.compiled_call_arguments(frame)
            tensor = self._tensor
            items = []
            for a in args:  # the common case inline: a tensor is its (shape, dtype)
                items.append((a.shape, a.dtype) if isinstance(a, tensor) else _item(a, tensor))
            key = (tuple(items), tuple([(k, _item(v, tensor)) for k, v in kwargs.items()]) if kwargs else ())
        except Exception:  # never break the user's call
            self.errors += 1
            return
        self._pending.append((fn, key))
        if len(self._pending) >= FLUSH_EVERY:
            self.flush()

    def _function(self, fn: Any) -> _Function | None:
        if fn in self._functions:
            return self._functions[fn]
        target = compat.compiled_callable_target(fn)
        if self.accept is not None and not self.accept(target):
            self._functions[fn] = None
            return None
        name, params = _function_name(target)
        path = self.path if not self._order else self._sibling(name)
        made = self._functions[fn] = _Function(name, params, path, self.max_bytes)
        self._order.append(made)
        return made

    def _sibling(self, name: str) -> Path:
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._") or "function"
        taken = {f.path for f in self._order}
        candidate = self.path.with_name(f"{self.path.stem}.{safe}{self.path.suffix or '.jsonl'}")
        n = 2
        while candidate in taken:
            candidate = self.path.with_name(f"{self.path.stem}.{safe}-{n}{self.path.suffix or '.jsonl'}")
            n += 1
        return candidate

    def flush(self) -> None:
        pending, self._pending = self._pending, []
        grouped: dict[int, tuple[_Function, list[Any]]] = {}
        for fn, key in pending:
            target = self._function(fn)
            if target is None:
                continue
            target.calls += 1
            grouped.setdefault(id(target), (target, []))[1].append(key)
        for target, keys in grouped.values():
            target.write(keys)

    def close(self) -> RecordSummary:
        """Write what is pending and each file's last line; when several functions were
        recorded, the first one's file is renamed by its function too."""
        if self._summary is not None:
            return self._summary
        self.flush()
        meta = {"sample": self.sample, "sampled_out": self.sampled_out}
        for f in self._order:
            f.close(meta)
        if len(self._order) > 1:
            first = self._order[0]
            renamed = self._sibling(first.name)
            os.replace(first.path, renamed)
            first.path = renamed
        files = tuple(RecordedFile(f.name, str(f.path), f.calls, f.written, f.dropped) for f in self._order)
        self._summary = RecordSummary(files, self.sample, self.sampled_out, self.errors)
        return self._summary


def _tensor_type() -> type:
    import torch

    return torch.Tensor


class _Hub:
    """One patch of PyTorch's per-call hook, shared by every active recorder."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.recorders: list[ShapeRecorder] = []
        self._undo: Callable[[], None] | None = None

    def _on_call(self, frame: Any) -> None:
        for r in self.recorders:
            r.on_call(frame)

    def _install(self) -> None:
        """One recorder is called directly (the usual case, and the cheapest); several in turn."""
        if self._undo is not None:
            self._undo()
            self._undo = None
        if self.recorders:
            hook = self.recorders[0].on_call if len(self.recorders) == 1 else self._on_call
            self._undo = compat.observe_compiled_calls(hook)

    def add(self, recorder: ShapeRecorder) -> None:
        with self.lock:
            self.recorders = [*self.recorders, recorder]
            self._install()

    def remove(self, recorder: ShapeRecorder) -> None:
        with self.lock:
            self.recorders = [r for r in self.recorders if r is not recorder]
            self._install()


HUB = _Hub()


def read_recorded(path: str | Path) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """A recorded file's request lines (``shape``, ``dtypes``, ``scalars``, ``other``) and
    its closing metadata (None when the recording did not end)."""
    rows, meta = [], None
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        obj = json.loads(line)
        if isinstance(obj, dict) and META_KEY in obj:
            meta = obj[META_KEY]
        else:
            rows.append(obj)
    return rows, meta


def call_signature(params: list[str], args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    """One call's line as a recording writes it (without the newline): the tensors' sizes and
    dtypes and the scalars, named by the function's parameters — two calls with the same
    signature are the same request to a recording (and to :func:`compilescope.warm_up`)."""
    tensor = _tensor_type()
    out: dict[str, dict[str, Any]] = {"shape": {}, "dtypes": {}, "scalars": {}, "other": {}}
    for i, a in enumerate(args):
        _flatten(params[i] if i < len(params) else f"args[{i}]", _item(a, tensor), out)
    for k, v in kwargs.items():
        _flatten(k, _item(v, tensor), out)
    return json.dumps({k: dict(sorted(v.items())) for k, v in out.items() if v or k == "shape"})


def function_params(target: Any) -> list[str]:
    """The parameter names a recording names a compiled target's positional inputs by."""
    return _function_name(target)[1]
