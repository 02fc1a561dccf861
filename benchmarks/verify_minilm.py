"""The minilm warm-up, proved by replay: record the real text stream, plan from its first
half, verify on its second — with and without the warm-up, and beside the forecast.

    python benchmarks/verify_minilm.py [--requests 300] [--backend eager] [--out verify.html]

The recording runs ``compilescope.watch(record_shapes=…)`` around the compiled model
(default strategy) on the meta device: the shapes a program sees do not depend on values,
and that pass is the real Dynamo on the real code. ``plan_warmup`` plans from the first half
(a dry run, default strategy); ``verify_plan`` then runs two measured trials on the second
half, real tensors on the CPU, each a fresh process on an empty compile cache.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from _common import write
from compilescope import zoo
from compilescope.model import MeasureOptions
from compilescope.render import for_path
from compilescope.render.verify import render
from compilescope.stream import parse_stream, write_jsonl
from compilescope.warmup.plan import plan_warmup
from compilescope.warmup.verify import verify_plan


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--backend", default="eager")
    parser.add_argument("--out", type=Path, default=None, help="also write the report here (.json, .html, .txt)")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="verify-minilm-"))
    t0 = time.perf_counter()
    compiles, _ = zoo.record_minilm_stream(folder / "shapes.jsonl", args.requests)
    record_s = time.perf_counter() - t0
    recorded = parse_stream(f"@{folder / 'shapes.jsonl'}", ("batch", "seq"))
    half = len(recorded) // 2
    first, last = recorded[:half], recorded[half:]
    write_jsonl(first, folder / "first.jsonl")
    write_jsonl(last, folder / "heldout.jsonl")
    t0 = time.perf_counter()
    plan = plan_warmup("minilm", f"@{folder / 'first.jsonl'}", ("default",), backend=args.backend)
    plan_s = time.perf_counter() - t0
    startup = plan.plans[0].shapes
    seen = tuple(s for s, ids in zip(first, compiles[:half]) if ids)
    print(f"plan (dry run, {plan_s:.1f} s): {[dict(x) for x in startup]}; the recording compiled at {[dict(x) for x in seen]}")
    t0 = time.perf_counter()
    report = verify_plan(plan, f"@{folder / 'heldout.jsonl'}", strategy="default", measure=MeasureOptions(steady=False, numerics=False))
    verify_s = time.perf_counter() - t0
    print(render(report, width=140))
    if args.out is not None:
        args.out.write_text(for_path(args.out).render(report))
    s = report.strategies[0]
    w, b = s.with_warmup, s.without_warmup
    print(write("verify_minilm", {
        "requests": args.requests, "startup_shapes": [dict(x) for x in startup], "record_s": record_s, "plan_s": plan_s,
        "verify_s": verify_s, "compiled_after_startup": w.compiling_requests if w else None,
        "eager_after_startup": w.eager_requests if w else None, "stall_free": s.stall_free,
        "p50_with_s": w.p50_s if w else None, "p99_with_s": w.p99_s if w else None,
        "p50_without_s": b.p50_s if b else None, "p99_without_s": b.p99_s if b else None,
        "startup_s": s.startup_s, "stall_avoided_s": s.stall_avoided_s,
        "forecast_compiles": s.forecast_compiles, "agreement": s.agreement}))


if __name__ == "__main__":
    main()
