"""The exercise-check framework and chapter 1's checks (ch01-ex2, ch01-ex3).

Every check must accept the reference solution, reject typical wrong answers
with the right message, and survive answers that raise, return None, NaN or
the wrong shape: always Feedback, never an exception.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

from gradlib import exercises
from test_classroom_wrong_answers import reference, wrong_answer
from gradlib.classroom.exercises import ch01

# Feedback is asserted by its catalogue key; the message text only where it shows a filled-in
# number or placeholder (f, x, the loss, w, a norm, {raised}, {also}) that the key cannot.  The typical
# wrong answers that only need their key are declared with the check (ch01.py, ``wrong_answers``) and run by
# test_classroom_wrong_answers.py; the tests below take those they look at more closely from there.


def nested_tapes(f, x, unconnected=tf.UnconnectedGradients.ZERO):
    x = tf.convert_to_tensor(x, tf.float32)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        dy = inner.gradient(y, x)
    return outer.gradient(dy, x, unconnected_gradients=unconnected)


second_derivative = reference("ch01-ex2")  # the chapter's own solution


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_reference_solution_passes(lang):
    feedback = exercises.check("ch01-ex2", second_derivative, lang=lang)
    assert feedback.passed and bool(feedback)
    assert str(feedback).startswith("✓ ch01-ex2")
    assert ("3x" in feedback.message) and (("not None" in feedback.message) == (lang == "en"))


def first_derivative_in_nested_tapes(f, x):  # the outer tape differentiates y, not dy
    x = tf.convert_to_tensor(x, tf.float32)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        inner.gradient(y, x)
    return outer.gradient(y, x, unconnected_gradients=tf.UnconnectedGradients.ZERO)


def inner_gradient_after_the_outer_block_without_zeros(f, x):  # None, where the declared one asks for zeros
    x = tf.convert_to_tensor(x, tf.float32)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
    dy = inner.gradient(y, x)  # the outer block is closed: nothing records this
    return outer.gradient(dy, x)


def outer_tape_not_watching(f, x):
    x = tf.convert_to_tensor(x, tf.float32)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        dy = inner.gradient(y, x)
    return outer.gradient(dy, x, unconnected_gradients=tf.UnconnectedGradients.ZERO)


@pytest.mark.parametrize("answer", [wrong_answer("ch01-ex2", "one tape: the first derivative"),
                                    first_derivative_in_nested_tapes])
def test_the_first_derivative_is_named(answer):
    feedback = exercises.check("ch01-ex2", answer)
    assert not feedback.passed
    assert feedback.message.startswith("for f(x) = x**3 at x = 1.5 your result is 6.75, ")
    assert feedback.key == "ch01.first_derivative" and "f''(x) = 9." in feedback.message
    zh = exercises.check("ch01-ex2", answer, lang="zh")
    assert zh.key == "ch01.first_derivative" and "f(x) = x**3" in zh.message


@pytest.mark.parametrize("answer", [wrong_answer("ch01-ex2", "inner gradient after the outer block"),
                                    outer_tape_not_watching])
def test_a_zero_from_an_unrecorded_inner_gradient_is_explained(answer):
    feedback = exercises.check("ch01-ex2", answer)
    assert not feedback.passed
    assert feedback.message.startswith("for f(x) = x**3 at x = 1.5 your second derivative is 0; expected 9.")
    assert feedback.key == "ch01.zero_unconnected"
    zh = exercises.check("ch01-ex2", answer, lang="zh")
    assert zh.key == "ch01.zero_unconnected"


def test_none_from_an_unrecorded_inner_gradient_is_explained():
    answer = inner_gradient_after_the_outer_block_without_zeros
    feedback = exercises.check("ch01-ex2", answer)
    assert not feedback.passed
    assert feedback.message.startswith("for f(x) = x**3 at x = 1.5 your function returned None; expected 9. ")
    assert feedback.key == "ch01.none_unconnected"
    assert exercises.check("ch01-ex2", answer, lang="zh").key == "ch01.none_unconnected"


def one_persistent_tape_outside_its_block(f, x):  # one tape, both gradient calls after the with block
    x = tf.convert_to_tensor(x, tf.float32)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = f(x)
    dy = tape.gradient(y, x)
    return tape.gradient(dy, x)


def test_the_unrecorded_first_derivative_message_fits_one_persistent_tape():
    # the reader has no inner and outer tape: ch01.none_unconnected speaks of "the tape you differentiated ... with"
    feedback = exercises.check("ch01-ex2", one_persistent_tape_outside_its_block)
    assert not feedback.passed
    assert feedback.key == "ch01.none_unconnected" and "returned None; expected 9. " in feedback.message
    zh = exercises.check("ch01-ex2", one_persistent_tape_outside_its_block, lang="zh")
    assert zh.key == "ch01.none_unconnected"


def test_none_for_a_linear_function_is_explained():
    answer = wrong_answer("ch01-ex2", "no zeros for a linear f")
    feedback = exercises.check("ch01-ex2", answer)
    assert not feedback.passed
    assert feedback.message.startswith("for f(x) = 3x at x = 1.0 your function returned None. ")
    assert feedback.key == "ch01.second_none"
    assert exercises.check("ch01-ex2", answer, lang="zh").key == "ch01.second_none"


def test_one_tape_asked_twice_is_explained():
    answer = wrong_answer("ch01-ex2", "one tape asked twice")
    feedback = exercises.check("ch01-ex2", answer)
    assert not feedback.passed
    assert "raised RuntimeError: A non-persistent GradientTape can only be used" in feedback.message  # {raised}
    assert feedback.key == "ch01.one_tape"
    assert exercises.check("ch01-ex2", answer, lang="zh").key == "ch01.one_tape"


def test_an_unwatched_constant_is_explained():
    answer = wrong_answer("ch01-ex2", "x not watched")
    feedback = exercises.check("ch01-ex2", answer)
    assert not feedback.passed
    assert "raised TypeError" in feedback.message and feedback.key == "ch01.not_watched"
    zh = exercises.check("ch01-ex2", answer, lang="zh")
    assert zh.key == "ch01.not_watched" and zh.message.startswith("f(x) = x**3，x = 1.5 时：你的代码抛出了 TypeError")


def test_a_wrong_value_gets_the_generic_message():
    feedback = exercises.check("ch01-ex2", lambda f, x: tf.constant(1.0))
    assert feedback.key == "ch01.second_wrong"
    assert feedback.message == "for f(x) = x**3 at x = 1.5 your second derivative is 1; expected 9."  # no hint


def test_feedback_renders_for_notebooks():
    feedback = exercises.check("ch01-ex2", lambda f, x: None)
    assert feedback._repr_markdown_().startswith("❌ **ch01-ex2**")
    assert exercises.check("ch01-ex2", second_derivative)._repr_markdown_().startswith("✅")


def test_unknown_exercise_and_language_are_errors_of_the_caller():
    with pytest.raises(ValueError, match="unknown exercise id 'ch99-ex1'"):
        exercises.check("ch99-ex1", second_derivative)
    with pytest.raises(ValueError, match="lang"):
        exercises.check("ch01-ex2", second_derivative, lang="fr")


def test_every_registered_check_is_listed():
    # Each chapter's exercises with a check: the ids come from the registry, the answer names
    # from the chapters' check calls (chapter_solutions), so a check that is lost or renamed fails here.
    from chapter_solutions import reference_solutions
    from tools import book
    listed = {exercise: name for md in book.chapters("en")
              for exercise, _, name, _ in reference_solutions(md)}
    assert exercises.exercise_ids() == sorted(listed)
    assert {i: exercises.answer_name(i) for i in listed} == listed


@pytest.mark.parametrize("case", ch01.CASES, ids=[case[0] for case in ch01.CASES])
def test_numeric_reference_values_are_independent(case):
    # Every row of the check's table: its closed-form f' and f'' against TensorFlow's own derivatives.
    text, f, x, first, second = case
    xt = tf.constant(x, tf.float32)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = f(xt)
    got_first = tape.gradient(y, xt, unconnected_gradients="zero")
    np.testing.assert_allclose([float(got_first), float(nested_tapes(f, x))], [first, second], rtol=1e-5, atol=1e-6,
                               err_msg=text)


# -- ch01-ex3: the projected gradient-descent loop ------------------------------------


UNIT_BALL = 1.0


def train_loop(loss_fn, w, steps, *, project, unconnected=tf.UnconnectedGradients.NONE,
               skip_none=False, learning_rate=0.1):
    """The exercise's loop; ``project(w)`` returns what the name ``w`` is bound to next."""
    optimizer = keras.optimizers.SGD(learning_rate)
    for _ in range(steps):
        with tf.GradientTape() as tape:
            loss = loss_fn(w)
        grads = tape.gradient(loss, [w], unconnected_gradients=unconnected)
        pairs = [(g, v) for g, v in zip(grads, [w]) if not (skip_none and g is None)]
        optimizer.apply_gradients(pairs)
        w = project(w)
    return w


def in_place(projection):
    def project(w):
        w.assign(projection(w))
        return w
    return project


train = reference("ch01-ex3")  # the chapter's own solution


def rebinding(**options):  # the bug: w = tf.clip_by_norm(w, 1.0)
    return lambda loss_fn, w, steps: train_loop(loss_fn, w, steps, project=lambda w: tf.clip_by_norm(w, UNIT_BALL),
                                                **options)


def without_projection(loss_fn, w, steps):
    return train_loop(loss_fn, w, steps, project=lambda w: w)


def projection_before_the_step(loss_fn, w, steps, learning_rate=0.1):
    optimizer = keras.optimizers.SGD(learning_rate)
    for _ in range(steps):
        w.assign(tf.clip_by_norm(w, UNIT_BALL))
        with tf.GradientTape() as tape:
            loss = loss_fn(w)
        optimizer.apply_gradients(zip(tape.gradient(loss, [w]), [w]))
    return w


def onto_the_sphere(loss_fn, w, steps):
    return train_loop(loss_fn, w, steps, project=in_place(lambda w: w / tf.norm(w)))


# declared with the check (ch01.py)
new_variable_each_step = wrong_answer("ch01-ex3", "a new variable each step")
onto_the_box = wrong_answer("ch01-ex3", "clip_by_value: the box")
projected_once = wrong_answer("ch01-ex3", "projected once after the loop")
assign_rebound = wrong_answer("ch01-ex3", "w = w.assign(...)")


def on_a_copy(loss_fn, w, steps):
    return train(loss_fn, tf.Variable(w), steps)


def by_hand(loss_fn, w, steps, learning_rate=0.1):  # a correct answer without an optimizer
    for _ in range(steps):
        with tf.GradientTape() as tape:
            loss = loss_fn(w)
        w.assign_sub(learning_rate * tape.gradient(loss, w))
        if tf.norm(w) > UNIT_BALL:
            w.assign(w / tf.norm(w))
    return w


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("answer", [train, by_hand])
def test_ch01_ex3_correct_answers_pass(answer, lang):
    feedback = exercises.check("ch01-ex3", answer, lang=lang)
    assert feedback.passed, feedback.message
    assert feedback.message.startswith("correct on 5 losses" if lang == "en" else "在 5 组损失与起点上都正确")


@pytest.mark.parametrize("answer, raised", [
    (rebinding(), "AttributeError"),                                         # the bug as given
    (wrong_answer("ch01-ex3", "the tensor watched"), "AttributeError"),      # "fixed" with tape.watch
    (rebinding(unconnected=tf.UnconnectedGradients.ZERO), "AttributeError"),  # "fixed" with zeros
    (rebinding(skip_none=True), "ValueError"),                               # None gradients skipped
])
def test_ch01_ex3_a_variable_replaced_by_a_tensor_is_named(answer, raised):
    feedback = exercises.check("ch01-ex3", answer)
    assert not feedback.passed
    assert feedback.message.startswith("loss sum((w - [2., 1.])**2), w = [0., 0.], steps = 4: your code raised "
                                       + raised)
    assert feedback.key == "ch01.still_tensor"
    zh = exercises.check("ch01-ex3", answer, lang="zh")
    assert zh.key == "ch01.still_tensor"


def test_ch01_ex3_rebinding_w_to_what_assign_returns_is_named():
    # w = w.assign(...): loss_fn then gets an object that reads the same variable, unwatched by the tape
    feedback = exercises.check("ch01-ex3", assign_rebound)
    assert not feedback.passed
    assert feedback.message.startswith("loss sum((w - [2., 1.])**2), w = [0., 0.], steps = 4: your code raised "
                                       "ValueError: No gradients provided for any variable")
    assert feedback.key == "ch01.assign_rebound"
    zh = exercises.check("ch01-ex3", assign_rebound, lang="zh")
    assert zh.key == "ch01.assign_rebound"


def test_ch01_ex3_a_single_projection_after_the_loop_is_named():
    # passes the four cases where projecting once gives the same w; the fifth bends the path
    feedback = exercises.check("ch01-ex3", projected_once)
    assert not feedback.passed
    assert feedback.message.startswith("loss sum([1., 4.] * (w - [2., 1.])**2), w = [ 0.9, -0.4], steps = 4: "
                                       "your w is [0.8408, 0.5414]")
    assert feedback.key == "ch01.project_once" and "expected [0.7265, 0.6872]" in feedback.message
    zh = exercises.check("ch01-ex3", projected_once, lang="zh")
    assert zh.key == "ch01.project_once"


def test_ch01_ex3_a_new_variable_each_step_is_named():
    feedback = exercises.check("ch01-ex3", new_variable_each_step)
    assert not feedback.passed
    assert "your code raised ValueError: Unknown variable" in feedback.message
    assert feedback.key == "ch01.new_variable"
    assert exercises.check("ch01-ex3", new_variable_each_step, lang="zh").key == "ch01.new_variable"


def test_ch01_ex3_keras_message_is_cut_at_a_sentence_not_mid_word():
    # Keras's "Unknown variable" message is longer than describe's limit: it ends at a sentence, then "…"
    feedback = exercises.check("ch01-ex3", new_variable_each_step)
    assert "it was originally built with. … Your loop passed loss_fn a new tf.Variable" in feedback.message
    assert "When wo" not in feedback.message
    zh = exercises.check("ch01-ex3", new_variable_each_step, lang="zh").message
    assert "it was originally built with. …。第一步之后" in zh and "When wo" not in zh


def test_ch01_ex3_no_projection_is_named():
    # on the first case tf.clip_by_value before each step never clips: the message names that loop too
    feedback = exercises.check("ch01-ex3", without_projection)
    assert not feedback.passed
    assert feedback.message.startswith("loss sum((w - [2., 1.])**2), w = [0., 0.], steps = 4: your w is "
                                       "[1.1808, 0.5904], of norm 1.32017: ")
    assert feedback.key == "ch01.no_projection" and "the expected w is [0.8944, 0.4472]" in feedback.message
    # the {also} placeholder, filled with ch01.no_projection_also
    assert "(on this loss, tf.clip_by_value(w, -1, 1) before each step ends there too)" in feedback.message
    zh = exercises.check("ch01-ex3", without_projection, lang="zh")
    assert zh.key == "ch01.no_projection" and "每一步之前调用 tf.clip_by_value(w, -1, 1) 也会得到这个结果" in zh.message


def box_before_the_step(loss_fn, w, steps, learning_rate=0.1):  # two mistakes: the box, and before the step
    optimizer = keras.optimizers.SGD(learning_rate)
    for _ in range(steps):
        w.assign(tf.clip_by_value(w, -UNIT_BALL, UNIT_BALL))
        with tf.GradientTape() as tape:
            loss = loss_fn(w)
        optimizer.apply_gradients(zip(tape.gradient(loss, [w]), [w]))
    return w


def box_once_after_the_loop(loss_fn, w, steps):  # two mistakes: the box, and only once
    w = without_projection(loss_fn, w, steps)
    w.assign(tf.clip_by_value(w, -UNIT_BALL, UNIT_BALL))
    return w


def test_ch01_ex3_clip_by_value_before_each_step_is_named_with_no_projection():
    # the first case's path stays inside the box before every step, so this loop ends where plain descent does;
    # the message says so instead of telling the reader they did not project
    feedback = exercises.check("ch01-ex3", box_before_the_step)
    assert not feedback.passed
    assert feedback.message.startswith("loss sum((w - [2., 1.])**2), w = [0., 0.], steps = 4: your w is "
                                       "[1.1808, 0.5904], of norm 1.32017: ")
    assert feedback.key == "ch01.no_projection"
    assert "(on this loss, tf.clip_by_value(w, -1, 1) before each step ends there too)" in feedback.message  # {also}
    zh = exercises.check("ch01-ex3", box_before_the_step, lang="zh").message
    assert "每一步之前调用 tf.clip_by_value(w, -1, 1) 也会得到这个结果" in zh


def test_ch01_ex3_clip_by_value_once_after_the_loop_is_named_with_the_box():
    feedback = exercises.check("ch01-ex3", box_once_after_the_loop)
    assert not feedback.passed
    assert feedback.message.startswith("loss sum((w - [2., 1.])**2), w = [0., 0.], steps = 4: your w is "
                                       "[1.    , 0.5904]: ")
    assert feedback.key == "ch01.box" and "expected [0.8944, 0.4472]" in feedback.message
    assert "(on this loss, one tf.clip_by_value after the loop ends there too)" in feedback.message  # {also}
    zh = exercises.check("ch01-ex3", box_once_after_the_loop, lang="zh")
    assert zh.key == "ch01.box" and "循环结束后只调用一次 tf.clip_by_value 也会得到这个结果" in zh.message


def test_ch01_ex3_the_combined_mistakes_are_named_only_where_they_coincide(monkeypatch):
    # the "also" clause is decided per case: on a case that starts outside the box and crosses it, clip_by_value
    # before each step does clip and once after the loop differs from after each step (all seven loops end
    # apart), so the messages name one loop only
    from gradlib.classroom.exercises import ch01
    monkeypatch.setattr(ch01, "TRAIN_CASES", [((0.2, 2.0), (1.0, 1.0), (1.5, 0.0), 4)])
    for answer, named, left_out in ((without_projection, "with no projection at all; the expected w",
                                     "before each step ends there too"),
                                    (onto_the_box, "followed by tf.clip_by_value(w, -1, 1); expected",
                                     "after the loop ends there too")):
        feedback = exercises.check("ch01-ex3", answer)
        assert not feedback.passed
        assert named in feedback.message and left_out not in feedback.message
        assert "也会得到这个结果" not in exercises.check("ch01-ex3", answer, lang="zh").message


def test_ch01_ex3_a_projection_before_the_step_is_named():
    feedback = exercises.check("ch01-ex3", projection_before_the_step)
    assert not feedback.passed
    assert feedback.message.startswith("loss sum((w - [2., 1.])**2), w = [0., 0.], steps = 4: your w is "
                                       "[1.1155, 0.5578], of norm 1.24721: ")
    assert feedback.key == "ch01.before_step" and "the expected w is [0.8944, 0.4472]" in feedback.message
    zh = exercises.check("ch01-ex3", projection_before_the_step, lang="zh")
    assert zh.key == "ch01.before_step"


def test_ch01_ex3_a_projection_onto_the_box_is_named():
    # tf.clip_by_value after every step: projected after the step, but onto [-1, 1]^2, not the ball
    feedback = exercises.check("ch01-ex3", onto_the_box)
    assert not feedback.passed
    assert feedback.message.startswith("loss sum((w - [2., 1.])**2), w = [0., 0.], steps = 4: your w is "
                                       "[1.    , 0.5904]: ")
    assert feedback.key == "ch01.box" and "expected [0.8944, 0.4472]" in feedback.message
    assert "(on this loss, one tf.clip_by_value after the loop ends there too)" in feedback.message  # {also}
    zh = exercises.check("ch01-ex3", onto_the_box, lang="zh")
    assert zh.key == "ch01.box"


def test_ch01_ex3_another_escape_from_the_ball_gets_the_generic_projection_message():
    # leaves the ball, but matches none of the named wrong loops: no diagnosis is claimed
    def scaled_up(loss_fn, w, steps):
        return w.assign(3 * train(loss_fn, w, steps))
    feedback = exercises.check("ch01-ex3", scaled_up)
    assert not feedback.passed
    assert feedback.message.startswith("loss sum((w - [2., 1.])**2), w = [0., 0.], steps = 4: your w is "
                                       "[2.6833, 1.3416], of norm 3: ")
    assert feedback.key == "ch01.not_projected" and "the expected w is [0.8944, 0.4472]" in feedback.message
    assert exercises.check("ch01-ex3", scaled_up, lang="zh").key == "ch01.not_projected"


def test_ch01_ex3_a_projection_onto_the_sphere_is_named():
    feedback = exercises.check("ch01-ex3", onto_the_sphere)
    assert not feedback.passed
    assert feedback.message.startswith("loss sum((w - [ 0.3, -0.4])**2), w = [0.9, 0. ], steps = 3: your w is")
    assert feedback.key == "ch01.sphere"
    assert exercises.check("ch01-ex3", onto_the_sphere, lang="zh").key == "ch01.sphere"


def test_ch01_ex3_the_callers_variable_must_be_updated():
    feedback = exercises.check("ch01-ex3", on_a_copy)
    assert not feedback.passed
    assert feedback.key == "ch01.not_in_place"
    assert "[0.8944, 0.4472]" in feedback.message and "holds [0., 0.]" in feedback.message
    assert "传给它的那个变量的值是 [0., 0.]" in exercises.check("ch01-ex3", on_a_copy, lang="zh").message


def test_ch01_ex3_other_wrong_values_get_the_generic_message():
    feedback = exercises.check("ch01-ex3", lambda loss_fn, w, steps: w)
    assert feedback.message.startswith("loss sum((w - [2., 1.])**2), w = [0., 0.], steps = 4: your w is [0., 0.]; "
                                       "expected [0.8944, 0.4472]")
    assert feedback.key == "ch01.train_wrong"


def test_ch01_ex3_reference_is_projected_gradient_descent():
    from gradlib.classroom.exercises import ch01

    # one step from 0 towards t = (2, 1): w = 0.2 t = (0.4, 0.2), inside the ball
    np.testing.assert_allclose(ch01._projected_descent((2.0, 1.0), (1.0, 1.0), (0.0, 0.0), 1), [0.4, 0.2])
    # the minimum (2, 1) is outside the ball: the iterates end on the sphere, pointing at it
    far = ch01._projected_descent((2.0, 1.0), (1.0, 1.0), (0.0, 0.0), 200)
    np.testing.assert_allclose(far, np.array([2.0, 1.0]) / np.sqrt(5.0), rtol=1e-6)
    # the case where projecting once differs: the values the review computed by hand
    np.testing.assert_allclose(ch01._projected_descent((2.0, 1.0), (1.0, 4.0), (0.9, -0.4), 4),
                               [0.7265, 0.6872], atol=1e-4)
    np.testing.assert_allclose(ch01._projected_descent((2.0, 1.0), (1.0, 4.0), (0.9, -0.4), 4, every_step=False),
                               [0.8408, 0.5414], atol=1e-4)
    # the wrong loops, by hand: w <- 0.8 w + 0.2 t from 0 towards t = (2, 1), so w_k = (1 - 0.8**k) t
    plain = (1 - 0.8 ** 4) * np.array([2.0, 1.0])  # [1.1808, 0.5904]
    np.testing.assert_allclose(ch01._projected_descent((2.0, 1.0), (1.0, 1.0), (0.0, 0.0), 4, projection="none"),
                               plain)
    np.testing.assert_allclose(ch01._projected_descent((2.0, 1.0), (1.0, 1.0), (0.0, 0.0), 4, projection="box"),
                               [1.0, plain[1]])  # only the first coordinate ever leaves [-1, 1]
    # before the step: w_3 = (1 - 0.8**3) t has norm 1.09 > 1, is projected to t/sqrt(5), then one more step
    np.testing.assert_allclose(ch01._projected_descent((2.0, 1.0), (1.0, 1.0), (0.0, 0.0), 4, before_step=True),
                               0.8 * np.array([2.0, 1.0]) / np.sqrt(5.0) + 0.2 * np.array([2.0, 1.0]))


def test_describe_cuts_a_long_message_at_a_sentence_end_or_a_space():
    from gradlib.classroom.exercises._core import describe

    assert describe(ValueError("short message.")) == "short message."
    assert describe(ValueError("A" * 120 + ". " + "b" * 150)) == "A" * 120 + ". …"
    words = describe(ValueError("word " * 60))
    assert words.endswith(" word…") and len(words) <= 201
    assert describe(ValueError("x" * 300)) == "x" * 200 + "…"  # no space to cut at
