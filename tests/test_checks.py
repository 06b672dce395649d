"""check_gradient and strict_custom_gradient."""

import numpy as np
import pytest
import tensorflow as tf

import gradlib
from gradlib import GradientError

X = np.array([-1.5, -1.0, 0.0, 0.5, 2.0])


# -- check_gradient --------------------------------------------------------

@pytest.mark.parametrize("fn", [tf.sin, lambda v: v ** 3 - v, tf.nn.softplus, tf.tanh])
def test_correct_gradients_pass(fn):
    result = gradlib.check_gradient(fn, X)
    assert result.ok and bool(result)
    assert result.max_abs_error < 1e-7
    assert repr(result).startswith("<gradient OK")


def test_vector_output_compares_the_full_jacobian():
    matrix = np.array([[1.0, 2.0], [0.0, -3.0], [4.0, 0.5]])
    result = gradlib.check_gradient(lambda v: tf.linalg.matvec(tf.constant(matrix), tf.sin(v)), [0.3, -0.7])
    assert result.ok
    np.testing.assert_allclose(result.autodiff, matrix * np.cos([0.3, -0.7]), rtol=1e-12)
    assert result.autodiff.shape == (3, 2)


def _wrong_sin():
    @tf.custom_gradient
    def wrong_sin(x):
        return tf.sin(x), lambda dy: dy * tf.sin(x)  # should be cos
    return wrong_sin


def test_a_wrong_custom_gradient_fails_and_the_verdict_says_where():
    result = gradlib.check_gradient(_wrong_sin(), X)
    assert not result.ok
    i = result.worst[-1]
    assert result.worst == (i, i)  # a diagonal entry of the Jacobian
    np.testing.assert_allclose(result.numeric.diagonal(), np.cos(X), atol=1e-8)
    np.testing.assert_allclose(result.autodiff.diagonal(), np.sin(X))
    text = repr(result)
    assert text.startswith("<gradient WRONG") and f"[{i}, {i}]" in text
    assert f"{np.sin(X[i]):.6g}" in text and f"{np.cos(X[i]):.4g}"[:5] in text


def test_straight_through_estimator_is_not_the_true_gradient():
    result = gradlib.check_gradient(gradlib.straight_through(tf.round), [0.3, 1.2])
    assert not result.ok and result.max_abs_error == pytest.approx(1.0)


def test_none_is_taken_as_zero_and_reported():
    result = gradlib.check_gradient(tf.round, [0.3, 1.2])  # flat away from the ties
    assert result.ok and result.autodiff_was_none
    failing = gradlib.check_gradient(lambda v: tf.stop_gradient(v) * 2.0, [1.0])
    assert not failing.ok and "None" in repr(failing)


def test_a_kink_fails_by_design():
    assert not gradlib.check_gradient(tf.nn.relu, [0.0]).ok  # FD gives 1/2, TF gives 0
    assert gradlib.check_gradient(tf.nn.relu, [-1.0, 1.0]).ok


def test_tolerances_are_honoured():
    @tf.custom_gradient
    def slightly_off(x):
        return x * x, lambda dy: dy * (2 * x + 1e-2)
    # |error| = 1e-2 > atol + rtol * |2| = 2.01e-3 with the default tolerances
    assert not gradlib.check_gradient(slightly_off, [1.0]).ok
    assert gradlib.check_gradient(slightly_off, [1.0], atol=2e-2).ok


@pytest.mark.parametrize(
    "fn, x, kwargs, error, message",
    [
        (tf.sin, ["a"], {}, TypeError, "real numbers"),
        (None, [1.0], {}, TypeError, "fn"),
        (tf.sin, [1.0], {"atol": -1}, ValueError, "atol"),
        (tf.sin, [1.0], {"delta": 0}, ValueError, "delta"),
        (lambda v: v * tf.constant(2.0), [1.0], {}, TypeError, "float64"),
    ],
)
def test_bad_input(fn, x, kwargs, error, message):
    with pytest.raises(error, match=message):
        gradlib.check_gradient(fn, x, **kwargs)


# -- strict_custom_gradient ------------------------------------------------

def make(decorator, backward):
    @decorator
    def double(x):
        return 2.0 * x, lambda dy: backward(dy, x)
    return double


MALFORMED = {
    "scalar instead of [3]": (lambda dy, x: tf.reduce_sum(dy), "wrong shape"),
    "shape [2] instead of [3]": (lambda dy, x: dy[:2], "wrong shape"),
    "python float": (lambda dy, x: 1.5, "must be a tensor or None; got a float"),
    "python int": (lambda dy, x: 0, "must be a tensor or None; got a int"),
    "numpy array": (lambda dy, x: np.ones(3, np.float32), "must be a tensor or None; got a ndarray"),
    "float64 for float32": (lambda dy, x: tf.cast(dy, tf.float64), "wrong dtype"),
    "two gradients for one input": (lambda dy, x: (2.0 * dy, dy), "2 gradients for 1 inputs"),
}
INPUT = np.array([1.0, -2.0, 3.0], np.float32)


def eager(f):
    x = tf.constant(INPUT)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return tape.gradient(y, x)


def tape_in_function(f):
    @tf.function
    def run(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        return tape.gradient(y, x)
    return run(tf.constant(INPUT))


def gradients_in_function(f):
    return tf.function(lambda x: tf.gradients(f(x), x)[0])(tf.constant(INPUT))


def gradients_in_tf1_graph(f):
    def build():
        x = tf.constant(INPUT)
        return tf.gradients(f(x), x)[0]
    return gradlib.run_graph(build)


MODES = [eager, tape_in_function, gradients_in_function, gradients_in_tf1_graph]


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.__name__)
@pytest.mark.parametrize("case", list(MALFORMED), ids=str)
def test_malformed_returns_raise_gradient_error_in_every_mode(case, mode):
    backward, message = MALFORMED[case]
    with pytest.raises(GradientError, match=message) as info:
        mode(make(gradlib.strict_custom_gradient, backward))
    assert "input `x`" in str(info.value) or "inputs (x)" in str(info.value)


@pytest.mark.parametrize("mode", [eager, tape_in_function], ids=lambda m: m.__name__)
def test_plain_custom_gradient_silently_accepts_a_wrong_shape(mode):
    # Why strict_custom_gradient exists: TensorFlow takes the scalar as the gradient.
    grad = mode(make(tf.custom_gradient, lambda dy, x: tf.reduce_sum(dy)))
    assert grad.shape == ()


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.__name__)
def test_correct_gradients_pass_unchanged(mode):
    strict = mode(make(gradlib.strict_custom_gradient, lambda dy, x: 2.0 * dy))
    plain = mode(make(tf.custom_gradient, lambda dy, x: 2.0 * dy))
    np.testing.assert_array_equal(np.asarray(strict), np.asarray(plain))
    np.testing.assert_array_equal(np.asarray(strict), [2.0, 2.0, 2.0])


def test_several_inputs_with_none_for_a_non_differentiable_one():
    @gradlib.strict_custom_gradient
    def scaled(x, k):
        return x * tf.cast(k, x.dtype), lambda dy: (dy * tf.cast(k, dy.dtype), None)

    x = tf.constant(INPUT)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = scaled(x, tf.constant(3))
    np.testing.assert_array_equal(tape.gradient(y, x), [3.0, 3.0, 3.0])

    @gradlib.strict_custom_gradient
    def forgot_one(x, k):
        return x * k, lambda dy: dy * k

    with pytest.raises(GradientError, match=r"one gradient per input \(2 inputs: x, k\)"):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = forgot_one(x, tf.constant(2.0))
        tape.gradient(y, x)

    @gradlib.strict_custom_gradient
    def bad_second(x, k):
        return x * k, lambda dy: (dy * k, tf.zeros([2]))

    with pytest.raises(GradientError, match=r"input `k` \(argument 1\).*expected shape \[\]"):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = bad_second(x, tf.constant(2.0))
        tape.gradient(y, x)


def test_variables_are_checked_too():
    w = tf.Variable([1.0, 2.0, 3.0])

    def layer(variable_grad):
        @gradlib.strict_custom_gradient
        def scale(x):
            def grad_fn(dy, variables=None):
                return dy * w, [variable_grad(dy, x)]
            return x * w, grad_fn
        return scale

    x = tf.constant(INPUT)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = layer(lambda dy, x: dy * x)(x)
    gx, gw = tape.gradient(y, [x, w])
    np.testing.assert_array_equal(gx, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(gw, INPUT)

    with pytest.raises(GradientError, match=r"variable `Variable:0`.*wrong shape"):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = layer(lambda dy, x: tf.reduce_sum(dy * x))(x)
        tape.gradient(y, [x, w])


def test_missing_variables_keyword_keeps_tensorflows_type_error():
    w = tf.Variable(2.0)

    @gradlib.strict_custom_gradient
    def scale(x):
        return x * w, lambda dy: dy * w

    with pytest.raises(TypeError, match="variables"):
        with tf.GradientTape() as tape:
            y = scale(tf.constant(1.0))
        tape.gradient(y, w)


def test_repeated_checks_log_nothing():
    # tape.jacobian's pfor path used to make TensorFlow warn about retracing.
    with gradlib.captured_tf_warnings() as messages:
        for _ in range(8):
            assert gradlib.check_gradient(tf.sin, X).ok
    assert messages == []


def test_tensors_passed_by_keyword_are_refused():
    @gradlib.strict_custom_gradient
    def scale(x, k=2.0):
        return x * k, lambda dy: (dy * k, None)

    with pytest.raises(GradientError, match="positionally.*k="):
        scale(tf.constant(1.0), k=tf.constant(3.0))
    assert float(scale(tf.constant(1.0), k=4.0)) == 4.0  # plain Python keyword arguments are fine


@pytest.mark.parametrize("ks", [
    [tf.constant(3.0)],
    (2.0, tf.constant(3.0)),
    {"scale": tf.constant(3.0)},
    {"outer": [{"inner": (tf.constant(3.0),)}]},
    [tf.Variable(3.0)],
    {"scale": np.float32([3.0])},
    {1: tf.constant(3.0), "a": 2.0},  # keys that do not sort: tf.nest cannot flatten this dict
], ids=["list", "tuple", "dict", "nested", "variable", "array", "unsortable-keys"])
def test_tensors_nested_in_keyword_arguments_are_refused(ks):
    # A tensor inside a keyword argument is as invisible to tf.custom_gradient as a bare one:
    # without the refusal it silently gets no gradient (None) or the call falls back to autodiff.
    @gradlib.strict_custom_gradient
    def scale_all(x, ks=()):
        return x * tf.add_n([tf.reduce_sum(tf.cast(k, tf.float32)) for k in tf.nest.flatten(ks)]), \
            lambda dy: 100.0 * dy

    with pytest.raises(GradientError, match=r"positionally, not as ks=\.\.\. .*holds one anywhere"):
        scale_all(tf.constant(1.0), ks=ks)


def test_python_structures_by_keyword_still_pass():
    @gradlib.strict_custom_gradient
    def scale_first(x, ks=(1.0,), options=None):
        return x * ks[0], lambda dy: 100.0 * dy

    x = tf.constant(1.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = scale_first(x, ks=[4.0, 5.0], options={"mode": "fast", 1: None})
    assert float(y) == 4.0 and float(tape.gradient(y, x)) == 100.0


# -- check_gradient: relative error and language ------------------------------

def test_relative_error_ignores_entries_whose_finite_difference_is_zero():
    # The STE of round: autodiff 1, finite differences 0 everywhere.  The
    # relative error against a zero slope means nothing and is not reported.
    result = gradlib.check_gradient(gradlib.straight_through(tf.round), [0.3, 1.2])
    assert np.isnan(result.max_rel_error)
    assert "inf" not in repr(result) and "rel error" not in repr(result)
    assert "max abs error 1" in repr(result)


def test_relative_error_is_taken_where_the_slope_is_not_zero():
    @tf.custom_gradient
    def half_wrong(x):  # right where |x| > 1, twice too large elsewhere; flat part of round too
        return x * x, lambda dy: dy * tf.where(tf.abs(x) > 1, 2 * x, 4 * x)

    result = gradlib.check_gradient(half_wrong, [0.5, 2.0])
    # Jacobian diag: autodiff [2, 4], numeric [1, 4]; off-diagonal zeros are ignored.
    assert result.max_rel_error == pytest.approx(1.0, rel=1e-6)
    assert "max rel error 1" in repr(result) and "inf" not in repr(result)


def test_verdict_in_chinese():
    ok = gradlib.check_gradient(tf.sin, X, lang="zh")
    assert repr(ok).startswith("<梯度正确：最大绝对误差") and "共 25 个元素（atol=1e-05，rtol=0.001）>" in repr(ok)
    wrong = gradlib.check_gradient(_wrong_sin(), X, lang="zh")
    text = repr(wrong)
    assert text.startswith("<梯度错误：在 [") and "自动微分给出" in text and "有限差分给出" in text
    assert "（自动微分返回 None，按 0 计）" in repr(gradlib.check_gradient(lambda v: tf.stop_gradient(v) * 2.0,
                                                                          [1.0], lang="zh"))
    with pytest.raises(ValueError, match="lang"):
        gradlib.check_gradient(tf.sin, X, lang="fr")


# -- strict_custom_gradient on methods ------------------------------------------

class _Scale(tf.Module):
    def __init__(self, wrong_variable_gradient=False):
        super().__init__()
        self.w = tf.Variable(2.0)
        self.wrong = wrong_variable_gradient

    @gradlib.strict_custom_gradient
    def __call__(self, x):
        def grad_fn(dy, variables=None):
            dw = dy * x if self.wrong else tf.reduce_sum(dy * x)
            return dy * self.w, [dw]
        return x * self.w, grad_fn


@pytest.mark.parametrize("mode", ["eager", "function"])
def test_method_of_a_module_with_variables(mode):
    module, x = _Scale(), tf.constant([1.0, 2.0, 3.0])

    def gradients():
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = module(x)
        return tape.gradient(y, [x, module.w])

    dx, dw = gradients() if mode == "eager" else tf.function(gradients)()
    np.testing.assert_array_equal(dx.numpy(), [2.0, 2.0, 2.0])
    assert dw.numpy() == 6.0  # sum(x), against the closed form


def test_method_with_a_wrong_variable_gradient_raises():
    module, x = _Scale(wrong_variable_gradient=True), tf.constant([1.0, 2.0, 3.0])
    with pytest.raises(GradientError, match=r"variable .* wrong shape: expected shape \[\].*got shape \[3\]"):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = module(x)
        tape.gradient(y, x)


def test_keras_layer_method_trains_with_fit():
    import keras

    class Project(keras.layers.Layer):
        def build(self, shape):
            self.kernel = self.add_weight(shape=(shape[-1], 2), initializer="ones")

        @gradlib.strict_custom_gradient
        def project(self, x):
            def grad_fn(dy, variables=None):
                return dy @ tf.transpose(self.kernel), [tf.transpose(x) @ dy]
            return x @ self.kernel, grad_fn

        def call(self, x):
            return self.project(x)

    layer = Project()
    x = tf.constant(np.arange(12, dtype=np.float32).reshape(4, 3))
    with tf.GradientTape() as tape:
        tape.watch(x)
        out = tf.reduce_sum(layer(x) ** 2)
    gx, gk = tape.gradient(out, [x, layer.kernel])
    y = x.numpy() @ np.ones((3, 2), np.float32)
    np.testing.assert_allclose(gk.numpy(), x.numpy().T @ (2 * y))  # independent NumPy chain rule
    np.testing.assert_allclose(gx.numpy(), (2 * y) @ np.ones((2, 3)))
    model = keras.Sequential([keras.Input((3,)), Project(), keras.layers.Dense(1)])
    model.compile(keras.optimizers.SGD(0.01), "mse")
    before = model.layers[0].kernel.numpy().copy()
    model.fit(np.ones((8, 3)), np.zeros((8, 1)), epochs=2, verbose=0)
    assert not np.array_equal(before, model.layers[0].kernel.numpy())  # the kernel's gradient arrived


def test_decorated_function_keeps_its_gradient_as_a_tf_function_argument():
    @gradlib.strict_custom_gradient
    def square(x):
        return x * x, lambda dy: dy * 10.0 * x  # a deliberately different gradient, to see it is used

    @tf.function
    def gradient_of(f, x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        return tape.gradient(y, x)

    assert gradient_of(square, tf.constant(3.0)).numpy() == 30.0


def test_unbound_access_and_introspection():
    assert _Scale.__call__ is _Scale.__dict__["__call__"]  # read from the class: not bound
    import inspect
    assert list(inspect.signature(_Scale().__call__).parameters) == ["x"]


def test_chinese_verdict_at_a_scalar_point_has_no_stray_spaces():
    text = repr(gradlib.check_gradient(lambda v: tf.stop_gradient(v) * 2.0, 1.0, lang="zh"))
    assert text.startswith("<梯度错误：在该点处自动微分给出 0") and "在 该点 处" not in text


def test_a_decorated_method_passed_to_a_tf_function_traces_once():
    module = _Scale()

    @tf.function
    def gradient_of(f, x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        return tape.gradient(y, x)

    for _ in range(3):
        np.testing.assert_array_equal(gradient_of(module.__call__, tf.constant([1.0, 2.0])).numpy(), [2.0, 2.0])
    assert gradient_of.experimental_get_tracing_count() == 1
    assert module.__call__ == module.__call__ and hash(module.__call__) == hash(module.__call__)
    assert _Scale().__call__ != module.__call__  # another instance is another function
