"""Parsing and checking of user text (``--stream`` aside, see :mod:`compilescope.stream`).

Every parser here raises :class:`~compilescope.errors.OptionError` with a message that
names the option and the bad token; the CLI prints it as one line and exits 2. The
``check_*`` functions run before the first trial, so a typo never costs a run.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from .errors import OptionError
from .model import MarkSpec

START_MODES = ("cold", "warm", "mega")
FAIL_ON = ("crash", "numerics", "fallback")
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d)\s*$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_lifetime(lifetime: str | int | None, qps: float | None = None) -> int | None:
    """``10000`` requests, or a duration (``8h``, ``30m``) at ``qps`` requests per second."""
    if lifetime is None:
        return None
    if isinstance(lifetime, int):
        if lifetime < 0:
            raise OptionError(f"--lifetime {lifetime} is negative")
        return lifetime
    text = lifetime.strip()
    if text.isdigit():
        return int(text)
    m = _DURATION.match(text)
    if not m:
        raise OptionError(f"malformed --lifetime {lifetime!r}: use a request count (10000) or a duration (8h)")
    if qps is None or qps <= 0:
        raise OptionError(f"--lifetime {lifetime!r} is a duration: give the request rate with --qps")
    return int(float(m[1]) * _UNIT_S[m[2]] * qps)


def parse_cache_modes(text: str) -> tuple[str, ...]:
    """``cold``, ``warm``, ``mega``, a comma list of them, ``both`` (cold,warm) or ``all``."""
    aliases = {"both": ("cold", "warm"), "all": START_MODES}
    modes: list[str] = []
    for token in (t.strip() for t in text.split(",") if t.strip()):
        for mode in aliases.get(token, (token,)):
            if mode not in START_MODES:
                raise OptionError(f"unknown cache mode {token!r} (use cold, warm, mega, both or all)")
            if mode not in modes:
                modes.append(mode)
    if not modes:
        raise OptionError("no cache mode given")
    return tuple(m for m in START_MODES if m in modes)


def parse_mark(text: str) -> MarkSpec:
    """``x:0`` or ``x:0:1:1024`` (``x:0::1024`` leaves the minimum open)."""
    parts = text.split(":")
    if len(parts) not in (2, 4) or not parts[0].strip():
        raise OptionError(f"malformed --mark {text!r}: expected INPUT:DIM or INPUT:DIM:MIN:MAX")

    def num(token: str, what: str, optional: bool) -> int | None:
        if optional and token == "":
            return None
        try:
            value = int(token)
        except ValueError:
            raise OptionError(f"malformed --mark {text!r}: {what} {token!r} is not an integer") from None
        if value < 0:
            raise OptionError(f"malformed --mark {text!r}: {what} must be >= 0")
        return value

    dim = num(parts[1], "dim", optional=False)
    assert dim is not None
    lo = hi = None
    if len(parts) == 4:
        lo, hi = num(parts[2], "min", True), num(parts[3], "max", True)
        if lo is not None and hi is not None and lo > hi:
            raise OptionError(f"malformed --mark {text!r}: min {lo} is above max {hi}")
    return MarkSpec(input=parts[0].strip(), dim=dim, min=lo, max=hi)


def parse_buckets(text: str) -> tuple[int, ...]:
    """``pow2`` (empty tuple) or an ascending list such as ``16,32,64,128``."""
    if text.strip() in ("", "pow2"):
        return ()
    try:
        values = tuple(int(v) for v in text.split(","))
    except ValueError:
        raise OptionError(f"malformed --buckets {text!r}: expected pow2 or a list of integers") from None
    if any(v <= 0 for v in values) or list(values) != sorted(set(values)):
        raise OptionError(f"malformed --buckets {text!r}: sizes must be positive and ascending")
    return values


def parse_dynamic_sources(text: str | None) -> str | None:
    """``L['x'],L['y']:0``: each comma-separated item must compile as a pattern, as torch
    matches sources against them (exact names or regular expressions)."""
    if text is None:
        return None
    items = [t.strip() for t in text.split(",")]
    if not any(items):
        raise OptionError("--dynamic-sources is empty")
    for item in items:
        if not item:
            raise OptionError(f"malformed --dynamic-sources {text!r}: an empty item")
        try:
            re.compile(item)
        except re.error as exc:
            raise OptionError(f"malformed --dynamic-sources {text!r}: {item!r} is not a pattern ({exc.msg})") from None
    return text


def parse_fail_on(text: str | None) -> frozenset[str]:
    """``crash,numerics,fallback`` (any of them): what makes ``run`` exit 1."""
    if not text:
        return frozenset()
    got = {t.strip() for t in text.split(",") if t.strip()}
    unknown = sorted(got - set(FAIL_ON))
    if unknown:
        raise OptionError(f"unknown --fail-on {unknown[0]!r} (use {', '.join(FAIL_ON)})")
    return frozenset(got)


def check_backend(name: str) -> None:
    """The backend must be one torch lists (debug backends such as eager/aot_eager included)."""
    from . import compat

    if name in compat.CORE_BACKENDS:
        return
    known = compat.backend_names()
    if name not in known:
        raise OptionError(f"unknown --backend {name!r} (torch {compat.torch_version()} has: {', '.join(sorted(known))})")


def check_device(device: str) -> None:
    import torch

    try:
        dev = torch.device(device)
    except (RuntimeError, ValueError):
        raise OptionError(f"malformed --device {device!r} (cpu, cuda, cuda:1…)") from None
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise OptionError(f"--device {device!r}: this torch build ({torch.__version__}) sees no CUDA device")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise OptionError(f"--device {device!r}: only {torch.cuda.device_count()} CUDA device(s)")
    elif dev.type != "cpu":
        raise OptionError(f"--device {device!r}: compilescope measures on cpu or cuda")


def check_writable(path: Path, what: str) -> None:
    """Fail now, not after every trial ran, when ``path`` cannot be written."""
    parent = path.parent if str(path.parent) else Path(".")
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OptionError(f"cannot write {what} {str(path)!r}: {exc.strerror}") from None
    if path.is_dir():
        raise OptionError(f"cannot write {what} {str(path)!r}: it is a directory")
    if (path.exists() and not os.access(path, os.W_OK)) or not os.access(parent, os.W_OK):
        raise OptionError(f"cannot write {what} {str(path)!r}: permission denied")


def parse_settings(items: tuple[str, ...] | list[str]) -> dict[str, object]:
    """``NAME=VALUE`` items (``probe --config``): VALUE as JSON when it parses, else text."""
    import json

    known = ("dynamic_sources", "recompile_limit", "automatic_dynamic_shapes", "assume_static_by_default")
    out: dict[str, object] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise OptionError(f"malformed --config {item!r}: use NAME=VALUE")
        if name not in known and not name.startswith("inductor."):
            raise OptionError(f"unknown --config {name!r} (use {', '.join(known)} or inductor.NAME)")
        try:
            out[name] = json.loads(value)
        except ValueError:
            out[name] = value
    if "dynamic_sources" in out:
        parse_dynamic_sources(str(out["dynamic_sources"]))
    return out
