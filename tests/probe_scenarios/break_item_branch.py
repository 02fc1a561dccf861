import torch

@torch.compile(backend="eager")
def f(x):
    y = x * 2
    if y.sum().item() > 0:
        return y + 1
    return y - 1

f(torch.ones(4))
f(-torch.ones(4))
