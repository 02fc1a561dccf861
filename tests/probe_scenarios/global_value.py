import torch

SCALE = 2

@torch.compile(backend="eager")
def f(x):
    return x * SCALE

f(torch.ones(4))
SCALE = 3
f(torch.ones(4))
