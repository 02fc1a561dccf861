"""The compare use case: ``compilescope compare`` — two runs of one workload and stream, from
results files or selected from a results store, compared trial by trial and shape by shape
(A the baseline), flagged only beyond the noise."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..analysis.compare import compare_runs
from ..errors import OptionError
from ..model import RunResult
from ..report import CompareReport
from .report import store_runs


def compare(a: str, b: str, *, store: Path | None = None, pair_by: str = "label",
            pairs: Sequence[str] = ()) -> CompareReport:
    """Compare the runs ``a`` and ``b``: results files, or with ``store`` ``--where`` filters
    (``COLUMN=VALUE,…``) each selecting one run of that store. ``pairs``: ``A_NAME=B_NAME``,
    a trial (label or strategy) of A to compare with one of B."""
    asked = [_pair(p) for p in pairs]
    runs = [_run(which, store) for which in (a, b)]
    return compare_runs(runs[0], runs[1], str(a), str(b), pair_by=pair_by, pairs=asked)


def _pair(text: str) -> tuple[str, str]:
    x, sep, y = text.partition("=")
    if not sep or not x.strip() or not y.strip():
        raise OptionError(f"--pair {text!r}: expected A_NAME=B_NAME, a strategy or label of each run "
                          "(e.g. default=guard-filter[inbuilt-nn])")
    return x.strip(), y.strip()


def _run(which: str, store: Path | None) -> RunResult:
    from ..schema import load

    if store is not None:
        found = store_runs(store, (which,))
        if len(found) != 1:
            raise OptionError(f"--where {which!r} selects {len(found)} runs in {store}; narrow it to one "
                              "(e.g. add workload=…, backend=…, torch=…)")
        return found[0]
    got = load(Path(which))
    if not isinstance(got, RunResult):
        raise OptionError(f"{which} is a probe result; compare takes two run results")
    return got
