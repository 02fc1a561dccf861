"""Frozen records: what was measured (specs) kept apart from what was observed (raw records).

One family of records serves runs, probes and traces: a frame compile is a
:class:`CompileRecord` wherever it was seen, a graph break a :class:`GraphBreak`. Everything
a report shows is derived from these by :mod:`compilescope.analysis`; nothing here computes
statistics.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, Union

from .errors import OptionError, WorkloadError

# The schema version of every file compilescope writes (results and probe JSON, journals,
# store rows): one number for the records below. Its history and the steps that migrate older
# files on load are in :mod:`compilescope.schema`.
SCHEMA_VERSION = 6

Shape = dict[str, int]
Scalar = Union[int, float, str, bool, None]

CacheMode = Literal["cold", "warm", "mega", "none"]
TrialStatus = Literal["ok", "partial", "failed", "timeout", "unavailable", "interrupted"]
CompileOutcome = Literal["compiled", "failed", "refused"]


def shape_label(shape: Shape) -> str:
    """``16`` for a one-dimension shape, ``batch=4,seq=32`` otherwise."""
    if len(shape) == 1:
        return str(next(iter(shape.values())))
    return ",".join(f"{k}={v}" for k, v in shape.items())


def shape_key(shape: Shape) -> tuple[tuple[str, int], ...]:
    return tuple(shape.items())


Inputs = Any  # what make_inputs returns: see call_arguments


def call_arguments(inputs: Inputs) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """``make_inputs``' return value as a call's (positional, keyword) arguments — the one
    rule, for a :class:`Workload` and :func:`compilescope.warm_up` alike: a ``dict`` is
    keyword arguments; a pair ``(tuple, dict)`` is positional and keyword arguments; any
    other tuple or list is the positional arguments; anything else is the one positional
    argument."""
    if isinstance(inputs, dict):
        return (), dict(inputs)
    if isinstance(inputs, tuple) and len(inputs) == 2 and isinstance(inputs[0], tuple) and isinstance(inputs[1], dict):
        return inputs[0], dict(inputs[1])
    if isinstance(inputs, (tuple, list)):
        return tuple(inputs), {}
    return (inputs,), {}


@dataclass(frozen=True)
class Workload:
    """A thing to compile and the inputs to feed it.

    ``build()`` returns the function or ``nn.Module`` to compile (called once per trial, in the
    trial's own process). ``make_inputs(shape)`` returns one request's arguments for that
    shape (:func:`call_arguments`): a tuple or list of positional arguments, a dict of keyword
    arguments, a pair ``(args_tuple, kwargs_dict)`` of both, or a single positional argument.
    It is called with the torch RNG seeded from the shape, so inputs are reproducible.
    ``dims`` names the shape dimensions a stream varies, in order.

    Migration: ``run``, ``advise`` and ``forecast`` once read a returned pair ``(tuple, dict)``
    as two positional arguments, where ``warm_up`` read it as positional plus keyword
    arguments; all read it as the latter now. A function whose two positional arguments are
    a tuple and a dict gets them from ``[a_tuple, a_dict]`` or ``((a_tuple, a_dict), {})``.

    ``step(fn, *args, **kwargs)``, when given, is how one request runs the (compiled) target:
    a training workload compiles the model and runs forward, loss, backward and the optimizer
    step around it, so the request's latency is the whole step. ``grad`` enables autograd.
    ``snapshot()``, for a step that changes state, saves it and returns a function restoring
    it: the numerics check then runs eager and compiled steps from the same state.

    ``recorded_dims`` says how a recording of the compiled function (``watch(record_shapes=)``)
    names each dim: ``{"past": "cache.layers[0].keys.2"}`` reads dim ``past`` from that
    recorded size, 0 in a request whose recording has no such tensor (a prefill's empty
    cache). Without it a recording's sizes are matched to ``dims`` in order.
    """

    name: str
    build: Callable[[], Callable[..., Any]]
    make_inputs: Callable[[Shape], Inputs]
    dims: tuple[str, ...]
    default_stream: tuple[Shape, ...]
    description: str = ""
    grad: bool = False
    step: Callable[..., Any] | None = field(default=None, compare=False)
    snapshot: Callable[[], Callable[[], None]] | None = field(default=None, compare=False)
    ref: str | None = field(default=None, compare=False)
    recorded_dims: Mapping[str, str] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not self.dims:
            raise WorkloadError(f"workload {self.name!r} declares no shape dimensions (dims=)")
        unknown = sorted(set(self.recorded_dims or ()) - set(self.dims))
        if unknown:
            raise WorkloadError(f"workload {self.name!r}: recorded_dims names {', '.join(unknown)}, not among its dims")


@dataclass(frozen=True, order=True)
class CompileId:
    """PyTorch's frame compile id ``"<frame>/<attempt>"``: ``0/0`` is the first compile of
    frame 0, ``0/1`` its first recompile. Ids restart after ``torch._dynamo.reset()``, so a
    compile is identified by its id *and* its :attr:`CompileRecord.epoch`."""

    frame: int
    attempt: int

    @property
    def is_recompile(self) -> bool:
        return self.attempt > 0

    def __str__(self) -> str:
        return f"{self.frame}/{self.attempt}"

    @classmethod
    def parse(cls, text: object) -> CompileId | None:
        """``"0/1"`` (also ``"[0/1]"`` or ``"!0/0/1"`` forms' last two numbers) or None."""
        if not isinstance(text, str):
            return None
        parts = text.strip("[] ").split("/")
        if len(parts) < 2:
            return None
        try:
            return cls(int(parts[-2].lstrip("!")), int(parts[-1]))
        except ValueError:
            return None


@dataclass(frozen=True)
class GuardFailure:
    """One reason one cache entry rejected an input, parsed from PyTorch's words.

    ``reason`` is PyTorch's text (first line, without the ``0/0:`` prefix or the trailing
    source comment); ``failed_entry`` is the compile id of the entry that rejected the input.
    ``kind`` is what the guard checks: ``size``, ``relation`` (between sizes: equality across
    inputs, divisibility/parity, a threshold on a product), ``range`` (a size outside the bounds
    a dynamic dim was given), ``specialization`` (a size of 0 or 1, which Dynamo always
    specialises), ``stride``, ``dtype``, ``rank``, ``device``, ``requires_grad``, ``grad_mode``,
    ``value``, ``module_attribute``, ``global``, ``length``, ``dict_keys`` or ``other``.
    """

    reason: str
    failed_entry: str | None
    kind: str
    source: str | None = None
    dim: int | None = None
    expected: Scalar = None
    actual: Scalar = None
    involves: tuple[str, ...] = ()  # every input dim a relation or threshold names ("L['x'] dim 2")
    found_by: str = "pytorch"  # "compilescope": a failing guard PyTorch's reason did not name
    user_line: str | None = None  # the user's source line PyTorch cites, "file.py:13"

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
class EntryGuard:
    """One guard of a new cache entry, recorded when the entry was compiled (only guards on
    the frame's inputs: those on parameters, modules and globals are left out).

    ``kind`` uses :class:`GuardFailure`'s words: ``tensor`` (a ``TENSOR_MATCH``: ``sizes``
    are its static sizes, ``None`` where the dim is dynamic, ``example`` the sizes of the input
    it was compiled for, ``dtype`` its dtype), ``size``/``relation``/``range``/``specialization``
    (a symbolic-shape guard: ``text`` is its expression over sources, ``2 <= L['x'].size()[0]``),
    ``value`` (a Python scalar input's value, ``expected``; a symbolic int's specialisation,
    ``L['n'] == 2``, too), ``scalar`` (a symbolic-shape guard over a Python number input,
    ``2 <= L['n']``: ``text``) or ``other`` (``text`` only)."""

    kind: str
    source: str | None = None
    dim: int | None = None
    expected: Scalar = None
    text: str = ""
    sizes: tuple[int | None, ...] = ()
    example: tuple[int, ...] = ()
    dtype: str | None = None

    @property
    def dynamic_dims(self) -> tuple[int, ...]:
        return tuple(i for i, s in enumerate(self.sizes) if s is None)


@dataclass(frozen=True)
class CompiledTarget:
    """What the user passed to ``torch.compile``, when it is known: ``Linear.forward`` for
    a module, the function's qualified name otherwise, with the user-facing file and line
    (decorators unwrapped) and its parameter names (``self`` left out); ``packed``, the names
    the frame ``torch.compile`` enters gives the ``*args``/``**kwargs`` it passes on (PyTorch's
    wrapper around a module, a decorator's own; None for an undecorated function)."""

    name: str
    filename: str
    line: int
    params: tuple[str, ...] = ()
    packed: tuple[str, str] | None = ("args", "kwargs")  # None: the frame is the function's own


def made_entry(outcome: str) -> bool:
    """Whether a compile attempt with this outcome left a cache entry (its report row asks too)."""
    return outcome == "compiled"


RESUME_PREFIX = "torch_dynamo_resume_in_"  # how Dynamo names the frame it makes of a function's code after a graph break


@dataclass(frozen=True)
class CompileRecord:
    """One Dynamo frame compile, attempted: compiled, failed, or refused by the recompile
    limit (a refused attempt is not a compile). ``function``/``filename``/``line`` are the
    frame's code as PyTorch names it; ``target`` names it for the user when the frame is
    PyTorch's own wrapper (``inner`` in ``external_utils.py``) or a decorator's.

    ``reasons`` holds PyTorch's text, one per cache entry that rejected the input
    (``"tensor 'x' size mismatch …"``), and ``rejected_by`` the id of each of those entries
    (``"0/0"``); ``guard_failures`` the same parsed, one per failing guard. A lazily compiled backward is not a frame compile: its time is
    ``backward_compile_s`` (and phase ``backward``) of its forward's record.
    """

    compile_id: CompileId
    function: str
    filename: str
    line: int
    outcome: CompileOutcome = "compiled"
    epoch: int = 0
    reasons: tuple[str, ...] = ()
    rejected_by: tuple[str, ...] = ()
    guard_failures: tuple[GuardFailure, ...] = ()
    compile_time_s: float | None = None
    phases_s: dict[str, float] = field(default_factory=dict)
    cache: dict[str, int] = field(default_factory=dict)
    backward_compile_s: float | None = None
    guards_unevaluated: dict[str, int] = field(default_factory=dict)  # guard kind → count, when a walk could not tell
    fail_type: str | None = None
    fail_reason: str | None = None
    call_index: int | None = None
    phase: str = "stream"
    start_time_us: int | None = None
    target: CompiledTarget | None = None
    entry_guards: tuple[EntryGuard, ...] = ()  # the new cache entry's guards on its inputs (compiled ones)
    entry_guards_cut: int = 0  # guards past the recording's bounds, not kept
    guard_count: int | None = None  # PyTorch's count of the new cache entry's guards (compilation metrics)
    guard_latency_s: float | None = None  # PyTorch's one evaluation of them at compile time, on a flushed cache
    automatic_dynamic: bool | None = None  # a dim whose size had changed was compiled dynamic (Dynamo's settings then)
    entries_before: int | None = None  # the frame's entries for the same ID_MATCH'd objects when it compiled (``cache_size``)
    fail_at: tuple[str, int] | None = None  # a failed compile: the user code Dynamo was tracing when it failed (file, line)
    reached_call: bool | None = None  # a failed compile: its error raised into the call (True) or Dynamo ran the frame eagerly (False); watch only

    @property
    def resumes(self) -> bool:
        """The frame is one Dynamo made to resume a function after a graph break."""
        return self.function.startswith(RESUME_PREFIX)

    @property
    def key(self) -> tuple[int, int, int]:
        """Identity within a process: (reset epoch, frame, attempt)."""
        return (self.epoch, self.compile_id.frame, self.compile_id.attempt)

    @property
    def is_compile(self) -> bool:
        """Counted as a frame compile: it compiled or failed while compiling (the one
        definition every count reads; a refusal at the recompile limit is not a compile)."""
        return self.outcome != "refused"

    @property
    def made_entry(self) -> bool:
        """It left a cache entry: it compiled (a failed compile and a refusal leave none)."""
        return made_entry(self.outcome)

    @property
    def is_recompile(self) -> bool:
        """A compile of a frame that already held a cache entry, PyTorch's own definition
        (``is_recompilation``: the frame's ``cache_size`` ≥ 1). A second attempt after a
        compile that failed, which left no entry, is not one. Records that did not note the
        frame's entries (older files) count any attempt after the first."""
        if not self.is_compile:
            return False
        if self.entries_before is not None:
            return self.entries_before > 0
        return self.compile_id.is_recompile

    @property
    def failed(self) -> bool:
        return self.outcome == "failed"

    @property
    def refused(self) -> bool:
        return self.outcome == "refused"

    @property
    def display_name(self) -> str:
        """The compiled target's name, else the frame's; a frame refused before any compile of
        it (a recompile limit of 0) is named by nothing PyTorch records."""
        return self.target.name if self.target is not None else (self.function or "(a frame PyTorch did not name)")

    @property
    def display_location(self) -> str:
        if self.target is not None:
            return f"{self.target.filename}:{self.target.line}"
        return f"{self.filename}:{self.line}" if self.filename else "(no location recorded)"


@dataclass(frozen=True)
class GraphBreak:
    """One occurrence of a graph break (summaries deduplicate; the JSON keeps each)."""

    reason: str
    filename: str | None
    line: int | None
    call_index: int | None = None
    compile_id: str | None = None
    phase: str = "stream"


@dataclass(frozen=True)
class ErrorInfo:
    """An exception a request raised, kept whole: ``message`` is its full text (bounded),
    ``op_line`` the line of it that names the PyTorch op that failed (``target:
    aten._transformer_encoder_layer_fwd.default`` in a lowering error), ``user_frame`` the
    last frame in the user's code (``model.py:42 in forward``), not PyTorch's or ours."""

    type: str
    message: str
    op_line: str | None = None
    user_frame: str | None = None


@dataclass(frozen=True)
class CallRecord:
    """One request of the stream, as it happened (first calls included, never averaged).

    ``graphs_run`` lists the compiled graphs (by compile id) the call actually executed,
    recorded by the wrapped backend; ``ran_eagerly`` is True when the trial had compiled
    graphs and the call ran none of them (recompile limit, failed compile, skipped frame),
    None when it cannot be told; a call that ran some frames compiled and one eagerly is told
    from ``graphs_run`` (:func:`compilescope.collect.graphs.eager_frames`).
    """

    index: int
    shape: Shape
    latency_s: float | None
    compile_ids: tuple[str, ...] = ()
    error: str | None = None
    unattributed_reasons: tuple[GuardFailure, ...] = ()
    ran_eagerly: bool | None = None
    padded_shape: Shape | None = None  # the bucket the request was padded to
    graphs_run: tuple[str, ...] | None = None
    error_info: ErrorInfo | None = None  # the whole exception ``error`` is the headline of

    @property
    def compiled(self) -> bool:
        return bool(self.compile_ids)


@dataclass(frozen=True)
class SteadyState:
    """Raw warmed samples for one shape: the compiled callable and eager, interleaved.
    ``ran_eagerly``: a sample of the compiled callable ran no compiled graph on this shape.
    ``changed_inputs``: the call changes its inputs (these paths: a decode step extends the
    cache it is passed), so each sample was given inputs made afresh."""

    shape: Shape
    warmup: int
    compiled_s: tuple[float, ...]
    eager_s: tuple[float, ...]
    error: str | None = None
    ran_eagerly: bool | None = None
    changed_inputs: tuple[str, ...] = ()
    # samples during which Dynamo compiled a frame (or failed to): not steady, dropped (not in compiled_s)
    compiling: int = 0
    # samples that ran none of the graphs of a frame refused at the recompile limit or failed
    # since it compiled (a graph break's resume frame run eagerly): the figure is not of compiled code
    partly_eager: int = 0
    # the inputs made afresh held the very tensors the call changed (``make_inputs`` gives back
    # one object): the samples ran on a state grown by the samples before them
    stale_inputs: bool = False


@dataclass(frozen=True)
class GuardGroup:
    """The guards of one kind of source in a cache entry: ``category`` is ``input`` (the
    frame's arguments), ``module`` (an ``nn.Module``'s type, attributes, dicts), ``parameter``
    (a parameter's or buffer's tensor guards), ``global``, ``ambient`` (the frame's global
    state: grad mode, default device, function-mode stack…), ``shape`` (symbolic-shape
    relations) or ``other``; ``owner`` the source they guard with module indices folded
    (``self.layers[*].linear``), ``owners`` how many sources were folded into it, ``kinds``
    each guard kind's count. ``samples_s``: the entry's guard check *without* this group's own
    managers (those whose every guard below is this group's: a part of the entry's tree, copied)
    on the call's inputs, each right after a real call — the whole tree copied the same way
    (:attr:`FrameGuards.copy_s`) minus this is what the group adds to the lookup; empty when
    not timed."""

    category: str
    owner: str
    owners: int
    kinds: dict[str, int] = field(default_factory=dict)
    samples_s: tuple[float, ...] = ()

    @property
    def guards(self) -> int:
        return sum(self.kinds.values())


@dataclass(frozen=True)
class EntryCheck:
    """One cache entry's guards evaluated on one shape's call inputs: ``passed`` when they
    accept it (the entry the call runs); ``samples_s`` raw, each right after a real call."""

    entry: str
    passed: bool
    samples_s: tuple[float, ...] = ()


@dataclass(frozen=True)
class FrameGuards:
    """A compiled frame one request of a shape entered: ``calls`` times per request (a block
    compiled regionally: once per instance), ``order`` its cache entries (compile ids) in the
    order a lookup tried them when measured (the most recently hit first), ``checks`` each
    entry's guards on this shape's inputs, ``guards`` the guard count of the entry that passed
    and ``groups`` those guards by source; ``copy_s`` that entry's whole guard tree copied as a
    group's part is (the base a part's time is read against). ``error`` says why a part is
    missing."""

    function: str
    frame: int | None
    calls: int
    order: tuple[str, ...] = ()
    checks: tuple[EntryCheck, ...] = ()
    guards: int = 0
    groups: tuple[GuardGroup, ...] = ()
    copy_s: tuple[float, ...] = ()
    guards_cut: int = 0
    error: str | None = None


@dataclass(frozen=True)
class GuardCost:
    """What one shape's calls pay for guards, measured after its steady state: the compiled
    frames a request enters, each with its cache entries' guard checks timed on the request's
    own inputs (``rounds`` samples each, every one right after a real call, none inside the
    steady samples). ``error``: why nothing was measured."""

    shape: Shape
    frames: tuple[FrameGuards, ...] = ()
    rounds: int = 0
    error: str | None = None


@dataclass(frozen=True)
class SoundnessCheck:
    """Whether compiled code goes stale when something a guard filter stopped guarding
    changes: ``mutation`` is the change as code (``model.layers[0].scale = 2.0``), ``kind`` what
    it changes (``module_attribute``, ``global``, ``requires_grad``, ``grad_mode``), ``guard``
    the dropped guard it tests. After the change, on ``shape``: ``eager_changed`` — eager's
    output changed (else the mutation tells nothing); ``stale`` — the compiled output no longer
    matched eager's (None: not told); ``max_abs_err`` the difference; ``recompiled`` — the
    compiled call compiled again (its guards saw the change)."""

    mutation: str
    kind: str
    guard: str
    shape: Shape
    eager_changed: bool | None
    stale: bool | None
    max_abs_err: float | None = None
    detail: str | None = None
    recompiled: bool = False


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
    ran_eagerly: bool | None = None
    comparable: bool = True  # False: no verdict (``unjudged`` says why)
    # why not comparable: "eager varies" (two eager calls gave different outputs: state,
    # randomness; a file that predates this field means it), "eager raised" or "not comparable"
    unjudged: str = ""
    uncompared: int = 0  # parts of the outputs past the walk's bounds (depth, leaves): not compared


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


# what run, demo, sweep and the Python API compare when no strategies are named
DEFAULT_STRATEGIES = ("eager", "default", "static", "dynamic")


@dataclass(frozen=True)
class StrategyOptions:
    backend: str = "inductor"
    mode: str | None = None
    marks: tuple[MarkSpec, ...] = ()
    recompile_limit: int | None = None
    dynamic_sources: str | None = None
    block: str | None = None
    buckets: tuple[int, ...] = ()  # empty: powers of two
    config: str = ""  # Dynamo settings for the whole trial, "NAME=VALUE,…" (advise measures PyTorch's own hints)


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
    python: str | None = None  # the interpreter trials run in (``run --python``); None: the driver's own
    guards: bool = True  # time each compiled shape's guard checks after its steady state


@dataclass(frozen=True)
class TrialSpec:
    """What one trial measures; the hashable identity of a row in the results.

    ``variant`` tells apart two trials of one strategy with different options (e.g.
    ``mark-dynamic`` with two different marks) in one run; it is part of the label.
    """

    workload: str
    strategy: str
    cache: CacheMode
    stream: tuple[Shape, ...]
    options: StrategyOptions = StrategyOptions()
    measure: MeasureOptions = MeasureOptions()
    variant: str = ""
    startup: tuple[Shape, ...] = ()  # called before the stream, as a service warms up (phase "startup")

    def __hash__(self) -> int:
        return hash((self.workload, self.strategy, self.cache, self.variant, self.options, self.measure,
                     tuple(shape_key(s) for s in self.stream), tuple(shape_key(s) for s in self.startup)))

    @property
    def name(self) -> str:
        """The strategy with its variant: ``mark-dynamic[x:0]``."""
        return f"{self.strategy}[{self.variant}]" if self.variant else self.strategy

    @property
    def label(self) -> str:
        """``default (cold)``; ``eager`` (no cache applies)."""
        return self.name if self.cache == "none" else f"{self.name} ({self.cache})"


ProcessStart = Literal["spawned", "pre-started", "forked", "in-process", ""]


@dataclass(frozen=True)
class TrialEnv:
    """What a trial ran on and with, recorded by the trial's own process: versions, machine,
    threads, the recompile limit in force, how its process started, and ``variables``, the
    environment variables that change what PyTorch does (``TORCH_*``, ``TORCHINDUCTOR_*``,
    ``OMP_*``… — :data:`compilescope.execute.environment.RECORDED`) that it inherited. Two
    trials that differ here are not measurements of the same thing; ``compare`` and the store
    say so. ``compilescope`` and ``executable``: the compilescope version and the interpreter
    the trial ran in (``run --python`` runs trials in another one). ``start``: ``spawned`` (a process started for this trial), ``pre-started`` (a
    fresh process started before its task, idle until it came), ``forked`` (forked for this
    trial by a fork server that had imported torch and nothing else), ``in-process``."""

    torch: str = ""
    python: str = ""
    host: str = ""
    platform: str = ""
    device: str = ""
    threads: int | None = None
    recompile_limit_default: int | None = None
    start: ProcessStart = ""
    pid: int | None = None
    cache_dir: str = ""
    variables: dict[str, str] = field(default_factory=dict)
    load: tuple[float, ...] = ()  # the one-minute load average at the trial's start and end (not compared)
    cpus: int | None = None  # the CPUs the trial's process could run on
    cpu_governor: str = ""  # the CPU frequency governor, where the kernel shows it
    cpu_mhz: float | None = None  # the CPU's frequency at the trial's start, where shown
    compilescope: str = ""  # the compilescope version the trial's process ran
    executable: str = ""  # the trial's interpreter (``run --python``; the driver's own otherwise)

    def differences(self, other: TrialEnv) -> tuple[str, ...]:
        """What makes two trials' figures not comparable, as ``name differs (A x, B y)``: the
        torch version, the device, the threads, each recorded variable (unknown, in a file
        written before they were recorded, is no difference)."""
        fields: list[tuple[str, object, object]] = [
            ("torch", self.torch, other.torch), ("device", self.device, other.device),
            ("threads", self.threads, other.threads)]
        names = sorted(set(self.variables) | set(other.variables))
        fields += [(n, self.variables.get(n, "unset"), other.variables.get(n, "unset")) for n in names]
        return tuple(f"{name} differs (A {a}, B {b})" for name, a, b in fields
                     if a not in ("", None) and b not in ("", None) and str(a) != str(b))


@dataclass(frozen=True)
class TrialResult:
    spec: TrialSpec
    status: TrialStatus
    error: str | None = None
    stderr_tail: str | None = None
    calls: tuple[CallRecord, ...] = ()
    compiles: tuple[CompileRecord, ...] = ()
    graph_breaks: tuple[GraphBreak, ...] = ()
    steady: tuple[SteadyState, ...] = ()
    numerics: tuple[NumericsCheck, ...] = ()
    env: TrialEnv = TrialEnv()
    process_s: float | None = None  # the trial's process from its start to its result, idle wait excluded
    import_s: float | None = None  # of which: interpreter start and imports
    wait_s: float | None = None  # a pre-started process: idle, imports done, before its task came
    build_s: float | None = None
    cache_load_s: float | None = None  # mega-cache: load_cache_artifacts() before the first call
    artifacts_bytes: int | None = None
    notes: tuple[str, ...] = ()
    startup: tuple[CallRecord, ...] = ()  # the spec's start-up calls, before the stream (their own indices)
    guard_costs: tuple[GuardCost, ...] = ()  # per distinct shape: what its calls pay for guards
    soundness: tuple[SoundnessCheck, ...] = ()  # a guard filter's dropped guards, changed: stale or not
    dropped_guards: dict[str, int] = field(default_factory=dict)  # a guard filter's dropped guards, by kind

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def ran_through(self) -> bool:
        """Every request ran to a record and the status is the requests' own (ok, or
        partial/failed because requests raised), not a crash, timeout or interruption."""
        return (self.status in ("ok", "partial", "failed") and len(self.calls) == len(self.spec.stream)
                and trial_status("ok", self.calls) == self.status)

    @property
    def label(self) -> str:
        return self.spec.label


def trial_status(status: TrialStatus, calls: Sequence[CallRecord]) -> TrialStatus:
    """The one rule for a trial's status: one that ran to its end (``status`` "ok") is
    "failed" when every request raised and "partial" when some did; any other status the
    runner gave (a crash, a timeout, unavailable, interrupted) stands."""
    if status != "ok":
        return status
    errors = sum(1 for c in calls if c.error is not None)
    if not errors:
        return "ok"
    return "failed" if errors == len(calls) else "partial"


@dataclass(frozen=True)
class AdviseProposal:
    """One fix ``advise`` proposed and ran as the trial ``strategy[name] (cold)`` of the same
    run: the causes it addresses, the code that applies it, and what it must reduce
    (``recompiles``, ``fallbacks``, ``compile_s``, ``steady``) to be accepted."""

    name: str
    strategy: str
    options: StrategyOptions
    addresses: tuple[str, ...]
    snippet: AdviseSnippet
    target: str = "recompiles"
    alternative: AdviseSnippet | None = None  # the same fix as a setting, no code change
    code: str = ""  # the snippet as it was printed


@dataclass(frozen=True)
class AdviseSnippet:
    """Code that applies a proposal: ``setup`` runs once with ``model`` bound and binds
    ``compiled``; ``before_call`` runs before each call with its inputs bound by name."""

    setup: str
    before_call: str = ""
    note: str = ""


@dataclass(frozen=True)
class AdviseFix:
    """A cause no setting removes, with the code-level step (listed, not measured)."""

    cause: str
    step: str
    relations: tuple[str, ...] = ()
    involves: tuple[str, ...] = ()
    lines: tuple[str, ...] = ()


@dataclass(frozen=True)
class AdviseRecord:
    """What ``advise`` proposed for a run, by the objective it judged with; the proposals'
    measurements are the run's trials, and the judgement (each proposal's verdict and why,
    the recommendation) is derived from them."""

    objective: str
    proposals: tuple[AdviseProposal, ...] = ()
    code_fixes: tuple[AdviseFix, ...] = ()


@dataclass(frozen=True)
class RunResult:
    kind: Literal["run"] = "run"
    workload: str = ""
    stream: tuple[Shape, ...] = ()
    trials: tuple[TrialResult, ...] = ()
    created: str = ""
    command: str = ""
    lifetime: int | None = None  # requests over which the verdict projects the accounting
    missing: tuple[str, ...] = ()  # labels of planned trials that did not finish (an interrupted run)
    schema_version: int = SCHEMA_VERSION
    advice: AdviseRecord | None = None  # a run made by advise: what it proposed


# ----------------------------------------------------------------------------- probe records


@dataclass(frozen=True)
class ProbeCall:
    """The input shapes of one call of a compiled function (``x.0`` = dim 0 of input ``x``)."""

    function: str
    inputs: dict[str, list[int]]


@dataclass(frozen=True)
class ProbeResult:
    kind: Literal["probe"] = "probe"
    source: str = ""  # the script (with its arguments) or the trace directory
    compiles: tuple[CompileRecord, ...] = ()
    graph_breaks: tuple[GraphBreak, ...] = ()
    calls: tuple[ProbeCall, ...] = ()
    exit_code: int = 0
    error: str | None = None
    recompile_limit: int | None = None
    counters: dict[str, int] = field(default_factory=dict)  # trace reader: unknown/malformed events
    torch_version: str = ""
    cache_start: str = "unknown"  # cold | warm | unknown: the compile cache when the program started
    cache_dir: str = ""
    created: str = ""
    schema_version: int = SCHEMA_VERSION
    lost_capabilities: tuple[str, ...] = ()  # what compilescope could not record: a hook of its raised
    settings: tuple[str, ...] = ()  # what the program ran under (probe --config), NAME=VALUE with VALUE as JSON
    forked_unobserved: int = 0  # processes the program forked that compiled or called compiled code: not recorded


# ----------------------------------------------------------------------------- warm-up plans
# The plan file ``compilescope warmup`` writes and :func:`compilescope.warm_up` reads
# (:mod:`compilescope.warmup.planfile`): for each strategy, the shapes to call at start-up, in
# order, and the settings they need. A plan is a forecast until verified: ``covers`` are the
# recorded stream's distinct shapes the dry run predicts hit a warmed graph after start-up,
# ``uncovered`` those still predicted to compile or run eagerly (each with why).
# ``recompile_limit`` is the limit the plan needs set (``None``: PyTorch's default suffices).

PLAN_KIND = "warmup-plan"


@dataclass(frozen=True)
class Uncovered:
    """A recorded shape the plan does not keep off the request path, and why (``compile``
    with the guard that would fail, ``eager``: refused at the recompile limit, or ``unknown``:
    the forecast cannot tell, so the plan cannot claim it)."""

    shape: Shape
    outcome: str
    why: str


@dataclass(frozen=True)
class StrategyPlan:
    """One strategy's start-up: call ``shapes`` in order through the compiled callable.

    ``compiles``: frame compiles the warm-up makes (forecast); ``frame_entries``: the most
    cache entries one frame holds after it, which ``recompile_limit`` must exceed;
    ``minimal``: how the list was checked to be smallest (each shape dropped in turn)."""

    strategy: str
    options: StrategyOptions
    shapes: tuple[Shape, ...]
    covers: tuple[Shape, ...] = ()
    uncovered: tuple[Uncovered, ...] = ()
    compiles: int = 0
    frame_entries: int = 0
    recompile_limit: int | None = None
    recompile_limit_default: int | None = None  # PyTorch's limit where the plan was made (None: not recorded)
    minimal: str = ""

    def covered(self, shape: Shape) -> bool:
        return shape_key(shape) in {shape_key(s) for s in self.covers}

    @property
    def past_limit(self) -> bool:
        """The limit given refused a frame's compiles: it asked for more entries than the limit,
        how many more the dry run could not see (each refusal ends there)."""
        return self.recompile_limit is not None and self.frame_entries > self.recompile_limit

    @property
    def entries_text(self) -> str:
        """Cache entries per frame as the plan's table shows them ("—", "8", "> 3")."""
        if self.forecast_failed:
            return "—"
        return f"> {self.recompile_limit}" if self.past_limit else str(self.frame_entries)

    @property
    def forecast_failed(self) -> bool:
        """Every recorded shape's dry run failed: nothing was forecast, so the plan's entries
        per frame and recompile limit are no figures at all."""
        return not self.covers and bool(self.uncovered) and all(u.outcome == "error" for u in self.uncovered)


@dataclass(frozen=True)
class WarmupPlan:
    """Every strategy's plan for one workload and recording, and the one recommended."""

    workload: str
    stream: str
    requests: int
    backend: str
    plans: tuple[StrategyPlan, ...]
    recommended: str | None = None
    why: str = ""
    artifacts: str | None = None  # mega-cache artifacts, relative to the plan file's folder
    torch_version: str = ""
    created: str = ""
    schema_version: int = SCHEMA_VERSION
    kind: str = PLAN_KIND
    notes: tuple[str, ...] = field(default_factory=tuple)

    def plan(self, strategy: str | None = None) -> StrategyPlan:
        """The named strategy's plan, else the recommended one."""

        name = strategy or self.recommended
        if name is None:
            known = ", ".join(p.strategy for p in self.plans) or "none"
            raise OptionError(f"the plan recommends no strategy (it was not measured): name one of {known}")
        for p in self.plans:
            if p.strategy == name:
                return p
        known = ", ".join(p.strategy for p in self.plans) or "none"
        raise OptionError(f"the plan file has no plan for strategy {name!r} (it has: {known})")
