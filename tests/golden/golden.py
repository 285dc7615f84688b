"""golden.py - what the golden-value scripts share with the C tests: the xorshift32
generator (tests/golden.h has the same one) and a safetensors writer."""
import json
import struct

import numpy as np


class Gen:
    """xorshift32; floats from the top 24 bits. Mirrors golden_next in tests/golden.h."""

    def __init__(self, seed):
        self.s = seed & 0xFFFFFFFF

    def next(self):
        s = self.s
        s ^= (s << 13) & 0xFFFFFFFF
        s ^= s >> 17
        s ^= (s << 5) & 0xFFFFFFFF
        self.s = s
        return s

    def uniform(self, n):  # [0, 1)
        return np.array([(self.next() >> 8) * (1.0 / 16777216.0) for _ in range(n)], dtype=np.float32)

    def sym(self, n):  # [-1, 1), exact in float32
        return self.uniform(n) * np.float32(2) - np.float32(1)


def write_safetensors(path, tensors, meta):
    """float32 tensors by name (sorted), string metadata."""
    header, blobs, off = {"__metadata__": meta}, [], 0
    for name in sorted(tensors):
        data = np.ascontiguousarray(tensors[name], dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape), "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
