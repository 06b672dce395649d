"""Chapter 5's exercise checks: ch05-ex1 (clipped binary sign), ch05-ex2 (DoReFa weights),
ch05-ex3 (XNOR-Net's binary weights with the paper's gradient).

Each check must accept the reference solution (and reasonable variants),
reject the typical wrong answers with a specific message in both languages,
and turn hostile answers into feedback, never an exception.
"""

import numpy as np
import pytest
import tensorflow as tf

import gradlib
from gradlib import exercises
from test_classroom_wrong_answers import reference, wrong_answer
from gradlib.classroom.exercises import ch05
from gradlib.classroom.exercises.ch05 import _clipped, _dorefa_with_max, _mean_abs, _plus_minus_one, _xnor_with

# Feedback is asserted by its catalogue key; the message text only where it shows a filled-in
# number or placeholder (clip, bits, a point, an index, a library name) that the key cannot.
# The typical wrong answers are declared with each check (``@exercise(..., wrong_answers=...)``) and
# run by tests/test_classroom_wrong_answers.py; the tests here take them from there (:func:`declared`)
# to assert what the key cannot show.


# -- reference solutions (as in the chapter) and variants -------------------------

binary_sign = reference("ch05-ex1")  # the chapter's own solution


def binary_sign_custom(x, clip):
    @tf.custom_gradient
    def op(v):
        return _plus_minus_one(v), lambda dy: dy * tf.cast(tf.abs(v) <= clip, dy.dtype)
    return op(x)


dorefa_weights = reference("ch05-ex2")  # the chapter's own solution


def dorefa_weights_by_hand(w, bits):  # the stop_gradient trick on the rounding, no gradlib
    t = tf.tanh(w)
    u = t / (2 * tf.reduce_max(tf.abs(t))) + 0.5
    n = 2.0 ** bits - 1
    return 2 * (u + tf.stop_gradient(tf.round(u * n) / n - u)) - 1


def dorefa_weights_stopped_max(w, bits):
    t = tf.tanh(w)
    return 2 * gradlib.dorefa_quantize(t / (2 * tf.stop_gradient(tf.reduce_max(tf.abs(t)))) + 0.5, bits) - 1


xnor_paper = reference("ch05-ex3")  # the chapter's own solution


def xnor_paper_by_the_trick(w):  # a surrogate whose Jacobian is the paper's diagonal
    scale = tf.stop_gradient(tf.reduce_mean(tf.abs(w)))
    n = tf.cast(tf.size(w), w.dtype)
    surrogate = w / n + scale * tf.clip_by_value(w, -1.0, 1.0)
    return surrogate + tf.stop_gradient(_plus_minus_one(w) * scale - surrogate)


# -- ch05-ex1 ---------------------------------------------------------------------

@pytest.mark.parametrize("answer", [binary_sign, binary_sign_custom])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_ex1_correct_answers_pass(answer, lang):
    feedback = exercises.check("ch05-ex1", answer, lang=lang)
    assert feedback.passed, feedback.message
    assert "sign(0) = +1" in feedback.message
    assert ("clip 取 1、0.5 和 2 时" if lang == "zh" else "clip = 1, 0.5, 2") in feedback.message


@pytest.mark.parametrize("answer, name", [
    (wrong_answer("ch05-ex1", "gradlib.ste_sign"), "gradlib.ste_sign"),
    (lambda x, clip: gradlib.sign_with_surrogate(x, "clipped", clip=clip), "gradlib.sign_with_surrogate"),
    (lambda x, clip: gradlib.ste.ste_sign(x, clip=clip), "gradlib.ste.ste_sign"),
    (lambda x, clip: gradlib.ste.sign_with_surrogate(x, "clipped", clip=clip), "gradlib.ste.sign_with_surrogate")])
def test_ex1_the_library_op_is_refused_by_name(answer, name):
    feedback = exercises.check("ch05-ex1", answer)
    assert not feedback.passed
    assert feedback.key == "ch05.library_call" and f"it calls {name}, " in feedback.message
    zh = exercises.check("ch05-ex1", answer, lang="zh")
    assert zh.key == "ch05.library_call" and f"调用了 {name}" in zh.message
    # the library functions are themselves again afterwards
    assert gradlib.ste_sign is gradlib.ste.ste_sign
    assert gradlib.sign_with_surrogate is gradlib.ste.sign_with_surrogate
    assert gradlib.ste.ste_sign.__qualname__ == "ste_sign"  # not the check's wrapper


# The likeliest wrong answers of ex1 are declared with the check; here, what their messages show.

def test_ex1_unclipped_ste_is_named():
    # by hand, and with the library's op (whose wrong gradient is named before the call is refused)
    for answer in (wrong_answer("ch05-ex1", "clip ignored"), lambda x, clip: gradlib.ste_sign(x)):
        feedback = exercises.check("ch05-ex1", answer)
        assert feedback.message.startswith("with clip = 1, at x = 1.5: your gradient is 1; expected 0. ")
        assert feedback.key == "ch05.plain_ste"
        zh = exercises.check("ch05-ex1", answer, lang="zh")
        assert zh.message.startswith("当 clip = 1 时，在 x = 1.5 处，你的梯度为 1，应为 0。") and zh.key == "ch05.plain_ste"


def test_ex1_tf_sign_at_zero_is_named():
    for answer in (wrong_answer("ch05-ex1", "tf.sign forward"), lambda x, clip: tf.grad_pass_through(tf.sign)(x)):
        feedback = exercises.check("ch05-ex1", answer)
        assert not feedback.passed
        assert feedback.message.startswith("with clip = 1, at x = 0: your value is 0; expected +1")
        assert feedback.key == "ch05.sign_zero"
        zh = exercises.check("ch05-ex1", answer, lang="zh")
        assert zh.message.startswith("当 clip = 1 时，在 x = 0 处，你的前向值为 0，应为 +1") and zh.key == "ch05.sign_zero"


def test_ex1_x_greater_than_zero_is_named():
    strictly_positive = wrong_answer("ch05-ex1", "x > 0")
    feedback = exercises.check("ch05-ex1", strictly_positive)
    assert not feedback.passed
    assert feedback.message.startswith("with clip = 1, at x = 0: your value is -1; expected +1")
    assert feedback.key == "ch05.sign_zero_negative"
    zh = exercises.check("ch05-ex1", strictly_positive, lang="zh")
    assert zh.message.startswith("当 clip = 1 时，在 x = 0 处，你的前向值为 -1，应为 +1") and zh.key == "ch05.sign_zero_negative"


def test_ex1_strict_boundary_is_named():
    strict = wrong_answer("ch05-ex1", "strict boundary")
    feedback = exercises.check("ch05-ex1", strict)
    assert not feedback.passed
    assert feedback.message.startswith("with clip = 1, at x = 1: your gradient is 0; expected 1. ")
    assert feedback.key == "ch05.clip_boundary"
    zh = exercises.check("ch05-ex1", strict, lang="zh")
    assert zh.message.startswith("当 clip = 1 时，在 x = 1 处，你的梯度为 0，应为 1。") and zh.key == "ch05.clip_boundary"


def test_ex1_blocked_point_says_blocked_not_clipped_in_chinese():
    # 阻断 (blocked), not 截断 (clipped): the gradient is zero there, not bounded
    def too_wide(x, clip):
        return binary_sign(x, 2 * clip)

    feedback = exercises.check("ch05-ex1", too_wide)
    assert feedback.message.startswith("with clip = 1, at x = 1.5: your gradient is 1; expected 0. ")
    assert feedback.key == "ch05.clip_blocked" and "|x| = 1.5 > clip = 1" in feedback.message
    zh = exercises.check("ch05-ex1", too_wide, lang="zh")
    assert zh.key == "ch05.clip_blocked" and "截断" not in zh.message  # the wording itself is the point here


def test_ex1_ignoring_the_clip_argument_fails_for_another_clip():
    feedback = exercises.check("ch05-ex1", lambda x, clip: binary_sign(x, 1.0))
    assert not feedback.passed
    assert feedback.message.startswith("with clip = 0.5, at x = 1: your gradient is 1; expected 0.")
    assert feedback.key == "ch05.clip_blocked" and "|x| = 1 > clip = 0.5" in feedback.message


@pytest.mark.parametrize("answer, kind", [(wrong_answer("ch05-ex1", "no straight-through"), "None"),
                                          (lambda x, clip: tf.sign(x) + tf.stop_gradient(_plus_minus_one(x) - tf.sign(x)),
                                           "0")])
def test_ex1_no_surrogate_gets_the_hint(answer, kind):
    feedback = exercises.check("ch05-ex1", answer)
    assert not feedback.passed
    assert feedback.key == "ch05.no_gradient" and f"your gradient is {kind} everywhere" in feedback.message
    zh = exercises.check("ch05-ex1", answer, lang="zh")
    assert zh.key == "ch05.no_gradient" and f"你的梯度处处为 {kind}" in zh.message


def test_ex1_wrong_forward_elsewhere_is_reported():
    feedback = exercises.check("ch05-ex1", lambda x, clip: tf.clip_by_value(x, -clip, clip))
    assert not feedback.passed
    assert feedback.message.startswith("with clip = 1, at x = 0: your value is 0; expected +1")
    assert feedback.key == "ch05.sign_zero"
    feedback = exercises.check("ch05-ex1", lambda x, clip: binary_sign(x, clip) * 0.5)
    assert feedback.message.startswith("with clip = 1, at x = 0: your value is 0.5; expected +1")
    assert feedback.key == "ch05.sign_zero"
    feedback = exercises.check("ch05-ex1", lambda x, clip: -binary_sign(-x, clip))
    assert feedback.message.startswith("with clip = 1, at x = 0: your value is -1; expected +1")
    assert feedback.key == "ch05.sign_zero_negative"


def test_ex1_ignoring_the_upstream_gradient_is_rejected():
    ignores_dy = wrong_answer("ch05-ex1", "dy ignored")
    feedback = exercises.check("ch05-ex1", ignores_dy)
    assert not feedback.passed
    assert feedback.key == "ch05.upstream"
    assert "upstream gradient of 2.5" in feedback.message and "expected 2.5" in feedback.message


def test_ex1_vector_only_answer_gets_a_shape_message():
    feedback = exercises.check("ch05-ex1", lambda x, clip: binary_sign(tf.reshape(x, [-1]), clip))
    assert not feedback.passed and feedback.key == "common.shape" and "shape [36]; expected [6, 6]" in feedback.message


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
    assert ("bits 取 2、3 和 8 时" if lang == "zh" else "bits = 2, 3, 8") in feedback.message


def test_ex2_the_experiment_quantizer_is_refused_by_name():
    from gradlib import experiments

    feedback = exercises.check("ch05-ex2", wrong_answer("ch05-ex2", "experiments.quantize_weights"))
    assert not feedback.passed
    assert feedback.key == "ch05.library_call" and "gradlib.experiments.quantize_weights" in feedback.message
    assert feedback.message.endswith("; gradlib.dorefa_quantize is allowed.")  # the {allowed} placeholder
    assert experiments.quantize_weights.__qualname__ == "quantize_weights"  # not the check's wrapper


@pytest.mark.parametrize("exercise, answer, name", [
    ("ch05-ex1", gradlib.ste_sign, "gradlib.ste_sign"),
    ("ch05-ex1", gradlib.sign_with_surrogate, "gradlib.sign_with_surrogate"),
    ("ch05-ex2", gradlib.dorefa_weights, "gradlib.dorefa_weights"),
    ("ch05-ex2", gradlib.ste.dorefa_weights, "gradlib.dorefa_weights"),
])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_library_function_passed_itself_is_refused_by_name(exercise, answer, name, lang):
    """Passed bare (or imported under another name), the library's function is never called through
    the module attribute the check wraps; it is refused all the same."""
    feedback = exercises.check(exercise, answer, lang=lang)
    assert not feedback and feedback.key == "ch05.library_call" and name in feedback.message


def test_ex2_gradlibs_own_dorefa_weights_is_refused_by_name():
    feedback = exercises.check("ch05-ex2", wrong_answer("ch05-ex2", "gradlib.dorefa_weights"))
    assert not feedback.passed
    assert feedback.key == "ch05.library_call" and "gradlib.dorefa_weights" in feedback.message
    assert gradlib.dorefa_weights.__qualname__ == "dorefa_weights"  # not the check's wrapper


def test_ex2_a_stopped_maximum_is_accepted_and_named():
    feedback = exercises.check("ch05-ex2", dorefa_weights_stopped_max)
    assert feedback.passed, feedback.message
    assert "stopped the gradient through max|tanh w|" in feedback.message  # the {variant} placeholder: ch05.stopped_max
    assert "停止了经过 max|tanh w| 的梯度" in exercises.check("ch05-ex2", dorefa_weights_stopped_max, lang="zh").message


def test_ex2_straight_through_the_whole_quantizer_is_named():
    answer = lambda w, bits: tf.grad_pass_through(lambda v: dorefa_weights(v, bits))(w)  # noqa: E731
    feedback = exercises.check("ch05-ex2", answer)
    assert not feedback.passed
    assert feedback.message.startswith("with bits = 2, ") and feedback.key == "ch05.dorefa_identity"
    assert exercises.check("ch05-ex2", answer, lang="zh").key == "ch05.dorefa_identity"


def test_ex2_straight_through_by_the_trick_on_the_whole_quantizer_is_named():
    whole = wrong_answer("ch05-ex2", "straight through the whole quantizer")  # the likelier way to write it
    feedback = exercises.check("ch05-ex2", whole)
    assert feedback.message.startswith("with bits = 2, ") and feedback.key == "ch05.dorefa_identity"
    zh = exercises.check("ch05-ex2", whole, lang="zh")
    assert zh.message.startswith("当 bits = 2 时，") and zh.key == "ch05.dorefa_identity"


def test_ex2_plain_round_gets_the_no_gradient_hint():
    feedback = exercises.check("ch05-ex2", wrong_answer("ch05-ex2", "no straight-through"))
    assert not feedback.passed and feedback.key == "ch05.no_gradient" and "None everywhere" in feedback.message


def test_ex2_rounding_ties_up_agrees_with_tf_round_from_two_bits():
    # w = 0 gives n u = n/2 with n = 2^k - 1 odd; for k >= 2, n/2 = m + 1/2 with m odd, so rounding half
    # to even and rounding half up agree. The check uses k >= 2 only: floor(n u + 1/2) passes.
    def half_up(w, bits):
        t = tf.tanh(w)
        u = t / (2 * tf.reduce_max(tf.abs(t))) + 0.5
        n = 2.0 ** bits - 1
        return 2 * (u + tf.stop_gradient(tf.floor(u * n + 0.5) / n - u)) - 1

    assert exercises.check("ch05-ex2", half_up).passed
    assert min(ch05.BITS) >= 2


WRONG_MAXIMA = [  # the first three declared with the check
    (wrong_answer("ch05-ex2", "max|w|"), "ch05.dorefa_max_w"),
    (wrong_answer("ch05-ex2", "max without the absolute value"), "ch05.dorefa_max_sign"),
    (wrong_answer("ch05-ex2", "max along one axis"), "ch05.dorefa_max_axis"),  # axis=0
    (_dorefa_with_max(lambda w, t: tf.reduce_max(tf.abs(t), axis=1, keepdims=True)), "ch05.dorefa_max_axis"),
    (_dorefa_with_max(lambda w, t: tf.reduce_max(tf.abs(t), axis=-1, keepdims=True)), "ch05.dorefa_max_axis"),
]


@pytest.mark.parametrize("answer, key", WRONG_MAXIMA, ids=["max_w", "max_sign", "axis0", "axis1", "axis-1"])
def test_ex2_the_wrong_maximum_is_named(answer, key):
    feedback = exercises.check("ch05-ex2", answer)
    assert not feedback.passed
    assert feedback.message.startswith("with bits = 2, at w[") and feedback.key == key, feedback.message
    chinese = exercises.check("ch05-ex2", answer, lang="zh")
    assert chinese.message.startswith("当 bits = 2 时，在 w[") and chinese.key == key, chinese.message


def test_ex2_the_wrong_maximum_is_named_with_a_hand_written_rounding_too():
    def max_of_w(w, bits):  # the stop_gradient trick instead of gradlib.dorefa_quantize
        u = tf.tanh(w) / (2 * tf.reduce_max(tf.abs(w))) + 0.5
        n = 2.0 ** bits - 1
        return 2 * (u + tf.stop_gradient(tf.round(u * n) / n - u)) - 1

    assert exercises.check("ch05-ex2", max_of_w).key == "ch05.dorefa_max_w"


def test_ex2_the_maximum_without_abs_is_named_with_an_unclipped_rounding_too():
    def max_without_abs(w, bits):  # the plain trick: u is not clipped to [0, 1], and here it leaves it
        t = tf.tanh(w)
        u = t / (2 * tf.reduce_max(t)) + 0.5
        n = 2.0 ** bits - 1
        return 2 * (u + tf.stop_gradient(tf.round(u * n) / n - u)) - 1

    feedback = exercises.check("ch05-ex2", max_without_abs)
    assert not feedback.passed
    assert feedback.key == "ch05.dorefa_max_sign", feedback.message
    assert exercises.check("ch05-ex2", max_without_abs, lang="zh").key == "ch05.dorefa_max_sign"


def test_ex2_the_largest_weight_is_negative_as_the_no_abs_message_says():
    assert ch05.DOREFA_W.flat[np.argmax(np.abs(ch05.DOREFA_W))] < 0


def test_ex2_too_many_levels_are_explained():
    feedback = exercises.check("ch05-ex2", lambda w, bits: dorefa_weights(w, bits + 1))
    assert not feedback.passed
    assert feedback.message.startswith("with bits = 2, at w[0, 1] = ")
    assert feedback.key == "ch05.dorefa_levels"
    assert "2^bits = 4 values" in feedback.message and "n = 2^bits - 1 = 3" in feedback.message
    zh = exercises.check("ch05-ex2", lambda w, bits: dorefa_weights(w, bits + 1), lang="zh")
    assert zh.key == "ch05.dorefa_levels" and "2^bits = 4 个值" in zh.message


def test_ex2_missing_tanh_is_a_value_mismatch_with_the_formula():
    def no_tanh(w, bits):
        u = w / (2 * tf.reduce_max(tf.abs(w))) + 0.5
        return 2 * gradlib.dorefa_quantize(u, bits) - 1

    feedback = exercises.check("ch05-ex2", no_tanh)
    assert not feedback.passed
    assert feedback.key == "ch05.dorefa_value" and "your value is" in feedback.message


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
    assert feedback.message.startswith(f"with bits = 2, at w[{largest[0]}, {largest[1]}] = ")
    assert "your gradient is 0;" in feedback.message
    assert feedback.key == "ch05.dorefa_max"


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

@pytest.mark.parametrize("answer", [xnor_paper, xnor_paper_by_the_trick])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_ex3_correct_answers_pass(answer, lang):
    feedback = exercises.check("ch05-ex3", answer, lang=lang)
    assert feedback.passed, feedback.message
    assert "1/n + E·1{|w| ≤ 1}" in feedback.message


# The likeliest wrong answers of ex3 are declared with the check; here, what their messages show,
# and further mistakes.

def test_ex3_the_full_product_rule_is_named():
    for answer in (wrong_answer("ch05-ex3", "autodiff of E times ste_sign"), lambda w: _mean_abs(w) * binary_sign(w, 1.0)):
        feedback = exercises.check("ch05-ex3", answer)
        assert not feedback.passed
        # reported at a nonzero weight: at w = 0 TensorFlow adds no term through E
        assert feedback.message.startswith("at w[1] = 1: your gradient is ")
        assert feedback.key == "ch05.xnor_product_rule"
        zh = exercises.check("ch05-ex3", answer, lang="zh")
        assert zh.message.startswith("在 w[1] = 1 处，你的梯度为 ") and zh.key == "ch05.xnor_product_rule"


def test_ex3_the_trick_with_an_unstopped_scale_is_named():
    feedback = exercises.check("ch05-ex3", wrong_answer("ch05-ex3", "the trick with E not stopped"))
    assert not feedback.passed
    assert feedback.message.startswith("at w[1] = 1: your gradient is ")
    assert feedback.key == "ch05.xnor_trick_unstopped"


def test_ex3_sign_over_n_with_the_forwards_sign_is_named():
    # the declared answer takes tf.sign(w)/n; the forward's sign, +1 at 0, gives the same message
    answer = _xnor_with(lambda dy, v, scale, n: dy * (_plus_minus_one(v) / n + scale * _clipped(v)))
    for lang in ("en", "zh"):
        assert exercises.check("ch05-ex3", answer, lang=lang).key == "ch05.xnor_sign_over_n"


def test_ex3_a_hand_written_identity_is_named():
    # like gradlib.xnor_binarize, declared with the check
    answer = _xnor_with(lambda dy, v, scale, n: dy)
    for lang in ("en", "zh"):
        assert exercises.check("ch05-ex3", answer, lang=lang).key == "ch05.xnor_identity"


def test_ex3_the_stopped_scale_with_the_plain_estimator_is_named():
    answer = lambda w: tf.stop_gradient(_mean_abs(w)) * gradlib.ste_sign(w)  # noqa: E731
    feedback = exercises.check("ch05-ex3", answer)
    assert feedback.key == "ch05.xnor_plain"
    assert exercises.check("ch05-ex3", answer, lang="zh").key == "ch05.xnor_plain"


@pytest.mark.parametrize("backward, en, key", [
    (lambda dy, v, scale, n: dy * (1 / n + scale), "at w[3] = 1.5: your gradient is", "ch05.xnor_no_clip"),
    (lambda dy, v, scale, n: dy * (1 / n + _clipped(v)), "at w[1] = 1: your gradient is", "ch05.xnor_no_scale"),
    (lambda dy, v, scale, n: dy * (1 / n + scale * tf.cast(tf.abs(v) < 1, v.dtype)), "at w[1] = 1: your gradient is",
     "ch05.xnor_strict"),
])
def test_ex3_other_backward_mistakes_are_named(backward, en, key):
    answer = _xnor_with(backward)
    feedback = exercises.check("ch05-ex3", answer)
    assert not feedback.passed
    assert feedback.message.startswith(en) and feedback.key == key, feedback.message
    zh = exercises.check("ch05-ex3", answer, lang="zh")
    assert zh.message.startswith("在 w[") and zh.key == key


def test_ex3_forgetting_dy_is_named():
    answer = _xnor_with(lambda dy, v, scale, n: 1 / n + scale * _clipped(v))
    feedback = exercises.check("ch05-ex3", answer)
    assert feedback.message.startswith("with an upstream gradient of -1 at w = 1, your gradient is ")  # a nonzero w first
    assert feedback.key == "ch05.upstream"
    assert exercises.check("ch05-ex3", answer, lang="zh").key == "ch05.upstream"


def test_ex3_sign_of_zero_is_named():
    feedback = exercises.check("ch05-ex3", wrong_answer("ch05-ex3", "tf.sign forward"))
    assert feedback.message.startswith("at w = 0: your value is 0; expected +E = ")
    assert feedback.key == "ch05.xnor_zero"
    paper = lambda dy, v, scale, n: dy * (1 / n + scale * _clipped(v))  # noqa: E731
    strictly = _xnor_with(paper, forward=lambda v: tf.where(v > 0, 1.0, -1.0))
    feedback = exercises.check("ch05-ex3", strictly)
    assert feedback.key == "ch05.xnor_zero_negative"
    assert exercises.check("ch05-ex3", strictly, lang="zh").key == "ch05.xnor_zero_negative"


@pytest.mark.parametrize("axis, word, zh_word", [(0, "column", "列"), (1, "row", "行")])
def test_ex3_one_scale_per_row_or_column_is_named(axis, word, zh_word):
    def per_axis(w):
        if len(w.shape) == 1:
            return xnor_paper(w)
        scale = tf.reduce_mean(tf.abs(w), axis=axis, keepdims=True)
        return gradlib.straight_through(lambda v: _plus_minus_one(v) * scale, lambda v: v)(w)

    feedback = exercises.check("ch05-ex3", per_axis)
    assert not feedback.passed
    assert feedback.message.startswith("on the 3×4 matrix, at w[")
    assert feedback.key == "ch05.xnor_axis" and f"one scale per {word}." in feedback.message  # {axis} filled in
    zh = exercises.check("ch05-ex3", per_axis, lang="zh")
    assert zh.key == "ch05.xnor_axis" and f"对每一{zh_word}" in zh.message


def test_ex3_reference_agrees_with_a_tape():
    for w, dy in ch05.XNOR_INPUTS:
        value, grad = ch05.xnor_paper_reference(w, dy)
        wt = tf.constant(w)
        with tf.GradientTape() as tape:
            tape.watch(wt)
            y = xnor_paper(wt)
        np.testing.assert_allclose(y.numpy(), value, rtol=1e-6)
        np.testing.assert_allclose(tape.gradient(y, wt, output_gradients=dy).numpy(), grad, rtol=1e-5, atol=1e-6)
        assert {0.0, 1.0, -1.0} <= set(w.ravel().tolist()) and np.any(np.abs(w) > 1)
        assert len(set(dy.ravel().tolist())) > 1 and not np.isclose(np.mean(np.abs(w)), 1.0)


def test_ex3_the_wrong_gradients_differ_from_the_right_one():
    for w, dy in ch05.XNOR_INPUTS:
        _, right = ch05.xnor_paper_reference(w, dy)
        for key, wrong in ch05._xnor_wrong_gradients(w, dy):
            assert not np.allclose(wrong, right, atol=1e-4, rtol=1e-4), key


def test_a_grad_fn_returning_garbage_is_reported():
    def broken(x, clip):
        @tf.custom_gradient
        def op(v):
            return _plus_minus_one(v), lambda dy: "oops"
        return op(x)

    feedback = exercises.check("ch05-ex1", broken)
    assert not feedback.passed and feedback.key == "common.not_numeric" and "str" in feedback.message


def test_the_library_functions_are_restored_when_the_answer_raises():
    def calls_then_raises(x, clip):
        gradlib.ste_sign(x, clip=clip)
        raise RuntimeError("boom")

    feedback = exercises.check("ch05-ex1", calls_then_raises)
    assert not feedback.passed and feedback.key == "common.raised" and "RuntimeError" in feedback.message
    assert gradlib.ste_sign is gradlib.ste.ste_sign
