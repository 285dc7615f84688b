"""bind, forward, backward and update against the C API itself (the release build's
libcflux.so through ctypes): the same bits."""
import ctypes as C

import numpy as np
import pytest

import cflux
from conftest import blobs

SRC = """
model = Chain(Input(6), Affine(5), tanh, Affine(4), softmax)
"""
TWO = """
net Two() {
  a = Affine(6, 4)
  b = Affine(6, 2)
  (x, h) -> (softmax(a(x)), relu(b(x) + h))
}
model = Two()
"""


class Shape(C.Structure):
    _fields_ = [("rank", C.c_int), ("d", C.c_int * 6)]


@pytest.fixture(scope="module")
def lib(libpath):
    lib = C.CDLL(str(libpath))
    P, I, F = C.c_void_p, C.c_int, C.POINTER(C.c_float)
    sigs = {
        "cf_model_parse": (P, [C.c_char_p, C.c_char_p]),
        "cf_model_set_seed": (None, [P, C.c_uint64]),
        "cf_model_add_loss": (I, [P, I]),
        "cf_bind": (P, [P, I, C.c_uint]),
        "cf_exec_input": (F, [P, I, C.POINTER(C.c_size_t)]),
        "cf_exec_output": (F, [P, I, C.POINTER(C.c_size_t)]),
        "cf_exec_output_grad": (F, [P, I, C.POINTER(C.c_size_t)]),
        "cf_exec_input_grad": (F, [P, I, C.POINTER(C.c_size_t)]),
        "cf_forward": (I, [P, I]),
        "cf_backward": (I, [P]),
        "cf_update_sgd": (I, [P, C.c_float]),
        "cf_exec_loss": (C.c_float, [P]),
        "cf_model_param_count": (I, [P]),
        "cf_model_param_data": (F, [P, I]),
        "cf_model_param_grad": (F, [P, I]),
        "cf_model_param_shape": (Shape, [P, I]),
        "cf_exec_free": (None, [P]),
        "cf_model_free": (None, [P]),
        "cf_last_error": (C.c_char_p, []),
    }
    for name, (res, args) in sigs.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
    return lib


def c_model(lib, src, seed):
    m = lib.cf_model_parse(src.encode(), b"t.flux")
    assert m, lib.cf_last_error()
    lib.cf_model_set_seed(m, seed)
    return m


def buf(ptr, n):
    return np.ctypeslib.as_array(ptr, shape=(n,))


def c_step(lib, m, batch, flags, inputs, heads, train=1):
    """forward then backward in C: outputs, input grads, parameter grads (copies)."""
    e = lib.cf_bind(m, batch, flags)
    assert e, lib.cf_last_error()
    n = C.c_size_t()
    for i, a in enumerate(inputs):
        p = lib.cf_exec_input(e, i, C.byref(n))
        buf(p, n.value)[:] = a.ravel()
    assert lib.cf_forward(e, train) == 0, lib.cf_last_error()
    outs = []
    for o in range(len(heads)):
        p = lib.cf_exec_output(e, o, C.byref(n))
        outs.append(buf(p, n.value).copy())
        g = lib.cf_exec_output_grad(e, o, C.byref(n))
        buf(g, n.value)[:] = heads[o].ravel()
    assert lib.cf_backward(e) == 0, lib.cf_last_error()
    igrads = []
    for i in range(len(inputs)):
        p = lib.cf_exec_input_grad(e, i, C.byref(n))
        igrads.append(buf(p, n.value).copy() if p else None)
    pgrads = []
    for k in range(lib.cf_model_param_count(m)):
        s = lib.cf_model_param_shape(m, k)
        cnt = int(np.prod([s.d[j] for j in range(s.rank)]))
        pgrads.append(buf(lib.cf_model_param_grad(m, k), cnt).copy())
    return e, outs, igrads, pgrads


def test_forward_backward(lib):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(7, 6)).astype(np.float32)
    head = rng.normal(size=(7, 4)).astype(np.float32)
    cm = c_model(lib, SRC, 11)
    e, outs, igrads, pgrads = c_step(lib, cm, 7, 3, [x], [head])   # CF_TRAIN | CF_INPUT_GRADS
    m = cflux.loads(SRC, "t.flux", seed=11)
    ex = m.bind(7, train=True, input_grads=True)
    out = ex.forward(x)
    dx = ex.backward(head)
    assert out.shape == (7, 4) and dx.shape == (7, 6)
    np.testing.assert_array_equal(out.ravel(), outs[0])
    np.testing.assert_array_equal(dx.ravel(), igrads[0])
    grads = list(m.grads.values())
    assert len(grads) == len(pgrads)
    for g, cg in zip(grads, pgrads):
        np.testing.assert_array_equal(g.ravel(), cg)
    # an SGD step: the same parameters after
    assert lib.cf_update_sgd(e, 0.5) == 0
    ex.update(0.5)
    for k, p in enumerate(m.params.values()):
        np.testing.assert_array_equal(p.ravel(), buf(lib.cf_model_param_data(cm, k), p.size))
    lib.cf_exec_free(e)
    lib.cf_model_free(cm)


def test_two_outputs_and_loss(lib):
    """Two inputs and two outputs, one head left out (zero); a model with its loss:
    labels as a last input, the loss's gradient from backward() alone."""
    rng = np.random.default_rng(4)
    x = rng.normal(size=(3, 6)).astype(np.float32)
    h = (rng.normal(size=(3, 2)) + 2).astype(np.float32)   # relu mostly open
    h1 = rng.normal(size=(3, 2)).astype(np.float32)
    cm = c_model(lib, TWO, 2)
    e, outs, igrads, pgrads = c_step(lib, cm, 3, 3, [x, h], [np.zeros((3, 4), np.float32), h1])
    m = cflux.loads(TWO, "t.flux", seed=2)
    ex = m.bind(3, train=True, input_grads=True)
    a, b = ex.forward(x, h)
    dx, dh = ex.backward(None, h1)
    assert np.count_nonzero(b) >= 3 and np.count_nonzero(dx) >= 6
    np.testing.assert_array_equal(a.ravel(), outs[0])
    np.testing.assert_array_equal(b.ravel(), outs[1])
    np.testing.assert_array_equal(dx.ravel(), igrads[0])
    np.testing.assert_array_equal(dh.ravel(), igrads[1])
    pa, pb = m.predict([x, h])
    np.testing.assert_array_equal(pa, a)
    np.testing.assert_array_equal(pb, b)
    lib.cf_exec_free(e)
    lib.cf_model_free(cm)

    labels = np.array([0, 3, 1, 2, 1, 0, 3], np.int64)
    xx = rng.normal(size=(7, 6)).astype(np.float32)
    cm = c_model(lib, SRC, 5)
    assert lib.cf_model_add_loss(cm, 1) == 0
    e, outs, igrads, pgrads = c_step(lib, cm, 7, 1, [xx, labels.astype(np.float32)], [np.zeros((7, 4), np.float32)])
    m = cflux.loads(SRC, "t.flux", seed=5)
    m.add_loss("xent")
    ex = m.bind(7, train=True)
    out = ex.forward(xx, labels)
    assert ex.backward() is None
    np.testing.assert_array_equal(out.ravel(), outs[0])
    assert ex.loss == pytest.approx(float(lib.cf_exec_loss(e)), abs=0)
    for g, cg in zip(m.grads.values(), pgrads):
        np.testing.assert_array_equal(g.ravel(), cg)
    lib.cf_exec_free(e)
    lib.cf_model_free(cm)


def test_custom_loop_learns():
    """The seed's runmodel / runback! / update! in Python: a loop of forward, backward
    and update that lowers the loss, with the optimizer of fit."""
    x, y = blobs(256, seed=9)
    m = cflux.loads("model = Chain(Input(4), Affine(16), tanh, Affine(3), softmax)\n", seed=1)
    m.add_loss("xent")
    ex = m.bind(32, train=True)
    losses = []
    for epoch in range(20):
        total = 0.0
        for i in range(0, 256, 32):
            ex.forward(x[i:i + 32], y[i:i + 32])
            ex.backward()
            m.update(lr=0.01, optim="adam")
            total += ex.loss
        losses.append(total / 8)
    assert losses[-1] < 0.6 * losses[0]
    assert all(np.all(g == 0) for g in m.grads.values())   # update zeroes them
