import torch

# the limit's name: recompile_limit from torch 2.7 on, cache_size_limit before (an alias of it after)
torch._dynamo.config.cache_size_limit = 3


@torch.compile(backend="eager", dynamic=False)
def f(x, n):
    return x * n

for n in range(6):
    f(torch.ones(4), n)
