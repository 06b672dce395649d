r"""Beyond the first derivative: Hessian-vector products and implicit gradients.

* :func:`hvp`: :math:`H(x)\,v` for a scalar function, without forming the Hessian.
* :func:`fixed_point`: the solution :math:`z^\star = f(z^\star, \theta)` of a
  fixed-point iteration, differentiated by the implicit function theorem
  instead of through the iterations.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np
import tensorflow as tf
from tensorflow.python.eager import record  # stop_recording: no public equivalent in TF 2.19-2.21

from ._validate import callable_arg, float_tensor, integer, real_number

__all__ = ["FixedPointError", "fixed_point", "hvp"]

_HVP_MODES = ("forward-over-reverse", "reverse-over-reverse")
_UNCONNECTED = ("raise", "zero")


def _same_shape_and_dtype(x: Any, v: Any, x_name: str, v_name: str) -> tf.Tensor:
    if not isinstance(v, (tf.Tensor, tf.Variable)):
        try:
            v = tf.convert_to_tensor(v, dtype_hint=x.dtype)
        except (TypeError, ValueError) as err:
            raise TypeError(f"`{v_name}` must be a floating tensor; got {type(v).__name__}: {err}") from None
    v = float_tensor(v, v_name)
    if v.dtype != x.dtype:
        raise TypeError(f"`{v_name}` has dtype {v.dtype.name} but `{x_name}` has dtype {x.dtype.name}; they must match")
    if not x.shape.is_compatible_with(v.shape):
        raise ValueError(f"`{v_name}` has shape {v.shape.as_list()} but `{x_name}` has shape {x.shape.as_list()}; "
                         "they must match")
    return tf.convert_to_tensor(v)


def _scalar(y: Any, what: str) -> tf.Tensor:
    if not isinstance(y, (tf.Tensor, tf.Variable)):
        y = tf.convert_to_tensor(y)
    if y.shape.rank != 0:
        raise ValueError(f"{what} must return a scalar (a 0-d tensor); it returned shape {y.shape.as_list()}. "
                         "Reduce it first, e.g. with tf.reduce_sum.")
    if not y.dtype.is_floating:
        raise TypeError(f"{what} must return a floating scalar; it returned dtype {y.dtype.name}")
    return y


def _unconnected(result: Optional[tf.Tensor], like: tf.Tensor, unconnected: str, name: str) -> tf.Tensor:
    if result is not None:
        return result
    if unconnected == "zero":
        return tf.zeros_like(like)
    raise ValueError(
        f"H·v is not connected to `{name}`: the gradient of `f` does not depend on `{name}` through operations "
        "TensorFlow can differentiate. Either `f` is linear in it (then H·v = 0: pass unconnected='zero'), or "
        "every path of the gradient goes through a backward pass that left TensorFlow (a grad_fn using NumPy "
        "or .numpy(), a tf.py_function) or through an operation whose gradient has no gradient. Where other "
        "paths remain, such a backward pass loses only its share of H·v, with no error.")


def hvp(f: Callable, x: Any, v: Any, *, mode: str = "reverse-over-reverse", unconnected: str = "raise"):
    r"""The Hessian-vector product :math:`H(x)\,v` of a scalar function.

    .. math::
        H(x)\,v = \nabla^2 f(x)\, v = \frac{d}{d\varepsilon}\,\nabla f(x + \varepsilon v)\Big|_{\varepsilon=0},

    computed without forming :math:`H`, in a small multiple of the cost of one gradient:

    * ``mode="reverse-over-reverse"`` (default): the gradient of
      :math:`\nabla f(x)\cdot v` with a second tape (backward over backward,
      Pearlmutter's trick).  A second tape calls the ``grad_fn`` of every
      ``tf.custom_gradient`` it meets, so a custom second derivative (a
      nested custom gradient inside a ``grad_fn``) is used.
    * ``mode="forward-over-reverse"``: a forward-mode derivative
      (``tf.autodiff.ForwardAccumulator``, tangent ``v``) of the reverse-mode
      gradient.  Forward mode differentiates the operations that ran and
      falls back on a ``grad_fn`` only where they give the output no tangent
      (a forward pass in NumPy, ``tf.stop_gradient``, ``Sign``): a custom
      second derivative whose function's own operations are differentiable
      is ignored.

    Without custom second derivatives both are exact up to rounding.

    Reference: B. A. Pearlmutter, *Fast Exact Multiplication by the Hessian*,
    Neural Computation 6(1):147-160, 1994.

    Args:
        f: a function of ``x`` returning a floating scalar.  Custom gradients
            inside it must have a backward pass written in TensorFlow
            operations, or their share of the second derivative is lost.
        x: the point: a floating tensor or ``tf.Variable`` of any shape
            (float16/bfloat16/float32/float64), or a list or tuple of them
            (a model's weights: Keras 3 variables are read through their
            ``tf.Variable``); ``f`` receives the list of tensors or
            ``tf.Variable`` objects.
        v: the direction, with ``x``'s structure, shapes and dtypes (a
            Python number or list takes ``x``'s dtype).
        mode: ``"reverse-over-reverse"`` or ``"forward-over-reverse"``.
        unconnected: what to do when the gradient of ``f`` does not depend on
            (a part of) ``x`` through operations TensorFlow differentiates:
            ``"raise"`` (default: a ``ValueError`` naming the causes: a
            linear ``f``, a backward pass outside TensorFlow, an operation
            whose gradient has no gradient) or ``"zero"`` (zeros, right for a
            linear ``f``).

    Returns:
        :math:`H(x)\,v`: a tensor shaped like ``x`` in ``x``'s dtype, or a
        list of them when ``x`` is a list or tuple.

    Raises:
        TypeError: ``f`` is not callable; ``x`` or ``v`` is not floating; their
            dtypes differ; ``f`` returns a non-floating value.
        ValueError: the shapes (or the lengths of the lists) of ``x`` and
            ``v`` differ; ``f(x)`` is not a scalar; ``mode`` or
            ``unconnected`` is unknown; the gradient of ``f`` does not reach
            ``x`` at all, or ``H·v`` is not connected and
            ``unconnected="raise"``.
    """
    callable_arg(f, "f")
    if mode not in _HVP_MODES:
        raise ValueError(f"`mode` must be one of {_HVP_MODES}; got {mode!r}")
    if unconnected not in _UNCONNECTED:
        raise ValueError(f"`unconnected` must be one of {_UNCONNECTED}; got {unconnected!r}")
    # a list of tensors or variables (a model's weights) is a structure; a list of numbers is one tensor
    structured = isinstance(x, (list, tuple)) and len(x) > 0 and all(
        isinstance(_tf_value(e), (tf.Tensor, tf.Variable, np.ndarray)) for e in x)
    if structured:
        if not isinstance(v, (list, tuple)) or len(v) != len(x):
            raise ValueError(f"`x` is a list of {len(x)} tensors, so `v` must be a list of {len(x)} tensors of "
                             f"the same shapes; got {type(v).__name__}"
                             + (f" of length {len(v)}" if isinstance(v, (list, tuple)) else ""))
        names = [f"x[{i}]" for i in range(len(x))]
        xs = [float_tensor(_tf_value(xi), name) for xi, name in zip(x, names)]
        vs = [_same_shape_and_dtype(xi, vi, name, f"v[{i}]") for i, (xi, vi, name) in enumerate(zip(xs, v, names))]
        argument = type(x)(xs)
    else:
        names = ["x"]
        xs = [float_tensor(_tf_value(x), "x")]
        vs = [_same_shape_and_dtype(xs[0], v, "x", "v")]
        argument = xs[0]
    if mode == "forward-over-reverse":
        with tf.autodiff.ForwardAccumulator(xs, vs) as acc:
            gradients = _gradients(f, argument, xs, names)
        products = acc.jvp(gradients)
    else:
        with tf.GradientTape() as outer:
            outer.watch(xs)
            gradients = _gradients(f, argument, xs, names)
            directional = tf.add_n([tf.reduce_sum(g * vi) for g, vi in zip(gradients, vs)])
        products = outer.gradient(directional, xs)
    products = [_unconnected(p, xi, unconnected, name) for p, xi, name in zip(products, xs, names)]
    return products if structured else products[0]


def _tf_value(x: Any) -> Any:
    """A Keras 3 variable's ``tf.Variable`` (what a tape watches and a model reads); anything else unchanged."""
    value = getattr(x, "value", None) if not isinstance(x, (tf.Tensor, tf.Variable, np.ndarray)) else None
    return value if isinstance(value, tf.Variable) else x


def _gradients(f: Callable, argument: Any, xs: list, names: list) -> list:
    with tf.GradientTape() as inner:
        inner.watch(xs)
        y = _scalar(f(argument), "`f`")
    gradients = inner.gradient(y, xs)
    for gradient, name in zip(gradients, names):
        if gradient is None:
            raise ValueError(f"the gradient of `f` with respect to `{name}` is None: `f` does not depend on it, or "
                             "only through an operation without a gradient (a cast to an integer, tf.round, NumPy)")
    return gradients


class FixedPointError(tf.errors.InvalidArgumentError):
    """:func:`fixed_point`'s iteration (forward, or the adjoint one of its
    gradient) did not converge within ``max_iter`` steps, or produced NaN or
    infinity.  A ``tf.errors.InvalidArgumentError``, the error the same check
    raises inside a ``tf.function``, so one ``except`` catches both."""

    def __init__(self, message: str):
        super().__init__(None, None, message)


def _iterate(step: Callable, start: tf.Tensor, tol: float, atol: float, max_iter: int, what: str) -> tf.Tensor:
    """Run ``z <- step(z)`` until ``max|z_new - z| <= tol * max|z_new| + atol``; raise if it never does."""
    tol_t, atol_t = tf.constant(tol, start.dtype), tf.constant(atol, start.dtype)

    def settled(delta, scale):
        return delta <= tol_t * scale + atol_t

    def keep_going(i, z, delta, scale):
        return tf.logical_and(i < max_iter, tf.logical_and(tf.logical_not(settled(delta, scale)),
                                                           tf.math.is_finite(delta)))

    def body(i, z, delta, scale):
        new = step(z)
        return i + 1, new, tf.reduce_max(tf.abs(new - z)), tf.reduce_max(tf.abs(new))

    never = tf.constant(start.dtype.max, start.dtype)  # finite: a non-finite change stops the loop
    zero = tf.zeros([], start.dtype)
    iterations, z, delta, scale = tf.while_loop(keep_going, body, (tf.constant(0), start, never, zero),
                                                maximum_iterations=max_iter)
    relative = tf.math.divide_no_nan(delta, scale)
    if tf.executing_eagerly():
        steps, change, relative = int(iterations), float(delta), float(relative)
        if not (np.isfinite(change) and np.isfinite(float(scale))):
            raise FixedPointError(f"gradlib.fixed_point: the {what} iteration produced NaN or infinity after {steps} "
                                  f"steps (last change {change}). Check f for an overflow or a division by zero, "
                                  "and that the map is a contraction near the solution (|∂f/∂z| < 1).")
        if not bool(settled(delta, scale)):
            raise FixedPointError(f"gradlib.fixed_point: the {what} iteration did not converge: after {steps} of "
                                  f"max_iter={max_iter} steps the last change is {change:.3g} ({relative:.3g} "
                                  f"relative) > tol={tol:g} relative + atol={atol:g}. Raise max_iter, or check "
                                  "that the map is a contraction near the solution (|∂f/∂z| < 1) and that z0 is "
                                  "close enough; if the solution is 0, give an absolute tolerance atol.")
        return z
    check = tf.debugging.Assert(settled(delta, scale), [
        f"gradlib.fixed_point: the {what} iteration did not converge (or produced NaN or infinity) within "
        f"max_iter={max_iter} steps (tol={tol:g}, atol={atol:g}); steps taken, last change, its size relative "
        "to max|z|:", iterations, delta, relative])
    with tf.control_dependencies([check]):
        return tf.identity(z)


def _default_tol(dtype: tf.DType) -> float:
    epsilon = {tf.float16: 2.0 ** -10, tf.bfloat16: 2.0 ** -7, tf.float32: 2.0 ** -23, tf.float64: 2.0 ** -52}
    return 64 * epsilon[dtype]


def fixed_point(f: Callable, z0: Any, *params: Any, tol: Optional[float] = None, max_iter: int = 1000,
                atol: float = 0.0) -> tf.Tensor:
    r"""The fixed point :math:`z^\star = f(z^\star, \theta)`, with its implicit gradient.

    Forward: iterate :math:`z_{k+1} = f(z_k, \theta)` from :math:`z_0` until
    :math:`\max|z_{k+1} - z_k| \le \mathrm{tol}\cdot\max|z_{k+1}| + \mathrm{atol}`
    and return :math:`z_{k+1}`.  The test bounds the last *step*; the error
    of a contraction with factor :math:`q` is about
    :math:`\mathrm{step}\cdot q/(1 - q)`, larger than the step when
    :math:`q > 1/2`.

    Backward (implicit function theorem): differentiating
    :math:`z^\star = f(z^\star, \theta)` gives
    :math:`\partial z^\star/\partial\theta = (I - \partial_z f)^{-1}\,\partial_\theta f`,
    so for an upstream gradient :math:`\bar z`

    .. math::
        u = \bar z + (\partial_z f)^\top u, \qquad
        \frac{\partial L}{\partial \theta} = (\partial_\theta f)^\top u,

    evaluated at :math:`z^\star` only.  ``u`` is found by the same kind of
    iteration (the Neumann series of :math:`(I - \partial_z f)^{-\top}`,
    Almeida-Pineda recurrent backpropagation), one vector-Jacobian product of
    ``f`` per step, on :math:`\bar z / \max|\bar z|` so that the tolerance
    is relative at any scale of the upstream gradient (relative to its
    largest entry: an entry whose upstream gradient is orders of magnitude
    smaller than the largest is correspondingly less accurate).  A NaN or
    infinite upstream gradient gives NaN gradients, as plain operations
    would propagate it (dynamic loss scaling then skips the step).  It converges at the
    forward iteration's rate, so it takes about as many steps; what does not
    grow with the forward steps is memory: no tape records them, and the
    backward pass evaluates ``f`` once, at :math:`z^\star`.  :math:`z^\star`
    does not depend on ``z0`` (locally), so ``z0``'s gradient is zero.

    First derivatives only, in reverse mode: the gradients are returned
    through ``PreventGradient``, so a second derivative (``gradlib.hvp``,
    nested tapes) raises instead of returning a wrong number (a
    ``LookupError`` eagerly; inside a ``tf.function``, an error when the
    gradient is built).  A forward-mode derivative
    (``tf.autodiff.ForwardAccumulator``) of :math:`z^\star` is not
    available: it comes back ``None``.

    References: S. G. Krantz, H. R. Parks, *The Implicit Function Theorem*,
    Birkhäuser, 2002; F. J. Pineda, *Generalization of back-propagation to
    recurrent neural networks*, Physical Review Letters 59(19):2229-2232,
    1987; B. Christianson, *Reverse accumulation and attractive fixed
    points*, Optimization Methods and Software 3(4):311-326, 1994; S. Bai,
    J. Z. Kolter, V. Koltun, *Deep Equilibrium Models*, NeurIPS 2019.

    Args:
        f: ``f(z, *params)`` returning a tensor with ``z``'s shape and dtype.
            It may read ``tf.Variable`` objects (a Keras layer's weights);
            they get implicit gradients too.  Its own backward pass must be
            TensorFlow operations.
        z0: the starting point, a floating tensor.
        *params: the tensors or variables :math:`\theta` passed to ``f``;
            each gets its implicit gradient (integer ones get ``None``).
        tol: the relative tolerance above, for the forward and the adjoint
            iterations; default :math:`64\,\epsilon` of ``z0``'s dtype
            (about 7.6e-6 in float32, 1.4e-14 in float64).
        max_iter: the most iterations each of the two solves may take.
        atol: an absolute tolerance added to the forward test (default 0);
            needed when the solution is 0 and the iterates only approach it.

    Returns:
        :math:`z^\star`, shaped like ``z0``.

    Raises:
        FixedPointError: eagerly, an iteration did not converge within
            ``max_iter`` or produced NaN/inf (inside a ``tf.function``: a
            ``tf.errors.InvalidArgumentError`` with the same message when the
            graph runs; ``FixedPointError`` is one).
        TypeError: ``f`` is not callable; ``z0`` is not floating; ``f``
            returns another dtype.
        ValueError: ``f`` returns another shape; ``tol`` is not a positive
            number; ``atol`` is negative; ``max_iter`` is not a positive integer.
    """
    callable_arg(f, "f")
    z0 = float_tensor(z0, "z0")
    if isinstance(z0, tf.Variable):
        z0 = tf.convert_to_tensor(z0)
    tol = _default_tol(z0.dtype) if tol is None else real_number(tol, "tol", positive=True)
    atol = real_number(atol, "atol", minimum=0)
    max_iter = integer(max_iter, "max_iter")

    def apply(z, args):
        out = f(z, *args)
        if not isinstance(out, (tf.Tensor, tf.Variable)):
            out = tf.convert_to_tensor(out, dtype_hint=z.dtype)
        if out.dtype != z.dtype:
            raise TypeError(f"`f` returned dtype {out.dtype.name} for a z of dtype {z.dtype.name}; they must match")
        if not out.shape.is_compatible_with(z.shape):
            raise ValueError(f"`f` returned shape {out.shape.as_list()} for a z of shape {z.shape.as_list()}; "
                             "a fixed point needs the same shape")
        return tf.ensure_shape(out, z.shape)

    params = [p if isinstance(p, tf.Variable) else tf.convert_to_tensor(p, dtype_hint=z0.dtype) for p in params]
    floating = [p.dtype.is_floating for p in params]
    first_order_only = "gradlib.fixed_point gives first derivatives only: its implicit gradient is not differentiable"

    def no_second_derivative(gradient):
        return None if gradient is None else tf.raw_ops.PreventGradient(input=gradient, message=first_order_only)

    @tf.custom_gradient
    def solve(z0, *params):
        with record.stop_recording():  # no tape keeps the iterations
            z_star = _iterate(lambda z: apply(z, params), z0, tol, atol, max_iter, "forward")

        def grad_fn(z_bar, variables=None):
            variables = list(variables or [])
            z = tf.stop_gradient(z_star)
            sources = [p for p, is_float in zip(params, floating) if is_float] + variables
            with tf.GradientTape(persistent=True) as tape:
                tape.watch([z] + sources)
                fz = apply(z, params)
            z_bar = tf.convert_to_tensor(z_bar)
            finite = tf.math.is_finite(z_bar)
            clean = tf.where(finite, z_bar, tf.zeros_like(z_bar))
            poison = tf.where(tf.reduce_all(finite), tf.zeros([], z_bar.dtype),  # NaN/inf upstream: NaN out
                              tf.constant(np.nan, z_bar.dtype))
            scale = tf.reduce_max(tf.abs(clean))
            unit = tf.math.divide_no_nan(clean, scale)  # the adjoint equation is linear in z_bar

            def adjoint_step(u):
                back = tape.gradient(fz, z, output_gradients=u, unconnected_gradients=tf.UnconnectedGradients.ZERO)
                return unit + back

            u = scale * _iterate(adjoint_step, unit, tol, 0.0, max_iter, "adjoint (gradient)")
            grads = tape.gradient(fz, sources, output_gradients=u, unconnected_gradients=tf.UnconnectedGradients.ZERO)
            grads = [g + tf.cast(poison, g.dtype) for g in grads]
            found = iter(grads)
            param_grads = [no_second_derivative(next(found)) if is_float else None for is_float in floating]
            variable_grads = [no_second_derivative(g) for g in found]
            input_grads = [tf.zeros_like(z0)] + param_grads
            return (input_grads, variable_grads) if variables else input_grads

        return tf.identity(z_star), grad_fn

    return solve(z0, *params)
