"""Measure a warm-up plan: real trials, each calling the plan's start-up shapes and then
replaying the recorded stream, through the one scheduler and executor seam
(:func:`compilescope.execute.scheduler.run_plan`): per strategy a cold trial (a fresh
process, an empty cache directory), then warm (the directory the cold trial populated) and
mega (the cold trial's ``torch.compiler`` cache artifacts loaded first).

Measured per strategy and start mode: the start-up cost (the start-up calls' latencies, plus
the artifact load for mega), the frame compiles after start-up (the plan's check on the
recording itself: zero when it holds, each one listed with its guards otherwise), and the
steady-state cost per request (each shape's median, weighted by how often the recording has
it). The verdict adds them up over the service's lifetime.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from ..errors import OptionError
from ..execute.executor import Capabilities, Executor
from ..execute.scheduler import PlannedTrial, cache_key, plan_trials, run_plan
from ..execute.task import CallCallback, TrialOutcome, TrialTask
from ..model import MeasureOptions, Shape, TrialResult, TrialSpec, shape_key, shape_label
from ..paths import write_atomic
from ..report.warmup import AfterStartup, MeasuredStart, StrategyMeasured, Verdict, VerdictRow, WarmupReport
from ..stream import distinct_shapes
from ..model import WarmupPlan

LONG_STREAM = 200  # a longer recording is replayed as its distinct shapes (its repeats hit)
DEFAULT_CACHES = ("cold", "warm", "mega")
MEASURE = MeasureOptions(warmup=2, samples=10, min_samples=3, budget_s=0.5, numerics=False, guards=False)


class KeepArtifacts:
    """An executor that passes every task on and keeps the mega-cache artifacts each
    artifact-saving (cold) trial returns, by strategy name."""

    def __init__(self, inner: Executor) -> None:
        self.inner = inner
        self.artifacts: dict[str, bytes] = {}

    @property
    def capabilities(self) -> Capabilities:
        return self.inner.capabilities

    def expect(self, specs: Sequence[TrialSpec]) -> None:
        self.inner.expect(specs)

    def submit(self, task: TrialTask, timeout_s: float, on_call: CallCallback | None = None) -> Future[TrialOutcome]:
        future = self.inner.submit(task, timeout_s, on_call)
        if task.save_artifacts:
            def keep(done: Future[TrialOutcome]) -> None:
                if not done.cancelled() and done.exception() is None and done.result().artifacts:
                    self.artifacts[task.spec.name] = done.result().artifacts  # type: ignore[assignment]
            future.add_done_callback(keep)
        return future

    def shutdown(self) -> None:
        self.inner.shutdown()


def trial_plan(plan: WarmupPlan, stream: tuple[Shape, ...], caches: Sequence[str],
               measure: MeasureOptions) -> list[PlannedTrial]:
    """Per strategy plan: cold (steady state measured there), then warm and mega after it (start-up
    and stream only: steady state does not depend on how the process started)."""
    items: list[PlannedTrial] = []
    for p in plan.plans:
        base = TrialSpec(plan.workload, p.strategy, "cold", stream, p.options, measure, startup=p.shapes)
        for planned in plan_trials(base, [p.strategy], ",".join(caches)):
            if planned.spec.cache in ("warm", "mega"):
                quiet = dataclasses.replace(planned.spec.measure, steady=False, numerics=False)
                planned = dataclasses.replace(planned, spec=dataclasses.replace(planned.spec, measure=quiet))
            items.append(planned)
    return items


def after_startup(trial: TrialResult) -> tuple[AfterStartup, ...]:
    """The stream requests that compiled a frame or ran eagerly, with the guards that failed:
    each compile and refusal a request caused, or its eager fallback when it caused none."""
    from ..analysis.outcomes import classify_calls

    out = []
    for c in classify_calls(trial.calls, trial.compiles):
        for r in c.records:
            what = f"compile {r.compile_id}" if r.is_compile else f"refused {r.compile_id} (recompile limit): eager"
            out.append(AfterStartup(c.call.index, shape_label(c.call.shape), what, tuple(r.reasons)))
        if not c.records and c.outcome.ran_eagerly:
            out.append(AfterStartup(c.call.index, shape_label(c.call.shape), "eager fallback"))
    return tuple(out)


def start_row(trial: TrialResult) -> MeasuredStart:
    from ..analysis.counts import count_compiles

    latencies = [c.latency_s for c in trial.startup]
    known = bool(trial.startup) and all(v is not None for v in latencies)
    startup_s = sum(latencies) if known else None  # type: ignore[arg-type]
    errors = [c.error for c in trial.startup if c.error]
    error = trial.error or (f"a start-up call raised: {errors[0]}" if errors else None)
    early = [r for r in trial.compiles if r.phase == "startup"]
    return MeasuredStart(
        cache=trial.spec.cache, status=trial.status, startup_s=startup_s if trial.spec.startup else 0.0,
        load_s=trial.cache_load_s, startup_compiles=count_compiles(early).compiles,
        after=after_startup(trial), error=error, artifacts_bytes=trial.artifacts_bytes,
    )


SteadyRow = tuple[float | None, float | None, float | None, int, tuple[str, ...], tuple[tuple[str, int], ...]]


def steady_row(trial: TrialResult | None, recorded: Sequence[Shape]) -> SteadyRow:
    """Steady state per request under the plan: each shape's median (and quartiles) weighted by
    how often the recording has the shape — a shape whose calls ran eagerly (past the recompile
    limit) weighs in at its eager time, which is what its requests cost there, and is returned
    with its request count; the shapes without samples, with why."""
    from ..analysis.regimes import summarize_samples, weighted_mean

    if trial is None or not trial.steady:
        return None, None, None, 0, ("no steady-state samples",), ()
    weights = Counter(shape_key(s) for s in recorded)
    measured, missing, eager = [], [], []
    for s in trial.steady:
        stats = summarize_samples(s.compiled_s)
        if stats is None or s.error:
            missing.append(f"{shape_label(s.shape)}: {s.error or 'no samples'}")
            continue
        n = weights.get(shape_key(s.shape), 0)
        measured.append((stats, n))
        if s.ran_eagerly and n:
            eager.append((shape_label(s.shape), n))
    w = [n for _, n in measured]
    if not sum(w):
        return None, None, None, len(measured), tuple(missing), tuple(eager)
    return (weighted_mean([st.median for st, _ in measured], w), weighted_mean([st.q1 for st, _ in measured], w),
            weighted_mean([st.q3 for st, _ in measured], w), len(measured), tuple(missing), tuple(eager))


def _rows(measured: Sequence[StrategyMeasured], lifetime: int) -> list[VerdictRow]:
    rows = []
    for m in measured:
        for s in m.starts:
            if m.steady_s is not None and s.total_s is not None:
                rows.append(VerdictRow(m.strategy, s.cache, s.total_s, m.steady_s, s.total_s + lifetime * m.steady_s))
    return rows


def _break_even(a: VerdictRow, b: VerdictRow) -> str:
    """When ``b`` (more start-up, less steady) overtakes ``a``, in requests."""
    if b.steady_s >= a.steady_s or b.startup_s <= a.startup_s:
        return ""
    n = (b.startup_s - a.startup_s) / (a.steady_s - b.steady_s)
    return f"; {b.strategy} overtakes {a.strategy} after {n:,.0f} requests"


def verdict(measured: Sequence[StrategyMeasured], lifetime: int | None, requests: int,
            cache: str = "cold") -> Verdict | None:
    """Which strategy pays over the lifetime: start-up (``cache`` start) + lifetime × steady per
    request; a strategy whose plan compiled after start-up is ranked after those that held."""
    from ..analysis.outcomes import SINGLE_SAMPLE_MIN_S, SINGLE_SAMPLE_TOLERANCE, one_sample_apart, within_tolerance
    from ..analysis.regimes import TOLERANCE, iqr_separated
    from ..units import fmt_time

    life = lifetime if lifetime is not None else requests
    basis = f"--lifetime {life:,}" if lifetime is not None else f"the recorded stream's {requests:,} requests"
    rows = _rows(measured, life)
    ranked = [r for r in rows if r.cache == cache] or rows
    if not ranked:
        return Verdict(life, basis, tuple(rows), None, "no strategy has both a start-up and a steady-state figure")
    held = {m.strategy for m in measured if all(not s.after for s in m.starts)}
    spread = {m.strategy: (m.steady_q1_s, m.steady_q3_s) for m in measured}

    def alike(a: VerdictRow, b: VerdictRow) -> bool:
        x, y = spread[a.strategy], spread[b.strategy]
        return None not in (*x, *y) and not iqr_separated(x, y)  # type: ignore[arg-type]

    def tie(out: Sequence[VerdictRow]) -> list[VerdictRow]:
        """The first of ``out`` and those whose steady state the noise cannot tell from its own nor
        from each other's (an overlap is not transitive), of the same held-ness."""
        tied = list(out[:1])
        for r in out[1:]:
            if (r.strategy in held) == (out[0].strategy in held) and all(alike(t, r) for t in tied):
                tied.append(r)
        return tied

    def order(candidates: Sequence[VerdictRow]) -> list[VerdictRow]:
        """By total, the plans that held first; of the tie at the top (no steady difference to
        rank by), the least start-up first."""
        out = sorted(candidates, key=lambda r: (r.strategy not in held, r.total_s))
        if not out:
            return out
        first = min(tie(out), key=lambda r: r.startup_s)
        return [first, *(r for r in out if r is not first)]

    top = tie(sorted(ranked, key=lambda r: (r.strategy not in held, r.total_s)))
    ranked = order(ranked)
    best = ranked[0]
    noise, same = [], set()
    for r in ranked[1:]:
        if r in top:  # only where the start-up did decide (a plan ranked by its total, or by holding, is not)
            same.add(r.strategy)
            steady = life * (r.steady_s - best.steady_s)
            decides = (f"the start-ups, {fmt_time(best.startup_s)} against {fmt_time(r.startup_s)} (one sample each), "
                       f"are within one sample's jitter of each other: a tie" if not one_sample_apart(r.startup_s, best.startup_s)
                       else f"the start-up decides ({fmt_time(best.startup_s)} against {fmt_time(r.startup_s)}, one sample "
                            "each, beyond one sample's jitter)")
            noise.append(f"{best.strategy} and {r.strategy}: steady state within noise (IQRs overlap): {decides}; "
                         f"{r.strategy}'s steady figure, {fmt_time(abs(steady))} {'more' if steady >= 0 else 'less'} "
                         f"over {life:,} requests, is not a measured difference")
    eager = {m.strategy: m.steady_eager_requests for m in measured if m.steady_eager_requests}

    def mix(strategy: str) -> str:  # a steady figure that holds eager requests says so
        return f" ({eager[strategy]:,} of {requests:,} recorded requests eager)" if strategy in eager else ""

    other = ranked[1] if len(ranked) > 1 else None
    alike_held = other is not None and (other.strategy in held) == (best.strategy in held)
    tied = alike_held and other is not None and (
        (other.strategy in same and not one_sample_apart(other.startup_s, best.startup_s))
        or (other.strategy not in same and within_tolerance(other.total_s, best.total_s)))
    head = (f"{best.strategy} and {other.strategy} tie over {basis} ({best.strategy} listed first)" if tied and other
            else f"{best.strategy} pays over {basis}")
    why = (f"{head}: {fmt_time(best.startup_s)} start-up ({best.cache}) + {life:,} × "
           f"{fmt_time(best.steady_s)}{mix(best.strategy)} = {fmt_time(best.total_s)}")
    if other is not None:
        why += f", against {other.strategy}'s {fmt_time(other.total_s)}{mix(other.strategy)}"
        if other.strategy in same and alike_held:
            why += ("; their steady states are within noise and their start-ups (one sample each) within ±"
                    f"{SINGLE_SAMPLE_TOLERANCE:.0%} or {fmt_time(SINGLE_SAMPLE_MIN_S)} of each other: a tie"
                    if tied else "; their steady states are within noise: the start-up decides")
        elif tied:
            why += f" (within {TOLERANCE:.0%}: a tie)"
        elif other.strategy not in held and best.strategy in held:
            why += (f"; {other.strategy} ranks after whatever its total: its plan did not hold (requests compiled or "
                    "ran eagerly after start-up)")
        if other.strategy not in same:  # a break-even of steady states within noise is no figure
            why += _break_even(best, other) + _break_even(other, best)
    if best.strategy not in held:
        why += "; no plan held: every strategy compiled or ran eagerly after start-up"
    others = []
    for other_cache in dict.fromkeys(r.cache for r in rows if r.cache != best.cache):
        theirs = order([r for r in rows if r.cache == other_cache])
        if theirs and theirs[0].strategy != best.strategy:
            others.append(f"from a {other_cache} start {theirs[0].strategy} pays instead: {fmt_time(theirs[0].startup_s)} "
                          f"start-up + {life:,} × {fmt_time(theirs[0].steady_s)}{mix(theirs[0].strategy)} = "
                          f"{fmt_time(theirs[0].total_s)}")
    return Verdict(life, basis, tuple(rows), best.strategy, why, tuple(noise), tuple(others))


def _recorded(plan: WarmupPlan, stream: str | Sequence[Shape]) -> tuple[Shape, ...]:
    from ..prepare import prepare_run

    _, base, _ = prepare_run(plan.workload, stream, "eager", options=dataclasses.replace(plan.plans[0].options),
                             measure=MeasureOptions(device="cpu"))
    return base.stream


def _strategy_rows(plan: WarmupPlan, results: Sequence[TrialResult],
                   recorded: Sequence[Shape]) -> tuple[StrategyMeasured, ...]:
    out = []
    for p in plan.plans:
        mine = [t for t in results if t.spec.strategy == p.strategy]
        cold = next((t for t in mine if t.spec.cache == "cold"), None)
        steady, q1, q3, n, missing, eager = steady_row(cold, recorded)
        notes = tuple(f"{p.strategy} ({t.spec.cache}): {t.status}: {t.error}" for t in mine
                      if t.status not in ("ok",) and t.error)
        out.append(StrategyMeasured(
            p.strategy, tuple(start_row(t) for t in mine), steady, q1, q3, n, missing, notes,
            tuple(f"{label} ({k} request{'s' if k != 1 else ''})" for label, k in eager), sum(k for _, k in eager)))
    return tuple(out)


def save_artifacts(plan: WarmupPlan, kept: dict[str, bytes], folder: Path,
                   plan_dir: Path) -> tuple[WarmupPlan, list[str]]:
    """Write each strategy's mega-cache artifacts as ``FOLDER/<strategy>.bin``; the plan's
    ``artifacts`` is the folder, relative to the plan file's folder when inside it."""
    written = []
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for p in plan.plans:
            if p.strategy in kept:
                write_atomic(folder / f"{cache_key(p.strategy)}.bin", kept[p.strategy])
                written.append(p.strategy)
    except OSError as exc:
        raise OptionError(f"cannot write the artifacts in {folder}: {exc.strerror}") from None
    try:
        where = str(folder.resolve().relative_to(plan_dir.resolve()))
    except ValueError:
        where = str(folder.resolve())
    if not written:
        return plan, written
    note = (f"mega-cache artifacts in {where}: <strategy>.bin for {', '.join(written)} "
            "(torch.compiler.load_cache_artifacts before the start-up calls)")
    return dataclasses.replace(plan, artifacts=where, notes=(*plan.notes, note)), written


def start_modes(plan: WarmupPlan, caches: Sequence[str]) -> tuple[tuple[str, ...], list[str]]:
    """The start modes to measure: mega only where the backend saves cache artifacts (inductor)."""
    if "mega" in caches and plan.backend != "inductor":
        return tuple(c for c in caches if c != "mega"), [
            f"mega not measured: mega-cache artifacts are inductor's caches; backend {plan.backend} saves none"]
    return tuple(caches), []


def measure_plan(
    plan: WarmupPlan,
    stream: str | Sequence[Shape],
    *,
    lifetime: int | None = None,
    executor: Executor | None = None,
    caches: Sequence[str] = DEFAULT_CACHES,
    measure: MeasureOptions = MEASURE,
    timeout_s: float = 900.0,
    on_progress: Any = None,
    keep: KeepArtifacts | None = None,
    on_call: Any = None,
) -> WarmupReport:
    """Measure each strategy's plan on the recording; returns the report, with the plan's
    ``recommended`` set by the verdict. ``keep``: an executor wrapper that keeps the cold
    trials' artifacts (for ``--artifacts``)."""
    from ..execute.local import LocalExecutor

    started = time.perf_counter()
    recorded = _recorded(plan, stream)
    notes = []
    if len(recorded) != plan.requests:
        notes.append(f"measured on a stream of {len(recorded):,} requests; the plan was made for {plan.requests:,}")
    trial_stream: tuple[Shape, ...] = recorded
    described = f"the recorded stream ({len(recorded):,} requests)"
    if len(recorded) > LONG_STREAM:
        trial_stream = tuple(distinct_shapes(recorded))
        described = (f"the recording's {len(trial_stream)} distinct shapes (the stream has {len(recorded):,} "
                     f"requests; their repeats hit what these compiled)")
        notes.append(f"replayed {described}; steady state weighted by the recording's frequencies")
    caches, dropped = start_modes(plan, caches)
    notes += dropped
    chosen = keep if keep is not None else (executor or LocalExecutor())
    results = run_plan(trial_plan(plan, trial_stream, caches, measure), chosen, timeout_s, on_progress=on_progress,
                       on_call=on_call,
                       kind="warmup")
    measured = _strategy_rows(plan, results, recorded)
    judged = verdict(measured, lifetime, len(recorded), caches[0] if caches else "cold")
    if judged is not None and judged.recommended is not None:
        plan = dataclasses.replace(plan, recommended=judged.recommended, why=judged.why)
    return WarmupReport(plan, measured, judged, described, time.perf_counter() - started, tuple(notes))


def dry_report(plan: WarmupPlan, wall_s: float = 0.0) -> WarmupReport:
    """The report of a plan not measured (``--no-measure``): the forecast alone; ``wall_s``
    the planning's."""
    return WarmupReport(plan, wall_s=wall_s, notes=(
        "not measured (--no-measure): every figure is the dry run's forecast; no trial ran, so no verdict",))
