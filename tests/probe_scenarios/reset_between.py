"""Compile, torch._dynamo.reset(), compile again: ids restart at 0/0 after the reset, and
each recompile's reason belongs to its own epoch's compile."""
import torch


def f(x):
    return x.sin() + 1


g = torch.compile(f, backend="eager", dynamic=False)
g(torch.randn(8))
g(torch.randn(16))
torch._dynamo.reset()
g(torch.randn(8))
g(torch.randn(16))
