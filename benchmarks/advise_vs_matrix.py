"""advise's pick against the best strategy of the full matrix, measured in the same session.

    python benchmarks/advise_vs_matrix.py [--only NAME]

For each workload: ``compilescope.advise`` (default, its proposals, and static when the
default went dynamic), then the rest of the matrix (static, dynamic, bucket, regional — each
a cold trial in a fresh process) on the same stream. The stream total (wall time of every
request, compiles included) of advise's pick — its recommendation, or the default when it
recommends nothing — is compared with the lowest stream total among every compiled strategy
measured (goal: ≤ 1.05×).
"""

from __future__ import annotations

import argparse

from _common import write
from compilescope import api
from compilescope.analysis.build import build_run_report
from compilescope.model import MeasureOptions, StrategyOptions

CASES = [
    # (name, workload, stream, backend)
    ("sincos", "sincos", "16,16,32,32,64,16,128,32", "inductor"),
    ("convnet", "convnet", None, "aot_eager"),
    ("minilm", "minilm", "minilm:8", "aot_eager"),  # the first 8 requests of its default stream
]
MATRIX = ("static", "dynamic", "bucket", "regional")
MEASURE = MeasureOptions(warmup=2, samples=10, min_samples=3, budget_s=0.3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default=None)
    args = parser.parse_args()
    out = {}
    for name, workload, stream, backend in CASES:
        if args.only and name != args.only:
            continue
        if stream is not None and stream.startswith(workload + ":"):
            from compilescope.workload import load_workload

            count = int(stream.split(":", 1)[1])
            stream = list(load_workload(workload).default_stream[:count])
        advised, advice = api.advise(workload, stream, backend=backend, measure=MEASURE)
        _, _, base, _ = api._prepare(workload, stream, ("eager",), options=StrategyOptions(backend=backend),
                                     measure=MEASURE)
        seen = {t.spec.strategy for t in advised.trials if not t.spec.variant}
        rest = api.execute_run(base, [s for s in MATRIX if s not in seen], "cold")
        report = build_run_report(api.RunResult(workload=advised.workload, stream=advised.stream,
                                                trials=advised.trials + rest.trials))
        rows = [(t.label, t.stream_s, t) for t in report.trials if t.compiles_code and t.stream_s is not None
                and t.status == "ok" and not t.call_errors and not t.fallbacks and not t.numerics_failed]
        best_label, best_s, _ = min(rows, key=lambda r: r[1])
        pick = advice.recommendation.label if advice.recommendation else "default (cold)"
        pick_s = next(s for label, s, _ in rows if label == pick) if any(r[0] == pick for r in rows) else None
        print(f"\n{name} (backend {backend}, {len(advised.stream)} requests)")
        print(f"  {'trial':<44} {'compiles':>8} {'stream total':>13}")
        for label, s, t in sorted(rows, key=lambda r: r[1]):
            mark = " <- advise's pick" if label == pick else ""
            print(f"  {label:<44} {t.stream.compiles:>8} {s:12.2f}s{mark}")
        ratio = pick_s / best_s if pick_s else None
        print(f"  advise picked {pick}; best measured {best_label}: ratio "
              + (f"{ratio:.3f}x (goal ≤ 1.05x)" if ratio else "n/a (the pick did not run clean)"))
        out[name] = {"backend": backend, "pick": pick, "pick_s": pick_s, "best": best_label, "best_s": best_s,
                     "ratio": ratio, "trials": {label: s for label, s, _ in rows}}
    write("advise_vs_matrix", {"cases": out})


if __name__ == "__main__":
    main()
