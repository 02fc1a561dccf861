"""The forecast from recorded guards: no model, no Dynamo — the guards each cache entry had.

A ``run`` records, for every new cache entry, its guards on the frame's inputs
(``CompileRecord.entry_guards``). Here those guards are evaluated against each request of a
new stream, in stream order, as Dynamo checks a frame's cache: the most recent entry first.

* **hit**: an entry accepts the request;
* **eager**: none does and the frame already holds ``recompile_limit`` entries;
* **compile**: none does; the guards that failed are named in PyTorch's words. The new entry
  is the recording's entry of the same attempt number when it accepts the request (the entry
  PyTorch made there), or, under a static strategy, any recorded entry compiled for the same
  sizes. Otherwise it is *new*: its guards were not recorded, so they are estimated by
  PyTorch's rule for the strategy's dynamic mode (:attr:`Strategy.dynamic
  <compilescope.strategies.Strategy.dynamic>`) — under automatic dynamic (``default``) a dim
  whose size differs from an earlier entry's becomes dynamic, under ``dynamic`` every dim of
  size ≥ 2 is, and the symbolic relations of the latest entry that has some are carried over
  as this request decides them (a backend's parity guard on an odd size becomes its
  negation); otherwise the entry accepts just that shape — and every request after it is
  marked ``estimated``.

A request's inputs are made as the workload makes them (once per distinct shape; only what
they hold is read — sizes, dtypes, plain values, types and lengths, inside objects too
(:func:`request_of`), no model is built or run) and named by the compiled function's
parameters. Symbolic-shape guards are evaluated by a small arithmetic evaluator
(:func:`evaluate`). What the recorded guards leave out (a tensor's layout, ``requires_grad``,
type and aliasing; a module or callable argument) is compared with the request an entry was
made for: a difference makes the entry's verdict unknown (:func:`trait_differences`); and a
recording whose own request compiled where an older entry's recorded guards accept it shows
such a guard deciding the frame (:func:`blind_spot`). A guard that cannot be evaluated (an expression
outside the evaluator, a value the request does not hold) is never taken as passing: unless
an older entry surely accepts the request, it is **unknown**, with why, and so is every later
request no entry surely accepts (:class:`FrameModel`). Frames other than the compiled
function's own (after a graph break) guard the locals they resume with, which are not
evaluated: their requests are marked estimated, with the entry frame's outcome; a trial that never compiled the function's
own frame forecasts every request unknown (:func:`unmatched`).
"""

from __future__ import annotations

import ast
import dataclasses
import math
import operator
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import BuiltinFunctionType, FunctionType, MethodType
from typing import Any

from .. import compat
from ..analysis.outcomes import call_arguments, failure_skips_frame, limit_in_force, repeat_word, trial_limit
from ..errors import OptionError
from ..leaves import NOT_PLAIN, Node, is_plain, resolve, source, type_name, walk
from ..torchtext import parse_source
from ..model import RESUME_PREFIX, CompileRecord, EntryGuard, RunResult, Shape, StrategyOptions, TrialResult, shape_key
from ..report.forecast import ForecastGuard, ForecastRequest, Outcome, StrategyForecast
from ..torchtext import parse_guard_failure, split_reason
from .isolation import put_back

NOT_RECORDED = "a new entry's guards were not recorded"


class Unevaluable(Exception):
    """A guard expression outside what :func:`evaluate` knows."""


@dataclass(frozen=True)
class Request:
    """One request's inputs as the guards see them, by source (``L['x']``,
    ``L['cache'].layers[0].keys``): each tensor's sizes and dtype, each plain value, each
    value's type and each list's, tuple's or dict's length. ``args``: the parameters the
    request passes (a guard on another keeps the default it was compiled with, as every
    request of the program does); None when not known."""

    sizes: Mapping[str, tuple[int, ...]]
    dtypes: Mapping[str, str] = field(default_factory=dict)
    scalars: Mapping[str, Any] = field(default_factory=dict)
    types: Mapping[str, str] = field(default_factory=dict)
    lengths: Mapping[str, int] = field(default_factory=dict)
    args: frozenset[str] | None = None
    # what the recorded guards leave out, by source (:func:`_traits`): a tensor's layout,
    # requires_grad and aliasing; a module's or callable's identity. An entry accepts a request
    # that differs here from the request it was made for only as far as anyone can tell
    traits: Mapping[str, Any] = field(default_factory=dict)
    strides: Mapping[str, tuple[int, ...]] = field(default_factory=dict)  # a tensor's, where known (else contiguous)
    offsets: Mapping[str, int] = field(default_factory=dict)  # a tensor's storage offset

    def defaulted(self, source: str | None) -> bool:
        """A source inside a parameter this request does not pass (a dict's key by position:
        the dict's own)."""
        key = _DICT_KEY.match(source or "")
        parsed = parse_source(key["src"] if key else source or "")
        return self.args is not None and parsed is not None and parsed[0] not in self.args


_DICT_KEY = re.compile(r"^list\(dict\.keys\((?P<src>.+)\)\)\[(?P<i>\d+)\]$")  # a dict's key by position


def request_of(named: Mapping[str, Any], wanted: Sequence[str] = ()) -> Request:
    """A request made of named arguments: the tensors, plain values and containers inside
    each (objects' attributes too), bounded as :func:`compilescope.leaves.walk` is; and each
    ``wanted`` source (one a recorded guard names) the walk did not reach, read from the
    arguments themselves (a ``ModelOutput``'s attribute left ``None``, which its items leave
    out). Only what they hold is kept, never the arguments."""
    request = _walked(named)
    for src in wanted:
        if src not in request.types and src not in request.sizes and src not in request.scalars:
            request = _reached(request, named, src)
    return request


def _walked(named: Mapping[str, Any]) -> Request:
    import torch

    sizes: dict[str, tuple[int, ...]] = {}
    dtypes: dict[str, str] = {}
    scalars: dict[str, Any] = {}
    types: dict[str, str] = {}
    lengths: dict[str, int] = {}
    traits: dict[str, Any] = {"global state": _global_state()}
    strides: dict[str, tuple[int, ...]] = {}
    offsets: dict[str, int] = {}
    seen: dict[int, str] = {}  # a tensor object → the first source holding it
    for name, value in named.items():
        if isinstance(value, (torch.nn.Module, FunctionType, BuiltinFunctionType, MethodType)):
            traits[f"L['{name}']"] = _identity(value)
        for steps, v in walk(value).items:
            src = source(f"L['{name}']", steps)
            if isinstance(v, torch.Tensor):
                sizes[src] = tuple(int(n) for n in v.shape)
                dtypes[src] = str(v.dtype).replace("torch.", "")
                types[src] = type_name(v)
                traits[src] = _tensor_traits(v, seen.setdefault(id(v), src), src)
                if v.layout == torch.strided:
                    strides[src] = tuple(int(n) for n in v.stride())
                    offsets[src] = int(v.storage_offset())
                    base = compat.view_base(v)
                    if base is not None and base.layout == torch.strided:  # a view: its base, as Dynamo guards it
                        sizes[f"{src}._base"] = tuple(int(n) for n in base.shape)
                        strides[f"{src}._base"] = tuple(int(n) for n in base.stride())
                        offsets[f"{src}._base"] = int(base.storage_offset())
            elif isinstance(v, Node):
                types[src] = v.type
                if v.length is not None:
                    lengths[src] = v.length
                for i, key in enumerate(v.keys or ()):  # a dict's keys by position, as Dynamo guards them
                    if key is not NOT_PLAIN:
                        scalars[f"list(dict.keys({src}))[{i}]"] = key
            else:
                scalars[src] = v
                types[src] = type_name(v)
    return Request(sizes, dtypes, scalars, types, lengths, frozenset(named), traits, strides, offsets)


def _reached(request: Request, named: Mapping[str, Any], src: str) -> Request:
    """``request`` with ``src`` read from the arguments ``named``; as it was when it cannot be read."""
    parsed = parse_source(src)
    if parsed is None or parsed[0] not in named:
        return request
    try:
        value = resolve(named[parsed[0]], parsed[1])
    except LookupError:
        return request
    found = _walked({"_": value})
    renamed = {k: {s.replace("L['_']", src, 1): v for s, v in getattr(found, k).items()}
               for k in ("sizes", "dtypes", "scalars", "types", "lengths", "strides")}
    return dataclasses.replace(request, **{k: {**getattr(request, k), **v} for k, v in renamed.items()})


def _tensor_traits(t: Any, first: str, src: str) -> tuple[Any, ...]:
    """A tensor's layout (contiguous, channels-last, else its strides), requires_grad, the
    source it aliases when it is an object an earlier source holds too (``f(x, x)``), and its
    type (a ``Parameter``, a subclass)."""
    import torch

    if t.layout != torch.strided:  # sparse, a jagged nested tensor: no strides to read
        layout: Any = str(t.layout)
    else:
        sizes, strides = tuple(t.shape), tuple(t.stride())
        if strides == _contiguous(sizes):
            layout = "contiguous"
        elif len(sizes) == 4 and strides == _channels_last(sizes):
            layout = "channels_last"
        else:  # its dims from the largest stride down (exact strides are compared at equal sizes)
            layout = ("order", tuple(sorted(range(len(strides)), key=lambda i: (-strides[i], i))))
    return layout, bool(t.requires_grad), None if first == src else first, type_name(t)


def _global_state() -> tuple[Any, ...]:
    """What Dynamo's global-state guard checks, as the request's inputs were made: grad mode,
    the default dtype, deterministic algorithms, the thread count, CPU autocast."""
    import torch

    return (torch.is_grad_enabled(), torch.get_default_dtype(), torch.are_deterministic_algorithms_enabled(),
            torch.get_num_threads(), torch.is_autocast_enabled("cpu"))


def _channels_last(sizes: tuple[int, ...]) -> tuple[int, ...]:
    n, c, h, w = (max(s, 1) for s in sizes)
    return h * w * c, 1, w * c, c


def _identity(value: Any) -> tuple[Any, ...]:
    """A module's type, training flags, parameters' and buffers' sizes and plain attributes; a
    callable's name and code (a function made afresh each call is guarded by its code, a
    builtin by its identity): what Dynamo's guards on an object argument check, as far as they go."""
    import torch

    if isinstance(value, torch.nn.Module):
        return (type_name(value), tuple(m.training for m in value.modules()),
                tuple((n, tuple(p.shape), bool(p.requires_grad)) for n, p in value.named_parameters()),
                tuple((n, tuple(b.shape)) for n, b in value.named_buffers()),
                tuple((k, v) for m in value.modules() for k, v in vars(m).items()
                      if not k.startswith("_") and is_plain(v) and v == v))  # a NaN never equals itself
    code = getattr(value, "__code__", None)  # a function made afresh each call is guarded by its code
    return (getattr(value, "__module__", None), getattr(value, "__qualname__", None),
            id(code) if code is not None else id(value))


_TRAIT_WORDS = ("layout", "requires_grad", "aliasing", "type")


def trait_differences(made_for: Request | None, request: Request) -> str | None:
    """How ``request`` differs from ``made_for`` (the request an entry was made for) in what
    the recorded guards leave out, for the sources both hold; None when it does not."""
    if made_for is None:
        return None
    for src, mine in request.traits.items():
        theirs = made_for.traits.get(src)
        if theirs is not None and theirs == mine and src in request.strides and made_for.sizes.get(src) == \
                request.sizes.get(src) and made_for.strides.get(src) != request.strides[src]:
            return f"{_name(src)}'s strides differ from those of the request it was made for, at the same sizes"
        if theirs is None or theirs == mine:
            continue
        if src == "global state":
            return ("the global state (grad mode, default dtype, deterministic algorithms, threads, autocast) "
                    "differs from that of the request it was made for")
        if src in request.sizes:  # a tensor: which of its traits
            what = next(w for w, a, b in zip(_TRAIT_WORDS, theirs, mine) if a != b)
        else:
            what = "object (a module's parameters, training flags or plain attributes; a callable)"
        return f"{_name(src)}'s {what} differs from that of the request it was made for"
    return None


# ----------------------------------------------------------------------------- expressions

_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod, ast.Div: operator.truediv, ast.Pow: operator.pow,
}
_COMPARE: dict[type, Callable[[Any, Any], bool]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge,
}
_FUNCTIONS: dict[str, Callable[..., Any]] = {"max": max, "min": min, "abs": abs, "Max": max, "Min": min}
_MATH: dict[str, Callable[[Any], Any]] = {
    "isnan": math.isnan, "isinf": math.isinf, "isfinite": math.isfinite, "floor": math.floor, "ceil": math.ceil,
    "trunc": math.trunc,
}


def _contiguous(sizes: tuple[int, ...]) -> tuple[int, ...]:
    out, step = [], 1
    for s in reversed(sizes):
        out.append(step)
        step *= max(s, 1)
    return tuple(reversed(out))


def _size_ref(node: ast.Subscript, request: Request) -> int:
    call = node.value
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and not call.args
            and call.func.attr in ("size", "stride") and isinstance(node.slice, ast.Constant)):
        raise Unevaluable(ast.unparse(node))
    src = ast.unparse(call.func.value).replace('"', "'")
    if src not in request.sizes or not isinstance(node.slice.value, int):
        raise Unevaluable(f"{_name(src)} is not a tensor of the request" if src in request.types
                          else f"{_name(src)} is not in the request's inputs")
    sizes = request.sizes[src]
    values = sizes if call.func.attr == "size" else request.strides.get(src) or _contiguous(sizes)
    if not 0 <= node.slice.value < len(values):
        raise Unevaluable(ast.unparse(node))
    return values[node.slice.value]


def _eval(node: ast.AST, request: Request) -> Any:
    if isinstance(node, ast.Expression):
        return _eval(node.body, request)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, bool)):
        return node.value
    if isinstance(node, (ast.Subscript, ast.Attribute)):
        src = ast.unparse(node).replace('"', "'")
        if src in request.scalars:  # a Python number input: ``L['n']``, ``L['box'].n``
            value = request.scalars[src]
            if isinstance(value, (int, float)):
                return value
            raise Unevaluable(f"{_name(src)} is {type(value).__name__}, not a number")
        if isinstance(node, ast.Attribute):
            raise Unevaluable(f"{_name(src)} is not in the request's inputs" if src.startswith("L[") else "Attribute")
        return _size_ref(node, request)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        right = _eval(node.right, request)
        if isinstance(node.op, ast.Pow) and abs(right) > 64:
            raise Unevaluable("a large power")
        return _BINARY[type(node.op)](_eval(node.left, request), right)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd, ast.Not)):
        value = _eval(node.operand, request)
        return -value if isinstance(node.op, ast.USub) else (+value if isinstance(node.op, ast.UAdd) else not value)
    if isinstance(node, ast.BoolOp):
        values = [_eval(v, request) for v in node.values]
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.Compare) and all(type(op) in _COMPARE for op in node.ops):
        left = _eval(node.left, request)
        for op, comparator in zip(node.ops, node.comparators):
            right = _eval(comparator, request)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "storage_offset"
            and not node.args and not node.keywords):
        src = ast.unparse(node.func.value).replace('"', "'")
        if src not in request.offsets:
            raise Unevaluable(f"{_name(src)}'s storage offset is not known")
        return request.offsets[src]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS and not node.keywords:
        return _FUNCTIONS[node.func.id](*(_eval(a, request) for a in node.args))
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "math" and node.func.attr in _MATH and len(node.args) == 1 and not node.keywords):
        return _MATH[node.func.attr](_eval(node.args[0], request))
    raise Unevaluable(type(node).__name__)


def evaluate(text: str, request: Request) -> bool:
    """A symbolic-shape guard's truth for ``request``: integer arithmetic, comparisons,
    ``max``/``min``/``abs`` and ``SOURCE.size()[i]``/``.stride()[i]`` of known sources only;
    anything else raises :class:`Unevaluable` (nothing is executed)."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError) as exc:
        raise Unevaluable("not an expression") from exc
    try:
        return bool(_eval(tree, request))
    except (ZeroDivisionError, OverflowError, TypeError) as exc:
        raise Unevaluable(str(exc)) from exc


# ----------------------------------------------------------------------------- one entry

_LOCAL = re.compile(r"L\['(?P<name>[^']+)'\]")


def _name(source: str | None) -> str:
    """``L['x']`` → ``x``, as PyTorch names a local in its reasons."""
    return _LOCAL.sub(lambda m: m["name"], source or "?")


def _tensor_failures(g: EntryGuard, request: Request) -> list[str]:
    sizes = request.sizes[g.source or ""]
    name = _name(g.source)
    if len(sizes) != len(g.sizes):
        return [f"tensor '{name}' rank mismatch. expected {len(g.sizes)}, actual {len(sizes)}"]
    out = [f"tensor '{name}' size mismatch at index {i}. expected {e}, actual {a}"
           for i, (e, a) in enumerate(zip(g.sizes, sizes)) if e is not None and e != a]
    actual = request.dtypes.get(g.source or "")
    if g.dtype and actual and actual != g.dtype:
        out.append(f"tensor '{name}' dtype mismatch. expected {g.dtype}, actual {actual}")
    return out


def _same(expected: Any, actual: Any) -> bool:
    if isinstance(expected, str) and type(actual).__module__ == "torch" and not isinstance(actual, str):
        return expected in (repr(actual), str(actual))  # a dtype or device, recorded as its text
    if expected is None or isinstance(expected, bool) or actual is None or isinstance(actual, bool):
        return actual is expected or (type(actual) is type(expected) and actual == expected)
    try:
        return bool(actual == expected)
    except Exception:
        return False


def _check_one(g: EntryGuard, request: Request) -> tuple[list[str], str | None]:
    """One guard against ``request``: the texts of what fails, or why it cannot be told."""
    src = g.source or ""
    name = _name(src)
    held = request.types.get(src) or ("torch.Tensor" if src in request.sizes else
                                      type_name(request.scalars[src]) if src in request.scalars else None)
    if g.kind in ("tensor", "value", "type", "length", AS_COMPILED) and held is None:
        if request.defaulted(src):  # a parameter no request passes: its default, as compiled
            return [], None
        return [], f"{name} is not in the request's inputs (not made, or past the walk's bounds)"
    if g.kind == "tensor":
        if src in request.sizes:
            return _tensor_failures(g, request), None
        return [f"{name} is {held}, not a tensor"], None
    # a failure says what the entry expected and what the request has, as PyTorch's tensor messages do
    if g.kind == "value":
        if src not in request.scalars:
            return [f"{name} mismatch. expected {g.expected!r}, actual a {held}"], None
        if _same(g.expected, request.scalars[src]):
            return [], None
        return [f"{name} mismatch. expected {g.expected!r}, actual {request.scalars[src]!r}"], None
    if g.kind == "type":
        return ([] if held == g.expected else [f"type({name}) mismatch. expected {g.expected}, actual {held}"]), None
    if g.kind == AS_COMPILED:
        if src in request.scalars and _same(g.expected, request.scalars[src]):
            return [], None
        return [], (f"{name} is {request.scalars.get(src, held)!r} where an estimated entry was made for "
                    f"{g.expected!r}: the guards its trace put on a number made dynamic were not recorded")
    if g.kind == "length":
        if src not in request.lengths:
            return [f"{name} is {held}, not a container"], None
        found = request.lengths[src]
        return ([] if found == g.expected else [f"len({name}) mismatch. expected {g.expected}, actual {found}"]), None
    if g.text and g.kind != "other":
        try:
            return ([] if evaluate(g.text, request) else [_name(g.text)]), None
        except Unevaluable as exc:
            sources = set(_SOURCE_IN_TEXT.findall(g.text))
            if sources and all(request.defaulted(s) for s in sources):
                return [], None
            return [], f"{_name(g.text)} could not be evaluated ({exc})"
    return [], f"{_name(g.text or src) or g.kind} could not be evaluated"


_SOURCE_IN_TEXT = re.compile(r"L\[['\"][^'\"]+['\"]\](?:\[[^\]]+\]|\.[A-Za-z_]\w*)*")


def check(guards: Sequence[EntryGuard], request: Request) -> tuple[list[str], list[str]]:
    """The texts of the guards of one entry that reject ``request``, and why each guard that
    could not be told could not (a source the request does not hold, an expression outside
    the evaluator)."""
    failed: list[str] = []
    unknown: list[str] = []
    for g in guards:
        fails, why = _check_one(g, request)
        failed += fails
        if why is not None:
            unknown.append(why)
    return failed, unknown


def _forecast_guards(entry: str, texts: Sequence[str]) -> list[ForecastGuard]:
    from .shared import forecast_guard

    return [forecast_guard(entry, parse_guard_failure(t)) for t in texts]


# ----------------------------------------------------------------------------- one frame


@dataclass(frozen=True)
class _Entry:
    cid: str  # its compile id in the forecast
    guards: tuple[EntryGuard, ...]
    recorded: str | None = None  # the recorded entry it is (its compile id in the recording), if any
    cut: int = 0  # guards past the recording's bounds: whether it accepts a request is not known
    made_for: Request | None = None  # the request it was compiled for, when known


def _was_dynamic(entries: Sequence[_Entry], source: str, sizes: tuple[int, ...]) -> set[int]:
    """Dims automatic dynamic makes dynamic: an earlier entry had another size there, or had it dynamic."""
    out: set[int] = set()
    for e in entries:
        for g in e.guards:
            if g.kind == "tensor" and g.source == source and len(g.sizes) == len(sizes):
                out |= {i for i, s in enumerate(g.sizes) if s is None}
                out |= {i for i, s in enumerate(g.example) if i < len(sizes) and s != sizes[i]}
    return out


def _carried_relations(entries: Sequence[_Entry], request: Request) -> list[EntryGuard]:
    """The symbolic relations of the most recent entry that has some, each as ``request``
    decides it (negated where it is false): the new entry's trace takes the same decisions
    (a parity, a threshold) on its own sizes."""
    for e in reversed(entries):
        relations = [g for g in e.guards if g.kind == "relation" and g.text]
        out = []
        for g in relations:
            try:
                holds = evaluate(g.text, request)
            except Unevaluable:
                continue
            out.append(g if holds else dataclasses.replace(g, text=f"not ({g.text})"))
        if relations:
            return out
    return []


def estimated_entry(cid: str, request: Request, entries: Sequence[_Entry], mode: str,
                    recorded: Sequence[_Entry] = ()) -> _Entry:
    """PyTorch's rule for a new entry whose guards were not recorded, under the strategy's
    dynamic ``mode`` (see the module docstring); what the frame's traces read is what the
    ``recorded`` entries and the ones made so far guard."""
    guards: list[EntryGuard] = []
    for name, sizes in request.sizes.items():
        if mode == "automatic":
            dynamic = _was_dynamic(entries, name, sizes)
        elif mode == "dynamic":
            dynamic = set(range(len(sizes)))
        else:
            dynamic = set()
        dynamic = {i for i in dynamic if sizes[i] >= 2}  # sizes 0 and 1 are always specialised
        guards.append(EntryGuard("tensor", name, sizes=tuple(None if i in dynamic else s for i, s in enumerate(sizes)),
                                 example=sizes, dtype=request.dtypes.get(name)))
        guards += [EntryGuard("specialization", name, i, None, f"2 <= {name}.size()[{i}]") for i in sorted(dynamic)]
    guarded = _guarded_sources([*entries, *recorded])
    if mode in ("automatic", "dynamic"):
        guards += _carried_relations(entries, request) + _held_as_compiled(request, guarded)
    else:
        guards += [EntryGuard("value", s, None, v, f"{s} == {v!r}") for s, v in request.scalars.items()]
        guards += [EntryGuard("length", s, None, n, f"len({s}) == {n}") for s, n in request.lengths.items()
                   if s in guarded]
    return _Entry(cid, tuple(guards), made_for=request)


def _guarded_sources(entries: Sequence[_Entry]) -> set[str]:
    """The sources some entry's guards name: what the frame's traces read and guard."""
    out: set[str] = set()
    for e in entries:
        for g in e.guards:
            if g.source:
                out.add(g.source)
            out.update(_SOURCE_IN_TEXT.findall(g.text or ""))
    return out


def _held_as_compiled(request: Request, guarded: set[str]) -> list[EntryGuard]:
    """What an estimated entry under dynamic shapes holds of ``request`` beyond sizes, for the
    sources the frame's entries guard (what its traces read): each container's length and a
    dict's keys (never dynamic), each plain value that is not a number (a flag, a string:
    specialised); and each number as what it was compiled for (:data:`AS_COMPILED`): a number
    made dynamic carries guards from the trace's branches on it, which were not recorded —
    another value is not known to be accepted."""
    out = [EntryGuard("length", s, None, n, f"len({s}) == {n}") for s, n in request.lengths.items() if s in guarded]
    for s, v in request.scalars.items():
        if s not in guarded:
            continue
        number = isinstance(v, (int, float)) and not isinstance(v, bool) and not s.startswith("list(dict.keys(")
        out.append(EntryGuard(AS_COMPILED if number else "value", s, None, v, f"{s} == {v!r}"))
    return out


AS_COMPILED = "as_compiled"  # an estimated entry's number: its value passes, another is not known


@dataclass
class Step:
    outcome: Outcome
    compile_id: str | None = None
    rejected: list[tuple[str, list[str]]] = field(default_factory=list)
    unknown: int = 0  # guards that could not be evaluated
    new: bool = False  # compiled an entry whose guards were not recorded
    why: str | None = None  # why the outcome is unknown
    limited: str | None = None  # why the outcome is eager: the recompile limit


class FrameModel:
    """One frame's cache as Dynamo checks it, grown from the recorded entries of that frame.

    An entry that neither surely rejects nor surely accepts a request (a guard that cannot be
    evaluated, guards cut at the recording's bounds) makes the request ``unknown`` unless an
    older entry surely accepts it; from then on the cache's state is not known, so a later
    request that no entry surely accepts is ``unknown`` too."""

    def __init__(self, frame: int, recorded: Sequence[CompileRecord], strategy: str, limit: int,
                 options: StrategyOptions | None = None, made_for: Callable[[CompileRecord], Request | None] | None = None,
                 blind: str | None = None) -> None:
        from ..strategies import get_strategy

        self.frame, self.strategy, self.limit = frame, strategy, limit
        self.mode = get_strategy(strategy).mode(options)  # its dynamic mode: how a new entry is estimated
        self.recorded = [_Entry(str(r.compile_id), r.entry_guards, str(r.compile_id), r.entry_guards_cut,
                                made_for(r) if made_for is not None else None) for r in recorded]
        self.entries: list[_Entry] = []
        self.unsure: str | None = None  # why the cache's state is not known, after an unknown request
        # why an entry the recorded guards accept may still reject a request: the recording shows a
        # guard they leave out deciding (:func:`blind_spot`); then only the request it was made for is
        # sure, and not even that when the recording shows one such request compiling again (a guard
        # on state the inputs do not hold: a buffer the call grows)
        self.blind = blind
        self.blind_to_state = False

    def _doubt(self, e: _Entry, request: Request) -> str | None:
        """Why ``e``, whose recorded guards accept ``request``, may still reject it."""
        if self.blind is not None and (self.blind_to_state or e.made_for is None or e.made_for != request):
            return self.blind
        made = e.made_for
        if made is not None and made.args is not None and request.args is not None and made.args != request.args:
            # a guard on an argument one request leaves out passes as its default for it, unread
            passed = ", ".join(sorted(_name(f"L['{a}']") for a in made.args ^ request.args))
            return (f"it passes other arguments ({passed}) than the request entry {e.cid} was made for, and a "
                    "guard on one left out is not evaluated")
        differs = trait_differences(made, request)
        return None if differs is None else f"{differs}, and its guards on that were not recorded"

    def _choose(self, request: Request) -> _Entry:
        attempt = len(self.entries)
        candidates = self.recorded[attempt:attempt + 1]
        if self.mode == "static":  # a static entry depends on its shape only
            candidates += self.recorded
        used = {e.recorded for e in self.entries}
        for i, e in enumerate(candidates):
            if e.recorded in used or not e.guards:
                continue
            failed, unknown = check(e.guards, request)
            # the recording's own next entry, not refused by its guards, is it, though some of them
            # cannot be told: kept with them (what it accepts later is unknown), never estimated anew
            if not failed and (i == 0 and attempt < len(self.recorded) or not (unknown or e.cut)):
                return dataclasses.replace(e, cid=f"{self.frame}/{attempt}")
        return estimated_entry(f"{self.frame}/{attempt}", request, self.entries, self.mode, self.recorded)

    def step(self, request: Request, index: int | None = None) -> Step:
        step = Step("hit")
        unsure: str | None = None
        for e in reversed(self.entries):  # the most recent entry first
            failed, unknown = check(e.guards, request)
            step.unknown += len(unknown)
            if failed:
                step.rejected.append((e.cid, failed))
                continue
            doubt = None if unknown or e.cut else self._doubt(e, request)
            if unknown or e.cut or doubt:
                unsure = unsure or (f"whether entry {e.cid} accepts it is not known: "
                                    + (unknown[0] if unknown else doubt if doubt else
                                       f"{e.cut} of its guards were past the recording's bounds"))
                continue
            return step  # surely accepted: a hit, whatever the entries before it do
        if unsure is not None or self.unsure is not None:
            step.outcome, step.why = "unknown", unsure or self.unsure
            which = f"request {index}" if index is not None else "an earlier request"
            self.unsure = self.unsure or f"follows {which}, whose outcome is unknown (the cache it meets is not known)"
            return step
        if len(self.entries) >= self.limit:
            step.outcome = "eager"
            step.limited = f"the recompile limit ({self.limit}) refuses the frame: no entry accepts it"
            return step
        chosen = self._choose(request)
        self.entries.append(chosen)
        step.outcome, step.compile_id, step.new = "compile", chosen.cid, chosen.recorded is None
        return step


# ----------------------------------------------------------------------------- a strategy


def entry_frame(compiles: Sequence[CompileRecord]) -> tuple[int | None, list[str]]:
    """The compiled function's own frame (the first naming the target, else the first
    compiled) and a note for each other frame (after a graph break)."""
    done = [r for r in compiles if r.made_entry and r.phase in ("stream", "startup")]
    if not done:
        return None, []
    first = next((r for r in done if r.target is not None), done[0])
    others = {r.compile_id.frame: r.display_name for r in done if r.compile_id.frame != first.compile_id.frame}
    return first.compile_id.frame, [f"frame {f} ({name})" for f, name in sorted(others.items())]


def blind_spot(model: FrameModel, recorded: Sequence[CompileRecord], made_for: Callable[[CompileRecord], Request | None],
               ) -> tuple[str, bool] | None:
    """Why the recorded guards miss a guard of this frame, when the recording shows one: a
    request of the recorded stream that compiled a new entry although an older entry's
    recorded guards accept it (and it matches that entry's request in every trait they leave
    out) — a stride, a module's state, a global decided it; and whether that request was the
    very one the older entry was made for (a guard on state no input holds). None when the
    recording shows none."""
    for r in recorded:
        if r.call_index is None or r.phase != "stream" or (request := made_for(r)) is None:
            continue
        for e in model.recorded:
            if e.recorded == str(r.compile_id) or (e.made_for is None) or e.cut:
                continue
            older = next((x for x in recorded if str(x.compile_id) == e.recorded), None)
            if older is None or older.compile_id.attempt >= r.compile_id.attempt:
                continue
            failed, unknown = check(e.guards, request)
            if not failed and not unknown and trait_differences(e.made_for, request) is None:
                said = f" (PyTorch's reason: {split_reason(r.reasons[0])[1]})" if r.reasons else ""
                same = e.made_for == request
                return (f"the recording's request {r.call_index} compiled {r.compile_id} although entry {e.cid}'s "
                        f"recorded guards accept it{said}: a guard they leave out decides this frame"
                        + (", on state the inputs do not hold (the request was the one that entry was made for)"
                           if same else ", so an entry surely accepts only the request it was made for"), same)
    return None


def _request_row(index: int, shape: Shape, step: Step, estimated: str | None) -> ForecastRequest:
    guards = tuple(g for cid, texts in step.rejected for g in _forecast_guards(cid, texts))
    why = step.why or (f"{step.limited}; {estimated}" if step.limited and estimated else step.limited or estimated)
    return ForecastRequest(index, shape_key(shape), step.outcome, "guards",
                           (step.compile_id,) if step.compile_id else (), guards,
                           estimated=estimated is not None and step.why is None, why=why)


def recorded_strategy(trial: TrialResult, stream: Sequence[Shape], inputs: Callable[[Shape], Request],
                      source: str, recompile_limit: int | None = None) -> StrategyForecast:
    """One strategy's forecast of ``stream`` from the guards ``trial`` recorded."""
    started = time.perf_counter()
    frame, others = entry_frame(trial.compiles)
    if frame is None or not any(r.entry_guards for r in trial.compiles if r.compile_id.frame == frame):
        raise OptionError(f"{source} recorded no cache entry's guards for {trial.spec.strategy!r} "
                          "(a file written before compilescope recorded them, or nothing compiled)")
    recorded = sorted((r for r in trial.compiles if r.made_entry and r.compile_id.frame == frame),
                      key=lambda r: r.compile_id.attempt)
    limit = limit_in_force(recompile_limit, trial_limit(trial, here=True))
    made: dict[tuple[tuple[str, int], ...], Request] = {}
    shapes = {c.index: c.shape for c in trial.calls}

    def made_for(r: CompileRecord) -> Request | None:
        shape = shapes.get(r.call_index) if r.call_index is not None and r.phase == "stream" else None
        if shape is None:
            return None
        key = shape_key(shape)
        return made.get(key) or made.setdefault(key, inputs(shape))

    model = FrameModel(frame, recorded, trial.spec.strategy, limit, trial.spec.options, made_for)
    blind = blind_spot(model, recorded, made_for)
    if blind is not None:
        model.blind, model.blind_to_state = blind
    why = (f"{', '.join(others)} after a graph break: its guards, on the locals it resumes with, are not "
           "evaluated; the request is given the function's own frame's outcome" if others else None)
    seen: dict[tuple[tuple[str, int], ...], Outcome] = {}
    first: dict[tuple[tuple[str, int], ...], int] = {}
    rows, unknown = [], 0
    for index, shape in enumerate(stream):
        key = shape_key(shape)
        if key in seen:  # caches only grow: what was accepted is accepted again, a refusal stays
            stateful = model.blind_to_state and seen[key] != "eager"  # the same inputs may meet other state
            word = "unknown" if stateful else repeat_word(seen[key])
            rows.append(ForecastRequest(index, key, word, "repeat", estimated=why is not None and word != "unknown",
                                        why=model.blind if stateful else f"repeats request {first[key]}, whose "
                                        "outcome is unknown" if word == "unknown" else why))
            continue
        request = made.get(key) or made.setdefault(key, inputs(shape))
        first[key] = index
        step = model.step(request, index)
        unknown += step.unknown
        rows.append(_request_row(index, shape, step, why))
        seen[key] = step.outcome
        if step.new and why is None:
            why = f"{NOT_RECORDED} (request {index} compiled {step.compile_id}, estimated by PyTorch's rule)"
    rows = _after_a_failure(trial, _other_frames_alone(trial, rows, frame), frame)
    return _strategy_forecast(trial, rows, (len(first), limit), time.perf_counter() - started, unknown, source)


def _other_frames_alone(trial: TrialResult, rows: list[ForecastRequest], frame: int) -> list[ForecastRequest]:
    """The recording shows a frame after a graph break compiling at a request on which the
    function's own frame compiled nothing: that frame's guards decide on their own, and they
    are not evaluated, so no hit is even an estimate — each is ``unknown``."""
    own = {r.call_index for r in trial.compiles if r.is_compile and r.phase == "stream" and r.compile_id.frame == frame}
    alone = next((r for r in trial.compiles if r.is_compile and r.phase == "stream" and r.call_index is not None
                  and r.compile_id.frame != frame and r.call_index not in own), None)
    if alone is None:
        return rows
    said = f" (PyTorch's reason: {split_reason(alone.reasons[0])[1]})" if alone.reasons else ""
    why = (f"in the recording, frame {alone.compile_id.frame} ({alone.display_name}), after a graph break, compiled "
           f"{alone.compile_id} at request {alone.call_index} where the function's own frame hit{said}: its guards "
           "decide on their own and are not evaluated")
    hits = {r.index for r in rows if r.outcome == "hit"}
    return [_unknown(r, why) if r.index in hits else r for r in rows]


def _unknown(row: ForecastRequest, why: str) -> ForecastRequest:
    return dataclasses.replace(row, outcome="unknown", estimated=False, why=why)


def _after_a_failure(trial: TrialResult, rows: list[ForecastRequest], frame: int) -> list[ForecastRequest]:
    """The recording holds a compile that failed: its call went on (Dynamo then runs that frame
    eagerly for good), or the failure raised into it (a shape the code cannot compile raises
    again whenever it comes). Which request of the stream meets that failure, and what runs
    eagerly or raises after, no recorded guard tells: each request after the first that
    compiles is ``unknown``."""
    errors = {c.index: c.error for c in trial.calls}
    failed = next((r for r in trial.compiles if r.failed and r.phase in ("stream", "startup")
                   and r.compile_id.frame == frame), None)
    first = next((i for i, r in enumerate(rows) if r.outcome == "compile"), None)
    if failed is None or first is None:
        return rows
    then = ("after which Dynamo runs that frame eagerly: which request meets it, and what runs eagerly after"
            if failure_skips_frame(failed, errors.get(failed.call_index)) else
            "which raised into its call: which requests meet it (and raise), and which entries exist after")
    why = (f"the recording holds a failed compile ({failed.compile_id} of {failed.display_name}, "
           f"{failed.fail_type or 'an error'}), {then}, the recorded guards do not tell (from request "
           f"{rows[first].index}, which compiles)")
    return rows[:first + 1] + [dataclasses.replace(r, outcome="unknown", basis="guards", compile_ids=(), guards=(),
                                                   estimated=False, why=why) for r in rows[first + 1:]]


def _strategy_forecast(trial: TrialResult, rows: list[ForecastRequest], sizes: tuple[int, int], wall: float,
                       unknown: int, source: str) -> StrategyForecast:
    counts = {o: sum(1 for r in rows if r.outcome == o) for o in ("hit", "compile", "eager", "error", "unknown")}
    notes: list[str] = []  # the unknowns are each said with their request (and the first by the renderer)
    return StrategyForecast(
        strategy=trial.spec.strategy, requests=tuple(rows), hits=counts["hit"], compiles=counts["compile"],
        eager=counts["eager"], errors=counts["error"], traced=sizes[0], recompile_limit=sizes[1],
        dry_wall_s=wall, stalls=tuple(r.index for r in rows if r.outcome == "compile"), notes=tuple(notes),
        estimated=sum(1 for r in rows if r.estimated), guards_unevaluated=unknown,
        recorded_from=source, unknown=counts["unknown"],
    )


# ----------------------------------------------------------------------------- a report


def workload_inputs(workload: Any, params: Sequence[str], wanted: Sequence[str] = (),
                    varargs: str | None = None) -> Callable[[Shape], Request]:
    """A request's inputs as ``workload`` makes them, named ``L['<parameter>']`` by the
    compiled function's parameters, reading the ``wanted`` sources the walk misses (see
    :func:`request_of`). (Made on the CPU: the ``meta`` device's factory functions import
    PyTorch's reference implementations, seconds a forecast of milliseconds would pay.)"""
    import torch

    at = params.index(varargs) if varargs in params else None

    def make(shape: Shape) -> Request:
        with torch.no_grad():  # read in it: the global state as the inputs left it (grad mode set there too)
            args, kwargs = call_arguments(workload.make_inputs(dict(shape)))
            named = dict(zip(params, args))
            if at is not None and len(args) > at and not (len(args) == at + 1 and isinstance(args[at], tuple)):
                named = dict(zip(params[:at], args[:at])) | {params[at]: tuple(args[at:])}  # ``*xs``: one tuple
            return request_of(named | kwargs, wanted)

    return make


def _varargs(trial: TrialResult, params: Sequence[str]) -> str | None:
    """The ``*args`` parameter, as the recorded guards show it: a parameter Dynamo saw as a
    tuple (``type(L['xs']) is builtins.tuple``), its items guarded by position."""
    for r in trial.compiles:
        for g in r.entry_guards:
            name = _LOCAL.fullmatch(g.source or "")
            if g.kind == "type" and name and name["name"] in params and "tuple" in str(g.expected):
                return name["name"]
    return None


def _named_by_guards(trial: TrialResult) -> tuple[str, ...]:
    """Every source the recorded entries' guards name."""
    out: dict[str, None] = {}
    for r in trial.compiles:
        for g in r.entry_guards:
            if g.source:
                out[g.source] = None
            out.update(dict.fromkeys(_SOURCE_IN_TEXT.findall(g.text or "")))
    return tuple(out)


def _params(trial: TrialResult) -> tuple[str, ...]:
    frame, _ = entry_frame(trial.compiles)
    named = next((r.target for r in trial.compiles if r.compile_id.frame == frame and r.target is not None), None)
    if named is None or not named.params:
        raise OptionError(f"trial {trial.label} does not name the compiled function's parameters: its inputs "
                          "cannot be matched to the recorded guards")
    return named.params


def unmatched(trial: TrialResult) -> str | None:
    """Why the recorded guards of ``trial`` cannot be matched to requests (None: they can).
    When Dynamo never compiled the function's own frame — its compile failed or was skipped
    (a graph break it cannot resume from, inside a loop), so the frame ran eagerly — the frames
    that did compile are functions it calls, whose guards are on their own locals."""
    frame, _ = entry_frame(trial.compiles)
    named = next((r.target for r in trial.compiles if r.compile_id.frame == frame and r.target is not None), None)
    if named is not None and named.params:
        if any(r.entry_guards for r in trial.compiles if r.compile_id.frame == frame):
            return None
        return (f"the compiled function's own frame ({named.name}) holds no recorded guard on its inputs (a graph "
                "break before it reads them leaves them to the frame after it, whose guards are not evaluated; "
                "or a file written before compilescope recorded guards)")
    own = next((r for r in trial.compiles if r.target is not None and r.phase in ("stream", "startup")), None)
    inner = list(dict.fromkeys(r.display_name for r in trial.compiles
                               if r.made_entry and r.phase in ("stream", "startup")))
    if own is not None and own.compile_id.frame != frame:
        head = (f"the compiled function's own frame ({own.display_name}) never compiled (its compile "
                f"{own.outcome}; it runs eagerly)")
        if not inner:
            return f"{head}, and no frame has a cache entry whose guards could be evaluated"
        return f"{head}, and the frames that did ({', '.join(inner[:3])}) guard their own locals, not the requests' inputs"
    return f"trial {trial.label} does not name the compiled function's parameters: its inputs cannot be matched"


def unmatched_strategy(trial: TrialResult, stream: Sequence[Shape], why: str, source: str) -> StrategyForecast:
    """Every request ``unknown``, with why the recorded guards say nothing of them."""
    rows = [ForecastRequest(i, shape_key(s), "unknown", "guards", why=why) for i, s in enumerate(stream)]
    return _strategy_forecast(trial, rows, (0, limit_in_force(None, trial_limit(trial, here=True))), 0.0, 0, source)


def _owner(r: CompileRecord) -> str:
    """The compiled function a probe's compile belongs to (a resume frame: the function it resumes)."""
    if r.target is not None:
        return r.target.name
    if r.resumes:
        return r.function.removeprefix(RESUME_PREFIX).rsplit("_at_", 1)[0]
    return r.function


def probe_function(compiles: Sequence[CompileRecord], function: str | None, origin: str) -> tuple[CompileRecord, ...]:
    """The compiles of the one compiled function a forecast is of: ``function`` when the probe
    compiled several (one line naming them otherwise)."""
    owners = list(dict.fromkeys(_owner(r) for r in compiles))
    if function is None:
        if len(owners) > 1:
            raise OptionError(f"{origin} holds {len(owners)} compiled functions ({', '.join(owners)}): "
                              "name the one to forecast with --function")
        return tuple(compiles)
    if function not in owners:
        raise OptionError(f"{origin} has no compiled function {function!r} (it has: {', '.join(owners) or 'none'})")
    return tuple(r for r in compiles if _owner(r) == function)


def recorded_trials(result: Any, names: Sequence[str], function: str | None = None,
                    origin: str = "the probe") -> dict[str, TrialResult]:
    """Per strategy, the trial whose guards are evaluated (a cold one first); a probe's
    compiles (of one compiled function) are one trial of PyTorch's default strategy."""
    from ..model import ProbeResult, TrialSpec

    if isinstance(result, ProbeResult):  # up to its first reset: one process's caches
        first = min((r.epoch for r in result.compiles), default=0)
        mine = probe_function([r for r in result.compiles if r.epoch == first], function, origin)
        compiles = tuple(dataclasses.replace(r, phase="stream") for r in mine)
        return {"default": TrialResult(TrialSpec(result.source, "default", "cold", ()), "ok", compiles=compiles)}
    if function is not None:
        raise OptionError("--function picks one compiled function of a probe's results; a run's trials are of its workload")
    out = {}
    for name in names:
        trials = sorted((t for t in result.trials if t.spec.strategy == name and t.spec.variant == ""
                         and t.compiles), key=lambda t: t.spec.cache != "cold")
        if trials:
            out[name] = trials[0]
    return out


def forecast_recorded(workload: str, stream: str | Sequence[Shape] | None, results: str | Any,
                      strategies: str | Sequence[str] | None = None, *, times: str | Any | None = None,
                      recompile_limit: int | None = None, function: str | None = None) -> Any:
    """Predict, per request of ``stream``, each strategy's outcome from the guards a
    ``run`` (or ``probe``) results file recorded: no model is built, nothing is traced.
    ``times``: a run's results file whose measured compile times predict the compile
    seconds, as for the dry run. Raises a :class:`~compilescope.errors.CompilescopeError`
    on bad input."""
    from pathlib import Path

    from .. import compat
    from ..prepare import prepare_run
    from ..model import MeasureOptions, ProbeResult
    from ..report.forecast import ForecastReport
    from ..schema import load
    from ..stream import distinct_shapes

    started = time.perf_counter()
    if not Path(results).is_file():
        raise OptionError(f"--from-results {str(results)!r} is not a file")
    from ..strategies import get_strategy, strategy_names

    result = load(results)
    baseline = {n for n in strategy_names() if not get_strategy(n).compiles}  # what compiles nothing has no guards
    present = [t.spec.strategy for t in getattr(result, "trials", ()) if t.spec.strategy not in baseline]
    asked = strategies if strategies is not None else (",".join(dict.fromkeys(present)) or "default")
    loaded, base, names = prepare_run(workload, stream, asked, measure=MeasureOptions(device="cpu"))
    if isinstance(result, RunResult) and result.workload != base.workload:
        raise OptionError(f"{results} measured workload {result.workload!r}, not {base.workload!r}")
    names = tuple(n for n in names if get_strategy(n).compiles)
    trials = recorded_trials(result, names, function, str(results))
    missing = [n for n in names if n not in trials]
    if not trials:
        raise OptionError(f"{results} has no trial of {', '.join(names)} that compiled")
    probed = isinstance(result, ProbeResult)  # a probe's compiles are no trial: its label would be made up

    def where(t: TrialResult) -> str:
        return f"{results} (the probed program's compiles)" if probed else f"{results} [{t.label}]"

    with put_back(loaded):  # making the inputs may change the workload's module (a global it sets)
        rows = tuple(unmatched_strategy(t, base.stream, why, where(t)) if (why := unmatched(t)) is not None
                     else recorded_strategy(t, base.stream, workload_inputs(loaded, _params(t), _named_by_guards(t),
                                                                            _varargs(t, _params(t))),
                                            where(t), recompile_limit)
                     for t in trials.values())
    if times is None and not probed:  # the recording's own compile times, when it is a run's
        times = results
    if times is not None:
        rows = tuple(_with_times(s, times, base.workload) for s in rows)
    backend = "as probed" if isinstance(result, ProbeResult) else next(iter(trials.values())).spec.options.backend
    return ForecastReport(
        workload=base.workload, stream_length=len(base.stream), distinct_shapes=len(distinct_shapes(base.stream)),
        backend=backend, dry_backend="none", torch_version=compat.torch_version(),
        wall_s=time.perf_counter() - started, strategies=rows, method="recorded guards",
        mode="recorded-guards",
        notes=tuple([f"not forecast (no trial of theirs in {results}): {', '.join(missing)}"] if missing else []),
    )


def _with_times(s: StrategyForecast, path: Any, workload: str) -> StrategyForecast:
    from .shared import load_run, measured_compile_times, predict_compile_s

    measured = measured_compile_times(load_run(path, workload), path, s.strategy)
    requests, predicted = predict_compile_s(list(s.requests), measured)
    return dataclasses.replace(s, requests=tuple(requests), predicted_compile_s=predicted, compile_times=measured)


def compare_forecasts(first: Any, second: Any) -> Any:
    """``first`` with ``second`` beside it and their per-request agreement per strategy."""
    return dataclasses.replace(first, compared=second, agreement=agreement(first, second))


def agreement(first: Any, second: Any) -> tuple[Any, ...]:
    """Per strategy both forecasts hold: the requests whose outcome agrees, and those that differ."""
    from ..report.forecast import Agreement

    out = []
    for a in first.strategies:
        b = next((s for s in second.strategies if s.strategy == a.strategy), None)
        if b is None:
            continue
        differ = tuple((x.index, x.outcome, y.outcome) for x, y in zip(a.requests, b.requests) if x.outcome != y.outcome)
        out.append(Agreement(a.strategy, len(a.requests) - len(differ), len(a.requests), differ))
    return tuple(out)
