"""The verification of a warm-up plan by replay: frozen records a renderer formats and
nothing recomputes.

For each verified strategy two measured trials ran on the held-out stream, each in a fresh
process on an empty compile cache: one that first called the plan's start-up shapes
(``with``), one that did not (``without``). A :class:`VerifyReport` holds, per strategy, the
held-out requests that still compiled, ran eagerly or raised after the start-up (each with
the guards that failed, from the compile records), the stall-free fraction, request latency
percentiles with and without the warm-up, the start-up cost against the stall cost avoided,
and beside them the dry-run forecast of the same start-up and stream (labelled forecast).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ..model import shape_label
from .forecast import ForecastGuard, Outcome


@dataclass(frozen=True)
class VerifyRequest:
    """A held-out request that did not hit a warmed graph (measured, with the warm-up)."""

    index: int  # in the held-out stream
    shape: tuple[tuple[str, int], ...]
    outcome: Outcome  # compile, eager or error
    compile_ids: tuple[str, ...] = ()
    guards: tuple[ForecastGuard, ...] = ()
    covered: bool = False  # the plan lists the shape as covered
    uncovered_why: str | None = None  # the plan's reason, when it lists the shape as uncovered
    forecast: Outcome | None = None  # the dry run's outcome for this request
    latency_s: float | None = None
    error: str | None = None
    what: str = ""  # what it did, in words ("compiles 0/1", "eager"); analysis/presented.py's finish_request
    plan_note: str = ""  # what the plan and its forecast said of it

    @property
    def shape_label(self) -> str:
        return shape_label(dict(self.shape))


@dataclass(frozen=True)
class Latency:
    """Measured request latency over the held-out stream (requests that raised left out)."""

    requests: int
    p50_s: float | None
    p99_s: float | None
    max_s: float | None
    compiling_requests: int  # requests that compiled on the request path
    compile_s: float  # compile seconds on the request path (PyTorch's measure of each compile)
    eager_requests: int
    stall_s: float = 0.0  # the compiling requests' own latencies, summed: the wall their callers waited


@dataclass(frozen=True)
class StrategyVerify:
    strategy: str
    startup_shapes: int
    heldout: int
    status: str  # the warmed trial's status (ok, partial, failed, timeout…)
    failures: tuple[VerifyRequest, ...]  # after start-up: compiled, eager or raised
    stall_free: float | None  # measured: held-out requests that hit a warmed graph / all
    with_warmup: Latency | None
    without_warmup: Latency | None
    startup_s: float | None  # measured: the sum of the start-up calls' latencies
    startup_compiles: int
    stall_avoided_s: float | None  # measured: the compiling requests' wall (``stall_s``), without − with
    forecast_compiles: int | None = None  # forecast: held-out requests predicted to compile after start-up
    forecast_eager: int | None = None
    forecast_stall_free: float | None = None  # forecast: held-out requests predicted to hit / all
    agreement: float | None = None  # held-out requests whose forecast outcome is the measured one / those predicted
    disagreements: tuple[int, ...] = ()  # their held-out indices
    forecast_wall_s: float | None = None
    error: str | None = None
    notes: tuple[str, ...] = ()
    startup_compile_s: float | None = None  # measured: PyTorch's compile seconds within the start-up calls
    forecast_unknown: int = 0  # forecast: held-out requests whose outcome it could not predict

    @property
    def listed_uncovered(self) -> int:
        """The failing requests the plan lists as uncovered."""
        return sum(r.uncovered_why is not None for r in self.failures)

    @property
    def passed(self) -> bool:
        """Nothing compiled or ran eagerly after start-up except what the plan lists as uncovered."""
        return self.status == "ok" and all(r.uncovered_why is not None for r in self.failures)


@dataclass(frozen=True)
class VerifyReport:
    workload: str
    plan_stream: str  # the recording the plan was made from
    heldout: int  # held-out requests replayed
    backend: str
    torch_version: str
    strategies: tuple[StrategyVerify, ...]
    recommended: str | None = None
    wall_s: float = 0.0
    kind: Literal["verify"] = "verify"
    notes: tuple[str, ...] = field(default=())

    @property
    def passed(self) -> bool:
        """Every verified strategy held (:attr:`StrategyVerify.passed`): what ``warmup --verify``'s
        exit status says."""
        return bool(self.strategies) and all(s.passed for s in self.strategies)

    def strategy(self, name: str) -> StrategyVerify:
        for s in self.strategies:
            if s.strategy == name:
                return s
        raise KeyError(name)
