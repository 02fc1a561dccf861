import torch

@torch.compile(backend="eager")
def encode(x):
    return x.sin()


@torch.compile(backend="eager", dynamic=False)
def decode(x, n):
    return x.cos() * n

for size in (4, 8, 8):
    encode(torch.ones(size))
for n in (1, 2):
    decode(torch.ones(4), n)
