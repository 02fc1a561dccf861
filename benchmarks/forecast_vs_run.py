"""Both forecasts against a real ``run`` of the same stream: per-request agreement and wall time.

    python benchmarks/forecast_vs_run.py [--workload sincos] [--stream SPEC|default] [--backend aot_eager]
                                         [--strategies default,static,dynamic] [--record half|SPEC|none]
                                         [--quick] [--no-dry-run]

Runs ``compilescope.run`` (a fresh process per trial, real tensors, the real backend, cold
cache, steady state and numerics as a run does them) and ``compilescope forecast`` on the
same stream, in this order (``--quick``: the run without steady state and numerics; a
``--stream text:N`` is ``minilm``'s real text stream of N requests), and prints, per strategy, the requests whose hit/compile/eager
outcome agrees (misses listed with both sides' guards; requests forecast ``unknown`` are
counted apart, not as agreeing), and the wall ratio forecast / run (``--no-dry-run``: the
recorded-guard forecast alone).

The recorded-guard forecast (``forecast --from-results``) evaluates the guards a *recording*
run kept: ``--record half`` (default) runs the stream's first half (steady state and
numerics off: only its guards are used) and forecasts the whole stream from it; a SPEC
records that stream instead; ``none`` skips the method. Its wall time is the forecast's
alone (the recording is what a service already has).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from _common import write
from compilescope.api import run
from compilescope.forecast import forecast, forecast_recorded, request_outcomes
from compilescope.model import MeasureOptions


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workload", default="sincos")
    parser.add_argument("--stream", default="random:count=10000;seed=0;n=8|16|24|32|40|48|56|64|72|80|96|128",
                        help="a stream spec; `default`: the workload's default stream")
    parser.add_argument("--backend", default="aot_eager")
    parser.add_argument("--strategies", default="default,static,dynamic")
    parser.add_argument("--record", default="half", help="half, a stream spec, or none")
    parser.add_argument("--quick", action="store_true", help="the real run without steady state and numerics")
    parser.add_argument("--no-dry-run", action="store_true", help="only the recorded-guard forecast")
    args = parser.parse_args()
    stream = None if args.stream == "default" else args.stream
    if args.stream.startswith("text:"):  # minilm's real text stream: text:N requests
        from compilescope.zoo import text_stream

        stream = list(text_stream(int(args.stream.removeprefix("text:"))))
    results = Path(tempfile.mkdtemp(prefix="forecast-bench-")) / "run.json"
    t0 = time.perf_counter()
    real = run(args.workload, stream, args.strategies, backend=args.backend, results_path=results,
               measure=MeasureOptions(steady=False, numerics=False) if args.quick else MeasureOptions())
    run_wall = time.perf_counter() - t0
    data = {"workload": args.workload, "stream": args.stream, "backend": args.backend, "run_wall_s": run_wall}
    if not args.no_dry_run:
        t0 = time.perf_counter()
        report = forecast(args.workload, stream, args.strategies, backend=args.backend)
        forecast_wall = time.perf_counter() - t0
        rows = _agreement("dry run", report, real)
        print(f"{args.workload} ({args.backend}), {report.stream_length} requests, {report.distinct_shapes} distinct "
              f"shapes: dry run agreement {_share(rows)}; run {run_wall:.1f} s, forecast {forecast_wall:.1f} s, "
              f"ratio {forecast_wall / run_wall:.3f}")
        data |= {"forecast_wall_s": forecast_wall, "ratio": forecast_wall / run_wall, "strategies": rows}
    if args.record != "none":
        recording = results.with_name("recording.json")
        record_stream = list(real.stream[: max(1, len(real.stream) // 2)]) if args.record == "half" else args.record
        run(args.workload, record_stream, args.strategies, backend=args.backend, results_path=recording,
            measure=MeasureOptions(steady=False, numerics=False))
        t0 = time.perf_counter()
        recorded = forecast_recorded(args.workload, stream, recording, args.strategies)
        recorded_wall = time.perf_counter() - t0
        recorded_rows = _agreement("recorded guards", recorded, real)
        print(f"recorded guards (from {args.record}): agreement {_share(recorded_rows)}, "
              f"{sum(s.estimated for s in recorded.strategies)} request(s) estimated; forecast {recorded_wall:.2f} s, "
              f"ratio {recorded_wall / run_wall:.4f}")
        data["recorded"] = {"record": args.record, "forecast_wall_s": recorded_wall,
                            "ratio": recorded_wall / run_wall, "strategies": recorded_rows}
    write(f"forecast_vs_run-{args.workload}", data)


def _share(rows: dict[str, dict[str, int]]) -> str:
    """Agreement over the requests given an outcome; the unknown ones counted apart."""
    agree, total = sum(r["agree"] for r in rows.values()), sum(r["requests"] for r in rows.values())
    unknown = sum(r["unknown"] for r in rows.values())
    known = total - unknown
    share = f"{agree}/{known} ({agree / known:.2%})" if known else "no request predicted"
    return f"{share}, {unknown} unknown of {total}"


def _agreement(method: str, report, real) -> dict[str, dict[str, int]]:  # type: ignore[no-untyped-def]
    rows = {}
    for s in report.strategies:
        trial = next(t for t in real.trials if t.spec.strategy == s.strategy)
        seen = request_outcomes(trial.calls, trial.compiles)
        unknown = sum(1 for p in s.requests if p.outcome == "unknown")
        misses = [(p, o) for p, o in zip(s.requests, seen) if p.outcome not in (o.outcome, "unknown")]
        known = len(s.requests) - unknown
        agree = known - len(misses)
        counts = {k: sum(1 for o in seen if o.outcome == k) for k in ("hit", "compile", "eager", "error")}
        print(f"{method:<15} {s.strategy:<8} agreement {agree}/{known} ({agree / known if known else 0:.2%}) "
              f"unknown {unknown}  forecast hit {s.hits} compile {s.compiles} eager {s.eager} estimated "
              f"{s.estimated}  |  run hit {counts['hit']} compile {counts['compile']} eager {counts['eager']} "
              f"error {counts['error']}")
        for p, o in misses[:10]:
            print(f"   miss: request {p.index} ({p.shape_label}) forecast {p.outcome}"
                  f"{' (estimated)' if p.estimated else ''} {[g.text for g in p.guards]}"
                  f" / run {o.outcome} {[g.text for g in o.guards]}")
        rows[s.strategy] = {"agree": agree, "requests": len(s.requests), "misses": len(misses),
                            "estimated": s.estimated, "unknown": unknown}
    return rows


if __name__ == "__main__":
    main()
