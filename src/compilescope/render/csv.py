"""CSV: one row per (trial, distinct shape), with the trial's summary figures repeated
(``error_calls``: the shape's requests that raised; ``trial_request_errors``: the trial's;
``guard_*``: the shape's guard lookup, ``trial_guard_*``: the trial's mean lookup in the stream's
order and with each entry tried first); a trial with no shape is one row, its shape columns empty. :data:`COLUMNS` is the file:
(column, getter) pairs, a getter reading the report model for one (trial, shape) — a new
column is one pair. Cells that a spreadsheet would run as a formula (leading ``=``, ``+``,
``-``, ``@``) are prefixed with ``'``."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable

from ..report import RunFile, RunReport, ShapeRow, TrialReport
from ..report.guards import GuardShapeRow
from . import ByKind

Getter = Callable[[RunReport, TrialReport, "ShapeRow | None"], object]


def _trial(get: Callable[[TrialReport], object]) -> Getter:
    return lambda report, t, row: get(t)


def _shape(get: Callable[[ShapeRow], object]) -> Getter:
    """A shape's figure: empty on a trial's row with no shape."""
    return lambda report, t, row: None if row is None else get(row)


def _guard(get: Callable[[GuardShapeRow], object]) -> Getter:
    """A shape's guard figure: empty where its guards were not measured."""
    def read(report: RunReport, t: TrialReport, row: ShapeRow | None) -> object:
        found = t.guards.row_for(row.shape) if t.guards is not None and row is not None else None
        return None if found is None else get(found)
    return read


COLUMNS: tuple[tuple[str, Getter], ...] = (
    ("workload", lambda report, t, row: report.workload),
    ("strategy", _trial(lambda t: t.strategy)),
    ("cache", _trial(lambda t: t.cache)),
    ("status", _trial(lambda t: t.status)),
    ("shape", _shape(lambda r: r.shape)),
    ("requests", _shape(lambda r: r.requests)),
    ("first_call_s", _shape(lambda r: r.first_call_s)),
    ("how_it_ran", _shape(lambda r: r.status)),
    ("cause", _shape(lambda r: r.cause)),
    ("fallback_calls", _shape(lambda r: r.fallback_calls)),
    ("steady_median_s", _shape(lambda r: r.steady.median if r.steady else None)),
    ("steady_iqr_s", _shape(lambda r: r.steady.iqr if r.steady else None)),
    ("steady_n", _shape(lambda r: r.steady.n if r.steady else None)),
    ("eager_median_s", _shape(lambda r: r.eager.median if r.eager else None)),
    ("eager_iqr_s", _shape(lambda r: r.eager.iqr if r.eager else None)),
    ("speedup", _shape(lambda r: r.speedup)),
    ("speed_class", _shape(lambda r: r.speed_class or None)),
    ("eager_trial_median_s", _shape(lambda r: r.eager_trial.median if r.eager_trial else None)),
    ("max_abs_err", _shape(lambda r: r.counted_abs_err)),  # empty where not counted, as numerics_pass
    ("max_rel_err", _shape(lambda r: r.counted_rel_err)),
    ("numerics_pass", _shape(lambda r: r.numerics_pass)),  # empty where not counted (a call that ran eagerly)
    ("numerics_ran_eagerly", _shape(lambda r: r.numerics.ran_eagerly if r.numerics else None)),
    ("trial_compiles", _trial(lambda t: t.stream.compiles)),
    ("trial_recompiles", _trial(lambda t: t.stream.recompiles)),
    ("trial_refused", _trial(lambda t: t.stream.refused)),
    ("trial_compile_s", _trial(lambda t: t.stream.compile_s)),
    ("trial_eager_fallbacks", _trial(lambda t: t.fallbacks)),
    ("trial_stream_s", _trial(lambda t: t.stream_s)),
    ("eager_stream_s", _trial(lambda t: t.eager_stream_s)),
    ("break_even_request", _trial(lambda t: t.break_even_request)),
    ("error_calls", _shape(lambda r: r.error_calls)),
    ("partial_fallback_calls", _shape(lambda r: r.partial_fallback_calls)),
    ("trial_request_errors", _trial(lambda t: t.call_errors)),
    ("trial_partial_fallbacks", _trial(lambda t: t.partial_fallbacks)),
    ("guard_entries", _guard(lambda g: g.entries)),
    ("guard_lookup_s", _guard(lambda g: g.lookup.median if g.lookup else None)),
    ("guard_lookup_iqr_s", _guard(lambda g: g.lookup.iqr if g.lookup else None)),
    ("guard_share", _guard(lambda g: g.share)),
    ("guards", _guard(lambda g: g.guards)),
    ("trial_guard_stream_lookup_s", _trial(lambda t: t.guards.stream_s if t.guards else None)),
    ("trial_guard_repeated_lookup_s", _trial(lambda t: t.guards.repeated_s if t.guards else None)),
    ("trial_failed_compiles", _trial(lambda t: t.stream.failed)),  # after the others: columns only ever added at the end
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
    writer.writerow([name for name, _ in COLUMNS])
    for t in report.trials:
        for row in t.rows or (None,):
            writer.writerow([_cell(get(report, t, row)) for _, get in COLUMNS])
    return buf.getvalue()


def _run(file: RunFile) -> str:
    assert file.report is not None, "a run's CSV needs its report"
    return render(file.report)


# one row per (trial, distinct shape) of a run
RENDERER = ByKind("csv", (".csv",), "csv", {RunFile: _run}, help=".csv")
