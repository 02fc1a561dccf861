import torch

torch._dynamo.config.recompile_limit = 3


@torch.compile(backend="eager", dynamic=False)
def f(x, n):
    return x * n

for n in range(6):
    f(torch.ones(4), n)
