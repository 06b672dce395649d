"""The exercise-check framework and chapter 1's checks.

Every check must accept the reference solution, reject typical wrong answers
with the right message, and survive answers that raise, return None, NaN or
the wrong shape: always Feedback, never an exception.
"""

import numpy as np
import pytest
import tensorflow as tf

from gradlib import exercises


def nested_tapes(f, x, unconnected=tf.UnconnectedGradients.ZERO):
    x = tf.convert_to_tensor(x, tf.float32)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        dy = inner.gradient(y, x)
    return outer.gradient(dy, x, unconnected_gradients=unconnected)


def second_derivative(f, x):  # the reference solution of ch01-ex2
    return nested_tapes(f, x)


def second_derivative_without_zero(f, x):  # a typical wrong answer: None for linear f
    return nested_tapes(f, x, unconnected=tf.UnconnectedGradients.NONE)


def first_derivative(f, x):  # a typical wrong answer: one tape only
    x = tf.convert_to_tensor(x, tf.float32)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return tape.gradient(y, x)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_reference_solution_passes(lang):
    feedback = exercises.check("ch01-ex2", second_derivative, lang=lang)
    assert feedback.passed and bool(feedback)
    assert str(feedback).startswith("✓ ch01-ex2")
    assert ("3x" in feedback.message) and (("not None" in feedback.message) == (lang == "en"))


def test_first_derivative_is_rejected_with_the_value():
    feedback = exercises.check("ch01-ex2", first_derivative)
    assert not feedback.passed
    assert feedback.message == "for f(x) = x**3 at x = 1.5 your second derivative is 6.75; expected 9."


def test_none_for_a_linear_function_is_explained():
    feedback = exercises.check("ch01-ex2", second_derivative_without_zero)
    assert not feedback.passed
    assert "f(x) = 3x" in feedback.message and "UnconnectedGradients.ZERO" in feedback.message
    zh = exercises.check("ch01-ex2", second_derivative_without_zero, lang="zh")
    assert "未连接" in zh.message


@pytest.mark.parametrize(
    "answer, fragment",
    [
        (lambda f, x: 1 / 0, "raised ZeroDivisionError"),
        (lambda f, x: None, "returned None"),
        (lambda f, x: float("nan"), "NaN"),
        (lambda f, x: tf.zeros([2]), "shape [2]; expected []"),
        (lambda f, x: "twelve", "not a numeric tensor"),
        (lambda f, x: tf.constant(12), "dtype int32"),
        (lambda: 12.0, "raised TypeError"),
        (42, "must be a function"),
    ],
)
def test_hostile_answers_get_feedback_not_exceptions(answer, fragment):
    feedback = exercises.check("ch01-ex2", answer)
    assert not feedback.passed
    assert fragment in feedback.message


def test_feedback_renders_for_notebooks():
    feedback = exercises.check("ch01-ex2", lambda f, x: None)
    assert feedback._repr_markdown_().startswith("❌ **ch01-ex2**")
    assert exercises.check("ch01-ex2", second_derivative)._repr_markdown_().startswith("✅")


def test_unknown_exercise_and_language_are_errors_of_the_caller():
    with pytest.raises(ValueError, match="unknown exercise id 'ch99-ex1'"):
        exercises.check("ch99-ex1", second_derivative)
    with pytest.raises(ValueError, match="lang"):
        exercises.check("ch01-ex2", second_derivative, lang="fr")


def test_every_registered_check_is_listed():
    assert "ch01-ex2" in exercises.exercise_ids()
    assert all(isinstance(i, str) and i.startswith("ch") for i in exercises.exercise_ids())


def test_numeric_reference_values_are_independent():
    # The check's expectations are closed forms; confirm one against TensorFlow.
    np.testing.assert_allclose(float(second_derivative(tf.tanh, 0.3)),
                               -2 * np.tanh(0.3) * (1 - np.tanh(0.3) ** 2), rtol=1e-5)
