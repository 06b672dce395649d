"""Chapter 3's exercise checks: ch03-ex1 (clipped Sign gradient) and ch03-ex2 (naive XNOR gradient).

Each check must accept the reference solution, reject typical wrong answers
with the right message, and survive hostile answers (raising, None, Python
numbers, wrong shapes): always Feedback, never an exception.
"""

import numpy as np
import pytest
import tensorflow as tf

import gradlib
from gradlib import exercises
from gradlib.exercises import ch03


# -- ch03-ex1 ------------------------------------------------------------------

def clipped_sign_grad(op, grad):  # the reference solution
    x = op.inputs[0]
    return tf.where(tf.abs(x) <= 1.0, grad, tf.zeros_like(grad))


def strict_inequality(op, grad):  # typical mistake: |x| < 1 drops the kinks ±1
    return tf.where(tf.abs(op.inputs[0]) < 1.0, grad, tf.zeros_like(grad))


def uses_the_output(op, grad):  # typical mistake: sign(x) is always within [-1, 1]
    return tf.where(tf.abs(op.outputs[0]) <= 1.0, grad, tf.zeros_like(grad))


def ignores_upstream(op, grad):  # typical mistake: ones instead of grad
    return tf.where(tf.abs(op.inputs[0]) <= 1.0, tf.ones_like(grad), tf.zeros_like(grad))


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_ex1_reference_passes(lang):
    feedback = exercises.check("ch03-ex1", clipped_sign_grad, lang=lang)
    assert feedback.passed, feedback.message
    assert str(feedback).startswith("✓ ch03-ex1")
    assert "±1" in feedback.message


def test_ex1_list_of_one_tensor_is_accepted():
    assert exercises.check("ch03-ex1", lambda op, grad: [clipped_sign_grad(op, grad)])


def test_ex1_can_be_checked_again_after_a_wrong_answer():
    # The check re-registers the same gradient name: notebook re-runs must work.
    assert not exercises.check("ch03-ex1", uses_the_output)
    assert exercises.check("ch03-ex1", clipped_sign_grad)
    assert not exercises.check("ch03-ex1", strict_inequality)
    assert exercises.check("ch03-ex1", clipped_sign_grad)
    assert tf.executing_eagerly()


@pytest.mark.parametrize(
    "answer, expected",
    [
        (strict_inequality, "at x = 1 your gradient is 0; expected 1 because |x| ≤ 1."),
        (uses_the_output, "at x = 1.5 your gradient is 1; expected 0 because |x| > 1."),
        (lambda op, grad: grad, "at x = 1.5 your gradient is 1; expected 0 because |x| > 1."),
    ],
)
def test_ex1_wrong_clipping_is_reported_at_the_first_bad_point(answer, expected):
    feedback = exercises.check("ch03-ex1", answer)
    assert not feedback.passed
    assert feedback.message == expected


def test_ex1_ignoring_the_upstream_gradient_is_explained():
    feedback = exercises.check("ch03-ex1", ignores_upstream)
    assert not feedback.passed
    assert feedback.message.startswith("with the upstream gradient grad = ")
    assert "do not replace it by a constant" in feedback.message
    zh = exercises.check("ch03-ex1", ignores_upstream, lang="zh")
    assert "上游梯度" in zh.message


@pytest.mark.parametrize(
    "answer, fragment",
    [
        (lambda op, grad: 0, "a Python int (0), not a tensor; tf.gradients then fails with "
                             "AttributeError: 'int' object has no attribute 'name'"),
        (lambda op, grad: 1.5, "'float' object has no attribute 'name'"),
        (lambda op, grad: np.zeros(3), "a numpy.ndarray"),
        (lambda op, grad: None, "returned None"),
        (lambda op, grad: 1 / 0, "raised ZeroDivisionError"),
        (lambda op, grad: tf.reduce_sum(grad), "shape []; expected [31]"),
        (lambda op, grad: grad[:3], "shape [3]; expected [31]"),
        (lambda op, grad: [grad, grad], "returned 2 values"),
        (lambda op, grad: tf.cast(grad, tf.int32), "dtype int32"),
        (lambda op, grad: grad * np.nan, "NaN"),
        (lambda grad: grad, "raised TypeError"),
        ("not a function", "must be a function"),
    ],
)
def test_ex1_hostile_answers_get_feedback_not_exceptions(answer, fragment):
    feedback = exercises.check("ch03-ex1", answer)
    assert not feedback.passed
    assert fragment in feedback.message


def test_ex1_python_number_message_in_chinese():
    feedback = exercises.check("ch03-ex1", lambda op, grad: 0, lang="zh")
    assert "AttributeError: 'int' object has no attribute 'name'" in feedback.message
    assert "张量" in feedback.message


@pytest.mark.parametrize("returned", [0, np.zeros(2)])
def test_the_attribute_error_the_message_quotes_is_what_tensorflow_raises(returned):
    name = "GradbookTestReturnsNumber"
    gradlib.register_gradient(name)(lambda op, grad: returned)

    def build():
        x = tf.constant([0.5, -2.0])
        with tf.compat.v1.get_default_graph().gradient_override_map({"Sign": name}):
            y = tf.sign(x)
        return tf.gradients(y, x)

    with pytest.raises(AttributeError, match="object has no attribute 'name'"):
        gradlib.run_graph(build)


def test_ex1_expected_values_are_the_binarynet_rule():
    x = np.array([-1.5, -1.0, 0.0, 0.3, 1.0, 1.0001], np.float32)
    np.testing.assert_array_equal(ch03._expected_ex1(x, np.ones_like(x)), [0, 1, 1, 1, 1, 0])
    assert {0.0, 1.0, -1.0, 1.5, -1.5} <= set(ch03.POINTS_EX1[:7].tolist())


# -- ch03-ex2 ------------------------------------------------------------------

def naive_xnor_grad(x, w):  # the reference solution
    scale, signs = np.mean(np.abs(x)), np.sign(x)
    return w * scale + np.sum(w * signs) * signs / x.size


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_ex2_reference_passes(lang):
    feedback = exercises.check("ch03-ex2", naive_xnor_grad, lang=lang)
    assert feedback.passed, feedback.message


def test_ex2_tensor_answers_are_accepted():
    assert exercises.check("ch03-ex2", lambda x, w: tf.constant(naive_xnor_grad(x, w), tf.float32))


def test_ex2_tensorflow_reference_matches_the_closed_form():
    # The check's reference is TensorFlow itself; confirm it against NumPy,
    # including the input with a zero and the one where the extra term vanishes.
    for x, w in ch03._cases_ex2():
        np.testing.assert_allclose(ch03._tensorflow_naive_xnor_grad(x, w), naive_xnor_grad(x, w),
                                   rtol=1e-5, atol=1e-6)
    x, w = ch03._cases_ex2()[0]
    assert np.sum(w * np.sign(x)) != 0  # the first case exposes the extra term
    x, w = ch03._cases_ex2()[-1]
    assert np.sum(w * np.sign(x)) == 0


@pytest.mark.parametrize(
    "answer, fragment",
    [
        (lambda x, w: w * np.mean(np.abs(x)), "the gradient with E stopped"),
        (lambda x, w: w, "straight-through gradient of the final version"),
        (lambda x, w: w * np.mean(np.abs(x)) + np.sum(w * np.sign(x)) * np.sign(x), "n = 6 times too large"),
        (lambda x, w: 2 * w, "at index 0 your gradient is 2; expected 1.08333"),
    ],
)
def test_ex2_typical_wrong_answers(answer, fragment):
    feedback = exercises.check("ch03-ex2", answer)
    assert not feedback.passed
    assert fragment in feedback.message


def test_ex2_stopped_message_in_chinese():
    feedback = exercises.check("ch03-ex2", lambda x, w: w * np.mean(np.abs(x)), lang="zh")
    assert "tf.stop_gradient" in feedback.message and "停止梯度" in feedback.message


@pytest.mark.parametrize(
    "answer, fragment",
    [
        (lambda x, w: None, "returned None"),
        (lambda x, w: 1 / 0, "raised ZeroDivisionError"),
        (lambda x, w: np.zeros(2), "shape [2]; expected [6]"),
        (lambda x, w: "gradient", "not a numeric tensor"),
        (lambda x, w: np.full(x.shape, np.nan), "NaN"),
        (lambda x: x, "raised TypeError"),
        (3.0, "must be a function"),
    ],
)
def test_ex2_hostile_answers_get_feedback_not_exceptions(answer, fragment):
    feedback = exercises.check("ch03-ex2", answer)
    assert not feedback.passed
    assert fragment in feedback.message


def test_ex2_answer_cannot_corrupt_the_cases():
    def mutating(x, w):
        x[:] = 0.0
        w[:] = 0.0
        return np.zeros_like(x)

    assert not exercises.check("ch03-ex2", mutating)
    assert exercises.check("ch03-ex2", naive_xnor_grad)


def test_chapter_3_checks_are_registered():
    assert {"ch03-ex1", "ch03-ex2"} <= set(exercises.exercise_ids())
