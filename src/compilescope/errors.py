"""Typed errors. The core raises these with a hint; the CLI prints one line and exits 2."""

from __future__ import annotations


class CompilescopeError(Exception):
    """Base class for a user's mistake (bad input), never for a bug or a failed trial."""


class WorkloadError(CompilescopeError):
    """A workload reference that does not resolve, or a workload that fails to build."""


class StreamError(CompilescopeError):
    """A stream spec that does not parse; the message names the bad token."""


class OptionError(CompilescopeError):
    """A command-line or API option that does not parse or cannot apply here
    (``--strategies`` and the options a strategy needs, ``--lifetime``, ``--cache``,
    ``--mark``, ``--dynamic-sources``, ``--buckets``, ``--backend``, ``--device``,
    ``--fail-on``, ``--where``, ``--objective``, ``probe --config``, a sweep file, an
    output path). Raised by the parsers of :mod:`compilescope.options`."""


class ResultsError(CompilescopeError):
    """A results file that cannot be read, or one with an unknown schema version."""
