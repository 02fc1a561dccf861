"""The report use case: ``compilescope report`` — a results file read back
(:func:`report_file`: a run, an advise run with its advice judged again, or a probe), or the
runs a results store holds (:func:`report_store`: one per workload, stream, backend and torch
version)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from pathlib import Path

from ..analysis.outputs import probe_file, run_file
from ..errors import OptionError
from ..model import ProbeResult, RunResult
from ..report import ProbeFile, RunFile


def store_runs(path: Path, where: Sequence[str]) -> list[RunResult]:
    """The runs of the results store at ``path`` whose trials match every ``COLUMN=VALUE`` of
    ``where``; none is bad input."""
    from ..options import parse_where
    from ..paths import check_input
    from ..store import Store

    check_input(path, f"results store {str(path)!r}", OptionError)
    with Store(path, readonly=True) as store:
        runs = store.runs(parse_where(where))
    if not runs:
        raise OptionError(f"no trials in {path} match {', '.join(where) or 'anything'}")
    return runs


def report_file(path: Path, lifetime: int | None = None) -> RunFile | ProbeFile:
    """What the results file at ``path`` holds, its report built again from the records (a run
    made by advise: its advice judged again); ``lifetime`` replaces a run's."""
    from ..schema import load

    loaded = load(path)
    if isinstance(loaded, ProbeResult):
        if lifetime is not None:
            raise OptionError("--csv and --lifetime apply to run results, not a probe's")
        return probe_file(loaded)
    if lifetime is not None:
        loaded = dataclasses.replace(loaded, lifetime=lifetime)
    return run_file(loaded)


def report_store(path: Path, where: Sequence[str], lifetime: int | None = None) -> Iterator[RunFile]:
    """Each run the store holds that ``where`` selects, with its report, one at a time."""
    for run in store_runs(path, where):
        if lifetime is not None:
            run = dataclasses.replace(run, lifetime=lifetime)
        yield run_file(run)
