"""Bad input to gradlib: one table of cases, one table of classes of values.

Every public function of gradlib (``gradlib.__all__`` and the public functions
of its modules ``benchmarks``, ``data``, ``dann``, ``experiments``, ``exercises`` and ``layers``) is
called with a wrong dtype, shape or parameter, and must raise the expected
exception with a message that names the argument: never a silent result,
never an error from deep inside NumPy or TensorFlow.

Not in the table: the names that take no input to get wrong
(``captured_tf_warnings()``, the constants ``SIGN_SURROGATES``, ``QUANTIZERS``,
``dann.DEFAULTS``, ``dann.PROBES``, ``dann.SELECTION_SEEDS``, ``experiments.KINDS``), the result and exception classes
``GradientCheck``, ``GradientError``, ``FixedPointError``, ``Diagnosis``, ``Finding``, ``UntestedTensorFlowWarning`` and ``exercises.Feedback``, and
``exercises.exercise_ids()``.  ``test_the_table_covers_every_public_function``
keeps this list honest.

The second table states, per numeric parameter, its *kind* (a finite real, a
positive number, a positive integer, ...) and every function is called with
every member of the class of values that kind refuses: NaN and ±inf, bools,
zero and negative numbers, non-integers and values of the wrong type, as the
kind says.  ``test_every_numeric_parameter_has_a_kind`` keeps it complete.
"""

import inspect
import re

import numpy as np
import pytest
import tensorflow as tf

import gradlib
from gradlib import dann, data, exercises, experiments

X = np.array([-1.0, 0.0, 0.5, 2.0], np.float32)
INTS = tf.constant([1, 2, 3])


# Some checks happen in what a public function returns or builds; these
# helpers reach them.  `covers` names the public function each one tests.

def covers(public):
    def mark(helper):
        helper.covers = public
        return helper
    return mark


@covers(gradlib.GradientReversal)
def reversal_layer_on(x):
    return gradlib.GradientReversal()(x)


@covers(gradlib.QuantizedDense)
def quantized_dense_on(x):
    return gradlib.QuantizedDense(2)(x)


@covers(gradlib.ReversalSchedule)
def schedule_returning_nan():
    gradlib.ReversalSchedule(gradlib.GradientReversal(), 10, schedule=lambda p: float("nan")).on_train_batch_begin(0)


@covers(gradlib.straight_through)
def straight_through_op_on(forward, x, backward=None):
    return gradlib.straight_through(forward, backward)(x)


@covers(gradlib.strict_custom_gradient)
def strict_call_with_keyword_tensor():
    @gradlib.strict_custom_gradient
    def scale(x, k=2.0):
        return x * k, lambda dy: (dy * k, None)
    return scale(tf.constant(1.0), k=tf.constant(3.0))


@covers(gradlib.strict_custom_gradient)
def strict_with_grad_fn(grad_fn):
    @gradlib.strict_custom_gradient
    def double(x):
        return 2.0 * x, grad_fn
    x = tf.constant(X)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = double(x)
    return tape.gradient(y, x)


@covers(gradlib.register_gradient)
def register_gradient_on(fn):
    return gradlib.register_gradient("GradbookBadInputTestGradient")(fn)


def smooth(beta):
    return lambda x: tf.nn.softplus(beta * x) / beta


# (callable, args, kwargs, exception, regex naming the argument), by id
CASES = {
    # -- straight-through estimators
    "ste_round: int32 tensor": (gradlib.ste_round, (INTS,), {}, TypeError, r"`x` has dtype int32"),
    "ste_round: strings": (gradlib.ste_round, (["a"],), {}, TypeError, r"`x` has dtype string"),
    "ste_sign: int32 tensor": (gradlib.ste_sign, (INTS,), {}, TypeError, r"`x` has dtype int32"),
    "ste_sign: clip=-1": (gradlib.ste_sign, (X,), {"clip": -1}, ValueError, r"`clip` must be a positive number"),
    "ste_sign: clip=0": (gradlib.ste_sign, (X,), {"clip": 0}, ValueError, r"`clip` must be a positive number"),
    "ste_sign: clip='1'": (gradlib.ste_sign, (X,), {"clip": "1"}, ValueError, r"`clip` must be a finite real number"),
    "ste_sign: clip=True": (gradlib.ste_sign, (X,), {"clip": True}, ValueError, r"`clip` must be a finite real number"),
    "xnor_binarize: int64 array": (gradlib.xnor_binarize, (np.array([1, -2]),), {}, TypeError, r"`x` has dtype int64"),
    "xnor_binarize: axis out of range": (gradlib.xnor_binarize, (X,), {"axis": 1}, ValueError,
                                         r"`axis` 1 is out of range for a tensor of rank 1"),
    "dorefa_quantize: int64 tensor": (gradlib.dorefa_quantize, (tf.constant([1], tf.int64), 2), {}, TypeError,
                                      r"`x` has dtype int64"),
    "dorefa_weights: int32 tensor": (gradlib.dorefa_weights, (INTS, 2), {}, TypeError, r"`x` has dtype int32"),
    "dorefa_weights: bits=0": (gradlib.dorefa_weights, (X, 0), {}, ValueError, r"`bits` must be a positive integer"),
    # -- Keras layers and callbacks (gradlib.layers)
    "Quantizer: unknown name": (gradlib.Quantizer, ("sign",), {}, ValueError, r"unknown quantizer 'sign'"),
    "Quantizer: bad parameter": (gradlib.Quantizer, ("ste_sign",), {"clip": -1.0}, ValueError, r"`clip`"),
    "QuantizedDense: units=0": (gradlib.QuantizedDense, (0,), {}, ValueError, r"`units` must be a positive integer"),
    "QuantizedDense: kernel_quantizer=3": (gradlib.QuantizedDense, (2,), {"kernel_quantizer": 3}, TypeError,
                                           r"`kernel_quantizer` must be None, the name of a gradlib quantizer"),
    "QuantizedDense: bool inputs": (quantized_dense_on, (tf.constant([[True, False]]),), {}, TypeError,
                                    r"`inputs` has dtype bool"),
    "ReversalSchedule: a Dense layer": (gradlib.ReversalSchedule, (tf.keras.layers.Dense(1), 10), {}, TypeError,
                                        r"`layer` must be a gradlib.GradientReversal layer"),
    "ReversalSchedule: schedule=1": (gradlib.ReversalSchedule, (gradlib.GradientReversal(), 10), {"schedule": 1},
                                     TypeError, r"`schedule` must be callable"),
    "ReversalSchedule: schedule returns NaN": (schedule_returning_nan, (), {}, ValueError, r"`schedule` returned nan"),
    "dorefa_quantize: bits=0": (gradlib.dorefa_quantize, (X, 0), {}, ValueError, r"`bits` must be a positive integer"),
    "dorefa_quantize: bits=-2": (gradlib.dorefa_quantize, (X, -2), {}, ValueError, r"`bits` must be a positive integer"),
    "dorefa_quantize: bits=2.5": (gradlib.dorefa_quantize, (X, 2.5), {}, ValueError, r"`bits` must be a positive integer"),
    "dorefa_quantize: bits=True": (gradlib.dorefa_quantize, (X, True), {}, ValueError, r"`bits` must be a positive integer"),
    "dorefa_quantize: bits='4'": (gradlib.dorefa_quantize, (X, "4"), {}, ValueError, r"`bits` must be a positive integer"),
    "sign_with_surrogate: int32 tensor": (gradlib.sign_with_surrogate, (INTS,), {}, TypeError, r"`x` has dtype int32"),
    "sign_with_surrogate: unknown surrogate": (gradlib.sign_with_surrogate, (X, "nope"), {}, ValueError,
                                               r"`surrogate` must be one of"),
    "sign_with_surrogate: surrogate is a list": (gradlib.sign_with_surrogate, (X, ["tanh"]), {}, ValueError,
                                                 r"`surrogate` must be one of"),
    "sign_with_surrogate: clip=-1": (gradlib.sign_with_surrogate, (X, "clipped"), {"clip": -1}, ValueError,
                                     r"`clip` must be a positive number"),
    "sign_with_surrogate: beta=0": (gradlib.sign_with_surrogate, (X, "swish_sign"), {"beta": 0}, ValueError,
                                    r"`beta` must be a positive number"),
    # -- gradient reversal
    "gradient_reversal: int32 tensor": (gradlib.gradient_reversal, (INTS,), {}, TypeError, r"`x` has dtype int32"),
    "gradient_reversal: lam is a string": (gradlib.gradient_reversal, (X, "big"), {}, TypeError,
                                           r"`lam` must be a real number"),
    "gradient_reversal: lam=True": (gradlib.gradient_reversal, (X, True), {}, TypeError, r"`lam` must be a real number"),
    "gradient_reversal: lam=None": (gradlib.gradient_reversal, (X, None), {}, TypeError, r"`lam` must be a real number"),
    "gradient_reversal: complex lam": (gradlib.gradient_reversal, (X, 1 + 2j), {}, TypeError,
                                       r"`lam` must be a real number"),
    "gradient_reversal: lam is a vector": (gradlib.gradient_reversal, (X, [1.0, 2.0]), {}, ValueError,
                                           r"`lam` must be a scalar"),
    "gradient_reversal: lam=nan": (gradlib.gradient_reversal, (X, float("nan")), {}, ValueError,
                                   r"`lam` must be a finite real number; got nan"),
    "gradient_reversal: lam=-inf": (gradlib.gradient_reversal, (X, -float("inf")), {}, ValueError,
                                    r"`lam` must be a finite real number; got -inf"),
    "gradient_reversal: lam=np.float32(nan)": (gradlib.gradient_reversal, (X, np.float32("nan")), {}, ValueError,
                                               r"`lam` must be a finite real number"),
    "gradient_reversal: lam=np.array(nan)": (gradlib.gradient_reversal, (X, np.array(np.nan)), {}, ValueError,
                                             r"`lam` must be a finite number in float32; got array\(nan\)"),
    "gradient_reversal: lam=np.array(inf)": (gradlib.gradient_reversal, (X, np.array(np.inf)), {}, ValueError,
                                             r"`lam` must be a finite number in float32"),
    "gradient_reversal: lam=1e39 overflows float32": (gradlib.gradient_reversal, (X, 1e39), {}, ValueError,
                                                      r"`lam` must be a finite number in float32; got 1e\+39, "
                                                      r"which is inf in float32"),
    "GradientReversal: lam=1e39 overflows float32": (gradlib.GradientReversal, (1e39,), {}, ValueError,
                                                     r"`lam` must be a finite number in float32; got 1e\+39"),
    "GradientReversal: lam=nan": (gradlib.GradientReversal, (float("nan"),), {}, ValueError,
                                  r"`lam` must be a finite real number; got nan"),
    "GradientReversal: lam is a string": (gradlib.GradientReversal, (), {"lam": "big"}, TypeError,
                                          r"`lam` must be a real number"),
    "GradientReversal: lam=None": (gradlib.GradientReversal, (None,), {}, TypeError, r"`lam` must be a real number"),
    "GradientReversal: lam=True": (gradlib.GradientReversal, (True,), {}, TypeError, r"`lam` must be a real number"),
    "GradientReversal: int32 inputs": (reversal_layer_on, (INTS,), {}, TypeError, r"`inputs` has dtype int32"),
    # -- forward f, backward g
    "straight_through: forward is a string": (gradlib.straight_through, ("round",), {}, TypeError,
                                              r"`forward` must be callable"),
    "straight_through: backward is a number": (gradlib.straight_through, (tf.round, 3), {}, TypeError,
                                               r"`backward` must be callable"),
    "straight_through: op on int32 tensor": (straight_through_op_on, (tf.round, INTS), {}, TypeError,
                                             r"`x` has dtype int32"),
    "straight_through: f(x) of another shape": (straight_through_op_on, (tf.reduce_sum, X), {}, ValueError,
                                                r"forward\(x\) has shape \[\]"),
    "straight_through: op on complex tensor": (straight_through_op_on, (tf.round, tf.constant([0.3 + 1j])), {},
                                               TypeError, r"`x` has dtype complex128, which straight_through does "
                                                          r"not support"),
    "straight_through: f(x) of an integer dtype": (straight_through_op_on,
                                                   (lambda v: tf.cast(v > 0, tf.int32), X), {}, TypeError,
                                                   r"forward\(x\) has dtype int32 but x has dtype float32"),
    "straight_through: f(x) and g(x) of different dtypes": (straight_through_op_on,
                                                            (tf.round, X, lambda v: tf.cast(v, tf.float16)), {},
                                                            TypeError, r"forward\(x\) has dtype float32 but "
                                                                       r"backward\(x\) has dtype float16"),
    "straight_through: g(x) is None": (straight_through_op_on, (tf.round, X, lambda v: None), {}, TypeError,
                                       r"backward\(x\) returned None"),
    "straight_through: f(x) is not a tensor": (straight_through_op_on, (lambda v: object(), X), {}, TypeError,
                                           r"forward\(x\) returned object, which is not a tensor"),
    # -- checking gradients
    "check_gradient: fn=None": (gradlib.check_gradient, (None, [1.0]), {}, TypeError, r"`fn` must be callable"),
    "check_gradient: x holds strings": (gradlib.check_gradient, (tf.sin, ["a"]), {}, TypeError,
                                        r"`x` must hold real numbers"),
    "check_gradient: atol=-1": (gradlib.check_gradient, (tf.sin, [1.0]), {"atol": -1}, ValueError,
                                r"`atol` must be a non-negative number"),
    "check_gradient: rtol is a string": (gradlib.check_gradient, (tf.sin, [1.0]), {"rtol": "tight"}, ValueError,
                                         r"`rtol` must be a finite real number"),
    "check_gradient: delta=0": (gradlib.check_gradient, (tf.sin, [1.0]), {"delta": 0}, ValueError,
                                r"`delta` must be a positive number"),
    "check_gradient: fn fails on float64": (gradlib.check_gradient, (lambda v: v * tf.constant(2.0), [1.0]), {},
                                            TypeError, r"evaluates `fn` in float64"),
    "strict_custom_gradient: f=None": (gradlib.strict_custom_gradient, (None,), {}, TypeError, r"`f` must be callable"),
    "strict_custom_gradient: tensor passed by keyword": (strict_call_with_keyword_tensor, (), {}, gradlib.GradientError,
                                                         r"not as k="),
    "strict_custom_gradient: grad_fn not callable": (strict_with_grad_fn, (2.0,), {}, TypeError,
                                                     r"returned by f \(grad_fn\)` must be callable"),
    "strict_custom_gradient: float gradient": (strict_with_grad_fn, (lambda dy: 1.5,), {}, gradlib.GradientError,
                                               r"input `x` \(argument 0\) must be a tensor"),
    # -- curves and explorers
    "curves: fn is a string": (gradlib.curves, ("sin", X), {}, TypeError, r"`fn` must be callable"),
    "curves: complex x": (gradlib.curves, (tf.sin, np.array([1 + 2j])), {}, TypeError, r"`x` must hold real numbers"),
    "curves: dtype=tf.int32": (gradlib.curves, (tf.sin, X), {"dtype": tf.int32}, TypeError,
                               r"`dtype` must be a floating dtype"),
    "curves: dtype is not a dtype": (gradlib.curves, (tf.sin, X), {"dtype": "banana"}, TypeError,
                                     r"`dtype` must be a floating dtype"),
    "curves: fn returns None": (gradlib.curves, (lambda x: None, X), {}, TypeError, r"`fn` returned None"),
    "curves: fn reduces": (gradlib.curves, (tf.reduce_sum, X), {}, ValueError, r"`fn` must return one value per point"),
    "curves: unknown unconnected": (gradlib.curves, (tf.sin, X), {"unconnected": "zeros"}, ValueError,
                                    r"`unconnected` must be one of"),
    "value_and_grad: fn is a string": (gradlib.value_and_grad, ("sin", X), {}, TypeError, r"`fn` must be callable"),
    "value_and_grad: int32 x": (gradlib.value_and_grad, (tf.sin, INTS), {}, TypeError, r"`x` has dtype int32"),
    "value_and_grad: x holds strings": (gradlib.value_and_grad, (tf.sin, ["a"]), {}, TypeError,
                                        r"`x` has dtype string"),
    "value_and_grad: strings with a dtype": (gradlib.value_and_grad, (tf.sin, ["a"]), {"dtype": tf.float64},
                                             TypeError, r"`x` must hold real numbers"),
    "value_and_grad: dtype=tf.int32": (gradlib.value_and_grad, (tf.sin, X), {"dtype": tf.int32}, TypeError,
                                       r"`dtype` must be a floating dtype"),
    "value_and_grad: upstream of another shape": (gradlib.value_and_grad, (tf.sin, X, [1.0, 2.0]), {}, ValueError,
                                                  r"`upstream` has shape \[2\] but fn\(x\) has shape \[4\]"),
    "value_and_grad: upstream holds strings": (gradlib.value_and_grad, (tf.sin, X, ["a"] * 4), {}, TypeError,
                                               r"`upstream` must hold real numbers"),
    "value_and_grad: fn returns None": (gradlib.value_and_grad, (lambda x: None, X), {}, TypeError,
                                        r"`fn` returned None"),
    "plot_curves: fn is a string": (gradlib.plot_curves, ("sin", X), {}, TypeError, r"`fn` must be callable"),
    "plot_curves: x holds strings": (gradlib.plot_curves, (tf.sin, ["a", "b"]), {}, TypeError,
                                     r"`x` must hold real numbers"),
    "explore: family is a string": (gradlib.explore, ("softplus", X, {"beta": [1, 2]}), {}, TypeError,
                                    r"`family` must be callable"),
    "explore_panels: compute returns one curve": (gradlib.explore_panels, (lambda a: X, X, {"a": [1, 2]}),
                                                  {"titles": ("L", "c"), "xlabel": "t"}, ValueError,
                                                  r"`compute` must return two curves"),
    "explore_panels: one title": (gradlib.explore_panels, (lambda a: (X, X), X, {"a": [1, 2]}),
                                  {"titles": ("L",), "xlabel": "t"}, ValueError, r"`titles` must be two strings"),
    "PanelExplorer: curve of the wrong shape": (gradlib.PanelExplorer, (lambda a: (X, X[:2]), X, {"a": [1, 2]}),
                                                {"titles": ("L", "c"), "xlabel": "t"}, ValueError,
                                                r"returned a right curve of shape \[2\]"),
    "explore: no controls": (gradlib.explore, (smooth, X, {}), {}, ValueError, r"`controls` must be a non-empty mapping"),
    "explore: one number as options": (gradlib.explore, (smooth, X, {"beta": 3}), {}, ValueError,
                                       r"control 'beta' needs a non-empty sequence"),
    "explore: default not an option": (gradlib.explore, (smooth, X, {"beta": [1, 2]}), {"defaults": {"beta": 3}},
                                       ValueError, r"default 3 for control 'beta'"),
    "explore: labels is a string": (gradlib.explore, (smooth, X, {"beta": [1, 2]}), {"labels": "beta"}, TypeError,
                                    r"`labels` must be a mapping"),
    "Explorer: family is a number": (gradlib.Explorer, (5, X, {"beta": [1]}), {}, TypeError,
                                     r"`family` must be callable"),
    "Explorer: defaults is a list": (gradlib.Explorer, (smooth, X, {"beta": [1]}), {"defaults": [1]}, TypeError,
                                     r"`defaults` must be a mapping"),
    # -- graph mode
    "run_graph: build is a number": (gradlib.run_graph, (5,), {}, TypeError, r"`build` must be callable"),
    "run_graph: repeat=0": (gradlib.run_graph, (lambda: tf.constant(1.0),), {"repeat": 0}, ValueError,
                            r"`repeat` must be a positive integer"),
    "run_graph: repeat=2.5": (gradlib.run_graph, (lambda: tf.constant(1.0),), {"repeat": 2.5}, ValueError,
                              r"`repeat` must be a positive integer"),
    "run_graph: feed names no tensor": (gradlib.run_graph, (lambda: tf.constant(1.0),), {"feed": {"lam": 1.0}},
                                        ValueError, r"no tensor named 'lam'"),
    "run_graph: feed is a number": (gradlib.run_graph, (lambda: tf.constant(1.0),), {"feed": 0.5}, TypeError,
                                    r"`feed` must be a mapping"),
    "register_gradient: name is a number": (gradlib.register_gradient, (123,), {}, TypeError,
                                            r"`op_type_name` must be a string"),
    "register_gradient: empty name": (gradlib.register_gradient, ("",), {}, ValueError, r"`op_type_name` must not be empty"),
    "register_gradient: decorates a number": (register_gradient_on, (5,), {}, TypeError,
                                              r"the decorated gradient function` must be callable"),
    # -- notebook helpers
    "glue: value is a list": (gradlib.glue, ("gain", [0.25]), {}, TypeError, r"`value` must be a real number or a string"),
    "glue: name with a space": (gradlib.glue, ("the gain", 0.25), {}, ValueError, r"`name` must be letters"),
    "markdown_table: no headers": (gradlib.markdown_table, ([], []), {}, ValueError, r"`headers` must name at least one"),
    "markdown_table: headers is a string": (gradlib.markdown_table, ("ab", [[1, 2]]), {}, TypeError,
                                            r"`headers` must be a sequence of cells, not a string"),
    "markdown_table: headers=None": (gradlib.markdown_table, (None, []), {}, TypeError, r"`headers` must be a sequence"),
    "markdown_table: rows is a number": (gradlib.markdown_table, (["a"], 5), {}, TypeError, r"`rows` must be a sequence"),
    "markdown_table: row of the wrong length": (gradlib.markdown_table, (["a", "b"], [["x"]]), {}, ValueError,
                                                r"row 0 has 1 cells; expected 2"),
    "markdown_table: row is a string": (gradlib.markdown_table, (["a", "b"], ["xy"]), {}, TypeError,
                                        r"row 0 of `rows` must be a sequence of cells, not a string"),
    "progress: iterable is a number": (gradlib.progress, (5,), {}, TypeError, r"`iterable` must be iterable"),
    "progress: total=-1": (gradlib.progress, (range(3),), {"total": -1}, ValueError,
                           r"`total` must be a non-negative integer"),
    "progress: total=2.5": (gradlib.progress, (range(3),), {"total": 2.5}, ValueError,
                            r"`total` must be a non-negative integer"),
    "progress: desc is a number": (gradlib.progress, (range(3),), {"desc": 3}, TypeError, r"`desc` must be a string"),
    # -- data
    "two_moons: n_per_class=-1": (data.two_moons, (-1, 0.1), {}, ValueError, r"`n_per_class` must be a positive integer"),
    "two_moons: n_per_class=2.5": (data.two_moons, (2.5, 0.1), {}, ValueError,
                                   r"`n_per_class` must be a positive integer"),
    "two_moons: n_per_class=True": (data.two_moons, (True, 0.1), {}, ValueError,
                                    r"`n_per_class` must be a positive integer"),
    "two_moons: noise=-0.1": (data.two_moons, (10, -0.1), {}, ValueError, r"`noise` must be a non-negative number"),
    "two_moons: noise is a string": (data.two_moons, (10, "low"), {}, ValueError, r"`noise` must be a finite real number"),
    "two_moons: rotation_deg is a string": (data.two_moons, (10, 0.1), {"rotation_deg": "35"}, ValueError,
                                            r"`rotation_deg` must be a finite real number"),
    "two_moons: seed is a string": (data.two_moons, (10, 0.1), {"seed": "a"}, ValueError,
                                    r"`seed` must be a non-negative integer"),
    "two_moons: seed=-1": (data.two_moons, (10, 0.1), {"seed": -1}, ValueError, r"`seed` must be a non-negative integer"),
    # -- DANN
    "lambda_schedule: p=-0.5": (dann.lambda_schedule, (-0.5,), {}, ValueError, r"`p` must be training progress"),
    "lambda_schedule: p=1.5 in an array": (dann.lambda_schedule, ([0.0, 1.5],), {}, ValueError,
                                           r"`p` must be training progress.*got 1\.5"),
    "lambda_schedule: p is NaN": (dann.lambda_schedule, (np.nan,), {}, ValueError, r"`p` must be training progress"),
    "lambda_schedule: p is a string": (dann.lambda_schedule, ("half",), {}, ValueError, r"`p` must be training progress"),
    "lambda_schedule: gamma=0": (dann.lambda_schedule, (0.5,), {"gamma": 0}, ValueError,
                                 r"`gamma` must be a positive number"),
    "learning_rate_schedule: p=2": (dann.learning_rate_schedule, (2,), {}, ValueError, r"`p` must be training progress"),
    "learning_rate_schedule: mu0=0": (dann.learning_rate_schedule, (0.5,), {"mu0": 0}, ValueError,
                                      r"`mu0` must be a positive number"),
    "learning_rate_schedule: alpha=-1": (dann.learning_rate_schedule, (0.5,), {"alpha": -1}, ValueError,
                                         r"`alpha` must be a non-negative number"),
    "learning_rate_schedule: beta is a string": (dann.learning_rate_schedule, (0.5,), {"beta": "3/4"}, ValueError,
                                                 r"`beta` must be a finite real number"),
    "moons_experiment: unknown method": (dann.moons_experiment, ("adversarial",), {}, ValueError,
                                         r"`method` must be 'dann' or 'source_only'"),
    "moons_experiment: unknown option": (dann.moons_experiment, ("dann",), {"epochs": 3}, ValueError,
                                         r"unknown options \['epochs'\]"),
    "moons_experiment: n_per_class=-5": (dann.moons_experiment, ("dann",), {"n_per_class": -5}, ValueError,
                                         r"`n_per_class` must be a positive integer"),
    "moons_experiment: steps=0": (dann.moons_experiment, ("dann",), {"steps": 0}, ValueError,
                                  r"`steps` must be a positive integer"),
    "moons_experiment: steps=True": (dann.moons_experiment, ("source_only",), {"steps": True}, ValueError,
                                     r"`steps` must be a positive integer"),
    "moons_experiment: hidden=2.5": (dann.moons_experiment, ("dann",), {"hidden": 2.5}, ValueError,
                                     r"`hidden` must be a positive integer"),
    "moons_experiment: domain_hidden=-1": (dann.moons_experiment, ("dann",), {"domain_hidden": -1}, ValueError,
                                           r"`domain_hidden` must be a non-negative integer"),
    "moons_experiment: grid=2.5": (dann.moons_experiment, ("dann",), {"grid": 2.5}, ValueError,
                                   r"`grid` must be a non-negative integer"),
    "moons_experiment: lam is a string": (dann.moons_experiment, ("dann",), {"lam": "big"}, ValueError,
                                          r"`lam` must be a finite real number"),
    "moons_experiment: lam=inf": (dann.moons_experiment, ("dann",), {"lam": float("inf")}, ValueError,
                                  r"`lam` must be a finite real number"),
    "moons_experiment: noise=-0.1": (dann.moons_experiment, ("dann",), {"noise": -0.1}, ValueError,
                                     r"`noise` must be a non-negative number"),
    "moons_experiment: rotation_deg is a string": (dann.moons_experiment, ("dann",), {"rotation_deg": "35"},
                                                   ValueError, r"`rotation_deg` must be a finite real number"),
    "moons_experiment: learning_rate=-1": (dann.moons_experiment, ("dann",), {"learning_rate": -1.0}, ValueError,
                                           r"`learning_rate` must be a positive number"),
    "moons_experiment: learning_rate is a string": (dann.moons_experiment, ("dann",), {"learning_rate": "fast"},
                                                    ValueError, r"`learning_rate` must be a finite real number"),
    "moons_experiment: unknown optimizer": (dann.moons_experiment, ("dann",), {"optimizer": "rmsprop"}, ValueError,
                                            r"`optimizer` must be one of \('adam', 'gd', 'sgd'\)"),
    "choose_learning_rate: no rates": (dann.choose_learning_rate, ("dann", []), {}, ValueError,
                                       r"`rates` must hold at least one learning rate"),
    "choose_learning_rate: a negative rate": (dann.choose_learning_rate, ("dann", [0.1, -1.0]), {}, ValueError,
                                              r"`rates` must be a positive number"),
    "choose_learning_rate: learning_rate too": (dann.choose_learning_rate, ("dann", [0.1]), {"learning_rate": 0.1},
                                                ValueError, r"`learning_rate` is what this function chooses"),
    "moons_experiments: seeds repeat": (dann.moons_experiments, ("dann", [1, 1]), {"steps": 1}, ValueError,
                                        r"`seeds` must not repeat a seed"),
    "moons_experiments: seeds is a number": (dann.moons_experiments, ("dann", 3), {"steps": 1}, ValueError,
                                             r"`seeds` must be a sequence"),
    "proxy_a_distance: a 1-D sample": (dann.proxy_a_distance, (np.zeros(3), np.zeros((3, 2)), np.zeros((3, 2)),
                                                               np.zeros((3, 2))), {}, ValueError, r"`train_source` must be"),
    "proxy_a_distance: l2 negative": (dann.proxy_a_distance, tuple(np.eye(2) for _ in range(4)), {"l2": -1.0},
                                      ValueError, r"`l2` must be"),
    "moons_experiment: seed is a string": (dann.moons_experiment, ("dann", "a"), {}, ValueError,
                                           r"`seed` must be a non-negative integer"),
    # -- quantized digits
    "quantize_weights: int32 w": (experiments.quantize_weights, (INTS, "binary"), {}, TypeError, r"`w` has dtype int32"),
    "quantize_weights: int32 w, float kind": (experiments.quantize_weights, (INTS, "float"), {}, TypeError,
                                              r"`w` has dtype int32"),
    "quantize_weights: unknown kind": (experiments.quantize_weights, (X, "ternary"), {}, ValueError,
                                       r"`kind` must be one of"),
    "quantize_weights: bits=0": (experiments.quantize_weights, (X, "kbit", 0), {}, ValueError,
                                 r"`bits` must be a positive integer"),
    "quantize_weights: ste='no'": (experiments.quantize_weights, (X, "binary"), {"ste": "no"}, TypeError,
                                   r"`ste` must be True or False"),
    "quantize_activations: int32 h": (experiments.quantize_activations, (INTS, "float"), {}, TypeError,
                                      r"`h` has dtype int32"),
    "quantize_activations: unknown kind": (experiments.quantize_activations, (X, "sigmoid"), {}, ValueError,
                                           r"`kind` must be one of"),
    "quantize_activations: bits=2.5": (experiments.quantize_activations, (X, "kbit", 2.5), {}, ValueError,
                                       r"`bits` must be a positive integer"),
    "quantize_activations: ste=None": (experiments.quantize_activations, (X, "binary"), {"ste": None}, TypeError,
                                       r"`ste` must be True or False"),
    "load_digits_split: test_size=-1": (experiments.load_digits_split, (-1,), {}, ValueError,
                                        r"`test_size` must be an integer from 1 to 1796"),
    "load_digits_split: test_size=1797": (experiments.load_digits_split, (1797,), {}, ValueError,
                                          r"`test_size` must be an integer from 1 to 1796"),
    "load_digits_split: split_seed is a string": (experiments.load_digits_split, (), {"split_seed": "a"}, ValueError,
                                                  r"`split_seed` must be a non-negative integer"),
    "digits_experiment: unknown weights": (experiments.digits_experiment, ("ternary",), {}, ValueError,
                                           r"`weights` must be one of"),
    "digits_experiment: unknown activations": (experiments.digits_experiment, ("float", "sigmoid"), {}, ValueError,
                                               r"`activations` must be one of"),
    "digits_experiment: bits=0": (experiments.digits_experiment, (), {"bits": 0}, ValueError,
                                  r"`bits` must be a positive integer"),
    "digits_experiment: epochs=0": (experiments.digits_experiment, (), {"epochs": 0}, ValueError,
                                    r"`epochs` must be a positive integer"),
    "digits_experiment: hidden=True": (experiments.digits_experiment, (), {"hidden": True}, ValueError,
                                       r"`hidden` must be a positive integer"),
    "digits_experiment: steps_per_epoch=-1": (experiments.digits_experiment, (), {"steps_per_epoch": -1}, ValueError,
                                              r"`steps_per_epoch` must be a positive integer"),
    "digits_experiment: learning_rate=0": (experiments.digits_experiment, (), {"learning_rate": 0.0}, ValueError,
                                           r"`learning_rate` must be a positive number"),
    "digits_experiment: ste='False'": (experiments.digits_experiment, (), {"ste": "False"}, TypeError,
                                       r"`ste` must be True or False"),
    "digits_experiment: seed=-1": (experiments.digits_experiment, (), {"seed": -1}, ValueError,
                                   r"`seed` must be a non-negative integer"),
    "digits_experiment: progress='yes'": (experiments.digits_experiment, (), {"progress": "yes"}, TypeError,
                                          r"`progress` must be True or False"),
    # -- the benchmark report
    "benchmarks.latest: path=3": (gradlib.benchmarks.latest, (3,), {}, TypeError, r"`path` must be a file path"),
    "benchmarks.report: results is a string": (gradlib.benchmarks.report, ("report",), {}, TypeError,
                                               r"`results` must be a report dict"),
    "benchmarks.report: lang='fr'": (gradlib.benchmarks.report, ({},), {"lang": "fr"}, ValueError,
                                     r"`lang` must be 'en' or 'zh'"),
    # -- higher order
    "hvp: f not callable": (gradlib.hvp, (None, X, X), {}, TypeError, r"`f` must be callable"),
    "hvp: int32 x": (gradlib.hvp, (tf.reduce_sum, INTS, INTS), {}, TypeError, r"`x` has dtype int32"),
    "hvp: v of another shape": (gradlib.hvp, (tf.reduce_sum, X, X[:2]), {}, ValueError, r"`v` has shape \[2\]"),
    "hvp: f not scalar": (gradlib.hvp, (tf.sin, X, X), {}, ValueError, r"must return a scalar"),
    "hvp: unknown mode": (gradlib.hvp, (tf.reduce_sum, X, X), {"mode": "forward"}, ValueError, r"`mode` must be one of"),
    "fixed_point: f not callable": (gradlib.fixed_point, (None, X), {}, TypeError, r"`f` must be callable"),
    "fixed_point: int32 z0": (gradlib.fixed_point, (tf.cos, INTS), {}, TypeError, r"`z0` has dtype int32"),
    "fixed_point: f changes the shape": (gradlib.fixed_point, (tf.reduce_sum, X), {}, ValueError,
                                         r"`f` returned shape \[\] for a z of shape \[4\]"),
    "fixed_point: no convergence": (gradlib.fixed_point, (lambda z: 1.0 - z, X), {"max_iter": 10},
                                    gradlib.FixedPointError, r"did not converge: after 10 of max_iter=10"),
    # -- diagnosis
    "diagnose: fn not callable": (gradlib.diagnose, (None, X), {}, TypeError, r"`fn` must be callable"),
    "diagnose: no inputs": (gradlib.diagnose, (tf.reduce_sum,), {}, ValueError, r"needs at least one input"),
    "diagnose: int32 input": (gradlib.diagnose, (tf.reduce_sum, X, INTS), {}, TypeError, r"input 1 has dtype int32"),
    "diagnose: Python int input": (gradlib.diagnose, (tf.square, 3), {}, TypeError, r"input 0 has dtype int32"),
    "diagnose: bool input": (gradlib.diagnose, (tf.reduce_sum, tf.constant([True])), {}, TypeError,
                             r"input 0 has dtype bool"),
    "diagnose: string input": (gradlib.diagnose, (tf.reduce_sum, "x"), {}, TypeError, r"input 0 has dtype string"),
    "diagnose: arguments swapped": (gradlib.diagnose, (X, tf.sin), {}, TypeError, r"`fn` must be callable"),
    "diagnose: fn returns an integer": (gradlib.diagnose, (lambda x: tf.cast(x, tf.int32), X), {}, TypeError,
                                       r"fn returned a int32 tensor"),
    "diagnose: fn returns a tuple": (gradlib.diagnose, (lambda x: (x, x), X), {}, TypeError,
                                     r"fn must return one tensor"),
    "diagnose: unknown lang": (gradlib.diagnose, (tf.sin, X), {"lang": "fr"}, ValueError, r"`lang` must be one of"),
    "diagnose: ignore is a string": (gradlib.diagnose, (tf.sin, X), {"ignore": "StopGradient"}, TypeError,
                                     r"`ignore` must be a sequence of op types"),
    # -- exercise checks
    "exercises.check: unknown exercise id": (exercises.check, ("ch99-ex1", abs), {}, ValueError,
                                             r"unknown exercise id 'ch99-ex1'"),
    "exercises.check: unknown lang": (exercises.check, ("ch01-ex2", abs), {"lang": "fr"}, ValueError,
                                      r"`lang` must be one of"),
    "exercises.answer_name: unknown exercise id": (exercises.answer_name, ("ch99-ex1",), {}, ValueError,
                                                   r"unknown exercise id 'ch99-ex1'"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_raises_an_error_naming_the_argument(case):
    fn, args, kwargs, error, pattern = CASES[case]
    with pytest.raises(error) as info:
        fn(*args, **kwargs)
    message = str(info.value)
    assert re.search(pattern, message), f"{case}: expected /{pattern}/ in the message, got: {message}"


# Public names that take nothing to get wrong, or are results/exceptions (see the module docstring).
NOT_IN_TABLE = {"captured_tf_warnings", "UntestedTensorFlowWarning", "SIGN_SURROGATES", "QUANTIZERS", "layers.QUANTIZERS", "benchmarks.LATEST", "GradientCheck", "GradientError", "FixedPointError", "Diagnosis", "Finding",
                "dann.DEFAULTS", "dann.PROBES", "dann.SELECTION_SEEDS", "experiments.KINDS", "exercises.Feedback", "exercises.exercise_ids"}


def public_names():
    """Every public name of gradlib and of its modules (benchmarks, data, dann, experiments, exercises), as name -> object."""
    names = {}
    for name in gradlib.__all__:
        value = getattr(gradlib, name)
        if inspect.ismodule(value):
            names.update({f"{name}.{inner}": getattr(value, inner) for inner in value.__all__})
        else:
            names[name] = value
    return names


def test_the_table_covers_every_public_function():
    public = public_names()
    tested = {id(getattr(fn, "covers", fn)) for fn, *_ in CASES.values()}
    missing = sorted(name for name, value in public.items() if name not in NOT_IN_TABLE and id(value) not in tested)
    assert not missing, f"no bad-input case for {missing}"
    assert NOT_IN_TABLE <= set(public), f"stale names in NOT_IN_TABLE: {sorted(NOT_IN_TABLE - set(public))}"


# -- classes of bad values, per kind of numeric parameter ---------------------------------------

NAN = float("nan")
INF = float("inf")
NON_FINITE = [NAN, INF, -INF, np.float32("nan"), np.float64(-INF)]
BOOLS = [True, False, np.True_]


class _Opaque:
    """A value of no numeric kind, with a stable repr (test ids must not hold addresses:
    pytest-xdist's workers must collect the same ids)."""

    def __repr__(self):
        return "<opaque object>"


WRONG_TYPE = ["1", None, [1.0], 1 + 2j, _Opaque()]
NON_POSITIVE = [0, 0.0, -1, -0.5, -1e-300, -INF]
NEGATIVE = [-1, -0.5, -1e-300]
NOT_INTEGRAL = [2.5, 2.0, np.float64(3.0), NAN, INF]

# kind -> the class of values it refuses (members that are of the wrong type may raise TypeError)
BAD_VALUES = {
    "real": NON_FINITE + BOOLS + WRONG_TYPE,
    "positive": NON_FINITE + BOOLS + WRONG_TYPE + NON_POSITIVE,
    "non_negative": NON_FINITE + BOOLS + WRONG_TYPE + NEGATIVE,
    "positive_int": NOT_INTEGRAL + BOOLS + WRONG_TYPE + [0, -1, np.int64(0)],
    "non_negative_int": NOT_INTEGRAL + BOOLS + WRONG_TYPE + [-1, np.int64(-3)],
}
TYPE_CLASS = BOOLS + WRONG_TYPE  # for these, a TypeError names the argument as well as a ValueError


def _moons(name):
    return lambda v: dann.moons_experiment("dann", **{name: v})


# (public function, parameter) -> (kind, call with the value, None is a valid value)
KINDS = {
    ("ste_sign", "clip"): ("positive", lambda v: gradlib.ste_sign(X, clip=v), True),
    ("sign_with_surrogate", "clip"): ("positive", lambda v: gradlib.sign_with_surrogate(X, "clipped", clip=v), False),
    ("sign_with_surrogate", "beta"): ("positive", lambda v: gradlib.sign_with_surrogate(X, "swish_sign", beta=v), False),
    ("dorefa_quantize", "bits"): ("positive_int", lambda v: gradlib.dorefa_quantize(X, v), False),
    ("dorefa_weights", "bits"): ("positive_int", lambda v: gradlib.dorefa_weights(X, v), False),
    ("QuantizedDense", "units"): ("positive_int", lambda v: gradlib.QuantizedDense(v), False),
    ("ReversalSchedule", "total_steps"): ("positive_int", lambda v: gradlib.ReversalSchedule(gradlib.GradientReversal(), v),
                                          False),
    ("fixed_point", "tol"): ("positive", lambda v: gradlib.fixed_point(tf.cos, X, tol=v), True),
    ("fixed_point", "max_iter"): ("positive_int", lambda v: gradlib.fixed_point(tf.cos, X, max_iter=v), False),
    ("fixed_point", "atol"): ("non_negative", lambda v: gradlib.fixed_point(tf.cos, X, atol=v), False),
    ("gradient_reversal", "lam"): ("real", lambda v: gradlib.gradient_reversal(X, v), False),
    ("GradientReversal", "lam"): ("real", lambda v: gradlib.GradientReversal(v), False),
    ("check_gradient", "atol"): ("non_negative", lambda v: gradlib.check_gradient(tf.sin, [1.0], atol=v), False),
    ("check_gradient", "rtol"): ("non_negative", lambda v: gradlib.check_gradient(tf.sin, [1.0], rtol=v), False),
    ("check_gradient", "delta"): ("positive", lambda v: gradlib.check_gradient(tf.sin, [1.0], delta=v), True),
    ("run_graph", "repeat"): ("positive_int", lambda v: gradlib.run_graph(lambda: tf.constant(1.0), repeat=v), True),
    ("progress", "total"): ("non_negative_int", lambda v: gradlib.progress(range(3), total=v), True),
    ("data.two_moons", "n_per_class"): ("positive_int", lambda v: data.two_moons(v, 0.1), False),
    ("data.two_moons", "noise"): ("non_negative", lambda v: data.two_moons(10, v), False),
    ("data.two_moons", "rotation_deg"): ("real", lambda v: data.two_moons(10, 0.1, v), False),
    ("data.two_moons", "seed"): ("non_negative_int", lambda v: data.two_moons(10, 0.1, seed=v), False),
    ("dann.lambda_schedule", "gamma"): ("positive", lambda v: dann.lambda_schedule(0.5, gamma=v), False),
    ("dann.learning_rate_schedule", "mu0"): ("positive", lambda v: dann.learning_rate_schedule(0.5, mu0=v), False),
    ("dann.learning_rate_schedule", "alpha"): ("non_negative", lambda v: dann.learning_rate_schedule(0.5, alpha=v), False),
    ("dann.learning_rate_schedule", "beta"): ("non_negative", lambda v: dann.learning_rate_schedule(0.5, beta=v), False),
    ("dann.proxy_a_distance", "l2"): ("non_negative", lambda v: dann.proxy_a_distance(*(np.eye(2),) * 4, l2=v), False),
    ("dann.proxy_a_distance", "k"): ("positive_int", lambda v: dann.proxy_a_distance(*(np.eye(2),) * 4, k=v), False),
    ("dann.moons_experiment", "seed"): ("non_negative_int", lambda v: dann.moons_experiment("dann", v), False),
    **{("dann.moons_experiment", name): (kind, _moons(name), False) for name, kind in [
        ("n_per_class", "positive_int"), ("hidden", "positive_int"), ("steps", "positive_int"),
        ("test_per_class", "positive_int"), ("domain_hidden", "non_negative_int"), ("grid", "non_negative_int"),
        ("noise", "non_negative"), ("lam", "real"), ("rotation_deg", "real"), ("learning_rate", "positive")]},
    ("experiments.quantize_weights", "bits"): ("positive_int", lambda v: experiments.quantize_weights(X, "kbit", v),
                                               False),
    ("experiments.quantize_activations", "bits"): ("positive_int",
                                                   lambda v: experiments.quantize_activations(X, "kbit", v), False),
    ("experiments.load_digits_split", "test_size"): ("positive_int", lambda v: experiments.load_digits_split(v), False),
    ("experiments.load_digits_split", "split_seed"): ("non_negative_int",
                                                      lambda v: experiments.load_digits_split(split_seed=v), False),
    **{("experiments.digits_experiment", name): (kind, (lambda n: lambda v: experiments.digits_experiment(**{n: v}))(name),
                                                 False)
       for name, kind in [("bits", "positive_int"), ("epochs", "positive_int"), ("hidden", "positive_int"),
                          ("steps_per_epoch", "positive_int"), ("learning_rate", "positive"),
                          ("seed", "non_negative_int")]},
}

# Numeric parameters that are not in KINDS, with the reason.
NOT_CLASSED = {
    ("exercises.check", "timeout"): "the classroom's own validation (gradlib.classroom)",
}
# Numeric parameters without a numeric default (the completeness test finds the others itself).
NUMERIC_WITHOUT_DEFAULT = {("ste_sign", "clip"), ("dorefa_quantize", "bits"), ("QuantizedDense", "units"),
                           ("ReversalSchedule", "total_steps"), ("check_gradient", "delta"),
                           ("run_graph", "repeat"), ("progress", "total"), ("data.two_moons", "n_per_class"),
                           ("fixed_point", "tol"),
                           ("data.two_moons", "noise")}


def _class_cases():
    for (function, parameter), (kind, _, none_ok) in KINDS.items():
        for index, value in enumerate(BAD_VALUES[kind]):
            if value is None and none_ok:
                continue
            yield pytest.param(function, parameter, index, id=f"{function}:{parameter}={value!r}")


@pytest.mark.parametrize("function, parameter, index", list(_class_cases()))
def test_every_member_of_the_bad_class_is_refused(function, parameter, index):
    kind, call, _ = KINDS[function, parameter]
    value = BAD_VALUES[kind][index]
    wrong_type = any(value is member for member in TYPE_CLASS)
    with pytest.raises((TypeError, ValueError) if wrong_type else ValueError) as info:
        result = call(value)
        if inspect.isgenerator(result):  # progress validates at the call; make sure nothing is deferred
            list(result)
    assert f"`{parameter}`" in str(info.value), f"{function}({parameter}={value!r}): {info.value}"


def test_every_numeric_parameter_has_a_kind():
    numeric = set(NUMERIC_WITHOUT_DEFAULT) | {("dann.moons_experiment", name) for name, default in dann.DEFAULTS.items()
                                              if isinstance(default, (int, float)) and not isinstance(default, bool)}
    for name, value in public_names().items():
        try:
            parameters = inspect.signature(value).parameters.values()
        except (TypeError, ValueError):
            continue
        numeric |= {(name, p.name) for p in parameters
                    if isinstance(p.default, (int, float)) and not isinstance(p.default, bool)}
    missing = sorted(numeric - set(KINDS) - set(NOT_CLASSED))
    assert not missing, f"numeric parameters with no kind in KINDS: {missing}"
    assert set(KINDS) <= numeric, f"stale entries in KINDS: {sorted(set(KINDS) - numeric)}"
