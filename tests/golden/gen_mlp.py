#!/usr/bin/python3
"""Golden values for tests/test_golden_mlp.c, from PyTorch.

An MLP 784-128-64-10 (relu, softmax, mean cross-entropy), its parameters and three
batches of 64 made by the generator below (the C test has the same one), trained for
three SGD steps at lr 0.1. Written to mlp_golden.safetensors:

  probs0 (64, 10), loss (3,)        softmax output and loss of each step's forward
  grad.NAME                         every parameter's gradient at step 0
  final.NAME                        every parameter after the three updates

NAME is cflux's parameter name (1.W, 1.b, 3.W, ...); cflux keeps W as (in, out),
PyTorch's Linear as (out, in), so W is transposed on the way out.

Run: /usr/bin/python3 tests/golden/gen_mlp.py   (Debian's python3-torch)
"""
import os

import numpy as np
import torch

from golden import Gen, write_safetensors

torch.set_default_dtype(torch.float32)
torch.use_deterministic_algorithms(True)
torch.set_num_threads(1)


SIZES = [784, 128, 64, 10]
NAMES = ["1", "3", "5"]          # Chain(Input(784), Affine(128), relu, Affine(64), relu, Affine(10), softmax)
BATCH, STEPS, LR = 64, 3, 0.1

g = Gen(20261129)
layers = []
for i, name in enumerate(NAMES):
    fan_in, fan_out = SIZES[i], SIZES[i + 1]
    a = np.float32(np.sqrt(6.0 / (fan_in + fan_out)))
    W = (g.uniform(fan_in * fan_out) * np.float32(2) - np.float32(1)) * a   # (in, out), row-major
    b = (g.uniform(fan_out) * np.float32(2) - np.float32(1)) * np.float32(0.1)
    lin = torch.nn.Linear(fan_in, fan_out)
    with torch.no_grad():
        lin.weight.copy_(torch.from_numpy(W.reshape(fan_in, fan_out).T.copy()))
        lin.bias.copy_(torch.from_numpy(b))
    layers.append((name, lin))

model = torch.nn.Sequential(layers[0][1], torch.nn.ReLU(), layers[1][1], torch.nn.ReLU(), layers[2][1])
opt = torch.optim.SGD(model.parameters(), lr=LR)

out = {}
losses = []
for step in range(STEPS):
    x = torch.from_numpy(g.uniform(BATCH * 784).reshape(BATCH, 784))
    y = torch.from_numpy(np.array([g.next() % 10 for _ in range(BATCH)], dtype=np.int64))
    opt.zero_grad()
    logits = model(x)
    loss = torch.nn.functional.cross_entropy(logits, y)
    loss.backward()
    losses.append(loss.item())
    if step == 0:
        out["probs0"] = torch.softmax(logits, dim=1).detach().numpy()
        for name, lin in layers:
            out["grad." + name + ".W"] = lin.weight.grad.numpy().T.copy()
            out["grad." + name + ".b"] = lin.bias.grad.numpy().reshape(1, -1).copy()
    opt.step()

out["loss"] = np.array(losses, dtype=np.float32)
for name, lin in layers:
    out["final." + name + ".W"] = lin.weight.detach().numpy().T.copy()
    out["final." + name + ".b"] = lin.bias.detach().numpy().reshape(1, -1).copy()


here = os.path.dirname(os.path.abspath(__file__))
write_safetensors(os.path.join(here, "mlp_golden.safetensors"), out,
                  {"generator": "tests/golden/gen_mlp.py", "torch": torch.__version__})
print("losses", losses)
