import torch

@torch.compile(backend="eager")
def f(d):
    return sum(v.sum() for v in d.values())

f({"a": torch.ones(2)})
f({"b": torch.ones(2)})
f({"a": torch.ones(2), "b": torch.ones(2)})
