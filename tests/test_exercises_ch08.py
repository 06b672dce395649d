"""Chapter 8's exercise checks: ch08-ex1 (jvp_by_double_vjp), ch08-ex2 (log1pexp with a custom second
derivative) and ch08-ex3 (kepler, implicit differentiation by hand).

Each check must accept the chapter's reference solution and other correct answers, reject the typical
wrong answers with the message that explains them, and turn hostile answers into feedback instead of
exceptions.  The references in ``ch08`` are NumPy formulas; the tests below check them against
TensorFlow itself (Jacobians, the float64 softplus and sigmoid, finite differences of the Kepler solution)
and check what the designs promise (a Jacobian that is not symmetric, points where each mistake shows,
TensorFlow's flushing of subnormal numbers, which the tolerance of ex2 allows for).

Feedback is asserted by its catalogue key; the message text only where it shows a filled-in number that
the key cannot.  The typical wrong answers are declared with each check (``@exercise(...,
wrong_answers=...)``) and run in both languages by test_classroom_wrong_answers.py; the tests here take
those they look at more closely from there (:func:`wrong_answer`).

The chapter's own solutions (``chapters/en/08_*.md``, read by chapter_solutions.py) are tested when the
chapter has them; until then those tests are skipped, and the answers below stand in.
"""

import signal
import time

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.python.eager import record
from tensorflow.python.framework import op_callbacks

import gradlib
from gradlib import exercises
from gradlib.classroom.catalogue import catalogue
from gradlib.classroom.exercises import ch08
from gradlib.classroom.exercises._core import WRONG_ANSWERS, fmt
from test_classroom_wrong_answers import expect_key, references, wrong_answer

LANGS = ("en", "zh")
IDS = ("ch08-ex1", "ch08-ex2", "ch08-ex3")
PASSED = {"ch08-ex1": "ch08.jvp_passed", "ch08-ex2": "ch08.log1pexp_passed", "ch08-ex3": "ch08.kepler_passed"}


def chapter_reference(exercise_id):
    """The chapter's own solution (English edition); the test is skipped while the chapter has none."""
    found = references().get(exercise_id)
    if found is None:
        pytest.skip(f"chapter 8 has no solution cell for {exercise_id} yet")
    return found


def feedback(exercise_id, answer, lang="en", **kwargs):
    result = exercises.check(exercise_id, answer, lang=lang, **kwargs)
    assert result.key != "common.check_failed", result.message
    return result


# -- correct answers of ex1, written independently of the check ------------------------------------
# Each turns an unconnected gradient into zeros: where f(x) does not depend on x on the tape, J·v is zeros.

ZERO = tf.UnconnectedGradients.ZERO


def jvp_zeros(f, x, v):
    """The chapter's solution (with unconnected_gradients=ZERO on both gradient calls)."""
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        u = tf.zeros_like(y)
        outer.watch(u)
        g = inner.gradient(y, x, output_gradients=u, unconnected_gradients=ZERO)
    return outer.gradient(g, u, output_gradients=v, unconnected_gradients=ZERO)


def jvp_random_u(f, x, v):
    """Any u gives the same J·v: a random one, watched before the inner tape even starts."""
    y_shape = tf.shape(f(x))
    u = tf.random.normal(y_shape, dtype=x.dtype, seed=3)
    with tf.GradientTape() as outer:
        outer.watch(u)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        g = inner.gradient(y, x, output_gradients=u, unconnected_gradients=ZERO)
    return outer.gradient(g, u, output_gradients=v, unconnected_gradients=ZERO)


def jvp_variable_u(f, x, v):
    """u a trainable tf.Variable (watched automatically), the directional sum written out."""
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        u = tf.Variable(tf.ones_like(y))
        g = inner.gradient(y, x, output_gradients=u, unconnected_gradients=ZERO)
        s = tf.reduce_sum(g * v)
    return outer.gradient(s, u, unconnected_gradients=ZERO)


def jvp_persistent(f, x, v):
    """One persistent tape that records its own first gradient."""
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = f(x)
        u = tf.zeros_like(y)
        tape.watch(u)
        g = tape.gradient(y, x, output_gradients=u, unconnected_gradients=ZERO)
    return tape.gradient(g, u, output_gradients=v, unconnected_gradients=ZERO)


def jvp_row_by_row(f, x, v):
    """One tape.gradient per output (n_out vector-Jacobian products, not the trick): slow, but
    tf.GradientTape alone, and accepted."""
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = tf.reshape(f(x), [-1])
        rows = [y[i] for i in range(y.shape[0])]
    return tf.reshape(tf.stack([tf.reduce_sum(tape.gradient(row, x, unconnected_gradients=ZERO) * v)
                                for row in rows]), tf.shape(f(x)))


# -- correct answers of ex2 --------------------------------------------------------------------------

@tf.custom_gradient
def _sigma(x):   # module level: the first derivative with its own custom gradient
    s = tf.sigmoid(x)
    return s, lambda ddy: ddy * s * tf.sigmoid(-x)


@tf.custom_gradient
def log1pexp_softplus(x):
    return tf.nn.softplus(x), lambda dy: dy * _sigma(x)


@tf.custom_gradient
def log1pexp_exp_form(x):
    """σ(x)σ(−x) as e^{-|x|}/(1 + e^{-|x|})², the value through tf.math.log1p."""
    @tf.custom_gradient
    def first(x):
        e = tf.exp(-tf.abs(x))
        s = tf.where(x >= 0, 1 / (1 + e), e / (1 + e))
        return s, lambda ddy: ddy * e / (1 + e) ** 2
    return tf.nn.relu(x) + tf.math.log1p(tf.exp(-tf.abs(x))), lambda dy: dy * first(x)


@tf.custom_gradient
def log1pexp_exp_softplus(x):
    """Exact formulas through exp of a rounded softplus: a few dozen ulps, within the tolerance."""
    @tf.custom_gradient
    def first(x):
        return tf.exp(-tf.nn.softplus(-x)), lambda ddy: ddy * tf.exp(-tf.nn.softplus(x) - tf.nn.softplus(-x))
    return tf.nn.softplus(x), lambda dy: dy * first(x)


@tf.custom_gradient
def log1pexp_of_x_and_dy(x):
    """The first derivative a custom function of (x, dy), with the right gradient for dy: ddx·σ(x)."""
    @tf.custom_gradient
    def first(x, dy):
        s, t = tf.sigmoid(x), tf.sigmoid(-x)
        return dy * s, lambda ddx: (ddx * dy * s * t, ddx * s)
    return tf.nn.softplus(x), lambda dy: first(x, dy)


# -- correct answers of ex3 --------------------------------------------------------------------------

def kepler_while_loop(M, e):
    """tf.while_loop to a fixed tolerance; works eagerly and inside a tf.function."""
    @tf.custom_gradient
    def solve(M, e):
        tol = 8 * np.finfo(M.dtype.as_numpy_dtype).eps * (1 + tf.abs(M))

        def body(i, E, done):
            E_next = M + e * tf.sin(E)
            return i + 1, E_next, tf.reduce_all(tf.abs(E_next - E) <= tol)

        _, E, _ = tf.while_loop(lambda i, E, done: (i < 10_000) & ~done, body, (0, M, False))
        E = tf.stop_gradient(E)

        def grad_fn(dE):
            d = 1 - e * tf.cos(E)
            return dE / d, dE * tf.sin(E) / d
        return E, grad_fn
    return solve(M, e)


@tf.custom_gradient
def kepler_newton(M, e):
    """Newton's method instead of the fixed-point iteration: as accurate, accepted; decorated at the top."""
    E = M
    for _ in range(30):
        E = E - (E - e * tf.sin(E) - M) / (1 - e * tf.cos(E))

    def grad_fn(dE):
        d = 1 - e * tf.cos(E)
        return dE / d, dE * tf.sin(E) / d
    return E, grad_fn


# -- the reference solutions pass -----------------------------------------------------------------------

@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("exercise_id", IDS)
def test_the_chapters_solutions_pass(exercise_id, lang):
    result = feedback(exercise_id, chapter_reference(exercise_id), lang)
    assert result.passed and result.key == PASSED[exercise_id], result.message


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("answer", [jvp_zeros, jvp_random_u, jvp_variable_u, jvp_persistent, jvp_row_by_row],
                         ids=["zeros", "random u", "variable u", "persistent", "row by row"])
def test_ex1_correct_answers_pass(answer, lang):
    result = feedback("ch08-ex1", answer, lang)
    assert result.passed and result.key == "ch08.jvp_passed", result.message
    assert str(len(ch08.JVP_CASES)) == "6" and "6" in result.message


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("answer", [log1pexp_softplus, log1pexp_exp_form, log1pexp_exp_softplus,
                                    log1pexp_of_x_and_dy],
                         ids=["softplus", "exp form", "exp of softplus", "function of (x, dy)"])
def test_ex2_correct_answers_pass(answer, lang):
    result = feedback("ch08-ex2", answer, lang)
    assert result.passed and result.key == "ch08.log1pexp_passed", result.message
    assert str(ch08.ULPS) in result.message and "1.2e-38" in result.message


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("answer", [kepler_while_loop, tf.function(kepler_while_loop), kepler_newton],
                         ids=["while_loop", "tf.function", "newton"])
def test_ex3_correct_answers_pass(answer, lang):
    for _ in range(2):   # the second time a tf.function's trace is cached: the graph is searched instead
        result = feedback("ch08-ex3", answer, lang)
        assert result.passed and result.key == "ch08.kepler_passed", result.message


def test_each_check_is_quick():
    for exercise_id, answer in zip(IDS, (jvp_zeros, log1pexp_softplus, kepler_while_loop)):
        feedback(exercise_id, answer)  # the first run pays for tracing and imports
        started = time.monotonic()
        assert feedback(exercise_id, answer).passed
        assert time.monotonic() - started < 5.0  # well under a second each on a 2-core machine


def test_the_checks_write_nothing_to_stderr(capfd):
    capfd.readouterr()
    for exercise_id, answer in zip(IDS, (jvp_zeros, log1pexp_softplus, kepler_while_loop)):
        assert feedback(exercise_id, answer).passed
    for wrong in WRONG_ANSWERS["ch08-ex2"]:
        assert not feedback("ch08-ex2", wrong.answer).passed
    assert capfd.readouterr().err == ""


# -- the references against TensorFlow, and the designs -------------------------------------------------

@pytest.mark.parametrize("case", ch08.JVP_CASES, ids=lambda case: case.text)
def test_ex1_jacobians_are_tensorflows(case):
    x = tf.constant(case.x)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = case.f(x)
    assert (tape.jacobian(y, x) is None) == case.unconnected   # the tape sees no path from x to f(x) there
    jacobian = tape.jacobian(y, x, unconnected_gradients=ZERO).numpy().reshape(int(np.prod(y.shape)), case.x.size)
    w = np.arange(1.0, y.shape.num_elements() + 1).reshape(y.shape)
    np.testing.assert_allclose(case.jvp(case.x, case.v).ravel(), jacobian @ case.v.ravel(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(case.vjp(case.x, w).ravel(), jacobian.T @ w.ravel(), rtol=1e-12, atol=1e-14)
    with tf.GradientTape() as outer:   # d/dx of Σ_i (J v)_i: what the derivative with respect to x gives for u = 1
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = case.f(x)
        s = tf.reduce_sum(inner.gradient(y, x, unconnected_gradients=ZERO) * case.v)
    np.testing.assert_allclose(case.wrt_x(case.x, case.v), outer.gradient(s, x, unconnected_gradients=ZERO).numpy(),
                               rtol=1e-12, atol=1e-14)


def test_ex1_cases_tell_the_mistakes_apart():
    sizes = {(case.x.shape, case.jvp(case.x, case.v).shape) for case in ch08.JVP_CASES}
    assert any(int(np.prod(x)) < int(np.prod(y)) for x, y in sizes)     # an output larger than the input
    assert any(int(np.prod(x)) > int(np.prod(y)) for x, y in sizes)     # smaller
    assert any(len(x) != len(y) for x, y in sizes)                      # shaped differently
    assert not np.allclose(ch08.A_SQUARE, ch08.A_SQUARE.T)              # Jᵀv ≠ Jv
    for case in ch08.JVP_CASES:
        assert np.any(case.v == 0) and np.any(case.v < 0)
    sin, square = ch08.JVP_CASES[:2]
    # J diagonal: Jᵀv and (Jᵀ1) ⊙ v are J·v there; every mistake shows on the square case, which comes next
    expected = sin.jvp(sin.x, sin.v)
    same = [np.allclose(wrong, expected) for _, wrong in ch08._jvp_mistakes(sin, sin.x, sin.v, expected.shape)]
    assert same == [False, True, False, True, False]   # zeros, Jᵀv, Jᵀ1, (Jᵀ1) ⊙ v, with respect to x
    expected = square.jvp(square.x, square.v)
    for key, wrong in ch08._jvp_mistakes(square, square.x, square.v, expected.shape):
        assert not np.allclose(wrong, expected, rtol=1e-3), key


def test_ex1_the_unconnected_case_is_checked_last_and_wants_zeros_shaped_like_f_x():
    (case,) = [case for case in ch08.JVP_CASES if case.unconnected]
    assert case is ch08.JVP_CASES[-1] and case.x.shape != case.jvp(case.x, case.v).shape
    assert not np.any(case.jvp(case.x, case.v))
    # the chapter's solution as first written (no unconnected_gradients) raises there: TypeError from
    # outer.gradient(None, u); its message names the case and what to pass
    first_written = wrong_answer("ch08-ex1", "no unconnected_gradients: raises where J = 0")
    for lang in LANGS:
        result = feedback("ch08-ex1", first_written, lang)
        assert result.key == "ch08.jvp_unconnected_raised" and "TypeError" in result.message
        assert "stop_gradient" in result.message
        assert "unconnected_gradients=tf.UnconnectedGradients.ZERO" in result.message
    # the mistakes that have a message of their own show before it, in float32 and float64 alike
    assert feedback("ch08-ex1", wrong_answer("ch08-ex1", "result cast to float32")).key == "ch08.jvp_dtype"

    def zeros_like_x_when_none(f, x, v):   # zeros, but shaped like x
        result = wrong_answer("ch08-ex1", "unconnected_gradients=ZERO on the inner gradient only")(f, x, v)
        return tf.zeros_like(x) if result is None else result
    assert feedback("ch08-ex1", zeros_like_x_when_none).key == "ch08.input_shape"

    def row_by_row_without_zero(f, x, v):
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = tf.reshape(f(x), [-1])
            rows = [y[i] for i in range(y.shape[0])]
        return tf.reshape(tf.stack([tf.reduce_sum(tape.gradient(row, x) * v) for row in rows]), tf.shape(f(x)))
    assert feedback("ch08-ex1", row_by_row_without_zero).key == "ch08.jvp_unconnected_raised"


def test_ex1_a_result_shaped_like_x_is_explained():
    def gradient_of_the_sum(f, x, v):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(f(x) * tf.ones_like(f(x)))
        return tape.gradient(y, x) * v
    # right where J is diagonal, then Jᵀ1 ⊙ v on the square case: the summed-gradient hint
    assert feedback("ch08-ex1", gradient_of_the_sum).key == "ch08.summed"

    def vjp_of_ones_everywhere(f, x, v):   # x's shape everywhere: wrong first where f(x) has another shape
        return jvp_zeros(f, x, v) if x.shape == f(x).shape else tf.zeros_like(x)
    result = feedback("ch08-ex1", vjp_of_ones_everywhere)
    assert result.key == "ch08.input_shape" and "[3]" in result.message and "[5]" in result.message


def test_ex1_switched_off_functions_come_back_whatever_happens():
    originals = (tf.autodiff.ForwardAccumulator, tf.GradientTape.jacobian, tf.GradientTape.batch_jacobian)

    def hangs_with_forward_mode(f, x, v):
        try:
            tf.autodiff.ForwardAccumulator(x, v)
        except Exception:
            pass
        while True:
            pass

    assert feedback("ch08-ex1", hangs_with_forward_mode, timeout=0.5).key == "common.timeout"
    for answer in (wrong_answer("ch08-ex1", "tf.autodiff.ForwardAccumulator"),
                   wrong_answer("ch08-ex1", "tape.jacobian"), jvp_zeros):
        feedback("ch08-ex1", answer)
        assert (tf.autodiff.ForwardAccumulator, tf.GradientTape.jacobian, tf.GradientTape.batch_jacobian) == originals
    assert "jacobian" in vars(tf.GradientTape) and "batch_jacobian" in vars(tf.GradientTape)
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_ex1_forward_mode_tried_and_abandoned_is_still_refused():
    def tries_then_falls_back(f, x, v):
        try:
            with tf.autodiff.ForwardAccumulator(x, v) as accumulator:
                y = f(x)
            return accumulator.jvp(y)
        except Exception:
            return jvp_zeros(f, x, v)

    for lang in LANGS:
        result = feedback("ch08-ex1", tries_then_falls_back, lang)
        assert result.key == "ch08.forward_accumulator" and "tf.autodiff.ForwardAccumulator" in result.message


def test_ex1_batch_jacobian_is_named():
    def batch(f, x, v):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        tape.batch_jacobian(tf.reshape(y, [1, -1]), tf.reshape(x, [1, -1]))
        return y

    result = feedback("ch08-ex1", batch)
    assert result.key == "ch08.jacobian" and "tape.batch_jacobian" in result.message


def test_ex2_reference_is_tensorflows_float64():
    x = np.concatenate([np.array(ch08.LOG1PEXP_SPECIAL), np.linspace(-700, 700, 301)])
    value, first, second = ch08.log1pexp_reference(x)
    xt = tf.constant(x)
    np.testing.assert_allclose(value, tf.nn.softplus(xt).numpy(), rtol=1e-15)
    np.testing.assert_allclose(first, tf.sigmoid(xt).numpy(), rtol=1e-15)
    np.testing.assert_allclose(second, (tf.sigmoid(xt) * tf.sigmoid(-xt)).numpy(), rtol=1e-14)
    assert second[list(ch08.LOG1PEXP_SPECIAL).index(40.0)] == pytest.approx(4.248354255291589e-18, rel=1e-15)


def test_ex2_float32_facts_the_check_relies_on():
    tiny = float(np.finfo(np.float32).tiny)
    _, _, second = ch08.log1pexp_reference(np.array([40.0, 100.0]))
    assert second[0] > tiny > second[1] > 0            # x = 40: a normal number; x = 100: a float32 subnormal
    assert np.float32(second[1]) != 0                  # NumPy keeps the subnormal ...
    x = tf.constant([100.0, -100.0])
    assert tf.exp(-x[0]).numpy() == 0                  # ... TensorFlow's CPU kernels flush it to zero
    s = tf.sigmoid(tf.constant(40.0))
    assert (s * (1 - s)).numpy() == 0                  # the cancellation the exercise is about
    assert tf.math.is_inf(tf.math.log(1 + tf.exp(x[0])))   # the naive value overflows float32
    # so the comparison takes 0 and the subnormal at x = 100 as right, and 0 at x = 40 as wrong
    assert ch08._close(np.array([0.0, second[1]]), np.array([second[1]] * 2), np.float32).all()
    assert not ch08._close(np.array([0.0]), second[:1], np.float32).any()


def test_ex2_the_tolerance_separates_right_formulas_from_cancellation():
    x = ch08.LOG1PEXP_X.astype(np.float32)
    xt = tf.constant(x)
    _, first, second = ch08.log1pexp_reference(x)
    good = (tf.sigmoid(xt) * tf.sigmoid(-xt)).numpy().astype(np.float64)
    assert ch08._close(good, second, np.float32).all()
    s = tf.sigmoid(xt)
    cancelled = (s * (1 - s)).numpy().astype(np.float64)
    assert not ch08._close(cancelled, second, np.float32).all()
    assert ch08._close(tf.sigmoid(xt).numpy().astype(np.float64), first, np.float32).all()


@pytest.mark.parametrize("lang", LANGS)
def test_ex2_softplus_message_names_softplus_and_the_point(lang):
    result = feedback("ch08-ex2", tf.nn.softplus, lang)
    assert result.key == "ch08.softplus_own"
    assert ("x = 40" in result.message) and ("4.24835e-18" in result.message)
    assert ("softplus's own second derivative underflows" in result.message if lang == "en"
            else "softplus 自己的二阶导数会下溢" in result.message)


def test_ex2_overflow_is_named_at_x_100():
    result = feedback("ch08-ex2", wrong_answer("ch08-ex2", "the naive log(1 + exp(x))"))
    assert result.key == "ch08.overflow" and result.message.startswith("at x = 100 (float32), your value is inf")


def test_ex2_accurate_answers_without_the_nesting_are_refused_at_the_end():
    @tf.custom_gradient
    def not_nested(x):   # exact second derivative by autodiff of exp(-softplus(-x)): right, but not nested
        return tf.nn.softplus(x), lambda dy: dy * tf.exp(-tf.nn.softplus(-x))

    def plain(x):        # no custom gradient at all, every derivative by autodiff
        return tf.nn.softplus(x) + 0 * tf.exp(-tf.nn.softplus(-x))

    for lang in LANGS:
        assert feedback("ch08-ex2", not_nested, lang).key == "ch08.not_nested"
        assert feedback("ch08-ex2", tf.function(not_nested), lang).key == "ch08.not_nested"
    assert feedback("ch08-ex2", plain).key == "ch08.softplus_own"   # its second derivative underflows too


def test_ex2_composed_reference_is_tensorflows_float64_and_the_finite_difference():
    x = ch08.COMPOSED_X
    value, first, second, size = ch08.composed_reference(x)
    xt = tf.constant(x)
    with tf.GradientTape() as outer:   # plain autodiff of sin(softplus(x)): accurate in float64 at these x
        outer.watch(xt)
        with tf.GradientTape() as inner:
            inner.watch(xt)
            z = tf.sin(tf.nn.softplus(xt))
        g = inner.gradient(z, xt)
    np.testing.assert_allclose(value, z.numpy(), rtol=1e-15)
    np.testing.assert_allclose(first, g.numpy(), rtol=1e-13)   # cos(s) at s ≈ 8 carries the rounding of s
    np.testing.assert_allclose(second, outer.gradient(g, xt).numpy(), rtol=0, atol=1e-14 * size.max())
    h = 1e-5
    difference = (ch08.composed_reference(x + h)[1] - ch08.composed_reference(x - h)[1]) / (2 * h)
    np.testing.assert_allclose(second, difference, rtol=0, atol=1e-8)
    assert np.all(np.abs(second) > 1e-3) and np.any(x < 0) and np.any(x > 5) and 0.0 in x


@pytest.mark.parametrize("name", ["nested function of (x, dy), None for dy", "nested function of (x, dy), 7 for dy"])
def test_ex2_a_missing_dy_gradient_shows_only_in_the_composed_pass(name):
    answer = wrong_answer("ch08-ex2", name)
    for dtype, upstream in ch08.LOG1PEXP_PASSES:   # a constant upstream gradient: these answers are right
        ch08._log1pexp_pass(answer, dtype, upstream, lambda: 2, "en")
    for lang in LANGS:
        result = feedback("ch08-ex2", answer, lang)
        assert result.key == "ch08.dy_gradient"
        assert "x = 0.5" in result.message and "float64" in result.message
        assert "-0.188441" in result.message   # d²/dx² sin(log1pexp(x)) at 0.5
        assert "sin(log1pexp(x))" in result.message and "return dy * sigma(x)" in result.message
    i = 0   # x = 0.5: None for dy leaves cos(s)σσ(−x) alone; 7 for dy adds 7·(−sin(s)σ), not −sin(s)σ²
    _, _, second, _ = ch08.composed_reference(ch08.COMPOSED_X)
    s, sigma, ss = ch08.log1pexp_reference(ch08.COMPOSED_X)
    wrong = {"None": np.cos(s) * ss, "7": np.cos(s) * ss - 7 * np.sin(s) * sigma}["None" if "None" in name else "7"]
    assert fmt(wrong[i]) in feedback("ch08-ex2", answer).message and not np.isclose(wrong[i], second[i])


def test_ex2_the_upstream_mistakes_name_both_upstream_gradients():
    result = feedback("ch08-ex2", wrong_answer("ch08-ex2", "nested grad_fn ignores its upstream gradient"))
    assert result.key == "ch08.second_upstream"
    i = list(ch08.LOG1PEXP_X).index(np.float32(-40.0))
    assert f"{ch08.LOG1PEXP_U[i]:g} (inner tape) and {ch08.LOG1PEXP_W[i]:g} (outer tape)" in result.message


def test_ex3_reference_solves_keplers_equation_and_its_gradient_is_the_finite_difference():
    M, e = ch08.KEPLER_M, ch08.KEPLER_E
    E = ch08.kepler_reference(M, e)
    assert np.max(np.abs(E - e * np.sin(E) - M)) < 1e-14
    assert np.array_equal(E[e == 0], M[e == 0]) and E[M == 0].tolist() == [0.0] * int(np.sum(M == 0))
    h = 1e-6
    dM = (ch08.kepler_reference(M + h, e) - ch08.kepler_reference(M - h, e)) / (2 * h)
    de = (ch08.kepler_reference(M, e + h) - ch08.kepler_reference(M, e - h)) / (2 * h)
    np.testing.assert_allclose(dM, 1 / (1 - e * np.cos(E)), rtol=1e-7)
    np.testing.assert_allclose(de, np.sin(E) / (1 - e * np.cos(E)), rtol=1e-6, atol=1e-8)


def test_ex3_points_cover_the_brief():
    pairs = set(zip(ch08.KEPLER_M.round(12), ch08.KEPLER_E.round(12)))
    assert any(e == 0 for _, e in pairs) and any(e == 0.9 for _, e in pairs)
    assert any(M == 0 for M, _ in pairs) and any(abs(M - np.pi) < 1e-12 for M, _ in pairs)
    assert any(M < 0 for M, _ in pairs) and any(abs(M - (2 * np.pi + 1)) < 1e-12 for M, _ in pairs)
    assert np.all(ch08.KEPLER_UPSTREAM != 1) and np.all(ch08.KEPLER_E < 1)


@pytest.mark.parametrize("steps", [50, 200])
def test_ex3_an_unfinished_iteration_is_named(steps):
    # 200 steps are enough everywhere but at e = 0.9, where the error shrinks by at most 0.9 a step
    result = feedback("ch08-ex3", ch08._kepler_with(steps=steps))
    assert result.key == "ch08.not_converged" and "(float64)" in result.message
    if steps == 200:
        assert "e = 0.9 (float64)" in result.message


def kepler_newton_correction(M, e):
    """No custom gradient and no recorded iterations: one Newton step at the stopped solution, inside a
    tf.while_loop so that it also runs as a tf.function; its autodiff gradient is the implicit one."""
    M0, e0 = tf.stop_gradient(M), tf.stop_gradient(e)
    _, E = tf.while_loop(lambda i, E: i < 1000, lambda i, E: (i + 1, M0 + e0 * tf.sin(E)), (0, M0))
    E = tf.stop_gradient(E)
    return E - (E - e * tf.sin(E) - M) / tf.stop_gradient(1 - e * tf.cos(E))


def test_ex3_a_gradient_without_custom_gradient_and_without_unrolling_is_not_called_unrolled():
    for answer in (kepler_newton_correction, tf.function(kepler_newton_correction),
                   wrong_answer("ch08-ex3", "a stop_gradient Newton correction, no custom gradient")):
        for lang in LANGS:
            result = feedback("ch08-ex3", answer, lang)
            assert result.key == "ch08.kepler_no_custom", result.message
            assert ("unrolled" not in result.message and "through your iterations" not in result.message
                    if lang == "en" else "经过了你的迭代过程" not in result.message)

    def with_sign_error(M, e):    # the same, with 1 + e cos E: the mistake is named, not unrolling
        E = tf.stop_gradient(ch08._kepler_iterate(tf.stop_gradient(M), tf.stop_gradient(e)))
        return E - (E - e * tf.sin(E) - M) / tf.stop_gradient(1 + e * tf.cos(E))

    def with_half_gradient(M, e):   # wrong, and no mistake of the table: the missing custom gradient is said
        E = tf.stop_gradient(ch08._kepler_iterate(tf.stop_gradient(M), tf.stop_gradient(e)))
        return E - 0.5 * (E - e * tf.sin(E) - M) / tf.stop_gradient(1 - e * tf.cos(E))

    assert feedback("ch08-ex3", with_sign_error).key == "ch08.sign_error"
    assert feedback("ch08-ex3", with_half_gradient).key == "ch08.custom_missing"


def test_ex3_the_size_of_a_backward_pass_tells_unrolled_from_not():
    M, e = tf.constant(ch08.KEPLER_M), tf.constant(ch08.KEPLER_E)

    def size(answer):
        with tf.GradientTape() as tape:
            tape.watch([M, e])
            E = answer(M, e)
        with ch08._backward_size() as sizes:
            tape.gradient(E, [M, e])
        return sum(n for n, _ in sizes), any(loop for _, loop in sizes)

    def unrolled(M, e):
        _, E = tf.while_loop(lambda i, E: i < 1000, lambda i, E: (i + 1, M + e * tf.sin(E)), (0, M))
        return E

    small = [size(answer) for answer in (kepler_while_loop, kepler_newton_correction,
                                         tf.function(kepler_newton_correction), tf.function(kepler_while_loop))]
    large = [size(answer) for answer in (unrolled, tf.function(unrolled),
                                         wrong_answer("ch08-ex3", "unrolled, no custom gradient"))]
    assert all(n < ch08.UNROLLED_BACKWARD_OPS / 4 and not loop for n, loop in small), small
    assert all(ch08._through_iterations([(n, loop)]) for n, loop in large), large
    assert large[0][0] > 20 * ch08.UNROLLED_BACKWARD_OPS and large[1][1]   # eagerly 11 ops a step; a While in a graph
    assert not op_callbacks.should_invoke_op_callbacks()


def test_ex3_unrolled_iterations_are_refused_even_inside_a_tf_function():
    def unrolled(M, e):
        _, E = tf.while_loop(lambda i, E: i < 1000, lambda i, E: (i + 1, M + e * tf.sin(E)), (0, M))
        return E

    for answer in (unrolled, tf.function(unrolled), wrong_answer("ch08-ex3", "unrolled, no custom gradient")):
        for lang in LANGS:
            assert feedback("ch08-ex3", answer, lang).key == "ch08.unrolled"


def test_ex3_an_unrolled_derivative_that_lags_behind_its_iterate_is_explained():
    # stopped when E no longer changes (float32): E is right, its derivative, k·(e cos E)^k behind, is not
    result = feedback("ch08-ex3", wrong_answer("ch08-ex3", "unrolled until E stops changing"))
    assert result.key == "ch08.unrolled_lags" and "e = 0.9 (float32)" in result.message


def test_the_tape_spy_is_removed_whatever_happens():
    original = record.record_operation

    def hangs(M, e):
        while True:
            pass

    @tf.custom_gradient
    def hangs_backward(M, e):   # the right E, and a grad_fn that never returns
        def grad_fn(dE):
            while True:
                pass
        return tf.constant(ch08.kepler_reference(M.numpy(), e.numpy()), M.dtype), grad_fn

    assert feedback("ch08-ex3", hangs, timeout=0.3).key == "common.timeout"
    assert feedback("ch08-ex3", hangs_backward, timeout=0.5).key == "common.timeout"
    assert feedback("ch08-ex2", lambda x: 1 / 0).key == "common.raised"
    assert record.record_operation is original
    assert not op_callbacks.should_invoke_op_callbacks()   # the backward pass's counter is gone too


def test_gradlib_fixed_point_is_refused_also_when_called_through_the_module():
    def through_module(M, e):
        from gradlib import higher
        return higher.fixed_point(lambda E, M, e: M + e * tf.sin(E), M, M, e)

    for lang in LANGS:
        assert feedback("ch08-ex3", through_module, lang).key == "ch08.library_fixed_point"
    assert gradlib.fixed_point is gradlib.higher.fixed_point   # put back


# -- all three: the declared wrong answers, the messages ------------------------------------------------

@pytest.mark.parametrize("exercise_id", IDS)
def test_the_likeliest_mistakes_are_declared_with_their_keys(exercise_id):
    # test_classroom_wrong_answers.py runs every row in both languages; here, that the brief's list is there.
    keys = {wrong.key for wrong in WRONG_ANSWERS[exercise_id]}
    expected = {
        "ch08-ex1": {"ch08.vjp", "ch08.summed", "ch08.jvp_none", "ch08.jvp_dtype", "ch08.forward_accumulator",
                     "ch08.jacobian", "ch08.library_hvp", "ch08.jvp_zero", "ch08.jvp_unconnected",
                     "ch08.jvp_unconnected_raised"},
        "ch08-ex2": {"ch08.second_none", "ch08.second_cancel", "ch08.second_upstream", "ch08.overflow",
                     "ch08.softplus_own", "ch08.dy_gradient"},
        "ch08-ex3": {"ch08.unrolled", "ch08.unrolled_lags", "ch08.missing_sin", "ch08.sign_error", "ch08.not_converged",
                     "ch08.e_none", "ch08.library_fixed_point", "ch08.kepler_no_custom"},
    }[exercise_id]
    assert expected <= keys


@pytest.mark.parametrize("exercise_id, name", [("ch08-ex1", "a vector-Jacobian product Jᵀv"),
                                               ("ch08-ex2", "grad_fn dy * tf.sigmoid(x)"),
                                               ("ch08-ex3", "∂E/∂e without sin E")])
def test_a_few_declared_rows_in_both_languages(exercise_id, name):
    wrong = {w.name: w for w in WRONG_ANSWERS[exercise_id]}[name]
    expect_key(exercise_id, wrong.answer, wrong.key)


def test_every_ch08_message_exists_in_both_languages_and_the_chinese_uses_the_glossary():
    en, zh = catalogue("en"), catalogue("zh")
    ours = sorted(key for key in en if key.startswith("ch08."))
    assert ours and ours == sorted(key for key in zh if key.startswith("ch08."))
    assert all(any("\u4e00" <= c <= "\u9fff" for c in zh[key]) for key in ours
               if zh[key].strip() and key not in ("ch08.jvp_word",))
    assert "向量-雅可比积" in zh["ch08.vjp"] and "梯度带" in zh["ch08.jvp_none"]
    assert "相消" in zh["ch08.second_cancel"] and "下溢" in zh["ch08.softplus_own"]
    assert "隐函数定理" in zh["ch08.sign_error"] and "上游梯度" in zh["ch08.kepler_upstream"]
    assert "黑塞矩阵–向量积" in zh["ch08.library_hvp"] and "最后一位单位" in zh["ch08.log1pexp_passed"]
    assert "上游梯度" in zh["ch08.dy_gradient"] and "自定义梯度" in zh["ch08.dy_gradient"]
    assert "梯度带" in zh["ch08.jvp_unconnected"] and "梯度带" in zh["ch08.jvp_unconnected_raised"]
    # it claims no unrolling
    assert "iterat" not in en["ch08.kepler_no_custom"] and "迭代" not in zh["ch08.kepler_no_custom"]
