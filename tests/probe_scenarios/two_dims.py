import torch

@torch.compile(backend="eager")
def f(x):
    return x.sum(-1)

for shape in ((4, 8), (4, 16), (8, 16), (8, 32)):
    f(torch.ones(*shape))
