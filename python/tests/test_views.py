"""Parameters, gradients and statistics as NumPy views of the model's own memory."""
import numpy as np

import cflux
from conftest import SMALL, blobs


def test_params_are_views():
    m = cflux.loads(SMALL, seed=1)
    p = m.params
    assert list(p) == ["1.W", "1.b", "3.W", "3.b"]
    assert p["1.W"].shape == (4, 16) and p["1.W"].dtype == np.float32
    # the same memory each time, not a copy
    assert m.params["1.W"].ctypes.data == p["1.W"].ctypes.data
    assert not p["1.W"].flags.owndata and p["1.W"].flags.writeable
    x = np.ones((2, 4), np.float32)
    before = m.predict(x)
    p["3.b"][0, 0] += 5.0            # writing through the view changes the model
    after = m.predict(x)
    assert after[0, 0] > before[0, 0] + 0.1
    p["3.b"][...] = 0
    p["3.W"][...] = 0
    np.testing.assert_allclose(m.predict(x), np.full((2, 3), 1 / 3, np.float32), rtol=1e-6)


def test_views_follow_training(tmp_path):
    x, y = blobs(128, seed=3)
    m = cflux.loads(SMALL, seed=2)
    w = m.params["1.W"]
    w0 = w.copy()
    m.fit(x, y, epochs=1, verbose=0)
    assert not np.array_equal(w, w0)           # the view saw the steps
    m.save(tmp_path / "a.ckpt")
    again = cflux.load_params(tmp_path / "a.ckpt")
    np.testing.assert_array_equal(again.params["1.W"], w)
    # loading weights writes into the same memory
    m2 = cflux.loads(SMALL, seed=9)
    v = m2.params["1.W"]
    m2.load_params(tmp_path / "a.ckpt")
    np.testing.assert_array_equal(v, w)


def test_grads_and_states():
    m = cflux.loads("model = Chain(Input(3), Affine(4), BatchNorm(4), relu, Affine(2), softmax)\n", seed=1)
    assert m.grads == {}                        # no training bind yet
    e = m.bind(8, train=True)
    e.forward(np.random.default_rng(0).normal(size=(8, 3)).astype(np.float32))
    e.backward(np.ones((8, 2), np.float32))
    g = m.grads
    assert set(g) == set(m.params) and any(np.any(v != 0) for v in g.values())
    s = m.states
    assert len(s) == 2 and all(v.dtype == np.float32 for v in s.values())
    assert any(np.any(v != 0) for v in s.values())   # the batch statistics moved
    m.zero_grad()
    assert all(np.all(v == 0) for v in g.values())


def test_views_outlive_close():
    """Closing frees executors and the trainer at once; the memory the views show stays
    until the last view goes."""
    m = cflux.loads(SMALL, seed=1)
    w = m.params["1.W"]
    copy = w.copy()
    m.close()
    assert m.closed
    np.testing.assert_array_equal(w, copy)
    w[0, 0] = 1.0
    del w
