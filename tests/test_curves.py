"""curves: forward values and tape derivatives, against NumPy formulas."""

import numpy as np
import pytest
import tensorflow as tf

import gradlib

GRID = np.linspace(-2, 2, 9)  # contains 0, ±1, ±2


def test_smooth_function_matches_numpy_derivative():
    y, dydx = gradlib.curves(tf.sin, GRID, dtype=tf.float64)
    np.testing.assert_allclose(y, np.sin(GRID), rtol=1e-12)
    np.testing.assert_allclose(dydx, np.cos(GRID), rtol=1e-12)


def test_matches_tf_test_compute_gradient():
    fn = lambda v: v ** 3 - 2 * v  # noqa: E731
    theoretical, numerical = tf.test.compute_gradient(fn, [tf.constant(GRID)])
    _, dydx = gradlib.curves(fn, GRID, dtype=tf.float64)
    np.testing.assert_allclose(dydx, np.diag(numerical[0]), atol=1e-6)
    np.testing.assert_allclose(dydx, 3 * GRID ** 2 - 2, rtol=1e-12)


def test_kinks_follow_tensorflow_conventions():
    _, relu_grad = gradlib.curves(tf.nn.relu, GRID)
    np.testing.assert_array_equal(relu_grad, (GRID > 0).astype(np.float32))  # relu'(0) = 0
    _, abs_grad = gradlib.curves(tf.abs, GRID)
    np.testing.assert_array_equal(abs_grad, np.sign(GRID).astype(np.float32))  # abs'(0) = 0


def test_none_gradient_is_nan_by_default_not_zero():
    y, dydx = gradlib.curves(tf.round, GRID)
    np.testing.assert_array_equal(y, np.round(GRID).astype(np.float32))
    assert dydx.shape == GRID.shape and np.isnan(dydx).all()
    _, dydx = gradlib.curves(lambda x: tf.zeros_like(x) + 1.0, GRID)  # unconnected
    assert np.isnan(dydx).all()
    _, dydx = gradlib.curves(lambda x: tf.stop_gradient(x) * 2, GRID)
    assert np.isnan(dydx).all()


def test_a_real_zero_gradient_stays_zero():
    # tf.sign has a gradient, and it is 0: that must not become NaN.
    _, dydx = gradlib.curves(tf.sign, GRID)
    np.testing.assert_array_equal(dydx, np.zeros_like(GRID, dtype=np.float32))


def test_unconnected_zero_asks_for_zeros():
    _, dydx = gradlib.curves(tf.round, GRID, unconnected="zero")
    assert dydx.dtype == np.float32
    np.testing.assert_array_equal(dydx, np.zeros_like(GRID, dtype=np.float32))
    _, dydx = gradlib.curves(tf.round, GRID, dtype=tf.float64, unconnected="zero")
    assert dydx.dtype == np.float64 and not dydx.any()


def test_integer_grid_and_shapes():
    y, dydx = gradlib.curves(tf.square, [[-1, 0], [2, 3]])
    assert y.dtype == np.float32 and dydx.shape == (2, 2)
    np.testing.assert_array_equal(dydx, [[-2, 0], [4, 6]])


def test_non_elementwise_function_gives_gradient_of_the_sum():
    x = np.array([1.0, -2.0, 3.0])
    _, dydx = gradlib.curves(lambda v: v * tf.reduce_sum(v), x, dtype=tf.float64)
    np.testing.assert_allclose(dydx, np.full_like(x, 2 * x.sum()))  # d/dx_k sum_i x_i S = 2S


@pytest.mark.parametrize(
    "fn, x, kwargs, error, message",
    [
        (tf.sin, np.array([1 + 2j]), {}, TypeError, "real numbers"),
        (tf.sin, np.array(["a"]), {}, TypeError, "real numbers"),
        (tf.sin, GRID, {"dtype": tf.int32}, TypeError, "dtype"),
        ("sin", GRID, {}, TypeError, "fn"),
        (lambda x: None, GRID, {}, TypeError, "None"),
        (tf.reduce_sum, GRID, {}, ValueError, "shape"),
        (tf.sin, GRID, {"unconnected": "zeros"}, ValueError, "unconnected"),
        (tf.sin, GRID, {"unconnected": None}, ValueError, "unconnected"),
    ],
)
def test_bad_input_is_named(fn, x, kwargs, error, message):
    with pytest.raises(error, match=message):
        gradlib.curves(fn, x, **kwargs)
