"""The results journal: every finished trial on disk the moment it finishes.

``RESULT.json.journal`` sits beside the results file while a run is under way: one JSON
line describing the run (what to re-plan on ``--resume``), then one line per finished
trial, each appended with a single ``write`` and flushed to disk. A line torn by a crash is
ignored on reading. When the run completes, the results file is written atomically and the
journal removed; after an interrupt the journal stays (and a partial results file is
written), so ``compilescope run --resume RESULT.json`` re-runs only what is missing.
"""

from __future__ import annotations

import errno
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ResultsError
from ..model import TrialResult
from ..paths import journal_path, read_capped
from ..schema import SCHEMA_VERSION, from_data, known_versions, migrate_trial, to_data

@dataclass(frozen=True)
class JournalState:
    header: dict[str, Any]
    trials: tuple[TrialResult, ...]


class Journal:
    def __init__(self, results: Path) -> None:
        self.path = journal_path(results)

    def start(self, header: dict[str, Any]) -> None:
        """A new journal (an old one for the same results file is replaced)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._write_line({"journal": SCHEMA_VERSION, **header}, mode="w")

    def append(self, result: TrialResult) -> None:
        self._write_line({"trial": to_data(result)}, mode="a")

    def _write_line(self, data: dict[str, Any], mode: str) -> None:
        line = json.dumps(data) + "\n"
        with open(self.path, mode) as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


def read_journal(path: Path) -> JournalState:
    """The run description and every finished trial; raises :class:`ResultsError` when the
    file is not a compilescope journal."""

    raw = read_capped(path, str(path), ResultsError)  # a regular file, size-capped
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ResultsError(f"{path} is not a compilescope journal (not text)") from None
    lines = text.splitlines()
    header: dict[str, Any] | None = None
    version = SCHEMA_VERSION
    trials: list[TrialResult] = []
    for number, line in enumerate(lines, 1):
        try:
            data = json.loads(line)
        except ValueError:
            if number == len(lines):
                break  # torn by a crash mid-write
            raise ResultsError(f"{path}:{number} is not a journal line") from None
        if not isinstance(data, dict):
            raise ResultsError(f"{path}:{number} is not a journal line")
        if header is None:
            version = data.get("journal")
            if not isinstance(version, int) or isinstance(version, bool) or version not in known_versions():
                known = ", ".join(str(v) for v in sorted(known_versions()))
                raise ResultsError(f"{path} is not a compilescope journal of schema {known}")
            header = data
            continue
        if "trial" in data:
            try:
                trials.append(from_data(TrialResult, migrate_trial(data["trial"], version, f"{path}:{number}")))
            except ResultsError as exc:
                raise ResultsError(f"{path}:{number}: {exc}") from None
    if header is None:
        raise ResultsError(f"{path} is empty")
    return JournalState(header, tuple(trials))


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` so that ``path`` is either the old file or the whole new one. Only a
    regular file (or a new path) is ever replaced: a device, a FIFO, a socket or a directory
    raises ``OSError``; a symbolic link to a regular file in the same directory is written
    through (the link stays), any other link raises."""
    import stat

    target = os.path.abspath(path)
    try:
        st: os.stat_result | None = os.lstat(target)
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISLNK(st.st_mode):
        real = os.path.realpath(target)
        if os.path.dirname(real) != os.path.realpath(os.path.dirname(target)):
            raise OSError(errno.EPERM, f"a symbolic link to {real}, outside its directory")
        target = real
        try:
            st = os.lstat(target)
        except FileNotFoundError:
            st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise OSError(errno.EPERM, "not a regular file: never replaced")
    directory, name = os.path.split(target)
    os.makedirs(directory, exist_ok=True)
    tmp = os.path.join(directory, f".{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
