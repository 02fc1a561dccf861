import torch

@torch.compile(backend="eager", dynamic=False)
def f(x):
    return x * 2

for n in (16, 32, 64, 16):
    f(torch.ones(n))
