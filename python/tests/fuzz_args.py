"""Fuzz the module's argument handling: random calls with random arguments (arrays of
every dtype, shape and layout, scalars, strings, None, huge and negative numbers,
unknown keywords, closed models). Every call must return or raise TypeError,
ValueError (ShapeError among them), OverflowError or cflux.Error; anything else, and
above all a crash of the interpreter, is a failure.

    python fuzz_args.py SECONDS [SEED]

prints the calls made and exits 0, or prints the call that failed and exits 1.
test_fuzz_args.py runs it in a child process (a crash is then a failed test)."""
import os
import random
import sys
import tempfile
import time

import numpy as np

import cflux

OK = (TypeError, ValueError, OverflowError, cflux.Error)
SOURCES = [
    "model = Chain(Input(4), Affine(8), tanh, Affine(3), softmax)\n",
    "model = Chain(Input(4), Affine(2))\n",
    "model = Chain(Input(2, 3), flatten, Affine(3), softmax)\n",
    "model = Chain(Input(1, 4, 4), Conv2D(1, 2, 3), relu, flatten, Affine(2), softmax)\n",
    "model = Chain(Input(5), Embedding(7, 3), flatten, Affine(2), softmax)\n",
    "net Two() {\n  a = Affine(4, 3)\n  b = Affine(4, 2)\n  (x, h) -> (softmax(a(x)), b(x) + h)\n}\nmodel = Two()\n",
    "model = Chain(Input(4), Dropout(0.5), BatchNorm(4), Affine(3), softmax)\n",
]
DTYPES = [np.float32, np.float32, np.float32, np.float64, np.int64, np.int32, np.uint8, np.bool_, np.float16,
          np.complex64, object, "U3", ">f4"]


def rand_array(r, like=None):
    dt = r.choice(DTYPES)
    if like is not None and r.random() < 0.6:
        shape = list(like)
        if r.random() < 0.3 and shape:
            shape[r.randrange(len(shape))] = r.choice([0, 1, 2, 3, 5, 64])
    else:
        shape = [r.choice([0, 1, 2, 3, 4, 5, 7]) for _ in range(r.randrange(0, 5))]
    a = np.zeros(shape, dtype=np.float64)
    if a.size:
        a[...] = np.array([r.choice([0.0, 1.0, -1.0, 2.5, 1e30, -1e30, np.nan, np.inf, 6.0, 1e9])
                           for _ in range(a.size)]).reshape(a.shape)
    with np.errstate(all="ignore"):
        try:
            a = a.astype(dt)
        except (ValueError, OverflowError):
            a = a.astype(np.float32)
    k = r.random()
    if k < 0.15 and a.ndim >= 1:
        a = np.repeat(a, 2, axis=0)[::2]          # strided
    elif k < 0.25 and a.ndim >= 2:
        a = np.asfortranarray(a)
    elif k < 0.3 and a.ndim >= 1 and a.size:
        b = np.zeros(a.nbytes + 1, np.uint8)[1:]   # misaligned
        try:
            a = np.frombuffer(b.data, dtype=a.dtype, count=a.size).reshape(a.shape)
        except (ValueError, TypeError):
            pass
    elif k < 0.35:
        a = a.copy()
        a.flags.writeable = False
    return a


def rand_value(r, like=None):
    k = r.random()
    if k < 0.55:
        return rand_array(r, like)
    return r.choice([None, 0, 1, -1, 3, 2 ** 70, -2 ** 70, 0.5, float("nan"), float("inf"), "x", "csv:", "",
                     "adam", "xent", [], [1, 2], (1,), {}, b"bytes", object(), np.float32(2), True,
                     "fashion-mnist\x00", "/dev/null", "csv:/dev/null"])


def call(r, m, tmp):
    inputs = m.inputs
    like = [r.choice([1, 2, 3, 8])] + [d for d in inputs[0][1][1:]] if inputs else None
    kwargs = {}
    what = r.randrange(12)
    if what == 0:
        args = [rand_value(r, like)]
        if r.random() < 0.3:
            kwargs["batch"] = rand_value(r)
        return m.predict(*args, **kwargs)
    if what == 1:
        return m.evaluate(rand_value(r, like), rand_value(r, like[:1] if like else None),
                          **({"top": rand_value(r)} if r.random() < 0.3 else {}))
    if what == 2:
        keys = ["epochs", "batch", "optim", "lr", "wd", "momentum", "clip", "schedule", "val", "seed", "loss",
                "normalize", "patience", "limit_batches", "augment", "label_smoothing", "callbacks", "verbose",
                "label_col", "features", "test", "bogus"]
        for k in r.sample(keys, r.randrange(0, 4)):
            kwargs[k] = rand_value(r)
        kwargs.setdefault("epochs", 1)
        kwargs.setdefault("verbose", 0)
        if isinstance(kwargs["epochs"], int) and not isinstance(kwargs["epochs"], bool):
            kwargs["epochs"] = max(-1, min(kwargs["epochs"], 2))
        if isinstance(kwargs.get("batch"), int) and not isinstance(kwargs.get("batch"), bool):
            kwargs["batch"] = max(-1, min(kwargs["batch"], 64))
        if isinstance(kwargs.get("limit_batches"), int) and not isinstance(kwargs.get("limit_batches"), bool):
            kwargs["limit_batches"] = max(-1, min(kwargs["limit_batches"], 3))
        for k in ("keep_best", "save"):
            if r.random() < 0.1:
                kwargs[k] = os.path.join(tmp, r.choice(["a.ckpt", "sub/none.ckpt", ""]))
        return m.fit(rand_value(r, like), rand_value(r, like[:1] if like else None), **kwargs)
    if what == 3:
        b = rand_value(r) if r.random() < 0.3 else r.choice([1, 2, 3])
        e = m.bind(b, train=r.random() < 0.5, input_grads=r.random() < 0.3)
        xs = [rand_value(r, [e.batch] + list(s[1:])) for _, s in inputs[:r.randrange(0, len(inputs) + 2)]]
        e.forward(*xs, **({"train": rand_value(r)} if r.random() < 0.2 else {}))
        return e.backward(*[rand_value(r, like) for _ in range(r.randrange(0, 3))])
    if what == 4:
        return m.update(**{k: rand_value(r) for k in r.sample(["lr", "optim", "momentum", "wd", "clip"],
                                                             r.randrange(0, 3))})
    if what == 5:
        return m.summary(**{k: rand_value(r) for k in r.sample(["batch", "depth", "json"], r.randrange(0, 2))})
    if what == 6:
        p = os.path.join(tmp, "p.st")
        m.save(p)
        return m.load_params(r.choice([p, rand_value(r), os.path.join(tmp, "none")]))
    if what == 7:
        return m.set_seed(rand_value(r))
    if what == 8:
        for v in m.params.values():
            if v.size:
                v.flat[r.randrange(v.size)] = r.choice([0.0, 1.0, np.nan, 1e30])
        return None
    if what == 9:
        return cflux.loads(r.choice(SOURCES)[: r.randrange(0, 80)] if r.random() < 0.5 else rand_value(r))
    if what == 10:
        return m.add_loss(rand_value(r))
    m.close()
    return m.predict(rand_value(r, like))


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 10
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    r = random.Random(seed)
    end = time.time() + seconds
    n = 0
    with tempfile.TemporaryDirectory() as tmp:
        while time.time() < end:
            m = cflux.loads(r.choice(SOURCES), seed=r.randrange(100))
            for _ in range(r.randrange(1, 8)):
                try:
                    call(r, m, tmp)
                except OK:
                    pass
                except Exception as e:   # anything else is a bug in the module
                    print(f"fuzz_args: call {n} (seed {seed}) raised {type(e).__name__}: {e}", flush=True)
                    raise
                n += 1
    print(f"fuzz_args: {n} calls, none crashed or raised outside TypeError, ValueError, OverflowError, cflux.Error")


if __name__ == "__main__":
    main()
