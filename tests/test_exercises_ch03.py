"""Chapter 3's exercise checks: ch03-ex1 (a gradient clip whose threshold is an op input)
and ch03-ex2 (find the bugs in a binarize function).

Each check must accept the reference solution, name the likely mistakes with
a specific message (shown here in English and in Chinese), and survive hostile
answers (raising, None, Python numbers, wrong shapes): always Feedback, never
an exception.
"""

import numpy as np
import pytest
import tensorflow as tf

import gradlib
from gradlib import exercises
from gradlib.exercises import ch03


# -- ch03-ex1 ------------------------------------------------------------------

def clip_grad(op, grad_y, grad_c):  # the reference solution
    c = op.inputs[1]
    return [tf.clip_by_value(grad_y, -c, c), None]


def one_upstream_gradient(op, grad):  # likely mistake 1: the one-output signature
    c = op.inputs[1]
    return [tf.clip_by_value(grad, -c, c), None]


def threshold_baked_in(op, *grads):  # likely mistake 2: c as a Python number
    return [tf.clip_by_value(grads[0], -1.0, 1.0), None]


def clips_the_input(op, *grads):  # likely mistake 3: clip x instead of the gradient
    c = op.inputs[1]
    return [tf.clip_by_value(op.inputs[0], -c, c), None]


def mask_by_input(op, grad_y, grad_c):  # likely mistake 4: the explorer's clip_mask_grad, copied
    x, c = op.inputs
    return [tf.where(tf.abs(x) <= c, grad_y, tf.zeros_like(grad_y)), None]


def zeroed_beyond_c(op, grad_y, grad_c):  # likely mistake 5: zero the gradient beyond ±c, not clip it
    c = op.inputs[1]
    return [tf.where(tf.abs(grad_y) <= c, grad_y, tf.zeros_like(grad_y)), None]


def threshold_from_grad_c(op, grad_y, grad_c):  # likely mistake 6: grad_c taken for c
    return [tf.clip_by_value(grad_y, -grad_c, grad_c), None]


def one_value(op, *grads):  # returns one gradient for two inputs
    c = op.inputs[1]
    return tf.clip_by_value(grads[0], -c, c)


def multiplies(op, *grads):  # the chapter's reversal pattern, copied
    return [-op.inputs[1] * grads[0], None]


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
    "answer, en, zh",
    [
        (one_upstream_gradient, "IdentityN has two outputs (y and c), so TensorFlow calls your gradient "
                                "function with two upstream gradients", "IdentityN 有两个输出"),
        (threshold_baked_in, "your gradient is the same for c = 0.5 and for c = 2: the threshold must come "
                             "from the op, op.inputs[1]", "阈值必须从算子中读取，即 op.inputs[1]"),
        (clips_the_input, "your gradient is computed from x = op.inputs[0]", "应截断的是上游梯度 grad_y"),
        (mask_by_input, "you masked the gradient by the input x (zero where |x| > c), as the explorer's "
                        "clip_mask_grad does", "就像探索器中的 clip_mask_grad 那样"),
        (zeroed_beyond_c, "you zeroed the gradient where |grad_y| > c", "你在 |grad_y| > c 处把梯度置零了"),
        (threshold_from_grad_c, "grad_c is the upstream gradient of IdentityN's second output",
         "grad_c 是 IdentityN 第二个输出的上游梯度"),
    ],
)
def test_ex1_the_likely_mistakes_are_named(answer, en, zh):
    feedback = exercises.check("ch03-ex1", answer, lang="en")
    assert not feedback.passed
    assert en in feedback.message
    feedback = exercises.check("ch03-ex1", answer, lang="zh")
    assert not feedback.passed
    assert zh in feedback.message


@pytest.mark.parametrize(
    "answer, fragment",
    [
        (one_value, "returned one tensor; IdentityN has two inputs (x and c)"),
        (multiplies, "multiplied by -c, as in the chapter's reversal"),
        (lambda op, *g: [op.inputs[1] * g[0], None], "multiplied by c, as in"),
        (one_sided, "clip both sides, tf.clip_by_value(grad_y, -c, c)"),
        (lambda op, g, gc: [tf.where(tf.abs(op.inputs[0]) < op.inputs[1], g, tf.zeros_like(g)), None],
         "you masked the gradient by the input x"),
        (lambda op, g, gc: [tf.where(tf.abs(g) < op.inputs[1], g, tf.zeros_like(g)), None],
         "you zeroed the gradient where |grad_y| > c"),
        (not_clipped, "your gradient is the upstream gradient unchanged"),
        (lambda op, *g: None, "returned None; return a list of two values"),
        (lambda op, *g: [None, None], "the gradient you returned for x is None"),
        (lambda op, *g: [g[0], None, None], "returned 3 values"),
        (lambda op, *g: [0, None], "the first value you returned is a Python int (0)"),
        (lambda op, *g: [g[0], 0.0], "the second value you returned is a Python float"),
        (lambda op, *g: [g[0][:3], None], "shape [3]; expected [24]"),
        (lambda op, *g: [tf.cast(g[0], tf.int32), None], "dtype int32"),
        (lambda op, *g: 1 / 0, "raised ZeroDivisionError"),
        (lambda op, *g: [g[0] * np.nan, None], "NaN"),
        ("not a function", "must be a function"),
    ],
)
def test_ex1_other_mistakes_get_feedback(answer, fragment):
    feedback = exercises.check("ch03-ex1", answer)
    assert not feedback.passed
    assert fragment in feedback.message


def test_ex1_can_be_checked_again_after_a_wrong_answer():
    # The check re-registers the same gradient name: notebook re-runs must work.
    assert not exercises.check("ch03-ex1", threshold_baked_in)
    assert exercises.check("ch03-ex1", clip_grad)
    assert not exercises.check("ch03-ex1", clips_the_input)
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
def _fixed_grad(op, grad):
    x = op.inputs[0]
    return tf.where(tf.abs(x) <= 1.0, grad, tf.zeros_like(grad))


@gradlib.register_gradient("TestCh03FromOutput")
def _from_output_grad(op, grad):
    y = op.outputs[0]
    return tf.where(tf.abs(y) <= 1.0, grad, tf.zeros_like(grad))


@gradlib.register_gradient("TestCh03Ones")
def _ones_grad(op, grad):
    x = op.inputs[0]
    return tf.where(tf.abs(x) <= 1.0, tf.ones_like(grad), tf.zeros_like(grad))


G = tf.compat.v1.get_default_graph()  # as in the colleague's code: fetched once, at import


def binarize(x):  # the reference solution
    with tf.compat.v1.get_default_graph().gradient_override_map({"Sign": "TestCh03Fixed"}):
        return tf.sign(x)


def map_on_outer_graph(x):  # likely mistake 1: bug 2 left (G fetched at the top)
    with G.gradient_override_map({"Sign": "TestCh03Fixed"}):
        return tf.sign(x)


def misspelled_key(x):  # likely mistake 2: bug 1 left ("sign")
    with tf.compat.v1.get_default_graph().gradient_override_map({"sign": "TestCh03Fixed"}):
        return tf.sign(x)


def mask_from_output(x):  # likely mistake 3: bug 3 left (op.outputs[0])
    with tf.compat.v1.get_default_graph().gradient_override_map({"Sign": "TestCh03FromOutput"}):
        return tf.sign(x)


def mapped_to_identity(x):
    with tf.compat.v1.get_default_graph().gradient_override_map({"Sign": "Identity"}):
        return tf.sign(x)


def python_name(x):  # the Python function's name instead of the registered one
    with tf.compat.v1.get_default_graph().gradient_override_map({"Sign": "_fixed_grad"}):
        return tf.sign(x)


def colleague_name(x):  # the colleague's gradient name, never registered in the notebook
    with tf.compat.v1.get_default_graph().gradient_override_map({"Sign": "ColleagueSign"}):
        return tf.sign(x)


def unregistered_name(x):  # a name that no cell registered
    with tf.compat.v1.get_default_graph().gradient_override_map({"Sign": "TestCh03NeverRegistered"}):
        return tf.sign(x)


def binarynet_forward(x):  # the paper's Sign: +1 at 0
    return gradlib.straight_through(lambda v: tf.where(v >= 0, 1.0, -1.0),
                                    lambda v: tf.clip_by_value(v, -1.0, 1.0))(x)


def ignores_upstream(x):
    with tf.compat.v1.get_default_graph().gradient_override_map({"Sign": "TestCh03Ones"}):
        return tf.sign(x)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_ex2_reference_passes(lang):
    feedback = exercises.check("ch03-ex2", binarize, lang=lang)
    assert feedback.passed, feedback.message


@pytest.mark.parametrize("answer", [
    lambda x: gradlib.straight_through(tf.sign, lambda v: tf.clip_by_value(v, -1.0, 1.0))(x),
    lambda x: tf.clip_by_value(x, -1.0, 1.0) + tf.stop_gradient(tf.sign(x) - tf.clip_by_value(x, -1.0, 1.0)),
])
def test_ex2_any_correct_binarize_passes(answer):
    feedback = exercises.check("ch03-ex2", answer)
    assert feedback.passed, feedback.message


@pytest.mark.parametrize(
    "answer, en, zh",
    [
        (map_on_outer_graph, "the map was entered on a graph other than the one the Sign op was built in",
         "覆盖映射是在另一个计算图上进入的"),
        (misspelled_key, "the keys of your map are 'sign', and TensorFlow does not check them",
         "你的映射的键是 'sign'"),
        (mask_from_output, "a mask computed from op.outputs[0], which is sign(x) and always within [-1, 1]",
         "用 op.outputs[0] 计算掩码就会这样"),
    ],
)
def test_ex2_the_three_likely_mistakes_are_named(answer, en, zh):
    feedback = exercises.check("ch03-ex2", answer, lang="en")
    assert not feedback.passed
    assert en in feedback.message
    feedback = exercises.check("ch03-ex2", answer, lang="zh")
    assert not feedback.passed
    assert zh in feedback.message


@pytest.mark.parametrize(
    "answer, fragment",
    [
        (mapped_to_identity, "mapping Sign to \"Identity\" passes the gradient everywhere"),
        (python_name, "the map sends Sign to '_fixed_grad', but no gradient is registered under that name"),
        (ignores_upstream, "pass the upstream gradient grad through where |x| ≤ 1"),
        (tf.sign, "binarize never entered gradient_override_map"),
        (lambda x: x, "the forward value must stay tf.sign(x)"),
        (binarynet_forward, "at x = 0 binarize(x) is 1: that is the Sign of the BinaryNet paper (+1 at 0), "
                            "but this exercise asks for tf.sign(x)"),
        (colleague_name, "'ColleagueSign', but that name is registered only in the colleague's code"),
        (unregistered_name, "Register your gradient function under exactly that string"),
        (lambda x: None, "binarize returned None"),
        (lambda x: np.sign(np.ones(3)), "binarize returned a numpy.ndarray"),
        (lambda x: tf.reshape(tf.sign(x), [-1, 1]), "binarize(x) has shape"),
        (lambda x: tf.cast(tf.sign(x), tf.int32), "dtype int32"),
        (lambda x: 1 / 0, "raised ZeroDivisionError"),
        (3.0, "must be a function"),
    ],
)
def test_ex2_other_mistakes_get_feedback(answer, fragment):
    feedback = exercises.check("ch03-ex2", answer)
    assert not feedback.passed
    assert fragment in feedback.message


@pytest.mark.parametrize("answer, zh", [
    (binarynet_forward, "这是 BinaryNet 论文中的 Sign（在 0 处取 +1）"),
    (colleague_name, "这个名字只在同事的代码中注册过"),
    (python_name, "而不是 Python 函数名"),
])
def test_ex2_name_and_forward_messages_in_chinese(answer, zh):
    feedback = exercises.check("ch03-ex2", answer, lang="zh")
    assert not feedback.passed
    assert zh in feedback.message


def test_ex2_the_override_map_is_restored_after_the_check():
    original = tf.Graph.gradient_override_map
    exercises.check("ch03-ex2", map_on_outer_graph)
    exercises.check("ch03-ex2", lambda x: 1 / 0)
    assert tf.Graph.gradient_override_map is original


def test_ex2_the_points_include_the_kinks():
    assert {0.0, 1.0, -1.0, 1.5, -1.5} <= set(ch03.POINTS_EX2[:9].tolist())
    assert {0.0, 1.0, -1.0} <= set(ch03.MATRIX_EX2.ravel().tolist())


def test_chapter_3_checks_are_registered():
    assert {"ch03-ex1", "ch03-ex2"} <= set(exercises.exercise_ids())
    assert exercises.answer_name("ch03-ex1") == "clip_grad"
    assert exercises.answer_name("ch03-ex2") == "binarize"
