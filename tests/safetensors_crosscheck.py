#!/usr/bin/env python3
"""Cross-check cflux's safetensors reader and writer against the reference
implementation (pip install safetensors numpy). Not part of ctest: run by hand,
from anywhere:

    python3 tests/safetensors_crosscheck.py

It compiles a small C driver against src/core/safetensors.c, then
  1. has cflux write a file and reads it with safetensors.numpy.load_file and
     safe_open (values bit for bit, shapes, metadata);
  2. has the reference write F32, F64, F16 and BF16 tensors and metadata, and reads
     them with cflux (values as the float32 that numpy converts them to);
  3. feeds cflux the reference's own idea of a bad file, and the reference a file
     that cflux wrote with a zero-size and a scalar tensor.
Prints one line per check and exits non-zero if any fails."""
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np
from safetensors import safe_open, serialize
from safetensors._safetensors_rust import TensorSpec
from safetensors.numpy import load_file, save_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/safetensors.h"
const char *cf_last_error(void);

int main(int argc, char **argv)
{
    if (argc >= 3 && !strcmp(argv[1], "write")) {
        static float a[6], b = 3.25f, c[1], d[12];
        const char *k[] = {"format", "\xc3\xbc"}, *v[] = {"cflux-test", "\xe2\x9c\x93 \"q\""};
        int i;
        for (i = 0; i < 6; i++) a[i] = i * 0.5f - 1;
        for (i = 0; i < 12; i++) d[i] = 1.0f / (i + 1);
        cf_st_tensor t[4] = {
            {.name = "a", .rank = 2, .shape = {2, 3}, .count = 6, .data = a},
            {.name = "scalar", .rank = 0, .count = 1, .data = &b},
            {.name = "empty", .rank = 2, .shape = {0, 2}, .count = 0, .data = c},
            {.name = "d.4d", .rank = 4, .shape = {2, 1, 3, 2}, .count = 12, .data = d},
        };
        if (cf_st_write(argv[2], 4, t, 2, k, v)) { puts(cf_last_error()); return 1; }
        return 0;
    }
    if (argc >= 3 && !strcmp(argv[1], "read")) {
        cf_st_file *f = cf_st_read(argv[2]);
        int i, j;
        if (!f) { printf("%s\n", cf_last_error()); return 1; }
        for (i = 0; i < cf_st_count(f); i++) {
            const cf_st_tensor *t = cf_st_get(f, i);
            printf("T %s %d", t->name, t->rank);
            for (j = 0; j < t->rank; j++) printf(" %lld", t->shape[j]);
            printf(" :");
            for (size_t k = 0; k < t->count; k++) {
                unsigned u;
                memcpy(&u, &t->data[k], 4);
                printf(" %08x", u);
            }
            printf("\n");
        }
        for (i = 3; i < argc; i++) {
            const char *m = cf_st_meta(f, argv[i]);
            printf("M %s=%s\n", argv[i], m ? m : "(absent)");
        }
        cf_st_free(f);
        return 0;
    }
    return 2;
}
"""

failures = 0


def check(ok, what):
    global failures
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures += 1


def build(tmp):
    src = os.path.join(tmp, "driver.c")
    exe = os.path.join(tmp, "driver")
    with open(src, "w") as fp:
        fp.write(DRIVER)
    inc = ["-I" + os.path.join(ROOT, "include")]
    if not os.path.exists(os.path.join(ROOT, "include", "cflux.h")):
        hdrdir = os.path.join(tmp, "hdrdir")  # before include/cflux.h exists
        os.makedirs(hdrdir)
        with open(os.path.join(hdrdir, "cflux.h"), "w") as fp:
            fp.write("const char *cf_last_error(void);\n")
        inc = ["-I" + hdrdir]
    subprocess.run(["cc", "-std=gnu11", "-O1", *inc, "-I" + os.path.join(ROOT, "src"), src,
                    os.path.join(ROOT, "src/core/safetensors.c"),
                    os.path.join(ROOT, "src/core/error.c"), "-o", exe, "-lcjson", "-lm"],
                   check=True)
    return exe


def cflux_read(exe, path, *keys):
    out = subprocess.run([exe, "read", path, *keys], capture_output=True, text=True)
    tensors, meta = {}, {}
    if out.returncode != 0:
        return None, out.stdout.strip()
    for line in out.stdout.splitlines():
        if line.startswith("T "):
            head, vals = line[2:].split(" :")
            parts = head.split()
            name, rank = parts[0], int(parts[1])
            shape = tuple(int(x) for x in parts[2:2 + rank])
            bits = np.array([int(x, 16) for x in vals.split()], dtype=np.uint32)
            tensors[name] = bits.view(np.float32).reshape(shape)
        elif line.startswith("M "):
            k, v = line[2:].split("=", 1)
            meta[k] = v
    return tensors, meta


def main():
    with tempfile.TemporaryDirectory() as tmp:
        exe = build(tmp)

        # 1. cflux writes, the reference reads.
        p = os.path.join(tmp, "from_cflux.safetensors")
        subprocess.run([exe, "write", p], check=True)
        got = load_file(p)
        want = {
            "a": (np.arange(6, dtype=np.float32) * 0.5 - 1).reshape(2, 3),
            "scalar": np.array(3.25, dtype=np.float32),
            "empty": np.zeros((0, 2), dtype=np.float32),
            "d.4d": (1.0 / np.arange(1, 13, dtype=np.float32)).reshape(2, 1, 3, 2),
        }
        check(sorted(got) == sorted(want), "reference reads cflux's tensor names")
        for k, v in want.items():
            g = got.get(k)
            check(g is not None and g.dtype == np.float32 and g.shape == v.shape
                  and g.tobytes() == v.tobytes(), f"reference reads cflux's '{k}' bit for bit")
        with safe_open(p, framework="numpy") as f:
            m = f.metadata()
        check(m == {"format": "cflux-test", "\u00fc": "\u2713 \"q\""},
              f"reference reads cflux's metadata {m}")
        with open(p, "rb") as fp:
            n = struct.unpack("<Q", fp.read(8))[0]
        check(n % 8 == 0, "cflux's data starts 8-byte aligned")

        # 2. the reference writes, cflux reads.
        rng = np.random.default_rng(0)
        f32 = rng.standard_normal((3, 4)).astype(np.float32)
        f64 = np.array([1.5, -2.25, 1e-300, 3e38, np.inf], dtype=np.float64)
        f16 = np.array([[1, -2, 65504], [2 ** -24, np.inf, -0.0]], dtype=np.float16)
        nanv = np.array([np.nan], dtype=np.float32)
        p2 = os.path.join(tmp, "from_reference.safetensors")
        save_file({"w.f32": f32, "x.f64": f64, "y.f16": f16, "nan": nanv,
                   "zero": np.zeros((2, 0, 3), dtype=np.float32)}, p2,
                  metadata={"framework": "np", "epoch": "7"})
        got, meta = cflux_read(exe, p2, "framework", "epoch", "missing")
        check(got is not None, f"cflux reads the reference's file ({meta if got is None else 'ok'})")
        if got is not None:
            check(got["w.f32"].tobytes() == f32.tobytes(), "cflux reads F32 bit for bit")
            check(got["x.f64"].tobytes() == f64.astype(np.float32).tobytes(),
                  "cflux converts F64 as numpy does")
            check(got["y.f16"].tobytes() == f16.astype(np.float32).tobytes(),
                  "cflux converts F16 as numpy does (subnormal, inf, -0)")
            check(np.isnan(got["nan"][0]), "cflux keeps NaN")
            check(got["zero"].shape == (2, 0, 3), "cflux reads a zero-size tensor's shape")
            check(meta == {"framework": "np", "epoch": "7", "missing": "(absent)"},
                  f"cflux reads the reference's metadata {meta}")

        # BF16 through the reference's low-level serializer (numpy has no bfloat16).
        vals = np.array([1.5, -3.0, 0.1, 1e30], dtype=np.float32)
        bf = (vals.view(np.uint32) >> 16).astype(np.uint16)  # truncation: exact BF16 values
        data = serialize({"b": TensorSpec(dtype="bfloat16", shape=[4], data_ptr=bf.ctypes.data,
                                         data_len=bf.nbytes)}, None)
        p3 = os.path.join(tmp, "bf16.safetensors")
        with open(p3, "wb") as fp:
            fp.write(bytes(data))
        got, err = cflux_read(exe, p3)
        want_bf = (bf.astype(np.uint32) << 16).view(np.float32)
        check(got is not None and got["b"].tobytes() == want_bf.tobytes(),
              "cflux reads BF16 " + ("exactly" if got is not None else err))

        # 3. A file the reference refuses (a hole in the buffer): cflux refuses it too.
        bad = b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}'
        p4 = os.path.join(tmp, "hole.safetensors")
        with open(p4, "wb") as fp:
            fp.write(struct.pack("<Q", len(bad)) + bad + bytes(8))
        try:
            load_file(p4)
            ref_ok = True
        except Exception:
            ref_ok = False
        got, err = cflux_read(exe, p4)
        check(not ref_ok and got is None, f"both refuse a hole ({err})")

    print("crosscheck: %s" % ("all passed" if failures == 0 else "%d failed" % failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
