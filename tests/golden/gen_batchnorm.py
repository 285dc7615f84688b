#!/usr/bin/python3
"""Golden values for tests/test_golden_batchnorm.c, from PyTorch.

torch.nn.functional.batch_norm, as nn.BatchNorm1d/2d run it: per case, two forwards in
training mode (batch statistics, var biased; the running statistics move by momentum,
var unbiased) on different inputs, so that the running update compounds, then one in
evaluation mode with the running statistics the two left. Each forward is followed by
the gradients of sum(y * r) for a head gradient r; in evaluation the running
statistics are constants.

For each case the generator below (the C test has the same one) draws, in this order:
gamma (C) sym, beta (C) sym, the starting running mean (C) sym, the starting running
variance (C) uniform + 0.5, then for each of the three forwards x (B, C, ...) and r
(the same shape). x is sym * XSCALE + XSHIFT (powers of two and small integers: exact
in float32, so both sides make the same bits). The arithmetic is float64, from those
float32 inputs: the fixture holds the exact answer rounded once, not PyTorch's
float32 rounding. Written to batchnorm_golden.safetensors, for case NAME and STAGE t1,
t2 (training) and eval:

  NAME.STAGE.y        the output, x's shape
  NAME.STAGE.dx       d sum(y * r) / dx
  NAME.STAGE.dgamma   d sum(y * r) / dgamma (C)
  NAME.STAGE.dbeta    d sum(y * r) / dbeta (C)
  NAME.t1.rmean, NAME.t1.rvar, NAME.t2.rmean, NAME.t2.rvar
                      the running statistics after that forward (evaluation keeps
                      t2's)

Run: ~/.cache/cflux/bench-venv/bin/python3 tests/golden/gen_batchnorm.py   (any Python
with torch and numpy)
"""
import os

import numpy as np
import torch
import torch.nn.functional as F

from golden import Gen, write_safetensors

torch.use_deterministic_algorithms(True)
torch.set_num_threads(1)

# name, x's shape (B, C, ...), eps, momentum (None: PyTorch's defaults, 1e-5 and 0.1;
# the C test then leaves the attributes at 0), x = sym * XSCALE + XSHIFT; the C test has
# the same table
CASES = [
    ("img", (5, 3, 4, 6), None, None, 1, 0),
    ("feat", (7, 4), None, None, 2, 1),
    ("seq", (3, 5, 7), 1e-2, 0.3, 1, 0),   # BatchNorm1d on (B, C, L); eps large enough to show
]

# the C test's tolerance, |cflux - fixture| <= RTOL |fixture| + ATOL
RTOL, ATOL = 1e-5, 1e-6

g = Gen(20260412)
out = {}
over, total = 0, 0
for name, shape, eps, momentum, xscale, xshift in CASES:
    C = shape[1]
    kw = {} if eps is None else {"eps": eps, "momentum": momentum}
    n = int(np.prod(shape))
    gamma = g.sym(C)
    beta = g.sym(C)
    rmean = g.sym(C)
    rvar = g.uniform(C) + np.float32(0.5)
    rm64, rv64 = torch.from_numpy(rmean).double(), torch.from_numpy(rvar).double()
    rm32, rv32 = torch.from_numpy(rmean.copy()), torch.from_numpy(rvar.copy())
    for stage in ("t1", "t2", "eval"):
        x = (g.sym(n) * np.float32(xscale) + np.float32(xshift)).reshape(shape)
        r = g.sym(n).reshape(shape)
        train = stage != "eval"
        res = {}
        for dt, rm, rv in ((torch.float64, rm64, rv64), (torch.float32, rm32, rv32)):
            xt = torch.from_numpy(x).to(dt).requires_grad_()
            gt = torch.from_numpy(gamma).to(dt).requires_grad_()
            bt = torch.from_numpy(beta).to(dt).requires_grad_()
            y = F.batch_norm(xt, rm, rv, gt, bt, training=train, **kw)   # updates rm, rv in training
            (y * torch.from_numpy(r).to(dt)).sum().backward()
            res[dt] = {"y": y.detach(), "dx": xt.grad, "dgamma": gt.grad, "dbeta": bt.grad,
                       "rmean": rm.clone(), "rvar": rv.clone()}
        keys = ["y", "dx", "dgamma", "dbeta"] + (["rmean", "rvar"] if train else [])
        for k in keys:
            out[f"{name}.{stage}.{k}"] = res[torch.float64][k].float().numpy()
            # PyTorch's own float32 against the float64 answer, at the C test's
            # tolerance: cflux should do no worse
            a, b = res[torch.float32][k].double(), res[torch.float64][k]
            over += int(((a - b).abs() > RTOL * b.abs() + ATOL).sum())
            total += b.numel()
    print(name, shape, kw or "defaults")
print(f"PyTorch's float32 outside the C test's tolerance: {over} of {total} values")

here = os.path.dirname(os.path.abspath(__file__))
write_safetensors(os.path.join(here, "batchnorm_golden.safetensors"), out,
                  {"generator": "tests/golden/gen_batchnorm.py", "torch": torch.__version__})
