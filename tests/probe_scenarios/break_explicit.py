import torch

@torch.compile(backend="eager")
def f(x):
    y = x + 1
    torch._dynamo.graph_break()
    return y * 2

f(torch.ones(4))
f(torch.ones(8))
