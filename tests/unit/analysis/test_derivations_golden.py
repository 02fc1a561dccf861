"""Every figure a report derives from recorded results stays exactly what it was: the run,
probe, compare and advice reports built from results files that real runs and probes wrote
(``tests/data/derivations/*.json``) are compared, as JSON, with the dumps kept beside them.

A change that means to move a figure regenerates the dumps and shows the difference in review::

    python tests/unit/analysis/test_derivations_golden.py --write
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import pytest

from compilescope.analysis.advise import judge, propose
from compilescope.analysis.build import build_probe_report, build_run_report, probe_stream, run_summary
from compilescope.analysis.compare import compare_runs
from compilescope.analysis.verdict import verdict_text
from compilescope.model import ProbeResult, RunResult, StrategyOptions
from compilescope.schema import load

DATA = Path(__file__).resolve().parents[2] / "data" / "derivations"
RESULTS = sorted(p for p in DATA.glob("*.json") if not p.name.endswith((".golden.json", "_again.json")))


def _sizes(result: RunResult) -> dict[tuple[str, int], list[int]]:
    """The stream's varying dims as (input, dim) → sizes, for the one-input built-in workloads."""
    values = sorted({s["n"] for s in result.stream if "n" in s})
    return {("x", 0): values} if len(values) > 1 else {}


def derived(path: Path) -> dict[str, object]:
    """Every derivation of the results in ``path``, as plain data."""
    result = load(path)
    if isinstance(result, ProbeResult):
        return {"probe": dataclasses.asdict(build_probe_report(result)), "stream": probe_stream(result)}
    report = build_run_report(result)
    out: dict[str, object] = {
        "run": dataclasses.asdict(report),
        "summary": run_summary(report),
        "verdicts": [verdict_text(t.verdict) for t in report.trials],
        "compare": dataclasses.asdict(compare_runs(result, result)),
    }
    again = path.with_name(path.stem + "_again.json")
    if again.exists():
        out["compare again"] = dataclasses.asdict(compare_runs(result, load(again)))
    default = next((t for t in result.trials if t.spec.strategy == "default"), None)
    if default is not None:
        proposals, fixes = propose(default, StrategyOptions(backend="eager"), _sizes(result),
                                   len({tuple(sorted(s.items())) for s in result.stream}), 8)
        out["proposals"] = [dataclasses.asdict(p) for p in proposals]
        for objective in ("total", "p99", "steady"):
            advice = judge(report, proposals, objective, 10_000, fixes, 8, result=result)
            out[f"advice {objective}"] = {  # the trials' own figures are in "run"
                "rows": [(r.label, r.score, r.verdict, r.why) for r in advice.rows],
                "recommendation": advice.recommendation.label if advice.recommendation else None,
                "tie": advice.tie, "horizon": advice.horizon,
                "code_fixes": [dataclasses.asdict(f) for f in advice.code_fixes]}
    return out


def dump(path: Path) -> str:
    return json.dumps(derived(path), indent=1, sort_keys=True, default=str, ensure_ascii=False) + "\n"


def golden(path: Path) -> Path:
    return path.with_name(path.stem + ".golden.json")


@pytest.mark.parametrize("path", RESULTS, ids=[p.stem for p in RESULTS])
def test_derived_figures_are_unchanged(path):
    expected = golden(path).read_text(encoding="utf-8")
    assert dump(path) == expected, f"{path.name}: a derived figure changed (regenerate with --write if meant)"


def test_the_results_cover_the_cases_the_derivations_branch_on():
    loaded = [load(p) for p in RESULTS]
    runs = [r for r in loaded if isinstance(r, RunResult)]
    statuses = {t.status for r in runs for t in r.trials}
    assert {"ok", "partial", "failed"} <= statuses
    assert any(c.ran_eagerly for r in runs for t in r.trials for c in t.calls)  # an eager fallback
    assert any(t.spec.cache == "warm" for r in runs for t in r.trials)  # start-mode rows
    assert any(isinstance(r, ProbeResult) and r.graph_breaks for r in loaded)


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/unit/analysis/test_derivations_golden.py --write")
    for p in RESULTS:
        golden(p).write_text(dump(p), encoding="utf-8")
        print(f"wrote {golden(p)}")
