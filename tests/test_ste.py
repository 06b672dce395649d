"""Straight-through estimators against NumPy forward and reference gradients.

Inputs always contain 0, the clip points ±clip and the DoReFa range ends 0, 1.
"""

import numpy as np
import pytest
import tensorflow as tf

import gradlib
import gradutil
from gradutil import upstream_like

CLIP = 0.75
X = np.array([-2.0, -1.0, -CLIP, -0.5, -0.25, 0.0, 0.25, 0.5, CLIP, 1.0, 1.3, 2.0], np.float32)
UPSTREAM = upstream_like(X)  # non-uniform dy catches a dropped dy


def value_and_grad(op, x=X, upstream=UPSTREAM):
    return gradutil.value_and_grad(op, x, upstream)


def np_sign(x):
    return np.where(x >= 0, 1.0, -1.0).astype(np.float32)


REFERENCES = {
    "ste_round": (gradlib.ste_round, np.round, lambda x: np.ones_like(x)),
    "ste_sign": (gradlib.ste_sign, np_sign, lambda x: np.ones_like(x)),
    "ste_sign_clip": (lambda x: gradlib.ste_sign(x, clip=CLIP), np_sign,
                      lambda x: (np.abs(x) <= CLIP).astype(np.float32)),
    "xnor_binarize": (gradlib.xnor_binarize, lambda x: np_sign(x) * np.mean(np.abs(x)), lambda x: np.ones_like(x)),
    "dorefa_2bit": (lambda x: gradlib.dorefa_quantize(x, 2), lambda x: np.round(np.clip(x, 0, 1) * 3) / 3,
                    lambda x: ((x >= 0) & (x <= 1)).astype(np.float32)),
    "dorefa_1bit": (lambda x: gradlib.dorefa_quantize(x, 1), lambda x: np.round(np.clip(x, 0, 1)),
                    lambda x: ((x >= 0) & (x <= 1)).astype(np.float32)),
}


@pytest.mark.parametrize("name", REFERENCES)
def test_forward_and_gradient_match_numpy(name):
    op, forward, derivative = REFERENCES[name]
    y, g = value_and_grad(op)
    np.testing.assert_allclose(y, forward(X), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(g, UPSTREAM * derivative(X), rtol=1e-6)


def test_sign_of_zero_is_plus_one_unlike_tf_sign():
    assert gradlib.ste_sign(tf.constant([0.0])).numpy()[0] == 1.0
    assert tf.sign(tf.constant([0.0])).numpy()[0] == 0.0  # the trap
    assert set(np.unique(gradlib.ste_sign(tf.constant(X)).numpy())) == {-1.0, 1.0}


@pytest.mark.parametrize("name", ["ste_round", "ste_sign_clip", "dorefa_2bit"])
def test_same_gradient_in_tf_function_and_with_tf_gradients(name):
    op, _, derivative = REFERENCES[name]
    graph = tf.function(lambda x: tf.gradients(op(x), x)[0])(tf.constant(X)).numpy()
    np.testing.assert_allclose(graph, derivative(X))

    def build():
        x = tf.constant(X)
        return tf.gradients(op(x), x)[0]

    np.testing.assert_allclose(gradlib.run_graph(build), derivative(X))


def test_variables_are_accepted_and_trained():
    w = tf.Variable(X)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(gradlib.ste_sign(w, clip=CLIP) * UPSTREAM)
    np.testing.assert_allclose(tape.gradient(loss, w).numpy(), UPSTREAM * (np.abs(X) <= CLIP))


SURROGATE_DERIVATIVES = {
    "identity": lambda x: np.ones_like(x),
    "clipped": lambda x: (np.abs(x) <= CLIP).astype(np.float32),
    "approx_sign": lambda x: np.maximum(0, 2 - 2 * np.abs(x)),
    "swish_sign": lambda x: 3 * (2 - 3 * x * np.tanh(1.5 * x)) / (1 + np.cosh(3 * x)),
    "tanh": lambda x: 1 - np.tanh(x) ** 2,
}


@pytest.mark.parametrize("surrogate", list(gradlib.SIGN_SURROGATES))
def test_sign_surrogates(surrogate):
    y, g = value_and_grad(lambda x: gradlib.sign_with_surrogate(x, surrogate, clip=CLIP, beta=3.0))
    np.testing.assert_array_equal(y, np_sign(X))
    np.testing.assert_allclose(g, UPSTREAM * SURROGATE_DERIVATIVES[surrogate](X), rtol=1e-5, atol=1e-6)


def test_swish_sign_derivative_is_the_derivative_of_its_smooth_function():
    beta = 3.0
    smooth = lambda v: 2 * tf.sigmoid(beta * v) * (1 + beta * v * (1 - tf.sigmoid(beta * v))) - 1  # noqa: E731
    x = tf.constant(X.astype(np.float64))
    theoretical, numerical = tf.test.compute_gradient(smooth, [x])
    expected = SURROGATE_DERIVATIVES["swish_sign"](X.astype(np.float64))
    np.testing.assert_allclose(np.diag(theoretical[0]), expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.diag(numerical[0]), expected, atol=1e-4)  # FD step 1e-3
    # and the smooth function is sigmoid-shaped: -1 .. +1
    assert np.allclose(smooth(tf.constant([-50.0, 50.0])).numpy(), [-1, 1])
    assert smooth(tf.constant(0.0)).numpy() == 0.0  # odd: sign's jump is at 0


KERNEL = np.array([[0.3, -1.2, 0.0], [0.8, -0.1, -2.5], [0.0, 0.5, 1.1], [-0.4, 0.9, 0.2]], np.float32)  # (inputs, filters)


@pytest.mark.parametrize("axis, reduce_over", [(None, None), (0, (0,)), (-2, (0,)), ((0,), (0,)), (1, (1,)),
                                               ((0, 1), (0, 1))])
def test_xnor_scale_per_filter_against_numpy(axis, reduce_over):
    upstream = np.linspace(-1.0, 2.0, KERNEL.size).reshape(KERNEL.shape).astype(np.float32)
    y, g = value_and_grad(lambda w: gradlib.xnor_binarize(w, axis=axis), KERNEL, upstream)
    scale = np.mean(np.abs(KERNEL), axis=reduce_over, keepdims=reduce_over is not None)
    np.testing.assert_allclose(y, np_sign(KERNEL) * scale, rtol=1e-6)
    np.testing.assert_array_equal(g, upstream)  # identity: no E factor, no clip, no term through E


def test_xnor_axis_0_is_one_scale_per_output_filter():
    y = gradlib.xnor_binarize(tf.constant(KERNEL), axis=0).numpy()
    per_filter = np.abs(y).max(axis=0)
    np.testing.assert_allclose(np.abs(y), np.broadcast_to(per_filter, KERNEL.shape))  # |y| constant per column
    np.testing.assert_allclose(per_filter, np.abs(KERNEL).mean(axis=0), rtol=1e-6)
    assert len(set(np.round(per_filter, 6))) == 3  # three filters, three scales


def test_xnor_backward_is_the_straight_through_gradient_of_sign_x_over_stopped_e():
    # The docstring's claim, against chapter 3's third version built from plain TF ops.
    w = tf.constant(KERNEL)
    upstream = tf.constant(np.linspace(-1.0, 2.0, KERNEL.size).reshape(KERNEL.shape).astype(np.float32))

    def third_version(v):
        e = tf.stop_gradient(tf.reduce_mean(tf.abs(v), axis=0, keepdims=True))
        return gradlib.straight_through(lambda u: tf.where(u >= 0, 1.0, -1.0))(v / e) * e

    with tf.GradientTape(persistent=True) as tape:
        tape.watch(w)
        ours, reference = gradlib.xnor_binarize(w, axis=0), third_version(w)
    np.testing.assert_allclose(ours.numpy(), reference.numpy(), rtol=1e-6)
    np.testing.assert_allclose(tape.gradient(ours, w, output_gradients=upstream).numpy(),
                               tape.gradient(reference, w, output_gradients=upstream).numpy(), rtol=1e-6)


def test_grad_pass_through_is_tensorflows_own_shortcut():
    y, g = value_and_grad(tf.grad_pass_through(tf.round))
    np.testing.assert_array_equal(y, np.round(X))
    np.testing.assert_array_equal(g, UPSTREAM)


@pytest.mark.parametrize(
    "call, error, name",
    [
        (lambda: gradlib.ste_round(tf.constant([1, 2])), TypeError, "floating"),
        (lambda: gradlib.ste_sign(tf.constant([1, 2])), TypeError, "floating"),
        (lambda: gradlib.xnor_binarize(np.array([1, 2])), TypeError, "floating"),
        (lambda: gradlib.xnor_binarize(KERNEL, axis=2), ValueError, "axis"),
        (lambda: gradlib.xnor_binarize(KERNEL, axis=-3), ValueError, "axis"),
        (lambda: gradlib.xnor_binarize(KERNEL, axis=(0, -2)), ValueError, "axis"),
        (lambda: gradlib.xnor_binarize(KERNEL, axis=0.0), TypeError, "axis"),
        (lambda: gradlib.xnor_binarize(KERNEL, axis=True), TypeError, "axis"),
        (lambda: gradlib.xnor_binarize(KERNEL, axis="0"), TypeError, "axis"),
        (lambda: gradlib.dorefa_quantize(tf.constant([1], tf.int64), 2), TypeError, "floating"),
        (lambda: gradlib.ste_sign(X, clip=0), ValueError, "clip"),
        (lambda: gradlib.ste_sign(X, clip=-1.0), ValueError, "clip"),
        (lambda: gradlib.ste_sign(X, clip="1"), ValueError, "clip"),
        (lambda: gradlib.dorefa_quantize(X, 0), ValueError, "bits"),
        (lambda: gradlib.dorefa_quantize(X, -2), ValueError, "bits"),
        (lambda: gradlib.dorefa_quantize(X, 2.5), ValueError, "bits"),
        (lambda: gradlib.dorefa_quantize(X, True), ValueError, "bits"),
        (lambda: gradlib.dorefa_quantize(X, "4"), ValueError, "bits"),
        (lambda: gradlib.sign_with_surrogate(X, "nope"), ValueError, "surrogate"),
        (lambda: gradlib.sign_with_surrogate(X, "swish_sign", beta=0), ValueError, "beta"),
    ],
)
def test_bad_input_names_the_argument(call, error, name):
    with pytest.raises(error, match=name):
        call()


def test_nan_input_gives_nan_not_a_silent_minus_one():
    x = tf.constant([np.nan, -0.0, np.inf, -np.inf], tf.float32)
    for op in (gradlib.ste_sign, lambda v: gradlib.ste_sign(v, clip=1.0), gradlib.xnor_binarize,
               lambda v: gradlib.sign_with_surrogate(v, "swish_sign")):
        y = op(x).numpy()
        assert np.isnan(y[0]), op
    np.testing.assert_array_equal(gradlib.ste_sign(x).numpy()[1:], [1.0, 1.0, -1.0])  # sign(-0) = +1
    assert np.isnan(tf.sign(x).numpy()[0])  # as TensorFlow's own sign


def test_swish_sign_gradient_is_zero_not_nan_for_huge_inputs():
    x = tf.constant([1e37, 1e38, 3e38, -3e38, 17.0, -15.9], tf.float32)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = gradlib.sign_with_surrogate(x, "swish_sign", beta=5.0)
    g = tape.gradient(y, x).numpy()
    assert np.all(np.isfinite(g)) and np.all(np.abs(g[:4]) == 0)
    b = 5.0 * np.array([17.0, -15.9], np.float64)  # just past and just before the cut at |beta x| = 80
    reference = 5.0 * (2 - b * np.tanh(b / 2)) / (1 + np.cosh(b))
    np.testing.assert_allclose(g[4:], reference, atol=1e-33)


# -- a blocked position passes nothing, whatever the upstream gradient (P9) --------------------

# Each op with the points where its surrogate derivative is 0, and where it is not (kinks included).
BLOCKING = {
    "ste_sign_clip": (lambda x: gradlib.ste_sign(x, clip=CLIP), lambda x: np.abs(x) <= CLIP),
    "dorefa_2bit": (lambda x: gradlib.dorefa_quantize(x, 2), lambda x: (x >= 0) & (x <= 1)),
    "clipped": (lambda x: gradlib.sign_with_surrogate(x, "clipped", clip=CLIP), lambda x: np.abs(x) <= CLIP),
    "approx_sign": (lambda x: gradlib.sign_with_surrogate(x, "approx_sign"), lambda x: np.abs(x) < 1),
    "swish_sign": (lambda x: gradlib.sign_with_surrogate(x, "swish_sign", beta=50.0), lambda x: np.abs(50 * x) <= 80),
}
KINKS = np.array([-3.0, -2.0, -1.0, -CLIP, -0.5, 0.0, 0.5, CLIP, 1.0, 1.3, 2.0, 3.0], np.float32)
MASKING = {"ste_sign_clip", "dorefa_2bit", "clipped"}  # 0/1 derivatives: tf.where(mask, dy, 0), as larq


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan], ids=["inf", "-inf", "nan"])
@pytest.mark.parametrize("name", BLOCKING)
def test_a_blocked_position_gives_zero_for_a_non_finite_upstream(name, bad):
    op, passes = BLOCKING[name]
    upstream = np.full(KINKS.shape, bad, np.float32)
    _, g = value_and_grad(op, KINKS, upstream)
    blocked = ~passes(KINKS)
    assert blocked.any() and (~blocked).any()
    np.testing.assert_array_equal(g[blocked], 0.0)  # not inf * 0 = NaN
    if name != "swish_sign":  # swish passes a finite non-unit factor (bad * d); the others pass dy itself
        np.testing.assert_array_equal(g[~blocked], upstream[~blocked])


@pytest.mark.parametrize("name", BLOCKING)
def test_finite_upstream_gradients_are_bit_identical_to_the_product(name):
    op, _ = BLOCKING[name]
    upstream = np.linspace(-2.0, 2.0, KINKS.size).astype(np.float32)  # negative dy: blocked gives -0.0
    _, g = value_and_grad(op, KINKS, upstream)
    x = tf.constant(KINKS)
    with tf.GradientTape() as tape:
        tape.watch(x)
        ones = op(x)
    derivative = tape.gradient(ones, x).numpy()  # dy = 1: the surrogate derivative itself
    product = upstream * derivative
    np.testing.assert_array_equal(g, product)
    if name in MASKING:  # a 0/1 derivative: dy itself where it passes, exactly +0 where it blocks
        blocked = derivative == 0
        assert blocked.any() and not np.signbit(g[blocked]).any()
        np.testing.assert_array_equal(np.signbit(g[~blocked]), np.signbit(upstream[~blocked]))
    else:
        np.testing.assert_array_equal(np.signbit(g), np.signbit(product))
