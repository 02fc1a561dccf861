"""Small models built the way real ones are, fed varying-length inputs: a strided conv
audio front-end, a shared submodule with a graph break inside (called twice), a graph
network over varying node counts, and a model driven by keyword arguments. Each is a
workload (for ``advise``) and a script (for ``probe``) over the same inputs."""

from __future__ import annotations

import torch

from compilescope import Workload

LENGTHS = (3201, 4000, 5557, 6440, 8000, 9999, 12000, 3500, 7001, 11000)
ROWS = (5, 7, 12, 3, 20, 33, 9, 17, 40, 64)
GRAPHS = ((10, 20), (14, 30), (7, 12), (25, 60), (31, 70), (12, 24), (40, 100), (19, 40), (50, 130), (9, 15))
TOKENS = ((2, 7), (2, 9), (3, 16), (2, 23), (4, 31), (2, 12))


class AudioFrontEnd(torch.nn.Module):
    """wav2vec-style: a strided Conv1d over raw samples, then a projection and a pooling."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv1d(1, 8, kernel_size=10, stride=5)
        self.norm = torch.nn.GroupNorm(8, 8)
        self.proj = torch.nn.Linear(8, 4)

    def forward(self, waveforms: torch.Tensor) -> torch.Tensor:
        h = torch.nn.functional.gelu(self.norm(self.conv(waveforms.unsqueeze(1))))
        return self.proj(h.transpose(1, 2)).mean(1)


class Gate(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)
        if y.abs().sum().item() > 1e9:  # a data-dependent branch: a graph break in the shared block
            y = y * 0
        return torch.tanh(y)


class SharedBreak(torch.nn.Module):
    """One submodule applied twice (shared weights), with a graph break inside it."""

    def __init__(self) -> None:
        super().__init__()
        self.shared = Gate()
        self.out = torch.nn.Linear(8, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.shared(self.shared(x)))


class TinyGNN(torch.nn.Module):
    """Message passing over an edge list: node and edge counts vary per graph."""

    def __init__(self) -> None:
        super().__init__()
        self.lin1 = torch.nn.Linear(4, 8)
        self.lin2 = torch.nn.Linear(8, 8)

    def forward(self, nodes: torch.Tensor, edges: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.lin1(nodes))
        agg = torch.zeros_like(h).index_add_(0, edges[1], h[edges[0]])
        return self.lin2(agg + h).sum(0)


class MaskedEncoder(torch.nn.Module):
    """Token ids and an attention mask by keyword, as a tokenizer hands them over."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(50, 8)
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        h = self.fc(self.embed(input_ids)) * attention_mask.unsqueeze(-1)
        return h.sum(1) / attention_mask.sum(1, keepdim=True).clamp(min=1)


def _built(cls: type[torch.nn.Module]):
    def build() -> torch.nn.Module:
        torch.manual_seed(0)
        return cls().eval()

    return build


def audio_frontend() -> Workload:
    return Workload("audio_frontend", _built(AudioFrontEnd), lambda s: (torch.randn(2, s["samples"]),), ("samples",),
                    tuple({"samples": n} for n in LENGTHS))


def shared_break() -> Workload:
    return Workload("shared_break", _built(SharedBreak), lambda s: (torch.randn(s["rows"], 8),), ("rows",),
                    tuple({"rows": n} for n in ROWS))


def _graph(s):
    g = torch.Generator().manual_seed(s["nodes"] * 1000 + s["edges"])
    return (torch.randn(s["nodes"], 4), torch.randint(0, s["nodes"], (2, s["edges"]), generator=g))


def tiny_gnn() -> Workload:
    return Workload("tiny_gnn", _built(TinyGNN), _graph, ("nodes", "edges"),
                    tuple({"nodes": n, "edges": e} for n, e in GRAPHS))


def _tokens(s):
    ids = torch.randint(0, 50, (s["batch"], s["seq"]))
    mask = torch.ones(s["batch"], s["seq"])
    mask[:, s["seq"] // 2 + 1:] = 0
    return {"input_ids": ids, "attention_mask": mask}


def masked_encoder() -> Workload:
    return Workload("masked_encoder", _built(MaskedEncoder), _tokens, ("batch", "seq"),
                    tuple({"batch": b, "seq": n} for b, n in TOKENS))


WORKLOADS = {"audio_frontend": audio_frontend, "shared_break": shared_break, "tiny_gnn": tiny_gnn,
             "masked_encoder": masked_encoder}
