"""What a results file holds besides its records: the reports of a run or a probe, with the
figures derived from them for readers of the JSON (``summary``, ``advice_summary``), all made
by :mod:`compilescope.analysis.outputs` before anything is rendered."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..model import ProbeResult, RunResult
from .advice import AdviceReport
from .probe import ProbeReport
from .run import RunReport


@dataclass(frozen=True, eq=False)
class RunFile:
    """A run: its records, its report (None when analysis failed: the records are written
    alone), and for an advise run its advice judged again from the records."""

    result: RunResult
    report: RunReport | None
    summary: dict[str, Any] | None = None  # per trial: the derived figures the JSON carries
    advice: AdviceReport | None = None
    advice_summary: dict[str, Any] | None = None


@dataclass(frozen=True, eq=False)
class ProbeFile:
    """A probe: its records and its report."""

    result: ProbeResult
    report: ProbeReport
