"""The report model: every kind of report compilescope prints or writes, one module per kind
(:mod:`.run`, :mod:`.probe`, :mod:`.compare`, :mod:`.advice`, :mod:`.script`, :mod:`.forecast`, and
:mod:`.files` for what a results file holds). Analysis (:mod:`compilescope.analysis`) builds
them from the records, once; renderers (:mod:`compilescope.render`) import only this package
and :mod:`compilescope.units`, and format what they are given.

Definitions, stated once:

* a **compile** is a frame compile attempt that compiled or failed while compiling
  (:attr:`CompileRecord.is_compile`); a refusal at the recompile limit is not one, nor is
  a lazily compiled backward (its time belongs to its forward's compile);
* a **recompile** is a compile of a frame that already had a cache entry (``0/1``, ``0/2``…);
* an **eager fallback** is a call that ran none of the trial's compiled graphs although
  graphs existed (recorded by the wrapped backend);
* a **partial eager fallback** is a call that ran some compiled graphs while a frame of it
  (a resume frame after a graph break, refused at the recompile limit) ran eagerly; its
  shape is left out of the compiled steady-state, saving and numerics figures, as an eager
  fallback's is;
* a **request error** is a stream request that raised; a trial with any is ``partial``
  (some raised) or ``failed`` (all raised), never ``ok``;
* what happened to each request — hit, compile, recompile, refused, eager fallback, partial
  eager fallback, raised — is decided once, with one precedence, by
  :func:`compilescope.analysis.outcomes.classify`; every table shows that one outcome;
* a speedup is eager p50 / compiled p50, both sampled interleaved in the same trial process;
* a **cause** is one guard (source, kind, dim) that made a function compile again
  (:class:`Cause`, the one record probe, watch and advise use).
"""

from __future__ import annotations

from .advice import AdviceReport, CodeFix, Judged, Proposal, Snippet
from .compare import LEGEND, Change, CompareReport, Flag, Pair
from .files import ProbeFile, RunFile
from .guards import GuardPoint, GuardShapeRow, GuardSourceRow, GuardSummary
from .forecast import CompileTimes, ForecastGuard, ForecastReport, ForecastRequest, StrategyForecast
from .probe import Cause, CauseRow, FunctionReport, GuardRow, ProbeReport
from .run import (
    IQR_WARN_THRESHOLD,
    BreakRow,
    CallPoint,
    ChangeRow,
    CompileCounts,
    CompileRow,
    ErrorGroup,
    Note,
    NumericsState,
    RowStatus,
    RunReport,
    ShapeRow,
    SoundnessRow,
    SpeedClass,
    SpeedGroup,
    StartRow,
    Stats,
    SteadySummary,
    TrialReport,
)
from .script import SETTINGS, ScriptAdvice, ScriptProposal, ScriptRun
from .verify import Latency, StrategyVerify, VerifyReport, VerifyRequest

__all__ = [
    "IQR_WARN_THRESHOLD", "LEGEND", "SETTINGS", "AdviceReport", "BreakRow", "CallPoint", "Cause", "CauseRow",
    "Change", "ChangeRow", "CodeFix", "CompareReport", "CompileCounts", "CompileRow", "ErrorGroup", "Flag",
    "FunctionReport", "GuardRow", "Judged", "Note", "NumericsState", "Pair", "ProbeFile", "ProbeReport", "Proposal",
    "RowStatus",
    "RunFile", "RunReport", "ScriptAdvice", "ScriptProposal", "ScriptRun", "ShapeRow", "Snippet", "SpeedClass",
    "SpeedGroup", "StartRow", "Stats", "SteadySummary", "TrialReport",
    "CompileTimes", "ForecastGuard", "ForecastReport", "ForecastRequest", "StrategyForecast",
    "Latency", "StrategyVerify", "VerifyReport", "VerifyRequest",
    "GuardPoint", "GuardShapeRow", "GuardSourceRow", "GuardSummary", "SoundnessRow",
]
