"""What cflux's Python module costs over the C API and the tool, measured in turns on
the same machine. A benchmark, not a test.

  build-venv-python/bin/python bench/python_overhead.py [--rounds R] [--out FILE]

1. predict, one sample: Python's m.predict(x) on models/mlp.flux against
   build/bench_predict_latency (the C API: a sample copied into an executor bound at
   batch 1, cf_forward, the output copied out), at 1 thread, each round the two in
   turns (the order alternating), each the mean of 20,000 calls; the medians and the
   difference in microseconds.
2. fit: m.fit on Fashion-MNIST read with NumPy against `cflux train` on the same
   files, models/mlp.flux, 3 epochs, the defaults (adam, batch 64), at the default
   threads, in turns; the training samples/s of every epoch (evaluation excluded,
   as both report it), their medians and the ratio.

Prints each round and the summary, with the CPU; --out writes it all as JSON. Run it
with the module installed (make test-python makes build-venv-python) and the release
build in build/."""
import argparse
import csv
import datetime
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import cflux

REPO = Path(__file__).resolve().parents[1]
DATA = Path("/usr/share/datasets/fashion-mnist")


def cpu_model():
    """The model name, with cpuid's family and model (the name alone may be "AMD EPYC")."""
    info = {}
    with open("/proc/cpuinfo") as f:
        for line in f:
            k, _, v = line.partition(":")
            info.setdefault(k.strip(), v.strip())
    return f"{info.get('model name', 'unknown')} (family {info.get('cpu family', '?')}, model {info.get('model', '?')})"


def c_latency(calls):
    out = subprocess.run([REPO / "build/bench_predict_latency", REPO / "models/mlp.flux", str(calls), "1", "1"],
                         capture_output=True, text=True, check=True).stdout
    return float(out.split("median")[1]) / 1000


def py_latency(m, x, calls):
    t0 = time.perf_counter()
    for _ in range(calls):
        m.predict(x)
    return (time.perf_counter() - t0) / calls * 1e6


def idx(name, offset):
    with gzip.open(DATA / name) as f:
        return np.frombuffer(f.read(), np.uint8, offset=offset)


def cli_fit(epochs, tmp):
    log = Path(tmp) / "log.csv"
    subprocess.run([REPO / "build/cflux", "train", REPO / "models/mlp.flux", "--epochs", str(epochs), "--log", log,
                    "--quiet"], check=True, capture_output=True)
    with open(log) as f:
        return [float(r["samples_per_sec"]) for r in csv.DictReader(f)]


def py_fit(data, epochs):
    m = cflux.load(REPO / "models/mlp.flux")
    x, y, xt, yt = data
    h = m.fit(x, y, epochs=epochs, test=(xt, yt), verbose=0)
    return [e["samples_per_sec"] for e in h]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--out")
    a = ap.parse_args()
    res = {"date": datetime.date.today().isoformat(), "cpu": cpu_model(), "cflux": cflux.cpu(),
           "threads_fit": cflux.threads(), "rounds": []}
    print(f"CPU: {res['cpu']} ({cflux.cpu()['isa']}); fit at {cflux.threads()} threads, predict at 1")

    threads = cflux.threads()
    cflux.set_threads(1)
    m = cflux.load(REPO / "models/mlp.flux")
    x1 = (np.arange(784) % 7 / 7).astype(np.float32)[None]
    py_latency(m, x1, 1000)   # warm
    c, p = [], []
    for r in range(a.rounds):
        if r % 2:
            p.append(py_latency(m, x1, a.calls))
            c.append(c_latency(a.calls))
        else:
            c.append(c_latency(a.calls))
            p.append(py_latency(m, x1, a.calls))
        print(f"predict round {r + 1}: C API {c[-1]:.2f} µs, Python {p[-1]:.2f} µs, +{p[-1] - c[-1]:.2f} µs")
    cflux.set_threads(threads)
    res["predict"] = {"c_api_us": c, "python_us": p, "median_c_api_us": statistics.median(c),
                      "median_python_us": statistics.median(p),
                      "median_difference_us": statistics.median([b - a_ for a_, b in zip(c, p)])}

    data = (idx("train-images-idx3-ubyte.gz", 16).reshape(-1, 784).astype(np.float32) / 255,
            idx("train-labels-idx1-ubyte.gz", 8),
            idx("t10k-images-idx3-ubyte.gz", 16).reshape(-1, 784).astype(np.float32) / 255,
            idx("t10k-labels-idx1-ubyte.gz", 8))
    cs, ps = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            first, second = (cli_fit, py_fit) if r % 2 == 0 else (py_fit, cli_fit)
            for f in (first, second):
                v = f(a.epochs, tmp) if f is cli_fit else f(data, a.epochs)
                (cs if f is cli_fit else ps).append(v)
            print(f"fit round {r + 1}: cflux train {statistics.median(cs[-1]):.0f} samples/s, "
                  f"Python {statistics.median(ps[-1]):.0f} samples/s")
    allc = [v for r in cs for v in r]
    allp = [v for r in ps for v in r]
    res["fit"] = {"cli_samples_per_sec": cs, "python_samples_per_sec": ps, "median_cli": statistics.median(allc),
                  "median_python": statistics.median(allp),
                  "python_over_cli": statistics.median(allp) / statistics.median(allc),
                  "round_ratios": [statistics.median(p_) / statistics.median(c_) for c_, p_ in zip(cs, ps)]}
    pr, fr = res["predict"], res["fit"]
    print(f"predict, 1 sample: C API {pr['median_c_api_us']:.2f} µs, Python {pr['median_python_us']:.2f} µs "
          f"(median difference of the rounds +{pr['median_difference_us']:.2f} µs)")
    print(f"fit: cflux train {fr['median_cli']:.0f} samples/s, Python {fr['median_python']:.0f} samples/s "
          f"({100 * (fr['python_over_cli'] - 1):+.1f}%; rounds " +
          ", ".join(f"{100 * (q - 1):+.1f}%" for q in fr["round_ratios"]) + ")")
    if a.out:
        Path(a.out).write_text(json.dumps(res, indent=1) + "\n")


if __name__ == "__main__":
    main()
