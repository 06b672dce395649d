"""Chapter 2's exercise checks: ch02-ex1 (clipped STE), ch02-ex2 (scaled gradient), ch02-ex4 (TD loss).

Each check must accept the reference solution (and reasonable variants),
reject the typical wrong answers with a specific message in both languages,
and turn hostile answers into feedback, never an exception.  ch02-ex3 is
answered in writing; its reference solution, read from both chapter sources,
is compared with NumPy's sign bit here.
"""

import numpy as np
import pytest
import tensorflow as tf

import gradlib
from chapter_solutions import code_cells, solution_parts
from gradlib import exercises

from test_classroom_wrong_answers import reference, wrong_answer
from gradlib.classroom.exercises import ch02
from tools.notebooks import ROOT

# Feedback is asserted by its catalogue key; the message text only where it shows a filled-in
# number or placeholder (a point, s, a case, a count) that the key cannot.


# -- reference solutions (as in the chapter) and variants -------------------------

clipped_identity_ste = reference("ch02-ex1")  # the chapter's own solution


def clipped_identity_ste_min_max(x):  # hard tanh written with minimum/maximum
    t = tf.minimum(tf.maximum(x, -1.0), 1.0)
    return t + tf.stop_gradient(tf.sign(x) - t)


def clipped_identity_ste_mask(x):  # the mask form: x where |x| <= 1, a stopped x elsewhere
    t = tf.where(tf.abs(x) <= 1, x, tf.stop_gradient(x))
    return t + tf.stop_gradient(tf.sign(x) - t)


@tf.custom_gradient
def clipped_identity_ste_custom(x):  # not the chapter's tool, but a correct op
    return tf.sign(x), lambda dy: dy * tf.cast(tf.abs(x) <= 1, dy.dtype)


def clipped_identity_ste_exact(x):  # the chapter's solution: the bit-exact arrangement
    t = tf.clip_by_value(x, -1.0, 1.0)
    return tf.stop_gradient(tf.sign(x)) - (tf.stop_gradient(t) - t)


scaled_gradient = reference("ch02-ex2")  # the chapter's own solution


def scaled_gradient_textbook(x, s):  # g + sg(f - g): right, but rounds twice
    return s * x + tf.stop_gradient((1 - s) * x)


def scale_gradient_muzero(x, s):  # the form of MuZero's pseudocode: rounds too
    return x * s + tf.stop_gradient(x) * (1 - s)


td_loss = reference("ch02-ex4")  # the chapter's own solution


def td_loss_multiply_no_nan(w, phi, phi_next, reward, done, gamma):  # a product that ignores 0 * NaN
    v_next = tf.stop_gradient(tf.linalg.matvec(phi_next, w))
    target = reward + gamma * tf.math.multiply_no_nan(v_next, 1 - done)
    return tf.reduce_mean(0.5 * (tf.linalg.matvec(phi, w) - target) ** 2)


def td_loss_clean_features(w, phi, phi_next, reward, done, gamma):  # the terminal rows replaced first
    live = tf.where(done[:, None] > 0, 0.0, phi_next)
    target = tf.stop_gradient(reward + gamma * (1 - done) * tf.linalg.matvec(live, w))
    return tf.reduce_mean(0.5 * (tf.linalg.matvec(phi, w) - target) ** 2)


# -- ch02-ex1 ---------------------------------------------------------------------

@pytest.mark.parametrize("answer", [clipped_identity_ste, clipped_identity_ste_exact, clipped_identity_ste_min_max,
                                    clipped_identity_ste_mask, clipped_identity_ste_custom])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_ex1_correct_answers_pass(answer, lang):
    feedback = exercises.check("ch02-ex1", answer, lang=lang)
    assert feedback.passed, feedback.message
    assert ("[-1, 1]" in feedback.message)


# The three most likely wrong answers of ch02-ex1, each named by its own message.

def test_ex1_plain_ste_without_the_clip_is_named():
    feedback = exercises.check("ch02-ex1", lambda x: x + tf.stop_gradient(tf.sign(x) - x))
    assert not feedback.passed
    assert feedback.key == "ch02.ste_unclipped" and "(at x = 1.5: 1; expected 0)" in feedback.message
    assert exercises.check("ch02-ex1", lambda x: x + tf.stop_gradient(tf.sign(x) - x), lang="zh").key == "ch02.ste_unclipped"


def test_ex1_gradient_wrong_only_outside_gets_the_blocked_hint():
    def leaky(x):  # gradient 1 inside, 0.5 outside: no recognised pattern, the generic hint
        t = tf.where(tf.abs(x) <= 1, x, 0.5 * x)
        return t + tf.stop_gradient(tf.sign(x) - t)

    feedback = exercises.check("ch02-ex1", leaky)
    assert feedback.message.startswith("at x = 1.5: your gradient is 0.5; expected 0. ")
    assert feedback.key == "ch02.ste_outside"
    assert exercises.check("ch02-ex1", leaky, lang="zh").key == "ch02.ste_outside"


def test_ex1_sign_alone_gets_the_zero_gradient_hint():
    feedback = exercises.check("ch02-ex1", tf.sign)
    assert not feedback.passed
    assert feedback.key == "ch02.ste_all_zero"
    assert exercises.check("ch02-ex1", tf.sign, lang="zh").key == "ch02.ste_all_zero"


def test_ex1_tanh_surrogate_is_named():
    answer = lambda x: tf.tanh(x) + tf.stop_gradient(tf.sign(x) - tf.tanh(x))  # noqa: E731
    feedback = exercises.check("ch02-ex1", answer)
    assert not feedback.passed
    assert feedback.message.startswith("your gradient is 1 - tanh(x)^2 (at x = 0.5: 0.786448; expected 1)")
    assert exercises.check("ch02-ex1", answer, lang="zh").key == "ch02.ste_tanh"


def test_ex1_multiplicative_variant_is_named():
    def multiplicative(x):  # the chapter's multiplicative variant: 0/0 at x = 0
        t = tf.clip_by_value(x, -1.0, 1.0)
        return tf.stop_gradient(tf.sign(x) / t) * t

    feedback = exercises.check("ch02-ex1", multiplicative)
    assert not feedback.passed
    assert feedback.key == "ch02.ste_multiplicative"
    assert exercises.check("ch02-ex1", multiplicative, lang="zh").key == "ch02.ste_multiplicative"


def test_ex1_a_nan_at_zero_from_a_log_is_not_called_multiplicative():
    def with_log(x):  # the additive trick plus 0 * log|x|: NaN at 0, but no division by g
        t = tf.clip_by_value(x, -1.0, 1.0)
        return t + tf.stop_gradient(tf.sign(x) - t) + 0.0 * tf.math.log(tf.abs(x))

    # the message names both causes ("divides by x (or takes log|x|)")
    assert exercises.check("ch02-ex1", with_log).key == "ch02.ste_multiplicative"


def test_ex1_other_nan_values_get_the_generic_message():
    def nan_at_two(x):  # NaN away from 0: not the multiplicative variant
        t = tf.clip_by_value(x, -1.0, 1.0)
        return t + tf.stop_gradient(tf.sign(x) - t) + tf.where(tf.abs(x) > 2, np.nan, 0.0)

    feedback = exercises.check("ch02-ex1", nan_at_two)
    assert feedback.key == "common.nan" and feedback.message == "your value contains NaN or inf."  # no prefix


def test_ex1_hard_sigmoid_surrogate_is_named():
    def hard_sigmoid_surrogate(x):  # the slope of hard_sigmoid is 1/2 on [-1, 1]
        t = tf.clip_by_value(0.5 * x + 0.5, 0.0, 1.0)
        return t + tf.stop_gradient(tf.sign(x) - t)

    feedback = exercises.check("ch02-ex1", hard_sigmoid_surrogate)
    assert not feedback.passed
    assert feedback.key == "ch02.ste_half_slope" and "(at x = 0: 0.5; expected 1)" in feedback.message
    assert exercises.check("ch02-ex1", hard_sigmoid_surrogate, lang="zh").key == "ch02.ste_half_slope"


def test_ex1_strict_boundary_is_named():
    def strict(x):  # < instead of <=: the boundary excluded
        t = tf.where(tf.abs(x) < 1, x, tf.stop_gradient(x))
        return t + tf.stop_gradient(tf.sign(x) - t)

    feedback = exercises.check("ch02-ex1", strict)
    assert not feedback.passed
    assert feedback.key == "ch02.ste_boundary"
    assert exercises.check("ch02-ex1", strict, lang="zh").key == "ch02.ste_boundary"


def test_ex1_clip_as_the_forward_value_is_named():
    feedback = exercises.check("ch02-ex1", lambda x: tf.clip_by_value(x, -1.0, 1.0))
    assert not feedback.passed
    assert feedback.key == "ch02.ste_forward_clip" and "(at x = 0.5: 0.5; expected 1)" in feedback.message
    assert exercises.check("ch02-ex1", lambda x: tf.clip_by_value(x, -1.0, 1.0), lang="zh").key == "ch02.ste_forward_clip"


def test_ex1_other_wrong_forward_gets_the_generic_message():
    feedback = exercises.check("ch02-ex1", lambda x: tf.tanh(x))
    assert feedback.message.startswith("at x = 0.5: your value is 0.462117; expected 1. ")
    assert feedback.key == "ch02.ste_forward"


def test_ex1_sign_that_is_one_at_zero_is_rejected():
    def plus_minus_one(x):
        return x + tf.stop_gradient(tf.where(x >= 0, 1.0, -1.0) - x)

    feedback = exercises.check("ch02-ex1", plus_minus_one)
    assert not feedback.passed and feedback.message.startswith("at x = 0: your value is 1; expected 0.")
    assert feedback.key == "ch02.ste_forward"


def test_ex1_answer_that_only_handles_vectors_is_rejected():
    def vector_only(x):
        t = tf.clip_by_value(tf.reshape(x, [-1]), -1.0, 1.0)
        return t + tf.stop_gradient(tf.sign(tf.reshape(x, [-1])) - t)

    feedback = exercises.check("ch02-ex1", vector_only)
    assert not feedback.passed and feedback.key == "common.shape" and "shape [30]; expected [5, 6]" in feedback.message


def test_ex1_custom_gradient_that_ignores_the_upstream_gradient_is_rejected():
    @tf.custom_gradient
    def ignores_dy(x):
        return tf.sign(x), lambda dy: tf.cast(tf.abs(x) <= 1, dy.dtype)

    feedback = exercises.check("ch02-ex1", ignores_dy)
    assert not feedback.passed
    assert feedback.key == "ch02.upstream"
    assert "upstream gradient of 2.5" in feedback.message and "expected 2.5" in feedback.message
    assert exercises.check("ch02-ex1", ignores_dy, lang="zh").key == "ch02.upstream"


def clip_unit(x):
    return tf.clip_by_value(x, -1.0, 1.0)


STRAIGHT_THROUGH = {
    "ch02-ex1": [lambda x: gradlib.straight_through(tf.sign, clip_unit)(x),   # called inside the answer
                 gradlib.straight_through(tf.sign, clip_unit)],              # the op itself, made beforehand
    "ch02-ex2": [lambda x, s: gradlib.straight_through(tf.identity, lambda v: s * v)(x)],
}


@pytest.mark.parametrize("exercise_id, answer",
                         [(i, a) for i, answers in STRAIGHT_THROUGH.items() for a in answers])
def test_gradlib_straight_through_is_named_and_restored(exercise_id, answer):
    # the explorer's gradlib.straight_through(f, g) is the answer in one line: the check says so
    original = gradlib.straight_through
    feedback = exercises.check(exercise_id, answer)
    assert not feedback.passed
    assert feedback.key == "ch02.straight_through"
    zh = exercises.check(exercise_id, answer, lang="zh")
    assert not zh.passed and zh.key == "ch02.straight_through"
    assert gradlib.straight_through is original


def test_straight_through_used_in_a_wrong_answer_is_still_named():
    # the wrong value (sign of the clip) is not what the reader needs to hear first
    feedback = exercises.check("ch02-ex1", lambda x: gradlib.straight_through(clip_unit)(x))
    assert feedback.key == "ch02.straight_through"


# -- ch02-ex2 ---------------------------------------------------------------------

@pytest.mark.parametrize("lang", ["en", "zh"])
def test_ex2_reference_passes_and_is_bit_exact(lang):
    feedback = exercises.check("ch02-ex2", scaled_gradient, lang=lang)
    assert feedback.passed, feedback.message
    assert "{0.5, -1, 0, 3}" in feedback.message
    assert ("bit for bit at every point" if lang == "en" else "逐位相同") in feedback.message  # ch02.scaled_exact


@pytest.mark.parametrize("answer", [scaled_gradient_textbook, scale_gradient_muzero])
def test_ex2_inexact_but_close_answers_pass_with_a_note(answer):
    feedback = exercises.check("ch02-ex2", answer)
    assert feedback.passed, feedback.message
    assert "equals x up to rounding: with s = 3 it differs from x in the last bits at 14 of 27 points" in feedback.message
    assert "27 个点中有 14 个" in exercises.check("ch02-ex2", answer, lang="zh").message


def test_ex2_variant_with_a_tensor_scale_passes():
    feedback = exercises.check("ch02-ex2", lambda x, s: x * s + tf.stop_gradient(x - x * s))
    assert feedback.passed, feedback.message


# The three most likely wrong answers of ch02-ex2, each named by its own message.

def test_ex2_plain_scaling_is_named():
    feedback = exercises.check("ch02-ex2", lambda x, s: s * x)
    assert not feedback.passed
    assert feedback.message.startswith("with s = 0.5, your value is s·x (at x = 1.5: 0.75; expected 1.5): ")
    assert feedback.key == "ch02.scaled_value"
    zh = exercises.check("ch02-ex2", lambda x, s: s * x, lang="zh")
    assert zh.message.startswith("当 s = 0.5 时，") and zh.key == "ch02.scaled_value"


def test_ex2_stop_on_the_wrong_term_is_named():
    answer = lambda x, s: tf.stop_gradient(s * x) + (1 - s) * x  # noqa: E731  value x, gradient 1 - s
    feedback = exercises.check("ch02-ex2", answer)
    assert not feedback.passed
    assert feedback.message.startswith("with s = -1, your gradient is 1 - s = 2, not s = -1: ")
    assert feedback.key == "ch02.scaled_wrong_term"
    assert exercises.check("ch02-ex2", answer, lang="zh").key == "ch02.scaled_wrong_term"


def test_ex2_stopping_x_itself_is_named():
    answer = lambda x, s: s * tf.stop_gradient(x)  # noqa: E731
    feedback = exercises.check("ch02-ex2", answer)
    assert not feedback.passed
    assert feedback.message.startswith("with s = 0.5, the gradient is None")
    assert feedback.key == "ch02.scaled_none"
    assert exercises.check("ch02-ex2", answer, lang="zh").key == "ch02.scaled_none"


def test_ex2_stopped_x_plus_scaled_x_is_named():
    answer = lambda x, s: tf.stop_gradient(x) + s * x  # noqa: E731  gradient s, value (1 + s) x
    feedback = exercises.check("ch02-ex2", answer)
    assert not feedback.passed
    assert feedback.message.startswith("with s = 0.5, your value is (1 + s)·x (at x = 1.5: 2.25; expected 1.5): ")
    assert feedback.key == "ch02.scaled_sum"
    zh = exercises.check("ch02-ex2", answer, lang="zh")
    assert zh.message.startswith("当 s = 0.5 时，") and zh.key == "ch02.scaled_sum"


def test_ex2_swapped_roles_are_named():
    # forward s*x, gradient 1: the stopped and the unstopped term exchanged
    feedback = exercises.check("ch02-ex2", lambda x, s: x + tf.stop_gradient(s * x - x))
    assert not feedback.passed
    assert feedback.message.startswith("with s = 0.5, ")
    assert feedback.key == "ch02.scaled_swapped"


def test_ex2_identity_gradient_is_rejected_with_the_reason():
    feedback = exercises.check("ch02-ex2", lambda x, s: tf.identity(x))
    assert not feedback.passed
    assert feedback.message.startswith("with s = 0.5, at x = 0: your gradient is 1; expected 0.5. ")
    assert feedback.key == "ch02.scaled_gradient"


def test_ex2_none_for_s_zero_is_reported():
    def special_case(x, s):
        if s == 0:
            return tf.stop_gradient(x)
        return scaled_gradient(x, s)

    feedback = exercises.check("ch02-ex2", special_case)
    assert not feedback.passed
    assert feedback.message.startswith("with s = 0, ") and feedback.key == "ch02.scaled_none"


def test_ex2_custom_gradient_that_ignores_the_upstream_gradient_is_rejected():
    def ignores_dy(x, s):
        @tf.custom_gradient
        def op(v):
            return tf.identity(v), lambda dy: s * tf.ones_like(dy)
        return op(x)

    feedback = exercises.check("ch02-ex2", ignores_dy)
    assert not feedback.passed
    assert feedback.key == "ch02.upstream"
    assert "upstream gradient of 4" in feedback.message and "expected 2" in feedback.message


# -- ch02-ex3 (answered in writing): the reference solution against NumPy's sign bit --------

SIGN_POINTS = np.array([-0.0, 0.0, 1e-45, -1e-45, 1e-40, -1e-40, -np.finfo(np.float32).tiny, 1e-8, -1e-8,
                        0.3, -0.3, 1.0, -1.0, 1.5, -2.5, 3e38, -3e38], np.float32)


def ex3_solution(lang):
    """``binary_tanh`` as defined in the solution of ch02-ex3 in a chapter source."""
    text = (ROOT / "chapters" / lang / "02_stop_gradient.md").read_text(encoding="utf-8")
    solution, _ = solution_parts(text)
    cell = next(c for c in code_cells("\n".join(solution) + "\n") if c.startswith("def binary_tanh"))
    scope = {"tf": tf, "np": np}
    exec(compile(cell.split("\n\n")[0], f"{lang}:ch02-ex3", "exec"), scope)  # the definition only
    return scope["binary_tanh"]


def binary_tanh_x_ge_0(x):  # the solution before the second review: x >= 0 treats subnormals as 0
    surrogate = 2 * tf.clip_by_value(0.5 * x + 0.5, 0.0, 1.0) - 1
    return tf.stop_gradient(tf.where(x >= 0, 1.0, -1.0)) - (tf.stop_gradient(surrogate) - surrogate)


def wrong_signs(binary_tanh):
    """The points where ``binary_tanh`` breaks the spec of ch02-ex3 (value or gradient)."""
    x = tf.constant(SIGN_POINTS)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = binary_tanh(x)
    value, gradient = y.numpy(), tape.gradient(y, x).numpy()
    expected = np.where(np.signbit(SIGN_POINTS) & (SIGN_POINTS != 0), -1.0, 1.0)
    slope = (np.abs(SIGN_POINTS) <= 1).astype(np.float32)
    return [float(p) for p, v, g, e, s in zip(SIGN_POINTS, value, gradient, expected, slope) if v != e or g != s]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_ex3_solution_is_minus_one_for_every_negative_number(lang):
    assert wrong_signs(ex3_solution(lang)) == []


def test_ex3_comparison_with_zero_misses_negative_subnormals():
    # the test can fail: x >= 0 is true for negative subnormals in TensorFlow's CPU kernels
    assert wrong_signs(binary_tanh_x_ge_0) == [np.float32(-1e-45), np.float32(-1e-40)]


# -- ch02-ex4 ---------------------------------------------------------------------

@pytest.mark.parametrize("answer", [td_loss, td_loss_multiply_no_nan, td_loss_clean_features])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_ex4_correct_answers_pass(answer, lang):
    feedback = exercises.check("ch02-ex4", answer, lang=lang)
    assert feedback.passed, feedback.message
    assert ("correct on 3 batches" if lang == "en" else "在 3 个批次上都正确") in feedback.message


def test_ex4_cases_hold_terminal_transitions_and_nan_features():
    assert all(case["done"].any() and not case["done"].all() for case in ch02.TD_CASES)
    finite = [bool(np.all(np.isfinite(case["phi_next"]))) for case in ch02.TD_CASES]
    assert finite == [True, True, False]
    last = ch02.TD_CASES[-1]
    assert np.all(np.isnan(last["phi_next"][last["done"] > 0])) and np.all(np.isfinite(last["phi_next"][last["done"] == 0]))


def test_ex4_stopping_the_whole_target_passes():
    def whole_target(w, phi, phi_next, reward, done, gamma):
        target = tf.stop_gradient(reward + gamma * tf.where(done > 0, 0.0, tf.linalg.matvec(phi_next, w)))
        return tf.reduce_mean(0.5 * (tf.linalg.matvec(phi, w) - target) ** 2)

    assert exercises.check("ch02-ex4", whole_target).passed


# ch02-ex4's typical wrong answers are declared with its check (``WRONG_ANSWERS``), and
# test_classroom_wrong_answers.py asserts each one's message key in both languages; the tests
# below take some of them from there to assert what the key cannot: which case, which number.

def td_wrong(name):
    return wrong_answer("ch02-ex4", name)


def test_ex4_mask_as_a_product_is_named():
    product = td_wrong("mask as a product")  # right on finite features; 0 * NaN = NaN
    feedback = exercises.check("ch02-ex4", product)
    assert not feedback.passed
    assert feedback.message.startswith("case 3 (gamma = 0.99): ") and feedback.key == "ch02.td_nan"
    zh = exercises.check("ch02-ex4", product, lang="zh")
    assert zh.message.startswith("第 3 组（gamma = 0.99）：") and zh.key == "ch02.td_nan"


def test_ex4_unstopped_target_is_named():
    full_gradient = td_wrong("target not stopped")
    feedback = exercises.check("ch02-ex4", full_gradient)
    assert not feedback.passed
    assert feedback.message.startswith("case 1 (gamma = 0.9): your gradient [")
    assert feedback.key == "ch02.td_full"
    assert exercises.check("ch02-ex4", full_gradient, lang="zh").key == "ch02.td_full"


def test_ex4_unstopped_where_has_a_nan_gradient_on_nan_features():
    # the solution's claim: without the stop, tf.where's zero meets the NaN features (0 * NaN)
    case = ch02.TD_CASES[-1]
    w = tf.Variable(case["w"])
    args = (case["phi"], case["phi_next"], case["reward"], case["done"], case["gamma"])
    for stop, finite in ((True, True), (False, False)):
        with tf.GradientTape() as tape:
            v_next = tf.linalg.matvec(case["phi_next"], w)
            v_next = tf.stop_gradient(v_next) if stop else v_next
            target = case["reward"] + case["gamma"] * tf.where(case["done"] > 0, 0.0, v_next)
            loss = tf.reduce_mean(0.5 * (tf.linalg.matvec(case["phi"], w) - target) ** 2)
        assert np.isfinite(loss.numpy())
        assert bool(np.all(np.isfinite(tape.gradient(loss, w).numpy()))) is finite
    assert np.isclose(td_loss(w, *args).numpy(), ch02.td_reference(case["w"], *args)[0], rtol=1e-5)


def test_ex4_ignoring_done_is_named():
    no_mask = td_wrong("done ignored")
    feedback = exercises.check("ch02-ex4", no_mask)
    assert not feedback.passed
    assert feedback.message.startswith("case 1 (gamma = 0.9): your loss is ")
    assert feedback.key == "ch02.td_no_mask"
    assert exercises.check("ch02-ex4", no_mask, lang="zh").key == "ch02.td_no_mask"


def test_ex4_stopping_the_whole_loss_is_named():
    answer = td_wrong("whole loss stopped")
    feedback = exercises.check("ch02-ex4", answer)
    assert not feedback.passed
    assert feedback.message.startswith("case 1 (gamma = 0.9): ") and feedback.key == "ch02.td_none"
    assert exercises.check("ch02-ex4", answer, lang="zh").key == "ch02.td_none"


def test_ex4_sum_instead_of_mean_is_named():
    summed = td_wrong("sum over the batch")
    feedback = exercises.check("ch02-ex4", summed)
    assert not feedback.passed
    assert feedback.message.startswith("case 1 (gamma = 0.9): your loss is")
    assert "5 times the expected" in feedback.message and feedback.key == "ch02.td_sum"
    assert exercises.check("ch02-ex4", summed, lang="zh").key == "ch02.td_sum"


def test_ex4_other_wrong_values_get_the_generic_message():
    def shifted(*args):
        return td_loss(*args) + 1.0

    feedback = exercises.check("ch02-ex4", shifted)
    assert feedback.message.startswith("case 1 (gamma = 0.9): your loss is")
    assert feedback.key == "ch02.td_value"


def test_ex4_nan_on_finite_features_gets_the_generic_message():
    # a NaN loss where phi_next is finite is not the product mask: no td_nan message
    feedback = exercises.check("ch02-ex4", lambda *args: tf.constant(np.nan))
    assert feedback.key == "common.nan" and feedback.message.startswith("case 1 (gamma = 0.9): ")


def test_ex4_per_example_losses_have_the_wrong_shape():
    def unreduced(w, phi, phi_next, reward, done, gamma):
        target = reward + gamma * tf.where(done > 0, 0.0, tf.stop_gradient(tf.linalg.matvec(phi_next, w)))
        return 0.5 * (tf.linalg.matvec(phi, w) - target) ** 2

    feedback = exercises.check("ch02-ex4", unreduced)
    assert not feedback.passed and feedback.key == "common.shape" and "shape [5]; expected []" in feedback.message


def test_ex4_numpy_detour_is_reported():
    def through_numpy(*args):
        return tf.constant(td_loss(*args).numpy())

    feedback = exercises.check("ch02-ex4", through_numpy)
    assert not feedback.passed and feedback.key == "ch02.td_none"


def test_td_reference_is_independent_of_tensorflow():
    # The closed-form semi-gradient agrees with a tape on the reference solution, NaN features included.
    for case in ch02.TD_CASES:
        w = tf.Variable(case["w"])
        args = (case["phi"], case["phi_next"], case["reward"], case["done"], case["gamma"])
        with tf.GradientTape() as tape:
            loss = td_loss(w, *args)
        value, semi, full, _ = ch02.td_reference(case["w"], *args)
        np.testing.assert_allclose(loss.numpy(), value, rtol=1e-5)
        np.testing.assert_allclose(tape.gradient(loss, w).numpy(), semi, rtol=1e-4, atol=1e-6)
        assert not np.allclose(semi, full)


def test_wrong_mask_references_differ_from_the_right_one():
    for case in ch02.TD_CASES[:2]:
        args = (case["w"], case["phi"], case["phi_next"], case["reward"], case["done"], case["gamma"])
        expected = ch02.td_reference(*args)[0]
        for wrong in ch02.td_wrong_masks(*args).values():
            assert not np.isclose(wrong, expected, rtol=1e-3)


# -- hostile answers, for every check ------------------------------------------------
