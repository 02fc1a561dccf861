"""Every eager p50 cell carries the noise mark its figure earns: the same-process eager and the
eager trial's alike (the console and the text report left it off the eager trial's)."""

from __future__ import annotations

from compilescope.render.console import _p50
from compilescope.report.run import Stats


def test_an_eager_p50_cell_is_marked_noisy_as_its_figure_is():
    noisy = Stats(n=10, median=3.8e-6, q1=3.4e-6, q3=4.1e-6)  # IQR 19% of the median
    quiet = Stats(n=10, median=3.8e-6, q1=3.79e-6, q3=3.81e-6)
    assert noisy.noisy and not quiet.noisy
    assert _p50(noisy).plain == "3.8 µs ~" and _p50(quiet).plain == "3.8 µs"
