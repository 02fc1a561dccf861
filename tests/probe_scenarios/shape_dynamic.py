import torch

@torch.compile(backend="eager", dynamic=True)
def f(x):
    return x * 2

for n in (16, 32, 64, 1, 128):
    f(torch.ones(n))
