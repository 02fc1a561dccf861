"""The compare report: two runs' figures side by side, per paired trial and shape, flagged
only beyond the noise (the rules are :mod:`compilescope.analysis.compare`'s)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Flag = Literal["regression", "improvement", ""]

LEGEND = ("change = B / A − 1; speedup = eager p50 / compiled p50, both sampled in the trial's own process "
          "(higher is better, a drop is a regression); errors, fallbacks, compiles, compile s and first call: "
          "lower is better; compile s is flagged only when both did the same work")


@dataclass(frozen=True)
class Change:
    trial: str
    shape: str  # "" for a trial-level figure
    figure: str  # "status", "request errors", "eager fallbacks", "compiles", "compile s", "first call", "speedup"…
    a: float | None
    b: float | None
    change: float | None  # relative: b / a − 1
    flag: Flag
    why: str
    a_text: str = ""  # the values as every report prints them
    b_text: str = ""


@dataclass(frozen=True)
class Pair:
    """Two trials compared: A's label, B's label, and what differs between them besides
    what the comparison is about (backend, mode, device, torch, threads, start mode)."""

    a: str
    b: str
    differences: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.a if self.a == self.b else f"{self.a} → {self.b}"


@dataclass(frozen=True)
class CompareReport:
    a: str
    b: str
    changes: tuple[Change, ...]
    only_in_a: tuple[str, ...]
    only_in_b: tuple[str, ...]
    pairs: tuple[Pair, ...] = ()
    pair_by: str = "label"
    workload: str = ""
    versions: tuple[str, ...] = ()  # what A and B ran on, where every pair differs alike: "torch 2.13.0 → 2.14.1"
    pairing: str = ""  # how the trials were paired, in words ("default with guard-filter[inbuilt-nn]: …")

    @property
    def speedups(self) -> tuple[Change, ...]:
        """The speedup changes measured on both sides."""
        return tuple(c for c in self.changes if c.figure == "speedup" and c.a is not None and c.b is not None)

    @property
    def regressions(self) -> tuple[Change, ...]:
        return tuple(c for c in self.changes if c.flag == "regression")

    def regressions_beyond(self, threshold: float) -> tuple[Change, ...]:
        """Flagged regressions larger than ``threshold`` (a fraction); one with no relative
        size (a failed trial, errors where A had none) is always beyond, and so is a trial B
        failed where A failed too (no regression, but B is no run to pass)."""
        still = tuple(c for c in self.changes if c.figure == "status" and not c.flag and c.b_text != "ok")
        return tuple(c for c in self.regressions if c.change is None or abs(c.change) > threshold) + still

    @property
    def warnings(self) -> tuple[str, ...]:
        """Each pair's differences besides what is compared, less the versions said once."""
        said = tuple(v.split(" ", 1)[0] + " differs" for v in self.versions)
        return tuple(f"{p.name}: {d}" for p in self.pairs for d in p.differences if not d.startswith(said))
