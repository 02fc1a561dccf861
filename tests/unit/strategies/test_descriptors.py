"""Each strategy's declared dynamic mode is what it compiles with, and what the forecast and the
warm-up planner read (never its name)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from compilescope.model import MarkSpec, StrategyOptions, call_arguments
from compilescope.strategies import TORCH_DYNAMIC, PrepareContext, get_strategy, strategy_names
from compilescope.workload import build_target, seeded_inputs

from ...workloads_for_tests import stack


@dataclasses.dataclass(frozen=True)
class Recording(PrepareContext):
    """A prepare context that notes the ``dynamic=`` each ``torch.compile`` got."""

    seen: list[Any] = dataclasses.field(default_factory=list)

    def compile(self, target: Any, options: StrategyOptions, dynamic: bool | None = None, **extra: Any) -> Any:
        self.seen.append(dynamic)
        return super().compile(target, options, dynamic=dynamic, **extra)


OPTIONS = {"mark-dynamic": dict(marks=(MarkSpec("x", 0),)), "shapes-spec": dict(marks=(MarkSpec("x", 0),)),
           "dynamic-sources": dict(dynamic_sources="L['x']:0")}


@pytest.mark.parametrize("name, marked", [(n, False) for n in strategy_names() if n != "eager"] + [("bucket", True)])
def test_a_strategy_compiles_with_the_dynamic_of_its_declared_mode(name, marked):
    strategy = get_strategy(name)
    options = StrategyOptions(backend="eager", **OPTIONS.get(name, {}))
    if marked:
        options = dataclasses.replace(options, marks=(MarkSpec("x", 1),))
    workload = stack()
    if strategy.unavailable is not None and strategy.unavailable(build_target(workload), options):
        pytest.skip(f"{name} is unavailable here")
    ctx = Recording(lambda s: call_arguments(seeded_inputs(workload, s)), workload.default_stream)
    prepared = strategy.prepare(build_target(workload), options, ctx)
    try:
        assert ctx.seen and set(ctx.seen) == {TORCH_DYNAMIC[strategy.mode(options)]}, (name, ctx.seen)
    finally:
        if prepared.close is not None:
            prepared.close()
    assert strategy.static(options) == (strategy.mode(options) == "static")


def test_the_modes_the_registry_declares():
    modes = {n: get_strategy(n).mode() for n in strategy_names()}
    assert modes == {"eager": "none", "default": "automatic", "static": "static", "dynamic": "dynamic",
                     "mark-dynamic": "marked", "dynamic-sources": "marked", "regional": "automatic",
                     "nested": "automatic", "bucket": "static", "shapes-spec": "marked",
                     **{f"guard-filter[{k}]": "automatic" for k in ("inbuilt-nn", "all-nn", "tensors-only", "no-globals")}}
    assert get_strategy("bucket").mode(StrategyOptions(marks=(MarkSpec("x", 0),))) == "marked"
    assert [n for n in strategy_names() if get_strategy(n).static()] == ["static", "bucket"]

