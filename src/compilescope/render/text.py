"""The terminal report as plain text (no colour), of every report kind: what the commands
print, written to a file. :data:`RENDERABLES` is the one dispatch table from a report's type
to what a command prints for it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.console import RenderableType

from ..report import AdviceReport, CompareReport, ForecastReport, ProbeFile, RunFile, ScriptAdvice, VerifyReport
from ..report.warmup import WarmupReport
from . import ByKind, console, forecast, probe, verify, warmup
from .grid import to_text

WIDTH = 160


def _run(file: RunFile) -> list[RenderableType]:
    """A run's report, then its advice (an advise run)."""
    assert file.report is not None, "a run's text needs its report"
    parts = console.renderables(file.report)
    if file.advice is not None:
        parts += console.advice_renderables(file.advice)
    return parts


def _probe(file: ProbeFile) -> list[RenderableType]:
    return probe.renderables(file.report)


def _warmup(report: WarmupReport) -> list[RenderableType]:
    """A warm-up report, then its verification (``warmup --verify``)."""
    return warmup.renderables(report) + (verify.renderables(report.verified) if report.verified else [])


RENDERABLES: dict[type, Callable[[Any], list[RenderableType]]] = {
    RunFile: _run, ProbeFile: _probe, CompareReport: console.compare_renderables,
    AdviceReport: console.advice_renderables, ScriptAdvice: console.script_advice_renderables,
    ForecastReport: forecast.renderables, WarmupReport: _warmup, VerifyReport: verify.renderables,
}


def renderables(report: Any) -> list[RenderableType]:
    """What a command prints for ``report``."""
    return RENDERABLES[type(report)](report)


def _text(report: Any) -> str:
    return to_text(renderables(report), WIDTH)


RENDERER = ByKind("text", (".txt",), "text report", {kind: _text for kind in RENDERABLES},
                  help=".txt (the report as plain text)")
