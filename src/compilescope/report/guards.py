"""What the guards charge on every call, per trial: made by :mod:`compilescope.analysis.guards`
from a trial's guard-cost records; renderers only format it.

Definitions, stated once:

* the **lookup** of a call is the time its compiled frames' guard checks took before the
  compiled code ran: each cache entry tried, in order, until one entry's guards all pass;
* **entries tried** counts the entries checked, the one that passed included: 1 when the
  call's entry is tried first — as when one size repeats (Dynamo moves the entry a call hits
  to the front);
* a **repeated** figure is a shape's lookup with its entry tried first, measured; a
  **stream** figure is the lookup each request paid in the stream's order, derived from the
  measured checks (every entry's, on that request's shape) and the order Dynamo kept the
  entries in (each compile put its entry first, each hit moved its entry first);
* a source's **share** of a lookup is what the entry's guard check took without that
  source's guards (a copy of its guard tree without them), against the whole tree copied the
  same way: what dropping those guards would save, as far as torch exposes it.
"""

from __future__ import annotations

from dataclasses import dataclass

from .run import Stats


@dataclass(frozen=True)
class GuardSourceRow:
    """The guards of one kind of source in the entry a shape's calls run."""

    category: str  # input, module, parameter, global, ambient, shape, other
    owner: str  # "self.layers[*]" (module indices folded)
    owners: int  # how many sources were folded into it (48 modules)
    guards: int
    kinds: tuple[tuple[str, int], ...]  # guard kind → count, largest first
    count_share: float  # of the entry's guards
    time_s: float | None  # what these guards add to the lookup (None: not timed, or inside the noise)
    share: float | None  # time_s / the lookup's guard check (None when time_s is)
    label: str = ""  # "48 modules self.layers[*]", "parameters of self.linear"… (analysis/presented.py)


@dataclass(frozen=True)
class GuardShapeRow:
    """One distinct shape: what one of its calls pays for guards with its entry tried first."""

    shape: str
    frames: int  # compiled frames a request enters
    entries: int | None  # cache entries of its frame(s) when measured (None: no frame measured)
    lookup: Stats | None  # per call: the passing entry's guard checks, tried first (summed over frames)
    guards: int | None  # guards in the entries that pass (summed over frames and their calls; None: not read)
    kinds: tuple[tuple[str, int], ...]  # guard kind → count, largest first
    share: float | None  # lookup / the compiled call's steady p50
    miss_s: float | None  # median cost of one entry that rejects this shape's input
    pytorch_latency_s: float | None  # PyTorch's guard_latency_us of the passing entry's compile (once, cold)
    sources: tuple[GuardSourceRow, ...]
    note: str = ""  # why figures are missing
    kinds_text: str = ""  # its guard kinds, the largest three named ("TYPE_MATCH 300, …, +2 more"; analysis/presented.py)
    # the costliest source a user can act on (not the frame's global state or the shape relations)
    top_source: GuardSourceRow | None = None


@dataclass(frozen=True)
class GuardPoint:
    """One stream request's lookup, in the stream's order."""

    index: int
    shape: str
    tried: int  # entries tried, the passing one included
    lookup_s: float | None  # derived from the measured checks on its shape
    repeated_s: float | None  # the same shape's lookup with its entry tried first
    compiled: bool = False  # the request compiled (every entry rejected it)


@dataclass(frozen=True)
class GuardSummary:
    rows: tuple[GuardShapeRow, ...]
    points: tuple[GuardPoint, ...]
    requests: int  # stream requests that hit an entry with a derived lookup (the means' base)
    stream_s: float | None  # mean lookup per such request, in the stream's order
    repeated_s: float | None  # mean lookup of the same requests with each one's entry tried first
    mean_tried: float | None
    extra_s: float | None  # stream_s − repeated_s: the entries earlier requests created, tried first
    extra_total_s: float | None  # over the stream
    noise_s: float | None  # the half-IQRs of the checks summed into a request's lookup, averaged
    significant: bool  # extra_s beyond noise_s
    share: float | None  # requests-weighted lookup / compiled steady p50 (entries tried first)
    eager_ratio: float | None  # requests-weighted lookup / eager p50 in the same process (free of the process's speed)
    top: tuple[GuardSourceRow, ...]  # the costliest sources (of the most requested shape)
    text: str  # the stream-order finding in words
    top_text: str  # the top sources in words

    def row_for(self, shape: str) -> GuardShapeRow | None:
        """The guard figures of ``shape`` (None when they were not measured for it)."""
        return next((r for r in self.rows if r.shape == shape), None)
