r"""Checks for chapter 9: when gradients go wrong.

Three "find the bug" exercises: the chapter shows a broken training step, the
reader writes the repaired function, and the check runs it as a training would
and names the bug that is still there.

* ``ch09-ex1``: ``train_step(w, b, x, y, lr)``, one step of gradient descent
  for linear regression with the mean squared error,
  :math:`L = \mathrm{mean}((x w + b - y)^2)`: the ``tf.Variable``\ s ``w``
  (shape [d, 1]) and ``b`` (shape [1]) are updated in place by ``lr`` times
  their gradient, and the loss before the update is returned (a real scalar:
  a 0-d tensor, or a number).  On :data:`REGRESSION_CASES` (d = 1 with n = 8,
  d = 3 with n = 16, d = 3 with n = 5 and a true w whose entries are all
  negative; noisy targets), in float32 and float64, each time with fresh
  variables, :data:`TRAIN_STEPS` steps are run and after each step the
  caller's own ``w`` and ``b`` and the returned loss are compared with a
  NumPy float64 reference trajectory of gradient descent
  (:func:`regression_step`), within :data:`TRAIN_TOLERANCES` (in float64
  loose enough for a learning rate rounded to float32, as a Keras optimizer
  keeps it).  At the first step that differs, the state before it is the
  reference's (the steps before agreed), so the typical wrong steps are
  computed from it and recognised.  Then the same again with the answer
  wrapped in ``tf.function`` (where a training step usually runs; the
  reference step runs there too), a fresh wrapper per data set and dtype.
  While the answer runs eagerly the check watches it
  (:func:`_watching`): ``tf.GradientTape.gradient`` is wrapped so that the
  gradient the tape gives the caller's ``w`` and ``b`` is seen (None, all
  zeros or not), and a ``tf.variable_creator_scope`` counts the
  ``tf.Variable``\ s it creates; both are removed on exit, whatever happens.
* ``ch09-ex2``: ``bce_with_logits(y, z)``, the elementwise binary
  cross-entropy from logits, :math:`-(y \log\sigma(z) + (1 - y)\log(1 -
  \sigma(z)))`, finite and accurate in value and gradient for every finite
  z.  On the grid :data:`BCE_LABELS` × :data:`BCE_Z` (y ∈ {0, 1, 0.25}; z ∈
  {±100, ±40, ±17, ±1, 0} and 11 random points in [−30, 30]; y and z of the
  same shape, 3 × 20, so that ``tf.nn.sigmoid_cross_entropy_with_logits``,
  which does not broadcast, is a valid answer), in float32 and float64: the
  value, ∂L/∂z = σ(z) − y and ∂L/∂y = −z (one tape, upstream gradient 1),
  each within :data:`BCE_ULPS` units of the dtype's epsilon times the size
  of the terms it is computed from, plus the dtype's smallest normal number
  (TensorFlow's CPU kernels flush subnormal results to zero): |L| + |y z|
  for the value (the cancellation in log(1 + e^z) − y z is inherent to most
  correct formulas: at y = 1, z = 40 the exact 4.2e-18 is 0 in
  ``softplus(z) - y*z``), |σ(z) − y| + |y| for ∂L/∂z, softplus(z) +
  softplus(−z) for ∂L/∂y.  Where y = 0 that is a relative tolerance, so a
  value that 1 + e^{−|z|} rounded to 0 is wrong (no log1p).  The float64
  reference (:func:`bce_reference`) is y·softplus(−z) + (1 − y)·softplus(z),
  which equals ``np.logaddexp(0, z) - y*z`` but does not cancel, and
  (1 − y)σ(z) − yσ(−z).  Then a logistic regression
  (:data:`LOGISTIC_X`, one point with a logit beyond 40 and wrongly
  classified during all :data:`LOGISTIC_STEPS` steps, one beyond −40 rightly
  classified, a soft label) trained with the mean of the answer as its loss,
  in both dtypes: the values the answer returns at each step (against
  :func:`bce_reference` at the reference's logits) and the weights after it
  (against NumPy gradient descent, :func:`logistic_reference`), within
  :data:`WEIGHT_TOLERANCES`.  A ``grad_fn`` that ignores its upstream gradient
  passes the grid (upstream 1) and fails here, where the mean makes it 1/n.
* ``ch09-ex3``: ``safe_norm(x)``, the Euclidean norm over the last axis,
  whose gradient is x/‖x‖ where the row is not all zero and exactly 0 (not
  NaN) where it is; the value is exactly 0 there.  On :data:`NORM_CASES` (a
  9 × 3 matrix with an all-zero row, a row with zeros, a row with one
  non-zero negative entry, entries from 1e-3 to 1e3 and random rows; a zero
  vector and a vector alone, shape [3]; a 2 × 4 × 3 tensor), in float32 and
  float64: value and gradient (upstream 1) against NumPy float64
  (:func:`norm_reference`): exactly 0 at all-zero rows, elsewhere within
  :data:`NORM_ULPS` units of the dtype's epsilon, relative for the value and
  absolute for the gradient (a unit vector); row by row, each row's value and
  gradient finite first, then right (:func:`_norm_compare`).  Then the
  matrix again, in both
  dtypes, inside ``tf.function(jit_compile=True)`` (XLA, which Keras's
  ``fit`` uses by default on a GPU), where the gradient at the all-zero row
  must still be 0: TensorFlow's own kernel for the gradient of ``tf.sqrt``
  returns 0 where its upstream gradient is 0 (``scalar_sqrt_gradient_op`` in
  ``tensorflow/core/kernels/cwise_ops_gradients.h``, TensorFlow 2.19 and
  2.21), so a single ``tf.where(s > 0, tf.sqrt(s), 0.)`` gives 0 eagerly and
  in an ordinary ``tf.function``, but XLA computes 0 · inf = NaN there.  An
  answer that XLA cannot compile (an op without an XLA kernel, such as
  ``tf.math.reduce_euclidean_norm``) skips that pass: the error is XLA's, not
  the reader's.  Then :data:`NORM_EXTREME`, rows with entries of 1e-30 and
  1e30 in both dtypes (the chapter's statement promises entries from 1e-30
  to 1e30): in float32 their squares underflow to 0 or overflow to inf, so
  only a norm that scales the row first (by its largest magnitude, held
  constant) or computes in a wider type is right.  This stage comes after
  the others, so that an answer with another typical mistake gets that
  mistake's message, not this one; dropping ``NORM_EXTREME`` from
  :func:`_check_norm` gives the exercise with entries from 1e-3 to 1e3 only.
  Last, the centre loss mean(safe_norm(x W − c)) trained for
  :data:`CENTRE_STEPS` steps of gradient descent on W, where one embedding
  starts exactly on its centre (dyadic numbers, so x W equals the centre
  bit for bit), in both dtypes: the values the answer returns and W after
  each step against NumPy (:func:`centre_reference`).

Whether a NaN gradient comes from ``tf.where`` is seen in the answer traced as
a ``tf.function``: a ``Select`` or ``SelectV2`` op in its graph
(:func:`_traced_ops`); an answer that cannot be traced counts as one without.

Typical mistakes with a message of their own.  ex1: the chapter's broken step
unchanged, or the NumPy detour kept with ``unconnected_gradients=ZERO`` (w
never changes, its gradient all zeros: ``zero_gradient``); the detour without
ZERO, or w used before the tape (TypeError from ``lr * None``:
``none_gradient``, naming the variable whose gradient was None); a None
gradient skipped (``none_unchanged``); ``w = w - lr * dw`` (w unchanged, b
changed, the gradient not zero: ``rebound``); both names rebound
(``not_updated``); a new ``tf.Variable`` (``new_variable``); the wrong sign
(the loss grows: ``wrong_sign``); ``tf.reduce_sum`` (a step n times too large,
n the batch size: ``sum``); the loss after the update (``loss_after``); an
answer that fails only inside ``tf.function`` (``.numpy()``, or an optimizer
made inside the step, whose variables a ``tf.function`` allows only when first
traced: ``tf_function``).  ex2: the naive formula (inf or NaN at |z| ≥ 15,
the point named: ``naive``); log(1 + e^z) − yz written out (inf only where e^z
overflows, z > 88.7 in float32: ``exp_overflow``); σ clipped into [eps, 1 − eps] (the loss capped at
−log eps, the gradient 0 beyond the clip: ``clipped``); ``tf.where`` around
the log (finite value, NaN gradient: ``where_nan``); log(σ(z) + eps) (the eps
named: ``log_eps``); the mean instead of the elementwise loss
(``bce_reduced``); y and z swapped (``swapped``); max(z, 0) or relu(z) plus
log1p(e^{−|z|}), whose gradient at exactly z = 0 is 1 − y or −y instead of
0.5 − y (``kink_zero``: logits are exactly 0 whenever the weights start at
zero); log(1 + e^{−|z|}) without log1p (``value_tiny``).  The clip and the
eps are told apart by a float64 run of the answer (:func:`_bce_mistake`):
only the eps biases the value at z = 0.  ex3: ``tf.norm`` or a plain sqrt
(NaN at the zero row, no ``tf.where``: ``sqrt_nan``); sqrt(sum + eps) (the
eps named: ``norm_eps``); a single ``tf.where`` (NaN eagerly, as with
``s ** 0.5``: ``single_where``; NaN only under XLA, as with ``tf.sqrt``:
``single_where_xla``); the wrong axis or keepdims (``norm_axis``); ``axis=1``,
which fails on a vector (``norm_axis_raised``); the squared norm
(``squared``); the double ``tf.where`` without scaling (the squares of 1e-30
underflow: ``norm_underflow``; of 1e30 overflow: ``norm_overflow``).  In the
trainings of ex2 and ex3, wrong returned values (``train_value``) or weights
(``train_weights``).

Every reference is a NumPy formula in float64; the answers are called with
positional arguments and with fresh tensors and variables, never the module's
arrays.
"""

from __future__ import annotations

import contextlib
import functools
import re
from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf

from ...logs import captured_tf_warnings
from ._core import (PROPAGATE, Mismatch, call, describe, dtype_name, exercise, fmt, fragment, message,
                    require_decorated, returned_tensor, tensor_like, to_array)


# -- shared helpers -----------------------------------------------------------------

_FUNCTION_NODE = re.compile(r"^\{\{function_node [^}]*\}\}\s*")


def _raised(err: BaseException, lang: str, where: str) -> Mismatch:
    """The "your code raised X: detail" Mismatch, without what TensorFlow adds to the detail: the
    ``{{function_node ...}}`` prefix of an eager op's error, and the exception's type name repeated at the
    start of the last line of an error raised while a tf.function was traced ("AttributeError: ...")."""
    detail = _FUNCTION_NODE.sub("", describe(err, lang))
    prefix = f"{type(err).__name__}: "
    if detail.startswith(prefix):
        detail = detail[len(prefix):]
    return Mismatch(message("common.raised", lang, where=where, error=type(err).__name__, detail=detail))


def _row_text(row: np.ndarray) -> str:
    """A short row for a message: "[1e-30, 0, 0]"."""
    return "[" + ", ".join(fmt(value) for value in np.ravel(row)) + "]"


def _digits(values: np.ndarray) -> str:
    """Every digit a float32 needs: "[0.0964241326]", so that values close together look different."""
    return "[" + ", ".join(f"{value:.9g}" for value in np.ravel(values)) + "]"


def _sentence(text: str) -> str:
    """``text`` without its closing full stop, so that a hint can follow it."""
    return str(text).rstrip().rstrip("。.")  # a TensorFlow error (English) ends with "." in either language


SELECT_OPS = frozenset({"Select", "SelectV2"})   # what tf.where(cond, a, b) leaves in a graph


def _traced_ops(fn: Callable, specs: Sequence[tf.TensorSpec]) -> Optional[frozenset]:
    """The op types in the graph of ``fn`` traced as a ``tf.function`` (and in the functions it calls);
    None when it cannot be traced.  Called only to explain a mistake, after the answer has run."""
    try:
        with captured_tf_warnings():
            graph_def = tf.function(fn).get_concrete_function(*specs).graph.as_graph_def()
    except PROPAGATE:
        raise
    except BaseException:  # the reader's code may raise anything while it is traced
        return None
    nodes = list(graph_def.node) + [node for function in graph_def.library.function for node in function.node_def]
    return frozenset(node.op for node in nodes)


def _uses_where(fn: Callable, specs: Sequence[tf.TensorSpec]) -> bool:
    ops = _traced_ops(fn, specs)
    return bool(ops and ops & SELECT_OPS)


def _sigmoid(z: np.ndarray) -> np.ndarray:
    """σ(z) in float64 without overflow."""
    z = np.asarray(z, np.float64)
    e = np.exp(-np.abs(z))
    return np.where(z >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def _softplus(z: np.ndarray) -> np.ndarray:
    return np.logaddexp(0.0, np.asarray(z, np.float64))


def _close(got: np.ndarray, expected: np.ndarray, tolerances: Dict[str, float]) -> bool:
    """Equal within ``tolerances`` (np.isclose) everywhere, and finite."""
    got = np.asarray(got, np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        return bool(np.all(np.isclose(got, expected, **tolerances) & np.isfinite(got)))


def _weights_text(*arrays: np.ndarray) -> str:
    return fmt(np.concatenate([np.ravel(a) for a in arrays]))


# -- ch09-ex1: train_step(w, b, x, y, lr) ---------------------------------------------------

class RegressionCase(NamedTuple):
    """A data set of the check: x [n, d], y [n, 1] (noisy targets of a true w and b), the starting w [d, 1]
    and b [1], and the learning rate."""

    x: np.ndarray
    y: np.ndarray
    w0: np.ndarray
    b0: np.ndarray
    lr: float


def _regression_case(seed: int, n: int, w_true: Sequence[float], b_true: float, w0: Sequence[float], b0: float,
                     lr: float) -> RegressionCase:
    rng = np.random.default_rng(seed)
    w_true = np.asarray(w_true, np.float64).reshape(-1, 1)
    x = rng.normal(0.0, 1.0, (n, w_true.shape[0]))
    y = x @ w_true + b_true + 0.1 * rng.normal(0.0, 1.0, (n, 1))
    return RegressionCase(x, y, np.asarray(w0, np.float64).reshape(-1, 1), np.array([b0], np.float64), lr)


REGRESSION_CASES = (
    _regression_case(91, 8, [1.5], 0.5, [0.0], 0.0, 0.1),                                # d = 1
    _regression_case(92, 16, [2.0, -1.0, 0.5], -0.3, [0.1, 0.2, -0.1], 0.2, 0.05),       # d = 3
    _regression_case(93, 5, [-1.2, -0.7, -2.0], 1.0, [0.5, -0.5, 0.0], 0.0, 0.02),       # d = 3, w all negative
)
TRAIN_STEPS = 5
TRAIN_DTYPES = (np.float32, np.float64)
# float64: a learning rate rounded to float32 (a Keras optimizer keeps it in a float32 variable) moves w by up to
# 3e-9 in 5 steps; every mistake moves it by far more
TRAIN_TOLERANCES = {np.float32: dict(rtol=1e-4, atol=1e-5), np.float64: dict(rtol=1e-7, atol=1e-8)}


class Step(NamedTuple):
    """One step of the reference: the loss before it, w and b after it, and the gradients it used."""

    loss: float
    w: np.ndarray
    b: np.ndarray
    dw: np.ndarray
    db: np.ndarray


def regression_loss(w: np.ndarray, b: np.ndarray, x: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean((x @ w + b - y) ** 2))


def regression_step(w: np.ndarray, b: np.ndarray, x: np.ndarray, y: np.ndarray, lr: float) -> Step:
    """Gradient descent on mean((x w + b − y)²) in float64: ∂L/∂w = 2/n xᵀr, ∂L/∂b = 2/n Σ r, r = x w + b − y."""
    r = x @ w + b - y
    n = r.size
    dw = 2.0 / n * (x.T @ r)
    db = 2.0 / n * np.sum(r, axis=0)
    return Step(float(np.mean(r ** 2)), w - lr * dw, b - lr * db, dw, db)


class _StepRecord:
    """What one call of the reader's step did (:func:`_watching`): the gradients the tape gave the caller's
    variables, by name ("none", "zero", "nonzero", or "symbolic" while traced), and how many
    ``tf.Variable``\\ s it created."""

    def __init__(self, variables: Dict[str, tf.Variable]):
        self.variables = variables
        self.states: Dict[str, List[str]] = {}
        self.created = 0

    def note(self, sources: Any, result: Any) -> None:
        try:
            flat_sources = tf.nest.flatten(sources)
            flat_result = tf.nest.flatten(result)
            if len(flat_sources) != len(flat_result):
                return
            for source, gradient in zip(flat_sources, flat_result):
                for name, variable in self.variables.items():
                    if source is variable:
                        self.states.setdefault(name, []).append(_gradient_state(gradient))
        except PROPAGATE:
            raise
        except BaseException:  # the reader's sources may be anything; this is only a diagnosis
            return

    def gradient(self, name: str) -> Optional[str]:
        """"none" if any gradient of ``name`` was None, "zero" if all were zeros, else the last state."""
        states = self.states.get(name, [])
        if "none" in states:
            return "none"
        if states and all(state == "zero" for state in states):
            return "zero"
        return states[-1] if states else None


def _gradient_state(gradient: Any) -> str:
    if gradient is None:
        return "none"
    try:
        values = tf.convert_to_tensor(gradient).numpy()
    except PROPAGATE:
        raise
    except BaseException:  # a symbolic tensor while traced
        return "symbolic"
    return "nonzero" if np.any(values != 0) else "zero"


@contextlib.contextmanager
def _watching(variables: Dict[str, tf.Variable]) -> Iterator[_StepRecord]:
    """While the block runs, every ``tf.GradientTape.gradient`` call notes what it gave ``variables``, and
    every ``tf.Variable`` created is counted; the original method is put back on exit, whatever happens."""
    record = _StepRecord(variables)
    original = tf.GradientTape.gradient

    @functools.wraps(original)
    def gradient(tape, target, sources, *args, **kwargs):
        result = original(tape, target, sources, *args, **kwargs)
        record.note(sources, result)
        return result

    def creator(next_creator, **kwargs):
        record.created += 1
        return next_creator(**kwargs)

    tf.GradientTape.gradient = gradient
    try:
        with tf.variable_creator_scope(creator):
            yield record
    finally:
        tf.GradientTape.gradient = original


def _reader_gradient(tape, target, sources, *, lang: str, where: str):
    """``tape.gradient(target, sources)``; an error raised by the reader's own grad_fn becomes its feedback."""
    try:
        return tape.gradient(target, sources)
    except Exception as err:  # a custom grad_fn of the reader's runs here
        raise _raised(err, lang, where) from None


def _loss_value(loss: Any, lang: str, where: str) -> float:
    """The returned loss as a float: a real scalar (a 0-d tensor or a number), finite."""
    what = fragment("ch09.loss_word", lang)
    if loss is None:
        raise Mismatch(message("common.none", lang, where=where))
    require_decorated(loss, lang, where)
    array = to_array(loss)
    if array is None or array.dtype.kind not in "biufc":
        raise Mismatch(message("common.not_numeric", lang, where=where, kind=type(loss).__name__))
    if array.dtype.kind != "f":
        raise Mismatch(message("common.dtype", lang, where=where, what=what, got=str(array.dtype),
                               expected="float32"))
    if array.shape != ():
        raise Mismatch(message("common.shape", lang, where=where, what=what, got=list(array.shape), expected=[]))
    value = float(array)
    if not np.isfinite(value):
        raise Mismatch(message("common.nan", lang, where=where, what=what))
    return value


def _step_error(err: BaseException, record: _StepRecord, lang: str, where: str, traced: bool) -> Mismatch:
    """The message for an exception of the reader's step: a None gradient of w or b is named."""
    text = _raised(err, lang, where)
    for name in ("w", "b"):
        if record.gradient(name) == "none":
            return Mismatch(message("ch09.none_gradient", lang, raised=_sentence(text), name=name))
    if traced:
        return Mismatch(message("ch09.tf_function", lang, raised=_sentence(text)))
    return text


def _unchanged_problem(name: str, other: str, unchanged: Dict[str, bool], record: _StepRecord, lang: str,
                       where: str) -> Mismatch:
    """Why the caller's ``name`` did not change."""
    if record.created:
        return Mismatch(message("ch09.new_variable", lang, where=where, name=name))
    state = record.gradient(name)
    if state == "none":
        return Mismatch(message("ch09.none_unchanged", lang, where=where, name=name))
    if state == "zero":
        return Mismatch(message("ch09.zero_gradient", lang, where=where, name=name))
    if unchanged[other]:
        return Mismatch(message("ch09.not_updated", lang, where=where))
    return Mismatch(message("ch09.rebound", lang, where=where, name=name, other=other))


def _check_step(case: RegressionCase, state: Tuple[np.ndarray, np.ndarray], ref: Step, got_loss: float,
                now: Dict[str, np.ndarray], before: Dict[str, np.ndarray], record: _StepRecord, dtype, lang: str,
                where: str) -> None:
    """Compare one step of the reader's with the reference ``ref`` taken from ``state``; raise on a problem."""
    tolerances = TRAIN_TOLERANCES[dtype]
    x, y = (v.astype(dtype).astype(np.float64) for v in (case.x, case.y))
    expected = {"w": ref.w, "b": ref.b}
    right = {name: _close(now[name], expected[name], tolerances) for name in expected}
    if not all(right.values()):
        unchanged = {name: np.array_equal(now[name], before[name]) for name in now}
        for name, other in (("w", "b"), ("b", "w")):
            if not right[name] and unchanged[name]:
                raise _unchanged_problem(name, other, unchanged, record, lang, where)
        w0, b0 = state
        n = x.shape[0]
        if _close(now["w"], w0 + case.lr * ref.dw, tolerances) and _close(now["b"], b0 + case.lr * ref.db, tolerances):
            raise Mismatch(message("ch09.wrong_sign", lang, where=where, got=fmt(np.ravel(now["w"])),
                                   expected=fmt(np.ravel(ref.w)), before=fmt(ref.loss),
                                   after=fmt(regression_loss(w0 + case.lr * ref.dw, b0 + case.lr * ref.db, x, y)),
                                   descent=fmt(regression_loss(ref.w, ref.b, x, y))))
        if (_close(now["w"], w0 - n * case.lr * ref.dw, tolerances)
                and _close(now["b"], b0 - n * case.lr * ref.db, tolerances)):
            ratio = np.linalg.norm(now["w"] - w0) / np.linalg.norm(ref.w - w0)
            raise Mismatch(message("ch09.sum", lang, where=where, got=fmt(np.ravel(now["w"])),
                                   expected=fmt(np.ravel(ref.w)), ratio=f"{ratio:.3g}", n=n))
        name = "w" if not right["w"] else "b"
        raise Mismatch(message("ch09.step_value", lang, where=where, name=name, got=_digits(now[name]),
                               expected=_digits(expected[name])))
    if not np.isclose(got_loss, ref.loss, **tolerances):
        after = regression_loss(ref.w, ref.b, x, y)
        key = "ch09.loss_after" if np.isclose(got_loss, after, **tolerances) else "ch09.loss_value"
        raise Mismatch(message(key, lang, where=where, got=fmt(got_loss), expected=fmt(ref.loss)))


def _train_pass(answer: Callable, case: RegressionCase, dtype, lang: str, *, traced: bool) -> None:
    """TRAIN_STEPS steps of ``answer`` (wrapped in a tf.function when ``traced``) on fresh variables, each
    compared with the reference (:func:`_check_step`)."""
    name = dtype_name(dtype)
    d, n = case.x.shape[1], case.x.shape[0]
    where_key = "ch09.function_step_where" if traced else "ch09.step_where"
    x, y = tf.constant(case.x.astype(dtype)), tf.constant(case.y.astype(dtype))
    w, b = tf.Variable(case.w0.astype(dtype)), tf.Variable(case.b0.astype(dtype))
    x64, y64 = (v.astype(dtype).astype(np.float64) for v in (case.x, case.y))
    state = (case.w0.astype(dtype).astype(np.float64), case.b0.astype(dtype).astype(np.float64))
    step = answer
    if traced:
        try:
            step = tf.function(answer)
        except PROPAGATE:
            raise
        except BaseException as err:  # a reader's object that tf.function refuses
            raise Mismatch(message("ch09.tf_function", lang, raised=_sentence(_raised(err, lang, "")))) from None
    for k in range(1, TRAIN_STEPS + 1):
        where = fragment(where_key, lang, d=d, n=n, dtype=name, k=k, steps=TRAIN_STEPS)
        before = {"w": w.numpy().astype(np.float64), "b": b.numpy().astype(np.float64)}
        with _watching({"w": w, "b": b}) as record:
            try:
                loss = step(w, b, x, y, case.lr)
            except (Mismatch, *PROPAGATE):
                raise
            except BaseException as err:  # the reader's code may raise anything
                raise _step_error(err, record, lang, where, traced) from None
        got_loss = _loss_value(loss, lang, where)
        now = {"w": w.numpy().astype(np.float64), "b": b.numpy().astype(np.float64)}
        ref = regression_step(*state, x64, y64, case.lr)
        _check_step(case, state, ref, got_loss, now, before, record, dtype, lang, where)
        state = (ref.w, ref.b)


def _check_train_step(answer: Callable, lang: str) -> str:
    for traced in (False, True):
        with captured_tf_warnings() if traced else contextlib.nullcontext():
            for dtype in TRAIN_DTYPES:
                for case in REGRESSION_CASES:
                    _train_pass(answer, case, dtype, lang, traced=traced)
    return message("ch09.train_passed", lang, cases=len(REGRESSION_CASES), steps=TRAIN_STEPS)


# The likeliest wrong answers, as a reader writes them.  (Rebinding a parameter is the mistake shown.)
ZERO = tf.UnconnectedGradients.ZERO


def _broken_step(w, b, x, y, lr):  # the chapter's broken step, unchanged
    with tf.GradientTape() as tape:
        pred = x @ tf.constant(w.numpy()) + b
        loss = tf.reduce_mean((pred - y) ** 2)
    dw, db = tape.gradient(loss, [w, b], unconnected_gradients=ZERO)
    w = w - lr * dw  # noqa: F841
    b.assign_sub(lr * db)
    return loss


def _step_with(*, detour=False, zero=False, outside=False, skip_none=False, update="assign", reduce=tf.reduce_mean,
               loss_after=False, as_numpy=False):
    """The repaired step with one thing changed: ``detour`` w through tf.constant(w.numpy()); ``zero``
    unconnected_gradients=ZERO; ``outside`` the prediction before the tape; ``skip_none`` a None gradient
    skipped; ``update``: "assign" (assign_sub), "rebind_w" (w = w - lr * dw), "rebind_both", "variable"
    (w = tf.Variable(...)), "ascent" (assign_add); ``reduce`` of the squared errors; ``loss_after`` the loss
    recomputed after the update; ``as_numpy`` the loss returned as loss.numpy()."""
    def train_step(w, b, x, y, lr):
        weights = tf.constant(w.numpy()) if detour else w
        if outside:
            pred = x @ weights + b
        with tf.GradientTape() as tape:
            if not outside:
                pred = x @ weights + b
            loss = reduce((pred - y) ** 2)
        dw, db = tape.gradient(loss, [w, b], unconnected_gradients=ZERO if zero else tf.UnconnectedGradients.NONE)
        if update == "assign":
            if not (skip_none and dw is None):
                w.assign_sub(lr * dw)
            if not (skip_none and db is None):
                b.assign_sub(lr * db)
        elif update == "ascent":
            w.assign_add(lr * dw)
            b.assign_add(lr * db)
        elif update == "variable":
            w = tf.Variable(w - lr * dw)
            b.assign_sub(lr * db)
        else:  # "rebind_w", "rebind_both"
            w = w - lr * dw  # noqa: F841
            if update == "rebind_both":
                b = b - lr * db  # noqa: F841
            else:
                b.assign_sub(lr * db)
        if loss_after:
            loss = reduce((x @ w + b - y) ** 2)
        return loss.numpy() if as_numpy else loss
    return train_step


@exercise("ch09-ex1", answer="train_step", wrong_answers=[
    ("the chapter's broken step, unchanged", _broken_step, "ch09.zero_gradient"),
    ("the NumPy detour kept with ZERO, assign_sub", _step_with(detour=True, zero=True), "ch09.zero_gradient"),
    ("the NumPy detour kept, ZERO removed", _step_with(detour=True), "ch09.none_gradient"),
    ("the prediction before the tape", _step_with(outside=True), "ch09.none_gradient"),
    ("a None gradient skipped", _step_with(detour=True, skip_none=True), "ch09.none_unchanged"),
    ("w = w - lr * dw", _step_with(update="rebind_w"), "ch09.rebound"),
    ("w = w - lr * dw and b = b - lr * db", _step_with(update="rebind_both"), "ch09.not_updated"),
    ("a new tf.Variable for w", _step_with(update="variable"), "ch09.new_variable"),
    ("assign_add: up the gradient", _step_with(update="ascent"), "ch09.wrong_sign"),
    ("the loss after the update", _step_with(loss_after=True), "ch09.loss_after"),
    ("tf.reduce_sum instead of tf.reduce_mean", _step_with(reduce=tf.reduce_sum), "ch09.sum"),
    ("the loss returned as loss.numpy()", _step_with(as_numpy=True), "ch09.tf_function"),
])
def check_train_step(answer, lang):
    return _check_train_step(answer, lang)


# -- ch09-ex2: bce_with_logits(y, z) ------------------------------------------------------------

BCE_SPECIAL_Z = (-100.0, -40.0, -17.0, -1.0, 0.0, 1.0, 17.0, 40.0, 100.0)
BCE_Z = np.concatenate([np.array(BCE_SPECIAL_Z), np.random.default_rng(94).uniform(-30.0, 30.0, 11)])
BCE_LABELS = (0.0, 1.0, 0.25)
BCE_Y_GRID, BCE_Z_GRID = np.meshgrid(np.array(BCE_LABELS), BCE_Z, indexing="ij")   # 3 × 20, y by row
BCE_DTYPES = (np.float32, np.float64)
# Within BCE_ULPS · eps · (the size of the terms) + the smallest normal number.  Correct formulas
# (tf.nn.sigmoid_cross_entropy_with_logits, softplus(z) − y z, y·softplus(−z) + (1 − y)·softplus(z),
# −(y log_sigmoid(z) + (1 − y) log_sigmoid(−z))) land within 1.5 of it in both dtypes; the mistakes are off by
# far more (log(σ + 1e-7) is off by 3 float32 ulps at z = 0, but by 1e9 float64 ulps).
BCE_ULPS = 8
NAIVE_Z = 15.0           # the naive formula is finite for |z| below this in float32 and float64
MODEL_TOLERANCES = dict(rtol=1e-6, atol=1e-12)   # a float64 answer against the float64 model of a mistake
SMALL_LOSS = 1e-2        # below it the loss is about e^(−|z|), and log(1 + e^(−|z|)) without log1p loses its digits


def bce_reference(y: np.ndarray, z: np.ndarray) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The loss, ∂L/∂z and ∂L/∂y in float64: y·softplus(−z) + (1 − y)·softplus(z), which equals
    log(1 + e^z) − y z (``np.logaddexp(0, z) - y*z``) without its cancellation, (1 − y)σ(z) − yσ(−z) = σ(z) − y,
    and −z."""
    y, z = np.asarray(y, np.float64), np.asarray(z, np.float64)
    value = y * _softplus(-z) + (1.0 - y) * _softplus(z)
    return value, (1.0 - y) * _sigmoid(z) - y * _sigmoid(-z), -z


def bce_scales(y: np.ndarray, z: np.ndarray) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The size of the terms each of value, ∂L/∂z and ∂L/∂y is computed from: |L| + |y z|, |σ(z) − y| + |y|,
    softplus(z) + softplus(−z)."""
    value, dz, _ = bce_reference(y, z)
    return np.abs(value) + np.abs(y * z), np.abs(dz) + np.abs(y), _softplus(z) + _softplus(-z)


def _bce_close(got: np.ndarray, exact: np.ndarray, scale: np.ndarray, dtype) -> np.ndarray:
    info = np.finfo(dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        return np.isfinite(got) & (np.abs(got - exact) <= BCE_ULPS * float(info.eps) * scale + float(info.tiny))


def _eps_in_log(y: np.ndarray, z: np.ndarray, eps: float) -> np.ndarray:
    """−(y log(σ(z) + eps) + (1 − y) log(1 − σ(z) + eps)) in float64."""
    s = _sigmoid(z)
    return -(y * np.log(s + eps) + (1.0 - y) * np.log(1.0 - s + eps))


def _clipped(y: np.ndarray, z: np.ndarray, eps: float) -> np.ndarray:
    """The cross-entropy of σ(z) clipped into [eps, 1 − eps], in float64."""
    p = np.clip(_sigmoid(z), eps, 1.0 - eps)
    return -(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))


def _bce_values64(answer: Callable) -> Optional[np.ndarray]:
    """The answer's loss on the grid in float64, or None when it does not give one (a diagnosis only)."""
    try:
        out = answer(tf.constant(BCE_Y_GRID), tf.constant(BCE_Z_GRID))
        array = to_array(out)
    except PROPAGATE:
        raise
    except BaseException:  # the reader's code may raise anything
        return None
    if array is None or array.dtype.kind != "f" or array.shape != BCE_Y_GRID.shape:
        return None
    return array.astype(np.float64)


def _bce_mistake(answer: Callable) -> Optional[Tuple[str, float]]:
    """(key, eps) of the wrong formula the answer's float64 values follow: y and z swapped, an eps added
    inside the logs (estimated from the value at z = 0, −log(0.5 + eps)), σ clipped into [eps, 1 − eps]
    (estimated from the cap at y = 0, z = 100, −log eps); None for none of them."""
    values = _bce_values64(answer)
    if values is None:
        return None
    y, z = BCE_Y_GRID, BCE_Z_GRID
    with np.errstate(all="ignore"):
        if _close(values, bce_reference(z, y)[0], MODEL_TOLERANCES):
            return "ch09.swapped", 0.0
        zero = BCE_SPECIAL_Z.index(0.0)
        eps = float(np.exp(-values[1, zero]) - 0.5)
        if 1e-14 < eps < 0.1 and _close(values, _eps_in_log(y, z, eps), MODEL_TOLERANCES):
            return "ch09.log_eps", eps
        eps = float(np.exp(-values[0, BCE_SPECIAL_Z.index(100.0)]))
        if 0.0 < eps < 0.1 and _close(values, _clipped(y, z, eps), MODEL_TOLERANCES):
            return "ch09.clipped", eps
    return None


def _bce_reduced(shape: Tuple[int, ...]) -> Optional[str]:
    return "ch09.bce_reduced" if len(shape) < BCE_Y_GRID.ndim else None


def _bce_pass(answer: Callable, dtype, lang: str) -> None:
    """Value, ∂L/∂z and ∂L/∂y on the grid in ``dtype``; raises Mismatch on the first problem."""
    name = dtype_name(dtype)
    y_np, z_np = BCE_Y_GRID.astype(dtype), BCE_Z_GRID.astype(dtype)
    y64, z64 = y_np.astype(np.float64), z_np.astype(np.float64)
    value, dz, dy = bce_reference(y64, z64)
    scale_value, scale_dz, scale_dy = bce_scales(y64, z64)
    where = fragment("ch09.at_dtype", lang, dtype=name)
    flat_y, flat_z = y64.ravel(), z64.ravel()

    def at(i):
        return fragment("ch09.at_yz", lang, y=fmt(flat_y[i]), z=fmt(flat_z[i]), dtype=name)

    def first(mask, prefer=None):
        """The flat index to report: where ``prefer`` holds first, then the smallest |z|, then in order."""
        indices = np.flatnonzero(np.ravel(mask))
        rank = [(not (prefer is None or np.ravel(prefer)[i]), abs(flat_z[i]), k) for k, i in enumerate(indices)]
        return int(indices[min(range(len(indices)), key=lambda k: rank[k])])

    y_t, z_t = tf.constant(y_np), tf.constant(z_np)
    with tf.GradientTape() as tape:
        tape.watch([y_t, z_t])
        out = call(answer, y_t, z_t, lang=lang, where=where)
    got = returned_tensor(out, lang=lang, where=where, what="common.forward", shape=y_np.shape, dtype=dtype,
                     shape_key=_bce_reduced, keep_nonfinite=True)
    flat = got.ravel()
    infinite = ~np.isfinite(got)
    if infinite.any():
        limit = float(np.log(np.finfo(dtype).max))
        if np.all(z64[infinite] > limit):  # log(1 + exp(z)) written out: exp overflows, not σ rounding
            i = first(infinite, prefer=np.isinf(got))
            raise Mismatch(message("ch09.exp_overflow", lang, where=at(i), got=fmt(flat[i]), dtype=name,
                                   limit=f"{limit:.1f}"))
        if np.all(np.abs(z64[infinite]) >= NAIVE_Z):
            i = first(infinite, prefer=np.isinf(got))
            p = np.asarray(_sigmoid(flat_z[i])).astype(dtype)
            raise Mismatch(message("ch09.naive", lang, where=at(i), got=fmt(flat[i]), p=fmt(p), dtype=name))
        i = first(infinite)
        raise Mismatch(message("common.nan", lang, where=at(i), what=fragment("common.forward", lang)))
    grad_z, grad_y = _reader_gradient(tape, out, [z_t, y_t], lang=lang, where=where)
    grads = {}
    for gradient, input_name in ((grad_z, "z"), (grad_y, "y")):
        if gradient is None:
            raise Mismatch(message("ch09.bce_grad_none", lang, where=where, name=input_name))
        grads[input_name] = returned_tensor(gradient, lang=lang, where=where, what="common.gradient", shape=y_np.shape,
                                       dtype=dtype, keep_nonfinite=True)
    for input_name, gradient in grads.items():
        bad = ~np.isfinite(gradient)
        if bad.any():
            i = first(bad)
            specs = [tf.TensorSpec(y_np.shape, dtype)] * 2
            key = "ch09.where_nan" if _uses_where(lambda y, z: answer(y, z), specs) else "ch09.grad_nan"
            raise Mismatch(message(key, lang, where=at(i), value=fmt(flat[i]), got=fmt(gradient.ravel()[i]),
                                   name=input_name))
    wrong = ~_bce_close(got, value, scale_value, dtype)
    if wrong.any():
        i = first(wrong)
        fields = dict(where=at(i), got=fmt(flat[i]), expected=fmt(value.ravel()[i]))
        mistake = _bce_mistake(answer)
        if mistake is not None:
            key, eps = mistake
            if key != "ch09.swapped":   # reported where a confident wrong prediction is: y = 0, z = 100
                i = int(np.ravel_multi_index((0, BCE_SPECIAL_Z.index(100.0)), y_np.shape))
                fields = dict(where=at(i), got=fmt(flat[i]), expected=fmt(value.ravel()[i]),
                              grad=fmt(grads["z"].ravel()[i]), expected_grad=fmt(dz.ravel()[i]),
                              eps=f"{eps:.3g}", cap=fmt(-np.log(eps)))
            raise Mismatch(message(key, lang, **fields))
        if np.all(value[wrong] < SMALL_LOSS):   # only where the loss is small: 1 + e^(−|z|) lost its digits
            raise Mismatch(message("ch09.value_tiny", lang, **fields))
        raise Mismatch(message("ch09.bce_value", lang, **fields))
    for input_name, exact, scale in (("z", dz, scale_dz), ("y", dy, scale_dy)):
        gradient = grads[input_name]
        wrong = ~_bce_close(gradient, exact, scale, dtype)
        if wrong.any():
            i = first(wrong)
            fields = dict(where=at(i), got=fmt(gradient.ravel()[i]), expected=fmt(exact.ravel()[i]), name=input_name)
            kink = input_name == "z" and np.all(z64[wrong] == 0)
            raise Mismatch(message("ch09.kink_zero" if kink else "ch09.bce_grad", lang, **fields))


# A logistic regression whose data has a point with a logit beyond 40 on the wrong side (row 3, label 0) during
# every step, one beyond −40 on the right side (row 4), and a soft label (row 7).
LOGISTIC_X = np.array([[1.0, 0.5], [-0.5, 1.5], [20.0, -5.0], [-25.0, 3.0], [0.3, -0.2], [-1.0, -1.0], [0.5, 0.5]])
LOGISTIC_Y = np.array([1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.25])
LOGISTIC_W0 = np.array([2.0, -1.0])
LOGISTIC_B0 = np.array(0.5)
LOGISTIC_LR = 0.01
LOGISTIC_STEPS = 5
WEIGHT_TOLERANCES = {np.float32: dict(rtol=1e-4, atol=1e-6), np.float64: dict(rtol=1e-9, atol=1e-12)}


def logistic_reference(dtype) -> List[Tuple[np.ndarray, np.ndarray]]:
    """(w, b) after each step of gradient descent on mean(BCE(y, X w + b)) in float64, from the data rounded
    to ``dtype``: ∂/∂w = Xᵀ(σ(z) − y)/n, ∂/∂b = mean(σ(z) − y)."""
    X, y = (v.astype(dtype).astype(np.float64) for v in (LOGISTIC_X, LOGISTIC_Y))
    w, b = LOGISTIC_W0.astype(dtype).astype(np.float64), float(LOGISTIC_B0.astype(dtype))
    steps = []
    for _ in range(LOGISTIC_STEPS):
        g = _sigmoid(X @ w + b) - y
        w, b = w - LOGISTIC_LR * X.T @ g / len(y), b - LOGISTIC_LR * float(np.mean(g))
        steps.append((w, np.array(b)))
    return steps


def _bce_training(answer: Callable, dtype, lang: str) -> None:
    name = dtype_name(dtype)
    X, y = tf.constant(LOGISTIC_X.astype(dtype)), tf.constant(LOGISTIC_Y.astype(dtype))
    w, b = tf.Variable(LOGISTIC_W0.astype(dtype)), tf.Variable(LOGISTIC_B0.astype(dtype))
    lr = tf.constant(LOGISTIC_LR, dtype)
    X64, y64 = (v.astype(dtype).astype(np.float64) for v in (LOGISTIC_X, LOGISTIC_Y))
    w_prev, b_prev = LOGISTIC_W0.astype(dtype).astype(np.float64), float(LOGISTIC_B0.astype(dtype))
    for k, (w_ref, b_ref) in enumerate(logistic_reference(dtype), start=1):
        where = fragment("ch09.bce_train_where", lang, dtype=name, k=k, steps=LOGISTIC_STEPS)
        with tf.GradientTape() as tape:
            z = tf.linalg.matvec(X, w) + b
            out = call(answer, y, z, lang=lang, where=where)
            got = returned_tensor(out, lang=lang, where=where, what="common.forward", shape=LOGISTIC_Y.shape,
                             dtype=dtype, shape_key=lambda shape: "ch09.bce_reduced" if len(shape) < 1 else None,
                             keep_nonfinite=True)
            loss = tf.reduce_mean(out)
        expected = bce_reference(y64, X64 @ w_prev + b_prev)[0]
        if not _close(got, expected, WEIGHT_TOLERANCES[dtype]):
            raise Mismatch(message("ch09.train_value", lang, where=where, got=fmt(got), expected=fmt(expected)))
        w_prev, b_prev = w_ref, float(b_ref)
        grad_w, grad_b = _reader_gradient(tape, loss, [w, b], lang=lang, where=where)
        if grad_w is None or grad_b is None:
            raise Mismatch(message("common.none_gradient", lang, where=where))
        w.assign_sub(lr * grad_w)
        b.assign_sub(lr * grad_b)
        got = (w.numpy().astype(np.float64), b.numpy().astype(np.float64))
        if not (_close(got[0], w_ref, WEIGHT_TOLERANCES[dtype]) and _close(got[1], b_ref, WEIGHT_TOLERANCES[dtype])):
            raise Mismatch(message("ch09.train_weights", lang, where=where, got=_weights_text(*got),
                                   expected=_weights_text(w_ref, b_ref)))


def _check_bce(answer: Callable, lang: str) -> str:
    for dtype in BCE_DTYPES:
        _bce_pass(answer, dtype, lang)
    for dtype in BCE_DTYPES:
        _bce_training(answer, dtype, lang)
    return message("ch09.bce_passed", lang, n=BCE_Y_GRID.size, ulps=BCE_ULPS, steps=LOGISTIC_STEPS)


# The likeliest wrong answers, as a reader writes them.
EPS = 1e-7   # keras.backend.epsilon(), the eps readers reach for


def _bce_naive(y, z):  # the broken step's formula
    p = tf.sigmoid(z)
    return -(y * tf.math.log(p) + (1 - y) * tf.math.log(1 - p))


def _bce_clipped(y, z):
    p = tf.clip_by_value(tf.sigmoid(z), EPS, 1 - EPS)
    return -(y * tf.math.log(p) + (1 - y) * tf.math.log(1 - p))


def _bce_where(y, z):  # each log replaced by its asymptote where σ(z) is 0 or 1: finite values, NaN gradients
    p = tf.sigmoid(z)
    log_p = tf.where(p > 0, tf.math.log(p), z)
    log_q = tf.where(p < 1, tf.math.log(1 - p), -z)
    return -(y * log_p + (1 - y) * log_q)


def _bce_eps(y, z):
    p = tf.sigmoid(z)
    return -(y * tf.math.log(p + EPS) + (1 - y) * tf.math.log(1 - p + EPS))


def _bce_mean(y, z):
    return tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=z))


def _bce_swapped(z, y):  # a correct formula, the arguments in the wrong order
    return y * tf.nn.softplus(-z) + (1 - y) * tf.nn.softplus(z)


def _bce_max(y, z):  # TensorFlow's documented formula max(z, 0) − z y + log(1 + e^(−|z|)), written as it reads
    return tf.maximum(z, 0.0) - y * z + tf.math.log1p(tf.exp(-tf.abs(z)))


def _bce_relu(y, z):
    return tf.nn.relu(z) - y * z + tf.math.log1p(tf.exp(-tf.abs(z)))


def _bce_exp_written_out(y, z):  # the solution's formula, without softplus: exp(z) overflows past 88.7
    return tf.math.log1p(tf.exp(z)) - y * z


def _bce_log_without_log1p(y, z):
    return tf.maximum(z, 0.0) - y * z + tf.math.log(1 + tf.exp(-tf.abs(z)))


@exercise("ch09-ex2", answer="bce_with_logits", wrong_answers=[
    ("the naive formula", _bce_naive, "ch09.naive"),
    ("σ clipped into [eps, 1 − eps]", _bce_clipped, "ch09.clipped"),
    ("tf.where around the logs", _bce_where, "ch09.where_nan"),
    ("log(σ(z) + eps)", _bce_eps, "ch09.log_eps"),
    ("the mean instead of the elementwise loss", _bce_mean, "ch09.bce_reduced"),
    ("y and z swapped", _bce_swapped, "ch09.swapped"),
    ("tf.maximum(z, 0) - y z + log1p(exp(-|z|))", _bce_max, "ch09.kink_zero"),
    ("tf.nn.relu(z) - y z + log1p(exp(-|z|))", _bce_relu, "ch09.kink_zero"),
    ("log(1 + exp(-|z|)) without log1p", _bce_log_without_log1p, "ch09.value_tiny"),
    ("log1p(exp(z)) - y z: exp overflows", _bce_exp_written_out, "ch09.exp_overflow"),
])
def check_bce_with_logits(answer, lang):
    return _check_bce(answer, lang)


# -- ch09-ex3: safe_norm(x) -----------------------------------------------------------------

def _norm_matrix() -> np.ndarray:
    rng = np.random.default_rng(95)
    random = rng.normal(0.0, 1.0, (3, 3)) * 10.0 ** rng.uniform(-3.0, 3.0, (3, 1))
    return np.concatenate([np.array([
        [3.0, 4.0, 0.0],          # a row with a zero
        [0.0, 0.0, 0.0],          # the all-zero row
        [0.0, -2.5, 0.0],         # one non-zero entry, negative
        [1e-3, -2e-3, 5e-4],      # small entries
        [1e3, -700.0, 250.0],     # large entries
        [-1.0, 2.0, -0.5],
    ]), random])


NORM_MATRIX = _norm_matrix()
NORM_CASES = (NORM_MATRIX, np.zeros(3), np.array([1.5, -2.0, 0.5]), np.stack([NORM_MATRIX[:4], NORM_MATRIX[4:8]]))
# Checked last, after the mistakes above have had their say: rows whose squares underflow to 0 or overflow to inf
# in float32 (the chapter's statement promises entries from 1e-30 to 1e30).  Exact in float64 too.
NORM_EXTREME = np.array([
    [1e-30, 0.0, 0.0],        # one tiny entry: its square underflows to 0 in float32
    [3e-30, -4e-30, 0.0],
    [1e30, -1e30, 5e29],      # squares overflow to inf in float32
    [0.0, 0.0, -1e30],
    [1e30, 1e-30, 0.0],       # both sizes in one row
])
NORM_DTYPES = (np.float32, np.float64)
# Right answers land within 2 ulps (relative for the value, absolute for the gradient, a unit vector), sqrt(s + eps)
# with eps = 1e-12 as well (the value at the zero row is what shows it).
NORM_ULPS = 8
RANK_WORDS = ("dimension", "axis", "rank")   # an error about the axis of the reduction


def norm_reference(x: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """‖x‖ over the last axis and its gradient x/‖x‖ (0 where the row is all zeros), in float64."""
    x = np.asarray(x, np.float64)
    norm = np.sqrt(np.sum(x * x, axis=-1))
    safe = np.where(norm > 0, norm, 1.0)[..., None]
    return norm, np.where(norm[..., None] > 0, x / safe, 0.0)


def _norm_shape_key(x_shape: Tuple[int, ...]) -> Callable[[Tuple[int, ...]], Optional[str]]:
    """A shape that says the wrong axis was reduced (fewer dimensions than x, or keepdims)."""
    def key(shape):
        if len(shape) < len(x_shape) or tuple(shape) == tuple(x_shape[:-1]) + (1,):
            return "ch09.norm_axis"
        return None
    return key


def _call_norm(answer: Callable, x: tf.Tensor, passed_ranks: Sequence[int], lang: str, where: str):
    """answer(x); an error about the reduction's axis on a rank that has not passed yet, after another rank
    has, gets the axis hint (axis=1 fails on a vector)."""
    try:
        return answer(x)
    except (Mismatch, *PROPAGATE):
        raise
    except BaseException as err:  # the reader's code may raise anything
        text = _raised(err, lang, where)
        detail = describe(err, lang).lower()
        if passed_ranks and len(x.shape) not in passed_ranks and any(word in detail for word in RANK_WORDS):
            raise Mismatch(message("ch09.norm_axis_raised", lang, raised=_sentence(text),
                                   shape=list(x.shape))) from None
        raise text from None


def _norm_eager(answer: Callable, x_np: np.ndarray, dtype, passed_ranks: Sequence[int], lang: str,
                where: str) -> Tuple[np.ndarray, np.ndarray]:
    """The answer's value and gradient (upstream 1), run eagerly, validated."""
    x = tf.constant(x_np)
    with tf.GradientTape() as tape:
        tape.watch(x)
        out = _call_norm(answer, x, passed_ranks, lang, where)
    values = returned_tensor(out, lang=lang, where=where, what="common.forward", shape=x_np.shape[:-1], dtype=dtype,
                        shape_key=_norm_shape_key(x_np.shape), keep_nonfinite=True)
    gradient = _reader_gradient(tape, out, x, lang=lang, where=where)
    if gradient is None:
        raise Mismatch(message("common.none_gradient", lang, where=where))
    return values, returned_tensor(gradient, lang=lang, where=where, what="common.gradient", shape=x_np.shape,
                              dtype=dtype, keep_nonfinite=True)


def _norm_xla(answer: Callable, x_np: np.ndarray, dtype, lang: str,
              where: str) -> Optional[Tuple[np.ndarray, np.ndarray]]:
    """The answer's value and gradient computed inside ``tf.function(jit_compile=True)``; None when XLA cannot
    compile it (an op without an XLA kernel: no XLA pass).  What the answer returns while traced is checked
    there: the eager passes before have checked it already, so a problem here is an answer that changed."""
    shape = x_np.shape[:-1]
    problems: List[Mismatch] = []

    def run(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            out = answer(x)
        if out is None:
            problems.append(Mismatch(message("common.none", lang, where=where)))
        elif not tensor_like(out) or not out.dtype.is_floating:
            problems.append(Mismatch(message("common.not_numeric", lang, where=where, kind=type(out).__name__)))
        elif out.shape.as_list() != list(shape) or tf.as_dtype(out.dtype) != tf.as_dtype(dtype):
            problems.append(Mismatch(message("common.shape", lang, where=where, what=fragment("common.forward", lang),
                                             got=out.shape.as_list(), expected=list(shape))))
        if problems:
            return tf.zeros(shape, dtype), tf.zeros_like(x)
        gradient = tape.gradient(out, x)
        if gradient is None:
            problems.append(Mismatch(message("common.none_gradient", lang, where=where)))
            return out, tf.zeros_like(x)
        return out, gradient

    try:
        with captured_tf_warnings():
            compiled = tf.function(run, jit_compile=True).get_concrete_function(tf.TensorSpec(x_np.shape, dtype))
    except (Mismatch, *PROPAGATE):
        raise
    except BaseException as err:  # the reader's code raised while it was traced
        raise _raised(err, lang, where) from None
    if problems:
        raise problems[0]
    try:
        values, gradient = compiled(tf.constant(x_np))
    except PROPAGATE:
        raise
    except Exception:  # XLA could not compile it: not the reader's mistake
        return None
    return values.numpy().astype(np.float64), gradient.numpy().astype(np.float64)


def _norm_compare(answer: Callable, x_np: np.ndarray, values: np.ndarray, gradient: np.ndarray, dtype, lang: str,
                  where: str, *, xla: bool) -> None:
    """Value and gradient against :func:`norm_reference`, row by row (each row: a finite value, a finite
    gradient, the value, the gradient); raises Mismatch on the first problem."""
    name = dtype_name(dtype)
    exact, exact_grad = norm_reference(x_np.astype(np.float64))
    k = x_np.shape[-1]
    rows = x_np.reshape(-1, k)
    values, exact = values.ravel(), exact.ravel()
    gradient, exact_grad = gradient.reshape(-1, k), exact_grad.reshape(-1, k)
    eps = float(np.finfo(dtype).eps)

    def at(r):
        key = "ch09.at_vector" if x_np.ndim == 1 else "ch09.at_row"
        return where + fragment(key, lang, row=_row_text(rows[r]), dtype=name)

    for r in range(len(rows)):
        zero = exact[r] == 0
        fields = dict(where=at(r), got=fmt(values[r]), expected=fmt(exact[r]), dtype=name,
                      eps=f"{float(values[r]) ** 2:.3g}" if np.isfinite(values[r]) else "")
        if not np.isfinite(values[r]):
            if np.isinf(values[r]) and np.isfinite(exact[r]) and np.any(np.isinf(_squares(rows[r], dtype))):
                raise Mismatch(message("ch09.norm_overflow", lang, **fields))
            raise Mismatch(message("common.nan", lang, where=at(r), what=fragment("common.forward", lang)))
        if not np.all(np.isfinite(gradient[r])):
            if zero and xla:
                raise Mismatch(message("ch09.single_where_xla", lang, where=at(r), got=_row_text(gradient[r])))
            if zero:
                spec = [tf.TensorSpec(x_np.shape, dtype)]
                key = "ch09.single_where" if _uses_where(lambda x: answer(x), spec) else "ch09.sqrt_nan"
                raise Mismatch(message(key, lang, where=at(r), got=_row_text(gradient[r])))
            raise Mismatch(message("common.nan", lang, where=at(r), what=fragment("common.gradient", lang)))
        right = values[r] == 0 if zero else abs(values[r] - exact[r]) <= NORM_ULPS * eps * exact[r]
        if not right:
            raise Mismatch(message(_norm_value_key(rows, values, exact, r, dtype), lang, **fields))
        right = (np.all(gradient[r] == 0) if zero
                 else np.all(np.abs(gradient[r] - exact_grad[r]) <= NORM_ULPS * eps))
        if not right:
            raise Mismatch(message("ch09.norm_grad", lang, where=at(r), got=_row_text(gradient[r]),
                                   expected=_row_text(exact_grad[r])))


def _squares(row: np.ndarray, dtype) -> np.ndarray:
    """The squares of a row's entries in ``dtype``: 0 where they underflow, inf where they overflow."""
    with np.errstate(over="ignore", under="ignore"):
        return row.astype(dtype) ** 2


def _norm_value_key(rows: np.ndarray, values: np.ndarray, exact: np.ndarray, r: int, dtype) -> str:
    """The message of a wrong norm at row ``r``: an eps under the square root (the value of a zero row is
    sqrt(eps), and every row follows sqrt(‖x‖² + eps)), the squared norm, squares that underflow to 0, or
    none of these."""
    squares = exact ** 2
    if exact[r] == 0 and values[r] > 0:
        eps_used = float(values[r]) ** 2
        if np.allclose(values, np.sqrt(squares + eps_used), rtol=1e-3, atol=0.0):
            return "ch09.norm_eps"
    if np.allclose(values, squares, rtol=1e-4, atol=0.0) and not np.allclose(squares, exact, rtol=1e-4):
        return "ch09.squared"
    if values[r] == 0 and exact[r] > 0 and np.all(_squares(rows[r], dtype) < np.finfo(dtype).tiny):
        return "ch09.norm_underflow"
    return "ch09.norm_value"


# The centre loss mean(‖x W − c‖) over the rows, trained by gradient descent on W.  Row 2's embedding x W0 is its
# centre exactly: dyadic numbers, so x W0 is the same bit for bit in float32, float64 and NumPy.
CENTRE_X = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5], [1.0, 0.5, -2.0], [-0.75, 1.0, 0.5], [2.0, -0.5, 1.0]])
CENTRE_W0 = np.array([[0.5, -0.25], [1.0, 0.75], [-0.5, 0.25]])
CENTRE_AT = 2
CENTRE_C = np.array([[1.0, 2.0], [-0.5, 0.5], [2.0, -0.375], [0.25, -1.0], [3.0, 1.5]])   # row 2: CENTRE_X[2] @ W0
CENTRE_LR = 0.1
CENTRE_STEPS = 5


def centre_reference(dtype) -> List[np.ndarray]:
    """W after each step of gradient descent on mean_r ‖x_r W − c_r‖ in float64, from the data rounded to
    ``dtype``: ∂/∂W = xᵀG/n with G_r = (x_r W − c_r)/‖x_r W − c_r‖, 0 where that is 0."""
    X, C, W = (v.astype(dtype).astype(np.float64) for v in (CENTRE_X, CENTRE_C, CENTRE_W0))
    steps = []
    for _ in range(CENTRE_STEPS):
        _, G = norm_reference(X @ W - C)
        W = W - CENTRE_LR * X.T @ G / len(X)
        steps.append(W)
    return steps


def _norm_training(answer: Callable, dtype, lang: str) -> None:
    name = dtype_name(dtype)
    X, C = tf.constant(CENTRE_X.astype(dtype)), tf.constant(CENTRE_C.astype(dtype))
    W = tf.Variable(CENTRE_W0.astype(dtype))
    lr = tf.constant(CENTRE_LR, dtype)
    X64, C64 = (v.astype(dtype).astype(np.float64) for v in (CENTRE_X, CENTRE_C))
    W_prev = CENTRE_W0.astype(dtype).astype(np.float64)
    for k, W_ref in enumerate(centre_reference(dtype), start=1):
        where = fragment("ch09.norm_train_where", lang, dtype=name, k=k, steps=CENTRE_STEPS)
        with tf.GradientTape() as tape:
            out = call(answer, X @ W - C, lang=lang, where=where)
            got = returned_tensor(out, lang=lang, where=where, what="common.forward", shape=(len(CENTRE_X),), dtype=dtype,
                             shape_key=_norm_shape_key(CENTRE_C.shape), keep_nonfinite=True)
            loss = tf.reduce_mean(out)
        expected = norm_reference(X64 @ W_prev - C64)[0]
        if not _close(got, expected, WEIGHT_TOLERANCES[dtype]):
            raise Mismatch(message("ch09.train_value", lang, where=where, got=fmt(got), expected=fmt(expected)))
        W_prev = W_ref
        gradient = _reader_gradient(tape, loss, W, lang=lang, where=where)
        if gradient is None:
            raise Mismatch(message("common.none_gradient", lang, where=where))
        W.assign_sub(lr * gradient)
        got = W.numpy().astype(np.float64)
        if not _close(got, W_ref, WEIGHT_TOLERANCES[dtype]):
            raise Mismatch(message("ch09.train_weights", lang, where=where, got=_weights_text(got),
                                   expected=_weights_text(W_ref)))


def _check_norm(answer: Callable, lang: str) -> str:
    for dtype in NORM_DTYPES:
        passed_ranks: List[int] = []
        for x_np in NORM_CASES:
            x_np = x_np.astype(dtype)
            values, gradient = _norm_eager(answer, x_np, dtype, passed_ranks, lang,
                                           fragment("ch09.at_dtype", lang, dtype=dtype_name(dtype)))
            _norm_compare(answer, x_np, values, gradient, dtype, lang, "", xla=False)
            passed_ranks.append(x_np.ndim)
    for dtype in NORM_DTYPES:
        x_np = NORM_MATRIX.astype(dtype)
        where = fragment("ch09.xla_where", lang)
        computed = _norm_xla(answer, x_np, dtype, lang, where + fragment("ch09.at_dtype", lang,
                                                                         dtype=dtype_name(dtype)))
        if computed is not None:
            _norm_compare(answer, x_np, *computed, dtype, lang, where, xla=True)
    for dtype in NORM_DTYPES:
        x_np = NORM_EXTREME.astype(dtype)
        values, gradient = _norm_eager(answer, x_np, dtype, [], lang,
                                       fragment("ch09.at_dtype", lang, dtype=dtype_name(dtype)))
        _norm_compare(answer, x_np, values, gradient, dtype, lang, "", xla=False)
    for dtype in NORM_DTYPES:
        _norm_training(answer, dtype, lang)
    return message("ch09.norm_passed", lang, cases=len(NORM_CASES) + 1, steps=CENTRE_STEPS)


# The likeliest wrong answers, as a reader writes them.

def _norm_plain(x):
    return tf.sqrt(tf.reduce_sum(x ** 2, axis=-1))


def _norm_eps(x):
    return tf.sqrt(tf.reduce_sum(x ** 2, axis=-1) + 1e-12)


def _norm_single_where(x):  # tf.sqrt: NaN under XLA only
    s = tf.reduce_sum(x ** 2, axis=-1)
    return tf.where(s > 0, tf.sqrt(s), tf.zeros_like(s))


def _norm_single_where_pow(x):  # s ** 0.5: NaN eagerly too
    s = tf.reduce_sum(x ** 2, axis=-1)
    return tf.where(s > 0, s ** 0.5, tf.zeros_like(s))


def _norm_double_where(axis=-1, keepdims=False):
    def safe_norm(x):
        s = tf.reduce_sum(x ** 2, axis=axis, keepdims=keepdims)
        positive = s > 0
        return tf.where(positive, tf.sqrt(tf.where(positive, s, tf.ones_like(s))), tf.zeros_like(s))
    return safe_norm


def _norm_squared(x):
    return tf.reduce_sum(x ** 2, axis=-1)


@exercise("ch09-ex3", answer="safe_norm", wrong_answers=[
    ("tf.norm", lambda x: tf.norm(x, axis=-1), "ch09.sqrt_nan"),
    ("tf.sqrt of the sum of squares", _norm_plain, "ch09.sqrt_nan"),
    ("sqrt(sum + eps)", _norm_eps, "ch09.norm_eps"),
    ("a single tf.where around tf.sqrt", _norm_single_where, "ch09.single_where_xla"),
    ("a single tf.where around s ** 0.5", _norm_single_where_pow, "ch09.single_where"),
    ("the norm over axis 0", _norm_double_where(axis=0), "ch09.norm_axis"),
    ("keepdims=True", _norm_double_where(keepdims=True), "ch09.norm_axis"),
    ("axis=1 instead of -1", _norm_double_where(axis=1), "ch09.norm_axis_raised"),
    ("the squared norm", _norm_squared, "ch09.squared"),
])
def check_safe_norm(answer, lang):
    return _check_norm(answer, lang)
