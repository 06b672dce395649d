"""Checks for chapter 4: tf.custom_gradient.

ch04-ex1  ``fake_quant(x, bits)``: clipped straight-through gradient, ``None`` for ``bits``.
ch04-ex2  ``logaddexp(a, b)``: value that never overflows, both gradients right in
          relative terms (also where one is tiny), 1/2 each at a = b, finite second derivative,
          right inside a tf.function too, and a custom gradient (``tf.custom_gradient`` in the
          traced graph): a plain-autodiff answer, even a correct one such as
          ``tf.math.reduce_logsumexp``, gets a message that the exercise asks for a grad_fn.
ch04-ex3  ``clip_gradient_rows(x, max_norm)``: identity forward; backward, each row of
          ``dy`` clipped to the norm ``max_norm``.

Every reference below is an independent NumPy formula; the reader's function
is run under ``tf.GradientTape`` with upstream gradients other than 1, so a
``grad_fn`` that forgets ``dy`` is caught.
"""

import numpy as np
import tensorflow as tf

from ...logs import captured_tf_warnings
from ._core import (PROPAGATE, Mismatch, call, catalogue, describe, exercise, first_mismatch, first_mistake, fmt,
                    fragment, join, kink_and_random_points, message, require_decorated, require_tensor,
                    to_array)


# -- helpers -------------------------------------------------------------------

def _subject(lang, what=None, name=None):
    """"your gradient" (``what``), or "your gradient for a" (``name``) / "你对 a 的梯度"."""
    if name is not None:
        return message("ch04.your_gradient_for", lang, name=name)
    return message("ch04.your", lang, what=what)


def _mismatch(lang, *, at, what=None, name=None, got, expected, because=None, hint=None):
    """"at x = 1.5 your gradient is 2; expected 0 because ..." (or ". hint"), as a Mismatch.

    ``what`` names the quantity ("gradient"); ``name`` instead makes it the gradient for that input.
    """
    text = message("ch04.mismatch", lang, at=at, subject=_subject(lang, what, name), got=fmt(got), expected=fmt(expected))
    if because is not None:
        text += message("ch04.because", lang, reason=message("ch04." + because, lang))
    elif hint is not None:
        text += message("ch04.then", lang, hint=message("ch04." + hint, lang))
    else:
        text += message("ch04.end", lang)
    return Mismatch(text, key="ch04." + (because or hint or "mismatch"))


def _tidy(detail):
    """TensorFlow's error text without its "{{function_node ...}}" prefix and "[Op:...] name:" suffix."""
    if detail.startswith("{{") and "}}" in detail:
        detail = detail.split("}}", 1)[1].strip() or detail
    if " [Op:" in detail:
        detail = detail.split(" [Op:", 1)[0].strip() or detail
    return detail.removesuffix("name:").strip() or detail


def _gradient(tape, target, source, *, lang, inputs, **kwargs):
    """tape.gradient, with TensorFlow's errors turned into reader-facing messages."""
    require_tensor(target, lang=lang)
    try:
        return tape.gradient(target, source, **kwargs)
    except Exception as err:
        detail = describe(err, lang)
        if "gradients, but returned" in detail:
            raise Mismatch(message("ch04.gradient_count", lang, inputs=inputs, detail=detail)) from None
        raise Mismatch(message("common.raised", lang, where="", error=type(err).__name__,
                               detail=_tidy(detail))) from None


def _array(value, *, lang, what, shape, none_key="none"):
    """A numeric float array of the right shape; NaN and inf are kept (compared later)."""
    if value is None:
        if "ch04." + none_key in catalogue(lang):
            raise Mismatch(message("ch04." + none_key, lang))
        raise Mismatch(message("common." + none_key, lang, where=""))
    require_decorated(value, lang, "")
    array = to_array(value)
    if array is None or array.dtype.kind not in "biufc":
        raise Mismatch(message("common.not_numeric", lang, where="", kind=type(value).__name__))
    if array.dtype.kind != "f":
        raise Mismatch(message("common.dtype", lang, where="", what=what,
                               got=str(array.dtype), expected="float32"))
    if tuple(array.shape) != tuple(shape):
        raise Mismatch(message("common.shape", lang, where="", what=what,
                               got=list(array.shape), expected=list(shape)))
    return array.astype(np.float64)


# -- ch04-ex1: fake_quant(x, bits) -------------------------------------------------

# Kinks of the clipping, and no rounding ties (x * levels never within 1e-3 of k + 1/2):
# the check must not depend on how the reader's rounding breaks ties.
QUANT_POINTS = kink_and_random_points([0.0, 1.0, 0.35, -0.25, 1.5, -3.0, 2.0], low=-0.5, high=1.5, seed=4)
QUANT_UPSTREAM = np.random.default_rng(1).choice([0.5, 2.0, 5.0, -3.0], size=QUANT_POINTS.shape).astype(np.float32)


def _quant_reference(x, bits, *, levels=None, clip=True):
    """round(clip(x) * levels) / levels in float64; ``levels`` defaults to 2^bits - 1."""
    levels = 2.0 ** bits - 1 if levels is None else levels
    return np.round((np.clip(x, 0.0, 1.0) if clip else x) * levels) / levels


# The likeliest wrong forward passes: message key -> their value at (x, bits).
QUANT_MISTAKES = {"pow2_levels": lambda x, bits: _quant_reference(x, bits, levels=2.0 ** bits),
                  "no_clip": lambda x, bits: _quant_reference(x, bits, clip=False)}


def _call_quant(answer, x, bits, lang):
    """answer(x, bits), with the typical exceptions of this exercise explained."""
    where = fragment("ch04.when_bits", lang, bits=bits)
    try:
        return answer(x, tf.constant(bits))
    except (Mismatch, *PROPAGATE):
        raise
    except BaseException as err:  # the reader's code may raise anything
        detail = _tidy(describe(err, lang))
        text = message("common.raised", lang, where=where, error=type(err).__name__, detail=detail)
        for hint, found in (("num_bits", "num_bits" in detail),
                            ("int_bits", "int32" in detail and "float" in detail)):
            if found:
                raise Mismatch(message("ch04.raised_hint", lang, raised=text, hint=message("ch04." + hint, lang)),
                               key="ch04." + hint) from None
        raise Mismatch(text) from None


# The likeliest wrong answers, as a reader writes them (``@exercise(..., wrong_answers=...)``).

def _levels(bits, dtype):
    return tf.cast(2 ** bits - 1, dtype)


def _quantized(x, bits):
    """The right forward pass: clip to [0, 1], round to 2^bits - 1 steps."""
    levels = _levels(bits, x.dtype)
    return tf.round(tf.clip_by_value(x, 0.0, 1.0) * levels) / levels


@tf.custom_gradient
def _quant_stub_backward(x, bits):  # the stub's backward `(dy, None)` kept: no mask
    return _quantized(x, bits), lambda dy: (dy, None)


@tf.custom_gradient
def _quant_int_levels(x, bits):  # 2 ** bits - 1 stays an int32 tensor
    levels = 2 ** bits - 1
    y = tf.round(tf.clip_by_value(x, 0.0, 1.0) * levels) / levels
    return y, lambda dy: (tf.where((x >= 0) & (x <= 1), dy, 0.0), None)


@tf.custom_gradient
def _quant_one_gradient(x, bits):  # no None for bits
    return _quantized(x, bits), lambda dy: tf.where((x >= 0) & (x <= 1), dy, 0.0)


@tf.custom_gradient
def _quant_pow2_levels(x, bits):  # 2 ** bits steps instead of 2 ** bits - 1
    levels = tf.cast(2 ** bits, x.dtype)
    y = tf.round(tf.clip_by_value(x, 0.0, 1.0) * levels) / levels
    return y, lambda dy: (tf.where((x >= 0) & (x <= 1), dy, 0.0), None)


@tf.custom_gradient
def _quant_open_interval(x, bits):  # the ends 0 and 1 get no gradient
    return _quantized(x, bits), lambda dy: (tf.where((x > 0) & (x < 1), dy, 0.0), None)


@tf.custom_gradient
def _quant_without_dy(x, bits):  # the mask instead of dy times the mask
    return _quantized(x, bits), lambda dy: (tf.where((x >= 0) & (x <= 1), 1.0, 0.0), None)


def _quant_builtin(x, bits):  # TensorFlow's op: num_bits from 2 to 16, a Python int
    return tf.quantization.fake_quant_with_min_max_args(x, 0.0, 1.0, num_bits=int(bits))


@exercise("ch04-ex1", answer="fake_quant", wrong_answers=[
    ("the stub's backward kept", _quant_stub_backward, "ch04.outside"),
    ("levels an int32 tensor", _quant_int_levels, "ch04.int_bits"),
    ("no None for bits", _quant_one_gradient, "ch04.gradient_count"),
    ("2^bits steps", _quant_pow2_levels, "ch04.pow2_levels"),
    ("mask without the ends", _quant_open_interval, "ch04.boundary"),
    ("dy ignored", _quant_without_dy, "ch04.upstream"),
    ("tf.quantization.fake_quant_with_min_max_args", _quant_builtin, "ch04.num_bits"),
])
def check_fake_quant(answer, lang):
    value_text, grad_text = fragment("common.forward", lang), fragment("common.gradient", lang)
    x_np, upstream = QUANT_POINTS, QUANT_UPSTREAM
    x64 = x_np.astype(np.float64)
    inside = (x_np >= 0) & (x_np <= 1)
    for bits in (1, 2, 4):
        x = tf.constant(x_np)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = _call_quant(answer, x, bits, lang)
        values = _array(y, lang=lang, what=value_text, shape=x_np.shape)
        expected = _quant_reference(x64, bits)
        i = first_mismatch(values, expected, atol=1e-5)
        if i is not None:
            hint = first_mistake(values[i], expected[i], [(key, wrong(x64[i], bits))
                                                          for key, wrong in QUANT_MISTAKES.items()], atol=1e-5)
            raise _mismatch(lang, at=fragment("ch04.at_bits", lang, x=fmt(x_np[i]), bits=bits), what=value_text,
                            got=values[i], expected=expected[i], hint=hint)
        grad = _gradient(tape, y, x, lang=lang, inputs="x, bits", output_gradients=tf.constant(upstream))
        grads = _array(grad, lang=lang, what=grad_text, shape=x_np.shape, none_key="quant_none")
        expected = np.where(inside, upstream, 0.0)
        i = first_mismatch(grads, expected, atol=1e-6)
        if i is not None:
            at = fragment("ch04.at_bits", lang, x=fmt(x_np[i]), bits=bits)
            if inside[i] and np.isclose(grads[i], 1.0):
                raise Mismatch(message("ch04.upstream", lang, at=at, u=fmt(upstream[i]),
                                     got=fmt(grads[i]), expected=fmt(expected[i])))
            wrong = ~np.isclose(grads, expected, atol=1e-6, rtol=1e-4)
            if grads[i] == 0 and np.all(np.isin(x_np[wrong], (0.0, 1.0))):  # right except at the ends
                text = message("ch04.mismatch", lang, at=at, subject=_subject(lang, grad_text), got=fmt(grads[i]),
                             expected=fmt(expected[i]))
                raise Mismatch(text + message("ch04.because", lang, reason=message("ch04.boundary", lang, x=fmt(x_np[i]))),
                               key="ch04.boundary")
            raise _mismatch(lang, at=at, what=grad_text, got=grads[i], expected=expected[i],
                            because="inside" if inside[i] else "outside")
    return message("ch04.quant_passed", lang, n=x_np.size)


# -- ch04-ex2: logaddexp(a, b) ----------------------------------------------------------

def _logaddexp_points():
    """(a, b) pairs: the tie, overflow both ways, tiny gradients both ways, then random pairs."""
    special = [(0.0, 0.0), (100.0, 0.0), (0.0, 100.0), (-20.0, 0.0), (0.0, -30.0), (50.0, -30.0),
               (-100.0, -100.0), (3.0, 3.0), (-2.5, 1.0), (20.0, 0.0), (-30.0, 0.0)]
    rng = np.random.default_rng(2)
    pairs = np.concatenate([np.array(special), rng.uniform(-6.0, 6.0, (14, 2))])
    return pairs[:, 0].astype(np.float32), pairs[:, 1].astype(np.float32)


LOGADDEXP_A, LOGADDEXP_B = _logaddexp_points()
# (a, b, upstream gradient) for the last part, inside a tf.function with upstream gradients other than 1
LOGADDEXP_IN_FUNCTION = (np.array([1.0, -2.0], np.float32), np.array([-1.0, 0.5], np.float32),
                         np.array([3.0, -0.5], np.float32))
GRAD_RTOL = 1e-4
# Below the smallest normal float32 TensorFlow returns 0 (its CPU kernels flush subnormal
# numbers), so exact gradients smaller than this are compared in absolute terms only.
GRAD_TINY = float(np.finfo(np.float32).tiny)


def _sigmoid(x):
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def _grad_ok(got, expected):
    """Relative accuracy; NaN and inf never pass."""
    return np.isfinite(got) & (np.abs(got - expected) <= GRAD_RTOL * np.abs(expected) + GRAD_TINY)


def _graph_facts(operations):
    """(uses tf.custom_gradient, uses tf.where, uses tf.math.reduce_logsumexp) in a traced graph."""
    custom = any(op.type == "IdentityN" and "_gradient_op_type" in op.node_def.attr for op in operations)
    where = any(op.type in ("Select", "SelectV2") for op in operations)
    logsumexp = any("ReduceLogSumExp" in op.name for op in operations)
    return custom, where, logsumexp


def _forward_facts(answer, *args):
    """:func:`_graph_facts` of ``answer(*args)`` traced in a tf.function.

    None when the reader's function cannot be traced (it may use .numpy(), Python control
    flow on tensors ...): the caller then gives the general hint.
    """
    try:
        with captured_tf_warnings():
            traced = tf.function(lambda *tensors: answer(*tensors), autograph=False)
            specs = [tf.TensorSpec(np.shape(arg), tf.float32) for arg in args]
            operations = traced.get_concrete_function(*specs).graph.get_operations()
    except PROPAGATE:
        raise
    except BaseException:  # the reader's code may raise anything while it is traced
        return None
    return _graph_facts(operations)


def _in_function(answer, a_np, b_np, upstream, lang):
    """``answer(a, b)`` and its gradients for ``upstream``, inside a tf.function.

    Returns (value, gradient for a, gradient for b, facts), the three arrays validated
    (numeric, float, right shape; NaN kept), ``facts`` from :func:`_graph_facts` of the
    traced graph.  The reader's function is called once, while it is traced; every
    problem becomes a Mismatch that says it happened inside a tf.function.
    """
    where = fragment("ch04.in_function", lang)
    value_text = fragment("common.forward", lang)

    def step(a, b):
        with tf.GradientTape() as tape:
            tape.watch([a, b])
            try:
                y = answer(a, b)
            except (Mismatch, *PROPAGATE):
                raise
            except BaseException as err:  # the reader's code may raise anything
                detail = _tidy(describe(err, lang))
                text = message("common.raised", lang, where=where, error=type(err).__name__, detail=detail)
                if "numpy" in detail:
                    raise Mismatch(message("ch04.raised_hint", lang, raised=text, hint=message("ch04.symbolic", lang)),
                                   key="ch04.symbolic") from None
                raise Mismatch(text) from None
        if y is None:
            raise Mismatch(message("common.none", lang, where=where))
        if not isinstance(y, tf.Tensor):
            raise Mismatch(message("common.not_tensor", lang, where=where, kind=type(y).__name__))
        if not y.dtype.is_floating:
            raise Mismatch(message("common.dtype", lang, where=where, what=value_text,
                                   got=y.dtype.name, expected="float32"))
        if y.shape.rank is not None and y.shape.is_fully_defined() and tuple(y.shape) != a_np.shape:
            raise Mismatch(message("common.shape", lang, where=where, what=value_text,
                                   got=y.shape.as_list(), expected=list(a_np.shape)))
        grads = _gradient(tape, y, [a, b], lang=lang, inputs="a, b",
                          output_gradients=tf.cast(tf.constant(upstream), y.dtype))
        for g, name in zip(grads, "ab"):
            if g is None:
                raise Mismatch(message("ch04.none_for", lang, name=name))
        return (y, *grads)

    specs = [tf.TensorSpec(a_np.shape, tf.float32)] * 2
    with captured_tf_warnings():
        concrete = tf.function(step, autograph=False).get_concrete_function(*specs)
    facts = _graph_facts(concrete.graph.get_operations())
    try:
        outputs = concrete(tf.constant(a_np), tf.constant(b_np))
    except PROPAGATE:
        raise
    except BaseException as err:  # a runtime error of the reader's graph
        raise Mismatch(message("common.raised", lang, where=where, error=type(err).__name__,
                               detail=_tidy(describe(err, lang)))) from None
    whats = (value_text, fragment("ch04.gradient_for", lang, name="a"), fragment("ch04.gradient_for", lang, name="b"))
    arrays = [_array(t, lang=lang, what=what, shape=a_np.shape) for t, what in zip(outputs, whats)]
    return (*arrays, facts)


def _swapped(arrays, ref_grads):
    """Both gradients right everywhere, but each returned for the other input."""
    return all(bool(np.all(_grad_ok(got, expected))) for got, expected in zip(arrays, reversed(ref_grads)))


def _logaddexp_value(a, b):
    """The stable forward pass: the larger input subtracted before exponentiating."""
    return tf.maximum(a, b) + tf.math.log1p(tf.exp(-tf.abs(a - b)))


def _logaddexp_naive(a, b):  # the stub: e^100 overflows
    return tf.math.log(tf.exp(a) + tf.exp(b))


@tf.custom_gradient
def _logaddexp_exp_ratio(a, b):  # the exercise's e^a / (e^a + e^b): inf / inf at a = 100
    return _logaddexp_value(a, b), lambda dy: (dy * tf.exp(a) / (tf.exp(a) + tf.exp(b)),
                                               dy * tf.exp(b) / (tf.exp(a) + tf.exp(b)))


@tf.custom_gradient
def _logaddexp_one_minus(a, b):  # the gradient for b as 1 - sigmoid(a - b): 0 where it is 1e-13
    s = tf.sigmoid(a - b)
    return _logaddexp_value(a, b), lambda dy: (dy * s, dy * (1 - s))


def _logaddexp_where(a, b):  # two stable branches in a tf.where, no custom gradient
    return tf.where(a > b, a + tf.math.log1p(tf.exp(b - a)), b + tf.math.log1p(tf.exp(a - b)))


@tf.custom_gradient
def _logaddexp_closed_over_y(a, b):  # right first derivatives; the outer tape meets maximum and abs through y
    y = _logaddexp_value(a, b)
    return y, lambda dy: (dy * tf.exp(a - y), dy * tf.exp(b - y))


def _logaddexp_reduce(a, b):  # right numbers by plain autodiff, no grad_fn
    return tf.math.reduce_logsumexp(tf.stack([a, b]), axis=0)


@exercise("ch04-ex2", answer="logaddexp", wrong_answers=[
    ("the stub's naive formula", _logaddexp_naive, "ch04.overflow"),
    ("stable forward, no custom gradient", _logaddexp_value, "ch04.half"),
    ("the gradient as e^a / (e^a + e^b)", _logaddexp_exp_ratio, "ch04.gradient_overflow"),
    ("1 - sigmoid for b", _logaddexp_one_minus, "ch04.cancel"),
    ("tf.where of two branches", _logaddexp_where, "ch04.where_trap"),
    ("grad_fn closes over y", _logaddexp_closed_over_y, "ch04.second_kink"),
    ("tf.math.reduce_logsumexp", _logaddexp_reduce, "ch04.library_logsumexp"),
])
def check_logaddexp(answer, lang):
    value_text = fragment("common.forward", lang)
    a_np, b_np = LOGADDEXP_A, LOGADDEXP_B
    a64, b64 = a_np.astype(np.float64), b_np.astype(np.float64)
    ref_value = np.logaddexp(a64, b64)
    ref_grads = (_sigmoid(a64 - b64), _sigmoid(b64 - a64))
    ref_second = ref_grads[0] * ref_grads[1]

    def at(i):
        return fragment("ch04.at_ab", lang, a=fmt(a_np[i]), b=fmt(b_np[i]))

    a, b = tf.constant(a_np), tf.constant(b_np)
    with tf.GradientTape() as outer:
        outer.watch(a)
        with tf.GradientTape() as inner:
            inner.watch([a, b])
            y = call(answer, a, b, lang=lang)
        values = _array(y, lang=lang, what=value_text, shape=a_np.shape)
        i = first_mismatch(values, ref_value, atol=1e-5)
        if i is not None:
            raise _mismatch(lang, at=at(i), what=value_text, got=values[i], expected=ref_value[i],
                            hint=None if np.isfinite(values[i]) else "overflow")
        grads = _gradient(inner, y, [a, b], lang=lang, inputs="a, b")
    arrays = []
    for g, name in zip(grads, "ab"):
        if g is None:
            raise Mismatch(message("ch04.none_for", lang, name=name))
        arrays.append(_array(g, lang=lang, what=fragment("ch04.gradient_for", lang, name=name), shape=a_np.shape))

    for i in range(a_np.size):  # point by point, a before b: the first problem is reported
        for got, expected, name in zip(arrays, ref_grads, "ab"):
            if _grad_ok(got[i], expected[i]):
                continue
            if not np.isfinite(got[i]):
                facts = _forward_facts(answer, a_np, b_np)
                hint = "where_trap" if facts is not None and not facts[0] and facts[1] else "gradient_overflow"
                raise _mismatch(lang, at=at(i), name=name, got=got[i], expected=expected[i], hint=hint)
            if _swapped(arrays, ref_grads):
                raise _mismatch(lang, at=at(i), name=name, got=got[i], expected=expected[i], hint="swapped")
            if a_np[i] == b_np[i]:
                raise _mismatch(lang, at=at(i), name=name, got=got[i], expected=expected[i], hint="half")
            if abs(got[i] - expected[i]) < 1e-5:  # right in absolute terms, wrong in relative ones
                text = message("ch04.mismatch", lang, at=at(i), subject=_subject(lang, name=name), got=fmt(got[i]),
                             expected=fmt(expected[i]))
                rel = f"{abs(got[i] - expected[i]) / expected[i]:.0%}"
                raise Mismatch(text + message("ch04.then", lang, hint=message("ch04.cancel", lang, rel=rel)),
                               key="ch04.cancel")
            raise _mismatch(lang, at=at(i), name=name, got=got[i], expected=expected[i])

    if not isinstance(grads[0], tf.Tensor):  # a NumPy gradient: nothing for the outer tape to differentiate
        raise Mismatch(message("ch04.second_none", lang))
    second = _gradient(outer, grads[0], a, lang=lang, inputs="a, b")
    seconds = _array(second, lang=lang, what=fragment("ch04.second", lang), shape=a_np.shape, none_key="second_none")
    i = first_mismatch(seconds, ref_second, atol=1e-5)
    if i is not None:
        hint = None
        if not np.isfinite(seconds[i]):
            hint = "second_overflow"
        elif a_np[i] == b_np[i]:  # the first derivatives passed, also here: a kink reached through grad_fn
            hint = "second_kink"
        raise _mismatch(lang, at=at(i), what=fragment("ch04.second", lang), got=seconds[i], expected=ref_second[i],
                        hint=hint)

    # Inside a tf.function, with upstream gradients other than 1 (a grad_fn that ignores dy passed
    # everything above); the traced graph also shows whether the answer uses tf.custom_gradient.
    a_up, b_up, upstream = LOGADDEXP_IN_FUNCTION
    values, grad_a, grad_b, facts = _in_function(answer, a_up, b_up, upstream, lang)
    expected = np.logaddexp(a_up.astype(np.float64), b_up.astype(np.float64))
    i = first_mismatch(values, expected, atol=1e-5)
    if i is not None:
        raise _mismatch(lang, at=fragment("ch04.at_ab", lang, a=fmt(a_up[i]), b=fmt(b_up[i])), what=value_text,
                        got=values[i], expected=expected[i])
    diff = (a_up - b_up).astype(np.float64)
    for got, expected_slope in zip((grad_a, grad_b), (_sigmoid(diff), _sigmoid(-diff))):
        expected = upstream * expected_slope
        i = first_mismatch(got, expected, atol=1e-5)
        if i is not None:
            raise Mismatch(message("ch04.upstream", lang, at=fragment("ch04.at_ab", lang, a=fmt(a_up[i]), b=fmt(b_up[i])),
                                 u=fmt(upstream[i]), got=fmt(got[i]), expected=fmt(expected[i])))
    custom, _, logsumexp = facts
    if not custom:
        raise Mismatch(message("ch04." + ("library_logsumexp" if logsumexp else "no_custom"), lang))
    smallest = float(min(g[g >= GRAD_TINY].min() for g in ref_grads))
    return message("ch04.logaddexp_passed", lang, n=a_np.size, rtol=GRAD_RTOL, smallest=smallest)


# -- ch04-ex3: clip_gradient_rows(x, max_norm) -----------------------------------------------

CLIP_X = (2.0 * np.random.default_rng(3).standard_normal((5, 3))).astype(np.float32)
CLIP_UPSTREAM = np.array([[3.0, 4.0, 0.0],     # norm 5: clipped
                          [0.3, -0.4, 0.0],    # norm 0.5: below the first limit, at the second
                          [0.0, 0.0, 0.0],     # a zero row: unchanged (no 0/0)
                          [-6.0, 2.0, 3.0],    # norm 7: clipped
                          [1.0, -1.0, 1.0]],   # norm 1.73: below the first limit, above the second
                         np.float32)
CLIP_NORMS = (2.0, 0.5)


def _clip_rows(dy, c, axis=1):
    """Each slice along ``axis`` scaled to norm at most ``c`` (float64; zero slices unchanged)."""
    norms = np.linalg.norm(dy, axis=axis, keepdims=True)
    return dy * np.minimum(1.0, c / np.where(norms > 0, norms, np.inf))


def _same(got, expected, rows=slice(None)):
    return bool(np.allclose(got[rows], expected[rows], atol=1e-5, rtol=1e-4))


def _clip_hint(got, dy, c):
    """The likely mistake behind a wrong gradient ``got`` for upstream ``dy`` and limit ``c``."""
    norms = np.linalg.norm(dy, axis=1)
    nonzero = norms > 0
    candidates = (
        ("not_clipped", dy, slice(None)),
        ("whole_norm", dy * min(1.0, c / np.linalg.norm(dy)), slice(None)),
        ("by_value", np.clip(dy, -c, c), slice(None)),
        ("per_column", _clip_rows(dy, c, axis=0), slice(None)),
        ("scaled_up", dy[nonzero] * (c / norms[nonzero])[:, None], None),
    )
    for key, expected, rows in candidates:
        if rows is None:  # compared on the nonzero rows only
            if np.all(np.isfinite(got[nonzero])) and np.allclose(got[nonzero], expected, atol=1e-5, rtol=1e-4):
                return key
        elif np.all(np.isfinite(got)) and _same(got, expected, rows):
            return key
    return None


@tf.custom_gradient
def _clip_stub_backward(x, max_norm):  # the stub's backward `(dy, None)` kept
    return tf.identity(x), lambda dy: (dy, None)


@tf.custom_gradient
def _clip_whole_norm(x, max_norm):  # tf.clip_by_norm without axes: one norm for the whole dy
    return tf.identity(x), lambda dy: (tf.clip_by_norm(dy, max_norm), None)


@tf.custom_gradient
def _clip_per_column(x, max_norm):  # axes=[0]: one norm per column
    return tf.identity(x), lambda dy: (tf.clip_by_norm(dy, max_norm, axes=[0]), None)


@tf.custom_gradient
def _clip_by_value(x, max_norm):  # the chapter's clip_gradient, entry by entry
    return tf.identity(x), lambda dy: (tf.clip_by_value(dy, -max_norm, max_norm), None)


def _clip_forward(x, max_norm):  # clips x in the forward pass, no custom gradient
    return tf.clip_by_norm(x, max_norm, axes=[1])


@tf.custom_gradient
def _clip_without_keepdims(x, max_norm):  # norms of shape [n] do not divide the rows
    return tf.identity(x), lambda dy: (dy * tf.minimum(1.0, max_norm / tf.norm(dy, axis=1)), None)


@tf.custom_gradient
def _clip_zero_row_nan(x, max_norm):  # right for nonzero rows, 0/0 in a zero row
    def grad_fn(dy):
        norm = tf.norm(dy, axis=1, keepdims=True)
        return dy / norm * tf.minimum(norm, max_norm), None
    return tf.identity(x), grad_fn


def _clip_undecorated(x, max_norm):  # @tf.custom_gradient forgotten: the pair itself comes back
    def grad_fn(dy):
        return tf.clip_by_norm(dy, max_norm, axes=[1]), None
    return tf.identity(x), grad_fn


@exercise("ch04-ex3", answer="clip_gradient_rows", wrong_answers=[
    ("@tf.custom_gradient forgotten", _clip_undecorated, "common.undecorated"),
    ("the stub's backward kept", _clip_stub_backward, "ch04.not_clipped"),
    ("tf.clip_by_norm without axes", _clip_whole_norm, "ch04.whole_norm"),
    ("tf.clip_by_norm with axes=[0]", _clip_per_column, "ch04.per_column"),
    ("tf.clip_by_value", _clip_by_value, "ch04.by_value"),
    ("clipped in the forward pass", _clip_forward, "ch04.forward_clipped"),
    ("norms without keepdims", _clip_without_keepdims, "ch04.keepdims"),
    ("0/0 in a zero row", _clip_zero_row_nan, "ch04.zero_row"),
])
def check_clip_gradient_rows(answer, lang):
    value_text, grad_text = fragment("common.forward", lang), fragment("common.gradient", lang)
    x_np, dy_np = CLIP_X, CLIP_UPSTREAM
    dy64 = dy_np.astype(np.float64)
    for c in CLIP_NORMS:
        x = tf.constant(x_np)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = call(answer, x, c, lang=lang, where=fragment("ch04.when_c", lang, c=fmt(c)))
        values = _array(y, lang=lang, what=value_text, shape=x_np.shape)
        if not _same(values, x_np):
            i = int(np.flatnonzero(~np.all(np.isclose(values, x_np, atol=1e-5, rtol=1e-4), axis=1))[0])
            if _same(values, _clip_rows(x_np.astype(np.float64), c)) or _same(
                    values, x_np * min(1.0, c / np.linalg.norm(x_np))):
                raise Mismatch(message("ch04.forward_clipped", lang, i=i, got=fmt(values[i]), expected=fmt(x_np[i])))
            raise _mismatch(lang, at=fragment("ch04.at_value_row", lang, c=fmt(c), i=i), what=value_text, got=values[i],
                            expected=x_np[i])
        try:
            grad = _gradient(tape, y, x, lang=lang, inputs="x, max_norm", output_gradients=tf.constant(dy_np))
        except Mismatch as problem:
            if "Incompatible shapes" in str(problem) or "must be broadcastable" in str(problem):
                raise Mismatch(str(problem) + message("ch04.then", lang, hint=message("ch04.keepdims", lang)),
                               key="ch04.keepdims") from None
            raise
        grads = _array(grad, lang=lang, what=grad_text, shape=x_np.shape, none_key="none_gradient")
        expected = _clip_rows(dy64, c)
        good = np.all(np.isfinite(grads) & np.isclose(grads, expected, atol=1e-5, rtol=1e-4), axis=1)
        if np.all(good):
            continue
        i = int(np.flatnonzero(~good)[0])
        at = fragment("ch04.at_row", lang, c=fmt(c), i=i, row=fmt(dy_np[i]), norm=fmt(np.linalg.norm(dy64[i])))
        text = message("ch04.row_mismatch", lang, at=at, got=fmt(grads[i]), expected=fmt(expected[i]))
        if not np.all(dy_np[i] == 0) or np.all(np.isfinite(grads[i])):
            hint = _clip_hint(grads, dy64, c)
        else:
            hint = "zero_row"
        if hint is not None:
            text = join(text, message("ch04." + hint, lang), lang)
        raise Mismatch(text)
    return message("ch04.clip_passed", lang, norms=message("ch04.list_sep", lang).join(fmt(c) for c in CLIP_NORMS))
