"""Every snippet ``advise`` prints executes as printed — in a fresh namespace, against the
workload's own model and inputs, request by request — and compiles as often as the trial
that measured it."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from compilescope import watch
from compilescope.analysis.advise import AdviceReport, Snippet
from compilescope.model import MeasureOptions
from compilescope.render.console import advice_renderables, to_text
from compilescope.workload import bind_arguments, build_target, load_workload, seeded_inputs
from compilescope.model import call_arguments

FAST = MeasureOptions(warmup=1, samples=3, min_samples=3, budget_s=0.02)
REAL = str(Path(__file__).resolve().parents[1] / "real_models.py")  # wherever pytest runs from


@contextlib.contextmanager
def _restored(model: Any) -> Iterator[None]:
    """Undo what a snippet changes beyond its namespace: process-wide settings and the
    classes whose ``forward`` it wrapped."""
    limit = torch._dynamo.config.recompile_limit
    sources = torch.compiler.config.dynamic_sources
    classes = {type(m): type(m).__dict__.get("forward") for m in model.modules()} if isinstance(model, torch.nn.Module) else {}
    try:
        yield
    finally:
        torch._dynamo.config.recompile_limit = limit
        torch.compiler.config.dynamic_sources = sources
        for cls, forward in classes.items():
            if forward is not None:
                cls.forward = forward
        torch.compiler.reset()


def run_snippet(snippet: Snippet, workload_ref: str, stream: tuple[dict[str, int], ...]) -> int:
    """Execute the snippet against a fresh build of the workload over the stream, as a user
    would paste it: ``setup`` once, ``before_call`` before each request with the request's
    inputs bound by parameter name. Returns the frame compiles, as every report counts them."""
    loaded = load_workload(workload_ref)
    model = build_target(loaded)
    torch.compiler.reset()
    with _restored(model), torch.no_grad():
        ns: dict[str, Any] = {"torch": torch, "model": model}
        with watch() as w:
            exec(snippet.setup, ns)  # noqa: S102 — the point: the text runs as printed
            for shape in stream:
                args, kwargs = call_arguments(seeded_inputs(loaded, shape))
                named = bind_arguments(model, args, kwargs)
                call_ns = dict(ns, **named)
                if snippet.before_call:
                    exec(snippet.before_call, call_ns)  # noqa: S102
                names = list(named)
                ns["compiled"](*[call_ns[n] for n in names[:len(args)]], **{n: call_ns[n] for n in names[len(args):]})
        return w.compiles


def printed(advice: AdviceReport) -> str:
    return " ".join(to_text(advice_renderables(advice), 400).split())


def check_snippets(advice: AdviceReport, workload_ref: str, stream: tuple[dict[str, int], ...]) -> list[str]:
    """Run the snippets of every proposal whose trial ran each request compiled and without
    error (accepted or not: a rejection for speed or numerics does not change what the code
    compiles); return what they compiled."""
    checked = []
    text = printed(advice)
    for row in advice.rows:
        p = row.proposal
        t = row.trial
        if p is None or t.status != "ok" or t.call_errors or t.fallbacks or t.stream.refused:
            continue  # a refusal at the recompile limit ran requests partly eagerly: not "each request compiled"
        for snippet in filter(None, (p.snippet, p.alternative)):
            assert "…" not in snippet.setup + snippet.before_call, snippet
            got = run_snippet(snippet, workload_ref, stream)
            assert got == row.trial.stream.compiles, (row.label, snippet, got, row.trial.stream.compiles)
            checked.append(f"{row.label}: {got}")
        if row.verdict == "recommended":  # what the console prints is the code that ran
            for line in p.snippet.setup.splitlines() + [p.snippet.before_call]:
                assert " ".join(line.split()) in text
    return checked


def _stream(ref: str, stream: tuple[dict[str, int], ...] | None) -> tuple[dict[str, int], ...]:
    return tuple(stream or load_workload(ref).default_stream)


CASES = {
    "sincos": ("sincos", ({"n": 16}, {"n": 16}, {"n": 32}, {"n": 32}, {"n": 64}, {"n": 16})),
    "transformer": ("transformer", None),
    "convnet": ("convnet", None),
    "kwargs": (f"{REAL}:masked_encoder", None),
}


@pytest.fixture(scope="module", params=sorted(CASES))
def advised(request, advised_runs):
    """The advice is computed once per session (test_advise reads the same runs)."""
    ref, stream = CASES[request.param]
    stream = _stream(ref, stream)
    _, advice = advised_runs(ref, stream)
    return request.param, ref, stream, advice


def test_every_recommendation_snippet_runs_as_printed_and_compiles_as_measured(advised):
    name, ref, stream, advice = advised
    checked = check_snippets(advice, ref, stream)
    compiled = [r for r in advice.rows if r.proposal is not None and r.proposal.strategy != "eager"
                and r.verdict in ("accepted", "recommended")]
    assert compiled, f"{name}: no compiled proposal was accepted: {[(r.label, r.why) for r in advice.rows]}"
    assert len(checked) >= len(compiled)


def test_snippets_name_only_inputs_the_caller_passes(advised):
    name, ref, stream, advice = advised
    loaded = load_workload(ref)
    model = build_target(loaded)
    inputs = set(bind_arguments(model, *call_arguments(seeded_inputs(loaded, stream[0]))))
    for row in advice.rows:
        if row.proposal is None:
            continue
        for snippet in filter(None, (row.proposal.snippet, row.proposal.alternative)):
            for used in re.findall(r"mark_dynamic\((\w+),", snippet.before_call):
                assert used in inputs, (row.label, used)
            assert "___" not in snippet.setup + snippet.before_call
        for mark in row.proposal.options.marks:
            assert mark.input in inputs and (mark.min is None or mark.min >= 2)


def test_staying_eager_is_judged_beside_every_proposal(advised):
    _, _, _, advice = advised
    eager = [r for r in advice.rows if r.proposal is not None and r.proposal.strategy == "eager"]
    assert len(eager) == 1 and eager[0].score is not None
