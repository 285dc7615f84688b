#!/usr/bin/python3
"""Golden values for tests/test_golden_layernorm.c, from PyTorch.

torch.nn.functional.layer_norm over the last dimension and torch.nn.functional.gelu in
both forms (approximate='tanh', and 'none': the erf form), each followed by the
gradients of sum(y * r) for a head gradient r; and a small network of PyTorch modules,
nn.Sequential(nn.LayerNorm(12), nn.Linear(12, 24), nn.GELU(approximate='tanh'),
nn.Linear(24, 12), nn.GELU()), whose state_dict the C test imports into the notation's
Chain(Input(5, 12), LayerNorm(), Affine(24), gelu, Affine(12), x -> gelu(x, exact = true)).

The generator below (the C test has the same one) draws, in this order: for each
layernorm case gamma (d) sym, beta (d) sym, x sym * XSCALE + XSHIFT, r sym; then for
each gelu case x sym * XSCALE and r sym; then the network's parameters and its x and r
(those the fixture holds). XSCALE and XSHIFT are powers of two and small integers:
exact in float32, so both sides make the same bits. The arithmetic is float64, from
those float32 inputs: the fixture holds the exact answer rounded once, not PyTorch's
float32 rounding. Written to layernorm_golden.safetensors:

  ln.NAME.y, ln.NAME.dx, ln.NAME.dgamma, ln.NAME.dbeta    each layernorm case
  gelu.NAME.y, gelu.NAME.dx                               each gelu case
  net.state.KEY          the network's state_dict (0.weight, 0.bias, 1.weight, ...)
  net.x, net.r           its input (3, 5, 12) and head gradient
  net.y, net.dx          its output and d sum(y * r) / dx
  net.grad.KEY           d sum(y * r) / each parameter, in PyTorch's layout

Run: ~/.cache/cflux/bench-venv/bin/python3 tests/golden/gen_layernorm.py   (any Python
with torch and numpy)
"""
import os

import numpy as np
import torch
import torch.nn.functional as F

from golden import Gen, write_safetensors

torch.use_deterministic_algorithms(True)
torch.set_num_threads(1)

# name, x's shape (B, ..., d), eps (None: PyTorch's default, 1e-5; the C test then
# leaves the attribute at 0), x = sym * XSCALE + XSHIFT; the C test has the same table
LN_CASES = [
    ("seq", (4, 5, 16), None, 2, 0),         # (B, T, d)
    ("feat", (6, 10), 1e-2, 1, 0),            # (B, d), an eps large enough to show
    ("wide", (3, 4, 40), 1e-6, 0.25, 3),      # d past the vector lanes; the mean far from 0
    ("img", (2, 3, 2, 7), None, 4, -1),       # rank 4, d = 7 below a vector's width
]
# name, x's shape, approximate, x = sym * XSCALE
GELU_CASES = [
    ("tanh", (4, 5, 13), "tanh", 4),
    ("erf", (4, 5, 13), "none", 4),
    ("tanh_tails", (3, 50), "tanh", 16),      # far into both tails
    ("erf_tails", (3, 50), "none", 16),
]
NET_B, NET_T, NET_D, NET_H = 3, 5, 12, 24

# the C test's tolerance, |cflux - fixture| <= RTOL |fixture| + ATOL
RTOL, ATOL = 1e-5, 1e-6

g = Gen(20260517)
out = {}
over, total = 0, 0


def record(prefix, res):
    """res[dtype][key]: keep float64's, count float32's misses against it."""
    global over, total
    for k, b in res[torch.float64].items():
        out[f"{prefix}.{k}"] = b.float().numpy()
        a = res[torch.float32][k].double()
        miss = int(((a - b).abs() > RTOL * b.abs() + ATOL).sum())
        if miss:
            print(f"  PyTorch's float32 {prefix}.{k}: {miss} of {b.numel()} outside the tolerance, worst "
                  f"{float(((a - b).abs() / (RTOL * b.abs() + ATOL)).max()):.3g} times it")
        over += miss
        total += b.numel()


for name, shape, eps, xscale, xshift in LN_CASES:
    d = shape[-1]
    n = int(np.prod(shape))
    gamma, beta = g.sym(d), g.sym(d)
    x = (g.sym(n) * np.float32(xscale) + np.float32(xshift)).reshape(shape)
    r = g.sym(n).reshape(shape)
    res = {}
    for dt in (torch.float64, torch.float32):
        xt = torch.from_numpy(x).to(dt).requires_grad_()
        gt = torch.from_numpy(gamma).to(dt).requires_grad_()
        bt = torch.from_numpy(beta).to(dt).requires_grad_()
        y = F.layer_norm(xt, (d,), gt, bt, **({} if eps is None else {"eps": eps}))
        (y * torch.from_numpy(r).to(dt)).sum().backward()
        res[dt] = {"y": y.detach(), "dx": xt.grad, "dgamma": gt.grad, "dbeta": bt.grad}
    record(f"ln.{name}", res)
    print("layernorm", name, shape, "eps", eps or "default")

for name, shape, approximate, xscale in GELU_CASES:
    n = int(np.prod(shape))
    x = (g.sym(n) * np.float32(xscale)).reshape(shape)
    r = g.sym(n).reshape(shape)
    res = {}
    for dt in (torch.float64, torch.float32):
        xt = torch.from_numpy(x).to(dt).requires_grad_()
        y = F.gelu(xt, approximate=approximate)
        (y * torch.from_numpy(r).to(dt)).sum().backward()
        res[dt] = {"y": y.detach(), "dx": xt.grad}
    record(f"gelu.{name}", res)
    print("gelu", name, shape, approximate)


def linear_state(fan_in, fan_out):
    bound = np.float32(1 / np.sqrt(fan_in))
    return g.sym(fan_out * fan_in).reshape(fan_out, fan_in) * bound, g.sym(fan_out) * np.float32(0.5)


state = {}
state["0.weight"] = g.sym(NET_D) * np.float32(0.5) + np.float32(1)
state["0.bias"] = g.sym(NET_D) * np.float32(0.5)
state["1.weight"], state["1.bias"] = linear_state(NET_D, NET_H)
state["3.weight"], state["3.bias"] = linear_state(NET_H, NET_D)
x = (g.sym(NET_B * NET_T * NET_D) * np.float32(2)).reshape(NET_B, NET_T, NET_D)
r = g.sym(NET_B * NET_T * NET_D).reshape(NET_B, NET_T, NET_D)
res = {}
for dt in (torch.float64, torch.float32):
    net = torch.nn.Sequential(torch.nn.LayerNorm(NET_D), torch.nn.Linear(NET_D, NET_H),
                              torch.nn.GELU(approximate="tanh"), torch.nn.Linear(NET_H, NET_D),
                              torch.nn.GELU()).to(dt)
    net.load_state_dict({k: torch.from_numpy(v).to(dt) for k, v in state.items()})
    xt = torch.from_numpy(x).to(dt).requires_grad_()
    y = net(xt)
    (y * torch.from_numpy(r).to(dt)).sum().backward()
    res[dt] = {"y": y.detach(), "dx": xt.grad}
    res[dt].update({f"grad.{k}": p.grad for k, p in net.named_parameters()})
record("net", res)
for k, v in state.items():
    out[f"net.state.{k}"] = v
out["net.x"], out["net.r"] = x, r
print("net", (NET_B, NET_T, NET_D))
print(f"PyTorch's float32 outside the C test's tolerance: {over} of {total} values")

here = os.path.dirname(os.path.abspath(__file__))
write_safetensors(os.path.join(here, "layernorm_golden.safetensors"), out,
                  {"generator": "tests/golden/gen_layernorm.py", "torch": torch.__version__})
