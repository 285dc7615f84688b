#!/usr/bin/env python3
"""Read a cflux checkpoint with Python's safetensors package and print every tensor
exactly (hex floats), with the metadata, for tests/test_checkpoint_py.c to compare.

  python3 tests/read_checkpoint.py CKPT > OUT
Exits 77 (the test's 'skipped') when numpy or safetensors is not installed."""
import sys

try:
    import numpy  # noqa: F401
    from safetensors import safe_open
except ImportError as e:
    print("skipped: %s (pip install safetensors numpy)" % e)
    sys.exit(77)

with safe_open(sys.argv[1], framework="numpy") as f:
    meta = f.metadata() or {}
    print("meta format %s" % meta.get("format", "-"))
    print("meta epoch %s" % meta.get("epoch", "-"))
    for name in sorted(f.keys()):
        t = f.get_tensor(name)
        assert t.dtype == numpy.float32, (name, t.dtype)
        vals = " ".join(float(v).hex() for v in t.reshape(-1))
        print("tensor %s %s %d %s" % (name, "x".join(map(str, t.shape)) or "scalar", t.size, vals))
