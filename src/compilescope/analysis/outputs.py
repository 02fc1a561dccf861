"""Everything a results file's renderers print, built before any of them runs: the report,
the ``summary`` the JSON carries, and for an advise run its advice judged again."""

from __future__ import annotations

from ..model import ProbeResult, RunResult
from ..report import ProbeFile, ProbeReport, RunFile, RunReport
from .advise_record import advice_summary, rejudge
from .build import build_probe_report, build_run_report, run_summary


def run_file(result: RunResult, report: RunReport | None = None) -> RunFile:
    """A run with its report, summary and advice (``report``: one already built from it)."""
    report = report or build_run_report(result)
    advice = rejudge(result, report)
    return RunFile(result, report, run_summary(report), advice,
                   advice_summary(advice) if advice is not None else None)


def records_only(result: RunResult) -> RunFile:
    """A run's records with nothing derived (written so when analysis itself failed)."""
    return RunFile(result, None)


def probe_file(result: ProbeResult, report: ProbeReport | None = None) -> ProbeFile:
    return ProbeFile(result, report or build_probe_report(result))
