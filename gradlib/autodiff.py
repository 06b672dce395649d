r"""Values and autodiff gradients: a vector-Jacobian product, and derivative curves on a grid."""

from __future__ import annotations

from typing import Callable, Optional, Tuple

import numpy as np
import tensorflow as tf

from ._validate import callable_arg, float_tensor

__all__ = ["curves", "value_and_grad"]


def value_and_grad(fn: Callable[[tf.Tensor], tf.Tensor], x, upstream=None, *,
                   dtype=None) -> Tuple[np.ndarray, Optional[np.ndarray]]:
    r"""``fn(x)`` and the vector-Jacobian product of ``fn`` at ``x``, as NumPy arrays.

    .. math:: y = f(x), \qquad g = \frac{\partial}{\partial x} \sum_j u_j\, f(x)_j
              = J_f(x)^\top u

    computed with ``tf.GradientTape`` (``output_gradients=upstream``).  With
    ``upstream=None``, :math:`u = 1` and :math:`g` is the gradient of
    :math:`\sum_j f(x)_j`.  A non-uniform ``upstream`` is what reveals an op
    whose backward pass drops or misuses its upstream gradient.

    The dtype is kept: a float64 ``x`` is computed in float64 (so references
    can be compared at tight tolerances); ``dtype`` casts ``x`` first.

    Args:
        fn: a function of one tensor returning one floating tensor.
        x: a floating tensor or array (a ``tf.Variable`` is read as a tensor).
        upstream: ``None`` or an array with the shape of ``fn(x)``, cast to its dtype.
        dtype: ``None`` (keep the dtype of ``x``) or a floating dtype.

    Returns:
        ``(y, g)``: ``y`` with the shape of ``fn(x)``; ``g`` with the shape of
        ``x``, or ``None`` when no gradient reaches ``x`` (``tf.round``,
        ``tf.stop_gradient``): "no gradient" is never turned into zeros here.

    Raises:
        TypeError: ``fn`` not callable, ``x`` (or ``dtype``) not floating, or
            ``fn`` returning ``None`` or a non-floating tensor.
        ValueError: ``upstream`` has a different shape from ``fn(x)``.
    """
    callable_arg(fn, "fn")
    if dtype is None:
        xt = tf.convert_to_tensor(float_tensor(x, "x"))
    else:
        xt = _real_tensor(x, "x", _floating_dtype(dtype))
    y, grad = _vjp(fn, xt, upstream)
    return y.numpy(), None if grad is None else tf.convert_to_tensor(grad).numpy()


def _real_tensor(value, name: str, dtype: tf.DType) -> tf.Tensor:
    """``value`` (real numbers: floats or integers) as a tensor of ``dtype``, or a TypeError naming ``name``."""
    try:
        tensor = tf.convert_to_tensor(value)
    except (TypeError, ValueError) as err:
        raise TypeError(f"`{name}` must hold real numbers; got {type(value).__name__}: {err}") from None
    if not (tensor.dtype.is_floating or tensor.dtype.is_integer):
        raise TypeError(f"`{name}` must hold real numbers; got dtype {tensor.dtype.name}")
    return tf.cast(tensor, dtype)


def _floating_dtype(dtype) -> tf.DType:
    try:
        dtype = tf.as_dtype(dtype)
    except TypeError:
        raise TypeError(f"`dtype` must be a floating dtype such as tf.float32; got {dtype!r}") from None
    if not dtype.is_floating:
        raise TypeError(f"`dtype` must be a floating dtype; got {dtype.name}")
    return dtype


def _vjp(fn: Callable, xt: tf.Tensor, upstream=None):
    """``(y, g)`` as tensors: ``fn(xt)`` and the gradient of ``sum(upstream * fn(xt))`` (``None`` if unconnected)."""
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = fn(xt)
    if y is None:
        raise TypeError("`fn` returned None; it must return a tensor")
    y = tf.convert_to_tensor(y)
    if upstream is not None:
        upstream = _real_tensor(upstream, "upstream", y.dtype)
        if upstream.shape != y.shape:
            raise ValueError(f"`upstream` has shape {upstream.shape.as_list()} but fn(x) has shape "
                             f"{y.shape.as_list()}; they must match")
    if not y.dtype.is_floating:
        return y, None
    return y, tape.gradient(y, xt, output_gradients=upstream)


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
    dtype = _floating_dtype(dtype)
    points = np.asarray(x)
    if points.dtype.kind not in "iuf":
        raise TypeError(f"`x` must hold real numbers; got an array of dtype {points.dtype}")
    xt = tf.constant(points, dtype=dtype)
    y, grad = _vjp(fn, xt)
    if y.shape != xt.shape:
        raise ValueError(
            f"`fn` must return one value per point: x has shape {xt.shape.as_list()}, "
            f"fn(x) has shape {y.shape.as_list()}"
        )
    if grad is None:
        dydx = np.full(points.shape, np.nan if unconnected == "nan" else 0.0, dtype=dtype.as_numpy_dtype)
    else:
        dydx = tf.convert_to_tensor(grad).numpy()
    return y.numpy(), dydx
