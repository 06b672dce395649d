"""Chapter 3's exercise checks: ch03-ex1 (a gradient clip whose threshold is an op input)
and ch03-ex2 (find the bugs in a binarize function), and the chapter's table of
the seven TensorFlow 2 settings (which of them an override takes effect in).

Each check must accept the reference solution, name the likely mistakes with
a specific message (in English and in Chinese: the likeliest are declared with
the checks, ``wrong_answers`` in ``ch03.py``, and run by
``test_classroom_wrong_answers.py``; more are here), and survive hostile
answers (raising, None, Python numbers, wrong shapes): always Feedback, never
an exception.
"""

import numpy as np
import pytest
import tensorflow as tf

from tensorflow.python.framework import ops  # TensorFlow's gradient registry, only to count its entries

import gradlib
from gradlib import exercises
from test_classroom_wrong_answers import expect_key, reference, wrong_answer
from gradlib.classroom.exercises import ch03

# The likeliest mistakes are declared with the checks (ch03.py, ``wrong_answers``) and run, each with its key in
# both languages, by test_classroom_wrong_answers.py; the tests below take those they use again from there.


# -- ch03-ex1 ------------------------------------------------------------------

clip_grad = reference("ch03-ex1")  # the chapter's own solution


def one_sided(op, *grads):
    return [tf.minimum(grads[0], op.inputs[1]), None]


def not_clipped(op, *grads):
    return [grads[0], None]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_ex1_reference_passes(lang):
    feedback = exercises.check("ch03-ex1", clip_grad, lang=lang)
    assert feedback.passed, feedback.message
    assert str(feedback).startswith("✓ ch03-ex1")


@pytest.mark.parametrize("answer", [
    lambda op, *grads: [tf.clip_by_value(grads[0], -op.inputs[1], op.inputs[1]), None],
    lambda op, *grads: (tf.clip_by_value(grads[0], -op.outputs[1], op.outputs[1]), grads[1]),
    lambda op, g, gc: [tf.maximum(tf.minimum(g, op.inputs[1]), -op.inputs[1]), tf.zeros_like(gc)],
])
def test_ex1_other_correct_answers_pass(answer):
    feedback = exercises.check("ch03-ex1", answer)
    assert feedback.passed, feedback.message


@pytest.mark.parametrize(
    "answer, key",
    [
        (lambda op, *g: [op.inputs[1] * g[0], None], "ch03-ex1.scaled"),
        (one_sided, "ch03-ex1.one_sided"),
        (lambda op, g, gc: [tf.where(tf.abs(op.inputs[0]) < op.inputs[1], g, tf.zeros_like(g)), None],
         "ch03-ex1.mask_x"),
        (lambda op, g, gc: [tf.where(tf.abs(g) < op.inputs[1], g, tf.zeros_like(g)), None],
         "ch03-ex1.zeroed"),
        (not_clipped, "ch03-ex1.no_clip"),
        (lambda op, *g: None, "ch03-ex1.none"),
        (lambda op, *g: [None, None], "ch03-ex1.first_none"),
        (lambda op, *g: [g[0], None, None], "ch03-ex1.count"),
        (lambda op, g, gc: [tf.clip_by_value(g, -op.inputs[1], op.inputs[1])], "ch03-ex1.count_one"),
        (lambda op, g, gc: [tf.clip_by_value(g, -op.inputs[1], op.inputs[1]), tf.ones_like(op.inputs[1])],
         "ch03-ex1.grad_for_c"),
        (lambda op, *g: [0, None], "ch03-ex1.not_tensor"),
        (lambda op, *g: [g[0], 0.0], "ch03-ex1.not_tensor"),
        (lambda op, *g: [g[0][:3], None], "ch03-ex1.shape"),
        (lambda op, *g: [tf.cast(g[0], tf.int32), None], "common.dtype"),
        (lambda op, *g: 1 / 0, "common.raised"),
        (lambda op, *g: [g[0] * np.nan, None], "common.nan"),
        (lambda op, g, gc: [tf.clip_by_value(g, -op.inputs[1], op.inputs[1]), op.inputs[1] * np.nan],
         "ch03-ex1.grad_for_c"),
        ("not a function", "common.not_callable"),
    ],
)
def test_ex1_other_mistakes_get_feedback(answer, key):
    expect_key("ch03-ex1", answer, key)


def test_ex1_can_be_checked_again_after_a_wrong_answer():
    # The check re-registers the same gradient name: notebook re-runs must work.
    assert not exercises.check("ch03-ex1", wrong_answer("ch03-ex1", "c baked in"))
    assert exercises.check("ch03-ex1", clip_grad)
    assert not exercises.check("ch03-ex1", wrong_answer("ch03-ex1", "x clipped, not the gradient"))
    assert exercises.check("ch03-ex1", clip_grad)
    assert tf.executing_eagerly()


def test_ex1_data_separate_the_mistakes():
    up, x = ch03.UPSTREAM_EX1, ch03.X_EX1
    for c in ch03.THRESHOLDS:  # upstream values beyond ±c on both sides, and ±c itself
        assert (up > c).any() and (up < -c).any() and (np.abs(up) == c).any()
        assert not np.allclose(np.clip(x, -c, c), np.clip(up, -c, c))  # clipping x is visible
    assert not np.allclose(np.clip(up, -0.5, 0.5), np.clip(up, -2.0, 2.0))  # a baked-in c is visible


# -- ch03-ex2 ------------------------------------------------------------------

@gradlib.register_gradient("TestCh03Fixed")
def _fixed_grad(op, grad):  # all three bugs fixed: BinaryNet's gradient
    x = op.inputs[0]
    return tf.where(tf.abs(x) <= 1.0, grad, tf.zeros_like(grad))


@gradlib.register_gradient("TestCh03FromOutput")
def _from_output_grad(op, grad):  # the colleague's gradient function, bug 3 in it
    y = op.outputs[0]
    return tf.where(tf.abs(y) <= 1.0, grad, tf.zeros_like(grad))


@gradlib.register_gradient("TestCh03PassThrough")
def _pass_through_grad(op, grad):  # another function with the same gradient as bug 3
    return grad


@gradlib.register_gradient("TestCh03FixedByCast")
def _fixed_by_cast_grad(op, grad):  # all three fixed, written another way
    return grad * tf.cast(tf.abs(op.inputs[0]) <= 1.0, grad.dtype)


@gradlib.register_gradient("TestCh03Ones")
def _ones_grad(op, grad):
    y = op.outputs[0]
    return tf.where(tf.abs(y) <= 1.0, tf.ones_like(grad), tf.zeros_like(grad))


def _mapped(name, key="Sign"):
    """binarize with the map {key: name} entered on the current default graph."""
    def binarize(x):
        with tf.compat.v1.get_default_graph().gradient_override_map({key: name}):
            return tf.sign(x)
    return binarize


binarize = _mapped("TestCh03Fixed")                  # the reference: all three bugs fixed
bug3_left = wrong_answer("ch03-ex2", "bug 3 left")   # the bug the network survives
map_on_outer_graph = wrong_answer("ch03-ex2", "bug 2 left")
mapped_to_identity = _mapped("Identity")
python_name = _mapped("_from_output_grad")             # the Python function's name instead of the registered one
unregistered_name = _mapped("TestCh03NeverRegistered")  # a name that no cell registered
ignores_upstream = _mapped("TestCh03Ones")


def map_around_cond(x):
    with tf.compat.v1.get_default_graph().gradient_override_map({"Sign": "TestCh03FromOutput"}):
        return tf.cond(tf.reduce_sum(x) > -100.0, lambda: tf.sign(x), lambda: -tf.sign(x))


def map_around_while(x):
    with tf.compat.v1.get_default_graph().gradient_override_map({"Sign": "TestCh03FromOutput"}):
        return tf.while_loop(lambda i, v: i < 1, lambda i, v: (i + 1, tf.sign(v)), [0, x])[1]


def map_around_function(x):
    with tf.compat.v1.get_default_graph().gradient_override_map({"Sign": "TestCh03FromOutput"}):
        return tf.function(tf.sign)(x)


def sign_after_the_block(x):
    with tf.compat.v1.get_default_graph().gradient_override_map({"Sign": "TestCh03FromOutput"}):
        pass
    return tf.sign(x)


def binarynet_forward(x):  # the paper's Sign: +1 at 0
    return gradlib.straight_through(lambda v: tf.where(v >= 0, 1.0, -1.0))(x)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_ex2_reference_passes(lang):
    feedback = exercises.check("ch03-ex2", binarize, lang=lang)
    assert feedback.passed, feedback.message
    assert "op.inputs[0]" in feedback.message


def map_inside_the_branch(x):  # the chapter's advice: enter the map where the Sign is built
    return tf.cond(tf.reduce_sum(x) > -100.0, lambda: binarize(x), lambda: -binarize(x))


def map_inside_a_function(x):
    return tf.function(binarize)(x)


@pytest.mark.parametrize("answer", [
    _mapped("TestCh03FixedByCast"),
    lambda x: _mapped("TestCh03Fixed")(x) * 1.0,
    map_inside_the_branch,
    map_inside_a_function,
])
def test_ex2_other_answers_that_keep_the_override_pass(answer):
    feedback = exercises.check("ch03-ex2", answer)
    assert feedback.passed, feedback.message


def test_ex2_the_reference_gradient_is_binarynets_not_the_upstream_gradient():
    # Independent of the check: BinaryNet's mask against the colleague's (bug 3), by NumPy.
    x, up = ch03.CASES_EX2[0]
    fixed = gradlib.run_graph(lambda: _gradient(binarize, x, up))
    np.testing.assert_array_equal(fixed, np.where(np.abs(x) <= 1.0, up, 0.0))
    got = gradlib.run_graph(lambda: _gradient(bug3_left, x, up))
    np.testing.assert_array_equal(got, up)
    assert not np.allclose(got, fixed)  # the points tell the two apart


def _gradient(fn, x_np, up_np):
    x = tf.constant(x_np)
    return tf.gradients(fn(x), x, grad_ys=tf.constant(up_np))[0]


@pytest.mark.parametrize(
    "answer, key",
    [
        (map_around_cond, "ch03-ex2.nested"),
        (gradlib.straight_through(tf.sign), "ch03-ex2.bypass"),
        (lambda x: x + tf.stop_gradient(tf.sign(x) - x), "ch03-ex2.bypass"),
        (gradlib.straight_through(tf.sign, lambda v: tf.clip_by_value(v, -1.0, 1.0)),
         "ch03-ex2.bypass"),
        (map_around_while, "ch03-ex2.nested"),
        (map_around_function, "ch03-ex2.nested"),
        (sign_after_the_block, "ch03-ex2.outside"),
        (mapped_to_identity, "ch03-ex2.identity"),
        (_mapped("TestCh03PassThrough"), "ch03-ex2.bug3_left"),
        (python_name, "ch03-ex2.lookup"),
        (ignores_upstream, "ch03-ex2.upstream"),
        (tf.sign, "ch03-ex2.no_map"),
        (lambda x: x, "ch03-ex2.forward"),
        (binarynet_forward, "ch03-ex2.binarynet_forward"),
        (unregistered_name, "ch03-ex2.unregistered"),
        (lambda x: None, "ch03-ex2.none"),
        (lambda x: np.sign(np.ones(3)), "ch03-ex2.not_tensor"),
        (lambda x: tf.reshape(tf.sign(x), [-1, 1]), "ch03-ex2.shape"),
        (lambda x: tf.cast(tf.sign(x), tf.int32), "common.dtype"),
        (lambda x: 1 / 0, "common.raised"),
        (3.0, "common.not_callable"),
    ],
)
def test_ex2_other_mistakes_get_feedback(answer, key):
    expect_key("ch03-ex2", answer, key)


def test_ex2_the_override_map_is_restored_after_the_check():
    original = tf.Graph.gradient_override_map
    exercises.check("ch03-ex2", map_on_outer_graph)
    exercises.check("ch03-ex2", lambda x: 1 / 0)
    assert tf.Graph.gradient_override_map is original


def test_ex2_the_points_include_the_kinks():
    assert {0.0, 1.0, -1.0, 1.5, -1.5} <= set(ch03.POINTS_EX2[:9].tolist())
    assert {0.0, 1.0, -1.0} <= set(ch03.MATRIX_EX2.ravel().tolist())


# -- the chapter's table: where an override takes effect in TensorFlow 2 ----------
# Recomputed here, independently of the chapter's cells, so that a TensorFlow
# release that changes a row fails the tests instead of silently making the
# prose of en-ch03-tf2 ("The override works in every row except (1) and (2)")
# and en-ch03-nested wrong.

@gradlib.register_gradient("TestCh03Negated")
def _negated(op, grad):
    return -grad


def _reversed_by_override(x):
    with tf.compat.v1.get_default_graph().gradient_override_map({"Identity": "TestCh03Negated"}):
        y = tf.identity(x)
    return 3.0 * y


@tf.custom_gradient
def _reversed_by_custom_gradient(x):
    return tf.identity(x), lambda upstream: -upstream


def _graph_gradient(op, x):
    x = tf.constant(x)
    return tf.gradients(op(x), x)[0]


def _tape_gradient(op, x):
    x = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = op(x)
    return tape.gradient(y, x)


def _in_cond(op, x):
    def branch():
        return op(x)
    return tf.cond(x > 0, branch, branch)


MODES = [
    lambda op: gradlib.run_graph(lambda: _graph_gradient(op, 2.0)),
    lambda op: _tape_gradient(op, 2.0).numpy(),
    lambda op: tf.function(lambda: _tape_gradient(op, 2.0))().numpy(),
    lambda op: tf.function(lambda: _graph_gradient(op, 2.0))().numpy(),
    lambda op: _tape_gradient(tf.function(op), 2.0).numpy(),
    lambda op: tf.function(lambda: _tape_gradient(tf.function(op), 2.0))().numpy(),
    lambda op: tf.function(lambda: _tape_gradient(lambda x: _in_cond(op, x), 2.0))().numpy(),
]


def test_the_seven_settings_of_the_chapter_table():
    default = [float(run(lambda x: 3.0 * tf.identity(x))) for run in MODES]
    overridden = [float(run(_reversed_by_override)) for run in MODES]
    custom = [float(run(lambda x: 3.0 * _reversed_by_custom_gradient(x))) for run in MODES]
    assert default == [3.0] * 7
    took_effect = ["yes" if o == -d else "no" for o, d in zip(overridden, default)]
    assert took_effect == ["yes", "no", "no", "yes", "yes", "yes", "yes"]  # every row but (1) and (2)
    assert custom == [-3.0] * 7


def test_a_map_entered_around_a_nested_graph_marks_nothing_in_it():
    def build():
        x = tf.constant([0.5, 2.0])
        plain = tf.sign(x)
        with tf.compat.v1.get_default_graph().gradient_override_map({"Sign": "TestCh03Fixed"}):
            ys = [tf.sign(x),
                  tf.cond(x[0] > 0, lambda: tf.sign(x), lambda: -tf.sign(x)),
                  tf.while_loop(lambda i, v: i < 1, lambda i, v: (i + 1, tf.sign(v)), [0, x])[1],
                  tf.function(tf.sign)(x)]
        ys.append(tf.cond(x[0] > 0, lambda: binarize(x), lambda: -binarize(x)))
        return [tf.gradients(y, x)[0] for y in [plain] + ys]

    plain, on_graph, in_cond, in_loop, in_function, map_in_branch = gradlib.run_graph(build)
    np.testing.assert_array_equal(plain, [0.0, 0.0])  # TensorFlow's own gradient of Sign
    np.testing.assert_array_equal(on_graph, [1.0, 0.0])
    np.testing.assert_array_equal(map_in_branch, [1.0, 0.0])
    for gradient in (in_cond, in_loop, in_function):
        np.testing.assert_array_equal(gradient, plain)

    @tf.function
    def map_around_if(x):
        with tf.compat.v1.get_default_graph().gradient_override_map({"Sign": "TestCh03Fixed"}):
            if tf.reduce_sum(x) > 0:
                y = tf.sign(x)
            else:
                y = -tf.sign(x)
        return tf.gradients(y, x)[0]

    np.testing.assert_array_equal(map_around_if(tf.constant([0.5, 2.0])), [0.0, 0.0])


def test_custom_gradient_registers_one_name_per_trace():
    def reversal_layer(x, lam):
        @tf.custom_gradient
        def reverse(x):
            return tf.identity(x), lambda upstream: -lam * upstream
        return reverse(x)

    @tf.function(reduce_retracing=False)
    def step(lam):
        return _tape_gradient(lambda x: reversal_layer(x, lam), 1.0)

    counts = {}
    for kind, values in (("float", [0.1, 0.2, 0.3, 0.4]), ("tensor", [tf.constant(v) for v in (0.1, 0.2, 0.3, 0.4)])):
        before = len(ops.gradient_registry.list())
        gradients = [float(step(v)) for v in values]
        counts[kind] = len(ops.gradient_registry.list()) - before
        assert np.allclose(gradients, [-0.1, -0.2, -0.3, -0.4])
    assert counts == {"float": 4, "tensor": 1}
