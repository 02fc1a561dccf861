"""Request-shape streams: the sequence of shapes a trial feeds its workload, in order.

Spec forms (``--stream``):

``16,16,32,32,64,16``
    explicit values of a one-dimension workload.
``batch=4,seq=32;batch=8,seq=57``
    explicit shapes, ``;`` between requests.
``product:batch=1|2|4;seq=16..64:16``
    the cartesian product of each dimension's values (``a|b|c`` choices, ``lo..hi[:step]`` ranges).
``random:count=200;seed=0;batch=1..8;seq=16|32|64``
    seeded draws: uniform over a range or over choices, ``count`` requests.
``@shapes.jsonl``
    one JSON object per line, ``{"batch": 4, "seq": 32}`` (or ``{"shape": {...}}``, other keys
    ignored); a file whose names are none of the workload's (``{"x.0": 16}`` from ``probe
    --stream-out`` or ``watch(record_shapes=)``) is matched to the workload's dims in order
    (the names that vary across the file, when it has more, each taken once: ``attention_mask.0``
    always equal to ``input_ids.0`` is one dimension) — or by the workload's ``recorded_dims``
    when it names them (``past`` ← ``cache.layers[0].keys.2``, 0 where a line has no such
    size); a ``{"compilescope": {...}}`` line (a recording's closing counts) is not a request.

Every parse error names the token it could not read.
"""

from __future__ import annotations

import itertools
import json
import random
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from .errors import StreamError
from .model import Shape

MAX_PRODUCT = 100_000
META_KEY = "compilescope"  # the key of a recording's closing line (see shapes_record)


def _int(token: str, context: str) -> int:
    try:
        value = int(token.strip())
    except ValueError:
        raise StreamError(f"bad stream token {context!r}: {token.strip()!r} is not an integer") from None
    if value < 0:
        raise StreamError(f"bad stream token {context!r}: sizes cannot be negative")
    return value


def _values(text: str, context: str) -> list[int]:
    """``1|2|4`` → [1, 2, 4]; ``16..64:16`` → [16, 32, 48, 64]; ``8`` → [8]."""
    if ".." in text:
        lo_text, _, rest = text.partition("..")
        hi_text, _, step_text = rest.partition(":")
        lo, hi = _int(lo_text, context), _int(hi_text, context)
        step = _int(step_text, context) if step_text else 1
        if step == 0 or hi < lo:
            raise StreamError(f"bad stream token {context!r}: empty range")
        if (hi - lo) // step + 1 > MAX_PRODUCT:
            raise StreamError(f"bad stream token {context!r}: the range has more than {MAX_PRODUCT} values")
        return list(range(lo, hi + 1, step))
    return [_int(v, context) for v in text.split("|")]


def _pairs(text: str, sep: str) -> list[tuple[str, str, str]]:
    """``a=1;b=2`` → [(a, 1, 'a=1'), ...] with the original token for error messages."""
    out = []
    for token in (t.strip() for t in text.split(sep)):
        if not token:
            continue
        key, eq, value = token.partition("=")
        if not eq or not key.strip() or not value.strip():
            raise StreamError(f"bad stream token {token!r}: expected NAME=VALUE")
        out.append((key.strip(), value.strip(), token))
    return out


def _check_dims(shape: Shape, dims: tuple[str, ...], token: str) -> Shape:
    unknown = [k for k in shape if k not in dims]
    if unknown:
        raise StreamError(
            f"bad stream token {token!r}: unknown dimension {unknown[0]!r} (this workload has {', '.join(dims)})"
        )
    missing = [d for d in dims if d not in shape]
    if missing:
        raise StreamError(f"bad stream token {token!r}: missing dimension {missing[0]!r}")
    return {d: shape[d] for d in dims}


def _explicit(spec: str, dims: tuple[str, ...]) -> list[Shape]:
    if "=" not in spec:
        if len(dims) != 1:
            raise StreamError(
                f"bad stream {spec!r}: this workload varies {', '.join(dims)}; write e.g. "
                f"{';'.join(','.join(f'{d}=8' for d in dims) for _ in range(2))}"
            )
        return [{dims[0]: _int(t, t)} for t in spec.split(",") if t.strip()]
    shapes = []
    for request in (r.strip() for r in spec.split(";")):
        if not request:
            continue
        shape = {k: _int(v, tok) for k, v, tok in _pairs(request, ",")}
        shapes.append(_check_dims(shape, dims, request))
    return shapes


def _product(body: str, dims: tuple[str, ...]) -> list[Shape]:
    axes = {k: _values(v, tok) for k, v, tok in _pairs(body, ";")}
    _check_dims({k: 0 for k in axes}, dims, body)
    total = 1
    for vals in axes.values():
        total *= len(vals)
    if total > MAX_PRODUCT:
        raise StreamError(f"bad stream {body!r}: the product has {total} shapes (limit {MAX_PRODUCT})")
    return [dict(zip(dims, combo)) for combo in itertools.product(*(axes[d] for d in dims))]


def _random(body: str, dims: tuple[str, ...]) -> list[Shape]:
    count, seed = None, 0
    axes: dict[str, list[int]] = {}
    for key, value, token in _pairs(body, ";"):
        if key == "count":
            count = _int(value, token)
        elif key == "seed":
            seed = _int(value, token)
        else:
            axes[key] = _values(value, token)
    if count is None:
        raise StreamError(f"bad stream {('random:' + body)!r}: give count=N")
    if count > MAX_PRODUCT:
        raise StreamError(f"bad stream {('random:' + body)!r}: count {count} is above the limit {MAX_PRODUCT}")
    _check_dims({k: 0 for k in axes}, dims, body)
    rng = random.Random(seed)
    return [{d: rng.choice(axes[d]) for d in dims} for _ in range(count)]


MAX_NAMES = 256  # dimension names on one line of a stream file: more is not a stream of shapes


def _jsonl(path_text: str, dims: tuple[str, ...], recorded: Mapping[str, str] | None = None) -> list[Shape]:
    """A stream file's requests. Bounded work: each distinct line is parsed and checked once
    (a recording of a million requests of a few shapes repeats a few lines), and a line's
    names are counted before anything else is done with them — a line of more than
    :data:`MAX_NAMES` names is refused at the first such line. Requests of one shape share
    one dict."""
    from .paths import read_capped

    raw = read_capped(path_text, f"stream file {path_text!r}", StreamError)  # a regular file, size-capped
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise StreamError(f"stream file {path_text!r} is not text (expected JSON lines)") from None
    del raw
    parsed: dict[str, int | None] = {}  # line text → its distinct shape's index (None: a closing line)
    order: list[tuple[str, Shape]] = []  # the distinct shapes, first appearance first, with a token
    keys: dict[tuple[tuple[str, int], ...], int] = {}
    requests: list[int] = []  # every request, as an index into ``order``
    for number, line in enumerate(_lines(text), 1):
        line = line.strip()
        if not line:
            continue
        if line not in parsed:
            token = f"{path_text}:{number}"
            shape = _line_shape(line, token)
            if shape is None:
                parsed[line] = None
            else:
                parsed[line] = keys.setdefault(tuple(shape.items()), len(order))
                if parsed[line] == len(order):
                    order.append((token, shape))
        index = parsed[line]
        if index is not None:
            requests.append(index)
    del text, parsed
    named = _name_shapes(order, dims, recorded)
    return [named[i] for i in requests]


def _lines(text: str) -> Iterator[str]:
    """The lines of ``text`` one at a time (no list of a million lines held at once)."""
    start, size = 0, len(text)
    while start < size:
        end = text.find("\n", start)
        if end < 0:
            end = size
        yield text[start:end]
        start = end + 1


def _line_shape(line: str, token: str) -> Shape | None:
    """One line's shape (None for a recording's closing line), its names counted first."""
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise StreamError(f"bad stream token {token!r}: not JSON ({exc.msg})") from None
    except (ValueError, RecursionError):
        raise StreamError(f"bad stream token {token!r}: not readable JSON") from None
    if isinstance(obj, dict) and isinstance(obj.get(META_KEY), dict):
        return None  # a recording's closing line: what was recorded and dropped
    if isinstance(obj, dict) and isinstance(obj.get("shape"), dict):
        obj = obj["shape"]  # a recorded request's dtypes and scalars are not part of its shape
    if not isinstance(obj, dict):
        raise StreamError(f"bad stream token {token!r}: expected a JSON object of dimension sizes")
    if len(obj) > MAX_NAMES:
        raise StreamError(f"bad stream token {token!r}: {len(obj):,} dimension names on one line (at most "
                          f"{MAX_NAMES}): not a stream of shapes")
    shape = {}
    for k, v in obj.items():
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise StreamError(f"bad stream token {token!r}: {k!r} is not a non-negative integer")
        shape[str(k)] = v
    return shape


def _root(path: str) -> str:
    """The argument a recorded path starts from (``cache`` of ``cache.layers[0].keys.2``)."""
    return re.split(r"[.\[]", path, maxsplit=1)[0]


def _check_recorded(order: list[tuple[str, Shape]], dims: tuple[str, ...], recorded: Mapping[str, str]) -> None:
    """A recorded_dims path whose argument no line of the file names is a mistake (a typo):
    refused, not read as 0 in every request. A path absent from some lines, or whose leaf no
    line holds while its argument is there (an empty cache), reads as 0."""
    roots = {_root(k) for _, shape in order for k in shape}
    wrong = [f"{d} from {recorded[d]!r}" for d in dims if d in recorded and _root(recorded[d]) not in roots]
    if wrong:
        raise StreamError(f"the workload's recorded_dims read {', '.join(wrong)}, but no line of the stream names "
                          f"that argument (it names {', '.join(sorted(roots)[:8])})")


def _name_shapes(order: list[tuple[str, Shape]], dims: tuple[str, ...],
                 recorded: Mapping[str, str] | None) -> list[Shape]:
    """Each distinct shape named by the workload's dims (see the module docstring)."""
    varying = _varying([shape for _, shape in order])
    twins = _twins([shape for _, shape in order], varying)
    named = bool(recorded) and any(k in shape for _, shape in order for k in recorded.values())  # type: ignore[union-attr]
    if named:
        _check_recorded(order, dims, recorded or {})
    shapes = []
    for token, shape in order:
        if named and not set(shape) & set(dims):
            shape = {d: shape.get(recorded[d], 0) if recorded and d in recorded else shape.get(d, -1) for d in dims}  # type: ignore[index]
            missing = [d for d, v in shape.items() if v == -1]
            if missing:
                raise StreamError(f"bad stream token {token!r}: the workload's recorded_dims do not name {', '.join(missing)}")
        elif not set(shape) & set(dims):
            # a recorded stream (``probe --stream-out``, ``watch(record_shapes=)``) names dims
            # by input (``x.0``); with none of the workload's names, take them in order — the
            # dims that vary across the file when the file has more than the workload
            if len(shape) != len(dims) and len(varying) == len(dims):
                shape = {k: shape[k] for k in varying if k in shape}
            elif len(shape) == len(dims) and twins and twins[0][1] in shape:
                # two of them are one dimension (an attention mask's length beside the ids'): matched
                # in order, one of the workload's dims would get another's sizes, silently
                a, b = twins[0]
                raise StreamError(
                    f"bad stream token {token!r}: {a} and {b} are equal in every request — the same dim of "
                    f"two inputs, most likely one dimension named twice — so matching the file's dims to the "
                    f"workload's ({', '.join(dims)}) in order would be a guess: name them by the workload's "
                    "dims (or give the workload recorded_dims)")
            if len(shape) == len(dims):
                shape = dict(zip(dims, shape.values()))
        shapes.append(_check_dims(shape, dims, token))
    return shapes


def _twins(shapes: list[Shape], varying: list[str]) -> list[tuple[str, str]]:
    """Pairs (a varying name, a later one) whose values are equal in every shape and that name
    the same dim of two inputs (``input_ids.1``, ``attention_mask.1``): one dimension named
    twice (:func:`_varying` names it once). Two dims of one input that agree (a square image's
    ``img.2`` and ``img.3``) are two dims."""
    keys = list(dict.fromkeys(k for s in shapes for k in s))
    first = {tuple(s.get(k) for s in shapes): k for k in reversed(varying)}

    def split(name: str) -> tuple[str, str]:
        owner, _, dim = name.rpartition(".")
        return owner, dim

    return [(a, k) for k in keys if k not in varying and (c := tuple(s.get(k) for s in shapes)) in first
            and (a := first[c]) and split(a)[1] == split(k)[1] and split(a)[0] != split(k)[0]]


def _varying(shapes: list[Shape]) -> list[str]:
    """The names whose value changes across ``shapes``, in order of first appearance; a name
    equal to an earlier one in every shape (``attention_mask.0`` beside ``input_ids.0``) is
    the same dimension, named once. Linear in names × shapes: each name's column of values
    is hashed, and the shapes are the file's distinct ones."""
    keys = list(dict.fromkeys(k for s in shapes for k in s))
    out: list[str] = []
    columns: set[tuple[int | None, ...]] = set()
    for k in keys:
        column = tuple(s.get(k) for s in shapes)
        if len(set(column)) > 1 and column not in columns:
            columns.add(column)
            out.append(k)
    return out


def check_syntax(spec: str) -> None:
    """Refuse a ``--stream`` spec whose syntax is wrong before the workload is loaded (which
    can take seconds: a model's library imported): the checks :func:`parse_stream` makes that
    need no dimension names, with its words. A stream file is only looked for."""
    import os

    text = spec.strip()
    if not text:
        raise StreamError("empty stream spec")
    if text.startswith("@"):
        try:
            os.stat(text[1:])
        except OSError as exc:
            raise StreamError(f"cannot read stream file {text[1:]!r}: {exc.strerror}") from None
        except ValueError as exc:  # a NUL byte in the path
            raise StreamError(f"cannot read {text[1:]!r}: {exc}") from None
        return
    for kind in ("product:", "random:"):
        if text.startswith(kind):
            for key, value, token in _pairs(text[len(kind):], ";"):
                _values(value, token)
            return
    kind, colon, _ = text.partition(":")
    if colon and kind.isidentifier():
        raise StreamError(f"bad stream token {kind + ':'!r}: unknown stream kind (use product:, random: or @file)")
    if "=" not in text:
        for t in text.split(","):
            if t.strip():
                _int(t, t)
        return
    for request in (r.strip() for r in text.split(";")):
        for _, value, token in _pairs(request, ",") if request else ():
            _int(value, token)


def parse_stream(spec: str, dims: tuple[str, ...], recorded: Mapping[str, str] | None = None) -> tuple[Shape, ...]:
    """Parse a ``--stream`` spec for a workload whose shape dimensions are ``dims``
    (``recorded``: its ``recorded_dims``, how a recording names them)."""
    text = spec.strip()
    if not text:
        raise StreamError("empty stream spec")
    if text.startswith("@"):
        shapes = _jsonl(text[1:], dims, recorded)
    elif text.startswith("product:"):
        shapes = _product(text[len("product:") :], dims)
    elif text.startswith("random:"):
        shapes = _random(text[len("random:") :], dims)
    else:
        kind, colon, _ = text.partition(":")
        if colon and kind.isidentifier():
            raise StreamError(f"bad stream token {kind + ':'!r}: unknown stream kind (use product:, random: or @file)")
        shapes = _explicit(text, dims)
    if not shapes:
        raise StreamError(f"stream {spec!r} has no requests")
    return tuple(shapes)


def distinct_shapes(stream: Sequence[Shape]) -> list[Shape]:
    """Distinct shapes in order of first appearance. Linear, and cheap for a long stream of a
    few shapes: a dict already seen (a stream file's requests of one shape share one) is
    skipped by identity."""
    seen: dict[tuple[tuple[str, int], ...], Shape] = {}
    known: set[int] = set()
    for shape in stream:
        if id(shape) not in known:
            known.add(id(shape))
            seen.setdefault(tuple(shape.items()), shape)
    return list(seen.values())


def write_jsonl(stream: tuple[Shape, ...], path: str | Path) -> None:
    """Write a stream file atomically (a regular file or a new path only, see ``write_atomic``)."""
    from .paths import write_atomic

    write_atomic(Path(path), "".join(json.dumps(s) + "\n" for s in stream))
