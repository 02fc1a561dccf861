"""The real built-in workloads: MiniLM with its packaged weights over real text, a HF decoder,
a conv net and a training step — all offline."""

from __future__ import annotations

import sys

import pytest
import torch

from compilescope.execute.trial import run_trial
from compilescope.model import MeasureOptions, StrategyOptions, TrialSpec
from compilescope.workload import build_target, load_workload, seeded_inputs
from compilescope.model import call_arguments

FAST = MeasureOptions(warmup=1, samples=3, min_samples=2, budget_s=0.02)


def test_minilm_stream_comes_from_real_text_lengths():
    from compilescope import zoo

    w = load_workload("minilm")
    shapes = w.default_stream
    assert all(1 <= s["batch"] <= 8 and 1 < s["seq"] <= zoo.MINILM_MAX_SEQ for s in shapes)
    assert len({s["seq"] for s in shapes}) >= len(shapes) - 2  # a long tail: nearly every request new
    longer = zoo.text_stream(300, max_batch=16)
    assert max(s["seq"] for s in longer) == zoo.MINILM_MAX_SEQ  # some paragraphs are truncated
    assert zoo.text_stream(12) == shapes  # seeded: every process agrees


def test_minilm_inputs_are_real_padded_tokens_and_embeddings_are_sentence_embeddings():
    w = load_workload("minilm")
    inputs = seeded_inputs(w, {"batch": 4, "seq": 40})
    assert set(inputs) == {"input_ids", "attention_mask", "token_type_ids"}
    ids, mask = inputs["input_ids"], inputs["attention_mask"]
    assert ids.shape == mask.shape == (4, 40)
    assert bool(mask[0].all())  # the longest paragraph fills the batch
    assert int(mask.sum()) < 4 * 40  # the others are padded, and the mask says so
    assert int(ids[0, 0]) == 101 and bool((ids[mask == 0] == 0).all())  # [CLS] first, [PAD] where masked
    model = build_target(w)
    from compilescope import zoo

    tok = zoo._tokenizer()
    enc = tok(["A man is eating food.", "A man is eating a piece of bread."], padding=True, return_tensors="pt")
    with torch.no_grad():
        emb = model(**{k: enc[k] for k in ("input_ids", "attention_mask", "token_type_ids")})
    assert torch.allclose(emb.norm(dim=-1), torch.ones(2), atol=1e-5)
    # the published all-MiniLM-L6-v2 example similarity: the real weights are loaded
    assert float(emb[0] @ emb[1]) == pytest.approx(0.755, abs=0.01)


@pytest.mark.processes  # `run` starts its trial processes ahead
def test_models_extra_missing_is_one_line_with_the_install_command(tmp_path, monkeypatch):
    from ..conftest import cli_here

    monkeypatch.setitem(sys.modules, "transformers", None)  # `import transformers` fails, as without the extra
    proc = cli_here("run", "gpt2-tiny", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install 'compilescope[models]'" in lines[0] and "gpt2-tiny" in lines[0]


def test_training_step_attaches_backward_to_each_frame_compile_without_phantoms():
    spec = TrialSpec("mlp-train", "static", "cold", tuple({"batch": b} for b in (8, 8, 16, 4)),
                     StrategyOptions(backend="aot_eager"), FAST)
    result = run_trial(spec)[0]
    assert result.ok and all(c.error is None for c in result.calls)
    stream = [r for r in result.compiles if r.phase == "stream"]
    # one compile per distinct batch: the lazily compiled backwards are not compiles of their own
    assert [str(r.compile_id) for r in stream] == ["0/0", "0/1", "0/2"]
    assert [r.call_index for r in stream] == [0, 2, 3]
    assert all(r.backward_compile_s and r.backward_compile_s > 0 for r in stream)
    assert all("backward" in r.phases_s for r in stream)
    # numerics restore the weights and optimizer state, so eager and compiled steps compare
    assert result.numerics and all(n.passed and n.comparable for n in result.numerics)
    assert all(c.ran_eagerly is False for c in result.calls)


@pytest.mark.processes
def test_training_step_console_shows_backward_inside_each_frame_compile(cli_in_process):
    from ..conftest import forked_trials_here

    with forked_trials_here():  # the console's compile rows are read, not a cold start's time
        proc = cli_in_process("run", "mlp-train", "--stream", "8,8,16", "--strategies", "static", "--backend",
                              "aot_eager", "--samples", "3", "--budget", "0.02", "--json", "r.json")
    assert proc.returncode == 0, proc.stderr
    section = proc.stdout[proc.stdout.index("frame compiles with their backward"):proc.stdout.index("verdict")]
    lines = [line for line in section.splitlines()[1:] if line.startswith("  static")]
    assert len(lines) == 2
    assert all("RegressionMLP.forward" in line and "+ backward" in line for line in lines)


def test_convnet_pools_with_ceil_mode_so_odd_sizes_change_the_shapes():
    w = load_workload("convnet")
    model = build_target(w)
    with torch.no_grad():
        (x,) = call_arguments(seeded_inputs(w, {"batch": 1, "size": 45}))[0]
        assert model.features(x).shape[-1] == 6  # 45 → 23 → 12 → 6, rounding up each time
    assert len({s["size"] for s in w.default_stream}) > 8  # more sizes than the default recompile limit
