"""The versioned results files: a run's or a probe's records as JSON data, and back.

Schema history (``schema_version``):
  1 — first release: run → trials → raw calls, compile events with parsed guard failures,
      graph breaks, interleaved steady-state samples and numerics checks. Probe JSON had no
      loader.
  2 — one record family: ``CompileRecord`` (typed compile id ``"0/1"`` plus its reset
      ``epoch``, outcome compiled/failed/refused, backward compile time attached,
      the compiled target's name) and ``GraphBreak`` for runs, probes and traces; calls
      carry the compiled graphs they ran; ``kind`` is ``"run"`` or ``"probe"``; trial
      specs carry a ``variant``; a run file may hold a derived ``summary`` (ignored on load).
      Added within 2, optional (older files load unchanged): a call's ``error_info`` (the
      whole exception: type, message, op line, user frame) beside its one-line ``error``;
      trial status ``partial`` (some requests raised; ``failed`` when all did).
      Added since, each optional (files without it load as before): a run made by ``advise``
      holds ``advice`` (the objective, every proposal with its options, code and target, the
      unmeasured code fixes) and the derived ``advice_summary`` (each proposal's verdict, score
      and why, the recommendation; ignored on load, re-derived by ``report``).
      A trial's ``env`` is a typed record (``TrialEnv``: threads and the recompile limit as
      integers, how its process started, ``variables``: the torch-affecting environment it
      inherited); the string dict of older files is migrated on load (``migrate_trial_env``).
      A trial spec's ``startup`` shapes, called before the stream as a service warms up, and a
      trial's ``startup`` calls (their compiles have phase ``startup``).
      A compile record's ``entry_guards`` (``EntryGuard``: the new cache entry's guards on the
      frame's inputs — each input tensor's static and dynamic dims, the symbolic-shape
      expressions, scalar values) and ``entry_guards_cut`` (how many were past the bounds).
      A steady state's ``changed_inputs`` (the call changes its inputs, these paths; each
      sample was given inputs made afresh).
  3 — the third cost, the guards: a trial's ``guard_costs`` (per distinct shape, each compiled
      frame a request enters, its cache entries' guard checks timed on the shape's inputs, the
      passing entry's guards grouped by source with each group timed alone), ``soundness``
      (a guard filter's dropped guards changed in the trial: stale or not) and
      ``dropped_guards`` (their kinds, counted); a compile record's ``guard_count`` and
      ``guard_latency_s`` (PyTorch's own count, and its one evaluation at compile time); the
      measure option ``guards``. A schema-2 file has none of them: it loads with them empty
      (no guard cost measured), which is what it recorded.
  4 — a compile record's ``automatic_dynamic``: whether Dynamo's settings at that compile made a
      dim dynamic once its size had changed (PyTorch's automatic dynamic shapes), the evidence
      probe reads a mark-dynamic fix from. A schema-3 file has none: it loads as not known.
  5 — a compile record's ``entries_before`` (the frame's cache entries for the same ID_MATCH'd
      objects when it compiled — PyTorch's ``cache_size`` — which makes it a recompile or not, as
      PyTorch counts), and for a failed compile ``fail_at`` (the user code being traced when it
      failed) and ``reached_call`` (its error raised into the call, or Dynamo ran the frame
      eagerly; recorded by ``watch``, which sees the compile as it ends — None elsewhere); a
      compiled target's ``packed`` (the names its entry frame gives ``*args``/``**kwargs``). A
      schema-4 file has none: they load as not known, and a recompile is read from the compile
      id as that file counted it.
  6 — a probe's ``settings``: the ``probe --config`` items the program ran under
      (``NAME=VALUE``, VALUE as JSON), and ``forked_unobserved``: how many processes the
      program forked compiled or called a compiled function (their records are not the
      program's). A schema-5 probe file has neither recorded.

Every file compilescope writes carries :data:`~compilescope.model.SCHEMA_VERSION`: results
and probe JSON (``schema_version``), run journals (``{"journal": N}``), probe journals
(``{"probe": N}``) and each results-store row (column ``schema_version``). Every JSON document
a command writes names its ``kind`` beside the version, and each kind loads back here
(:func:`load_document`, :func:`loads_document`) through the same migrations and field checks:
``run`` (an advise run is one, with its ``advice``), ``probe``, ``advise-script``,
``forecast``, ``warmup`` (with its plan), ``warmup-plan`` (the plan file), ``verify`` and
``compare`` (:func:`document_types`).

An older file is migrated on load, not refused: :data:`MIGRATIONS` maps each version N to the
step turning a version-N document into version N+1, and :func:`migrate` runs the steps in
turn. A step takes and returns a results document (``{"schema_version", "kind", "trials",
…}``); records kept one trial at a time (journal lines, store rows) go through the same steps
by :func:`migrate_trial`. A new version is one :func:`migration` function here and the number
bumped in :mod:`compilescope.model`. A version newer than this compilescope, or one with no
step, is refused with the way out. The loader then checks every field's type: a file that
does not match gives one :class:`ResultsError` naming the field.
"""

from __future__ import annotations

import dataclasses
import json
import math
import types
import typing
from functools import cache
from pathlib import Path
from collections.abc import Callable, Sequence
from typing import Any, Union, get_args, get_origin

from .errors import ResultsError
from .model import SCHEMA_VERSION, CompileId, ProbeResult, RunResult, TrialEnv, TrialResult

KINDS: dict[str, type] = {"run": RunResult, "probe": ProbeResult}
MAX_DEPTH = 64


def to_data(obj: Any) -> Any:
    """Dataclasses → dicts (field order kept), tuples → lists, compile ids → ``"0/1"``."""
    if isinstance(obj, CompileId):
        return str(obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_data(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, (list, tuple)):
        return [to_data(v) for v in obj]
    if isinstance(obj, dict):
        return {str(k): to_data(v) for k, v in obj.items()}
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _fail(path: str, want: str, data: Any) -> ResultsError:
    return ResultsError(f"field {path or '<root>'}: expected {want}, got {type(data).__name__}")


class _Bad(Exception):
    """A value that does not match; carries the path segments collected while unwinding
    (built only on failure, so a file that matches pays nothing for error messages)."""

    def __init__(self, message: Callable[[str], str]) -> None:
        self.message = message
        self.segments: list[str] = []

    def error(self, prefix: str = "") -> ResultsError:
        path = (prefix + "".join(reversed(self.segments))).lstrip(".")
        return ResultsError(self.message(path))


def _expected(want: str) -> Callable[[Any], _Bad]:
    return lambda data: _Bad(lambda path: f"field {path or '<root>'}: expected {want}, got {type(data).__name__}")


Converter = Callable[[Any], Any]


def _identity(data: Any) -> Any:
    return data


@cache
def _converter(tp: Any) -> Converter:
    """A function rebuilding a value of type ``tp`` from JSON data, built once per type: the
    type dispatch happens here, not once per value (a 50 MB file holds millions of values)."""
    if tp is Any:
        return _identity
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        args = get_args(tp)
        optional = type(None) in args
        non_none = [a for a in args if a is not type(None)]
        if len(non_none) == 1:
            inner = _converter(non_none[0])
            if not optional:
                return inner
            return lambda data: None if data is None else inner(data)
        scalar = _expected("a scalar")

        def union(data: Any) -> Any:
            if data is None and optional:
                return None
            if isinstance(data, (int, float, str, bool)):
                return data  # a union of scalars: JSON already holds the right value
            raise scalar(data)
        return union
    if tp is CompileId:
        parse = CompileId.parse

        def compile_id(data: Any) -> CompileId:
            cid = parse(data)
            if cid is None:
                raise _Bad(lambda path: f"field {path}: expected a compile id like \"0/1\", got {str(data)[:40]!r}")
            return cid
        return compile_id
    if tp is TrialEnv:
        return _trial_env_converter()
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if tp in _BUILDING:  # a record that holds its own kind (a forecast compared with another)
            return lambda data: _converter(tp)(data)
        _BUILDING.add(tp)
        try:
            return _dataclass_converter(tp)
        finally:
            _BUILDING.discard(tp)
    if origin is tuple and len(get_args(tp)) > 1 and get_args(tp)[1] is not Ellipsis:
        return _fixed_tuple_converter(get_args(tp))
    if origin is tuple or origin is list:
        (item_tp, *_rest) = get_args(tp)
        item = _converter(item_tp)
        not_list = _expected("a list")
        as_tuple = origin is tuple

        def sequence(data: Any) -> Any:
            if not isinstance(data, list):
                raise not_list(data)
            if item is _identity:
                items = list(data)
            else:
                items = []
                append = items.append
                try:
                    for v in data:
                        append(item(v))
                except _Bad as bad:
                    bad.segments.append(f"[{len(items)}]")
                    raise
            return tuple(items) if as_tuple else items
        return sequence
    if origin is dict:
        _, value_tp = get_args(tp)
        value = _converter(value_tp)
        not_object = _expected("an object")

        def mapping(data: Any) -> Any:
            if not isinstance(data, dict):
                raise not_object(data)
            out = {}
            k: Any = None
            try:
                for k, v in data.items():
                    out[str(k)] = value(v)
            except _Bad as bad:
                bad.segments.append(f"[{k!r}]")
                raise
            return out
        return mapping
    if origin is typing.Literal:
        allowed = get_args(tp)
        allowed_set = frozenset(a for a in allowed if a.__hash__ is not None)

        def literal(data: Any) -> Any:
            try:
                ok = data in allowed_set
            except TypeError:  # an unhashable value: a list or an object
                ok = False
            if not ok:
                raise _Bad(lambda path: f"field {path}: {str(data)[:40]!r} is not one of {', '.join(map(str, allowed))}")
            return data
        return literal
    if tp is float:
        number = _expected("a number")

        def as_float(data: Any) -> float:
            if data.__class__ is float:
                return data  # type: ignore[no-any-return]
            if isinstance(data, bool) or not isinstance(data, (int, float)):
                raise number(data)
            return float(data)
        return as_float
    if tp is int:
        integer = _expected("an integer")

        def as_int(data: Any) -> int:
            if data.__class__ is not int and (isinstance(data, bool) or not isinstance(data, int)):
                raise integer(data)
            return data  # type: ignore[no-any-return]
        return as_int
    if tp is bool:
        boolean = _expected("true or false")

        def as_bool(data: Any) -> bool:
            if not isinstance(data, bool):
                raise boolean(data)
            return data
        return as_bool
    if tp is str:
        string = _expected("a string")

        def as_str(data: Any) -> str:
            if not isinstance(data, str):
                raise string(data)
            return data
        return as_str
    return _identity


_BUILDING: set[type] = set()  # the records whose converters are being built (for records that hold their own kind)


def _fixed_tuple_converter(item_types: tuple[Any, ...]) -> Converter:
    """``tuple[A, B, C]``: a list of exactly that many values, each of its own type."""
    items = [_converter(item) for item in item_types]
    not_list = _expected(f"a list of {len(items)}")

    def fixed(data: Any) -> Any:
        if not isinstance(data, list) or len(data) != len(items):
            raise not_list(data)
        out = []
        for i, (convert, value) in enumerate(zip(items, data)):
            try:
                out.append(convert(value))
            except _Bad as bad:
                bad.segments.append(f"[{i}]")
                raise
        return tuple(out)
    return fixed


def _dataclass_converter(tp: type) -> Converter:
    hints = _hints(tp)
    fields: list[tuple[str, Converter]] = []
    required: list[str] = []
    for f in dataclasses.fields(tp):
        fields.append((f.name, _converter(hints[f.name])))
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            required.append(f.name)
    not_object = _expected(f"an object ({tp.__name__})")

    def dataclass(data: Any) -> Any:
        if data.__class__ is tp:
            return data  # rebuilt already (never the case for data parsed from JSON)
        if not isinstance(data, dict):
            raise not_object(data)
        kwargs = {}
        name = ""
        try:
            for name, convert in fields:
                if name in data:
                    kwargs[name] = convert(data[name])
        except _Bad as bad:
            bad.segments.append(f".{name}")
            raise
        for name in required:
            if name not in kwargs:
                missing = name
                raise _Bad(lambda path: f"field {path}.{missing}: missing".replace(" .", " "))
        try:
            return tp(**kwargs)
        except (TypeError, ValueError) as exc:
            message = str(exc)
            raise _Bad(lambda path: f"field {path or tp.__name__}: {message}") from None
    return dataclass


# ----------------------------------------------------------------- migration: a trial's env
# Files written before :class:`TrialEnv` hold a trial's ``env`` as a dict of strings
# (``{"torch": "2.13.0", "threads": "1", "recompile_limit_default": "8", "pid": "123", …}``,
# no ``variables``: the inherited environment was not recorded). Read as a TrialEnv, with no
# variables; what does not parse is left unknown.


def migrate_trial_env(env: dict[str, Any]) -> dict[str, Any]:
    """An older file's string dict ``env`` → :class:`TrialEnv` data (``variables`` empty)."""
    def number(key: str) -> int | None:
        value = env.get(key)
        return int(value) if isinstance(value, str) and value.strip().isdigit() else None

    text = {k: env[k] for k in ("torch", "python", "host", "platform", "device", "cache_dir")
            if isinstance(env.get(k), str)}
    return {**text, "threads": number("threads"), "recompile_limit_default": number("recompile_limit_default"),
            "pid": number("pid"), "variables": {}}


def _trial_env_converter() -> Converter:
    current = _dataclass_converter(TrialEnv)

    def trial_env(data: Any) -> Any:
        if isinstance(data, dict) and "variables" not in data:  # written before TrialEnv
            data = migrate_trial_env(data)
        return current(data)
    return trial_env


def from_data(tp: Any, data: Any, path: str = "", depth: int = 0) -> Any:
    """Rebuild a value of type ``tp`` (dataclass, tuple[X, ...], dict[str, X], X | None…),
    checking each value's type; raises :class:`ResultsError` naming the first bad field."""
    try:
        return _converter(tp)(data)
    except _Bad as bad:
        raise bad.error(path) from None


# ----------------------------------------------------------------------------- migrations

Document = dict[str, Any]
MIGRATIONS: dict[int, Callable[[Document], Document]] = {}


def migration(version: int) -> Callable[[Callable[[Document], Document]], Callable[[Document], Document]]:
    """Register the decorated function as the step from ``version`` to ``version + 1``."""

    def register(step: Callable[[Document], Document]) -> Callable[[Document], Document]:
        if version in MIGRATIONS:
            raise ValueError(f"schema {version} already has a migration step")
        MIGRATIONS[version] = step
        return step
    return register


def known_versions() -> frozenset[int]:
    """The versions this compilescope reads: the current one and every one a chain of steps
    leads from."""
    known = {SCHEMA_VERSION}
    version = SCHEMA_VERSION - 1
    while version in MIGRATIONS:
        known.add(version)
        version -= 1
    return frozenset(known)


def check_version(version: Any, origin: str) -> int:
    """``version`` as an int this compilescope reads (migrating if older), else one line."""
    if not isinstance(version, int) or isinstance(version, bool):
        raise ResultsError(f"{origin} is a malformed results file: schema_version is "
                           f"{type(version).__name__} {str(version)[:20]!r}, not an integer")
    if version not in known_versions():
        known = ", ".join(str(v) for v in sorted(known_versions()))
        hint = "upgrade compilescope" if version > SCHEMA_VERSION else "re-run to write the current schema"
        raise ResultsError(f"{origin} has schema_version {version}; this compilescope reads {known} — {hint}")
    return version


def migrate(data: Document, origin: str = "<data>") -> Document:
    """A results document of an older schema brought to :data:`SCHEMA_VERSION`, step by step
    (the current one is returned as it is)."""
    version = check_version(data.get("schema_version"), origin)
    while version < SCHEMA_VERSION:
        try:
            data = MIGRATIONS[version](dict(data))
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            raise ResultsError(f"{origin} (schema {version}) cannot be migrated: {type(exc).__name__} {exc}"[:300]) \
                from None
        version += 1
        data["schema_version"] = version
    return data


def migrate_trial(trial: Any, version: Any, origin: str = "<data>") -> Any:
    """One trial's data written at schema ``version`` (a journal line, a store row), brought to
    the current schema by the same steps as a whole file."""
    if version == SCHEMA_VERSION:
        return trial
    doc = migrate({"schema_version": version, "kind": "run", "workload": "", "stream": [], "trials": [trial]},
                  origin)
    return doc["trials"][0]


@migration(1)
def _one_record_family(data: Document) -> Document:
    """1 → 2: a run's ``CompileEvent`` list becomes :class:`~compilescope.model.CompileRecord`
    records. A backward event (``forward: false``) is folded into its forward's record as
    ``backward_compile_s``; the parsed guard failures (``reasons`` in 1) become
    ``guard_failures``, their entries ``rejected_by`` and the first failing guard's text per
    entry ``reasons``; the outcome is read from ``fail_type``/``fail_reason``; a compile id
    seen again (a reset came between) starts a new ``epoch``. Probe files of schema 1 had no
    loader and are not migrated."""
    if data.get("kind", "run") != "run":
        raise ValueError("only run files of schema 1 can be migrated")
    data["kind"] = "run"
    data["trials"] = [{**t, "compiles": _records_from_events(t.get("compiles") or [])} for t in data["trials"]]
    return data


def _records_from_events(events: list[Document]) -> list[Document]:
    from .compat import is_recompile_limit_failure

    records: list[Document] = []
    latest: dict[str, Document] = {}  # compile id → its record in the current epoch
    epoch = 0
    for event in events:
        event = dict(event)
        cid = str(event.pop("compile_id"))
        if not event.pop("forward", True):
            forward = latest.get(cid)
            if forward is not None:
                forward["backward_compile_s"] = (forward.get("backward_compile_s") or 0.0) + (
                    event.get("compile_time_s") or 0.0)
            continue
        if cid in latest:
            epoch += 1
            latest.clear()
        failures = list(event.pop("reasons", None) or [])
        first_text: dict[str, str] = {}
        for g in failures:
            first_text.setdefault(str(g.get("failed_entry")), str(g.get("reason", "")))
        fail_type, fail_reason = event.get("fail_type"), event.get("fail_reason")
        outcome = "refused" if is_recompile_limit_failure(fail_type, fail_reason) else (
            "failed" if fail_type else "compiled")
        record = {**event, "compile_id": cid, "outcome": outcome, "epoch": epoch, "guard_failures": failures,
                  "rejected_by": [e for e in first_text if e != "None"], "reasons": list(first_text.values())}
        latest[cid] = record
        records.append(record)
    return records


@migration(2)
def _guard_costs(data: Document) -> Document:
    """2 → 3: the guard-cost records are new and optional; a schema-2 run measured none, and
    loads with none (an empty ``guard_costs``, no soundness checks)."""
    if data.get("kind", "run") == "run":
        data["trials"] = [{**t, "guard_costs": t.get("guard_costs") or []} for t in data.get("trials") or []]
    return data


@migration(3)
def _automatic_dynamic(data: Document) -> Document:
    """3 → 4: a compile record's ``automatic_dynamic`` is new and optional; a schema-3 file did
    not record it, and loads with it not known (None)."""
    return data


@migration(5)
def _probe_settings(data: Document) -> Document:
    """5 → 6: a probe's ``settings`` (what ``probe --config`` applied) and
    ``forked_unobserved`` are new; a schema-5 probe file did not record them and loads with
    none."""
    return data


@migration(4)
def _frame_entries(data: Document) -> Document:
    """4 → 5: a compile record's ``entries_before``, ``fail_at`` and ``reached_call`` are new
    and optional; a schema-4 file did not record them, and loads with them not known (None)."""
    return data


def encode(result: RunResult | ProbeResult, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    data = to_data(dataclasses.replace(result, schema_version=SCHEMA_VERSION))
    if extra:
        data.update(extra)
    return typing.cast(dict[str, Any], data)


def dumps(result: RunResult | ProbeResult, extra: dict[str, Any] | None = None) -> str:
    return json.dumps(encode(result, extra), indent=1, allow_nan=False)


def decode(data: Any, *, origin: str = "<data>") -> RunResult | ProbeResult:
    return _decode(data, origin, owned=False)


def _decode(data: Any, origin: str, owned: bool) -> RunResult | ProbeResult:
    """``owned``: ``data`` was parsed for this call alone, so each trial's JSON is dropped as
    soon as it is rebuilt (the peak holds one copy of the records, not two)."""
    if not isinstance(data, dict) or "schema_version" not in data:
        raise ResultsError(f"{origin} is not a compilescope results file (no schema_version)")
    version = check_version(data["schema_version"], origin)
    if version != SCHEMA_VERSION:
        data = migrate(data, origin)
    kind = data.get("kind", "run")
    if isinstance(kind, str) and kind not in KINDS and kind in document_types():
        raise ResultsError(f"{origin} is a {kind} file, not a run's or a probe's results")
    if not isinstance(kind, str) or kind not in KINDS:
        raise ResultsError(f"{origin} has an unknown kind {str(kind)[:20]!r} (run or probe)")
    if kind == "run" and "trials" not in data:
        raise ResultsError(f"{origin} is a run's results without its trials (no \"trials\" list)")
    if kind == "probe" and "graph_break_occurrences" in data:
        data = {**data, "graph_breaks": data["graph_break_occurrences"]}
    try:
        if owned and kind == "run" and isinstance(data.get("trials"), list):
            data["trials"] = _take_trials(data["trials"])
        return typing.cast("RunResult | ProbeResult", from_data(KINDS[kind], data))
    except ResultsError as exc:
        raise ResultsError(f"{origin} does not match schema {version}: {exc}") from None
    except RecursionError:
        raise ResultsError(f"{origin} is nested too deeply") from None


def document_types() -> dict[str, type]:
    """Every kind of JSON document compilescope writes, by its ``kind``, and the record it holds."""
    from .model import PLAN_KIND, WarmupPlan
    from .report import CompareReport, ForecastReport, ScriptAdvice, VerifyReport
    from .report.warmup import WarmupReport

    return {**KINDS, "advise-script": ScriptAdvice, "forecast": ForecastReport, "warmup": WarmupReport,
            PLAN_KIND: WarmupPlan, "verify": VerifyReport, "compare": CompareReport}


def document(obj: Any, kind: str) -> dict[str, Any]:
    """``obj`` (a record of ``kind``) as a document: the schema version, the kind, its fields."""
    data = to_data(obj)
    return {"schema_version": SCHEMA_VERSION, "kind": kind, **{k: v for k, v in data.items() if k != "schema_version"}}


def decode_document(data: Any, *, kinds: Sequence[str] | None = None, origin: str = "<data>") -> Any:
    """The record a document holds (:func:`document_types`), migrated from an older schema
    and checked field by field; ``kinds``: the kinds the caller reads (another is one line)."""
    if not isinstance(data, dict) or "schema_version" not in data:
        raise ResultsError(f"{origin} is not a compilescope file (no schema_version)")
    types = document_types()
    kind = data.get("kind", "run")
    if not isinstance(kind, str) or kind not in types:
        raise ResultsError(f"{origin} has an unknown kind {str(kind)[:20]!r} ({', '.join(types)})")
    if kinds is not None and kind not in kinds:
        raise ResultsError(f"{origin} is a {kind} file, not {' or '.join(kinds)}")
    if kind in KINDS:
        return _decode(data, origin, owned=False)
    version = check_version(data["schema_version"], origin)
    if version != SCHEMA_VERSION:
        data = migrate(data, origin)
    try:
        return from_data(types[kind], {**data, "schema_version": SCHEMA_VERSION})
    except ResultsError as exc:
        raise ResultsError(f"{origin} does not match schema {version}: {exc}") from None
    except RecursionError:
        raise ResultsError(f"{origin} is nested too deeply") from None


def loads_document(text: str | bytes, *, kinds: Sequence[str] | None = None, origin: str = "<string>") -> Any:
    return decode_document(_parse(text, origin), kinds=kinds, origin=origin)


def load_document(path: str | Path, *, kinds: Sequence[str] | None = None) -> Any:
    """Read any document compilescope writes (a regular file of bounded size, as :func:`load`)."""
    from .paths import read_capped

    return loads_document(read_capped(path, str(path), ResultsError), kinds=kinds, origin=str(path))


def _take_trials(items: list[Any]) -> list[Any]:
    """Rebuild each trial, dropping its JSON as it goes; the rebuilt trials pass through the
    run's own conversion unchanged."""
    convert = _converter(TrialResult)
    out = []
    for i in range(len(items)):
        try:
            out.append(convert(items[i]))
        except _Bad as bad:
            raise bad.error(f"trials[{i}]") from None
        items[i] = None
    return out


def _parse(text: str | bytes, origin: str) -> Any:
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise ResultsError(f"{origin} is not a text file (not UTF-8)") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ResultsError(f"{origin} is not JSON: {exc.msg} (line {exc.lineno})") from None
    except RecursionError:
        raise ResultsError(f"{origin} is nested too deeply") from None
    except ValueError as exc:  # e.g. an integer too long to convert
        raise ResultsError(f"{origin} is not readable JSON: {str(exc)[:80]}") from None


def loads(text: str | bytes, *, origin: str = "<string>") -> RunResult | ProbeResult:
    return _decode(_parse(text, origin), origin, owned=True)


def _not_a_run_yet(path: Path) -> None:
    """A run's journal, or the results file of a run still going or interrupted (only its
    journal is written): one line naming the journal and how to finish the run."""
    from .paths import JOURNAL_SUFFIX, journal_path

    if path.name.endswith(".json" + JOURNAL_SUFFIX):
        results = path.with_name(path.name.removesuffix(JOURNAL_SUFFIX))
        raise ResultsError(f"{path} is a run's journal, not a results file: compilescope run --resume {results} "
                           "finishes its run and writes the results file")
    if not path.exists() and journal_path(path).exists():
        raise ResultsError(f"{path} is not written yet: {journal_path(path)} holds the trials of a run still going "
                           f"or interrupted (compilescope run --resume {path} finishes an interrupted one)")


def load(path: str | Path) -> RunResult | ProbeResult:
    """Read a results file written by ``run``, ``demo`` or ``probe``: a regular file of at
    most ``COMPILESCOPE_MAX_READ_MB`` (a device, a FIFO or a larger file is refused unread)."""
    from .paths import read_capped

    _not_a_run_yet(Path(path))
    holder = [read_capped(path, str(path), ResultsError)]
    origin = str(path)
    data = _parse(holder.pop(), origin)  # the raw bytes are freed once parsed
    return _decode(data, origin, owned=True)
