#!/usr/bin/env python3
"""quant_check.py - does the ONNX file of a quantized model compute cflux's int8 classes?

    quant_check.py MODEL.onnx PREDICTIONS.json IMAGES.idx.gz [--min-agree 0.999]

The file, written by `cflux export` from a quantized parameter file, must pass
onnx.checker.check_model(full_check=True) and be in QDQ form: INT8 initializers read
through DequantizeLinear, and a QuantizeLinear before each product. onnxruntime then
runs every image of the IDX file (scaled to 0..1, as cflux reads images), and its
classes must be those of `cflux predict --json` (PREDICTIONS.json) for at least
--min-agree of them. Exit 0 when they are, 1 when not.
"""
import argparse
import gzip
import json
import os
import sys

try:
    import numpy as np
    import onnx
    import onnxruntime as ort
except ModuleNotFoundError as e:   # the system Python has none of these
    sys.exit(f"{os.path.basename(sys.argv[0])}: the Python module '{e.name}' is missing: run this with "
             "build-venv-interop/bin/python (make interop-deps makes that environment: PyTorch, onnx, "
             "onnxruntime, safetensors)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("onnx")
    ap.add_argument("predictions")
    ap.add_argument("images")
    ap.add_argument("--min-agree", type=float, default=0.999)
    a = ap.parse_args()
    m = onnx.load(a.onnx)
    onnx.checker.check_model(m, full_check=True)
    ops = [n.op_type for n in m.graph.node]
    int8 = [t.name for t in m.graph.initializer if t.data_type == onnx.TensorProto.INT8 and len(t.dims) >= 2]
    if not int8 or "QuantizeLinear" not in ops or "DequantizeLinear" not in ops:
        print("FAIL %s: not in QDQ form (int8 weights %s; QuantizeLinear %d, DequantizeLinear %d)"
              % (a.onnx, int8, ops.count("QuantizeLinear"), ops.count("DequantizeLinear")))
        return 1
    with gzip.open(a.images) as f:
        raw = f.read()
    n, h, w = (int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(3))
    x = np.frombuffer(raw[16:16 + n * h * w], np.uint8).astype(np.float32) / 255
    inp = m.graph.input[0]
    dims = [d.dim_value for d in inp.type.tensor_type.shape.dim][1:]
    x = x.reshape([n] + dims)
    s = ort.InferenceSession(a.onnx, providers=["CPUExecutionProvider"])
    got = s.run(None, {inp.name: x})[0].argmax(1)
    want = np.array([p["class"] for p in json.load(open(a.predictions))])
    agree = float((got == want).mean()) if len(want) == n else 0.0
    ok = agree >= a.min_agree
    print("%s %s: %d int8 weights, onnxruntime %s gives cflux's class on %.2f%% of %d images (at least %.1f%%)"
          % ("ok" if ok else "FAIL", a.onnx, len(int8), ort.__version__, 100 * agree, n, 100 * a.min_agree))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
