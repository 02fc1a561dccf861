"""advise: from the default strategy's recorded causes, propose the narrowest fix for each,
then judge the proposals by their measured trials — nothing is recommended unmeasured.

* a size guard on a static dim that varied → ``mark_dynamic`` on every such (input, dim), once
  with a range covering every size the stream feeds it and once without bounds (a bound can
  contradict a guard PyTorch adds, e.g. a parity from a lowering); the equivalent
  ``dynamic_sources`` setting is printed with it;
* relation guards (parity, divisibility, a threshold) on dims that are already dynamic →
  padding the varying dims to buckets that are multiples of the divisor the guards use, and
  holding the graphs (``dynamic=False`` with the recompile limit raised to the number of
  distinct shapes) when the stream has more shapes than the limit;
* causes no shape setting fixes (dtype, rank, requires_grad, grad mode, Python values, module
  attributes, globals, containers, 0/1 specialisation, a size threshold) → the code-level
  remedy, listed as unmeasured (and never one that was measured and rejected);
* PyTorch's own hints: a graph break whose text says to set a Dynamo setting
  (``capture_dynamic_output_shape_ops``, ``capture_scalar_outputs``) → the default run under
  that setting, which must reduce the graph breaks or the compiles.

Only the inputs the caller passes are marked: a guard on a frame temporary (``___stack0``
in a resume frame) or on a parameter path is no source a user can name. Each proposal's
code is a :class:`Snippet` — what to run once (binding ``compiled`` from ``model``) and
before each call (with the call's inputs bound by parameter name) — complete enough to
execute as printed.

A proposal that fails, raises on a request, falls back to eager, fails numerics, ends at the
recompile limit or does not reduce what it targets is *rejected, with why*. Staying eager
is always a candidate. The recommendation is the best candidate by the objective — the
default, a proposal or no compilation — and of candidates within the noise (the tolerance,
:data:`~compilescope.analysis.regimes.TOLERANCE`) of the best, the narrowest change (the default, then proposals narrowest first, then eager).
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..model import CompileRecord, MarkSpec, RunResult, StrategyOptions, TrialResult, made_entry
from ..report import AdviceReport, Cause, CodeFix, Judged, Proposal, RunReport, Snippet, TrialReport
from .advice import group_causes, input_name, inside_input, relation_multiple, relation_step
from .advise_guards import Interleaved, guard_gain, guard_rejection, interleaved, mode_note, ratio_tests
from .counts import count_compiles
from .noise import ALPHA
from .outcomes import SINGLE_SAMPLE_TOLERANCE, one_sample_apart, tolerance_side, within_tolerance
from .regimes import TOLERANCE



def observed_sizes(named_inputs: Iterable[Mapping[str, Any]]) -> dict[tuple[str, int], list[int]]:
    """(input, dim) → the distinct sizes it takes, over the named inputs of each distinct shape
    the stream feeds (the workload's own inputs); dims that never vary are left out."""
    import torch

    out: dict[tuple[str, int], set[int]] = {}
    for named in named_inputs:
        for name, value in named.items():
            if isinstance(value, torch.Tensor):
                for d, size in enumerate(value.shape):
                    out.setdefault((name, d), set()).add(int(size))
    return {k: sorted(v) for k, v in out.items() if len(v) > 1}


def _local(source: str | None) -> str | None:
    if source and source.startswith("L['") and source.endswith("']"):
        return source[3:-2]
    return None


COMPILE_DOMINATES = 0.5  # compile seconds at least this share of the default's stream wall
PAD_WASTE = 0.125  # default bound on the mean padding waste of distribution buckets


def distribution_buckets(values: Iterable[int], max_waste: float = PAD_WASTE) -> tuple[int, ...]:
    """The fewest bucket sizes (each an observed value) such that padding every observed
    value up to its bucket wastes at most ``max_waste`` of the padded elements on average
    (weighted by how often each value occurs). Greedy from the largest value down: a bucket
    covers the smallest values it can while the waste of what it covers stays in bound."""
    ordered = sorted(values)
    if not ordered:
        return ()
    buckets: list[int] = []
    hi = len(ordered) - 1
    while hi >= 0:
        top = ordered[hi]
        lo = hi
        while lo > 0:
            cover = ordered[lo - 1:hi + 1]
            if sum(top - v for v in cover) / (top * len(cover)) > max_waste:
                break
            lo -= 1
        buckets.append(top)
        hi = lo - 1
    return tuple(sorted(set(buckets)))


def _compile_call(base: StrategyOptions, extra: str = "") -> str:
    """``torch.compile(model, …)`` with the backend and mode the proposal was measured with."""
    args = ["model"]
    if base.backend != "inductor":
        args.append(f"backend={base.backend!r}")
    if base.mode is not None:
        args.append(f"mode={base.mode!r}")
    if extra:
        args.append(extra)
    return f"torch.compile({', '.join(args)})"


def compile_call(base: StrategyOptions) -> str:
    """``torch.compile(model, …)`` as a proposal's snippet writes it."""
    return _compile_call(base)


def _pad_code(name: str, dim: int, rank: int, size: str) -> str:
    """Rebind ``name`` padded with zeros along ``dim`` up to ``size`` (an expression)."""
    return (f"{name} = torch.nn.functional.pad({name}, [0, 0] * {rank - 1 - dim} + "
            f"[0, {size}])")


def multiple_buckets(values: Iterable[int], multiple: int) -> tuple[int, ...]:
    """Every multiple of ``multiple`` the observed values pad up to: the buckets padding to
    a multiple actually uses (not a fixed ladder that may not reach the sizes fed)."""
    return tuple(sorted({-(-v // multiple) * multiple for v in values if v > 0}))


def propose(
    default: TrialResult, base: StrategyOptions, sizes: dict[tuple[str, int], list[int]], distinct_shapes: int,
    recompile_limit: int, *, block: str | None = None, static: TrialReport | None = None,
    default_report: TrialReport | None = None, stream_values: dict[str, list[int]] | None = None,
    max_waste: float = PAD_WASTE, ranks: Mapping[str, int] | None = None,
    samples: Mapping[str, Interleaved] | None = None,
) -> tuple[list[Proposal], list[CodeFix]]:
    """Proposals for the default's causes, narrowest first. ``sizes`` are the varying dims of
    the inputs the caller passes, with every size fed (the only dims a proposal marks);
    ``ranks`` each input's number of dims. ``block`` names the model's repeated block (for
    regional compilation when compile time dominates); ``static`` and ``default_report``
    (the two trials' reports) with ``samples`` (their interleaved samples, :func:`interleaved`)
    say whether the dynamic graph runs slower than static ones;
    ``stream_values`` are each shape dim's values request by request, for buckets from the
    observed distribution."""
    records: tuple[CompileRecord, ...] = tuple(r for r in default.compiles if r.phase == "stream")
    causes = group_causes(records, observed=sizes or None, marked=bool(base.marks))
    ranks = dict(ranks or {})
    for name, dim in sizes:
        ranks[name] = max(ranks.get(name, 0), dim + 1)
    size_causes: list[Cause] = []
    frame_roots: dict[str, str] = {}  # input → the source its frame names it by (for dynamic_sources)
    relation = None
    fixes: list[CodeFix] = []
    for c in causes:
        if not c.compile_ids:  # it made no compile of its own: nothing to propose or fix for it
            continue
        if c.kind == "size" and c.dim is not None and c.shape_reducible:
            size_causes.append(c)
            name = input_name(c.source)
            if c.reachable and name is not None and c.frame_source:
                frame_roots.setdefault(name, c.frame_source)
        elif c.kind == "relation":
            relation = c
        elif c.kind == "specialization" and _unbacked_covers(c, sizes):
            size_causes.append(c)  # the unbacked proposal is its fix, measured beside the others
        else:
            fixes.append(CodeFix(c.description, c.next_step))
    # a size inside an object the caller passes (a dataclass's b.mask) is no input dim a proposal
    # marks: its mark is a change to the code, listed with the cause's step — never dropped
    fixes += [CodeFix(c.description, c.next_step) for c in size_causes if inside_input(c.source) is not None or not sizes]
    proposals: list[Proposal] = []
    if size_causes and sizes:
        packed = next((r.target.packed for r in records if r.target is not None), None)
        proposals += _size_proposals(base, sizes, tuple(size_causes), frame_roots, relation, ranks, packed)
    if relation is not None:
        proposals += _relation_proposals(base, relation, sizes, ranks, distinct_shapes, recompile_limit)
        fixes.append(CodeFix(relation.description, relation.next_step, tuple(str(v) for v in relation.values),
                             relation.involves, relation.user_lines))
    proposals += _distribution_proposals(base, sizes, ranks, _dynamic_slower(default_report, static, samples or {})[0],
                                         stream_values, max_waste)
    proposals += _block_proposals(default, records, base, block)
    proposals += hint_proposals(default, base)
    return proposals, fixes


HINT = re.compile(r"torch\._dynamo\.config\.(\w+)\s*=\s*(True|False)")
HINTED = ("capture_dynamic_output_shape_ops", "capture_scalar_outputs")  # settings a trial can run under


def hint_proposals(default: TrialResult, base: StrategyOptions) -> list[Proposal]:
    """PyTorch's own hints, measured: a graph break whose text says to set a Dynamo setting
    (``torch._dynamo.config.capture_dynamic_output_shape_ops = True``) becomes a proposal that
    runs the default under that setting; it must reduce the graph breaks or the compiles."""
    found: dict[tuple[str, str], list[str]] = {}
    for b in default.graph_breaks:
        for name, value in HINT.findall(b.reason or ""):
            if name in HINTED:
                found.setdefault((name, value), []).append(b.reason.strip().splitlines()[0][:120])
    out = []
    for (name, value), reasons in found.items():
        setting = f"{name}={value}"
        why = f"PyTorch's hint on {len(reasons)} graph break(s): {list(dict.fromkeys(reasons))[0]}"
        out.append(Proposal(setting, "default", replace(base, config=setting), (why,),
                            Snippet(f"torch._dynamo.config.{name} = {value}\ncompiled = {_compile_call(base)}"),
                            target="breaks"))
    return out


def _unbacked_covers(c: Cause, sizes: dict[tuple[str, int], list[int]]) -> bool:
    """A 0/1 specialisation on an input dim the size proposals mark, with a size below 2 fed:
    the unbacked proposal (:func:`_size_proposals`) is the fix, and is measured."""
    key = (input_name(c.source), c.dim)
    return key in sizes and min(sizes[key]) < 2  # type: ignore[index]


def _addressed(causes: Sequence[Cause], chosen: Sequence[tuple[str, int]] | None, *, backed: bool) -> tuple[str, ...]:
    """The causes a shape proposal can remove: those of the dims it marks (``chosen``; None:
    every dim, ``dynamic=True``) — and, for a backed dynamic dim, none that saw a size 0 or 1,
    which such a dim specialises all the same (only an unbacked one holds them)."""
    out = []
    for c in causes:
        ints = [v for v in c.values if isinstance(v, int) and not isinstance(v, bool)]
        if backed and (c.kind == "specialization" or any(v in (0, 1) for v in ints)):
            continue
        if chosen is not None and c.kind == "size" and (input_name(c.source), c.dim) not in set(chosen):
            continue
        out.append(c.description)
    return tuple(out)


def _size_proposals(base: StrategyOptions, sizes: dict[tuple[str, int], list[int]], size_causes: tuple[Cause, ...],
                    frame_roots: dict[str, str], relation: Cause | None, ranks: Mapping[str, int],
                    packed: tuple[str, str] | None = None) -> list[Proposal]:
    """Size guards on static dims that varied: mark the varying dims dynamic (bounded when a
    range can cover every size fed, and unbounded, or as ``dynamic_sources``), everything
    dynamic, and unbacked when sizes 0/1 occur."""
    # a threshold on a dim is a guard no mark removes, and a bounded mark contradicts it
    thresholds = set(relation.involves) if relation is not None else set()
    compile_plain = _compile_call(base)
    chosen = sorted(sizes)  # only the varying dims of the inputs the caller passes
    marked, everything = _addressed(size_causes, chosen, backed=True), _addressed(size_causes, None, backed=True)
    out: list[Proposal] = []
    unbounded = [MarkSpec(name, dim) for name, dim in chosen]
    # a range must cover every size fed: none does where sizes 0/1 occur (a backed dynamic
    # dim specialises them) or where a threshold guard splits the dim
    bounded = [MarkSpec(name, dim, min(sizes[(name, dim)]), max(sizes[(name, dim)]))
               for name, dim in chosen
               if f"L['{name}'] dim {dim}" not in thresholds and min(sizes[(name, dim)]) >= 2]
    if bounded and len(bounded) == len(chosen) and all(m.min is not None and m.max is not None and m.min < m.max
                                                       for m in bounded):
        out.append(Proposal(
            ",".join(str(m) for m in bounded), "mark-dynamic", replace(base, marks=tuple(bounded)),
            marked, Snippet(f"compiled = {compile_plain}", "; ".join(
                f"torch._dynamo.mark_dynamic({m.input}, {m.dim}, min={m.min}, max={m.max})" for m in bounded))))
    # the setting names each dim as the compiled frame does, read from the causes: an input no cause
    # names there (a training step's target, which the model never receives; an input the frame
    # knows by another name) has no source to give, and a guessed one would mark nothing
    sources = ",".join(f"{frame_roots[n]}:{d}" for n, d in chosen) if all(n in frame_roots for n, _ in chosen) else None
    out.append(Proposal(
        ",".join(str(m) for m in unbounded), "mark-dynamic", replace(base, marks=tuple(unbounded)),
        marked,
        Snippet(f"compiled = {compile_plain}",
                "; ".join(f"torch._dynamo.mark_dynamic({m.input}, {m.dim})" for m in unbounded)),
        alternative=None if sources is None else Snippet(
            f"torch.compiler.config.dynamic_sources = {sources!r}\ncompiled = {compile_plain}")))
    # the broad fix the narrow ones are judged against: every dim of every input symbolic
    out.append(Proposal("everything", "dynamic", base, everything,
                        Snippet(f"compiled = {_compile_call(base, 'dynamic=True')}")))
    if any(min(sizes[key]) < 2 for key in chosen):
        # sizes 0/1 are specialised for a backed dynamic dim: only an unbacked one holds them
        out.append(Proposal("unbacked " + ",".join(str(m) for m in unbounded), "shapes-spec",
                            replace(base, marks=tuple(unbounded)), _addressed(size_causes, chosen, backed=False),
                            _shapes_spec_snippet(chosen, ranks, base, {n: _usual_words(r, packed)
                                                                       for n, r in frame_roots.items()})))
    return out


def _relation_proposals(base: StrategyOptions, relation: Cause, sizes: dict[tuple[str, int], list[int]],
                        ranks: Mapping[str, int], distinct_shapes: int, recompile_limit: int) -> list[Proposal]:
    """Relation guards on dims already dynamic: pad the varying dims to multiples of the
    divisor the guards use (static, and marked dynamic), and hold the static graphs when the
    stream has more shapes than the recompile limit."""
    chosen = sorted(sizes)
    out: list[Proposal] = []
    multiple = relation_multiple(relation.values) or 8
    buckets = multiple_buckets((v for vs in sizes.values() for v in vs), multiple)
    padded = [(n, d) for n, d in chosen if any(v % multiple for v in sizes[(n, d)])]
    if buckets and padded:
        pads = "; ".join(_pad_code(n, d, ranks.get(n, d + 1), f"-{n}.shape[{d}] % {multiple}") for n, d in padded)
        note = "slice the outputs back to each request's size"
        out.append(Proposal(f"multiples of {multiple}", "bucket", replace(base, buckets=buckets),
                            (relation.description,),
                            Snippet(f"compiled = {_compile_call(base, 'dynamic=False')}", pads, note)))
        marks = tuple(MarkSpec(n, d) for n, d in chosen)
        out.append(Proposal(
            f"multiples of {multiple}, marked dynamic", "bucket", replace(base, buckets=buckets, marks=marks),
            (relation.description,),
            Snippet(f"compiled = {_compile_call(base)}",
                    pads + "; " + "; ".join(f"torch._dynamo.mark_dynamic({m.input}, {m.dim})" for m in marks),
                    note)))
    if distinct_shapes > recompile_limit:
        out.append(Proposal(f"limit {distinct_shapes}", "static",
                            replace(base, recompile_limit=distinct_shapes), (relation.description,),
                            Snippet(f"torch._dynamo.config.recompile_limit = {distinct_shapes}\n"
                                    f"compiled = {_compile_call(base, 'dynamic=False')}"),
                            target="fallbacks"))
    return out


def _distribution_proposals(base: StrategyOptions, sizes: dict[tuple[str, int], list[int]],
                            ranks: Mapping[str, int], slower: str, stream_values: dict[str, list[int]] | None,
                            max_waste: float) -> list[Proposal]:
    """Where the dynamic graph ran slower than static ones (``slower`` says how): static
    graphs for a few buckets from the one varying dim's observed distribution."""
    varying = {d: v for d, v in (stream_values or {}).items() if len(set(v)) > 1}
    # the bucket strategy pads every varying dim to one list of sizes: from one dim's
    # distribution, that is only right when one shape dim varies
    if not slower or len(varying) != 1:
        return []
    ((dim_name, values),) = varying.items()
    buckets = distribution_buckets(values, max_waste)
    tensor_dims = [(n, d) for (n, d), vs in sizes.items() if set(vs) == set(values)]
    if not 1 < len(buckets) < len(set(values)):
        return []
    pads = "; ".join(_pad_code(n, d, ranks.get(n, d + 1),
                               f"next(b for b in {buckets!r} if b >= {n}.shape[{d}]) - {n}.shape[{d}]")
                     for n, d in tensor_dims)
    return [Proposal(
        f"{len(buckets)} from the distribution", "bucket", replace(base, buckets=buckets),
        (f"the dynamic graph ran slower than static ones ({slower})",),
        Snippet(f"compiled = {_compile_call(base, 'dynamic=False')}", pads,
                f"pads {dim_name} up to the next of {', '.join(map(str, buckets))}: mean padding waste "
                f"≤ {max_waste:.1%} over the stream; slice the outputs back"),
        target="steady")]


def _block_proposals(default: TrialResult, records: tuple[CompileRecord, ...], base: StrategyOptions,
                     block: str | None) -> list[Proposal]:
    """Where compile time dominates the default's stream: compile the repeated block alone
    (regional) or once for every instance (nested)."""
    compile_s = count_compiles(records).compile_s
    stream_s = sum(c.latency_s or 0.0 for c in default.calls)
    if block is None or stream_s <= 0 or compile_s < COMPILE_DOMINATES * stream_s:
        return []
    why = f"compile time is {compile_s / stream_s:.0%} of the default's stream wall"
    block_call = _compile_call(base).replace("(model", "(child", 1)
    return [
        Proposal(block, "regional", replace(base, block=block), (why,), Snippet(
            "for parent in list(model.modules()):\n"
            "    for name, child in list(parent.named_children()):\n"
            f"        if type(child).__name__ == {block!r}:\n"
            f"            setattr(parent, name, {block_call})\n"
            "compiled = model", note="the rest of the model runs eagerly"), target="compile_s"),
        Proposal(block, "nested", replace(base, block=block), (why,), Snippet(
            f"block = next(type(m) for m in model.modules() if type(m).__name__ == {block!r})\n"
            "block.forward = torch.compiler.nested_compile_region(block.forward)\n"
            f"compiled = {_compile_call(base)}"), target="compile_s"),
    ]


def _dynamic_slower(default: TrialReport | None, static: TrialReport | None,
                    samples: Mapping[str, Interleaved]) -> tuple[str, str]:
    """(how the static graphs ran faster than the default's, '' unless shown; why it could not
    be told, '' when it could): static counts as faster on a shape when its interleaved
    eager / compiled ratios (each sampled in its own process, so free of the process's speed)
    are higher by the samples' test (:func:`~.noise.mann_whitney_p`, Holm over the shapes both
    measured) and beyond the tolerance, and shown when that holds on most of those shapes."""
    if default is None or static is None:
        return "", "no static reference ran"
    mine, theirs = samples.get(static.label), samples.get(default.label)
    if mine is None or theirs is None:
        return "", "no interleaved samples to test"
    compiled = {r.shape for r in default.rows if r.speedup and r.status != "eager"}
    tests = ratio_tests(theirs, mine, ("the default's", "static's"), compiled)
    if isinstance(tests, str):
        return "", tests
    shapes, usable = tests.shapes, tests.usable
    if len(usable) * 2 <= len(shapes):  # no majority of shapes could ever be shown
        return "", tests.untestable(theirs, mine) + (f" ({len(usable)} could)" if usable else "")
    faster = [r for s, held in zip(usable, tests.held)
              if held and tolerance_side(r := statistics.median(mine.ratios[s]) / statistics.median(theirs.ratios[s])) > 0]
    if len(faster) * 2 > len(shapes):
        lo, hi = min(faster), max(faster)
        span = f"×{lo:.2f}" if hi - lo < 0.005 else f"×{lo:.2f}–{hi:.2f}"
        return (f"static graphs were {span} faster relative to eager on {len(faster)} "
                f"of {len(shapes)} shapes (Mann–Whitney, held over {len(usable)} shape(s) at {ALPHA:.0%})"), ""
    return "", ""


def _usual_words(root: str, packed: tuple[str, str] | None) -> str:
    """A wrapper frame's source in PyTorch's usual words, ``L['a'][0]`` → ``L['args'][0]`` for a
    decorator's ``*a``/``**kw`` (``packed``), as a ``ParamsSpec`` keys its slots."""
    for mine, usual in zip(packed or (), ("args", "kwargs")):
        if mine != usual and root.startswith(f"L['{mine}']["):
            return f"L['{usual}']" + root[len(f"L['{mine}']"):]
    return root


_WRAPPER_ARG = re.compile(r"^L\['args'\]\[(\d+)\]$")


def _shapes_spec_snippet(dims: list[tuple[str, int]], ranks: Mapping[str, int], base: StrategyOptions,
                         frame_roots: Mapping[str, str] | None = None) -> Snippet:
    """``ParamsSpec`` keyed by the compiled frame's parameters: an input a wrapper frame
    receives as ``(*args, **kwargs)`` (``frame_roots``: ``L['kwargs']['ids']``) goes under the
    ``"*args"`` / ``"**kwargs"`` keys, as the trial (:func:`compilescope.strategies.spec_params`)."""
    by_input: dict[str, list[int]] = {}
    for name, dim in dims:
        by_input.setdefault(name, []).append(dim)

    def tensor(name: str, ds: list[int]) -> str:
        return "TensorSpec([" + ", ".join(f"ShapeVar('{name}_{d}', min=0)" if d in ds else "None"
                                          for d in range(max(ranks.get(name, 0), max(ds) + 1))) + "])"

    roots = dict(frame_roots or {})
    if any(r.startswith(("L['kwargs']", "L['args']")) for r in roots.values()):  # a wrapper frame: by keyword
        roots = {n: roots.get(n, f"L['kwargs'][{n!r}]") for n in by_input}
    named = {n: ds for n, ds in by_input.items() if not roots.get(n, "").startswith(("L['kwargs']", "L['args']"))}
    keyword = {n: ds for n, ds in by_input.items() if roots.get(n, "").startswith("L['kwargs']")}
    positional = {int(m[1]): n for n in by_input if (m := _WRAPPER_ARG.match(roots.get(n, "")))}
    parts = [f"{name!r}: {tensor(name, ds)}" for name, ds in named.items()]
    if positional:
        slots = [tensor(positional[i], by_input[positional[i]]) if i in positional else "None"
                 for i in range(max(positional) + 1)]
        parts.append(f"'*args': [{', '.join(slots)}]")
    if keyword:
        parts.append("'**kwargs': {" + ", ".join(f"{n!r}: {tensor(n, ds)}" for n, ds in keyword.items()) + "}")
    specs = ", ".join(parts)
    return Snippet("from torch.fx.experimental.dynamic_spec import ParamsSpec, ShapeVar, TensorSpec\n"
                   f"compiled = {_compile_call(base, f'shapes_spec=ParamsSpec({{{specs}}})')}",
                   note="unbacked: sizes 0 and 1 included; None keeps a dim static")


def steady_per_request(t: TrialReport) -> float | None:
    """The steady time per request over the stream's mix; a shape that ran eagerly counts at
    its eager cost (sampled in the same process), never left out."""
    total, n = 0.0, 0
    for r in t.rows:
        value = r.steady.median if r.steady is not None else (r.eager.median if r.eager is not None else None)
        if value is not None:
            total += r.requests * value
            n += r.requests
    return total / n if n else None


def eager_beside(default: TrialReport | None, eager: TrialReport) -> float | None:
    """Eager's steady time per request over the stream's mix as the default's trial sampled it,
    interleaved with its compiled calls in one process — the comparison every speedup and
    break-even the report prints is made on (the eager trial's own process can measure tens
    of percent apart); a shape the default has no such samples for counts at the eager
    trial's own figure. None without a default."""
    if default is None:
        return None
    own = {r.shape: r.steady.median for r in eager.rows if r.steady is not None}
    total, n = 0.0, 0
    for r in default.rows:
        value = r.eager.median if r.eager is not None else own.get(r.shape)
        if value is None:
            return None
        total += r.requests * value
        n += r.requests
    return total / n if n else None


def score(t: TrialReport, objective: str, lifetime: int, steady: float | None = None) -> float | None:
    """Lower is better: total → the stream's wall time plus the rest of the lifetime at the
    steady per-request mean; p99 → the stream's 99th-percentile latency; steady → the steady
    per-request mean over the stream's mix. ``steady``: that mean, when given (staying eager:
    :func:`eager_beside`)."""
    steady = steady if steady is not None else steady_per_request(t)
    if objective == "steady":
        return steady
    latencies = sorted(p.latency_s for p in t.timeline if p.latency_s is not None)
    if objective == "p99":
        if not latencies:
            return None
        return latencies[min(len(latencies) - 1, math.ceil(0.99 * len(latencies)) - 1)]
    if t.stream_s is None:
        return None
    extra = max(0, lifetime - t.requests)
    return t.stream_s + extra * (steady if steady is not None else statistics.mean(latencies) if latencies else 0.0)


EAGER = Proposal("stay eager", "eager", StrategyOptions(), ("compiling must pay for itself over the lifetime",),
                 Snippet("compiled = model", note="no torch.compile"), target="total")


def entries_per_frame(t: TrialReport) -> dict[str, int]:
    """Cache entries each compiled frame holds at the end of the stream (by frame name)."""
    out: dict[str, int] = {}
    for r in t.compile_rows:
        if made_entry(r.outcome) and r.phase == "stream":
            frame = f"{r.epoch}:{r.compile_id.split('/')[0]}"
            out[frame] = out.get(frame, 0) + 1
    names = {f"{r.epoch}:{r.compile_id.split('/')[0]}": r.name for r in t.compile_rows}
    return {names[k]: v for k, v in out.items()}


def _bounded(r: Judged) -> bool:
    """A proposal whose marks carry a range taken from the sizes the stream happened to feed."""
    return (r.proposal is not None and r.proposal.strategy == "mark-dynamic"
            and any(m.min is not None or m.max is not None for m in r.proposal.options.marks))


def _pick(candidates: list[Judged], scores: Mapping[int, float]) -> Judged:
    """The candidate to recommend given each one's score (by index): the lowest, or of those
    within the tolerance (the noise) of it the narrowest change — candidates are in order of
    how narrow a change each is — save that a range taken from the few sizes seen is picked
    only when nothing else is within the noise of it (a new size outside it raises or
    recompiles)."""
    lowest = min(scores.values())
    near = [r for i, r in enumerate(candidates) if within_tolerance(scores[i], lowest)]
    return next((r for r in near if not _bounded(r)), near[0])


HORIZON_MAX = 10 ** 12  # requests: beyond this no change of pick is looked for


def horizon(candidates: list[Judged], objective: str, life: int, requests: int, given: bool,
            eager_steady: float | None = None) -> str:
    """The horizon the pick was judged over and where it changes: ``total`` weighs the stream
    and the rest of the lifetime at each candidate's steady cost, so a longer (or shorter)
    lifetime can pick another candidate; the others do not depend on it. A change of pick
    that comes from two scores falling within the noise of each other (the narrower change
    then preferred) is said so, not as one paying off. ``eager_steady``: staying eager's
    steady cost (:func:`eager_beside`)."""
    over = (f"{life:,} requests (--lifetime)" if given else
            f"this {requests:,}-request stream (no --lifetime given)")
    if objective != "total":
        return f"judged on the stream's {objective}: the lifetime ({over}) does not change the pick"
    if not candidates:
        return f"judged over {over}"

    def scored(r: Judged, n: int) -> float:
        return _score(replace(r, score=score(r.trial, objective, n, eager_steady if r.proposal is EAGER else None)))

    def pick_at(n: int) -> Judged:
        return _pick(candidates, {i: scored(r, n) for i, r in enumerate(candidates)})

    def tied(n: int) -> str:
        """Why the pick changes at ``n`` when its score is not the lower one there: '' otherwise."""
        new, old = pick_at(n), pick_at(n - 1)
        return (f"within {TOLERANCE:.0%} (the noise) of {old.label} from there: a tie, no pay-off; the narrower "
                "change is preferred" if scored(new, n) > scored(old, n) else "")

    grid = sorted({requests, life, *(int(requests * 1.25 ** k) for k in range(200)
                                      if requests * 1.25 ** k <= HORIZON_MAX), HORIZON_MAX})
    changes: list[tuple[int, Judged]] = []
    before = pick_at(grid[0])
    for lo, hi in zip(grid, grid[1:]):
        after = pick_at(hi)
        if after.label != before.label:
            while hi - lo > 1:  # the first request count at which the pick is the new one
                mid = (lo + hi) // 2
                if pick_at(mid).label == before.label:
                    lo = mid
                else:
                    hi = mid
            changes.append((hi, pick_at(hi)))
        before = after
    here = pick_at(life).label
    text = f"judged over {over}: {here} is the pick"
    later = [(n, r) for n, r in changes if n > life]
    earlier = [(n, r) for n, r in changes if requests < n <= life]
    if earlier:
        n, _ = earlier[-1]
        why = tied(n)
        text += f" (from {n:,} requests{', ' + why if why else ''}; {pick_at(n - 1).label} below that)"
    if later:
        text += "; " + "; ".join(f"from {n:,} requests, {r.label}" + (f" ({tied(n)})" if tied(n) else "")
                                 for n, r in later[:3])
    else:
        text += "; a longer lifetime does not change it"
    return text


def judge(report: RunReport, proposals: list[Proposal], objective: str, lifetime: int | None,
          fixes: list[CodeFix], recompile_limit: int | None = None, result: RunResult | None = None) -> AdviceReport:
    """Each measured proposal accepted or rejected with why; staying eager judged beside them;
    every other trial the advice ran shown for reference; the recommendation by the objective,
    ties (within the tolerance) to the narrowest change, with the horizon it was judged over.
    ``result`` (the run ``report`` was built from) gives the interleaved samples a guard filter's
    whole call is judged by (:func:`~compilescope.analysis.advise_guards.whole_call`)."""
    samples = interleaved(result)
    life = lifetime if lifetime is not None else report.requests
    by_label = {t.label: t for t in report.trials}
    default = next((t for t in report.trials if t.strategy == "default"), None)
    eager = next((t for t in report.trials if t.strategy == "eager"), None)
    rows: list[Judged] = []
    if default is not None:
        rows.append(Judged(default.label, None, default, score(default, objective, life), "baseline", "the default"))
    for p in proposals:
        label = p.label
        t = by_label.get(label)
        if t is None:
            continue
        why = _rejection(t, default, p.target, samples) or _at_limit(t, p, recompile_limit)
        gain = guard_gain(t, default, samples) if p.target == "guards" else _gain(t, default, p.target)
        rows.append(Judged(label, p, t, score(t, objective, life), "rejected" if why else "accepted",
                           why or "measured: " + gain))
    eager_steady = eager_beside(default, eager) if eager is not None else None
    if eager is not None and eager.status == "ok" and not eager.call_errors:
        rows.append(Judged(eager.label, EAGER, eager, score(eager, objective, life, eager_steady), "accepted",
                           "no compilation: " + (f"{fmt_s(eager.stream_s)} over the stream" if eager.stream_s else
                                                 "the stream ran eagerly")))
    shown = {r.label for r in rows}
    for t in report.trials:  # every trial the advice ran is shown, a reference run included
        if t.label not in shown:
            rows.append(Judged(t.label, None, t, score(t, objective, life), "reference", _reference_why(t, default, samples)))
    # candidates in order of how narrow a change each is: the default (none), the proposals
    # narrowest first, then not compiling at all
    candidates = [r for r in rows if r.score is not None and r.trial.status == "ok" and r.verdict != "reference"
                  and (r.proposal is None or r.verdict == "accepted") and not _ran_nothing_compiled(r.trial)]
    recommendation, tie = None, ""
    when = horizon(candidates, objective, life, report.requests, lifetime is not None, eager_steady)
    if candidates:
        best = _pick(candidates, {i: _score(r) for i, r in enumerate(candidates)})
        tie = _tie(best, candidates)
        if best.proposal is EAGER:
            compiled = [r for r in candidates if r is not best]
            if compiled:
                other = min(compiled, key=lambda r: _score(r))
                best = replace(best, why=f"{best.why}; {objective} over {life:,} requests: {fmt_s(best.score)} "
                                         f"against {fmt_s(other.score)} for the best compiled ({other.label})")
                rows = [best if r.proposal is EAGER else r for r in rows]
        if best.proposal is not None:
            recommendation = replace(best, verdict="recommended")
            rows = [recommendation if r is best or (r.proposal is EAGER and best.proposal is EAGER) else r
                    for r in rows]
    notes = tuple(n for n in (mode_note(result),) if n)
    return AdviceReport(objective, life, tuple(rows), tuple(_checked_fixes(fixes, rows)), recommendation, tie, when,
                        notes)


def _ran_nothing_compiled(t: TrialReport) -> bool:
    """A compiling trial whose every request ran eagerly or raised (its frame never compiled):
    its score is eager's, under another name, and it is never the pick."""
    return t.compiles_code and t.completed > 0 and t.fallbacks + t.call_errors >= t.completed


def _tie(best: Judged, candidates: list[Judged]) -> str:
    """Why ``best`` was picked when another candidate is within the noise of it ('' otherwise)."""
    lowest = min(_score(r) for r in candidates)
    fastest = min(candidates, key=lambda r: (_score(r), candidates.index(r)))
    if best is not fastest and _bounded(fastest):
        return (f"{fastest.label} is within {TOLERANCE:.0%} (the noise) of {best.label} ({fmt_s(fastest.score)} "
                f"against {fmt_s(best.score)}), and its range is taken from the sizes this stream fed: "
                f"{best.label} is preferred")
    if best is not fastest:
        return (f"{best.label} is within {TOLERANCE:.0%} (the noise) of {fastest.label} ({fmt_s(best.score)} against "
                f"{fmt_s(fastest.score)}): the narrower change is preferred")
    runner = sorted((r for r in candidates if r is not best), key=lambda r: _score(r))
    if runner and within_tolerance(_score(runner[0]), lowest):
        return (f"{best.label} and {runner[0].label} are within {TOLERANCE:.0%} (the noise) of each other "
                f"({fmt_s(best.score)} against {fmt_s(runner[0].score)})")
    return ""


def _reference_why(t: TrialReport, default: TrialReport | None, samples: Mapping[str, Interleaved]) -> str:
    """Why a trial that is no proposal ran, and, for the static reference, what it told."""
    if t.strategy == "static":
        told, untold = _dynamic_slower(default, t, samples)
        return ("measured for reference, not a proposal: whether the default's graphs run slower than static ones — "
                + (f"they do ({told})" if told else f"could not tell: {untold}" if untold
                   else "not on most shapes both measured, beyond the noise"))
    return "measured for reference, not a proposal"


def _score(r: Judged) -> float:
    return math.inf if r.score is None else r.score


def fmt_s(value: float | None) -> str:
    from ..units import fmt_time

    return fmt_time(value)


def _at_limit(t: TrialReport, p: Proposal, limit: int | None) -> str:
    """A proposal that ends the stream with a frame holding as many entries as the recompile
    limit allows is one shape away from running that frame eagerly: not recommended."""
    if limit is None or p.options.recompile_limit is not None:
        return ""
    full = {name: n for name, n in entries_per_frame(t).items() if n >= limit}
    if not full:
        return ""
    name, n = next(iter(full.items()))
    return (f"at the recompile limit: {name} holds {n} entries (limit {limit}); one more shape runs it eagerly")


def _checked_fixes(fixes: list[CodeFix], rows: list[Judged]) -> list[CodeFix]:
    """A code-change hint that a measured proposal tried is not offered again as unmeasured
    text: one answer per cause. The relation hint says how padding measured — accepted when
    any padded variant was (padded and marked dynamic, say), rejected only when every one was."""
    padded = [r for r in rows if r.proposal is not None and r.proposal.strategy == "bucket"
              and r.proposal.name.startswith("multiples of")]
    if not padded:
        return fixes
    kept = [r for r in padded if r.verdict in ("accepted", "recommended")]
    if kept:
        how = "; ".join(f"{r.label}: {r.verdict}" for r in kept)
        return [replace(f, step=relation_step(f.relations, f.involves, f.lines, padding_accepted=how)) if f.relations
                else f for f in fixes]
    how = "; ".join(f"{r.label}: {r.why}" for r in padded if r.verdict == "rejected")
    return [replace(f, step=relation_step(f.relations, f.involves, f.lines, padding_rejected=how)) if f.relations
            else f for f in fixes]


def _gain(t: TrialReport, default: TrialReport | None, target: str = "recompiles") -> str:
    if default is None:
        return f"{t.stream.compiles} compile(s)"
    text = (f"{t.stream.compiles} compile(s) against {default.stream.compiles}, "
            f"{t.stream.recompiles} recompile(s) against {default.stream.recompiles}")
    if target == "compile_s":  # what it targets first
        text = f"{t.stream.compile_s:.1f} s compiling against the default's {default.stream.compile_s:.1f} s; " + text
    if target == "breaks" or len(t.graph_breaks) != len(default.graph_breaks):
        text += f", {len(t.graph_breaks)} graph break(s) against {len(default.graph_breaks)}"
    if default.fallbacks or t.fallbacks:
        text += f", {t.fallbacks} request(s) eager against {default.fallbacks}"
    return text


def _rejection(t: TrialReport, default: TrialReport | None, target: str = "recompiles",
               samples: Mapping[str, Interleaved] | None = None) -> str:
    if t.status not in ("ok",):
        return f"the trial {t.status}: {t.error}"
    if t.call_errors:
        first = next((r.error for r in t.rows if r.error), "") or ""
        return f"{t.call_errors} request(s) raised ({first.split('. ')[0][:90]})"
    # judged against the default's own: a frame that never compiles falls back under every setting
    own, partly = (default.fallbacks, default.partial_fallbacks) if default is not None else (0, 0)
    if t.fallbacks > own:
        why = next((f" ({r.cause})" for r in t.rows if r.fallback_calls and r.cause), "")  # a failed compile, say
        return f"{t.fallbacks} request(s) ran eagerly" + (f" against the default's {own}" if own else "") + why
    if t.partial_fallbacks > partly:
        why = next((f" ({r.cause})" for r in t.rows if r.partial_fallback_calls and r.cause), "")
        return (f"{t.partial_fallbacks} request(s) ran partly eagerly"
                + (f" against the default's {partly}" if partly else "") + why)
    if t.numerics_failed:
        return f"outputs differed from eager on {t.numerics_failed} shape(s)"
    if target == "compile_s":
        mine, theirs = t.stream.compile_s, default.stream.compile_s if default is not None else None
        if theirs is not None and mine >= theirs:
            return f"did not reduce what it targets: {mine:.1f} s compiling against the default's {theirs:.1f} s"
        if theirs is not None and not one_sample_apart(mine, theirs):  # each trial's compile time is one sample
            return (f"did not reduce what it targets beyond one sample's jitter: {mine:.1f} s compiling against the "
                    f"default's {theirs:.1f} s (within ±{SINGLE_SAMPLE_TOLERANCE:.0%})")
        return ""
    if target == "steady":
        mine, theirs = steady_per_request(t), steady_per_request(default) if default is not None else None
        if mine is not None and theirs is not None and mine >= theirs:
            return "did not reduce what it targets: its steady time per request is no lower than the default's"
        return ""
    if target == "total":
        return ""
    if target == "breaks":
        if default is not None and len(t.graph_breaks) >= len(default.graph_breaks) \
                and t.stream.compiles >= default.stream.compiles:
            return (f"did not reduce what it targets: {len(t.graph_breaks)} graph break(s), {t.stream.compiles} "
                    f"compile(s) against the default's {len(default.graph_breaks)} and {default.stream.compiles}")
        return ""
    if target == "guards":
        return guard_rejection(t, default, samples)
    if target == "fallbacks":
        if default is not None and default.fallbacks + default.partial_fallbacks == 0:
            return "did not reduce what it targets: the default ran no request eagerly"
        return ""
    if default is not None and t.stream.recompiles >= default.stream.recompiles and t.stream.compiles >= default.stream.compiles:
        return (f"did not reduce what it targets: {t.stream.compiles} compile(s), {t.stream.recompiles} recompile(s) "
                f"against the default's {default.stream.compiles} and {default.stream.recompiles}")
    return ""
