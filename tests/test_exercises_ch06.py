"""Chapter 6's exercise checks: ch06-ex1 (custom_gradient GRL), ch06-ex2 (λ schedule), ch06-ex3 (GRL by the trick).

Each check must accept the reference solution and reasonable variants, reject
the typical wrong answers with a specific message in both languages, and turn
hostile answers into feedback, never an exception.
"""

import math

import numpy as np
import pytest
import tensorflow as tf

import gradlib
from gradlib import exercises
from gradlib.exercises import ch06


# -- reference solutions (as in the chapter) and variants -------------------------

@tf.custom_gradient
def reverse_gradient(x, lam):
    def grad_fn(dy):
        return -lam * dy, None
    return tf.identity(x), grad_fn


def reverse_gradient_closure(x, lam):  # lam closed over, x the only input
    @tf.custom_gradient
    def op(v):
        return tf.identity(v), lambda dy: -lam * dy
    return op(x)


def grl_trick(x, lam):  # the reference solution of ex3: exact, signed zeros included
    t = -lam * x
    return tf.stop_gradient(x) - (tf.stop_gradient(t) - t)


def grl_trick_textbook(x, lam):  # the most likely wrong answer to ex3: rounds twice
    t = -lam * x
    return t + tf.stop_gradient(x - t)


def grl_trick_added_zero(x, lam):  # exact except that -0.0 becomes +0.0
    t = -lam * x
    return tf.stop_gradient(x) + (t - tf.stop_gradient(t))


def grl_trick_sum_first(x, lam):  # (x + t) - t: rounds too
    t = -lam * x
    return (tf.stop_gradient(x) + t) - tf.stop_gradient(t)


def grl_trick_straight_through(x, lam):
    return gradlib.straight_through(tf.identity, lambda v: -lam * v)(x)


def dann_lambda(p):
    return 2.0 / (1.0 + np.exp(-10.0 * p)) - 1.0


# -- typical wrong answers for ex1 / ex3 ----------------------------------------------

@tf.custom_gradient
def one_gradient(x, lam):  # forgets the gradient for lam
    return tf.identity(x), lambda dy: -lam * dy


@tf.custom_gradient
def wrong_sign(x, lam):
    return tf.identity(x), lambda dy: (lam * dy, None)


@tf.custom_gradient
def ignores_upstream(x, lam):
    return tf.identity(x), lambda dy: (-lam * tf.ones_like(dy), None)


def ignores_lambda(x, lam):
    return gradlib.gradient_reversal(x, 1.0)


def not_reversed(x, lam):
    return tf.identity(x)


def uses_numpy(x, lam):  # fine eagerly, breaks inside a tf.function
    value = lam.numpy() if hasattr(lam, "numpy") else lam
    return gradlib.gradient_reversal(x, float(value))


def frozen_at_trace(x, lam):  # reads a variable once, when the tf.function is traced
    with tf.init_scope():
        value = float(lam.numpy()) if hasattr(lam, "numpy") else float(lam)
    return gradlib.gradient_reversal(x, value)


def special_case_zero(x, lam):
    if not isinstance(lam, (tf.Tensor, tf.Variable)) and lam == 0:
        return tf.stop_gradient(x)
    return grl_trick(x, lam)


# -- ch06-ex1 ---------------------------------------------------------------------

@pytest.mark.parametrize("answer", [reverse_gradient, reverse_gradient_closure, gradlib.gradient_reversal])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_ex1_correct_answers_pass(answer, lang):
    feedback = exercises.check("ch06-ex1", answer, lang=lang)
    assert feedback.passed, feedback.message
    assert "{1, 0.5, 0, 2}" in feedback.message


def test_ex1_trick_is_rejected_because_it_is_not_bit_exact():
    feedback = exercises.check("ch06-ex1", grl_trick_textbook)
    assert not feedback.passed
    assert feedback.message.startswith("with λ = 0.5, at x = ")
    assert "not exactly x" in feedback.message and "of 202 values do" in feedback.message
    assert "tf.identity(x)" in feedback.message
    zh = exercises.check("ch06-ex1", grl_trick_textbook, lang="zh")
    assert zh.message.startswith("当 λ = 0.5 时，在 x = ") and "并不严格等于 x" in zh.message


def test_ex1_the_exact_trick_passes_too():
    assert exercises.check("ch06-ex1", grl_trick).passed


def test_ex1_exactness_message_shows_all_digits():
    message = exercises.check("ch06-ex1", grl_trick_textbook).message
    x_text = message.split("at x = ")[1].split(":")[0]
    got_text = message.split("your value is ")[1].split(",")[0]
    assert x_text != got_text and len(x_text.replace("-", "").replace(".", "")) >= 8


def test_ex1_missing_lambda_gradient_is_explained():
    feedback = exercises.check("ch06-ex1", one_gradient)
    assert not feedback.passed
    assert "one gradient per input" in feedback.message and "None for lam" in feedback.message
    assert "expected to return 2 gradients" in feedback.message
    assert "每个输入各返回一个梯度" in exercises.check("ch06-ex1", one_gradient, lang="zh").message


def test_ex1_wrong_sign_is_named():
    feedback = exercises.check("ch06-ex1", wrong_sign)
    assert not feedback.passed
    assert feedback.message == ("with λ = 1, at x = 0: your gradient is 1; expected -1. "
                                "The sign is wrong: the layer multiplies the gradient by −λ, not by λ.")
    assert exercises.check("ch06-ex1", wrong_sign, lang="zh").message.startswith("当 λ = 1 时，在 x = 0 处，你的梯度为 1，应为 -1。")


def test_ex1_ignoring_lambda_gets_the_issue_example():
    feedback = exercises.check("ch06-ex1", ignores_lambda)
    assert not feedback.passed
    assert feedback.message == ("with λ = 0.5, at x = 0: your gradient is -1; expected -0.5. "
                                "Your gradient is −dy whatever λ is: multiply by λ as well.")


def test_ex1_identity_is_not_reversed():
    feedback = exercises.check("ch06-ex1", not_reversed)
    assert not feedback.passed
    assert "your gradient is 1; expected -1" in feedback.message
    assert "sign" in feedback.message  # with λ = 1, +dy is the wrong sign


def test_ex1_identity_at_half_gets_the_not_reversed_hint():
    def half_then_identity(x, lam):
        return reverse_gradient(x, lam) if (not isinstance(lam, float) or lam == 1.0) else tf.identity(x)

    feedback = exercises.check("ch06-ex1", half_then_identity)
    assert not feedback.passed
    assert feedback.message.startswith("with λ = 0.5, at x = 0: your gradient is 1; expected -0.5.")
    assert "not reversed" in feedback.message


def test_ex1_ignoring_the_upstream_gradient_is_caught():
    feedback = exercises.check("ch06-ex1", ignores_upstream)
    assert not feedback.passed
    assert "with an upstream gradient of" in feedback.message and "Multiply the upstream gradient dy by −λ" in feedback.message
    assert "上游梯度为" in exercises.check("ch06-ex1", ignores_upstream, lang="zh").message


def test_ex1_numpy_inside_tf_function_is_explained():
    feedback = exercises.check("ch06-ex1", uses_numpy)
    assert not feedback.passed
    assert "inside a tf.function" in feedback.message and "symbolic tensor" in feedback.message
    assert "符号张量" in exercises.check("ch06-ex1", uses_numpy, lang="zh").message


def test_ex1_lambda_frozen_at_trace_time_is_explained():
    feedback = exercises.check("ch06-ex1", frozen_at_trace)
    assert not feedback.passed
    assert feedback.message.startswith("with λ = 1.5 (a tf.Variable set by assign, inside a tf.function), at x = ")
    assert "still uses an old λ" in feedback.message
    assert "旧的 λ" in exercises.check("ch06-ex1", frozen_at_trace, lang="zh").message


def test_ex1_forward_that_scales_is_rejected():
    feedback = exercises.check("ch06-ex1", lambda x, lam: -lam * x)
    assert not feedback.passed
    assert feedback.message == ("with λ = 1, at x = 1.5: your value is -1.5; expected 1.5. "
                                "The forward pass must return x unchanged, whatever λ is.")


def test_ex1_answer_that_only_handles_vectors_is_rejected():
    def vector_only(x, lam):
        return gradlib.gradient_reversal(tf.reshape(x, [-1]), lam)

    feedback = exercises.check("ch06-ex1", vector_only)
    assert not feedback.passed and "shape [12]; expected [3, 4]" in feedback.message
    assert feedback.message.startswith("for a 3×4 input, with λ = 0.5, ")


# -- ch06-ex3 ---------------------------------------------------------------------

@pytest.mark.parametrize("answer", [grl_trick, grl_trick_straight_through, reverse_gradient, gradlib.gradient_reversal])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_ex3_correct_answers_pass(answer, lang):  # the check cannot tell a custom gradient from the trick
    feedback = exercises.check("ch06-ex3", answer, lang=lang)
    assert feedback.passed, feedback.message


def test_ex3_textbook_arrangement_is_told_it_rounds_twice():
    feedback = exercises.check("ch06-ex3", grl_trick_textbook)
    assert not feedback.passed
    assert feedback.message.startswith("with λ = 0.5, at x = ") and "not exactly x" in feedback.message
    assert "rounds twice" in feedback.message and "t − t is exactly 0" in feedback.message
    count = int(feedback.message.split("(")[1].split(" of 202")[0])
    x = tf.constant(ch06.EXACT_POINTS)
    bits = grl_trick_textbook(x, 0.5).numpy().view(np.int32)
    assert count == int(np.sum(bits != ch06.EXACT_POINTS.view(np.int32)))  # the real number, -0.0 included
    zh = exercises.check("ch06-ex3", grl_trick_textbook, lang="zh")
    assert "舍入两次" in zh.message and "t − t 恰好为 0" in zh.message


def test_ex3_sum_before_the_zero_is_told_it_rounds_too():
    feedback = exercises.check("ch06-ex3", grl_trick_sum_first)
    assert not feedback.passed and "(x + t) − t rounds twice" in feedback.message


def test_ex3_added_zero_is_told_about_the_sign_of_zero():
    feedback = exercises.check("ch06-ex3", grl_trick_added_zero)
    assert not feedback.passed
    assert feedback.message == ("with λ = 0.5, at x = −0.0: your value is +0.0. Every other value is exact, but "
                                "adding a zero loses the sign of −0.0 (−0 + 0 = +0); subtracting it keeps it "
                                "(−0 − 0 = −0).")
    assert "−0.0 的符号" in exercises.check("ch06-ex3", grl_trick_added_zero, lang="zh").message


def test_ex3_says_bit_for_bit_when_correct():
    assert "bit for bit (−0.0 included)" in exercises.check("ch06-ex3", grl_trick).message


def test_ex3_none_for_lambda_zero_is_reported():
    feedback = exercises.check("ch06-ex3", special_case_zero)
    assert not feedback.passed
    assert feedback.message.startswith("with λ = 0, the gradient is None")


def test_ex3_shares_the_gradient_messages():
    feedback = exercises.check("ch06-ex3", lambda x, lam: x + tf.stop_gradient(x - x))
    assert not feedback.passed and "not reversed" not in feedback.message and "sign" in feedback.message


# -- ch06-ex2 ---------------------------------------------------------------------

@pytest.mark.parametrize("answer", [dann_lambda, lambda p: math.tanh(5 * p), lambda p: 2 / (1 + tf.exp(-10.0 * p)) - 1,
                                    lambda p: float(gradlib.dann.lambda_schedule(p))])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_ex2_correct_answers_pass(answer, lang):
    feedback = exercises.check("ch06-ex2", answer, lang=lang)
    assert feedback.passed, feedback.message
    assert "0.99991" in feedback.message


@pytest.mark.parametrize(
    "answer, start, hint",
    [
        (lambda p: 2 / (1 + math.exp(-10 * p)), "at p = 0: your λ_p is 1; expected 0.", "dropped the “− 1”"),
        (lambda p: 2 / (1 + math.exp(10 * p)) - 1, "at p = 0.05: your λ_p is -0.244919; expected 0.244919.", "−10p, not +10p"),
        (lambda p: 1 / (1 + math.exp(-10 * p)), "at p = 0: your λ_p is 0.5; expected 0.", "2σ(10p) − 1"),
        (lambda p: 2 / (1 + math.exp(-p)) - 1, "at p = 0.05: your λ_p is 0.0249948; expected 0.244919.", "γ = 10"),
    ],
)
def test_ex2_typical_mistakes_are_named(answer, start, hint):
    feedback = exercises.check("ch06-ex2", answer)
    assert not feedback.passed
    assert feedback.message.startswith(start) and hint in feedback.message
    zh = exercises.check("ch06-ex2", answer, lang="zh")
    assert zh.message.startswith("在 p = ") and not zh.passed


def test_ex2_none_asks_for_a_number_not_a_tensor():
    feedback = exercises.check("ch06-ex2", lambda p: None)
    assert feedback.message == "p = 0: your function returned None; return the number λ_p (a Python float is fine)."
    zh = exercises.check("ch06-ex2", lambda p: None, lang="zh").message
    assert zh == "在 p = 0 处，你的函数返回了 None；请返回数值 λ_p（Python 浮点数即可）。"


def test_ex2_other_wrong_values_get_the_plain_message():
    feedback = exercises.check("ch06-ex2", lambda p: p)
    assert not feedback.passed
    assert feedback.message == "at p = 0.05: your λ_p is 0.05; expected 0.244919."


def test_ex2_integer_zero_at_the_start_is_accepted():
    answer = lambda p: 0 if p == 0 else dann_lambda(p)  # noqa: E731
    assert exercises.check("ch06-ex2", answer).passed


def test_ex2_array_result_has_the_wrong_shape():
    feedback = exercises.check("ch06-ex2", lambda p: np.array([dann_lambda(p)]))
    assert not feedback.passed and "shape [1]; expected []" in feedback.message


def test_lambda_reference_matches_gradlib_and_tanh():
    p = np.array(ch06.PROGRESS)
    np.testing.assert_allclose([ch06.lambda_reference(v) for v in p], gradlib.dann.lambda_schedule(p))
    np.testing.assert_allclose([ch06.lambda_reference(v) for v in p], np.tanh(5 * p), atol=1e-12)


# -- hostile answers, for every check ------------------------------------------------

HOSTILE = [
    (lambda *a: 1 / 0, "raised ZeroDivisionError"),
    (lambda *a: None, "returned None"),  # ex2 asks for a number, ex1/ex3 for a tensor
    (lambda *a: a[0] * float("nan"), "NaN"),
    (lambda *a: tf.zeros([7, 7]), "shape [7, 7]; expected"),
    (lambda *a: "reverse", "not a numeric tensor"),
    (lambda: 1.0, "raised TypeError"),
    (42, "must be a function"),
]


@pytest.mark.parametrize("exercise_id", ["ch06-ex1", "ch06-ex2", "ch06-ex3"])
@pytest.mark.parametrize("answer, fragment", HOSTILE)
def test_hostile_answers_get_feedback_not_exceptions(exercise_id, answer, fragment):
    feedback = exercises.check(exercise_id, answer)
    assert not feedback.passed
    assert fragment in feedback.message, feedback.message
    zh = exercises.check(exercise_id, answer, lang="zh")
    assert not zh.passed and zh.message != feedback.message


@pytest.mark.parametrize("exercise_id", ["ch06-ex1", "ch06-ex3"])
def test_integer_output_is_rejected(exercise_id):
    feedback = exercises.check(exercise_id, lambda x, lam: tf.ones(tf.shape(x), tf.int32))
    assert not feedback.passed and "dtype int32" in feedback.message


def test_answer_raising_in_the_backward_pass_gets_feedback():
    @tf.custom_gradient
    def broken(x, lam):
        def grad_fn(dy):
            raise RuntimeError("backward exploded")
        return tf.identity(x), grad_fn

    feedback = exercises.check("ch06-ex1", broken)
    assert not feedback.passed and "RuntimeError" in feedback.message and "backward exploded" in feedback.message


def test_repeated_checks_write_nothing_to_stderr(capfd):
    # Each check traces a tf.function; TensorFlow would warn about retracing on stderr.
    for _ in range(7):
        assert exercises.check("ch06-ex1", reverse_gradient).passed
    assert "retracing" not in capfd.readouterr().err


def test_ids_are_registered():
    assert {"ch06-ex1", "ch06-ex2", "ch06-ex3"} <= set(exercises.exercise_ids())


def test_every_message_has_both_languages():
    for key, texts in ch06.MESSAGES.items():
        assert set(texts) == {"en", "zh"}, key
