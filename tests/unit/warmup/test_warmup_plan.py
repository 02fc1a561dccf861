"""The warm-up plan: found by dry run, checked by real trials that call the plan's start-up
shapes and then replay the recording — nothing may compile after start-up — and written,
rendered and refused the way every command's output is.

The real side is :func:`run_trial` in this process (what a ``run`` worker executes), CPU
tensors and the real ``eager`` backend, an empty cache directory; one CLI case measures
through the scheduler and a fresh process per trial."""

from __future__ import annotations

import json

import pytest

from compilescope.model import MeasureOptions, TrialSpec
from compilescope.stream import parse_stream
from compilescope.warmup import load_plan, save_plan
from compilescope.warmup.plan import plan_warmup
from compilescope.workload import load_workload

SINCOS = "16,16,32,32,64,16,8,128,3,5,6,7,16,64"  # 9 distinct sizes: static needs more than 8 entries
TRANSFORMER = "batch=2,seq=16;batch=4,seq=32;batch=2,seq=16;batch=4,seq=24;batch=4,seq=32"


@pytest.fixture(scope="module")
def sincos_plan():
    return plan_warmup("sincos", SINCOS, "default,static,dynamic", backend="eager")


@pytest.fixture(scope="module")
def transformer_plan():
    return plan_warmup("transformer", TRANSFORMER, "default,static,dynamic", backend="eager")


def _replay(workload: str, stream: str, p, tmp_path, monkeypatch):
    """A real trial: the plan's start-up shapes, then the recorded stream."""
    from compilescope.execute.trial import run_trial

    cache = tmp_path / f"cache-{workload.rsplit(':', 1)[-1]}-{p.strategy}"
    cache.mkdir()
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(cache))
    recorded = parse_stream(stream, load_workload(workload).dims)
    spec = TrialSpec(workload, p.strategy, "cold", tuple(recorded), p.options,
                     MeasureOptions(steady=False, numerics=False), startup=p.shapes)
    result, _ = run_trial(spec)
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR")
    return result


def _after_startup(result):
    from compilescope.collect.graphs import eager_frames

    compiled = [r for r in result.compiles if r.phase == "stream" and (r.is_compile or r.refused)]
    eager = [c.index for c in result.calls if c.ran_eagerly] + sorted(eager_frames(result.calls, result.compiles))
    return compiled, eager


@pytest.mark.parametrize("strategy", ["default", "static", "dynamic"])
@pytest.mark.parametrize("case", ["sincos", "transformer"])
def test_each_plan_keeps_every_compile_off_the_recorded_stream_in_a_real_trial(case, strategy, sincos_plan,
                                                                               transformer_plan, tmp_path, monkeypatch):
    plan, stream = (sincos_plan, SINCOS) if case == "sincos" else (transformer_plan, TRANSFORMER)
    p = plan.plan(strategy)
    recorded = parse_stream(stream, load_workload(case).dims)
    assert not p.uncovered and len(p.covers) == len({tuple(s.items()) for s in recorded})
    result = _replay(case, stream, p, tmp_path, monkeypatch)
    assert result.status == "ok", result.error
    compiled, eager = _after_startup(result)
    assert compiled == [] and eager == [], [(r.compile_id, r.reasons) for r in compiled]
    startup = [r for r in result.compiles if r.phase == "startup" and r.is_compile]
    assert len(startup) == p.compiles >= 1  # the forecast's start-up compiles are the measured ones
    assert len(result.startup) == len(p.shapes) and all(c.error is None for c in result.startup)


def test_default_plan_is_smaller_than_static_and_static_says_the_limit_it_needs(sincos_plan, transformer_plan):
    for plan in (sincos_plan, transformer_plan):
        default, static, dynamic = plan.plan("default"), plan.plan("static"), plan.plan("dynamic")
        assert len(default.shapes) < len(static.shapes)
        assert len(dynamic.shapes) <= len(default.shapes)
        assert "checked" in default.minimal and "static" in static.minimal
    static = sincos_plan.plan("static")
    assert [s["n"] for s in static.shapes] == [16, 32, 64, 8, 128, 3, 5, 6, 7]  # stream order
    assert static.frame_entries == 9 and static.recompile_limit == 9 and static.options.recompile_limit == 9
    assert static.recompile_limit_default == 8
    assert "static: needs recompile_limit=9; PyTorch's default is 8" in " ".join(sincos_plan.notes)
    default = sincos_plan.plan("default")
    assert [s["n"] for s in default.shapes] == [16, 32]  # the second size makes the dim dynamic
    assert default.recompile_limit is None and default.options.recompile_limit is None
    assert transformer_plan.plan("static").recompile_limit is None  # 3 entries: the default holds


def test_a_limit_given_below_the_need_leaves_the_shapes_past_it_uncovered_and_says_so():
    plan = plan_warmup("sincos", SINCOS, "static", backend="eager", recompile_limit=4)
    p = plan.plan("static")
    assert len(p.shapes) == 4 and len(p.covers) == 4 and len(p.uncovered) == 5
    assert {u.outcome for u in p.uncovered} == {"eager"} and p.uncovered[0].why == "eager: recompile limit (4)"
    assert p.recompile_limit == 4 and "than the limit given (4; how many more" in " ".join(plan.notes)
    assert p.past_limit and p.entries_text == "> 4"  # 9 shapes: the dry run sees 5 asked for, not how many more


def test_the_check_is_a_dry_run_a_shape_its_own_entry_refuses_again_stays_uncovered_with_that_guard():
    """A step that multiplies by its call count: Dynamo guards the count, so under static a
    shape called at start-up compiles again. The plan's check calls every shape a second time
    in its dry run; the plan covers nothing and names the guard each shape's own entry failed
    (not the newest entry's size guard). Under default the count becomes dynamic: covered."""
    from pathlib import Path

    ref = f"{Path(__file__).resolve().parents[2] / 'workloads_forecast.py'}:counts_calls"
    plan = plan_warmup(ref, "8,16,8,32", "default,static", backend="eager")
    static = plan.plan("static")
    assert [s["n"] for s in static.shapes] == [8, 16, 32] and static.minimal.startswith("not checked")
    assert [(u.shape["n"], u.outcome, u.why) for u in static.uncovered] == [
        (8, "compile", "calls[0] == 0"), (16, "compile", "calls[0] == 1"), (32, "compile", "calls[0] == 2")]
    default = plan.plan("default")
    assert [s["n"] for s in default.shapes] == [8, 16] and not default.uncovered and len(default.covers) == 3
    assert "the last cannot be dropped" in default.minimal  # 16 compiled on 8's entry: dropping it cannot hold


def test_a_shape_whose_compile_fails_is_never_a_start_up_call():
    """32's compile fails, after which Dynamo runs the frame eagerly for good: calling it at
    start-up would leave 16 and 64 running eagerly too. It stays uncovered, saying why."""
    from pathlib import Path

    ref = f"{Path(__file__).resolve().parents[2] / 'workloads_for_tests.py'}:fails_to_compile_at_32"
    p = plan_warmup(ref, "16,32,16,64", "default", backend="eager").plan("default")
    assert [s["n"] for s in p.shapes] == [16]
    why = {u.shape["n"]: (u.outcome, u.why) for u in p.uncovered}
    assert why[32][0] == "compile" and why[32][1].startswith("its compile fails: 0/")
    assert why[64][0] == "eager" and "failed" in why[64][1] and "recompile limit" not in why[64][1]


def test_the_list_and_its_check_are_one_dry_run_and_the_last_shapes_drop_takes_none(monkeypatch):
    """sincos under default: one dry run finds [16, 32] and checks it (each shape called twice),
    and dropping 16 is the only other; 32 compiled on 16's entry, so its drop is not run."""
    from compilescope.forecast import engine

    runs = []
    real = engine.dry_trial

    def counted(workload_ref, strategy, shapes, *args, **kwargs):
        runs.append([s["n"] for s in shapes])
        return real(workload_ref, strategy, shapes, *args, **kwargs)

    monkeypatch.setattr(engine, "dry_trial", counted)
    plan = plan_warmup("sincos", "16,32,16,64", "default", backend="eager").plan("default")
    assert [s["n"] for s in plan.shapes] == [16, 32] and len(plan.covers) == 3 and not plan.uncovered
    assert runs == [[16, 32, 64, 16, 32, 64], [32, 16, 32, 64]], runs  # start-up [32], then 16 first
    assert plan.minimal.startswith("checked: each start-up shape but the last dropped in turn (1 dry run)")


def test_the_plan_file_round_trips(sincos_plan, tmp_path):
    save_plan(sincos_plan, tmp_path / "plan.json")
    assert load_plan(tmp_path / "plan.json") == sincos_plan


def test_the_cli_writes_the_plan_and_every_output_format(main, tmp_path):
    code, out, err = main("warmup", "sincos", "--stream", "16,32,64,<b>", "--backend", "eager", "--no-measure")
    assert code == 2 and err.count("\n") == 1, err  # a bad stream: one line
    code, out, err = main("warmup", "sincos", "--stream", "16,16,32,64", "--strategies", "default,static",
                          "--backend", "eager", "--no-measure", "--plan-out", "plan.json", "--out", "w.json",
                          "--out", "w.txt", "--out", "w.html")
    assert code == 0, err
    plan = load_plan(tmp_path / "plan.json")
    assert [[s["n"] for s in p.shapes] for p in plan.plans] == [[16, 32], [16, 32, 64]] and plan.recommended is None
    data = json.loads((tmp_path / "w.json").read_text())
    assert data["kind"] == "warmup" and data["schema_version"] >= 1 and data["plan"]["kind"] == "warmup-plan"
    text = (tmp_path / "w.txt").read_text()
    assert "plan (forecast, dry run)" in text and "not measured" in text
    assert "<table" in (tmp_path / "w.html").read_text()
    for line in ("results JSON: w.json", "text report: w.txt", "html report: w.html", "plan: plan.json"):
        assert line in out


@pytest.mark.processes
def test_the_cli_measures_a_plan_with_trials(main, tmp_path):
    code, out, err = main("warmup", "sincos", "--stream", "16,16,32,64", "--strategies", "dynamic", "--backend",
                          "eager", "--cache", "cold", "--samples", "3", "--lifetime", "1000", "--out", "w.json")
    assert code == 0, err
    data = json.loads((tmp_path / "w.json").read_text())
    (measured,) = data["measured"]
    (cold,) = measured["starts"]
    assert cold["cache"] == "cold" and cold["status"] == "ok" and cold["after"] == [] and cold["startup_compiles"] == 1
    assert cold["startup_s"] > 0 and measured["steady_s"] > 0  # measured, whatever the figures
    assert data["verdict"]["recommended"] == "dynamic" and data["plan"]["recommended"] == "dynamic"
    assert "verdict (measured)" in out and "--lifetime 1,000" in out


@pytest.mark.parametrize("args, says", [
    (("--backend", "nope"), "warmup backend 'nope'"),
    (("--strategies", "nope"), "nope"),
    (("--artifacts", "art"), "--artifacts needs --plan-out"),
    (("--artifacts", "art", "--plan-out", "p.json", "--backend", "eager"), "--artifacts needs --backend inductor"),
    (("--out", "w.csv"), "csv output is not made for a warm-up report"),
    (("--cache", "tepid"), "unknown cache mode"),
    (("--lifetime", "-3"), "--lifetime"),
])
def test_bad_input_is_one_line_and_exit_2(main, tmp_path, args, says):
    code, out, err = main("warmup", "sincos", "--stream", "16,32", "--no-measure", *args)
    assert code == 2 and out == "" and err.count("\n") == 1 and says in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.processes
def test_verify_is_in_the_out_files_beside_the_plan(main, tmp_path):
    """``--verify`` writes the warm-up report first, then again with the replay in it."""
    code, out, err = main("warmup", "sincos", "--stream", "16,32,16", "--backend", "eager", "--strategies",
                          "static", "--no-measure", "--verify", "16,32,64", "--out", "w.json", "--out", "w.txt")
    assert code == 1, err  # 64 compiled after start-up and the plan does not list it: the proof failed
    data = json.loads((tmp_path / "w.json").read_text())
    assert data["kind"] == "warmup" and data["verified"]["kind"] == "verify"
    static = data["verified"]["strategies"][0]
    assert static["strategy"] == "static"
    # 64 was never recorded: its compile after start-up is named, and the forecast saw it coming
    assert [(r["shape"], r["outcome"], r["forecast"]) for r in static["failures"]] == [([["n", 64]], "compile", "compile")]
    assert static["stall_free"] == 2 / 3
    text = (tmp_path / "w.txt").read_text()
    assert "compilescope warmup --verify: sincos" in text and "(with the verification)" in out + err


@pytest.mark.processes
def test_verify_with_json_to_stdout_writes_one_document(main, tmp_path):
    code, out, err = main("warmup", "sincos", "--stream", "16,32", "--backend", "eager", "--strategies", "static",
                          "--no-measure", "--verify", "16,32", "--json", "-")
    assert code == 0, err
    data = json.loads(out)  # one document: the report with its verification, written once
    assert data["kind"] == "warmup" and data["verified"]["strategies"][0]["stall_free"] == 1.0
    assert "nothing was measured to recommend a strategy, so the first one's plan is verified: static" in err


@pytest.mark.parametrize("args, says", [
    (("--verify", "16,x"), "--verify: bad stream token 'x'"),
    (("--plan-out", "-"), "--plan-out cannot be `-`"),
])
def test_a_bad_held_out_stream_or_plan_path_is_refused_before_planning(main, tmp_path, args, says):
    code, out, err = main("warmup", "sincos", "--stream", "16,32", "--backend", "eager", "--no-measure", *args)
    assert code == 2 and err.count("\n") == 1 and says in err, err
    assert "plan (forecast" not in out + err  # nothing was planned


def test_renderers_print_strings_as_data():
    from compilescope.model import StrategyOptions
    from compilescope.render import get
    from compilescope.report.warmup import AfterStartup, MeasuredStart, StrategyMeasured, WarmupReport
    from compilescope.warmup import StrategyPlan, Uncovered, WarmupPlan

    hostile = "<script>alert(1)</script> [red]x[/red]"
    p = StrategyPlan("static", StrategyOptions(backend="eager"), ({"n": 16},), covers=({"n": 16},),
                     uncovered=(Uncovered({"n": 32}, "compile", hostile),), compiles=1, frame_entries=1,
                     minimal=hostile)
    plan = WarmupPlan("w", hostile, 2, "eager", (p,), notes=(hostile,))
    start = MeasuredStart("cold", "ok", 0.5, None, 1, (AfterStartup(1, "32", "compile 0/1", (hostile,)),))
    report = WarmupReport(plan, (StrategyMeasured("static", (start,), 1e-5, 1e-5, 1e-5, 1),), trial_stream=hostile)
    page = get("html").render(report)
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    text = get("text").render(report)
    assert "[red]x[/red]" in text and "uncovered 32 (compile)" in text and "measured (trials" in text
    assert json.loads(get("json").render(report))["measured"][0]["starts"][0]["after"][0]["guards"] == [hostile]


def test_the_cold_trials_artifacts_are_kept_and_saved_beside_the_plan(sincos_plan, tmp_path):
    from compilescope.execute.executor import Capabilities, done_future
    from compilescope.execute.task import TrialOutcome, TrialTask
    from compilescope.model import TrialResult
    from compilescope.warmup.measure import KeepArtifacts, save_artifacts

    class Fake:
        capabilities = Capabilities()

        def expect(self, specs):
            pass

        def submit(self, task, timeout_s, on_call=None):
            artifacts = b"\x00mega" if task.save_artifacts else None
            return done_future(TrialOutcome(TrialResult(task.spec, "ok"), artifacts=artifacts))

        def shutdown(self):
            pass

    keep = KeepArtifacts(Fake())
    for cache, save in (("cold", True), ("warm", False)):
        spec = TrialSpec("sincos", "default", cache, ({"n": 16},))
        keep.submit(TrialTask(spec, str(tmp_path), save_artifacts=save), 10.0)
    assert keep.artifacts == {"default": b"\x00mega"}
    saved, written = save_artifacts(sincos_plan, keep.artifacts, tmp_path / "plan" / "art", tmp_path / "plan")
    assert written == ["default"] and saved.artifacts == "art"
    assert (tmp_path / "plan" / "art" / "default.bin").read_bytes() == b"\x00mega"
    assert "art: <strategy>.bin for default" in saved.notes[-1]


def test_the_verdict_adds_start_up_and_lifetime_steady_and_trusts_no_steady_difference_within_noise():
    from compilescope.report.warmup import AfterStartup, MeasuredStart, StrategyMeasured
    from compilescope.warmup.measure import verdict

    def measured(name, startup, steady, spread, after=()):
        return StrategyMeasured(name, (MeasuredStart("cold", "ok", startup, None, 1, after),), steady,
                                steady - spread, steady + spread, 1)

    # static: more start-up, a faster steady state beyond the noise; pays over a long lifetime only
    rows = [measured("dynamic", 1.0, 30e-6, 1e-6), measured("static", 5.0, 20e-6, 1e-6)]
    short, long = verdict(rows, 1000, 10), verdict(rows, 10_000_000, 10)
    assert short.recommended == "dynamic" and long.recommended == "static"
    assert "static overtakes dynamic after 400,000 requests" in short.why and short.steady_noise == ()
    assert "the recorded stream" in verdict(rows, None, 10).lifetime_basis
    # within noise: no break-even is claimed
    noisy = verdict([measured("dynamic", 1.0, 30e-6, 8e-6), measured("static", 5.0, 20e-6, 8e-6)], 1000, 10)
    assert "overtakes" not in noisy.why and "within noise" in noisy.steady_noise[0]
    # ... and over a lifetime long enough for the noisy steady difference to outweigh the start-up,
    # the start-up still decides: the steady part is no measured difference
    long_noisy = verdict([measured("dynamic", 1.0, 30e-6, 8e-6), measured("static", 5.0, 20e-6, 8e-6)], 10_000_000, 10)
    assert long_noisy.recommended == "dynamic" and "the start-up decides" in long_noisy.why
    assert long_noisy.steady_noise == ("dynamic and static: steady state within noise (IQRs overlap): the start-up "
                                       "decides (1 s against 5 s, one sample each, beyond one sample's jitter); static's steady figure, 100 s less over "
                                       "10,000,000 requests, is not a measured difference",)
    # a plan that compiled after start-up comes after one that held, whatever its total
    broken = measured("dynamic", 0.1, 30e-6, 1e-6, (AfterStartup(3, "16", "compile 0/1"),))
    assert verdict([broken, measured("static", 5.0, 20e-6, 1e-6)], 1000, 10).recommended == "static"
    # ranked by the cold start; a warm start that favours another strategy is said
    both = [StrategyMeasured("dynamic", (MeasuredStart("cold", "ok", 1.0, None, 1, ()),
                                         MeasuredStart("warm", "ok", 0.9, None, 1, ())), 30e-6, 29e-6, 31e-6, 1),
            StrategyMeasured("static", (MeasuredStart("cold", "ok", 5.0, None, 1, ()),
                                        MeasuredStart("warm", "ok", 0.2, None, 1, ())), 20e-6, 19e-6, 21e-6, 1)]
    judged = verdict(both, 1000, 10)
    assert judged.recommended == "dynamic" and "(cold)" in judged.why
    assert judged.other_starts == ("from a warm start static pays instead: 200 ms start-up + 1,000 × 20 µs "
                                   "= 220 ms",)
    assert verdict(both, 1000, 10, cache="warm").other_starts[0].startswith("from a cold start dynamic pays instead")


def test_a_plan_over_the_cpu_convolutions_threshold_warms_both_sides_of_it(tmp_path, monkeypatch):
    """A strided Conv1d whose lengths cross the CPU convolution's backend threshold: the
    graph for the short lengths does not accept the long ones, so the plan must call one of
    each at start-up (a trace on the meta device saw no threshold, and a plan from it claimed
    the long lengths covered). Replayed for real after the plan's start-up, nothing compiles."""
    from pathlib import Path

    ref = f"{Path(__file__).resolve().parents[2] / 'workloads_forecast.py'}:strided_conv1d"
    recorded = "1000,2000,3000,6000,8000,2000,4000,12000"
    plan = plan_warmup(ref, recorded, "dynamic", backend="eager").plan("dynamic")
    assert any(s["n"] > 5120 for s in plan.shapes) and any(s["n"] <= 5120 for s in plan.shapes), plan.shapes
    assert not plan.uncovered
    compiled, eager = _after_startup(_replay(ref, recorded, plan, tmp_path, monkeypatch))
    assert compiled == [] and eager == []


@pytest.mark.processes
def test_the_planning_phase_tells_its_progress_strategy_by_strategy():
    """warmup's dry runs are never silent: each strategy's phases, then its plan done, counted
    against the strategies to plan (what the CLI's progress line shows)."""
    from compilescope.app.progress import Progress
    from compilescope.app.warmup import warmup

    class Heard(Progress):
        def __init__(self) -> None:
            self.events: list[tuple] = []

        def begin(self, total, unit="trials"):
            self.events.append(("begin", total, unit))

        def working(self, label, phase, done=None, total=None):
            self.events.append(("working", label, phase))

        def finished(self, label, trial=None, tally=None):
            self.events.append(("finished", label))

        def end(self):
            self.events.append(("end",))

    heard = Heard()
    report = warmup("sincos", "16,32,16,64", "eager,default,static", backend="eager", measure=False, progress=heard)
    assert [p.strategy for p in report.plan.plans] == ["default", "static"]
    events = heard.events
    assert events[0] == ("begin", 2, "plans") and events[-1] == ("end",)
    assert [e for e in events if e[0] == "finished"] == [("finished", "plan default"), ("finished", "plan static")]
    phases = [e[2] for e in events if e[:2] == ("working", "plan default")]
    assert phases[0] == "dry run of the 3 shape(s) of 4 recorded request(s), then of each again"
    assert any(p.startswith("dropping each of ") for p in phases)
    # every phase of a strategy comes before its end, and the next strategy's after it
    assert events.index(("finished", "plan default")) < min(
        i for i, e in enumerate(events) if e[:2] == ("working", "plan static"))


def test_of_plans_whose_steady_states_the_noise_cannot_tell_apart_the_least_start_up_is_picked_in_every_start():
    from compilescope.report.warmup import MeasuredStart, StrategyMeasured
    from compilescope.warmup.measure import verdict

    def measured(name, cold, warm, steady):
        return StrategyMeasured(name, (MeasuredStart("cold", "ok", cold, None, 1, ()),
                                       MeasuredStart("warm", "ok", warm, None, 1, ())), steady, steady - 8e-6,
                                steady + 8e-6, 1)

    plans = [measured("a", 5.0, 2.0, 20e-6), measured("b", 4.0, 3.0, 21e-6), measured("c", 1.0, 1.5, 30e-6)]
    judged = verdict(plans, 10_000_000, 10)
    assert judged.recommended == "c" and all(n.startswith("c and ") for n in judged.steady_noise)
    assert judged.other_starts == ()  # from a warm start too the least start-up (c's 1.5 s) is the pick


def test_what_happened_after_start_up_counts_compiles_and_eager_requests_apart():
    from compilescope.report.warmup import AfterStartup, MeasuredStart

    def start(*whats):  # type: ignore[no-untyped-def]
        return MeasuredStart("cold", "ok", 1.0, None, 3, tuple(AfterStartup(i, "16", w) for i, w in enumerate(whats)))

    assert start().after_text == "0"
    assert start("refused 0/3 (recompile limit): eager", "eager fallback").after_text == "2 eager"
    assert start("compile 0/3", "eager fallback").after_text == "1 compile(s), 1 eager"



def test_a_plans_steady_figure_per_request_holds_its_eager_requests_at_their_eager_time_and_says_so():
    """Past the recompile limit a shape's requests run eagerly under the plan: their steady
    samples (of the compiled callable, which ran no graph) are what those requests cost, so the
    per-request figure weighs them in — before, it left them out, and the verdict's
    "30 × 42 µs" applied the compiled figure to requests that ran eagerly."""
    from types import SimpleNamespace

    from compilescope.model import SteadyState
    from compilescope.report.warmup import MeasuredStart, StrategyMeasured
    from compilescope.warmup.measure import steady_row, verdict

    a, b = {"n": 16}, {"n": 32}
    trial = SimpleNamespace(steady=(SteadyState(a, 1, (10e-6,) * 5, ()),
                                    SteadyState(b, 1, (40e-6,) * 5, (), ran_eagerly=True)))
    steady, q1, q3, shapes, missing, eager = steady_row(trial, [a, b, b, b])
    assert steady == pytest.approx((10e-6 + 3 * 40e-6) / 4) and shapes == 2 and missing == ()
    assert eager == (("32", 3),)
    rows = [StrategyMeasured("static", (MeasuredStart("cold", "ok", 1.0, None, 1, ()),), steady, q1, q3, 2,
                             steady_eager=("32 (3 requests)",), steady_eager_requests=3),
            StrategyMeasured("dynamic", (MeasuredStart("cold", "ok", 2.0, None, 1, ()),), 20e-6, 19e-6, 21e-6, 1)]
    judged = verdict(rows, 1000, 4)
    assert judged.recommended == "static"
    assert "1,000 × 32.5 µs (3 of 4 recorded requests eager) = 1.03 s" in judged.why, judged.why


def test_a_noise_tie_is_among_plans_no_two_of_which_the_noise_tells_apart():
    """An overlap of IQRs is not transitive: static's overlaps dynamic's, not default's, so
    static (least start-up, most total) is no tie with the pair; before, it was picked from a
    warm start ('from a warm start static pays instead … 10.4 s' beside default's 10 s)."""
    from compilescope.report.warmup import AfterStartup, MeasuredStart, StrategyMeasured
    from compilescope.warmup.measure import verdict

    def measured(name, warm, steady, q1, q3, after=()):
        return StrategyMeasured(name, (MeasuredStart("warm", "ok", warm, None, 1, after),), steady, q1, q3, 1)

    plans = [measured("dynamic", 2.0, 780e-6, 700e-6, 830e-6), measured("default", 2.5, 750e-6, 698e-6, 766e-6),
             measured("static", 1.87, 849e-6, 821e-6, 871e-6)]
    judged = verdict(plans, 10_000, 10, cache="warm")
    assert judged.recommended == "dynamic", judged.why
    # static ranks by its total, not by its start-up: no "the start-up decides" about it
    assert [n.split(":")[0] for n in judged.steady_noise] == ["dynamic and default"], judged.steady_noise
    # start-ups within one sample's jitter of each other (one sample each) decide nothing: a tie,
    # said as one — 2.0 s against 2.2 s too (before, 10% apart "decided"; reruns reversed it)
    for a_s in (2.18, 2.0):
        close = verdict([measured("a", a_s, 750e-6, 700e-6, 800e-6), measured("b", 2.2, 760e-6, 700e-6, 800e-6)],
                        10_000, 10, cache="warm")
        assert ("their steady states are within noise and their start-ups (one sample each) within ±25% or 50 ms of "
                "each other: a tie") in close.why, close.why
        assert close.why.startswith(f"{close.recommended} and ") and " tie over " in close.why  # never "pays"
        assert " pays over " not in close.why
        assert "are within one sample's jitter of each other: a tie" in close.steady_noise[0]
    # a plan that did not hold ranks after one that did, and the verdict says why
    broken = measured("static", 0.9, 488e-6, 400e-6, 720e-6, (AfterStartup(4, "35", "eager fallback"),))
    held = verdict([broken, measured("default", 2.27, 736e-6, 700e-6, 760e-6)], 10_000, 10, cache="warm")
    assert held.recommended == "default"
    assert "static ranks after whatever its total: its plan did not hold" in held.why
    assert held.steady_noise == ()  # no "the start-up decides" where whether the plan held did


def test_a_limit_given_that_pytorchs_default_holds_too_asks_nothing_to_be_set():
    from compilescope.model import StrategyOptions, StrategyPlan
    from compilescope.warmup.plan import limit_note

    def plan(limit, entries):
        return StrategyPlan(strategy="default", options=StrategyOptions(recompile_limit=limit), shapes=(), covers=(),
                            uncovered=(), compiles=entries, frame_entries=entries, recompile_limit=limit,
                            recompile_limit_default=8)

    assert limit_note(plan(3, 3)) == ("default: one frame holds 3 cache entries, within the limit given (3) and "
                                      "PyTorch's default (8); the plan's options keep the limit given")
    assert limit_note(plan(9, 9)).startswith("default: needs recompile_limit=9; PyTorch's default is 8")


def test_the_measured_table_gives_a_strategys_steady_figure_once_not_copied_to_each_start():
    """Steady state is measured in one trial per strategy: it is shown on the strategy's first
    start row, not copied beside the warm start as if measured there too."""
    from compilescope.model import StrategyOptions
    from compilescope.render import get
    from compilescope.report.warmup import MeasuredStart, StrategyMeasured, WarmupReport
    from compilescope.warmup import StrategyPlan, WarmupPlan

    p = StrategyPlan("static", StrategyOptions(backend="eager"), ({"n": 16},), covers=({"n": 16},), compiles=1,
                     frame_entries=1, minimal="yes")
    starts = (MeasuredStart("cold", "ok", 0.5, None, 1, ()), MeasuredStart("warm", "ok", 0.2, None, 1, ()))
    report = WarmupReport(WarmupPlan("w", "16", 1, "eager", (p,)),
                          (StrategyMeasured("static", starts, 123e-6, 1e-4, 2e-4, 1),), trial_stream="16")
    text = get("text").render(report)
    assert text.count("123 µs") == 1, text
