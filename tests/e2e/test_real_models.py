"""Three models built the way real ones are (tests/real_models.py), over varying-length
inputs: a strided conv audio front-end, a shared submodule with a graph break inside, a
graph network over varying node counts. Whatever ``probe`` or ``advise`` suggests runs
as printed, names only inputs the caller passes, and ``advise``'s snippets compile as
often as the trials that measured them."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
import torch

from compilescope import watch
from compilescope.analysis.build import build_probe_report, build_run_report
from compilescope.collect.graphs import eager_frames
from compilescope.api import advise, run
from compilescope.model import ProbeResult
from compilescope.schema import load
from compilescope.workload import bind_arguments, build_target, load_workload, seeded_inputs
from compilescope.model import call_arguments

from .test_advice_snippets import FAST, check_snippets

from ..conftest import run_cli

# Trials forked (conftest.forked_trials_here): these tests read what is suggested and compiled; no cold start.
pytestmark = pytest.mark.usefixtures("forked_trials")

ROOT = Path(__file__).resolve().parents[2]
MODELS = ("audio_frontend", "shared_break", "tiny_gnn")
REF = str(ROOT / "tests" / "real_models.py")
# a mark_dynamic call or dynamic_sources setting in a suggestion's text
_MARK = re.compile(r"mark_dynamic\((?P<name>[^,()]+), (?P<dim>\d+)(?P<rest>[^)]*)\)")
_SOURCES = re.compile(r"dynamic_sources=\"(?P<sources>[^\"]+)\"")


def _inputs(name: str) -> set[str]:
    loaded = load_workload(f"{REF}:{name}")
    return set(bind_arguments(build_target(loaded), *call_arguments(seeded_inputs(loaded, loaded.default_stream[0]))))


@pytest.fixture(scope="module", params=MODELS)
def probed(request, tmp_path_factory):
    """``compilescope probe`` on a script that compiles the model and feeds its stream."""
    name = request.param
    tmp = tmp_path_factory.mktemp(name)
    script = tmp / f"{name}.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        import torch
        from tests.real_models import WORKLOADS
        from compilescope.workload import seeded_inputs
        from compilescope.model import call_arguments

        w = WORKLOADS[{name!r}]()
        model = torch.compile(w.build(), backend="eager")
        with torch.no_grad():
            for shape in w.default_stream:
                args, kwargs = call_arguments(seeded_inputs(w, shape))
                model(*args, **kwargs)
    """))
    out = tmp / "probe.json"
    proc = run_cli("probe", "--json", out, script, timeout=600, cwd=tmp,
                   env={**__import__("os").environ, "TORCHINDUCTOR_CACHE_DIR": str(tmp / "cache")})
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = load(out)
    assert isinstance(result, ProbeResult)
    return name, result


def _apply_marks(name: str, marks: list[tuple[str, int, str]], sources: str | None) -> int:
    """Run the model's stream with the suggested marks (as printed: ``x, 0, min=…``) applied
    before each call, or the suggested dynamic_sources set; return the frame compiles."""
    loaded = load_workload(f"{REF}:{name}")
    model = build_target(loaded)
    torch.compiler.reset()
    saved = torch.compiler.config.dynamic_sources
    try:
        if sources:
            torch.compiler.config.dynamic_sources = sources
        compiled = torch.compile(model, backend="eager")
        with watch() as w, torch.no_grad():
            for shape in loaded.default_stream:
                args, kwargs = call_arguments(seeded_inputs(loaded, shape))
                named = bind_arguments(model, args, kwargs)
                for input_name, dim, rest in marks:
                    eval(f"torch._dynamo.mark_dynamic({input_name}, {dim}{rest})", {"torch": torch}, named)
                compiled(*args, **kwargs)
        return w.compiles
    finally:
        torch.compiler.config.dynamic_sources = saved
        torch.compiler.reset()


def test_probe_suggestions_run_as_printed_and_name_only_the_callers_inputs(probed):
    name, result = probed
    report = build_probe_report(result)
    inputs = _inputs(name)
    steps = [c.next_step for f in report.functions for c in f.causes]
    assert steps, f"{name}: the probe found no cause to suggest anything for"
    marks: list[tuple[str, int, str]] = []
    sources: list[str] = []
    for step in steps:
        assert "___" not in step and "_modules[" not in step and "_parameters[" not in step, step
        for m in _MARK.finditer(step):
            if m["name"] == "input":  # the generic wording for a tensor the program computes
                continue
            assert m["name"] in inputs, (name, step)
            assert "min=0" not in m["rest"] and "min=1," not in m["rest"], step
            marks.append((m["name"], int(m["dim"]), m["rest"]))
        sources += [s for m in _SOURCES.finditer(step) for s in m["sources"].split(",")]
    assert marks, f"{name}: no mark_dynamic suggested for a model whose input sizes vary"
    before = _apply_marks(name, [], None)
    assert 1 <= _apply_marks(name, sorted(set(marks)), None) <= before  # runs, never raises
    assert 1 <= _apply_marks(name, [], ",".join(dict.fromkeys(sources))) <= before


def test_probe_lists_every_size_the_stream_fed(probed):
    name, result = probed
    report = build_probe_report(result)
    top = report.functions[0]
    loaded = load_workload(f"{REF}:{name}")
    fed = {n for shape in loaded.default_stream for n in shape.values()}
    listed = " ".join(c.description for c in top.causes)
    assert all(str(n) in listed for n in fed), (listed, fed)


@pytest.fixture(scope="module", params=MODELS)
def advised(request):
    name = request.param
    ref = f"{REF}:{name}"
    stream = load_workload(ref).default_stream
    _, advice = advise(ref, None, backend="eager", measure=FAST, timeout_s=600, guard_filters=False)
    return name, ref, stream, advice


def test_advise_snippets_run_as_printed_on_real_models(advised):
    name, ref, stream, advice = advised
    assert check_snippets(advice, ref, stream), [(r.label, r.verdict, r.why) for r in advice.rows]


def test_advise_marks_only_the_inputs_the_caller_passes(advised):
    name, _, _, advice = advised
    inputs = _inputs(name)
    for row in advice.rows:
        if row.proposal is None:
            continue
        for m in row.proposal.options.marks:
            assert m.input in inputs and not m.input.startswith("_"), (row.label, m)
        assert "___" not in row.proposal.code
        # nothing built from an unreachable source was measured: no StrategyError
        assert "StrategyError" not in row.why and "no tensor input named" not in row.why, row.why
    for fix in advice.code_fixes:
        assert "mark_dynamic(___" not in fix.step


def test_the_conv_front_end_marks_the_sample_dim_and_compiles_once(advised):
    name, _, _, advice = advised
    if name != "audio_frontend":
        pytest.skip("the conv front-end's own check")
    unbounded = next(r for r in advice.rows if r.label == "mark-dynamic[waveforms:1] (cold)")
    assert unbounded.trial.stream.compiles == 1 and unbounded.verdict in ("accepted", "recommended")
    bounded = next(r for r in advice.rows if r.label.startswith("mark-dynamic[waveforms:1:"))
    # the range covers every length fed
    (mark,) = bounded.proposal.options.marks
    assert (mark.min, mark.max) == (3201, 12000)


def test_a_refused_resume_frame_flags_the_request_as_partially_eager():
    """Past the recompile limit the frame after the graph break is refused and runs eagerly
    while the first frame still runs compiled: the request is a (partial) eager fallback."""
    shapes = [{"rows": n} for n in (3, 4, 5, 6, 7, 8, 9, 10)]
    result = run(f"{REF}:shared_break", shapes, ("eager", "default"), backend="eager", recompile_limit=2,
                 measure=FAST, timeout_s=600)
    trial = next(t for t in result.trials if t.spec.strategy == "default")
    partial = {c.call_index for c in trial.compiles if c.refused and c.phase == "stream"}
    assert partial, "the stream never reached the recompile limit"
    report = next(t for t in build_run_report(result).trials if t.strategy == "default")
    assert report.partial_fallbacks >= 1
    # a refused call that still ran compiled graphs is one that ran its resume frame eagerly
    flagged = eager_frames(trial.calls, [r for r in trial.compiles if r.phase == "stream"])
    wholly_eager = {c.index for c in trial.calls if c.ran_eagerly}
    assert partial - wholly_eager <= set(flagged), (partial, wholly_eager, flagged)
    assert report.partial_fallbacks == len(flagged)
