import torch

@torch.compile(backend="eager")
def f(x):
    y = x.sin()
    print("between the two halves")
    return y.cos()

f(torch.ones(4))
f(torch.ones(4))
