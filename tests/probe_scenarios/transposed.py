import torch

@torch.compile(backend="eager")
def f(x):
    return x + 1

f(torch.ones(4, 6))
f(torch.ones(6, 4).t())
