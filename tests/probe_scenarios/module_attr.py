import torch


class Scaler(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.k = 2

    def forward(self, x):
        return x * self.k


m = Scaler()
cm = torch.compile(m, backend="eager")
for k in (2, 3, 4):
    m.k = k
    cm(torch.ones(4))
