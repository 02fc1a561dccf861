"""JSON: the versioned results file (raw records; statistics are derived on load)."""

from __future__ import annotations

from ..model import RunResult
from ..schema import dumps


def render(result: RunResult) -> str:
    return dumps(result)
