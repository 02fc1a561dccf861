import torch

@torch.compile(backend="eager")
def f(xs):
    return sum(x.sum() for x in xs)

for k in (2, 3, 4):
    f([torch.ones(4)] * k)
