#!/usr/bin/python3
"""Golden values for tests/test_golden_pool.c, from PyTorch.

One input x (2, 3, 7, 9) from the generator in golden.py, and per case an output y
and the gradient dx of sum(y * r) with respect to x, r (y's shape) from the same
generator. Written to pool_golden.safetensors:

  x                              the input
  NAME.y, NAME.r, NAME.dx        each case's output, head gradient, input gradient
  ties.x, ties.y, ties.r, ties.dx  maxpool on an input of few distinct values, where
                                 the first maximum of each window must win

Cases (kernel, stride, padding as (h, w)):
  max_k3s2       F.max_pool2d(x, 3, 2)
  max_k32s21p11  F.max_pool2d(x, (3, 2), (2, 1), (1, 1))
  avg_k3s2       F.avg_pool2d(x, 3, 2)
  avg_k3s2p1     F.avg_pool2d(x, 3, 2, 1)               (count_include_pad=True)
  avg_k23s12p11  F.avg_pool2d(x, (2, 3), (1, 2), (1, 1))
  gap            F.adaptive_avg_pool2d(x, 1), flattened to (2, 3)

Run: ~/.cache/cflux/bench-venv/bin/python3 tests/golden/gen_pool.py
"""
import os

import numpy as np
import torch
import torch.nn.functional as F

from golden import Gen, write_safetensors

torch.set_default_dtype(torch.float32)
torch.use_deterministic_algorithms(True)
torch.set_num_threads(1)

SHAPE = (2, 3, 7, 9)
CASES = [
    ("max_k3s2", lambda x: F.max_pool2d(x, 3, 2)),
    ("max_k32s21p11", lambda x: F.max_pool2d(x, (3, 2), (2, 1), (1, 1))),
    ("avg_k3s2", lambda x: F.avg_pool2d(x, 3, 2)),
    ("avg_k3s2p1", lambda x: F.avg_pool2d(x, 3, 2, 1)),
    ("avg_k23s12p11", lambda x: F.avg_pool2d(x, (2, 3), (1, 2), (1, 1))),
    ("gap", lambda x: F.adaptive_avg_pool2d(x, 1).flatten(1)),
]

g = Gen(20260311)
out = {}


def case(name, f, xv):
    x = torch.from_numpy(xv.reshape(SHAPE)).requires_grad_(True)
    y = f(x)
    r = torch.from_numpy(g.sym(y.numel()).reshape(tuple(y.shape)))
    (y * r).sum().backward()
    out[name + ".y"] = y.detach().numpy()
    out[name + ".r"] = r.numpy()
    out[name + ".dx"] = x.grad.numpy()


xv = g.sym(int(np.prod(SHAPE)))
out["x"] = xv.reshape(SHAPE)
for name, f in CASES:
    case(name, f, xv)

# ties: values in {-1, 0, 1}, so most windows hold their maximum more than once
tv = np.floor(g.uniform(int(np.prod(SHAPE))) * np.float32(3)) - np.float32(1)
out["ties.x"] = tv.reshape(SHAPE)
case("ties", lambda x: F.max_pool2d(x, 3, 2, 1), tv)

here = os.path.dirname(os.path.abspath(__file__))
write_safetensors(os.path.join(here, "pool_golden.safetensors"), out,
                  {"generator": "tests/golden/gen_pool.py", "torch": torch.__version__})
print({k: v.shape for k, v in out.items()})
