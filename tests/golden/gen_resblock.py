#!/usr/bin/python3
"""Golden values for tests/test_golden_resblock.c, from PyTorch.

The standard library's ResidualBlock(in, out, stride) against torchvision's BasicBlock,
written out below in plain torch (the same modules, names and forward as
torchvision.models.resnet.BasicBlock, so that torchvision need not be installed). Per
case, the block is wrapped in nn.Sequential (as the model Chain(Input(...),
ResidualBlock(...)) is named for PyTorch: module 0), given random weights and batch
normalisation parameters and statistics (torch.manual_seed), and run once in training
mode on x (B, in, H, W); the gradients are those of sum(y * r) for a head gradient r.

  resblock_NAME_state.safetensors   the state_dict, as PyTorch keeps it (what the C
                                    test imports with cf_model_import_torch)
  resblock_golden.safetensors       for each case NAME:
      NAME.x, NAME.r                the input and the head gradient
      NAME.y                        the block's output
      NAME.dx                       d sum(y * r) / dx
      NAME.grad.P                   d sum(y * r) / dP for each parameter P, by its cflux
                                    name (1.conv1.K, 1.bn1.γ, 1.downsample.0.K, ...)
      NAME.stat.S                   each running statistic S after the forward (1.bn1.mean, ...)

The cases: "proj", in 3, out 8, stride 2 on (3, 3, 9, 9): the projection shortcut
(1x1 convolution with stride 2, batch normalisation); "ident", in = out = 8, stride 1
on (3, 8, 7, 7): the identity shortcut; "widen", in 4, out 8, stride 1 on (3, 4, 7, 7):
the projection for the channels alone (no stride). The arithmetic is float64 from float32
inputs: the fixture holds the exact answer rounded once.

Run: build-venv-interop/bin/python tests/golden/gen_resblock.py   (any Python with
torch and numpy)
"""
import os

import numpy as np
import torch
import torch.nn as nn

from golden import write_safetensors

torch.use_deterministic_algorithms(True)
torch.set_num_threads(1)


class BasicBlock(nn.Module):
    """torchvision.models.resnet.BasicBlock (expansion 1, groups 1, dilation 1)."""

    def __init__(self, inplanes, planes, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = None
        if stride != 1 or inplanes != planes:
            self.downsample = nn.Sequential(nn.Conv2d(inplanes, planes, 1, stride=stride, bias=False),
                                            nn.BatchNorm2d(planes))

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        return self.relu(out + identity)


# name, in, out, stride, x's shape; the C test has the same table
CASES = [
    ("proj", 3, 8, 2, (3, 3, 9, 9)),
    ("ident", 8, 8, 1, (3, 8, 7, 7)),
    ("widen", 4, 8, 1, (3, 4, 7, 7)),
]

# PyTorch's tensor names in a module, as the library's nets name them (torch(...) of
# Conv2D and BatchNorm); the cflux path of module 0 is the Chain's position 1
CONV = {"weight": "K"}
BN = {"weight": "γ", "bias": "β", "running_mean": "mean", "running_var": "var"}


def cflux_name(torch_name, block):
    parts = torch_name.split(".")
    module = block.get_submodule(".".join(parts[1:-1]))
    table = CONV if isinstance(module, nn.Conv2d) else BN
    return ".".join(["1"] + parts[1:-1] + [table[parts[-1]]])


def f32(t):
    return t.detach().float().numpy()


here = os.path.dirname(os.path.abspath(__file__))
out = {}
torch.manual_seed(20260512)
for name, cin, cout, stride, shape in CASES:
    model = nn.Sequential(BasicBlock(cin, cout, stride))
    with torch.no_grad():   # batch normalisation away from its start, so that every number shows
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.5, 0.5)
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 1.5)
    state = {k: v.detach().float().contiguous() for k, v in model.state_dict().items()
             if not k.endswith("num_batches_tracked")}
    write_safetensors(os.path.join(here, "resblock_%s_state.safetensors" % name),
                      {k: v.numpy() for k, v in state.items()}, {"format": "pt"})
    x = (torch.rand(shape) * 2 - 1).float()
    model64 = nn.Sequential(BasicBlock(cin, cout, stride)).double()
    model64.load_state_dict({k: v.double() for k, v in model.state_dict().items()})
    model64.train()
    xt = x.double().requires_grad_()
    y = model64(xt)
    r = (torch.rand(y.shape) * 2 - 1).float()
    (y * r.double()).sum().backward()
    out[name + ".x"] = f32(x)
    out[name + ".r"] = f32(r)
    out[name + ".y"] = f32(y)
    out[name + ".dx"] = f32(xt.grad)
    block = model64[0]
    for k, p in model64.named_parameters():
        out["%s.grad.%s" % (name, cflux_name(k, block))] = f32(p.grad)
    for k, b in model64.named_buffers():
        if not k.endswith("num_batches_tracked"):
            out["%s.stat.%s" % (name, cflux_name(k, block))] = f32(b)
write_safetensors(os.path.join(here, "resblock_golden.safetensors"), out, {"made_by": "tests/golden/gen_resblock.py"})
print("wrote %d tensors" % len(out))
