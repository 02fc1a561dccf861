"""Frozen records: what was measured (specs) kept apart from what was observed (raw records).

Everything a report shows is derived from these records by :mod:`compilescope.analysis`;
nothing here computes statistics except trivial, lazily derived views.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Union

Shape = dict[str, int]
Scalar = Union[int, float, str, bool, None]

CacheMode = Literal["cold", "warm", "mega", "none"]
TrialStatus = Literal["ok", "failed", "timeout", "unavailable"]

GUARD_KINDS = (
    "size",
    "stride",
    "dtype",
    "rank",
    "device",
    "requires_grad",
    "grad_mode",
    "value",
    "module_attribute",
    "global",
    "length",
    "dict_keys",
    "other",
)


def shape_label(shape: Shape) -> str:
    """``16`` for a one-dimension shape, ``batch=4,seq=32`` otherwise."""
    if len(shape) == 1:
        return str(next(iter(shape.values())))
    return ",".join(f"{k}={v}" for k, v in shape.items())


def shape_key(shape: Shape) -> tuple[tuple[str, int], ...]:
    return tuple(shape.items())


@dataclass(frozen=True)
class GuardFailure:
    """One reason one cache entry rejected an input, parsed from PyTorch's words.

    ``reason`` is PyTorch's text (first line, without the ``0/0:`` prefix or the trailing
    source comment); ``failed_entry`` is the compile id of the entry that rejected the input.
    """

    reason: str
    failed_entry: str | None
    kind: str
    source: str | None = None
    dim: int | None = None
    expected: Scalar = None
    actual: Scalar = None

    def describe(self) -> str:
        """A short human form: ``L['x'] dim 0: 16 → 32``."""
        where = self.source or "?"
        if self.dim is not None:
            where += f" dim {self.dim}"
        if self.kind in ("size", "stride", "rank", "dtype", "value", "module_attribute", "global", "length"):
            if self.actual is not None:
                return f"{where} {self.kind}: {self.expected} → {self.actual}"
            return f"{where}: {self.expected}"
        return f"{where} {self.kind.replace('_', ' ')}"


@dataclass(frozen=True)
class CompileEvent:
    """One frame compile reported by PyTorch's compilation metrics."""

    compile_id: str
    function: str
    filename: str
    line: int
    compile_time_s: float | None
    phases_s: dict[str, float] = field(default_factory=dict)
    cache: dict[str, int] = field(default_factory=dict)
    reasons: tuple[GuardFailure, ...] = ()
    fail_type: str | None = None
    fail_reason: str | None = None
    call_index: int | None = None
    forward: bool = True
    phase: str = "stream"

    @property
    def failed(self) -> bool:
        return self.fail_type is not None

    @property
    def is_recompile(self) -> bool:
        """A compile of a frame that already had a cache entry (``0/1``, ``0/2``…)."""
        _, _, attempt = self.compile_id.partition("/")
        return attempt not in ("", "0")


@dataclass(frozen=True)
class GraphBreak:
    reason: str
    filename: str | None
    line: int | None
    call_index: int | None = None


@dataclass(frozen=True)
class CallRecord:
    """One request of the stream, as it happened (first calls included, never averaged)."""

    index: int
    shape: Shape
    latency_s: float | None
    compile_ids: tuple[str, ...] = ()
    error: str | None = None
    unattributed_reasons: tuple[GuardFailure, ...] = ()
    ran_eagerly: bool | None = None  # True: fell back to eager (recompile limit / failed compile)
    padded_shape: Shape | None = None  # the bucket the request was padded to

    @property
    def compiled(self) -> bool:
        return bool(self.compile_ids)


@dataclass(frozen=True)
class SteadyState:
    """Raw warmed samples for one shape: the compiled callable and eager, interleaved."""

    shape: Shape
    warmup: int
    compiled_s: tuple[float, ...]
    eager_s: tuple[float, ...]
    error: str | None = None


@dataclass(frozen=True)
class NumericsCheck:
    shape: Shape
    dtype: str | None
    max_abs_err: float | None
    max_rel_err: float | None
    atol: float | None
    rtol: float | None
    passed: bool
    detail: str | None = None


@dataclass(frozen=True)
class MarkSpec:
    """``--mark x:0:1:1024``: mark dim 0 of input ``x`` dynamic, optionally within a range."""

    input: str
    dim: int
    min: int | None = None
    max: int | None = None

    def __str__(self) -> str:
        text = f"{self.input}:{self.dim}"
        if self.min is not None or self.max is not None:
            text += f":{'' if self.min is None else self.min}:{'' if self.max is None else self.max}"
        return text


@dataclass(frozen=True)
class StrategyOptions:
    backend: str = "inductor"
    mode: str | None = None
    marks: tuple[MarkSpec, ...] = ()
    recompile_limit: int | None = None
    dynamic_sources: str | None = None
    block: str | None = None
    buckets: tuple[int, ...] = ()  # empty: powers of two


@dataclass(frozen=True)
class MeasureOptions:
    warmup: int = 3
    samples: int = 30
    min_samples: int = 5
    budget_s: float = 2.0
    threads: int | None = 1
    device: str = "cpu"
    steady: bool = True
    numerics: bool = True


@dataclass(frozen=True)
class TrialSpec:
    """What one trial measures; hashable identity of a row in the results."""

    workload: str
    strategy: str
    cache: CacheMode
    stream: tuple[Shape, ...]
    options: StrategyOptions = StrategyOptions()
    measure: MeasureOptions = MeasureOptions()


@dataclass(frozen=True)
class TrialResult:
    spec: TrialSpec
    status: TrialStatus
    error: str | None = None
    stderr_tail: str | None = None
    calls: tuple[CallRecord, ...] = ()
    compiles: tuple[CompileEvent, ...] = ()
    graph_breaks: tuple[GraphBreak, ...] = ()
    steady: tuple[SteadyState, ...] = ()
    numerics: tuple[NumericsCheck, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    process_s: float | None = None
    import_s: float | None = None
    build_s: float | None = None
    cache_load_s: float | None = None  # mega-cache: load_cache_artifacts() before the first call
    artifacts_bytes: int | None = None
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass(frozen=True)
class RunResult:
    workload: str
    stream: tuple[Shape, ...]
    trials: tuple[TrialResult, ...]
    created: str = ""
    command: str = ""
    lifetime: int | None = None  # requests over which the verdict projects the accounting
    schema_version: int = 1


# ----------------------------------------------------------------------------- probe records


@dataclass(frozen=True)
class ProbeCompile:
    """One Dynamo frame compile seen while probing a program (or read from a trace)."""

    compile_id: str
    function: str
    filename: str
    line: int
    reasons: tuple[str, ...] = ()  # PyTorch's text, one per cache entry that rejected the input
    guard_failures: tuple[GuardFailure, ...] = ()  # the same, parsed (one per failing guard)
    compile_time_s: float | None = None
    phases_s: dict[str, float] = field(default_factory=dict)
    fail_type: str | None = None
    fail_reason: str | None = None
    recompile_limit_hit: bool = False
    start_time_us: int | None = None

    @property
    def failed(self) -> bool:
        return self.fail_type is not None


@dataclass(frozen=True)
class ProbeGraphBreak:
    """One occurrence of a graph break (the summary deduplicates; the JSON keeps each)."""

    reason: str
    filename: str | None
    line: int | None
    compile_id: str | None = None


@dataclass(frozen=True)
class ProbeCall:
    """The input shapes of one call of a compiled function (``x.0`` = dim 0 of input ``x``)."""

    function: str
    inputs: dict[str, list[int]]


@dataclass(frozen=True)
class ProbeResult:
    source: str  # the script (with its arguments) or the trace directory
    compiles: tuple[ProbeCompile, ...] = ()
    graph_breaks: tuple[ProbeGraphBreak, ...] = ()
    calls: tuple[ProbeCall, ...] = ()
    exit_code: int = 0
    error: str | None = None
    recompile_limit: int | None = None
    counters: dict[str, int] = field(default_factory=dict)  # trace reader: unknown/malformed events
    torch_version: str = ""
    kind: str = "probe"
    schema_version: int = 1
