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


def _unconnected(result: Optional[tf.Tensor], like: tf.Tensor, unconnected: str) -> tf.Tensor:
    if result is not None:
        return result
    if unconnected == "zero":
        return tf.zeros_like(like)
    raise ValueError(
        "H·v is not connected to `x`: the gradient of `f` does not depend on `x` through TensorFlow "
        "operations. Either `f` is linear in `x` (then H·v = 0: pass unconnected='zero'), or a "
        "backward pass left TensorFlow (a grad_fn using NumPy or .numpy(), a tf.py_function) and its "
        "second derivative is lost.")


def hvp(f: Callable, x: Any, v: Any, *, mode: str = "forward-over-reverse", unconnected: str = "raise") -> tf.Tensor:
    r"""The Hessian-vector product :math:`H(x)\,v` of a scalar function.

    .. math::
        H(x)\,v = \nabla^2 f(x)\, v = \frac{d}{d\varepsilon}\,\nabla f(x + \varepsilon v)\Big|_{\varepsilon=0},

    computed without forming :math:`H`, in about the cost of two gradients:

    * ``mode="forward-over-reverse"`` (default): a forward-mode derivative
      (``tf.autodiff.ForwardAccumulator``, tangent ``v``) of the reverse-mode
      gradient (``tf.GradientTape``);
    * ``mode="reverse-over-reverse"``: the gradient of :math:`\nabla f(x)\cdot v`
      with a second tape (Pearlmutter's trick, backward over backward).

    Both are exact up to rounding; forward-over-reverse keeps fewer tensors.

    Reference: B. A. Pearlmutter, *Fast Exact Multiplication by the Hessian*,
    Neural Computation 6(1):147-160, 1994.

    Args:
        f: a function of one tensor returning a floating scalar. Custom
            gradients inside it must have a backward pass written in
            TensorFlow operations, or their second derivative is lost.
        x: the point, a floating tensor or ``tf.Variable`` of any shape
            (float16/bfloat16/float32/float64).
        v: the direction, with ``x``'s shape and dtype.
        mode: ``"forward-over-reverse"`` or ``"reverse-over-reverse"``.
        unconnected: what to do when the gradient of ``f`` does not depend on
            ``x`` through TensorFlow operations: ``"raise"`` (default: a
            ``ValueError`` naming both causes, a linear ``f`` and a backward
            pass outside TensorFlow) or ``"zero"`` (return zeros, right for a
            linear ``f``).

    Returns:
        :math:`H(x)\,v`, a tensor shaped like ``x`` in ``x``'s dtype.

    Raises:
        TypeError: ``f`` is not callable; ``x`` or ``v`` is not floating; their
            dtypes differ; ``f`` returns a non-floating value.
        ValueError: the shapes of ``x`` and ``v`` differ; ``f(x)`` is not a
            scalar; ``mode`` or ``unconnected`` is unknown; the gradient of
            ``f`` does not reach ``x`` at all (``f`` does not depend on ``x``,
            or through an operation without a gradient), or ``H·v`` is not
            connected and ``unconnected="raise"``.
    """
    callable_arg(f, "f")
    if mode not in _HVP_MODES:
        raise ValueError(f"`mode` must be one of {_HVP_MODES}; got {mode!r}")
    if unconnected not in _UNCONNECTED:
        raise ValueError(f"`unconnected` must be one of {_UNCONNECTED}; got {unconnected!r}")
    x = float_tensor(x, "x")
    v = _same_shape_and_dtype(x, v, "x", "v")
    if mode == "forward-over-reverse":
        with tf.autodiff.ForwardAccumulator(x, v) as acc:
            gradient = _gradient(f, x)
        return _unconnected(acc.jvp(gradient), x, unconnected)
    with tf.GradientTape() as outer:
        outer.watch(x)
        gradient = _gradient(f, x)
        directional = tf.reduce_sum(gradient * v)
    return _unconnected(outer.gradient(directional, x), x, unconnected)


def _gradient(f: Callable, x: Any) -> tf.Tensor:
    with tf.GradientTape() as inner:
        inner.watch(x)
        y = _scalar(f(x), "`f`")
    gradient = inner.gradient(y, x)
    if gradient is None:
        raise ValueError("the gradient of `f` with respect to `x` is None: `f` does not depend on `x`, or only "
                         "through an operation without a gradient (a cast to an integer, tf.round, NumPy)")
    return gradient


class FixedPointError(tf.errors.InvalidArgumentError):
    """:func:`fixed_point`'s iteration (forward, or the adjoint one of its
    gradient) did not converge within ``max_iter`` steps, or produced NaN or
    infinity.  A ``tf.errors.InvalidArgumentError``, the error the same check
    raises inside a ``tf.function``, so one ``except`` catches both."""

    def __init__(self, message: str):
        super().__init__(None, None, message)


def _residual(new: tf.Tensor, old: tf.Tensor) -> tf.Tensor:
    """max|new - old| relative to max(1, max|new|): the test is the same at any scale of z."""
    scale = tf.maximum(tf.reduce_max(tf.abs(new)), tf.ones([], new.dtype))
    return tf.reduce_max(tf.abs(new - old)) / scale


def _iterate(step: Callable, start: tf.Tensor, tol: float, max_iter: int, what: str) -> tf.Tensor:
    """Run ``z <- step(z)`` until the relative change is at most ``tol``; raise if it never is."""
    tol_t = tf.constant(tol, start.dtype)

    def keep_going(i, z, residual):
        return tf.logical_and(i < max_iter, tf.logical_and(residual > tol_t, tf.math.is_finite(residual)))

    def body(i, z, residual):
        new = step(z)
        return i + 1, new, _residual(new, z)

    never = tf.constant(start.dtype.max, start.dtype)  # finite: a non-finite change stops the loop
    iterations, z, residual = tf.while_loop(keep_going, body, (tf.constant(0), start, never),
                                            maximum_iterations=max_iter)
    if tf.executing_eagerly():
        steps, change = int(iterations), float(residual)
        if not np.isfinite(change):
            raise FixedPointError(f"gradlib.fixed_point: the {what} iteration produced NaN or infinity after {steps} "
                                  f"steps (relative change {change}). Check f for an overflow or a division by zero, "
                                  "and that the map is a contraction near the solution (|∂f/∂z| < 1).")
        if not change <= tol:
            raise FixedPointError(f"gradlib.fixed_point: the {what} iteration did not converge: after {steps} of "
                                  f"max_iter={max_iter} steps the relative change is {change:.3g} > tol={tol:g}. "
                                  "Raise max_iter, or check that the map is a contraction near the solution "
                                  "(|∂f/∂z| < 1) and that z0 is close enough.")
        return z
    check = tf.debugging.Assert(residual <= tol_t, [
        f"gradlib.fixed_point: the {what} iteration did not converge (or produced NaN or infinity) within "
        f"max_iter={max_iter} steps "
        f"(tol={tol:g}); steps taken, relative change:", iterations, residual])
    with tf.control_dependencies([check]):
        return tf.identity(z)


def _default_tol(dtype: tf.DType) -> float:
    epsilon = {tf.float16: 2.0 ** -10, tf.bfloat16: 2.0 ** -7, tf.float32: 2.0 ** -23, tf.float64: 2.0 ** -52}
    return 64 * epsilon[dtype]


def fixed_point(f: Callable, z0: Any, *params: Any, tol: Optional[float] = None, max_iter: int = 1000) -> tf.Tensor:
    r"""The fixed point :math:`z^\star = f(z^\star, \theta)`, with its implicit gradient.

    Forward: iterate :math:`z_{k+1} = f(z_k, \theta)` from :math:`z_0` until
    :math:`\max|z_{k+1} - z_k| \le \mathrm{tol}\cdot\max(1, \max|z_{k+1}|)`
    and return :math:`z_{k+1}`.

    Backward (implicit function theorem): differentiating
    :math:`z^\star = f(z^\star, \theta)` gives
    :math:`\partial z^\star/\partial\theta = (I - \partial_z f)^{-1}\,\partial_\theta f`,
    so for an upstream gradient :math:`\bar z`

    .. math::
        u = \bar z + (\partial_z f)^\top u, \qquad
        \frac{\partial L}{\partial \theta} = (\partial_\theta f)^\top u,

    evaluated at :math:`z^\star` only. ``u`` is found by the same kind of
    iteration, one vector-Jacobian product of ``f`` per step. Neither pass
    records the forward iterations, so memory and the backward pass's cost do
    not grow with their number; the gradient is as accurate as :math:`z^\star`.
    :math:`z^\star` does not depend on ``z0`` (locally), so ``z0``'s gradient
    is zero.

    Reference: S. G. Krantz, H. R. Parks, *The Implicit Function Theorem*,
    Birkhäuser, 2002; for its use in deep learning, S. Bai, J. Z. Kolter,
    V. Koltun, *Deep Equilibrium Models*, NeurIPS 2019, §3.1.

    Args:
        f: ``f(z, *params)`` returning a tensor with ``z``'s shape and dtype.
            It may read ``tf.Variable`` objects (a Keras layer's weights);
            they get implicit gradients too. Its own backward pass must be
            TensorFlow operations.
        z0: the starting point, a floating tensor.
        *params: the tensors or variables :math:`\theta` passed to ``f``;
            each gets its implicit gradient (integer ones get ``None``).
        tol: the relative tolerance above, for the forward and the adjoint
            iterations; default :math:`64\,\epsilon` of ``z0``'s dtype
            (about 7.6e-6 in float32, 1.4e-14 in float64).
        max_iter: the most iterations each of the two solves may take.

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
            number; ``max_iter`` is not a positive integer.
    """
    callable_arg(f, "f")
    z0 = float_tensor(z0, "z0")
    if isinstance(z0, tf.Variable):
        z0 = tf.convert_to_tensor(z0)
    tol = _default_tol(z0.dtype) if tol is None else real_number(tol, "tol", positive=True)
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

    @tf.custom_gradient
    def solve(z0, *params):
        with record.stop_recording():  # no tape keeps the iterations
            z_star = _iterate(lambda z: apply(z, params), z0, tol, max_iter, "forward")

        def grad_fn(z_bar, variables=None):
            variables = list(variables or [])
            z = tf.stop_gradient(z_star)
            sources = [p for p, is_float in zip(params, floating) if is_float] + variables
            with tf.GradientTape(persistent=True) as tape:
                tape.watch([z] + sources)
                fz = apply(z, params)

            def adjoint_step(u):
                back = tape.gradient(fz, z, output_gradients=u, unconnected_gradients=tf.UnconnectedGradients.ZERO)
                return z_bar + back

            u = _iterate(adjoint_step, tf.convert_to_tensor(z_bar), tol, max_iter, "adjoint (gradient)")
            grads = tape.gradient(fz, sources, output_gradients=u, unconnected_gradients=tf.UnconnectedGradients.ZERO)
            del tape
            found = iter(grads)
            param_grads = [next(found) if is_float else None for is_float in floating]
            variable_grads = list(found)
            input_grads = [tf.zeros_like(z0)] + param_grads
            return (input_grads, variable_grads) if variables else input_grads

        return tf.identity(z_star), grad_fn

    return solve(z0, *params)
