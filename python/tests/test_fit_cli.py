"""fit, evaluate and predict against the cflux tool on the same data: the same
checkpoint, the same figures."""
import json
import struct

import numpy as np
import pytest

import cflux
from conftest import SMALL, blobs, run_tool, write_csv

# the notes cflux train keeps of where its data came from; a fit on arrays has none
DATA_NOTES = {"info.data", "info.label", "info.columns"}


def read_st(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    head = json.loads(b[8:8 + n])
    return head.pop("__metadata__"), head, b[8 + n:]


@pytest.fixture()
def data(tmp_path):
    x, y = blobs(300, seed=1)
    xt, yt = blobs(90, seed=2)
    write_csv(tmp_path / "train.csv", x, y)
    write_csv(tmp_path / "test.csv", xt, yt)
    (tmp_path / "m.flux").write_text(SMALL)
    return tmp_path, x, y, xt, yt


RUNS = [
    dict(cli=[], py={}),   # the defaults: adam, cosine, batch 64, seed 0
    dict(cli=["--optim", "momentum", "--lr", "0.05", "--batch", "32", "--seed", "7", "--val", "0.2",
              "--schedule", "step:1:0.5"],
         py=dict(optim="momentum", lr=0.05, batch=32, seed=7, val=0.2, schedule="step:1:0.5")),
    dict(cli=["--normalize", "--wd", "0.01", "--optim", "adamw", "--clip", "1", "--seed", "3", "--label-smoothing",
              "0.1"],
         py=dict(normalize=True, wd=0.01, optim="adamw", clip=1.0, seed=3, label_smoothing=0.1)),
]


@pytest.mark.parametrize("run", RUNS, ids=["defaults", "momentum-val-step", "normalize-adamw-clip"])
def test_fit_equals_train(data, tool, run, monkeypatch):
    d, x, y, xt, yt = data
    monkeypatch.chdir(d)   # the model's file name goes into the checkpoint: the tool's
    run_tool(tool, "train", "m.flux", "--data", "csv:train.csv,test.csv", "--epochs", 3, "--save", "cli.ckpt",
             *run["cli"], cwd=d)
    # the same data spec: the same bytes, notes and all
    m = cflux.load("m.flux")
    m.fit("csv:train.csv,test.csv", epochs=3, save="spec.ckpt", verbose=0, **run["py"])
    assert (d / "spec.ckpt").read_bytes() == (d / "cli.ckpt").read_bytes()
    # the same numbers as arrays: the same tensors and settings, less the notes of a file
    m = cflux.load("m.flux")
    hist = m.fit(x, y, test=(xt, yt), epochs=3, verbose=0, **run["py"])
    m.save("arrays.ckpt")
    meta_cli, t_cli, v_cli = read_st(d / "cli.ckpt")
    meta_arr, t_arr, v_arr = read_st(d / "arrays.ckpt")
    assert (t_arr, v_arr) == (t_cli, v_cli)
    assert {k: v for k, v in meta_cli.items() if k not in DATA_NOTES} == meta_arr
    assert set(meta_cli) - set(meta_arr) == {"info.data", "info.label", "info.columns"}
    assert len(hist) == 3 and hist[-1]["epoch"] == 3 and hist[-1]["test_accuracy"] is not None


def test_resume_equals_one_run(data, tool):
    """Two epochs, then a resumed third: the checkpoint of three epochs at once."""
    d, x, y, xt, yt = data
    m = cflux.load(d / "m.flux")
    m.fit(x, y, epochs=3, verbose=0, save=d / "three.ckpt")
    m = cflux.load(d / "m.flux")
    m.fit(x, y, epochs=3, verbose=0, callbacks=lambda s: s["epoch"] == 2, save=d / "two.ckpt")
    m = cflux.load(d / "m.flux")
    hist = m.fit(x, y, epochs=3, verbose=0, resume=d / "two.ckpt")
    m.save(d / "resumed.ckpt")
    assert [h["epoch"] for h in hist] == [1, 2, 3]
    assert (d / "resumed.ckpt").read_bytes() == (d / "three.ckpt").read_bytes()


def test_evaluate_equals_eval(data, tool):
    d, x, y, xt, yt = data
    m = cflux.load(d / "m.flux")
    m.fit(x, y, epochs=2, verbose=0)
    m.save(d / "m.ckpt")
    cli = json.loads(run_tool(tool, "eval", "m.ckpt", "--data", "csv:train.csv,test.csv", "--json", "--top", 2, cwd=d))
    ours = m.evaluate(xt, yt, top=2)
    assert ours["samples"] == cli["samples"] == len(yt)
    for k in ("loss", "accuracy", "top_k_accuracy", "macro_precision", "macro_recall", "macro_f1"):
        assert ours[k] == pytest.approx(cli[k], rel=1e-5), k
    assert ours["confusion"].tolist() == cli["confusion"]
    assert [p["support"] for p in ours["per_class"]] == [p["support"] for p in cli["per_class"]]


def test_predict_equals_predict(data, tool):
    """Standardised inputs and a regression's targets in their own units, as the tool
    gives them."""
    d, x, y, xt, yt = data
    reg = x @ np.array([1.0, -2.0, 0.5, 3.0], np.float32) + 10
    write_csv(d / "reg.csv", x, reg)
    (d / "r.flux").write_text("model = Chain(Input(4), Affine(8), tanh, Affine(1))\n")
    m = cflux.load(d / "r.flux")
    m.fit(x, reg.astype(np.float32), epochs=3, normalize=True, verbose=0)
    m.save(d / "r.ckpt")
    np.savetxt(d / "in.csv", xt, delimiter=",", fmt="%.9g")
    cli = np.array(json.loads(run_tool(tool, "predict", "r.ckpt", "in.csv", "--json", cwd=d)), np.float32)
    ours = m.predict(xt)
    assert ours.shape == (len(xt), 1)
    np.testing.assert_allclose(ours, cli.reshape(-1, 1), rtol=1e-5)   # the tool prints 6 digits
    # a far cry from the standardised outputs: the targets are around 10
    assert abs(float(ours.mean()) - float(reg.mean())) < 5
    # and read back from the checkpoint, the same
    again = cflux.load_params(d / "r.ckpt").predict(xt)
    np.testing.assert_array_equal(again, ours)


def test_regression_history_has_mae_and_r2(data):
    """A regression's epochs carry the test set's MAE and R², in the targets' units: what
    evaluate gives for the same weights; a classifier's carry None."""
    d, x, y, xt, yt = data
    w = np.array([1.0, -2.0, 0.5, 3.0], np.float32)
    reg, regt = (x @ w + 10).astype(np.float32), (xt @ w + 10).astype(np.float32)
    m = cflux.loads("model = Chain(Input(4), Affine(8), tanh, Affine(1))\n")
    h = m.fit(x, reg, epochs=3, normalize=True, test=(xt, regt), verbose=0)
    r = m.evaluate(xt, regt)
    assert h[-1]["test_mae"] == pytest.approx(r["mae"], rel=1e-5)
    assert h[-1]["test_r2"] == pytest.approx(r["r2"], rel=1e-5, abs=1e-6)
    assert h[-1]["val_mae"] is None and h[-1]["val_r2"] is None
    c = cflux.load(d / "m.flux")
    hc = c.fit(x, y, epochs=1, test=(xt, yt), verbose=0)
    assert hc[-1]["test_mae"] is None and hc[-1]["test_r2"] is None


def test_predict_batches(data):
    """Any batch size, a short last batch: the same outputs (to rounding: the matrix
    product's kernels differ by its sizes); a non-contiguous input: the same bits."""
    d, x, y, xt, yt = data
    m = cflux.load(d / "m.flux", seed=4)
    whole = m.predict(x, batch=300)
    for b in (1, 7, 64, 1000):
        np.testing.assert_allclose(m.predict(x, batch=b), whole, rtol=1e-6, atol=1e-7)
    fortran = np.asfortranarray(x)
    np.testing.assert_array_equal(m.predict(fortran), whole)
    strided = np.repeat(x, 2, axis=0)[::2]
    assert not strided.flags.c_contiguous
    np.testing.assert_array_equal(m.predict(strided), whole)
    assert m.predict(x[:0]).shape == (0, 3)


def test_classes_as_train(data, tool, monkeypatch):
    """classes= names the classes as --classes FILE does: the same checkpoint."""
    d, x, y, xt, yt = data
    monkeypatch.chdir(d)
    (d / "names.txt").write_text("cat\ndog\nemu\n")
    run_tool(tool, "train", "m.flux", "--data", "csv:train.csv", "--epochs", 1, "--classes", "names.txt", "--save",
             "cli.ckpt", cwd=d)
    m = cflux.load("m.flux")
    m.fit("csv:train.csv", epochs=1, classes=["cat", "dog", "emu"], save="py.ckpt", verbose=0)
    assert (d / "py.ckpt").read_bytes() == (d / "cli.ckpt").read_bytes()
    assert m.evaluate(xt, yt)["classes"] == ["cat", "dog", "emu"]
    assert cflux.load_params("py.ckpt").evaluate(xt, yt)["classes"] == ["cat", "dog", "emu"]
