"""cflux's errors as exceptions with the model's trace; bad arguments as TypeError and
ValueError, never a crash."""
import numpy as np
import pytest

import cflux
from conftest import SMALL, blobs


def test_model_errors_have_the_trace(tmp_path):
    (tmp_path / "img.flux").write_text("model = Chain(Input(1, 28, 28), Conv2D(1, 8, 3), relu,\n"
                                       "  Affine(10), softmax)\n")
    with pytest.raises(cflux.ShapeError) as e:
        cflux.load(tmp_path / "img.flux")
    assert e.value.message.startswith("an image (B, 8, 26, 26) reaches Affine: flatten first?")
    assert any(f"{tmp_path / 'img.flux'}:2:3" in t for t in e.value.trace)
    assert isinstance(e.value, ValueError) and isinstance(e.value, cflux.Error)

    with pytest.raises(cflux.ModelError) as e:
        cflux.loads("model = Chain(Input(4), Afine(3), softmax)\n", "typo.flux")
    assert "unknown name 'Afine'" in e.value.message and "Affine" in e.value.message
    assert e.value.trace == ["in model at typo.flux:1:25"]

    with pytest.raises(cflux.ModelError, match=r"typo.flux:1:1: error: expected a binding"):
        cflux.loads("f(x) = 1\n", "typo.flux")

    with pytest.raises(cflux.ModelError, match="cannot open"):
        cflux.load(tmp_path / "none.flux")


def test_data_errors():
    m = cflux.loads(SMALL)
    x, y = blobs(50)
    y[7] = 5
    with pytest.raises(cflux.DataError, match="label 5 of sample 7 is out of range for the model's 3 classes"):
        m.fit(x, y, epochs=1, verbose=0)
    x[3, 1] = np.nan
    y[7] = 1
    with pytest.raises(cflux.DataError, match="not a number|NaN|finite"):
        m.fit(x, y, epochs=1, verbose=0)
    with pytest.raises(cflux.DataError, match="unknown data spec"):
        m.fit("nothing.csv", epochs=1, verbose=0)
    with pytest.raises(cflux.DataError, match="cannot open"):
        m.fit("csv:/nonexistent/x.csv", epochs=1, verbose=0)


def test_checkpoint_errors(tmp_path):
    m = cflux.loads(SMALL)
    (tmp_path / "junk.ckpt").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json at all")
    with pytest.raises(cflux.Error):
        m.load_params(tmp_path / "junk.ckpt")
    with pytest.raises(cflux.Error):
        cflux.load_params(tmp_path / "junk.ckpt")
    other = cflux.loads("model = Chain(Input(4), Affine(7), softmax)\n")
    other.save(tmp_path / "other.st")
    with pytest.raises(cflux.Error, match="1.W"):
        m.load_params(tmp_path / "other.st")
    with pytest.raises(cflux.Error):
        m.save(tmp_path / "no" / "such" / "dir.ckpt")


X = np.zeros((3, 4), np.float32)
Y = np.zeros(3, np.int64)

BAD = [
    # (call, exception, message)
    (lambda m: m.predict(X.astype(np.float64)), TypeError, "float64; cflux computes in float32"),
    (lambda m: m.predict(X.astype(np.uint8)), TypeError, r"astype\(np.float32\) / 255 for pixels"),
    (lambda m: m.predict(X.astype(np.int32)), TypeError, "float32 inputs"),
    (lambda m: m.predict(X.astype(np.complex64)), TypeError, "complex64"),
    (lambda m: m.predict(X.astype(object)), TypeError, "object"),
    (lambda m: m.predict(X.tolist()), TypeError, "must be a NumPy array"),
    (lambda m: m.predict(None), TypeError, "must be a NumPy array"),
    (lambda m: m.predict(np.zeros((3, 5), np.float32)), cflux.ShapeError, r"\(3, 5\), but the model's input 'x' takes \(B, 4\)"),
    (lambda m: m.predict(np.zeros(4, np.float32)), cflux.ShapeError, r"one sample: x\[None\]"),
    (lambda m: m.predict(np.float32(1)), TypeError, "must be a NumPy array"),
    (lambda m: m.predict(X, batch=0), ValueError, "batch is 1 to"),
    (lambda m: m.predict([X, X]), TypeError, "must be a NumPy array"),
    (lambda m: m.fit(X, None), TypeError, "y is missing"),
    (lambda m: m.fit(X, Y[:2]), cflux.ShapeError, "3 samples and y 2"),
    (lambda m: m.fit(X, Y.astype(np.float64)), TypeError, "float64"),
    (lambda m: m.fit(X, Y.astype(str)), TypeError, "integer class indices"),
    (lambda m: m.fit(X, np.zeros((3, 3), np.int64)), cflux.ShapeError, "class index per sample"),
    (lambda m: m.fit(X, Y, epochs=0), ValueError, "epochs is from 1"),
    (lambda m: m.fit(X, Y, epochs=2.5), TypeError, "epochs is a whole number"),
    (lambda m: m.fit(X, Y, lr=-1), ValueError, "lr is from"),
    (lambda m: m.fit(X, Y, lr="big"), TypeError, "lr is a number"),
    (lambda m: m.fit(X, Y, optim="rmsprop"), ValueError, "unknown optimizer 'rmsprop'"),
    (lambda m: m.fit(X, Y, schedule="wavy"), ValueError, "wavy"),
    (lambda m: m.fit(X, Y, seed=-1), ValueError, "seed is from 0"),
    (lambda m: m.fit(X, Y, loss="hinge"), ValueError, "'xent' or 'mse'"),
    (lambda m: m.fit(X, Y, test=X), TypeError, "test is a tuple"),
    (lambda m: m.fit(X, Y, callbacks=3), TypeError, "callbacks is a callable"),
    (lambda m: m.fit(X, Y, label_col=0), ValueError, "label_col and features are for CSV"),
    (lambda m: m.fit("csv:a.csv", Y), TypeError, "give no y"),
    (lambda m: m.fit(X, Y, augment="flip"), ValueError, "image"),
    (lambda m: m.fit(X, Y, nonsense=1), TypeError, "nonsense"),
    (lambda m: m.evaluate(X), TypeError, "y is missing"),
    (lambda m: m.bind(0), ValueError, "batch is 1 to"),
    (lambda m: m.bind(3).forward(np.zeros((2, 4), np.float32)), cflux.ShapeError, "bound for batches of 3"),
    (lambda m: m.bind(3).forward(), TypeError, "forward takes 1 array"),
    (lambda m: m.bind(3).backward(), ValueError, "without train=True"),
    (lambda m: m.bind(3, train=True).backward(X, X), TypeError, "at most 1 head gradient"),
    (lambda m: m.update(lr=0.1, optim="nope"), ValueError, "unknown optimizer"),
    (lambda m: m.add_loss("l1"), ValueError, "'xent' or 'mse'"),
    (lambda m: m.summary(depth=0), ValueError, "depth"),
    (lambda m: m.set_seed(-3), OverflowError, "negative"),
]


@pytest.mark.parametrize("call,exc,msg", BAD, ids=[str(i) for i in range(len(BAD))])
def test_bad_arguments(call, exc, msg):
    m = cflux.loads(SMALL)
    with pytest.raises(exc, match=msg):
        call(m)
    # and the model still works
    assert m.predict(X).shape == (3, 3)


def test_closed_model():
    m = cflux.loads(SMALL)
    e = m.bind(3)
    with m:
        pass
    assert m.closed
    for call in (lambda: m.predict(X), lambda: m.fit(X, Y), lambda: m.params, lambda: m.summary(),
                 lambda: m.bind(2), lambda: m.save("x.ckpt"), lambda: m.evaluate(X, Y), lambda: m.update()):
        with pytest.raises(ValueError, match="the model is closed"):
            call()
    m.close()   # twice is fine
    assert "closed" in repr(m)
    assert e.forward(X).shape == (3, 3)   # an executor keeps what it needs


def test_callback_errors_propagate():
    m = cflux.loads(SMALL)
    x, y = blobs(64)

    def boom(stats):
        raise RuntimeError(f"stop at {stats['epoch']}")

    with pytest.raises(RuntimeError, match="stop at 1"):
        m.fit(x, y, epochs=3, callbacks=[boom], verbose=0)

    def reenter(stats):
        m.predict(x)

    with pytest.raises(RuntimeError, match="a callback of fit cannot use the model"):
        m.fit(x, y, epochs=2, callbacks=reenter, verbose=0)
    assert m.predict(x).shape == (64, 3)


def test_callback_without_truth():
    """A callback whose result has no truth value (an array) raises as a callback that
    raised would, not a SystemError."""
    m = cflux.loads(SMALL)
    x, y = blobs(64)
    with pytest.raises(ValueError, match="truth value"):
        m.fit(x, y, epochs=2, verbose=0, callbacks=[lambda s: np.zeros(2), lambda s: None])
    assert m.predict(x).shape == (64, 3)


def test_word_labels_against_the_model(tmp_path):
    (tmp_path / "w.csv").write_text("label,a,b,c,d\n" + "".join(f"{'cat' if i % 2 else 'dog'},{i},1,2,3\n"
                                                               for i in range(20)))
    m = cflux.loads(SMALL)
    with pytest.raises(cflux.DataError, match="the labels are 2 classes, but the model's output gives 3"):
        m.fit(f"csv:{tmp_path / 'w.csv'}", epochs=1, verbose=0)
    m = cflux.loads("model = Chain(Input(4), Affine(2), softmax)\n")
    m.fit(f"csv:{tmp_path / 'w.csv'}", epochs=1, verbose=0)
    assert m.evaluate(np.zeros((2, 4), np.float32), np.array([0, 1]))["classes"] == ["cat", "dog"]
