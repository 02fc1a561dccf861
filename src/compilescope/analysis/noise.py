"""When a difference between two sets of timings is evidence, and when the machine was too busy
to trust timings at all.

**A significance test on the samples** (:func:`mann_whitney_p`): the two-sided Mann–Whitney U
test (asv's ``compare`` uses it too) — exact for small samples without ties, the normal
approximation with the tie and continuity corrections otherwise. It assumes nothing about the
timings' distribution (they are skewed and, under load, bimodal).

**Many shapes, one claim each** (:func:`holm`): a trial judges every distinct shape at once, so
with 13 shapes and a 1% test on each, noise alone would call one of them different every few
runs. The Holm–Bonferroni step-down procedure keeps the chance of *any* false claim among the
shapes of one trial at :data:`ALPHA` (1%).

**Over the stream's shapes** (:func:`sign_test_p`): a stream-wide saving is evidence when one
of its shapes' tests says so in the same direction, or when the shapes agree in direction more
often than chance allows (the sign test across shapes, each shape one replication).

**Too few samples** (:func:`min_p`): with n and m samples the smallest p-value the exact test
can give is 2 / C(n+m, n) — five against five cannot reach 1% — so a shape with too few
samples is said to be one that could not be told apart, not matched.

**A busy machine** (:func:`busy`): the one-minute load average a trial recorded at its start
and end, against the CPUs it could use; as pyperf records ``load_avg_1min``, a load above the
CPUs means other work competed with the measurement.
"""

from __future__ import annotations

import functools
import itertools
import math
import statistics
from collections.abc import Sequence

from ..model import TrialEnv, TrialResult, shape_label

ALPHA = 0.01  # the chance of any false per-shape claim among one trial's shapes (family-wise)
EXACT_MAX = 2_500  # n·m up to which the exact distribution of U is computed


def _ranks(values: Sequence[float]) -> tuple[list[float], list[int]]:
    """Mid-ranks of ``values`` (ties share their mean rank) and the sizes of the tied groups."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    ties: list[int] = []
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        if j > i:
            ties.append(j - i + 1)
        i = j + 1
    return ranks, ties


@functools.lru_cache(maxsize=256)
def _u_cumulative(n: int, m: int) -> tuple[int, ...]:
    """How many orderings give U ≤ u, for each u (the distribution depends on n and m only)."""
    return tuple(itertools.accumulate(_u_counts(n, m)))


def _u_counts(n: int, m: int) -> list[int]:
    """How many of the C(n+m, n) orderings give each U = 0 … n·m: the coefficients of the
    Gaussian binomial [n+m choose n], built as ∏ (1 − q^(m+i)) / (1 − q^i)."""
    size = n * m + 1
    counts = [0] * size
    counts[0] = 1
    for i in range(1, n + 1):
        step = m + i
        for u in range(size - 1, step - 1, -1):  # × (1 − q^(m+i))
            counts[u] -= counts[u - step]
        for u in range(i, size):  # ÷ (1 − q^i)
            counts[u] += counts[u - i]
    return counts


def mann_whitney_p(a: Sequence[float], b: Sequence[float]) -> float | None:
    """The two-sided p-value of the Mann–Whitney U test that ``a`` and ``b`` come from one
    distribution; None when either is empty."""
    n, m = len(a), len(b)
    if not n or not m:
        return None
    ranks, ties = _ranks([*a, *b])
    u = sum(ranks[:n]) - n * (n + 1) / 2
    u = min(u, n * m - u)
    if not ties and n * m <= EXACT_MAX:
        tail = _u_cumulative(n, m)[int(math.floor(u))]
        return min(1.0, 2 * tail / math.comb(n + m, n))
    total = n + m
    tie_term = sum(t ** 3 - t for t in ties) / (total * (total - 1))
    variance = n * m / 12 * ((total + 1) - tie_term)
    if variance <= 0:
        return 1.0
    z = (abs(u - n * m / 2) - 0.5) / math.sqrt(variance)
    return min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2)))


DRIFT_RATIO = 1.25  # the last third's median over the first third's, for samples said to grow


def drift(samples: Sequence[float]) -> tuple[float, float, float] | None:
    """The rank test's p-value that the first and last thirds of samples taken in order come
    from one distribution, with the thirds' medians; None when there are too few samples to
    tell them apart at :data:`ALPHA`. Samples grew when the test holds over all the caller's
    tests (:func:`holm`) and the last third is slower by :data:`DRIFT_RATIO` or more."""
    third = len(samples) // 3
    if min_p(third, third) >= ALPHA:
        return None
    first, last = samples[:third], samples[-third:]
    p = mann_whitney_p(first, last)
    return None if p is None else (p, statistics.median(first), statistics.median(last))


def min_p(n: int, m: int) -> float:
    """The smallest two-sided p-value the exact test can give for n against m samples."""
    if not n or not m:
        return 1.0
    return min(1.0, 2 / math.comb(n + m, n))


def holm(pvalues: Sequence[float | None], alpha: float = ALPHA) -> list[bool]:
    """Which of ``pvalues`` are significant with the family-wise error rate held at ``alpha``
    (Holm's step-down: the k-th smallest of m is compared with alpha / (m − k + 1), stopping at
    the first that fails). None (no test) is never significant and not counted."""
    tested = sorted((p, i) for i, p in enumerate(pvalues) if p is not None)
    out = [False] * len(pvalues)
    for k, (p, i) in enumerate(tested):
        if p >= alpha / (len(tested) - k):
            break
        out[i] = True
    return out


def reachable(n: int, m: int, family: int, alpha: float = ALPHA) -> bool:
    """Whether n against m samples can ever show a difference among ``family`` shapes: the
    smallest p-value possible passes even the strictest of Holm's thresholds."""
    return min_p(n, m) < alpha / max(1, family)


def sign_test_p(above: int, below: int) -> float:
    """The two-sided sign test: the chance of a split at least this uneven between ``above``
    and ``below`` when each is equally likely (ties left out)."""
    n = above + below
    if not n:
        return 1.0
    k = min(above, below)
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n)


def busy(env: TrialEnv) -> float | None:
    """The highest one-minute load average recorded while the trial ran when it was above the
    CPUs the trial could use (other work competed with the measurement), else None."""
    if not env.load or not env.cpus:
        return None
    worst = max(env.load)
    return worst if worst > env.cpus else None


def interleaved_ratios(trial: TrialResult) -> dict[str, list[float]]:
    """Per shape, eager over compiled for each interleaved pair of steady samples: free of the
    process's speed, so two trials (two processes) compare by them."""
    return {shape_label(s.shape): [e / c for c, e in zip(s.compiled_s, s.eager_s) if c > 0]
            for s in trial.steady if s.eager_s and s.compiled_s}
