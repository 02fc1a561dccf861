import torch

@torch.compile(backend="eager")
def f(x):
    return x * 2

first = torch.ones(16)
torch._dynamo.mark_dynamic(first, 0, min=4, max=64)
f(first)
f(torch.ones(32))
f(torch.ones(128))
f(torch.ones(2))
