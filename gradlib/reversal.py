r"""The gradient reversal layer of domain-adversarial training (DANN)."""

from __future__ import annotations

import numbers

import keras
import numpy as np
import tensorflow as tf

from ._validate import float_tensor, real_number

__all__ = ["GradientReversal", "gradient_reversal"]


@tf.custom_gradient
def _reverse(x, lam):
    return tf.identity(x), lambda dy: (-lam * dy, None)


def gradient_reversal(x, lam=1.0):
    r"""Identity going forward; multiply the gradient by :math:`-\lambda` going backward.

    Forward: :math:`y = x`.

    Backward: :math:`\partial L/\partial x := -\lambda\, \partial L/\partial y`.

    ``lam`` may be a Python number, a tensor or a ``tf.Variable``: with a
    variable, a schedule that assigns new values changes :math:`\lambda`
    inside a ``tf.function`` without retracing it (a new Python number would
    retrace).  ``lam`` itself receives no gradient.  A Python number is taken
    in the dtype of ``x``; a tensor or a variable is cast to it.

    Reference: Y. Ganin, E. Ustinova, H. Ajakan, P. Germain, H. Larochelle,
    F. Laviolette, M. Marchand, V. Lempitsky, *Domain-Adversarial Training of
    Neural Networks*, JMLR 17(59):1–35, 2016, §4.2 and eq. (13).

    Raises:
        TypeError: ``x`` is not floating, or ``lam`` is not a real number/tensor.
        ValueError: ``lam`` is a Python (or NumPy) number, or a 0-d NumPy
            array, that is NaN or infinite, or becomes infinite in the dtype
            of ``x`` (``1e39`` for float32); a tensor or a variable is not
            inspected (its value may only be known when the graph runs); or
            ``lam`` is not a scalar.
    """
    x = float_tensor(x, "x")
    if isinstance(lam, (bool, np.bool_, numbers.Real)):  # NaN, ±inf: every gradient would be NaN or infinite
        real_number(lam, "lam", type_error=True)
    try:
        # Reads a Variable outside the custom op.  A Python number takes x's dtype
        # directly: through float32 first, lam=0.1 would be off for float64 x.
        with np.errstate(over="ignore", invalid="ignore"):  # an overflow is reported below
            lam_t = tf.convert_to_tensor(lam, dtype_hint=x.dtype)
    except (TypeError, ValueError) as err:
        raise TypeError(f"`lam` must be a real number or a floating tensor; got {type(lam).__name__}: {err}") from None
    if not (lam_t.dtype.is_floating or lam_t.dtype.is_integer):
        raise TypeError(f"`lam` must be a real number or a floating tensor; got dtype {lam_t.dtype.name}")
    with np.errstate(over="ignore", invalid="ignore"):
        lam_t = tf.cast(lam_t, x.dtype)
    if not isinstance(lam, (tf.Tensor, tf.Variable)):
        # A NumPy 0-d array escapes the numbers.Real test above, and a finite number can
        # overflow x's dtype (1e39 in float32 is inf): check the value that will be used.
        value = tf.get_static_value(lam_t)
        if value is not None and np.ndim(value) == 0 and not np.isfinite(value):
            raise ValueError(f"`lam` must be a finite number in {x.dtype.name}; got {lam!r}, which is "
                             f"{value} in {x.dtype.name}: every gradient would be NaN or infinite")
    if lam_t.shape.rank not in (None, 0):
        raise ValueError(f"`lam` must be a scalar; got shape {lam_t.shape.as_list()}")
    return _reverse(x, lam_t)


@keras.saving.register_keras_serializable(package="gradlib")
class GradientReversal(keras.layers.Layer):
    r"""Keras layer for :func:`gradient_reversal`.

    :math:`\lambda` is a non-trainable scalar weight (``layer.lam``); a
    schedule sets it with ``layer.lam.assign(value)``, which a compiled
    ``train_step`` sees without retracing.

    ``get_config()`` records the *initial* :math:`\lambda` (the constructor
    argument), as Keras configs do; the current value is a weight, saved and
    restored with the other weights (``model.save``/``load_model``,
    ``get_weights``).

    Raises:
        TypeError: ``lam`` is not a real number (when the layer is made), or
            the layer's ``inputs`` are not floating (when it is called).
        ValueError: ``lam`` is NaN or infinite, or overflows the layer's
            variable dtype (when the layer is made).
    """

    def __init__(self, lam: float = 1.0, **kwargs):
        real_number(lam, "lam", type_error=True)
        super().__init__(**kwargs)
        with np.errstate(over="ignore"):
            stored = np.asarray(lam, dtype=self.variable_dtype)
        if not np.isfinite(stored):  # 1e39 is finite, but inf in a float32 weight
            raise ValueError(f"`lam` must be a finite number in {self.variable_dtype}; got {lam!r}, "
                             f"which is {stored} in {self.variable_dtype}")
        self._initial_lam = float(lam)
        self.lam = self.add_weight(name="lam", shape=(), trainable=False,
                                   initializer=keras.initializers.Constant(self._initial_lam))

    def call(self, inputs):
        return gradient_reversal(float_tensor(inputs, "inputs"), tf.convert_to_tensor(self.lam))

    def get_config(self):
        return {**super().get_config(), "lam": self._initial_lam}
