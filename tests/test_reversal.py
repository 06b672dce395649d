"""gradient_reversal and its Keras layer; three implementations agree."""

import numpy as np
import pytest
import tensorflow as tf

import gradlib
from gradutil import value_and_grad

X = np.array([-1.5, 0.0, 0.5, 2.0], np.float32)
DY = np.array([1.0, -2.0, 0.5, 3.0], np.float32)


def grad_of(op, x=X, dy=DY):
    return value_and_grad(op, x, dy)


@pytest.mark.parametrize("lam", [1.0, 0.25, 3, tf.constant(0.5), tf.Variable(2.0)], ids=str)
def test_identity_forward_and_minus_lambda_backward(lam):
    y, g = grad_of(lambda x: gradlib.gradient_reversal(x, lam))
    np.testing.assert_array_equal(y, X)
    np.testing.assert_allclose(g, -float(np.asarray(lam)) * DY)


def test_three_implementations_agree():
    lam = 0.7
    _, custom = grad_of(lambda x: gradlib.gradient_reversal(x, lam))
    _, trick = grad_of(gradlib.straight_through(tf.identity, lambda x: -lam * x))

    @gradlib.register_gradient("GradlibTestReverse")
    def reverse(op, grad):
        return -lam * grad

    def build():
        x = tf.constant(X)
        with tf.compat.v1.get_default_graph().gradient_override_map({"Identity": "GradlibTestReverse"}):
            y = tf.identity(x)
        return tf.gradients(y, x, grad_ys=tf.constant(DY))[0]

    override = gradlib.run_graph(build)
    np.testing.assert_allclose(custom, -lam * DY)
    np.testing.assert_allclose(trick, custom, rtol=1e-6)
    np.testing.assert_allclose(override, custom, rtol=1e-6)


def test_a_variable_schedule_changes_lambda_without_retracing():
    lam = tf.Variable(0.0)

    @tf.function
    def reversed_gradient(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = gradlib.gradient_reversal(x, lam)
        return tape.gradient(y, x)

    x = tf.constant(X)
    seen = []
    for p in np.linspace(0, 1, 5):
        lam.assign(2 / (1 + np.exp(-10 * p)) - 1)  # the DANN schedule
        seen.append(reversed_gradient(x).numpy()[0])
    assert reversed_gradient.experimental_get_tracing_count() == 1
    np.testing.assert_allclose(seen, [-(2 / (1 + np.exp(-10 * p)) - 1) for p in np.linspace(0, 1, 5)], rtol=1e-6)


def test_python_numbers_retrace_a_tf_function():
    # Documented contrast: a new Python float is a new trace.
    f = tf.function(lambda x, lam: gradlib.gradient_reversal(x, lam))
    for lam in (0.1, 0.2, 0.3):
        f(tf.constant(X), lam)
    assert f.experimental_get_tracing_count() == 3


def test_lambda_gets_no_gradient():
    lam = tf.Variable(0.5)
    x = tf.constant(X)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(gradlib.gradient_reversal(x, lam))
    assert tape.gradient(y, lam) is None


def test_keras_layer_reverses_and_follows_assign():
    layer = gradlib.GradientReversal(lam=1.0)
    dense = tf.keras.layers.Dense(1, kernel_initializer="ones", use_bias=False)
    x = tf.constant([[1.0, 2.0]])
    for lam in (1.0, 0.5):
        layer.lam.assign(lam)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = dense(layer(x))
        np.testing.assert_allclose(tape.gradient(y, x).numpy(), [[-lam, -lam]])
    assert layer.get_config()["lam"] == 1.0
    assert layer.trainable_weights == []


@pytest.mark.parametrize(
    "x, lam, error, name",
    [
        (tf.constant([1, 2]), 1.0, TypeError, "floating"),
        (X, "big", TypeError, "lam"),
        (X, True, TypeError, "lam"),
        (X, [1.0, 2.0], ValueError, "scalar"),
    ],
)
def test_bad_input(x, lam, error, name):
    with pytest.raises(error, match=name):
        gradlib.gradient_reversal(x, lam)


def test_a_lambda_is_checked_in_the_dtype_of_x():
    # 1e39 overflows float32 (refused, tests/test_bad_input.py) but is a float64 number.
    x = tf.constant([1.0, -2.0], tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = gradlib.gradient_reversal(x, 1e39)
    np.testing.assert_array_equal(tape.gradient(y, x), [-1e39, -1e39])
    with tf.GradientTape() as tape:  # a 0-d NumPy array that is finite still works
        tape.watch(x)
        y = gradlib.gradient_reversal(x, np.array(0.5))
    np.testing.assert_array_equal(tape.gradient(y, x), [-0.5, -0.5])
