#!/usr/bin/python3
"""Golden values for tests/test_golden_attention.c, from PyTorch: attention
softmax(q k^T) v over batches of heads, causal and plain, and the gradients of
sum(y * r) with respect to q, k and v.

The causal reference is PyTorch's F.scaled_dot_product_attention(is_causal=True,
scale=1.0) where the queries and keys are as many (T = S); where there are fewer
queries than keys (a step against cached keys) the mask is bottom-right aligned,
query i seeing keys 0 .. S - T + i, given to scaled_dot_product_attention as a boolean
attn_mask (its is_causal aligns top-left, which is not what a cache needs). The scale
is 1: the C test scales nothing. q, k, v, then r, are drawn from the shared generator
(tests/golden.h has the same one), sym * XSCALE (r: sym), case by case; the arithmetic
is float64 from those float32 inputs, rounded once. Written to
attention_golden.safetensors:

  NAME.y, NAME.dq, NAME.dk, NAME.dv        each case

Run: ~/.cache/cflux/bench-venv/bin/python3 tests/golden/gen_attention.py   (any Python
with torch >= 2.1 and numpy)
"""
import os

import numpy as np
import torch
import torch.nn.functional as F

from golden import Gen, write_safetensors

torch.use_deterministic_algorithms(True)
torch.set_num_threads(1)

# name, (B, H, T, S, D, Dv), causal, XSCALE; the C test has the same table
CASES = [
    ("gpt", (3, 4, 64, 64, 32, 32), True, 1),      # the character GPT's heads
    ("ragged", (2, 2, 150, 150, 8, 5), True, 3),   # past a tile of keys (128) and of queries (16), Dv != D
    ("one", (2, 3, 1, 1, 4, 4), True, 2),          # one position
    ("wide", (1, 2, 37, 37, 16, 16), True, 4),     # saturated rows
    ("plain", (2, 2, 9, 13, 8, 6), False, 2),      # no mask, more keys than queries
    ("cached", (2, 2, 3, 10, 8, 8), True, 2),      # 3 new queries against 10 keys, 7 of them cached
]
SEED = 20261203

g = Gen(SEED)
out = {}
for name, (B, H, T, S, D, Dv), causal, xscale in CASES:
    def draw(*shape, scale=xscale):
        n = int(np.prod(shape))
        return torch.tensor((g.sym(n) * np.float32(scale)).reshape(shape), dtype=torch.float64, requires_grad=True)
    q, k, v = draw(B, H, T, D), draw(B, H, S, D), draw(B, H, S, Dv)
    r = draw(B, H, T, Dv, scale=1).detach()
    if causal and T == S:
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=1.0)
    elif causal:
        seen = torch.arange(S)[None, :] <= torch.arange(T)[:, None] + (S - T)   # bottom-right
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=seen, scale=1.0)
    else:
        y = F.scaled_dot_product_attention(q, k, v, scale=1.0)
    # the same from the definition, as a check on the reference
    s = q @ k.transpose(-2, -1)
    if causal:
        s = s.masked_fill(~(torch.arange(S)[None, :] <= torch.arange(T)[:, None] + (S - T)), float("-inf"))
    assert torch.allclose(torch.softmax(s, -1) @ v, y, atol=1e-12), name
    (y * r).sum().backward()
    out[name + ".y"] = y.detach().numpy().astype(np.float32)
    out[name + ".dq"] = q.grad.numpy().astype(np.float32)
    out[name + ".dk"] = k.grad.numpy().astype(np.float32)
    out[name + ".dv"] = v.grad.numpy().astype(np.float32)

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "attention_golden.safetensors")
write_safetensors(path, out, {"generator": "tests/golden/gen_attention.py", "seed": str(SEED),
                              "torch": torch.__version__})
print("wrote", path, len(out), "tensors")
