"""Real inductor end to end (slow on CPU: one cold compile is ~10 s)."""

from __future__ import annotations

import pytest

from compilescope.schema import load


@pytest.mark.inductor
def test_inductor_default_strategy_end_to_end(cli, tmp_path):
    out = tmp_path / "ind.json"
    proc = cli("run", "sincos", "--stream", "64,64,128", "--strategies", "default", "--samples", "5",
               "--budget", "0.05", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    result = load(out)
    eager, default = result.trials
    assert eager.ok and default.ok
    assert [c.compiled for c in default.calls] == [True, False, True]
    first = default.compiles[0]
    assert first.phases_s.get("inductor", 0) > 0  # inductor really ran
    assert first.cache.get("inductor_fx_local_cache_miss_count") == 1  # empty cache: a true cold compile
    assert all(n.passed for n in default.numerics)
