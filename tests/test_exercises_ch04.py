"""Chapter 4's exercise checks (ch04-ex1..ex3).

Each check must accept the reference solution (the one hidden in the
chapter), reject the typical wrong answers with the message that explains
them, and turn hostile answers (raising, returning None, wrong shapes) into
feedback instead of exceptions.
"""

import numpy as np
import pytest
import tensorflow as tf

from gradlib import exercises
from gradlib.exercises import ch04


def _levels(bits, dtype):
    return tf.cast(2 ** bits - 1, dtype)


def _quantized(x, bits):
    levels = _levels(bits, x.dtype)
    return tf.round(tf.clip_by_value(x, 0.0, 1.0) * levels) / levels


# -- ch04-ex1: fake_quant ----------------------------------------------------------

@tf.custom_gradient
def fake_quant(x, bits):  # the reference solution
    levels = tf.cast(2 ** bits - 1, x.dtype)
    y = tf.round(tf.clip_by_value(x, 0.0, 1.0) * levels) / levels

    def grad_fn(dy):
        inside = tf.logical_and(x >= 0.0, x <= 1.0)
        return tf.where(inside, dy, tf.zeros_like(dy)), None
    return y, grad_fn


@tf.custom_gradient
def quant_unclipped_ste(x, bits):  # wrong: the gradient also passes where the forward is flat
    return _quantized(x, bits), lambda dy: (dy, None)


@tf.custom_gradient
def quant_one_gradient(x, bits):  # wrong: no gradient (None) for bits
    return _quantized(x, bits), lambda dy: tf.where((x >= 0) & (x <= 1), dy, 0.0)


@tf.custom_gradient
def quant_without_dy(x, bits):  # wrong: ignores the upstream gradient
    return _quantized(x, bits), lambda dy: (tf.where((x >= 0) & (x <= 1), 1.0, 0.0), None)


@tf.custom_gradient
def quant_zero_gradient(x, bits):  # wrong: the true (zero) derivative of a staircase
    return _quantized(x, bits), lambda dy: (tf.zeros_like(dy), None)


@tf.custom_gradient
def quant_floor_ste(x, bits):  # right gradient, wrong forward: floor instead of round
    levels = _levels(bits, x.dtype)
    y = tf.floor(tf.clip_by_value(x, 0.0, 1.0) * levels) / levels
    return y, lambda dy: (tf.where((x >= 0) & (x <= 1), dy, 0.0), None)


@tf.custom_gradient
def quant_half_up(x, bits):  # rounds ties up: must pass too, the check avoids ties
    levels = _levels(bits, x.dtype)
    y = tf.floor(tf.clip_by_value(x, 0.0, 1.0) * levels + 0.5) / levels
    return y, lambda dy: (tf.where((x >= 0) & (x <= 1), dy, 0.0), None)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_ex1_reference_passes(lang):
    feedback = exercises.check("ch04-ex1", fake_quant, lang=lang)
    assert feedback.passed, feedback.message
    assert "None" in feedback.message


def test_ex1_rounding_convention_at_ties_does_not_matter():
    assert exercises.check("ch04-ex1", quant_half_up).passed
    for bits in (1, 2, 4):
        scaled = np.clip(ch04.QUANT_POINTS.astype(np.float64), 0, 1) * (2 ** bits - 1)
        assert np.min(np.abs(scaled - np.floor(scaled) - 0.5)) > 1e-3


def test_ex1_unclipped_straight_through_is_explained():
    feedback = exercises.check("ch04-ex1", quant_unclipped_ste)
    assert not feedback.passed
    assert feedback.message.startswith("at x = -0.25, bits = 1 your gradient is ")
    assert "expected 0 because x is outside [0, 1]" in feedback.message
    zh = exercises.check("ch04-ex1", quant_unclipped_ste, lang="zh")
    assert "[0, 1] 之外" in zh.message


def test_ex1_missing_none_for_bits():
    feedback = exercises.check("ch04-ex1", quant_one_gradient)
    assert not feedback.passed
    assert feedback.message.startswith("grad_fn must return one gradient per input (x, bits)")
    assert "expected to return 2 gradients, but returned 1" in feedback.message


def test_ex1_ignoring_dy():
    feedback = exercises.check("ch04-ex1", quant_without_dy)
    assert not feedback.passed
    assert "with upstream gradient 2 your gradient is 1; expected 2" in feedback.message
    assert "multiply by the upstream gradient dy" in feedback.message


def test_ex1_zero_gradient_inside():
    feedback = exercises.check("ch04-ex1", quant_zero_gradient)
    assert not feedback.passed
    assert "at x = 0, bits = 1 your gradient is 0; expected 2 because x is inside [0, 1]" in feedback.message


def test_ex1_wrong_forward():
    feedback = exercises.check("ch04-ex1", quant_floor_ste)
    assert feedback.message == "at x = 0.522655, bits = 1 your value is 0; expected 1."


def test_ex1_without_custom_gradient_the_gradient_is_none():
    feedback = exercises.check("ch04-ex1", _quantized)
    assert not feedback.passed and "the gradient is None" in feedback.message


# -- ch04-ex2: log1pexp --------------------------------------------------------------

def _stable_forward(x):
    return tf.maximum(x, 0.0) + tf.math.log1p(tf.exp(-tf.abs(x)))


@tf.custom_gradient
def log1pexp(x):  # the reference solution
    y = tf.maximum(x, 0.0) + tf.math.log1p(tf.exp(-tf.abs(x)))
    return y, lambda dy: dy * tf.sigmoid(x)


def log1pexp_naive(x):  # wrong: inf at x = 100 (and a NaN gradient)
    return tf.math.log(1 + tf.exp(x))


@tf.custom_gradient
def log1pexp_stable_gradient_only(x):  # wrong: the value still overflows
    e = tf.exp(x)
    return tf.math.log(1 + e), lambda dy: dy * (1 - 1 / (1 + e))


@tf.custom_gradient
def log1pexp_overflowing_second(x):  # wrong: the second derivative is inf/inf at 100
    return _stable_forward(x), lambda dy: dy * (1 - 1 / (1 + tf.exp(x)))


@tf.custom_gradient
def log1pexp_numpy_gradient(x):  # wrong: the second derivative is None
    def grad_fn(dy):
        s = 1 / (1 + np.exp(-x.numpy().astype(np.float64)))
        return dy * tf.constant(s, dy.dtype)
    return _stable_forward(x), grad_fn


@tf.custom_gradient
def log1pexp_numpy_array(x):  # wrong: the gradient is a NumPy array
    return _stable_forward(x), lambda dy: dy.numpy() * (1 / (1 + np.exp(-x.numpy().astype(np.float64))))


@tf.custom_gradient
def log1pexp_without_dy(x):  # wrong: ignores the upstream gradient
    return _stable_forward(x), lambda dy: tf.sigmoid(x)


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("answer", [log1pexp, tf.nn.softplus], ids=["custom", "softplus"])
def test_ex2_reference_and_library_op_pass(answer, lang):
    feedback = exercises.check("ch04-ex2", answer, lang=lang)
    assert feedback.passed, feedback.message
    assert "100" in feedback.message


@pytest.mark.parametrize("answer", [log1pexp_naive, log1pexp_stable_gradient_only])
def test_ex2_overflowing_value(answer):
    with np.errstate(all="ignore"):
        feedback = exercises.check("ch04-ex2", answer)
    assert not feedback.passed
    assert feedback.message.startswith("at x = 100 your value is inf; expected 100. e^x overflows float32")


def test_ex2_autodiff_of_the_stable_forward_is_wrong_at_zero():
    feedback = exercises.check("ch04-ex2", _stable_forward)
    assert feedback.message.startswith("at x = 0 your gradient is 1; expected 0.5.")
    assert "tf.maximum" in feedback.message


def test_ex2_overflowing_second_derivative():
    feedback = exercises.check("ch04-ex2", log1pexp_overflowing_second)
    assert feedback.message.startswith("at x = 100 your second derivative is nan; expected 0.")
    assert "tf.sigmoid" in feedback.message
    assert "二阶导数为 nan" in exercises.check("ch04-ex2", log1pexp_overflowing_second, lang="zh").message


@pytest.mark.parametrize("answer", [log1pexp_numpy_gradient, log1pexp_numpy_array])
def test_ex2_numpy_in_grad_fn(answer):
    feedback = exercises.check("ch04-ex2", answer)
    assert not feedback.passed
    assert feedback.message.startswith("the second derivative is None")


def test_ex2_ignoring_dy():
    feedback = exercises.check("ch04-ex2", log1pexp_without_dy)
    assert feedback.message.startswith("at x = 1 with upstream gradient 3 your gradient is 0.731059; expected 2.19318.")


def test_ex2_reference_values_are_independent():
    x = ch04.LOG1PEXP_POINTS.astype(np.float64)
    np.testing.assert_allclose(ch04._sigmoid(x), 1 / (1 + np.exp(-np.clip(x, -700, 700))), rtol=1e-12)
    np.testing.assert_allclose(np.logaddexp(0, x), tf.nn.softplus(x).numpy(), rtol=1e-12)
    assert {0.0, 50.0, -50.0, 100.0} <= set(x.tolist())


# -- ch04-ex3: safe_norm -------------------------------------------------------------

@tf.custom_gradient
def safe_norm(v):  # the reference solution
    norm = tf.norm(v)
    return norm, lambda dy: dy * tf.math.divide_no_nan(v, norm)


@tf.custom_gradient
def norm_nan_at_zero(v):  # wrong: v / 0
    norm = tf.norm(v)
    return norm, lambda dy: dy * v / norm


@tf.custom_gradient
def norm_without_dy(v):  # wrong: ignores the upstream gradient
    norm = tf.norm(v)
    return norm, lambda dy: tf.math.divide_no_nan(v, norm)


@tf.custom_gradient
def norm_scalar_gradient(v):  # wrong: a scalar gradient for a vector input
    return tf.norm(v), lambda dy: dy


@tf.custom_gradient
def norm_epsilon(v):  # fine: an epsilon also gives 0 at the zero vector
    norm = tf.norm(v)
    return norm, lambda dy: dy * v / (norm + 1e-12)


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("answer", [safe_norm, norm_epsilon], ids=["reference", "epsilon"])
def test_ex3_correct_answers_pass(answer, lang):
    feedback = exercises.check("ch04-ex3", answer, lang=lang)
    assert feedback.passed, feedback.message


@pytest.mark.parametrize("answer", [tf.norm, norm_nan_at_zero], ids=["tf.norm", "v/norm"])
def test_ex3_nan_at_the_zero_vector(answer):
    feedback = exercises.check("ch04-ex3", answer)
    assert feedback.message.startswith("at v = [0., 0., 0.] your gradient is [nan, nan, nan]; expected [0., 0., 0.].")
    assert "tf.math.divide_no_nan" in feedback.message
    assert "零向量" in exercises.check("ch04-ex3", answer, lang="zh").message


def test_ex3_ignoring_dy():
    feedback = exercises.check("ch04-ex3", norm_without_dy)
    assert "with upstream gradient 0.5" in feedback.message
    assert "multiply by the upstream gradient dy" in feedback.message


def test_ex3_wrong_gradient_shape():
    feedback = exercises.check("ch04-ex3", norm_scalar_gradient)
    assert feedback.message == "your gradient has shape []; expected [3]."


# -- every check: hostile answers get feedback, never an exception -------------------

HOSTILE = [
    (lambda *args: 1 / 0, "raised ZeroDivisionError"),
    (lambda *args: None, "returned None"),
    (lambda *args: "text", "not a numeric tensor"),
    (lambda *args: tf.zeros([2, 2]), "shape [2, 2]"),
    (lambda *args: tf.constant(1), "dtype int32"),
    (lambda: 0.0, "raised TypeError"),
    (42, "must be a function"),
]


@pytest.mark.parametrize("exercise_id", ["ch04-ex1", "ch04-ex2", "ch04-ex3"])
@pytest.mark.parametrize("answer, fragment", HOSTILE)
def test_hostile_answers_get_feedback(exercise_id, answer, fragment):
    feedback = exercises.check(exercise_id, answer)
    assert not feedback.passed
    assert fragment in feedback.message
    assert not exercises.check(exercise_id, answer, lang="zh").passed


@pytest.mark.parametrize("exercise_id, answer", [
    ("ch04-ex1", lambda x, bits: x * float("nan")),
    ("ch04-ex2", lambda x: x * float("nan")),
    ("ch04-ex3", lambda v: tf.reduce_sum(v) * float("nan")),
])
def test_nan_answers_are_rejected(exercise_id, answer):
    feedback = exercises.check(exercise_id, answer)
    assert not feedback.passed and "nan" in feedback.message


def test_grad_fn_that_raises_is_reported():
    @tf.custom_gradient
    def broken(x):
        def grad_fn(dy):
            raise RuntimeError("backward exploded")
        return tf.nn.softplus(x), grad_fn
    feedback = exercises.check("ch04-ex2", broken)
    assert feedback.message == "your code raised RuntimeError: backward exploded"


def test_registered_ids():
    assert {"ch04-ex1", "ch04-ex2", "ch04-ex3"} <= set(exercises.exercise_ids())
    for key in ch04.MESSAGES:
        assert set(ch04.MESSAGES[key]) == {"en", "zh"}, key
