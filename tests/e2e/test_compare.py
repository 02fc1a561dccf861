"""``compare``: one speedup convention (eager / compiled, as `run` prints it), runs of different
workloads or streams refused, per-pair warnings when the environment differs, request errors
and eager fallbacks compared, compile time flagged only for the same work, pairing by strategy,
and zero pairs an error — on real runs (backend eager / aot_eager)."""

from __future__ import annotations

import dataclasses
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
        "again": ("w", ("--cache", "cold,warm"), {}),  # the same configuration once more: an A/A pair
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
    both = compare_runs(b, b)  # failed in A and in B: no regression, and no run to pass a gate either
    still = next(c for c in both.changes if c.figure == "status")
    assert (still.a_text, still.b_text, still.flag) == ("failed", "failed", "") and not both.regressions
    assert both.regressions_beyond(10.0) == (still,)


def test_pairs_that_differ_in_backend_or_threads_are_warned_per_pair(runs):
    tmp, paths = runs
    report = compare_runs(load(paths["cold"]), load(paths["aot"]))
    assert "default (cold): backend differs (A eager, B aot_eager)" in report.warnings
    assert "default (cold): threads differs (A 1, B 2)" in report.warnings
    assert "eager: threads differs (A 1, B 2)" in report.warnings
    assert not any(w.startswith("eager: backend") for w in report.warnings)  # eager compiles nothing
    # a recompile limit refuses compiles: a pair under another limit says so (it explains every count that moved)
    base = load(paths["cold"])
    limited = dataclasses.replace(base, trials=tuple(
        dataclasses.replace(t, spec=dataclasses.replace(t.spec, options=dataclasses.replace(t.spec.options,
                                                                                          recompile_limit=2)))
        for t in base.trials))
    assert ("default (cold): recompile limit differs (A PyTorch's default, B 2)"
            in compare_runs(base, limited).warnings)
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
        assert f'<td class="num">{html_render.e(c.a_text)}</td>' in page and c.a_text in text


@pytest.mark.parametrize("ratio, significant, want", [
    (1.23, False, "steady-state execution could not be told apart from eager: the difference is inside the noise"),
    (0.80, False, "steady-state execution could not be told apart from eager: the difference is inside the noise"),
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
                                 saving_significant=significant, saving_per_request_s=1e-6, saving_noise_s=1e-5,
                                 saving_beyond_band=False, saving_testable=True)
    head = verdict_clauses(shaped)[0]
    assert head.startswith(want) and f"×{ratio:.2f} stream-weighted" in head
    if abs(ratio - 1) > 0.05:
        assert "matched" not in head
    # a difference outside the IQR band that the samples' test does not bear out is not called
    # "inside the noise": the test is what did not tell
    if not significant and abs(ratio - 1) > 0.05:
        wide = dataclasses.replace(shaped, saving_per_request_s=-4e-4, saving_noise_s=7e-5, saving_beyond_band=True)
        clauses = verdict_clauses(wide)
        assert clauses[0].startswith("steady-state execution could not be told apart from eager: the samples' "
                                     "test does not bear the difference out"), clauses[0]
        assert any("is not borne out by the samples' test" in c for c in clauses)
        # too few samples for the test ever to tell: said so, not that the test came out negative
        few = verdict_clauses(dataclasses.replace(wide, saving_testable=False))
        assert few[0].startswith("steady-state execution could not be told apart from eager: too few samples to "
                                 "test the difference"), few[0]
        assert any("was not tested (too few samples)" in c for c in few)
    if ratio == 1.02:  # within 5%, outside the band: matched, and not called "inside the noise"
        wide = dataclasses.replace(shaped, saving_per_request_s=3e-6, saving_noise_s=1e-6, saving_beyond_band=True)
        assert verdict_clauses(wide)[0].startswith("steady-state execution matched eager: within 5%, a difference "
                                                   "the samples' test does not bear out")


# --------------------------------------------------------------------------------------------
# A regression needs evidence against both runs' noise
# --------------------------------------------------------------------------------------------


def test_two_runs_of_one_configuration_report_no_change_and_pass_the_gate(runs):
    """The A/A test: the same configuration run twice (on a machine other tests load) flags
    nothing, either way round, and --fail-on-regression exits 0."""
    tmp, paths = runs
    for a, b in (("base", "again"), ("again", "base")):
        report = compare_runs(load(paths[a]), load(paths[b]))
        flagged = [(c.trial, c.shape, c.figure, c.a_text, c.b_text, c.why) for c in report.changes if c.flag]
        assert flagged == [], flagged
        proc = _cli("compare", str(paths[a]), str(paths[b]), "--fail-on-regression", "5%", cwd=tmp)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "no regression beyond the noise" in proc.stdout


def _slower(result, factor, *, compile_factor=1.0, samples=20):
    """``result`` with its compiled trials' steady samples ``factor`` times slower (``samples``
    interleaved pairs, drawn about the recorded ones) and compile times ``compile_factor`` longer,
    recorded on a quiet machine (the eager trial's samples drawn about the same eager figures: the
    suite's own load moved them by up to ×3.3 between the processes of the recorded run)."""
    import random

    rng = random.Random(5)
    # eager's samples in the compiled trials' processes, per shape: the eager trial's own process
    # is given the same (a quiet machine: eager does not move between processes)
    eager = {tuple(sorted(s.shape.items())): s.eager_s for t in result.trials if t.spec.strategy != "eager"
             for s in t.steady if s.eager_s}

    def stretch(t):
        if t.spec.strategy == "eager":
            steady = tuple(dataclasses.replace(
                s, compiled_s=tuple(e[i % len(e)] * rng.uniform(0.99, 1.01) for i in range(samples)))
                if (e := eager.get(tuple(sorted(s.shape.items())))) else s for s in t.steady)
        else:
            steady = tuple(dataclasses.replace(
                s, compiled_s=tuple(s.compiled_s[i % len(s.compiled_s)] * factor * rng.uniform(0.99, 1.01)
                                    for i in range(samples)),
                eager_s=tuple(s.eager_s[i % len(s.eager_s)] * rng.uniform(0.99, 1.01) for i in range(samples)))
                for s in t.steady)
        compiles = tuple(dataclasses.replace(r, compile_time_s=(r.compile_time_s or 0) * compile_factor)
                         for r in t.compiles)
        calls = tuple(dataclasses.replace(c, latency_s=(c.latency_s or 0) * compile_factor) if c.compiled else c
                      for c in t.calls)
        quiet = dataclasses.replace(t.env, load=(0.5,), cpus=2)  # the figures, not this machine's load, are tested
        return dataclasses.replace(t, steady=steady, compiles=compiles, calls=calls, env=quiet)

    return dataclasses.replace(result, trials=tuple(stretch(t) for t in result.trials))


def test_a_real_slowdown_is_still_flagged_beyond_both_runs_noise(runs):
    _, paths = runs
    base = _slower(load(paths["cold"]), 1.0)
    report = compare_runs(base, _slower(load(paths["cold"]), 3.0, compile_factor=6.0))
    speed = [c for c in report.changes if c.figure == "speedup" and c.trial == "default (cold)"]
    assert speed and all(c.flag == "regression" and "Mann–Whitney" in c.why for c in speed), speed
    compile_s = next(c for c in report.changes if c.figure == "compile s")
    assert compile_s.flag == "regression" and "the runs' own noise" in compile_s.why


def test_timings_from_a_busy_machine_are_shown_never_flagged(runs):
    _, paths = runs
    base = _slower(load(paths["cold"]), 1.0)
    loaded = _slower(load(paths["cold"]), 3.0, compile_factor=6.0)
    loaded = dataclasses.replace(loaded, trials=tuple(
        dataclasses.replace(t, env=dataclasses.replace(t.env, load=(9.5,), cpus=2)) for t in loaded.trials))
    report = compare_runs(base, loaded)
    timed = [c for c in report.changes if c.figure in ("speedup", "compile s", "first call") and c.trial != "eager"]
    assert timed and not any(c.flag for c in timed)
    assert any("the machine was busy (B load 9.5 on 2 CPU(s))" in c.why for c in timed)


def _guards_costlier(result, factor, extra_guards, rounds=None):
    """``result`` with every compiled trial's guard checks ``factor`` times slower and each
    passing entry holding ``extra_guards`` more guards (as a change that adds guards makes it);
    with ``rounds``, that many samples per check, drawn about the recorded ones."""
    import random

    rng = random.Random(7)

    def drawn(samples):
        if rounds is None:
            return tuple(s * factor for s in samples)
        return tuple(samples[i % len(samples)] * factor * rng.uniform(0.99, 1.01) for i in range(rounds))

    def frame(f):
        checks = tuple(dataclasses.replace(c, samples_s=drawn(c.samples_s)) for c in f.checks)
        return dataclasses.replace(f, checks=checks, guards=f.guards + extra_guards)

    def costlier(t):
        costs = tuple(dataclasses.replace(g, frames=tuple(frame(f) for f in g.frames)) for g in t.guard_costs)
        return dataclasses.replace(t, guard_costs=costs)

    return dataclasses.replace(result, trials=tuple(costlier(t) for t in result.trials))


def test_guard_cost_differences_are_compared_per_shape_and_in_the_stream_order(runs):
    tmp, paths = runs
    base = _slower(load(paths["cold"]), 1.0)
    assert any(g.frames for t in base.trials for g in t.guard_costs)  # the run measured its guards
    same = compare_runs(base, base)
    lookups = [c for c in same.changes if c.figure == "guard lookup"]
    assert {c.shape for c in lookups} == {"16", "32", "64"} and not any(c.flag for c in lookups)
    # the recorded 5 rounds a shape: ×10 is shown, never claimed (5 against 5 samples cannot reach 1% over 3 shapes)
    few = compare_runs(base, _guards_costlier(base, 10.0, 40))
    lookups = [c for c in few.changes if c.figure == "guard lookup"]
    assert lookups and all(not c.flag and c.b == pytest.approx(10 * c.a) for c in lookups), lookups
    assert all("the samples do not tell A and B apart (Mann–Whitney" in c.why for c in lookups), lookups
    base = _guards_costlier(base, 1.0, 0, rounds=20)
    costlier = _guards_costlier(base, 10.0, 40)  # beyond how far a process's speed moves
    report = compare_runs(base, costlier)
    lookups = [c for c in report.changes if c.figure == "guard lookup"]
    assert lookups and all(c.flag == "regression" and "Mann–Whitney p=" in c.why for c in lookups), lookups
    assert all(c.b == pytest.approx(10 * c.a) for c in lookups)
    counts = [c for c in report.changes if c.figure == "guards"]
    frames = {g.shape["n"]: len(g.frames) for t in base.trials if t.spec.label == "default (cold)" for g in t.guard_costs}
    assert counts and all(c.flag == "regression" and c.b == c.a + 40 * frames[int(c.shape)] for c in counts), counts
    stream = next(c for c in report.changes if c.figure == "guard lookup, stream order")
    assert stream.b == pytest.approx(10 * stream.a) and "entries tried" in stream.why
    # the command prints them
    (tmp / "guards-b.json").write_text(dumps(costlier))
    (tmp / "guards-a.json").write_text(dumps(base))
    proc = _cli("compare", str(tmp / "guards-a.json"), str(tmp / "guards-b.json"), cwd=tmp)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "guard lookup" in proc.stdout and "guard lookup, stream order" in proc.stdout


def test_a_lookup_that_moved_no_further_than_eager_did_between_processes_is_not_flagged(runs):
    """A/A on a loaded machine: B's process ran everything ×10 slower, its guard checks and its
    eager trial alike. A lookup is a time taken in each run's own process, so, as the speedup,
    it is not flagged within how far the same eager work moved between two processes."""
    _, paths = runs
    base = _guards_costlier(_slower(load(paths["cold"]), 1.0), 1.0, 0, rounds=20)
    # the eager trial's process measured as the compiled trials' did (no spread of its own in A)
    from compilescope.model import shape_key

    same = {shape_key(s.shape): s.eager_s for t in base.trials if t.spec.label == "default (cold)" for s in t.steady}
    base = dataclasses.replace(base, trials=tuple(
        t if t.spec.strategy != "eager" else dataclasses.replace(t, steady=tuple(
            dataclasses.replace(s, compiled_s=same[shape_key(s.shape)]) for s in t.steady)) for t in base.trials))
    slow = _guards_costlier(base, 10.0, 0)

    def eager_slower(t):
        if t.spec.strategy != "eager":
            return t
        steady = tuple(dataclasses.replace(s, compiled_s=tuple(x * 10.0 for x in s.compiled_s)) for s in t.steady)
        return dataclasses.replace(t, steady=steady)

    slow = dataclasses.replace(slow, trials=tuple(eager_slower(t) for t in slow.trials))
    lookups = [c for c in compare_runs(base, slow).changes if c.figure == "guard lookup" and c.trial == "default (cold)"]
    assert lookups and not any(c.flag for c in lookups), lookups
    assert all(c.why.startswith("within how far eager moved between two processes (×") for c in lookups), lookups
    # without the eager trial's move, the same lookups are told apart
    moved = [c for c in compare_runs(base, _guards_costlier(base, 10.0, 0)).changes
             if c.figure == "guard lookup" and c.trial == "default (cold)"]
    assert moved and all(c.flag == "regression" for c in moved), moved
