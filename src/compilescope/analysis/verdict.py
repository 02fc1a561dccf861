"""A verdict worded by the evidence: each clause comes from a figure of the trial's report
and appears only when that figure supports it; none is printed without its figure.

* The steady-state headline follows the stream-weighted time (what the stream's mix of
  shapes pays), and a split — faster on some shapes, slower on others — is stated with both
  ranges, never averaged away; a shape counts as faster or slower only when its samples' test
  says so (:mod:`.noise`), and the shapes they could not tell apart are said to be so.
* A saving inside the noise the IQRs show is no saving: no break-even is projected from it.
* Numerics are counted over the shapes that ran compiled; eager fallbacks are named.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .outcomes import tolerance_side  # a ratio within the tolerance of 1 is "matched eager"; one outside it never is
from .regimes import TOLERANCE

if TYPE_CHECKING:
    from ..report import SpeedGroup, TrialReport


def _t(seconds: float) -> str:
    """A duration as every table prints it (:func:`compilescope.units.fmt_time`): 968 ms beside
    2 s, never 967.67 ms beside 2.0 s."""
    from ..units import fmt_time

    return fmt_time(seconds)


def _range(g: SpeedGroup) -> str:
    if g.lo is None or g.hi is None:
        return ""
    return f"×{g.lo:.2f}" if abs(g.hi - g.lo) < 0.005 else f"×{g.lo:.2f}–{g.hi:.2f}"


def _beyond_band(t: TrialReport) -> bool:
    """The steady-state difference lies outside the IQR band (which the test still did not bear out)."""
    return t.saving_beyond_band


def _untested(t: TrialReport) -> str:
    """Why the samples' test did not bear a difference out: it never could (too few samples)."""
    return "too few samples to test the difference" if not t.saving_testable else ""


def steady_clauses(t: TrialReport) -> list[str]:
    s = t.steady
    if s is None:
        return []
    where = f"×{s.weighted_ratio:.2f} stream-weighted over {s.shapes} shape(s), per-shape median ×{s.median_ratio:.2f}"
    if s.noisy:
        where += ", noisy"
    w = s.weighted_ratio
    side = tolerance_side(w)
    if t.saving_significant and side > 0:
        head = f"steady-state execution improved on this stream's mix of shapes ({where})"
    elif t.saving_significant and side < 0:
        head = f"steady-state execution was slower than eager on this stream's mix of shapes ({where})"
    elif t.saving_significant and w != 1:
        # beyond the noise but under the tolerance: say so, since a break-even follows from it
        way = "faster" if w > 1 else "slower"
        head = (f"steady-state execution was marginally {way} than eager: under {TOLERANCE:.0%}, "
                f"but beyond the noise ({where})")
    elif side == 0:  # within the tolerance; where the difference lies outside the IQR band, no "inside the noise"
        how = "a difference the samples' test does not bear out" if _beyond_band(t) else "inside the noise"
        head = f"steady-state execution matched eager: within {TOLERANCE:.0%}, {how} ({where})"
    elif _beyond_band(t):
        # outside the IQR band, yet the samples' test does not support it (too few, or too spread)
        why = _untested(t) or "the samples' test does not bear the difference out"
        head = f"steady-state execution could not be told apart from eager: {why} ({where})"
    else:
        # a ratio beyond the tolerance that the IQRs do not support: no difference was measured,
        # and the ratio is never called a match
        head = (f"steady-state execution could not be told apart from eager: the difference is inside the "
                f"noise ({where})")
    out = [head]
    if s.faster.count and s.slower.count:
        faster = f"faster on {s.faster.count} of {s.shapes} shapes ({s.size_note + ', ' if s.size_note else ''}{_range(s.faster)})"
        slower = f"slower on {s.slower.count} ({_range(s.slower)})"
        matched = f", matched on {s.matched.count} (within {TOLERANCE:.0%})" if s.matched.count else ""
        out.append(f"the shapes disagree: {faster}, {slower}{matched}")
    if s.indistinct.count and s.shapes > 1:
        few = ""
        if s.too_few and s.too_few == s.indistinct.count:
            few = f"; too few samples to test {'it' if s.too_few == 1 else 'them'}"
        elif s.too_few:
            few = f"; {s.too_few} of them with too few samples to test"
        together = ("; the stream's mix, all its samples together, could" if t.saving_significant
                    and s.indistinct.count == s.shapes else "")
        noise = "" if s.too_few == s.indistinct.count else " inside the noise"  # none was testable: no noise told
        out.append(f"{s.indistinct.count} of {s.shapes} shapes could not be told apart from eager "
                   f"({_range(s.indistinct)}{noise}{few}){together}")
    return out


def verdict_clauses(t: TrialReport, limit: int | None = None) -> list[str]:
    """The verdict, clause by clause; each present only when its evidence is."""
    return [*steady_clauses(t), *compile_clauses(t, limit), *guard_clauses(t), *payback_clauses(t),
            *numerics_clauses(t)]


GUARD_SHARE_SHOWN = 0.10  # guard checks this share of a compiled call or more are worth a clause


def guard_clauses(t: TrialReport) -> list[str]:
    """What the guards charged every call: their share of a compiled call when it is large,
    and what the stream's order added to each request when that is beyond the noise."""
    g = t.guards
    if g is None:
        return []
    out = []
    if g.share is not None and g.share >= GUARD_SHARE_SHOWN and g.repeated_s is not None:
        out.append(f"guard checks took {g.share:.0%} of a compiled call ({_t(g.repeated_s)} a call with its entry "
                   "tried first)")
    if g.significant and g.extra_s is not None and g.extra_s > 0 and g.mean_tried is not None:
        out.append(f"recompiles also slowed later calls: on this stream's order a request that hit tried "
                   f"{g.mean_tried:.1f} cache entries on average, +{_t(g.extra_s)} of guard checks a request "
                   f"(over the {g.requests} hit(s) of the stream whose lookups were timed)")
    return out


def compile_clauses(t: TrialReport, limit: int | None = None) -> list[str]:
    """What compiling did over the stream: recompiles or reuse, eager fallbacks, the later
    phases' compiles, graph breaks, padding."""
    out: list[str] = []
    recompiled = [c for c in t.changes if c.outcome == "recompiled"]
    reused = [c for c in t.changes if c.outcome == "reused"]
    if t.stream.recompiles:
        out.append(
            f"shape transitions triggered recompilation ({t.stream.recompiles} recompile(s) among "
            f"{t.stream.compiles} compile(s), {_t(t.stream.compile_s)} compiling)"
            if recompiled else
            f"{t.stream.recompiles} recompile(s) among {t.stream.compiles} compile(s) ({_t(t.stream.compile_s)} compiling)"
        )
    elif reused:
        out.append(f"shape transitions reused compiled graphs ({len(reused)} shape change(s), 0 recompiles)")
    if t.fallbacks:
        why = (f"after the recompile limit{f' ({limit})' if limit is not None else ''} refused to compile"
               if t.stream.refused else "after a compile failed (Dynamo then runs the frame eagerly)"
               if t.stream.failed else "in frames Dynamo skips")
        out.append(f"{t.fallbacks} request(s) ran eagerly {why}: shapes {', '.join(t.fallback_shapes)}")
    if t.later.compiles or t.later.refused:
        bits = []
        if t.later.compiles:
            bits.append(f"{t.later.compiles} more compile(s)")
        if t.later.refused:
            bits.append(f"{t.later.refused} recompile-limit hit(s)")
        out.append(f"the steady-state/numerics phases caused {' and '.join(bits)}")
    if t.graph_breaks:
        out.append(f"{len(t.graph_breaks)} distinct graph break(s) split the compiled code")
    if t.padding_waste is not None:
        out.append(f"bucketing padded the stream with {t.padding_waste:.0%} extra elements")
    return out


def payback_clauses(t: TrialReport) -> list[str]:
    """Whether compiling pays for itself: the saving beyond the noise, the break-even, the lifetime."""
    out: list[str] = []
    if t.saving_per_request_s is not None and t.saving_noise_s is not None:
        if not t.saving_significant and _beyond_band(t):
            told = "was not tested (too few samples)" if _untested(t) else "is not borne out by the samples' test"
            out.append(
                f"the steady-state difference ({_t(t.saving_per_request_s)} per request, IQR band "
                f"±{_t(t.saving_noise_s)}) {told}: no break-even is projected"
            )
        elif not t.saving_significant:
            out.append(
                f"the steady-state difference ({_t(t.saving_per_request_s)} per request) is inside the noise "
                f"(±{_t(t.saving_noise_s)}): no break-even is projected"
            )
        elif t.n_star is not None:
            net = (f" net of the {_t(t.guard_extra_s)} of guard checks this stream's order adds to a hit"
                   if t.guard_extra_s else "")
            eager = ", the stream's requests that ran eagerly counted as saving nothing" if t.fallbacks else ""
            clause = (
                f"compile cost is repaid after ~{t.n_star:,} requests ({_t(t.compile_cost_s)} of compile stalls, "
                f"{_t(t.saving_per_request_s)} saved per request{net}{eager})"
            )
            if t.break_even_request is not None:
                clause += f"; within this stream after {t.break_even_request:,} requests"
            out.append(clause)
        else:
            net = (f", {_t(t.guard_extra_s)} of it guard checks this stream's order adds to a hit" if t.guard_extra_s
                   else "")
            out.append(
                f"compile cost is never repaid on this shape mix (compiled requests are "
                f"{_t(-t.saving_per_request_s)} slower on average{net}; {_t(t.compile_cost_s)} of compile stalls)"
            )
    if t.lifetime is not None and t.lifetime_gain_s is not None:
        if t.lifetime_gain_s > 0:
            out.append(f"over a lifetime of {t.lifetime:,} requests compiling saves ~{_t(t.lifetime_gain_s)}")
        else:
            out.append(f"over a lifetime of {t.lifetime:,} requests compiling costs ~{_t(-t.lifetime_gain_s)} more than eager")
    return out


def numerics_clauses(t: TrialReport) -> list[str]:
    """Whether the compiled outputs matched eager's, and the requests that raised."""
    out: list[str] = []
    if t.numerics_checked:
        err = f", max abs err {t.max_abs_err:.1e}" if t.max_abs_err is not None else ""
        if t.numerics_failed:
            clause = f"outputs differed from eager on {t.numerics_failed} of {t.numerics_checked} compiled shape(s){err}"
        else:
            clause = f"outputs matched eager on every shape that ran compiled ({t.numerics_checked}{err})"
        if t.numerics_uncompared:
            clause += (f"; {t.numerics_uncompared} part(s) of the outputs were past the comparison's bounds "
                       "(nesting depth, leaves) and not compared")
        if t.numerics_eager:
            clause += f"; {t.numerics_eager} shape(s) ran eagerly and were not counted"
        out.append(clause)
    elif t.numerics_eager:
        out.append(f"no shape's numerics ran compiled ({t.numerics_eager} ran eagerly)")
    if t.numerics_not_comparable:
        why = {"eager varies": "eager itself gave different outputs on two calls with the same input (a stateful "
                               "step such as training, or randomness)",
               "eager raised": "the eager reference call raised", "not comparable": "the outputs could not be compared"}
        out.append(f"numerics were not compared on {t.numerics_not_comparable} shape(s): "
                   + "; ".join(why.get(w, w) for w in t.numerics_unjudged))
    if t.call_errors:
        out.append(f"{t.call_errors} request(s) raised")
    return out


def verdict_text(clauses: list[str] | tuple[str, ...]) -> str:
    if not clauses:
        return ""
    text = "; ".join(clauses)
    return text[0].upper() + text[1:] + "."
