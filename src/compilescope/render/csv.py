"""CSV: one row per (trial, distinct shape), with the trial's summary figures repeated."""

from __future__ import annotations

import csv
import io

from ..analysis.regimes import shape_rows, summarize_run
from ..model import RunResult, shape_label

COLUMNS = (
    "workload", "strategy", "cache", "status", "shape", "requests", "first_call_s", "compiled", "cause",
    "steady_median_s", "steady_iqr_s", "steady_n", "eager_median_s", "eager_iqr_s", "speedup",
    "max_abs_err", "max_rel_err", "numerics_pass", "trial_compiles", "trial_recompiles",
    "trial_compile_s", "trial_stream_s", "eager_stream_s", "break_even_request",
)


def render(result: RunResult) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(COLUMNS)

    def row(values: list[object]) -> None:
        writer.writerow(["" if v is None else v for v in values])

    for s in summarize_run(result):
        t = s.trial
        head = [result.workload, t.spec.strategy, t.spec.cache, t.status]
        tail = [s.compiles, s.recompiles, s.compile_s, s.stream_s, s.eager_stream_s, s.break_even_request]
        rows = shape_rows(t) if t.ok else []
        if not rows:
            row(head + [""] * (len(COLUMNS) - len(head) - len(tail)) + tail)
        for r in rows:
            n = r.numerics
            row(head + [
                shape_label(r.shape), r.requests, r.first_call_s, r.compiled, r.cause,
                r.steady.median if r.steady else "", r.steady.iqr if r.steady else "",
                r.steady.n if r.steady else "", r.eager.median if r.eager else "",
                r.eager.iqr if r.eager else "", r.speedup if r.speedup is not None else "",
                n.max_abs_err if n else "", n.max_rel_err if n else "", n.passed if n else "",
            ] + tail)
    return buf.getvalue()
