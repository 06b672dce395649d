"""gradlib.hvp and gradlib.fixed_point against independent references.

hvp: the Hessian of each test function is written out with NumPy (float64),
and a kink (ReLU at 0) and a function with a large input are included.
fixed_point: the implicit derivative of z = a cos z is cos z / (1 + a sin z)
(the contract's formula); a vector equilibrium z = tanh(W z + x) is checked
against the implicit function theorem solved with numpy.linalg.solve, against
finite differences (tf.test.compute_gradient) and against a long unrolled
iteration.  The memory claim is tested by what the tape keeps alive.
"""

import gc
import weakref

import numpy as np
import pytest
import tensorflow as tf

import gradlib
from gradlib import FixedPointError, fixed_point, hvp

MODES = ["forward-over-reverse", "reverse-over-reverse"]
RNG = np.random.default_rng(14)


# -- hvp --------------------------------------------------------------------------------------

def _quadratic_plus_sin(n):
    a = RNG.normal(size=(n, n))
    b = RNG.normal(size=n)

    def f(x):
        x = tf.convert_to_tensor(x)
        return 0.5 * tf.tensordot(x, tf.linalg.matvec(tf.constant(a, x.dtype), x), 1) + tf.reduce_sum(
            tf.sin(x) * tf.constant(b, x.dtype))

    def hessian(x):
        return 0.5 * (a + a.T) + np.diag(-np.sin(x) * b)

    return f, hessian


def _rosenbrock():
    def f(x):
        return tf.reduce_sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

    def hessian(x):
        n = x.size
        h = np.zeros((n, n))
        for i in range(n - 1):
            h[i, i] += 1200 * x[i] ** 2 - 400 * x[i + 1] + 2
            h[i, i + 1] += -400 * x[i]
            h[i + 1, i] += -400 * x[i]
            h[i + 1, i + 1] += 200
        return h

    return f, hessian


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", ["quadratic_plus_sin", "rosenbrock"])
def test_hvp_matches_the_numpy_hessian_in_float64(mode, case):
    f, hessian = _quadratic_plus_sin(5) if case == "quadratic_plus_sin" else _rosenbrock()
    x = RNG.normal(size=5)
    x[2] = 0.0  # a zero coordinate
    for v in (RNG.normal(size=5), np.eye(5)[0], np.zeros(5)):
        got = hvp(f, tf.constant(x), tf.constant(v), mode=mode)
        assert got.dtype == tf.float64 and got.shape == (5,)
        np.testing.assert_allclose(got.numpy(), hessian(x) @ v, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode", MODES)
def test_hvp_of_a_matrix_input_keeps_its_shape(mode):
    w = RNG.normal(size=(2, 3))
    v = RNG.normal(size=(2, 3))
    got = hvp(lambda w: tf.reduce_sum(w ** 4), tf.constant(w), tf.constant(v), mode=mode)
    assert got.shape == (2, 3)
    np.testing.assert_allclose(got.numpy(), 12 * w ** 2 * v, rtol=1e-12)


@pytest.mark.parametrize("mode", MODES)
def test_hvp_float32_and_a_variable(mode):
    x = tf.Variable(np.array([0.5, -1.0, 2.0], np.float32))
    v = tf.constant([1.0, 2.0, -1.0])
    got = hvp(lambda x: tf.reduce_sum(tf.exp(x)), x, v, mode=mode)
    assert got.dtype == tf.float32
    np.testing.assert_allclose(got.numpy(), np.exp(x.numpy()) * v.numpy(), rtol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_hvp_at_a_kink_and_at_extreme_inputs(mode):
    # ReLU's second derivative is 0 everywhere TensorFlow defines it, 0 included
    got = hvp(lambda x: tf.reduce_sum(tf.nn.relu(x) ** 2), tf.constant([-1.0, 0.0, 2.0], tf.float64),
              tf.ones(3, tf.float64), mode=mode)
    np.testing.assert_array_equal(got.numpy(), [0.0, 0.0, 2.0])  # 2·1{x > 0}: TensorFlow's ReLU gradient at 0 is 0
    # softplus'' = σ(x)σ(-x) ≈ e^-20 at x = ±20; TensorFlow computes σ(x)(1 - σ(x)), whose cancellation
    # at x = 20 in float64 costs about 1e-16 / 2e-9 relative: finite, never NaN, right to 1e-6
    x = np.array([-20.0, 0.0, 20.0])
    got = hvp(lambda x: tf.reduce_sum(tf.nn.softplus(x)), tf.constant(x), tf.ones(3, tf.float64), mode=mode)
    expected = 1 / (1 + np.exp(-x)) / (1 + np.exp(x))
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-6, atol=0)


def test_hvp_through_custom_gradients():
    @tf.custom_gradient
    def cube_tf(x):
        return x ** 3, lambda dy: dy * 3 * x ** 2

    @tf.custom_gradient
    def cube_numpy(x):
        return x ** 3, lambda dy: dy * (3 * x.numpy() ** 2)

    x = tf.constant([1.0, -2.0], tf.float64)
    v = tf.constant([1.0, 1.0], tf.float64)
    for mode in MODES:
        np.testing.assert_allclose(hvp(lambda x: tf.reduce_sum(cube_tf(x)), x, v, mode=mode).numpy(), [6.0, -12.0])
        with pytest.raises(ValueError, match="a backward pass that left TensorFlow"):
            hvp(lambda x: tf.reduce_sum(cube_numpy(x)), x, v, mode=mode)
        # a linear f: the Hessian is zero, on request
        np.testing.assert_array_equal(hvp(lambda x: tf.reduce_sum(3 * x), x, v, mode=mode, unconnected="zero"), [0, 0])


def test_hvp_of_a_list_of_weights_and_a_python_list_direction():
    w = tf.Variable(RNG.normal(size=(3, 2)))
    b = tf.Variable(RNG.normal(size=2))
    x = RNG.normal(size=(4, 3))

    def loss(weights):
        w, b = weights
        return tf.reduce_sum(tf.nn.softplus(x @ w + b))

    vw, vb = RNG.normal(size=(3, 2)), RNG.normal(size=2)
    for mode in MODES:
        hw, hb = hvp(loss, [w, b], [tf.constant(vw), tf.constant(vb)], mode=mode)
        # NumPy: s = xW + b, d²L = Σ σ'(s) ds², ds = x·dW + db
        s = x @ w.numpy() + b.numpy()
        sp = 1 / (1 + np.exp(-s)) / (1 + np.exp(s))
        ds = x @ vw + vb
        np.testing.assert_allclose(hw.numpy(), x.T @ (sp * ds), rtol=1e-12)
        np.testing.assert_allclose(hb.numpy(), (sp * ds).sum(axis=0), rtol=1e-12)
    # a Python list as v takes x's dtype (float64 here)
    got = hvp(lambda x: tf.reduce_sum(x ** 3), tf.constant([1.0, 2.0], tf.float64), [1.0, -1.0])
    np.testing.assert_array_equal(got.numpy(), [6.0, -12.0])
    with pytest.raises(ValueError, match="`v` must be a list of 2 tensors"):
        hvp(loss, [w, b], tf.constant(vw))


def test_hvp_of_a_keras_models_weights():
    import keras

    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, activation="softplus", dtype="float64"),
                              keras.layers.Dense(1, dtype="float64")])
    x = tf.constant(RNG.normal(size=(5, 3)))
    weights = model.trainable_variables  # Keras 3 variables, not tf.Variable

    def loss(_):
        return tf.reduce_sum(model(x) ** 2)

    vs = [tf.constant(RNG.normal(size=w.shape)) for w in weights]
    got = hvp(loss, weights, vs)
    # the same product from the flat Hessian of the loss in the weights, by finite differences of the gradient
    def gradient_at(shift):
        for w, v in zip(weights, vs):
            w.assign_add(shift * v.numpy())
        with tf.GradientTape() as tape:
            value = loss(None)
        grads = tape.gradient(value, weights)
        for w, v in zip(weights, vs):
            w.assign_sub(shift * v.numpy())
        return [g.numpy() for g in grads]
    h = 1e-5
    plus, minus = gradient_at(h), gradient_at(-h)
    for g, p, m in zip(got, plus, minus):
        np.testing.assert_allclose(g.numpy(), (p - m) / (2 * h), rtol=1e-5, atol=1e-8)


def test_a_partly_unconnected_second_derivative_is_a_silent_loss_hvp_cannot_see():
    """A NumPy backward inside sin(.): H·v is connected through sin, so no error, and it is wrong."""
    @tf.custom_gradient
    def cube_numpy(x):
        return x ** 3, lambda dy: dy * (3 * x.numpy() ** 2)

    x = tf.constant([0.5], tf.float64)
    got = float(hvp(lambda x: tf.reduce_sum(tf.sin(cube_numpy(x))), x, tf.ones(1, tf.float64))[0])
    exact = -9 * 0.5 ** 4 * np.sin(0.125) + 6 * 0.5 * np.cos(0.125)
    assert np.isfinite(got) and abs(got - exact) > 1.0  # documented in hvp's message and chapter 8


def test_a_custom_second_derivative_is_used_backward_over_backward_only():
    """ForwardAccumulator differentiates the operations that ran (here differentiable ones); it falls back on a
    grad_fn only where they give no tangent."""
    @tf.custom_gradient
    def first(x):
        return 3 * x ** 2, lambda ddy: ddy * 100.0  # a deliberately "wrong" custom second derivative

    @tf.custom_gradient
    def cube(x):
        return x ** 3, lambda dy: dy * first(x)

    x, v = tf.constant([1.0, 2.0], tf.float64), tf.constant([1.0, 1.0], tf.float64)
    f = lambda x: tf.reduce_sum(cube(x))  # noqa: E731
    np.testing.assert_array_equal(hvp(f, x, v).numpy(), [100.0, 100.0])  # the default: reverse over reverse
    np.testing.assert_array_equal(hvp(f, x, v, mode="forward-over-reverse").numpy(), [6.0, 12.0])


def test_hvp_bad_input():
    x = tf.constant([1.0, 2.0])
    f = lambda x: tf.reduce_sum(x ** 3)  # noqa: E731
    with pytest.raises(ValueError, match="must return a scalar"):
        hvp(lambda x: x ** 3, x, x)
    with pytest.raises(ValueError, match=r"`v` has shape \[3\]"):
        hvp(f, x, tf.ones(3))
    with pytest.raises(TypeError, match="`v` has dtype float64 but `x` has dtype float32"):
        hvp(f, x, tf.ones(2, tf.float64))
    with pytest.raises(TypeError, match="`x` has dtype int32"):
        hvp(f, tf.constant([1, 2]), tf.constant([1, 2]))
    with pytest.raises(ValueError, match="`mode` must be one of"):
        hvp(f, x, x, mode="forward")
    with pytest.raises(ValueError, match="with respect to `x` is None"):
        hvp(lambda x: tf.reduce_sum(tf.round(x)), x, x)
    with pytest.raises(TypeError, match="`f` must be callable"):
        hvp(None, x, x)


# -- fixed_point ------------------------------------------------------------------------------

def kepler(z, a):
    return a * tf.cos(z)


def kepler_derivative(z, a):
    return np.cos(z) / (1 + a * np.sin(z))


@pytest.mark.parametrize("dtype, rtol", [(tf.float32, 2e-5), (tf.float64, 1e-12)])
def test_fixed_point_of_a_cos_z_matches_the_formula(dtype, rtol):
    a = np.array([-0.9, -0.3, 0.0, 0.3, 0.7, 1.0, 1.2])
    a_t = tf.constant(a, dtype)
    upstream = np.linspace(0.5, 2.0, a.size)
    with tf.GradientTape() as tape:
        tape.watch(a_t)
        z = fixed_point(kepler, tf.zeros_like(a_t), a_t)
    assert z.dtype == dtype and z.shape == a.shape
    grad = tape.gradient(z, a_t, output_gradients=tf.constant(upstream, dtype))
    z = z.numpy().astype(np.float64)
    np.testing.assert_allclose(z, a * np.cos(z), rtol=rtol, atol=rtol)
    np.testing.assert_allclose(grad.numpy(), upstream * kepler_derivative(z, a), rtol=10 * rtol, atol=10 * rtol)
    assert float(grad[2]) == pytest.approx(upstream[2])  # a = 0: z* = 0, dz/da = cos 0 / 1 = 1


def test_fixed_point_in_a_tf_function_and_with_variables():
    a = tf.Variable(0.7, dtype=tf.float64)
    expected = None

    def eager_read_inside():
        with tf.GradientTape() as tape:
            z = fixed_point(lambda z: a * tf.cos(z), tf.constant(0.0, tf.float64))
        return z, tape.gradient(z, a)

    def eager_as_param():
        with tf.GradientTape() as tape:
            z = fixed_point(kepler, tf.constant(0.0, tf.float64), a)
        return z, tape.gradient(z, a)

    for fn in (eager_read_inside, eager_as_param, tf.function(eager_read_inside), tf.function(eager_as_param)):
        z, grad = fn()
        expected = kepler_derivative(z.numpy(), 0.7)
        assert grad.numpy() == pytest.approx(expected, rel=1e-12), fn


def test_fixed_point_gradient_of_a_keras_layer_equilibrium():
    """z = tanh(W z + U x + b), a deep-equilibrium layer: W, U, b are a Keras layer's weights read inside f."""
    import keras

    n, d = 4, 3
    rng = np.random.default_rng(0)
    w = 0.3 * rng.normal(size=(n, n)) / np.sqrt(n)  # a contraction
    x = rng.normal(size=(2, d))
    dense_w = keras.layers.Dense(n, use_bias=False, dtype="float64")
    dense_u = keras.layers.Dense(n, dtype="float64")
    dense_w.build((None, n))
    dense_u.build((None, d))
    dense_w.kernel.assign(w)
    x_t = tf.constant(x)

    def f(z, x):
        return tf.tanh(dense_w(z) + dense_u(x))

    upstream = rng.normal(size=(2, n))
    with tf.GradientTape() as tape:
        tape.watch(x_t)
        z = fixed_point(f, tf.zeros((2, n), tf.float64), x_t)
    grads = tape.gradient(z, [x_t, dense_w.kernel, dense_u.kernel, dense_u.bias], output_gradients=tf.constant(upstream))

    # NumPy: implicit function theorem per example, z = tanh(s), s = z W + x U + b
    u_k, b = dense_u.kernel.numpy(), dense_u.bias.numpy()
    z = z.numpy()
    expected = [np.zeros_like(x), np.zeros_like(w), np.zeros_like(u_k), np.zeros_like(b)]
    for i in range(2):
        s = z[i] @ w + x[i] @ u_k + b
        d = 1 - np.tanh(s) ** 2                      # dz/ds
        jac_z = (w * d[None, :])                      # dz_j/dz_k = W[k, j] d_j, as a (k, j) matrix: z_row @ jac
        # upstream row g: u = g + u @ jac_z.T ... solve u (I - jac_z.T) = g
        u = np.linalg.solve((np.eye(n) - jac_z.T).T, upstream[i])
        r = u * d                                     # dL/ds
        expected[0][i] = u_k @ r
        expected[1] += np.outer(z[i], r)
        expected[2] += np.outer(x[i], r)
        expected[3] += r
    for got, want in zip(grads, expected):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-9, atol=1e-12)


def test_fixed_point_matches_finite_differences_and_long_unrolling():
    rng = np.random.default_rng(1)
    w = tf.constant(0.4 * rng.normal(size=(3, 3)) / np.sqrt(3))

    def solve(x):
        return fixed_point(lambda z, x: tf.tanh(tf.linalg.matvec(w, z) + x), tf.zeros(3, tf.float64), x)

    x = tf.constant([0.2, -0.5, 1.0], tf.float64)
    theoretical, numerical = tf.test.compute_gradient(solve, [x], delta=1e-6)
    np.testing.assert_allclose(theoretical[0], numerical[0], rtol=1e-7, atol=1e-8)

    with tf.GradientTape() as tape:
        tape.watch(x)
        z = tf.zeros(3, tf.float64)
        for _ in range(200):
            z = tf.tanh(tf.linalg.matvec(w, z) + x)
    np.testing.assert_allclose(theoretical[0], tape.jacobian(z, x).numpy(), rtol=1e-10, atol=1e-12)


def test_fixed_point_meets_its_tolerance_and_z0_gets_a_zero_gradient():
    a = tf.constant(0.99, tf.float64)  # |f'| close to 1 at the solution: slow convergence
    z0 = tf.constant(0.0, tf.float64)
    for tol in (1e-4, 1e-8, 1e-13):
        with tf.GradientTape() as tape:
            tape.watch(z0)
            z = fixed_point(kepler, z0, a, tol=tol)
        assert abs(float(kepler(z, a) - z)) <= tol * max(1.0, abs(float(z))) * 1.0000001
        assert tape.gradient(z, z0).numpy() == 0.0


def test_an_integer_param_gets_no_gradient():
    a = tf.constant(0.5, tf.float64)
    n = tf.constant(2)
    with tf.GradientTape() as tape:
        tape.watch(a)
        z = fixed_point(lambda z, a, n: a * tf.cos(z) / tf.cast(n, z.dtype), tf.constant(0.0, tf.float64), a, n)
    ga, gn = tape.gradient(z, [a, n])
    assert gn is None
    zz = float(z)
    assert float(ga) == pytest.approx(np.cos(zz) / 2 / (1 + 0.25 * np.sin(zz)), rel=1e-12)


def test_neither_pass_keeps_the_forward_iterations():
    """Memory does not grow with the iterations: the tape keeps none of the iterates alive,
    and the backward pass evaluates f once, however many forward steps there were."""
    refs, calls = [], []

    def f(z, a):
        refs.append(weakref.ref(z))
        calls.append(tf.executing_eagerly())
        return a * tf.cos(z)

    a = tf.Variable(0.7, dtype=tf.float64)
    backward_calls = []
    for z0 in (0.739, 100.0):  # few and many forward steps
        refs.clear()
        calls.clear()
        with tf.GradientTape() as tape:
            z = fixed_point(f, tf.constant(z0, tf.float64), a)
            forward = len(calls)
            gc.collect()
            alive = sum(r() is not None for r in refs)
        assert alive <= 1, f"{alive} of {len(refs)} iterates kept alive"
        before = len(calls)
        tape.gradient(z, a)
        backward_calls.append(len(calls) - before)
        if z0 == 100.0:
            assert forward > 20
    assert backward_calls[0] == backward_calls[1] == 1  # one evaluation of f at z*; the adjoint steps reuse its tape


@pytest.mark.parametrize("dtype, upstream", [(tf.float32, 1e-5), (tf.float32, 1e-30), (tf.float64, 1e-14),
                                              (tf.float64, 1e200)])
def test_the_gradient_does_not_depend_on_the_size_of_the_upstream_gradient(dtype, upstream):
    a = tf.constant([0.3, 0.9], dtype)
    with tf.GradientTape() as tape:
        tape.watch(a)
        z = fixed_point(kepler, tf.zeros_like(a), a)
    grad = tape.gradient(z, a, output_gradients=tf.constant([upstream, upstream], dtype)).numpy() / upstream
    z = z.numpy().astype(np.float64)
    np.testing.assert_allclose(grad, kepler_derivative(z, a.numpy().astype(np.float64)),
                               rtol=2e-5 if dtype == tf.float32 else 1e-12)


def test_unequal_upstream_entries_and_a_non_finite_upstream_gradient():
    a = tf.constant([0.3, 0.9], tf.float64)
    for upstream in ([1.0, 1e-3], [1e-3, 1.0], [-2.0, 0.5]):
        with tf.GradientTape() as tape:
            tape.watch(a)
            z = fixed_point(kepler, tf.zeros_like(a), a)
        grad = tape.gradient(z, a, output_gradients=tf.constant(upstream, tf.float64)).numpy()
        np.testing.assert_allclose(grad, np.array(upstream) * kepler_derivative(z.numpy(), a.numpy()), rtol=1e-9)
    # NaN or inf upstream (a loss-scaled step that overflowed): NaN gradients, no error, as plain ops propagate it
    for bad in (np.inf, np.nan):
        with tf.GradientTape() as tape:
            tape.watch(a)
            z = fixed_point(kepler, tf.zeros_like(a), a)
        grad = tape.gradient(z, a, output_gradients=tf.constant([bad, 1.0], tf.float64))
        assert np.all(np.isnan(grad.numpy()))
    grad = tf.function(lambda a: tf.gradients(fixed_point(kepler, tf.zeros_like(a), a), a,
                                              grad_ys=tf.constant([np.inf, 1.0], tf.float64))[0])(a)
    assert np.all(np.isnan(grad.numpy()))


def test_the_forward_tolerance_is_relative_at_any_scale_and_atol_reaches_zero():
    z = fixed_point(lambda z: 0.5 * z + 1e-6, tf.constant(0.0, tf.float64))
    assert float(z) == pytest.approx(2e-6, rel=1e-12)
    z = fixed_point(lambda z: 0.5 * z + 1e6, tf.constant(0.0, tf.float64))
    assert float(z) == pytest.approx(2e6, rel=1e-12)
    # the solution 0, approached geometrically: the relative change stays 1/2 until underflow
    with pytest.raises(FixedPointError, match="give an absolute tolerance atol"):
        fixed_point(lambda z: 0.5 * z, tf.constant(1.0, tf.float64), max_iter=200)
    assert abs(float(fixed_point(lambda z: 0.5 * z, tf.constant(1.0, tf.float64), atol=1e-12))) <= 2e-12


@pytest.mark.parametrize("mode", MODES)
def test_a_second_derivative_through_fixed_point_raises_instead_of_lying(mode):
    a = tf.constant([0.3, 0.9], tf.float64)
    with pytest.raises(LookupError, match="first derivatives only"):
        hvp(lambda a: tf.reduce_sum(fixed_point(kepler, tf.zeros_like(a), a)), a, tf.ones(2, tf.float64), mode=mode)


def test_not_converging_raises_eagerly_and_in_graphs():
    flip = lambda z: 1.0 - z  # noqa: E731  z* = 1/2, but from 0 the iterates are 0, 1, 0, 1 ...
    with pytest.raises(FixedPointError, match=r"forward iteration did not converge.*max_iter=50"):
        fixed_point(flip, tf.constant(0.0), max_iter=50)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"did not converge \(or produced NaN or infinity\) within max_iter=50"):
        tf.function(lambda z0: fixed_point(flip, z0, max_iter=50))(tf.constant(0.0))
    with pytest.raises(FixedPointError, match="produced NaN or infinity after 1 steps"):
        fixed_point(lambda z: z * np.nan, tf.constant(1.0))
    with pytest.raises(FixedPointError, match="produced NaN or infinity"):
        fixed_point(lambda z: 1e30 * z + 1e30, tf.constant(1.0))
    # converges at max_iter=1000 but not at 5
    with pytest.raises(FixedPointError, match="after 5 of max_iter=5"):
        fixed_point(kepler, tf.constant(0.0), tf.constant(0.7), max_iter=5)


def test_the_adjoint_iteration_reports_its_own_failure():
    """f whose forward converges at once (z0 is the solution) but whose ∂f/∂z = -1: the adjoint never settles."""
    def f(z, a):
        return a - z + tf.stop_gradient(2 * z - a)  # value z (for any a); derivative -1 in z, 1 in a

    with tf.GradientTape() as tape:
        a = tf.constant(1.0)
        tape.watch(a)
        z = fixed_point(f, tf.constant(0.5), a, max_iter=30)
    with pytest.raises(FixedPointError, match=r"adjoint \(gradient\) iteration did not converge"):
        tape.gradient(z, a)


def test_fixed_point_bad_input():
    with pytest.raises(TypeError, match="`f` must be callable"):
        fixed_point("cos", tf.constant(0.0))
    with pytest.raises(TypeError, match="`z0` has dtype int32"):
        fixed_point(kepler, tf.constant(0), tf.constant(0.5))
    with pytest.raises(ValueError, match=r"`f` returned shape \[2\] for a z of shape \[\]"):
        fixed_point(lambda z: tf.stack([z, z]), tf.constant(0.0))
    with pytest.raises(TypeError, match="`f` returned dtype float64 for a z of dtype float32"):
        fixed_point(lambda z: tf.cast(z, tf.float64), tf.constant(0.0))
    with pytest.raises(ValueError, match="`tol` must be a positive number"):
        fixed_point(kepler, tf.constant(0.0), 0.5, tol=0.0)
    with pytest.raises(ValueError, match="`max_iter` must be a positive integer"):
        fixed_point(kepler, tf.constant(0.0), 0.5, max_iter=0)
    with pytest.raises(ValueError, match="`atol` must be a non-negative number"):
        fixed_point(kepler, tf.constant(0.0), 0.5, atol=-1.0)


def test_public_names():
    assert gradlib.hvp is hvp and gradlib.fixed_point is fixed_point
    assert issubclass(gradlib.FixedPointError, tf.errors.InvalidArgumentError)
