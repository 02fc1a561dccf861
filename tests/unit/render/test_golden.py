"""Golden files: small hand-made reports (the report dataclasses built directly, no run, no
analysis) rendered by every renderer and compared with the text in ``tests/golden/``, exactly.

A change to a renderer's output shows here as a diff against the file. When the change is
meant, regenerate the files and review them in the diff::

    COMPILESCOPE_REGENERATE_GOLDEN=1 python -m pytest tests/unit/render/test_golden.py

The user strings below carry rich markup, HTML and a CSV formula on purpose: each file also
pins how that renderer escapes them.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from compilescope.analysis.presented import finish_probe_report, finish_run_report
from compilescope.model import CallRecord, NumericsCheck, RunResult, StrategyOptions, TrialResult, TrialSpec
from compilescope.render import csv, get, json, perfetto, probe, text
from compilescope.report import (
    AdviceReport,
    BreakRow,
    CallPoint,
    Cause,
    Change,
    ChangeRow,
    CodeFix,
    CompareReport,
    CompileCounts,
    CompileRow,
    FunctionReport,
    GuardPoint,
    GuardRow,
    GuardShapeRow,
    GuardSourceRow,
    GuardSummary,
    Judged,
    Note,
    Pair,
    ProbeReport,
    Proposal,
    RunFile,
    RunReport,
    ScriptAdvice,
    ScriptProposal,
    ScriptRun,
    ShapeRow,
    Snippet,
    SoundnessRow,
    SpeedGroup,
    Stats,
    SteadySummary,
    TrialReport,
)

GOLDEN = Path(__file__).resolve().parents[2] / "golden"
REGENERATE = os.environ.get("COMPILESCOPE_REGENERATE_GOLDEN") == "1"

HOSTILE = "[bold]x[/bold] <b>&amp;"  # markup, a tag and an entity in a user string


def check(name: str, got: str) -> None:
    path = GOLDEN / name
    if REGENERATE:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(got, encoding="utf-8")
        return
    assert path.exists(), f"{path} is missing: regenerate with COMPILESCOPE_REGENERATE_GOLDEN=1"
    want = path.read_text(encoding="utf-8")
    assert got == want, f"{name} differs from {path} (COMPILESCOPE_REGENERATE_GOLDEN=1 rewrites it)"


# ----------------------------------------------------------------------------- a run, by hand


def _stats(median: float, spread: float = 0.02, n: int = 10) -> Stats:
    return Stats(n, median, median * (1 - spread), median * (1 + spread))


def _trial(label: str, strategy: str, **fields: object) -> TrialReport:
    base: dict[str, object] = dict(
        label=label, strategy=strategy, cache="cold", status="ok", error=None, compiles_code=strategy != "eager",
        requests=3, completed=3, stream=CompileCounts(), later=CompileCounts(), graph_breaks=(), fallbacks=0,
        fallback_shapes=(), first_call_s=2e-4, stream_s=6e-4, eager_stream_s=None, break_even_request=None,
        steady=None, saving_per_request_s=None, saving_noise_s=None, saving_significant=False, saving_beyond_band=False, saving_testable=True, n_star_text="—", compile_cost_s=0.0,
        n_star=None, lifetime=None, lifetime_gain_s=None, numerics_checked=0, numerics_failed=0, numerics_eager=0,
        numerics_not_comparable=0, numerics_unjudged=(), numerics_uncompared=0, max_abs_err=None, call_errors=0, padding_waste=None, cache_load_s=None, rows=(),
        changes=(), reused_median_s=None, timeline=(), compile_rows=(), verdict=(), notes=(),
    )
    base.update(fields)
    return TrialReport(**base)  # type: ignore[arg-type]


def _row(shape: str, **fields: object) -> ShapeRow:
    base: dict[str, object] = dict(
        shape=shape, requests=1, first_call_index=0, first_call_s=1e-3, status="eager", cause="", compile_ids=(),
        fallback_calls=0, error=None, steady=None, eager=None, eager_trial=None, speedup=None, speed_class="",
        numerics=None, steady_note="",
    )
    base.update(fields)
    return ShapeRow(**base)  # type: ignore[arg-type]


def _numerics(shape: int) -> NumericsCheck:
    return NumericsCheck({"n": shape}, "float32", 1.5e-7, 2e-7, 1e-5, 1e-5, True)


COMPILE_0 = CompileRow("0/0", 0, "forward", "compiled", "stream", 0, 0.25, 0.05,
                       (("dynamo", 0.1), ("inductor", 0.15)), 1_000_000, 0.3)
COMPILE_1 = CompileRow("0/1", 0, "forward", "compiled", "stream", 1, 0.125, None, (("dynamo", 0.125),),
                       1_500_000, 0.125)


def _guards() -> GuardSummary:
    source = GuardSourceRow("module", f"self.layers[*] {HOSTILE}", 48, 288, (("TYPE_MATCH", 144), ("EQUALS_MATCH", 96)),
                            0.41, 2.1e-5, 0.71)
    rows = (GuardShapeRow("16", 1, 2, _stats(3e-5), 695, (("TYPE_MATCH", 300), ("TENSOR_MATCH", 97)), 0.48, 6e-6,
                          1.7e-4, (source,)),
            GuardShapeRow("32", 1, 2, _stats(3.2e-5), 695, (("TYPE_MATCH", 300), ("TENSOR_MATCH", 97)), 0.22, 6.5e-6,
                          None, (source,)))
    points = (GuardPoint(0, "16", 0, None, 3e-5, True), GuardPoint(1, "32", 1, None, 3.2e-5, True),
              GuardPoint(2, "32", 1, 3.2e-5, 3.2e-5))
    return GuardSummary(rows, points, 1, 3.8e-5, 3.2e-5, 1.5, 6e-6, 6e-6, 1e-6, True, 0.35, 0.3, (source,),
                        "on this stream's order a hit's guard checks took 38 µs on average (1.5 entries tried)",
                        f"48 modules self.layers[*] {HOSTILE}: 288 guards (41%), the lookup 71% shorter without them")


def run_report() -> RunReport:
    eager = _trial(
        "eager", "eager", rows=(_row("16", eager=_stats(1e-4)), _row("32", requests=2, first_call_index=1,
                                                                     eager=_stats(2e-4))),
        timeline=(CallPoint(0, "16", 2e-4, 2e-4, "", (), ()), CallPoint(1, "32", 2e-4, 4e-4, "", (), ()),
                  CallPoint(2, "32", 2e-4, 6e-4, "", (), ())),
    )
    reason = f"tensor 'x' size mismatch at index 0. expected 16, actual 32 {HOSTILE}"
    compiled = _trial(
        "default (cold)", "default",
        stream=CompileCounts(compiles=2, recompiles=1, compile_s=0.425, backward_s=0.05),
        graph_breaks=(BreakRow(f"call to print {HOSTILE}", "model.py", 7, 3, hints=("remove the print",)),),
        first_call_s=0.3, stream_s=0.45, eager_stream_s=6e-4, break_even_request=None,
        steady=SteadySummary(2, 1.5, 1.5, SpeedGroup(2, 1.4, 1.6, ("16", "32")), SpeedGroup(0, None, None, ()),
                             SpeedGroup(0, None, None, ()), "", False),
        saving_per_request_s=5e-5, saving_noise_s=1e-6, saving_significant=True, saving_beyond_band=True, saving_testable=True, compile_cost_s=0.42,
        n_star=8400, n_star_text="8,400", lifetime=10_000, lifetime_gain_s=0.08, numerics_checked=2, max_abs_err=1.5e-7,
        rows=(
            _row("16", first_call_s=0.3, status="compiled", cause="first compile", compile_ids=("0/0",),
                 steady=_stats(6.25e-5), eager=_stats(1e-4), eager_trial=_stats(1e-4), speedup=1.6,
                 speed_class="faster", numerics=_numerics(16)),
            _row("32", requests=2, first_call_index=1, first_call_s=0.15, status="compiled",
                 cause=f"L['x'] dim 0 size: 16 → 32 {HOSTILE}", compile_ids=("0/1",), steady=_stats(1.43e-4, 0.2),
                 eager=_stats(2e-4), eager_trial=_stats(2.1e-4), speedup=1.4, speed_class="faster",
                 numerics=_numerics(32)),
        ),
        changes=(ChangeRow(1, "16", "32", 0.15, ("0/1",), (reason,), "recompiled"),
                 ChangeRow(2, "32", "32", 1.2e-4, (), (), "reused")),
        reused_median_s=1.2e-4,
        timeline=(CallPoint(0, "16", 0.3, 0.3, "first compile", ("0/0",), (), (COMPILE_0,)),
                  CallPoint(1, "32", 0.15, 0.45, "recompile", ("0/1",), (reason,), (COMPILE_1,)),
                  CallPoint(2, "32", 1.2e-4, 0.45012, "", (), ())),
        compile_rows=(COMPILE_0, COMPILE_1),
        verdict=("compiling pays for itself after 8,400 requests",),
        notes=(Note("noise", "1 steady-state figure(s) have IQR/median > 10% (marked ~)"),),
        guards=_guards(), guard_extra_s=6e-6,
        soundness=(SoundnessRow(f"model.layers[0].scale = 2.0 {HOSTILE}", "module_attribute", "CONSTANT_MATCH",
                                "16", "stale", "after the change the compiled call kept its old result"),),
        dropped_guards=(("TYPE_MATCH", 144), ("CONSTANT_MATCH", 96)),
    )
    # the values derived for presentation (the numerics cells, a trial's status words…) made as analysis makes them
    return finish_run_report(RunReport(
        workload=f"=w{HOSTILE}", requests=3, lifetime=10_000, trials=(eager, compiled), shapes=("16", "32"),
        start_modes=(), start_rows=(), eager_spread=1.05, missing=(), notes=(Note("info", f"path {HOSTILE}"),),
        command=f"compilescope run 'w{HOSTILE}'", created="2026-01-01T00:00:00+00:00"))


def run_file() -> RunFile:
    spec = TrialSpec("w", "eager", "cold", ({"n": 16},), StrategyOptions(backend="eager"))
    result = RunResult(workload="w", stream=({"n": 16},), created="2026-01-01T00:00:00+00:00",
                       command="compilescope run w", trials=(
                           TrialResult(spec, "ok", calls=(CallRecord(0, {"n": 16}, 2e-4, error=None),)),))
    summary = {"eager": {"status": "ok", "compiles": 0, "verdict": [], "shapes": {"16": {"requests": 1}}}}
    return RunFile(result, run_report(), summary, None, {"objective": "total", "rows": []})


def test_run_console():
    check("run.txt", text.RENDERER.render(RunFile(run_file().result, run_report())))


def test_run_csv():
    check("run.csv", csv.render(run_report()))


def test_run_results_json():
    # the schema version is hygiene's constant: pinned apart from the rest of the text
    got = json.render(run_file())
    check("run.json", re.sub(r'"schema_version": \d+', '"schema_version": N', got))


def test_run_perfetto():
    check("run.perfetto.json", perfetto.render_run(run_report()))


def _html_body(page: str) -> str:
    """The page without its <script> elements (plotly.js, the figures' JSON): what this
    project writes, not plotly's."""
    return re.sub(r"<script>.*?</script>", "<script>…</script>", page, flags=re.S)


def test_run_html():
    pytest.importorskip("plotly")
    check("run.html", _html_body(get("html").render(RunFile(run_file().result, run_report()))))


# ----------------------------------------------------------------------------- probe, compare, advice


def probe_report() -> ProbeReport:
    cause = Cause("L['x']", "size", 0, (16, 32, 64), ("0/1", "0/2"), True,
                  f"mark_dynamic(x, 0) {HOSTILE}", description="L['x'] dim 0 varied over 16, 32, 64 → 2 compile(s)")
    rank = Cause("L['y']", "rank", None, (2, 3), ("0/3",), False, "keep y's rank fixed",
                 description="L['y'] rank varied over 2, 3 → 1 compile(s)")
    guard = GuardRow("L['x'].size()[0] == 16", "size", "L['x']", ("L['x'] dim 0",), "pytorch", 2, ("0/0",),
                     ("0/1",), "model.py:3")
    rows = (CompileRow("0/0", 0, "forward", "compiled", "stream", None, 0.5, None, (("dynamo", 0.5),), 2_000_000),
            CompileRow("0/1", 0, "forward", "compiled", "stream", None, 0.25, 0.125, (("dynamo", 0.25),), 3_000_000))
    function = FunctionReport(f"forward {HOSTILE}", "model.py:3", "", 4, 3, 1, 0.75, 0.125, (cause, rank),
                              ("compile 0/3 failed: Unsupported: data-dependent",), (guard,), (("size", 1),), rows)
    # the time axis's zero (the first compile's start) and each compile's start from it, made as analysis makes them
    return finish_probe_report(ProbeReport(f"script.py {HOSTILE}", 4, 1, 0.75, 2,
                               (BreakRow("call to print", "model.py", 9, 2, hints=("remove the print",)),),
                               (function,), 8, "cold", (("unknown_event", 1),), None, 0))


def test_probe_console():
    check("probe.txt", probe.render(probe_report()))


def test_probe_perfetto():
    check("probe.perfetto.json", perfetto.render_probe(probe_report()))


def compare_report() -> CompareReport:
    changes = (
        Change("default (cold)", "", "compiles", 2, 3, 0.5, "regression", "exact", "2", "3"),
        Change("default (cold)", "16", "speedup", 1.6, 1.2, -0.25, "regression", f"intervals apart {HOSTILE}",
               "×1.60", "×1.20"),
        Change("eager", "16", "steady p50", 1e-4, 1.1e-4, 0.1, "", "eager trial, raw: never flagged", "100 µs",
               "110 µs"),
    )
    return CompareReport("a.json", "b.json", changes, ("static (cold)",), (),
                         (Pair("default (cold)", "default (cold)", ("torch 2.12 → 2.13",)), Pair("eager", "eager", ())),
                         "label", "w")


def test_compare_console():
    check("compare.txt", text.RENDERER.render(compare_report()))


def advice_report() -> AdviceReport:
    trials = run_report().trials
    proposal = Proposal("marked", "mark-dynamic", StrategyOptions(), ("L['x'] dim 0 varied over 16, 32",),
                        Snippet("torch._dynamo.mark_dynamic(x, 0)\ncompiled = torch.compile(model)",
                                "torch._dynamo.mark_dynamic(x, 0)", f"keep the mark {HOSTILE}"),
                        alternative=Snippet("torch.compiler.config.dynamic_sources = \"L['x']\""))
    rows = (Judged("default (cold)", None, trials[1], 0.45, "baseline", ""),
            Judged("mark-dynamic[marked]", proposal, trials[1], 0.2, "recommended", "1 compile(s) against 2"))
    return AdviceReport("total", 10_000, rows, (CodeFix("L['y'] rank varied over 2, 3 → 1 compile(s)",
                                                        "keep y's rank fixed"),), rows[1], "")


def test_advice_console():
    check("advice.txt", text.RENDERER.render(advice_report()))


def test_the_advice_table_counts_partial_fallbacks_and_numerics_as_the_run_table_does():
    """A proposal whose requests ran partly eagerly: its fallbacks cell says so, as the run
    table's does (before: "0" beside a why of "6 request(s) ran partly eagerly"), and its
    numerics cell is the run table's (eager checks not counted as passes)."""
    import dataclasses

    report = advice_report()
    partial = dataclasses.replace(report.rows[1].trial, partial_fallbacks=6, numerics_text="2 pass, 1 eager")
    rows = (report.rows[0], dataclasses.replace(report.rows[1], trial=partial))
    out = text.RENDERER.render(dataclasses.replace(report, rows=rows, recommendation=rows[1]))
    line = next(ln for ln in out.splitlines() if "mark-dynamic[marked]" in ln and "recommended" in ln)
    assert "0 + 6 partial" in line and "2 pass, 1 eager" in line, line


def script_advice() -> ScriptAdvice:
    proposal = ScriptProposal("dynamic_sources", {"dynamic_sources": "L['x']:0"}, "L['x'] dim 0 varied")
    rows = (ScriptRun("as it is", None, 0, None, 3, 2, 0, 0, 1.5, 4.0),
            ScriptRun("dynamic_sources", proposal, 0, None, 1, 0, 0, 0, 0.5, 3.0, "recommended",
                      "1 compile(s) against 3"))
    return ScriptAdvice(f"train.py --lr 1 {HOSTILE}", rows, (("L['y'] rank varied", "keep y's rank fixed"),),
                        rows[1])


def test_script_advice_console():
    check("script-advice.txt", text.RENDERER.render(script_advice()))
