r"""The stop_gradient trick: forward one function, backward another.

The identity behind it is

.. math::

    y = \operatorname{sg}\bigl(f(x)\bigr) - \bigl(\operatorname{sg}(g(x)) - g(x)\bigr),

where :math:`\operatorname{sg}` (``tf.stop_gradient``) is the identity in the
forward pass and has zero derivative.  Going forward the bracket is
:math:`t - t`, exactly :math:`+0` for every finite :math:`t`, so
:math:`y = f(x)` bit for bit; going backward only :math:`g` is
differentiated, so :math:`\partial y/\partial x = g'(x)`.

The textbook arrangement :math:`g + \operatorname{sg}(f - g)` has the same
gradient but rounds twice (:math:`f - g`, then the sum), and
:math:`\operatorname{sg}(f) + (g - \operatorname{sg}(g))` turns
:math:`f = -0` into :math:`+0`; subtracting the zero keeps the sign of zero.
"""

from __future__ import annotations

from typing import Callable, Optional

import tensorflow as tf

from ._validate import callable_arg, float_tensor, same_shape

__all__ = ["straight_through"]


def straight_through(
    forward: Callable[[tf.Tensor], tf.Tensor],
    backward: Optional[Callable[[tf.Tensor], tf.Tensor]] = None,
) -> Callable[[tf.Tensor], tf.Tensor]:
    r"""Return ``op`` with the value of ``forward(x)`` and the gradient of ``backward(x)``.

    Forward:

    .. math:: \mathrm{op}(x) = \operatorname{sg}\bigl(f(x)\bigr)
              - \bigl(\operatorname{sg}(g(x)) - g(x)\bigr) = f(x)

    bit for bit wherever :math:`g(x)` is finite (the bracket is exactly
    :math:`+0` there; where :math:`g(x)` is infinite or NaN the value is NaN).
    The one exception is TensorFlow's own: its CPU kernels flush subnormal
    numbers to zero, so a subnormal :math:`f(x)` comes back as a zero of the
    same sign.

    Backward:

    .. math:: \frac{\partial\,\mathrm{op}}{\partial x} = g'(x),
              \qquad g = \texttt{backward}\ (\text{identity if None, so } g' = 1)

    Reference: the trick is due to Sergey Ioffe (as quoted on Stack Overflow,
    "How can I define only the gradient for a TensorFlow subgraph?"); the
    straight-through estimator it implements when ``backward`` is the identity
    is from Y. Bengio, N. Léonard, A. Courville, *Estimating or Propagating
    Gradients Through Stochastic Neurons for Conditional Computation*,
    arXiv:1308.3432, 2013.

    Args:
        forward: ``f``, the function whose value the op returns.
        backward: ``g``, the function whose gradient the op uses.  ``None``
            means the identity (the straight-through estimator).

    Raises:
        TypeError: if ``forward``/``backward`` are not callable; if ``x`` is
            not floating (integer tensors get no gradient; complex ones are
            not supported here); if ``f(x)`` or ``g(x)`` is ``None`` or not
            convertible to a tensor, or their dtypes differ (``g(x)`` must
            be floating).
        ValueError: if ``f(x)`` and ``g(x)`` have different static shapes.
    """
    callable_arg(forward, "forward")
    if backward is not None:
        callable_arg(backward, "backward")
    what_g = "x" if backward is None else "backward(x)"

    def op(x):
        x = _real_float(x)
        surrogate = _result(x if backward is None else backward(x), what_g)
        value = _result(forward(x), "forward(x)")
        if not surrogate.dtype.is_floating:
            raise TypeError(f"{what_g} has dtype {surrogate.dtype.name}; it must be floating, since its "
                            f"gradient is the op's gradient")
        if value.dtype != surrogate.dtype:
            raise TypeError(f"forward(x) has dtype {value.dtype.name} but {what_g} has dtype "
                            f"{surrogate.dtype.name}; they must match: cast one, e.g. "
                            f"tf.cast(forward(x), tf.{surrogate.dtype.name})")
        same_shape(value, surrogate, "forward(x)", what_g)
        # f(x) - 0 with a zero that carries g's gradient: exact, signed zeros included.
        return tf.stop_gradient(value) - (tf.stop_gradient(surrogate) - surrogate)

    f_name = getattr(forward, "__name__", "f")
    g_name = "identity" if backward is None else getattr(backward, "__name__", "g")
    op.__name__ = f"straight_through_{f_name}_{g_name}".replace("<", "").replace(">", "")
    op.__doc__ = f"Forward {f_name}(x), gradient of {g_name}(x)."
    return op


def _real_float(x) -> tf.Tensor:
    """``x`` as a floating tensor; a complex ``x`` is refused with its own reason."""
    try:
        return float_tensor(x, "x")
    except TypeError:
        try:
            dtype = tf.as_dtype(getattr(x, "dtype", None) or tf.convert_to_tensor(x).dtype)
        except (TypeError, ValueError):  # not convertible at all: float_tensor's message stands
            dtype = None
        if dtype is not None and dtype.is_complex:
            raise TypeError(f"`x` has dtype {dtype.name}, which straight_through does not support: it needs a "
                            f"real floating dtype (float16/bfloat16/float32/float64)") from None
        raise


def _result(result, what: str) -> tf.Tensor:
    """What ``forward`` or ``backward`` returned, as a tensor; None or a non-tensor raises a TypeError naming it."""
    if result is None:
        raise TypeError(f"{what} returned None; it must return a tensor of x's shape")
    try:
        return tf.convert_to_tensor(result)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{what} returned {type(result).__name__}, which is not a tensor: {err}") from None
