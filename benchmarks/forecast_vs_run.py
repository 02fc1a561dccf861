"""The forecast against a real ``run`` of the same stream: per-request agreement, unknowns, cost.

    python benchmarks/forecast_vs_run.py [--workload W ...] [--stream SPEC|default|text:N|decode:N[xT]]
                                         [--backend aot_eager] [--dry-backend NAME ...]
                                         [--strategies default,static,dynamic]
                                         [--record none|half|SPEC] [--quick] [--no-dry-run]

With no ``--workload`` (or ``--workload all``), every built-in real model (``minilm``, ``gpt2-tiny``, ``convnet``,
and ``causal-lm`` when this checkout has it), each on a stream of 48 requests, side by side in one
run: ``minilm`` and ``gpt2-tiny`` on batches of real paragraphs (``text:48``), ``convnet`` on
random image sizes from 16 to 128, ``causal-lm`` on three generations of 15 tokens each
(``decode:3``: a prefill, then decode steps over a growing cache). ``--stream default`` runs
each on its built-in default stream instead (6 to 14 requests, nearly every one a new shape:
where the dry run's cost comes nearest the run's, as both trace each new guard state once). For
each workload it runs ``compilescope.run`` (a fresh process per trial, real tensors, the real
backend, cold cache, steady state and numerics as a run does them; ``--quick``: without
steady state and numerics) and then the dry-run forecast of the same stream and strategies in
this process, and prints per strategy the requests whose hit/compile/eager outcome agrees
(misses listed with both sides' guards; an ``unknown`` forecast is counted apart, never as
agreeing), then one table: agreement of the known requests, unknowns, and the forecast's
cost over the run's — wall time, and CPU time (this process's for the forecast; the trial
processes' and this one's for the run), which a shared machine's load does not inflate. Beside
them, the run's own Dynamo traces (``run traces s``: each compiled entry's ``dynamo`` phase less
the AOT autograd and backend time inside it) and their share of the run (``floor ratio``): an
estimate of the least a dry run can cost that traces each entry the run compiles once (it traces
on fake tensors, in one process, and the run's failed attempts are left out).
``--dry-backend`` (repeatable) times each way of tracing beside the same real run, e.g.
``--dry-backend aot_eager --dry-backend eager`` for an ``aot_eager`` forecast traced faithfully
and by Dynamo alone.

``--record half|SPEC`` also forecasts from recorded guards (``forecast --from-results``): a
recording run of the stream's first half (or SPEC), steady state and numerics off, whose cost
is not counted (it is what a service already has); ``--no-dry-run`` leaves the dry run out.
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import write
from compilescope.analysis.build import compile_row
from compilescope.api import run
from compilescope.forecast import forecast, forecast_recorded, request_outcomes
from compilescope.model import MeasureOptions
from compilescope.zoo import BUILTINS

REAL_MODELS = ("minilm", "gpt2-tiny", "convnet", "causal-lm")
# streams of 48 requests, as a deployment's recording is many requests over fewer shapes
STREAMS = {"minilm": "text:48", "gpt2-tiny": "text:48", "convnet": "random:count=48;seed=0;batch=2;size=16..128",
           "causal-lm": "decode:3"}
DECODE_PROMPTS = (12, 20, 9, 16)  # decode:N[xT]: N generations of T tokens (15) after prompts of these lengths


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def _stream(workload: str, spec: str | None) -> Any:
    spec = spec or STREAMS.get(workload, "default")
    if spec == "default":
        return None
    if spec.startswith("text:"):  # batches of real paragraphs: text:N requests
        from compilescope.zoo import text_stream

        return list(text_stream(int(spec.removeprefix("text:"))))
    if spec.startswith("decode:"):  # causal-lm's generation loops: decode:N[xT], N generations of T tokens (15)
        from compilescope.zoo import decode_stream

        n, _, tokens = spec.removeprefix("decode:").partition("x")
        prompts = tuple(DECODE_PROMPTS[i % len(DECODE_PROMPTS)] for i in range(int(n)))
        return list(decode_stream(prompts, (int(tokens or 15),) * len(prompts)))
    return spec


def one(workload: str, args: argparse.Namespace) -> dict[str, Any]:
    stream = _stream(workload, args.stream)
    results = Path(tempfile.mkdtemp(prefix="forecast-bench-")) / "run.json"
    measure = MeasureOptions(steady=False, numerics=False) if args.quick else MeasureOptions()
    t0, c0 = time.perf_counter(), _cpu(resource.RUSAGE_SELF) + _cpu(resource.RUSAGE_CHILDREN)
    real = run(workload, stream, args.strategies, backend=args.backend, results_path=results, measure=measure)
    run_wall, run_cpu = time.perf_counter() - t0, _cpu(resource.RUSAGE_SELF) + _cpu(resource.RUSAGE_CHILDREN) - c0
    data: dict[str, Any] = {
        "workload": workload, "stream": args.stream or STREAMS.get(workload, "default"), "backend": args.backend,
        "quick": args.quick, "run_wall_s": run_wall, "run_cpu_s": run_cpu, "run_traces_s": _traces_s(real),
    }
    data["dry"] = []
    for dry_backend in ([] if args.no_dry_run else args.dry_backend or [None]):
        t0, c0 = time.perf_counter(), _cpu(resource.RUSAGE_SELF)
        report = forecast(workload, stream, args.strategies, backend=args.backend, dry_backend=dry_backend)
        dry_wall, dry_cpu = time.perf_counter() - t0, _cpu(resource.RUSAGE_SELF) - c0
        rows = _agreement(f"dry run ({report.dry_backend})", report, real)
        data["dry"].append({
            "dry_backend": report.dry_backend, "requests": report.stream_length,
            "distinct_shapes": report.distinct_shapes, "forecast_wall_s": dry_wall, "forecast_cpu_s": dry_cpu,
            "wall_ratio": dry_wall / run_wall, "cpu_ratio": dry_cpu / run_cpu, "strategies": rows,
            "computed": [s.strategy for s in report.strategies if s.computed]})
        print(f"{workload} ({args.backend}, traced with {report.dry_backend}), {report.stream_length} requests, "
              f"{report.distinct_shapes} distinct shapes: {_share(rows)}; run {run_wall:.1f} s ({run_cpu:.1f} s CPU), "
              f"forecast {dry_wall:.1f} s ({dry_cpu:.1f} s CPU): ratio {dry_wall / run_wall:.3f} wall, "
              f"{dry_cpu / run_cpu:.3f} CPU", flush=True)
    if args.record != "none":
        recording = results.with_name("recording.json")
        record_stream = list(real.stream[: max(1, len(real.stream) // 2)]) if args.record == "half" else args.record
        run(workload, record_stream, args.strategies, backend=args.backend, results_path=recording,
            measure=MeasureOptions(steady=False, numerics=False))
        t0 = time.perf_counter()
        recorded = forecast_recorded(workload, stream, recording, args.strategies)
        recorded_wall = time.perf_counter() - t0
        recorded_rows = _agreement("recorded guards", recorded, real)
        print(f"recorded guards (from {args.record}): {_share(recorded_rows)}, "
              f"{sum(s.estimated for s in recorded.strategies)} request(s) estimated; forecast {recorded_wall:.2f} s, "
              f"ratio {recorded_wall / run_wall:.4f}", flush=True)
        data["recorded"] = {"record": args.record, "forecast_wall_s": recorded_wall,
                            "ratio": recorded_wall / run_wall, "strategies": recorded_rows}
    return data


def _traces_s(real: Any) -> float:
    """The run's own Dynamo traces: each compiled entry's ``dynamo`` phase less what ran inside
    it (AOT autograd, the backend), over every trial — about what a dry run that traces each
    of these entries once costs at least."""
    return sum(dict(compile_row(c).exclusive_s).get("dynamo", 0.0)
               for t in real.trials for c in t.compiles if c.outcome == "compiled")


def _share(rows: dict[str, dict[str, int]]) -> str:
    agree = sum(r["agree"] for r in rows.values())
    known = sum(r["requests"] - r["unknown"] for r in rows.values())
    unknown = sum(r["unknown"] for r in rows.values())
    total = known + unknown
    share = f"{agree / known:.2%}" if known else "—"
    return f"{agree}/{known} known requests agree ({share}), {unknown}/{total} unknown"


def _agreement(method: str, report: Any, real: Any) -> dict[str, dict[str, int]]:
    rows = {}
    for s in report.strategies:
        trial = next(t for t in real.trials if t.spec.strategy == s.strategy)
        seen = request_outcomes(trial.calls, trial.compiles)
        known = [(p, o) for p, o in zip(s.requests, seen) if p.outcome != "unknown"]
        misses = [(p, o) for p, o in known if p.outcome != o.outcome]
        agree = len(known) - len(misses)
        counts = {k: sum(1 for o in seen if o.outcome == k) for k in ("hit", "compile", "eager", "error")}
        print(f"{method:<15} {s.strategy:<8} agreement {agree}/{len(known)}  unknown {s.unknown}  "
              f"forecast hit {s.hits} compile {s.compiles} eager {s.eager} error {s.errors} estimated {s.estimated}"
              f"{'  (computed for real)' if s.computed else ''}  |  run hit {counts['hit']} compile "
              f"{counts['compile']} eager {counts['eager']} error {counts['error']}")
        for p, o in misses[:10]:
            print(f"   miss: request {p.index} ({p.shape_label}) forecast {p.outcome}"
                  f"{' (estimated)' if p.estimated else ''} {[g.text for g in p.guards]}"
                  f" / run {o.outcome} {[g.text for g in o.guards]}")
        rows[s.strategy] = {"agree": agree, "requests": len(s.requests), "misses": len(misses),
                            "unknown": s.unknown, "estimated": s.estimated}
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workload", action="append",
                        help="repeatable; default (or `all`): every built-in real model, side by side in one run")
    parser.add_argument("--stream", default=None,
                        help="a stream spec; `default`: the workload's built-in stream; `text:N`: N batches of "
                             "real paragraphs (minilm, gpt2-tiny); `decode:N[xT]`: N generations of T tokens "
                             "(default 15; causal-lm) (default: 48 requests each, see above)")
    parser.add_argument("--backend", default="aot_eager")
    parser.add_argument("--dry-backend", action="append",
                        help="what the forecast traces with (see forecast --help); repeatable: each dry run beside "
                             "the same real run (default: the backend's own)")
    parser.add_argument("--strategies", default="default,static,dynamic")
    parser.add_argument("--record", default="none", help="none (default), half, or a stream spec")
    parser.add_argument("--quick", action="store_true", help="the real run without steady state and numerics")
    parser.add_argument("--no-dry-run", action="store_true", help="only the recorded-guard forecast")
    args = parser.parse_args()
    names = [w for w in REAL_MODELS if w in BUILTINS] if args.workload in (None, ["all"]) else args.workload
    load = [os.getloadavg()[0]]
    done = [one(w, args) for w in names]
    load.append(os.getloadavg()[0])
    print(f"\nthe real run: `run` of the same stream and strategies, {'--quick' if args.quick else 'in full'} "
          f"(steady state and numerics {'off' if args.quick else 'on'}); load average {load[0]:.1f} at the start, "
          f"{load[1]:.1f} at the end ({os.cpu_count()} CPUs)")
    print(f"{'workload':<11} {'traced with':<18} {'calls on':<9} {'requests':>8} {'agree (known)':>14} {'unknown':>8} "
          f"{'run s':>8} {'run CPU s':>9} {'dry s':>7} {'dry CPU s':>9} {'wall ratio':>10} {'CPU ratio':>9} "
          f"{'run traces s':>12} {'floor ratio':>11}")
    for d in done:
        for dry in d["dry"]:
            rows = dry["strategies"].values()
            known = sum(r["requests"] - r["unknown"] for r in rows)
            agree, unknown = sum(r["agree"] for r in rows), sum(r["unknown"] for r in rows)
            how = "real" if len(dry["computed"]) == len(rows) else "fake" if not dry["computed"] else "both"
            print(f"{d['workload']:<11} {dry['dry_backend']:<18} {how:<9} {sum(r['requests'] for r in rows):>8} "
                  f"{f'{agree}/{known}':>14} {unknown:>8} {d['run_wall_s']:>8.1f} {d['run_cpu_s']:>9.1f} "
                  f"{dry['forecast_wall_s']:>7.1f} {dry['forecast_cpu_s']:>9.1f} {dry['wall_ratio']:>10.3f} "
                  f"{dry['cpu_ratio']:>9.3f} {d['run_traces_s']:>12.1f} {d['run_traces_s'] / d['run_wall_s']:>11.3f}")
    name = "forecast_vs_run" if len(names) > 1 else f"forecast_vs_run-{names[0]}"
    write(name, {"backend": args.backend, "quick": args.quick, "load_average": load, "workloads": done})


if __name__ == "__main__":
    main()
