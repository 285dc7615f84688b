#!/usr/bin/python3
"""Golden values for tests/test_optim.c, from PyTorch's optimizers.

Two parameters, a (5,) and W (3, 4), start from values made by the generator below
(the C test has the same one, golden_gen), and six sets of gradients from the same
generator are replayed through each configuration of CONFIGS: torch.optim.SGD (with
momentum / nesterov, dampening 0), Adam and AdamW (foreach=False, the single-tensor
code), with torch.nn.utils.clip_grad_norm_ before the step where clip_norm is set.
Hyperparameters are float32 numbers, so that cflux (float) and PyTorch (double
scalars) start from the same values. Written to optim_golden.safetensors:

  init.a, init.W          the starting values (the C test checks its generator)
  CONFIG.K.a, CONFIG.K.W  the parameters after step K (0 .. 5) of CONFIG
  CONFIG.steps            (1,) the step count the optimizer holds at the end
  CONFIG.state.S          the optimizer's state at the end, under cflux's state name S
                          ("momentum.a", "adam.m.W", "adam.v.W", ...)

Gradients are made in the order: step 0 a, step 0 W, step 1 a, ...; each config
replays the same six sets. Row-major: W's 12 values fill its rows in turn.

Run: /usr/bin/python3 tests/golden/gen_optim.py   (Debian's python3-torch)
"""
import os

import numpy as np
import torch

from golden import Gen, write_safetensors

torch.set_default_dtype(torch.float32)
torch.use_deterministic_algorithms(True)
torch.set_num_threads(1)


def f32(x):
    return float(np.float32(x))


SEED, STEPS = 20261130, 6
SHAPES = {"a": (5,), "W": (3, 4)}
LR_FACTORS = [1.0, 0.5, 0.25, 1.0, 2.0, 1.0]   # the "adamw_lrs" config scales lr by these

# name: (optimizer, lr, momentum, weight_decay, clip_norm, per-step lr factors?)
CONFIGS = {
    "sgd":          ("sgd", 0.1, 0.0, 0.0, 0.0, False),
    "sgd_wd":       ("sgd", 0.1, 0.0, 0.05, 0.0, False),
    "momentum":     ("momentum", 0.1, 0.9, 0.0, 0.0, False),
    "nesterov":     ("nesterov", 0.1, 0.9, 0.0, 0.0, False),
    "momentum_wd":  ("momentum", 0.1, 0.9, 0.05, 0.0, False),
    "adam":         ("adam", 0.01, 0.0, 0.0, 0.0, False),
    "adam_wd":      ("adam", 0.01, 0.0, 0.05, 0.0, False),
    "adamw":        ("adamw", 0.01, 0.0, 0.1, 0.0, False),
    "adam_clip":    ("adam", 0.01, 0.0, 0.0, 0.5, False),
    "sgd_noclip":   ("sgd", 0.1, 0.0, 0.0, 100.0, False),
    "adamw_lrs":    ("adamw", 0.01, 0.0, 0.1, 0.0, True),
}
BETA1, BETA2, EPS = f32(0.9), f32(0.999), f32(1e-8)

g = Gen(SEED)
init = {name: g.sym(int(np.prod(shape))).reshape(shape) for name, shape in SHAPES.items()}
grads = [{name: g.sym(int(np.prod(shape))).reshape(shape) for name, shape in SHAPES.items()} for _ in range(STEPS)]

out = {"init." + name: v for name, v in init.items()}
for cfg, (kind, lr, mu, wd, clip, vary) in CONFIGS.items():
    lr, mu, wd, clip = f32(lr), f32(mu), f32(wd), f32(clip)
    params = {name: torch.nn.Parameter(torch.from_numpy(v.copy())) for name, v in init.items()}
    plist = [params["a"], params["W"]]
    if kind == "sgd":
        opt = torch.optim.SGD(plist, lr=lr, weight_decay=wd, foreach=False)
    elif kind in ("momentum", "nesterov"):
        opt = torch.optim.SGD(plist, lr=lr, momentum=mu, dampening=0, nesterov=kind == "nesterov",
                              weight_decay=wd, foreach=False)
    elif kind == "adam":
        opt = torch.optim.Adam(plist, lr=lr, betas=(BETA1, BETA2), eps=EPS, weight_decay=wd, foreach=False)
    else:
        opt = torch.optim.AdamW(plist, lr=lr, betas=(BETA1, BETA2), eps=EPS, weight_decay=wd, foreach=False)
    for k in range(STEPS):
        for name, p in params.items():
            p.grad = torch.from_numpy(grads[k][name].copy())
        if clip > 0:
            torch.nn.utils.clip_grad_norm_(plist, clip)
        for group in opt.param_groups:
            group["lr"] = f32(lr * LR_FACTORS[k]) if vary else lr
        opt.step()
        for name, p in params.items():
            out["%s.%d.%s" % (cfg, k, name)] = p.detach().numpy().copy()
    steps = STEPS
    for name, p in params.items():
        st = opt.state[p]
        if st.get("momentum_buffer") is not None:
            out["%s.state.momentum.%s" % (cfg, name)] = st["momentum_buffer"].numpy().copy()
        if "exp_avg" in st:
            out["%s.state.adam.m.%s" % (cfg, name)] = st["exp_avg"].numpy().copy()
            out["%s.state.adam.v.%s" % (cfg, name)] = st["exp_avg_sq"].numpy().copy()
            steps = int(st["step"].item())
    out["%s.steps" % cfg] = np.array([steps], dtype=np.float32)


here = os.path.dirname(os.path.abspath(__file__))
write_safetensors(os.path.join(here, "optim_golden.safetensors"), out,
                  {"generator": "tests/golden/gen_optim.py", "torch": torch.__version__})
print("wrote %d tensors" % len(out))
