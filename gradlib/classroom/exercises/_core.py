"""The machinery every exercise check shares (private).

A check receives the reader's answer (usually a function), calls it on kink
points and random inputs, compares with a reference and returns
:class:`Feedback` in the chapter's language.  The reader's code is never
trusted: an exception, ``None``, NaN, a wrong shape or dtype, code that never
returns each become a message, never a crash or a hang of the check
(``tests/test_fuzz_checks.py`` tries hundreds of such answers on every check).

The whole check runs under one time limit (:class:`_Deadline`, SIGALRM).  An
exception that escapes a check is blamed on the reader's code when it was
raised there (or in a library the reader's code called), and reported as a
failure of the check itself otherwise (:func:`_raised_by_check`): a bug in
gradlib must not look like the reader's mistake.

Shared by the chapters' checks: :func:`probe` (value and vector-Jacobian
product of the reader's function, validated), :func:`first_mismatch` and
:func:`matches` (the one comparison), :func:`first_mistake` (which typical
wrong answer, from a table of (key, wrong value), the answer reproduces),
:func:`value_mismatch` (the generic "your value is ...; expected ..."
message), and from :mod:`gradlib.classroom.catalogue` :func:`message`,
:func:`fragment` and :func:`join`.  Every message lives in the catalogues
(``gradlib/classroom/messages/en.json`` and ``zh.json``); a
:class:`Mismatch` made from a catalogue message carries its key, and so does
the :class:`Feedback`.

Three kinds of check are declared as data and interpreted here:
:class:`Elementwise` (an elementwise op: points with kinks, batch shapes,
parameter sets, a NumPy reference value and gradient, upstream gradients,
message keys and hint functions; ch02-ex1, ch02-ex2, ch05-ex1),
:class:`Scalar` (a function of one number with a value-only reference and a
table of typical wrong formulas; ch06-ex2) and :class:`WholeTensor` (a
tensor op at fixed inputs and upstream gradients, value and VJP compared
whole, alternative correct gradients, a table of typical wrong gradients;
ch05-ex2, ch05-ex3).  The other checks are
code built from the helpers above, with their data (points, cases, parameter
values, references, wrong answers and their keys) declared once, as
constants and reference functions of the chapter's module.  Why each stays code:

* ch01-ex2: the answer takes a function, and TensorFlow's error text and a None mean different mistakes.
* ch01-ex3: a training loop, run with a recording ``loss_fn`` and a Variable whose identity matters.
* ch02-ex4: six arguments, NaN features on purpose, a scalar loss with three gradient references.
* ch03-ex1, ch03-ex2: graph mode and the gradient registry (RegisterGradient, gradient_override_map), not a function to probe.
* ch04-ex1: one sentence per mistake ("... because x is outside [0, 1]"), not a message plus a hint;
  hints for the forward pass's exceptions; a NaN value compared point by point.
* ch04-ex2: two inputs, relative accuracy, a second derivative and the traced graph inspected.
* ch04-ex3: compares whole rows, and a forward pass that clips is its own message.
* ch06-ex1: the tf.function and Variable probe, and a bit-exact comparison.
* ch06-ex3: find-the-bug loss, with hints chosen by fitting coefficients (inequalities, not a table).
* ch07-ex1, ch07-ex2: a Keras layer class and a registered quantizer, under mixed precision, fit and a .keras round trip.
* ch08-ex1: a function of a function, with forward mode and tape.jacobian switched off while it runs.
* ch08-ex2: value, first and second derivatives (nested tapes) in ulps, and the nesting of custom gradients detected.
* ch08-ex3: a solver's accuracy and its implicit gradients, with the custom gradient detected and unrolling told apart.
* ch09-ex1: a training step judged by the caller's Variables after each step, with tape.gradient and Variable
  creation watched while it runs, eagerly and inside tf.function.
* ch09-ex2: value and two gradients within ulps of the size of their terms, the wrong formulas told apart by
  float64 models of them, and a training with the answer as its loss.
* ch09-ex3: exact zeros at zero rows, row by row, also under XLA, rows whose squares under- or overflow, and a
  training.

Adding an exercise with an automatic check:

1. the chapter pair (``chapters/en`` and ``chapters/zh``): the exercise, its
   hidden reference solution and its check cell
   ``gradlib.exercises.check("chNN-exK", answer_name, lang=...)``;
2. the check in ``chNN.py``: when it fits a spec, one declaration
   (``SPEC = Elementwise(...)``, ``Scalar(...)`` or ``WholeTensor(...)``) and a three-line
   function ``check(answer, lang) -> str`` registered with
   ``@exercise("chNN-exK", answer="answer_name", wrong_answers=[...])`` that runs it
   (:func:`check_elementwise` / :func:`check_scalar` / :func:`check_whole`) and returns the success
   message; otherwise a check of that shape that probes the answer
   (:func:`probe`), compares with a NumPy reference (:func:`first_mismatch`),
   names typical mistakes (:func:`first_mistake`) and raises
   :class:`Mismatch` with a catalogue message on the first problem.  Keep the
   chapter's other decorators too (chapter 2's straight-through exercises add
   ``@_without_straight_through``, so ``gradlib.straight_through`` is not
   accepted as the answer); ``wrong_answers`` lists at least the three most
   likely mistakes as ``(name, answer, key)`` (:class:`WrongAnswer`), each
   with the message key it must get (``tests/test_classroom_wrong_answers.py``
   runs them in both languages); add the id to the module docstring's list;
3. its messages, under ``chNN.<name>``, in both catalogues (the same keys and
   placeholders: ``tests/test_classroom_messages.py``);
4. ``make notebooks`` to regenerate the ``.ipynb`` twins.

The fuzzer, the wrong-answer table, the reference-solution tests, the
student edition and the grader's tests find the new exercise by themselves (from the chapters and
the registry), and ``make check`` runs them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib
import math
import os
import signal
import sysconfig
import threading
import time
from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf

from ... import _validate
from ..catalogue import LANGUAGES, Text, catalogue, fragment, join, message, seconds_text  # noqa: F401 - the checks' API


@dataclasses.dataclass(frozen=True)
class Feedback:
    """The outcome of one exercise check: ``passed``, a message for the reader and its catalogue ``key``."""

    exercise: str
    passed: bool
    message: str
    lang: str = "en"
    key: Optional[str] = None  # the catalogue key of the message, e.g. "ch02.ste_outside", "common.raised"

    def __bool__(self) -> bool:
        return self.passed

    def __str__(self) -> str:
        mark = "✓" if self.passed else "✗"
        return f"{mark} {self.exercise}: {self.message}"

    def __repr__(self) -> str:
        return str(self)

    def _repr_markdown_(self) -> str:
        mark = "✅" if self.passed else "❌"
        return f"{mark} **{self.exercise}**: {self.message}"


class Mismatch(Exception):
    """Raised inside a check to stop at the first problem with a message.

    ``key`` is the catalogue key of the message (taken from a :class:`Text`
    when not given); :class:`Feedback` carries it.
    """

    def __init__(self, text: str = "", key: Optional[str] = None):
        super().__init__(text)
        self.key = key if key is not None else getattr(text, "key", None)


def fmt(value: Any) -> str:
    """A short, readable rendering of a number or small array."""
    array = np.asarray(value)
    if array.ndim == 0:
        return f"{array.item():.6g}" if array.dtype.kind in "fc" else str(array.item())
    return np.array2string(array, precision=4, separator=", ", threshold=8)


class _Timeout(BaseException):
    """Raised by SIGALRM inside the reader's code when a check runs out of time (private).

    A BaseException, so that the reader's ``except Exception:`` does not swallow it.
    """


# Exceptions that the helpers (:func:`call`, :func:`to_array` ...) never turn
# into feedback: the reader (or the grader) interrupting the kernel,
# ``sys.exit()``, and the check's own time limit.  Only KeyboardInterrupt
# leaves :func:`run_check`: it turns a SystemExit from the reader's code into
# the failing feedback ``common.exit``, and the time limit into ``common.timeout``.
PROPAGATE = (KeyboardInterrupt, SystemExit, _Timeout)


def describe(err: BaseException, lang: str = "en") -> str:
    """The first line of an exception's message, at most about 200 characters.

    A longer line is cut at its last sentence end in the limit ("... built
    with. …"), or else at its last space ("... when it was…"), and ends in
    "…"; only a line without a space in its second half is cut mid-word.  ``str(err)`` runs the reader's code when the
    exception is the reader's own class; an empty message, or a ``__str__``
    that raises, gives "(no message)" ("（无信息）" with ``lang="zh"``).
    """
    try:
        text = str(err).strip()
    except PROPAGATE:
        raise
    except BaseException:  # a reader's __str__ that raises
        text = ""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) > 1 and lines[0] == "in user code:":  # an error inside a tf.function: the cause comes last
        lines = lines[-1:]
    return _shorten(lines[0]) if lines else fragment("common.no_message", lang if lang in LANGUAGES else "en")


DESCRIBE_LIMIT = 200


def _shorten(line: str, limit: int = DESCRIBE_LIMIT) -> str:
    """``line`` cut to at most ``limit`` characters (plus " …") at a sentence end or a space."""
    if len(line) <= limit:
        return line
    head = line[:limit + 1]  # a sentence may end exactly at the limit: ". " then starts at index limit - 1
    stop = head.rfind(". ")
    if stop >= limit // 2:
        return head[:stop + 1] + " …"
    space = head.rfind(" ", 0, limit + 1)
    cut = head[:space] if space >= limit // 2 else line[:limit]
    return cut.rstrip(" ,;:") + "…"


def raised(err: BaseException, lang: str, where: str = "") -> "Mismatch":
    """The "your code raised X: detail" Mismatch for an exception of the reader's code."""
    return Mismatch(message("common.raised", lang, where=where, error=type(err).__name__,
                            detail=describe(err, lang)))


def dtype_name(dtype) -> str:
    """The name of a dtype given as a string, a NumPy or a TensorFlow dtype (``"float32"``)."""
    return tf.as_dtype(dtype).name


def tensor_like(value: Any) -> bool:
    """``tf.is_tensor(value)``, False for a reader's object that raises when asked."""
    try:
        return bool(tf.is_tensor(value))
    except PROPAGATE:
        raise
    except BaseException:  # a reader's object whose attributes raise
        return False


def returned_tensor(value: Any, *, lang: str, where: str, what: str, shape: Tuple[int, ...], dtype,
                    none: Optional[str] = None,
                    shape_key: Optional[Callable[[Tuple[int, ...]], Optional[str]]] = None,
                    keep_nonfinite: bool = False) -> np.ndarray:
    """A tensor an answer returned, checked in order: not None (``none`` is the message then, if given), not a
    (value, grad_fn) pair, numeric, floating, ``shape`` (a wrong one gets the key ``shape_key(shape)`` when
    that names one, else ``common.shape``), a TensorFlow tensor, ``dtype`` (the input's); then finite unless
    ``keep_nonfinite``.  Returned as float64.  ``what`` is the fragment key naming the value."""
    what_text = fragment(what, lang)
    if value is None:
        raise Mismatch(none if none is not None else message("common.none", lang, where=where))
    require_decorated(value, lang, where)
    array = to_array(value)
    if array is None or array.dtype.kind not in "biufc":
        raise Mismatch(message("common.not_numeric", lang, where=where, kind=type(value).__name__))
    if array.dtype.kind != "f":
        raise Mismatch(message("common.dtype", lang, where=where, what=what_text, got=str(array.dtype),
                               expected=dtype_name(dtype)))
    if tuple(array.shape) != tuple(shape):
        key = (shape_key(tuple(array.shape)) if shape_key else None) or "common.shape"
        raise Mismatch(message(key, lang, where=where, what=what_text, got=list(array.shape), expected=list(shape)))
    if not tensor_like(value):
        raise Mismatch(message("common.not_tensor", lang, where=where, kind=type(value).__name__))
    if tf.as_dtype(value.dtype) != tf.as_dtype(dtype):
        raise Mismatch(message("common.same_dtype", lang, where=where, what=what_text,
                               got=dtype_name(value.dtype), expected=dtype_name(dtype)))
    if not keep_nonfinite and not np.all(np.isfinite(array)):
        raise Mismatch(message("common.nan", lang, where=where, what=what_text))
    return array.astype(np.float64)


def call(fn: Callable, *args, lang: str, where: str = "") -> Any:
    """Call the reader's function; turn any exception into a Mismatch.

    Every exception counts, BaseException subclasses included, except
    :data:`PROPAGATE` (KeyboardInterrupt, SystemExit and the time limit).
    """
    try:
        return fn(*args)
    except (Mismatch, *PROPAGATE):
        raise
    except BaseException as err:  # the reader's code may raise anything
        raise raised(err, lang, where) from None


def to_array(value: Any) -> Optional[np.ndarray]:
    """``value`` as a NumPy array (``.numpy()`` first, for tensors); None when that fails.

    The reader's object may raise anything from ``numpy()``, ``__array__`` or
    ``__getattr__``: every exception but :data:`PROPAGATE` gives None.
    """
    try:
        if isinstance(value, (tf.Tensor, tf.Variable)) or hasattr(value, "numpy"):
            value = value.numpy()
        array = np.asarray(value)
    except PROPAGATE:
        raise
    except BaseException:
        return None
    return array if isinstance(array, np.ndarray) else None


WORDS = ("forward", "gradient", "result")  # the ``what`` of as_array that are catalogue words


def require_decorated(value: Any, lang: str, where: str) -> None:
    """A ``(value, grad_fn)`` pair is what a function returns when it lacks ``@tf.custom_gradient``."""
    try:
        pair = isinstance(value, tuple) and len(value) == 2 and callable(value[1])
    except PROPAGATE:
        raise
    except BaseException:  # a reader's tuple subclass whose len() raises: not the pair
        pair = False
    if pair:
        raise Mismatch(message("common.undecorated", lang, where=where))


def as_array(value: Any, *, lang: str, what: str, where: str = "",
             shape: Optional[Tuple[int, ...]] = None, none_key: str = "none") -> np.ndarray:
    """Validate a returned value: not None, numeric, finite, floating, right shape."""
    what_text = fragment("common." + what, lang) if what in WORDS else what
    if value is None:
        raise Mismatch(message("common." + none_key, lang, where=where))
    require_decorated(value, lang, where)
    array = to_array(value)
    if array is None or array.dtype.kind not in "biufc":
        raise Mismatch(message("common.not_numeric", lang, where=where, kind=type(value).__name__))
    if array.dtype.kind != "f":
        raise Mismatch(message("common.dtype", lang, where=where, what=what_text,
                               got=str(array.dtype), expected="float32"))
    if shape is not None and tuple(array.shape) != tuple(shape):
        raise Mismatch(message("common.shape", lang, where=where, what=what_text,
                               got=list(array.shape), expected=list(shape)))
    if not np.all(np.isfinite(array)):
        raise Mismatch(message("common.nan", lang, where=where, what=what_text))
    return array


def require_tensor(value: Any, *, lang: str, where: str = "") -> None:
    """A value whose gradient the check asks for must be a tensor (not NumPy, not a Python number)."""
    require_decorated(value, lang, where)
    if not tf.is_tensor(value):
        raise Mismatch(message("common.not_tensor", lang, where=where, kind=type(value).__name__))


class Probed(NamedTuple):
    """What :func:`probe` measured: the validated value, the vector-Jacobian product, and the
    gradients of the watched tensor arguments (None for an argument that gets none)."""

    value: np.ndarray
    vjp: np.ndarray
    arg_grads: Tuple[Any, ...]


def probe(answer: Callable, x: np.ndarray, *, upstream: Optional[np.ndarray] = None, args: Sequence = (),
          lang: str, where: str = "", none_message: Optional[str] = None,
          diagnose_nan: Optional[Callable[[np.ndarray, np.ndarray], str]] = None,
          gradient_error: Optional[Callable[[BaseException], Optional[str]]] = None) -> Probed:
    """Run the reader's ``answer(x, *args)`` under a tape; return its validated value and VJP.

    The value must be a finite floating tensor of ``x``'s shape; the gradient
    with respect to ``x``, weighted by ``upstream`` (ones when None), likewise.
    Tensor arguments in ``args`` are watched too: their gradients come back
    unvalidated in ``arg_grads``.  Every problem raises :class:`Mismatch`
    prefixed by ``where``.  Hooks for a chapter's own messages:
    ``none_message`` replaces the generic one for a None gradient;
    ``diagnose_nan(x, value)`` runs on a value of the right shape with NaN or
    inf in it and returns a message for a recognised mistake, or "";
    ``gradient_error(err)`` returns the message for an exception raised while
    computing the gradient, or None for the generic "your code raised".
    """
    xt = tf.constant(x)
    watched = [a for a in args if isinstance(a, tf.Tensor)]
    with tf.GradientTape() as tape:
        tape.watch(xt)
        for tensor in watched:
            tape.watch(tensor)
        y = call(answer, xt, *args, lang=lang, where=where)
    if diagnose_nan is not None:
        raw = to_array(y)
        if raw is not None and raw.dtype.kind == "f" and raw.shape == x.shape and not np.all(np.isfinite(raw)):
            problem = diagnose_nan(x, raw)
            if problem:
                raise Mismatch(where + problem)
    value = as_array(y, lang=lang, what="forward", where=where, shape=x.shape)
    require_tensor(y, lang=lang, where=where)
    try:
        grads = tape.gradient(y, [xt, *watched],
                              output_gradients=None if upstream is None else tf.constant(upstream))
    except Exception as err:  # e.g. a grad_fn that returns the wrong number of gradients
        special = gradient_error(err) if gradient_error is not None else None
        raise (Mismatch(special) if special else raised(err, lang, where)) from None
    if grads[0] is None and none_message:
        raise Mismatch(none_message)
    vjp = as_array(grads[0], lang=lang, what="gradient", where=where, shape=x.shape, none_key="none_gradient")
    return Probed(value, vjp, tuple(grads[1:]))


def first_mismatch(got: Any, expected: Any, rtol: float = 1e-4, atol: float = 1e-5) -> Optional[int]:
    """The first flat index where ``got`` is not close to ``expected``; None if there is none.

    Arrays of the same size are compared entry by entry (shapes aside);
    otherwise ``expected`` is broadcast to ``got``'s shape, and shapes that do
    not broadcast mismatch at index 0.  NaN and inf in ``got`` always mismatch.
    """
    got = np.ravel(got)
    expected = np.asarray(expected)
    if expected.size != got.size:
        try:
            expected = np.broadcast_to(expected, got.shape)
        except ValueError:
            return 0
    close = np.isclose(got, np.ravel(expected), rtol=rtol, atol=atol) & np.isfinite(got)
    bad = np.flatnonzero(~close)
    return None if bad.size == 0 else int(bad[0])


def matches(got: Any, expected: Any, rtol: float = 1e-4, atol: float = 1e-5) -> bool:
    """``got`` equals ``expected`` everywhere within the tolerances (``expected`` is broadcast)."""
    return first_mismatch(got, expected, rtol, atol) is None


def value_mismatch(lang: str, where: str, x: Any, what: str, got: Any, expected: Any) -> Text:
    """The generic "{where}at x = ..: your value/gradient is ..; expected .." message."""
    return message("common.value", lang, where=where + fragment("common.at", lang, x=fmt(x)),
                   what=fragment("common." + what, lang), got=fmt(got), expected=fmt(expected))


# -- answers that must not use the library's own solution ---------------------------------------

@contextlib.contextmanager
def library_calls(names: Sequence[Tuple[str, str]]) -> Iterator[List[str]]:
    """While the block runs, record calls of the library functions ``names`` ((module, attribute) pairs).

    Each attribute is replaced, on its module, by a wrapper that appends
    ``"module.attribute"`` to the yielded list and calls the original; the
    originals are put back on exit, whatever happens (the check's time limit
    included).  Only calls that look the function up on its module at call
    time (``gradlib.ste_sign(x)``) are seen.
    """
    calls: List[str] = []
    saved = []

    def recorder(original, name):
        @functools.wraps(original)
        def wrapper(*args, **kwargs):
            calls.append(name)
            return original(*args, **kwargs)
        return wrapper

    try:
        for module_name, attribute in names:
            module = importlib.import_module(module_name)
            original = getattr(module, attribute)
            saved.append((module, attribute, original))
            setattr(module, attribute, recorder(original, f"{module_name}.{attribute}"))
        yield calls
    finally:
        for module, attribute, original in reversed(saved):
            setattr(module, attribute, original)


def refuse_library(check: Callable, answer: Any, lang: str, *, names: Sequence[Tuple[str, str]], key: str,
                   made_by: Callable[[Any], bool] = lambda answer: False) -> str:
    """``check(answer, lang)``, but an answer that is the library's solution (``made_by``) or calls
    one of ``names`` while the check runs fails with the message ``key``, also when it fails otherwise."""
    used = message(key, lang)
    try:
        made = bool(made_by(answer))
    except Exception:  # a reader's object whose attributes raise: not the library's
        made = False
    if made:
        raise Mismatch(used)
    with library_calls(names) as calls:
        try:
            result = check(answer, lang)
        except Mismatch:
            if calls:
                raise Mismatch(used) from None
            raise
    if calls:
        raise Mismatch(used)
    return result


# -- checks as data: elementwise ops ----------------------------------------------------------

Hook = Optional[Callable[..., str]]


@dataclasses.dataclass(frozen=True)
class Elementwise:
    """The check of an elementwise op, as data: :func:`check_elementwise` runs it.

    The answer is called as ``answer(x, *params)`` for each tuple in
    ``params``, on ``points`` (kinks first) and on the points reshaped to each
    of ``shapes`` (any shape must work), under a tape; its value and gradient
    are compared with ``reference(x, *params) -> (value, local gradient)``, a
    NumPy formula.  Then once more with a non-unit ``upstream`` gradient (a
    ``grad_fn`` must multiply by dy): after every pass when ``upstream_each``,
    else once, on ``points`` with the first ``params``.

    Messages are catalogue keys or hooks that return a message ("" for none),
    called with ``lang`` first and the current ``params`` tuple last:

    * ``where(lang, params)``: the prefix naming the parameters ("with s = 0.5, ");
    * ``forward_hint``: key appended to a wrong value's message;
    * ``gradient_hint(lang, x, g, i, params)``: appended to a wrong gradient's
      message (``x`` and ``g`` flat, ``i`` the first wrong point), e.g. keyed
      by the region of ``x[i]``;
    * ``all_zero(lang, where, params)``: the message for a gradient that is 0
      everywhere (where the reference's is not);
    * ``none_gradient(lang, where, params)``: the message for a None gradient;
    * ``upstream_key``: the message of a wrong gradient with ``upstream`` (fields
      prefix, dy, x, at, got, expected);
    * ``diagnose(lang, x, y, g, params)``: runs when anything mismatches
      (upstream ones) and names a typical wrong answer, replacing the generic
      message; ``diagnose_nan(lang, x, y)`` likewise for a value with NaN/inf;
      ``value_problem(lang, where, x, y, i, params)`` replaces the message of a
      wrong value at ``i`` (e.g. sign(0)).
    """

    points: np.ndarray
    reference: Callable[..., Tuple[np.ndarray, np.ndarray]]
    upstream_key: str
    params: Sequence[tuple] = ((),)
    shapes: Sequence[Tuple[int, ...]] = ()
    upstream: Optional[float] = 2.5
    upstream_each: bool = False
    where: Hook = None
    forward_hint: Optional[str] = None
    gradient_hint: Hook = None
    all_zero: Hook = None
    none_gradient: Hook = None
    diagnose: Hook = None
    diagnose_nan: Hook = None
    value_problem: Hook = None
    rtol: float = 1e-4
    atol: float = 1e-5


def check_elementwise(spec: Elementwise, answer: Callable, lang: str) -> List[np.ndarray]:
    """Run an :class:`Elementwise` spec on the reader's ``answer``; raise :class:`Mismatch` on the first problem.

    Returns the answer's values of the passes with upstream ones, in order.
    """
    values = []
    for params in spec.params:
        where = spec.where(lang, params) if spec.where else ""
        shaped = [spec.points] + [spec.points[:int(np.prod(shape))].reshape(shape) for shape in spec.shapes]
        for x in shaped:
            values.append(_elementwise_pass(spec, answer, x, params, where, None, lang))
            if spec.upstream is not None and spec.upstream_each:
                _elementwise_pass(spec, answer, x, params, where, spec.upstream, lang)
    if spec.upstream is not None and not spec.upstream_each:
        params = spec.params[0]
        where = spec.where(lang, params) if spec.where else ""
        _elementwise_pass(spec, answer, spec.points, params, where, spec.upstream, lang)
    return values


def _elementwise_pass(spec: Elementwise, answer: Callable, x: np.ndarray, params: tuple, where: str,
                      upstream: Optional[float], lang: str) -> np.ndarray:
    value, local = spec.reference(x, *params)
    dy = None if upstream is None else np.full(x.shape, upstream, x.dtype)
    y, g, _ = probe(lambda v: answer(v, *params), x, upstream=dy, lang=lang, where=where,
                    none_message=spec.none_gradient(lang, where, params) if spec.none_gradient else None,
                    diagnose_nan=(lambda x_, y_: spec.diagnose_nan(lang, x_, y_)) if spec.diagnose_nan else None)
    expected = local if dy is None else local * dy
    tolerances = dict(rtol=spec.rtol, atol=spec.atol)
    if (dy is None and spec.diagnose is not None
            and not (matches(y, value, **tolerances) and matches(g, expected, **tolerances))):
        problem = spec.diagnose(lang, x, y, g, params)
        if problem:
            raise Mismatch(where + problem)
    flat_x, flat_y, flat_g = np.ravel(x), np.ravel(y), np.ravel(g)
    i = first_mismatch(y, value, **tolerances)
    if i is not None:
        problem = spec.value_problem(lang, where, flat_x, flat_y, i, params) if spec.value_problem else ""
        hint = message(spec.forward_hint, lang) if spec.forward_hint else ""
        raise Mismatch(problem or join(value_mismatch(lang, where, flat_x[i], "forward", flat_y[i],
                                                      np.ravel(value)[i]), hint, lang))
    i = first_mismatch(g, expected, **tolerances)
    if i is None:
        return y
    if dy is not None:
        raise Mismatch(message(spec.upstream_key, lang, prefix=where, dy=fmt(upstream), x=fmt(flat_x[i]),
                               at=f"x = {fmt(flat_x[i])}", got=fmt(flat_g[i]), expected=fmt(np.ravel(expected)[i])))
    if spec.all_zero and not np.any(g) and np.any(expected):
        raise Mismatch(spec.all_zero(lang, where, params))
    hint = spec.gradient_hint(lang, flat_x, flat_g, i, params) if spec.gradient_hint else ""
    raise Mismatch(join(value_mismatch(lang, where, flat_x[i], "gradient", flat_g[i], np.ravel(expected)[i]),
                        hint, lang))


def first_mistake(got: Any, expected: Any, mistakes: Sequence[Tuple[str, Any]], *,
                  rtol: float = 1e-4, atol: float = 1e-6) -> Optional[str]:
    """The key of the first typical mistake that ``got`` reproduces; None if it reproduces none.

    ``mistakes`` holds (key, value of that wrong answer) pairs; a wrong value
    that equals ``expected`` here (the mistake does not show at this point)
    is skipped.  Both comparisons use ``rtol`` and ``atol``.
    """
    for key, wrong in mistakes:
        if not matches(wrong, expected, rtol, atol) and matches(got, wrong, rtol, atol):
            return key
    return None


# -- checks as data: a function of one number, a value-only reference ----------------------------

@dataclasses.dataclass(frozen=True)
class Scalar:
    """The check of a function of one number that returns one number, as data: :func:`check_scalar` runs it.

    The answer is called as ``answer(p)`` for each of ``points`` (Python
    floats).  It must return a real number (a Python or NumPy number or a 0-d
    tensor; an integer counts) within ``rtol``/``atol`` of ``reference(p)``, a
    NumPy formula.  Messages are catalogue keys; the point is their
    placeholder ``{name}``:

    * ``where``: the prefix fragment of a problem at one point ("p = 0.5: ");
    * ``what``: the fragment naming the value ("λ_p");
    * ``none``: the message for None (field ``where``);
    * ``wrong``: the message for a wrong value (fields ``got``, ``expected``);
    * ``mistakes``: (key, formula) pairs, typical wrong answers; the first
      whose formula the answer reproduces at the point (:func:`first_mistake`)
      gives the hint appended to ``wrong``.
    """

    points: Sequence[float]
    reference: Callable[[float], float]
    name: str
    where: str
    what: str
    none: str
    wrong: str
    mistakes: Sequence[Tuple[str, Callable[[float], float]]] = ()
    rtol: float = 1e-4
    atol: float = 1e-6


def check_scalar(spec: Scalar, answer: Callable, lang: str) -> List[float]:
    """Run a :class:`Scalar` spec on the reader's ``answer``; raise :class:`Mismatch` on the first problem.

    Returns the answer's values at ``spec.points``, in order.
    """
    values = []
    for p in spec.points:
        point = {spec.name: fmt(p)}
        where = fragment(spec.where, lang, **point)
        what = fragment(spec.what, lang)
        value = call(answer, p, lang=lang, where=where)
        if value is None:
            raise Mismatch(message(spec.none, lang, where=where))
        if isinstance(value, bool):
            raise Mismatch(message("common.not_numeric", lang, where=where, kind="bool"))
        array = to_array(value)
        if array is None or array.dtype.kind not in "iufc":
            raise Mismatch(message("common.not_numeric", lang, where=where, kind=type(value).__name__))
        if array.dtype.kind == "c":
            raise Mismatch(message("common.dtype", lang, where=where, what=what,
                                   got=str(array.dtype), expected="float32"))
        if array.shape != ():
            raise Mismatch(message("common.shape", lang, where=where, what=what,
                                   got=list(array.shape), expected=[]))
        got = float(array)
        if not np.isfinite(got):
            raise Mismatch(message("common.nan", lang, where=where, what=what))
        expected = spec.reference(p)
        if not np.isclose(got, expected, rtol=spec.rtol, atol=spec.atol):
            mistake = first_mistake(got, expected, [(key, formula(p)) for key, formula in spec.mistakes],
                                    rtol=spec.rtol, atol=spec.atol)
            raise Mismatch(join(message(spec.wrong, lang, got=fmt(got), expected=fmt(expected), **point),
                                message(mistake, lang) if mistake else "", lang))
        values.append(got)
    return values


# -- checks as data: a tensor op at fixed inputs, compared whole ----------------------------------

@dataclasses.dataclass(frozen=True)
class WholeTensor:
    """The check of a tensor op at fixed inputs, as data: :func:`check_whole` runs it.

    For each tuple in ``params`` and each ``(x, upstream)`` of ``cases`` the
    answer is called as ``answer(x, *params)`` under a tape (:func:`probe`,
    the gradient weighted by ``upstream``); its value, then its
    vector-Jacobian product, are compared whole with ``reference(x, upstream,
    *params) -> (value, vjp)``, a NumPy formula (value within
    ``rtol``/``value_atol``, gradient within ``rtol``/``atol``).  A VJP of
    ``alternatives(x, upstream, *params)`` (other correct gradients) passes
    too; a wrong one is compared with the closest of all (fewest mismatching
    points).  Of the mismatching points the first where ``report_first(x)``
    (a boolean mask) holds is reported, else the first.  Messages are
    catalogue keys or hooks, called with ``lang`` first:

    * ``where(lang, x, params)``: the prefix naming the case ("on the 3×4 matrix, ");
    * ``at(lang, where, x, i)``: the prefix of a problem at flat index ``i``;
    * ``none_gradient(lang, where)``: the message for a None gradient;
    * ``value_problem(lang, where, text, x, y, i, params)``: the message for
      a wrong value, given the generic one ``text`` (``common.value`` at ``i``);
    * ``all_zero(lang, where)``: the message for a gradient that is 0 everywhere;
    * ``upstream_key`` / ``identity_key``: the message when the gradient is
      the local derivative (``reference`` with upstream ones: a ``grad_fn``
      that forgot dy) / the upstream gradient unchanged (fields prefix, dy,
      at, got, expected; ``at`` is "``name`` = value");
    * ``mistakes(x, upstream, *params)``: (key, wrong vjp) pairs, the typical
      wrong gradients; the first that the answer reproduces
      (:func:`first_mistake`) gives the hint appended to the generic message,
      else ``gradient_hint(lang, x, g, bad, i, params)`` does (``bad``: the
      flat indices that mismatch, ``i`` the one reported).
    """

    cases: Sequence[Tuple[np.ndarray, np.ndarray]]
    reference: Callable[..., Tuple[np.ndarray, np.ndarray]]
    where: Callable[[str, np.ndarray, tuple], str]
    at: Callable[[str, str, np.ndarray, int], str]
    none_gradient: Callable[[str, str], str]
    value_problem: Callable[..., str]
    all_zero: Callable[[str, str], str]
    mistakes: Callable[..., Sequence[Tuple[str, np.ndarray]]]
    gradient_hint: Callable[..., str]
    params: Sequence[tuple] = ((),)
    alternatives: Optional[Callable[..., Sequence[np.ndarray]]] = None
    upstream_key: Optional[str] = None
    identity_key: Optional[str] = None
    name: str = "x"
    report_first: Optional[Callable[[np.ndarray], np.ndarray]] = None
    rtol: float = 1e-4
    atol: float = 1e-4
    value_atol: float = 1e-5


def _bad_points(got: np.ndarray, expected: np.ndarray, rtol: float, atol: float) -> np.ndarray:
    """The flat indices where ``got`` is not close to ``expected`` (NaN and inf included)."""
    close = np.isclose(np.ravel(got), np.ravel(expected), rtol=rtol, atol=atol) & np.isfinite(np.ravel(got))
    return np.flatnonzero(~close)


def _reported(bad: np.ndarray, first: np.ndarray) -> int:
    """The flat index to report: the first of ``bad`` where the mask ``first`` holds, else ``bad[0]``."""
    return int(next((k for k in bad if first[k]), bad[0]))


def check_whole(spec: WholeTensor, answer: Callable, lang: str) -> List[int]:
    """Run a :class:`WholeTensor` spec on the reader's ``answer``; raise :class:`Mismatch` on the first problem.

    Returns, for each pass (params outer, cases inner), which correct gradient
    the answer's is: 0 the reference's, k the k-th of ``alternatives``.
    """
    matched = []
    for params in spec.params:
        for x, upstream in spec.cases:
            matched.append(_whole_pass(spec, answer, x, upstream, params, lang))
    return matched


def _whole_pass(spec: WholeTensor, answer: Callable, x: np.ndarray, upstream: np.ndarray, params: tuple,
                lang: str) -> int:
    where = spec.where(lang, x, params)
    first = np.ravel(spec.report_first(x)) if spec.report_first else np.ones(x.size, bool)
    y, g, _ = probe(lambda v: answer(v, *params), x, upstream=upstream, lang=lang, where=where,
                    none_message=spec.none_gradient(lang, where))
    value, expected = spec.reference(x, upstream, *params)
    bad = _bad_points(y, value, spec.rtol, spec.value_atol)
    if bad.size:
        i = _reported(bad, first)
        text = message("common.value", lang, where=spec.at(lang, where, x, i), what=fragment("common.forward", lang),
                       got=fmt(np.ravel(y)[i]), expected=fmt(np.ravel(value)[i]))
        raise Mismatch(spec.value_problem(lang, where, text, x, y, i, params))
    correct = [expected, *(spec.alternatives(x, upstream, *params) if spec.alternatives else ())]
    misses = [_bad_points(g, right, spec.rtol, spec.atol) for right in correct]
    for k, bad in enumerate(misses):
        if bad.size == 0:
            return k
    k = min(range(len(correct)), key=lambda k: misses[k].size)  # the closest correct gradient
    expected, bad = correct[k], misses[k]
    i = _reported(bad, first)
    flat_x, flat_g, flat_expected = np.ravel(x), np.ravel(g), np.ravel(expected)
    fields = dict(prefix=where, dy=fmt(np.ravel(upstream)[i]), at=f"{spec.name} = {fmt(flat_x[i])}",
                  got=fmt(flat_g[i]), expected=fmt(flat_expected[i]))
    if spec.identity_key and np.allclose(g, upstream, rtol=spec.rtol, atol=spec.atol):
        raise Mismatch(message(spec.identity_key, lang, **fields))
    if not np.any(g):
        raise Mismatch(spec.all_zero(lang, where))
    if spec.upstream_key and np.allclose(g, spec.reference(x, np.ones_like(x), *params)[1],
                                         rtol=spec.rtol, atol=spec.atol):
        raise Mismatch(message(spec.upstream_key, lang, **fields))
    text = message("common.value", lang, where=spec.at(lang, where, x, i), what=fragment("common.gradient", lang),
                   got=fmt(flat_g[i]), expected=fmt(flat_expected[i]))
    mistake = first_mistake(g, expected, spec.mistakes(x, upstream, *params), rtol=spec.rtol, atol=spec.atol)
    hint = message(mistake, lang) if mistake else spec.gradient_hint(lang, x, g, bad, i, params)
    raise Mismatch(join(text, hint, lang))


def kink_and_random_points(kinks: Sequence[float], *, low: float = -3.0, high: float = 3.0,
                           count: int = 24, seed: int = 0) -> np.ndarray:
    """The kink points first (so they are reported first), then seeded random points."""
    rng = np.random.default_rng(seed)
    return np.concatenate([np.asarray(kinks, np.float32),
                           rng.uniform(low, high, count).astype(np.float32)])


# -- the registry ------------------------------------------------------------

CHECKS: Dict[str, Callable] = {}

# The name of the function the reader defines for each exercise
# ("ch01-ex2" -> "second_derivative"): the grader looks the answer up by it.
ANSWERS: Dict[str, str] = {}


class WrongAnswer(NamedTuple):
    """A typical wrong answer to an exercise and the message it must get.

    ``answer`` is written as a reader would write it (usually a function);
    ``key`` is the catalogue key of the :class:`Feedback` it must get, in
    both languages (``tests/test_classroom_wrong_answers.py`` runs every one).
    """

    name: str  # what the mistake is, e.g. "tanh surrogate"
    answer: Any
    key: str


# The typical wrong answers of each exercise, declared with its check.
WRONG_ANSWERS: Dict[str, Tuple[WrongAnswer, ...]] = {}


def exercise(exercise_id: str, *, answer: Optional[str] = None,
             wrong_answers: Sequence[Tuple[str, Any, str]] = ()):
    """Register ``check(answer, lang) -> str`` (the success message) under an id.

    The check raises :class:`Mismatch` with the reader-facing message on the
    first problem it finds.  ``answer`` is the name of the function the
    reader defines in the chapter's check cell (e.g. ``"second_derivative"``).
    ``wrong_answers`` are the exercise's typical mistakes, ``(name, answer,
    key)`` triples (:class:`WrongAnswer`): at least the three most likely,
    each with the message key the check must give it.
    """
    def decorator(check: Callable):
        CHECKS[exercise_id] = check
        WRONG_ANSWERS[exercise_id] = tuple(WrongAnswer(*row) for row in wrong_answers)
        if answer is not None:
            ANSWERS[exercise_id] = answer
        return check
    return decorator


def answer_name(exercise_id: str) -> Optional[str]:
    """The name of the reader's function for ``exercise_id``; None if not recorded."""
    if exercise_id not in CHECKS:
        raise ValueError(f"unknown exercise id {exercise_id!r}; known ids: {', '.join(sorted(CHECKS))}")
    return ANSWERS.get(exercise_id)


# -- the time limit --------------------------------------------------------------

def _alarm_available() -> bool:
    """SIGALRM timers work here: a POSIX platform, and the main thread (Python runs handlers there)."""
    return (hasattr(signal, "SIGALRM") and hasattr(signal, "setitimer")
            and threading.current_thread() is threading.main_thread())


class _Deadline:
    """Raise :class:`_Timeout` in whatever Python code runs when ``seconds`` have passed.

    ``signal.setitimer(ITIMER_REAL)`` with a SIGALRM handler that raises: the
    exception appears inside the reader's loop or ``time.sleep`` (the code
    runs in the main thread, in a Jupyter kernel as in pytest).  When the
    reader's code catches it (``except BaseException``), the timer fires again
    every ``REPEAT`` seconds, and :attr:`fired` stays set, so the check still
    reports the time-out.  On exit the previous SIGALRM handler is restored,
    and a timer that was already running (pytest-timeout, another library's
    alarm) is re-armed with what was left of it: it is paused while the check
    runs and fires at once afterwards if it fell due meanwhile.  Outside the
    main thread, or without SIGALRM (Windows), nothing is armed and the code
    runs without a time limit.

    Not interrupted: code stuck inside one TensorFlow kernel or C call that
    never returns to Python (an endless ``tf.while_loop``); Python handles the
    signal only when control comes back to the interpreter.
    """

    REPEAT = 0.25

    def __init__(self, seconds: Optional[float]):
        self.seconds = seconds
        self.fired = False
        self.armed = False
        self._active = False

    def _handler(self, signum, frame):
        if self._active:
            self.fired = True
            raise _Timeout()

    def __enter__(self) -> "_Deadline":
        if self.seconds is None or math.isinf(self.seconds) or not _alarm_available():
            return self
        try:
            self._previous_handler = signal.getsignal(signal.SIGALRM)
            self._previous_timer = signal.getitimer(signal.ITIMER_REAL)
            self._started = time.monotonic()
            signal.signal(signal.SIGALRM, self._handler)
        except (ValueError, OSError):  # e.g. a sub-interpreter: no time limit
            return self
        self.armed = self._active = True
        signal.setitimer(signal.ITIMER_REAL, max(self.seconds, 1e-6), self.REPEAT)  # 0 would disarm it
        return self

    def __exit__(self, *exc_info) -> bool:
        if not self.armed:
            return False
        try:
            self._active = False  # from here on the handler does nothing
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            previous = self._previous_handler
            signal.signal(signal.SIGALRM, signal.SIG_DFL if previous is None else previous)
            delay, interval = self._previous_timer
            if delay > 0:
                left = delay - (time.monotonic() - self._started)
                signal.setitimer(signal.ITIMER_REAL, max(left, 1e-6), interval)
            self.armed = False
        return False


def _check_timeout(timeout: Any) -> Optional[float]:
    """``timeout`` as a positive finite number of seconds, or None (no limit)."""
    return None if timeout is None else _validate.real_number(timeout, "timeout", positive=True)


# -- whose exception is it? --------------------------------------------------------

_EXERCISES_DIR = os.path.dirname(os.path.abspath(__file__))
_GRADLIB_DIR = os.path.dirname(os.path.dirname(_EXERCISES_DIR))  # gradlib/
_LIBRARY_DIRS = tuple(sorted({os.path.abspath(p) for p in (
    *(sysconfig.get_paths().get(key) for key in ("stdlib", "platstdlib", "purelib", "platlib")),
    os.path.dirname(np.__file__), os.path.dirname(tf.__file__), _GRADLIB_DIR) if p}))


def _raised_by_check(err: BaseException, check: Callable) -> bool:
    """True when ``err`` was raised by the check's own code, not by the reader's.

    The traceback is read from the innermost frame outwards, skipping library
    frames (the standard library, installed packages, NumPy, TensorFlow and the
    rest of gradlib): the first frame in ``gradlib/classroom/exercises`` or of the
    ``check`` function itself makes it the check's, the first other frame (a
    notebook cell, a test) the reader's.  An exception raised in library code
    only is the reader's (TensorFlow rejecting what the reader's function
    returned).
    """
    frames = []
    tb = err.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame.f_code)
        tb = tb.tb_next
    check_code = getattr(check, "__code__", None)
    for code in reversed(frames):
        filename = code.co_filename
        if code is check_code:
            return True
        if filename.startswith(("<frozen", "<__array_function__")):
            continue
        path = os.path.abspath(filename)
        if path.startswith(_EXERCISES_DIR + os.sep):
            return True
        if not any(path.startswith(folder + os.sep) for folder in _LIBRARY_DIRS):
            return False
    return False


def run_check(exercise_id: str, answer: Any, *, lang: str = "en", timeout: Optional[float] = 30.0) -> Feedback:
    """See :func:`gradlib.exercises.check`."""
    if lang not in LANGUAGES:
        raise ValueError(f"`lang` must be one of {LANGUAGES}; got {lang!r}")
    if exercise_id not in CHECKS:
        raise ValueError(f"unknown exercise id {exercise_id!r}; known ids: {', '.join(sorted(CHECKS))}")
    timeout = _check_timeout(timeout)
    check = CHECKS[exercise_id]

    def outcome() -> Tuple[bool, str]:
        # Everything that can run the reader's code happens in here, under the
        # time limit: the check, and the str() of the reader's exceptions.
        try:
            if not callable(answer):
                raise Mismatch(message("common.not_callable", lang, name="answer", kind=type(answer).__name__))
            detail = check(answer, lang)
        except Mismatch as problem:
            return False, Text(str(problem), problem.key)
        except SystemExit as err:  # sys.exit() or raise SystemExit in the reader's code
            if _raised_by_check(err, check):
                return False, message("common.check_failed", lang, error=type(err).__name__,
                                      detail=describe(err, lang))
            return False, message("common.exit", lang, detail=describe(err, lang))
        except PROPAGATE:
            raise
        except BaseException as err:  # a reader's object can break a check in unforeseen ways
            key = "common.check_failed" if _raised_by_check(err, check) else "common.raised"
            return False, message(key, lang, where="", error=type(err).__name__,
                                  detail=describe(err, lang))
        return True, detail or message("common.passed", lang)

    deadline = _Deadline(timeout)
    try:
        with deadline:
            passed, text = outcome()
    except _Timeout as err:
        if not deadline.fired:  # the reader's code raised gradlib's private exception itself
            passed, text = False, message("common.raised", lang, where="", error=type(err).__name__,
                                          detail=describe(err, lang))
    if deadline.fired:  # also when the reader's code caught the time-out and returned
        passed, text = False, message("common.timeout", lang, seconds=seconds_text(timeout))
    return Feedback(exercise_id, passed, str(text), lang, key=getattr(text, "key", None))
