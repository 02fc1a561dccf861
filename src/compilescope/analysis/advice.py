"""Group recompile causes per compiled function, and say what to do about each.

A cause is one guard (source, kind, dim). It is *shape-reducible* when a dynamic-shape
setting can remove the recompiles (a varying size); otherwise the guard tracks something a
symbolic size cannot express (rank, dtype, a Python value, module state…) and the next step
is a change to the program, stated plainly.
"""

from __future__ import annotations

import builtins
import math
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from ..model import RESUME_PREFIX, CompileRecord, GuardFailure, Scalar
from ..report import Cause
from ..torchtext import NN_MODULE_INT_HINT, local_source


def describe(cause: Cause) -> str:
    """A cause in words, as every report prints it ("L['x'] dim 0 varied over 4, 8, 16 → 3 compile(s)")."""
    where = cause.source or "?"
    if cause.dim is not None:
        where += f" dim {cause.dim}"
    seen = listing(cause.values)
    what = {"size": "varied over", "stride": "stride varied over", "dtype": "dtype varied over",
            "rank": "rank varied over", "value": "value varied over", "module_attribute": "varied over",
            "global": "varied over", "length": "length varied over", "dict_keys": "keys varied over",
            "requires_grad": "requires_grad varied over", "device": "device varied over",
            "type": "type varied over"}.get(cause.kind)
    if what and len(cause.values) == 1:  # the entry's value; the one the call brought, PyTorch's reason does not say
        noun = {"size": "size", "stride": "stride", "value": "value", "module_attribute": "value",
                "global": "value"}.get(cause.kind, cause.kind.replace("_", " "))
        head = f"{where} {noun} changed from {seen} (to what, PyTorch's reason does not say)"
    elif what and seen:
        head = f"{where} {what} {seen}"
    elif cause.kind == "relation":
        texts = cause.values
        shown = "; ".join(str(t) for t in texts[:2]) + (f"; and {len(texts) - 2} more" if len(texts) > 2 else "")
        head = f"{len(texts)} relation guard(s) over {', '.join(cause.involves) or where}: {shown}"
    elif cause.kind == "specialization":  # a size of 0 or 1, which Dynamo always specialises: no range was set
        head = f"{where} specialised (a size of 0 or 1 is compiled for apart): {cause.example}"
    elif cause.kind == "range":
        head = f"{where} outside its range: {cause.example}"
    elif cause.kind == "other" or cause.source is None:
        head = f"{cause.source + ': ' if cause.source and cause.kind != 'other' else ''}{cause.example}"
    else:
        head = f"{where}: {cause.kind.replace('_', ' ')}"
    made = len(cause.compile_ids) - len(cause.refused)
    if not cause.compile_ids:
        return (f"{head} → no compile of its own (it failed only some of the cache entries tried; a compile "
                "counts for what failed every entry)")
    calls = "that call" if len(cause.refused) == 1 else "those calls"
    refused = (f", then {len(cause.refused)} refused by the recompile limit ({calls} ran eagerly, as does every "
               "later call no entry accepts: Dynamo records none of those)" if cause.refused else "")
    return f"{head} → {made} compile(s){refused}"


SHOWN = 12  # values listed before "and N more"


def listing(values: Sequence[object], shown: int = SHOWN) -> str:
    """Every value, or the first ``shown`` and how many more: never a silent cut."""
    text = ", ".join(str(v) for v in values[:shown])
    return text + (f" and {len(values) - shown} more" if len(values) > shown else "")


_PLAIN_INPUT = re.compile(r"^L\['(?P<name>[A-Za-z_]\w*)'\](?:\[\d+\]|\['[A-Za-z_]\w*'\])?$")
_INSIDE_INPUT = re.compile(r"^L\['(?P<name>[A-Za-z_]\w*)'\](?P<path>(?:\.[A-Za-z_]\w*|\[\d+\]|\['[^']*'\])+)$")
_PARAMETER = re.compile(r"\._(?:parameters|buffers)\[")


def inside_input(source: str | None) -> str | None:
    """Python for what a source reaches inside an argument the caller passes — a cache
    object's ``L['cache'].layers[0].keys`` is ``cache.layers[0].keys`` — else None (a plain
    argument, ``self``, a frame temporary, a module's attribute)."""
    m = _INSIDE_INPUT.match(source or "")
    if not m or m["name"].startswith("_") or m["name"] == "self" or input_name(source) is not None:
        return None
    if "._modules[" in m["path"] or _PARAMETER.search(m["path"]):
        return None
    return m["name"] + m["path"]


def guard_kind(kind: str, source: str | None) -> str:
    """A failed guard's kind as a forecast names it: a ``module_attribute`` whose source is
    inside an argument the caller passes (a cache's ``L['cache'].layers[0].is_initialized``,
    :func:`inside_input`) is an ``argument_attribute`` — no module holds it; any other kind
    is itself."""
    return "argument_attribute" if kind == "module_attribute" and inside_input(source) is not None else kind


def is_buffer_size(cause: Cause) -> bool:
    """A module buffer's size: only ``force_parameter_static_shapes`` reaches it."""
    return cause.kind == "size" and "._buffers[" in (cause.source or "") and bool(cause.compile_ids)


def is_parameter(source: str | None) -> bool:
    """A module's parameter or buffer (``L['self']._modules['lin']._parameters['weight']``)."""
    return bool(source) and bool(_PARAMETER.search(source or ""))


def input_name(source: str | None) -> str | None:
    """The caller's argument a source names (``L['x']`` → ``x``), or None for anything a
    caller cannot reach: a frame temporary (``L['___stack0']``), an attribute or parameter
    path (``L['self']._modules[…]``), a global."""
    m = _PLAIN_INPUT.match(source or "")
    if not m or m["name"].startswith("_") or m["name"] == "self":
        return None
    return m["name"]


def reachable(source: str | None, frame_function: str, inputs: Iterable[str] | None = None) -> bool:
    """Whether a guard's source is an input the caller of the compiled function passes: a
    plain argument of a frame that is not a graph break's resume frame (whose locals are the
    program's temporaries), and one of the recorded call's inputs when those are known."""
    name = input_name(source)
    if name is None or frame_function.startswith(RESUME_PREFIX):
        return False
    # a recorded input inside an argument is named by its path (``batch['tokens']``, ``args[0]``)
    return inputs is None or name in {re.split(r"[\[.]", i, maxsplit=1)[0] for i in inputs}


_TENSOR_NAME = re.compile(r"^tensor '(?P<name>.+?)' (?:size|stride|dtype|requires_grad|rank|dispatch|device)")


def frame_source(reason: str) -> str | None:
    """The source as the compiled frame itself sees it, from PyTorch's reason text: for a
    compiled module PyTorch's wrapper frame sees ``args[0]``/``kwargs['ids']`` (what
    ``dynamic_sources`` must name), which the records rename to the parameter."""
    m = _TENSOR_NAME.match(reason)
    if not m:
        return None
    return local_source(m["name"])  # 2.13 says tensor 'x', 2.6 tensor 'L['x']': both are L['x']


def whole_path(line: str | None, filename: str) -> str | None:
    """A user line PyTorch cites (``file:line in function``) with the compiled frame's whole
    path where PyTorch shortened it: it cuts a path outside its own tree by the length of the
    common path plus one (``/tmp/s.py`` comes out ``mp/s.py`` beside a torch under ``/work``,
    ``/tmp/a/t.py`` comes out ``a/t.py`` beside one under ``/tmp/venv``)."""
    if not line or not filename:
        return line
    path, sep, rest = line.partition(":")
    if sep and path != filename and len(path) < len(filename) and filename.endswith(path) and not path.startswith("/"):
        return filename + sep + rest
    return line


_RESUME_LINE = re.compile(rf"^{RESUME_PREFIX}(?P<function>\w+?)_at_(?P<line>\d+)$")


def resumed_at(function: str, filename: str) -> str:
    """Where the graph break a resume frame resumes after is: ``file:line in function``, read
    from the frame's name (``torch_dynamo_resume_in_f_at_6``); "" for any other frame."""
    m = _RESUME_LINE.match(function)
    return f"{filename}:{m['line']} in {m['function']}" if m else ""


def _at(lines: Sequence[str]) -> str:
    return f" at {', '.join(lines)}" if lines else ""


def _next_step(
    kind: str, source: str | None, dim: int | None, values: tuple[Scalar, ...], exprs: tuple[str, ...] = (),
    frame_srcs: tuple[str, ...] = (), *, lines: tuple[str, ...] = (), reach: bool = True, resume: bool = False,
    marked: bool | None = None, thresholds: bool = False, compiles: int = 0, module_int: bool = False,
    resumed_at: str = "",
) -> tuple[bool, str]:
    """Whether a shape setting removes the cause, and the next step, in words."""
    src = source or "the input"
    if kind == "range":
        return _range_step(exprs, lines, marked)
    if kind == "specialization":
        return True, (
            f"sizes 0 and 1 are specialised ({exprs[0] if exprs else src}): use "
            f"torch._dynamo.decorators.mark_unbacked({_argument(src)}, {dim}) if those sizes occur"
        )
    if kind == "relation":
        return False, relation_step(tuple(str(v) for v in values), exprs, lines)
    if kind == "size" and is_parameter(source) and "._buffers[" in (source or ""):
        return False, ("not reducible by a mark: a buffer's shape changed between calls — state the forward keeps "
                       "in a buffer and grows (a cache), or module instances whose buffers differ in shape sharing "
                       "one compiled code object; mark_dynamic and dynamic=True do not reach it. torch._dynamo.config."
                       "force_parameter_static_shapes = False lets Dynamo make its size dynamic once it changes (read "
                       "from the guards, not run here: probe --check-fixes or advise --script runs it), or keep the "
                       "buffer one size (preallocate it and write into a slice)")
    if kind == "size" and is_parameter(source):
        return False, ("not shape-reducible: a parameter's shape — module instances whose weights differ in shape "
                       "share one compiled code object, so each instance needs its own graph (expected once per "
                       "instance); compile each instance on its own, or raise torch._dynamo.config.recompile_limit "
                       "above the number of instances")
    inner = inside_input(source)
    if kind == "size" and inner is not None and not resume:
        sources = ",".join(f"{s}:{dim}" for s in frame_srcs or (source,))
        return True, (f"a tensor inside the argument the caller passes: mark it dynamic before each call: "
                      f"torch._dynamo.mark_dynamic({inner}, {dim}); or "
                      f"torch.compiler.config.patch(dynamic_sources=\"{sources}\"); or pad it to a few bucket sizes")
    if kind == "size":
        return True, _size_step(src, dim, values, frame_srcs, reach=reach, resume=resume, thresholds=thresholds)
    if kind in ("module_attribute", "value") and inner is not None and not module_int:
        return False, (f"not shape-reducible: {inner} is a Python value on an object the caller passes (a cache's "
                       "state flag, say); each value needs its own graph — expected when it changes once (an "
                       "empty cache filled), else keep it constant across calls or hold it in a tensor")
    if kind == "grad_mode" and compiles <= 1:  # a second entry for the other mode
        return False, ("one entry per grad mode, expected (a training loop's eval pass under torch.no_grad()): "
                       "nothing to remove while it compiles no more than once per mode")
    if not reach and kind == "value" and resume:
        used = f" (used at {', '.join(lines)})" if lines else ""
        held = ("the value the break's line computes (held on the interpreter's stack across it, an .item()'s "
                "result, say)" if _local(src).startswith("___stack") else _local(src))
        return False, (f"not shape-reducible: {held} is a Python number the program holds across the graph "
                       f"break{' at ' + resumed_at if resumed_at else ''}{used}: the frame that resumes after the "
                       "break takes it as an argument and guards on its value — remove the graph break, or compute "
                       "the number after it")
    return False, _program_step(kind, source, values)


def _range_step(exprs: tuple[str, ...], lines: tuple[str, ...], marked: bool | None) -> tuple[bool, str]:
    """A ``lo <= size <= hi`` guard: mark_dynamic's bounds (``marked``), or a size threshold
    from an op's shape function (not marked), or either when it is not known."""
    bounds = exprs[0] if exprs else "its bounds"
    widen = (f"an input fell outside the range given to mark_dynamic ({bounds}): widen min/max to cover "
             "every size the program sees")
    threshold = (f"a size threshold ({bounds}) from an op's shape function{_at(lines)}: each side of it needs "
                 "its own graph, and neither mark_dynamic nor dynamic=True removes it — keep the inputs on one "
                 "side of it (pad or split them), or raise torch._dynamo.config.recompile_limit to hold the "
                 "graphs")
    if marked:
        return True, widen
    if marked is False:
        return False, threshold
    return False, f"if mark_dynamic was called with min/max, {widen}; otherwise {threshold}"


def _size_step(src: str, dim: int | None, values: tuple[Scalar, ...], frame_srcs: tuple[str, ...], *, reach: bool,
               resume: bool, thresholds: bool) -> str:
    """A size that varied on a static dim: mark it dynamic (the caller's input), or the inputs
    it comes from (a tensor the program computes)."""
    ints = sorted({v for v in values if isinstance(v, int) and not isinstance(v, bool)})
    if not reach and resume:
        # a tensor computed before the break is a new one at each call: a mark on the caller's
        # inputs does not reach it (measured: with the input marked, the resume frame still
        # recompiled — once by default, as automatic dynamic shapes then compile it dynamic, at
        # every size under dynamic=False; dynamic=True compiled it once)
        return ("a tensor the frame that resumes after a graph break receives: a mark on the caller's input "
                "reaches it only when it is that input passed through; one the program computed before the "
                "break is made anew each call, which no mark reaches — compile with dynamic=True, or remove the "
                "graph break")
    if not reach:
        return ("a tensor the program computes, not an input the caller passes: mark the varying dims of the "
                "inputs it comes from (torch._dynamo.mark_dynamic(input, dim) before the call) or compile with "
                "dynamic=True")
    name = _argument(src)
    sources = ",".join(f"{s}:{dim}" for s in frame_srcs or (src,))  # each name the frames gave it
    step = (f"mark it dynamic before each call: torch._dynamo.mark_dynamic({name}, {dim}); or "
            f"torch.compiler.config.patch(dynamic_sources=\"{sources}\"); or pad it to a few bucket sizes")
    if any(v in (0, 1) for v in ints):
        step += ("; sizes 0 and 1 are always specialised, so a marked dim still recompiles for them — use "
                 f"{unbacked_mark(src, dim)} if they occur")
    if thresholds:
        step += "; the threshold/relation guards on it (listed apart) stay whatever it is marked"
    return step


def _program_step(kind: str, source: str | None, values: tuple[Scalar, ...] = ()) -> str:
    """The change to the program a guard no shape setting removes asks for."""
    src = source or "the input"
    steps = {
        "stride": "a differently laid-out input (e.g. a transpose): call .contiguous() before the compiled call",
        "dtype": "not shape-reducible: each dtype needs its own graph — cast inputs to one dtype before the call",
        "rank": "not shape-reducible: dynamic shapes do not cover a change of rank — reshape to one rank, "
                "or compile one function per rank",
        "device": "not shape-reducible: keep the inputs on one device",
        "type": (f"not shape-reducible: {_local(src)} is a tensor on some calls and None on others (a cache's slot "
                 "left None until it is filled, say): each needs its own graph — expected when it changes once, "
                 "else pass the same type every call") if {"Tensor", "NoneType"} <= set(map(str, values)) else
                (f"not shape-reducible: {_local(src)} changed type between calls: each type needs its own graph — "
                 "pass the same type every call (a tuple, say, where some calls pass a list)"),
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
    return steps.get(kind, "not a guard compilescope recognises: read PyTorch's text (left)")


def relation_multiple(texts: Iterable[object]) -> int | None:
    """The multiple that makes relation guards' parity/divisibility hold: the least common
    multiple of the ``// N``, ``% N`` or ``Mod(…, N)`` they use (None when they use none)."""
    divisors = [int(d) for t in texts
                for d in re.findall(r"(?://|%)\s*(\d+)|Mod\([^()]*(?:\([^()]*\)[^()]*)*,\s*(\d+)\)", str(t))
                for d in d if d]
    return math.lcm(*divisors) if divisors else None


_PINNED = re.compile(r"==\s*-?\d+\s*$")


def relation_step(texts: tuple[str, ...], involves: tuple[str, ...], lines: Sequence[str] = (),
                  padding_rejected: str = "", padding_accepted: str = "") -> str:
    """What can remove relation guards: they exist because the dims are already dynamic, so
    marking dims dynamic cannot. Each step is read from the guards themselves: the multiple
    to pad to from the ``// N`` they use (unless padding was measured and rejected:
    ``padding_rejected`` says how), a threshold from a ``<=``/``>=`` bound, a pinned derived
    integer from ``… == k``, the op from the user line PyTorch cites."""
    multiple = relation_multiple(texts)
    thresholds = [t for t in texts if re.search(r"[<>]=?\s*\d+\s*$", t) or re.match(r"^\s*\d+\s*<=?", t)]
    pinned = [t for t in texts if _PINNED.search(t) and "//" in t]
    dims = ", ".join(involves) or "the dims they name"
    steps = []
    if multiple is not None and not pinned:
        if padding_accepted:
            steps.append(f"padding {dims} to a multiple of {multiple} was measured and kept ({padding_accepted})")
        elif padding_rejected:
            steps.append(f"padding {dims} to a multiple of {multiple} was measured and rejected ({padding_rejected})")
        else:
            steps.append(f"pad {dims} to a multiple of {multiple} (parity/divisibility guards then always hold)")
    if pinned:
        steps.append(f"a whole number computed from {dims} (a floor division{_at(lines)}) is used as a Python int, "
                     "so each of its values needs its own graph — keep it a tensor operation, or feed sizes that "
                     "give one value")
    if thresholds:
        steps.append("keep each input on one side of the size threshold(s) (the code takes another path there — "
                     f"a branch on the size, or a kernel choice of an op it calls{_at(lines)})")
    where = f"change the code at {', '.join(lines)} so no guard depends on the size" if lines else ""
    steps.append(("or " if steps else "") + "hold the graphs they split into (raise "
                 "torch._dynamo.config.recompile_limit above the number of variants)" + (f", or {where}" if where else ""))
    return ("not removable by mark_dynamic — these relations exist because the dims are already dynamic: "
            + "; ".join(steps))


def unbacked_mark(source: str, dim: int) -> str:
    """The mark that keeps a dim dynamic through sizes 0 and 1, as the user writes it."""
    return f"torch._dynamo.decorators.mark_unbacked({_argument(source)}, {dim})"


_LOCAL = re.compile(r"^L\['(?P<name>[A-Za-z_]\w*)'\](?P<path>.*)$")


def _local(source: str) -> str:
    """Python for a frame's source as its code names it: ``L['x']`` → ``x``,
    ``L['batch']['tokens']`` → ``batch['tokens']``."""
    m = _LOCAL.match(source)
    return m["name"] + m["path"] if m else source


_BUILTINS = frozenset(dir(builtins))


def _argument(source: str) -> str:
    """What a mark names, as the caller writes it: the frame's name for the input, or — where
    that name is a builtin's (``nn.Sequential.forward(input)``, called ``model(x)``), which a
    pasted line would mark instead — a placeholder the caller fills in."""
    m = _LOCAL.match(source)
    if m and m["name"] in _BUILTINS:
        return f"<the tensor passed as {_local(source)}>"
    return _local(source)


CauseKey = tuple[str | None, str, int | None]  # (source, kind, dim); an "other" guard's dim is its text's hash


@dataclass
class _Evidence:
    """What a function's guard failures say of each cause, keyed in order of first appearance."""

    values: defaultdict[CauseKey, list[Scalar]] = field(default_factory=lambda: defaultdict(list))
    ids: defaultdict[CauseKey, list[str]] = field(default_factory=lambda: defaultdict(list))
    examples: dict[CauseKey, str] = field(default_factory=dict)
    exprs: defaultdict[CauseKey, list[str]] = field(default_factory=lambda: defaultdict(list))
    involves: dict[CauseKey, tuple[str, ...]] = field(default_factory=dict)
    frame_sources: defaultdict[CauseKey, list[str]] = field(default_factory=lambda: defaultdict(list))
    lines: defaultdict[CauseKey, list[str]] = field(default_factory=lambda: defaultdict(list))
    functions: dict[CauseKey, str] = field(default_factory=dict)
    filenames: dict[CauseKey, str] = field(default_factory=dict)
    by_mark: set[CauseKey] = field(default_factory=set)
    module_ints: set[CauseKey] = field(default_factory=set)  # PyTorch's hint says: an nn.Module's integer
    refused: defaultdict[CauseKey, list[str]] = field(default_factory=lambda: defaultdict(list))  # limit-refused ids
    failed: defaultdict[CauseKey, list[CompileRecord]] = field(default_factory=lambda: defaultdict(list))  # failed compiles
    packed: dict[CauseKey, tuple[str, str]] = field(default_factory=dict)  # the entry frame's *args/**kwargs names

    def add(self, c: CompileRecord) -> None:
        seen_here = set()
        keyed = [(g, self._add_relation(g) if g.kind == "relation" else self._add_guard(g)) for g in c.guard_failures]
        credited = _credited(keyed)
        for g, key in keyed:
            self.ids[key]  # listed, credited with this compile or not
            self.functions.setdefault(key, c.function)
            self.filenames.setdefault(key, c.filename)
            if c.target is not None and c.target.packed:
                self.packed.setdefault(key, c.target.packed)
            if any(r.lstrip().startswith(g.reason) and NN_MODULE_INT_HINT in r for r in c.reasons):
                self.module_ints.add(key)
            if g.kind == "range":
                from ..compat import MARK_DYNAMIC_GUARD_SOURCE  # here, not at import: compat imports torch

                if any(g.reason in r and MARK_DYNAMIC_GUARD_SOURCE in r for r in c.reasons):
                    self.by_mark.add(key)  # PyTorch says mark_dynamic's min/max made this guard
            line = whole_path(g.user_line, c.filename)
            if line and line not in self.lines[key]:
                self.lines[key].append(line)
            if key not in seen_here and key in credited:
                self.ids[key].append(str(c.compile_id))
                if c.refused:
                    self.refused[key].append(str(c.compile_id))
                if c.failed:
                    self.failed[key].append(c)
                seen_here.add(key)

    def _add_relation(self, g: GuardFailure) -> CauseKey:
        key = cause_key(g)  # one cause for all of a function's relation guards
        text = re.sub(r"L\['([^']+)'\]", r"\1", g.reason)
        self.examples.setdefault(key, text)
        if text not in self.values[key]:
            self.values[key].append(text)
        for d in g.involves:
            if d not in self.exprs[key]:
                self.exprs[key].append(d)
        self.involves[key] = tuple(sorted(self.exprs[key]))
        return key

    def _add_guard(self, g: GuardFailure) -> CauseKey:
        key = cause_key(g)
        self.examples.setdefault(key, g.reason)
        raw = frame_source(g.reason)
        if raw is not None and raw not in self.frame_sources[key]:
            self.frame_sources[key].append(raw)  # a wrapper's frame: the input by position and by keyword
        symbolic = g.kind in ("range", "specialization")
        if symbolic and isinstance(g.expected, str) and g.expected not in self.exprs[key]:
            self.exprs[key].append(g.expected)
        for v in ((g.actual,) if symbolic else (g.expected, g.actual)):
            if v is not None and v not in self.values[key]:
                self.values[key].append(v)
        return key


def cause_key(g: GuardFailure) -> CauseKey:
    """The cause a failure is of: (source, kind, dim); every relation guard of a function is one
    cause; an unrecognised guard is its own, by its text."""
    if g.kind == "relation":
        return (None, "relation", None)
    return (g.source, g.kind, g.dim) if g.kind != "other" else (g.source, g.kind, hash(g.reason))


def credited_failures(record: CompileRecord) -> tuple[GuardFailure, ...]:
    """The failures of ``record`` whose causes it is counted for (:func:`_credited`)."""
    keyed = [(g, cause_key(g)) for g in record.guard_failures]
    credited = _credited(keyed)
    return tuple(g for g, key in keyed if key in credited)


def _credited(keyed: Sequence[tuple[GuardFailure, CauseKey]]) -> set[CauseKey]:
    """The causes a compile is counted for: those that failed every cache entry tried — what
    the call changed against everything cached. A cause that failed some entries only did not
    make the compile: ``x`` dim 0 failing a static first entry where a newer one, dynamic in
    dim 0, failed on dim 1 alone, is dim 1's compile; a fresh cache's ``None`` slot failing the
    newest entry while an older one, compiled with ``None``, failed on ``x``'s size alone, is
    the size's compile. Where no cause failed every entry, those of the newest entry (the last
    compiled; under automatic dynamic shapes the most general). Failures that name no entry
    count all together."""
    from ..model import CompileId

    by_entry: dict[str, set[CauseKey]] = {}
    for g, key in keyed:
        if g.failed_entry is None or CompileId.parse(g.failed_entry) is None:
            return {key for _, key in keyed}
        by_entry.setdefault(g.failed_entry, set()).add(key)
    if not by_entry:
        return set()
    common = set.intersection(*by_entry.values())
    if common:
        return common
    newest = max(by_entry, key=lambda e: CompileId.parse(e).attempt)  # type: ignore[union-attr]
    return by_entry[newest]


def group_causes(compiles: tuple[CompileRecord, ...], *,
                 observed: Mapping[tuple[str, int], Sequence[int]] | None = None,
                 inputs: Iterable[str] | None = None, marked: bool | None = None) -> tuple[Cause, ...]:
    """One cause per (source, kind, dim), in order of first appearance.

    ``observed`` — (input name, dim) → every size the calls fed, when the calls were
    recorded — completes the values a size cause lists (guards name only the sizes that
    failed one) and names the inputs a caller passes; ``inputs`` names them outright (an
    empty set: the frame is not one the caller calls, e.g. a submodule's after a graph
    break, so none of its sources is the caller's); ``marked`` says whether the program
    called mark_dynamic (None: not known), which is what a ``lo <= size <= hi`` guard means."""
    ev = _Evidence()
    for c in compiles:
        ev.add(c)
    if inputs is not None:
        inputs = set(inputs)
    elif observed:
        inputs = {name for name, _ in observed}
    related = {d for k in ev.ids if k[1] == "relation" for d in ev.involves.get(k, ())}
    related |= {f"{k[0]} dim {k[2]}" for k in ev.ids if k[1] == "range" and not marked}
    causes = [_cause(ev, key, observed, inputs, marked, related) for key in ev.ids]
    # an input whose size varied only in the compiles a parameter's shape also caused varies
    # with the module instance: marking it alone removes nothing
    by_parameter = {i for k in ev.ids if k[1] == "size" and is_parameter(k[0]) for i in ev.ids[k]}
    causes = [_with_instance(c) if c.compile_ids and set(c.compile_ids) <= by_parameter else c for c in causes]
    causes = [c if c.compile_ids else replace(c, shape_reducible=False, next_step=(
        "nothing to do for it alone: each compile it failed an entry of is counted for the causes that failed "
        "every entry")) for c in causes]
    return tuple(replace(c, description=describe(c)) for c in causes)


def _with_instance(c: Cause) -> Cause:
    """A cause that changed only in the compiles a parameter's shape caused varies with the
    module instance: an input's size (marking it alone removes no compile) or a module's
    attribute (a LayerNorm's ``normalized_shape``), not a fix of its own."""
    if c.kind == "size" and not is_parameter(c.source):
        return replace(c, shape_reducible=False, next_step=(
            "varies with the module instance: the instances' parameters differ in shape (listed apart), so "
            "marking it dynamic alone removes no compile"))
    if c.kind in ("module_attribute", "value"):
        return replace(c, shape_reducible=False, next_step=(
            "not shape-reducible: varies with the module instance, as the instances' parameters do (listed apart): "
            "each instance needs its own graph (expected once per instance); compile each instance on its own"))
    return c


def _how_called(kind: str, source: str | None, reason: str, packed: tuple[str, str] | None) -> bool:
    """A guard on a wrapper frame's packed ``*args``/``**kwargs`` themselves — how many there
    are, which keys, or none (``not L['kwargs']``) — rather than on an input inside them."""
    if not packed:
        return False
    whole = {f"L['{name}']" for name in packed}
    if source in whole and kind in ("length", "dict_keys", "other"):
        return True
    return source is None and reason.strip().removeprefix("not ").strip() in whole


def _cause(ev: _Evidence, key: CauseKey, observed: Mapping[tuple[str, int], Sequence[int]] | None,
           inputs: Iterable[str] | None, marked: bool | None, related: set[str]) -> Cause:
    source, kind, dim = key
    function = ev.functions.get(key, "")
    reach = reachable(source, function, inputs) if source is not None else False
    vals = list(ev.values[key])
    name = input_name(source)
    if kind == "size" and reach and observed and name is not None and dim is not None:
        fed = observed.get((_local(source or ""), dim)) or observed.get((name, dim), ())
        vals = sorted({*(v for v in vals if isinstance(v, int)), *fed})  # every size fed, in order
    exprs_or_dims = tuple(ev.involves.get(key, ())) if kind == "relation" else tuple(ev.exprs[key])
    frame_srcs = tuple(ev.frame_sources[key])
    reducible, step = _next_step(kind, source, dim, tuple(vals), exprs_or_dims, frame_srcs,
                                 lines=tuple(ev.lines[key]), reach=reach, resume=function.startswith(RESUME_PREFIX),
                                 marked=True if key in ev.by_mark else marked,
                                 thresholds=f"{source} dim {dim}" in related, compiles=len(ev.ids[key]),
                                 module_int=key in ev.module_ints,
                                 resumed_at=resumed_at(function, ev.filenames.get(key, "")))
    if _how_called(kind, source, ev.examples[key], ev.packed.get(key)):
        reducible, step = False, (
            "not shape-reducible: the calls pass the inputs in different ways — positionally or by keyword, or more "
            f"or fewer of them — and the wrapper's frame receives them packed ({source or ev.examples[key]}), "
            "whose length and keys are part of each graph: pass them the same way at every call (or compile the "
            "function inside the wrapper)")
    failed = ev.failed[key]
    if failed and len(failed) == len(ev.ids[key]):  # nothing it caused compiled: no setting holds a graph for it
        f = failed[0]
        then = (", its error raised into the call" if all(r.reached_call for r in failed) else
                ", after which Dynamo ran the frame eagerly" if all(r.reached_call is False for r in failed) else "")
        fix = ("widen the range the dim is marked with (mark_dynamic's min/max) to the sizes it gets, or keep "
               "sizes outside it from the call" if kind == "range" else
               "no shape setting or recompile limit holds a graph for it — make the code compile for these inputs")
        reducible, step = False, (
            f"every compile it caused failed (compile {f.compile_id}: {f.fail_type or 'an error'}){then}: {fix} "
            "(the failure is listed apart)")
    return Cause(source, kind, dim if kind not in ("other", "relation") else None, tuple(vals),
                 tuple(ev.ids[key]), reducible, step, ev.examples[key], ev.involves.get(key, ()),
                 frame_srcs[0] if frame_srcs else source, tuple(ev.lines[key]), reach, refused=tuple(ev.refused[key]),
                 frame_sources=frame_srcs or ((source,) if source else ()))
