"""JSON: the versioned results file — the raw records (each request's error kept whole
under ``error_info``), plus the derived ``summary`` (per trial: status, counts, eager and
partial eager fallbacks, request errors grouped with their counts under ``errors``, per-shape
counts under ``shapes``, verdict) taken from the report model, and for an advise run the
``advice_summary`` (each proposal's verdict, the recommendation), for readers that want the
conclusions without re-deriving them. The loader ignores both."""

from __future__ import annotations

from ..model import ProbeResult, RunResult
from ..report import ProbeReport, RunReport
from ..schema import dumps


def render(result: RunResult, report: RunReport | None = None, *, summary: bool = True) -> str:
    """``summary=False`` writes the records alone (used when analysis itself failed)."""
    from ..analysis.build import build_run_report, run_summary

    if not summary:
        return dumps(result)
    report = report or build_run_report(result)
    extra: dict[str, object] = {"summary": run_summary(report)}
    if result.advice is not None:  # an advise run: its judgement, derived like the summary
        from ..analysis.advise_record import advice_summary, rejudge

        advice = rejudge(result, report)
        assert advice is not None
        extra["advice_summary"] = advice_summary(advice)
    return dumps(result, extra)


def render_probe(result: ProbeResult, report: ProbeReport | None = None) -> str:
    """The probe JSON: the records (``compiles`` with ``compile_id``, ``function``, ``filename``,
    ``line``, ``reasons`` in PyTorch's words, ``rejected_by``, ``compile_time_s``…), and
    ``graph_breaks`` deduplicated with counts (every occurrence under
    ``graph_break_occurrences``, which the loader reads back)."""
    import json

    from ..schema import encode, to_data

    from ..analysis.build import build_probe_report

    report = report or build_probe_report(result)
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
    return json.dumps(data, indent=1, allow_nan=False)
