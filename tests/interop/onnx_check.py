#!/usr/bin/env python3
"""onnx_check.py - does an ONNX file that cflux wrote compute what cflux computes?

    onnx_check.py CFLUX_BUILD_DIR MODEL.flux PARAMS.safetensors MODEL.onnx
                  [--batches 3,7] [--tol 1e-5] [--uniform] [--seed N]

The file must pass onnx.checker.check_model(full_check=True) and declare IR version 8,
opset 17 and the model's input names. Then, at each batch size (two different ones by
default, so that a batch size baked into the graph shows), random inputs go through
cflux (BUILD/interop_run MODEL PARAMS IN OUT: one forward in evaluation mode, outputs
"y" or "y1", "y2", ...) and through onnxruntime, and every output must agree within
--tol (largest absolute difference). Inputs are N(0, 1) floats (with --uniform, in
[0, 1), as images are: a classifier trained on images saturates its softmax on N(0, 1)
noise, where outputs of exactly 0 and 1 hide differences), or, for an input that holds
class indices (`cflux check` says "indices in 0..N"), whole numbers in 0..N stored as
floats. Exit 0 when everything agrees, 1 when not (with what differs).

Needs numpy, safetensors, onnx and onnxruntime.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import onnx  # noqa: F401 (imported again where used)
    import onnxruntime  # noqa: F401
except ModuleNotFoundError as e:   # the system Python has none of these
    sys.exit(f"{os.path.basename(sys.argv[0])}: the Python module '{e.name}' is missing: run this with "
             "build-venv-interop/bin/python (make interop-deps makes that environment: PyTorch, onnx, "
             "onnxruntime, safetensors)")


class CheckFailed(Exception):
    pass


def model_inputs(build_dir, model):
    """[(name, per-sample shape, vocabulary size or 0)] from `cflux check MODEL`."""
    out = subprocess.run([os.path.join(build_dir, "cflux"), "check", model],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise CheckFailed("cflux check %s failed:\n%s" % (model, out.stdout + out.stderr))
    inputs = []
    for line in out.stdout.splitlines():
        m = re.match(r"^\s*input (\S+): \(B((?:, \d+)*)\)(?:, indices in 0\.\.(\d+))?\s*$", line)
        if m:
            dims = tuple(int(d) for d in m.group(2).split(",") if d.strip())
            inputs.append((m.group(1), dims, int(m.group(3)) + 1 if m.group(3) else 0))
    if not inputs:
        raise CheckFailed("cflux check %s lists no input:\n%s" % (model, out.stdout))
    return inputs


def random_inputs(inputs, batch, rng, uniform=False):
    feeds = {}
    for name, dims, vocab in inputs:
        shape = (batch,) + dims
        if vocab:
            feeds[name] = rng.integers(0, vocab, size=shape).astype(np.float32)
        else:
            feeds[name] = (rng.random(shape) if uniform else rng.standard_normal(shape)).astype(np.float32)
    return feeds


def run_cflux(build_dir, model, params, feeds, tmp):
    from safetensors.numpy import load_file, save_file
    fin, fout = os.path.join(tmp, "in.safetensors"), os.path.join(tmp, "out.safetensors")
    save_file(feeds, fin)
    out = subprocess.run([os.path.join(build_dir, "interop_run"), model, params, fin, fout],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise CheckFailed("interop_run failed:\n%s" % (out.stdout + out.stderr))
    return load_file(fout)


def check_file(onnx_path, inputs):
    """check_model with full_check, the versions, and the inputs' names."""
    import onnx
    proto = onnx.load(onnx_path)
    onnx.checker.check_model(proto, full_check=True)
    if proto.ir_version != 8:
        raise CheckFailed("ir_version is %d, not 8" % proto.ir_version)
    opsets = {o.domain: o.version for o in proto.opset_import}
    if opsets.get("") != 17:
        raise CheckFailed("opset_import is %s, not {'': 17}" % opsets)
    names = [i.name for i in proto.graph.input]
    want = [name for name, _, _ in inputs]
    if names != want:
        raise CheckFailed("the graph's inputs are %s; the model's are %s" % (names, want))
    for i in proto.graph.input:
        d0 = i.type.tensor_type.shape.dim[0]
        if d0.dim_param != "batch":
            raise CheckFailed("input %s: dimension 0 is not the symbolic 'batch'" % i.name)
    return proto


def check(build_dir, model, params, onnx_path, batches=(3, 7), tol=1e-5, seed=0, uniform=False, log=print):
    """Compare cflux and onnxruntime at each batch size; {batch: largest difference}.
    Raises CheckFailed where they differ by more than tol."""
    import onnxruntime as ort
    inputs = model_inputs(build_dir, model)
    check_file(onnx_path, inputs)
    sess = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
    out_names = [o.name for o in sess.get_outputs()]
    worst = {}
    with tempfile.TemporaryDirectory(prefix="cflux-onnx-") as tmp:
        for batch in batches:
            rng = np.random.default_rng(seed + batch)
            feeds = random_inputs(inputs, batch, rng, uniform)
            want = run_cflux(build_dir, model, params, feeds, tmp)
            got = dict(zip(out_names, sess.run(out_names, feeds)))
            if sorted(want) != sorted(got):
                raise CheckFailed("outputs: cflux gives %s, the ONNX file %s" % (sorted(want), sorted(got)))
            diff = 0.0
            for name in sorted(want):
                a, b = want[name], got[name]
                if a.shape != b.shape:
                    raise CheckFailed("batch %d, output %s: cflux's shape %s, onnxruntime's %s"
                                      % (batch, name, a.shape, b.shape))
                if not np.all(np.isfinite(b)):
                    raise CheckFailed("batch %d, output %s: onnxruntime gives non-finite values" % (batch, name))
                d = float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))) if a.size else 0.0
                diff = max(diff, d)
            worst[batch] = diff
            log("%s: batch %d: largest difference %.3g" % (os.path.basename(model), batch, diff))
            if not diff <= tol:
                raise CheckFailed("batch %d: cflux and onnxruntime differ by %.3g, more than %g" % (batch, diff, tol))
    return worst


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build_dir", help="cflux's build folder (with cflux and interop_run)")
    ap.add_argument("model", help="the model file (.flux)")
    ap.add_argument("params", help="its parameters: a parameter file or a checkpoint")
    ap.add_argument("onnx", help="the ONNX file cflux wrote for it")
    ap.add_argument("--batches", default="3,7", help="batch sizes to try (3,7)")
    ap.add_argument("--tol", type=float, default=1e-5, help="largest absolute difference allowed (1e-5)")
    ap.add_argument("--uniform", action="store_true", help="feature inputs in [0, 1) instead of N(0, 1)")
    ap.add_argument("--seed", type=int, default=0, help="for the random inputs (0)")
    a = ap.parse_args(argv)
    try:
        batches = tuple(int(b) for b in a.batches.split(","))
        check(a.build_dir, a.model, a.params, a.onnx, batches, a.tol, a.seed, a.uniform)
    except CheckFailed as e:
        print("onnx_check: FAIL: %s" % e, file=sys.stderr)
        return 1
    except Exception as e:   # the checker's ValidationError, onnxruntime's errors
        print("onnx_check: FAIL: %s: %s" % (type(e).__name__, e), file=sys.stderr)
        return 1
    print("onnx_check: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
