#!/usr/bin/python3
"""Golden values for tests/test_golden_quant.c, from PyTorch's quantized operators.

An Affine layer and a Conv2D layer quantized as cflux quantizes them with static
activations (docs/quantization.md), then run by torch.ao.nn.quantized.functional's
linear and conv2d (the fbgemm engine) as the reference:

- weights: int8 per output channel, symmetric: scale = max |w| / 127, q = round(w /
  scale) in -127..127 (an Affine's W (K, N) per column, a convolution's kernels
  (O, C, KH, KW) per kernel);
- the input: 7 bits, one scale s and zero point z for the whole tensor from its own
  least and greatest value (what calibration on exactly this batch gives,
  cf_qact_range): lo = min(lo, 0), hi = max(hi, 0), s = (hi - lo) / 127, z = round(-lo
  / s); q = clamp(round(x (1 / s)) + z, 0, 127), rounded half to even; as a torch.quint8
  tensor whose integers stay in 0..127, the input clamped to [-z s, (127 - z) s];
- the output: PyTorch's quantized operators give quint8, so each case's output gets a
  scale and zero point from the range of the exact product of the quantized operands
  (0..255, the same rule); the dequantized result is within one output step of the
  exact product, and so of cflux's float32 output: the C test's tolerance.

Every step is float32, as cflux computes it, and PyTorch's own quantization of the
input and the weights is checked to give the same integers. The data come from the
generator below, in this order for each case: W, b, x (W and b uniform in [-0.5,
0.5), x in [-1.5, 2.5)). Written to quant_golden.safetensors, for each case NAME
(affine, conv):

  NAME.x        the input: (5, 37), or (2, 3, 7, 6)
  NAME.W        the weights, in cflux's layout: (K, N) = (37, 19), or (5, 3, 3, 3)
  NAME.b        the bias: (19), or (5)
  NAME.qw       the weights' integers (cflux's layout), NAME.qscale their scales
  NAME.qinput   (2): the input's scale and zero point
  NAME.y        PyTorch's quantized output, dequantized: (5, 19), or (2, 5, 7, 6)
  NAME.step     (1): the output's quantization step, the tolerance

Run: build-venv-interop/bin/python3 tests/golden/gen_quant.py   (torch 2.15 there;
Debian's /usr/bin/python3 has no torch on this machine)
"""
import os
import warnings

import numpy as np
import torch
import torch.ao.nn.quantized.functional as qf

from golden import Gen, write_safetensors

torch.set_default_dtype(torch.float32)
torch.set_num_threads(1)
# no torch.use_deterministic_algorithms: the quantized operators refuse it, and their
# integer sums are exact anyway
torch.backends.quantized.engine = "fbgemm"
warnings.filterwarnings("ignore", message=".*quantized tensor creation functions.*deprecated")

F32 = np.float32


def weights(w, axis):
    """cflux's per-channel symmetric int8: integers (as float32) and a scale per channel."""
    keep = tuple(i for i in range(w.ndim) if i != axis)
    mx = np.abs(w).max(axis=keep, keepdims=True)
    scale = np.where(mx > 0, mx / F32(127), F32(1)).astype(F32)
    q = np.clip(np.rint(w / scale), -127, 127).astype(F32)
    return q, scale.reshape(-1)


def act_range(lo, hi, qmax):
    """cf_qact_range's scale and zero point for values in [lo, hi], integers 0..qmax."""
    lo, hi = min(F32(lo), F32(0)), max(F32(hi), F32(0))
    s = F32((hi - lo) / F32(qmax))
    return s, int(np.clip(np.rint(-lo / s), 0, qmax))


def quantize_input(x):
    """The input as cflux's static mode quantizes it: integers, scale, zero point and
    the torch.quint8 tensor of the same integers."""
    s, z = act_range(x.min(), x.max(), 127)
    q = np.clip(np.rint(np.clip(x * (F32(1) / s), F32(-z), F32(127 - z))) + z, 0, 127).astype(F32)
    xc = np.clip(x, F32(-z) * s, F32(127 - z) * s)
    qx = torch.quantize_per_tensor(torch.from_numpy(xc), float(s), z, torch.quint8)
    assert np.array_equal(qx.int_repr().numpy(), q), "PyTorch quantizes the input to other integers"
    return q, s, z, qx


def quantize_weights(w, q, scale):
    """PyTorch's qint8 per-channel tensor of w (output channels first), checked to hold
    cflux's integers q (the same layout)."""
    qw = torch.quantize_per_channel(torch.from_numpy(w), torch.from_numpy(scale.astype(np.float64)),
                                    torch.zeros(len(scale), dtype=torch.int64), 0, torch.qint8)
    assert np.array_equal(qw.int_repr().numpy().astype(F32), q), "PyTorch quantizes W to other integers"
    return qw


def out_qparams(exact):
    """The output's quint8 scale and zero point, from the exact product's range."""
    return act_range(exact.min().item(), exact.max().item(), 255)


g = Gen(20260412)
out = {}

# (a) Affine: x (5, 37) W (37, 19) + b
K, N, B = 37, 19, 5
W = g.sym(K * N).reshape(K, N) * F32(0.5)
b = g.sym(N) * F32(0.5)
x = g.uniform(B * K).reshape(B, K) * F32(4) - F32(1.5)
q, scale = weights(W, 1)
xq, s, z, qx = quantize_input(x)
qw = quantize_weights(np.ascontiguousarray(W.T), np.ascontiguousarray(q.T), scale)   # torch's (N, K)
exact = torch.nn.functional.linear(qx.dequantize(), qw.dequantize(), torch.from_numpy(b))
os_, oz = out_qparams(exact)
y = qf.linear(qx, qw, torch.from_numpy(b), scale=float(os_), zero_point=oz).dequantize()
print("affine: input s %.6g z %d, output step %.6g, PyTorch's output within %.3f steps of the exact product"
      % (s, z, os_, ((y - exact).abs().max() / os_).item()))
out.update({"affine.x": x, "affine.W": W, "affine.b": b, "affine.qw": q, "affine.qscale": scale,
            "affine.qinput": np.array([s, z], dtype=F32), "affine.y": y.numpy(),
            "affine.step": np.array([os_], dtype=F32)})

# (b) Conv2D: x (2, 3, 7, 6) with kernels (5, 3, 3, 3), stride 1, pad 1
O, C, H, Wd, KH, B = 5, 3, 7, 6, 3, 2
Kr = g.sym(O * C * KH * KH).reshape(O, C, KH, KH) * F32(0.5)
b = g.sym(O) * F32(0.5)
x = g.uniform(B * C * H * Wd).reshape(B, C, H, Wd) * F32(4) - F32(1.5)
q, scale = weights(Kr, 0)
xq, s, z, qx = quantize_input(x)
qw = quantize_weights(Kr, q, scale)
exact = torch.nn.functional.conv2d(qx.dequantize(), qw.dequantize(), torch.from_numpy(b), padding=1)
os_, oz = out_qparams(exact)
y = qf.conv2d(qx, qw, torch.from_numpy(b), padding=1, scale=float(os_), zero_point=oz).dequantize()
print("conv: input s %.6g z %d, output step %.6g, PyTorch's output within %.3f steps of the exact product"
      % (s, z, os_, ((y - exact).abs().max() / os_).item()))
out.update({"conv.x": x, "conv.W": Kr, "conv.b": b, "conv.qw": q, "conv.qscale": scale,
            "conv.qinput": np.array([s, z], dtype=F32), "conv.y": y.numpy(),
            "conv.step": np.array([os_], dtype=F32)})

here = os.path.dirname(os.path.abspath(__file__))
write_safetensors(os.path.join(here, "quant_golden.safetensors"), out,
                  {"generator": "tests/golden/gen_quant.py", "torch": torch.__version__,
                   "engine": torch.backends.quantized.engine})
