"""Accounting over the life of a process, and a verdict worded by the evidence.

Every clause is generated from a number in :class:`Evidence`, and appears only when that
number supports it; the opposite clause appears when the data says the opposite. No clause
is ever printed without its figure.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ..model import TrialResult, shape_key
from .regimes import shape_changes, shape_rows, summarize_trial

STEADY_TOLERANCE = 0.05  # a median ratio within ±5% of 1 is "matched eager"
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d)\s*$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_lifetime(lifetime: str | int | None, qps: float | None = None) -> int | None:
    """``10000`` requests, or a duration (``8h``, ``30m``) at ``qps`` requests per second."""
    from ..errors import StrategyError

    if lifetime is None:
        return None
    if isinstance(lifetime, int):
        return lifetime
    text = lifetime.strip()
    if text.isdigit():
        return int(text)
    m = _DURATION.match(text)
    if not m:
        raise StrategyError(f"malformed --lifetime {lifetime!r}: use a request count (10000) or a duration (8h)")
    if qps is None or qps <= 0:
        raise StrategyError(f"--lifetime {lifetime!r} is a duration: give the request rate with --qps")
    return int(float(m[1]) * _UNIT_S[m[2]] * qps)


@dataclass(frozen=True)
class Evidence:
    """The figures a verdict may cite, for one compiled trial."""

    label: str
    stream_len: int
    steady_ratio: float | None = None  # median over shapes of eager p50 / compiled p50
    steady_shapes: int = 0
    steady_noisy: bool = False
    recompiles: int = 0
    recompile_s: float = 0.0
    shape_changes: int = 0
    compile_s: float = 0.0
    compile_cost_s: float = 0.0  # measured: excess latency of the calls that compiled
    saving_per_request_s: float | None = None  # on the stream's shape mix, eager − compiled
    n_star: int | None = None  # projected break-even request count
    break_even_request: int | None = None  # measured, within the stream
    lifetime: int | None = None
    lifetime_gain_s: float | None = None
    numerics_checked: int = 0
    numerics_failed: int = 0
    max_abs_err: float | None = None
    fallbacks: int = 0
    recompile_limit: int | None = None
    graph_breaks: int = 0
    call_errors: int = 0
    padding_waste: float | None = None  # extra elements from bucketing, as a fraction


def _volume(shape: dict[str, int]) -> int:
    return math.prod(shape.values()) if shape else 0


def gather_evidence(trial: TrialResult, eager: TrialResult | None, lifetime: int | None = None) -> Evidence:
    """Derive the evidence for one compiled trial from its raw records."""
    summary = summarize_trial(trial, eager)
    rows = shape_rows(trial)
    counts = {shape_key(r.shape): r.requests for r in rows}
    ratios = [r.speedup for r in rows if r.speedup is not None]
    savings = [
        (counts[shape_key(r.shape)], r.eager.median - r.steady.median)
        for r in rows
        if r.steady is not None and r.eager is not None
    ]
    measured_requests = sum(n for n, _ in savings)
    saving = sum(n * s for n, s in savings) / measured_requests if measured_requests else None
    steady_by_shape = {shape_key(r.shape): r.steady.median for r in rows if r.steady is not None}
    cost = 0.0
    for call in trial.calls:
        if call.compiled and call.latency_s is not None:
            cost += max(0.0, call.latency_s - steady_by_shape.get(shape_key(call.shape), 0.0))
    n_star = math.ceil(cost / saving) if saving is not None and saving > 0 else None
    gain = lifetime * saving - cost if lifetime is not None and saving is not None else None
    checked = [n for n in trial.numerics]
    errs = [n.max_abs_err for n in checked if n.max_abs_err is not None]
    padded = [c for c in trial.calls if c.padded_shape is not None]
    waste = None
    if padded:
        real = sum(_volume(c.shape) for c in padded)
        waste = (sum(_volume(c.padded_shape or {}) for c in padded) / real - 1.0) if real else None
    recompile_events = [e for e in trial.compiles if e.forward and e.is_recompile and not e.failed]
    return Evidence(
        label=summary.label,
        stream_len=len(trial.calls),
        steady_ratio=sorted(ratios)[len(ratios) // 2] if ratios else None,
        steady_shapes=len(ratios),
        steady_noisy=summary.noisy_shapes > 0,
        recompiles=len(recompile_events),
        recompile_s=sum(e.compile_time_s or 0.0 for e in recompile_events),
        shape_changes=len(shape_changes(trial)),
        compile_s=summary.compile_s,
        compile_cost_s=cost,
        saving_per_request_s=saving,
        n_star=n_star,
        break_even_request=summary.break_even_request,
        lifetime=lifetime,
        lifetime_gain_s=gain,
        numerics_checked=len(checked),
        numerics_failed=summary.numerics_failed,
        max_abs_err=max(errs) if errs else None,
        fallbacks=sum(1 for c in trial.calls if c.ran_eagerly),
        recompile_limit=_recompile_limit(trial),
        graph_breaks=summary.graph_breaks,
        call_errors=summary.errors,
        padding_waste=waste,
    )


def _recompile_limit(trial: TrialResult) -> int | None:
    """The limit the trial ran under: --recompile-limit, else torch's default it recorded."""
    if trial.spec.options.recompile_limit is not None:
        return trial.spec.options.recompile_limit
    default = trial.env.get("recompile_limit_default")
    return int(default) if default and default.isdigit() else None


def _t(seconds: float) -> str:
    if abs(seconds) >= 1:
        return f"{seconds:.1f} s"
    if abs(seconds) >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} µs"


def verdict_clauses(e: Evidence) -> list[str]:
    """The verdict, clause by clause; each present only when its evidence is."""
    out: list[str] = []
    if e.steady_ratio is not None:
        r = e.steady_ratio
        where = f"×{r:.2f} median over {e.steady_shapes} shape(s){', noisy' if e.steady_noisy else ''}"
        if r >= 1 + STEADY_TOLERANCE:
            out.append(f"steady-state execution improved under repeated compatible inputs ({where})")
        elif r <= 1 / (1 + STEADY_TOLERANCE):
            out.append(f"steady-state execution was slower than eager ({where})")
        else:
            out.append(f"steady-state execution matched eager within ±{STEADY_TOLERANCE:.0%} ({where})")
    if e.recompiles:
        out.append(f"shape transitions triggered recompilation ({e.recompiles} recompile(s), {_t(e.recompile_s)})")
    elif e.shape_changes:
        out.append(f"shape transitions reused compiled graphs ({e.shape_changes} shape change(s), 0 recompiles)")
    if e.fallbacks:
        limit = f" ({e.recompile_limit})" if e.recompile_limit is not None else ""
        out.append(f"{e.fallbacks} request(s) ran eagerly after the recompile limit{limit} was hit or a compile failed")
    if e.graph_breaks:
        out.append(f"{e.graph_breaks} distinct graph break(s) split the compiled code")
    if e.padding_waste is not None:
        out.append(f"bucketing padded the stream with {e.padding_waste:.0%} extra elements")
    if e.saving_per_request_s is not None:
        if e.n_star is not None:
            clause = (
                f"compile cost is repaid after ~{e.n_star:,} requests ({_t(e.compile_cost_s)} of compile stalls, "
                f"{_t(e.saving_per_request_s)} saved per request)"
            )
            if e.break_even_request is not None:
                clause += f"; within this stream from request {e.break_even_request}"
            out.append(clause)
        else:
            out.append(
                f"compile cost is never repaid on this shape mix (compiled requests are "
                f"{_t(-e.saving_per_request_s)} slower on average; {_t(e.compile_cost_s)} of compile stalls)"
            )
    if e.lifetime is not None and e.lifetime_gain_s is not None:
        if e.lifetime_gain_s > 0:
            out.append(f"over a lifetime of {e.lifetime:,} requests compiling saves ~{_t(e.lifetime_gain_s)}")
        else:
            out.append(
                f"over a lifetime of {e.lifetime:,} requests compiling costs ~{_t(-e.lifetime_gain_s)} more than eager"
            )
    if e.numerics_checked:
        err = f", max abs err {e.max_abs_err:.1e}" if e.max_abs_err is not None else ""
        if e.numerics_failed:
            out.append(f"outputs differed from eager on {e.numerics_failed} of {e.numerics_checked} shape(s){err}")
        else:
            out.append(f"outputs matched eager on every shape ({e.numerics_checked} shape(s){err})")
    if e.call_errors:
        out.append(f"{e.call_errors} request(s) raised")
    return out


def verdict_text(e: Evidence) -> str:
    clauses = verdict_clauses(e)
    if not clauses:
        return ""
    text = "; ".join(clauses)
    return text[0].upper() + text[1:] + "."
