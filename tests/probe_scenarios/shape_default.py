import torch

@torch.compile(backend="eager")
def f(x):
    return x.sin() + x.cos()

for n in (16, 16, 32, 32, 64, 16):
    f(torch.ones(n))
