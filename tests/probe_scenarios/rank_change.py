import torch

@torch.compile(backend="eager")
def f(x):
    return x.sum(-1)

for shape in ((16,), (32,), (4, 8), (4, 16)):
    f(torch.ones(*shape))
