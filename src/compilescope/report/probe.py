"""The probe report: per compiled function, its compiles, their causes and failing guards.

A **cause** (:class:`Cause`) is one guard (source, kind, dim) that made a function compile
again, as :func:`compilescope.analysis.advice.group_causes` groups them: the one cause
record every report, ``watch`` and ``advise`` use, its description worded once there."""

from __future__ import annotations

from dataclasses import dataclass

from ..model import Scalar
from .run import BreakRow, CompileRow
from .script import ScriptRun


@dataclass(frozen=True)
class Cause:
    """One recompile cause. It is *shape-reducible* when a dynamic-shape setting can remove
    the recompiles (a varying size); otherwise ``next_step`` is a change to the program."""

    source: str | None
    kind: str
    dim: int | None
    values: tuple[Scalar, ...]  # expected and actual values seen, in order of first appearance
    compile_ids: tuple[str, ...]  # the attempts this cause triggered: compiles, and those the recompile limit refused
    shape_reducible: bool
    next_step: str
    example: str = ""  # one of PyTorch's texts for it
    involves: tuple[str, ...] = ()  # every input dim a relation names
    frame_source: str | None = None  # the source as the compiled frame sees it (what dynamic_sources names)
    user_lines: tuple[str, ...] = ()  # the user's lines PyTorch cites for the guard(s)
    reachable: bool = True  # the source is an input the caller passes (not a frame temporary)
    description: str = ""  # "L['x'] dim 0 varied over 4, 8, 16 → 3 compile(s)", worded by analysis
    refused: tuple[str, ...] = ()  # those of compile_ids the recompile limit refused (no compile: the call ran eagerly)
    frame_sources: tuple[str, ...] = ()  # every source the frames named it by (a wrapper: by position and by keyword)


CauseRow = Cause  # the name probe reports used for it


@dataclass(frozen=True)
class GuardRow:
    """One distinct failing guard of a function: how often it failed and which cache
    entries it failed on, and which compiles it caused."""

    text: str
    kind: str
    source: str | None
    involves: tuple[str, ...]
    found_by: str  # "pytorch" when PyTorch's reason named it at least once
    count: int
    entries: tuple[str, ...]
    compiles: tuple[str, ...]
    user_line: str | None


@dataclass(frozen=True)
class FunctionReport:
    name: str
    location: str
    frame: str  # PyTorch's frame name and location, when the name above is the compiled target's
    compiles: int
    recompiles: int
    refused: int
    compile_s: float
    backward_s: float
    causes: tuple[Cause, ...]
    failures: tuple[str, ...]  # "compile 0/2 failed: …"
    guards: tuple[GuardRow, ...] = ()
    unevaluated: tuple[tuple[str, int], ...] = ()  # guards a walk could not evaluate, by kind
    compile_rows: tuple[CompileRow, ...] = ()
    causes_overlap: bool = False  # the causes' compile counts add up to more than the recompiles: one compile has several


@dataclass(frozen=True)
class ProbeReport:
    source: str
    compiles: int
    frames: int
    compile_s: float
    graph_break_count: int
    graph_breaks: tuple[BreakRow, ...]
    functions: tuple[FunctionReport, ...]
    recompile_limit: int | None
    cache_start: str | None  # cold | warm | unknown; None: no compile looked in the compile cache (eager, aot_eager)
    counters: tuple[tuple[str, int], ...]
    error: str | None
    exit_code: int
    first_start_us: int = 0  # the earliest compile's start: the time axis's zero in plots and traces
    lost_capabilities: tuple[str, ...] = ()  # what compilescope could not record (a hook of its raised)
    killed: bool = False  # the program was killed by a signal (its error says by which), rather than raising
    checks: tuple[ScriptRun, ...] = ()  # probe --check-fixes: each setting fix run and judged (advise --script's way)
    fixes_unchecked: bool = False  # a mark-dynamic fix is printed that no run checked (no --check-fixes)
    settings: tuple[str, ...] = ()  # what the program ran under (probe --config), NAME=VALUE
    forked_unobserved: int = 0  # processes the program forked that compiled or called compiled code
