"""Request errors and partial eager fallbacks are outcomes: a trial whose compiled requests
raise is ``partial`` or ``failed`` (never ✓), the exit status says so, the whole exception
(op line, user frame) is kept and grouped; a request that ran a frame eagerly is flagged
and left out of the compiled figures. Real torch.compile, eager/aot backends."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from compilescope.analysis.build import build_run_report, run_summary
from compilescope.execute.trial import error_info, run_trial
from compilescope.model import MeasureOptions, RunResult, StrategyOptions, TrialSpec
from compilescope.render import console as console_render
from compilescope.render import csv as csv_render
from compilescope.schema import dumps, load, loads

from ..conftest import run_cli

HERE = Path(__file__).resolve().parents[1]  # tests/
WORKLOADS = HERE / "workloads_request_errors.py"
FAST = MeasureOptions(warmup=1, samples=3, min_samples=2, budget_s=0.02)
QUICK = ("--samples", "3", "--budget", "0.02", "--warmup", "1")
ERR_STREAM = tuple({"n": n} for n in (16, 32, 64, 16))
BREAK_STREAM = tuple({"n": n} for n in (4, 5, 6, 7, 4))
OP_LINE = "target: aten.sin.default"


def _trial(workload, strategy, stream, **options):
    spec = TrialSpec(f"{WORKLOADS}:{workload}", strategy, "none" if strategy == "eager" else "cold", stream,
                     StrategyOptions(**options), FAST)
    return run_trial(spec)[0]


@pytest.fixture(scope="module")
def erroring():
    """eager, static (requests 32 and 64 raise) and dynamic (every request raises) on the faulty backend."""
    import torch

    trials = []
    for strategy in ("eager", "static", "dynamic"):
        torch.compiler.reset()
        trials.append(_trial("sin_cos", strategy, ERR_STREAM, backend="faulty_lowering"))
    return RunResult(workload="sin_cos", stream=ERR_STREAM, trials=tuple(trials))


@pytest.fixture(scope="module")
def partly_eager():
    """A graph break whose resume frame hits recompile limit 2 under static while the first frame runs compiled."""
    import torch

    trials = []
    for strategy in ("eager", "static"):
        torch.compiler.reset()
        trials.append(_trial("break_then_vary", strategy, BREAK_STREAM, backend="eager", recompile_limit=2))
    return RunResult(workload="break_then_vary", stream=BREAK_STREAM, trials=tuple(trials))


def test_requests_that_raised_make_a_trial_partial_or_failed(erroring):
    eager, static, dynamic = erroring.trials
    assert eager.status == "ok"
    assert static.status == "partial" and [c.error is not None for c in static.calls] == [False, True, True, False]
    assert dynamic.status == "failed" and all(c.error for c in dynamic.calls)
    assert static.error is not None and static.error.startswith("2 of 4 requests raised")
    report = build_run_report(erroring)
    by = {t.strategy: t for t in report.trials}
    assert (by["static"].status, by["static"].call_errors) == ("partial", 2)
    assert (by["dynamic"].status, by["dynamic"].call_errors) == ("failed", 4)
    assert [(r.shape, r.error_calls) for r in by["static"].rows] == [("16", 0), ("32", 1), ("64", 1)]
    assert by["static"].verdict == ()  # no "compiling pays off" for a trial whose requests raise


def test_the_whole_exception_is_kept_with_its_op_line_and_user_frame(erroring):
    call = erroring.trials[1].calls[1]
    info = call.error_info
    assert info is not None and info.type == "BackendCompilerFailed"
    # the first line only announces the error; the headline joins the line that says what it is
    assert call.error == ("BackendCompilerFailed: backend='compilescope_faulty_lowering' raised: "
                          "LoweringException: NotImplementedError: no kernel for size 32")
    assert OP_LINE in info.message.splitlines()[2] and info.op_line == OP_LINE
    assert info.user_frame is not None and info.user_frame.startswith(f"{WORKLOADS}:")
    assert info.user_frame.endswith(" in _fw_compiler")
    line = int(info.user_frame.rsplit(":", 1)[1].split()[0])
    assert "raise LoweringException" in WORKLOADS.read_text().splitlines()[line - 1]


def test_a_user_frame_is_the_users_not_torchs_and_the_op_line_is_found_in_fx_errors():
    def forward():
        raise RuntimeError("While executing %sin : [num_users=1] = call_function[target=torch.ops.aten.sin.default]"
                           "(args = (%x,), kwargs = {})\nOriginal traceback: ...")

    try:
        forward()
    except RuntimeError as exc:
        info = error_info(exc)
    assert info.op_line is not None and "torch.ops.aten.sin.default" in info.op_line
    assert info.user_frame is not None and info.user_frame.endswith(" in forward") and __file__ in info.user_frame
    try:
        raise ValueError("plain")
    except ValueError as exc:
        assert error_info(exc).op_line is None


def test_errors_round_trip_and_older_records_still_load_and_are_derived(erroring):
    again = loads(dumps(erroring))
    assert again == erroring
    data = json.loads(dumps(erroring))
    for t in data["trials"]:  # as written before error_info and "partial" existed
        t["status"] = "ok"
        for c in t["calls"]:
            del c["error_info"]
    old = loads(json.dumps(data))
    assert [t.status for t in old.trials] == ["ok", "ok", "ok"]
    report = build_run_report(old)
    assert [t.status for t in report.trials] == ["ok", "partial", "failed"]
    (group,) = report.trials[1].errors
    assert group.count == 2 and group.type == "BackendCompilerFailed" and group.op_line is None


def test_repeated_errors_are_grouped_with_a_count_in_every_report(erroring):
    report = build_run_report(erroring)
    static, dynamic = report.trials[1], report.trials[2]
    (g,) = static.errors  # sizes 32 and 64: one error, not two
    assert (g.count, g.requests, g.shapes, g.op_line) == (2, (1, 2), ("32", "64"), OP_LINE)
    (d,) = dynamic.errors
    assert (d.count, d.requests) == (4, (0, 1, 2, 3))
    text = console_render.render(report, width=400)
    lines = [ln for ln in text.splitlines() if "NotImplementedError" in ln and ln.startswith("!")]
    assert len(lines) == 2, text  # one line per distinct error, not one per request
    assert "×2 (requests 1, 2; shapes 32, 64)" in lines[0] and f"op: {OP_LINE}" in lines[0]
    assert "×4 (requests 0, 1, 2, 3; shapes 16, 32, 64)" in lines[1]
    assert "2 of 4 raised" in text and "failed: all 4 requests raised" in text
    summary = run_summary(report)
    assert summary["static (cold)"]["status"] == "partial" and summary["dynamic (cold)"]["status"] == "failed"
    assert summary["static (cold)"]["request_errors"] == 2
    assert summary["static (cold)"]["errors"][0]["count"] == 2
    assert summary["static (cold)"]["errors"][0]["op_line"] == OP_LINE
    assert summary["static (cold)"]["shapes"]["32"]["request_errors"] == 1
    rows = {(r["strategy"], r["shape"]): r for r in csv_render_rows(report)}
    assert rows[("static", "32")]["error_calls"] == "1" and rows[("static", "16")]["error_calls"] == "0"
    assert rows[("static", "16")]["trial_request_errors"] == "2" and rows[("static", "16")]["status"] == "partial"


def csv_render_rows(report):
    import csv
    import io

    return list(csv.DictReader(io.StringIO(csv_render.render(report))))


def test_progress_never_shows_a_tick_for_a_trial_whose_requests_raised(erroring, partly_eager):
    from rich.console import Console

    from compilescope.analysis.progress import trial_done
    from compilescope.cli.progress import ConsoleProgress

    console = Console(record=True, width=300, color_system=None)
    progress = ConsoleProgress(console, live=False)
    for result in (*erroring.trials, partly_eager.trials[1]):
        progress.finished(result.label, trial_done(result.label, result))
    lines = console.export_text().splitlines()
    assert lines[0].strip().startswith("✓ eager")
    assert lines[1].strip().startswith("✗ partial static (cold)") and "2 of 4 requests raised" in lines[1]
    assert lines[2].strip().startswith("✗ failed dynamic (cold)") and "every request raised" in lines[2]
    assert lines[3].strip().startswith("! eager fallback static (cold)") and "2 ran partly eagerly" in lines[3]
    assert "✓" not in "".join(lines[1:])


def test_exit_status_counts_request_errors(erroring, partly_eager):
    from compilescope.app.run import exit_status as _exit_status

    report = build_run_report(erroring)
    assert _exit_status(report, frozenset()) == 0  # a partial trial is not a failed one
    assert _exit_status(report, frozenset({"crash"})) == 1
    only_failed = build_run_report(dataclasses.replace(erroring, trials=(erroring.trials[0], erroring.trials[2])))
    assert _exit_status(only_failed, frozenset()) == 1  # every compiled trial failed
    partly = build_run_report(partly_eager)
    assert _exit_status(partly, frozenset()) == 0 and _exit_status(partly, frozenset({"crash"})) == 0
    assert _exit_status(partly, frozenset({"fallback"})) == 1
    # a run of no compiled trial fails when every trial did (an eager-only run that timed out)
    eager = erroring.trials[0]
    assert eager.spec.strategy == "eager" and eager.status == "ok"
    assert _exit_status(build_run_report(dataclasses.replace(erroring, trials=(eager,))), frozenset()) == 0
    timed_out = dataclasses.replace(eager, status="timeout", error="timed out after 60 s")
    # an interrupted run fails every gate: what it did not finish was not checked
    cut = build_run_report(dataclasses.replace(erroring, trials=(eager,), missing=("default (cold)",)))
    assert _exit_status(cut, frozenset()) == 1
    from compilescope.app.run import failure
    assert failure(cut).startswith("the run was interrupted: 1 of 2 trial(s) finished")
    assert _exit_status(build_run_report(dataclasses.replace(erroring, trials=(timed_out,))), frozenset()) == 1


def test_a_resume_frame_that_ran_eagerly_is_a_partial_eager_fallback(partly_eager):
    static = partly_eager.trials[1]
    # frame 0 ran its compiled graph on every request; frame 1, past limit 2, ran none of its graphs on 6 and 7
    assert [c.graphs_run for c in static.calls] == [("0/0", "1/0"), ("0/0", "1/1"), ("0/0",), ("0/0",),
                                                   ("0/0", "1/0")]
    assert [c.ran_eagerly for c in static.calls] == [False] * 5  # "ran none of the graphs": not the whole story
    refused = [(str(r.compile_id), r.call_index) for r in static.compiles if r.refused]
    assert refused == [("1/2", 2)]
    report = build_run_report(partly_eager)
    t = report.trials[1]
    assert t.status == "ok" and (t.partial_fallbacks, t.partial_fallback_shapes) == (2, ("6", "7"))
    rows = {r.shape: r for r in t.rows}
    for shape in ("6", "7"):
        row = rows[shape]
        assert row.status == "partial eager fallback" and "recompile limit (2) hit" in row.cause
        assert "torch_dynamo_resume_in_f" in row.cause
        assert row.steady is None and row.speedup is None and row.steady_note == "partial eager fallback"
        assert row.numerics is not None and row.numerics.ran_eagerly is True
    assert rows["4"].status == "compiled" and rows["4"].speedup is not None
    assert t.steady is not None and t.steady.shapes == 2  # only 4 and 5 count as compiled
    assert (t.numerics_checked, t.numerics_eager) == (2, 2)
    changes = {c.index: c for c in t.changes}
    assert changes[2].outcome == "partial eager fallback" and changes[3].outcome == "partial eager fallback"
    assert changes[4].outcome == "reused"
    text = " ".join(console_render.render(report, width=300).split())
    assert "request 2 5 → 6" in text and text.count("ran PARTLY EAGERLY") == 2
    assert "2 request(s) ran partly eagerly" in text and "shapes 6, 7" in text
    summary = run_summary(report)["static (cold)"]
    assert (summary["partial_eager_fallbacks"], summary["partial_eager_fallback_shapes"]) == (2, ["6", "7"])
    assert summary["shapes"]["6"]["how_it_ran"] == "partial eager fallback"
    import importlib.util

    if importlib.util.find_spec("plotly") is not None:  # the html extra
        from compilescope.render.html import render_run

        page = render_run(report)
        assert '<td class="num bad">0 + 2 partial</td>' in page  # the console's count, in the summary table
        banner = page.split('id="failure-banner"', 1)[1].split("</div>", 1)[0]
        assert "2 request(s) ran partly eagerly (shapes 6, 7)" in banner


@pytest.fixture(scope="module")
def cli_run(tmp_path_factory):
    """``run`` on the faulty backend with --fail-on crash, JSON and HTML (one partial, one failed trial)."""
    tmp = tmp_path_factory.mktemp("request_errors")
    out, html = tmp / "out.json", tmp / "out.html"
    proc = run_cli("run", f"{WORKLOADS}:sin_cos", "--stream", "16,32,64,16", "--strategies", "static,dynamic",
                   "--backend", "faulty_lowering", "--fail-on", "crash", "--json", out, "--html", html, *QUICK,
                   timeout=900, cwd=tmp)
    return proc, out, html


def test_cli_request_errors_exit_1_under_fail_on_crash_with_the_whole_error(cli_run, cli_in_process):
    proc, out, html = cli_run
    assert proc.returncode == 1, proc.stderr
    result = load(out)
    assert [t.status for t in result.trials] == ["ok", "partial", "failed"]
    data = json.loads(out.read_text())
    raised = data["trials"][1]["calls"][1]
    assert raised["error_info"]["op_line"] == OP_LINE and OP_LINE in raised["error_info"]["message"]
    assert raised["error_info"]["user_frame"].startswith(str(WORKLOADS))
    assert data["summary"]["static (cold)"]["errors"][0]["count"] == 2
    assert data["summary"]["dynamic (cold)"]["errors"][0]["count"] == 4
    assert OP_LINE in html.read_text()
    text = " ".join((proc.stdout + proc.stderr).split())
    assert "✗ partial static (cold)" in text and "✗ failed dynamic (cold)" in text
    assert "✓ static" not in text and "✓ dynamic" not in text
    report_text = " ".join(proc.stdout.split("per strategy", 1)[1].split())
    assert report_text.count("no kernel for size") == 1 and "×2 (requests 1, 2; shapes 32, 64)" in report_text
    assert "×4 (requests 0, 1, 2, 3; shapes 16, 32, 64)" in text
    again = cli_in_process("report", str(out))  # a partial trial alone is not "every compiled trial failed"
    assert again.returncode == 0, again.stderr
    assert "×2 (requests 1, 2; shapes 32, 64)" in " ".join(again.stdout.split())


def test_cli_exit_1_without_fail_on_when_every_compiled_trial_failed(cli_in_process, tmp_path):
    """The exit status main() gives (cli_run above ends a real CLI process with it)."""
    out = tmp_path / "all.json"
    proc = cli_in_process("run", f"{WORKLOADS}:sin_cos", "--stream", "16,32", "--strategies", "dynamic",
                          "--backend", "faulty_lowering", "--json", str(out), *QUICK)
    assert proc.returncode == 1, proc.stderr
    assert [t.status for t in load(out).trials] == ["ok", "failed"]


def test_cli_exit_1_when_no_compiled_trial_ran_a_compiled_graph(cli_in_process, tmp_path):
    """The only frame fails to compile: the trial is "ok", yet every request ran eagerly — its
    figures are eager against eager, and the command says so and fails."""
    tests = Path(__file__).resolve().parents[1] / "workloads_for_tests.py"
    proc = cli_in_process("run", f"{tests}:never_compiles", "--stream", "4,6", "--strategies", "default",
                          "--backend", "eager", "--json", str(tmp_path / "r.json"), *QUICK)
    assert proc.returncode == 1, proc.stderr
    assert "no compiled trial ran a compiled graph: every request ran eagerly or raised (default (cold): 2 of 2 " \
           "eager)" in proc.stdout + proc.stderr
