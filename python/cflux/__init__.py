"""cflux from Python: compile a model written in cflux's notation, train it on NumPy
arrays, score it and predict with it, on cflux's own CPU engine.

    import numpy as np, cflux
    m = cflux.load("models/mlp.flux")
    history = m.fit(x_train, y_train, epochs=10, seed=0, test=(x_test, y_test))
    p = m.predict(x_test)              # (n, 10) probabilities
    m.save("mlp.ckpt")                 # what `cflux train --save` writes
    m2 = cflux.load_params("mlp.ckpt") # the model and its weights, from the checkpoint

Arrays are float32 (class labels, and the inputs of an embedding, may be integers),
samples along the first axis; they are read in place when they are C-contiguous float32
and copied once otherwise. cflux computes with the GIL released, so other Python
threads run meanwhile; Ctrl-C stops a fit after its step and raises KeyboardInterrupt,
the model keeping the weights of the steps done. Errors are cflux.Error (and its
subclasses ModelError, ShapeError, DataError) with cflux's message and the place in the
model's source; bad arguments raise TypeError or ValueError. The guide is
docs/python.md in cflux's repository.
"""
import os

from .errors import DataError, Error, ModelError, ShapeError
from ._cflux import Executor, Model, cpu, set_threads, threads, version
from . import _cflux

__all__ = ["load", "loads", "load_params", "Model", "Executor", "Error", "ModelError", "ShapeError", "DataError",
           "version", "set_threads", "threads", "cpu"]
__version__ = version()


def _is_weights_file(path):
    """Is path a safetensors file (a checkpoint or parameter file) rather than a model's source?"""
    try:
        with open(path, "rb") as f:
            head = f.read(9)
    except OSError:
        return False
    if len(head) != 9 or head[8:9] != b"{":
        return False
    n = int.from_bytes(head[:8], "little")
    return 2 <= n < 1 << 32


def load(path, *, params=None, seed=0):
    """Compile the model in a .flux file, or read a checkpoint (which holds its model's
    source) with its weights. params: a checkpoint or parameter file whose weights to
    load into the compiled model. seed: the draw of the initial weights (cflux train
    --seed), made when the weights are first needed."""
    path = os.fspath(path)
    if _is_weights_file(path):
        if params is not None:
            raise ValueError(f"{path} is a checkpoint (or parameter file) and holds the model: give it alone, "
                             f"without params={params!r}")
        return _cflux.load_trained(path)
    m = _cflux.load(path, seed=seed)
    if params is not None:
        m.load_params(params)
    return m


def loads(source, filename="<string>", *, seed=0):
    """Compile a model from its source text; errors name `filename` and its lines."""
    if not isinstance(source, str):
        raise TypeError(f"loads: the source is a str, not {type(source).__name__}")
    return _cflux.loads(source, filename, seed=seed)


def load_params(path):
    """The model saved in a checkpoint or parameter file (cflux train --save, Model.save),
    with its weights, input standardisation, class names and notes."""
    return _cflux.load_trained(os.fspath(path))
