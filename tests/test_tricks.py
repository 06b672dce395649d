"""straight_through: value of forward, gradient of backward, checked against NumPy."""

import numpy as np
import pytest
import tensorflow as tf

import gradlib
from gradutil import value_and_grad

# Kink points (0, ±1 for a unit clip, the rounding ties ±0.5) plus ordinary values.
POINTS = np.array([-2.5, -1.0, -0.7, -0.5, 0.0, 0.3, 0.5, 1.0, 1.7], dtype=np.float32)


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


def bits(a):
    a = np.asarray(a)
    return a.view(np.int32 if a.dtype == np.float32 else np.int64)


# Pairs where the textbook g + sg(f - g) is off in the last bits, and tf.round,
# whose -0.0 at x in (-0.5, 0) an "+ (g - sg(g))" arrangement would turn into +0.0.
EXACTNESS = {
    "sigmoid, x": (tf.sigmoid, tf.identity),
    "sigmoid, 10x": (tf.sigmoid, lambda v: 10 * v),
    "exp, x": (tf.exp, tf.identity),
    "1e-8 x, 1e8 x": (lambda v: v * 1e-8, lambda v: v * 1e8),
    "round, x": (tf.round, tf.identity),
    "sign, tanh": (tf.sign, tf.tanh),
}
GRID = np.concatenate([np.linspace(-3, 3, 601), [-0.0, 0.0, -0.3, 1e-30, -1e-30, 1e-45, 3e38, -3e38]])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(EXACTNESS))
def test_forward_value_is_f_bit_for_bit(name, dtype):
    f, g = EXACTNESS[name]
    x = tf.constant(GRID.astype(dtype))
    with np.errstate(over="ignore"):
        expected = f(x).numpy()
    finite_g = np.isfinite(g(x).numpy())  # where g overflows the value is NaN (documented)
    # TensorFlow's CPU kernels flush subnormal numbers to zero in arithmetic;
    # a subnormal f(x) comes back as a zero of its sign (documented).
    subnormal = (expected != 0) & (np.abs(expected) < np.finfo(dtype).tiny)
    normal = finite_g & ~subnormal
    y = gradlib.straight_through(f, g)(x).numpy()
    np.testing.assert_array_equal(bits(y[normal]), bits(expected[normal]))
    assert np.all(np.isnan(y[~finite_g]))
    np.testing.assert_array_equal(bits(y[subnormal & finite_g]), bits(np.copysign(0.0, expected[subnormal & finite_g]).astype(dtype)))


def test_textbook_arrangement_is_not_bit_exact_but_ours_is():
    # The reference point of the test above: g + sg(f - g) loses f's low bits.
    x = tf.constant(GRID[:601].astype(np.float32))
    textbook = (x + tf.stop_gradient(tf.sigmoid(x) - x)).numpy()
    assert np.sum(bits(textbook) != bits(tf.sigmoid(x).numpy())) > 100
    assert np.array_equal(bits(gradlib.straight_through(tf.sigmoid)(x).numpy()), bits(tf.sigmoid(x).numpy()))


@pytest.mark.parametrize("jit_compile", [False, True])
def test_exact_inside_tf_function_and_xla(jit_compile):
    op = gradlib.straight_through(tf.sigmoid, lambda v: 10 * v)

    @tf.function(jit_compile=jit_compile)
    def value_and_gradient(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = op(x)
        return y, tape.gradient(y, x)

    x = tf.constant(GRID[:601].astype(np.float32))
    y, g = value_and_gradient(x)
    reference = tf.function(tf.sigmoid, jit_compile=jit_compile)(x).numpy()
    np.testing.assert_array_equal(bits(y.numpy()), bits(reference))
    np.testing.assert_array_equal(g.numpy(), np.full(601, 10.0, np.float32))


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
