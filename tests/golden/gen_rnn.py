#!/usr/bin/python3
"""Golden values for tests/test_golden_rnn.c, from PyTorch.

torch.nn.LSTM and torch.nn.GRU (one layer, batch_first=True) against the standard
library's LSTM and GRU (src/lang/stdlib/recurrent.flux) unrolled over T steps. The
weights are PyTorch's; the C test maps them onto cflux's parameters, G = 4 gates for
the LSTM (i, f, g, o), 3 for the GRU (r, z, n), in the same order on both sides:

  LSTM  W (I, 4H) = weight_ih_l0^T   U (H, 4H) = weight_hh_l0^T
        b (1, 4H) = bias_ih_l0 + bias_hh_l0
  GRU   W (I, 3H) = weight_ih_l0^T   U (H, 3H) = weight_hh_l0^T
        b (1, 3H) = bias_ih_l0       d (1, 3H) = bias_hh_l0

so that dW = d weight_ih^T, dU = d weight_hh^T, and for the LSTM db = d bias_ih =
d bias_hh (the two biases only ever appear as their sum).

A case of one call starts from zeros (cflux: unroll(..., stateful = false)). A case of
two calls runs the first T steps from zeros and the next T from the state (h, and c
for the LSTM) that the first left, detached: cflux's stateful unroll, where a second
call on the executor continues the first and back-propagation stops at the carried
state (truncated back-propagation through time). Together the two calls' outputs are
one PyTorch call of 2T steps; the script checks that.

For each case the generator below (the C test has the same one) draws, in this order:
weight_ih (G H, I), weight_hh (G H, H), bias_ih (G H), bias_hh (G H), each sym * 0.5;
then for each call x (B, T, I) and the head gradient r (B, T, H), each sym. The
arithmetic is float64, from those float32 inputs: the fixture holds the exact answer
rounded once, not PyTorch's float32 rounding. Written to rnn_golden.safetensors, for
case NAME and call K (c1, c2), in PyTorch's layouts:

  NAME.K.y            (B, T, H) the output
  NAME.K.dx           (B, T, I) d sum(y * r) / dx
  NAME.K.dweight_ih   (G H, I)  d sum(y * r) / d weight_ih_l0
  NAME.K.dweight_hh   (G H, H)  d sum(y * r) / d weight_hh_l0
  NAME.K.dbias_ih     (G H)     d sum(y * r) / d bias_ih_l0
  NAME.K.dbias_hh     (G H)     d sum(y * r) / d bias_hh_l0

Run: ~/.cache/cflux/bench-venv/bin/python3 tests/golden/gen_rnn.py   (any Python
with torch and numpy)
"""
import os

import numpy as np
import torch

from golden import Gen, write_safetensors

torch.use_deterministic_algorithms(True)
torch.set_num_threads(1)

# name, layer, I, H, B, T, calls; the C test has the same table
CASES = [
    ("lstm", "LSTM", 5, 6, 3, 4, 1),
    ("gru", "GRU", 5, 6, 3, 4, 1),
    ("lstm_carry", "LSTM", 5, 6, 3, 7, 2),   # 2 x 7 steps, the state carried
    ("gru_carry", "GRU", 4, 5, 2, 7, 2),
]

# the C test's tolerance, |cflux - fixture| <= RTOL |fixture| + ATOL
RTOL, ATOL = 1e-5, 1e-6

GRADS = ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"]


def run(layer, params, xs, rs, dt):
    """The calls of one case in dtype dt: per call y, dx and the weights' gradients."""
    rnn = getattr(torch.nn, layer)(params["weight_ih_l0"].shape[1], params["weight_hh_l0"].shape[1],
                                   batch_first=True).to(dt)
    with torch.no_grad():
        for k, v in params.items():
            getattr(rnn, k).copy_(torch.from_numpy(v))
    res, state = [], None
    for x, r in zip(xs, rs):
        xt = torch.from_numpy(x).to(dt).requires_grad_()
        rnn.zero_grad()
        y, state = rnn(xt, state)
        (y * torch.from_numpy(r).to(dt)).sum().backward()
        state = tuple(s.detach() for s in state) if isinstance(state, tuple) else state.detach()
        res.append({"y": y.detach(), "dx": xt.grad,
                    **{"d" + k[:-3]: getattr(rnn, k).grad.clone() for k in GRADS}})
    # the calls together are one call over all their steps
    if len(xs) > 1:
        with torch.no_grad():
            y_all, _ = rnn(torch.from_numpy(np.concatenate(xs, axis=1)).to(dt))
        joined = torch.cat([c["y"] for c in res], dim=1)
        assert (y_all - joined).abs().max().item() <= (1e-12 if dt == torch.float64 else 1e-6)
    return res


g = Gen(20260419)
out = {}
over, total = 0, 0
for name, layer, I, H, B, T, calls in CASES:
    G = 4 if layer == "LSTM" else 3
    half = np.float32(0.5)
    params = {
        "weight_ih_l0": (g.sym(G * H * I) * half).reshape(G * H, I),
        "weight_hh_l0": (g.sym(G * H * H) * half).reshape(G * H, H),
        "bias_ih_l0": g.sym(G * H) * half,
        "bias_hh_l0": g.sym(G * H) * half,
    }
    xs, rs = [], []
    for _ in range(calls):
        xs.append(g.sym(B * T * I).reshape(B, T, I))
        rs.append(g.sym(B * T * H).reshape(B, T, H))
    r64 = run(layer, params, xs, rs, torch.float64)
    r32 = run(layer, params, xs, rs, torch.float32)
    for c in range(calls):
        for k, v in r64[c].items():
            out[f"{name}.c{c + 1}.{k}"] = v.float().numpy()
            # PyTorch's own float32 against the float64 answer, at the C test's
            # tolerance: cflux should do no worse
            a, b = r32[c][k].double(), v
            over += int(((a - b).abs() > RTOL * b.abs() + ATOL).sum())
            total += b.numel()
    print(name, layer, f"I={I} H={H} B={B} T={T} calls={calls}")
print(f"PyTorch's float32 outside the C test's tolerance: {over} of {total} values")

here = os.path.dirname(os.path.abspath(__file__))
write_safetensors(os.path.join(here, "rnn_golden.safetensors"), out,
                  {"generator": "tests/golden/gen_rnn.py", "torch": torch.__version__})
