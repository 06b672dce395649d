"""gradlib.value_and_grad: value and vector-Jacobian product, against independent references."""

import numpy as np
import pytest
import tensorflow as tf

import gradlib

X64 = np.array([-2.0, -0.5, 0.0, 0.3, 1.7], np.float64)


def test_value_and_vjp_of_a_non_elementwise_function_against_compute_gradient():
    fn = lambda v: tf.stack([tf.reduce_sum(v ** 2), tf.reduce_prod(tf.sin(v) + 2.0)])  # noqa: E731
    u = np.array([0.7, -1.3])
    y, g = gradlib.value_and_grad(fn, X64, u)
    theoretical, numerical = tf.test.compute_gradient(fn, [tf.constant(X64)])
    np.testing.assert_allclose(y, [np.sum(X64 ** 2), np.prod(np.sin(X64) + 2.0)], rtol=1e-14)
    np.testing.assert_allclose(g, theoretical[0].T @ u, rtol=1e-13)  # J^T u
    np.testing.assert_allclose(g, numerical[0].T @ u, rtol=1e-6)
    assert y.dtype == g.dtype == np.float64  # float64 stays float64


def test_no_upstream_is_the_gradient_of_the_sum_at_the_kinks():
    x = np.array([-1.0, 0.0, 1.0, 2.0], np.float32)
    y, g = gradlib.value_and_grad(tf.nn.relu, x)
    np.testing.assert_array_equal(y, np.maximum(x, 0))
    np.testing.assert_array_equal(g, [0.0, 0.0, 1.0, 1.0])  # TF's relu'(0) = 0
    assert g.dtype == np.float32


def test_upstream_multiplies_and_is_cast_to_the_output_dtype():
    _, g = gradlib.value_and_grad(lambda v: 3.0 * v, X64, [1, 2, 3, 4, 5])
    np.testing.assert_array_equal(g, [3.0, 6.0, 9.0, 12.0, 15.0])
    _, g = gradlib.value_and_grad(tf.exp, X64, np.full(5, np.inf))
    assert np.all(np.isposinf(g))  # non-finite upstream values pass through, as the tape gives them


def test_dtype_casts_first_and_variables_are_read():
    y, g = gradlib.value_and_grad(tf.square, [1, 2], [1.0, 0.5], dtype=tf.float64)
    np.testing.assert_array_equal(g, [2.0, 2.0])
    assert y.dtype == np.float64
    y, g = gradlib.value_and_grad(tf.square, tf.Variable([3.0]))
    np.testing.assert_array_equal(g, [6.0])


@pytest.mark.parametrize("fn", [tf.round, tf.stop_gradient, lambda v: tf.cast(v > 0, tf.int32)], ids=["round", "stop",
                                                                                                   "int"])
def test_no_gradient_is_none_not_zeros(fn):
    y, g = gradlib.value_and_grad(fn, np.array([0.4, 1.6], np.float32))
    assert g is None and y.shape == (2,)
