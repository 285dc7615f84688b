#!/usr/bin/python3
"""Golden values for tests/test_golden_softmax.c, from PyTorch: softmax over the last
dimension with a causal mask, as attention uses it (row i of each T x T sees columns
0..i), and plain softmax for comparison, each followed by the gradient of sum(y * r)
for a head gradient r.

The mask is PyTorch's: the scores masked_fill'ed with -inf above the diagonal, then
torch.softmax; and, as a second reference, F.scaled_dot_product_attention(is_causal=
True) with an identity value matrix, which returns those very weights (checked to
agree). x is drawn from the shared generator (tests/golden.h has the same one), sym *
XSCALE, then r sym, case by case; the arithmetic is float64 from those float32 inputs,
rounded once. Written to softmax_golden.safetensors:

  NAME.y, NAME.dx        each case

Run: ~/.cache/cflux/bench-venv/bin/python3 tests/golden/gen_softmax.py   (any Python
with torch and numpy)
"""
import os

import numpy as np
import torch
import torch.nn.functional as F

from golden import Gen, write_safetensors

torch.use_deterministic_algorithms(True)
torch.set_num_threads(1)

# name, x's shape (B, ..., T, T), causal, x = sym * XSCALE; the C test has the same table
CASES = [
    ("causal", (3, 4, 7, 7), True, 4),        # (B, heads, T, T)
    ("causal_one", (2, 1, 1), True, 4),       # T = 1: the one column it sees
    ("causal_wide", (2, 19, 19), True, 8),    # T past the vector lanes, saturated rows
    ("plain", (3, 4, 7, 7), False, 4),
]
SEED = 20261201

g = Gen(SEED)
out = {}
for name, shape, causal, xscale in CASES:
    n = int(np.prod(shape))
    x = torch.tensor((g.sym(n) * np.float32(xscale)).reshape(shape), dtype=torch.float64, requires_grad=True)
    r = torch.tensor(g.sym(n).reshape(shape), dtype=torch.float64)
    T = shape[-1]
    s = x
    if causal:
        s = x.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1), float("-inf"))
    y = torch.softmax(s, dim=-1)
    if causal and len(shape) == 4:   # the same weights from PyTorch's attention: q k^T = x
        q = x.detach()
        k = torch.eye(T, dtype=torch.float64).expand(shape[0], shape[1], T, T)
        v = torch.eye(T, dtype=torch.float64).expand(shape[0], shape[1], T, T)
        w = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=1.0)
        assert torch.allclose(w, y.detach(), atol=1e-12), "sdpa disagrees"
    (y * r).sum().backward()
    out[name + ".y"] = y.detach().numpy().astype(np.float32)
    out[name + ".dx"] = x.grad.numpy().astype(np.float32)

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "softmax_golden.safetensors")
write_safetensors(path, out, {"generator": "tests/golden/gen_softmax.py", "seed": str(SEED),
                              "torch": torch.__version__})
print("wrote", path, len(out), "tensors")
