"""advise on the third cost: when the default's guard checks are a measurable share of a
compiled call, PyTorch's guard filters are proposed — each run as a trial that measures the
per-call saving and changes what the filter stopped guarding to see whether the compiled
result goes stale (:mod:`compilescope.collect.soundness`).

A filter is accepted only when its guard checks per call dropped beyond the tolerance, no
change made it stale, and the whole compiled call is not slower beyond the noise; a stale one
is rejected as **unsafe**, naming the change that made it stale and the assumption a user would
have to keep. An accepted one carries its assumption in its snippet's note, so it is never
recommended without it.

**The whole call** (:func:`whole_call`): the filter's trial and the default's are two
processes, so their compiled p50s differ by the processes' speeds (on a busy machine, by a
third). Each trial sampled its compiled call interleaved with eager; per shape, the
per-sample ratios eager / compiled of the two trials are compared by the Mann–Whitney test,
held over the shapes at 1% (Holm) — the rule ``compare`` applies to a speedup. A shape whose
ratio fell beyond it makes the filter rejected, with the figures; where the test cannot be
made (a busy machine, or too few samples to ever reach 1%) the advice says it could not tell,
and the filter is not accepted.
"""

from __future__ import annotations

import statistics
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from ..model import RunResult, StrategyOptions
from ..report import Proposal, Snippet, TrialReport
from ..strategies import GUARD_FILTERS, guard_filter_name
from ..units import fmt_time
from .noise import ALPHA, busy, holm, interleaved_ratios, mann_whitney_p, reachable
from .outcomes import within_tolerance
from .regimes import TOLERANCE

# guard checks at least this share of the default's compiled call: dropping a smaller share could
# not save beyond the tolerance
GUARD_SHARE_PROPOSED = TOLERANCE


def guard_filter_snippet(key: str, compile_call: str) -> Snippet:
    """The code applying a filter, and its assumption as the note."""
    fn, _, assumes = GUARD_FILTERS[key]
    setup = compile_call[:-1] + f", options={{'guard_filter_fn': torch.compiler.{fn}}})"
    return Snippet(f"compiled = {setup}", note=f"unsafe: it assumes {assumes}")


# the guard categories (:class:`~compilescope.model.GuardGroup`) each filter drops
DROPS = {"inbuilt-nn": ("module", "parameter"), "all-nn": ("module", "parameter"), "no-globals": ("global",),
         "tensors-only": ("module", "parameter", "global", "ambient")}


def _categories(t: TrialReport) -> dict[str, int]:
    out: dict[str, int] = {}
    for row in t.guards.rows if t.guards is not None else ():
        for s in row.sources:
            out[s.category] = out.get(s.category, 0) + s.guards
    return out


def guard_proposals(default: TrialReport | None, base: StrategyOptions, compile_call: str,
                    always: bool = False) -> list[Proposal]:
    """The guard filters, ``always``; otherwise when what they are for is there: the default's
    guard checks at least :data:`GUARD_SHARE_PROPOSED` of its compiled call on the stream's
    mix, most of its guards on modules and parameters (a model's), and only the filters that
    would drop some of them."""
    if base.mode is not None:  # no snippet could run as printed (:func:`mode_note` says so in the advice)
        return []
    g = default.guards if default is not None else None
    measured = g is not None and g.share is not None and g.repeated_s is not None
    kinds = _categories(default) if default is not None else {}
    modules = kinds.get("module", 0) + kinds.get("parameter", 0)
    if not always and (not measured or g.share < GUARD_SHARE_PROPOSED  # type: ignore[union-attr,operator]
                       or modules * 2 < sum(kinds.values())):
        return []
    why = (f"guard checks are {g.share:.0%} of a compiled call ({fmt_time(g.repeated_s)} a call, its entry tried "
           "first)" if measured else "asked for: the guard checks every call pays")  # type: ignore[union-attr]
    return [Proposal("", f"guard-filter[{key}]", base, (why,), guard_filter_snippet(key, compile_call), target="guards")
            for key in GUARD_FILTERS if always or any(kinds.get(c) for c in DROPS[key])]


def mode_note(result: RunResult | None) -> str:
    """Why no guard filter was proposed beside a ``--mode`` ('' when the default ran without
    one): torch.compile takes ``mode=`` or ``options=``, not both, and a filter is an option."""
    default = next((t for t in result.trials if t.spec.strategy == "default"), None) if result is not None else None
    mode = default.spec.options.mode if default is not None else None
    if mode is None:
        return ""
    return (f"guard filters: none proposed beside --mode {mode} — torch.compile takes mode= or options=, not both, "
            "and a guard filter is an option (guard_filter_fn), so no filter's snippet could run as printed")


def _assumption(t: TrialReport) -> str:
    key = guard_filter_name(t.strategy)
    return GUARD_FILTERS[key][2] if key else "what it stopped guarding never changes"


@dataclass(frozen=True)
class Interleaved:
    """What a trial sampled of its whole call, for judging it against another process's."""

    ratios: dict[str, list[float]] = field(default_factory=dict)  # shape → eager / compiled, pair by pair
    load: float | None = None  # the recorded load when it was above the trial's CPUs (a busy machine)
    cpus: int | None = None


def interleaved(result: RunResult | None) -> dict[str, Interleaved]:
    """Each trial's interleaved samples, by label (empty without the run's records)."""
    if result is None:
        return {}
    return {t.spec.label: Interleaved(interleaved_ratios(t), busy(t.env), t.env.cpus) for t in result.trials}


@dataclass(frozen=True)
class RatioTests:
    """Two trials' interleaved eager / compiled ratios tested shape by shape: the shapes whose
    samples can reach :data:`ALPHA` among ``shapes`` (``usable``), each one's Mann–Whitney
    p-value and whether it holds over them (Holm)."""

    shapes: list[str]
    usable: list[str]
    pvalues: list[float | None]
    held: list[bool]

    def untestable(self, a: Interleaved, b: Interleaved) -> str:
        """The sample counts of the shapes that cannot reach significance, as words."""
        counts = ", ".join(sorted({f"{len(a.ratios[s])} against {len(b.ratios[s])}" for s in self.shapes
                                   if s not in self.usable}))
        return f"{counts} samples a shape cannot reach {ALPHA:.0%} over {len(self.shapes)} shape(s)"


def ratio_tests(a: Interleaved, b: Interleaved, sides: tuple[str, str],
                only: Collection[str] | None = None) -> RatioTests | str:
    """``a``'s and ``b``'s ratios tested on the shapes both sampled (of ``only``, where given);
    or why nothing can be told: no shape sampled by both, or a busy machine (``sides`` names
    the two in that message)."""
    shapes = [s for s in a.ratios if a.ratios[s] and b.ratios.get(s) and (only is None or s in only)]
    if not shapes:
        return "no shape sampled by both"
    loaded = [f"{side} load {x.load:.1f} on {x.cpus} CPU(s)" for side, x in zip(sides, (a, b)) if x.load is not None]
    if loaded:
        return f"the machine was busy ({', '.join(loaded)})"
    usable = [s for s in shapes if reachable(len(a.ratios[s]), len(b.ratios[s]), len(shapes))]
    pvalues = [mann_whitney_p(a.ratios[s], b.ratios[s]) for s in usable]
    return RatioTests(shapes, usable, pvalues, holm(pvalues))


def whole_call(t: TrialReport, default: TrialReport | None, samples: Mapping[str, Interleaved]) -> tuple[str, str]:
    """(why the filter is not accepted, what the test showed): '' and the evidence when its
    whole compiled call is not slower than the default's beyond the noise (:data:`ALPHA`, Holm
    over the shapes, on the interleaved ratios); else rejected with the figures, or "could not
    tell" where the test cannot be made."""
    if default is None:
        return "", ""
    a, b = _steady(default), _steady(t)
    p50 = f"compiled call p50 {fmt_time(a)} → {fmt_time(b)} on the stream's mix" if a and b else ""
    mine, theirs = samples.get(t.label), samples.get(default.label)
    could_not = "could not tell whether the whole compiled call got slower: "
    if mine is None or theirs is None:
        return could_not + "no interleaved samples to test" + (f" ({p50})" if p50 else ""), ""
    tests = ratio_tests(theirs, mine, ("the default's", "its"))
    if isinstance(tests, str) or not tests.usable:
        why = tests if isinstance(tests, str) else tests.untestable(theirs, mine)
        return could_not + why + (f"; {p50}" if p50 else ""), ""
    usable = tests.usable
    for s, p, significant in zip(usable, tests.pvalues, tests.held):
        before, after = statistics.median(theirs.ratios[s]), statistics.median(mine.ratios[s])
        if significant and after < before:
            return (f"the whole compiled call got slower beyond the noise: shape {s} eager / compiled ×{before:.2f} → "
                    f"×{after:.2f} in the same process (Mann–Whitney p={p:.2g}, held over {len(usable)} shape(s))"
                    + (f"; {p50}" if p50 else "")), ""
    return "", (f"the whole call not slower beyond the noise (eager / compiled per shape, Mann–Whitney held over "
                f"{len(usable)} shape(s) at {ALPHA:.0%})")


def guard_rejection(t: TrialReport, default: TrialReport | None,
                    samples: Mapping[str, Interleaved] | None = None) -> str:
    """Why a guard filter's trial is rejected ('' when it is not): stale after a change, guard
    checks not lower beyond the tolerance, or its whole call slower (or not told:
    :func:`whole_call`). Two trials are two processes, so the checks are compared as each trial
    measured them against its own eager call (interleaved in the same process), free of the
    processes' speeds."""
    stale = [c for c in t.soundness if c.verdict == "stale"]
    if stale:
        return f"unsafe: {stale[0].detail} — it is only right if {_assumption(t)}"
    mine = t.guards.eager_ratio if t.guards is not None else None
    theirs = default.guards.eager_ratio if default is not None and default.guards is not None else None
    if mine is None or theirs is None:
        return "did not reduce what it targets: its guard checks were not measured against eager"
    if mine >= theirs or within_tolerance(mine, theirs):
        return (f"did not reduce what it targets: guard checks {theirs:.1%} → {mine:.1%} of an eager call "
                f"(not lower beyond {TOLERANCE:.0%})")
    return whole_call(t, default, samples or {})[0]


def _steady(t: TrialReport) -> float | None:
    total = sum(r.requests for r in t.rows if r.steady is not None)
    return sum(r.requests * r.steady.median for r in t.rows if r.steady is not None) / total if total else None


def guard_gain(t: TrialReport, default: TrialReport | None, samples: Mapping[str, Interleaved] | None = None) -> str:
    """The per-call saving of an accepted filter, what its soundness checks showed and the
    assumption it makes."""
    mine = t.guards.repeated_s if t.guards is not None else None
    theirs = default.guards.repeated_s if default is not None and default.guards is not None else None
    parts = []
    if mine is not None and theirs is not None and theirs:
        parts.append(f"guard checks {fmt_time(theirs)} → {fmt_time(mine)} a call (−{fmt_time(theirs - mine)}, "
                     f"{(theirs - mine) / theirs:.0%})")
    a, b = (_steady(default) if default is not None else None), _steady(t)
    if a is not None and b is not None:
        parts.append(f"compiled call p50 {fmt_time(a)} → {fmt_time(b)} on the stream's mix")
    parts.append(whole_call(t, default, samples or {})[1])
    checked = [c for c in t.soundness if c.verdict == "sound"]
    parts.append(("changed and still right: " + ", ".join(f"`{c.mutation}`" for c in checked)) if checked else
                 "no change the trial could make showed it stale")
    parts.append(f"it assumes {_assumption(t)}")
    return "; ".join(p for p in parts if p)
