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
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..analysis.outcomes import limit_in_force
from ..errors import OptionError, ResultsError
from ..model import SCHEMA_VERSION, Shape, StrategyOptions, shape_key

PLAN_KIND = "warmup-plan"


@dataclass(frozen=True)
class Uncovered:
    """A recorded shape the plan does not keep off the request path, and why (``compile``
    with the guard that would fail, ``eager``: refused at the recompile limit, or ``unknown``:
    the forecast cannot tell, so the plan cannot claim it)."""

    shape: Shape
    outcome: str
    why: str


@dataclass(frozen=True)
class StrategyPlan:
    """One strategy's start-up: call ``shapes`` in order through the compiled callable.

    ``compiles``: frame compiles the warm-up makes (forecast); ``frame_entries``: the most
    cache entries one frame holds after it, which ``recompile_limit`` must exceed;
    ``minimal``: how the list was checked to be smallest (each shape dropped in turn)."""

    strategy: str
    options: StrategyOptions
    shapes: tuple[Shape, ...]
    covers: tuple[Shape, ...] = ()
    uncovered: tuple[Uncovered, ...] = ()
    compiles: int = 0
    frame_entries: int = 0
    recompile_limit: int | None = None
    recompile_limit_default: int = field(default_factory=lambda: limit_in_force(None))  # PyTorch's, where planned
    minimal: str = ""

    def covered(self, shape: Shape) -> bool:
        return shape_key(shape) in {shape_key(s) for s in self.covers}


@dataclass(frozen=True)
class WarmupPlan:
    """Every strategy's plan for one workload and recording, and the one recommended."""

    workload: str
    stream: str
    requests: int
    backend: str
    plans: tuple[StrategyPlan, ...]
    recommended: str | None = None
    why: str = ""
    artifacts: str | None = None  # mega-cache artifacts, relative to the plan file's folder
    torch_version: str = ""
    created: str = ""
    schema_version: int = SCHEMA_VERSION
    kind: str = PLAN_KIND
    notes: tuple[str, ...] = field(default_factory=tuple)

    def plan(self, strategy: str | None = None) -> StrategyPlan:
        """The named strategy's plan, else the recommended one."""
        name = strategy or self.recommended
        if name is None:
            known = ", ".join(p.strategy for p in self.plans) or "none"
            raise OptionError(f"the plan recommends no strategy (it was not measured): name one of {known}")
        for p in self.plans:
            if p.strategy == name:
                return p
        known = ", ".join(p.strategy for p in self.plans) or "none"
        raise OptionError(f"the plan file has no plan for strategy {name!r} (it has: {known})")


def dumps_plan(plan: WarmupPlan) -> str:
    from ..schema import to_data

    return json.dumps(to_data(replace(plan, schema_version=SCHEMA_VERSION)), indent=1, allow_nan=False) + "\n"


def save_plan(plan: WarmupPlan, path: str | Path) -> None:
    from ..paths import write_atomic

    write_atomic(Path(path), dumps_plan(plan))


def loads_plan(text: str | bytes, origin: str = "<string>") -> WarmupPlan:
    from ..schema import check_version, from_data

    try:
        data = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ResultsError(f"{origin} is not a warm-up plan: not JSON ({exc})"[:300]) from None
    if not isinstance(data, dict) or data.get("kind") != PLAN_KIND:
        raise ResultsError(f"{origin} is not a warm-up plan (kind is not {PLAN_KIND!r})")
    check_version(data.get("schema_version"), origin)
    data["schema_version"] = SCHEMA_VERSION
    plan = from_data(WarmupPlan, data, origin)
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
