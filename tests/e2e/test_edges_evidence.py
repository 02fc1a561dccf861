"""No claim beyond the evidence, end to end: a setting PyTorch's graph-break hint names is run
as a trial of its own and measured (advise's hint proposals)."""

from __future__ import annotations

import pytest

from compilescope import StrategyOptions, execute_run, prepare_run, variant

NONZERO = """
import torch
from compilescope import Workload


def build():
    def f(x):
        idx = torch.nonzero(x > 0)
        return (x[idx[:, 0]] * 2).sum() + x.sum()
    return f


w = Workload("nz", build, lambda s: (torch.randn(s["n"]),), ("n",), tuple({"n": n} for n in (16, 32, 16)))
"""


@pytest.fixture(scope="module")
def nonzero_runs(tmp_path_factory):
    from compilescope.analysis.advise import hint_proposals

    tmp = tmp_path_factory.mktemp("hint")
    (tmp / "w.py").write_text(NONZERO)
    options = StrategyOptions(backend="eager")
    from compilescope.model import MeasureOptions

    quick = MeasureOptions(samples=3, min_samples=3, budget_s=0.01, warmup=1)
    _, base, _ = prepare_run(f"{tmp / 'w.py'}:w", None, "default", options=options, measure=quick)
    first = execute_run(base, ["default"], "cold")
    (default,) = first.trials
    proposals = hint_proposals(default, options)
    second = execute_run(base, [variant(p.strategy, p.name, p.options) for p in proposals], "cold")
    return default, proposals, second


def test_a_graph_break_hint_is_run_under_its_setting_and_removes_the_break(nonzero_runs):
    default, proposals, second = nonzero_runs
    assert default.graph_breaks and "capture_dynamic_output_shape_ops = True" in default.graph_breaks[0].reason
    assert [p.name for p in proposals] == ["capture_dynamic_output_shape_ops=True"]
    (hinted,) = second.trials
    assert hinted.spec.label == "default[capture_dynamic_output_shape_ops=True] (cold)" and hinted.ok
    assert hinted.graph_breaks == ()
    compiles = lambda t: sum(1 for r in t.compiles if r.phase == "stream" and r.is_compile)  # noqa: E731
    assert compiles(hinted) < compiles(default)


# --------------------------------------------------------------------------------------------
# No figure for what was not measured, no raw or negative duration
# --------------------------------------------------------------------------------------------

FAILS_ON_META = """
import torch
from compilescope import Workload


def build():
    def f(x):
        raise ValueError("this model refuses every request")
    return f


w = Workload("bad", build, lambda s: (torch.randn(s["n"]),), ("n",), tuple({"n": n} for n in (16, 32, 16)))
"""


def test_durations_keep_their_sign_and_unit_and_a_negative_saving_is_said_so():
    from compilescope.render.verify import _avoided
    from compilescope.units import fmt_time

    assert fmt_time(-2.509818509) == "-2.51 s" and fmt_time(-4.2e-5) == "-42 µs" and fmt_time(0.0) == "0 ns"
    assert _avoided(-2.509818509) == "none (2.51 s more with the warm-up)" and _avoided(0.25) == "250 ms"


@pytest.mark.parametrize("command", ["forecast", "warmup"])
def test_a_plan_or_forecast_whose_every_dry_run_failed_shows_no_figure(main, tmp_path, command):
    (tmp_path / "bad.py").write_text(FAILS_ON_META)
    extra = ("--no-measure",) if command == "warmup" else ()
    code, out, err = main(command, "bad.py:w", "--stream", "16,32,64,16", "--backend", "eager",
                          "--strategies", "default,static", *extra)
    assert code == 1, err  # every request raises, so nothing is forecast or planned: exit 1, as run's
    text = " ".join((out + err).split())
    if command == "forecast":
        assert "default: every request raises (0 compile, 0 hit, 4 error)" in text, text
        assert "0 request(s) compile on the request path" not in text
    else:
        rows = [line for line in out.splitlines() if line.startswith(("default ", "static "))]
        assert len(rows) == 2 and all("— (every dry run failed)" in r for r in rows), out
        assert all("entries/frame: — ·" in r for r in rows), rows  # one record per line off a terminal
