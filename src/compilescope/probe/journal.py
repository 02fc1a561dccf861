"""The probe journal: what the probed program's torch.compile did, on disk as it happens.

The program runs in a child process (see :mod:`compilescope.probe.launch`); it appends one
JSON line per event to the journal with a single unbuffered ``write``, so whatever ends the
program — ``os._exit``, a fatal signal, a crash in C — the records captured until then are
in the file, and ``probe`` builds its report and JSON from them. Lines:

* ``{"probe": 2, "torch_version", "cache_start", "cache_dir"}`` — first, before the script;
* ``{"compile": I, "record": {...}}`` — record I is new or changed (a lazily compiled backward
  adds its time to its forward's record); the last line for an index wins;
* ``{"break": I, "record": {...}}`` — graph-break occurrence I;
* ``{"call": {...}}`` — the input shapes of one call of a compiled function;
* ``{"counters": {...}, "recompile_limit": N}`` — when they change;
* ``{"lost": [...]}`` — when a capability compilescope lost (a hook of its raised) is added;
* ``{"end": {"exit_code", "error"}}`` — the script returned or raised (absent after
  ``os._exit`` or a signal).

A line torn by the program's death is ignored.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import sys
from pathlib import Path
from typing import Any

from ..errors import CompilescopeError
from ..model import CompileRecord, GraphBreak, ProbeCall, ProbeResult
from ..schema import SCHEMA_VERSION, from_data, to_data


class JournalWriter:
    """Appends lines to ``path``; each line reaches the file with one ``write`` call. Only
    the process that opened it writes its records: a process the program forks (a DataLoader
    worker) keeps the capture but not the journal — it appends one line saying it compiled or
    called a compiled function, its records left out."""

    def __init__(self, path: str | Path) -> None:
        # not inherited by the script's own subprocesses (PEP 446), appended only
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self.pid = os.getpid()
        self.failed = ""  # why a write failed (a full disk): nothing more is written, the program runs on

    def write(self, data: dict[str, Any], record: bool = False) -> None:
        """``record``: a call or a compile's records (what a forked process says it made)."""
        if self.failed:
            return
        if os.getpid() != self.pid:
            if record and getattr(self, "_forked", None) != os.getpid():  # once per forked process
                self._forked = os.getpid()
                self._append({"forked": os.getpid()})
            return
        self._append(data)

    def _append(self, data: dict[str, Any]) -> None:
        view = memoryview((json.dumps(data) + "\n").encode())
        try:
            while view:
                view = view[os.write(self.fd, view):]
        except OSError as exc:  # never into the program: said once, on stderr with the report
            self.failed = exc.strerror or str(exc)
            try:
                sys.stderr.write(f"compilescope: the probe journal could not be written ({self.failed}): "
                                 "the report lacks what happened from here on\n")
            except (OSError, ValueError):
                pass

    def close(self) -> None:
        os.close(self.fd)


class JournalError(CompilescopeError):
    pass


def read_journal(path: str | Path, *, source: str, exit_code: int, error: str | None) -> ProbeResult:
    """The :class:`ProbeResult` the journal describes. ``exit_code`` is how the process
    ended (its status, or 128 + the signal); ``error`` is used when the script did not
    reach its end (it was killed, or left by ``os._exit``)."""
    try:
        lines = Path(path).read_bytes().decode("utf-8", errors="replace").splitlines()
    except OSError as exc:
        raise JournalError(f"cannot read the probe journal {path}: {exc.strerror}") from None
    header: dict[str, Any] | None = None
    compiles: dict[int, CompileRecord] = {}
    breaks: dict[int, GraphBreak] = {}
    calls: list[ProbeCall] = []
    counters: dict[str, int] = {}
    limit: int | None = None
    end: dict[str, Any] | None = None
    lost: tuple[str, ...] = ()
    forked: set[int] = set()
    for number, line in enumerate(lines, 1):
        try:
            data = json.loads(line)
        except ValueError:
            if number == len(lines):
                break  # torn by the program's death mid-write
            raise JournalError(f"{path}:{number} is not a probe journal line") from None
        if not isinstance(data, dict):
            raise JournalError(f"{path}:{number} is not a probe journal line")
        if header is None:
            if data.get("probe") != SCHEMA_VERSION:
                raise JournalError(f"{path} is not a probe journal of schema {SCHEMA_VERSION}")
            header = data
        elif "compile" in data:
            compiles[int(data["compile"])] = from_data(CompileRecord, data["record"], "record")
        elif "break" in data:
            breaks[int(data["break"])] = from_data(GraphBreak, data["record"], "record")
        elif "call" in data:
            calls.append(from_data(ProbeCall, data["call"], "call"))
        elif "counters" in data:
            counters = {str(k): int(v) for k, v in data["counters"].items()}
            limit = data.get("recompile_limit")
        elif "lost" in data and isinstance(data["lost"], list):
            lost = tuple(str(x) for x in data["lost"])
        elif "forked" in data:
            forked.add(int(data["forked"]))
        elif "torch" in data and isinstance(data["torch"], dict):
            header = {**header, **data["torch"]}
        elif "end" in data:
            end = data["end"]
    if header is None:
        raise JournalError("the probed process ended before the script started")
    return ProbeResult(
        source=source,
        compiles=tuple(compiles[i] for i in sorted(compiles)),
        graph_breaks=tuple(breaks[i] for i in sorted(breaks)),
        calls=tuple(calls),
        exit_code=exit_code,
        error=end.get("error") if end is not None else error,
        recompile_limit=limit if isinstance(limit, int) else None,
        counters=counters,
        torch_version=str(header.get("torch_version", "")),
        cache_start=str(header.get("cache_start", "unknown")),
        cache_dir=str(header.get("cache_dir", "")),
        created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        lost_capabilities=lost,
        forked_unobserved=len(forked),
    )


class JournalStream:
    """What a :class:`~compilescope.probe.capture.ProbeSession` has captured, written to a
    journal as it changes: records are compared by identity, so a steady poll writes
    nothing."""

    def __init__(self, writer: JournalWriter) -> None:
        self.writer = writer
        self._compiles: list[CompileRecord] = []
        self._breaks = 0
        self._counters: tuple[dict[str, int], int | None] = ({}, None)
        self._lost: tuple[str, ...] = ()

    def header(self) -> None:
        """The journal's first line, written as the program starts."""
        self.writer.write({"probe": SCHEMA_VERSION})

    def torch(self, torch_version: str, cache_start: str, cache_dir: str) -> None:
        """torch as the program imported it, and the compile cache then."""
        self.writer.write({"torch": {"torch_version": torch_version, "cache_start": cache_start,
                                     "cache_dir": cache_dir}})

    def call(self, call: ProbeCall) -> None:
        self.writer.write({"call": to_data(call)}, record=True)

    def sync(self, compiles: list[CompileRecord], breaks: list[GraphBreak], counters: dict[str, int],
             limit: int | None, lost: tuple[str, ...] = ()) -> None:
        for i, record in enumerate(compiles):
            if i >= len(self._compiles) or self._compiles[i] is not record:
                self.writer.write({"compile": i, "record": to_data(record)}, record=True)
        self._compiles = list(compiles)
        for i in range(self._breaks, len(breaks)):
            self.writer.write({"break": i, "record": to_data(breaks[i])}, record=True)
        self._breaks = len(breaks)
        if (counters, limit) != self._counters:
            self.writer.write({"counters": counters, "recompile_limit": limit})
            self._counters = (dict(counters), limit)
        if lost != self._lost:
            self.writer.write({"lost": list(lost)})
            self._lost = lost

    def end(self, exit_code: int, error: str | None) -> None:
        self.writer.write({"end": {"exit_code": exit_code, "error": error}})
