"""Record the shapes a program's compiled functions see, as replayable streams.

``compilescope.watch(record_shapes="shapes.jsonl")`` writes, per call of each compiled
function (hit or not), one JSON line in the ``@shapes.jsonl`` stream format that ``run``,
``advise``, ``sweep`` and ``forecast`` read::

    {"shape": {"x.0": 4, "x.1": 32}, "dtypes": {"x": "float32"}, "scalars": {"n": 3}}

``shape`` holds the tensor inputs' sizes (``x.0`` = dim 0 of input ``x``), ``dtypes`` their
dtypes, ``scalars`` the Python scalar arguments (``other`` names the type of anything
else). Keyword arguments are named as the function's parameters. An object argument (a
``DynamicCache``, a dataclass, a registered pytree container) is named in ``other`` by its
type, and the tensors and plain values inside it are recorded by their access path, as
Dynamo names them in guards (``L['cache'].layers[0].keys`` is ``cache.layers[0].keys``)::

    {"shape": {"input_ids.0": 1, "input_ids.1": 1, "cache.layers[0].keys.0": 1, "cache.layers[0].keys.2": 13, ...},
     "scalars": {"cache.layers[0].is_initialized": true, ...}, "other": {"cache": "DynamicCache"}}

bounded by :data:`RECORD_DEPTH` steps and :data:`RECORD_LEAVES` values an object; what is
past the bounds is counted in ``unrecorded`` (``{"cache": 12}``), never silently left out.

One function writes the given path; when several compiled functions are called, each gets its own file,
``shapes.<function>.jsonl``. The last line of a file, written when the watch ends, says what
was recorded and what was dropped::

    {"compilescope": {"record": "shapes", "function": "f", "calls": 1000, "written": 100, ...}}

Recording is bounded: ``sample`` (a rate in (0, 1]: every call at 1, one call in ten at 0.1,
spread evenly) and ``max_bytes`` per file; calls left out are counted, never silently lost.
The per-call cost is a look at the call's arguments; lines are formatted once per distinct
signature and written in batches.

Recording never raises into the program and never touches a file it did not create: the
given file is locked (``flock``) while it is written, so a second recording of the same file
stops rather than overwriting the first; a derived ``shapes.<function>.jsonl`` is created
only where no file is (or where an earlier recording's file is); a full disk, a folder removed
while recording or a file taken away stops that file's recording. A stopped recording says
why in its summary (``RecordedFile.stopped``) and, where the file can still be written, in
its closing line (``"stopped": …``); the program runs on.
"""

from __future__ import annotations

import errno
import fcntl
import inspect
import json
import os
import re
import stat
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import compat
from .errors import OptionError
from .paths import check_output, check_recording
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
    stopped: str = ""  # why recording to this file stopped before the scope ended ("" when it did not)
    dropped_stopped: int = 0  # sampled calls not written because the recording had stopped


@dataclass(frozen=True)
class RecordSummary:
    files: tuple[RecordedFile, ...]
    sample: float
    sampled_out: int  # calls of compiled functions that sampling left out (all functions)
    errors: int  # calls whose arguments could not be read (never the call's own failure)


RECORD_DEPTH = 6  # steps into an object argument (cache → layers → [i] → keys is 3)
RECORD_LEAVES = 512  # tensors and values recorded inside one object argument


def _item(value: Any, tensor: type) -> Any:
    if isinstance(value, tensor):
        return (value.shape, value.dtype)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return ("seq", type(value).__name__, tuple(_item(v, tensor) for v in value))
    if isinstance(value, dict):
        return ("map", tuple((str(k), _item(v, tensor)) for k, v in value.items()))
    return _object(value, tensor)


def _object(value: Any, tensor: type) -> Any:
    """An object argument (a cache, a dataclass): its type and the tensors and plain values
    inside it by access path (``.layers[0].keys``), bounded; how many were past the bounds."""
    from .leaves import is_plain, source, walk

    found = walk(value, RECORD_DEPTH, RECORD_LEAVES)
    inside = []
    for steps, v in found.leaves():
        if not steps:
            continue
        if isinstance(v, tensor):
            inside.append((source("", steps), (v.shape, v.dtype)))
        elif is_plain(v) and (v is None or isinstance(v, (bool, int, float, str))):
            inside.append((source("", steps), v))
    return ("other", type(value).__qualname__, tuple(inside), found.cut)


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
        for path, v in item[2]:
            _flatten(f"{name}{path}", v, line)
        if item[3]:
            line["unrecorded"][name] = item[3]
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


_CLOSING_TAIL = 4096  # bytes read from the end of an existing file to tell an earlier recording


def _earlier_recording(path: Path) -> bool:
    """``path`` is a regular file whose last line is a shape recording's closing line: a
    file compilescope wrote, which a new recording may replace."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return False
        tail = os.pread(fd, _CLOSING_TAIL, max(0, st.st_size - _CLOSING_TAIL)).decode("utf-8", "replace")
    except OSError:
        return False
    finally:
        os.close(fd)
    lines = tail.rstrip("\n").rsplit("\n", 1)
    try:
        meta = json.loads(lines[-1]).get(META_KEY)
    except (ValueError, AttributeError):
        return False
    return isinstance(meta, dict) and meta.get("record") == "shapes"


def _why(exc: BaseException) -> str:
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    return str(exc)


class _Function:
    """One compiled function's file and counts. Nothing here raises: a file that cannot be
    written stops its recording, with the reason in ``stopped``."""

    def __init__(self, name: str, params: list[str], path: Path, max_bytes: int, derived: bool = False) -> None:
        self.name, self.params, self.path, self.max_bytes = name, params, path, max_bytes
        self.derived = derived  # a name compilescope chose: created only where nothing of the user's is
        self.calls = self.written = self.dropped = self.bytes = self.dropped_stopped = 0
        self.lines: dict[Any, str] = {}
        self.fd: int | None = None
        self.identity: tuple[int, int] | None = None  # (st_dev, st_ino) of the file as opened
        self.created = False  # the file did not exist before this recording took it
        self.emptied = False  # its earlier content is gone (at the first write, not when taken)
        self.stopped = ""  # why the file is no longer written: every line is then dropped

    def stop(self, reason: str) -> None:
        if not self.stopped:
            self.stopped = reason

    def claim(self) -> bool:
        """Open and lock the file once (a regular file or a new one; a derived name only where
        no file of the user's is); False, with the reason in ``stopped``, when it cannot be."""
        if self.fd is not None or self.stopped:
            return self.fd is not None
        try:
            if self.derived and os.path.lexists(self.path) and not _earlier_recording(self.path):
                self.stop(f"{self.path} exists and is not a shape recording: left as it is")
                return False
            target = check_output(self.path, "the shape recording")
            flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
            try:
                fd, created = os.open(target, flags | os.O_EXCL, 0o644), True
            except FileExistsError:
                fd, created = os.open(target, flags, 0o644), False
            try:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    raise OptionError(f"{self.path} is not a regular file")
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError as exc:
                    if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                        raise OptionError(f"another recording is writing {self.path}: this one left it alone") from None
                    raise
                st = os.fstat(fd)
            except BaseException:
                os.close(fd)
                raise
            self.fd, self.identity, self.created = fd, (st.st_dev, st.st_ino), created
        except (OSError, OptionError) as exc:
            self.stop(_why(exc))
        return self.fd is not None

    def removed(self) -> bool:
        """The open file is no longer at its path (its folder or the file was removed)."""
        try:
            st = os.stat(self.path, follow_symlinks=False)
        except OSError:
            return True
        return (st.st_dev, st.st_ino) != self.identity

    def _write(self, text: str) -> bool:
        if self.fd is None:
            return False
        data = text.encode("utf-8")
        try:
            if not self.emptied:
                os.ftruncate(self.fd, 0)
                self.emptied = True
            while data:
                data = data[os.write(self.fd, data):]
        except OSError as exc:
            self.stop(f"writing failed: {_why(exc)}")
            self._release()
            return False
        return True

    def _release(self) -> None:
        fd, self.fd = self.fd, None
        if fd is not None:
            try:
                os.close(fd)  # closing drops the lock
            except OSError:
                pass

    def line(self, key: Any) -> str:
        text = self.lines.get(key)
        if text is None:
            args, kwargs = key
            out: dict[str, dict[str, Any]] = {"shape": {}, "dtypes": {}, "scalars": {}, "other": {}, "unrecorded": {}}
            for i, item in enumerate(args):
                _flatten(self.params[i] if i < len(self.params) else f"args[{i}]", item, out)
            for k, item in kwargs:
                _flatten(k, item, out)
            text = self.lines[key] = json.dumps({k: v for k, v in out.items() if v or k == "shape"}) + "\n"
        return text

    def write(self, keys: list[Any]) -> None:
        if self.stopped or not self.claim():
            self.dropped_stopped += len(keys)
            return
        chunk, size = [], self.bytes
        for key in keys:
            text = self.line(key)
            if size + len(text) > self.max_bytes:
                self.dropped += 1
                continue
            size += len(text)
            chunk.append(text)
        if chunk and self._write("".join(chunk)):
            self.bytes = size
            self.written += len(chunk)
        elif chunk:
            self.dropped_stopped += len(chunk)

    def close(self, meta: dict[str, Any]) -> None:
        """The closing line, where the file can still be written; then the file is let go."""
        if self.fd is None and not self.stopped:
            self.claim()  # a function with no line written still gets its closing line
        if self.fd is not None and self.removed():
            self.stop(f"{self.path} was removed while recording ({self.written} line(s) lost with it)")
        closing = {"record": "shapes", "function": self.name, "calls": self.calls, "written": self.written,
                   "dropped_by_size": self.dropped, **meta}
        if self.stopped:
            closing.update(stopped=self.stopped, dropped_stopped=self.dropped_stopped)
        if self.fd is not None and not self.removed():
            self._write(json.dumps({META_KEY: closing}) + "\n")
        self._release()


class ShapeRecorder:
    """Records the calls of compiled functions made in the thread that starts it; see the
    module docstring. ``accept(target)`` limits it to some targets (a watch's ``functions``)."""

    def __init__(self, path: str | Path, sample: float = 1.0, max_bytes: int = DEFAULT_MAX_BYTES,
                 accept: Callable[[Any], bool] | None = None, thread: int | None = None) -> None:
        if not isinstance(sample, (int, float)) or isinstance(sample, bool) or not 0 < sample <= 1:
            raise OptionError(f"record_shapes sample={sample!r}: a rate in (0, 1]")
        if not isinstance(max_bytes, int) or isinstance(max_bytes, bool) or max_bytes < 1:
            raise OptionError(f"record_shapes max_bytes={max_bytes!r}: a positive number of bytes")
        self.path = check_recording(path)
        self.sample, self.max_bytes, self.accept = float(sample), max_bytes, accept
        self.sampled_out = self.errors = 0
        # sampling in integer steps of 1/_ONE, the first call always recorded
        self._step = max(1, round(self.sample * _ONE))
        self._acc = _ONE - self._step
        self._pending: list[tuple[Any, Any]] = []
        self._functions: dict[Any, _Function | None] = {}  # fn → its file (None: not accepted)
        self._order: list[_Function] = []
        self._main = _Function("", [], self.path, self.max_bytes)  # the given file: the first function's
        self._thread = threading.get_ident() if thread is None else thread  # whose calls it records
        self._tensor: type = _tensor_type()
        self._summary: RecordSummary | None = None

    def start(self) -> ShapeRecorder:
        """Take the given file now (locked until the recording ends): a second recording of
        the same file then stops at once instead of overwriting this one."""
        self._main.claim()
        return self

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
            try:
                self.flush()
            except Exception:  # never break the user's call; the calls are counted
                self.errors += 1

    def _function(self, fn: Any) -> _Function | None:
        if fn in self._functions:
            return self._functions[fn]
        target = compat.compiled_callable_target(fn)
        if self.accept is not None and not self.accept(target):
            self._functions[fn] = None
            return None
        name, params = _function_name(target)
        if not self._order:
            made = self._main
            made.name, made.params = name, params
        else:
            made = _Function(name, params, self._sibling(name), self.max_bytes, derived=True)
        self._functions[fn] = made
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
        try:
            self.flush()
        except Exception:
            self.errors += 1
        meta = {"sample": self.sample, "sampled_out": self.sampled_out}
        if len(self._order) > 1:
            self._rename_first()
        for f in self._order:
            f.close(meta)
        if not self._order:  # nothing was called: a file this recording created goes again
            if self._main.fd is not None and self._main.created and not self._main.removed():
                try:
                    os.unlink(self._main.path)
                except OSError:
                    pass
            self._main._release()
        files = tuple(RecordedFile(f.name, str(f.path), f.calls, f.written, f.dropped, f.stopped, f.dropped_stopped)
                      for f in self._order)
        self._summary = RecordSummary(files, self.sample, self.sampled_out, self.errors)
        return self._summary

    def _rename_first(self) -> None:
        """The first function's file takes its function's name too, where that name is free
        (or an earlier recording's); otherwise it stays at the given path, said in its summary."""
        first = self._order[0]
        if first.fd is None or first.removed():
            return
        renamed = self._sibling(first.name)
        try:
            if os.path.lexists(renamed):
                if not _earlier_recording(renamed):
                    return  # the recording is whole at the given path, which its summary names
                os.replace(first.path, renamed)
            else:
                os.link(first.path, renamed)  # fails rather than replace what appears meanwhile
                os.unlink(first.path)
            first.path = renamed
        except OSError:
            pass  # the file stays whole at the given path, which its summary names


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
    out: dict[str, dict[str, Any]] = {"shape": {}, "dtypes": {}, "scalars": {}, "other": {}, "unrecorded": {}}
    for i, a in enumerate(args):
        _flatten(params[i] if i < len(params) else f"args[{i}]", _item(a, tensor), out)
    for k, v in kwargs.items():
        _flatten(k, _item(v, tensor), out)
    return json.dumps({k: dict(sorted(v.items())) for k, v in out.items() if v or k == "shape"})


def function_params(target: Any) -> list[str]:
    """The parameter names a recording names a compiled target's positional inputs by."""
    return _function_name(target)[1]
