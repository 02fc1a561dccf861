"""Number formatting shared by the renderers (formatting only, no figures)."""

from __future__ import annotations


def fmt_time(seconds: float | None) -> str:
    """A duration with its unit, three significant figures: ``98.1 µs``, ``1.23 ms``, ``20.5 s``."""
    if seconds is None:
        return "—"
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if seconds >= scale:
            value = seconds / scale
            return f"{value:.3g} {unit}" if value < 100 else f"{value:.0f} {unit}"
    return f"{seconds * 1e9:.0f} ns"
