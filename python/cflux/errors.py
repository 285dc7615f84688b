"""The exceptions cflux raises.

Every error the engine reports is a :class:`cflux.Error` whose message is cflux's own,
with the place in the model's source where the op was written ("in model at
m.flux:3:12") on the lines after the first. Bad arguments from Python (an array of the
wrong dtype or shape, a model already closed) raise Python's own ``TypeError`` and
``ValueError``; :class:`ShapeError` is both a ``cflux.Error`` and a ``ValueError``.
"""


class Error(Exception):
    """An error cflux reported: str(e) is its message, e.trace the lines that say where
    in the model it happened."""

    @property
    def message(self):
        """The first line: what went wrong."""
        return str(self).split("\n", 1)[0]

    @property
    def trace(self):
        """The lines after the first: where in the model's source (file:line:col)."""
        return [line.strip() for line in str(self).split("\n")[1:] if line.strip()]


class ModelError(Error):
    """The model's source could not be compiled (syntax, an unknown name, a bad argument
    to a layer), or a checkpoint does not fit it."""


class ShapeError(Error, ValueError):
    """Shapes that do not fit: between the ops of a model, or between data and the
    model's input or output."""


class DataError(Error):
    """Data that cannot be trained or scored on: a file that cannot be read, a label out
    of range, a number that is not finite."""
