"""Pure helpers over raw samples and call records: statistics, the noise rules, cumulative
time, break-even.

The noise rules, stated once and used by every report:

* two sampled figures differ only when their interquartile ranges do not overlap
  (:func:`iqr_separated`);
* a relative difference within :data:`TOLERANCE` is no difference: a speedup within it of
  ×1 "matched eager" (the verdict, a shape's speed class), a change of speedup within it is
  not flagged (``compare``), proposals scoring within it of the best are a tie (``advise``),
  and a graph within it of another's speed is not slower (``advise``'s bucket proposal).

``compare``'s single-sample figures (first call, compile seconds) have no IQR and use their
own, wider ``SINGLE_SAMPLE_TOLERANCE``: one sample's jitter, not the spread of many.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from ..model import CallRecord
from ..report import Stats

TOLERANCE = 0.05  # a relative difference within ±5% is no difference


def iqr_separated(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """Whether two (low, high) interquartile ranges do not overlap: the one test of a
    difference beyond the noise."""
    return a[1] < b[0] or a[0] > b[1]


def summarize_samples(samples: Sequence[float]) -> Stats | None:
    """Median and quartiles (inclusive method): the median is ``statistics.median``."""
    if not samples:
        return None
    if len(samples) == 1:
        return Stats(1, samples[0], samples[0], samples[0])
    q1, _, q3 = statistics.quantiles(samples, n=4, method="inclusive")
    return Stats(len(samples), statistics.median(samples), q1, q3)


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (0–100) by linear interpolation between the closest ranks —
    the inclusive method of :func:`summarize_samples`' quartiles (numpy's default); None
    without values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def weighted_mean(values: Sequence[float], weights: Sequence[float]) -> float | None:
    """Σ weight × value / Σ weight (a stream-weighted figure: each shape by its requests);
    None when the weights sum to zero."""
    total = sum(weights)
    if not total:
        return None
    return sum(w * v for v, w in zip(values, weights)) / total


def cumulative(latencies: Sequence[float | None]) -> list[float]:
    total, out = 0.0, []
    for value in latencies:
        total += value or 0.0
        out.append(total)
    return out


def break_even_request(strategy_calls: Sequence[CallRecord], eager_calls: Sequence[CallRecord]) -> int | None:
    """The number of requests after which the strategy's cumulative wall time is at or below
    eager's and stays there to the end of the stream; ``None`` if that never happens or a
    request failed on either side (a failed request has no wall time to compare)."""
    n = min(len(strategy_calls), len(eager_calls))
    if n == 0 or any(c.latency_s is None for c in (*strategy_calls[:n], *eager_calls[:n])):
        return None
    mine = cumulative([c.latency_s for c in strategy_calls[:n]])
    base = cumulative([c.latency_s for c in eager_calls[:n]])
    result = None
    for i in range(n - 1, -1, -1):
        if mine[i] <= base[i]:
            result = i + 1
        else:
            break
    return result
