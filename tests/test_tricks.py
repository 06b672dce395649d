"""straight_through: value of forward, gradient of backward, checked against NumPy."""

import numpy as np
import pytest
import tensorflow as tf

import gradlib

# Kink points (0, ±1 for a unit clip, the rounding ties ±0.5) plus ordinary values.
POINTS = np.array([-2.5, -1.0, -0.7, -0.5, 0.0, 0.3, 0.5, 1.0, 1.7], dtype=np.float32)


def value_and_grad(op, x):
    x = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = op(x)
    return y.numpy(), tape.gradient(y, x).numpy()


def test_identity_backward_is_the_straight_through_estimator():
    y, g = value_and_grad(gradlib.straight_through(tf.round), POINTS)
    np.testing.assert_array_equal(y, np.round(POINTS))  # both round half to even
    np.testing.assert_array_equal(g, np.ones_like(POINTS))


def test_forward_sign_backward_tanh_matches_numpy():
    y, g = value_and_grad(gradlib.straight_through(tf.sign, tf.tanh), POINTS)
    np.testing.assert_allclose(y, np.sign(POINTS), atol=1e-6)
    np.testing.assert_allclose(g, 1 - np.tanh(POINTS) ** 2, rtol=1e-5)


def test_backward_gradient_matches_tf_compute_gradient_of_backward():
    op = gradlib.straight_through(tf.floor, lambda x: x ** 3 / 3)
    x = tf.constant(POINTS.astype(np.float64))
    theoretical, _ = tf.test.compute_gradient(lambda v: v ** 3 / 3, [x])
    _, g = value_and_grad(op, x)
    np.testing.assert_allclose(g, np.diag(theoretical[0]), rtol=1e-12)
    np.testing.assert_allclose(g, POINTS.astype(np.float64) ** 2, rtol=1e-12)


def test_upstream_gradient_is_multiplied_through():
    op = gradlib.straight_through(tf.round)
    x = tf.constant(POINTS)
    with tf.GradientTape() as tape:
        tape.watch(x)
        loss = tf.reduce_sum(op(x) * POINTS)
    np.testing.assert_allclose(tape.gradient(loss, x).numpy(), POINTS)


def test_works_on_variables_in_tf_function_and_with_tf_gradients():
    op = gradlib.straight_through(tf.round)
    v = tf.Variable(POINTS)
    with tf.GradientTape() as tape:
        y = op(v)
    np.testing.assert_array_equal(tape.gradient(y, v).numpy(), np.ones_like(POINTS))

    @tf.function
    def graph_grad(x):
        return tf.gradients(op(x), x)[0]

    np.testing.assert_array_equal(graph_grad(tf.constant(POINTS)).numpy(), np.ones_like(POINTS))


def test_forward_value_is_not_always_bit_exact():
    # g + (f - g) in float32 loses the low bits of f when |g| >> |f|: documented behaviour.
    op = gradlib.straight_through(lambda x: x * 1e-8, lambda x: x * 1e8)
    y, _ = value_and_grad(op, np.array([1.0], np.float32))
    assert y[0] != np.float32(1e-8)


def test_integer_input_is_rejected_with_a_reason():
    with pytest.raises(TypeError, match="floating"):
        gradlib.straight_through(tf.round)(tf.constant([1, 2]))


def test_non_callables_are_rejected():
    with pytest.raises(TypeError, match="forward"):
        gradlib.straight_through(3.0)
    with pytest.raises(TypeError, match="backward"):
        gradlib.straight_through(tf.round, "identity")


def test_shape_mismatch_between_forward_and_backward_is_an_error():
    op = gradlib.straight_through(tf.reduce_sum, lambda x: x)
    with pytest.raises(ValueError, match="shape"):
        op(tf.constant([1.0, 2.0]))
