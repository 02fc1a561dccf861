"""What moves between torch releases, on whichever torch runs the tests.

`make test-torch TORCH=X` runs this file (and the other ``compat``-marked ones) under torch X:
the recompile limit's refusals counted the same, features a release lacks reported as
unavailable with the release that has them, a hook of compilescope's that raises never
reaching the user's call, and a probed program exiting as under plain ``python``.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch

import compilescope
from compilescope import compat

from ..conftest import run_cli

SCENARIOS = Path(__file__).resolve().parents[1] / "probe_scenarios"


def scale(x, n):
    return x * n


def _past_the_limit(calls: int = 10) -> list[torch.Tensor]:
    """``scale`` compiled static with one new int per call: a recompile each, until the limit
    (torch's default, 8) refuses the rest, which run eagerly."""
    f = torch.compile(scale, backend="eager", dynamic=False)
    return [f(torch.ones(3), n) for n in range(calls)]


@pytest.mark.compat("recompile limit")
def test_the_limit_and_its_name_are_read_on_every_release():
    assert compat.recompile_limit_value() == 8  # torch's default on every checked release
    with compat.recompile_limit(3):
        assert compat.recompile_limit_value() == 3
    assert compat.recompile_limit_value() == 8
    expected = "cache_size_limit" if not compat.at_least("2.7") else "recompile_limit"
    assert compat.recompile_limit_name() == expected


@pytest.mark.compat("recompile limit")
def test_a_stream_past_the_limit_counts_compiles_refusals_and_stays_within_a_budget_of_7():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's own "hit config.recompile_limit" warning
        with compilescope.watch(max_recompiles=7) as w:  # raises nothing: 7 recompiles, then refusals
            outputs = _past_the_limit()
    assert (w.compiles, w.recompiles, w.refused) == (8, 7, 1)
    assert [float(o[0]) for o in outputs] == [float(n) for n in range(10)]  # the refused calls ran eagerly
    (refused,) = [r for r in w.records if r.refused]
    assert compat.is_recompile_limit_failure(refused.fail_type, refused.fail_reason)
    assert "refused by the recompile limit" in w.explain()


@pytest.mark.compat("recompile limit")
def test_each_release_wording_of_a_refusal_is_a_refusal_and_a_real_failure_is_not():
    worded = [("Unsupported", "Dynamo recompile limit exceeded (8)"),  # 2.13, 2.14
              ("RecompileLimitExceeded", "recompile_limit reached with one_graph=False"),  # 2.10
              ("CacheLimitExceeded", "cache_size_limit reached")]  # 2.6
    assert all(compat.is_recompile_limit_failure(t, r) for t, r in worded)
    assert not compat.is_recompile_limit_failure("InternalTorchDynamoError", "TypeError: bad operand")
    assert not compat.is_recompile_limit_failure(None, None)


@pytest.mark.compat("features")
def test_a_feature_is_found_exactly_on_the_releases_that_have_it():
    for name, since in compat.FEATURE_SINCE.items():
        assert compat.has_feature(name) == compat.at_least(since), name
        if not compat.has_feature(name):
            assert compat.unavailable(name).endswith(f"(torch {since} or newer has it)")
    argument = compat.shapes_spec_argument()
    assert argument == (None if not compat.at_least("2.13") else "shapes_spec" if not compat.at_least("2.14")
                        else "dynamic_shapes")


@pytest.mark.compat("features")
def test_a_strategy_this_torch_lacks_is_unavailable_with_the_release_that_has_it():
    from compilescope.model import MarkSpec, StrategyOptions
    from compilescope.strategies import get_strategy

    options = StrategyOptions(dynamic_sources="L['x']", marks=(MarkSpec("x", 0),))
    for strategy, feature in (("dynamic-sources", "dynamic_sources"), ("shapes-spec", "shapes_spec")):
        said = get_strategy(strategy).unavailable(scale, options)  # type: ignore[misc]
        assert said == (None if compat.has_feature(feature) else compat.unavailable(feature))


@pytest.mark.compat("features")
def test_a_setting_this_torch_lacks_is_one_line_naming_the_release():
    from compilescope.errors import OptionError
    from compilescope.options import parse_probe_settings

    assert parse_probe_settings(["recompile_limit=3"]) == {"recompile_limit": 3}
    if compat.has_feature("dynamic_sources"):
        assert parse_probe_settings(["dynamic_sources=L['x']"])
    else:
        with pytest.raises(OptionError, match=r"dynamic sources \(torch 2.7 or newer has it\)"):
            parse_probe_settings(["dynamic_sources=L['x']"])


def test_outside_the_checked_range_one_line_says_which_was_checked_and_which_runs():
    assert compat.version_note() is None  # the tests run on a checked release
    for outside in ("2.5.1", "2.15.0", "3.0.0"):
        note = compat.version_note(outside)
        assert note == (f"compilescope was checked on torch 2.6.0 to 2.14.1; this is torch {outside}: "
                        "what it reports of PyTorch's internals may be incomplete")
    assert compat.version_note("2.14.2+cu128") is None and compat.version_note("2.7.1") is None


@pytest.mark.compat("hooks never raise")
def test_a_hook_that_raises_loses_its_capability_never_the_users_call(monkeypatch):
    """The entry-guards hook raises inside Dynamo's compile on purpose: every compiled call
    still returns its result, the counts are still right, and the watch says what was lost."""
    import compilescope.collect.capture as capture

    def broken(*_args, **_kwargs):
        raise TypeError("broken on purpose")

    monkeypatch.setattr(capture, "entry_guards", broken)
    compat.forget_lost_capabilities()
    f = torch.compile(torch.sin, backend="eager", dynamic=False)
    with pytest.warns(RuntimeWarning, match=r"lost entry guards .*TypeError: broken on purpose"):
        with compilescope.watch(max_recompiles=5) as w:
            got = [f(torch.full((n,), 0.5)) for n in (2, 3, 4)]
    assert [tuple(g.shape) for g in got] == [(2,), (3,), (4,)]
    assert all(torch.equal(g, torch.sin(torch.full((g.numel(),), 0.5))) for g in got)
    assert (w.compiles, w.recompiles) == (3, 2)  # the other capabilities still count
    (lost,) = w.lost_capabilities
    assert lost.startswith("lost entry guards (the guards of each new cache entry")
    assert all(not r.entry_guards for r in w.records)  # turned off, not half-working


@pytest.mark.compat("hooks never raise")
def test_a_raising_hook_is_said_in_the_probe_report(tmp_path, monkeypatch):
    import compilescope.collect.capture as capture
    from compilescope.analysis.build import build_probe_report
    from compilescope.probe.capture import probe_script
    from compilescope.render.probe import render

    monkeypatch.setattr(capture, "explain_checks", lambda *_a: (_ for _ in ()).throw(KeyError("walk")))
    monkeypatch.setattr(capture.CaptureSession, "_on_failure",
                        lambda self, code, text: (_ for _ in ()).throw(RuntimeError("observer broke")))
    compat.forget_lost_capabilities()
    result = probe_script(str(SCENARIOS / "shape_static.py"), [])
    assert result.exit_code == 0 and result.error is None  # the program ran to its end
    assert [str(c.compile_id) for c in result.compiles] == ["0/0", "0/1", "0/2"]
    assert result.lost_capabilities == (
        "lost guard failures (the guard-failure reasons of each recompile): its hook raised "
        "RuntimeError: observer broke and turned itself off",)
    assert "compilescope lost guard failures" in render(build_probe_report(result))


@pytest.mark.processes  # probe runs the script in a process of its own
@pytest.mark.compat("probe")
def test_probe_of_a_recompiling_script_exits_as_plain_python_with_its_compiles_counted(tmp_path):
    script = tmp_path / "recompiles.py"
    script.write_text(
        "import sys, torch\n"
        "f = torch.compile(lambda x: x * 2, backend='eager', dynamic=False)\n"
        "for n in (2, 3, 4):\n"
        "    print(float(f(torch.ones(n)).sum()))\n"
        "sys.exit(3)\n")
    plain = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    probed = run_cli("probe", "--json", "out.json", script, cwd=tmp_path, timeout=300)
    assert plain.returncode == probed.returncode == 3, probed.stderr[-2000:]
    assert plain.stdout == probed.stdout == "4.0\n6.0\n8.0\n"
    assert "Traceback" not in probed.stderr
    from compilescope.schema import load

    data = load(tmp_path / "out.json")
    assert [str(c.compile_id) for c in data.compiles] == ["0/0", "0/1", "0/2"]
    assert [g.kind for c in data.compiles for g in c.guard_failures if g.found_by == "pytorch"] == ["size"] * 3  # 0/2: both entries rejected
    assert data.torch_version == compat.torch_version()


@pytest.mark.compat("dynamic_sources")
@pytest.mark.skipif(not compat.has_feature("dynamic_sources"), reason=compat.unavailable("dynamic_sources"))
def test_a_dynamic_sources_setting_for_the_whole_program_stays_after_its_undo_is_dropped():
    """``probe --config dynamic_sources=…`` applies the setting for the whole program and drops
    the undo: the setting must still be read after a collection, and after something compiled
    before it was set (2.7 keeps the first value it parsed; it takes whole sources, not
    ``L['x']:0``)."""
    import gc

    warm = torch.compile(lambda y: y + 1, backend="eager")
    warm(torch.randn(3))
    torch.compiler.reset()
    compat.patch_settings({"dynamic_sources": "L['x']"})  # never undone, as probe does
    gc.collect()
    try:
        counted = []
        f = torch.compile(lambda x: x.sin(), backend=lambda gm, _: counted.append(gm) or gm)
        for n in (4, 8, 16, 32):
            f(torch.randn(n))
        assert torch.compiler.config.dynamic_sources == "L['x']"
        assert len(counted) == 1
    finally:
        torch.compiler.config.dynamic_sources = ""
        torch.compiler.reset()
