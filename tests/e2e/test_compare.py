"""``compare``: one speedup convention (eager / compiled, as `run` prints it), runs of different
workloads or streams refused, per-pair warnings when the environment differs, request errors
and eager fallbacks compared, compile time flagged only for the same work, pairing by strategy,
and zero pairs an error — on real runs (backend eager / aot_eager)."""

from __future__ import annotations

import dataclasses
import json
import os

import pytest

from compilescope.analysis.build import build_run_report
from compilescope.analysis.compare import compare_runs
from compilescope.errors import OptionError
from compilescope.render import console as console_render
from compilescope.schema import dumps, load

from ..conftest import cli_here

QUICK = ("--samples", "5", "--budget", "0.05", "--warmup", "1")

WORKLOADS = """
import os

import torch

from compilescope import Workload


def build():
    refuse = bool(os.environ.get("CMP_RAISE"))

    @torch.compiler.disable
    def check(n):
        if refuse and n == 32:
            raise ValueError("thirty-two refused")

    def f(x):
        check(x.shape[0])
        return x.sin() * 2

    return f


STREAM = tuple({"n": n} for n in (16, 32, 16, 32, 64))
w = Workload("cmp", build, lambda s: (torch.randn(s["n"]),), ("n",), STREAM)
other = Workload("cmp-other", build, lambda s: (torch.randn(s["n"]),), ("n",), STREAM)
"""


def _cli(*args, cwd, env=None):
    """The CLI in this process: what is compared here is the commands' output, not a process."""
    return cli_here(*args, cwd=cwd, env=env)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("compare")
    (tmp / "w.py").write_text(WORKLOADS)
    plans = {
        "base": ("w", ("--cache", "cold,warm"), {}),
        "errors": ("w", (), {"CMP_RAISE": "1", "COMPILESCOPE_PASS_ENV": "CMP_RAISE"}),
        "aot": ("w", ("--backend", "aot_eager", "--threads", "2"), {}),
        "other": ("other", (), {}),
    }
    out = {}
    for name, (target, extra, env) in plans.items():
        args = ["run", f"{tmp / 'w.py'}:{target}", "--strategies", "default", *QUICK, *extra,
                "--json", str(tmp / f"{name}.json")]
        if "--backend" not in extra:
            args += ["--backend", "eager"]
        proc = _cli(*args, cwd=tmp, env=dict(os.environ, **env))
        assert proc.returncode == 0, proc.stdout + proc.stderr
        out[name] = tmp / f"{name}.json"
    # the base run's cold and warm trials, apart: two runs whose labels differ only by start mode
    base = load(out["base"])
    for mode, modes in (("cold", ("none", "cold")), ("warm", ("warm",))):  # the eager trial goes with cold
        part = dataclasses.replace(base, trials=tuple(t for t in base.trials if t.spec.cache in modes))
        (tmp / f"{mode}.json").write_text(dumps(part))
        out[mode] = tmp / f"{mode}.json"
    return tmp, out


def test_speedup_is_eager_over_compiled_as_run_prints_it(runs):
    _, paths = runs
    a, b = load(paths["base"]), load(paths["base"])
    report = compare_runs(a, b)
    built = build_run_report(a)
    trial = next(t for t in built.trials if t.label == "default (cold)")
    speedups = {c.shape: c for c in report.changes if c.trial == "default (cold)" and c.figure == "speedup"}
    assert set(speedups) == {r.shape for r in trial.rows if r.speedup is not None} == {"16", "32", "64"}
    for row in trial.rows:
        change = speedups[row.shape]
        assert change.a == pytest.approx(row.speedup) and change.a == pytest.approx(row.eager.median / row.steady.median)
        assert change.a_text == f"×{row.speedup:.2f}"  # the figure `run`'s per-shape table prints
        assert change.change == pytest.approx(0.0) and change.flag == ""
    assert not report.regressions and report.warnings == ()
    text = console_render.to_text(console_render.compare_renderables(report), width=200)
    assert "eager p50 / compiled p50" in text and "no regression beyond the noise (3 trial pair(s) compared)" in text


def test_request_errors_are_compared_and_compile_time_is_not_flagged_for_different_work(runs):
    tmp, paths = runs
    report = compare_runs(load(paths["cold"]), load(paths["errors"]))
    errors = next(c for c in report.changes if c.trial == "default (cold)" and c.figure == "request errors")
    assert (errors.a_text, errors.b_text, errors.flag) == ("0", "2", "regression")
    eager_errors = next(c for c in report.changes if c.trial == "eager" and c.figure == "request errors")
    assert eager_errors.flag == "regression"  # the eager trial's requests raised too
    compile_s = next(c for c in report.changes if c.trial == "default (cold)" and c.figure == "compile s")
    assert compile_s.flag == "" and compile_s.why.startswith("not the same work (")
    assert "0 against 2 request errors" in compile_s.why
    ran = [c for c in report.changes if c.trial == "default (cold)" and c.figure == "how it ran"]
    assert [(c.shape, c.b_text, c.flag) for c in ran] == [("32", "error", "regression")]
    assert ran[0].a_text in ("compiled", "reused") and "thirty-two refused" in ran[0].why
    # new errors fail the gate whatever the threshold: they have no relative size
    proc = _cli("compare", str(paths["cold"]), str(paths["errors"]), "--fail-on-regression", "50%", cwd=tmp)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "request errors" in proc.stdout and "flagged regression(s)" in proc.stdout
    back = compare_runs(load(paths["errors"]), load(paths["cold"]))  # fewer errors: an improvement
    assert {(c.trial, c.flag) for c in back.changes if c.figure == "request errors"} == {
        ("eager", "improvement"), ("default (cold)", "improvement")}
    assert not [c for c in back.regressions if c.figure in ("request errors", "how it ran", "status")]


def test_a_failed_trial_is_a_regression_not_a_missing_label(runs):
    _, paths = runs
    a = load(paths["cold"])
    b = load(paths["cold"])
    dead = next(t for t in b.trials if t.spec.strategy == "default")
    b = dataclasses.replace(b, trials=tuple(
        dataclasses.replace(t, status="failed", error="trial process exited with status 3", calls=t.calls[:2],
                            steady=(), numerics=()) if t is dead else t for t in b.trials))
    report = compare_runs(a, b)
    status = next(c for c in report.changes if c.figure == "status")
    assert (status.trial, status.a_text, status.b_text, status.flag) == ("default (cold)", "ok", "failed", "regression")
    assert "trial process exited with status 3" in status.why
    assert report.regressions_beyond(10.0) and not report.only_in_a


def test_pairs_that_differ_in_backend_or_threads_are_warned_per_pair(runs):
    tmp, paths = runs
    report = compare_runs(load(paths["cold"]), load(paths["aot"]))
    assert "default (cold): backend differs (A eager, B aot_eager)" in report.warnings
    assert "default (cold): threads differs (A 1, B 2)" in report.warnings
    assert "eager: threads differs (A 1, B 2)" in report.warnings
    assert not any(w.startswith("eager: backend") for w in report.warnings)  # eager compiles nothing
    proc = _cli("compare", str(paths["cold"]), str(paths["aot"]), cwd=tmp)
    assert proc.returncode == 0, proc.stderr
    # the line may wrap at the pipe's width: compare its words
    assert ("! default (cold): backend differs (A eager, B aot_eager): this pair's figures include that difference"
            in " ".join(proc.stdout.split()))


def test_runs_of_different_workloads_or_streams_are_refused_in_one_line(runs):
    tmp, paths = runs
    proc = _cli("compare", str(paths["cold"]), str(paths["other"]), cwd=tmp)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().count("\n") == 0 and "compare pairs runs of one workload" in proc.stderr
    assert "Traceback" not in proc.stderr
    base = load(paths["cold"])
    shorter = dataclasses.replace(base, stream=base.stream[:-1])
    with pytest.raises(OptionError, match="ran different streams .*compare pairs runs of one stream"):
        compare_runs(base, shorter)


def test_labels_that_differ_by_start_mode_pair_by_strategy_and_zero_pairs_is_an_error(runs):
    tmp, paths = runs
    cold, warm = str(paths["cold"]), str(paths["warm"])
    none = _cli("compare", cold, warm, cwd=tmp)
    assert none.returncode == 2 and "no regression" not in none.stdout
    assert "no trial of A pairs with one of B" in none.stderr and "--pair-by strategy" in none.stderr
    paired = _cli("compare", cold, warm, "--pair-by", "strategy", cwd=tmp)
    assert paired.returncode == 0, paired.stdout + paired.stderr
    assert "default (cold) → default (warm)" in paired.stdout
    assert "start mode differs (A cold, B warm)" in paired.stdout
    report = compare_runs(load(paths["cold"]), load(paths["warm"]), pair_by="strategy")
    assert [(p.a, p.b) for p in report.pairs] == [("default (cold)", "default (warm)")]
    assert report.only_in_a == ("eager",) and report.only_in_b == ()  # the warm half has no eager trial
    # a run holding both start modes cannot pair by strategy alone
    with pytest.raises(OptionError, match="has 2 trials of strategy 'default'"):
        compare_runs(load(paths["base"]), load(paths["warm"]), pair_by="strategy")


def test_compare_html_shows_the_console_figures(runs):
    pytest.importorskip("plotly")
    from compilescope.render import html as html_render

    _, paths = runs
    report = compare_runs(load(paths["cold"]), load(paths["aot"]), "base.json", "aot.json")
    page = html_render.render_compare(report)
    assert "change = B / A − 1" in page and 'id="compare-warnings"' in page
    assert "backend differs (A eager, B aot_eager)" in page
    text = console_render.to_text(console_render.compare_renderables(report), width=250)
    for c in report.changes:
        assert f'<td class="num">{c.a_text}</td>' in page and c.a_text in text


@pytest.mark.parametrize("ratio, significant, want", [
    (1.23, False, "steady-state execution was not measurably different from eager: the difference is inside the noise"),
    (0.80, False, "steady-state execution was not measurably different from eager: the difference is inside the noise"),
    (1.02, False, "steady-state execution matched eager: within 5%, inside the noise"),
    (1.23, True, "steady-state execution improved on this stream's mix of shapes"),
    (1.03, True, "steady-state execution was marginally faster than eager: under 5%, but beyond the noise"),
])
def test_a_verdict_never_calls_a_ratio_outside_5_percent_matched(runs, ratio, significant, want):
    from compilescope.analysis.verdict import verdict_clauses

    _, paths = runs
    trial = next(t for t in build_run_report(load(paths["cold"])).trials if t.label == "default (cold)")
    assert trial.steady is not None
    shaped = dataclasses.replace(trial, steady=dataclasses.replace(trial.steady, weighted_ratio=ratio),
                                 saving_significant=significant)
    head = verdict_clauses(shaped)[0]
    assert head.startswith(want) and f"×{ratio:.2f} stream-weighted" in head
    if abs(ratio - 1) > 0.05:
        assert "matched" not in head
