"""Group recompile causes per compiled function, and say what to do about each.

A cause is one guard (source, kind, dim). It is *shape-reducible* when a dynamic-shape
setting can remove the recompiles (a varying size); otherwise the guard tracks something a
symbolic size cannot express (rank, dtype, a Python value, module state…) and the next step
is a change to the program, stated plainly.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from ..model import CompileRecord, Scalar


@dataclass(frozen=True)
class Cause:
    source: str | None
    kind: str
    dim: int | None
    values: tuple[Scalar, ...]  # expected and actual values seen, in order of first appearance
    compiles: tuple[str, ...]  # compile ids this cause triggered
    shape_reducible: bool
    next_step: str
    example: str = ""  # one of PyTorch's texts for it
    involves: tuple[str, ...] = ()  # every input dim a relation names
    frame_source: str | None = None  # the source as the compiled frame sees it (what dynamic_sources names)

    def describe(self) -> str:
        where = self.source or "?"
        if self.dim is not None:
            where += f" dim {self.dim}"
        seen = ", ".join(str(v) for v in self.values[:8]) + (" …" if len(self.values) > 8 else "")
        what = {"size": "varied over", "stride": "stride varied over", "dtype": "dtype varied over",
                "rank": "rank varied over", "value": "value varied over", "module_attribute": "varied over",
                "global": "varied over", "length": "length varied over", "dict_keys": "keys varied over",
                "requires_grad": "requires_grad varied over", "device": "device varied over"}.get(self.kind)
        if what and seen:
            head = f"{where} {what} {seen}"
        elif self.kind == "relation":
            texts = self.values
            shown = "; ".join(str(t) for t in texts[:2]) + (f"; +{len(texts) - 2} more" if len(texts) > 2 else "")
            head = f"{len(texts)} relation guard(s) over {', '.join(self.involves) or where}: {shown}"
        elif self.kind in ("range", "specialization"):
            head = f"{where} outside its range: {self.example}"
        elif self.kind == "other" or self.source is None:
            head = f"{self.source + ': ' if self.source and self.kind != 'other' else ''}{self.example}"
        else:
            head = f"{where}: {self.kind.replace('_', ' ')}"
        return f"{head} → {len(self.compiles)} compile(s)"


_TENSOR_NAME = re.compile(r"^tensor '(?P<name>.+?)' (?:size|stride|dtype|requires_grad|rank|dispatch|device)")


def frame_source(reason: str) -> str | None:
    """The source as the compiled frame itself sees it, from PyTorch's reason text: for a
    compiled module PyTorch's wrapper frame sees ``args[0]``/``kwargs['ids']`` (what
    ``dynamic_sources`` must name), which the records rename to the parameter."""
    m = _TENSOR_NAME.match(reason)
    if not m:
        return None
    name = m["name"]
    head, bracket, rest = name.partition("[")
    return f"L['{head}']" + (bracket + rest if bracket else "")


def _next_step(
    kind: str, source: str | None, dim: int | None, values: tuple[Scalar, ...], exprs: tuple[str, ...] = (),
    frame_src: str | None = None,
) -> tuple[bool, str]:
    src = source or "the input"
    if kind == "range":
        return True, (
            f"an input fell outside the range given to mark_dynamic ({exprs[0] if exprs else 'its bounds'}): widen "
            "min/max to cover every size the program sees"
        )
    if kind == "specialization":
        return True, (
            f"sizes 0 and 1 are specialised ({exprs[0] if exprs else src}): use "
            f"torch._dynamo.decorators.mark_unbacked({_local(src)}, {dim}) if those sizes occur"
        )
    if kind == "relation":
        return False, relation_step(tuple(str(v) for v in values), exprs)
    if kind == "size":
        ints = [v for v in values if isinstance(v, int) and not isinstance(v, bool)]
        lo, hi = (min(ints), max(ints)) if ints else (None, None)
        rng = f", min={lo}, max={hi}" if lo is not None else ""
        step = (
            f"mark it dynamic before the first call: torch._dynamo.mark_dynamic({_local(src)}, {dim}{rng}); or "
            f"torch.compiler.config.patch(dynamic_sources=\"{frame_src or src}:{dim}\"); or pad it to a few "
            "bucket sizes"
        )
        if any(v in (0, 1) for v in ints):
            step += "; sizes 0 and 1 are always specialised — use torch._dynamo.decorators.mark_unbacked for them"
        return True, step
    steps = {
        "stride": "a differently laid-out input (e.g. a transpose): call .contiguous() before the compiled call",
        "dtype": "not shape-reducible: each dtype needs its own graph — cast inputs to one dtype before the call",
        "rank": "not shape-reducible: dynamic shapes do not cover a change of rank — reshape to one rank, "
                "or compile one function per rank",
        "device": "not shape-reducible: keep the inputs on one device",
        "requires_grad": "not shape-reducible: requires_grad is part of the guard — call with a consistent "
                         "requires_grad (e.g. inside torch.no_grad() for inference)",
        "grad_mode": "not shape-reducible: grad mode changed between calls — run every call inside the same "
                     "torch.no_grad()/enable_grad() state",
        "value": f"not shape-reducible: Python value {src} is specialised — pass it as a tensor, or keep the set "
                 "of values small (ints and floats become dynamic after one change unless dynamic=False)",
        "module_attribute": (
            "not shape-reducible: train/eval switch — compile the model once in the mode it serves, or keep "
            "one compiled instance per mode" if source and source.endswith(".training") else
            f"not shape-reducible: module attribute {src} is static to Dynamo — store it as a tensor or set "
            "torch._dynamo.config.allow_unspec_int_on_nn_module = True for ints"
        ),
        "global": f"not shape-reducible: global {src} is read inside the compiled code — pass it as an argument",
        "length": f"not shape-reducible: the length of {src} is part of the graph — stack it into one tensor "
                  "or pad the list to a fixed length",
        "dict_keys": f"not shape-reducible: the keys of {src} are part of the graph — use a fixed key set",
    }
    return False, steps.get(kind, "not a guard compilescope recognises: read PyTorch's text (left)")


def relation_multiple(texts: Iterable[object]) -> int | None:
    """The multiple that makes relation guards' parity/divisibility hold: the least common
    multiple of the ``// N`` they use (None when they use none)."""
    divisors = [int(d) for t in texts for d in re.findall(r"//\s*(\d+)", str(t))]
    return math.lcm(*divisors) if divisors else None


def relation_step(texts: tuple[str, ...], involves: tuple[str, ...]) -> str:
    """What can remove relation guards: they exist because the dims are already dynamic, so
    marking dims dynamic cannot. The multiple to pad to is read from the ``// N`` they use."""
    multiple = relation_multiple(texts)
    thresholds = [t for t in texts if re.search(r"[<>]=?\s*\d+\s*$", t)]
    dims = ", ".join(involves) or "the dims they name"
    steps = []
    if multiple is not None:
        steps.append(f"pad {dims} to a multiple of {multiple} (parity/divisibility guards then always hold)")
    if thresholds:
        steps.append("keep each input on one side of the size threshold(s) (a kernel choice switches there)")
    steps.append("or hold the graphs they split into (raise torch._dynamo.config.recompile_limit above the "
                 "number of variants), or change the op (e.g. ceil_mode=False)")
    return ("not removable by mark_dynamic — these relations exist because the dims are already dynamic: "
            + "; ".join(steps))


def _local(source: str) -> str:
    if source.startswith("L['") and source.endswith("']"):
        return source[3:-2]
    return source


def group_causes(compiles: tuple[CompileRecord, ...]) -> tuple[Cause, ...]:
    """One cause per (source, kind, dim), in order of first appearance."""
    values: dict[tuple[str | None, str, int | None], list[Scalar]] = defaultdict(list)
    ids: dict[tuple[str | None, str, int | None], list[str]] = defaultdict(list)
    examples: dict[tuple[str | None, str, int | None], str] = {}
    exprs: dict[tuple[str | None, str, int | None], list[str]] = defaultdict(list)
    involves: dict[tuple[str | None, str, int | None], tuple[str, ...]] = {}
    frame_sources: dict[tuple[str | None, str, int | None], str] = {}
    for c in compiles:
        seen_here = set()
        for g in c.guard_failures:
            if g.kind == "relation":  # one cause for all of a function's relation guards
                key = (None, "relation", None)
                text = re.sub(r"L\['([^']+)'\]", r"\1", g.reason)
                examples.setdefault(key, text)
                if text not in values[key]:
                    values[key].append(text)
                for d in g.involves:
                    if d not in exprs[key]:
                        exprs[key].append(d)
                involves[key] = tuple(sorted(exprs[key]))
            else:
                key = (g.source, g.kind, g.dim) if g.kind != "other" else (g.source, g.kind, hash(g.reason))
                examples.setdefault(key, g.reason)
                raw = frame_source(g.reason)
                if raw is not None:
                    frame_sources.setdefault(key, raw)
                symbolic = g.kind in ("range", "specialization")
                if symbolic and isinstance(g.expected, str) and g.expected not in exprs[key]:
                    exprs[key].append(g.expected)
                for v in ((g.actual,) if symbolic else (g.expected, g.actual)):
                    if v is not None and v not in values[key]:
                        values[key].append(v)
            if key not in seen_here:
                ids[key].append(str(c.compile_id))
                seen_here.add(key)
    causes = []
    for key, compile_ids in ids.items():
        source, kind, dim = key
        exprs_or_dims = tuple(involves.get(key, ())) if kind == "relation" else tuple(exprs[key])
        reducible, step = _next_step(kind, source, dim, tuple(values[key]), exprs_or_dims, frame_sources.get(key))
        causes.append(Cause(source, kind, dim if kind not in ("other", "relation") else None, tuple(values[key]),
                            tuple(compile_ids), reducible, step, examples[key], involves.get(key, ()),
                            frame_sources.get(key, source)))
    return tuple(causes)
