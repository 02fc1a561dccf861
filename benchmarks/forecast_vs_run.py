"""The dry-run forecast against a real ``run`` of the same stream: per-request agreement and wall time.

    python benchmarks/forecast_vs_run.py [--workload sincos] [--stream SPEC|default] [--backend aot_eager]
                                         [--strategies default,static,dynamic]

Runs ``compilescope.run`` (a fresh process per trial, real tensors, the real backend, cold
cache, steady state and numerics as a run does them) and ``compilescope forecast`` on the
same stream, in this order, and prints, per strategy, the requests whose hit/compile/eager
outcome agrees (misses listed with both sides' guards), and the wall ratio forecast / run.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from _common import write
from compilescope.api import run
from compilescope.forecast import forecast, request_outcomes
from compilescope.model import MeasureOptions


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workload", default="sincos")
    parser.add_argument("--stream", default="random:count=10000;seed=0;n=8|16|24|32|40|48|56|64|72|80|96|128",
                        help="a stream spec; `default`: the workload's default stream")
    parser.add_argument("--backend", default="aot_eager")
    parser.add_argument("--strategies", default="default,static,dynamic")
    args = parser.parse_args()
    stream = None if args.stream == "default" else args.stream
    results = Path(tempfile.mkdtemp(prefix="forecast-bench-")) / "run.json"
    t0 = time.perf_counter()
    real = run(args.workload, stream, args.strategies, backend=args.backend, results_path=results,
               measure=MeasureOptions())
    run_wall = time.perf_counter() - t0
    t0 = time.perf_counter()
    report = forecast(args.workload, stream, args.strategies, backend=args.backend)
    forecast_wall = time.perf_counter() - t0
    rows, agree_all, total_all = {}, 0, 0
    for s in report.strategies:
        trial = next(t for t in real.trials if t.spec.strategy == s.strategy)
        seen = request_outcomes(trial.calls, trial.compiles)
        misses = [(p, o) for p, o in zip(s.requests, seen) if p.outcome != o.outcome]
        agree = len(s.requests) - len(misses)
        agree_all, total_all = agree_all + agree, total_all + len(s.requests)
        counts = {k: sum(1 for o in seen if o.outcome == k) for k in ("hit", "compile", "eager", "error")}
        print(f"{s.strategy:<8} agreement {agree}/{len(s.requests)} ({agree / len(s.requests):.2%})  forecast "
              f"hit {s.hits} compile {s.compiles} eager {s.eager}  |  run hit {counts['hit']} compile "
              f"{counts['compile']} eager {counts['eager']} error {counts['error']}")
        for p, o in misses[:10]:
            print(f"   miss: request {p.index} ({p.shape_label}) forecast {p.outcome} {[g.text for g in p.guards]}"
                  f" / run {o.outcome} {[g.text for g in o.guards]}")
        rows[s.strategy] = {"agree": agree, "requests": len(s.requests), "misses": len(misses)}
    print(f"{args.workload} ({args.backend}), {report.stream_length} requests, {report.distinct_shapes} distinct "
          f"shapes: agreement {agree_all}/{total_all} ({agree_all / total_all:.2%}); run {run_wall:.1f} s, "
          f"forecast {forecast_wall:.1f} s, ratio {forecast_wall / run_wall:.3f}")
    write(f"forecast_vs_run-{args.workload}", {"workload": args.workload, "stream": args.stream,
                                               "backend": args.backend, "run_wall_s": run_wall,
                                               "forecast_wall_s": forecast_wall,
                                               "ratio": forecast_wall / run_wall, "strategies": rows})


if __name__ == "__main__":
    main()
