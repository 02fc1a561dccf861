"""The warm-up plan file: what ``compilescope warmup`` writes and :func:`compilescope.warm_up`
reads — for each strategy, the shapes to call at start-up, in order, and the settings they
need; versioned JSON (``schema_version``, ``kind: "warmup-plan"``).

A plan is a forecast until verified: ``covers`` are the recorded stream's distinct shapes the
dry run predicts hit a warmed graph after start-up, ``uncovered`` those still predicted to
compile or run eagerly (each with why). ``recompile_limit`` is the limit the plan needs set
(``None``: PyTorch's default suffices); it is never raised silently.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from ..errors import ResultsError
from ..model import PLAN_KIND, SCHEMA_VERSION, StrategyPlan, Uncovered, WarmupPlan

__all__ = ["PLAN_KIND", "StrategyPlan", "Uncovered", "WarmupPlan", "dumps_plan", "load_plan", "loads_plan", "save_plan"]


def dumps_plan(plan: WarmupPlan) -> str:
    from ..schema import to_data

    return json.dumps(to_data(replace(plan, schema_version=SCHEMA_VERSION)), indent=1, allow_nan=False) + "\n"


def save_plan(plan: WarmupPlan, path: str | Path) -> None:
    from ..paths import write_atomic

    write_atomic(Path(path), dumps_plan(plan))


def loads_plan(text: str | bytes, origin: str = "<string>") -> WarmupPlan:
    """A plan file's text read back through :mod:`compilescope.schema` (migrated, each field checked)."""
    from ..schema import decode_document

    try:
        data = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ResultsError(f"{origin} is not a warm-up plan: not JSON ({exc})"[:300]) from None
    if not isinstance(data, dict) or data.get("kind") != PLAN_KIND:
        raise ResultsError(f"{origin} is not a warm-up plan (kind is not {PLAN_KIND!r})")
    plan: WarmupPlan = decode_document(data, kinds=(PLAN_KIND,), origin=origin)
    for sp in plan.plans:
        for name in ("recompile_limit", "recompile_limit_default"):
            value = getattr(sp, name)
            if value is not None and value < 1:
                raise ResultsError(f"{origin}: the {sp.strategy} plan's {name} is {value}; a limit is at least 1")
    return plan


def load_plan(path: str | Path) -> WarmupPlan:
    """Read a plan file (a regular file of bounded size, as results files are)."""
    from ..paths import read_capped

    return loads_plan(read_capped(path, str(path), ResultsError), str(path))
