"""Parsing and checking of user text (``--stream`` aside, see :mod:`compilescope.stream`).

Every parser of what a user types or writes lives here — options, ``--strategies``,
``--where``, ``--fail-on-regression``, ``--objective``, ``probe --config`` and the sweep
file — and raises :class:`~compilescope.errors.OptionError` with a message that names the
option and the bad token; the CLI prints it as one line and exits 2. The ``check_*``
functions run before the first trial, so a typo never costs a run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import OptionError
from .model import DEFAULT_STRATEGIES, MarkSpec, MeasureOptions, StrategyOptions

START_MODES = ("cold", "warm", "mega")
FAIL_ON = ("crash", "numerics", "fallback")
OBJECTIVES = ("total", "p99", "steady")  # what ``advise`` ranks its proposals by
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d)\s*$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}
# A lifetime of 10**15 requests is a million requests a second for thirty years; more is a typo
# (and a float duration times a rate beyond it overflows). Sizes past int32 are no real input.
MAX_LIFETIME = 10**15
MAX_SIZE = 2**31 - 1
_DIM_SUFFIX = re.compile(r"^(?P<pattern>.+):(?P<tail>[^:\[\]()|*+?{}\\]*)$")


def parse_lifetime(lifetime: str | int | None, qps: float | None = None) -> int | None:
    """``10000`` requests, or a duration (``8h``, ``30m``) at ``qps`` requests per second."""
    if lifetime is None:
        return None
    if isinstance(lifetime, int):
        if lifetime < 0:
            raise OptionError(f"--lifetime {lifetime} is negative")
        return _bounded_lifetime(lifetime, str(lifetime))
    text = lifetime.strip()
    if text.isdigit():
        if len(text) > 30:
            raise OptionError(f"--lifetime {text[:30]}… is above the maximum of {MAX_LIFETIME:,} requests")
        return _bounded_lifetime(int(text), text)
    m = _DURATION.match(text)
    if not m:
        raise OptionError(f"malformed --lifetime {lifetime[:40]!r}: use a request count (10000) or a duration (8h)")
    if qps is None or qps <= 0:
        raise OptionError(f"--lifetime {lifetime!r} is a duration: give the request rate with --qps")
    requests = float(m[1]) * _UNIT_S[m[2]] * qps
    if not math.isfinite(requests) or requests > MAX_LIFETIME:
        raise OptionError(f"--lifetime {text} at --qps {qps:g} is above the maximum of {MAX_LIFETIME:,} requests")
    return int(requests)


def _bounded_lifetime(requests: int, text: str) -> int:
    if requests > MAX_LIFETIME:
        raise OptionError(f"--lifetime {text} is above the maximum of {MAX_LIFETIME:,} requests")
    return requests


def check_sizes(shapes: object, what: str = "--stream") -> None:
    """Every size of every shape an integer in [0, MAX_SIZE]: a larger one would only fail
    inside torch, as a C++ error, in every trial. A dict seen already (requests of one shape
    share one) is checked once."""
    checked: set[int] = set()
    for shape in shapes:  # type: ignore[attr-defined]
        if id(shape) in checked:
            continue
        checked.add(id(shape))
        for dim, value in shape.items():
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise OptionError(f"{what}: size {value!r} of {dim!r} is not a non-negative integer")
            if value > MAX_SIZE:
                shown = str(value) if len(str(value)) <= 30 else str(value)[:30] + "…"
                raise OptionError(f"{what}: size {shown} of {dim!r} is above the maximum {MAX_SIZE}")


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


def split_dynamic_sources(text: str) -> list[tuple[str, str]]:
    """Each ``--dynamic-sources`` item and the pattern in it (its ``:N`` dim cut off)."""
    out = []
    for item in (t.strip() for t in text.split(",")):
        if item:
            suffix = _DIM_SUFFIX.match(item)
            out.append((item, suffix["pattern"] if suffix is not None and suffix["tail"].isdigit() else item))
    return out


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
        # torch reads ``PATTERN:N`` as dim N of the matched sources; any other ``:TAIL`` would
        # be taken as part of the pattern and silently match nothing
        suffix = _DIM_SUFFIX.match(item)
        if suffix is not None and not suffix["tail"].isdigit():
            raise OptionError(f"malformed --dynamic-sources {text!r}: in {item!r}, {':' + suffix['tail']!r} is not a "
                              "dim (use :N, N a non-negative integer)")
        if suffix is not None:
            item = suffix["pattern"]
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


@contextlib.contextmanager
def scratch_inductor_cache(prefix: str = "compilescope-") -> Iterator[None]:
    """While it is open, ``TORCHINDUCTOR_CACHE_DIR`` (when the user set none) is a temporary
    directory of our own, removed afterwards: importing ``torch._dynamo`` or inductor's
    backends creates inductor's default cache directory (``$TMPDIR/torchinductor_USER``), which
    a command that runs Dynamo in its own process would otherwise leave behind."""
    import tempfile

    if os.environ.get("TORCHINDUCTOR_CACHE_DIR") is not None:
        yield
        return
    with tempfile.TemporaryDirectory(prefix=prefix) as scratch:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = scratch
        try:
            yield
        finally:
            if os.environ.get("TORCHINDUCTOR_CACHE_DIR") == scratch:
                os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)


def check_backend(name: str) -> None:
    """The backend must be one torch lists (debug backends such as eager/aot_eager included)."""
    from . import compat

    if name in compat.CORE_BACKENDS:
        return
    with scratch_inductor_cache("compilescope-backends-"):
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
    """Fail now, not after every trial ran, when ``path`` is not ours to write
    (:func:`compilescope.paths.check_output`)."""
    from .paths import check_output

    check_output(path, what)


SETTINGS = ("dynamic_sources", "recompile_limit", "automatic_dynamic_shapes", "assume_static_by_default",
            "capture_dynamic_output_shape_ops", "capture_scalar_outputs", "force_parameter_static_shapes")  # and inductor.NAME (compat.patch_settings)


# what each of SETTINGS takes (inductor.NAME: what its default is, checked where torch is imported)
SETTING_TYPES: dict[str, type] = {"dynamic_sources": str, "recompile_limit": int, "automatic_dynamic_shapes": bool,
                                  "assume_static_by_default": bool, "capture_dynamic_output_shape_ops": bool,
                                  "capture_scalar_outputs": bool, "force_parameter_static_shapes": bool}


def parse_settings(items: tuple[str, ...] | list[str]) -> dict[str, object]:
    """``NAME=VALUE`` items (``probe --config``): VALUE as JSON when it parses, else text;
    each of :data:`SETTINGS` checked for the kind of value it takes. Imports no torch."""
    import json

    known = SETTINGS
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
        want, got = SETTING_TYPES.get(name), out[name]
        if want is bool and not isinstance(got, bool):
            raise OptionError(f"--config {name}={value}: true or false")
        if want is int and (not isinstance(got, int) or isinstance(got, bool) or got < 1):
            raise OptionError(f"--config {name}={value}: a whole number, 1 or more")
        if want is str and not isinstance(got, str):
            out[name] = value  # a source list is text, whatever JSON it also reads as
    if "dynamic_sources" in out:
        parse_dynamic_sources(str(out["dynamic_sources"]))
    return out


def parse_probe_settings(items: tuple[str, ...] | list[str]) -> dict[str, object]:
    """``probe --config`` items parsed and applied once here (then undone), so that a name or
    value this torch refuses is one line before the script starts (``probe`` itself does it in
    a forked process: its own imports no torch before the script does)."""
    parsed = parse_settings(items)
    apply_probe_settings(parsed)
    return parsed


def apply_probe_settings(parsed: dict[str, object]) -> None:
    """Apply ``parsed`` (then undo it); what this torch refuses raises one :class:`OptionError`."""
    from . import compat

    try:
        compat.patch_settings(parsed)()
    except KeyError as exc:
        raise OptionError(f"unknown --config {exc.args[0]!r} for torch {compat.torch_version()}") from None
    except compat.Unavailable as exc:
        raise OptionError(f"--config {exc}") from None
    except (TypeError, ValueError, AssertionError) as exc:
        raise OptionError(f"--config refused by torch {compat.torch_version()}: {exc}") from None


def parse_objective(text: str) -> str:
    """``total``, ``p99`` or ``steady``."""
    if text not in OBJECTIVES:
        raise OptionError(f"unknown --objective {text!r} (use {', '.join(OBJECTIVES)})")
    return text


def parse_threshold(text: str) -> float:
    """``--fail-on-regression``: ``5%`` or ``0.05`` → 0.05."""
    t = text.strip()
    try:
        value = float(t[:-1]) / 100 if t.endswith("%") else float(t)
    except ValueError:
        raise OptionError(f"malformed --fail-on-regression {text!r}: use a percentage such as 5%") from None
    if not math.isfinite(value):
        raise OptionError(f"--fail-on-regression {text!r} is not a finite number")
    if value < 0:
        raise OptionError(f"--fail-on-regression {text!r} is negative")
    return value


WHERE_COLUMNS = ("workload", "strategy", "label", "cache", "backend", "status", "torch", "host", "device", "sweep")


def check_where_column(column: str) -> str:
    if column not in WHERE_COLUMNS:
        raise OptionError(f"unknown --where column {column!r} (use {', '.join(WHERE_COLUMNS)})")
    return column


def parse_where(items: Iterable[str]) -> list[tuple[str, str]]:
    """``--where workload=minilm`` (repeatable, or comma-separated) → [(column, value)], each
    column one of the results store's (:data:`WHERE_COLUMNS`)."""
    out = []
    for item in items:
        for part in item.split(","):
            column, sep, value = part.partition("=")
            if not sep or not column.strip():
                raise OptionError(f"malformed --where {part!r}: use COLUMN=VALUE ({', '.join(WHERE_COLUMNS)})")
            out.append((check_where_column(column.strip()), value.strip()))
    return out


# ----------------------------------------------------------------------------- --strategies

def parse_strategies(text: str, options: StrategyOptions) -> tuple[str, ...]:
    """``eager,default`` or ``all``: registered names, each given the options it needs
    (``Strategy.validate``), and no option given that none of them reads (``Strategy.takes``)."""
    from .strategies import get_strategy, strategy_names

    if text.strip() == "all":
        text = ",".join(strategy_names())
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    if not names:
        raise OptionError("no strategy given")
    for name in names:
        strategy = get_strategy(name)
        if strategy.validate is not None:
            strategy.validate(options)
    for option, flag in (("marks", "--mark"), ("dynamic_sources", "--dynamic-sources")):
        takers = [n for n in strategy_names() if option in get_strategy(n).takes]
        if getattr(options, option) and not any(n in takers for n in names):
            raise OptionError(f"{flag} only applies to the {' and '.join(takers)} "
                              f"{'strategy' if len(takers) == 1 else 'strategies'}")
    return names


# ----------------------------------------------------------------------------- the sweep file

SWEEP_SETTING_KEYS = {"backend": str, "mode": str, "recompile_limit": int, "threads": int, "stream": str,
                      "python": str}
SWEEP_MEASURE_KEYS = {"warmup": int, "samples": int, "budget": float, "device": str}
SWEEP_TOP_KEYS = {"name", "workloads", "strategies", "cache", "settings", "streams", "measure", "timeout"}


@dataclass(frozen=True)
class SweepConfig:
    """A sweep file, checked (:func:`load_sweep`): the matrix :mod:`compilescope.sweep` runs."""

    name: str
    workloads: tuple[str, ...]
    strategies: tuple[str, ...]
    cache: tuple[str, ...]
    settings: tuple[dict[str, Any], ...]  # each combination
    streams: dict[str, str] = field(default_factory=dict)
    measure: MeasureOptions = MeasureOptions()
    timeout_s: float = 900.0


def _sweep_list(value: Any, where: str, kind: type) -> list[Any]:
    items = value if isinstance(value, list) else [value]
    for item in items:
        if kind is float and isinstance(item, int) and not isinstance(item, bool):
            continue
        if not isinstance(item, kind) or isinstance(item, bool):
            raise OptionError(f"{where}: expected {kind.__name__} values, got {item!r}")
    if not items:
        raise OptionError(f"{where} is empty")
    return items


def _sweep_table(path: Path) -> dict[str, Any]:
    import tomllib

    from .paths import read_capped

    if not path.exists() and not path.is_symlink():
        raise OptionError(f"sweep file {str(path)!r} does not exist")
    try:
        return tomllib.loads(read_capped(path, f"sweep file {str(path)!r}", OptionError).decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise OptionError(f"cannot read sweep file {str(path)!r}: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise OptionError(f"{path}: not valid TOML: {exc}") from None


def _sweep_measure(p: Path, data: Any) -> MeasureOptions:
    if not isinstance(data, dict):
        raise OptionError(f"{p}: [measure] must be a table")
    measure = MeasureOptions()
    for key, value in data.items():
        if key not in SWEEP_MEASURE_KEYS:
            raise OptionError(f"{p}: unknown measure key {key!r} (use {', '.join(SWEEP_MEASURE_KEYS)})")
        (v,) = _sweep_list(value, f"measure.{key}", SWEEP_MEASURE_KEYS[key])
        measure = dataclasses.replace(measure, **{"budget_s" if key == "budget" else key: v})
    try:
        check_measure(measure)
    except OptionError as exc:
        raise OptionError(f"{p}: [measure] {exc}") from None
    return measure


def check_measure(measure: MeasureOptions) -> None:
    """What a trial measures is a count, a number of seconds or a thread count it can take:
    one line otherwise (``samples = -1`` printed no figure; an ``inf`` budget wrote results
    no loader reads)."""
    for name, low in (("warmup", 0), ("samples", 1), ("min_samples", 1)):
        value = getattr(measure, name)
        if value < low:
            raise OptionError(f"{name} {value} is below {low}")
    if not math.isfinite(measure.budget_s) or measure.budget_s < 0:
        raise OptionError(f"budget {measure.budget_s} is not a finite number of seconds, 0 or more")
    if measure.threads is not None and not 0 <= measure.threads <= 4096:
        raise OptionError(f"threads {measure.threads} is not from 0 to 4096")


def load_sweep(path: str | Path) -> SweepConfig:
    """Read and check a sweep file (format: :mod:`compilescope.sweep`); every problem is one
    line naming the key."""
    import itertools

    p = Path(path)
    data = _sweep_table(p)
    unknown = sorted(set(data) - SWEEP_TOP_KEYS)
    if unknown:
        raise OptionError(f"{p}: unknown key {unknown[0]!r} (use {', '.join(sorted(SWEEP_TOP_KEYS))})")
    if "workloads" not in data:
        raise OptionError(f"{p}: no workloads = [...]")
    workloads = _sweep_list(data["workloads"], "workloads", str)
    strategies = _sweep_list(data.get("strategies", list(DEFAULT_STRATEGIES)), "strategies", str)
    cache = _sweep_list(data.get("cache", ["cold"]), "cache", str)
    settings = data.get("settings", {})
    if not isinstance(settings, dict):
        raise OptionError(f"{p}: [settings] must be a table")
    axes = []
    for key, value in settings.items():
        if key not in SWEEP_SETTING_KEYS:
            raise OptionError(f"{p}: unknown setting {key!r} (use {', '.join(SWEEP_SETTING_KEYS)})")
        axes.append([(key, v) for v in _sweep_list(value, f"settings.{key}", SWEEP_SETTING_KEYS[key])])
    combos = tuple(dict(c) for c in itertools.product(*axes)) if axes else ({},)
    streams = data.get("streams", {})
    if not isinstance(streams, dict) or not all(isinstance(v, str) for v in streams.values()):
        raise OptionError(f"{p}: [streams] maps a workload to a stream string")
    measure = _sweep_measure(p, data.get("measure", {}))
    timeout = data.get("timeout", 900.0)
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or not 0 < timeout < math.inf:
        raise OptionError(f"{p}: timeout must be a positive number of seconds")
    name = data.get("name", p.stem)
    if not isinstance(name, str) or not name:
        raise OptionError(f"{p}: name must be a non-empty string")
    return SweepConfig(name, tuple(workloads), tuple(strategies), tuple(cache), combos, dict(streams), measure,
                       float(timeout))
