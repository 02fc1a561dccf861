"""The terminal report as plain text (no colour), of every report kind: what the commands
print, written to a file."""

from __future__ import annotations

from rich.console import RenderableType

from ..report import AdviceReport, CompareReport, ForecastReport, ProbeFile, RunFile, ScriptAdvice, VerifyReport
from ..report.warmup import WarmupReport
from . import console, forecast, probe, verify, warmup
from .grid import to_text

WIDTH = 160


def renderables(report: RunFile | ProbeFile | CompareReport | AdviceReport | ScriptAdvice | ForecastReport | WarmupReport
                | VerifyReport) -> list[RenderableType]:
    """What a command prints for ``report`` (a run's advice after its report)."""
    if isinstance(report, ProbeFile):
        return probe.renderables(report.report)
    if isinstance(report, ForecastReport):
        return forecast.renderables(report)
    if isinstance(report, WarmupReport):
        return warmup.renderables(report) + (verify.renderables(report.verified) if report.verified else [])
    if isinstance(report, VerifyReport):
        return verify.renderables(report)
    if isinstance(report, CompareReport):
        return console.compare_renderables(report)
    if isinstance(report, AdviceReport):
        return console.advice_renderables(report)
    if isinstance(report, ScriptAdvice):
        return console.script_advice_renderables(report)
    assert report.report is not None, "a run's text needs its report"
    parts = console.renderables(report.report)
    if report.advice is not None:
        parts += console.advice_renderables(report.advice)
    return parts


class TextRenderer:
    name = "text"
    extensions = (".txt",)
    kinds: tuple[type, ...] = (RunFile, ProbeFile, CompareReport, AdviceReport, ScriptAdvice, ForecastReport,
                              WarmupReport, VerifyReport)
    written = "text report"

    def render(self, report: RunFile | ProbeFile | CompareReport | AdviceReport | ScriptAdvice | ForecastReport
               | WarmupReport | VerifyReport) -> str:
        return to_text(renderables(report), WIDTH)


RENDERER = TextRenderer()
