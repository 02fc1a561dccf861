"""advise: proposals from the default's recorded causes, each measured in the same run."""

from __future__ import annotations

from compilescope.api import advise
from compilescope.model import MeasureOptions

FAST = MeasureOptions(warmup=1, samples=5, min_samples=5, budget_s=0.05)


def test_sincos_proposes_marking_x_dim_0_and_measures_one_compile():
    result, advice = advise("sincos", "16,16,32,32,64,16", backend="eager", measure=FAST, timeout_s=300)
    rows = {r.label: r for r in advice.rows}
    assert rows["default (cold)"].trial.stream.compiles == 2
    marked = [r for r in advice.rows if r.proposal is not None and r.proposal.strategy == "mark-dynamic"]
    assert {r.label for r in marked} == {"mark-dynamic[x:0:16:64] (cold)", "mark-dynamic[x:0] (cold)"}
    assert all(r.trial.stream.compiles == 1 and r.verdict in ("accepted", "recommended") for r in marked)
    rec = advice.recommendation
    assert rec is not None and rec.proposal is not None and "mark_dynamic(x, 0" in rec.proposal.code
    assert {t.spec.name for t in result.trials} >= {"eager", "default", "mark-dynamic[x:0:16:64]"}


def test_transformer_proposes_both_varying_dims_and_rejects_what_fails():
    _, advice = advise("transformer", None, backend="eager", measure=FAST, timeout_s=300)
    proposals = [r.proposal for r in advice.rows if r.proposal is not None]
    assert proposals
    marked = {(m.input, m.dim) for p in proposals if p.strategy == "mark-dynamic" for m in p.options.marks}
    assert marked == {("x", 0), ("x", 1)}  # batch and sequence, though PyTorch's reason named only the first
    for row in advice.rows:
        if row.verdict == "rejected":
            assert row.why  # a rejection always says why
    if advice.recommendation is not None:
        assert advice.recommendation.trial.fallbacks == 0 and advice.recommendation.trial.status == "ok"


def test_run_advise_is_advise(cli, tmp_path):
    out = tmp_path / "a.json"
    proc = cli("run", "sincos", "--stream", "16,16,32,32,64,16", "--advise", "--backend", "eager", "--samples", "5",
               "--budget", "0.05", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())
    assert "advise — objective: total" in text and "recommended: mark-dynamic[x:0" in text
    assert out.exists()
