"""A training step (forward + loss + backward + optimizer step), aot_eager: the lazy backward
compile belongs to its forward's frame compile, never a frame or a recompile of its own."""
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
compiled = torch.compile(model, backend="aot_eager", dynamic=False)
for batch in (4, 4, 8, 8, 16):
    x, y = torch.randn(batch, 8), torch.randn(batch, 1)
    loss = torch.nn.functional.mse_loss(compiled(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
