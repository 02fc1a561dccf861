import torch

@torch.compile(backend="eager")
def f(x):
    return x + 1

for n in (2, 3, 1, 0, 4):
    f(torch.ones(n))
