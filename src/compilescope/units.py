"""Number formatting shared by analysis (the start-mode cells) and the renderers: formatting only."""

from __future__ import annotations


def fmt_time(seconds: float | None) -> str:
    """A duration with its unit, three significant figures: ``98.1 µs``, ``1.23 ms``, ``20.5 s``."""
    if seconds is None:
        return "—"
    if seconds < 0:  # a difference that went the other way: its sign, and its size in the same units
        return "-" + fmt_time(-seconds)
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if seconds >= scale:
            value = seconds / scale
            return f"{value:.3g} {unit}" if value < 100 else f"{value:.0f} {unit}"
    return f"{seconds * 1e9:.0f} ns"


def fmt_seconds(seconds: float | None) -> str:
    """A duration as :func:`fmt_time` writes it, but none at all as ``0 s`` (not ``0 ns``)."""
    return "0 s" if seconds == 0 else fmt_time(seconds)


def n_star_text(n_star: int | None, saving_per_request_s: float | None, significant: bool, beyond_band: bool) -> str:
    """The projected break-even column: a request count, "never" (compiled is slower beyond the
    noise), "could not tell" (a difference outside the IQR band that the samples' test does not
    bear out), "within noise" (inside the band: no saving to project from) or "—" (nothing measured)."""
    if n_star is not None:
        return f"{n_star:,}"
    if saving_per_request_s is None:
        return "—"
    return "never" if significant else "could not tell" if beyond_band else "within noise"
