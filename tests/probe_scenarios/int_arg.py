import torch

@torch.compile(backend="eager", dynamic=False)
def f(x, n):
    return x * n

for n in (1, 2, 3, 2):
    f(torch.ones(4), n)
