import torch

@torch.compile(backend="eager")
def f(x):
    return x * 3

f(torch.ones(8))
f(torch.ones(8, requires_grad=True))
f(torch.ones(8))
