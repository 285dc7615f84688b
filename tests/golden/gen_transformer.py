#!/usr/bin/python3
"""Golden values for tests/test_golden_transformer.c, from PyTorch.

One pre-norm transformer block as GPT-2 has it, written with PyTorch modules:

  h = x + attention(norm1(x));  y = h + mlp(norm2(h))

norm1, norm2: nn.LayerNorm(D) (eps 1e-5); attention: qkv = nn.Linear(D, 3 D), its
output split into q, k, v along the last dimension, each viewed as (B, T, H, D / H)
and transposed to (B, H, T, D / H), softmax(q k^T / sqrt(D / H)) with the positions
after each one masked out, times v, transposed back to (B, T, D), out = nn.Linear(D, D);
mlp: down(gelu_tanh(up(x))), up = nn.Linear(D, 4 D), down = nn.Linear(4 D, D). The
attention is also checked here against torch.nn.functional.scaled_dot_product_attention
(is_causal=True), so the fixture does not rest on this file's own masking alone.

The C test builds the standard library's TransformerBlock(heads = H) in the notation,
sets its parameters from this state_dict by name (Linear's weight transposed into
Affine's W), feeds x, seeds the output's gradient with r, and compares y and the
gradients of sum(y * r) with respect to x and every parameter. The arithmetic is
float64, from float32 inputs: the fixture holds the exact answer rounded once, not
PyTorch's float32 rounding; the script prints how far PyTorch's own float32 is from
it, against the C test's tolerance. The gradient of the keys' bias (elements D to
2 D - 1 of grad.attention.qkv.bias) is 0 in exact arithmetic: it shifts every score
of a row alike, which softmax ignores; there the test checks only that cflux's is
within ATOL of 0. Written to transformer_golden.safetensors:

  state.KEY      the block's state_dict (norm1.weight, attention.qkv.weight, ...)
  x, r           the input (B, T, D) and the head gradient
  y, dx          the output and d sum(y * r) / dx
  grad.KEY       d sum(y * r) / each parameter, in PyTorch's layout

Run: ~/.cache/cflux/bench-venv/bin/python3 tests/golden/gen_transformer.py   (any
Python with torch and numpy)
"""
import math
import os

import numpy as np
import torch
import torch.nn.functional as F

from golden import Gen, write_safetensors

torch.use_deterministic_algorithms(True)
torch.set_num_threads(1)

B, T, D, H, MULT = 3, 8, 32, 4, 4   # the C test's sizes: Chain(Input(T, D), TransformerBlock(heads = H))

# the C test's tolerance, |cflux - fixture| <= RTOL |fixture| + ATOL
RTOL, ATOL = 1e-5, 1e-6


class Attention(torch.nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.out = torch.nn.Linear(d, d)

    def forward(self, x, sdpa=False):
        b, t, d = x.shape
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in self.qkv(x).split(d, dim=2))
        if sdpa:
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            s = (q * (1 / math.sqrt(d // self.heads))) @ k.transpose(2, 3)               # (B, H, T, T)
            s = s.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
            a = s.softmax(dim=-1) @ v
        return self.out(a.transpose(1, 2).reshape(b, t, d))


class MLP(torch.nn.Module):
    def __init__(self, d, mult):
        super().__init__()
        self.up = torch.nn.Linear(d, mult * d)
        self.down = torch.nn.Linear(mult * d, d)

    def forward(self, x):
        return self.down(F.gelu(self.up(x), approximate="tanh"))


class Block(torch.nn.Module):
    def __init__(self, d, heads, mult):
        super().__init__()
        self.norm1 = torch.nn.LayerNorm(d)
        self.attention = Attention(d, heads)
        self.norm2 = torch.nn.LayerNorm(d)
        self.mlp = MLP(d, mult)

    def forward(self, x, sdpa=False):
        h = x + self.attention(self.norm1(x), sdpa)
        return h + self.mlp(self.norm2(h))


g = Gen(20260601)


def linear_state(prefix, fan_in, fan_out):
    bound = np.float32(1 / np.sqrt(fan_in))
    state[prefix + ".weight"] = g.sym(fan_out * fan_in).reshape(fan_out, fan_in) * bound
    state[prefix + ".bias"] = g.sym(fan_out) * np.float32(0.5)


def norm_state(prefix):
    state[prefix + ".weight"] = g.sym(D) * np.float32(0.5) + np.float32(1)
    state[prefix + ".bias"] = g.sym(D) * np.float32(0.5)


state = {}
norm_state("norm1")
linear_state("attention.qkv", D, 3 * D)
linear_state("attention.out", D, D)
norm_state("norm2")
linear_state("mlp.up", D, MULT * D)
linear_state("mlp.down", MULT * D, D)
x = (g.sym(B * T * D) * np.float32(2)).reshape(B, T, D)
r = g.sym(B * T * D).reshape(B, T, D)

res = {}
for dt in (torch.float64, torch.float32):
    block = Block(D, H, MULT).to(dt)
    block.load_state_dict({k: torch.from_numpy(v).to(dt) for k, v in state.items()})
    xt = torch.from_numpy(x).to(dt).requires_grad_()
    y = block(xt)
    (y * torch.from_numpy(r).to(dt)).sum().backward()
    res[dt] = {"y": y.detach(), "dx": xt.grad}
    res[dt].update({f"grad.{k}": p.grad for k, p in block.named_parameters()})
    if dt == torch.float64:   # the hand-written attention is PyTorch's own causal attention
        with torch.no_grad():
            gap = float((block(xt, sdpa=True) - y).abs().max())
        assert gap < 1e-12, f"the masked attention differs from scaled_dot_product_attention by {gap}"
        print(f"float64: the block with scaled_dot_product_attention differs by {gap:.3g}")
    assert state.keys() == {k for k, _ in block.named_parameters()}

out = {}
over, total = 0, 0
for k, want in res[torch.float64].items():
    out[k] = want.float().numpy()
    a = res[torch.float32][k].double()
    err = (a - want).abs()
    miss = int((err > RTOL * want.abs() + ATOL).sum())
    print(f"  {k:28s} {tuple(want.shape)!s:14s} PyTorch float32: worst {float(err.max()):.3g}, "
          f"{float((err / (RTOL * want.abs() + ATOL)).max()):.3g} of the tolerance; {miss} outside")
    over += miss
    total += want.numel()
for k, v in state.items():
    out[f"state.{k}"] = v
out["x"], out["r"] = x, r
print(f"PyTorch's float32 outside the C test's tolerance: {over} of {total} values")

here = os.path.dirname(os.path.abspath(__file__))
write_safetensors(os.path.join(here, "transformer_golden.safetensors"), out,
                  {"generator": "tests/golden/gen_transformer.py", "torch": torch.__version__})
