"""Compare two runs (A, the baseline, and B): per paired trial and shape, the change in steady
state, first call, compiles, compile seconds, request errors and eager fallbacks — flagged
only beyond the noise.

Rules, stated once:

* **pairing** — both runs must be of one workload and one stream (otherwise nothing they
  measured is comparable: :class:`~compilescope.errors.OptionError`). Trials pair by label
  (``default (cold)`` with ``default (cold)``), or with ``pair_by="strategy"`` by strategy
  alone, so ``default (cold)`` pairs with ``default (warm)``. A strategy change pairs as
  asked (``pairs``: ``[("default", "guard-filter[inbuilt-nn]")]``, start mode with start
  mode), or by itself when each run has one compiled strategy and they differ; the report
  says how the trials were paired. Each pair says when its backend, mode, device, torch
  version, threads or start mode differ: the figures then compare more than one change. Zero
  pairs is an error, never "no regression";
* **change** is ``B / A − 1``; a flag says which way is worse, since the figures point
  different ways (see :data:`BETTER`);
* **speedup** is eager p50 / compiled p50, both sampled interleaved in the same trial
  process — the one definition every report uses (higher is better). Timing on a shared CPU
  is bimodal per process, so a compiled trial is compared by this ratio, free of the
  process's speed. A change is flagged only when the two ratio intervals (the same-process
  eager p50 over the compiled IQR) do not overlap and it is beyond the tolerance
  (:data:`~compilescope.analysis.regimes.TOLERANCE`);
* the **eager trial** has no same-process baseline, so its raw p50 is shown but never
  flagged: it moves with the process's speed, which says nothing about compiling;
* **status, request errors, eager fallbacks, compiles** — exact: any change is flagged
  (15 errors against 0 is a regression, whatever else improved);
* **guards** (the guards of the entry a shape's call runs, exact, with the kinds that
  moved), **entries tried** (the entries a shape's requests tried in the stream's order,
  derived from the exact record of compiles and hits) and **guard lookup** (a call's guard
  checks with its entry tried first, sampled once per round), side by side per shape: fewer
  and less are better; a lookup change is flagged as the speedup is — the IQRs apart, beyond
  the tolerance, and the two runs' per-round lookups told apart by the Mann–Whitney test held
  with the speedup tests (Holm). The stream's mean lookup in its order (derived from the same
  samples) is shown, flagged only beyond the two runs' noise and when the entries tried or a
  shape's held lookup moved the same way (:func:`_stream_held`);
* **first call, compile seconds** — single samples with no IQR: flagged only beyond
  ``SINGLE_SAMPLE_TOLERANCE`` (wider than the tolerance of sampled figures: one sample's
  jitter is not the spread of many) and ``SINGLE_SAMPLE_MIN_S``, and beyond the noise that
  the two runs' own single samples of one and the same work show: every trial of a run
  imports torch in a fresh process, so the spread of those import times, within each run and
  across both, is how far one sample of start-up work moves between processes on that machine
  (:func:`single_sample_noise`); a change must exceed that factor with the tolerance on top.
  Less compile time is an improvement only for the same work: when the compile counts, errors
  or fallbacks differ, compile seconds are shown, not flagged;
* **evidence against both runs' noise** — a speedup change is flagged only when, beyond the
  IQRs and the tolerance, the per-sample ratios (eager over compiled, pair by pair, as they
  were interleaved) of A and B differ by the Mann–Whitney U test with every speedup and guard
  lookup change of the comparison held together at :data:`~compilescope.analysis.noise.ALPHA` (Holm), and the
  change exceeds how far the same eager work moved between two processes of either run (the
  eager trial's p50 against the same-process eager p50); timings of a trial that ran on a busy
  machine (its recorded load above its CPUs) are shown, never flagged. Two runs of the same
  configuration (an A/A comparison) so report no change.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..errors import OptionError
from ..model import CompileRecord, RunResult, TrialEnv, TrialResult, shape_label
from ..torchtext import failure_key
from ..report import Change, CompareReport, Flag, GuardSummary, Pair, RunReport, ShapeRow, Stats, TrialReport
from ..units import fmt_time
from ..strategies import guard_filter_name
from .build import build_run_report, strategy_compiles
from .guards import lookup_samples
from .noise import busy, holm, interleaved_ratios, mann_whitney_p
from .outcomes import SINGLE_SAMPLE_MIN_S, SINGLE_SAMPLE_TOLERANCE, within_tolerance
from .regimes import TOLERANCE, iqr_separated

KINDS_SHOWN = 5  # the guard kinds whose counts moved most, named in a guards change

PairBy = Literal["label", "strategy"]
PAIR_BY = ("label", "strategy")

# which way is better, per figure (the legend under every compare table)
BETTER = {
    "status": "ok is better",
    "request errors": "fewer is better",
    "eager fallbacks": "fewer is better",
    "compiles": "fewer is better",
    "compile s": "less is better for the same work",
    "first call": "less is better",
    "how it ran": "compiled is better than an eager fallback or an error",
    "speedup": "eager p50 / compiled p50 in the same process: higher is better",
    "steady p50": "eager trial, raw: never flagged",
    "guards": "fewer is better",
    "entries tried": "a request's guard checks tried before its entry passed, in the stream's order: fewer is better",
    "guard lookup": "a call's guard checks, its entry tried first: less is better",
    "guard lookup, stream order": "a request's guard checks in the stream's order: less is better",
}
MIN_IMPORT_S = 0.1  # a trial whose imports took less (forked, in-process) says nothing of start-up noise


@dataclass
class _Noise:
    """What both runs show of their own noise, for one pair of trials."""

    single: float = 1.0  # the factor one sample of start-up work moves by between processes
    busy: str = ""  # why this pair's timings are not evidence (a busy machine), "" if they are
    spread: dict[str, float] = field(default_factory=dict)  # shape → between-process eager spread (factor)
    ratios_a: dict[str, list[float]] = field(default_factory=dict)  # shape → per-sample eager/compiled
    ratios_b: dict[str, list[float]] = field(default_factory=dict)
    lookups_a: dict[str, list[float]] = field(default_factory=dict)  # shape → a call's lookup per round
    lookups_b: dict[str, list[float]] = field(default_factory=dict)


def single_sample_noise(a: RunResult, b: RunResult) -> float:
    """The factor by which one sample of the same start-up work (importing torch in a fresh
    process) moved between the trials of A, of B, and across both: max / min of their import
    times (1 when fewer than two trials timed their imports)."""
    imports = [t.import_s for r in (a, b) for t in r.trials if t.import_s is not None and t.import_s >= MIN_IMPORT_S]
    return max(imports) / min(imports) if len(imports) > 1 else 1.0


def _busy_text(ta: TrialResult, tb: TrialResult) -> str:
    found = [(side, busy(t.env), t.env.cpus) for side, t in (("A", ta), ("B", tb))]
    hit = [f"{side} load {load:.1f} on {cpus} CPU(s)" for side, load, cpus in found if load is not None]
    return f"the machine was busy ({', '.join(hit)}): timings are not evidence" if hit else ""


def _spread(t: TrialReport) -> dict[str, float]:
    """Per shape, the factor between the eager trial's p50 and the same-process eager p50."""
    out = {}
    for r in t.rows:
        if r.eager is not None and r.eager_trial is not None and r.eager.median > 0 and r.eager_trial.median > 0:
            ratio = r.eager_trial.median / r.eager.median
            out[r.shape] = max(ratio, 1 / ratio)
    return out


def _lookup_samples(trial: TrialResult) -> dict[str, list[float]]:
    """Per shape, a call's lookup with its entry tried first, once per sampling round."""
    return {shape_label(c.shape): got for c in trial.guard_costs if (got := lookup_samples(c))}


def _tried(g: GuardSummary) -> dict[str, float]:
    """Per shape, the entries its stream requests tried in the stream's order (the passing one
    included), on average over the requests that compiled nothing and ran a compiled graph (one
    that ran eagerly, refused at the recompile limit, passed no entry: it has no such count)."""
    by: dict[str, list[int]] = {}
    for p in g.points:
        if not p.compiled and p.tried > 0:
            by.setdefault(p.shape, []).append(p.tried)
    return {shape: statistics.mean(v) for shape, v in by.items()}


def _kinds_moved(a: tuple[tuple[str, int], ...], b: tuple[tuple[str, int], ...]) -> str:
    """``−96 TENSOR_MATCH, −48 ID_MATCH``: the guard kinds whose counts moved, largest first."""
    ka, kb = dict(a), dict(b)
    moved = sorted(((k, d) for k in dict.fromkeys([*ka, *kb]) if (d := kb.get(k, 0) - ka.get(k, 0))),
                   key=lambda kd: -abs(kd[1]))
    text = ", ".join(f"{d:+,} {k}".replace("-", "−") for k, d in moved[:KINDS_SHOWN])
    return text + (f", {len(moved) - KINDS_SHOWN} more kind(s)" if len(moved) > KINDS_SHOWN else "")


def _guard_changes(trial: str, ta: TrialReport, tb: TrialReport, noise: _Noise,
                   tests: dict[int, float | None], offset: int) -> list[Change]:
    """Per shape, side by side: the guards of the entry a call runs (exact, with the kinds that
    moved), the entries its requests tried in the stream's order (derived from the exact record
    of compiles and hits) and the lookup with its entry tried first (sampled: a candidate flag
    when the IQRs are apart and beyond the tolerance, kept by :func:`_held` only when the
    Mann–Whitney test on the two runs' per-round lookups, held with the comparison's other
    tests, tells them apart); per trial, the mean lookup in the stream's order. Timings of a
    busy machine are shown, never flagged."""
    ga, gb = ta.guards, tb.guards
    if ga is None or gb is None:
        return []
    out: list[Change] = []
    rows_b = {r.shape: r for r in gb.rows}
    tried_a, tried_b = _tried(ga), _tried(gb)
    for ra in ga.rows:
        rb = rows_b.get(ra.shape)
        if rb is None:
            continue
        if ra.guards is not None and rb.guards is not None:  # both read: a count not read is no change
            moved = _kinds_moved(ra.kinds, rb.kinds)
            out.append(dataclasses.replace(_count(trial, "guards", ra.guards, rb.guards, "counts are exact"
                                                  + (f" ({moved})" if moved else "")), shape=ra.shape))
        if ra.shape in tried_a and ra.shape in tried_b:
            a, b = tried_a[ra.shape], tried_b[ra.shape]
            flag: Flag = "" if a == b else ("regression" if b > a else "improvement")
            out.append(Change(trial, ra.shape, "entries tried", a, b, _rel(a, b), flag,
                              "the passing one included, in the stream's order: exact", f"{a:.1f}", f"{b:.1f}"))
        if ra.lookup is not None and rb.lookup is not None:
            out.append(_lookup_change(trial, ra.shape, ra.lookup, rb.lookup, noise, tests, offset + len(out)))
    if ga.stream_s is not None and gb.stream_s is not None:
        rel = _rel(ga.stream_s, gb.stream_s)
        spread = (ga.noise_s or 0.0) + (gb.noise_s or 0.0)
        beyond = abs(gb.stream_s - ga.stream_s) > spread and not within_tolerance(ga.stream_s, gb.stream_s)
        flag = ("regression" if gb.stream_s > ga.stream_s else "improvement") if beyond and not noise.busy else ""
        why = (f"{ga.mean_tried or 0:.1f} against {gb.mean_tried or 0:.1f} entries tried; "
               + ("beyond" if beyond else "within") + f" the noise (±{fmt_time(spread)})")
        out.append(Change(trial, "", "guard lookup, stream order", ga.stream_s, gb.stream_s, rel, flag,
                          why + (f"; {noise.busy}" if noise.busy and beyond else ""),
                          fmt_time(ga.stream_s), fmt_time(gb.stream_s)))
    return out


def _lookup_change(trial: str, shape: str, a: Stats, b: Stats, noise: _Noise, tests: dict[int, float | None],
                   index: int) -> Change:
    """One shape's lookup with its entry tried first; a flag is only a candidate until
    :func:`_held` has held the comparison's tests together (``tests[index]``: its p-value)."""
    rel = _rel(a.median, b.median)
    texts = dict(a_text=fmt_time(a.median), b_text=fmt_time(b.median))
    a_s, b_s = noise.lookups_a.get(shape, []), noise.lookups_b.get(shape, [])
    if a_s and b_s:  # every test made counts in the family the flags are held over
        tests[index] = mann_whitney_p(a_s, b_s)
    if rel is None or not iqr_separated((a.q1, a.q3), (b.q1, b.q3)):
        return Change(trial, shape, "guard lookup", a.median, b.median, rel, "", "within the IQRs", **texts)
    if within_tolerance(a.median, b.median):
        return Change(trial, shape, "guard lookup", a.median, b.median, rel, "", f"below {TOLERANCE:.0%}", **texts)
    if noise.busy:
        return Change(trial, shape, "guard lookup", a.median, b.median, rel, "", noise.busy, **texts)
    # a lookup is timed in each run's own process, as the eager work is: it moves with the process's speed
    spread, moved = noise.spread.get(shape, 1.0), max(b.median / a.median, a.median / b.median)
    if moved <= spread or within_tolerance(moved, spread):
        return Change(trial, shape, "guard lookup", a.median, b.median, rel, "",
                      f"within how far eager moved between two processes (×{spread:.2f})", **texts)
    tests.setdefault(index, None)
    return Change(trial, shape, "guard lookup", a.median, b.median, rel, "regression" if rel > 0 else "improvement",
                  "IQRs do not overlap", **texts)


def _rel(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or a == 0:
        return None
    return b / a - 1.0


def _count_text(v: float | None) -> str:
    return "—" if v is None else str(int(v))


def _ratio_text(v: float | None) -> str:
    return "—" if v is None else f"×{v:.2f}"


def _speedup_interval(steady: Stats, eager: Stats) -> tuple[float, float, float]:
    """(low, median, high) of eager p50 / compiled samples: the same-process eager p50 over the
    compiled p50 and its quartiles."""
    e = eager.median
    return (e / steady.q3 if steady.q3 > 0 else 0.0, e / steady.median, e / steady.q1 if steady.q1 > 0 else 0.0)


def _speedup(trial: str, ra: ShapeRow, rb: ShapeRow, noise: _Noise) -> Change | None:
    """The speedup change of one shape; a flag is only a candidate until :func:`_held` has held
    the comparison's tests together."""
    if ra.steady is None or rb.steady is None or ra.eager is None or rb.eager is None:
        return None
    if min(ra.steady.median, rb.steady.median, ra.steady.q1, rb.steady.q1) <= 0:
        return None
    a1, am, a3 = _speedup_interval(ra.steady, ra.eager)
    b1, bm, b3 = _speedup_interval(rb.steady, rb.eager)
    rel = _rel(am, bm)
    texts = dict(a_text=_ratio_text(am), b_text=_ratio_text(bm))
    if rel is None or not iqr_separated((a1, a3), (b1, b3)):
        return Change(trial, ra.shape, "speedup", am, bm, rel, "", "within the IQRs", **texts)
    if within_tolerance(am, bm):
        return Change(trial, ra.shape, "speedup", am, bm, rel, "", f"below {TOLERANCE:.0%}", **texts)
    if noise.busy:
        return Change(trial, ra.shape, "speedup", am, bm, rel, "", noise.busy, **texts)
    spread = noise.spread.get(ra.shape, 1.0)
    moved = max(bm / am, am / bm)
    if moved <= spread or within_tolerance(moved, spread):
        return Change(trial, ra.shape, "speedup", am, bm, rel, "",
                      f"within how far eager moved between two processes (×{spread:.2f})", **texts)
    return Change(trial, ra.shape, "speedup", am, bm, rel, "improvement" if rel > 0 else "regression",
                  "IQRs do not overlap", **texts)


def _held(changes: list[Change], tests: dict[int, float | None]) -> list[Change]:
    """The candidate speedup and lookup flags kept only where the samples' test, held across
    the whole family at once (Holm), says so. ``tests``: change index → p-value, for every
    speedup and lookup test the comparison made, flagged by the screens or not — the family is
    every test made, not only those that passed a screen."""
    keys = list(tests)
    significant = dict(zip(keys, holm([tests[k] for k in keys])))
    out = []
    for i, c in enumerate(changes):
        if i not in tests or not c.flag:  # a test of a change no screen flagged counts in the family alone
            out.append(c)
            continue
        if not significant[i]:
            p = tests[i]
            why = ("too few samples to test" if p is None else
                   f"the samples do not tell A and B apart (Mann–Whitney p={p:.2g}, held over {len(keys)} change(s))")
            c = dataclasses.replace(c, flag="", why=why)
        else:
            c = dataclasses.replace(c, why=f"IQRs apart, Mann–Whitney p={tests[i]:.2g} over {len(keys)} change(s)")
        out.append(c)
    return out


def _stream_held(changes: list[Change]) -> list[Change]:
    """A pair's stream-order lookup (derived from the per-shape samples and the entries tried)
    keeps its flag only with evidence of its own kind: the entries tried moved that way (exact),
    or a shape's lookup moved that way by the held Mann–Whitney test; else it is shown, not
    flagged."""
    out = []
    for c in changes:
        if c.figure == "guard lookup, stream order" and c.flag:
            backed = [x for x in changes if x.trial == c.trial and x.flag == c.flag
                      and x.figure in ("entries tried", "guard lookup")]
            if not backed:
                c = dataclasses.replace(c, flag="", why=c.why + "; not told apart: neither the entries tried nor a "
                                                                "shape's lookup (Mann–Whitney) moved that way")
        out.append(c)
    return out


def _eager_steady(trial: str, ra: ShapeRow, rb: ShapeRow) -> Change | None:
    if ra.steady is None or rb.steady is None:
        return None
    a, b = ra.steady.median, rb.steady.median
    return Change(trial, ra.shape, "steady p50", a, b, _rel(a, b), "",
                  "eager trial: its raw p50 moves with the process's speed, not with compiling (compiled trials "
                  "are compared by their speedup over their own process's eager)", fmt_time(a), fmt_time(b))


def _single(trial: str, figure: str, a: float | None, b: float | None, same_work: str = "",
            noise: _Noise | None = None) -> Change:
    rel = _rel(a, b)
    texts = dict(a_text=fmt_time(a), b_text=fmt_time(b))
    noise = noise or _Noise()
    if same_work:
        return Change(trial, "", figure, a, b, rel, "", same_work, **texts)
    if rel is None or abs(rel) <= SINGLE_SAMPLE_TOLERANCE:
        return Change(trial, "", figure, a, b, rel, "", f"within ±{SINGLE_SAMPLE_TOLERANCE:.0%} (one sample)", **texts)
    if abs((b or 0.0) - (a or 0.0)) < SINGLE_SAMPLE_MIN_S:
        return Change(trial, "", figure, a, b, rel, "", f"under {SINGLE_SAMPLE_MIN_S * 1e3:.0f} ms apart (one sample)",
                      **texts)
    if noise.busy:
        return Change(trial, "", figure, a, b, rel, "", noise.busy, **texts)
    factor = max(1 + rel, 1 / (1 + rel)) if rel > -1 else math.inf
    if factor <= noise.single * (1 + SINGLE_SAMPLE_TOLERANCE):
        return Change(trial, "", figure, a, b, rel, "", f"within the runs' own single-sample noise (their torch "
                      f"imports, the same work in every trial, moved ×{noise.single:.2f}; one sample)", **texts)
    return Change(trial, "", figure, a, b, rel, "regression" if rel > 0 else "improvement",
                  f"beyond ±{SINGLE_SAMPLE_TOLERANCE:.0%} and the runs' own noise (×{noise.single:.2f}; one sample)",
                  **texts)


def _compile_counts(name: str, ta: TrialReport, tb: TrialReport) -> list[Change]:
    """The failed compiles (when either trial has any) and the compiles; fewer compiles because
    a frame stopped compiling (it failed, or runs eagerly more) are shown, not an improvement."""
    out = []
    if ta.stream.failed or tb.stream.failed:
        out.append(_count(name, "failed compiles", ta.stream.failed, tb.stream.failed, "counts are exact"))
    compiles = _count(name, "compiles", ta.stream.compiles, tb.stream.compiles, "counts are exact")
    if compiles.flag == "improvement" and (tb.stream.failed > ta.stream.failed or tb.fallbacks > ta.fallbacks
                                           or tb.partial_fallbacks > ta.partial_fallbacks):
        compiles = dataclasses.replace(compiles, flag="", why=(
            "counts are exact; fewer where B failed to compile or ran eagerly more: not flagged"))
    return [*out, compiles]


def _count(trial: str, figure: str, a: int, b: int, why: str) -> Change:
    flag: Flag = "" if a == b else ("regression" if b > a else "improvement")
    return Change(trial, "", figure, a, b, _rel(a, b), flag, why, _count_text(a), _count_text(b))


def _errors(t: TrialReport) -> int:
    """Requests that raised, as the trial's report counts them."""
    return t.call_errors


def _how_it_ran(trial: str, ra: ShapeRow, rb: ShapeRow) -> Change | None:
    bad = ("error", "eager fallback", "partial eager fallback")
    a_bad = ra.status in bad or bool(ra.fallback_calls) or bool(ra.partial_fallback_calls)
    b_bad = rb.status in bad or bool(rb.fallback_calls) or bool(rb.partial_fallback_calls)
    if a_bad == b_bad:
        return None

    def text(r: ShapeRow) -> str:
        if r.status in bad:
            return r.status
        if r.fallback_calls:
            return f"{r.fallback_calls} of {r.requests} eager"
        if r.partial_fallback_calls:
            return f"{r.partial_fallback_calls} of {r.requests} partly eager"
        return r.status

    return Change(trial, ra.shape, "how it ran", None, None, None, "regression" if b_bad else "improvement",
                  (rb.cause if b_bad else ra.cause)[:200], text(ra), text(rb))


def _trial_changes(name: str, ta: TrialReport, tb: TrialReport, noise: _Noise | None = None,
                   tests: dict[int, float | None] | None = None, offset: int = 0) -> list[Change]:
    """The changes of one pair; ``tests`` collects, by index in the whole comparison (from
    ``offset``), each candidate speedup flag's p-value for :func:`_held`."""
    noise = noise or _Noise()
    tests = {} if tests is None else tests
    out: list[Change] = []
    if ta.status != "ok" or tb.status != "ok":
        flag: Flag = ("regression" if ta.status == "ok" else "improvement" if tb.status == "ok" else "")
        why = "; ".join(f"{side}: {t.error}" for side, t in (("A", ta), ("B", tb)) if t.status != "ok" and t.error)
        out.append(Change(name, "", "status", None, None, None, flag, why[:300], ta.status, tb.status))
    errors_a, errors_b = _errors(ta), _errors(tb)
    out.append(_count(name, "request errors", errors_a, errors_b, "counts are exact"))
    if ta.compiles_code:
        out.append(_count(name, "eager fallbacks", ta.fallbacks, tb.fallbacks, "counts are exact"))
        out.append(_count(name, "partial eager fallbacks", ta.partial_fallbacks, tb.partial_fallbacks,
                          "counts are exact"))
    if ta.status not in ("ok", "partial") or tb.status not in ("ok", "partial"):
        return out  # a trial that did not finish has no figures to set beside the other's
    if ta.compiles_code:
        a_n, b_n = ta.stream.compiles, tb.stream.compiles
        out += _compile_counts(name, ta, tb)
        different = []
        if a_n != b_n:
            different.append(f"{a_n} against {b_n} compiles")
        if errors_a != errors_b:
            different.append(f"{errors_a} against {errors_b} request errors")
        if ta.fallbacks != tb.fallbacks:
            different.append(f"{ta.fallbacks} against {tb.fallbacks} eager fallbacks")
        if ta.partial_fallbacks != tb.partial_fallbacks:
            different.append(f"{ta.partial_fallbacks} against {tb.partial_fallbacks} partial eager fallbacks")
        same_work = ("not the same work (" + ", ".join(different) + "): compile time is not compared"
                     if different else "")
        out.append(_single(name, "compile s", ta.stream.compile_s, tb.stream.compile_s, same_work, noise))
    out.append(_single(name, "first call", ta.first_call_s, tb.first_call_s, noise=noise))
    rows_b = {r.shape: r for r in tb.rows}
    for ra in ta.rows:
        rb = rows_b.get(ra.shape)
        if rb is None:
            continue
        if ta.compiles_code:
            ran = _how_it_ran(name, ra, rb)
            if ran is not None:
                out.append(ran)
            change = _speedup(name, ra, rb, noise)
            a_s, b_s = noise.ratios_a.get(ra.shape, []), noise.ratios_b.get(ra.shape, [])
            if change is not None and (change.flag or (a_s and b_s)):  # every test made counts in the family
                tests[offset + len(out)] = mann_whitney_p(a_s, b_s) if a_s and b_s else None
        else:
            change = _eager_steady(name, ra, rb)
        if change is not None:
            out.append(change)
    out += _guard_changes(name, ta, tb, noise, tests, offset + len(out))
    return out


def _causes(records: tuple[CompileRecord, ...]) -> list[str]:
    """The distinct recompile causes of a trial's stream, each as (kind, input, dim): PyTorch's
    wording moves between releases (``tensor 'x'`` on 2.13, ``tensor 'L['x']'`` on 2.6), the
    parsed guard does not."""
    keys = {failure_key(g) for r in records if r.phase == "stream" for g in r.guard_failures}
    return sorted(" ".join(str(p) for p in k if p is not None) for k in keys)


def _guards_per_entry(records: tuple[CompileRecord, ...]) -> int | None:
    """The most guards a cache entry of the stream holds (PyTorch's count): each call checks
    an entry's guards, so more is a cost on every call."""
    counts = [r.guard_count for r in records if r.phase == "stream" and r.guard_count is not None]
    return max(counts) if counts else None


def _compile_changes(name: str, a: TrialResult, b: TrialResult, ta: TrialReport, tb: TrialReport) -> list[Change]:
    """What a compiled trial's compiles were made of: the recompile causes, the recompile
    limit's refusals, the guards of a cache entry and the distinct graph breaks — the figures a
    torch upgrade moves. Counts are exact; a different set of causes is said, not flagged."""
    if not ta.compiles_code or ta.status not in ("ok", "partial") or tb.status not in ("ok", "partial"):
        return []
    out = [_count(name, "refused at the limit", ta.stream.refused, tb.stream.refused, "counts are exact"),
           _count(name, "graph breaks", len(ta.graph_breaks), len(tb.graph_breaks), "distinct breaks, exact")]
    ca, cb = _causes(a.compiles), _causes(b.compiles)
    if ca or cb:
        gone, new = sorted(set(ca) - set(cb)), sorted(set(cb) - set(ca))
        why = "the same causes" if not gone and not new else "; ".join(
            [f"new: {', '.join(new)}"] * bool(new) + [f"gone: {', '.join(gone)}"] * bool(gone))
        out.append(Change(name, "", "recompile causes", len(ca), len(cb), _rel(len(ca), len(cb)), "", why,
                          "; ".join(ca) or "none", "; ".join(cb) or "none"))
    ga, gb = _guards_per_entry(a.compiles), _guards_per_entry(b.compiles)
    if ga is not None and gb is not None:
        filtered = [t.spec.name for t in (a, b) if guard_filter_name(t.spec.strategy)]
        out.append(_count(name, "PyTorch's guards per entry", ga, gb,
                          "PyTorch's own count (its compile metrics) for the largest cache entry: the guards "
                          "Dynamo built, more than the checks a call runs (the per-shape guards), "
                          + (f"made before {filtered[0]} dropped guards: exact" if filtered else "exact")))
    return out


def _versions(pairs: list[tuple[TrialResult, TrialResult]]) -> tuple[str, ...]:
    """``torch A → B`` (python, compilescope too) when every pair differs so: the upgrade
    question's answer is the rest of the report."""
    out = []
    for name in ("torch", "python", "compilescope"):
        seen = {(getattr(x.env, name), getattr(y.env, name)) for x, y in pairs}
        if len(seen) == 1:
            a, b = next(iter(seen))
            if a and b and a != b:
                out.append(f"{name} {a} → {b}")
    return tuple(out)


def _differences(a: TrialResult, b: TrialResult, compiles: bool) -> tuple[str, ...]:
    """Everything besides what is compared that differs between two trials: the options of a
    compiled one, the start mode, and their environments (:meth:`TrialEnv.differences`)."""
    fields: list[tuple[str, object, object]] = []
    if compiles:
        oa, ob = a.spec.options, b.spec.options
        fields += [("backend", oa.backend, ob.backend), ("mode", oa.mode or "default", ob.mode or "default"),
                   # a limit refuses compiles: fewer compiles and more eager requests follow from it alone
                   ("recompile limit", oa.recompile_limit or "PyTorch's default", ob.recompile_limit or "PyTorch's default"),
                   ("--dynamic-sources", oa.dynamic_sources or "none", ob.dynamic_sources or "none")]
    fields += [("start mode", a.spec.cache, b.spec.cache)]
    own = tuple(f"{name} differs (A {va}, B {vb})" for name, va, vb in fields if str(va) != str(vb))
    return own + _effective_env(a).differences(_effective_env(b))


def _effective_env(trial: TrialResult) -> TrialEnv:
    """A trial's environment, its spec's device and threads standing in where it has none."""
    env, m = trial.env, trial.spec.measure
    return dataclasses.replace(env, device=env.device or m.device,
                               threads=env.threads if env.threads is not None else m.threads)


def _stream_text(result: RunResult) -> str:
    from ..model import shape_label

    shapes = [shape_label(s) for s in result.stream]
    return f"{len(shapes)} requests " + ",".join(shapes[:6]) + ("…" if len(shapes) > 6 else "")


def _compiled_strategy(result: RunResult) -> str | None:
    """The one compiled strategy of a run (all its start modes), or None when it has more or none."""
    names = {t.spec.name for t in result.trials if strategy_compiles(t)}
    return next(iter(names)) if len(names) == 1 else None


def _named(result: RunResult, name: str, side: str) -> list[int]:
    """The trials of ``result`` that ``name`` names: a label, or a strategy (every start mode)."""
    got = [i for i, t in enumerate(result.trials) if t.spec.label == name] or \
          [i for i, t in enumerate(result.trials) if t.spec.name == name]
    if not got:
        raise OptionError(f"--pair: {side} has no trial {name!r} (its trials: "
                          f"{', '.join(t.spec.label for t in result.trials) or 'none'})")
    return got


def _pairing(a: RunResult, b: RunResult, pair_by: str, asked: Sequence[tuple[str, str]]
             ) -> tuple[list[tuple[int, int]], str]:
    """Which trial of A pairs with which of B, and how that was decided, in words.

    ``asked`` (``--pair A_NAME=B_NAME``) pairs the named trials first: a name is a label or a
    strategy; a strategy with several start modes pairs mode with mode. Without it, when each
    run has one compiled strategy and they differ (a strategy change: ``default`` against
    ``guard-filter[inbuilt-nn]``), those pair. The other trials pair by ``pair_by``."""
    automatic = False
    if not asked:
        one = (_compiled_strategy(a), _compiled_strategy(b))
        if one[0] is not None and one[1] is not None and one[0] != one[1]:
            asked, automatic = [(one[0], one[1])], True
    matched: list[tuple[int, int]] = []
    taken_a: set[int] = set()
    taken_b: set[int] = set()
    for x, y in asked:
        ia, ib = _named(a, x, "A"), _named(b, y, "B")
        if len(ia) == 1 and len(ib) == 1:
            got = [(ia[0], ib[0])]
        else:
            by_mode = {b.trials[j].spec.cache: j for j in ib}
            got = [(i, by_mode[a.trials[i].spec.cache]) for i in ia if a.trials[i].spec.cache in by_mode]
        if not got or taken_a & set(ia) or taken_b & set(ib):
            raise OptionError(f"--pair {x}={y}: " + ("a trial named twice" if got else
                              "no start mode in common (" + ", ".join(a.trials[i].spec.label for i in ia)
                              + " against " + ", ".join(b.trials[j].spec.label for j in ib) + ")"))
        matched += got
        taken_a |= set(ia)
        taken_b |= set(ib)

    def key(t: TrialResult) -> str:
        return t.spec.label if pair_by == "label" else t.spec.name

    def index(result: RunResult, side: str, taken: set[int]) -> dict[str, int]:
        out: dict[str, int] = {}
        for i, t in enumerate(result.trials):
            if i in taken:
                continue
            k = key(t)
            if k in out:
                both = [x.spec.label for j, x in enumerate(result.trials) if key(x) == k and j not in taken]
                raise OptionError(f"{side} has {len(both)} trials of strategy {k!r} ({', '.join(both)}): "
                                  f"--pair-by strategy needs one per strategy (select one start mode, e.g. cache=cold)")
            out[k] = i
        return out

    in_a, in_b = index(a, "A", taken_a), index(b, "B", taken_b)
    matched += [(i, in_b[k]) for k, i in in_a.items() if k in in_b]
    rest = "by label" if pair_by == "label" else "by strategy (start mode aside)"
    if not asked:
        return matched, f"trials paired {rest}"
    named = "; ".join(f"{x} with {y}" for x, y in asked)
    why = ("each run has one compiled strategy (--pair A_NAME=B_NAME to choose)" if automatic else "as --pair asked")
    return matched, f"{named}: {why}; the other trials {rest}"


def compare_runs(a: RunResult, b: RunResult, a_name: str = "A", b_name: str = "B",
                 pair_by: PairBy | str = "label", pairs: Sequence[tuple[str, str]] = ()) -> CompareReport:
    """Pair A's trials with B's (:func:`_pairing`) and compare each pair; raises
    :class:`OptionError` when the runs are of different workloads or streams, or when no trial
    pairs."""
    if pair_by not in PAIR_BY:
        raise OptionError(f"unknown --pair-by {pair_by!r}: use label or strategy")
    if a.workload != b.workload:
        raise OptionError(f"A is a run of workload {a.workload!r} and B of {b.workload!r}: compare pairs runs of "
                          "one workload")
    if a.stream != b.stream:
        raise OptionError(f"A and B ran different streams (A: {_stream_text(a)}; B: {_stream_text(b)}): compare "
                          "pairs runs of one stream")
    matched, pairing = _pairing(a, b, pair_by, pairs)
    report_a, report_b = build_run_report(a), build_run_report(b)
    changes: list[Change] = []
    made: list[Pair] = []
    tests: dict[int, float | None] = {}
    single = single_sample_noise(a, b)
    paired: list[tuple[TrialResult, TrialResult]] = []
    for i, j in matched:
        ta, tb = report_a.trials[i], report_b.trials[j]
        pair = Pair(ta.label, tb.label, _differences(a.trials[i], b.trials[j], ta.compiles_code))
        made.append(pair)
        spread = _spread(ta)
        for shape, factor in _spread(tb).items():
            spread[shape] = max(factor, spread.get(shape, 1.0))
        noise = _Noise(single, _busy_text(a.trials[i], b.trials[j]), spread,
                       interleaved_ratios(a.trials[i]), interleaved_ratios(b.trials[j]),
                       _lookup_samples(a.trials[i]), _lookup_samples(b.trials[j]))
        changes.extend(_trial_changes(pair.name, ta, tb, noise, tests, len(changes)))
        changes.extend(_compile_changes(pair.name, a.trials[i], b.trials[j], ta, tb))
        paired.append((a.trials[i], b.trials[j]))
    changes = _stream_held(_held(changes, tests))
    only_a = tuple(t.spec.label for i, t in enumerate(a.trials) if i not in {i for i, _ in matched})
    only_b = tuple(t.spec.label for j, t in enumerate(b.trials) if j not in {j for _, j in matched})
    if not made:
        hint = (" — labels that differ only by start mode pair with --pair-by strategy, different strategies "
                "with --pair A_NAME=B_NAME" if pair_by == "label" else " — different strategies pair with --pair "
                "A_NAME=B_NAME")
        raise OptionError(f"no trial of A pairs with one of B (A: {', '.join(only_a) or 'none'}; "
                          f"B: {', '.join(only_b) or 'none'}){hint}")
    return CompareReport(a_name, b_name, tuple(changes), only_a, only_b, tuple(made), pair_by, a.workload,
                         _versions(paired), pairing)


def compare_reports(a: RunReport, b: RunReport, a_name: str = "A", b_name: str = "B") -> CompareReport:
    """Pair two built reports by label (no environment check: use :func:`compare_runs`)."""
    by_b = {t.label: t for t in b.trials}
    changes: list[Change] = []
    pairs = []
    tests: dict[int, float | None] = {}
    for ta in a.trials:
        tb = by_b.get(ta.label)
        if tb is not None:
            pairs.append(Pair(ta.label, tb.label, ()))
            changes.extend(_trial_changes(ta.label, ta, tb, None, tests, len(changes)))
    changes = _stream_held(_held(changes, tests))  # no raw samples here: no speedup change is evidence
    labels_a = {t.label for t in a.trials}
    return CompareReport(a_name, b_name, tuple(changes), tuple(sorted(labels_a - set(by_b))),
                         tuple(sorted(set(by_b) - labels_a)), tuple(pairs), "label", a.workload)
