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
  attributes, globals, containers, 0/1 specialisation, a range too narrow) → the code-level
  remedy, listed as unmeasured.

A proposal that fails, raises on a request, falls back to eager, fails numerics or does not
reduce the recompiles it targets is *rejected, with why*. The recommendation is the best
accepted proposal by the objective, and only when it beats the default.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from ..model import CompileRecord, MarkSpec, StrategyOptions, TrialResult
from ..report import RunReport, TrialReport
from .advice import group_causes, relation_multiple
from .build import count_compiles

Objective = Literal["total", "p99", "steady"]
TIE = 0.05  # scores within 5% of the best are a tie: the narrowest proposal is recommended
OBJECTIVES = ("total", "p99", "steady")


@dataclass(frozen=True)
class Proposal:
    name: str  # the variant, shown as strategy[name]
    strategy: str
    options: StrategyOptions
    addresses: tuple[str, ...]  # the causes it targets
    code: str  # what to write to apply it
    target: Literal["recompiles", "fallbacks", "compile_s", "steady"] = "recompiles"  # what it must reduce


@dataclass(frozen=True)
class CodeFix:
    cause: str
    step: str


@dataclass(frozen=True)
class Judged:
    label: str
    proposal: Proposal | None  # None: the default baseline
    trial: TrialReport
    score: float | None
    verdict: Literal["baseline", "recommended", "accepted", "rejected"]
    why: str


@dataclass(frozen=True)
class AdviceReport:
    objective: str
    lifetime: int
    rows: tuple[Judged, ...]
    code_fixes: tuple[CodeFix, ...]
    recommendation: Judged | None


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


def propose(
    default: TrialResult, base: StrategyOptions, sizes: dict[tuple[str, int], list[int]], distinct_shapes: int,
    recompile_limit: int, *, block: str | None = None, static: TrialReport | None = None,
    default_report: TrialReport | None = None, stream_values: dict[str, list[int]] | None = None,
    max_waste: float = PAD_WASTE,
) -> tuple[list[Proposal], list[CodeFix]]:
    """Proposals for the default's causes, narrowest first. ``block`` names the model's
    repeated block (for regional compilation when compile time dominates); ``static`` and
    ``default_report`` (the two trials' reports) say whether the dynamic graph runs slower
    than static ones; ``stream_values`` are each shape dim's values request by request, for
    buckets from the observed distribution."""
    records: tuple[CompileRecord, ...] = tuple(r for r in default.compiles if r.phase == "stream")
    causes = group_causes(records)
    marks: dict[tuple[str, int], str] = {}
    frame_sources: dict[tuple[str, int], str] = {}
    relation = None
    fixes: list[CodeFix] = []
    for c in causes:
        name = _local(c.source)
        if c.kind == "size" and name is not None and c.dim is not None:
            marks[(name, c.dim)] = c.describe()
            frame_sources[(name, c.dim)] = c.frame_source or c.source or f"L['{name}']"
        elif c.kind == "relation":
            relation = c
        else:
            fixes.append(CodeFix(c.describe(), c.next_step))
    proposals: list[Proposal] = []
    if marks:
        chosen = sorted(marks)
        bounded = []
        for name, dim in chosen:
            values = sizes.get((name, dim), [])
            lo = max(2, min(values)) if values else None  # sizes 0 and 1 are specialised: no range holds them
            hi = max(values) if values else None
            bounded.append(MarkSpec(name, dim, lo, hi))
        unbounded = [MarkSpec(name, dim) for name, dim in chosen]
        sources = ",".join(f"{frame_sources[(n, d)]}:{d}" for n, d in chosen)
        marks_code = "; ".join(f"torch._dynamo.mark_dynamic({m.input}, {m.dim}, min={m.min}, max={m.max})" for m in bounded)
        proposals.append(Proposal(",".join(str(m) for m in bounded), "mark-dynamic", replace(base, marks=tuple(bounded)),
                                  tuple(marks.values()), f"before each call: {marks_code}"))
        proposals.append(Proposal(",".join(str(m) for m in unbounded), "mark-dynamic", replace(base, marks=tuple(unbounded)),
                                  tuple(marks.values()),
                                  "before each call: " + "; ".join(f"torch._dynamo.mark_dynamic({m.input}, {m.dim})"
                                                                   for m in unbounded)
                                  + f"  (or, with no code change: torch.compiler.config.patch(dynamic_sources=\"{sources}\"))"))
        # the broad fix the narrow ones are judged against: every dim of every input symbolic
        proposals.append(Proposal("everything", "dynamic", base, tuple(marks.values()),
                                  "torch.compile(model, dynamic=True)"))
        if any(min(sizes.get(key, [2])) < 2 for key in chosen):
            # sizes 0/1 are specialised for a backed dynamic dim: only an unbacked one holds them
            proposals.append(Proposal("unbacked " + ",".join(str(m) for m in unbounded), "shapes-spec",
                                      replace(base, marks=tuple(unbounded)), tuple(marks.values()),
                                      _shapes_spec_code(chosen)))
    if relation is not None:
        multiple = relation_multiple(relation.values) or 8
        top = max((v for vs in sizes.values() for v in vs), default=multiple)
        buckets = tuple(range(multiple, top + multiple, multiple))[:64]
        if buckets:
            proposals.append(Proposal(f"multiples of {multiple}", "bucket", replace(base, buckets=buckets),
                                      (relation.describe(),),
                                      f"pad the varying dims up to the next multiple of {multiple} before the call, "
                                      "slice the outputs back"))
        if distinct_shapes > recompile_limit:
            proposals.append(Proposal(f"limit {distinct_shapes}", "static",
                                      replace(base, recompile_limit=distinct_shapes), (relation.describe(),),
                                      f"torch.compile(model, dynamic=False); torch._dynamo.config.recompile_limit = "
                                      f"{distinct_shapes}", target="fallbacks"))
        fixes.append(CodeFix(relation.describe(), relation.next_step))
    slower = _dynamic_slower(default_report, static)
    varying = {d: v for d, v in (stream_values or {}).items() if len(set(v)) > 1}
    # the bucket strategy pads every varying dim to one list of sizes: from one dim's
    # distribution, that is only right when one shape dim varies
    if slower and len(varying) == 1:
        ((dim_name, values),) = varying.items()
        buckets = distribution_buckets(values, max_waste)
        if 1 < len(buckets) < len(set(values)):
            proposals.append(Proposal(
                f"{len(buckets)} from the distribution", "bucket", replace(base, buckets=buckets),
                (f"the dynamic graph ran slower than static ones ({slower})",),
                f"pad {dim_name} up to the next of {', '.join(map(str, buckets))} (mean padding waste "
                f"≤ {max_waste:.1%} over the stream), compile with dynamic=False, slice the outputs back",
                target="steady"))
    compile_s = count_compiles(records).compile_s
    stream_s = sum(c.latency_s or 0.0 for c in default.calls)
    if block is not None and stream_s > 0 and compile_s >= COMPILE_DOMINATES * stream_s:
        why = f"compile time is {compile_s / stream_s:.0%} of the default's stream wall"
        proposals.append(Proposal(block, "regional", replace(base, block=block), (why,),
                                  f"replace each {block} instance by torch.compile(instance) in its parent "
                                  "(setattr(parent, name, torch.compile(block))); the rest runs eager",
                                  target="compile_s"))
        proposals.append(Proposal(block, "nested", replace(base, block=block), (why,),
                                  f"{block}.forward = torch.compiler.nested_compile_region({block}.forward); "
                                  "torch.compile(model)", target="compile_s"))
    return proposals, fixes


def _dynamic_slower(default: TrialReport | None, static: TrialReport | None) -> str:
    """Where the default's graphs run measurably slower than the static graphs on most shapes
    both measured: a description, else ''. Each trial is compared through its own speedup over
    eager sampled in its own process (timing on a shared machine is bimodal per process, so a
    raw cross-process ratio is not evidence); a shape counts when the static speedup is more
    than 5% higher."""
    if default is None or static is None:
        return ""
    theirs = {r.shape: r.speedup for r in static.rows}
    ratios = [theirs[r.shape] / r.speedup for r in default.rows
              if r.speedup and theirs.get(r.shape) and r.status != "eager"]
    slower = [x for x in ratios if x > 1.05]
    if ratios and len(slower) * 2 > len(ratios):
        return (f"static graphs were ×{min(slower):.2f}–{max(slower):.2f} faster relative to eager on "
                f"{len(slower)} of {len(ratios)} shapes")
    return ""


def _shapes_spec_code(dims: list[tuple[str, int]]) -> str:
    by_input: dict[str, list[int]] = {}
    for name, dim in dims:
        by_input.setdefault(name, []).append(dim)
    specs = ", ".join(
        f"{name!r}: TensorSpec([" + ", ".join(
            f"ShapeVar('{name}_{d}', min=0)" if d in ds else "None" for d in range(max(ds) + 1)) + ", …])"
        for name, ds in by_input.items())
    return ("from torch.fx.experimental.dynamic_spec import ParamsSpec, ShapeVar, TensorSpec; "
            f"torch.compile(model, shapes_spec=ParamsSpec({{{specs}}}))  (unbacked: sizes 0 and 1 included; "
            "None keeps a dim static)")


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


def score(t: TrialReport, objective: str, lifetime: int) -> float | None:
    """Lower is better: total → the stream's wall time plus the rest of the lifetime at the
    steady per-request mean; p99 → the stream's 99th-percentile latency; steady → the steady
    per-request mean over the stream's mix."""
    steady = steady_per_request(t)
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


def judge(report: RunReport, proposals: list[Proposal], objective: str, lifetime: int | None,
          fixes: list[CodeFix]) -> AdviceReport:
    life = lifetime if lifetime is not None else report.requests
    by_label = {t.label: t for t in report.trials}
    default = next((t for t in report.trials if t.strategy == "default"), None)
    rows: list[Judged] = []
    if default is not None:
        rows.append(Judged(default.label, None, default, score(default, objective, life), "baseline", "the default"))
    for p in proposals:
        label = f"{p.strategy}[{p.name}] (cold)"
        t = by_label.get(label)
        if t is None:
            continue
        why = _rejection(t, default, p.target)
        rows.append(Judged(label, p, t, score(t, objective, life), "rejected" if why else "accepted",
                           why or "measured: " + _gain(t, default)))
    accepted = [r for r in rows if r.verdict == "accepted" and r.score is not None]
    lowest = min((r.score or math.inf for r in accepted), default=math.inf)
    # within TIE of the best, the narrowest (proposals come narrowest first) wins
    best = next((r for r in accepted if (r.score or math.inf) <= lowest * (1 + TIE)), None)
    base_score = rows[0].score if rows and rows[0].proposal is None else None
    recommendation = None
    if best is not None and (base_score is None or (best.score or math.inf) < base_score):
        recommendation = replace(best, verdict="recommended")
        rows = [recommendation if r is best else r for r in rows]
    return AdviceReport(objective, life, tuple(rows), tuple(fixes), recommendation)


def _gain(t: TrialReport, default: TrialReport | None) -> str:
    if default is None:
        return f"{t.stream.compiles} compile(s)"
    text = (f"{t.stream.compiles} compile(s) against {default.stream.compiles}, "
            f"{t.stream.recompiles} recompile(s) against {default.stream.recompiles}")
    if default.fallbacks or t.fallbacks:
        text += f", {t.fallbacks} request(s) eager against {default.fallbacks}"
    return text


def _rejection(t: TrialReport, default: TrialReport | None, target: str = "recompiles") -> str:
    if t.status != "ok":
        return f"the trial {t.status}: {t.error}"
    if t.call_errors:
        first = next((r.error for r in t.rows if r.error), "") or ""
        return f"{t.call_errors} request(s) raised ({first.split('. ')[0][:90]})"
    if t.fallbacks:
        return f"{t.fallbacks} request(s) ran eagerly"
    if t.numerics_failed:
        return f"outputs differed from eager on {t.numerics_failed} shape(s)"
    if target == "compile_s":
        if default is not None and t.stream.compile_s >= default.stream.compile_s:
            return (f"did not reduce what it targets: {t.stream.compile_s:.1f} s compiling against the default's "
                    f"{default.stream.compile_s:.1f} s")
        return ""
    if target == "steady":
        mine, theirs = steady_per_request(t), steady_per_request(default) if default is not None else None
        if mine is not None and theirs is not None and mine >= theirs:
            return "did not reduce what it targets: its steady time per request is no lower than the default's"
        return ""
    if target == "fallbacks":
        if default is not None and default.fallbacks == 0:
            return "did not reduce what it targets: the default ran no request eagerly"
        return ""
    if default is not None and t.stream.recompiles >= default.stream.recompiles and t.stream.compiles >= default.stream.compiles:
        return (f"did not reduce what it targets: {t.stream.compiles} compile(s), {t.stream.recompiles} recompile(s) "
                f"against the default's {default.stream.compiles} and {default.stream.recompiles}")
    return ""
