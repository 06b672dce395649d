r"""Checks for chapter 8: beyond the first derivative.

* ``ch08-ex1``: ``jvp_by_double_vjp(f, x, v)``, the Jacobian-vector product
  :math:`J(x)\,v` of a function from a tensor to a tensor with
  ``tf.GradientTape`` only (the double-backward trick: :math:`g(u) = u^\top J`
  is linear in :math:`u`, and :math:`\partial (g(u)\cdot v)/\partial u = J v`
  for any :math:`u`).  The result has the shape and dtype of :math:`f(x)`.
  Six functions, each in float32 and float64: ``tf.sin`` on a vector
  (:math:`J` diagonal), :math:`\tanh(A x)` with a square non-symmetric
  :math:`A` (:math:`J \ne J^\top`: a vector-Jacobian product shows), with a
  5×3 :math:`A` (the output larger than the input) and a 3×5 one (smaller),
  a function of a 2×3 matrix returning a vector, and last, after all the
  others in both dtypes, ``reduce_sum(tf.stop_gradient(X)**2, axis=0)``,
  whose output the tape does not connect to its input: :math:`J = 0`, and
  the answer must return zeros of f(x)'s shape and dtype, as the statement
  promises (a tape's gradient is None there unless it is called with
  ``unconnected_gradients=tf.UnconnectedGradients.ZERO``; None or an
  exception there gets a message saying so).  Every direction
  :math:`v` has zeros and negative entries.  The references are the closed-form
  Jacobians in NumPy (float64).  While the answer runs,
  ``tf.autodiff.ForwardAccumulator``, ``tf.GradientTape.jacobian`` and
  ``tf.GradientTape.batch_jacobian`` are switched off (they raise; the
  originals are restored afterwards) and ``gradlib.hvp`` is watched
  (:func:`library_calls`): an answer that tried one of them is told so.
* ``ch08-ex2``: ``log1pexp(x)``, :math:`\log(1 + e^x)` through
  ``tf.custom_gradient``, whose first derivative :math:`\sigma(x)` has a custom
  gradient of its own (nested), :math:`\sigma(x)\,\sigma(-x)`.  At
  :math:`x \in \{-100, -40, -1, 0, 1, 40, 100\}` and random points in float32
  and float64, with upstream gradients 1 and then other than 1 at both
  levels: value, first derivative (one tape) and second derivative (two nested
  tapes), each within :data:`ULPS` units of the dtype's epsilon, relative to
  a float64 reference rounded to the dtype (``np.logaddexp(0, x)``,
  :math:`1/(1 + e^{-x})`, :math:`e^{-|x|}/(1 + e^{-|x|})^2`).  Below the
  dtype's smallest normal number the comparison is absolute, within that
  number: TensorFlow's CPU kernels flush subnormal results to zero, so a right
  answer gives 0 where the exact value is a float32 subnormal (the second
  derivative at x = 100, about 3.7e-44, and the value and first derivative at
  x = -100).  Then the first and second derivatives of
  :math:`\sin(\mathrm{log1pexp}(x))` in float64 at :data:`COMPOSED_X`, against
  :math:`\cos(s)\sigma(x)` and :math:`-\sin(s)\sigma(x)^2 +
  \cos(s)\sigma(x)\sigma(-x)` (:math:`s = \log(1 + e^x)`), within
  :data:`COMPOSED_RTOL` of the sizes of the two terms: there the upstream
  gradient dy of the first derivative depends on x, so a first derivative whose
  gradient with respect to dy is missing or wrong (a nested custom function of
  (x, dy) returning None for dy) shows, which a constant upstream gradient
  cannot show.  An answer without any custom gradient, or whose first derivative
  has none, is refused at the end even when its numbers are right
  (:func:`_custom_gradients`).
* ``ch08-ex3``: ``kepler(M, e)``, the solution :math:`E` of Kepler's equation
  :math:`E - e\sin E = M` (elementwise, :math:`0 \le e < 1`) by a fixed-point
  iteration, with the implicit gradient :math:`\partial E/\partial M =
  1/(1 - e\cos E)`, :math:`\partial E/\partial e = \sin E/(1 - e\cos E)` from
  ``tf.custom_gradient``.  In float64 (:math:`|E - e\sin E - M| \le 10^{-12}`)
  and float32 (:math:`\le 10^{-5}`) at points with e = 0, e = 0.9 (near E = 0
  and E = π the error shrinks only by about 0.9 a step), M = 0, π, negative
  and 2π + 1, with upstream
  gradients other than 1; the reference is Newton's method in NumPy
  (float64).  ``gradlib.fixed_point`` is watched and refused
  (:func:`refuse_library`), and an answer without a custom gradient is refused
  at the end.  The message says that the answer was differentiated through
  its iterations only when the check saw it: the backward pass ran more than
  :data:`UNROLLED_BACKWARD_OPS` operations, or a loop (:func:`_backward_size`,
  through TensorFlow's op callbacks; a tf.function's backward pass counts the
  nodes of its graph).  Otherwise (a stop_gradient correction with the implicit
  gradient, for instance) it says only that no custom gradient was used.

Whether an answer uses ``tf.custom_gradient`` is seen while it runs eagerly
(:func:`_recorded_backward`: every ``tf.custom_gradient`` call records its
operation on the tapes through ``record.record_operation``, whatever Python
control flow surrounds it); an answer that is itself a ``tf.function`` is
traced instead and its graph searched for the ``IdentityN`` op marked
``_gradient_op_type`` that ``tf.custom_gradient`` leaves (as chapter 7's
:func:`uses_custom_gradient` does); an answer that cannot be traced counts as
using one.

Typical mistakes with a message of their own: ex1, the vector-Jacobian
product :math:`J^\top v`, the summed gradient :math:`J^\top 1` (or it times
v), the derivative with respect to x instead of u, None (u not watched, or the
inner gradient outside the outer tape), zeros, a result shaped like x, the
wrong dtype, None or an exception where f(x) does not depend on x (no
``unconnected_gradients=ZERO``), ForwardAccumulator, tape.jacobian,
gradlib.hvp; ex2, the naive
:math:`\log(1 + e^x)` (overflow; 0 for very negative x), None for the first or
the second derivative (NumPy, tf.stop_gradient), the cancelling
:math:`\sigma(1 - \sigma)` (tf.sigmoid's own gradient), plain
``tf.nn.softplus`` (its own second derivative underflows), a ``grad_fn``
that ignores its upstream gradient at either level, NaN from
:math:`e^x/(1+e^x)`, no nesting, a nested first derivative whose gradient
with respect to dy is None or wrong (seen only composed); ex3, not converged,
∂E/∂e without the
:math:`\sin E`, the sign error :math:`1/(1 + e\cos E)`, dE ignored, None for
e, one gradient for two inputs, unrolled (no custom gradient: refused at the
end when the numbers are right; when the gradient is wrong, because the
derivative of the last iterate lags behind the iterate, that is said at once),
no custom gradient without unrolling (a stop_gradient correction),
``gradlib.fixed_point``.
"""

from __future__ import annotations

import contextlib
import functools
import math
from typing import Any, Callable, Iterator, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf
from tensorflow.python.eager import context
from tensorflow.python.eager import record  # record_operation: where tf.custom_gradient shows itself eagerly
from tensorflow.python.framework import op_callbacks  # every operation TensorFlow runs: the size of a backward pass
from tensorflow.python.ops import custom_gradient as _custom_gradient_module

from ...logs import captured_tf_warnings
from ._core import (PROPAGATE, Mismatch, call, describe, dtype_name, exercise, first_mistake, fmt, fragment, join,
                    matches, message, raised, refuse_library, returned_tensor, tensor_like, to_array)


# -- shared helpers -----------------------------------------------------------------

@contextlib.contextmanager
def _switched_off(targets: Sequence[Tuple[Any, str, str]]) -> Iterator[List[str]]:
    """While the block runs, each ``(owner, attribute, label)`` of ``targets`` raises when it is called
    (a class is replaced by a function that raises, a method likewise); the yielded list collects the
    labels of those the code inside tried.  The originals are put back on exit, whatever happens (the
    check's time limit included); an attribute that a class only inherited is removed again."""
    tried: List[str] = []
    saved = []

    def refusing(label):
        def switched_off(*args, **kwargs):
            tried.append(label)
            raise _SwitchedOff(f"{label} is switched off while this exercise is checked")
        return switched_off

    try:
        for owner, attribute, label in targets:
            own = attribute in vars(owner)
            saved.append((owner, attribute, vars(owner).get(attribute), own))
            setattr(owner, attribute, refusing(label))
        yield tried
    finally:
        for owner, attribute, original, own in reversed(saved):
            if own:
                setattr(owner, attribute, original)
            else:
                delattr(owner, attribute)


class _SwitchedOff(RuntimeError):
    """What a switched-off TensorFlow function raises while a check runs (see :func:`_switched_off`)."""


@contextlib.contextmanager
def _recorded_backward() -> Iterator[List[str]]:
    """While the block runs, the module of every backward function TensorFlow records for a tape through
    ``record.record_operation``: ``tensorflow.python.ops.custom_gradient`` for each call of a
    ``tf.custom_gradient`` function (eagerly, and while one is traced), a ``polymorphic_function``
    module for a call of a ``tf.function``.  Ordinary operations are recorded in C++ and do not show.
    The original is put back on exit."""
    modules: List[str] = []
    original = record.record_operation

    @functools.wraps(original)
    def spy(op_type, outputs, inputs, backward_function, *args, **kwargs):
        modules.append(str(getattr(backward_function, "__module__", "") or ""))
        return original(op_type, outputs, inputs, backward_function, *args, **kwargs)

    record.record_operation = spy
    try:
        yield modules
    finally:
        record.record_operation = original


def _graph_custom_count(fn: Callable, specs: Sequence[tf.TensorSpec]) -> Optional[int]:
    """How many ``tf.custom_gradient`` calls ``fn`` makes, traced in a tf.function: the distinct
    ``_gradient_op_type`` marks of the ``IdentityN`` ops in its graph and in the functions it calls (a called
    tf.function appears there twice, as its forward function and as the forward pass its gradient uses, with
    the same marks); None when it cannot be traced."""
    try:
        with captured_tf_warnings():
            traced = tf.function(fn, autograph=False)
            graph_def = traced.get_concrete_function(*specs).graph.as_graph_def()
    except PROPAGATE:
        raise
    except BaseException:  # the reader's code may raise anything while it is traced
        return None
    nodes = list(graph_def.node) + [node for function in graph_def.library.function for node in function.node_def]
    return len({node.attr["_gradient_op_type"].s for node in nodes
                if node.op == "IdentityN" and "_gradient_op_type" in node.attr})


def _custom_gradients(modules: Sequence[str], fn: Callable, specs: Sequence[tf.TensorSpec]) -> Optional[int]:
    """How many ``tf.custom_gradient`` calls a run recorded (:func:`_recorded_backward`); when the answer
    ran as a ``tf.function`` (its trace may be cached, so the eager records say nothing), the count in its
    traced graph instead; None when that cannot be known."""
    custom = sum(module == _custom_gradient_module.__name__ for module in modules)
    if custom or not any("polymorphic_function" in module for module in modules):
        return custom
    return _graph_custom_count(fn, specs)


# A backward pass that goes through the iterations of a solver: more operations than this, or a loop.  A
# tf.custom_gradient's grad_fn runs about 10, a stop_gradient correction about 20; differentiating through a
# fixed-point iteration runs about ten per iteration, and there are hundreds (or a While op in a tf.function).
UNROLLED_BACKWARD_OPS = 200
LOOP_OPS = ("While", "StatelessWhile")


def _function_size(name: str, seen: set) -> Tuple[int, bool]:
    """(nodes, has a loop) of the TensorFlow function ``name`` and of the functions it calls; (0, False) when
    there is no such function (an ordinary operation) or it was counted already."""
    ctx = context.context()
    try:
        if name in seen or not ctx.has_function(name):
            return 0, False
        seen.add(name)
        nodes = list(ctx.get_function_def(name).node_def)
    except PROPAGATE:
        raise
    except BaseException:  # not a function after all
        return 0, False
    count, loop = len(nodes), False
    for node in nodes:
        called = [node.op] + [value.func.name for value in node.attr.values() if value.HasField("func")]
        loop = loop or node.op in LOOP_OPS
        for function in called:
            more, inner_loop = _function_size(function, seen)
            count, loop = count + more, loop or inner_loop
    return count, loop


@contextlib.contextmanager
def _backward_size() -> Iterator[List[Tuple[int, bool]]]:
    """While the block runs (a ``tape.gradient`` call), the size of what TensorFlow runs eagerly: one
    ``(1, False)`` per operation, and for a call of a function (a tf.function's backward pass) the size of
    its graph (:func:`_function_size`).  The callback is removed on exit, whatever happens."""
    sizes: List[Tuple[int, bool]] = []

    def count(op_type, inputs, attrs, outputs, op_name=None, graph=None):
        if graph is None:   # run eagerly, not built into a graph
            size, loop = _function_size(str(op_type), set())
            sizes.append((1 + size, loop))
        return None

    op_callbacks.add_op_callback(count)
    try:
        yield sizes
    finally:
        op_callbacks.remove_op_callback(count)


def _through_iterations(sizes: Sequence[Tuple[int, bool]]) -> bool:
    """Whether a backward pass of these sizes (:func:`_backward_size`) went through iterations."""
    return any(loop for _, loop in sizes) or sum(size for size, _ in sizes) > UNROLLED_BACKWARD_OPS


def _sentence(text: str, lang: str) -> str:
    """``text`` without its closing full stop, so that a hint can follow it."""
    return str(text).rstrip().rstrip("。.")  # a TensorFlow error (English) ends with "." in either language


# -- ch08-ex1: jvp_by_double_vjp(f, x, v) --------------------------------------------------

class JvpCase(NamedTuple):
    """A function of the check: its text for messages, the function, x, v and NumPy (float64) formulas
    of J·v, Jᵀ·w (w shaped like f(x)), Jᵀ·1 and the derivative of Σ_i (J v)_i with respect to x
    (what differentiating g(u)·v with respect to x gives for u = 1); ``unconnected``: f(x) does not
    depend on x on the tape (J = 0, and a tape's gradient is None unless it is asked for zeros)."""

    text: str
    f: Callable
    x: np.ndarray
    v: np.ndarray
    jvp: Callable[[np.ndarray, np.ndarray], np.ndarray]
    vjp: Callable[[np.ndarray, np.ndarray], np.ndarray]
    wrt_x: Callable[[np.ndarray, np.ndarray], np.ndarray]
    unconnected: bool = False


A_SQUARE = np.array([[0.9, -0.4, 0.3, 0.0],
                     [0.2, 0.7, -0.5, 0.6],
                     [-0.8, 0.1, 0.4, -0.3],
                     [0.5, 0.0, -0.2, 1.1]])   # not symmetric: J ≠ Jᵀ
A_TALL = np.array([[0.6, -0.3, 0.1], [0.2, 0.8, -0.4], [-0.7, 0.4, 0.5],
                   [1.0, 0.1, -0.6], [-0.2, -0.9, 0.3]])                                # 5×3: f(x) larger than x
A_WIDE = np.array([[0.5, -0.6, 0.2, 0.0, 0.3],
                   [-0.1, 0.4, 0.7, -0.5, 0.2],
                   [0.8, 0.0, -0.3, 0.6, -0.4]])                                        # 3×5: f(x) smaller than x


def _tanh_case(a: np.ndarray, x: np.ndarray, v: np.ndarray) -> JvpCase:
    rows, columns = a.shape

    def f(x):
        return tf.tanh(tf.linalg.matvec(tf.constant(a, x.dtype), x))

    def parts(x):
        t = np.tanh(a @ x)
        return t, 1.0 - t ** 2

    return JvpCase(
        text=f"tanh(A @ x), A: {rows}×{columns}", f=f, x=x, v=v,
        jvp=lambda x, v: parts(x)[1] * (a @ v),
        vjp=lambda x, w: a.T @ (parts(x)[1] * w),
        wrt_x=lambda x, v: a.T @ (-2.0 * parts(x)[0] * parts(x)[1] * (a @ v)))


def _matrix_f(x):
    return tf.reduce_sum(x ** 3, axis=0) + x[0] * x[1]


def _stopped_f(x):   # the tape sees no path from x to f(x): J = 0
    return tf.reduce_sum(tf.stop_gradient(x) ** 2, axis=0)


JVP_CASES = (
    JvpCase(text="tf.sin(x)", f=tf.sin,
            x=np.array([-1.3, 0.0, 0.4, 2.2, 3.0]), v=np.array([2.0, -1.5, 0.0, 0.5, -3.0]),
            jvp=lambda x, v: np.cos(x) * v, vjp=lambda x, w: np.cos(x) * w,
            wrt_x=lambda x, v: -np.sin(x) * v),
    _tanh_case(A_SQUARE, np.array([0.3, -0.8, 1.2, 0.05]), np.array([1.0, 0.0, -2.0, 0.5])),
    _tanh_case(A_TALL, np.array([0.7, -0.4, 0.2]), np.array([-1.5, 0.0, 2.0])),
    _tanh_case(A_WIDE, np.array([0.5, -0.2, 0.9, -1.1, 0.3]), np.array([0.0, 1.5, -1.0, 2.0, -0.5])),
    JvpCase(text="reduce_sum(X**3, axis=0) + X[0] * X[1], X: 2×3", f=_matrix_f,
            x=np.array([[0.5, -1.0, 1.5], [2.0, 0.25, -0.75]]), v=np.array([[1.0, 0.0, -2.0], [-0.5, 3.0, 0.0]]),
            jvp=lambda x, v: 3 * x[0] ** 2 * v[0] + 3 * x[1] ** 2 * v[1] + x[1] * v[0] + x[0] * v[1],
            vjp=lambda x, w: np.stack([(3 * x[0] ** 2 + x[1]) * w, (3 * x[1] ** 2 + x[0]) * w]),
            wrt_x=lambda x, v: np.stack([6 * x[0] * v[0] + v[1], 6 * x[1] * v[1] + v[0]])),
    # checked last, after every other case in both dtypes (see _check_jvp)
    JvpCase(text="reduce_sum(tf.stop_gradient(X)**2, axis=0), X: 2×3", f=_stopped_f,
            x=np.array([[0.5, -1.0, 1.5], [2.0, 0.25, -0.75]]), v=np.array([[1.0, 0.0, -2.0], [-0.5, 3.0, 0.0]]),
            jvp=lambda x, v: np.zeros(x.shape[1:]), vjp=lambda x, w: np.zeros(x.shape),
            wrt_x=lambda x, v: np.zeros(x.shape), unconnected=True),
)
JVP_DTYPES = (np.float32, np.float64)
JVP_TOLERANCES = {np.float32: dict(rtol=1e-4, atol=1e-6), np.float64: dict(rtol=1e-10, atol=1e-12)}

# switched off while the answer runs: (owner, attribute, the name the message gives)
JVP_SWITCHED_OFF = ((tf.autodiff, "ForwardAccumulator", "tf.autodiff.ForwardAccumulator"),
                    (tf.GradientTape, "jacobian", "tape.jacobian"),
                    (tf.GradientTape, "batch_jacobian", "tape.batch_jacobian"))
JVP_LIBRARY = (("gradlib", "hvp"), ("gradlib.higher", "hvp"))


def _jvp_mistakes(case: JvpCase, x: np.ndarray, v: np.ndarray, shape) -> List[Tuple[str, np.ndarray]]:
    """The typical wrong results that have f(x)'s shape here, each with its message key."""
    ones = np.ones(shape)
    candidates = [("ch08.jvp_zero", np.zeros(shape))]
    if x.shape == tuple(shape):   # only then can a vector-Jacobian product or a gradient have f(x)'s shape
        summed = case.vjp(x, ones)
        candidates += [("ch08.vjp", case.vjp(x, v)), ("ch08.summed", summed), ("ch08.summed", summed * v),
                       ("ch08.wrt_x", case.wrt_x(x, v))]
    return candidates


def _call_jvp(answer: Callable, case: JvpCase, x: tf.Tensor, v: tf.Tensor, lang: str, where: str):
    """answer(case.f, x, v); an exception about float32 meeting float64 gets the dtype hint, and one where
    f(x) does not depend on x (``case.unconnected``: a gradient was None) the hint about unconnected
    gradients."""
    try:
        return answer(case.f, x, v)
    except (Mismatch, *PROPAGATE):
        raise
    except BaseException as err:  # the reader's code may raise anything
        text = raised(err, lang, where)
        detail = describe(err, lang)
        if x.dtype == tf.float64 and "double" in detail and "float" in detail:
            raise Mismatch(message("ch08.jvp_dtype_raised", lang, raised=_sentence(str(text), lang))) from None
        if case.unconnected:
            raise Mismatch(message("ch08.jvp_unconnected_raised", lang, raised=_sentence(str(text), lang))) from None
        raise text from None


def _check_jvp_case(answer: Callable, case: JvpCase, dtype, lang: str) -> None:
    where = fragment("ch08.jvp_where", lang, f=case.text, dtype=dtype_name(dtype))
    x_np, v_np = case.x.astype(dtype), case.v.astype(dtype)
    x64, v64 = x_np.astype(np.float64), v_np.astype(np.float64)
    expected = case.jvp(x64, v64)
    shape = expected.shape
    result = _call_jvp(answer, case, tf.constant(x_np), tf.constant(v_np), lang, where)
    if result is None:
        raise Mismatch(message("ch08.jvp_unconnected" if case.unconnected else "ch08.jvp_none", lang, where=where))
    array = to_array(result)
    if array is not None and array.dtype.kind == "f" and tensor_like(result):
        if tuple(array.shape) == x_np.shape and x_np.shape != shape:
            raise Mismatch(message("ch08.input_shape", lang, where=where, got=list(array.shape),
                                   expected=list(shape)))
        if array.dtype != np.dtype(dtype) and tuple(array.shape) == shape:
            raise Mismatch(message("ch08.jvp_dtype", lang, where=where, got=str(array.dtype),
                                   expected=dtype_name(dtype)))
    got = returned_tensor(result, lang=lang, where=where, what="ch08.jvp_word", shape=shape, dtype=dtype)
    tolerances = JVP_TOLERANCES[dtype]
    if matches(got, expected, **tolerances):
        return
    text = message("ch08.jvp_value", lang, where=where, got=fmt(got), expected=fmt(expected))
    mistake = first_mistake(got, expected, _jvp_mistakes(case, x64, v64, shape), **tolerances)
    raise Mismatch(join(text, message(mistake, lang), lang) if mistake else text)


def _check_jvp(answer: Callable, lang: str) -> str:
    # the unconnected case last: a None or a float32 mistake shows first where it has its own message
    for unconnected in (False, True):
        for dtype in JVP_DTYPES:
            for case in JVP_CASES:
                if case.unconnected == unconnected:
                    _check_jvp_case(answer, case, dtype, lang)
    return message("ch08.jvp_passed", lang, n=len(JVP_CASES))


# The likeliest wrong answers, as a reader writes them (``@exercise(..., wrong_answers=...)``).

def _jvp_by_vjp(f, x, v):  # one backward pass with v as the upstream gradient: Jᵀv
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return tape.gradient(y, x, output_gradients=v)


def _jvp_summed(f, x, v):  # the gradient of the summed outputs, times v
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return tape.gradient(y, x) * v


def _jvp_double(u_of, *, watch=True, inside=True, cast=None, zero=()):
    """The double-backward trick with one step changed: ``u_of(y)`` makes u; ``watch``: the outer tape
    watches u; ``inside``: the inner gradient is taken inside the outer tape's block; ``cast``: a dtype
    the result is cast to; ``zero``: the gradient calls ("inner", "outer") that turn an unconnected
    gradient into zeros (the right answer has both)."""
    def unconnected(which):
        return tf.UnconnectedGradients.ZERO if which in zero else tf.UnconnectedGradients.NONE

    def answer(f, x, v):
        with tf.GradientTape() as outer:
            with tf.GradientTape() as inner:
                inner.watch(x)
                y = f(x)
            u = u_of(y)
            if watch:
                outer.watch(u)
            if inside:
                g = inner.gradient(y, x, output_gradients=u, unconnected_gradients=unconnected("inner"))
        if not inside:
            g = inner.gradient(y, x, output_gradients=u, unconnected_gradients=unconnected("inner"))
        result = outer.gradient(g, u, output_gradients=v, unconnected_gradients=unconnected("outer"))
        return tf.cast(result, cast) if cast is not None and result is not None else result
    return answer


def _jvp_wrt_x(f, x, v):  # g(u)·v differentiated with respect to x, u = 1
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        g = inner.gradient(y, x, output_gradients=tf.ones_like(y))
        s = tf.reduce_sum(g * v)
    return outer.gradient(s, x)


def _jvp_forward_accumulator(f, x, v):  # forward mode: right, but not what the exercise asks
    with tf.autodiff.ForwardAccumulator(x, v) as accumulator:
        y = f(x)
    return accumulator.jvp(y)


def _jvp_jacobian(f, x, v):  # the whole Jacobian, then a product
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    jacobian = tape.jacobian(y, x)
    rank = len(x.shape)
    return tf.tensordot(jacobian, v, axes=rank)


def _jvp_hvp(f, x, v):  # gradlib.hvp of u·f(x) for u = 1: the derivative with respect to x again, and a library call
    import gradlib
    return gradlib.hvp(lambda x: tf.reduce_sum(f(x)), x, v)


@exercise("ch08-ex1", answer="jvp_by_double_vjp", wrong_answers=[
    ("a vector-Jacobian product Jᵀv", _jvp_by_vjp, "ch08.vjp"),
    ("the summed gradient times v", _jvp_summed, "ch08.summed"),
    ("u not watched", _jvp_double(tf.zeros_like, watch=False), "ch08.jvp_none"),
    ("inner gradient outside the outer tape", _jvp_double(tf.zeros_like, inside=False), "ch08.jvp_none"),
    ("u not watched, unconnected gradients zero", _jvp_double(tf.zeros_like, watch=False, zero=("inner", "outer")),
     "ch08.jvp_zero"),
    ("no unconnected_gradients: raises where J = 0", _jvp_double(tf.zeros_like), "ch08.jvp_unconnected_raised"),
    ("unconnected_gradients=ZERO on the inner gradient only", _jvp_double(tf.zeros_like, zero=("inner",)),
     "ch08.jvp_unconnected"),
    ("u = tf.zeros(shape): float32", _jvp_double(lambda y: tf.zeros(tf.shape(y))), "ch08.jvp_dtype_raised"),
    ("result cast to float32", _jvp_double(tf.zeros_like, cast=tf.float32), "ch08.jvp_dtype"),
    ("derivative with respect to x", _jvp_wrt_x, "ch08.wrt_x"),
    ("tf.autodiff.ForwardAccumulator", _jvp_forward_accumulator, "ch08.forward_accumulator"),
    ("tape.jacobian", _jvp_jacobian, "ch08.jacobian"),
    ("gradlib.hvp", _jvp_hvp, "ch08.library_hvp"),
])
def check_jvp_by_double_vjp(answer, lang):
    with _switched_off(JVP_SWITCHED_OFF) as tried:
        try:
            result = refuse_library(_check_jvp, answer, lang, names=JVP_LIBRARY, key="ch08.library_hvp")
        except Mismatch as problem:
            if tried and problem.key != "ch08.library_hvp":
                raise _refused(tried[0], lang) from None
            raise
    if tried:
        raise _refused(tried[0], lang)
    return result


def _refused(label: str, lang: str) -> Mismatch:
    key = "ch08.forward_accumulator" if "ForwardAccumulator" in label else "ch08.jacobian"
    return Mismatch(message(key, lang, name=label))


# -- ch08-ex2: log1pexp(x) ------------------------------------------------------------------

LOG1PEXP_SPECIAL = (-100.0, -40.0, -1.0, 0.0, 1.0, 40.0, 100.0)
LOG1PEXP_X = np.concatenate([np.array(LOG1PEXP_SPECIAL, np.float32),
                             np.random.default_rng(82).uniform(-30.0, 30.0, 17).astype(np.float32)])
_UPSTREAM_RNG = np.random.default_rng(83)
LOG1PEXP_U = _UPSTREAM_RNG.choice([0.5, -2.0, 3.0, -0.25, 1.5, -4.0], size=LOG1PEXP_X.shape)   # inner tape
LOG1PEXP_W = _UPSTREAM_RNG.choice([2.0, -0.5, 1.5, -3.0, 0.25, 4.0], size=LOG1PEXP_X.shape)    # outer tape
LOG1PEXP_DTYPES = (np.float32, np.float64)
# (dtype, upstream gradients other than 1): each dtype first with upstream gradients 1, then with LOG1PEXP_U, LOG1PEXP_W
LOG1PEXP_PASSES = tuple((dtype, upstream) for dtype in LOG1PEXP_DTYPES for upstream in (False, True))
# Each value and derivative within ULPS · eps · |exact| of the exact one, rounded to the dtype (plus the dtype's
# smallest normal number: TensorFlow's CPU kernels flush subnormal results to zero).  Right formulas land within
# 8 eps (tf.nn.softplus, tf.sigmoid, their products) or about 60 (exp(-softplus(-x)), exact but through an
# exponential of a rounded number); the mistakes below are off by far more (cancellation: 100 %).
ULPS = 64
OVERFLOW_X = 80.0   # above it e^x overflows float32 (88.7)
# The composed pass: d²/dx² sin(log1pexp(x)) in float64.  There the upstream gradient of the first derivative,
# cos(log1pexp(x)), depends on x, so the outer tape differentiates through it too: a first derivative whose
# gradient with respect to its dy is missing or wrong shows only here (the passes above give it a constant dy).
COMPOSED_X = np.array([0.5, 2.0, -1.0, 0.0, 4.0, -3.0, 1.5, 8.0])
# relative to |sin(s)σ²| + |cos(s)σσ(−x)|, the sizes of the two terms (their sum may cancel): right formulas
# land within a few dozen ulps of it, a dy-gradient None or 7 is off by 2e-3 of it (x = -3) to 7 times it
COMPOSED_RTOL = 1e-9


def log1pexp_reference(x: np.ndarray) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """log(1 + e^x), σ(x) and σ(x)σ(−x) in float64, without cancellation."""
    x = np.asarray(x, np.float64)
    e = np.exp(-np.abs(x))
    return np.logaddexp(0.0, x), 1.0 / (1.0 + np.exp(-x)), e / (1.0 + e) ** 2


def composed_reference(x: np.ndarray) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """sin(log1pexp(x)), its first derivative cos(s)σ(x), its second derivative −sin(s)σ(x)² + cos(s)σ(x)σ(−x)
    (s = log1pexp(x)) and the size |sin(s)σ(x)²| + |cos(s)σ(x)σ(−x)| of the two terms of the second, in
    float64."""
    s, first, second = log1pexp_reference(x)
    through_dy, direct = -np.sin(s) * first ** 2, np.cos(s) * second
    return np.sin(s), np.cos(s) * first, through_dy + direct, np.abs(through_dy) + np.abs(direct)


def _close(got: np.ndarray, exact: np.ndarray, dtype) -> np.ndarray:
    """Where ``got`` is within ULPS·eps of ``exact`` rounded to ``dtype`` (relative), or within the dtype's
    smallest normal number (absolute); NaN and inf never are."""
    info = np.finfo(dtype)
    rounded = np.asarray(exact, np.float64).astype(dtype).astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        return np.isfinite(got) & (np.abs(got - rounded) <= ULPS * float(info.eps) * np.abs(rounded)
                                   + float(info.tiny))


def _all_close(got: np.ndarray, exact: np.ndarray, dtype) -> bool:
    return bool(np.all(_close(got, exact, dtype)))


def _log1pexp_pass(answer: Callable, dtype, upstream: bool, custom: Callable[[], Optional[int]], lang: str) -> None:
    """Value, first derivative (inner tape, upstream u) and second derivative (outer tape, upstream w) at
    LOG1PEXP_X in ``dtype``, with u = w = 1 or (``upstream``) LOG1PEXP_U and LOG1PEXP_W; raises Mismatch on
    the first problem.  ``custom()`` says how many tf.custom_gradient calls the answer makes (asked only
    for the message of a second derivative that is 0)."""
    x_np = LOG1PEXP_X.astype(dtype)
    u_np = LOG1PEXP_U.astype(dtype) if upstream else np.ones_like(x_np)
    w_np = LOG1PEXP_W.astype(dtype) if upstream else np.ones_like(x_np)
    u64, w64 = u_np.astype(np.float64), w_np.astype(np.float64)
    value_ref, first_ref, second_ref = log1pexp_reference(x_np)
    name = dtype_name(dtype)

    def at(i):
        return fragment("ch08.at_x", lang, x=fmt(x_np[i]), dtype=name)

    x = tf.constant(x_np)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = call(answer, x, lang=lang, where=fragment("ch08.at_dtype", lang, dtype=name))
        values = returned_tensor(y, lang=lang, where=fragment("ch08.at_dtype", lang, dtype=name), what="common.forward",
                            shape=x_np.shape, dtype=dtype, keep_nonfinite=True)
        bad = np.flatnonzero(~_close(values, value_ref, dtype))
        if bad.size:
            i = int(bad[0])
            infinite = np.flatnonzero(~np.isfinite(values))
            if infinite.size and np.all(x_np[infinite] > OVERFLOW_X) and np.all(values[infinite] == np.inf):
                i = int(infinite[0])
                raise Mismatch(message("ch08.overflow", lang, where=at(i), got=fmt(values[i]), dtype=name))
            if not np.isfinite(values[i]):
                raise Mismatch(message("common.nan", lang, where=at(i), what=fragment("common.forward", lang)))
            text = message("ch08.sp_value", lang, where=at(i), got=fmt(values[i]), expected=fmt(value_ref[i]))
            tiny_lost = values[i] == 0 and value_ref[i] > 0 and x_np[i] < 0
            raise Mismatch(join(text, message("ch08.value_tiny", lang), lang) if tiny_lost else text)
        try:
            g = inner.gradient(y, x, output_gradients=tf.constant(u_np))
        except Exception as err:  # the reader's grad_fn runs here
            raise raised(err, lang, fragment("ch08.at_dtype", lang, dtype=name)) from None
    first_where = fragment("ch08.at_dtype", lang, dtype=name)
    firsts = returned_tensor(g, lang=lang, where=first_where, what="ch08.first_word", shape=x_np.shape, dtype=dtype,
                        none=message("ch08.first_none", lang, where=first_where), keep_nonfinite=True)
    expected = u64 * first_ref
    bad = np.flatnonzero(~_close(firsts, expected, dtype))
    if bad.size:
        i = int(bad[0])
        fields = dict(where=at(i), got=fmt(firsts[i]))
        if not np.isfinite(firsts[i]):
            raise Mismatch(message("ch08.first_nan", lang, **fields))
        if upstream and _all_close(firsts, first_ref, dtype):
            raise Mismatch(message("ch08.first_upstream", lang, dy=fmt(u64[i]), expected=fmt(expected[i]), **fields))
        raise Mismatch(message("ch08.first_value", lang, expected=fmt(expected[i]), **fields))
    if not tensor_like(g):
        raise Mismatch(message("ch08.second_none", lang, where=first_where))
    try:
        h = outer.gradient(g, x, output_gradients=tf.constant(w_np))
    except Exception as err:  # the grad_fn of the reader's first derivative runs here
        raise raised(err, lang, first_where) from None
    seconds = returned_tensor(h, lang=lang, where=first_where, what="ch08.second_word", shape=x_np.shape, dtype=dtype,
                         none=message("ch08.second_none", lang, where=first_where), keep_nonfinite=True)
    expected = w64 * u64 * second_ref
    bad = np.flatnonzero(~_close(seconds, expected, dtype))
    if not bad.size:
        return
    i = int(bad[0])
    fields = dict(where=at(i), got=fmt(seconds[i]))
    if not np.isfinite(seconds[i]):
        raise Mismatch(message("ch08.second_nan", lang, **fields))
    if upstream and any(_all_close(seconds, wrong, dtype) for wrong in
                            (second_ref, u64 * second_ref, w64 * second_ref)):
        raise Mismatch(message("ch08.second_upstream", lang, u=fmt(u64[i]), w=fmt(w64[i]), expected=fmt(expected[i]),
                               **fields))
    text = message("ch08.second_value", lang, expected=fmt(expected[i]), **fields)
    zeros = np.flatnonzero((seconds == 0) & (np.abs(expected) > float(np.finfo(dtype).tiny)) & (x_np > 0))
    if zeros.size:  # 1 - σ(x) cancelled: report the largest x where it did
        i = int(zeros[np.argmax(x_np[zeros])])
        text = message("ch08.second_value", lang, where=at(i), got=fmt(seconds[i]), expected=fmt(expected[i]))
        hint = "ch08.softplus_own" if custom() == 0 else "ch08.second_cancel"
        raise Mismatch(join(text, message(hint, lang), lang))
    raise Mismatch(text)


def _log1pexp_composed_pass(answer: Callable, lang: str) -> None:
    """The first and second derivatives of sin(log1pexp(x)) at COMPOSED_X in float64, within COMPOSED_RTOL of
    the sizes of their terms; raises Mismatch on the first problem.  A wrong second derivative here, after
    the passes with a constant upstream gradient, means that the first derivative's gradient with respect
    to its upstream gradient dy is missing or wrong (ch08.dy_gradient)."""
    dtype = np.float64
    name = dtype_name(dtype)
    where = fragment("ch08.at_dtype", lang, dtype=name)
    _, first_ref, second_ref, size = composed_reference(COMPOSED_X)
    inner_value = log1pexp_reference(COMPOSED_X)[0]   # the answer's own value, log1pexp(x)

    def at(i):
        return fragment("ch08.at_x", lang, x=fmt(COMPOSED_X[i]), dtype=name)

    def first_bad(got, expected, scale):
        with np.errstate(invalid="ignore"):
            bad = np.flatnonzero(~(np.abs(got - expected) <= COMPOSED_RTOL * scale))
        return int(bad[0]) if bad.size else None

    x = tf.constant(COMPOSED_X)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = call(answer, x, lang=lang, where=where)
            values = returned_tensor(y, lang=lang, where=where, what="common.forward", shape=COMPOSED_X.shape,
                                dtype=dtype)
            i = first_bad(values, inner_value, np.abs(inner_value))
            if i is not None:
                raise Mismatch(message("ch08.sp_value", lang, where=at(i), got=fmt(values[i]),
                                       expected=fmt(inner_value[i])))
            z = tf.sin(y)
        try:
            g = inner.gradient(z, x)
        except Exception as err:  # the reader's grad_fn runs here
            raise raised(err, lang, where) from None
    firsts = returned_tensor(g, lang=lang, where=where, what="ch08.first_word", shape=COMPOSED_X.shape, dtype=dtype,
                        none=message("ch08.first_none", lang, where=where))
    i = first_bad(firsts, first_ref, np.abs(first_ref))
    if i is not None:
        raise Mismatch(message("ch08.composed_value", lang, where=at(i), what=fragment("ch08.first_word", lang),
                               got=fmt(firsts[i]), expected=fmt(first_ref[i])))
    if not tensor_like(g):
        raise Mismatch(message("ch08.second_none", lang, where=where))
    try:
        h = outer.gradient(g, x)
    except Exception as err:  # the grad_fn of the reader's first derivative runs here
        raise raised(err, lang, where) from None
    seconds = returned_tensor(h, lang=lang, where=where, what="ch08.second_word", shape=COMPOSED_X.shape, dtype=dtype,
                         none=message("ch08.second_none", lang, where=where))
    i = first_bad(seconds, second_ref, size)
    if i is not None:
        text = message("ch08.composed_value", lang, where=at(i), what=fragment("ch08.second_word", lang),
                       got=fmt(seconds[i]), expected=fmt(second_ref[i]))
        raise Mismatch(join(text, message("ch08.dy_gradient", lang), lang))


def _log1pexp_custom_count(answer: Callable, modules: Sequence[str]) -> Optional[int]:
    """How many tf.custom_gradient calls the value and first derivative make (see :func:`_custom_gradients`)."""
    def value_and_first(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = answer(x)
        return y, tape.gradient(y, x)

    return _custom_gradients(modules, value_and_first, [tf.TensorSpec(LOG1PEXP_X.shape, tf.float32)])


def _check_log1pexp(answer: Callable, lang: str) -> str:
    with _recorded_backward() as modules:
        first_pass: List[str] = []   # what the first pass recorded: one call of each custom gradient

        def custom() -> Optional[int]:
            return _log1pexp_custom_count(answer, first_pass or list(modules))

        for k, (dtype, upstream) in enumerate(LOG1PEXP_PASSES):
            _log1pexp_pass(answer, dtype, upstream, custom, lang)
            if k == 0:
                first_pass.extend(modules)
        _log1pexp_composed_pass(answer, lang)
    found = custom()
    if found == 0:
        raise Mismatch(message("ch08.no_custom", lang))
    if found == 1:
        raise Mismatch(message("ch08.not_nested", lang))
    return message("ch08.log1pexp_passed", lang, n=LOG1PEXP_X.size, ulps=ULPS, tiny=float(np.finfo(np.float32).tiny))


# The likeliest wrong answers, as a reader writes them.

def _stable_softplus(x):
    return tf.maximum(x, 0) + tf.math.log1p(tf.exp(-tf.abs(x)))


def _log1pexp_with(*, value=_stable_softplus, first="nested", second="sigmoids", second_upstream=True,
                   first_upstream=True):
    """A custom-gradient log(1 + e^x) with one step changed.  ``first``: "nested" (σ with a custom gradient of
    its own), "sigmoid" (tf.sigmoid: TensorFlow's gradient of it), "one_minus" (σ computed, its gradient
    σ(1 - σ) written out), "stopped" (tf.stop_gradient(σ)), "ratio" (e^x / (1 + e^x)); ``second``: the nested
    gradient, "sigmoids" σ(x)σ(−x) or "one_minus" σ(1 − σ); ``*_upstream``: multiply by the upstream gradient."""
    @tf.custom_gradient
    def log1pexp(x):
        @tf.custom_gradient
        def sigma(x):
            s = tf.sigmoid(x)
            local = s * tf.sigmoid(-x) if second == "sigmoids" else s * (1 - s)
            return s, (lambda ddy: ddy * local) if second_upstream else (lambda ddy: local)

        def grad_fn(dy):
            if first == "nested":
                slope = sigma(x)
            elif first == "sigmoid":
                slope = tf.sigmoid(x)
            elif first == "stopped":
                slope = tf.stop_gradient(tf.sigmoid(x))
            else:  # "ratio"
                slope = tf.exp(x) / (1 + tf.exp(x))
            return dy * slope if first_upstream else slope
        return value(x), grad_fn
    return log1pexp


def _log1pexp_of_x_and_dy(dy_gradient):
    """The nested first derivative as a custom function of (x, dy) returning dy·σ(x), its grad_fn
    returning ddx·dy·σ(x)σ(−x) for x and ``dy_gradient(ddx, σ(x))`` for dy (None: None; right: ddx·σ(x))."""
    @tf.custom_gradient
    def log1pexp(x):
        @tf.custom_gradient
        def first(x, dy):
            s, t = tf.sigmoid(x), tf.sigmoid(-x)

            def grad_fn(ddx):
                return ddx * dy * s * t, (None if dy_gradient is None else dy_gradient(ddx, s))
            return dy * s, grad_fn
        return _stable_softplus(x), lambda dy: first(x, dy)
    return log1pexp


def _log1pexp_numpy_backward(x):  # the backward pass in NumPy: no second derivative
    @tf.custom_gradient
    def op(x):
        def grad_fn(dy):
            slope = 1.0 / (1.0 + np.exp(-x.numpy().astype(np.float64)))
            return dy * slope.astype(x.dtype.as_numpy_dtype)
        return _stable_softplus(x), grad_fn
    return op(x)


@exercise("ch08-ex2", answer="log1pexp", wrong_answers=[
    ("the naive log(1 + exp(x))", _log1pexp_with(value=lambda x: tf.math.log(1 + tf.exp(x))), "ch08.overflow"),
    ("plain tf.nn.softplus", tf.nn.softplus, "ch08.softplus_own"),
    ("grad_fn dy * tf.sigmoid(x)", _log1pexp_with(first="sigmoid"), "ch08.second_cancel"),
    ("nested gradient σ(1 − σ)", _log1pexp_with(second="one_minus"), "ch08.second_cancel"),
    ("grad_fn with tf.stop_gradient", _log1pexp_with(first="stopped"), "ch08.second_none"),
    ("grad_fn in NumPy", _log1pexp_numpy_backward, "ch08.second_none"),
    ("nested grad_fn ignores its upstream gradient", _log1pexp_with(second_upstream=False), "ch08.second_upstream"),
    ("grad_fn ignores dy", _log1pexp_with(first_upstream=False), "ch08.first_upstream"),
    ("first derivative e^x / (1 + e^x)", _log1pexp_with(first="ratio"), "ch08.first_nan"),
    ("log(1 + exp(-|x|)) without log1p", _log1pexp_with(
        value=lambda x: tf.maximum(x, 0) + tf.math.log(1 + tf.exp(-tf.abs(x)))), "ch08.value_tiny"),
    ("nested function of (x, dy), None for dy", _log1pexp_of_x_and_dy(None), "ch08.dy_gradient"),
    ("nested function of (x, dy), 7 for dy", _log1pexp_of_x_and_dy(lambda ddx, s: 7.0 * ddx), "ch08.dy_gradient"),
])
def check_log1pexp(answer, lang):
    return _check_log1pexp(answer, lang)


# -- ch08-ex3: kepler(M, e) -----------------------------------------------------------------

def _kepler_points():
    special = [(0.5, 0.0), (-2.0, 0.0), (0.0, 0.3), (math.pi, 0.5), (-1.2, 0.4), (2 * math.pi + 1, 0.6),
               (2.0, 0.1), (0.0, 0.9), (1.0, 0.9), (math.pi, 0.9), (-2.5, 0.9), (2 * math.pi + 1, 0.9), (0.3, 0.9),
               (0.02, 0.9), (-0.02, 0.9), (3.1, 0.9)]   # the last three: E near 0 or π, |e cos E| near 0.9, slow
    rng = np.random.default_rng(84)
    random = np.stack([rng.uniform(-4.0, 8.0, 5), rng.uniform(0.0, 0.9, 5)], axis=1)
    pairs = np.concatenate([np.array(special), random])
    upstream = rng.choice([2.0, -0.5, 3.0, 1.5, -1.0, 0.25], size=len(pairs))
    return pairs[:, 0], pairs[:, 1], upstream


KEPLER_M, KEPLER_E, KEPLER_UPSTREAM = _kepler_points()
KEPLER_DTYPES = (np.float64, np.float32)
KEPLER_RESIDUAL = {np.float64: 1e-12, np.float32: 1e-5}   # |E - e sin E - M| at most
KEPLER_GRAD_TOLERANCES = {np.float64: dict(rtol=1e-8, atol=1e-10), np.float32: dict(rtol=1e-3, atol=1e-5)}
NOT_CONVERGED_GAP = 0.5   # a wrong E this close to the solution is taken for an unfinished iteration
KEPLER_LIBRARY = (("gradlib", "fixed_point"), ("gradlib.higher", "fixed_point"))
NONE_KEYS = {"M": "ch08.m_none", "e": "ch08.e_none"}


def kepler_reference(M: np.ndarray, e: np.ndarray) -> np.ndarray:
    """E with E - e sin E = M by Newton's method in float64, from Danby's start M + 0.85 e sign(sin M)."""
    M, e = np.asarray(M, np.float64), np.asarray(e, np.float64)
    E = M + 0.85 * e * np.sign(np.sin(M))
    for _ in range(50):
        E = E - (E - e * np.sin(E) - M) / (1.0 - e * np.cos(E))
    return E


def _kepler_residual(E, M, e) -> np.ndarray:
    return np.asarray(E, np.float64) - np.asarray(e, np.float64) * np.sin(E) - np.asarray(M, np.float64)


def _gradient_error(err: BaseException, lang: str, where: str) -> Mismatch:
    detail = describe(err, lang)
    if "gradients, but returned" in detail:
        return Mismatch(message("ch08.gradient_count", lang, where=where, detail=detail))
    return raised(err, lang, where)


def _kepler_pass(answer: Callable, dtype, custom: Callable[[], Optional[int]], unrolled: List[bool],
                 lang: str) -> None:
    """E, its residual and its gradients for KEPLER_UPSTREAM at KEPLER_M, KEPLER_E in ``dtype``; raises Mismatch
    on the first problem.  ``custom()`` says how many tf.custom_gradient calls the answer makes (asked only
    for a wrong gradient); ``unrolled`` gets whether the backward pass went through the iterations
    (:func:`_backward_size`).  A wrong gradient without a custom gradient is the derivative of the last
    iterate, which lags behind it, when the backward pass went through the iterations."""
    name = dtype_name(dtype)
    M_np, e_np, w_np = KEPLER_M.astype(dtype), KEPLER_E.astype(dtype), KEPLER_UPSTREAM.astype(dtype)
    M64, e64, w64 = M_np.astype(np.float64), e_np.astype(np.float64), w_np.astype(np.float64)
    E_ref = kepler_reference(M64, e64)
    where = fragment("ch08.at_dtype", lang, dtype=name)

    def at(i):
        return fragment("ch08.at_Me", lang, M=fmt(M_np[i]), e=fmt(e_np[i]), dtype=name)

    M, e = tf.constant(M_np), tf.constant(e_np)
    with tf.GradientTape() as tape:
        tape.watch([M, e])
        E = call(answer, M, e, lang=lang, where=where)
    values = returned_tensor(E, lang=lang, where=where, what="common.result", shape=M_np.shape, dtype=dtype)
    residual = _kepler_residual(values, M64, e64)
    bad = np.flatnonzero(~(np.abs(residual) <= KEPLER_RESIDUAL[dtype]))
    if bad.size:
        i = int(bad[0])
        text = message("ch08.kepler_value", lang, where=at(i), got=fmt(values[i]), residual=f"{residual[i]:.2g}",
                       expected=fmt(E_ref[i]), tol=f"{KEPLER_RESIDUAL[dtype]:g}")
        if abs(values[i] - E_ref[i]) <= NOT_CONVERGED_GAP:
            raise Mismatch(join(text, message("ch08.not_converged", lang, e=fmt(e_np[i])), lang))
        raise Mismatch(text)
    try:
        with _backward_size() as sizes:
            grads = tape.gradient(E, [M, e], output_gradients=tf.constant(w_np))
    except Exception as err:  # the reader's grad_fn runs here
        raise _gradient_error(err, lang, where) from None
    unrolled.append(_through_iterations(sizes))
    slope = 1.0 / (1.0 - e64 * np.cos(E_ref))
    expected_M, expected_e = w64 * slope, w64 * np.sin(E_ref) * slope
    wrong_sign = 1.0 / (1.0 + e64 * np.cos(E_ref))
    table = {
        "M": (expected_M, [("ch08.kepler_upstream", slope), ("ch08.sign_error", w64 * wrong_sign)]),
        "e": (expected_e, [("ch08.missing_sin", w64 * slope), ("ch08.missing_sin", slope),
                           ("ch08.kepler_upstream", np.sin(E_ref) * slope),
                           ("ch08.sign_error", w64 * np.sin(E_ref) * wrong_sign)]),
    }
    tolerances = KEPLER_GRAD_TOLERANCES[dtype]
    for grad, input_name in zip(grads, ("M", "e")):
        expected, mistakes = table[input_name]
        got = returned_tensor(grad, lang=lang, where=where, what="common.gradient", shape=M_np.shape, dtype=dtype,
                         none=message(NONE_KEYS[input_name], lang, where=where))
        i = next((k for k in range(got.size)
                  if not np.isclose(got[k], expected[k], **tolerances)), None)
        if i is None:
            continue
        text = message("ch08.kepler_grad", lang, where=at(i), name=input_name, w=fmt(w64[i]), got=fmt(got[i]),
                       expected=fmt(expected[i]))
        if custom() == 0 and unrolled[-1]:
            raise Mismatch(join(text, message("ch08.unrolled_lags", lang), lang))
        mistake = first_mistake(got, expected, mistakes, **tolerances)
        if mistake:
            raise Mismatch(join(text, message(mistake, lang), lang))
        raise Mismatch(join(text, message("ch08.custom_missing", lang), lang) if custom() == 0 else text)


def _check_kepler(answer: Callable, lang: str) -> str:
    specs = [tf.TensorSpec(KEPLER_M.shape, tf.float64)] * 2
    unrolled: List[bool] = []        # for each pass: whether its backward pass went through the iterations
    with _recorded_backward() as modules:
        first_pass: List[str] = []   # what the first pass recorded
        found: List[Optional[int]] = []

        def custom() -> Optional[int]:
            if not found:
                found.append(_custom_gradients(first_pass or list(modules), lambda M, e: answer(M, e), specs))
            return found[0]

        for k, dtype in enumerate(KEPLER_DTYPES):
            _kepler_pass(answer, dtype, custom, unrolled, lang)
            if k == 0:
                first_pass.extend(modules)
    if custom() == 0:   # "unrolled" only when the backward pass went through the iterations
        raise Mismatch(message("ch08.unrolled" if any(unrolled) else "ch08.kepler_no_custom", lang))
    return message("ch08.kepler_passed", lang, n=KEPLER_M.size)


# The likeliest wrong answers, as a reader writes them.

def _kepler_iterate(M, e, steps=None):
    """The fixed-point iteration, to convergence (``steps`` None) or a fixed number of steps."""
    tol = 8 * np.finfo(M.dtype.as_numpy_dtype).eps * (1 + tf.abs(M))
    E = M
    for _ in range(steps or 10_000):
        E_new = M + e * tf.sin(E)
        done = steps is None and bool(tf.reduce_all(tf.abs(E_new - E) <= tol))
        E = E_new
        if done:
            break
    return E


def _kepler_with(*, steps=None, grad="implicit"):
    """A custom-gradient Kepler solver with one step changed: ``steps`` a fixed number of iterations;
    ``grad``: "implicit", "no_sin" (∂E/∂e without sin E), "plus" (1/(1 + e cos E)), "no_e" (None for e),
    "one" (one gradient for two inputs), "no_dy" (dE ignored)."""
    def kepler(M, e):
        @tf.custom_gradient
        def solve(M, e):
            E = _kepler_iterate(tf.stop_gradient(M), tf.stop_gradient(e), steps)

            def grad_fn(dE):
                d = 1 + e * tf.cos(E) if grad == "plus" else 1 - e * tf.cos(E)
                dM, de = dE / d, dE * tf.sin(E) / d
                if grad == "no_sin":
                    return dM, dE / d
                if grad == "no_e":
                    return dM, None
                if grad == "one":
                    return dM
                if grad == "no_dy":
                    return 1 / d, tf.sin(E) / d
                return dM, de
            return E, grad_fn
        return solve(M, e)
    return kepler


def _kepler_unrolled(M, e):  # no custom gradient: autodiff through 1000 iterations (the derivative has caught up)
    return _kepler_iterate(M, e, steps=1000)


def _kepler_unrolled_to_tolerance(M, e):  # autodiff through the iterations until E stops changing: the derivative lags
    return _kepler_iterate(M, e)


def _kepler_newton_correction(M, e):
    """No custom gradient, and the iterations not recorded either: one Newton step at the stopped solution,
    E − (E − e sin E − M)/stop_gradient(1 − e cos E), whose autodiff gradient is the implicit one."""
    E = tf.stop_gradient(_kepler_iterate(tf.stop_gradient(M), tf.stop_gradient(e)))
    return E - (E - e * tf.sin(E) - M) / tf.stop_gradient(1 - e * tf.cos(E))


def _kepler_library(M, e):  # gradlib's solver, which the exercise asks the reader to write
    import gradlib
    return gradlib.fixed_point(lambda E, M, e: M + e * tf.sin(E), M, M, e)


@exercise("ch08-ex3", answer="kepler", wrong_answers=[
    ("a fixed 50 iterations", _kepler_with(steps=50), "ch08.not_converged"),
    ("∂E/∂e without sin E", _kepler_with(grad="no_sin"), "ch08.missing_sin"),
    ("1/(1 + e cos E)", _kepler_with(grad="plus"), "ch08.sign_error"),
    ("None for e", _kepler_with(grad="no_e"), "ch08.e_none"),
    ("one gradient for two inputs", _kepler_with(grad="one"), "ch08.gradient_count"),
    ("dE ignored", _kepler_with(grad="no_dy"), "ch08.kepler_upstream"),
    ("unrolled, no custom gradient", _kepler_unrolled, "ch08.unrolled"),
    ("unrolled until E stops changing", _kepler_unrolled_to_tolerance, "ch08.unrolled_lags"),
    ("a stop_gradient Newton correction, no custom gradient", _kepler_newton_correction, "ch08.kepler_no_custom"),
    ("gradlib.fixed_point", _kepler_library, "ch08.library_fixed_point"),
])
def check_kepler(answer, lang):
    return refuse_library(_check_kepler, answer, lang, names=KEPLER_LIBRARY, key="ch08.library_fixed_point")
