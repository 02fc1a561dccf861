import torch

@torch.compile(backend="eager")
def f(x):
    return x * 3

f(torch.ones(8))
f(torch.ones(8, dtype=torch.float64))
f(torch.ones(8, dtype=torch.int32))
f(torch.ones(8))
