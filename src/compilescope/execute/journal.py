"""The results journal: every finished trial on disk the moment it finishes.

``RESULT.json.journal`` sits beside the results file while a run is under way: one JSON
line describing the run (what to re-plan on ``--resume``), then one line per finished
trial, each appended with a single ``write`` and flushed to disk. A line torn by a crash is
ignored on reading. When the run completes, the results file is written atomically and the
journal removed; after an interrupt the journal stays (and a partial results file is
written), so ``compilescope run --resume RESULT.json`` re-runs only what is missing.
"""

from __future__ import annotations

import json
import os
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
