#!/usr/bin/env python3
"""PyTorch -> safetensors -> `cflux import` -> cflux's outputs, and back through
`cflux export --to-torch` -> PyTorch's load_state_dict, for each model of this folder.

  torch_check.py BUILD_DIR WORK_DIR [CASE ...]

For each case a PyTorch model is made with random weights (and, for batch
normalisation, running statistics moved far from 0 and 1), saved as a user would
(safetensors.torch.save_file(model.state_dict(), ...)), imported with `cflux import
CASE.flux --from-torch ... --save WORK/CASE.params`, and run by BUILD/interop_run on
the same random inputs at two batch sizes: the largest absolute difference from
PyTorch's outputs (evaluation mode) must be at most 1e-5. Then `cflux export
--to-torch` writes the weights back, a fresh PyTorch model of other random weights
loads them with load_state_dict (strict), and its outputs must equal the first
model's within 1e-5. WORK keeps CASE.params for the ONNX check. Prints one line a
case; exits 1 if any fails.
"""
import os
import subprocess
import sys

try:
    import numpy as np
    import torch
    from safetensors.numpy import load_file as load_np, save_file as save_np
    from safetensors.torch import load_file, save_file
except ModuleNotFoundError as e:   # the system Python has none of these
    sys.exit(f"{os.path.basename(sys.argv[0])}: the Python module '{e.name}' is missing: run this with "
             "build-venv-interop/bin/python (make interop-deps makes that environment: PyTorch, onnx, "
             "onnxruntime, safetensors)")

here = os.path.dirname(os.path.abspath(__file__))
TOL = 1e-5
BATCHES = (3, 7)
T, V = 12, 20


class Recurrent(torch.nn.Module):
    """Embedding (or features), a recurrent layer, a dense layer and softmax at every step."""

    def __init__(self, rnn, vocab=None, features=None, hidden=16, out=V):
        super().__init__()
        if vocab:
            self.embed = torch.nn.Embedding(vocab, 8)
        self.rnn_kind = rnn
        size = 8 if vocab else features
        if rnn == "lstm" and not vocab:
            self.lstm = torch.nn.LSTM(size, hidden, batch_first=True)
        else:
            self.rnn = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU, "rnn": torch.nn.RNN}[rnn](size, hidden,
                                                                                           batch_first=True)
        self.out = torch.nn.Linear(hidden, out)
        self.vocab = vocab

    def forward(self, x):
        h = self.embed(x.long()) if self.vocab else x
        layer = self.lstm if hasattr(self, "lstm") else self.rnn
        return torch.softmax(self.out(layer(h)[0]), dim=-1)


def make(case, seed):
    torch.manual_seed(seed)
    nn = torch.nn
    if case == "mlp":
        m = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 16), nn.ReLU(), nn.Linear(16, 5),
                          nn.Softmax(dim=1))
    elif case == "cnn":
        m = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(4, 8, 3), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(32, 10), nn.Softmax(dim=1))
        with torch.no_grad():   # non-trivial batch normalisation, as after training
            for mod in m:
                if isinstance(mod, nn.BatchNorm2d):
                    mod.weight.copy_(1 + 0.5 * torch.randn_like(mod.weight))
                    mod.bias.copy_(0.3 * torch.randn_like(mod.bias))
                    mod.running_mean.copy_(0.5 * torch.randn_like(mod.running_mean))
                    mod.running_var.copy_(0.5 + 1.5 * torch.rand_like(mod.running_var))
                    mod.num_batches_tracked.fill_(17)
    elif case == "transformer-mlp":
        m = nn.Sequential(nn.LayerNorm(12), nn.Linear(12, 24), nn.GELU(approximate="tanh"), nn.Linear(24, 12),
                          nn.GELU(), nn.Linear(12, 5), nn.Softmax(dim=-1))
        with torch.no_grad():   # a scale and shift of its own, not ones and zeros
            m[0].weight.copy_(1 + 0.5 * torch.randn_like(m[0].weight))
            m[0].bias.copy_(0.3 * torch.randn_like(m[0].bias))
    elif case == "lstm":
        m = Recurrent("lstm", features=6, out=9)
    else:
        m = Recurrent(case.split("-")[1], vocab=V)
    return m.eval()


def inputs(case, batch, rng):
    if case == "mlp":
        return rng.standard_normal((batch, 20)).astype(np.float32)
    if case == "cnn":
        return rng.standard_normal((batch, 1, 12, 12)).astype(np.float32)
    if case == "lstm":
        return rng.standard_normal((batch, T, 6)).astype(np.float32)
    if case == "transformer-mlp":
        return rng.standard_normal((batch, 6, 12)).astype(np.float32)
    return rng.integers(0, V, (batch, T)).astype(np.float32)


def cflux(build, *args):
    r = subprocess.run([os.path.join(build, "cflux"), *args], capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError("cflux %s: %s" % (" ".join(args), r.stderr.strip()))
    return r.stdout + r.stderr


def cflux_outputs(build, model, params, x, work):
    save_np({"x": x}, os.path.join(work, "in.safetensors"))
    out = os.path.join(work, "out.safetensors")
    r = subprocess.run([os.path.join(build, "interop_run"), model, params, os.path.join(work, "in.safetensors"), out],
                       capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError("interop_run: " + r.stderr.strip())
    return load_np(out)["y"]


def check(build, work, case):
    model = os.path.join(here, case + ".flux")
    weights = os.path.join(work, case + ".safetensors")
    params = os.path.join(work, case + ".params")
    back = os.path.join(work, case + ".back.safetensors")
    ref = make(case, 1)
    save_file({k: v.contiguous() for k, v in ref.state_dict().items()}, weights)
    notes = cflux(build, "import", model, "--from-torch", weights, "--save", params)
    rng = np.random.default_rng(7)
    worst_in = worst_back = 0.0
    cflux(build, "export", model, "--params", params, "--to-torch", back)
    other = make(case, 2)
    other.load_state_dict(load_file(back))   # strict: every key, and no other
    for b in BATCHES:
        x = inputs(case, b, rng)
        with torch.no_grad():
            want = ref(torch.from_numpy(x)).numpy()
            again = other(torch.from_numpy(x)).numpy()
        got = cflux_outputs(build, model, params, x, work)
        if got.shape != want.shape:
            raise RuntimeError("cflux gives %s, PyTorch %s" % (got.shape, want.shape))
        worst_in = max(worst_in, float(np.abs(got - want).max()))
        worst_back = max(worst_back, float(np.abs(again - want).max()))
    ok = worst_in <= TOL and worst_back <= TOL
    note = " (%s)" % notes.strip().split("\n")[-1] if "ignored" in notes else ""
    print("%s %s: import: max |cflux - torch| %.2g at batches %s; export: max |torch(exported) - torch| %.2g%s"
          % ("ok  " if ok else "FAIL", case, worst_in, "/".join(map(str, BATCHES)), worst_back,
             " [num_batches_tracked ignored]" if note else ""))
    return ok


def main():
    build, work = sys.argv[1], sys.argv[2]
    cases = sys.argv[3:] or ["mlp", "cnn", "lstm", "char-lstm", "char-gru", "char-rnn", "transformer-mlp"]
    os.makedirs(work, exist_ok=True)
    print("torch %s" % torch.__version__)
    failed = 0
    for case in cases:
        try:
            failed += not check(build, work, case)
        except Exception as e:   # one line, and the other cases still run
            print("FAIL %s: %s" % (case, e))
            failed += 1
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
