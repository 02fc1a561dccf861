"""PyTorch's text, parsed: guard-failure texts into :class:`GuardFailure` records, and the
lines of a ``TORCH_TRACE`` log into events (end of file).

Beside :mod:`compilescope.compat`: compat holds the private APIs, this file the text
formats torch writes (checked on torch 2.13). When a torch release changes one, these two
files are the ones to change; capture (``collect``, ``probe``) and ``analysis`` both call
them, neither reparses torch's text itself.

The texts are those of ``torch._dynamo.guard_failures`` / ``TORCH_LOGS=recompiles_verbose``
on torch 2.13, e.g.::

    0/0: tensor 'x' size mismatch at index 0. expected 16, actual 32
    0/1: 2 <= x.size()[0]  # def f(x): ...  # file.py:13 in f (...)
    0/0: G['FLAG'] == True    # return x + 1 if FLAG else x - 1  # file.py:18 in g
    0/0: GLOBAL_STATE changed: grad_mode

Text that matches no known form is kept whole with kind ``other`` — never dropped.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from .model import GuardFailure, Scalar

_PREFIX = re.compile(r"^\s*(?P<entry>\d+/\d+):\s*(?P<rest>.*)$", re.S)
# The tensor's name may itself hold quotes: tensor 'kwargs['input_ids']' size mismatch …
_TENSOR = r"tensor '(?P<name>.+?)'(?= (?:size|stride|rank|dtype|device|requires_grad|dispatch|\w+ mismatch))"
_SIZE_STRIDE = re.compile(
    _TENSOR + r" (?P<kind>size|stride) mismatch at index (?P<dim>\d+)\. expected (?P<exp>[^,]+), actual (?P<act>.+)$"
)
_RANK = re.compile(_TENSOR + r" rank mismatch\. expected (?P<exp>\d+), actual (?P<act>\d+)$")
_DTYPE = re.compile(_TENSOR + r" dtype mismatch\. expected (?P<exp>\S+), actual (?P<act>\S+)$")
_DEVICE = re.compile(_TENSOR + r" device mismatch\. expected (?P<exp>.+), actual (?P<act>.+)$")
_REQUIRES_GRAD = re.compile(_TENSOR + r" requires_grad mismatch\. expected requires_grad=(?P<exp>[01])")
_TENSOR_OTHER = re.compile(r"tensor '(?P<name>.+?)' (?P<what>.+)$")
# A tensor's slot holding another type (a cache's keys still None), in PyTorch's words (its
# text has a stray quote, "tensor type, ' but found") and as the guard walk finds it: a
# ``TYPE_MATCH`` leaf, ``___check_type_id(L['x'], 9437…)`` with the type it expects.
_TYPE_TENSOR = re.compile(r"^expected type of '(?P<name>.+?)' to be a tensor type, '? ?but found (?P<act>.+)$")
_IS_NONE = re.compile(r"^(?P<src>[A-Za-z_][\w\[\]'\".]*) is None$")  # an entry compiled with None there
_TYPE_ID = re.compile(r"^___check_type_id\((?P<src>[^,()]+), \d+\)(?:, type=(?P<exp>.+))?$")
_CLASS = re.compile(r"^<class '(?:[\w.]*\.)?(?P<name>\w+)'>$")


def fake_real_mixup(text: str) -> bool:
    """A tensor guard's type check failed on another *tensor* class (``… to be a tensor type,
    ' but found <class 'torch.Tensor'>``, or a ``FakeTensor``): in a dry run on fake tensors, a
    frame met a real tensor where its entry had a fake one, or the reverse — unlike a ``None``
    where a tensor was, which a real run meets alike."""
    m = _TYPE_TENSOR.match(split_reason(text)[1])
    return m is not None and _class_name(m["act"]) in ("Tensor", "FakeTensor")


# A graph break where the code goes on from a tensor's value (torch 2.13.0's texts): a Python
# branch on a tensor (``if x.sum() > 0``), or a value read out of one.
_VALUE_BREAKS = ("Data-dependent branching", "generic_jump", ".item()", "Tensor.item", "tolist",
                 "data dependent", "Data dependent")


def reads_values(reason: str) -> bool:
    """A graph break's reason says the code past it reads a tensor's value (a data-dependent
    branch, ``.item()``, ``.tolist()``): the path there can change with values a call leaves."""
    return any(text in reason for text in _VALUE_BREAKS)


def _class_name(text: str | None) -> str | None:
    """``<class 'torch.Tensor'>`` → ``Tensor``; ``<class 'NoneType'>`` → ``NoneType``."""
    if text is None:
        return None
    m = _CLASS.match(text.strip())
    return m["name"] if m else text.strip()
_GRAD_MODE = re.compile(r"GLOBAL_STATE changed:.*grad_mode")
# A symbolic-shape guard: "2 <= x.size()[0]", "4 <= x.size()[0] <= 64", "x.size()[0] == 16".
_SYM_SIZE = re.compile(r"(?P<name>[A-Za-z_][\w\[\]'\".]*)\.(?P<kind>size|stride)\(\)\[(?P<dim>\d+)\]")
_LEN = re.compile(r"^len\((?P<src>[^)]+)\)\s*==\s*(?P<exp>\d+)$")
_DICT_KEYS = re.compile(r"^list\(dict\.keys\((?P<src>[^)]+)\)\)\[(?P<idx>\d+)\]\s*==\s*(?P<exp>.+)$")
# torch 2.6 words a dict's keys list(L['d'].keys())[0] == 'a', and a bool's guard as an identity
# check against True/False: ___check_obj_id(L['flag'], 1406…) (2.10 and later: flag == True)
_DICT_KEYS_26 = re.compile(r"^list\((?P<src>[^()]+)\.keys\(\)\)\[(?P<idx>\d+)\]\s*==\s*(?P<exp>.+)$")
_OBJ_ID = re.compile(r"^___check_obj_id\((?P<src>[^,()]+), (?P<id>\d+)\)$")
_SINGLETONS = {id(True): True, id(False): False, id(None): None}
_GLOBAL = re.compile(r"^G\[(?P<q>['\"])(?P<name>[^'\"]+)(?P=q)\](?P<attr>\S*)\s*==\s*(?P<exp>.+)$")
_VALUE = re.compile(r"^(?P<src>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*|\[[^\]]+\])*)\s*==\s*(?P<exp>.+)$")
# compilescope's own words for a recorded guard a request fails (forecast --from-results), in the
# form of PyTorch's tensor messages: "n mismatch. expected 3, actual 4", "len(cache) mismatch. …"
_VALUE_MISMATCH = re.compile(r"^(?P<src>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*|\[[^\]]+\])*) mismatch\. "
                             r"expected (?P<exp>.+), actual (?P<act>.+)$")
_LEN_MISMATCH = re.compile(r"^len\((?P<src>[^)]+)\) mismatch\. expected (?P<exp>\d+), actual (?P<act>\d+)$")


def split_entry_reasons(text: str) -> list[str]:
    """One rejecting entry's text (``0/0: a == 1; b == True`` when several guards failed,
    as ``recompiles_verbose`` words it) → one guard text each, prefix kept."""
    first = text.split("\n", 1)[0]
    entry, sep, rest = first.partition(": ")
    if not sep or "/" not in entry:
        return [first]
    # "; " also occurs inside a guard's trailing "(…)" comment: keep pieces whose
    # parentheses are still open joined to the guard they belong to.
    guards: list[str] = []
    for piece in rest.split("; "):
        if guards and guards[-1].count("(") > guards[-1].count(")"):
            guards[-1] += "; " + piece
        else:
            guards.append(piece)
    return [f"{entry}: {g.strip()}" for g in guards if g.strip()]


def split_reason(text: str) -> tuple[str | None, str]:
    """``"0/1: tensor 'x' ..."`` → (``"0/1"``, ``"tensor 'x' ..."``), with the first line only
    and any trailing ``  # source`` comment cut off."""
    m = _PREFIX.match(text)
    entry, rest = (m.group("entry"), m.group("rest")) if m else (None, text)
    first = _HINT.sub("", rest.split("\n", 1)[0])
    first = first.split("  #", 1)[0].split(" #", 1)[0] if "#" in first else first
    return entry, first.strip()


# PyTorch appends its advice to a guard's text: "self.n == 8 (HINT: torch.compile considers
# integer attributes of the nn.Module to be static…)", "….cell_contents == True (HINT: guard on
# "flag")"; after the source comment when the guard has one, else right after the value.
_HINT = re.compile(r"\s*\(HINT: .*\)\s*$")
NN_MODULE_INT_HINT = "integer attributes of the nn.Module"  # the HINT PyTorch gives a module's int


def local_source(name: str) -> str:
    """PyTorch names locals ``x`` in tensor messages and ``L['x']`` in sources; use the latter."""
    if name.startswith(("L[", "G[")):
        return name
    root, sep, tail = name.partition(".")
    bracket = root.find("[")
    if bracket > 0:
        root, tail, sep = root[:bracket], root[bracket:] + sep + tail, ""
    return f"L['{root}']" + (sep + tail if sep else tail)


def _literal(text: str) -> Scalar:
    t = text.strip()
    if t in ("True", "False"):
        return t == "True"
    if t == "None":
        return None
    try:
        return int(t)
    except ValueError:
        pass
    try:
        return float(t)
    except ValueError:
        pass
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "'\"":
        return t[1:-1]
    return t


_USER_LINE = re.compile(r"#\s*(?P<loc>[^#]*?:\d+ in [\w<>.]+)\s*(?:\(|$)")


def user_line(text: str) -> str | None:
    """The user's ``file:line in function`` a guard's trailing comment cites, if any."""
    first = text.split("\n", 1)[0]
    found = _USER_LINE.findall(first)
    return found[0].strip() if found else None


def parse_guard_failure(text: str) -> GuardFailure:
    """Parse one reason (with or without its ``0/0:`` prefix)."""
    g = _parse_guard_failure(text)
    line = user_line(text)
    return dataclasses.replace(g, user_line=line) if line else g


def _parse_guard_failure(text: str) -> GuardFailure:
    entry, reason = split_reason(text)

    def make(kind: str, **kw: Any) -> GuardFailure:
        return GuardFailure(reason=reason, failed_entry=entry, kind=kind, **kw)

    if m := _SIZE_STRIDE.match(reason):
        return make(
            m["kind"],
            source=local_source(m["name"]),
            dim=int(m["dim"]),
            expected=_literal(m["exp"]),
            actual=_literal(m["act"]),
        )
    if m := _RANK.match(reason):
        return make("rank", source=local_source(m["name"]), expected=int(m["exp"]), actual=int(m["act"]))
    if m := _DTYPE.match(reason):
        return make("dtype", source=local_source(m["name"]), expected=m["exp"], actual=m["act"])
    if m := _DEVICE.match(reason):
        return make("device", source=local_source(m["name"]), expected=m["exp"].strip(), actual=m["act"].strip())
    if m := _REQUIRES_GRAD.match(reason):
        expected = m["exp"] == "1"
        return make("requires_grad", source=local_source(m["name"]), expected=expected, actual=not expected)
    if m := _TENSOR_OTHER.match(reason):
        return make("other", source=local_source(m["name"]))
    if m := _TYPE_TENSOR.match(reason):
        return make("type", source=local_source(m["name"]), expected="Tensor", actual=_class_name(m["act"]))
    if m := _IS_NONE.match(reason):
        return make("type", source=local_source(m["src"]), expected="NoneType")
    if m := _TYPE_ID.match(reason):
        return make("type", source=local_source(m["src"].strip()), expected=_class_name(m["exp"]))
    if _GRAD_MODE.search(reason):
        return make("grad_mode")
    if _SYM_SIZE.search(reason):
        return _symbolic(reason, entry, text)
    if m := _LEN.match(reason):
        return make("length", source=local_source(m["src"]), expected=int(m["exp"]))
    if m := _LEN_MISMATCH.match(reason):
        return make("length", source=local_source(m["src"]), expected=int(m["exp"]), actual=int(m["act"]))
    if m := _VALUE_MISMATCH.match(reason):
        kind = "module_attribute" if "." in m["src"] else "value"
        return make(kind, source=local_source(m["src"]), expected=_literal(m["exp"]), actual=_literal(m["act"]))
    if m := _DICT_KEYS.match(reason) or _DICT_KEYS_26.match(reason):
        return make("dict_keys", source=local_source(m["src"]), dim=int(m["idx"]), expected=_literal(m["exp"]))
    if (m := _OBJ_ID.match(reason)) and int(m["id"]) in _SINGLETONS:  # ids of this process: a live capture
        src, value = m["src"].strip(), _SINGLETONS[int(m["id"])]
        if src.startswith("G["):
            return make("global", source=src, expected=value)
        return make("module_attribute" if "." in src else "value", source=local_source(src), expected=value)
    if m := _GLOBAL.match(reason):
        source = f"G['{m['name']}']{m['attr']}"
        return make("global", source=source, expected=_literal(m["exp"]))
    if m := _VALUE.match(reason):
        kind = "module_attribute" if "." in m["src"] else "value"
        return make(kind, source=local_source(m["src"]), expected=_literal(m["exp"]))
    return make("other")


_RANGE = re.compile(r"^(?P<lo>\d+) <= (?P<sym>[^<>=]+?)(?: <= (?P<hi>\d+))?$")
_EQ_CONST = re.compile(r"^(?P<sym>[^<>=!]+?) == (?P<value>\d+)$")


# Where PyTorch says a guard was made: "(_dynamo/variables/builder.py:4960 in <lambda>)" is
# the variable builder installing mark_dynamic's min/max; a shape function's guard names the
# op's own code (a meta function, a decomposition, evaluate_expr).
_PROVENANCE = re.compile(r"\((?P<where>[^()]*?\.py:\d+ in [^()]*)\)\s*(?:and |$)")


def _made_by_mark_dynamic(text: str) -> bool | None:
    """True when PyTorch says the guard came from mark_dynamic's bounds, False when it names
    another origin, None when the text does not say."""
    found = _PROVENANCE.findall(text.split("\n", 1)[0])
    if not found:
        return None
    from .compat import MARK_DYNAMIC_GUARD_SOURCE  # here, not at import: compat imports torch

    return any(MARK_DYNAMIC_GUARD_SOURCE in w for w in found)


def _symbolic(reason: str, entry: str | None, text: str = "") -> GuardFailure:
    """A symbolic-shape guard, by what it says about the sizes it names:

    * ``2 <= x.size()[0]`` — the lower bound Dynamo puts on a dynamic size because sizes 0
      and 1 are specialised: kind ``specialization``;
    * ``4 <= x.size()[0] <= 64`` — a range: kind ``range`` when mark_dynamic's bounds made it
      (or PyTorch does not say what did); one that an op's shape function made (``6440 <=
      waveforms.size()[1] <= 12879`` from a conv, no mark_dynamic called) is a size threshold:
      kind ``relation``;
    * ``x.size()[0] == 16`` — one size pinned: kind ``size``;
    * anything else — equality across inputs, parity/divisibility, a threshold on a product
      (``3*x.size()[3]*x.size()[2] <= 20480``): kind ``relation``, with every dim involved.
    """
    names = []
    for m in _SYM_SIZE.finditer(reason):
        key = (local_source(m["name"]), m["kind"], int(m["dim"]))
        if key not in names:
            names.append(key)
    involves = tuple(f"{src} dim {dim}" if kind == "size" else f"{src} stride {dim}" for src, kind, dim in names)
    source, first_kind, dim = names[0]
    single = len(names) == 1 and first_kind == "size"
    if single and (m := _RANGE.match(reason)) and _SYM_SIZE.fullmatch(m["sym"].strip()):
        kind = "specialization" if m["hi"] is None and int(m["lo"]) == 2 else "range"
        if kind == "range" and _made_by_mark_dynamic(text) is False:
            return GuardFailure(reason, entry, "relation", source, dim, expected=reason, involves=involves)
        return GuardFailure(reason, entry, kind, source, dim, expected=reason, involves=involves)
    if single and (m := _EQ_CONST.match(reason)) and _SYM_SIZE.fullmatch(m["sym"].strip()):
        return GuardFailure(reason, entry, "size", source, dim, expected=int(m["value"]), involves=involves)
    return GuardFailure(reason, entry, "relation", source, dim if single else None, expected=reason, involves=involves)


# ----------------------------------------------------------------------------- guard walks

_CHECK_TENSOR = re.compile(
    r"check_tensor\((?P<src>.+?), \w+, DispatchKeySet\((?P<keys>[^)]*)\), torch\.(?P<dtype>\w+), "
    r"device=(?P<device>[^,]+), requires_grad=(?P<rg>True|False), size=\[(?P<size>[^\]]*)\], "
    r"stride=\[(?P<stride>[^\]]*)\]"
)


def _ints(text: str) -> list[int | None]:
    return [None if t.strip() == "None" else int(t) for t in text.split(",") if t.strip()]


def tensor_match_fields(text: str) -> tuple[str, list[int | None]] | None:
    """A ``TENSOR_MATCH`` code part's dtype (``float32``) and sizes (``None`` where dynamic)."""
    m = _CHECK_TENSOR.search(text)
    return None if m is None else (m["dtype"], _ints(m["size"]))


def _tensor_name(source: str) -> str:
    """``L['x']`` → ``x``; ``L['args'][0]`` → ``args[0]`` (as PyTorch names tensors)."""
    m = re.match(r"^L\['(?P<root>[^']+)'\](?P<rest>.*)$", source)
    return f"{m['root']}{m['rest']}" if m else source


def explain_tensor_match(text: str, value: Any, entry: str | None) -> list[GuardFailure]:
    """A failing ``TENSOR_MATCH``, field by field: the tensor against the metadata the guard
    recorded (rank, each size, each stride, dtype, device, requires_grad, dispatch keys),
    worded as PyTorch words tensor mismatches."""
    import torch

    m = _CHECK_TENSOR.search(text)
    if m is not None and not isinstance(value, torch.Tensor):
        g = parse_guard_failure(f"expected type of '{_tensor_name(m['src'].strip())}' to be a tensor type, but found "
                                f"{type(value)}")
        return [dataclasses.replace(g, failed_entry=entry, found_by="compilescope")]
    if m is None:
        return [GuardFailure(text.split("  #", 1)[0].strip(), entry, "other", found_by="compilescope")]
    name = _tensor_name(m["src"].strip())
    sizes, strides = _ints(m["size"]), _ints(m["stride"])
    texts: list[str] = []
    if len(sizes) != value.dim():
        texts.append(f"tensor '{name}' rank mismatch. expected {len(sizes)}, actual {value.dim()}")
    else:
        for i, expected in enumerate(sizes):
            if expected is not None and expected != value.size(i):
                texts.append(f"tensor '{name}' size mismatch at index {i}. expected {expected}, actual {value.size(i)}")
        if not texts:  # a layout change is one guard: name its first differing index, as PyTorch does
            for i, expected in enumerate(strides):
                if expected is not None and expected != value.stride(i):
                    texts.append(f"tensor '{name}' stride mismatch at index {i}. expected {expected}, actual {value.stride(i)}")
                    break
    actual_dtype = str(value.dtype).replace("torch.", "")
    if m["dtype"] != actual_dtype:
        texts.append(f"tensor '{name}' dtype mismatch. expected {m['dtype']}, actual {actual_dtype}")
    rg = m["rg"] == "True"
    if rg != value.requires_grad:
        texts.append(f"tensor '{name}' requires_grad mismatch. expected requires_grad={int(rg)}")
    device = m["device"].strip()
    if device not in ("None",) and device.isdigit() and (value.device.index or 0) != int(device):
        texts.append(f"tensor '{name}' device mismatch. expected {device}, actual {value.device.index}")
    if not texts:
        texts.append(f"tensor '{name}' dispatch keys mismatch. expected {m['keys']}")
    out = []
    for t in texts:
        g = parse_guard_failure(t)
        out.append(dataclasses.replace(g, failed_entry=entry, found_by="compilescope"))
    return out


def _global_state(text: str) -> GuardFailure:
    """``___check_global_state() against {…}``: which of grad mode / thread count changed."""
    import json

    import torch

    if text.startswith("GLOBAL_STATE changed"):  # the leaf's own words (2.6, 2.10: no state in its text)
        return parse_guard_failure(text)
    _, _, blob = text.partition(" against ")
    try:
        state = json.loads(blob.split("  #", 1)[0])
    except ValueError:
        state = {}
    if isinstance(state, dict):
        if "grad_mode" in state and bool(state["grad_mode"]) != torch.is_grad_enabled():
            return GuardFailure("GLOBAL_STATE changed: grad_mode", None, "grad_mode")
        if "num_threads" in state and state["num_threads"] != torch.get_num_threads():
            return GuardFailure(f"GLOBAL_STATE changed: num_threads (expected {state['num_threads']}, actual "
                                f"{torch.get_num_threads()})", None, "other", source="torch.get_num_threads()",
                                expected=state["num_threads"], actual=torch.get_num_threads())
    return GuardFailure("GLOBAL_STATE changed", None, "other")


def explain_checks(checks: Iterable[Any], entry: str | None) -> tuple[list[GuardFailure], dict[str, int]]:
    """Parsed failures from one entry's guard walk (:func:`compilescope.compat.walk_guards`),
    every one marked ``found_by="compilescope"``, and the guards that could not be evaluated,
    counted by kind (never guessed)."""
    failures: list[GuardFailure] = []
    unevaluated: dict[str, int] = {}
    for c in checks:
        if c.failed is None:
            unevaluated[c.kind] = unevaluated.get(c.kind, 0) + 1
            continue
        if c.kind == "TENSOR_MATCH":
            failures.extend(explain_tensor_match(c.text, c.value, entry))
            continue
        if c.kind == "GLOBAL_STATE":
            g = _global_state(c.text)
        elif _SYM_SIZE.search(c.text):  # a shape relation, in PyTorch's words: its locals bare, as torch prints them
            g = parse_guard_failure(_LOCAL_ROOT.sub(lambda m: m["root"], c.text))
        else:
            g = parse_guard_failure(c.text)
        failures.append(dataclasses.replace(g, failed_entry=entry, found_by="compilescope"))
    return failures, unevaluated


_SOURCE_ROOT = re.compile(r"^L\[(?P<q>['\"])(?P<name>[^'\"]+)(?P=q)\]")
_SOURCE_STEP = re.compile(r"\[(?P<i>-?\d+)\]|\[(?P<q>['\"])(?P<k>[^'\"]*)(?P=q)\]|\.(?P<a>[A-Za-z_][A-Za-z_0-9]*)")


def parse_source(text: str) -> tuple[str, tuple[tuple[str, Any], ...]] | None:
    """``L['cache'].layers[0].keys`` → ``("cache", (("attr", "layers"), ("item", 0), ("attr", "keys")))``;
    None for a source that is not a local followed by items and instance attributes (a
    call such as ``type(…)``, a dunder such as ``.__dict__``, a global)."""
    m = _SOURCE_ROOT.match(text)
    if m is None:
        return None
    steps: list[tuple[str, Any]] = []
    at = m.end()
    while at < len(text):
        s = _SOURCE_STEP.match(text, at)
        if s is None:
            return None
        if s["a"] is not None:
            if s["a"].startswith("__"):
                return None
            steps.append(("attr", s["a"]))
        elif s["i"] is not None:
            steps.append(("item", int(s["i"])))
        else:
            steps.append(("item", s["k"]))
        at = s.end()
    return m["name"], tuple(steps)


# ``L['kwargs']['ids'].size()[0]`` as a guard's code has it; PyTorch's recompile text says ``kwargs['ids'].size()[0]``
_LOCAL_ROOT = re.compile(r"\bL\['(?P<root>[^'\]]+)'\]")


def failure_key(g: GuardFailure) -> tuple[object, ...]:
    """What makes two failures the same guard: a tensor-property mismatch (PyTorch's
    ``tensor 'x' … mismatch`` wording, which the guard walk also uses) or a tensor's slot of
    another type (however worded) by (kind, source, dim),
    whatever values it expected; grad mode as one guard; anything else — a symbolic size, a
    relation, a value — by its text, with ``L['x']`` written as ``x``."""
    if (g.reason.startswith("tensor '") or g.kind == "type") and g.source:
        return (g.kind, g.source, g.dim)
    if g.kind == "grad_mode":
        return ("grad_mode",)
    text = re.sub(r"L\['([^']+)'\]", r"\1", g.reason)
    return ("text", " ".join(text.split()))


def enrich_actual(failure: GuardFailure, arguments: Mapping[str, Any]) -> GuardFailure:
    """Fill ``actual`` from the call's own arguments when PyTorch's text leaves it out
    (symbolic size guards such as ``2 <= x.size()[0]``, and Python-value guards)."""
    import dataclasses

    if failure.actual is not None or failure.source is None:
        return failure
    parsed = parse_source(failure.source)  # L['cache'].layers[0].is_initialized: attributes and items
    if parsed is None or parsed[0] not in arguments:
        return failure
    value = arguments[parsed[0]]
    try:
        for kind, key in parsed[1]:
            value = getattr(value, key) if kind == "attr" else value[key]
    except Exception:  # a path this call's arguments do not have: nothing to read
        return failure
    actual: Scalar = None
    if failure.kind in ("size", "stride", "range", "specialization") and failure.dim is not None and hasattr(value, "size"):
        attr = "stride" if failure.kind == "stride" else "size"
        try:
            actual = int(getattr(value, attr)(failure.dim))
        except (IndexError, RuntimeError):
            return failure
    elif failure.kind == "length" and hasattr(value, "__len__"):
        actual = len(value)
    elif failure.kind in ("value", "module_attribute") and isinstance(value, (bool, int, float, str)):
        actual = value
    else:
        return failure
    return dataclasses.replace(failure, actual=actual)


# ----------------------------------------------------------------------------- TORCH_TRACE logs
# Format (torch 2.13): each line is a glog prefix and a one-line JSON *envelope* holding one
# event-kind key plus context keys (``frame_id``, ``frame_compile_id``, ``attempt``…). An
# envelope with ``has_payload`` (an md5) is followed by tab-indented payload lines.

_TRACE_LINE = re.compile(r"^[VIWEC]\d{4} [\d:.]+ +\d+ [^\]]*\] (\{.*\})\s*$")
_BREAK_AT = re.compile(r"Graph break in user code at (?P<file>.+):(?P<line>\d+)\s*$", re.M)
_BREAK_REASON = re.compile(r"Graph Break Reason: (?P<reason>.*)", re.S)

# Event kinds torch 2.13 writes that the probe does not need: known, so not "unknown".
KNOWN_IGNORED = frozenset({
    "dynamo_start", "dynamo_output_graph", "aot_inference_graph", "aot_joint_graph", "aot_forward_graph",
    "aot_backward_graph", "inductor_post_grad_graph", "inductor_pre_grad_graph", "inductor_output_code",
    "dynamo_cpp_guards_str", "dynamo_guards", "create_symbol", "guard_added_fast", "guard_added",
    "symbolic_shape_specialization", "describe_storage", "describe_tensor", "describe_source", "chromium_event",
    "optimize_ddp_split_graph", "optimize_ddp_split_child", "compiled_autograd_graph",
    "aot_autograd_backward_compilation_metrics", "graph_execution", "dynamo_cache_entries", "propagate_real_tensors",
    "guard_on_data_dependent_error", "link", "exported_program", "missing_fake_kernel", "mismatched_fake_kernel",
    "torch_version", "frame_locals", "expression_created", "unbacked_symbol_created",
})
_CONTEXT_KEYS = {"frame_id", "frame_compile_id", "attempt", "compiled_autograd_id", "rank", "subgraph_name",
                 "stack", "has_payload"}


def trace_events(lines: list[str]) -> Iterator[tuple[dict[str, Any], str | None] | str]:
    """Each event of a trace log as ``(envelope, payload or None)``; a line that is not one
    as the name of its problem (``malformed_line``, ``malformed_envelope``,
    ``payload_md5_mismatch``, the event still following the last), for the reader to count."""
    import hashlib
    import json

    i = 0
    while i < len(lines):
        m = _TRACE_LINE.match(lines[i])
        i += 1
        if not m:
            if lines[i - 1].strip():
                yield "malformed_line"
            continue
        try:
            env = json.loads(m.group(1))
        except (ValueError, RecursionError):
            yield "malformed_envelope"
            continue
        if not isinstance(env, dict):
            yield "malformed_envelope"
            continue
        payload = None
        if "has_payload" in env:
            body = []
            while i < len(lines) and lines[i].startswith("\t"):
                body.append(lines[i][1:])
                i += 1
            payload = "\n".join(body)
            if hashlib.md5(payload.encode(errors="replace")).hexdigest() != env["has_payload"]:
                yield "payload_md5_mismatch"
        yield env, payload


def envelope_kind(env: Mapping[str, Any]) -> str | None:
    """The one event-kind key of an envelope (None when it has none, or several)."""
    kinds = [k for k in env if k not in _CONTEXT_KEYS]
    return kinds[0] if len(kinds) == 1 else None


def envelope_compile_id(env: Mapping[str, Any]) -> str | None:
    """``"0/1"`` from the envelope's ``frame_id`` and ``frame_compile_id``."""
    if "frame_id" not in env or "frame_compile_id" not in env:
        return None
    return f"{env['frame_id']}/{env['frame_compile_id']}"


def recompile_reason_texts(payload: str) -> list[str]:
    """The texts of a ``recompile_reasons`` artifact: declared "json", but a single reason is
    written as raw text (torch 2.13 guards.py)."""
    import json

    try:
        data = json.loads(payload)
    except ValueError:
        return [payload]
    return [str(t) for t in data] if isinstance(data, list) else [str(data)]


def graph_break_text(payload: str) -> tuple[str, str | None, int | None]:
    """``(reason, file, line)`` of a ``dynamo_graph_break_reason`` payload: the reason proper,
    without the one-line preamble ("Encountered graph break when …:") that precedes it."""
    at = _BREAK_AT.search(payload)
    why = _BREAK_REASON.search(payload)
    reason = why["reason"].strip() if why else payload.strip()
    lines = [ln for ln in reason.split("\n") if ln.strip()]
    if len(lines) > 1 and lines[0].startswith("Encountered graph break"):
        reason = "\n".join(lines[1:])
    return reason, (at["file"] if at else None), (int(at["line"]) if at else None)


# A graph break at a jump on a traced value (``if tensor.sum() > 0:``) is recorded in process
# by the instruction alone — ``GraphCompileReason(f"generic_jump {typestr(value)}…")`` — while
# the same break's logged text, the trace's, opens with its kind: every such jump raises
# ``gb_type="Data-dependent branching"`` first (``generic_jump``'s ``jump_graph_break``,
# symbolic_convert.py — checked on 2.13.0).
_GENERIC_JUMP = re.compile(r"^generic_jump \w+")
DATA_DEPENDENT_BRANCH = "Data-dependent branching"


def in_process_break_reason(reason: str) -> str:
    """A graph-break record's reason as the trace words it: a jump's opens with
    "Data-dependent branching", PyTorch's kind of it, above the instruction it names."""
    if _GENERIC_JUMP.match(reason):
        return f"{DATA_DEPENDENT_BRANCH}\n  {reason}"
    return reason


_GIVE_UP_PREAMBLE = re.compile(
    r"^Failed to handle graph break gracefully\. Skipping the function and falling back to eager\. "
    r"Graph break encountered:\s*", re.S)


def break_given_up(reason: str) -> str | None:
    """For the graph break Dynamo logs again when it cannot resume after one and skips the whole
    frame ("Failed to handle graph break gracefully. Skipping the function and falling back to
    eager. Graph break encountered: …", ``InstructionTranslatorBase.run`` — 2.13.0): the break's
    own reason; None for any other break."""
    m = _GIVE_UP_PREAMBLE.match(reason)
    return reason[m.end():].strip() if m else None


# ----------------------------------------------------------------------------- guard sources
# A cache entry's guard managers name what they guard by source (PyTorch's words, checked on
# 2.13.0): L['self']._modules['layers']._modules['0']._parameters['weight'], G['torch'],
# list(dict.keys(L['self']._modules['layers']._modules))[0].

_GUARD_MODULE_ITEM = re.compile(r"\._modules\[(['\"])(?P<k>[^'\"]+)\1\]")
_GUARD_TENSOR_OWNER = re.compile(r"\._(?:parameters|buffers)\[(['\"])(?P<k>[^'\"]+)\1\]")
_GUARD_KEYS_OF = re.compile(r"^list\(dict\.keys\((?P<src>.+)\)\)\[\d+\]$")
_GUARD_LOCAL = re.compile(r"^L\[(['\"])(?P<name>[^'\"]+)\1\]")
_GUARD_GLOBAL = re.compile(r"^G\[(['\"])(?P<name>[^'\"]+)\1\]")


def readable(source: str) -> str:
    """A guard source as a user writes the path: ``L['self']._modules['layers']._modules['0']
    ._parameters['weight']`` → ``self.layers[0].weight``; ``G['__import_torch_dot_nn']`` →
    ``torch.nn``; ``G['__builtins_dict___0']['iter']`` → ``builtins['iter']``."""
    m = _GUARD_KEYS_OF.match(source)
    text = m["src"] if m else source
    text = _GUARD_MODULE_ITEM.sub(lambda k: f"[{k['k']}]" if k["k"].isdigit() else f".{k['k']}", text)
    text = _GUARD_TENSOR_OWNER.sub(lambda k: f".{k['k']}", text)
    text = text.replace(".__dict__", "")
    text = _GUARD_LOCAL.sub(lambda k: k["name"], text)

    def global_name(k: re.Match[str]) -> str:
        name = k["name"]
        if name.startswith("__import_"):
            return name[len("__import_"):].replace("_dot_", ".")
        if name.startswith("__builtins_dict__"):
            return "builtins"
        return name
    return _GUARD_GLOBAL.sub(global_name, text)


def _module_path(source: str) -> str:
    """The module a source inside a module tree belongs to: the source up to its last
    ``._modules['k']`` (the root module when there is none)."""
    m = _GUARD_KEYS_OF.match(source)
    if m:
        return m["src"][: -len("._modules")] if m["src"].endswith("._modules") else m["src"]
    last = None
    for last in _GUARD_MODULE_ITEM.finditer(source):
        pass
    if last is not None:
        return source[: last.end()]
    root = _GUARD_LOCAL.match(source)
    return root.group(0) if root else source


def classify_source(source: str, kind: str, inputs: Mapping[str, Any]) -> tuple[str, str]:
    """(category, owner source) of one guard of a cache entry, its manager's source as PyTorch
    names it and ``inputs`` the frame's locals: see :class:`~compilescope.model.GuardGroup`."""
    import torch

    if kind == "EPILOGUE":
        return "shape", "symbolic relations"
    if source == "L":
        return "ambient", "frame state"
    if source.startswith("G["):
        g = _GUARD_GLOBAL.match(source)
        return "global", g.group(0) if g else source
    local = _GUARD_LOCAL.match(source) or (_GUARD_LOCAL.match(m["src"]) if (m := _GUARD_KEYS_OF.match(source)) else None)
    if local is None:
        return "other", source
    if isinstance(inputs.get(local["name"]), torch.nn.Module):
        owner = _GUARD_TENSOR_OWNER.search(source)
        if owner is not None:
            return "parameter", _module_path(source[: owner.start()])
        return "module", _module_path(source)
    return "input", local.group(0)


# Dynamo's explanation of an op that failed on fake tensors names the error the op raised:
# "Explanation: Dynamo failed to run FX node with fake tensors: call_function …: got RuntimeError('…')"
_GOT = re.compile(r"^Explanation: .*: got (?P<type>\w+)\((?P<message>(?P<q>['\"]).*(?P=q))\)\s*$")


def headline(type_name: str, message: str) -> str:
    """``Type: first line`` of a message, the next line joined when the first only
    announces it (``backend='inductor' raised:``); when Dynamo's explanation names the error an
    op raised (its first line only says ``RuntimeError when making fake tensor call``), that
    error too."""
    lines = [ln.strip() for ln in message.strip().splitlines() if ln.strip()]
    first = lines[0] if lines else ""
    for nxt in lines[1:3]:
        if not first.endswith(":"):
            break
        first = f"{first} {nxt}"
    got = next((m for ln in lines[1:4] if (m := _GOT.match(ln))), None)
    if got is not None:
        try:  # the exception's repr: its message as a Python literal
            said = ast.literal_eval(got["message"])
        except (ValueError, SyntaxError):
            said = None
        if isinstance(said, str):
            first = f"{first}: {got['type']}: {said.splitlines()[0] if said else said}"
    return f"{type_name}: {first}"[:500] if first else type_name
