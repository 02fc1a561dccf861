import torch

@torch.compile(backend="eager")
def f(x):
    return x.sin()

x = torch.ones(8)
f(x)
with torch.no_grad():
    f(x)
f(x)
