"""run_graph and register_gradient: TF1 graph code inside TF2."""

import numpy as np
import pytest
import tensorflow as tf

import gradlib


def test_returns_numpy_in_the_same_structure_with_none_kept():
    def build():
        a = tf.constant(0.0)
        b = 2 * a
        c = a + b
        w = tf.Variable(5.0)
        return {"grads": tf.gradients(c, [a, b]), "unconnected": tf.gradients(c, w),
                "w": w, "pair": (c, 7)}

    out = gradlib.run_graph(build)
    assert out["grads"] == [3.0, 1.0]  # total derivative: 1 + 2
    assert out["unconnected"] == [None]
    assert out["w"] == 5.0 and isinstance(out["w"], np.floating)
    assert out["pair"] == (0.0, 7)


def test_eager_mode_is_untouched():
    assert tf.executing_eagerly()
    gradlib.run_graph(lambda: tf.constant(1.0))
    assert tf.executing_eagerly()
    assert float(tf.constant(2.0) * 3) == 6.0


def test_stop_gradients_argument_gives_partial_derivatives():
    def build():
        a = tf.constant(0.0)
        b = 2 * a
        return tf.gradients(a + b, [a, b], stop_gradients=[a, b])

    assert gradlib.run_graph(build) == [1.0, 1.0]


def test_repeat_runs_the_fetches_in_one_session():
    def build():
        counter = tf.Variable(0)
        return counter.assign_add(1)

    assert [int(v) for v in gradlib.run_graph(build, repeat=3)] == [1, 2, 3]


def test_operations_evaluate_to_none():
    out = gradlib.run_graph(lambda: [tf.no_op(), tf.constant(1)])
    assert out == [None, 1]


@pytest.mark.parametrize("repeat", [0, -1, 1.5, True, "2"])
def test_bad_repeat(repeat):
    with pytest.raises(ValueError, match="repeat"):
        gradlib.run_graph(lambda: tf.constant(1.0), repeat=repeat)


def test_build_must_be_callable():
    with pytest.raises(TypeError, match="build"):
        gradlib.run_graph(tf.constant(1.0))


def _override_gradient(name, op_type="Identity"):
    def build():
        x = tf.constant([0.5, -2.0, 0.0])
        with tf.compat.v1.get_default_graph().gradient_override_map({op_type: name}):
            y = tf.identity(x)
        return tf.gradients(y, x, grad_ys=tf.constant([1.0, 2.0, 3.0]))[0]

    return gradlib.run_graph(build)


def test_override_uses_the_registered_function_and_rerun_replaces_it():
    @gradlib.register_gradient("GradlibTestScale")
    def first(op, grad):
        return -grad

    np.testing.assert_array_equal(_override_gradient("GradlibTestScale"), [-1.0, -2.0, -3.0])

    @gradlib.register_gradient("GradlibTestScale")  # the notebook cell run again, edited
    def second(op, grad):
        return 2.0 * grad * op.inputs[0]

    np.testing.assert_array_equal(_override_gradient("GradlibTestScale"), [1.0, -8.0, 0.0])
    assert second.__name__ == "second"  # the decorator returns the function itself


def test_tf_register_gradient_itself_refuses_a_second_registration():
    # The problem register_gradient solves.
    tf.RegisterGradient("GradlibTestPlain")(lambda op, grad: grad)
    with pytest.raises(KeyError):
        tf.RegisterGradient("GradlibTestPlain")(lambda op, grad: grad)


def test_names_taken_outside_gradlib_are_refused_clearly():
    with pytest.raises(ValueError, match="already registered outside gradlib"):
        gradlib.register_gradient("Sign")(lambda op, grad: grad)
    # and the failed attempt did not leave a half registration behind
    with pytest.raises(ValueError):
        gradlib.register_gradient("Sign")(lambda op, grad: grad)


@pytest.mark.parametrize("name, error", [(3, TypeError), ("", ValueError)])
def test_bad_names(name, error):
    with pytest.raises(error, match="op_type_name"):
        gradlib.register_gradient(name)


def test_decorated_object_must_be_callable():
    with pytest.raises(TypeError, match="callable"):
        gradlib.register_gradient("GradlibTestNotCallable")(42)


# -- feed: placeholders, and a schedule with one registration --------------------

def test_feed_gives_placeholders_their_values():
    def build():
        x = tf.compat.v1.placeholder(tf.float32, shape=[2], name="x")
        return tf.gradients(tf.reduce_sum(x ** 3), x)[0]

    np.testing.assert_allclose(gradlib.run_graph(build, feed={"x": [1.0, -2.0]}), [3.0, 12.0])
    np.testing.assert_allclose(gradlib.run_graph(build, feed={"x:0": [0.5, 2.0]}), [0.75, 12.0])


def test_a_list_of_feeds_runs_once_per_value_with_one_registration():
    # DANN's lambda as a placeholder read by the gradient function: one
    # registered name serves every value of the schedule.
    @gradlib.register_gradient("ReverseByPlaceholder")
    def reverse(op, grad):
        lam = tf.compat.v1.get_default_graph().get_tensor_by_name("lam:0")
        return -lam * grad

    def build():
        lam = tf.compat.v1.placeholder(tf.float32, shape=[], name="lam")
        x = tf.constant([1.0, 2.0])
        with tf.compat.v1.get_default_graph().gradient_override_map({"Identity": "ReverseByPlaceholder"}):
            y = tf.identity(x)
        return tf.gradients(y, x)[0] * tf.ones_like(lam)

    schedule = [0.0, 0.5, 2.0]
    results = gradlib.run_graph(build, feed=[{"lam": v} for v in schedule])
    np.testing.assert_allclose(np.array(results), [[-v, -v] for v in schedule])


def test_variables_keep_their_values_between_fed_runs():
    def build():
        step = tf.compat.v1.placeholder(tf.float32, shape=[], name="step")
        total = tf.Variable(0.0)
        return total.assign_add(step)

    assert gradlib.run_graph(build, feed=[{"step": 1.0}, {"step": 2.0}, {"step": 3.0}]) == [1.0, 3.0, 6.0]
    assert gradlib.run_graph(build, feed={"step": 2.0}, repeat=3) == [2.0, 4.0, 6.0]


@pytest.mark.parametrize("feed, repeat, error, message", [
    ({"missing": 1.0}, None, ValueError, "no tensor named 'missing'.*placeholders: \\['x'\\]"),
    ([{"x": 1.0}, {"x": 2.0}], 3, ValueError, "2 mappings but `repeat` is 3"),
    ([], None, TypeError, "feed"),
    ("x=1", None, TypeError, "feed"),
    ({3: 1.0}, None, TypeError, "tensor names"),
    ([{"x": 1.0}, 5], None, TypeError, "mapping"),
])
def test_bad_feed(feed, repeat, error, message):
    def build():
        return tf.compat.v1.placeholder(tf.float32, shape=[], name="x") * 2

    with pytest.raises(error, match=message):
        gradlib.run_graph(build, feed=feed, repeat=repeat)
