"""The advice report: the default and each measured proposal judged by the objective, the
recommendation, and the code fixes left unmeasured (made by :mod:`compilescope.analysis.advise`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..model import StrategyOptions
from .run import TrialReport


@dataclass(frozen=True)
class Snippet:
    """Code that applies a proposal: ``setup`` runs once with ``model`` (the function or module
    to compile) bound and binds ``compiled``; ``before_call`` runs before each call with the
    call's inputs bound by parameter name (and may rebind them, e.g. padded); ``note`` is what
    is left to the caller in words."""

    setup: str
    before_call: str = ""
    note: str = ""

    def text(self) -> str:
        parts = [self.setup.replace("\n", "; ") if "\n    " not in self.setup else self.setup]
        if self.before_call:
            parts.append(f"before each call: {self.before_call}")
        if self.note:
            parts.append(f"({self.note})")
        return "; ".join(parts)


@dataclass(frozen=True)
class Proposal:
    name: str  # the variant, shown as strategy[name]
    strategy: str
    options: StrategyOptions
    addresses: tuple[str, ...]  # the causes it targets
    snippet: Snippet  # what to write to apply it
    target: Literal["recompiles", "fallbacks", "compile_s", "steady", "total", "breaks", "guards"] = "recompiles"  # what it must reduce
    alternative: Snippet | None = None  # the same fix another way (a setting instead of a code change)

    @property
    def label(self) -> str:
        """Its trial's label: ``mark-dynamic[x:0] (cold)``; ``guard-filter[all-nn] (cold)``."""
        return f"{self.strategy}[{self.name}] (cold)" if self.name else f"{self.strategy} (cold)"

    @property
    def code(self) -> str:
        text = self.snippet.text()
        if self.alternative is not None:
            text += f"  (or, with no code change: {self.alternative.text()})"
        return text


@dataclass(frozen=True)
class CodeFix:
    cause: str
    step: str
    relations: tuple[str, ...] = ()  # a relation cause's guard texts, to word the step again once measured
    involves: tuple[str, ...] = ()
    lines: tuple[str, ...] = ()


@dataclass(frozen=True)
class Judged:
    label: str
    proposal: Proposal | None  # None: the default baseline
    trial: TrialReport
    score: float | None
    verdict: Literal["baseline", "recommended", "accepted", "rejected", "reference"]  # reference: ran, not a candidate
    why: str


@dataclass(frozen=True)
class AdviceReport:
    objective: str
    lifetime: int
    rows: tuple[Judged, ...]
    code_fixes: tuple[CodeFix, ...]
    recommendation: Judged | None
    tie: str = ""  # when the pick is within the noise of the runner-up: which, and by how much
    horizon: str = ""  # the requests the pick was judged over, and from how many another is picked
    notes: tuple[str, ...] = ()  # what was not proposed and why ("guard filters: none proposed beside --mode …")
