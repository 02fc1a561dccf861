"""The forecast from recorded guards against real trials and against the dry run.

A real trial (:func:`run_trial` on the CPU, real tensors, the real backend, a fresh cache
directory, as a ``run`` worker runs it) records stream A; its file forecasts stream B from
the recorded guards; a real trial of B says what happened. Each pair is used both ways
(A's guards forecast B, B's forecast A), on ``sincos``, ``transformer`` and ``convnet``
under default, static and dynamic."""

from __future__ import annotations

import dataclasses
import json
import warnings
from pathlib import Path

import pytest
import torch

from compilescope.errors import OptionError
from compilescope.forecast import compare_forecasts, forecast, forecast_recorded, request_outcomes
from compilescope.forecast.recorded import Request, Unevaluable, evaluate
from compilescope.model import EntryGuard, MeasureOptions, RunResult, StrategyOptions, TrialSpec, Workload
from compilescope.schema import dumps, load, loads
from compilescope.stream import parse_stream
from compilescope.workload import load_workload

STRATEGIES = ("default", "static", "dynamic")
# (workload, backend, stream A, stream B): small, so that the three cases take seconds each
CASES = (
    ("sincos", "aot_eager", "16,32,1,64", "random:count=40;seed=3;n=8|16|24|32|40|1|2"),
    ("transformer", "eager", "batch=2,seq=16;batch=4,seq=32", "batch=4,seq=32;batch=2,seq=8;batch=4,seq=32"),
    ("convnet", "eager", "batch=2,size=32;batch=2,size=45", "batch=2,size=33;batch=2,size=32;batch=2,size=64;batch=2,size=33"),
)


def _trial(workload, strategy, stream, backend, tmp_path, monkeypatch):
    from compilescope.execute.trial import run_trial

    cache = tmp_path / f"cache-{strategy}-{len(list(tmp_path.iterdir()))}"
    cache.mkdir()
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(cache))
    spec = TrialSpec(workload, strategy, "cold", tuple(stream), StrategyOptions(backend=backend),
                     MeasureOptions(steady=False, numerics=False))
    return run_trial(spec)[0]


def _recorded(workload, stream, trials, path):
    path.write_text(dumps(RunResult(workload=workload, stream=tuple(stream), trials=tuple(trials))))
    return path


def _misses(report, real_trials, counts):
    misses = []
    for s in report.strategies:
        real = real_trials[s.strategy]
        observed = request_outcomes(real.calls, real.compiles)
        assert len(observed) == len(s.requests)
        for predicted, seen in zip(s.requests, observed):
            tally = counts.setdefault(s.strategy, [0, 0])
            tally[1] += 1
            tally[0] += predicted.outcome == seen.outcome
            if predicted.outcome != seen.outcome:
                cause = f"estimated: {predicted.why}" if predicted.estimated else "recorded guards"
                misses.append(f"{report.workload}/{s.strategy} request {predicted.index} ({predicted.shape_label}): "
                              f"forecast {predicted.outcome}, real {seen.outcome} ({cause}; forecast guards "
                              f"{[g.text for g in predicted.guards]}, real {[g.text for g in seen.guards]})")
    return misses


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_recorded_guards_agree_with_real_trials(case, tmp_path, monkeypatch):
    workload, backend, spec_a, spec_b = case
    dims = load_workload(workload).dims
    a, b = parse_stream(spec_a, dims), parse_stream(spec_b, dims)
    trials_a = {s: _trial(workload, s, a, backend, tmp_path, monkeypatch) for s in STRATEGIES}
    trials_b = {s: _trial(workload, s, b, backend, tmp_path, monkeypatch) for s in STRATEGIES}
    assert all(r.entry_guards for t in trials_a.values() for r in t.compiles if r.outcome == "compiled")
    misses, counts = [], {}
    for name, (stream, mine), (other, theirs) in (("a", (a, trials_a), (b, trials_b)), ("b", (b, trials_b), (a, trials_a))):
        path = _recorded(workload, stream, mine.values(), tmp_path / f"recorded-{name}.json")
        report = forecast_recorded(workload, other, path, STRATEGIES)
        assert report.method == "recorded guards" and [s.strategy for s in report.strategies] == list(STRATEGIES)
        misses += _misses(report, theirs, counts)
    total = sum(t for _, t in counts.values())
    agreement = 1 - len(misses) / total
    assert agreement >= 0.9, f"agreement {agreement:.3f}; misses:\n" + "\n".join(misses)
    print(f"\n{workload} ({backend}): {total - len(misses)} / {total} requests agree;",
          ", ".join(f"{k} {a}/{t}" for k, (a, t) in counts.items()), *misses, sep="\n  ")


def test_a_python_int_made_symbolic_keeps_its_guard_in_the_recording(tmp_path, monkeypatch):
    """An int input made symbolic, then specialised by a loop, is guarded in the shape
    environment (``L['repeats'] == 2``): the recording keeps that guard, so its own stream is
    forecast as it ran (before: 3 compiles of 4 under default, 1 of 3 under dynamic)."""
    workload = f"{Path(__file__).resolve().parents[2] / 'workloads_for_tests.py'}:int_keyword"
    stream = load_workload(workload).default_stream
    strategies = ("default", "dynamic")
    trials = {s: _trial(workload, s, stream, "eager", tmp_path, monkeypatch) for s in strategies}
    made = [r for r in trials["dynamic"].compiles if r.outcome == "compiled"]
    assert len(made) == 3 and all(any(g.kind == "value" and g.text == f"L['repeats'] == {n}" for g in r.entry_guards)
                                  for r, n in zip(made, (1, 2, 3))), [r.entry_guards for r in made]
    report = forecast_recorded(workload, stream, _recorded(workload, stream, trials.values(), tmp_path / "r.json"),
                               strategies)
    counts: dict = {}
    assert _misses(report, trials, counts) == [] and counts == {"default": [7, 7], "dynamic": [7, 7]}
    assert [report.strategy(s).compiles for s in strategies] == [4, 3]


def test_recorded_guards_beside_the_dry_run(tmp_path, monkeypatch):
    stream = parse_stream("16,16,32,8,24,1,8,1,32,16,2,40", ("n",))
    recorded = _trial("sincos", "default", parse_stream("16,32", ("n",)), "eager", tmp_path, monkeypatch)
    path = _recorded("sincos", (), [recorded], tmp_path / "run.json")
    mine = forecast_recorded("sincos", stream, path)
    dry = forecast("sincos", stream, "default", backend="eager")
    both = compare_forecasts(dry, mine)
    (a,) = both.agreement
    assert a.requests == 12 and a.agree == 12, a.differ
    s = mine.strategy("default")
    # the recording's two entries (16 static, then dynamic) cover every size but 1, which compiles a
    # third entry the recording does not hold: the requests after it are estimated, and say so
    first_one = next(r.index for r in s.requests if r.shape == (("n", 1),))
    assert s.requests[first_one].outcome == "compile" and not s.requests[first_one].estimated
    assert all(r.estimated for r in s.requests[first_one + 1:]) and not any(r.estimated for r in s.requests[:first_one])
    assert "were not recorded" in s.requests[-1].why and s.estimated == 11 - first_one
    spec = next(g for g in s.requests[first_one].guards if g.kind == "specialization")
    assert spec.text == "2 <= x.size()[0]" and spec.entry == "0/1"


def test_entry_guards_round_trip_and_older_files_load(tmp_path, monkeypatch):
    trial = _trial("sincos", "default", parse_stream("16,32", ("n",)), "eager", tmp_path, monkeypatch)
    first, second = (r for r in trial.compiles if r.outcome == "compiled")
    tensor = next(g for g in first.entry_guards if g.kind == "tensor")
    assert (tensor.source, tensor.sizes, tensor.example, tensor.dtype) == ("L['x']", (16,), (16,), "float32")
    dynamic = next(g for g in second.entry_guards if g.kind == "tensor")
    assert dynamic.sizes == (None,) and dynamic.dynamic_dims == (0,) and dynamic.example == (32,)
    assert any(g.text == "2 <= L['x'].size()[0]" for g in second.entry_guards)
    result = RunResult(workload="sincos", trials=(trial,))
    text = dumps(result)
    assert loads(text) == result
    data = json.loads(text)
    for c in data["trials"][0]["compiles"]:  # a file written before the field existed
        del c["entry_guards"], c["entry_guards_cut"]
    (tmp_path / "old.json").write_text(json.dumps(data))
    old = load(tmp_path / "old.json")
    assert all(r.entry_guards == () and r.entry_guards_cut == 0 for r in old.trials[0].compiles)
    (old_forecast,) = forecast_recorded("sincos", "16,32", tmp_path / "old.json").strategies
    assert [r.outcome for r in old_forecast.requests] == ["unknown", "unknown"]  # said, not refused
    assert "holds no recorded guard on its inputs" in old_forecast.requests[0].why


def test_the_evaluator_runs_arithmetic_on_sizes_and_nothing_else():
    request = Request({"L['x']": (2, 3, 45, 45)})
    assert evaluate("2*(((-1) + L['x'].size()[2]) // 2) < L['x'].size()[2]", request)
    assert evaluate("L['x'].stride()[1] == L['x'].size()[3]*L['x'].size()[2]", request)
    assert not evaluate("L['x'].size()[2] % 2 == 0", request)
    assert evaluate("2 <= L['x'].size()[0] <= 15", request)
    # a Python number input made symbolic: its guards name it bare
    numbers = Request({"L['x']": (4,)}, scalars={"L['n']": 3, "L['mode']": "sum"})
    assert evaluate("2 <= L['n']", numbers) and not evaluate("L['n'] == 2", numbers)
    assert evaluate("L['x'].size()[0] == L['n'] + 1", numbers)
    for text in ("L['mode'] == 1", "L['m'] == 1"):
        with pytest.raises(Unevaluable):
            evaluate(text, numbers)
    # a number inside an object argument, and the ``math`` tests Dynamo puts on a float
    inside = Request({}, scalars={"L['box'].n": 3, "L['scale']": float("nan")})
    assert evaluate("L['box'].n <= 3", inside) and not evaluate("not math.isnan(L['scale'])", inside)
    with pytest.raises(Unevaluable):
        evaluate("math.sqrt(L['box'].n) > 1", inside)
    for text in ("__import__('os').getcwd() == 1", "L['y'].size()[0] == 1", "L['x'].size()[9] == 1",
                 "L['x'].numel() == 1", "2 ** 10000 > 1", "lambda: 1", "L['x'].size()[0] == (1"):
        with pytest.raises(Unevaluable):
            evaluate(text, request)


def test_a_dtype_or_device_recorded_as_its_text_matches_the_value():
    from compilescope.forecast.recorded import _same

    assert _same("device(type='cpu')", torch.device("cpu")) and _same("torch.float32", torch.float32)
    assert not _same("torch.float32", torch.float16) and not _same("device(type='meta')", torch.device("cpu"))


def test_cli_forecast_from_results(main, tmp_path, monkeypatch):
    trial = _trial("sincos", "static", parse_stream("16,32", ("n",)), "eager", tmp_path, monkeypatch)
    _recorded("sincos", (), [trial], tmp_path / "run.json")
    code, out, err = main("forecast", "sincos", "--stream", "16,64,16", "--strategies", "static",
                          "--from-results", "run.json", "--method", "both", "--backend", "eager", "--json", "f.json")
    assert code == 0, err
    assert "compilescope forecast (recorded guards)" in out and "static: 3 / 3 agree (100.0%)" in out
    assert "request 1 (64): compiles 0/1\n" in out  # certain: no recorded entry accepts 64
    assert "1 request(s) estimated, from request 2: a new entry's guards were not recorded" in out
    data = json.loads((tmp_path / "f.json").read_text())
    assert data["method"] == "dry run" and data["compared"]["method"] == "recorded guards"
    requests = data["compared"]["strategies"][0]["requests"]
    assert [r["estimated"] for r in requests] == [False, False, True] and "not recorded" in requests[2]["why"]
    # the recording's backend asked for again is accepted, and its own compile times predict the seconds
    code, out, err = main("forecast", "sincos", "--stream", "16,64", "--strategies", "static",
                          "--from-results", "run.json", "--backend", "eager")
    assert code == 0, err
    assert "compile s (predicted): —" not in out
    code, _, err = main("forecast", "sincos", "--stream", "16", "--from-results", "run.json", "--backend", "aot_eager")
    assert code == 2 and "--backend aot_eager: run.json recorded eager's guards" in err, err
    assert len(err.strip().splitlines()) == 1
    # another backend dry-run beside the recording: said
    code, out, err = main("forecast", "sincos", "--stream", "16", "--strategies", "static", "--from-results",
                          "run.json", "--method", "both", "--backend", "aot_eager")
    assert code == 0, err
    assert "the dry run forecasts aot_eager and the recording eager" in " ".join(out.split())


@pytest.mark.parametrize("args, message", [
    (("--method", "recorded"), "--method recorded needs --from-results"),
    (("--from-results", "missing.json"), "is not a file"),
])
def test_cli_forecast_from_results_bad_input_is_one_line(main, args, message):
    code, _, err = main("forecast", "sincos", *args)
    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def _branchy():
    def branchy(x: torch.Tensor) -> torch.Tensor:
        y = x.sin()
        if y.sum() > -1e9:  # data-dependent: a graph break, the rest is another frame
            y = y.cos()
        return y * 2

    return branchy


def graph_break() -> Workload:
    return Workload(name="graph-break", build=_branchy, make_inputs=lambda s: (torch.randn(s["n"]),), dims=("n",),
                    default_stream=tuple({"n": n} for n in (8, 16, 8)))


def test_frames_after_a_graph_break_are_estimated(tmp_path, monkeypatch):
    ref = f"{__file__}:graph_break"
    recorded = _trial(ref, "default", parse_stream("8,16", ("n",)), "eager", tmp_path, monkeypatch)
    assert len({r.compile_id.frame for r in recorded.compiles}) >= 2
    path = _recorded(ref, (), [recorded], tmp_path / "run.json")
    stream = parse_stream("8,24,8,32", ("n",))
    s = forecast_recorded(ref, stream, path).strategy("default")
    assert all(r.estimated and "after a graph break: its guards, on the locals it resumes with" in r.why for r in s.requests)
    real = _trial(ref, "default", stream, "eager", tmp_path, monkeypatch)
    assert [r.outcome for r in s.requests] == [o.outcome for o in request_outcomes(real.calls, real.compiles)]


def test_a_probe_result_forecasts_under_pytorchs_default(tmp_path, monkeypatch):
    from compilescope.model import ProbeResult

    trial = _trial("sincos", "default", parse_stream("16,32", ("n",)), "eager", tmp_path, monkeypatch)
    path = tmp_path / "probe.json"
    path.write_text(dumps(ProbeResult(source="serve.py", compiles=trial.compiles)))
    report = forecast_recorded("sincos", "16,64,1,8", path)
    s = report.strategy("default")
    assert report.backend == "as probed" and [r.outcome for r in s.requests] == ["compile", "compile", "compile", "hit"]
    assert [r.estimated for r in s.requests] == [False, False, False, True]
    assert s.recorded_from == f"{path} (the probed program's compiles)"  # no trial label: a probe ran none


def test_recording_leaves_pytorchs_hook_as_it_was():
    from torch._dynamo import guards

    from compilescope.collect.capture import CaptureSession

    before = guards.guard_manager_testing_hook_fn
    session = CaptureSession().install()
    assert guards.guard_manager_testing_hook_fn is not before
    session.uninstall()
    assert guards.guard_manager_testing_hook_fn is before


def test_a_new_entry_carries_the_relations_as_its_request_decides_them():
    """A backend's parity guard (inductor's on a ceil-mode pooled size) on a dynamic entry:
    an odd size compiles a new entry, which is then taken to guard the odd parity."""
    from compilescope.forecast.recorded import FrameModel
    from compilescope.model import CompileId, CompileRecord, EntryGuard

    guards = (EntryGuard("tensor", "L['x']", sizes=(None,), example=(32,), dtype="float32"),
              EntryGuard("relation", "L['x']", None, None, "L['x'].size()[0] % 2 == 0"))
    record = CompileRecord(CompileId(0, 0), "f", "f.py", 1, entry_guards=guards)
    model = FrameModel(0, [record], "default", 8)
    sizes = lambda n: Request({"L['x']": (n,)}, {"L['x']": "float32"})  # noqa: E731
    first, odd, again, even = (model.step(sizes(n)) for n in (32, 45, 33, 64))
    assert (first.outcome, first.new) == ("compile", False)
    assert (odd.outcome, odd.new, odd.rejected) == ("compile", True, [("0/0", ["x.size()[0] % 2 == 0"])])
    assert again.outcome == "hit" and even.outcome == "hit"
    assert "not (L['x'].size()[0] % 2 == 0)" in [g.text for g in model.entries[1].guards]


def test_a_probe_of_several_compiled_functions_is_forecast_for_the_one_named():
    from compilescope.forecast.recorded import probe_function
    from compilescope.model import CompiledTarget, CompileId, CompileRecord

    def record(frame: int, function: str, target: str | None = None) -> CompileRecord:
        named = CompiledTarget(target, "svc.py", 3) if target else None
        return CompileRecord(CompileId(frame, 0), function, "svc.py", 3, target=named)

    compiles = [record(0, "f"), record(1, "torch_dynamo_resume_in_f_at_5"), record(2, "g", "g")]
    with pytest.raises(OptionError) as caught:
        probe_function(compiles, None, "probe.json")
    assert str(caught.value) == "probe.json holds 2 compiled functions (f, g): name the one to forecast with --function"
    assert [r.function for r in probe_function(compiles, "f", "probe.json")] == ["f", "torch_dynamo_resume_in_f_at_5"]
    with pytest.raises(OptionError, match="has no compiled function 'h' \\(it has: f, g\\)"):
        probe_function(compiles, "h", "probe.json")
    assert probe_function(compiles[:2], None, "probe.json") == tuple(compiles[:2])


def test_a_guard_that_cannot_be_evaluated_makes_the_request_unknown_not_a_hit():
    """An entry whose guard names a value the request does not hold neither accepts nor
    rejects it: the request is unknown with why, and so is every later one that no entry
    surely accepts — while one an entry surely accepts is still a hit."""
    import types

    from compilescope.forecast.recorded import FrameModel, request_of
    from compilescope.model import CompileId, CompileRecord, EntryGuard

    x = EntryGuard("tensor", "L['x']", sizes=(4,), example=(4,), dtype="float32")
    inner = EntryGuard("tensor", "L['state'].keys", sizes=(3, 4), example=(3, 4), dtype="float32")
    first = CompileRecord(CompileId(0, 0), "f", "f.py", 1, entry_guards=(x, inner))
    model = FrameModel(0, [first], "static", 8)
    request = lambda n, state: request_of({"x": torch.zeros(n), "state": state})  # noqa: E731
    holding = lambda keys: types.SimpleNamespace(keys=keys)  # noqa: E731
    assert model.step(request(4, holding(torch.zeros(3, 4))), 0).outcome == "compile"
    unknown = model.step(request(4, types.SimpleNamespace()), 1)  # no keys: the guard cannot be evaluated
    assert unknown.outcome == "unknown"
    assert unknown.why.startswith("whether entry 0/0 accepts it is not known: state.keys is not in the request's inputs")
    assert model.step(request(4, holding(torch.zeros(3, 4))), 2).outcome == "hit"  # surely accepted
    later = model.step(request(8, holding(torch.zeros(3, 4))), 3)  # would compile, after an unknown
    assert later.outcome == "unknown" and later.why.startswith("follows request 1")
    rejected = model.step(request(4, holding(None)), 4)  # None where the entry has a tensor: surely rejected
    assert rejected.rejected == [("0/0", ["state.keys is builtins.NoneType, not a tensor"])]


def test_a_parameter_no_request_passes_keeps_the_default_it_was_compiled_with():
    from compilescope.forecast.recorded import check, request_of
    from compilescope.model import EntryGuard

    guards = (EntryGuard("value", "L['mask']", None, None, "L['mask'] is None"),
              EntryGuard("tensor", "L['x']", sizes=(None,), example=(4,), dtype="float32"))
    assert check(guards, request_of({"x": torch.zeros(5)})) == ([], [])
    assert check(guards, request_of({"x": torch.zeros(5), "mask": torch.ones(5)})) == (
        ["mask mismatch. expected None, actual a torch.Tensor"], [])


def test_a_failing_value_type_or_length_guard_says_what_the_entry_expected_and_what_the_request_has():
    """Before, a failing value guard printed the entry's expectation alone ('….is_initialized
    is False' on a request whose cache is initialised) beside lines that printed the request's
    state ('… is NoneType, not a tensor'): a reader could not tell which was which."""
    from compilescope.forecast.recorded import check, request_of
    from compilescope.model import EntryGuard

    class Layer:
        def __init__(self, ready):
            self.is_initialized, self.keys = ready, torch.zeros(1, 2, 3) if ready else None

    request = request_of({"cache": [Layer(True)], "n": 4})
    failed, unknown = check([
        EntryGuard("value", "L['cache'][0].is_initialized", expected=False),
        EntryGuard("value", "L['n']", expected=3),
        EntryGuard("type", "L['cache'][0].keys", expected="builtins.NoneType"),
        EntryGuard("length", "L['cache']", expected=2),
        EntryGuard("value", "L['n']", expected=4),
    ], request)
    assert unknown == []
    assert failed == ["cache[0].is_initialized mismatch. expected False, actual True",
                      "n mismatch. expected 3, actual 4",
                      "type(cache[0].keys) mismatch. expected builtins.NoneType, actual torch.Tensor",
                      "len(cache) mismatch. expected 2, actual 1"]
    # read back as the forecast reads its failures: each keeps its kind, source and both values
    from compilescope.forecast.recorded import _forecast_guards

    told = [(g.kind, g.source, g.expected, g.actual) for g in _forecast_guards("0/0", [failed[1], failed[3]])]
    assert told == [("value", "L['n']", "3", "4"), ("length", "L['cache']", "2", "1")]


def test_a_recording_with_a_failed_compile_forecasts_nothing_it_cannot_tell_after_it(tmp_path, monkeypatch):
    # the recording's compile for 32 failed and Dynamo ran the frame eagerly from then on: which
    # request of another stream meets that, and what runs eagerly after, no recorded guard tells
    ref = f"{Path(__file__).resolve().parents[2] / 'workloads_for_tests.py'}:fails_to_compile_at_32"
    stream = parse_stream("16,16,32,16", ("n",))
    trial = _trial(ref, "default", stream, "eager", tmp_path, monkeypatch)
    assert [c.outcome for c in trial.compiles if c.failed] == ["failed"]
    path = _recorded(ref, stream, [trial], tmp_path / "run.json")
    s = forecast_recorded(ref, "16,64,16", path).strategy("default")
    assert [r.outcome for r in s.requests] == ["compile", "unknown", "unknown"]
    assert "failed compile" in (s.requests[1].why or "") and s.requests[2].why == s.requests[1].why


def _forecast_from_a_prefix(workload, stream, n, truth, tmp_path, monkeypatch):
    """The recorded-guard forecast of ``stream`` from real trials of its first ``n`` requests,
    checked against ``truth``: never a known outcome the real trial contradicts."""
    prefix = {s: _trial(workload, s, stream[:n], "eager", tmp_path, monkeypatch) for s in truth}
    report = forecast_recorded(workload, stream, _recorded(workload, stream[:n], prefix.values(), tmp_path / "r.json"),
                               tuple(truth))
    wrong = [m for m in _misses(report, truth, {}) if "forecast unknown" not in m]
    assert wrong == [], "\n".join(wrong)
    return report


def test_a_dict_argument_keeps_its_length_and_keys_in_the_recording(tmp_path, monkeypatch):
    """A dict's guard manager checks its length itself and holds its keys' and values' managers
    apart: the recording keeps the length, the keys by position and the values' sizes, so a
    change of key count or order is a compile, never a confident hit (before: every entry
    held no guard on the dict, and such requests were forecast hits)."""
    workload = f"{Path(__file__).resolve().parents[2] / 'workloads_for_tests.py'}:dict_of_tensors"
    stream = load_workload(workload).default_stream
    strategies = ("default", "static", "dynamic")
    truth = {s: _trial(workload, s, stream, "eager", tmp_path, monkeypatch) for s in strategies}
    first = next(r for r in truth["dynamic"].compiles if r.outcome == "compiled")
    kinds = {(g.kind, g.source) for g in first.entry_guards}
    assert ("length", "L['feats']") in kinds and ("value", "list(dict.keys(L['feats']))[1]") in kinds, kinds
    assert ("tensor", "L['feats']['fx']") in kinds
    report = _forecast_from_a_prefix(workload, stream, 3, truth, tmp_path, monkeypatch)
    assert all(r.outcome != "unknown" for s in report.strategies for r in s.requests[:3])  # the recorded stream
    later = [r for s in report.strategies for r in s.requests[3:] if r.outcome != "unknown"]
    assert len(later) >= 6, [(r.index, r.outcome, r.why) for s in report.strategies for r in s.requests[3:]]
    from compilescope.forecast.recorded import request_of

    keys = request_of({"feats": {"f": torch.ones(1), "fx": torch.ones(1)}}).scalars
    assert keys["list(dict.keys(L['feats']))[1]"] == "fx"  # Dynamo's name for the key guarded at position 1


def test_a_wrappers_iterated_kwargs_guard_no_key_order_the_requests_cannot_name(tmp_path, monkeypatch):
    """A decorator that iterates ``**kwargs`` puts a dict guard manager on it: its keys' order
    is how the call passed its keyword arguments, which requests name by parameter. Recorded,
    it made every request after the first compile unknown."""
    workload = f"{Path(__file__).resolve().parents[2] / 'workloads_for_tests.py'}:iterated_kwargs"
    stream = load_workload(workload).default_stream
    truth = {s: _trial(workload, s, stream, "eager", tmp_path, monkeypatch) for s in ("default", "dynamic")}
    report = _forecast_from_a_prefix(workload, stream, 2, truth, tmp_path, monkeypatch)
    assert all(r.outcome != "unknown" for s in report.strategies for r in s.requests), \
        [(s.strategy, r.index, r.why) for s in report.strategies for r in s.requests if r.outcome == "unknown"]


def test_a_recorded_compile_that_raised_leaves_what_follows_unknown(tmp_path, monkeypatch):
    """A compile that failed and raised into its call made no entry: replayed as a compile that
    made one, it misnumbered every entry after it (before: that request "compiles 0/2", later
    ones estimated from an entry that never existed)."""
    workload = f"{Path(__file__).resolve().parents[2] / 'workloads_for_tests.py'}:raises_in_compile_at_3"
    stream = load_workload(workload).default_stream
    strategies = ("default", "static", "dynamic")
    truth = {s: _trial(workload, s, stream, "eager", tmp_path, monkeypatch) for s in strategies}
    assert all(t.calls[2].error for t in truth.values())
    report = _forecast_from_a_prefix(workload, stream, 3, truth, tmp_path, monkeypatch)
    for s in report.strategies:
        assert s.requests[2].outcome == "unknown" and "raised into its call" in (s.requests[2].why or ""), s.requests[2]


def test_a_recorded_entry_whose_guards_cannot_be_told_is_kept_not_estimated_anew():
    """The recording's next entry, not refused by its guards though one cannot be evaluated
    (an attribute inside an expression, a ``_base``), is that entry: a later request it may or
    may not accept is unknown (before: an estimate without that guard said hit)."""
    from compilescope.forecast.recorded import FrameModel
    from compilescope.model import CompileId, CompileRecord, EntryGuard

    guards = (EntryGuard("tensor", "L['x']", sizes=(None,), example=(4,), dtype="float32"),
              EntryGuard("relation", None, None, None, "4 <= L['cache'].cumulative_length <= 5"))
    recorded = [CompileRecord(CompileId.parse("0/0"), "f", "m.py", 1, outcome="compiled", entry_guards=guards)]
    model = FrameModel(0, recorded, "dynamic", 8)
    x = lambda n: Request(sizes={"L['x']": (n,)}, dtypes={"L['x']": "float32"})  # noqa: E731
    assert model.step(x(4)).outcome == "compile"
    later = model.step(x(6))
    assert later.outcome == "unknown" and "could not be evaluated" in (later.why or ""), later


def test_an_estimated_dynamic_entry_holds_containers_and_numbers_as_compiled():
    """Beyond sizes, an entry estimated under dynamic shapes holds each container's length and
    a dict's keys (never dynamic), and each number as the value it was made for: another value
    is unknown (the trace's branches on a number made dynamic put guards that were not recorded)."""
    from compilescope.forecast.recorded import AS_COMPILED, _Entry, check, estimated_entry

    made = Request(sizes={"L['xs'][0]": (4,)}, scalars={"L['n']": 3, "L['flag']": True, "L['unread']": 7},
                   lengths={"L['xs']": 2}, types={"L['xs']": "builtins.list"})
    earlier = _Entry("0/0", (EntryGuard("length", "L['xs']", None, 1), EntryGuard("value", "L['flag']", None, True),
                             EntryGuard("scalar", None, None, None, "2 <= L['n']")))
    entry = estimated_entry("0/1", made, (earlier,), "dynamic")
    held = {(g.kind, g.source) for g in entry.guards}
    assert held >= {("length", "L['xs']"), (AS_COMPILED, "L['n']"), ("value", "L['flag']")}, held
    assert not [g for g in entry.guards if g.source == "L['unread']"]  # no entry guards it: the traces never read it
    # a stream that starts away from the recording: no entry made yet, the recorded ones tell what is read
    first = estimated_entry("0/0", made, (), "dynamic", (earlier,))
    assert {(g.kind, g.source) for g in first.guards} == held
    assert check(entry.guards, made) == ([], [])
    other_n = dataclasses.replace(made, scalars={"L['n']": 5, "L['flag']": True, "L['unread']": 9})
    failed, unknown = check(entry.guards, other_n)
    assert failed == [] and len(unknown) == 1 and "made for 3" in unknown[0]
    longer = dataclasses.replace(made, lengths={"L['xs']": 3})
    assert check(entry.guards, longer)[0] == ["len(xs) mismatch. expected 2, actual 3"]


def test_a_request_eager_at_the_limit_says_the_limit_even_when_estimated():
    from compilescope.forecast.recorded import FrameModel, _request_row
    from compilescope.model import CompileId, CompileRecord, EntryGuard

    static = (EntryGuard("tensor", "L['x']", sizes=(4,), example=(4,), dtype="float32"),)
    model = FrameModel(0, [CompileRecord(CompileId.parse("0/0"), "f", "m.py", 1, outcome="compiled",
                                         entry_guards=static)], "static", 1)
    x = lambda n: Request(sizes={"L['x']": (n,)}, dtypes={"L['x']": "float32"})  # noqa: E731
    assert model.step(x(4)).outcome == "compile"
    row = _request_row(1, {"x": 8}, model.step(x(8)), "estimated, for a reason of its own")
    assert row.outcome == "eager" and row.why.startswith("the recompile limit (1) refuses the frame"), row.why
    assert row.why.endswith("estimated, for a reason of its own")


def test_a_layout_requires_grad_or_aliasing_the_recording_never_saw_is_unknown_not_a_hit(tmp_path, monkeypatch):
    """The recorded guards hold sizes and dtypes; a request whose input is transposed, requires
    grad or is passed twice differs in what they leave out from the request the entry was made
    for: PyTorch recompiles (stride, requires_grad, duplicate-tensor guards), and the forecast
    says it cannot tell (before: a confident hit)."""
    workload = f"{Path(__file__).resolve().parents[2] / 'workloads_for_tests.py'}:layouts"
    stream = load_workload(workload).default_stream
    truth = {s: _trial(workload, s, stream, "eager", tmp_path, monkeypatch) for s in ("static", "dynamic")}
    report = _forecast_from_a_prefix(workload, stream, 1, truth, tmp_path, monkeypatch)
    for s in report.strategies:
        assert [r.outcome for r in s.requests[:2]] == ["compile", "hit"]  # the same request again: sure
        whys = [r.why for r in s.requests[2:5]]
        # under dynamic the entry's stride relation (``x.stride()[0] == x.size()[1]``), evaluated on
        # the request's real strides, fails: a compile, as PyTorch's stride guard rejects it
        layout = "compile" if s.strategy == "dynamic" else "unknown"
        assert [r.outcome for r in s.requests[2:5]] == [layout, "unknown", "unknown"], whys
        assert [layout == "compile" or "layout" in whys[0], "requires_grad" in whys[1], "aliasing" in whys[2]] \
            == [True] * 3, whys


def test_a_recording_whose_same_request_compiled_twice_makes_every_hit_unknown(tmp_path, monkeypatch):
    """A buffer the call grows: the recording shows a request identical to an entry's own
    compiling again, so a guard on state no input holds decides: no hit is sure, a repeat neither."""
    workload = f"{Path(__file__).resolve().parents[2] / 'workloads_for_tests.py'}:grows_a_buffer"
    stream = load_workload(workload).default_stream
    truth = {"static": _trial(workload, "static", stream, "eager", tmp_path, monkeypatch)}
    assert sum(r.outcome == "compiled" for r in truth["static"].compiles if r.phase == "stream") == 4
    report = _forecast_from_a_prefix(workload, stream, 2, truth, tmp_path, monkeypatch)
    (static,) = report.strategies
    assert [r.outcome for r in static.requests] == ["compile", "unknown", "unknown", "unknown"], static.requests
    assert "on state the inputs do not hold" in static.requests[2].why


def test_a_global_the_inputs_set_is_a_guard_on_state_no_input_holds(tmp_path, monkeypatch):
    """``make_inputs`` sets a global the function reads: PyTorch recompiles on ``G['SCALE']``,
    which the recorded guards leave out; the recording shows it, so no hit is sure, and the
    reason quotes PyTorch's guard without its source comment."""
    workload = f"{Path(__file__).resolve().parents[2] / 'workloads_for_tests.py'}:scales_by_a_global"
    stream = load_workload(workload).default_stream
    truth = {"static": _trial(workload, "static", stream, "eager", tmp_path, monkeypatch)}
    assert [r.outcome for r in truth["static"].compiles if r.phase == "stream"] == ["compiled"] * 3
    report = _forecast_from_a_prefix(workload, stream, 2, truth, tmp_path, monkeypatch)
    (static,) = report.strategies
    assert [r.outcome for r in static.requests] == ["compile", "unknown", "unknown", "unknown"], static.requests
    why = static.requests[1].why
    assert "PyTorch's reason: G['SCALE'] == 1)" in why and "#" not in why, why


def test_a_frame_after_a_break_that_recompiled_on_its_own_leaves_no_hit_even_estimated(tmp_path, monkeypatch):
    """The recording shows the resume frame compiling on ``y`` where the function's own frame
    hit: giving requests the own frame's outcome ("hit") would be wrong, so they are unknown."""
    workload = f"{Path(__file__).resolve().parents[2] / 'workloads_for_tests.py'}:reads_y_after_a_break"
    stream = load_workload(workload).default_stream
    truth = {"static": _trial(workload, "static", stream, "eager", tmp_path, monkeypatch)}
    report = _forecast_from_a_prefix(workload, stream, 2, truth, tmp_path, monkeypatch)
    (static,) = report.strategies
    assert [r.outcome for r in static.requests] == ["compile", "unknown", "unknown", "unknown"], static.requests
    assert "compiled 1/1 at request 1 where the function's own frame hit" in static.requests[1].why


def test_what_the_recorded_guards_leave_out_is_compared_with_the_request_an_entry_was_made_for():
    from compilescope.forecast.recorded import request_of, trait_differences

    def differs(a, b):
        return trait_differences(request_of({"x": a}), request_of({"x": b}))

    # a size-1 dim's stride: contiguous both ways to torch, exact strides to a static guard
    assert "layout" in differs(torch.empty(5, 1), torch.empty(1, 5).t())
    assert "strides differ" in differs(torch.empty(16)[::2], torch.empty(24)[::3])  # same sizes, other strides
    assert differs(torch.empty(8, 4).t(), torch.empty(16, 4).t()) is None  # a transposed input of every size
    assert "requires_grad" in differs(torch.empty(3), torch.empty(3).requires_grad_())
    assert "type" in differs(torch.empty(3), torch.nn.Parameter(torch.empty(3), requires_grad=False))
    x = torch.empty(3)
    assert "aliasing" in trait_differences(request_of({"x": x, "y": torch.empty(3)}), request_of({"x": x, "y": x}))
    eval_, train = torch.nn.Linear(2, 2).eval(), torch.nn.Linear(2, 2)
    assert "object" in trait_differences(request_of({"m": eval_}), request_of({"m": train}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's "sparse CSR support is in beta"
        assert differs(torch.randn(3, 3).to_sparse_csr(), torch.randn(3, 3).to_sparse_csr()) is None  # read, not raised
    small, big = torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)
    big.k = 3  # a plain attribute Dynamo guards (``L['mod'].k == 1``)
    small.k = 1
    assert "plain attributes" in trait_differences(request_of({"m": small}), request_of({"m": big}))
    assert trait_differences(request_of({"f": lambda v: v + 1}), request_of({"f": lambda v: v + 1})) is not None
    fresh = [lambda v: v * 2 for _ in range(2)]  # one code object, two functions: guarded alike
    assert trait_differences(request_of({"f": fresh[0]}), request_of({"f": fresh[1]})) is None
    before = request_of({"x": torch.empty(3)})
    with torch.no_grad():
        assert "global state" in trait_differences(before, request_of({"x": torch.empty(3)}))


def test_a_views_base_and_storage_offset_are_read_as_dynamo_guards_them():
    from compilescope.forecast.recorded import request_of

    view = request_of({"x": torch.randn(8, 6).t()})
    assert evaluate("L['x']._base.size()[0] == L['x'].size()[1]", view)
    offset = request_of({"x": torch.randn(12)[4:]})
    assert evaluate("L['x'].storage_offset() == L['x'].size()[0] - 4", offset)


def test_a_request_that_leaves_out_an_argument_its_entry_was_made_with_is_unknown(tmp_path, monkeypatch):
    """``mask`` passed, then left out: the guard on it passes as its default for a request
    that does not pass it, unread — the recorded entry's request passed it, so it is unknown."""
    workload = f"{Path(__file__).resolve().parents[2] / 'workloads_for_tests.py'}:optional_mask"
    stream = load_workload(workload).default_stream
    truth = {"static": _trial(workload, "static", stream, "eager", tmp_path, monkeypatch)}
    report = _forecast_from_a_prefix(workload, stream, 1, truth, tmp_path, monkeypatch)
    (static,) = report.strategies
    assert [r.outcome for r in static.requests] == ["compile", "hit", "unknown"], static.requests
    assert "other arguments (mask)" in static.requests[2].why


def test_a_varargs_parameter_is_one_tuple_as_dynamo_sees_it(tmp_path, monkeypatch):
    """``f(*xs)`` with two, then three, then one argument: ``len(L['xs'])`` decides (before: the
    first argument was taken as ``xs``, and three arguments were a confident hit)."""
    workload = f"{Path(__file__).resolve().parents[2] / 'workloads_for_tests.py'}:sums_varargs"
    stream = load_workload(workload).default_stream
    truth = {"static": _trial(workload, "static", stream, "eager", tmp_path, monkeypatch)}
    report = _forecast_from_a_prefix(workload, stream, 1, truth, tmp_path, monkeypatch)
    (static,) = report.strategies
    assert [r.outcome for r in static.requests] == ["compile", "compile", "hit", "compile"], static.requests
