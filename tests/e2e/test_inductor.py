"""Real inductor end to end (slow on CPU: one cold compile is ~10 s)."""

from __future__ import annotations

import pytest

from compilescope.schema import load

from ..conftest import forked_trials_here


@pytest.mark.inductor
def test_inductor_default_strategy_in_three_start_modes(cli_in_process, tmp_path):
    """The start modes are the cache's (cold, warm, mega-cache): the CLI runs in this process and
    its trials are forked from a fork server (conftest.forked_trials), which has imported torch
    and compiled nothing, so the cold trial's cache misses and the warm one's hits are as a
    fresh interpreter's (tests/e2e/test_trialenv.py compares the two on inductor)."""
    out = tmp_path / "ind.json"
    with forked_trials_here():
        proc = cli_in_process("run", "sincos", "--stream", "64,64,128", "--strategies", "default", "--cache", "all",
                              "--samples", "5", "--budget", "0.05", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "start modes" in proc.stdout and "mega-cache" in proc.stdout
    eager, cold, warm, mega = load(out).trials
    assert [t.spec.cache for t in (eager, cold, warm, mega)] == ["none", "cold", "warm", "mega"]
    assert all(t.ok for t in (eager, cold, warm, mega))
    assert [c.compiled for c in cold.calls] == [True, False, True]
    first = cold.compiles[0]
    assert first.phases_s.get("inductor", 0) > 0  # inductor really ran
    assert first.cache.get("inductor_fx_local_cache_miss_count") == 1  # empty cache: a true cold compile
    assert cold.artifacts_bytes and cold.artifacts_bytes > 0  # the mega-cache was saved
    assert warm.compiles[0].cache.get("inductor_fx_local_cache_hit_count") == 1  # populated dir
    assert warm.env.cache_dir == cold.env.cache_dir != mega.env.cache_dir
    assert mega.cache_load_s is not None  # load_cache_artifacts ran before the first call...
    assert mega.compiles[0].cache.get("inductor_fx_local_cache_hit_count") == 1  # ...and an empty dir then hit
    assert all(n.passed for t in (cold, warm, mega) for n in t.numerics)


CONV_PYRAMID = """
import torch

net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.MaxPool2d(2, ceil_mode=True),
                          torch.nn.Conv2d(8, 8, 3, padding=1), torch.nn.MaxPool2d(2, ceil_mode=True))
compiled = torch.compile(net, dynamic=True)
with torch.no_grad():
    for h in (14, 19, 26, 37):
        compiled(torch.randn(1, 3, h, h))
"""


@pytest.mark.inductor
def test_ceil_mode_pooling_guards_are_relations_not_mark_dynamic(tmp_path):
    """dynamic=True over odd and even sizes: the parity guards from ceil_mode pooling's
    lowering are relations over the spatial dims, and nothing advises mark_dynamic."""
    from compilescope.analysis.build import build_probe_report
    from compilescope.probe.capture import probe_script

    script = tmp_path / "pyramid.py"
    script.write_text(CONV_PYRAMID)
    report = build_probe_report(probe_script(str(script), []))
    (fn,) = report.functions
    assert fn.name == "Sequential.forward" and fn.recompiles >= 1
    assert fn.causes and all(c.kind == "relation" for c in fn.causes)
    involved = {d for c in fn.causes for d in c.description.split(":", 1)[0].split(", ")}
    assert any("dim 2" in d for d in involved) and any("dim 3" in d for d in involved)
    assert not any(c.shape_reducible or "mark_dynamic(" in c.next_step for c in fn.causes)
    # inductor looked in its compile cache: the header says in what state it found it (an
    # eager or aot_eager probe's header says nothing of it: tests/data/derivations/probe_*)
    assert report.cache_start in ("cold", "warm", "unknown")
