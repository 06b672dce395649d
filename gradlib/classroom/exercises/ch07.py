r"""Checks for chapter 7: custom gradients inside Keras layers.

* ``ch07-ex1``: ``GradScaledDense(units, multiplier=1.0)``, a Keras 3 layer (the
  answer is the class) with a trainable ``self.kernel`` of shape
  (input_dim, units) and a non-trainable scalar weight ``self.multiplier``;
  forward :math:`y = x K` (no bias), backward through a custom gradient
  (``tf.custom_gradient`` or ``gradlib.strict_custom_gradient``) with
  :math:`\partial L/\partial x = \bar y K^\top` and
  :math:`\partial L/\partial K = m\, x^\top \bar y`, :math:`m` the current
  value of ``self.multiplier``, the kernel's gradient returned through
  ``grad_fn``'s ``variables`` keyword in the variable's dtype.  Checked at
  m = 0.5 (the constructor's argument), then m = 2 and m = 0 set with
  ``layer.multiplier.assign`` on the same layer, with upstream gradients other
  than 1 and a kernel with exact zeros and negative entries; then under
  ``mixed_float16`` (the kernel reads as float16 inside ``call``, ``dy`` is
  float16, the variables are float32: the kernel's gradient must be float32,
  and ``grad_fn`` must not read ``self.kernel`` again); then two
  ``model.fit`` steps of a ``keras.Sequential`` with a ``Dense`` layer below
  (m = 0.5, then m = 0 by ``assign``: the compiled train step applies the
  custom gradient and sees the new m; at m = 0 the kernel stays where it is
  while the layer below still learns).  The data are dyadic numbers, so
  float16 computes them exactly.
* ``ch07-ex2``: ``ternary(w)``, the kernel quantizer of Ternary Weight
  Networks (F. Li, B. Zhang, B. Liu, arXiv:1605.04711, 2016, eqs. (6) and
  (9)): :math:`\Delta = 0.7\,\mathrm{mean}|w|` over the whole tensor,
  :math:`\alpha` the mean of :math:`|w_i|` over the weights with
  :math:`|w_i| > \Delta` (strict), forward
  :math:`\alpha\,\mathrm{sign}(w)\,\mathbb 1\{|w| > \Delta\}`, backward straight
  through (:math:`\partial L/\partial w = \partial L/\partial y`, neither
  :math:`\Delta` nor :math:`\alpha` differentiated); the result has ``w``'s
  dtype.  A :class:`WholeTensor` spec (``TERNARY``) on a kernel where two
  weights equal :math:`\Delta` exactly in float32 (the strict ``>``) and zeros
  are present, and on a random kernel; then an all-zero kernel (:math:`\Delta = 0`,
  nothing above it, :math:`\alpha` the mean of an empty set: the expected value
  is all zeros, never NaN), a float16 kernel (float16 result; no weight near
  :math:`\Delta` there, because 0.7 rounds to 0.7001953125 in float16 and where a
  tie lands would depend on the order of the reader's operations), and a
  ``.keras`` round trip of a model holding
  ``gradlib.QuantizedDense(3, kernel_quantizer=answer)``, which needs the
  function registered with ``@keras.saving.register_keras_serializable``.

Every reference below is an independent NumPy formula (float64).  The
answers are called with positional arguments only (``answer(units,
multiplier)``, ``answer(w)``).

Registration (ex2): an answer registered under a name that a later
registration took over (a cell run again registers a new function under the
same name) is put back under its name for the round trip, in Keras's live
registry (``keras.saving.get_custom_objects()``), and the registry is
restored afterwards: the check tests the function it was given.

The answer of ex1 may also be any callable that returns such a layer (the
grader and the tests pass wrappers); a layer *object* gets its own message
(pass the class).  Right values and gradients from plain autodiff (the
stop_gradient trick ``m·K + tf.stop_gradient((1 - m)·K)``) are refused at
the end, as in ch04-ex2 and ch06-ex1: the exercise asks for a ``grad_fn``
(:func:`uses_custom_gradient` looks for ``tf.custom_gradient`` in the traced
call).

Typical mistakes with a message of their own: ex1, ``grad_fn`` without the
``variables`` keyword (or without the list of variables' gradients), the
kernel's gradient not multiplied by m (plain autodiff, or a ``grad_fn``
without it), m read once as a Python number, ``multiplier`` trainable or not
a weight, ``grad_fn`` reading ``self.kernel`` again (fails under
``mixed_float16`` only), a float16 kernel gradient (plain
``tf.custom_gradient`` passes it on; ``strict_custom_gradient`` raises),
dx multiplied by m too, the transposed kernel gradient, m read with
``.numpy()`` (fails in ``model.fit``), m in the forward pass, no custom
gradient; ex2, Δ from max|w| or from the signed mean, α over all the
weights, no α, ``>=`` instead of ``>``, no straight-through (plain autodiff,
or no gradient), the gradient multiplied by α or masked, ``dy`` ignored, NaN
on an all-zero kernel, a float32 result (or a float32 constant that fails)
for a float16 kernel, a function that is not registered, and a registered
``@tf.custom_gradient`` object (Keras saves it but cannot load it: the
custom gradient belongs inside a plain registered function).

An exception that Keras, TensorFlow or ``QuantizedDense`` raises on what the
reader's code returned, with no frame of the reader's code in between, is
not blamed on the reader ("TensorFlow could not use what your code
returned", ``ch07.library_raised``).
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
import types
from typing import Any, Callable, Iterator, List, Optional, Sequence

import keras
import numpy as np
import tensorflow as tf

from ...checks import strict_custom_gradient
from ...logs import captured_tf_warnings
from ._core import (PROPAGATE, Mismatch, WholeTensor, _raised_by_check, as_array, call, check_whole, describe,
                    exercise, first_mismatch, fmt, fragment, join, message, require_tensor, to_array)


# -- shared helpers -----------------------------------------------------------------

_BOLD = re.compile(r"\x1b\[1m(.*?)\x1b\[0m", re.S)


def _detail(err: BaseException, lang: str) -> str:
    """The first line of an exception's message, without Keras's "Exception encountered when
    calling ..." frame and TensorFlow's "{{function_node ...}}" prefix and "[Op:...]" suffix."""
    try:
        text = str(err)
    except PROPAGATE:
        raise
    except BaseException:  # a reader's __str__ that raises
        text = ""
    found = _BOLD.search(text)
    if text.startswith("Exception encountered when calling") and found and found.group(1).strip():
        err = Exception(found.group(1).strip())  # the reader's own exception, which Keras wrapped
    detail = describe(err, lang)
    if detail.startswith("{{") and "}}" in detail:
        detail = detail.split("}}", 1)[1].strip() or detail
    if " [Op:" in detail:
        detail = detail.split(" [Op:", 1)[0].strip() or detail
    return detail


def _listing(values, lang: str) -> str:
    """``0.5, 2 and 0`` in English; ``0.5、2 和 0`` in Chinese."""
    items = [fmt(v) for v in values]
    if len(items) < 2:
        return "".join(items)
    return ("、".join(items[:-1]) + " 和 " if lang == "zh" else ", ".join(items[:-1]) + " and ") + items[-1]


def _raised(err: BaseException, lang: str, where: str = "") -> Mismatch:
    """"your code raised ..." for an exception raised in the reader's code; "TensorFlow could not use what
    your code returned" for one that a library (Keras, TensorFlow, gradlib.QuantizedDense) raised on
    a result of the reader's code, with no frame of the reader's code in between (``_raised_by_check``)."""
    key = "ch07.library_raised" if _raised_by_check(err, _raised) else "common.raised"
    return Mismatch(message(key, lang, where=where, error=type(err).__name__, detail=_detail(err, lang)))


def _row_problem(lang: str, key: str, got: np.ndarray, expected: np.ndarray, *, rtol: float, atol: float,
                 **values) -> Optional[Mismatch]:
    """The message ``key`` (fields ``row``, ``got``, ``expected`` and ``values``) for the first row of
    ``got`` that differs from ``expected``; None when they agree."""
    i = first_mismatch(got, expected, rtol=rtol, atol=atol)
    if i is None:
        return None
    row = i // got.shape[-1] if got.ndim > 1 else 0
    return Mismatch(message(key, lang, row=row, got=fmt(got[row]), expected=fmt(expected[row]), **values))


# -- ch07-ex1: GradScaledDense ------------------------------------------------------

IN, UNITS = 4, 3
# Dyadic numbers: float16 computes every product and sum below exactly.
X = np.array([[1.0, -2.0, 0.5, 3.0],
              [0.0, 1.5, -1.0, 2.0],
              [-0.5, 0.0, 2.0, -1.0]], np.float32)
KERNEL = np.array([[0.5, -1.0, 0.0],       # exact zeros and negative entries, not square
                   [0.0, 0.25, -0.75],
                   [1.5, 0.0, -2.0],
                   [-0.5, 1.0, 0.125]], np.float32)
UPSTREAM = np.array([[2.0, -1.0, 0.5],
                     [-3.0, 0.5, 1.0],
                     [1.5, 2.0, -0.5]], np.float32)
MULTIPLIER = 0.5           # the constructor's argument
ASSIGNED = (2.0, 0.0)      # then set with layer.multiplier.assign, on the same layer
RTOL, ATOL = 1e-5, 1e-5
HALF_RTOL, HALF_ATOL = 1e-3, 1e-3

# model.fit: Input(2) -> Dense(4, no bias) -> the reader's layer, SGD, mean squared error, one batch.
FIT_X = np.array([[1.0, 0.5], [-1.0, 2.0], [0.5, -1.5], [2.0, 0.0]], np.float32)
FIT_BELOW = np.array([[0.5, -0.25, 1.0, 0.0], [0.25, 0.5, -0.5, 1.0]], np.float32)
FIT_TARGET = np.array([[1.0, 0.0, -1.0], [0.5, 0.5, 0.0], [-1.0, 1.0, 0.5], [0.0, -0.5, 1.0]], np.float32)
FIT_RATE = 0.1
FIT_MULTIPLIERS = (0.5, 0.0)   # the first step at the constructor's m, the second after assign(0.0)


def dense_reference(x: np.ndarray, kernel: np.ndarray, upstream: np.ndarray, m: float):
    """y = x K, dL/dx = dy K^T, dL/dK = m x^T dy (float64)."""
    x, kernel, upstream = (np.asarray(a, np.float64) for a in (x, kernel, upstream))
    return x @ kernel, upstream @ kernel.T, m * (x.T @ upstream)


def fit_step_reference(below: np.ndarray, kernel: np.ndarray, m: float):
    """One SGD step of mean squared error through Dense(below) then the reader's layer: the new
    (below, kernel), in float64."""
    below, kernel = np.asarray(below, np.float64), np.asarray(kernel, np.float64)
    hidden = FIT_X.astype(np.float64) @ below
    y = hidden @ kernel
    dy = 2.0 * (y - FIT_TARGET) / y.size
    return below - FIT_RATE * FIT_X.T.astype(np.float64) @ (dy @ kernel.T), kernel - FIT_RATE * m * hidden.T @ dy


def _call_text(m: float) -> str:
    return f"GradScaledDense({UNITS}, {fmt(m)})"


def _make_layer(answer: Callable, m: float, lang: str):
    """``answer(UNITS, m)``, which must be a Keras layer."""
    text = _call_text(m)
    layer = call(answer, UNITS, m, lang=lang, where=fragment("ch07.when_created", lang, call=text))
    if not isinstance(layer, keras.layers.Layer):
        kind = "None" if layer is None else type(layer).__name__
        raise Mismatch(message("ch07.not_layer", lang, call=text, kind=kind))
    return layer


def _layer_error(err: BaseException, lang: str, where: str, *, mixed: bool = False, backward: bool = False,
                 graph: bool = False) -> Mismatch:
    """The message for an exception raised while calling the reader's layer or taking its gradient."""
    detail = _detail(err, lang)
    fields = dict(where=where, error=type(err).__name__, detail=detail.rstrip("."))  # a sentence follows
    if "must accept keyword argument 'variables'" in detail:
        return Mismatch(message("ch07.no_variables", lang, where=where))
    if ("Must return gradient for each variable" in detail or "values to unpack" in detail
            or "cannot unpack" in detail):
        return Mismatch(message("ch07.variables_list", lang, **fields))
    if graph and ("only available when eager execution" in detail or "numpy()" in detail
                  or "symbolic" in detail.lower()):
        return Mismatch(message("ch07.fit_numpy", lang, **fields))
    if mixed and backward and type(err).__name__ == "GradientError" and "dtype" in detail:
        return Mismatch(message("ch07.grad_dtype", lang,
                                what=fragment("ch07.grad_dtype_raised", lang, detail=detail.rstrip("."))))
    if mixed and backward and "MatMul" in detail and ("half" in detail or "float16" in detail):
        return Mismatch(message("ch07.reread_kernel", lang, **fields))
    if mixed and ("half" in detail or "float16" in detail or "dtype" in detail):
        return Mismatch(message("ch07.mixed_raised", lang, **fields))
    return _raised(err, lang, where)


def _run_layer(layer, x: np.ndarray, lang: str, where: str, *, mixed: bool = False):
    """Call the reader's layer on ``x`` under a tape; return (tape, input tensor, output)."""
    xt = tf.constant(x)
    try:
        with tf.GradientTape() as tape:
            tape.watch(xt)
            y = layer(xt)
    except (Mismatch, *PROPAGATE):
        raise
    except BaseException as err:  # the reader's code may raise anything
        raise _layer_error(err, lang, where, mixed=mixed) from None
    return tape, xt, y


def _weights(layer, lang: str):
    """The layer's kernel and multiplier, after its first call; their kind and place are checked."""
    try:
        trainable, everything = list(layer.trainable_weights), list(layer.weights)
        kernel = getattr(layer, "kernel", None)
        multiplier = getattr(layer, "multiplier", None)
    except PROPAGATE:
        raise
    except BaseException as err:  # a reader's property that raises
        raise _raised(err, lang) from None
    found = ", ".join(f"{getattr(w, 'name', '?')} {list(getattr(w, 'shape', ()))}" for w in trainable) or "—"
    if (not isinstance(kernel, keras.Variable) or not any(kernel is w for w in trainable)
            or tuple(kernel.shape) != (IN, UNITS)):
        raise Mismatch(message("ch07.no_kernel", lang, expected=[IN, UNITS], found=found))
    if not isinstance(multiplier, keras.Variable) or not any(multiplier is w for w in everything):
        kind = fragment("ch07.missing", lang) if multiplier is None else type(multiplier).__name__
        raise Mismatch(message("ch07.multiplier_not_weight", lang, kind=kind))
    if multiplier.trainable or any(multiplier is w for w in trainable):
        raise Mismatch(message("ch07.multiplier_trainable", lang))
    if int(np.prod(multiplier.shape)) != 1:
        raise Mismatch(message("ch07.multiplier_shape", lang, shape=list(multiplier.shape)))
    return kernel, multiplier


def _set(variable, value) -> None:
    variable.assign(np.full(tuple(variable.shape), value, np.dtype(variable.dtype)) if np.ndim(value) == 0
                    else np.asarray(value, np.dtype(variable.dtype)))


def _gradients(tape, y, xt, kernel, lang: str, where: str, *, mixed: bool = False):
    """dL/dx and dL/dK for the upstream gradient UPSTREAM (in y's dtype)."""
    try:
        upstream = tf.cast(tf.constant(UPSTREAM), y.dtype)
        return tape.gradient(y, [xt, kernel], output_gradients=upstream)
    except (Mismatch, *PROPAGATE):
        raise
    except BaseException as err:  # the reader's grad_fn runs here
        raise _layer_error(err, lang, where, mixed=mixed, backward=True) from None


def _forward(y, m: float, lang: str, where: str, rtol: float, atol: float) -> None:
    value, _, _ = dense_reference(X, KERNEL, UPSTREAM, m)
    got = as_array(y, lang=lang, what="forward", where=where, shape=value.shape)
    require_tensor(y, lang=lang, where=where)
    problem = _row_problem(lang, "ch07.value", got, value, rtol=rtol, atol=atol, where=where)
    if problem is not None:
        hint = "ch07.forward_scaled" if m and np.allclose(got, m * value, rtol=rtol, atol=atol) else None
        raise Mismatch(join(str(problem), message(hint, lang), lang)) if hint else problem


def _input_gradient(dx, m: float, lang: str, where: str, rtol: float, atol: float) -> None:
    _, expected, _ = dense_reference(X, KERNEL, UPSTREAM, m)
    if dx is None:
        raise Mismatch(message("ch07.dx_none", lang, where=where))
    got = as_array(dx, lang=lang, what="gradient", where=where, shape=expected.shape)
    problem = _row_problem(lang, "ch07.dx_value", got, expected, rtol=rtol, atol=atol, where=where)
    if problem is not None:
        scaled = m not in (0.0, 1.0) and np.allclose(got, m * expected, rtol=rtol, atol=atol)
        raise Mismatch(join(str(problem), message("ch07.dx_scaled", lang), lang)) if scaled else problem


def _kernel_gradient(dk, m: float, earlier: Sequence[float], lang: str, where: str, rtol: float, atol: float,
                     kernel_dtype) -> None:
    """dL/dK = m x^T dy; ``earlier`` holds the values m had before (a frozen m reproduces one of them)."""
    _, _, expected = dense_reference(X, KERNEL, UPSTREAM, m)
    if dk is None:
        raise Mismatch(message("ch07.kernel_none", lang, where=where))
    array = to_array(dk)
    if array is not None and array.ndim == 2 and tuple(array.shape) == (UNITS, IN):
        raise Mismatch(message("ch07.transposed", lang, where=where, got=[UNITS, IN], expected=[IN, UNITS]))
    got = as_array(dk, lang=lang, what="gradient", where=where, shape=expected.shape)
    if tf.as_dtype(getattr(dk, "dtype", got.dtype)) != tf.as_dtype(kernel_dtype):
        raise Mismatch(message("ch07.grad_dtype", lang, what=fragment(
            "ch07.grad_dtype_returned", lang, got=tf.as_dtype(dk.dtype).name, expected=tf.as_dtype(kernel_dtype).name)))
    i = first_mismatch(got, expected, rtol=rtol, atol=atol)
    if i is None:
        return
    row = i // UNITS
    plain = dense_reference(X, KERNEL, UPSTREAM, 1.0)[2]
    text = message("ch07.kernel_value", lang, where=where, m=fmt(m), row=row, got=fmt(got[row]),
                   expected=fmt(expected[row]))
    if m != 1.0 and np.allclose(got, plain, rtol=rtol, atol=atol):
        raise Mismatch(join(text, message("ch07.not_scaled", lang), lang))
    for old in earlier:
        if np.allclose(got, old * plain, rtol=rtol, atol=atol):
            raise Mismatch(join(text, message("ch07.multiplier_frozen", lang, old=fmt(old), m=fmt(m)), lang))
    if m != 0.0 and np.allclose(got, m * X.T.astype(np.float64) @ np.ones_like(UPSTREAM, np.float64),
                                rtol=rtol, atol=atol):
        raise Mismatch(join(text, message("ch07.kernel_upstream", lang), lang))
    raise Mismatch(text)


def _check_float32(answer: Callable, lang: str):
    """m = 0.5, then 2 and 0 by assign on the same layer: value, dL/dx, dL/dK.  Returns the layer."""
    layer = _make_layer(answer, MULTIPLIER, lang)
    where = fragment("ch07.when_called", lang, m=fmt(MULTIPLIER))
    _run_layer(layer, X, lang, where)  # builds the layer
    kernel, multiplier = _weights(layer, lang)
    got = float(np.ravel(multiplier.numpy())[0])
    if got != MULTIPLIER:
        raise Mismatch(message("ch07.multiplier_initial", lang, call=_call_text(MULTIPLIER), got=fmt(got),
                               expected=fmt(MULTIPLIER)))
    _set(kernel, KERNEL)
    earlier: List[float] = []
    for m in (MULTIPLIER, *ASSIGNED):
        if m != MULTIPLIER:
            _set(multiplier, m)
        where = fragment("ch07.when_called", lang, m=fmt(m))
        tape, xt, y = _run_layer(layer, X, lang, where)
        _forward(y, m, lang, where, RTOL, ATOL)
        dx, dk = _gradients(tape, y, xt, kernel, lang, where)
        _input_gradient(dx, m, lang, where, RTOL, ATOL)
        _kernel_gradient(dk, m, earlier, lang, where, RTOL, ATOL, kernel.dtype)
        earlier.append(m)
    return layer


def uses_custom_gradient(layer) -> Optional[bool]:
    """Whether the layer's call, traced in a tf.function, contains a tf.custom_gradient (which marks the
    IdentityN op it adds to a graph with a ``_gradient_op_type`` attribute; gradlib.strict_custom_gradient
    is built on it); None when the call cannot be traced."""
    def scoped(v):
        with tf.name_scope("check"):  # a layer's own name (e.g. "_my_layer") need not be a valid root scope
            return layer(v)

    try:
        with captured_tf_warnings():
            traced = tf.function(scoped, autograph=False)
            graph_def = traced.get_concrete_function(tf.TensorSpec(X.shape, tf.float32)).graph.as_graph_def()
    except PROPAGATE:
        raise
    except BaseException:  # the reader's code may raise anything while it is traced
        return None
    nodes = list(graph_def.node) + [node for function in graph_def.library.function for node in function.node_def]
    return any(node.op == "IdentityN" and "_gradient_op_type" in node.attr for node in nodes)


@contextlib.contextmanager
def _policy(name: str) -> Iterator[None]:
    """Keras's global dtype policy set to ``name`` inside the block, the previous one restored after."""
    previous = keras.mixed_precision.global_policy()
    try:
        keras.mixed_precision.set_global_policy(name)
        yield
    finally:
        keras.mixed_precision.set_global_policy(previous)


def _check_mixed(answer: Callable, lang: str) -> None:
    """Under mixed_float16: values, dL/dx, and a float32 dL/dK (the variable's dtype)."""
    where = fragment("ch07.when_mixed", lang, m=fmt(MULTIPLIER))
    with _policy("mixed_float16"):
        layer = _make_layer(answer, MULTIPLIER, lang)
        _run_layer(layer, X, lang, where, mixed=True)
        kernel, _ = _weights(layer, lang)
        _set(kernel, KERNEL)
        tape, xt, y = _run_layer(layer, X, lang, where, mixed=True)
        _forward(y, MULTIPLIER, lang, where, HALF_RTOL, HALF_ATOL)
        dx, dk = _gradients(tape, y, xt, kernel, lang, where, mixed=True)
        _input_gradient(dx, MULTIPLIER, lang, where, HALF_RTOL, HALF_ATOL)
        _kernel_gradient(dk, MULTIPLIER, (), lang, where, HALF_RTOL, HALF_ATOL, kernel.dtype)


def _check_fit(answer: Callable, lang: str) -> None:
    """Two model.fit steps (m = 0.5, then 0 by assign): fit applies the custom gradient, and the
    compiled train step reads the new m."""
    top = _make_layer(answer, FIT_MULTIPLIERS[0], lang)
    below = keras.layers.Dense(IN, use_bias=False)
    try:
        model = keras.Sequential([keras.Input((FIT_X.shape[1],)), below, top])
        model.compile(optimizer=keras.optimizers.SGD(FIT_RATE), loss="mean_squared_error", jit_compile=False)
    except (Mismatch, *PROPAGATE):
        raise
    except BaseException as err:  # building the model calls the reader's build and call
        raise _layer_error(err, lang, fragment("ch07.when_fit", lang, m=fmt(FIT_MULTIPLIERS[0])), graph=True) from None
    kernel, multiplier = _weights(top, lang)
    _set(below.kernel, FIT_BELOW)
    _set(kernel, KERNEL)
    state = (FIT_BELOW.astype(np.float64), KERNEL.astype(np.float64))
    for m in FIT_MULTIPLIERS:
        where = fragment("ch07.when_fit", lang, m=fmt(m))
        _set(multiplier, m)
        try:
            with captured_tf_warnings():
                model.fit(FIT_X, FIT_TARGET, batch_size=len(FIT_X), epochs=1, shuffle=False, verbose=0)
        except (Mismatch, *PROPAGATE):
            raise
        except BaseException as err:  # the compiled train step runs the reader's call and grad_fn
            raise _layer_error(err, lang, where, graph=True) from None
        state = fit_step_reference(*state, m)
        for variable, expected, what in ((kernel, state[1], "ch07.fit_kernel"), (below.kernel, state[0], "ch07.fit_below")):
            got = np.asarray(variable.numpy(), np.float64)
            problem = _row_problem(lang, "ch07.fit_value", got, expected, rtol=1e-4, atol=1e-5, where=where,
                                   what=fragment(what, lang))
            if problem is not None:
                raise problem


# The likeliest wrong answers, as a reader writes them (``@exercise(..., wrong_answers=...)``): the right
# layer, ``_Dense``, with one method changed in each.

class _Dense(keras.layers.Layer):
    """A right answer, split into the steps that the wrong answers below change."""

    def __init__(self, units, multiplier=1.0, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.initial_multiplier = float(multiplier)

    def build(self, input_shape):
        self.kernel = self.add_weight(shape=(input_shape[-1], self.units), initializer="glorot_uniform",
                                      name="kernel")
        self._build_multiplier()

    def _build_multiplier(self):
        self.multiplier = self.add_weight(shape=(), initializer=keras.initializers.Constant(self.initial_multiplier),
                                          trainable=False, name="multiplier")

    def _m(self, dtype):
        """m when the gradient is computed."""
        return tf.cast(self.multiplier, dtype)

    def _kernel_grad(self, x, dy, kernel):
        return self._m(dy.dtype) * tf.matmul(x, dy, transpose_a=True)

    def _input_grad(self, dy, kernel):
        return tf.matmul(dy, kernel, transpose_b=True)

    def _decorator(self):
        return tf.custom_gradient

    def call(self, x):
        @self._decorator()
        def forward(x):
            kernel = tf.convert_to_tensor(self.kernel)  # float16 under mixed_float16

            def grad_fn(dy, variables=None):
                dk = self._kernel_grad(x, dy, kernel)
                return self._input_grad(dy, kernel), [self._cast(dk, variables[0].dtype)]
            return tf.matmul(x, kernel), self._grad_fn(grad_fn, dy_kernel=kernel, x=x)
        return forward(x)

    def _cast(self, dk, dtype):
        return tf.cast(dk, dtype)

    def _grad_fn(self, grad_fn, **unused):
        return grad_fn


class _NoVariables(_Dense):  # grad_fn(dy) only: TensorFlow refuses it at the forward pass
    def _grad_fn(self, grad_fn, *, dy_kernel, x):
        return lambda dy: tf.matmul(dy, dy_kernel, transpose_b=True)


class _NoList(_Dense):  # dK returned bare, not in a list of variables' gradients
    def _grad_fn(self, grad_fn, *, dy_kernel, x):
        def bare(dy, variables=None):
            return tf.matmul(dy, dy_kernel, transpose_b=True), self._m(dy.dtype) * tf.matmul(x, dy, transpose_a=True)
        return bare


class _Plain(_Dense):  # no custom gradient at all: autodiff gives x^T dy
    def call(self, x):
        return tf.matmul(x, tf.convert_to_tensor(self.kernel))


class _Unscaled(_Dense):  # a grad_fn that forgets m
    def _kernel_grad(self, x, dy, kernel):
        return tf.matmul(x, dy, transpose_a=True)


class _Frozen(_Dense):  # m read once, as a Python float, at construction
    def _m(self, dtype):
        return tf.cast(self.initial_multiplier, dtype)


class _TrainableMultiplier(_Dense):
    def _build_multiplier(self):
        self.multiplier = self.add_weight(shape=(), initializer=keras.initializers.Constant(self.initial_multiplier),
                                          trainable=True, name="multiplier")


class _VariableMultiplier(_Dense):  # a tf.Variable attribute: not one of the layer's weights
    def _build_multiplier(self):
        self.multiplier = tf.Variable(self.initial_multiplier, trainable=False)


class _FloatMultiplier(_Dense):  # a float attribute
    def _build_multiplier(self):
        self.multiplier = self.initial_multiplier


class _Reread(_Dense):  # grad_fn reads self.kernel again: float32 outside call's autocast scope
    def _input_grad(self, dy, kernel):
        return tf.matmul(dy, tf.convert_to_tensor(self.kernel), transpose_b=True)


class _HalfGradient(_Dense):  # dK in dy's dtype: float16 under mixed_float16
    def _cast(self, dk, dtype):
        return dk


class _StrictHalfGradient(_HalfGradient):  # the same with gradlib.strict_custom_gradient, which refuses it
    def _decorator(self):
        return strict_custom_gradient


class _ScaledInput(_Dense):  # dx multiplied by m too
    def _input_grad(self, dy, kernel):
        return self._m(dy.dtype) * tf.matmul(dy, kernel, transpose_b=True)


class _Transposed(_Dense):  # dy^T x instead of x^T dy
    def _kernel_grad(self, x, dy, kernel):
        return self._m(dy.dtype) * tf.matmul(dy, x, transpose_a=True)


class _Numpy(_Dense):  # m read with .numpy() in call: fine eagerly, fails inside model.fit's tf.function
    def call(self, x):
        self._current = float(self.multiplier.numpy())
        return super().call(x)

    def _m(self, dtype):
        return tf.cast(self._current, dtype)


class _StopGradientTrick(_Dense):  # right numbers by plain autodiff: no grad_fn, no variables
    def call(self, x):
        kernel = tf.convert_to_tensor(self.kernel)
        m = self._m(kernel.dtype)
        return tf.matmul(x, m * kernel + tf.stop_gradient((1 - m) * kernel))


class _ScaledForward(_Dense):  # m in the forward pass too
    def call(self, x):
        return self._m(x.dtype) * super().call(x)


@exercise("ch07-ex1", answer="GradScaledDense", wrong_answers=[
    ("grad_fn without the variables keyword", _NoVariables, "ch07.no_variables"),
    ("dK not in a list", _NoList, "ch07.variables_list"),
    ("no custom gradient", _Plain, "ch07.not_scaled"),
    ("kernel gradient not multiplied by m", _Unscaled, "ch07.not_scaled"),
    ("m read once as a Python float", _Frozen, "ch07.multiplier_frozen"),
    ("multiplier trainable", _TrainableMultiplier, "ch07.multiplier_trainable"),
    ("multiplier a plain tf.Variable", _VariableMultiplier, "ch07.multiplier_not_weight"),
    ("multiplier a float attribute", _FloatMultiplier, "ch07.multiplier_not_weight"),
    ("grad_fn reads self.kernel again", _Reread, "ch07.reread_kernel"),
    ("float16 kernel gradient", _HalfGradient, "ch07.grad_dtype"),
    ("float16 kernel gradient, strict_custom_gradient", _StrictHalfGradient, "ch07.grad_dtype"),
    ("dx multiplied by m too", _ScaledInput, "ch07.dx_scaled"),
    ("kernel gradient transposed", _Transposed, "ch07.transposed"),
    ("m read with .numpy() in call", _Numpy, "ch07.fit_numpy"),
    ("forward multiplied by m", _ScaledForward, "ch07.forward_scaled"),
    ("the stop_gradient trick, no custom gradient", _StopGradientTrick, "ch07.no_custom"),
])
def check_grad_scaled_dense(answer, lang):
    if isinstance(answer, keras.layers.Layer):
        raise Mismatch(message("ch07.instance", lang, kind=type(answer).__name__, call=_call_text(MULTIPLIER)))
    layer = _check_float32(answer, lang)
    _check_mixed(answer, lang)
    _check_fit(answer, lang)
    if uses_custom_gradient(layer) is False:  # right numbers by plain autodiff (the stop_gradient trick)
        raise Mismatch(message("ch07.no_custom", lang))
    return message("ch07.scaled_passed", lang, ms=_listing((MULTIPLIER, *ASSIGNED), lang))


# -- ch07-ex2: ternary(w) ----------------------------------------------------------------

def _ternary_inputs():
    rng = np.random.default_rng(13)
    # mean|w| = 7.5 / 12 = 0.625, so Δ = 0.7 · 0.625 = 0.4375 exactly, and two weights are ±0.4375.  In float32
    # 0.7 · 0.625, 0.625 · 0.7 and 0.7 · 7.5 / 12 all round to 0.4375: the tie is exact whatever the order.
    tie = np.array([[0.0, 0.4375, -1.25],
                    [0.84375, -0.4375, 0.0],
                    [0.40625, -0.0625, 1.5625],
                    [-1.0, 0.5625, -0.9375]], np.float32)
    random = (0.1 * rng.standard_normal((5, 6))).astype(np.float32)
    upstreams = [rng.choice([0.5, -1.0, 2.0, 3.0, -2.5, 1.5], size=w.shape).astype(np.float32) for w in (tie, random)]
    return tuple(zip((tie, random), upstreams))


TERNARY_INPUTS = _ternary_inputs()
TIE_W = TERNARY_INPUTS[0][0]
ZERO_W = np.zeros((3, 4), np.float32)
ZERO_UPSTREAM = np.array([[1.0, -2.0, 0.5, 3.0], [-1.5, 2.0, 1.0, -0.5], [2.5, 0.5, -3.0, 1.0]], np.float32)
# float16: mean|w| = 0.5, Δ = 0.35 (0.3501 in float16), no weight within 0.025 of it; dyadic values, exact in float16.
HALF_W = np.array([[0.5, -0.25, 0.0, 1.0],
                   [-0.75, 0.125, 0.375, -1.5],
                   [0.0625, 0.875, -0.3125, 0.25]], np.float16)
HALF_UPSTREAM = np.array([[2.0, -1.0, 0.5, 1.5], [-0.5, 3.0, 1.0, -2.0], [1.0, 0.25, -1.5, 2.5]], np.float16)
HALF_RTOL_W, HALF_ATOL_W = 4e-3, 1e-3
# The .keras round trip: QuantizedDense(3, kernel_quantizer=answer) on TIE_W, with a bias.
SAVE_X = np.array([[1.0, -0.5, 2.0, 0.25], [-1.5, 1.0, 0.0, 3.0]], np.float32)
SAVE_BIAS = np.array([0.25, -0.5, 1.0], np.float32)


def ternary_parts(w: np.ndarray, *, delta_from: str = "mean_abs", strict: bool = True, alpha_over: str = "above"):
    """(value, Δ, α, count) of TWN's ternary quantizer in float64, or of a typical wrong variant of it.

    ``delta_from``: "mean_abs" (TWN: 0.7 mean|w|), "max_abs" (0.7 max|w|), "mean" (0.7 mean(w), signed);
    ``strict``: |w| > Δ (TWN) or |w| >= Δ; ``alpha_over``: "above" (TWN: the mean of |w| over |w| > Δ,
    0 when there is none), "all" (mean|w| over every weight), "none" (α = 1).
    """
    a = np.abs(np.asarray(w, np.float64))
    base = {"mean_abs": a.mean(), "max_abs": a.max(), "mean": np.asarray(w, np.float64).mean()}[delta_from]
    delta = base * 7 / 10  # exact for the tie design: 0.625 · 7 / 10 = 0.4375
    above = a >= delta if not strict else a > delta
    count = int(above.sum())
    alpha = {"above": a[above].mean() if count else 0.0, "all": a.mean(), "none": 1.0}[alpha_over]
    return alpha * np.sign(np.asarray(w, np.float64)) * above, delta, alpha, count


def ternary_reference(w: np.ndarray, upstream: np.ndarray):
    """Value and vector-Jacobian product: α sign(w) 1{|w| > Δ}, and dy straight through (float64)."""
    return ternary_parts(w)[0], np.asarray(upstream, np.float64)


def _through_alpha(w: np.ndarray, upstream: np.ndarray) -> np.ndarray:
    """What plain autodiff gives: only α = sum(|w| 1{|w|>Δ}) / count depends on w differentiably, so
    dL/dw_i = (Σ_j dy_j sign(w_j) 1_j) sign(w_i) 1_i / count (Δ and the mask are piecewise constant)."""
    value, _, _, count = ternary_parts(w)
    s = np.sign(np.asarray(w, np.float64))
    above = value != 0
    if not count:
        return np.zeros_like(s)
    return np.sum(upstream * s * above) * s * above / count


def _wrong_gradients(w: np.ndarray, upstream: np.ndarray):
    """The gradients of the typical wrong answers whose value is right, each with the key of its message."""
    dy = np.asarray(upstream, np.float64)
    _, _, alpha, _ = ternary_parts(w)
    plain = _through_alpha(w, dy)
    yield "ch07.no_ste", plain
    yield "ch07.alpha_scaled", alpha * dy
    yield "ch07.alpha_scaled", alpha * dy + plain
    yield "ch07.masked", dy * (ternary_parts(w)[0] != 0)
    yield "ch07.masked", dy * (ternary_parts(w)[0] != 0) + plain
    # alpha * mask * gradlib.ste_sign(w): straight through sign only, the mask and α outside
    yield "ch07.sign_only", alpha * dy * (ternary_parts(w)[0] != 0)
    yield "ch07.sign_only", alpha * dy * (ternary_parts(w)[0] != 0) + plain


VALUE_MISTAKES = (("ch07.tie", dict(strict=False)), ("ch07.delta_max", dict(delta_from="max_abs")),
                  ("ch07.delta_signed", dict(delta_from="mean")), ("ch07.alpha_all", dict(alpha_over="all")),
                  ("ch07.no_alpha", dict(alpha_over="none")))


def _value_problem(lang, where, text, w, y, i, params):
    """A typical wrong value (a mistake reproduced on the whole kernel), or else Δ and α spelled out."""
    _, delta, alpha, count = ternary_parts(w)
    for key, options in VALUE_MISTAKES:
        wrong, wrong_delta, wrong_alpha, _ = ternary_parts(w, **options)
        if not np.allclose(wrong, ternary_parts(w)[0]) and np.allclose(y, wrong, rtol=1e-4, atol=1e-5):
            return join(text, message(key, lang, delta=fmt(delta), alpha=fmt(alpha), got_delta=fmt(wrong_delta),
                                      got_alpha=fmt(wrong_alpha)), lang)
    return join(text, message("ch07.ternary_value", lang, delta=fmt(delta), alpha=fmt(alpha), count=count), lang)


def _index(i: int, shape) -> str:
    return ", ".join(str(k) for k in np.unravel_index(i, shape))


def _shape(w: np.ndarray) -> str:
    return "×".join(map(str, w.shape))


def _gradient_none(lang: str, where: str) -> str:
    return join(message("ch07.gradient_none", lang, where=where), message("ch07.no_ste", lang), lang)


def _gradient_zero(lang: str, where: str) -> str:
    return join(message("ch07.gradient_zero", lang, where=where), message("ch07.no_ste", lang), lang)


# The tie design first (two weights exactly at Δ, zeros), then a random kernel; upstream gradients other than 1.
TERNARY = WholeTensor(
    cases=TERNARY_INPUTS, reference=ternary_reference, name="w",
    where=lambda lang, w, params: "" if w is TIE_W else fragment("ch07.on_random", lang, shape=_shape(w)),
    at=lambda lang, where, w, i: where + fragment("ch07.at_w", lang, index=_index(i, w.shape), w=fmt(np.ravel(w)[i])),
    none_gradient=_gradient_none, all_zero=_gradient_zero, value_problem=_value_problem,
    upstream_key="ch07.ste_upstream", mistakes=_wrong_gradients,
    gradient_hint=lambda lang, w, g, bad, i, params: message("ch07.ste_gradient", lang))


def _check_zero(answer: Callable, lang: str) -> None:
    """All zeros: Δ = 0, nothing above it, α the mean of an empty set; the value is all zeros, never NaN."""
    where = fragment("ch07.when_zero", lang)
    w = tf.constant(ZERO_W)
    with tf.GradientTape() as tape:
        tape.watch(w)
        y = call(answer, w, lang=lang, where=where)
    raw = to_array(y)
    if raw is not None and raw.dtype.kind == "f" and raw.shape == ZERO_W.shape and not np.all(np.isfinite(raw)):
        raise Mismatch(message("ch07.zero_nan", lang))
    value = as_array(y, lang=lang, what="forward", where=where, shape=ZERO_W.shape)
    require_tensor(y, lang=lang, where=where)
    if tf.as_dtype(y.dtype) != tf.float32:
        raise Mismatch(message("ch07.same_dtype", lang, where=where, got=tf.as_dtype(y.dtype).name, expected="float32"))
    i = first_mismatch(value, 0.0, atol=1e-7)
    if i is not None:
        raise Mismatch(message("common.value", lang, where=where + fragment("ch07.at_w", lang, index=_index(
            i, ZERO_W.shape), w="0"), what=fragment("common.forward", lang), got=fmt(np.ravel(value)[i]), expected="0"))
    try:
        g = tape.gradient(y, w, output_gradients=tf.constant(ZERO_UPSTREAM))
    except Exception as err:  # the reader's grad_fn runs here
        raise _raised(err, lang, where) from None
    if g is None:
        raise Mismatch(_gradient_none(lang, where))
    got = as_array(g, lang=lang, what="gradient", where=where, shape=ZERO_W.shape)
    i = first_mismatch(got, ZERO_UPSTREAM)
    if i is not None:
        raise Mismatch(join(message("common.value", lang, where=where + fragment("ch07.at_w", lang, index=_index(
            i, ZERO_W.shape), w="0"), what=fragment("common.gradient", lang), got=fmt(np.ravel(got)[i]),
            expected=fmt(np.ravel(ZERO_UPSTREAM)[i])), message("ch07.ste_gradient", lang), lang))


def _half_error(err: BaseException, lang: str) -> Mismatch:
    detail = _detail(err, lang)
    if any(word in detail for word in ("half", "float16", "dtype", "expected to be a")):
        return Mismatch(message("ch07.half", lang, what=fragment("ch07.half_raised", lang, error=type(err).__name__,
                                                                    detail=detail.rstrip("."))))
    return _raised(err, lang, fragment("ch07.when_half", lang))


def _check_half(answer: Callable, lang: str) -> None:
    """A float16 kernel (as QuantizedDense passes it under mixed_float16): a float16 result, right values,
    the gradient dy straight through."""
    where = fragment("ch07.when_half", lang)
    w = tf.constant(HALF_W)
    try:
        with tf.GradientTape() as tape:
            tape.watch(w)
            y = answer(w)
    except (Mismatch, *PROPAGATE):
        raise
    except BaseException as err:  # the reader's code may raise anything
        raise _half_error(err, lang) from None
    value = as_array(y, lang=lang, what="forward", where=where, shape=HALF_W.shape)
    require_tensor(y, lang=lang, where=where)
    if tf.as_dtype(y.dtype) != tf.float16:
        raise Mismatch(message("ch07.half", lang, what=fragment("ch07.half_returned", lang,
                                                                got=tf.as_dtype(y.dtype).name)))
    expected = ternary_parts(HALF_W)[0]
    i = first_mismatch(value, expected, rtol=HALF_RTOL_W, atol=HALF_ATOL_W)
    if i is not None:
        raise Mismatch(message("common.value", lang, where=where + fragment("ch07.at_w", lang, index=_index(
            i, HALF_W.shape), w=fmt(np.ravel(HALF_W)[i])), what=fragment("common.forward", lang),
            got=fmt(np.ravel(value)[i]), expected=fmt(np.ravel(expected)[i])))
    try:
        g = tape.gradient(y, w, output_gradients=tf.constant(HALF_UPSTREAM))
    except Exception as err:  # the reader's grad_fn runs here
        raise _half_error(err, lang) from None
    if g is None:
        raise Mismatch(_gradient_none(lang, where))
    got = as_array(g, lang=lang, what="gradient", where=where, shape=HALF_W.shape)
    if tf.as_dtype(g.dtype) != tf.float16:
        raise Mismatch(message("ch07.half", lang, what=fragment("ch07.half_gradient", lang,
                                                                got=tf.as_dtype(g.dtype).name)))
    i = first_mismatch(got, HALF_UPSTREAM, rtol=HALF_RTOL_W, atol=HALF_ATOL_W)
    if i is not None:
        raise Mismatch(join(message("common.value", lang, where=where + fragment("ch07.at_w", lang, index=_index(
            i, HALF_W.shape), w=fmt(np.ravel(HALF_W)[i])), what=fragment("common.gradient", lang),
            got=fmt(np.ravel(got)[i]), expected=fmt(np.ravel(HALF_UPSTREAM)[i])),
            message("ch07.ste_gradient", lang), lang))


def registered_name(answer: Any) -> Optional[str]:
    """The name under which ``answer`` was registered with ``keras.saving.register_keras_serializable``
    ("package>name"); None when it was not."""
    try:
        name = keras.saving.get_registered_name(answer)
    except PROPAGATE:
        raise
    except BaseException:  # no __name__ (a functools.partial, a reader's object)
        return None
    return name if isinstance(name, str) and name in keras.saving.get_custom_objects() else None


@contextlib.contextmanager
def _registered_as(name: str, answer: Any) -> Iterator[None]:
    """Inside the block Keras's registry maps ``name`` to ``answer`` (as it does in the reader's notebook,
    unless a later registration took the name over); the previous entry is restored after."""
    objects = keras.saving.get_custom_objects()  # Keras's live registry
    previous = objects[name]
    objects[name] = answer
    try:
        yield
    finally:
        objects[name] = previous


def _round_trip_error(key: str, err: BaseException, answer: Any, lang: str) -> Mismatch:
    """Saving or loading failed: for a registered object that is not a plain Python function (Keras saves
    a ``@tf.custom_gradient`` or a ``tf.function`` as an object it cannot load), say so."""
    if not isinstance(answer, types.FunctionType):
        return Mismatch(message("ch07.not_plain_function", lang, kind=type(answer).__name__))
    return Mismatch(message(key, lang, error=type(err).__name__, detail=_detail(err, lang)))


def _check_saved(answer: Callable, lang: str) -> None:
    """QuantizedDense(3, kernel_quantizer=answer) gives x @ ternary(K) + b, and a model holding it saves to
    .keras and loads with the same outputs (for which Keras needs the function registered)."""
    from ...layers import QuantizedDense  # loads gradlib.layers only when this check runs

    where = fragment("ch07.in_layer", lang)
    try:
        layer = QuantizedDense(SAVE_BIAS.size, kernel_quantizer=answer)
        model = keras.Sequential([keras.Input((TIE_W.shape[0],)), layer])
        _set(layer.kernel, TIE_W)
        _set(layer.bias, SAVE_BIAS)
        y = model(tf.constant(SAVE_X))
    except (Mismatch, *PROPAGATE):
        raise
    except BaseException as err:  # QuantizedDense calls the reader's function
        raise _raised(err, lang, where) from None
    got = as_array(y, lang=lang, what="result", where=where, shape=(SAVE_X.shape[0], SAVE_BIAS.size))
    expected = SAVE_X.astype(np.float64) @ ternary_parts(TIE_W)[0] + SAVE_BIAS
    problem = _row_problem(lang, "ch07.layer_value", got, expected, rtol=1e-4, atol=1e-5)
    if problem is not None:
        raise problem
    name = registered_name(answer)
    if name is None:
        raise Mismatch(message("ch07.not_registered", lang))
    with _registered_as(name, answer), tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "ternary.keras")
        try:
            model.save(path)
        except PROPAGATE:
            raise
        except BaseException as err:  # QuantizedDense.get_config refuses a callable Keras cannot name
            if "register_keras_serializable" in _detail(err, lang):
                raise Mismatch(message("ch07.not_registered", lang)) from None
            raise _round_trip_error("ch07.save_failed", err, answer, lang) from None
        try:
            loaded = keras.models.load_model(path)
            again = loaded(tf.constant(SAVE_X))
        except PROPAGATE:
            raise
        except BaseException as err:  # loading runs QuantizedDense.from_config, the call the reader's function
            raise _round_trip_error("ch07.load_failed", err, answer, lang) from None
    reloaded = as_array(again, lang=lang, what="result", where=where, shape=got.shape)
    if not np.array_equal(reloaded, got):
        i = int(np.flatnonzero(np.ravel(reloaded != got))[0]) // got.shape[1]
        raise Mismatch(message("ch07.reload_differs", lang, row=i, got=fmt(reloaded[i]), expected=fmt(got[i])))


# The likeliest wrong answers, as a reader writes them: TWN's steps, one changed in each.

def _ternary_with(*, delta=lambda w: 0.7 * tf.reduce_mean(tf.abs(w)), strict=True, alpha="above",
                  straight="whole", safe=True):
    """A ternary quantizer built the way a reader would, with one step changed.

    ``delta(w)``: the threshold; ``strict``: |w| > Δ, else |w| >= Δ; ``alpha``: "above" (the mean of |w|
    over |w| > Δ), "all" (over every weight), "none" (1); ``straight``: "whole" (w + stop_gradient(q - w)),
    "none" (plain autodiff), "scaled" (straight through sign·mask, α outside: α·dy), "masked" (dy only
    where |w| > Δ), "ones" (a grad_fn that returns 1); ``safe``: α with tf.math.divide_no_nan, else a plain
    division (0/0 on an all-zero kernel).
    """
    def ternary(w):
        a = tf.abs(w)
        threshold = delta(w)
        mask = tf.cast(a > threshold if strict else a >= threshold, w.dtype)
        if alpha == "all":
            scale = tf.reduce_mean(a)
        elif alpha == "none":
            scale = tf.ones([], w.dtype)
        else:
            total, count = tf.reduce_sum(a * mask), tf.reduce_sum(mask)
            scale = tf.math.divide_no_nan(total, count) if safe else total / count
        signs = tf.sign(w) * mask
        if straight == "none":
            return scale * signs
        if straight == "scaled":
            return tf.stop_gradient(scale) * (w + tf.stop_gradient(signs - w))
        q = tf.stop_gradient(scale * signs)
        if straight == "masked":
            return tf.where(mask > 0, w + tf.stop_gradient(q - w), q)
        if straight == "ones":
            @tf.custom_gradient
            def quantized(v):
                return q + 0 * v, lambda dy: tf.ones_like(dy)
            return quantized(w)
        return w + tf.stop_gradient(q - w)
    return ternary


def _ternary_sign_only(w):  # chapter 5's STE inside: straight through sign only, the mask and α outside
    from gradlib import ste_sign
    a = tf.abs(w)
    mask = tf.cast(a > 0.7 * tf.reduce_mean(a), w.dtype)
    scale = tf.math.divide_no_nan(tf.reduce_sum(a * mask), tf.reduce_sum(mask))
    return tf.stop_gradient(scale * mask) * ste_sign(w)


def _ternary_float32_cast(w):  # everything computed in float32, also for a float16 kernel
    return _ternary_with()(tf.cast(w, tf.float32))


def _ternary_float32_constant(w):  # a float32 constant: TensorFlow refuses to multiply it with float16
    a = tf.abs(w)
    delta = tf.constant(0.7) * tf.reduce_mean(a)
    mask = tf.cast(a > delta, w.dtype)
    scale = tf.math.divide_no_nan(tf.reduce_sum(a * mask), tf.reduce_sum(mask))
    q = scale * tf.sign(w) * mask
    return w + tf.stop_gradient(q - w)


def _ternary_where(w):  # tf.where with α held constant: no gradient reaches w
    a = tf.abs(w)
    delta = 0.7 * tf.reduce_mean(a)
    above = a > delta
    scale = tf.stop_gradient(tf.reduce_mean(tf.boolean_mask(a, above)))
    return tf.where(above, scale * tf.sign(w), tf.zeros_like(w))


_ternary_unregistered = _ternary_with()  # right in every respect, but Keras cannot save a model holding it


@keras.saving.register_keras_serializable(package="gradlib_ch07_wrong_answers")
@tf.custom_gradient
def _ternary_registered_custom_gradient(w):  # registered, but a tf.custom_gradient object: saved, never loaded
    return tf.stop_gradient(_ternary_unregistered(w)), lambda dy: dy


@exercise("ch07-ex2", answer="ternary", wrong_answers=[
    ("Δ from max|w|", _ternary_with(delta=lambda w: 0.7 * tf.reduce_max(tf.abs(w))), "ch07.delta_max"),
    ("Δ from the signed mean", _ternary_with(delta=lambda w: 0.7 * tf.reduce_mean(w)), "ch07.delta_signed"),
    ("α over all the weights", _ternary_with(alpha="all"), "ch07.alpha_all"),
    ("no α", _ternary_with(alpha="none"), "ch07.no_alpha"),
    (">= instead of >", _ternary_with(strict=False), "ch07.tie"),
    ("no straight-through (plain autodiff)", _ternary_with(straight="none"), "ch07.no_ste"),
    ("tf.where, no gradient", _ternary_where, "ch07.no_ste"),
    ("gradient scaled by α", _ternary_with(straight="scaled"), "ch07.alpha_scaled"),
    ("gradient only where |w| > Δ", _ternary_with(straight="masked"), "ch07.masked"),
    ("α · mask · gradlib.ste_sign(w)", _ternary_sign_only, "ch07.sign_only"),
    ("grad_fn ignores dy", _ternary_with(straight="ones"), "ch07.ste_upstream"),
    ("0/0 on an all-zero kernel", _ternary_with(safe=False), "ch07.zero_nan"),
    ("float32 result for float16", _ternary_float32_cast, "ch07.half"),
    ("float32 constant", _ternary_float32_constant, "ch07.half"),
    ("not registered", _ternary_unregistered, "ch07.not_registered"),
    ("@tf.custom_gradient object registered", _ternary_registered_custom_gradient, "ch07.not_plain_function"),
])
def check_ternary(answer, lang):
    check_whole(TERNARY, answer, lang)
    _check_zero(answer, lang)
    _check_half(answer, lang)
    _check_saved(answer, lang)
    return message("ch07.ternary_passed", lang, n=sum(w.size for w, _ in TERNARY_INPUTS), delta=fmt(
        ternary_parts(TIE_W)[1]))
