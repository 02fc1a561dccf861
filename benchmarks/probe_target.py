"""The program the probe benchmark runs: shape changes, a Python-value guard and a graph break."""

import sys

import torch

backend = sys.argv[1] if len(sys.argv) > 1 else "aot_eager"
model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU(), torch.nn.Linear(128, 64)).eval()


@torch.compile(backend=backend)
def step(x, scale):
    y = model(x) * scale
    if y.sum() > 0:  # data-dependent branch: a graph break
        return y + 1
    return y - 1


with torch.no_grad():
    for i, batch in enumerate((1, 1, 4, 8, 8, 16, 32, 4, 2, 64) * 5):
        step(torch.randn(batch, 64), 0.5 if i < 25 else 1.5)
