"""Fuzz the calls that fuzz_args.py reaches too rarely, with arguments that mostly fit:
fit with real shapes and classes, test, resume, save, keep_best, callbacks (that stop,
raise, return arrays, close the model, train another) and CSV specs of random files;
evaluate; bind with loss, forward, backward, update, reset_state; zero_grad;
load_params (partial, of files cut short); load and load_params of corrupted files; two
threads on one model, one of them perhaps closing it. Every call must return or raise
TypeError, ValueError, OverflowError, RuntimeError (a busy model) or cflux.Error.

    python fuzz_calls.py SECONDS SEED

NOCLOSE=1 leaves close() out; NOTHREADS=1 the two threads. Written with ASan in view:
it found a close() racing a waiting call, and a callback returning an array."""
import os, random, sys, tempfile, threading, time
from pathlib import Path
import numpy as np
sys.path.insert(0, str(Path(__file__).resolve().parent))
import fuzz_args as F
import cflux
NC = bool(os.environ.get("NOCLOSE"))
OK = F.OK + (RuntimeError,)

def good_x(r, m, n):
    (name, s), = m.inputs[:1]
    shp = [n] + [d for d in s[1:]]
    if "Embedding" in str(m.summary()):
        return np.asarray(np.random.default_rng(r.randrange(99)).integers(0, 7, shp), r.choice([np.int64, np.float32]))
    return np.random.default_rng(r.randrange(99)).normal(size=shp).astype(np.float32)

def good_y(r, m, n):
    out = m.outputs[0][1]
    k = out[-1] if len(out) > 1 and out[-1] else 2
    if r.random() < 0.5:
        return np.asarray(np.random.default_rng(r.randrange(99)).integers(0, k, n), r.choice([np.int64, np.int32, np.uint8]))
    return np.random.default_rng(1).normal(size=[n] + list(out[1:])).astype(np.float32)

def rand_classes(r):
    k = r.random()
    if k < 0.3: return [f"c{i}" for i in range(r.choice([0, 1, 2, 3, 8, 1025, 2000]))]
    if k < 0.5: return r.choice([["a", 1], ("x", "y", "z"), "abc", ["\udcff", "b"], ["", ""], ["a" * 5000] * 3, 5, None])
    return [r.choice(["a", "b", "é", "a\x00b", "x" * 300]) for _ in range(r.choice([2, 3, 8]))]

def rand_cb(r, m, other):
    def cb(d):
        k = r.random()
        if k < 0.2: return True
        if k < 0.35: raise ValueError("cb")
        if k < 0.5: return m.params
        if k < 0.6 and not NC: m.close()
        if k < 0.7: other.predict(good_x(r, other, 2)); return 1
        if k < 0.75: return other.fit(good_x(r, other, 4), good_y(r, other, 4), epochs=1, verbose=0)
        if k < 0.8: d.clear(); return d
        return None
    return cb

def write_csv(r, tmp):
    p = os.path.join(tmp, f"d{r.randrange(3)}.csv")
    rows = r.choice([0, 1, 3, 20])
    cols = r.choice([1, 2, 4, 5])
    with open(p, "w") as f:
        if r.random() < 0.7: f.write(",".join(f"h{i}" for i in range(cols)) + "\n")
        for _ in range(rows):
            f.write(",".join(r.choice(["1", "0", "2.5", "", "x", "nan", "1e39", "cat", "dog", '"q,"']) for _ in range(cols)) + "\n")
    return p

def step(r, m, other, tmp):
    what = r.randrange(11)
    n = r.choice([1, 2, 5, 17])
    if what in (0, 1):
        kw = dict(epochs=r.choice([1, 2]), verbose=r.choice([0, 0, 1]), batch=r.choice([1, 4, 64]))
        if r.random() < 0.4: kw["classes"] = rand_classes(r)
        if r.random() < 0.3: kw["test"] = r.choice([(good_x(r, m, 3), good_y(r, m, 3)), (good_x(r, m, 3),), [1, 2], (F.rand_value(r), F.rand_value(r))])
        if r.random() < 0.3: kw["callbacks"] = r.choice([rand_cb(r, m, other), [rand_cb(r, m, other)] * 2, [print], len])
        if r.random() < 0.2: kw["resume"] = r.choice([os.path.join(tmp, "a.ckpt"), os.path.join(tmp, "t.ckpt"), "/dev/null", os.path.join(tmp, "none")])
        if r.random() < 0.2: kw["save"] = os.path.join(tmp, "a.ckpt")
        if r.random() < 0.2: kw["keep_best"] = os.path.join(tmp, "b.ckpt")
        if r.random() < 0.2: kw["val"] = 0.5
        if r.random() < 0.2: kw["patience"] = 1
        if r.random() < 0.2: kw["loss"] = r.choice(["xent", "mse"])
        if r.random() < 0.2: kw["normalize"] = True
        if r.random() < 0.2: kw["augment"] = r.choice(["flip", "crop:2", "noise:0.1", "x", ""])
        if what == 1:
            spec = r.choice(["csv:" + write_csv(r, tmp), "csv:" + os.path.join(tmp, "none.csv"), "csv:/dev/null", "x:", "csv:" + tmp])
            if r.random() < 0.4: kw["label_col"] = r.choice([0, -1, 3, 100, "h0", "h9", "", "x" * 200])
            if r.random() < 0.3: kw["features"] = r.choice(["h1", "h1,h2", "", ",,,", "0-3", "h1" * 100])
            return m.fit(spec, **kw)
        return m.fit(good_x(r, m, n), good_y(r, m, n), **kw)
    if what == 2:
        return m.evaluate(good_x(r, m, n), good_y(r, m, n), batch=r.choice([1, 3, 0, -1, 2 ** 31, 2 ** 70, None, "x"]),
                          **({"loss": r.choice(["xent", "mse", "x", None, 3])} if r.random() < 0.5 else {}),
                          **({"top": r.choice([1, 2, 5, 0, -1, 10 ** 6])} if r.random() < 0.5 else {}))
    if what == 3:
        b = r.choice([1, 2, 3])
        e = m.bind(b, train=r.random() < 0.7, input_grads=r.random() < 0.3, loss=r.random() < 0.5)
        xs = []
        for name, s in m.inputs:
            xs.append(good_x(r, m, b) if len(m.inputs) == 1 else np.zeros([b] + list(s[1:]), np.float32))
        if r.random() < 0.5 and r.random() < 0.5: xs.append(good_y(r, m, b))
        for _ in range(r.randrange(1, 4)):
            k = r.randrange(5)
            if k == 0: e.forward(*xs)
            elif k == 1: e.backward(*[None if r.random() < 0.5 else F.rand_value(r, [b, 3]) for _ in range(r.randrange(0, 3))])
            elif k == 2: e.update(r.choice([0.1, -1.0, float("nan"), 1e30, "x"]))
            elif k == 3: e.reset_state()
            else: m.close() if r.random() < 0.3 and not NC else m.zero_grad()
        return e
    if what == 4: return m.zero_grad()
    if what == 5:
        p = os.path.join(tmp, "p.st")
        if r.random() < 0.5: other.save(p)
        else: m.save(p)
        if r.random() < 0.5:
            data = open(p, "rb").read()
            with open(p, "wb") as f: f.write(data[: r.randrange(len(data) + 1)])
        return m.load_params(p, partial=r.random() < 0.6)
    if what == 6:
        p = r.choice([os.path.join(tmp, x) for x in ("p.st", "a.ckpt", "b.ckpt", "t.ckpt", "none")])
        if os.path.exists(p) and r.random() < 0.4:
            data = bytearray(open(p, "rb").read())
            if data:
                for _ in range(r.randrange(1, 8)): data[r.randrange(len(data))] = r.randrange(256)
            with open(os.path.join(tmp, "t.ckpt"), "wb") as f: f.write(bytes(data))
            p = os.path.join(tmp, "t.ckpt")
        return r.choice([cflux.load, cflux.load_params])(p)
    if what == 7:
        m.fit(good_x(r, m, 4), good_y(r, m, 4), epochs=1, verbose=0, save=os.path.join(tmp, "a.ckpt"))
        return m.history, m.grads, m.states, m.weights if hasattr(m, "weights") else None
    if what == 8 and os.environ.get("NOTHREADS"): return None
    if what == 8:   # two threads on one model
        errs = []
        def t():
            try: step(r2, m, other, tmp)
            except OK: pass
            except Exception as ex: errs.append(ex)
        r2 = random.Random(r.random())
        th = threading.Thread(target=t); th.start()
        try: step(random.Random(r.random()), m, other, tmp) if r.random() < 0.7 or NC else m.close()
        finally: th.join()
        if errs: raise errs[0]
        return None
    if what == 9:
        return m.predict(good_x(r, m, n), batch=r.choice([1, 2, 3, 64]))
    if not NC: m.close()

def main():
    secs = float(sys.argv[1]); seed = int(sys.argv[2]); r = random.Random(seed)
    end = time.time() + secs; n = 0
    with tempfile.TemporaryDirectory() as tmp:
        while time.time() < end:
            m = cflux.loads(r.choice(F.SOURCES[:5] + F.SOURCES[6:]), seed=r.randrange(100))
            other = cflux.loads(r.choice(F.SOURCES[:2]))
            for _ in range(r.randrange(1, 8)):
                try: step(r, m, other, tmp)
                except OK: pass
                except Exception as e:
                    print(f"fuzz_calls: call {n} (seed {seed}) raised {type(e).__name__}: {e}", flush=True); raise
                n += 1
    print(f"fuzz_calls: {n} calls, none crashed or raised outside the expected exceptions")

if __name__ == "__main__":
    main()
