#!/usr/bin/python3
"""Training speed of the same MLP in PyTorch (784-128-64-10, relu, cross-entropy, SGD,
batch 64) on random data: prints samples per second. A benchmark, not a test.

  /usr/bin/python3 bench/mlp_torch.py [seconds] [batch] [threads]
"""
import sys
import time

import torch

seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
batch = int(sys.argv[2]) if len(sys.argv) > 2 else 64
if len(sys.argv) > 3:
    torch.set_num_threads(int(sys.argv[3]))
torch.manual_seed(1)
model = torch.nn.Sequential(torch.nn.Linear(784, 128), torch.nn.ReLU(), torch.nn.Linear(128, 64),
                            torch.nn.ReLU(), torch.nn.Linear(64, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
POOL = 64
data = torch.rand(POOL, batch, 784)
labels = torch.randint(0, 10, (POOL, batch))
x = torch.empty(batch, 784)
y = torch.empty(batch, dtype=torch.long)
steps, t0 = 0, time.perf_counter()
while True:
    for _ in range(50):
        b = steps % POOL
        x.copy_(data[b])
        y.copy_(labels[b])
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        steps += 1
    t = time.perf_counter() - t0
    if t >= seconds:
        break
print("torch: %.0f samples/s (batch %d, %d threads, loss %.3f)" % (steps * batch / t, batch, torch.get_num_threads(), loss.item()))
