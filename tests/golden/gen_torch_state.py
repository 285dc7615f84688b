#!/usr/bin/python3
"""A PyTorch state_dict as PyTorch writes it, for tests/test_safetensors.c.

A small CNN, nn.Sequential(Conv2d(1, 2, 3), BatchNorm2d(2), ReLU, Flatten, Linear(8, 3)),
its weights drawn from the shared generator (golden.py: Gen(seed).sym, in the order
below) and its BatchNorm's running statistics moved off their starting values by
three training forwards, saved with safetensors.torch.save_file(model.state_dict()),
as a user would: torch_state.safetensors, F32 tensors and the BatchNorm's I64
num_batches_tracked (3), with PyTorch's own header layout and metadata. The values
each F32 tensor must read as are written beside it by golden.py's writer, under the
same names prefixed with "expect.", in torch_state_expect.safetensors, with five
inputs ("expect.input") and the model's outputs for them in evaluation mode
("expect.output"), which tests/test_torch_io.c compares an import's against.

Run: ~/.cache/cflux/bench-venv/bin/python3 tests/golden/gen_torch_state.py   (any
Python with torch, safetensors and numpy)
"""
import os

import numpy as np
import torch
from safetensors.torch import save_file

from golden import Gen, write_safetensors

SEED = 20261201
here = os.path.dirname(os.path.abspath(__file__))

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.BatchNorm2d(2), torch.nn.ReLU(), torch.nn.Flatten(),
                            torch.nn.Linear(8, 3))
g = Gen(SEED)
with torch.no_grad():
    for name, p in model.named_parameters():   # 0.weight, 0.bias, 1.weight, 1.bias, 4.weight, 4.bias
        p.copy_(torch.from_numpy(g.sym(p.numel()).reshape(tuple(p.shape))))
model.train()
for _ in range(3):   # running statistics away from 0 and 1; num_batches_tracked = 3
    model(torch.from_numpy(g.sym(4 * 16).reshape(4, 1, 4, 4)))
state = {k: v.contiguous() for k, v in model.state_dict().items()}
assert state["1.num_batches_tracked"].dtype == torch.int64 and int(state["1.num_batches_tracked"]) == 3
save_file(state, os.path.join(here, "torch_state.safetensors"))
expect = {"expect." + k: v.numpy() for k, v in state.items() if v.dtype == torch.float32}
# for tests/test_torch_io.c: the model in evaluation mode on five inputs
model.eval()
x = g.sym(5 * 16).reshape(5, 1, 4, 4)
with torch.no_grad():
    expect["expect.input"] = x
    expect["expect.output"] = model(torch.from_numpy(x)).numpy()
write_safetensors(os.path.join(here, "torch_state_expect.safetensors"), expect,
                  {"generator": "tests/golden/gen_torch_state.py", "torch": torch.__version__})
print("wrote torch_state.safetensors:", ", ".join(f"{k} {v.dtype} {tuple(v.shape)}" for k, v in state.items()))
