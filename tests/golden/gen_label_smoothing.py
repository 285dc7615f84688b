#!/usr/bin/python3
"""Golden values for tests/test_golden_label_smoothing.c, from PyTorch.

Cross-entropy with label smoothing, torch.nn.CrossEntropyLoss(label_smoothing=X)
(mean over the rows), on logits z and class indices (or target probabilities): the
loss and its gradient with respect to the logits, in float64 from float32 inputs, and
the plain cross-entropy (X = 0), which cflux gives in evaluation. Written to
label_smoothing_golden.safetensors, for each case NAME:

  NAME.z       the logits (rows, K), or (B, T, K) for a sequence (rows B T)
  NAME.y       the labels: class indices (rows) stored as floats, or target
               probabilities (rows, K)
  NAME.loss    the loss with label smoothing X (one number)
  NAME.dz      d loss / dz
  NAME.plain   the loss without smoothing

Run: build-venv-interop/bin/python tests/golden/gen_label_smoothing.py   (any Python
with torch and numpy)
"""
import os

import numpy as np
import torch
import torch.nn.functional as F

from golden import write_safetensors

# name, the logits' shape, X, soft targets; the C test has the same table
CASES = [
    ("k5x01", (7, 5), 0.1, False),
    ("k5x03", (7, 5), 0.3, False),
    ("k10x01", (6, 10), 0.1, False),
    ("k10x03", (6, 10), 0.3, False),
    ("seq", (3, 4, 5), 0.2, False),     # a sequence model's (B, T, K): every position a row
    ("soft", (5, 5), 0.3, True),        # target probabilities
]

torch.manual_seed(20260601)
out = {}
for name, shape, x, soft in CASES:
    K = shape[-1]
    z = (torch.randn(shape) * 2).float()
    if soft:
        y = torch.softmax(torch.randn(shape) * 2, -1).float()
    else:
        y = torch.randint(0, K, shape[:-1]).float()
    z64 = z.double().requires_grad_()
    rows = z64.reshape(-1, K)
    target = y.double().reshape(-1, K) if soft else y.reshape(-1).long()
    loss = F.cross_entropy(rows, target, label_smoothing=x)
    loss.backward()
    plain = F.cross_entropy(rows.detach(), target)
    out[name + ".z"] = z.numpy()
    out[name + ".y"] = y.numpy()
    out[name + ".loss"] = np.array([loss.item()], dtype=np.float32)
    out[name + ".dz"] = z64.grad.float().numpy()
    out[name + ".plain"] = np.array([plain.item()], dtype=np.float32)
here = os.path.dirname(os.path.abspath(__file__))
write_safetensors(os.path.join(here, "label_smoothing_golden.safetensors"), out,
                  {"made_by": "tests/golden/gen_label_smoothing.py"})
print("wrote %d tensors" % len(out))
