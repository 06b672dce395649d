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


@tf.custom_gradient
def quant_round_then_clip(x, bits):  # rounds before clipping: the same values, since 0 and 1 are levels
    levels = _levels(bits, x.dtype)
    y = tf.clip_by_value(tf.round(x * levels) / levels, 0.0, 1.0)
    return y, lambda dy: (tf.where((x >= 0) & (x <= 1), dy, 0.0), None)


@tf.custom_gradient
def quant_int_levels(x, bits):  # wrong: 2 ** bits - 1 stays an int32 tensor
    levels = 2 ** bits - 1
    y = tf.round(tf.clip_by_value(x, 0.0, 1.0) * levels) / levels
    return y, lambda dy: (tf.where((x >= 0) & (x <= 1), dy, 0.0), None)


@tf.custom_gradient
def quant_pow2_levels(x, bits):  # wrong: 2 ** bits steps instead of 2 ** bits - 1
    levels = tf.cast(2 ** bits, x.dtype)
    y = tf.round(tf.clip_by_value(x, 0.0, 1.0) * levels) / levels
    return y, lambda dy: (tf.where((x >= 0) & (x <= 1), dy, 0.0), None)


@tf.custom_gradient
def quant_no_clip(x, bits):  # wrong: rounds without clipping
    levels = _levels(bits, x.dtype)
    return tf.round(x * levels) / levels, lambda dy: (tf.where((x >= 0) & (x <= 1), dy, 0.0), None)


@tf.custom_gradient
def quant_open_interval(x, bits):  # wrong: the ends 0 and 1 get no gradient
    return _quantized(x, bits), lambda dy: (tf.where((x > 0) & (x < 1), dy, 0.0), None)


def quant_builtin(x, bits):  # TensorFlow's op: no bits = 1
    return tf.quantization.fake_quant_with_min_max_args(x, 0.0, 1.0, num_bits=int(bits))


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
    # likely wrong answer 1: the stub's backward `(dy, None)` kept, no mask
    feedback = exercises.check("ch04-ex1", quant_unclipped_ste)
    assert not feedback.passed
    assert feedback.message.startswith("at x = -0.25, bits = 1 your gradient is ")
    assert "expected 0 because x is outside [0, 1]" in feedback.message
    assert "tf.where((x >= 0) & (x <= 1), dy, 0)" in feedback.message
    zh = exercises.check("ch04-ex1", quant_unclipped_ste, lang="zh")
    assert zh.message.startswith("在 x = -0.25，bits = 1 处")
    assert "[0, 1] 之外" in zh.message and "掩码" in zh.message


def test_ex1_integer_levels_are_explained():
    # likely wrong answer 2: 2 ** bits - 1 left as an int32 tensor
    feedback = exercises.check("ch04-ex1", quant_int_levels)
    assert feedback.message.startswith("bits = 1: your code raised InvalidArgumentError: cannot compute Mul")
    assert "tf.cast(2 ** bits - 1, x.dtype)" in feedback.message
    assert not feedback.message.rstrip(".").endswith("name:")
    zh = exercises.check("ch04-ex1", quant_int_levels, lang="zh")
    assert zh.message.startswith("bits = 1 时，你的代码抛出了 InvalidArgumentError")
    assert "bits 是 int32 张量" in zh.message


def test_ex1_rounding_before_clipping_passes():
    assert exercises.check("ch04-ex1", quant_round_then_clip).passed


def test_ex1_powers_of_two_levels():
    feedback = exercises.check("ch04-ex1", quant_pow2_levels)
    assert feedback.message.startswith("at x = 0.35, bits = 1 your value is 0.5; expected 0. You rounded to steps of 1/2^bits.")
    assert "2 ** bits - 1" in feedback.message
    assert "步长是 1/(2^b - 1)" in exercises.check("ch04-ex1", quant_pow2_levels, lang="zh").message


def test_ex1_no_clip_in_the_forward_pass():
    feedback = exercises.check("ch04-ex1", quant_no_clip)
    assert feedback.message == ("at x = 1.5, bits = 1 your value is 2; expected 1. You rounded without "
                                "clipping: clip x to [0, 1] (tf.clip_by_value) before rounding.")
    assert "没有截断就取整" in exercises.check("ch04-ex1", quant_no_clip, lang="zh").message


def test_ex1_open_interval_mask():
    feedback = exercises.check("ch04-ex1", quant_open_interval)
    assert feedback.message.startswith("at x = 0, bits = 1 your gradient is 0; expected 2 because x = 0 is an end")
    assert "x >= 0 and x <= 1" in feedback.message
    assert "端点属于直通的部分" in exercises.check("ch04-ex1", quant_open_interval, lang="zh").message


def test_ex1_builtin_fake_quant_is_explained():
    feedback = exercises.check("ch04-ex1", quant_builtin)
    assert feedback.message.startswith("bits = 1: your code raised InvalidArgumentError: num_bits must be between 2 and 16")
    assert "write the op yourself" in feedback.message
    assert "请自己写出这个运算" in exercises.check("ch04-ex1", quant_builtin, lang="zh").message


def test_ex1_missing_none_for_bits():
    # likely wrong answer 3: one gradient, no None for bits
    feedback = exercises.check("ch04-ex1", quant_one_gradient)
    assert not feedback.passed
    assert feedback.message.startswith("grad_fn must return one gradient per input (x, bits)")
    assert "expected to return 2 gradients, but returned 1" in feedback.message
    zh = exercises.check("ch04-ex1", quant_one_gradient, lang="zh")
    assert zh.message.startswith("grad_fn 必须为每个输入各返回一个梯度（x, bits）")


def test_ex1_ignoring_dy():
    feedback = exercises.check("ch04-ex1", quant_without_dy)
    assert not feedback.passed
    assert "with upstream gradient 2 your gradient is 1; expected 2" in feedback.message
    assert "multiply by the upstream gradient dy" in feedback.message
    assert "必须乘以上游梯度 dy" in exercises.check("ch04-ex1", quant_without_dy, lang="zh").message


def test_ex1_zero_gradient_inside():
    feedback = exercises.check("ch04-ex1", quant_zero_gradient)
    assert not feedback.passed
    assert "at x = 0, bits = 1 your gradient is 0; expected 2 because x is inside [0, 1]" in feedback.message


def test_ex1_wrong_forward():
    feedback = exercises.check("ch04-ex1", quant_floor_ste)
    assert feedback.message == "at x = 0.522655, bits = 1 your value is 0; expected 1."


def test_ex1_without_custom_gradient_the_gradient_is_none():
    feedback = exercises.check("ch04-ex1", _quantized)
    assert not feedback.passed
    assert feedback.message.startswith("the gradient is None: tf.round has no gradient")
    assert "tf.round 没有梯度" in exercises.check("ch04-ex1", _quantized, lang="zh").message


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
def log1pexp_exp_ratio(x):  # wrong: e^x / (1 + e^x) is inf/inf at 100
    return _stable_forward(x), lambda dy: dy * tf.exp(x) / (1 + tf.exp(x))


@tf.custom_gradient
def log1pexp_reciprocal(x):  # wrong: the second derivative of 1/(1 + e^-x) is NaN at -100
    return _stable_forward(x), lambda dy: dy / (1 + tf.exp(-x))


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
    # likely wrong answer 1: the chapter's own grad_fn, 1 - 1/(1 + e^x)
    feedback = exercises.check("ch04-ex2", log1pexp_overflowing_second)
    assert feedback.message.startswith("at x = 100 your second derivative is nan; expected 0. "
                                       "The outer tape differentiates the operations of your grad_fn")
    assert "0 * inf is NaN" in feedback.message and "tf.sigmoid(x)" in feedback.message
    zh = exercises.check("ch04-ex2", log1pexp_overflowing_second, lang="zh").message
    assert "二阶导数为 nan" in zh and "外层梯度带会对你的 grad_fn 中的运算求导" in zh


def test_ex2_overflow_of_e_to_minus_x():
    feedback = exercises.check("ch04-ex2", log1pexp_reciprocal)
    assert feedback.message.startswith("at x = -100 your second derivative is nan")
    assert "tf.sigmoid(x)" in feedback.message


def test_ex2_overflowing_first_derivative():
    feedback = exercises.check("ch04-ex2", log1pexp_exp_ratio)
    assert feedback.message.startswith("at x = 100 your gradient is nan; expected 1. A gradient built from e^x")
    assert "inf/inf" in feedback.message
    assert "不会溢出" in exercises.check("ch04-ex2", log1pexp_exp_ratio, lang="zh").message


@pytest.mark.parametrize("answer", [log1pexp_numpy_gradient, log1pexp_numpy_array])
def test_ex2_numpy_in_grad_fn(answer):
    # likely wrong answer 3 (2 is tf.nn.softplus alone, which passes: see above)
    feedback = exercises.check("ch04-ex2", answer)
    assert not feedback.passed
    assert feedback.message.startswith("the second derivative is None")
    assert exercises.check("ch04-ex2", answer, lang="zh").message.startswith("二阶导数为 None")


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
    # likely wrong answers 1 and 2: tf.norm's own gradient, and dy * v / norm unprotected
    feedback = exercises.check("ch04-ex3", answer)
    assert feedback.message.startswith("at v = [0., 0., 0.] your gradient is [nan, nan, nan]; expected [0., 0., 0.].")
    assert "0/0 = NaN" in feedback.message and "tf.math.divide_no_nan" in feedback.message
    zh = exercises.check("ch04-ex3", answer, lang="zh").message
    assert zh.startswith("在 v = [0., 0., 0.] 处") and "在零向量处 v / ||v|| 是 0/0 = NaN" in zh


def test_ex3_ignoring_dy():
    feedback = exercises.check("ch04-ex3", norm_without_dy)
    assert "with upstream gradient 0.5" in feedback.message
    assert "multiply by the upstream gradient dy" in feedback.message
    assert "上游梯度为 0.5" in exercises.check("ch04-ex3", norm_without_dy, lang="zh").message


def test_ex3_wrong_gradient_shape():
    # likely wrong answer 3: a scalar gradient for a vector input
    feedback = exercises.check("ch04-ex3", norm_scalar_gradient)
    assert feedback.message.startswith("your gradient has shape []; expected [3]. The gradient with respect to v")
    assert "dy * v / ||v||" in feedback.message
    zh = exercises.check("ch04-ex3", norm_scalar_gradient, lang="zh").message
    assert zh.startswith("你的梯度形状为 []，应为 [3]。") and "应返回向量" in zh


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
