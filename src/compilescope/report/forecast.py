"""The forecast report: frozen records a renderer formats and nothing recomputes.

A :class:`ForecastReport` holds, per strategy, one :class:`ForecastRequest` per request of
the stream with its predicted outcome:

``hit``
    an existing compiled graph accepts the request;
``compile``
    Dynamo compiles on the request path (a stall); ``guards`` are the guards of the existing
    cache entries that rejected it, in PyTorch's words and parsed;
``eager``
    the recompile limit refused a compile (or a frame of the call), so the request ran eagerly;
``error``
    the request raises (``error`` says how): it raised in the dry run computing for real, as
    it would in a real run;
``unknown``
    no prediction can be made (``why`` says why): a guard could not be evaluated, a frame
    could not be traced, or a premise of the method does not hold; a request after one whose
    outcome is unknown is unknown too, as the cache state it meets is not known.

``basis`` says where an outcome came from: ``traced`` (this request went through Dynamo)
or ``repeat`` (an identical earlier request's: Dynamo's caches only grow, so a shape that
was accepted once is accepted again, and one refused at the limit is refused again), or
``guards`` (the recorded guards of the cache entries were evaluated against it).

A report's ``method`` is ``dry run`` (the real Dynamo on fake tensors of the real device) or ``recorded
guards`` (the guards each cache entry had in a results file, evaluated without the model).
A recorded-guard request is ``estimated`` (``why`` says why) once the forecast relies on a
cache entry whose guards were not recorded: one the stream compiles that the recording did
not, whose guards are then PyTorch's rule for it, not PyTorch's own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ..model import shape_label

Outcome = str  # the forecast's word, analysis.outcomes.ForecastWord (the report model imports no analysis)
OUTCOMES: tuple[Outcome, ...] = ("hit", "compile", "eager", "error", "unknown")


@dataclass(frozen=True)
class ForecastGuard:
    """One guard of an existing cache entry that rejected the request."""

    entry: str  # the compile id of the rejecting cache entry, "0/0"
    text: str  # PyTorch's words
    kind: str  # the parsed guard kind (size, relation, dtype, …; argument_attribute: a value inside an argument)
    source: str | None = None
    dim: int | None = None
    expected: str | None = None
    actual: str | None = None


@dataclass(frozen=True, slots=True)
class ForecastRequest:
    index: int
    shape: tuple[tuple[str, int], ...]
    outcome: Outcome
    basis: Literal["traced", "repeat", "guards"] = "traced"
    compile_ids: tuple[str, ...] = ()
    guards: tuple[ForecastGuard, ...] = ()
    error: str | None = None
    compile_s: float | None = None  # predicted compile seconds of this request, when a result file gave times
    estimated: bool = False  # recorded guards: relies on a cache entry whose guards were not recorded
    why: str | None = None  # why it is estimated, or why its outcome is unknown
    entries_tried: int | None = None  # cache entries its lookup will try (the hit included)
    lookup_s: float | None = None  # what that lookup costs, from a measured run's guard checks

    @property
    def shape_label(self) -> str:
        return shape_label(dict(self.shape))

    @property
    def guards_unrecorded(self) -> bool:
        """It recompiles (no compile of it is a frame's first, ``N/0``) and no guard of the
        entries that rejected it was recorded."""
        return not self.guards and bool(self.compile_ids) and not any(c.endswith("/0") for c in self.compile_ids)


@dataclass(frozen=True)
class CompileTimes:
    """Measured compile times a prediction uses, from a results file."""

    source: str  # the file and trial they come from
    first_s: float | None  # median of the measured first compiles of a frame
    first_n: int
    recompile_s: float | None  # median of the measured recompiles
    recompile_n: int


@dataclass(frozen=True)
class Lookups:
    """The guard lookups a strategy's cache entries will cost the stream's requests that hit:
    the entries each tries (replayed from the dry run, in the order Dynamo keeps them), and
    their time when a measured run of the strategy timed the checks (``source``)."""

    mean_tried: float
    most_tried: int
    per_request_s: float | None = None  # mean over the hits whose every check was measured
    timed: int = 0  # those hits
    source: str | None = None
    untold: int = 0  # hits left out: which entry they run the recorded guards could not tell


@dataclass(frozen=True)
class StrategyForecast:
    strategy: str
    requests: tuple[ForecastRequest, ...]
    hits: int
    compiles: int
    eager: int
    errors: int
    # the requests that went through Dynamo: a dry run's distinct shapes, each called once (the rest
    # repeat an earlier identical request; a hit among them traces nothing); a recorded forecast's
    # requests evaluated
    traced: int
    recompile_limit: int
    dry_wall_s: float
    stalls: tuple[int, ...] = ()  # indices of the requests that compile
    predicted_compile_s: float | None = None
    compile_times: CompileTimes | None = None
    notes: tuple[str, ...] = ()
    estimated: int = 0  # requests marked estimated (recorded guards)
    guards_unevaluated: int = 0  # recorded guards that could not be evaluated
    recorded_from: str | None = None  # the results file and trial whose guards were evaluated
    unknown: int = 0  # requests whose outcome cannot be predicted (each with its ``why``)
    computed: bool = False  # the dry run computed for real (a request needed tensor values)
    lookups: Lookups | None = None  # the guard lookups the stream's requests will pay

    @property
    def known(self) -> int:
        """Requests with a prediction (hit, compile, eager, or an error the request raises)."""
        return self.hits + self.compiles + self.eager + self.errors

    @property
    def every_request_raises(self) -> bool:
        return bool(self.requests) and self.errors == len(self.requests)

    @property
    def several_compiles(self) -> bool:
        """More than one request compiles: the stream stalls after its first."""
        return self.compiles > 1

    def with_outcome(self, outcome: Outcome) -> tuple[ForecastRequest, ...]:
        """The requests predicted ``outcome``, in stream order."""
        return tuple(r for r in self.requests if r.outcome == outcome)

    def counts(self) -> dict[str, int]:
        """Requests per outcome, in the order a headline says them."""
        return {"compile": self.compiles, "eager": self.eager, "hit": self.hits, "error": self.errors,
                "unknown": self.unknown}


@dataclass(frozen=True)
class Agreement:
    """Two methods' forecasts of the same stream and strategy, request by request."""

    strategy: str
    agree: int
    requests: int
    differ: tuple[tuple[int, str, str], ...] = ()  # (request index, dry run outcome, recorded-guard outcome)

    @property
    def share(self) -> float:
        """The share of the requests on which the two methods agree (1 of none)."""
        return self.agree / self.requests if self.requests else 1.0


@dataclass(frozen=True)
class ForecastReport:
    workload: str
    stream_length: int
    distinct_shapes: int
    backend: str  # what the forecast predicts for
    dry_backend: str  # what the dry run traced with
    torch_version: str
    wall_s: float
    strategies: tuple[StrategyForecast, ...]
    mode: Literal["dry-run", "recorded-guards"] = "dry-run"  # ``method``, as a token
    notes: tuple[str, ...] = field(default=())
    method: Literal["dry run", "recorded guards"] = "dry run"
    compared: ForecastReport | None = None  # the other method's forecast of the same stream, when both ran
    agreement: tuple[Agreement, ...] = ()  # per strategy, with ``compared``

    @property
    def recorded(self) -> bool:
        """The recorded-guard method (no model run), not a dry run."""
        return self.method == "recorded guards"

    def strategy(self, name: str) -> StrategyForecast:
        found = self.forecast_of(name)
        if found is None:
            raise KeyError(name)
        return found

    def forecast_of(self, name: str) -> StrategyForecast | None:
        """The forecast of strategy ``name``, None when this report has none."""
        return next((s for s in self.strategies if s.strategy == name), None)
