"""``compilescope.warm_up``: a plan's start-up shapes through an already-compiled callable,
with real ``torch.compile`` (backend eager)."""

from __future__ import annotations

import dataclasses

import pytest
import torch

import compilescope
from compilescope.errors import CompilescopeError, OptionError
from compilescope.model import StrategyOptions
from compilescope.warmup import StrategyPlan, Uncovered, WarmupPlan, save_plan
from compilescope.analysis.outcomes import call_arguments as split_inputs


def sincos(x):
    return torch.sin(x) * torch.cos(x) + 1


def make_inputs(shape):
    return (torch.randn(shape["n"]),)


def static_plan(**extra) -> StrategyPlan:
    return StrategyPlan("static", StrategyOptions(backend="eager"), shapes=({"n": 4}, {"n": 8}),
                        covers=({"n": 4}, {"n": 8}), compiles=2, frame_entries=2, **extra)


def whole_plan(sp: StrategyPlan) -> WarmupPlan:
    return WarmupPlan("sincos", "8,4,8", 3, "eager", (sp,), recommended=sp.strategy)


def test_a_covered_shape_after_the_warm_up_compiles_nothing(tmp_path):
    compiled = torch.compile(sincos, backend="eager", dynamic=False)
    path = tmp_path / "plan.json"
    save_plan(whole_plan(static_plan()), path)
    result = compilescope.warm_up(compiled, str(path), make_inputs)  # a plan file, its recommended strategy
    assert result.strategy == "static" and not result.strict
    assert [(s.shape, s.compiles, s.hit) for s in result.shapes] == [({"n": 4}, 1, False), ({"n": 8}, 1, False)]
    assert result.shapes[1].compile_ids == ("0/1",) and result.compiles == 2
    assert all(s.seconds > 0 for s in result.shapes)
    with compilescope.watch() as w:
        compiled(torch.randn(8))
        compiled(torch.randn(4))
    assert w.compiles == 0
    again = compilescope.warm_up(compiled, whole_plan(static_plan()), make_inputs)
    assert [s.hit for s in again.shapes] == [True, True] and again.compiles == 0


def test_strict_raises_when_a_covered_shape_compiles_again_naming_the_guard():
    compiled = torch.compile(sincos, backend="eager", dynamic=False)
    with torch.no_grad():  # the service warms up without autograd…
        result = compilescope.warm_up(compiled, static_plan(), make_inputs, strict=True)
        compiled(torch.randn(8))  # a covered shape hits
        compiled(torch.randn(16))  # an uncovered one compiles: reported, not raised
    assert result.violations == () and [str(r.compile_id) for r in result.uncovered] == ["0/2"]
    compiled(torch.randn(4))  # …and serves with it: grad mode is guarded, the covered shape compiles again
    assert [shape for shape, _ in result.violations] == [{"n": 4}]
    with pytest.raises(compilescope.RecompileBudgetExceeded) as caught:
        result.close()
    message = str(caught.value)
    assert "1 compile(s) of shapes the warm-up plan covers exceed its budget of 0" in message
    assert "covered shape 4:" in message and "GLOBAL_STATE changed: grad_mode" in message
    assert "0/3 sincos" in message and "1 compile(s) of shapes the plan does not cover" in message
    compiled(torch.randn(8))  # the watch has ended: nothing more is counted
    assert len(result.violations) == 1


def test_strict_as_a_context_manager_ends_quietly_when_nothing_covered_compiled():
    compiled = torch.compile(sincos, backend="eager", dynamic=False)
    with compilescope.warm_up(compiled, static_plan(), make_inputs, strict=True) as result:
        compiled(torch.randn(4))
        compiled(torch.randn(32))  # uncovered
        result.check()
    assert len(result.uncovered) == 1 and result.violations == ()


def test_the_limit_in_force_is_checked_against_the_plans():
    compiled = torch.compile(sincos, backend="eager", dynamic=False)
    sp = static_plan(recompile_limit=20)
    before = torch._dynamo.config.recompile_limit
    assert before < 20
    with pytest.raises(OptionError) as caught:
        compilescope.warm_up(compiled, sp, make_inputs)
    message = str(caught.value)
    assert "\n" not in message and "recompile_limit 20" in message and f"in force is {before}" in message
    with pytest.raises(OptionError, match="in force is 4"):
        compilescope.warm_up(compiled, sp, make_inputs, recompile_limit=4, set_limit=True)  # fn's own limit
    try:
        result = compilescope.warm_up(compiled, sp, make_inputs, set_limit=True)
        assert torch._dynamo.config.recompile_limit == 20 and result.recompile_limit == 20
        assert result.limit_note == f"set torch._dynamo.config.recompile_limit from {before} to 20, as the plan needs"
    finally:
        torch._dynamo.config.recompile_limit = before


@pytest.mark.parametrize("text", ["not json", '{"kind": "run"}', '{"kind": "warmup-plan", "schema_version": 99}'])
def test_a_bad_plan_file_is_one_line(tmp_path, text):
    path = tmp_path / "plan.json"
    path.write_text(text)
    with pytest.raises(CompilescopeError) as caught:
        compilescope.warm_up(sincos, path, make_inputs)
    assert "\n" not in str(caught.value) and "plan.json" in str(caught.value)


def test_a_missing_plan_file_an_unknown_strategy_and_a_wrong_type_are_one_line(tmp_path):
    for plan, strategy in ((tmp_path / "none.json", None), (whole_plan(static_plan()), "dynamic"), (42, None)):
        with pytest.raises(CompilescopeError) as caught:
            compilescope.warm_up(sincos, plan, make_inputs, strategy=strategy)
        assert "\n" not in str(caught.value)


def test_uncovered_shapes_of_the_plan_are_not_counted_as_covered():
    sp = static_plan(uncovered=(Uncovered({"n": 8}, "compile", "L['x'] size"),))
    compiled = torch.compile(sincos, backend="eager", dynamic=False)
    with compilescope.warm_up(compiled, sp, make_inputs, strict=True) as result:
        with torch.no_grad():
            compiled(torch.randn(8))  # recompiles (grad mode), but the plan said 8 is uncovered
    assert result.violations == () and len(result.uncovered) == 1


def test_what_make_inputs_returns_is_read_by_one_rule():
    x = torch.zeros(1)
    assert split_inputs({"x": x}) == ((), {"x": x})
    assert split_inputs(((x,), {"n": 2})) == ((x,), {"n": 2})
    assert split_inputs((x, x)) == ((x, x), {})
    assert split_inputs([x]) == ((x,), {})
    assert split_inputs(x) == ((x,), {})


def test_missing_artifacts_are_one_line_and_a_plan_naming_a_folder_without_them_loads_none(tmp_path):
    compiled = torch.compile(sincos, backend="eager", dynamic=False)
    with pytest.raises(CompilescopeError) as caught:
        compilescope.warm_up(compiled, static_plan(), make_inputs, artifacts=tmp_path / "none.bin")
    assert "\n" not in str(caught.value) and "none.bin" in str(caught.value)
    path = tmp_path / "plan.json"
    save_plan(dataclasses.replace(whole_plan(static_plan()), artifacts="artifacts"), path)
    (tmp_path / "artifacts").mkdir()  # the eager backend saves no artifacts: the folder has no static.bin
    result = compilescope.warm_up(compiled, path, make_inputs)
    assert result.artifacts_load_s is None and result.compiles == 2


def test_strict_watches_the_warmed_callable_only():
    compiled = torch.compile(sincos, backend="eager", dynamic=False)
    other = torch.compile(lambda x: x.cos(), backend="eager")
    with compilescope.warm_up(compiled, static_plan(), make_inputs, strict=True) as result:
        compiled(torch.randn(4))  # the latest call of the warmed callable is a covered shape…
        other(torch.randn(4))  # …and another compiled function compiles: not the plan's budget
    assert result.violations == () and result.uncovered == ()


def test_strict_with_a_compiled_module():
    torch.manual_seed(0)
    model = torch.compile(torch.nn.Linear(4, 2), backend="eager", dynamic=False)
    sp = StrategyPlan("static", StrategyOptions(backend="eager"), shapes=({"batch": 2},), covers=({"batch": 2},))
    with torch.no_grad():
        result = compilescope.warm_up(model, sp, lambda s: {"input": torch.randn(s["batch"], 4)}, strict=True)
    assert [s.compiles for s in result.shapes] == [1]
    model(torch.randn(2, 4))  # positional here, keyword in the warm-up: the same signature; grad mode differs
    model(torch.randn(3, 4))  # uncovered
    assert [shape for shape, _ in result.violations] == [{"batch": 2}] and len(result.uncovered) == 1
    with pytest.raises(compilescope.RecompileBudgetExceeded, match="grad_mode"):
        result.close()


def test_a_compile_check_raised_is_not_raised_again_at_close():
    compiled = torch.compile(sincos, backend="eager", dynamic=False)
    with torch.no_grad():
        result = compilescope.warm_up(compiled, static_plan(), make_inputs, strict=True)
    compiled(torch.randn(4))  # grad mode on: the covered shape compiles again
    with pytest.raises(compilescope.RecompileBudgetExceeded):
        result.check()
    result.close()  # the one violation was raised already
    assert len(result.violations) == 1


def test_make_inputs_failing_names_the_shape_and_the_plans_workload():
    compiled = torch.compile(sincos, backend="eager", dynamic=False)
    with pytest.raises(OptionError) as caught:
        compilescope.warm_up(compiled, whole_plan(static_plan()), lambda shape: (torch.randn(shape["batch"]),))
    assert str(caught.value) == "make_inputs({'n': 4}) raised KeyError: 'batch' (the plan is for workload 'sincos')"
