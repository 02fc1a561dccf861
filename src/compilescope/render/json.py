"""JSON: the versioned results file — the raw records (each request's error kept whole
under ``error_info``), plus the derived ``summary`` (per trial: status, counts, eager and
partial eager fallbacks, request errors grouped with their counts under ``errors``, per-shape
counts under ``shapes``, verdict) taken from the report model, and for an advise run the
``advice_summary`` (each proposal's verdict, the recommendation), for readers that want the
conclusions without re-deriving them. The loader ignores both.

Every document here is strict JSON (no NaN or infinity) and ends with a newline (:func:`write`)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from ..model import ProbeResult
from ..report import CompareReport, ForecastReport, ProbeFile, ProbeReport, RunFile, ScriptAdvice, VerifyReport
from ..report.warmup import WarmupReport
from ..schema import SCHEMA_VERSION, document, dumps, encode, to_data
from . import ByKind


def write(data: Any, indent: int | None = 1, default: Any = None) -> str:
    """The one way a JSON document is written: strict JSON (a NaN or an infinity is an error,
    not a token other readers refuse) ending with a newline."""
    return json.dumps(data, indent=indent, allow_nan=False, default=default) + "\n"


def render(file: RunFile) -> str:
    """The results file of a run: the records, and beside them what analysis derived (none
    when ``file.report`` is None: analysis failed, the records are written alone)."""
    if file.report is None or file.summary is None:
        return dumps(file.result) + "\n"
    extra: dict[str, Any] = {"summary": file.summary}
    if file.advice_summary is not None:  # an advise run: its judgement, derived like the summary
        extra["advice_summary"] = file.advice_summary
    return dumps(file.result, extra) + "\n"


def render_probe(result: ProbeResult, report: ProbeReport) -> str:
    """The probe JSON: the records (``compiles`` with ``compile_id``, ``function``, ``filename``,
    ``line``, ``reasons`` in PyTorch's words, ``rejected_by``, ``compile_time_s``…), and
    ``graph_breaks`` deduplicated with counts (every occurrence under
    ``graph_break_occurrences``, which the loader reads back)."""
    data = encode(result)
    data["graph_break_occurrences"] = data.pop("graph_breaks")
    data["graph_breaks"] = [to_data(b) for b in report.graph_breaks]
    data["summary"] = {
        "compiles": report.compiles, "frames": report.frames, "compile_s": report.compile_s,
        "functions": [{"name": f.name, "location": f.location, "compiles": f.compiles,
                       "recompiles": f.recompiles, "refused": f.refused,
                       "guards": [to_data(g) for g in f.guards], "guards_unevaluated": dict(f.unevaluated)}
                      for f in report.functions],
    }
    return write(data)


LONG_JSON = 10_000  # requests: a longer forecast is written without indentation


def _fields(obj: Any) -> Any:
    """A dataclass as the dict of its fields, one level at a time (the encoder descends)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    raise TypeError(f"{type(obj).__name__} is not JSON serializable")


def render_forecast(report: ForecastReport) -> str:
    """A forecast as JSON: ``kind`` ``forecast`` and the schema version, then the report's fields.
    Each record is turned into a dict as the encoder reaches it (no deep copy of a million
    requests first), and a stream of more than :data:`LONG_JSON` requests is written compactly."""
    data = {"schema_version": SCHEMA_VERSION, "kind": "forecast", **_fields(report)}
    indent = 1 if report.stream_length <= LONG_JSON else None
    return write(data, indent, default=_fields)


def render_warmup(report: WarmupReport) -> str:
    """A warm-up report as JSON: ``kind`` ``warmup`` and the schema version, then the report's
    fields (``plan`` is the plan file's content, its own ``kind`` ``warmup-plan``)."""
    return write({"schema_version": SCHEMA_VERSION, "kind": "warmup", **dataclasses.asdict(report)})


def render_verify(report: VerifyReport) -> str:
    """A verification as JSON: the schema version, then the report's fields (``kind`` ``verify``)."""
    return write({"schema_version": SCHEMA_VERSION, **dataclasses.asdict(report)})


def render_compare(report: CompareReport) -> str:
    """A comparison as JSON: the schema version, ``kind`` ``compare``, then the report's fields."""
    return write(document(report, "compare"))


def render_script_advice(advice: ScriptAdvice) -> str:
    """``advise --script``'s results: the schema version, ``kind`` ``advise-script``, then the advice."""
    return write({"schema_version": SCHEMA_VERSION, "kind": "advise-script", **to_data(advice)})


def _probe(file: ProbeFile) -> str:
    return render_probe(file.result, file.report)


# the results JSON of a run or a probe (what ``compilescope report`` reads back), and each other report's JSON
RENDERER = ByKind("json", (".json",), "results JSON", {
    RunFile: render, ProbeFile: _probe, ForecastReport: render_forecast, WarmupReport: render_warmup,
    VerifyReport: render_verify, CompareReport: render_compare}, help=".json (results)")
