import torch

@torch.compile(backend="eager")
def f(x, a):
    return x * a

for a in (0.5, 1.5, 2.5):
    f(torch.ones(4), a)
