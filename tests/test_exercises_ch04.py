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
from test_classroom_wrong_answers import reference, wrong_answer
from gradlib.classroom.exercises import ch04
from gradlib.classroom.exercises.ch04 import _levels, _logaddexp_value, _quantized

# Feedback is asserted by its catalogue key (each mistake has its own: a hint appended to
# ch04.mismatch or ch04.raised_hint gives the feedback the hint's key); the message text only
# where it shows a filled-in number or placeholder (x, bits, a, b, c, a row) that the key cannot.
# The typical wrong answers are declared with each check (``@exercise(..., wrong_answers=...)``) and
# run by tests/test_classroom_wrong_answers.py; the tests here take them from there (:func:`declared`)
# to assert what the key cannot show.


# -- ch04-ex1: fake_quant ----------------------------------------------------------

fake_quant = reference("ch04-ex1")  # the chapter's own solution
quant_unclipped_ste = wrong_answer("ch04-ex1", "the stub's backward kept")
quant_int_levels = wrong_answer("ch04-ex1", "levels an int32 tensor")
quant_one_gradient = wrong_answer("ch04-ex1", "no None for bits")
quant_pow2_levels = wrong_answer("ch04-ex1", "2^bits steps")
quant_open_interval = wrong_answer("ch04-ex1", "mask without the ends")
quant_without_dy = wrong_answer("ch04-ex1", "dy ignored")
quant_builtin = wrong_answer("ch04-ex1", "tf.quantization.fake_quant_with_min_max_args")


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
def quant_no_clip(x, bits):  # wrong: rounds without clipping
    levels = _levels(bits, x.dtype)
    return tf.round(x * levels) / levels, lambda dy: (tf.where((x >= 0) & (x <= 1), dy, 0.0), None)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_ex1_reference_passes(lang):
    feedback = exercises.check("ch04-ex1", fake_quant, lang=lang)
    assert feedback.passed, feedback.message
    assert "None" not in feedback.message  # the check cannot see the gradient for the integer bits


@tf.custom_gradient
def quant_zeros_for_bits(x, bits):  # a tape gives the int32 bits no gradient, whatever grad_fn returns
    return _quantized(x, bits), lambda dy: (tf.where((x >= 0) & (x <= 1), dy, 0.0), tf.zeros_like(bits))


def test_ex1_success_message_claims_nothing_about_bits():
    feedback = exercises.check("ch04-ex1", quant_zeros_for_bits)
    assert feedback.passed and "None" not in feedback.message
    zh = exercises.check("ch04-ex1", quant_zeros_for_bits, lang="zh").message
    assert zh.startswith("bits 取 1、2、4 时，在 ")


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
    assert feedback.key == "ch04.outside"
    zh = exercises.check("ch04-ex1", quant_unclipped_ste, lang="zh")
    assert zh.message.startswith("在 x = -0.25，bits = 1 处") and zh.key == "ch04.outside"


def test_ex1_integer_levels_are_explained():
    # likely wrong answer 2: 2 ** bits - 1 left as an int32 tensor
    feedback = exercises.check("ch04-ex1", quant_int_levels)
    assert feedback.message.startswith("bits = 1: your code raised InvalidArgumentError: cannot compute Mul")
    assert feedback.key == "ch04.int_bits"
    assert not feedback.message.rstrip(".").endswith("name:")
    zh = exercises.check("ch04-ex1", quant_int_levels, lang="zh")
    assert zh.message.startswith("bits = 1 时，你的代码抛出了 InvalidArgumentError") and zh.key == "ch04.int_bits"


def test_ex1_rounding_before_clipping_passes():
    assert exercises.check("ch04-ex1", quant_round_then_clip).passed


def test_ex1_powers_of_two_levels():
    feedback = exercises.check("ch04-ex1", quant_pow2_levels)
    assert feedback.message.startswith("at x = 0.35, bits = 1 your value is 0.5; expected 0. ")
    assert feedback.key == "ch04.pow2_levels"


def test_ex1_no_clip_in_the_forward_pass():
    feedback = exercises.check("ch04-ex1", quant_no_clip)
    assert feedback.message.startswith("at x = 1.5, bits = 1 your value is 2; expected 1. ")
    assert feedback.key == "ch04.no_clip"
    assert exercises.check("ch04-ex1", quant_no_clip, lang="zh").key == "ch04.no_clip"


def test_ex1_open_interval_mask():
    feedback = exercises.check("ch04-ex1", quant_open_interval)
    assert feedback.message.startswith("at x = 0, bits = 1 your gradient is 0; expected 2 because x = 0 is an end")
    assert feedback.key == "ch04.boundary"


def test_ex1_builtin_fake_quant_is_explained():
    feedback = exercises.check("ch04-ex1", quant_builtin)
    assert feedback.message.startswith("bits = 1: your code raised InvalidArgumentError: num_bits must be between 2 and 16")
    assert feedback.key == "ch04.num_bits"


def test_ex1_missing_none_for_bits():
    # likely wrong answer 3: one gradient, no None for bits
    feedback = exercises.check("ch04-ex1", quant_one_gradient)
    assert not feedback.passed
    assert feedback.key == "ch04.gradient_count" and "(x, bits)" in feedback.message
    assert "expected to return 2 gradients, but returned 1" in feedback.message
    zh = exercises.check("ch04-ex1", quant_one_gradient, lang="zh")
    assert zh.key == "ch04.gradient_count" and "（x, bits）" in zh.message


def test_ex1_ignoring_dy():
    feedback = exercises.check("ch04-ex1", quant_without_dy)
    assert not feedback.passed
    assert "with upstream gradient 2 your gradient is 1; expected 2" in feedback.message
    assert feedback.key == "ch04.upstream"


def test_ex1_zero_gradient_inside():
    feedback = exercises.check("ch04-ex1", quant_zero_gradient)
    assert not feedback.passed
    assert feedback.message.startswith("at x = 0, bits = 1 your gradient is 0; expected 2 ")
    assert feedback.key == "ch04.inside"


def test_ex1_wrong_forward():
    feedback = exercises.check("ch04-ex1", quant_floor_ste)
    assert feedback.key == "ch04.mismatch"
    assert feedback.message == "at x = 0.522655, bits = 1 your value is 0; expected 1."  # no hint appended


def test_ex1_without_custom_gradient_the_gradient_is_none():
    feedback = exercises.check("ch04-ex1", _quantized)
    assert not feedback.passed
    assert feedback.key == "ch04.quant_none"
    assert exercises.check("ch04-ex1", _quantized, lang="zh").key == "ch04.quant_none"


# -- ch04-ex2: logaddexp ------------------------------------------------------------

logaddexp = reference("ch04-ex2")  # the chapter's own solution
logaddexp_naive = wrong_answer("ch04-ex2", "the stub's naive formula")
logaddexp_autodiff = wrong_answer("ch04-ex2", "stable forward, no custom gradient")
logaddexp_exp_ratio = wrong_answer("ch04-ex2", "the gradient as e^a / (e^a + e^b)")
logaddexp_one_minus = wrong_answer("ch04-ex2", "1 - sigmoid for b")
logaddexp_where = wrong_answer("ch04-ex2", "tf.where of two branches")
logaddexp_closed_over_y = wrong_answer("ch04-ex2", "grad_fn closes over y")


def logaddexp_where_softplus(a, b):  # right numbers by plain autodiff: softplus has a stable gradient
    return tf.where(a >= b, a + tf.nn.softplus(b - a), b + tf.nn.softplus(a - b))


def logaddexp_double_where(a, b):  # chapter 1's double where: right numbers, no custom gradient
    d = a - b
    safe_pos = tf.where(d > 0, -d, tf.zeros_like(d))
    safe_neg = tf.where(d > 0, tf.zeros_like(d), d)
    return tf.where(d > 0, a + tf.math.log1p(tf.exp(safe_pos)), b + tf.math.log1p(tf.exp(safe_neg)))


@tf.custom_gradient
def logaddexp_swapped(a, b):  # wrong: the two gradients in the wrong order
    y = tf.maximum(a, b) + tf.math.log1p(tf.exp(-tf.abs(a - b)))
    return y, lambda dy: (dy * tf.sigmoid(b - a), dy * tf.sigmoid(a - b))


@tf.custom_gradient
def logaddexp_numpy_forward(a, b):  # right eagerly; the forward pass cannot run inside a tf.function
    y = tf.constant(np.logaddexp(a.numpy(), b.numpy()))
    return y, lambda dy: (dy * tf.sigmoid(a - b), dy * tf.sigmoid(b - a))


@tf.custom_gradient
def logaddexp_with_library_value(a, b):  # reduce_logsumexp's value inside a custom gradient: passes
    y = tf.math.reduce_logsumexp(tf.stack([a, b]), axis=0)
    return y, lambda dy: (dy * tf.sigmoid(a - b), dy * tf.sigmoid(b - a))


@tf.custom_gradient
def logaddexp_docstring(a, b):  # wrong: the formula of tf.custom_gradient's documentation
    e = tf.exp(a - b)
    return _logaddexp_value(a, b), lambda dy: (dy * (1 - 1 / (1 + e)), dy / (1 + e))


@tf.custom_gradient
def logaddexp_where_in_grad_fn(a, b):  # first derivative right, second NaN: the where trap one level up
    def sigmoid(t):
        return tf.where(t >= 0, 1 / (1 + tf.exp(-t)), tf.exp(t) / (1 + tf.exp(t)))
    return _logaddexp_value(a, b), lambda dy: (dy * sigmoid(a - b), dy * sigmoid(b - a))


@tf.custom_gradient
def logaddexp_numpy_gradient(a, b):  # wrong: the second derivative is None
    def grad_fn(dy):
        d = (a - b).numpy().astype(np.float64)
        return (dy * tf.constant(ch04._sigmoid(d), dy.dtype), dy * tf.constant(ch04._sigmoid(-d), dy.dtype))
    return _logaddexp_value(a, b), grad_fn


@tf.custom_gradient
def logaddexp_one_gradient(a, b):  # wrong: one gradient for two inputs
    return _logaddexp_value(a, b), lambda dy: dy * tf.sigmoid(a - b)


@tf.custom_gradient
def logaddexp_none_for_b(a, b):  # wrong: None for b
    return _logaddexp_value(a, b), lambda dy: (dy * tf.sigmoid(a - b), None)


@tf.custom_gradient
def logaddexp_without_dy(a, b):  # wrong: ignores the upstream gradient
    return _logaddexp_value(a, b), lambda dy: (tf.sigmoid(a - b), tf.sigmoid(b - a))


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("answer", [logaddexp, logaddexp_with_library_value], ids=["reference", "library_value"])
def test_ex2_custom_gradients_pass(answer, lang):
    feedback = exercises.check("ch04-ex2", answer, lang=lang)
    assert feedback.passed, feedback.message
    assert "100" in feedback.message
    assert ("also right inside a tf.function" if lang == "en" else "在 tf.function 内部也正确") in feedback.message


@pytest.mark.parametrize("answer", [logaddexp_where_softplus, logaddexp_double_where], ids=["softplus", "double_where"])
def test_ex2_right_numbers_by_plain_autodiff_are_refused(answer):
    feedback = exercises.check("ch04-ex2", answer)
    assert not feedback.passed
    assert feedback.key == "ch04.no_custom"
    zh = exercises.check("ch04-ex2", answer, lang="zh")
    assert not zh.passed
    assert zh.key == "ch04.no_custom"


def test_ex2_second_derivative_through_the_closed_over_value():
    # grad_fn = dy * exp(a - y): right first derivatives, but the outer tape differentiates y
    # through tf.maximum and tf.abs, whose conventions at a = b give 0 instead of 1/4
    feedback = exercises.check("ch04-ex2", logaddexp_closed_over_y)
    assert feedback.message.startswith("at a = 0, b = 0 your second derivative is 0; expected 0.25. ")
    assert feedback.key == "ch04.second_kink"
    zh = exercises.check("ch04-ex2", logaddexp_closed_over_y, lang="zh")
    assert zh.message.startswith("在 a = 0，b = 0 处，你的二阶导数为 0，应为 0.25。") and zh.key == "ch04.second_kink"


def test_ex2_swapped_gradients():
    feedback = exercises.check("ch04-ex2", logaddexp_swapped)
    assert feedback.message.startswith("at a = 100, b = 0 your gradient for a is 0; expected 1. ")
    assert feedback.key == "ch04.swapped"
    assert exercises.check("ch04-ex2", logaddexp_swapped, lang="zh").key == "ch04.swapped"


def test_ex2_forward_that_cannot_run_in_a_function():
    feedback = exercises.check("ch04-ex2", logaddexp_numpy_forward)
    assert feedback.message.startswith("inside a tf.function (the check runs your function there once")
    assert "no attribute 'numpy'" in feedback.message and feedback.key == "ch04.symbolic"
    zh = exercises.check("ch04-ex2", logaddexp_numpy_forward, lang="zh")
    assert zh.message.startswith("在 tf.function 内部") and zh.key == "ch04.symbolic"


def test_ex2_naive_value_overflows():
    with np.errstate(all="ignore"):
        feedback = exercises.check("ch04-ex2", logaddexp_naive)
    assert feedback.message.startswith("at a = 100, b = 0 your value is inf; expected 100. ")
    assert feedback.key == "ch04.overflow"


@pytest.mark.parametrize("answer", [logaddexp_autodiff, tf.experimental.numpy.logaddexp], ids=["formula", "tnp"])
def test_ex2_autodiff_of_the_stable_forward_is_wrong_at_the_tie(answer):
    # likely wrong answer 1: no custom gradient, autodiff through the kinks of maximum and abs
    feedback = exercises.check("ch04-ex2", answer)
    assert feedback.message.startswith("at a = 0, b = 0 your gradient for a is 1; expected 0.5.")
    assert feedback.key == "ch04.half"
    zh = exercises.check("ch04-ex2", answer, lang="zh")
    assert zh.message.startswith("在 a = 0，b = 0 处，你对 a 的梯度为 1，应为 0.5。") and zh.key == "ch04.half"


@pytest.mark.parametrize("answer, at", [(logaddexp_one_minus, "a = 0, b = -30 your gradient for b is 0; "
                                                               "expected 9.35762e-14."),
                                        (logaddexp_docstring, "a = -20, b = 0 your gradient for a is 0; "
                                                              "expected 2.06115e-09.")],
                         ids=["1-sigmoid", "docstring"])
def test_ex2_cancellation_is_explained(answer, at):
    # likely wrong answer 2: a small gradient computed as 1 minus something close to 1
    feedback = exercises.check("ch04-ex2", answer)
    assert feedback.message.startswith("at " + at)
    assert "the relative error is 100%" in feedback.message and feedback.key == "ch04.cancel"
    zh = exercises.check("ch04-ex2", answer, lang="zh")
    assert "相对误差为 100%" in zh.message and zh.key == "ch04.cancel"


def test_ex2_where_without_custom_gradient_points_to_the_where_trap():
    # likely wrong answer 3: tf.where over two stable branches; NaN from the branch not chosen
    feedback = exercises.check("ch04-ex2", logaddexp_where)
    assert feedback.message.startswith("at a = 100, b = 0 your gradient for a is nan; expected 1.")
    assert feedback.key == "ch04.where_trap"


def test_ex2_overflowing_custom_gradient():
    feedback = exercises.check("ch04-ex2", logaddexp_exp_ratio)
    assert feedback.message.startswith("at a = 100, b = 0 your gradient for a is nan; expected 1. ")
    assert feedback.key == "ch04.gradient_overflow"


def test_ex2_overflowing_second_derivative():
    feedback = exercises.check("ch04-ex2", logaddexp_where_in_grad_fn)
    assert "your second derivative is nan" in feedback.message
    assert feedback.key == "ch04.second_overflow"
    assert exercises.check("ch04-ex2", logaddexp_where_in_grad_fn, lang="zh").key == "ch04.second_overflow"


def test_ex2_numpy_in_grad_fn():
    feedback = exercises.check("ch04-ex2", logaddexp_numpy_gradient)
    assert feedback.key == "ch04.second_none"
    assert exercises.check("ch04-ex2", logaddexp_numpy_gradient, lang="zh").key == "ch04.second_none"


def test_ex2_gradient_count():
    feedback = exercises.check("ch04-ex2", logaddexp_one_gradient)
    assert feedback.key == "ch04.gradient_count" and "(a, b)" in feedback.message
    feedback = exercises.check("ch04-ex2", logaddexp_none_for_b)
    assert feedback.key == "ch04.none_for" and feedback.message.startswith("the gradient for b ")
    zh = exercises.check("ch04-ex2", logaddexp_none_for_b, lang="zh")
    assert zh.key == "ch04.none_for" and zh.message.startswith("对 b 的梯度")


def test_ex2_ignoring_dy():
    feedback = exercises.check("ch04-ex2", logaddexp_without_dy)
    assert feedback.message.startswith("at a = 1, b = -1 with upstream gradient 3 your gradient is 0.880797; "
                                       "expected 2.64239.")
    assert feedback.key == "ch04.upstream"


def test_ex2_reference_values_are_independent():
    a, b = ch04.LOGADDEXP_A.astype(np.float64), ch04.LOGADDEXP_B.astype(np.float64)
    d = np.clip(a - b, -700, 700)
    np.testing.assert_allclose(ch04._sigmoid(a - b), 1 / (1 + np.exp(-d)), rtol=1e-12)
    pairs = set(zip(a.tolist(), b.tolist()))
    assert {(0.0, 0.0), (100.0, 0.0), (0.0, 100.0), (-20.0, 0.0), (0.0, -30.0)} <= pairs


# -- ch04-ex3: clip_gradient_rows --------------------------------------------------------

clip_gradient_rows = reference("ch04-ex3")  # the chapter's own solution
clip_whole_norm = wrong_answer("ch04-ex3", "tf.clip_by_norm without axes")
clip_by_value = wrong_answer("ch04-ex3", "tf.clip_by_value")
clip_forward = wrong_answer("ch04-ex3", "clipped in the forward pass")
clip_zero_row_nan = wrong_answer("ch04-ex3", "0/0 in a zero row")
clip_without_keepdims = wrong_answer("ch04-ex3", "norms without keepdims")


@tf.custom_gradient
def clip_rows_by_hand(x, max_norm):  # also right: max_norm / 0 = inf, and the minimum is 1
    return tf.identity(x), lambda dy: (dy * tf.minimum(1.0, max_norm / tf.norm(dy, axis=1, keepdims=True)), None)


def clip_identity(x, max_norm):  # wrong: a plain identity (autodiff cannot clip)
    return tf.identity(x)


@tf.custom_gradient
def clip_one_gradient(x, max_norm):  # wrong: no None for max_norm
    return tf.identity(x), lambda dy: tf.clip_by_norm(dy, max_norm, axes=[1])


@tf.custom_gradient
def clip_normalize(x, max_norm):  # wrong: every row rescaled to the limit (and 0/0 in the zero row)
    return tf.identity(x), lambda dy: (dy * max_norm / tf.norm(dy, axis=1, keepdims=True), None)


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("answer", [clip_gradient_rows, clip_rows_by_hand], ids=["clip_by_norm", "by_hand"])
def test_ex3_correct_answers_pass(answer, lang):
    feedback = exercises.check("ch04-ex3", answer, lang=lang)
    assert feedback.passed, feedback.message
    assert ("2, 0.5" if lang == "en" else "2、0.5") in feedback.message


def test_ex3_whole_norm():
    feedback = exercises.check("ch04-ex3", clip_whole_norm)
    assert feedback.message.startswith("max_norm = 2, row 0 of dy = [3., 4., 0.] (norm 5): your gradient row is ")
    assert feedback.key == "ch04.whole_norm" and "axes=[1]" in feedback.message


def test_ex3_by_value():
    feedback = exercises.check("ch04-ex3", clip_by_value)
    assert "your gradient row is [2., 2., 0.]; expected [1.2, 1.6, 0. ]." in feedback.message
    assert feedback.key == "ch04.by_value"
    zh = exercises.check("ch04-ex3", clip_by_value, lang="zh")
    assert zh.message.startswith("max_norm = 2，dy 的第 0 行 = [3., 4., 0.]（范数为 5）时，") and zh.key == "ch04.by_value"


def test_ex3_clipping_the_forward_pass():
    feedback = exercises.check("ch04-ex3", clip_forward)
    assert feedback.message.startswith("at row 0 your value is ")
    assert feedback.key == "ch04.forward_clipped"


def test_ex3_plain_identity_is_not_clipped():
    # like the stub's backward `(dy, None)` kept, declared with the check
    for lang in ("en", "zh"):
        assert exercises.check("ch04-ex3", clip_identity, lang=lang).key == "ch04.not_clipped"


def test_ex3_gradient_count():
    feedback = exercises.check("ch04-ex3", clip_one_gradient)
    assert feedback.key == "ch04.gradient_count" and "(x, max_norm)" in feedback.message
    assert "expected to return 2 gradients, but returned 1" in feedback.message


def test_ex3_scaled_up_zero_row_and_keepdims():
    assert exercises.check("ch04-ex3", clip_normalize).key == "ch04.scaled_up"
    zero = exercises.check("ch04-ex3", clip_zero_row_nan)
    assert zero.message.startswith("max_norm = 2, row 2 of dy = [0., 0., 0.] (norm 0): your gradient row is [nan, nan, nan]")
    assert zero.key == "ch04.zero_row"
    keepdims = exercises.check("ch04-ex3", clip_without_keepdims)
    assert keepdims.message.startswith("your code raised InvalidArgumentError: Incompatible shapes: [5,3] vs. [5]. ")
    assert keepdims.key == "ch04.keepdims"


def test_ex3_references_are_independent():
    dy = ch04.CLIP_UPSTREAM.astype(np.float64)
    clipped = ch04._clip_rows(dy, 2.0)
    np.testing.assert_allclose(clipped, tf.clip_by_norm(dy, 2.0, axes=[1]).numpy(), rtol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(clipped, axis=1), [2.0, 0.5, 0.0, 2.0, np.sqrt(3.0)], rtol=1e-7)


@pytest.mark.parametrize("exercise_id, answer", [
    ("ch04-ex1", lambda x, bits: x * float("nan")),
    ("ch04-ex2", lambda a, b: a * float("nan")),
    ("ch04-ex3", lambda x, c: x * float("nan")),
])
def test_nan_answers_are_rejected(exercise_id, answer):
    feedback = exercises.check(exercise_id, answer)
    assert not feedback.passed and "nan" in feedback.message


def test_grad_fn_that_raises_is_reported():
    @tf.custom_gradient
    def broken(a, b):
        def grad_fn(dy):
            raise RuntimeError("backward exploded")
        return _logaddexp_value(a, b), grad_fn
    feedback = exercises.check("ch04-ex2", broken)
    assert feedback.message == "your code raised RuntimeError: backward exploded"
