"""What the tests share: the repository, the cflux tool and shared library of its
release build (the references the module is checked against), and small data sets.

make test sets CFLUX_TOOL and CFLUX_LIB; run by hand, they default to the build in
build/ of the repository. A missing one fails the tests that need it (nothing is
skipped)."""
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]


def _path(var, default):
    p = Path(os.environ.get(var, REPO / default))
    if not p.exists():
        pytest.fail(f"{p} is missing ({var}): build cflux first (make build, or make test)")
    return p


@pytest.fixture(scope="session")
def tool():
    return _path("CFLUX_TOOL", "build/cflux")


@pytest.fixture(scope="session")
def libpath():
    return _path("CFLUX_LIB", "build/libcflux.so")


def run_tool(tool, *args, cwd=None):
    r = subprocess.run([str(tool), *map(str, args)], cwd=cwd, capture_output=True, text=True)
    if r.returncode:
        raise AssertionError(f"cflux {' '.join(map(str, args))} failed ({r.returncode}): {r.stderr}")
    return r.stdout


def blobs(n, seed=0, features=4, classes=3):
    """n samples of `features` numbers in `classes` overlapping clusters: float32 x and int64 labels."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, size=n)
    centres = rng.normal(scale=2.0, size=(classes, features))
    x = (centres[y] + rng.normal(size=(n, features))).astype(np.float32)
    return x, y.astype(np.int64)


def write_csv(path, x, y, header=True):
    """A CSV of a label column then the features, written so that it reads back as the
    same float32 numbers."""
    with open(path, "w") as f:
        if header:
            f.write("label," + ",".join(f"f{i}" for i in range(x.shape[1])) + "\n")
        for xi, yi in zip(x, y):
            f.write(f"{yi}," + ",".join(repr(float(v)) for v in xi) + "\n")


SMALL = "model = Chain(Input(4), Affine(16), tanh, Affine(3), softmax)\n"
