"""Chapter 7's exercise checks: ch07-ex1 (GradScaledDense, a Keras layer) and ch07-ex2 (ternary, TWN's quantizer).

Each check must accept the chapter's reference solution and other correct answers, reject the typical
wrong answers with the message that explains them, and turn hostile answers (raising, returning
the wrong thing, an instance instead of a class) into feedback instead of exceptions.  The references
in ``ch07`` are NumPy formulas; the tests below check them against TensorFlow and Keras themselves, and
check that the designs hold what they promise (a tie that is exact in float32, data that float16
computes exactly, no near tie in the float16 and random kernels).

Feedback is asserted by its catalogue key; the message text only where it shows a filled-in number
(m, Δ, an index) that the key cannot.  The typical wrong answers are declared with each check
(``@exercise(..., wrong_answers=...)``) and run in both languages by test_classroom_wrong_answers.py;
the tests here take those they look at more closely from there (:func:`wrong_answer`).

The chapter's own solutions (``chapters/en/07_*.md``, read by chapter_solutions.py) are tested when the
chapter has them; until then those tests are skipped, and the answers below stand in.
"""

import functools
import time

import keras
import numpy as np
import pytest
import tensorflow as tf

import gradlib
from gradlib import exercises
from gradlib.classroom.catalogue import catalogue
from gradlib.classroom.exercises import ch07
from gradlib.classroom.exercises._core import WRONG_ANSWERS
from test_classroom_wrong_answers import expect_key, references, wrong_answer

LANGS = ("en", "zh")


def chapter_reference(exercise_id):
    """The chapter's own solution (English edition); the test is skipped while the chapter has none."""
    found = references().get(exercise_id)
    if found is None:
        pytest.skip(f"chapter 7 has no solution cell for {exercise_id} yet")
    return found


def feedback(exercise_id, answer, lang="en"):
    result = exercises.check(exercise_id, answer, lang=lang)
    assert result.key != "common.check_failed", result.message
    return result


# -- correct answers of ex1, written independently of the check's own _Dense -----------------------

class GradScaledDense(keras.layers.Layer):
    """m read in grad_fn, when the gradient is computed."""

    def __init__(self, units, multiplier=1.0, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.initial = float(multiplier)

    def build(self, input_shape):
        self.kernel = self.add_weight(shape=(input_shape[-1], self.units), initializer="glorot_uniform",
                                      name="kernel")
        self.multiplier = self.add_weight(shape=(), initializer=keras.initializers.Constant(self.initial),
                                          trainable=False, name="multiplier")

    def call(self, x):
        @tf.custom_gradient
        def forward(x):
            kernel = tf.convert_to_tensor(self.kernel)

            def grad_fn(dy, variables=None):
                dk = tf.cast(self.multiplier, dy.dtype) * tf.matmul(x, dy, transpose_a=True)
                return tf.matmul(dy, kernel, transpose_b=True), [tf.cast(dk, variables[0].dtype)]
            return tf.matmul(x, kernel), grad_fn
        return forward(x)


class StrictGradScaledDense(GradScaledDense):
    """gradlib.strict_custom_gradient on a method; m read in call (autocast: float16 under mixed_float16)."""

    def call(self, x):
        return self._product(x, tf.convert_to_tensor(self.multiplier))

    @gradlib.strict_custom_gradient
    def _product(self, x, m):
        kernel = tf.convert_to_tensor(self.kernel)

        def grad_fn(dy, variables):
            dk = m * tf.matmul(x, dy, transpose_a=True)
            return (tf.matmul(dy, kernel, transpose_b=True), None), [tf.cast(dk, variables[0].dtype)]
        return tf.matmul(x, kernel), grad_fn


class OpsGradScaledDense(GradScaledDense):
    """keras.ops, **kwargs in grad_fn, and a multiplier of shape [1]."""

    def build(self, input_shape):
        self.kernel = self.add_weight(shape=(input_shape[-1], self.units), name="kernel")
        self.multiplier = self.add_weight(shape=(1,), initializer=keras.initializers.Constant(self.initial),
                                          trainable=False, name="multiplier")

    def call(self, x):
        kernel = keras.ops.convert_to_tensor(self.kernel)

        @tf.custom_gradient
        def forward(x):
            def grad_fn(dy, **kwargs):
                m = keras.ops.cast(self.multiplier[0], dy.dtype)
                dk = m * keras.ops.matmul(keras.ops.transpose(x), dy)
                return keras.ops.matmul(dy, keras.ops.transpose(kernel)), [
                    keras.ops.cast(dk, kwargs["variables"][0].dtype)]
            return keras.ops.matmul(x, self.kernel), grad_fn   # reads the variable here: it is in `variables`
        return forward(x)


class _PrivateName(GradScaledDense):
    """A class name with a leading underscore: Keras names the layer "__private_name", which is not a valid
    root name scope of a graph; the check traces the layer inside a scope of its own."""


def layer_factory(units, multiplier):
    """A function that returns the layer: accepted like the class (the grader may pass either)."""
    return GradScaledDense(units, multiplier)


# -- correct answers of ex2 --------------------------------------------------------------------------

@keras.saving.register_keras_serializable(package="test_ch07")
def ternary(w):
    a = tf.abs(w)
    delta = 0.7 * tf.reduce_mean(a)
    mask = tf.cast(a > delta, w.dtype)
    alpha = tf.math.divide_no_nan(tf.reduce_sum(a * mask), tf.reduce_sum(mask))
    return w + tf.stop_gradient(alpha * tf.sign(w) * mask - w)


@keras.saving.register_keras_serializable(package="test_ch07")
def ternary_custom(w):  # the custom gradient inside a plain function, which Keras can save and load
    @tf.custom_gradient
    def quantize(v):
        a = tf.abs(v)
        above = a > 0.7 * tf.reduce_sum(a) / tf.cast(tf.size(v), v.dtype)
        count = tf.reduce_sum(tf.cast(above, v.dtype))
        alpha = tf.reduce_sum(tf.where(above, a, tf.zeros_like(a))) / tf.maximum(count, 1)
        return tf.where(above, alpha * tf.sign(v), tf.zeros_like(v)), lambda dy: dy
    return quantize(w)


@keras.saving.register_keras_serializable(package="test_ch07")
def ternary_ops(w):
    a = keras.ops.abs(w)
    mask = keras.ops.cast(a > keras.ops.mean(a) * 0.7, w.dtype)
    alpha = keras.ops.divide_no_nan(keras.ops.sum(a * mask), keras.ops.sum(mask))
    return w + keras.ops.stop_gradient(alpha * keras.ops.sign(w) * mask - w)


# -- the reference solutions pass -----------------------------------------------------------------------

@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("exercise_id", ["ch07-ex1", "ch07-ex2"])
def test_the_chapters_solutions_pass(exercise_id, lang):
    result = feedback(exercise_id, chapter_reference(exercise_id), lang)
    assert result.passed, result.message
    assert result.key == exercise_id.replace("-ex1", ".scaled_passed").replace("-ex2", ".ternary_passed")


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("answer", [GradScaledDense, StrictGradScaledDense, OpsGradScaledDense, layer_factory,
                                    _PrivateName, ch07._Dense],
                         ids=["closure", "strict method", "keras.ops", "factory", "private name", "the check's own"])
def test_ex1_correct_answers_pass(answer, lang):
    result = feedback("ch07-ex1", answer, lang)
    assert result.passed and result.key == "ch07.scaled_passed", result.message
    assert ("0.5, 2 and 0" if lang == "en" else "0.5、2 和 0") in result.message


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("answer", [ternary, ternary_custom, ternary_ops], ids=["stop_gradient", "custom", "ops"])
def test_ex2_correct_answers_pass(answer, lang):
    result = feedback("ch07-ex2", answer, lang)
    assert result.passed and result.key == "ch07.ternary_passed", result.message
    assert "0.4375" in result.message


def test_the_check_calls_the_answer_with_positional_arguments_only():
    calls = []

    def recording(*args, **kwargs):
        calls.append((args, kwargs))
        return GradScaledDense(*args, **kwargs)

    assert feedback("ch07-ex1", recording).passed
    assert calls and all(not kwargs and len(args) == 2 for args, kwargs in calls)


def test_each_check_is_quick():
    for exercise_id, answer in (("ch07-ex1", GradScaledDense), ("ch07-ex2", ternary)):
        feedback(exercise_id, answer)  # the first run pays for tracing and imports
        started = time.monotonic()
        assert feedback(exercise_id, answer).passed
        assert time.monotonic() - started < 5.0  # about 0.5 s (ex1) and 0.1 s (ex2) on a 2-core machine


# -- the references, against TensorFlow and Keras -----------------------------------------------------------

def test_dense_reference_is_tensorflows_gradient():
    x, kernel = tf.constant(ch07.X), tf.Variable(ch07.KERNEL)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.matmul(x, kernel)
    dx, dk = tape.gradient(y, [x, kernel], output_gradients=tf.constant(ch07.UPSTREAM))
    for m in (0.5, 2.0, 0.0):
        value, dx_ref, dk_ref = ch07.dense_reference(ch07.X, ch07.KERNEL, ch07.UPSTREAM, m)
        np.testing.assert_allclose(y.numpy(), value, rtol=1e-6)
        np.testing.assert_allclose(dx.numpy(), dx_ref, rtol=1e-6)
        np.testing.assert_allclose(m * dk.numpy(), dk_ref, rtol=1e-6)


def test_the_ex1_data_tell_the_mistakes_apart_and_are_exact_in_float16():
    value, dx, plain = ch07.dense_reference(ch07.X, ch07.KERNEL, ch07.UPSTREAM, 1.0)
    assert np.all(np.any(plain != 0, axis=1))           # every row of x^T dy is nonzero: m shows in each
    assert np.any(ch07.KERNEL == 0) and np.any(ch07.KERNEL < 0) and ch07.KERNEL.shape[0] != ch07.KERNEL.shape[1]
    ones = ch07.X.T.astype(np.float64) @ np.ones_like(ch07.UPSTREAM, np.float64)
    assert np.all(np.any(ones != plain, axis=1))         # upstream gradients other than 1: dy shows in each row
    half = [a.astype(np.float16) for a in (ch07.X, ch07.KERNEL, ch07.UPSTREAM)]
    for got, exact in ((half[0] @ half[1], value), (half[2] @ half[1].T, dx), (half[0].T @ half[2], plain)):
        np.testing.assert_array_equal(got.astype(np.float64), exact)


def test_fit_step_reference_is_what_keras_fit_does_with_a_plain_dense_layer():
    # At m = 1 the reader's layer is a plain Dense layer without bias: one fit step of Keras itself.
    below = keras.layers.Dense(ch07.IN, use_bias=False)
    top = keras.layers.Dense(ch07.UNITS, use_bias=False)
    model = keras.Sequential([keras.Input((2,)), below, top])
    model.compile(optimizer=keras.optimizers.SGD(ch07.FIT_RATE), loss="mean_squared_error", jit_compile=False)
    below.kernel.assign(ch07.FIT_BELOW)
    top.kernel.assign(ch07.KERNEL)
    model.fit(ch07.FIT_X, ch07.FIT_TARGET, batch_size=4, epochs=1, shuffle=False, verbose=0)
    new_below, new_kernel = ch07.fit_step_reference(ch07.FIT_BELOW, ch07.KERNEL, 1.0)
    np.testing.assert_allclose(below.kernel.numpy(), new_below, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(top.kernel.numpy(), new_kernel, rtol=1e-5, atol=1e-6)
    # and m scales the kernel's step only
    half_below, half_kernel = ch07.fit_step_reference(ch07.FIT_BELOW, ch07.KERNEL, 0.5)
    np.testing.assert_allclose(half_below, new_below)
    np.testing.assert_allclose(half_kernel - ch07.KERNEL, 0.5 * (new_kernel - ch07.KERNEL))
    assert not np.allclose(new_below, ch07.FIT_BELOW)   # at m = 0 the layer below still learns


def numpy_ternary(w):
    """TWN, eqs. (6) and (9), written out entry by entry (float64)."""
    flat = [float(v) for v in np.ravel(w)]
    delta = 0.7 * sum(abs(v) for v in flat) / len(flat)
    above = [abs(v) for v in flat if abs(v) > delta]
    alpha = sum(above) / len(above) if above else 0.0
    return np.reshape([alpha * np.sign(v) if abs(v) > delta else 0.0 for v in flat], np.shape(w))


def test_ternary_reference_is_twn():
    for w, _ in ch07.TERNARY_INPUTS:
        np.testing.assert_allclose(ch07.ternary_parts(w)[0], numpy_ternary(w), rtol=1e-12)
    value, delta, alpha, count = ch07.ternary_parts(ch07.TIE_W)
    assert delta == 0.4375 and count == 6 and alpha == (1.25 + 0.84375 + 1.5625 + 1.0 + 0.5625 + 0.9375) / 6
    tie = np.abs(ch07.TIE_W) == delta
    assert tie.sum() == 2 and np.all(value[tie] == 0)   # |w| = Δ: 0, and not in α
    assert np.any(ch07.TIE_W == 0)
    zero, delta, alpha, count = ch07.ternary_parts(ch07.ZERO_W)
    assert (delta, alpha, count) == (0.0, 0.0, 0) and np.all(zero == 0)   # no NaN
    np.testing.assert_array_equal(ch07.ternary_reference(ch07.TIE_W, ch07.TERNARY_INPUTS[0][1])[1],
                                  ch07.TERNARY_INPUTS[0][1])   # straight through


@pytest.mark.parametrize("formula", [
    lambda a: 0.7 * tf.reduce_mean(a),
    lambda a: tf.reduce_mean(a) * 0.7,
    lambda a: 0.7 * tf.reduce_sum(a) / 12.0,
    lambda a: tf.reduce_sum(a) * 0.7 / 12.0,
    lambda a: tf.reduce_mean(a) * 7.0 / 10.0,
], ids=["0.7*mean", "mean*0.7", "0.7*sum/n", "sum*0.7/n", "mean*7/10"])
def test_the_tie_is_exact_in_float32_whatever_the_order(formula):
    a = tf.abs(tf.constant(ch07.TIE_W))
    assert formula(a).numpy() == np.float32(0.4375)
    assert not np.any((a > formula(a)).numpy() & (np.abs(ch07.TIE_W) == 0.4375))


def test_float16_has_no_tie_to_test_and_the_half_kernel_keeps_clear_of_delta():
    # In float16 0.7 is 0.7001953125, and 0.7001953125 * 0.625 lies exactly halfway between two float16
    # numbers: where Δ lands would depend on the rounding of each operation, so the check has no tie there.
    seven = float(np.float16(0.7))
    assert seven == 0.7001953125
    low, high = 0.4375, float(np.nextafter(np.float16(0.4375), np.float16(1)))
    assert seven * 0.625 == (low + high) / 2
    for formula in (lambda a: 0.7 * tf.reduce_mean(a), lambda a: 0.7 * tf.reduce_sum(a) / 12.0,
                    lambda a: tf.reduce_mean(a) * 7.0 / 10.0):
        delta = float(formula(tf.abs(tf.constant(ch07.HALF_W))).numpy())
        assert np.min(np.abs(np.abs(ch07.HALF_W.astype(np.float64)) - delta)) > 0.02
    assert np.array_equal(ch07.HALF_W.astype(np.float32).astype(np.float16), ch07.HALF_W)


def test_the_random_kernel_has_no_near_tie():
    w = ch07.TERNARY_INPUTS[1][0]
    delta = ch07.ternary_parts(w)[1]
    assert np.min(np.abs(np.abs(w) - delta)) > 1e-4 and 0 < ch07.ternary_parts(w)[3] < w.size


# -- ex1: what the wrong answers' messages show ----------------------------------------------------------

def test_ex1_frozen_multiplier_names_both_values():
    result = feedback("ch07-ex1", wrong_answer("ch07-ex1", "m read once as a Python float"))
    assert result.key == "ch07.multiplier_frozen"
    assert result.message.startswith("with m = 2, row 0 of your kernel gradient is")
    assert "the gradient for m = 0.5, not for m = 2" in result.message
    zh = feedback("ch07-ex1", wrong_answer("ch07-ex1", "m read once as a Python float"), "zh")
    assert zh.message.startswith("m = 2 时，") and "这是 m = 0.5 时的梯度，而不是 m = 2 时的" in zh.message


def test_ex1_mixed_precision_mistakes_fail_only_under_mixed_float16():
    for name, key in (("grad_fn reads self.kernel again", "ch07.reread_kernel"),
                      ("float16 kernel gradient", "ch07.grad_dtype"),
                      ("float16 kernel gradient, strict_custom_gradient", "ch07.grad_dtype")):
        result = feedback("ch07-ex1", wrong_answer("ch07-ex1", name))
        assert result.key == key and result.message.startswith("under mixed_float16"), result.message
    assert "expected float32" in feedback("ch07-ex1", wrong_answer("ch07-ex1", "float16 kernel gradient")).message
    strict = feedback("ch07-ex1", wrong_answer("ch07-ex1", "float16 kernel gradient, strict_custom_gradient"))
    assert "strict_custom_gradient refused" in strict.message and "dtype float16" in strict.message


def test_ex1_transposed_gradient_names_both_shapes():
    result = feedback("ch07-ex1", wrong_answer("ch07-ex1", "kernel gradient transposed"), "zh")
    assert result.key == "ch07.transposed" and "[3, 4]" in result.message and "[4, 3]" in result.message


def test_ex1_numpy_in_call_fails_in_fit_only():
    result = feedback("ch07-ex1", wrong_answer("ch07-ex1", "m read with .numpy() in call"))
    assert result.key == "ch07.fit_numpy" and result.message.startswith("in model.fit (m = 0.5), your code raised")


def test_ex1_the_policy_is_restored_whatever_happens():
    before = keras.mixed_precision.global_policy().name
    for answer in (GradScaledDense, wrong_answer("ch07-ex1", "grad_fn reads self.kernel again"),
                   wrong_answer("ch07-ex1", "float16 kernel gradient")):
        feedback("ch07-ex1", answer)
        assert keras.mixed_precision.global_policy().name == before


# -- ex1: answers of the wrong kind, and answers that raise ----------------------------------------------

class NotALayer:
    def __init__(self, units, multiplier=1.0):
        self.units = units


class RaisingInit(GradScaledDense):
    def __init__(self, units, multiplier=1.0, **kwargs):
        super().__init__(units, multiplier, **kwargs)
        raise ValueError("no layer today")


class RaisingBuild(GradScaledDense):
    def build(self, input_shape):
        raise RuntimeError("build fails")


class RaisingGradient(GradScaledDense):
    def call(self, x):
        @tf.custom_gradient
        def forward(x):
            kernel = tf.convert_to_tensor(self.kernel)

            def grad_fn(dy, variables=None):
                raise ArithmeticError("the backward pass fails")
            return tf.matmul(x, kernel), grad_fn
        return forward(x)


def with_backward(backward):
    """GradScaledDense whose grad_fn returns ``backward(x, dy, kernel, m, variables)``."""
    class Layer(GradScaledDense):
        def call(self, x):
            @tf.custom_gradient
            def forward(x):
                kernel = tf.convert_to_tensor(self.kernel)

                def grad_fn(dy, variables=None):
                    return backward(x, dy, kernel, tf.cast(self.multiplier, dy.dtype), variables)
                return tf.matmul(x, kernel), grad_fn
            return forward(x)
    return Layer


def dx_of(dy, kernel):
    return tf.matmul(dy, kernel, transpose_b=True)


class NoKernel(GradScaledDense):
    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1], self.units), name="w")
        self.multiplier = self.add_weight(shape=(), initializer=keras.initializers.Constant(self.initial),
                                          trainable=False)

    def call(self, x):
        return tf.matmul(x, self.w)


class IgnoresMultiplierArgument(GradScaledDense):
    def build(self, input_shape):
        self.initial = 1.0
        super().build(input_shape)


class VectorMultiplier(GradScaledDense):
    def build(self, input_shape):
        super().build(input_shape)
        self.multiplier = self.add_weight(shape=(2,), initializer="ones", trainable=False, name="m2")


@pytest.mark.parametrize("answer, key, text", [
    (GradScaledDense(3, 0.5), "ch07.instance", "you passed a layer object (GradScaledDense), not a class"),
    (42, "common.not_callable", "got int"),
    (NotALayer, "ch07.not_layer", "got NotALayer, not a Keras layer"),
    (lambda units, multiplier: None, "ch07.not_layer", "got None, not a Keras layer"),
    (RaisingInit, "common.raised", "when the check created your layer as GradScaledDense(3, 0.5), your code raised "
                                   "ValueError: no layer today"),
    (RaisingBuild, "common.raised", "with m = 0.5, your code raised RuntimeError: build fails"),
    (RaisingGradient, "common.raised", "with m = 0.5, your code raised ArithmeticError: the backward pass fails"),
    (with_backward(lambda x, dy, k, m, v: (dx_of(dy, k), [None])), "ch07.kernel_none", "the kernel got no gradient"),
    (with_backward(lambda x, dy, k, m, v: (None, [m * tf.matmul(x, dy, transpose_a=True)])), "ch07.dx_none",
     "no gradient reached the layer's input"),
    (with_backward(lambda x, dy, k, m, v: (dx_of(dy, k), [m * tf.matmul(x, tf.ones_like(dy), transpose_a=True)])),
     "ch07.kernel_upstream", "ignores dy"),
    (with_backward(lambda x, dy, k, m, v: (dx_of(dy, k), [3 * m * tf.matmul(x, dy, transpose_a=True)])),
     "ch07.kernel_value", "expected m * x^T dy"),
    (NoKernel, "ch07.no_kernel", "no self.kernel of shape [4, 3] among its trainable weights (it has: w [4, 3])"),
    (IgnoresMultiplierArgument, "ch07.multiplier_initial", "after GradScaledDense(3, 0.5) your layer's multiplier is 1"),
    (VectorMultiplier, "ch07.multiplier_shape", "shape [2]"),
], ids=["instance", "not callable", "not a layer", "returns None", "__init__ raises", "build raises",
        "grad_fn raises", "kernel None", "dx None", "dy ignored", "three times m", "no kernel", "multiplier argument ignored",
        "vector multiplier"])
def test_ex1_wrong_kinds_and_exceptions_become_feedback(answer, key, text):
    result = feedback("ch07-ex1", answer)
    assert not result.passed and result.key == key and text in result.message, result.message
    zh = feedback("ch07-ex1", answer, "zh")
    assert not zh.passed and zh.key == key and zh.message != result.message


def test_ex1_a_keras_error_on_the_readers_result_is_not_blamed_on_the_reader():
    class ReturnsText(GradScaledDense):
        def call(self, x):
            return "not a tensor"

    result = feedback("ch07-ex1", ReturnsText)
    assert not result.passed and result.key in ("ch07.library_raised", "common.not_numeric"), result.message
    assert "your code raised" not in result.message


# -- ex2: what the wrong answers' messages show ------------------------------------------------------

@pytest.mark.parametrize("name, start, key", [
    (">= instead of >", "at w[0, 1] = 0.4375: your value is 0.878906; expected 0. Here |w| = Δ", "ch07.tie"),
    ("Δ from max|w|", "at w[0, 2] = -1.25: your value is -1.40625; expected -1.02604. Your threshold is "
                      "0.7·max|w| = 1.09375", "ch07.delta_max"),
    ("α over all the weights", "at w[0, 2] = -1.25: your value is -0.625; expected -1.02604.", "ch07.alpha_all"),
    ("gradient scaled by α", "at w[0, 0] = 0: your gradient is 3.07812; expected 3. Your gradient is α·dy",
     "ch07.alpha_scaled"),
    ("tf.where, no gradient", "your gradient is 0 everywhere. The gradient must be straight through", "ch07.no_ste"),
    ("float32 result for float16", "with a float16 kernel (QuantizedDense passes its kernel as float16 under "
                                   "mixed_float16) your result has dtype float32; expected float16.", "ch07.half"),
    ("float32 constant", "with a float16 kernel (QuantizedDense passes its kernel as float16 under "
                         "mixed_float16) your code raised InvalidArgumentError", "ch07.half"),
])
def test_ex2_typical_mistakes_show_their_numbers(name, start, key):
    result = feedback("ch07-ex2", wrong_answer("ch07-ex2", name))
    assert result.key == key and result.message.startswith(start), result.message


def test_ex2_tie_message_in_chinese():
    zh = feedback("ch07-ex2", wrong_answer("ch07-ex2", ">= instead of >"), "zh")
    assert zh.key == "ch07.tie" and zh.message.startswith("在 w[0, 1] = 0.4375 处，你的前向值为 0.878906，应为 0。")
    assert "请用 >，而不是 >=" in zh.message


def test_ex2_a_random_kernel_is_named():
    @keras.saving.register_keras_serializable(package="test_ch07")
    def only_fits_the_tie_design(w):
        return ternary(w) if w.shape == (4, 3) else 2.0 * ternary(w)

    result = feedback("ch07-ex2", only_fits_the_tie_design)
    assert result.key == "ch07.ternary_value" and result.message.startswith("on a random 5×6 kernel, at w[")


def float64_result(w):
    return tf.cast(ternary(w), tf.float64)


def test_ex2_results_of_the_wrong_kind_become_feedback():
    assert feedback("ch07-ex2", float64_result).key == "ch07.same_dtype"
    partial = feedback("ch07-ex2", functools.partial(ternary))
    assert partial.key == "ch07.not_registered"   # Keras cannot name a partial
    assert feedback("ch07-ex2", lambda w: ternary(w).numpy()).key == "common.not_tensor"
    assert feedback("ch07-ex2", lambda w: tf.reshape(ternary(w), [-1])).key == "common.shape"


def test_ex2_results_that_change_after_loading_are_caught():
    calls = []

    @keras.saving.register_keras_serializable(package="test_ch07")
    def drifting(w):  # right on its first five calls, then scaled
        calls.append(1)
        return ternary(w) * (1.0 if len(calls) <= 5 else 2.0)

    result = feedback("ch07-ex2", drifting)
    assert result.key == "ch07.reload_differs" and "before saving it gave" in result.message


def test_ex2_an_error_of_quantized_dense_on_the_result_is_not_blamed_on_the_reader():
    calls = []

    @keras.saving.register_keras_serializable(package="test_ch07")
    def flat_later(w):  # right on the direct calls, a vector inside QuantizedDense
        calls.append(1)
        return ternary(w) if len(calls) <= 4 else tf.reshape(ternary(w), [-1])

    result = feedback("ch07-ex2", flat_later)
    assert result.key == "ch07.library_raised" and result.message.startswith(
        "in gradlib.QuantizedDense(3, kernel_quantizer=your function), TensorFlow could not use"), result.message


def test_ex2_a_registration_taken_over_later_still_counts_and_the_registry_is_restored():
    objects = keras.saving.get_custom_objects()

    @keras.saving.register_keras_serializable(package="test_ch07_rerun")
    def ternary(w):  # noqa: F811 - a cell run twice: the same name registered twice
        return globals()["ternary"](w)
    first = ternary

    @keras.saving.register_keras_serializable(package="test_ch07_rerun")
    def ternary(w):  # noqa: F811
        return globals()["ternary"](w)
    second = ternary

    assert objects["test_ch07_rerun>ternary"] is second
    before = dict(objects)
    assert feedback("ch07-ex2", first).passed
    assert dict(objects) == before and objects["test_ch07_rerun>ternary"] is second


def test_ex2_a_correct_but_unregistered_function_is_told_to_register():
    for lang in LANGS:
        result = feedback("ch07-ex2", wrong_answer("ch07-ex2", "not registered"), lang)
        assert result.key == "ch07.not_registered" and "register_keras_serializable" in result.message
    assert ch07.registered_name(wrong_answer("ch07-ex2", "not registered")) is None
    assert ch07.registered_name(ternary) == "test_ch07>ternary"
    assert ch07.registered_name(GradScaledDense(3)) is None   # no __name__


# -- both: the declared wrong answers, the messages ------------------------------------------------------

@pytest.mark.parametrize("exercise_id", ["ch07-ex1", "ch07-ex2"])
def test_the_likeliest_mistakes_are_declared_with_their_keys(exercise_id):
    # test_classroom_wrong_answers.py runs every row in both languages; here, that the brief's list is there.
    keys = {wrong.key for wrong in WRONG_ANSWERS[exercise_id]}
    expected = ({"ch07.no_variables", "ch07.not_scaled", "ch07.multiplier_frozen", "ch07.multiplier_trainable",
                 "ch07.multiplier_not_weight", "ch07.reread_kernel", "ch07.grad_dtype", "ch07.dx_scaled",
                 "ch07.transposed"} if exercise_id == "ch07-ex1" else
                {"ch07.delta_max", "ch07.alpha_all", "ch07.no_ste", "ch07.tie", "ch07.half", "ch07.not_registered",
                 "ch07.zero_nan", "ch07.alpha_scaled"})
    assert expected <= keys


@pytest.mark.parametrize("name", ["grad_fn without the variables keyword", "multiplier trainable",
                                  "grad_fn reads self.kernel again"])
def test_a_few_declared_rows_in_both_languages(name):
    wrong = {w.name: w for w in WRONG_ANSWERS["ch07-ex1"]}[name]
    expect_key("ch07-ex1", wrong.answer, wrong.key)


def test_every_ch07_message_exists_in_both_languages_and_the_chinese_uses_the_glossary():
    en, zh = catalogue("en"), catalogue("zh")
    ours = sorted(key for key in en if key.startswith("ch07."))
    assert ours and ours == sorted(key for key in zh if key.startswith("ch07."))
    assert all(any("\u4e00" <= c <= "\u9fff" for c in zh[key]) for key in ours if zh[key].strip())
    assert "上游梯度" in zh["ch07.ste_upstream"] and "自定义梯度" in zh["ch07.no_variables"]
    assert "直通" in zh["ch07.no_ste"] and "数据类型" in zh["ch07.half"]


def test_the_checks_write_nothing_to_stderr(capfd):
    capfd.readouterr()
    for exercise_id, answer in (("ch07-ex1", GradScaledDense), ("ch07-ex2", ternary)):
        assert feedback(exercise_id, answer).passed
    assert capfd.readouterr().err == ""


def test_ex2_chapter_5s_ste_inside_gets_its_own_diagnosis():
    from gradlib.classroom.exercises.ch07 import _ternary_sign_only

    for lang in ("en", "zh"):
        feedback = exercises.check("ch07-ex2", _ternary_sign_only, lang=lang)
        assert not feedback.passed and feedback.key == "ch07.sign_only", feedback.message


class _MultiplierFrozenLater(keras.layers.Layer):
    """Right, except that the multiplier is made non-trainable after creation and grad_fn returns [dK] only."""

    def __init__(self, units, multiplier=1.0, **kwargs):
        super().__init__(**kwargs)
        self.units, self.initial = units, multiplier

    def build(self, input_shape):
        self.kernel = self.add_weight(shape=(input_shape[-1], self.units), name="kernel")
        self.multiplier = self.add_weight(shape=(), name="multiplier",
                                          initializer=keras.initializers.Constant(self.initial))
        self.multiplier.trainable = False

    def call(self, x):
        return self._matmul(x)

    @tf.custom_gradient
    def _matmul(self, x):
        kernel, m = tf.convert_to_tensor(self.kernel), tf.convert_to_tensor(self.multiplier)

        def grad_fn(dy, variables=None):
            return tf.matmul(dy, kernel, transpose_b=True), [tf.cast(m * tf.matmul(x, dy, transpose_a=True),
                                                                     variables[0].dtype)]
        return tf.matmul(x, kernel), grad_fn


def test_ex1_a_multiplier_made_non_trainable_later_is_explained():
    feedback = exercises.check("ch07-ex1", _MultiplierFrozenLater, lang="en")
    assert not feedback.passed and feedback.key == "ch07.variables_list"
    assert "multiplier.trainable = False" in feedback.message and "here one" not in feedback.message
