"""The GIL is released while cflux computes; Ctrl-C stops a fit cleanly."""
import json
import subprocess
import sys
import threading
import time

import numpy as np

import cflux
from conftest import REPO


def fashion_like(n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.random((n, 784), dtype=np.float32), rng.integers(0, 10, n)


def spin_rate(seconds, work):
    """Increments a Python thread makes per second while work() runs."""
    count, stop = [0], [False]

    def spin():
        while not stop[0]:
            count[0] += 1

    t = threading.Thread(target=spin)
    t.start()
    time.sleep(0.02)
    c0, t0 = count[0], time.perf_counter()
    work(seconds)
    c1, t1 = count[0], time.perf_counter()
    stop[0] = True
    t.join()
    return (c1 - c0) / (t1 - t0)


def test_other_threads_run_during_fit():
    x, y = fashion_like(4096)
    m = cflux.load(REPO / "models/mlp.flux")
    threads = cflux.threads()
    cflux.set_threads(1)   # a core for the other thread
    try:
        alone = spin_rate(0.3, time.sleep)
        during = spin_rate(0, lambda s: m.fit(x, y, epochs=20, verbose=0))
        during_predict = spin_rate(0, lambda s: [m.predict(x) for _ in range(5)])
    finally:
        cflux.set_threads(threads)
    # holding the GIL, the other thread would not run at all during the call
    assert during > 0.2 * alone, (during, alone)
    assert during_predict > 0.2 * alone, (during_predict, alone)


def test_threads_share_a_model():
    """Calls from several threads on one model run one at a time, each its own result."""
    x, y = fashion_like(512, seed=1)
    m = cflux.load(REPO / "models/mlp.flux", seed=3)
    want = [m.predict(x[i::4], batch=b) for i, b in enumerate((1, 7, 64, 256))]
    got = [None] * 4

    def work(i, b):
        for _ in range(10):
            got[i] = m.predict(x[i::4], batch=b)

    ts = [threading.Thread(target=work, args=(i, b)) for i, b in enumerate((1, 7, 64, 256))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


INTERRUPT = r"""
import json, os, signal, sys, threading, time
import numpy as np
import cflux
rng = np.random.default_rng(0)
x, y = rng.random((32768, 784), dtype=np.float32), rng.integers(0, 10, 32768)
# wide and long enough that an epoch outlasts the half second before the Ctrl-C (2 s on 2 cores)
wide = "model = Chain(Input(784), Affine(1024), relu, Affine(1024), relu, Affine(10), softmax)\n"
m = cflux.loads(wide)
ckpt = sys.argv[2]
sent = []
def ctrl_c():
    sent.append(time.perf_counter())
    os.kill(os.getpid(), signal.SIGINT)
threading.Timer(0.5, ctrl_c).start()
out = {}
try:
    m.fit(x, y, epochs=200, save=ckpt, verbose=0)
    out["interrupted"] = False
except KeyboardInterrupt:
    out["interrupted"] = True
    out["latency"] = time.perf_counter() - sent[0]
out["predict"] = m.predict(x[:3]).shape[0]
done = len(m.history)
m2 = cflux.loads(wide)
h = m2.fit(x, y, epochs=done + 1, resume=ckpt, verbose=0)
out["done"] = done
import struct
with open(ckpt, "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    out["epoch_samples"] = int(json.loads(f.read(n))["__metadata__"]["epoch_samples"])
out["resumed_epochs"] = [e["epoch"] for e in h]
print(json.dumps(out))
"""


def test_ctrl_c_stops_fit(tmp_path):
    r = subprocess.run([sys.executable, "-c", INTERRUPT, str(REPO / "models/mlp.flux"), str(tmp_path / "c.ckpt")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["interrupted"]
    assert out["latency"] < 0.5          # stopped after the step it was in
    assert out["epoch_samples"] > 0      # within an epoch
    assert out["predict"] == 3           # the model still works
    # the checkpoint written at the interruption resumes, within the epoch it stopped in
    assert out["resumed_epochs"] == list(range(1, out["done"] + 2))


CLOSE_RACE = r"""
import sys, threading, time
import numpy as np
import cflux
sys.setswitchinterval(1.0)   # the worker keeps the GIL from the fit's end into zero_grad
m = cflux.loads("model = Chain(Input(4), Affine(8), tanh, Affine(3), softmax)\n", seed=1)
x = np.random.default_rng(0).normal(size=(2000, 4)).astype(np.float32)
y = np.random.default_rng(1).integers(0, 3, 2000)
started, out = threading.Event(), []
def first_epoch(s):
    if s["epoch"] == 1:
        started.set()
        time.sleep(0.2)        # the main thread calls close(), which waits for the fit
def worker():
    m.fit(x, y, epochs=2, verbose=0, callbacks=first_epoch)
    t0 = time.perf_counter()   # holding the GIL while close(), woken, takes the lock
    while time.perf_counter() - t0 < 0.05:
        pass
    try:
        m.zero_grad()          # waits for the lock that close() holds
        out.append("ran first")
    except ValueError as e:
        out.append(str(e))
t = threading.Thread(target=worker)
t.start()
started.wait()
m.close()
t.join()
print(out[0])
"""


def test_close_while_another_thread_waits():
    """A call waiting for the model while close() takes it raises 'the model is closed'
    (or ran before the close); it never uses the freed model."""
    said = []
    for _ in range(2):
        r = subprocess.run([sys.executable, "-c", CLOSE_RACE], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        said.append(r.stdout.strip())
    # close() is waiting when the fit ends, and takes the model first
    assert said == ["the model is closed"] * 2, said
