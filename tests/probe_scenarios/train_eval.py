import torch

model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Dropout(0.5))
cm = torch.compile(model, backend="eager")
x = torch.ones(2, 8)
cm(x)
model.eval()
cm(x)
model.train()
cm(x)
