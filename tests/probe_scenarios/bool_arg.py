import torch

@torch.compile(backend="eager")
def f(x, flag):
    return x + 1 if flag else x - 1

for flag in (True, False, True, False):
    f(torch.ones(4), flag)
