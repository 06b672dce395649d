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
        TypeError: if ``forward``/``backward`` are not callable, or ``x`` is
            not floating (integer tensors get no gradient; complex ones are
            not supported here).
        ValueError: if ``f(x)`` and ``g(x)`` have different static shapes.
    """
    callable_arg(forward, "forward")
    if backward is not None:
        callable_arg(backward, "backward")

    def op(x):
        x = float_tensor(x, "x")
        surrogate = tf.convert_to_tensor(x if backward is None else backward(x))
        value = tf.convert_to_tensor(forward(x))
        same_shape(value, surrogate, "forward(x)", "backward(x)" if backward else "x")
        # f(x) - 0 with a zero that carries g's gradient: exact, signed zeros included.
        return tf.stop_gradient(value) - (tf.stop_gradient(surrogate) - surrogate)

    f_name = getattr(forward, "__name__", "f")
    g_name = "identity" if backward is None else getattr(backward, "__name__", "g")
    op.__name__ = f"straight_through_{f_name}_{g_name}".replace("<", "").replace(">", "")
    op.__doc__ = f"Forward {f_name}(x), gradient of {g_name}(x)."
    return op
