import torch


def helper(y):
    print("inside helper")
    return y * 2


@torch.compile(backend="eager")
def f(x):
    return helper(x + 1) - 1

f(torch.ones(4))
