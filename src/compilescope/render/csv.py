"""CSV: one row per (trial, distinct shape), with the trial's summary figures repeated
(``error_calls``: the shape's requests that raised; ``trial_request_errors``: the trial's).
Formats the report model only. Cells that a spreadsheet would run as a formula (leading
``=``, ``+``, ``-``, ``@``) are prefixed with ``'``."""

from __future__ import annotations

import csv
import io

from ..report import RunFile, RunReport

COLUMNS = (
    "workload", "strategy", "cache", "status", "shape", "requests", "first_call_s", "how_it_ran", "cause",
    "fallback_calls", "steady_median_s", "steady_iqr_s", "steady_n", "eager_median_s", "eager_iqr_s",
    "speedup", "speed_class", "eager_trial_median_s", "max_abs_err", "max_rel_err", "numerics_pass",
    "numerics_ran_eagerly", "trial_compiles", "trial_recompiles", "trial_refused", "trial_compile_s",
    "trial_eager_fallbacks", "trial_stream_s", "eager_stream_s", "break_even_request",
    "error_calls", "partial_fallback_calls", "trial_request_errors", "trial_partial_fallbacks",
    "guard_entries", "guard_lookup_s", "guard_lookup_iqr_s", "guard_share", "guards",
    "trial_guard_stream_lookup_s", "trial_guard_repeated_lookup_s",
)


def _cell(value: object) -> object:
    if value is None:
        return ""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


def render(report: RunReport) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(COLUMNS)
    for t in report.trials:
        head = [report.workload, t.strategy, t.cache, t.status]
        tail = [t.stream.compiles, t.stream.recompiles, t.stream.refused, t.stream.compile_s, t.fallbacks,
                t.stream_s, t.eager_stream_s, t.break_even_request]
        counts = [t.call_errors, t.partial_fallbacks]
        g = t.guards
        guard_rows = {r.shape: r for r in g.rows} if g is not None else {}
        trial_guards = [g.stream_s if g else None, g.repeated_s if g else None]
        if not t.rows:
            writer.writerow([_cell(v) for v in head + [None] * (len(COLUMNS) - len(head) - len(tail) - 11) + tail
                             + [None, None] + counts + [None] * 5 + trial_guards])
        for r in t.rows:
            gr = guard_rows.get(r.shape)
            guard = [gr.entries, gr.lookup.median if gr.lookup else None, gr.lookup.iqr if gr.lookup else None,
                     gr.share, gr.guards] if gr is not None else [None] * 5
            n = r.numerics
            writer.writerow([_cell(v) for v in head + [
                r.shape, r.requests, r.first_call_s, r.status, r.cause, r.fallback_calls,
                r.steady.median if r.steady else None, r.steady.iqr if r.steady else None,
                r.steady.n if r.steady else None, r.eager.median if r.eager else None,
                r.eager.iqr if r.eager else None, r.speedup, r.speed_class or None,
                r.eager_trial.median if r.eager_trial else None,
                n.max_abs_err if n else None, n.max_rel_err if n else None, n.passed if n else None,
                n.ran_eagerly if n else None,
            ] + tail + [r.error_calls, r.partial_fallback_calls] + counts + guard + trial_guards])
    return buf.getvalue()


class CsvRenderer:
    """One row per (trial, distinct shape) of a run."""

    name = "csv"
    extensions = (".csv",)
    kinds: tuple[type, ...] = (RunFile,)
    written = "csv"

    def render(self, report: RunFile) -> str:
        assert report.report is not None, "a run's CSV needs its report"
        return render(report.report)


RENDERER = CsvRenderer()
