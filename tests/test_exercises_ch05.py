"""Chapter 5's exercise checks: ch05-ex1 (clipped binary sign), ch05-ex2 (DoReFa weights),
ch05-ex3 (ApproxSign).

Each check must accept the reference solution (and reasonable variants),
reject the typical wrong answers with a specific message in both languages,
and turn hostile answers into feedback, never an exception.
"""

import numpy as np
import pytest
import tensorflow as tf

import gradlib
from gradlib import exercises
from gradlib.exercises import ch05


def plus_minus_one(x):
    return tf.where(x >= 0, 1.0, -1.0)


# -- reference solutions (as in the chapter) and variants -------------------------

def binary_sign(x, clip):
    t = tf.clip_by_value(x, -clip, clip)
    return t + tf.stop_gradient(plus_minus_one(x) - t)


def binary_sign_custom(x, clip):
    @tf.custom_gradient
    def op(v):
        return plus_minus_one(v), lambda dy: dy * tf.cast(tf.abs(v) <= clip, dy.dtype)
    return op(x)


def binary_sign_gradlib(x, clip):
    return gradlib.ste_sign(x, clip=clip)


def dorefa_weights(w, bits):
    t = tf.tanh(w)
    return 2 * gradlib.dorefa_quantize(t / (2 * tf.reduce_max(tf.abs(t))) + 0.5, bits) - 1


def dorefa_weights_by_hand(w, bits):  # the stop_gradient trick on the rounding, no gradlib
    t = tf.tanh(w)
    u = t / (2 * tf.reduce_max(tf.abs(t))) + 0.5
    n = 2.0 ** bits - 1
    return 2 * (u + tf.stop_gradient(tf.round(u * n) / n - u)) - 1


def dorefa_weights_stopped_max(w, bits):
    t = tf.tanh(w)
    return 2 * gradlib.dorefa_quantize(t / (2 * tf.stop_gradient(tf.reduce_max(tf.abs(t)))) + 0.5, bits) - 1


def approx_sign(x):
    a = tf.clip_by_value(x, -1.0, 1.0)
    g = 2 * a - a * tf.abs(a)
    return g + tf.stop_gradient(plus_minus_one(x) - g)


@tf.custom_gradient
def approx_sign_custom(x):
    return plus_minus_one(x), lambda dy: dy * tf.maximum(0.0, 2 - 2 * tf.abs(x))


# -- ch05-ex1 ---------------------------------------------------------------------

@pytest.mark.parametrize("answer", [binary_sign, binary_sign_custom, binary_sign_gradlib])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_ex1_correct_answers_pass(answer, lang):
    feedback = exercises.check("ch05-ex1", answer, lang=lang)
    assert feedback.passed, feedback.message
    assert "sign(0) = +1" in feedback.message


# The three most likely wrong answers of ex1, each with its own message in both languages.

def test_ex1_unclipped_ste_is_named():
    feedback = exercises.check("ch05-ex1", lambda x, clip: gradlib.ste_sign(x))
    assert not feedback.passed
    assert feedback.message.startswith("with clip = 1, at x = 1.5: your gradient is 1; expected 0. "
                                       "Your gradient is 1 everywhere, also where |x| > clip: that is the plain "
                                       "straight-through estimator.")
    zh = exercises.check("ch05-ex1", lambda x, clip: gradlib.ste_sign(x), lang="zh")
    assert zh.message.startswith("当 clip = 1 时，在 x = 1.5 处，你的梯度为 1，应为 0。你的梯度处处为 1")
    assert "这是普通的直通估计器" in zh.message and "被阻断" in zh.message


def test_ex1_tf_sign_at_zero_is_named():
    def tf_sign_ste(x, clip):
        t = tf.clip_by_value(x, -clip, clip)
        return t + tf.stop_gradient(tf.sign(x) - t)

    for answer in (tf_sign_ste, lambda x, clip: tf.grad_pass_through(tf.sign)(x)):
        feedback = exercises.check("ch05-ex1", answer)
        assert not feedback.passed
        assert feedback.message == ("with clip = 1, at x = 0: your value is 0; expected +1: sign(0) must be +1 "
                                    "in a binary network (tf.sign(0) = 0 would be a third value).")
        zh = exercises.check("ch05-ex1", answer, lang="zh").message
        assert zh == "当 clip = 1 时，在 x = 0 处，你的前向值为 0，应为 +1：二值网络中 sign(0) 必须是 +1（tf.sign(0) = 0 会引入第三个值）。"


def test_ex1_strict_boundary_is_named():
    def strict(x, clip):
        t = tf.where(tf.abs(x) < clip, x, tf.stop_gradient(x))
        return t + tf.stop_gradient(plus_minus_one(x) - t)

    feedback = exercises.check("ch05-ex1", strict)
    assert not feedback.passed
    assert feedback.message.startswith("with clip = 1, at x = 1: your gradient is 0; expected 1. "
                                       "At x = ±clip the gradient must still pass (1)")
    assert "the boundary included" in feedback.message and "A strict |x| < clip blocks it" in feedback.message
    zh = exercises.check("ch05-ex1", strict, lang="zh").message
    assert zh.startswith("当 clip = 1 时，在 x = 1 处，你的梯度为 0，应为 1。在 x = ±clip 处梯度仍应通过")
    assert "严格不等式 |x| < clip" in zh


def test_ex1_blocked_point_says_blocked_not_clipped_in_chinese():
    # 阻断 (blocked), not 截断 (clipped): the gradient is zero there, not bounded
    def too_wide(x, clip):
        return binary_sign(x, 2 * clip)

    feedback = exercises.check("ch05-ex1", too_wide)
    assert feedback.message.startswith("with clip = 1, at x = 1.5: your gradient is 1; expected 0. "
                                       "Because |x| = 1.5 > clip = 1, the gradient must be blocked (0).")
    zh = exercises.check("ch05-ex1", too_wide, lang="zh").message
    assert zh.endswith("因为 |x| = 1.5 > clip = 1，梯度应被阻断（为 0）。") and "截断" not in zh


def test_ex1_ignoring_the_clip_argument_fails_for_another_clip():
    feedback = exercises.check("ch05-ex1", lambda x, clip: binary_sign(x, 1.0))
    assert not feedback.passed
    assert feedback.message.startswith("with clip = 0.5, at x = 1: your gradient is 1; expected 0.")
    assert "|x| = 1 > clip = 0.5" in feedback.message


@pytest.mark.parametrize("answer, kind", [(lambda x, clip: plus_minus_one(x), "None"),
                                          (lambda x, clip: tf.sign(x) + tf.stop_gradient(plus_minus_one(x) - tf.sign(x)),
                                           "0")])
def test_ex1_no_surrogate_gets_the_hint(answer, kind):
    feedback = exercises.check("ch05-ex1", answer)
    assert not feedback.passed
    assert f"your gradient is {kind} everywhere" in feedback.message and "tf.stop_gradient" in feedback.message
    assert f"你的梯度处处为 {kind}" in exercises.check("ch05-ex1", answer, lang="zh").message


def test_ex1_wrong_forward_elsewhere_is_reported():
    feedback = exercises.check("ch05-ex1", lambda x, clip: tf.clip_by_value(x, -clip, clip))
    assert not feedback.passed
    assert feedback.message.startswith("with clip = 1, at x = 0: your value is 0; expected +1")
    feedback = exercises.check("ch05-ex1", lambda x, clip: binary_sign(x, clip) * 0.5)
    assert feedback.message == ("with clip = 1, at x = 0: your value is 0.5; expected +1: sign(0) must be +1 "
                                "in a binary network (tf.sign(0) = 0 would be a third value).")
    feedback = exercises.check("ch05-ex1", lambda x, clip: -binary_sign(-x, clip))
    assert feedback.message.startswith("with clip = 1, at x = 0: your value is -1; expected +1")


def test_ex1_ignoring_the_upstream_gradient_is_rejected():
    def ignores_dy(x, clip):
        @tf.custom_gradient
        def op(v):
            return plus_minus_one(v), lambda dy: tf.cast(tf.abs(v) <= clip, dy.dtype)
        return op(x)

    feedback = exercises.check("ch05-ex1", ignores_dy)
    assert not feedback.passed
    assert "upstream gradient of 2.5" in feedback.message and "expected 2.5" in feedback.message
    assert "上游梯度为 2.5" in exercises.check("ch05-ex1", ignores_dy, lang="zh").message


def test_ex1_vector_only_answer_gets_a_shape_message():
    feedback = exercises.check("ch05-ex1", lambda x, clip: binary_sign(tf.reshape(x, [-1]), clip))
    assert not feedback.passed and "shape [36]; expected [6, 6]" in feedback.message


def test_ex1_reference_matches_gradlib():
    x = ch05.SIGN_POINTS
    for clip in ch05.CLIPS:
        value, grad = ch05.binary_sign_reference(x, clip)
        y, dydx = gradlib.curves(lambda v: gradlib.ste_sign(v, clip=clip), x)
        np.testing.assert_array_equal(y, value)
        np.testing.assert_array_equal(dydx, grad)
    assert {0.0, 0.5, -0.5, 1.0, -1.0, 2.0, -2.0} <= set(x.tolist())  # 0 and every ±clip


# -- ch05-ex2 ---------------------------------------------------------------------

@pytest.mark.parametrize("answer", [dorefa_weights, dorefa_weights_by_hand])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_ex2_correct_answers_pass(answer, lang):
    feedback = exercises.check("ch05-ex2", answer, lang=lang)
    assert feedback.passed, feedback.message
    assert "1, 2, 3, 8" in feedback.message


def test_ex2_the_experiment_quantizer_passes():
    from gradlib import experiments

    assert exercises.check("ch05-ex2", lambda w, bits: experiments.quantize_weights(w, "kbit", bits)).passed


def test_ex2_a_stopped_maximum_is_accepted_and_named():
    feedback = exercises.check("ch05-ex2", dorefa_weights_stopped_max)
    assert feedback.passed, feedback.message
    assert "stopped the gradient through max|tanh w|" in feedback.message
    assert "停止了经过 max|tanh w| 的梯度" in exercises.check("ch05-ex2", dorefa_weights_stopped_max, lang="zh").message


def test_ex2_straight_through_the_whole_quantizer_is_named():
    answer = lambda w, bits: tf.grad_pass_through(lambda v: dorefa_weights(v, bits))(w)  # noqa: E731
    feedback = exercises.check("ch05-ex2", answer)
    assert not feedback.passed
    assert feedback.message.startswith("with bits = 1, your gradient is the upstream gradient unchanged")
    assert "你让梯度直通了整个量化器" in exercises.check("ch05-ex2", answer, lang="zh").message


def test_ex2_straight_through_by_the_trick_on_the_whole_quantizer_is_named():
    def whole(w, bits):  # the stop_gradient trick around everything, the likelier way to write it
        return w + tf.stop_gradient(dorefa_weights(w, bits) - w)

    feedback = exercises.check("ch05-ex2", whole)
    assert feedback.message.startswith("with bits = 1, your gradient is the upstream gradient unchanged: you "
                                       "passed it straight through the whole quantizer.")
    assert exercises.check("ch05-ex2", whole, lang="zh").message.startswith(
        "当 bits = 1 时，你的梯度与上游梯度完全相同：你让梯度直通了整个量化器。")


def test_ex2_plain_round_gets_the_no_gradient_hint():
    def no_ste(w, bits):
        t = tf.tanh(w)
        n = 2.0 ** bits - 1
        return 2 * tf.round((t / (2 * tf.reduce_max(tf.abs(t))) + 0.5) * n) / n - 1

    feedback = exercises.check("ch05-ex2", no_ste)
    assert not feedback.passed and "your gradient is None everywhere" in feedback.message


def test_ex2_rounding_ties_up_is_explained():
    def half_up(w, bits):
        t = tf.tanh(w)
        u = t / (2 * tf.reduce_max(tf.abs(t))) + 0.5
        n = 2.0 ** bits - 1
        return 2 * (u + tf.stop_gradient(tf.floor(u * n + 0.5) / n - u)) - 1

    feedback = exercises.check("ch05-ex2", half_up)
    assert not feedback.passed
    assert feedback.message == ("with bits = 1, at w[0, 0] = 0: your value is 1; expected -1. Here n u = 0.5 is a "
                                "rounding tie: tf.round rounds ties to the even integer (0), floor(n u + 1/2) "
                                "rounds them up.")
    zh = exercises.check("ch05-ex2", half_up, lang="zh").message
    assert zh == ("当 bits = 1 时，在 w[0, 0] = 0 处，你的前向值为 1，应为 -1。此处 n u = 0.5 恰好位于两个整数正中："
                  "tf.round 取偶数（0），而 floor(n u + 1/2) 向上取整。")


def dorefa_with_scale(scale, affine=True):
    """A DoReFa answer with the maximum computed by ``scale(w, tanh w)``: the typical wrong maxima."""
    def answer(w, bits):
        t = tf.tanh(w)
        q = gradlib.dorefa_quantize(t / (2 * scale(w, t)) + 0.5, bits)
        return 2 * q - 1 if affine else q
    return answer


WRONG_MAXIMA = [
    (lambda w, t: tf.reduce_max(tf.abs(w)), "You divided tanh w by max|w|.", "你用 max|w| 去除 tanh w。"),
    (lambda w, t: tf.reduce_max(t), "You divided by max(tanh w), without the absolute value.",
     "你除以的是不带绝对值的 max(tanh w)。"),
    (lambda w, t: tf.reduce_max(tf.abs(t), axis=0), "You took the maximum along one axis",
     "你沿某一个轴取了最大值"),
    (lambda w, t: tf.reduce_max(tf.abs(t), axis=1, keepdims=True), "You took the maximum along one axis",
     "你沿某一个轴取了最大值"),
    (lambda w, t: tf.reduce_max(tf.abs(t), axis=-1, keepdims=True), "You took the maximum along one axis",
     "你沿某一个轴取了最大值"),
]


@pytest.mark.parametrize("scale, en, zh", WRONG_MAXIMA)
def test_ex2_the_wrong_maximum_is_named(scale, en, zh):
    answer = dorefa_with_scale(scale)
    feedback = exercises.check("ch05-ex2", answer)
    assert not feedback.passed
    assert feedback.message.startswith("with bits = 1, at w[") and en in feedback.message, feedback.message
    chinese = exercises.check("ch05-ex2", answer, lang="zh").message
    assert chinese.startswith("当 bits = 1 时，在 w[") and zh in chinese, chinese


def test_ex2_the_wrong_maximum_is_named_with_a_hand_written_rounding_too():
    def max_of_w(w, bits):  # the stop_gradient trick instead of gradlib.dorefa_quantize
        u = tf.tanh(w) / (2 * tf.reduce_max(tf.abs(w))) + 0.5
        n = 2.0 ** bits - 1
        return 2 * (u + tf.stop_gradient(tf.round(u * n) / n - u)) - 1

    assert "You divided tanh w by max|w|." in exercises.check("ch05-ex2", max_of_w).message


def test_ex2_the_largest_weight_is_negative_as_the_no_abs_message_says():
    assert ch05.DOREFA_W.flat[np.argmax(np.abs(ch05.DOREFA_W))] < 0


def test_ex2_forgetting_2q_minus_1_is_named():
    answer = dorefa_with_scale(lambda w, t: tf.reduce_max(tf.abs(t)), affine=False)
    feedback = exercises.check("ch05-ex2", answer)
    assert not feedback.passed
    assert feedback.message.endswith("Your values lie in [0, 1]: that is q_k(u). DoReFa's weights are "
                                     "2 q_k(u) - 1, in [-1, 1].")
    assert exercises.check("ch05-ex2", answer, lang="zh").message.endswith(
        "你的值落在 [0, 1] 中：那是 q_k(u)。DoReFa 的权重是 2 q_k(u) - 1，取值在 [-1, 1] 中。")


def test_ex2_too_many_levels_are_explained():
    feedback = exercises.check("ch05-ex2", lambda w, bits: dorefa_weights(w, bits + 1))
    assert not feedback.passed
    assert feedback.message.startswith("with bits = 1, at w[0, 1] = ")
    assert "2^bits = 2 values" in feedback.message and "n = 2^bits - 1 = 1" in feedback.message
    zh = exercises.check("ch05-ex2", lambda w, bits: dorefa_weights(w, bits + 1), lang="zh").message
    assert "2^bits = 2 个值" in zh and "而不是 2^bits" in zh


def test_ex2_missing_tanh_is_a_gradient_mismatch_with_the_formula():
    def no_tanh(w, bits):
        u = w / (2 * tf.reduce_max(tf.abs(w))) + 0.5
        return 2 * gradlib.dorefa_quantize(u, bits) - 1

    feedback = exercises.check("ch05-ex2", no_tanh)
    assert not feedback.passed
    assert "your gradient is" in feedback.message and "du/dw" in feedback.message


def test_ex2_open_interval_at_the_largest_weight_is_explained():
    # With the maximum differentiated, u = 1/2 ± 1/2 is constant at the largest weight and the
    # interval's ends do not matter; with a stopped maximum they do.
    def open_interval(w, bits):
        t = tf.tanh(w)
        u = t / (2 * tf.stop_gradient(tf.reduce_max(tf.abs(t)))) + 0.5
        n = 2.0 ** bits - 1

        @tf.custom_gradient
        def quantize(v):
            inside = tf.cast((v > 0) & (v < 1), v.dtype)
            return tf.round(tf.clip_by_value(v, 0.0, 1.0) * n) / n, lambda dy: dy * inside
        return 2 * quantize(u) - 1

    feedback = exercises.check("ch05-ex2", open_interval)
    assert not feedback.passed
    largest = np.unravel_index(np.argmax(np.abs(ch05.DOREFA_W)), ch05.DOREFA_W.shape)
    assert feedback.message.startswith(f"with bits = 1, at w[{largest[0]}, {largest[1]}] = ")
    assert "your gradient is 0;" in feedback.message
    assert "largest |tanh w|" in feedback.message and "closed interval" in feedback.message


def test_ex2_reference_agrees_with_a_tape():
    w, dy = ch05.DOREFA_W, ch05.DOREFA_UPSTREAM
    for bits in ch05.BITS:
        value, grad, _ = ch05.dorefa_weights_reference(w, bits, dy)
        wt = tf.constant(w)
        with tf.GradientTape() as tape:
            tape.watch(wt)
            y = dorefa_weights(wt, bits)
        np.testing.assert_allclose(y.numpy(), value, atol=1e-6)
        np.testing.assert_allclose(tape.gradient(y, wt, output_gradients=dy).numpy(), grad, rtol=1e-4, atol=1e-5)
    assert w[0, 0] == 0 and len(np.unique(np.abs(w))) == w.size  # one tie, one unique maximum


# -- ch05-ex3 ---------------------------------------------------------------------

@pytest.mark.parametrize("answer", [approx_sign, approx_sign_custom,
                                    lambda x: gradlib.sign_with_surrogate(x, "approx_sign")])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_ex3_correct_answers_pass(answer, lang):
    feedback = exercises.check("ch05-ex3", answer, lang=lang)
    assert feedback.passed, feedback.message


@pytest.mark.parametrize("surrogate", ["identity", "tanh", "swish_sign"])
def test_ex3_other_surrogates_fail_at_zero(surrogate):
    feedback = exercises.check("ch05-ex3", lambda x: gradlib.sign_with_surrogate(x, surrogate))
    assert not feedback.passed
    assert feedback.message.startswith("at x = 0: your gradient is ")
    assert "expected 2. ApproxSign's derivative is 2 - 2|x| = 2 for |x| ≤ 1." in feedback.message


# The three most likely wrong answers of ex3, each with its own message in both languages.

def unclipped_quadratic(x):
    return gradlib.straight_through(plus_minus_one, lambda v: 2 * v - v * tf.abs(v))(x)


@tf.custom_gradient
def no_maximum(x):  # max(0, .) forgotten in a grad_fn
    return plus_minus_one(x), lambda dy: dy * (2 - 2 * tf.abs(x))


@pytest.mark.parametrize("answer", [unclipped_quadratic, no_maximum])
def test_ex3_missing_clip_is_named(answer):
    feedback = exercises.check("ch05-ex3", answer)
    assert not feedback.passed
    assert feedback.message == ("at x = 1.5: your gradient is -1; expected 0. Your gradient is 2 - 2|x| everywhere, "
                                "negative for |x| > 1. F is flat (±1) outside [-1, 1], so F'(x) = max(0, 2 - 2|x|) "
                                "is 0 there: clip x to [-1, 1] before the polynomial, or take the maximum with 0.")
    zh = exercises.check("ch05-ex3", answer, lang="zh").message
    assert zh.startswith("在 x = 1.5 处，你的梯度为 -1，应为 0。你的梯度处处为 2 - 2|x|，在 |x| > 1 处为负。")


def one_piece(piece):
    def answer(x):
        return gradlib.straight_through(plus_minus_one, lambda v: piece(tf.clip_by_value(v, -1.0, 1.0)))(x)
    return answer


@pytest.mark.parametrize("piece, where, formula", [(lambda a: 2 * a - a * a, "at x = -0.5: your gradient is 3; "
                                                    "expected 1.", "2 - 2x"),
                                                   (lambda a: 2 * a + a * a, "at x = 0.5: your gradient is 3; "
                                                    "expected 1.", "2 + 2x")])
def test_ex3_one_piece_on_both_sides_is_named(piece, where, formula):
    feedback = exercises.check("ch05-ex3", one_piece(piece))
    assert not feedback.passed
    assert feedback.message.startswith(f"{where} On [-1, 1] your gradient is {formula}, the derivative of ")
    assert "together 2 - 2|x|" in feedback.message
    zh = exercises.check("ch05-ex3", one_piece(piece), lang="zh").message
    assert f"在 [-1, 1] 上你的梯度为 {formula}" in zh and "合起来是 2 - 2|x|" in zh


def test_ex3_tf_sign_is_rejected_at_zero():
    answer = lambda x: gradlib.straight_through(tf.sign, lambda v: 2 * v - v * tf.abs(v))(  # noqa: E731
        tf.clip_by_value(x, -1.0, 1.0))
    feedback = exercises.check("ch05-ex3", answer)
    assert not feedback.passed
    assert feedback.message == ("at x = 0: your value is 0; expected +1: sign(0) must be +1 in a binary network "
                                "(tf.sign(0) = 0 would be a third value).")
    assert exercises.check("ch05-ex3", answer, lang="zh").message == (
        "在 x = 0 处，你的前向值为 0，应为 +1：二值网络中 sign(0) 必须是 +1（tf.sign(0) = 0 会引入第三个值）。")


def test_ex3_reference_matches_gradlib():
    x = ch05.APPROX_POINTS
    value, grad = ch05.approx_sign_reference(x)
    y, dydx = gradlib.curves(lambda v: gradlib.sign_with_surrogate(v, "approx_sign"), x)
    np.testing.assert_array_equal(y, value)
    np.testing.assert_allclose(dydx, grad, atol=1e-6)


# -- hostile answers, for every check ------------------------------------------------

HOSTILE = [
    (lambda *a: 1 / 0, "raised ZeroDivisionError"),
    (lambda *a: None, "returned None"),
    (lambda *a: tf.fill(tf.shape(a[0]), float("nan")), "NaN"),
    (lambda *a: a[0] * float("nan"), "NaN"),
    (lambda *a: tf.zeros([7, 7]), "shape [7, 7]; expected"),
    (lambda *a: "sign", "not a numeric tensor"),
    (lambda *a: tf.ones(tf.shape(a[0]), tf.int32), "dtype int32"),
    (lambda *a: tf.cast(a[0] > 0, tf.bool), "dtype bool"),
    (lambda: 1.0, "raised TypeError"),
    (42, "must be a function"),
    (None, "must be a function"),
]


@pytest.mark.parametrize("exercise_id", ["ch05-ex1", "ch05-ex2", "ch05-ex3"])
@pytest.mark.parametrize("answer, fragment", HOSTILE)
def test_hostile_answers_get_feedback_not_exceptions(exercise_id, answer, fragment):
    feedback = exercises.check(exercise_id, answer)
    assert not feedback.passed
    assert fragment in feedback.message, feedback.message
    zh = exercises.check(exercise_id, answer, lang="zh")
    assert not zh.passed and zh.message != feedback.message


def test_a_grad_fn_returning_garbage_is_reported():
    def broken(x, clip):
        @tf.custom_gradient
        def op(v):
            return plus_minus_one(v), lambda dy: "oops"
        return op(x)

    feedback = exercises.check("ch05-ex1", broken)
    assert not feedback.passed and "str, which is not a numeric tensor" in feedback.message


def test_ids_are_registered():
    assert {"ch05-ex1", "ch05-ex2", "ch05-ex3"} <= set(exercises.exercise_ids())


def test_every_message_has_both_languages():
    for key, texts in ch05.MESSAGES.items():
        assert set(texts) == {"en", "zh"}, key
