"""Compare two runs (A, the baseline, and B): per trial label and shape, the change in steady
state, first call, compiles and compile seconds — flagged only beyond the noise.

Rules, stated once:

* **steady state** — timing on a shared CPU is bimodal per process, so a compiled trial is
  compared by its compiled p50 *relative to the eager p50 sampled in the same process*
  (what compiling buys, free of the process's speed); the eager trial, which has no such
  baseline, by its raw p50. A change is flagged only when the two IQR intervals do not
  overlap and it is beyond ``MIN_EFFECT``;
* **compiles** — counts are exact: any change is flagged;
* **first call, compile seconds** — single samples with no IQR: flagged only beyond
  ``SINGLE_SAMPLE_TOLERANCE`` and ``SINGLE_SAMPLE_MIN_S``;
* the **eager trial** has no same-process baseline, so its raw p50 is shown but never flagged:
  it moves with the process's speed, which says nothing about compiling.

A flagged change is a regression when B is worse (slower, more compiles).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..model import RunResult
from ..report import RunReport, Stats, TrialReport
from .build import build_run_report

MIN_EFFECT = 0.05
SINGLE_SAMPLE_TOLERANCE = 0.25
SINGLE_SAMPLE_MIN_S = 0.05  # and at least this many seconds: a tiny compile's jitter is no regression

Flag = Literal["regression", "improvement", ""]


@dataclass(frozen=True)
class Change:
    trial: str
    shape: str  # "" for a trial-level figure
    figure: str  # "steady p50 / eager", "steady p50", "first call", "compiles", "compile s"
    a: float | None
    b: float | None
    change: float | None  # relative: b / a − 1
    flag: Flag
    why: str


@dataclass(frozen=True)
class CompareReport:
    a: str
    b: str
    changes: tuple[Change, ...]
    only_in_a: tuple[str, ...]
    only_in_b: tuple[str, ...]

    @property
    def regressions(self) -> tuple[Change, ...]:
        return tuple(c for c in self.changes if c.flag == "regression")


def _rel(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or a == 0:
        return None
    return b / a - 1.0


def _interval(s: Stats, scale: float = 1.0) -> tuple[float, float]:
    return (s.q1 / scale, s.q3 / scale)


def _steady(trial: str, shape: str, figure: str, a: Stats, b: Stats, a_scale: float, b_scale: float) -> Change:
    am, bm = a.median / a_scale, b.median / b_scale
    (a1, a3), (b1, b3) = _interval(a, a_scale), _interval(b, b_scale)
    rel = _rel(am, bm)
    separated = b1 > a3 or b3 < a1
    if rel is None or not separated:
        return Change(trial, shape, figure, am, bm, rel, "", "within the IQRs")
    if abs(rel) < MIN_EFFECT:
        return Change(trial, shape, figure, am, bm, rel, "", f"below {MIN_EFFECT:.0%}")
    return Change(trial, shape, figure, am, bm, rel, "regression" if rel > 0 else "improvement", "IQRs do not overlap")


def _single(trial: str, figure: str, a: float | None, b: float | None) -> Change:
    rel = _rel(a, b)
    if rel is None or abs(rel) <= SINGLE_SAMPLE_TOLERANCE:
        return Change(trial, "", figure, a, b, rel, "", f"within ±{SINGLE_SAMPLE_TOLERANCE:.0%} (one sample)")
    if abs((b or 0.0) - (a or 0.0)) < SINGLE_SAMPLE_MIN_S:
        return Change(trial, "", figure, a, b, rel, "", f"under {SINGLE_SAMPLE_MIN_S * 1e3:.0f} ms apart (one sample)")
    return Change(trial, "", figure, a, b, rel, "regression" if rel > 0 else "improvement",
                  f"beyond ±{SINGLE_SAMPLE_TOLERANCE:.0%} (one sample)")


def _trial_changes(ta: TrialReport, tb: TrialReport) -> list[Change]:
    label = ta.label
    out: list[Change] = []
    if ta.compiles_code:
        a_n, b_n = ta.stream.compiles, tb.stream.compiles
        flag: Flag = "" if a_n == b_n else ("regression" if b_n > a_n else "improvement")
        out.append(Change(label, "", "compiles", a_n, b_n, _rel(a_n, b_n), flag, "counts are exact"))
        out.append(_single(label, "compile s", ta.stream.compile_s, tb.stream.compile_s))
    out.append(_single(label, "first call", ta.first_call_s, tb.first_call_s))
    rows_b = {r.shape: r for r in tb.rows}
    for ra in ta.rows:
        rb = rows_b.get(ra.shape)
        if rb is None or ra.steady is None or rb.steady is None:
            continue
        if ta.compiles_code:
            if ra.eager is None or rb.eager is None:
                continue
            out.append(_steady(label, ra.shape, "steady p50 / eager", ra.steady, rb.steady, ra.eager.median,
                               rb.eager.median))
        else:
            change = _steady(label, ra.shape, "steady p50", ra.steady, rb.steady, 1.0, 1.0)
            if change.flag:
                change = Change(change.trial, change.shape, change.figure, change.a, change.b, change.change, "",
                                "eager itself moved: process speed, not compiling (compiled trials are compared "
                                "against their own process's eager)")
            out.append(change)
    return out


def compare_reports(a: RunReport, b: RunReport, a_name: str = "A", b_name: str = "B") -> CompareReport:
    by_b = {t.label: t for t in b.trials if t.status == "ok"}
    changes: list[Change] = []
    for ta in a.trials:
        tb = by_b.get(ta.label)
        if ta.status == "ok" and tb is not None:
            changes.extend(_trial_changes(ta, tb))
    labels_a = {t.label for t in a.trials if t.status == "ok"}
    return CompareReport(a_name, b_name, tuple(changes), tuple(sorted(labels_a - set(by_b))),
                         tuple(sorted(set(by_b) - labels_a)))


def compare_runs(a: RunResult, b: RunResult, a_name: str = "A", b_name: str = "B") -> CompareReport:
    return compare_reports(build_run_report(a), build_run_report(b), a_name, b_name)


def parse_threshold(text: str) -> float:
    """``5%`` or ``0.05`` → 0.05."""
    from ..errors import OptionError

    t = text.strip()
    try:
        value = float(t[:-1]) / 100 if t.endswith("%") else float(t)
    except ValueError:
        raise OptionError(f"malformed --fail-on-regression {text!r}: use a percentage such as 5%") from None
    if value < 0:
        raise OptionError(f"--fail-on-regression {text!r} is negative")
    return value
