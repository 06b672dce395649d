r"""Forward values and autodiff derivatives of a function on a grid."""

from __future__ import annotations

from typing import Callable, Tuple

import numpy as np
import tensorflow as tf

from ._validate import callable_arg

__all__ = ["curves"]


UNCONNECTED = ("nan", "zero")


def curves(fn: Callable[[tf.Tensor], tf.Tensor], x, *, dtype=tf.float32,
           unconnected: str = "nan") -> Tuple[np.ndarray, np.ndarray]:
    r"""Evaluate ``fn`` and its derivative on the points ``x``.

    Forward and backward, for the points :math:`x_i`:

    .. math::

        y_i = f(x_i), \qquad
        \frac{dy}{dx}\Big|_i = \frac{\partial}{\partial x_i} \sum_j f(x)_j

    computed with ``tf.GradientTape``.  For an elementwise ``fn`` the sum
    gives exactly :math:`f'(x_i)`, which is what a backward curve plots.

    When TensorFlow returns ``None`` (no differentiable path from ``x`` to
    ``fn(x)``: ``tf.round``, ``tf.stop_gradient``, a detour through NumPy),
    the derivative is NaN everywhere by default, so that "no gradient" never
    looks like "a gradient of zero" (a plot shows no backward curve at all).
    ``unconnected="zero"`` returns zeros instead, as
    ``tf.UnconnectedGradients.ZERO`` would.

    Reference: reverse-mode automatic differentiation, as in A. G. Baydin et
    al., *Automatic Differentiation in Machine Learning: a Survey*, JMLR 18, 2018.

    Args:
        fn: a function of one tensor returning a tensor of the same shape.
        x: the points, any array-like of real numbers (converted to ``dtype``).
        dtype: a floating TensorFlow dtype for the computation.
        unconnected: what a ``None`` gradient becomes: ``"nan"`` (the
            default) or ``"zero"``.

    Returns:
        ``(y, dydx)``: two NumPy arrays with the shape of ``x``.

    Raises:
        TypeError: ``fn`` not callable, ``x`` not real numbers, ``dtype`` not
            floating, or ``fn`` returning ``None``.
        ValueError: ``fn(x)`` has a different shape from ``x``, or
            ``unconnected`` is not ``"nan"`` or ``"zero"``.
    """
    callable_arg(fn, "fn")
    if not isinstance(unconnected, str) or unconnected not in UNCONNECTED:
        raise ValueError(f"`unconnected` must be one of {UNCONNECTED}; got {unconnected!r}")
    try:
        dtype = tf.as_dtype(dtype)
    except TypeError:
        raise TypeError(f"`dtype` must be a floating dtype such as tf.float32; got {dtype!r}") from None
    if not dtype.is_floating:
        raise TypeError(f"`dtype` must be a floating dtype; got {dtype.name}")
    points = np.asarray(x)
    if points.dtype.kind not in "iuf":
        raise TypeError(f"`x` must hold real numbers; got an array of dtype {points.dtype}")
    xt = tf.constant(points, dtype=dtype)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = fn(xt)
    if y is None:
        raise TypeError("`fn` returned None; it must return a tensor")
    y = tf.convert_to_tensor(y)
    if y.shape != xt.shape:
        raise ValueError(
            f"`fn` must return one value per point: x has shape {xt.shape.as_list()}, "
            f"fn(x) has shape {y.shape.as_list()}"
        )
    grad = tape.gradient(y, xt) if y.dtype.is_floating else None
    if grad is None:
        dydx = np.full(points.shape, np.nan if unconnected == "nan" else 0.0, dtype=dtype.as_numpy_dtype)
    else:
        dydx = tf.convert_to_tensor(grad).numpy()
    return y.numpy(), dydx
