#!/usr/bin/python3
"""Golden values for tests/test_golden_conv.c, from PyTorch.

torch.nn.functional.conv2d in a few configurations (stride, padding, dilation,
groups). For each, the weights w, the input x and the head gradient r come from the
generator below (the C test has the same one), in that order, each uniform in
[-1, 1); then y = conv2d(x, w) and the gradients of sum(y * r). Written to
conv_golden.safetensors, for each configuration NAME:

  NAME.y (B, O, OH, OW)    the output
  NAME.dx (B, C, H, W)     d sum(y * r) / dx
  NAME.dw (O, C/G, KH, KW) d sum(y * r) / dw

The inputs are not stored: the C test makes them again.

Run: ~/.cache/cflux/bench-venv/bin/python3 tests/golden/gen_conv.py   (any Python
with torch and numpy)
"""
import os

import numpy as np
import torch

from golden import Gen, write_safetensors

torch.set_default_dtype(torch.float32)
torch.use_deterministic_algorithms(True)
torch.set_num_threads(1)

# name, B, C, H, W, O, KH, KW, stride (h, w), padding (h, w), dilation (h, w), groups;
# the C test has the same table
CONFIGS = [
    ("plain", 18, 3, 9, 8, 4, 3, 3, (1, 1), (0, 0), (1, 1), 1),   # B > 16: chunks of two samples
    ("s2p1", 4, 2, 10, 9, 5, 3, 3, (2, 2), (1, 1), (1, 1), 1),
    ("dil2", 3, 2, 9, 10, 3, 3, 2, (1, 2), (2, 1), (2, 2), 1),
    ("g2", 5, 4, 7, 7, 6, 3, 3, (1, 1), (1, 1), (1, 1), 2),
    ("s2p1_7", 3, 5, 7, 7, 6, 3, 3, (2, 2), (1, 1), (1, 1), 1),   # a ResNet's downsampling: 7x7 -> 4x4
    ("1x1s2_7", 3, 6, 7, 7, 5, 1, 1, (2, 2), (0, 0), (1, 1), 1),  # its projection shortcut
]

g = Gen(20260307)
out = {}
for name, B, C, H, W, O, KH, KW, stride, pad, dil, groups in CONFIGS:
    w = torch.from_numpy(g.sym(O * C // groups * KH * KW).reshape(O, C // groups, KH, KW)).requires_grad_()
    x = torch.from_numpy(g.sym(B * C * H * W).reshape(B, C, H, W)).requires_grad_()
    y = torch.nn.functional.conv2d(x, w, stride=stride, padding=pad, dilation=dil, groups=groups)
    r = torch.from_numpy(g.sym(y.numel()).reshape(y.shape))
    (y * r).sum().backward()
    out[name + ".y"] = y.detach().numpy()
    out[name + ".dx"] = x.grad.numpy()
    out[name + ".dw"] = w.grad.numpy()
    print(name, tuple(y.shape))

here = os.path.dirname(os.path.abspath(__file__))
write_safetensors(os.path.join(here, "conv_golden.safetensors"), out,
                  {"generator": "tests/golden/gen_conv.py", "torch": torch.__version__})
