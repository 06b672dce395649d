"""gradlib.diagnose against an independent reference, and its report.

The reference is the tape itself: ``tf.GradientTape().gradient`` of
``tf.reduce_sum(fn(*inputs))``, classified with NumPy as None, all zero, NaN,
inf or ok.  For every function in ``CASES`` (elementwise ops and their kinks,
overflow and saturation, IndexedSlices, multi-output ops, custom gradients,
stop_gradient, casts, control flow, variables) and every float dtype, at
inputs that include 0, ±1e30, subnormals, inf and NaN, ``report.inputs``
must say what the tape says, and the findings must obey the laws of the
docstring (a None, NaN or inf gradient is explained by a finding; the worst
problems first).  All points of a case go into one call, one input per
point (``_stacked``), which also puts the input indices to the test: each
input's gradient depends only on its own point, and a test checks that this
gives the same findings as one call per point.  The required findings
(Round, Log, Cast, ...) and each rule of the docstring are then tested
exactly, and the table in both languages.  Runtime: about 100 ms per point
(diagnose builds a graph op by op), hence inf and NaN inputs in float64 only.
"""

import dataclasses
import inspect
import logging
import re
from typing import Callable

import keras
import numpy as np
import pytest
import tensorflow as tf

import gradlib
from gradlib import Diagnosis, Finding, debugging, diagnose

PROBLEMS = ("nan", "inf", "none", "zero")  # the docstring's order: the worst first
STATES = ("ok",) + PROBLEMS
REASONS = ("none", "no_gradient", "integer", "stop", "zero", "nan", "inf", "zero_nan", "zero_inf", "dead_end",
           "unused", "untraced", "sum", "sum_input", "forward", "data", "custom", "total")
NO_OP = ("unused", "untraced", "sum_input", "total")  # the reasons that blame no op
FLOATS = (tf.float16, tf.float32, tf.float64)
VARIABLES = (tf.Variable, keras.Variable)
TINY, NEG_TINY = "subnormal", "-subnormal"  # placeholders in the points: the dtype's smallest subnormal, ±
INF, NAN = float("inf"), float("nan")


# -- the reference ------------------------------------------------------------------------------

def classify(grad) -> str:
    """A gradient as the tape returns it, classified with NumPy in float64 (IndexedSlices made dense)."""
    if grad is None:
        return "none"
    if isinstance(grad, tf.IndexedSlices):
        grad = tf.convert_to_tensor(grad)
    values = np.asarray(grad)
    if values.dtype.kind == "c":
        values = np.abs(values)
    values = values.astype(np.float64)
    if np.isnan(values).any():
        return "nan"
    if np.isinf(values).any():
        return "inf"
    if (values == 0).all():
        return "zero"
    return "ok"


def reference_states(fn, *inputs, graph: bool = False) -> list:
    """``tape.gradient`` of ``reduce_sum(fn(*inputs))`` for each input, classified.

    ``graph=True`` runs the tape inside a ``tf.function``, where a ``None``
    inside a ``tf.cond``/``tf.while_loop`` branch arrives as zeros.  An op
    without any gradient makes the tape raise ``LookupError``: None for all.
    """
    inputs = [v if isinstance(v, VARIABLES) else tf.convert_to_tensor(v) for v in inputs]

    def gradients():
        with tf.GradientTape() as tape:
            for v in inputs:
                if not isinstance(v, VARIABLES):
                    tape.watch(v)
            loss = tf.reduce_sum(fn(*inputs))
        return tape.gradient(loss, inputs)

    try:
        grads = tf.function(gradients, autograph=False)() if graph else gradients()
    except LookupError:
        return ["none"] * len(inputs)
    return [classify(g) for g in grads]


def check_laws(report: Diagnosis, inputs: list) -> None:
    """What must hold for any report, whatever the function."""
    assert isinstance(report, Diagnosis)
    assert report.ok is (not report.findings) and bool(report) is report.ok
    assert [i.index for i in report.inputs] == list(range(len(inputs)))
    for summary, value in zip(report.inputs, inputs):
        assert summary.dtype == tf.as_dtype(value.dtype).name and summary.shape == tuple(value.shape)
        assert summary.state in STATES
    keys = [(f.input, PROBLEMS.index(f.problem)) for f in report.findings]
    assert keys == sorted(keys), "findings must be sorted by input, then the worst problem first"
    assert len({(f.input, f.op_name, f.problem) for f in report.findings}) == len(report.findings)
    for f in report.findings:
        assert isinstance(f, Finding) and 0 <= f.input < len(inputs)
        assert f.problem in PROBLEMS and f.reason in REASONS
        assert (f.op_type is None) == (f.op_name is None) == (f.reason in NO_OP)
        assert (f.terms is not None) == (f.reason in ("sum", "sum_input"))
        assert (f.dtype is not None) == (f.reason == "integer")
        if f.reason in ("zero", "nan", "inf"):
            assert f.problem == f.reason
        if f.reason.startswith("zero_"):
            assert f.problem == f.reason[5:]
        if f.reason in ("none", "no_gradient", "integer", "stop", "dead_end", "unused", "untraced"):
            assert f.problem == "none"
        if f.reason in ("forward", "data"):
            assert f.problem in ("nan", "inf")
    if report.ok:  # the contract: ok is "no findings", and then every input gets a healthy gradient
        assert all(summary.state == "ok" for summary in report.inputs), report.inputs
    for summary in report.inputs:
        problems = {f.problem for f in report.findings if f.input == summary.index}
        if summary.state != "ok":
            assert problems, f"input {summary.index}: a {summary.state} gradient without a finding"
        if summary.state == "nan":
            assert problems & {"nan", "inf"}, f"input {summary.index}: NaN, but the findings say {problems}"
        if summary.state == "inf":
            assert problems & {"nan", "inf"}, f"input {summary.index}: inf, but the findings say {problems}"


def diagnose_and_compare(fn, *inputs, graph: bool = False, **kwargs) -> Diagnosis:
    report = diagnose(fn, *inputs, **kwargs)
    expected = reference_states(fn, *inputs, graph=graph)
    assert [i.state for i in report.inputs] == expected
    check_laws(report, [v if isinstance(v, VARIABLES) else tf.convert_to_tensor(v) for v in inputs])
    return report


def findings(report: Diagnosis) -> list:
    """The findings as (input, op_type, problem, reason) tuples."""
    return [(f.input, f.op_type, f.problem, f.reason) for f in report.findings]


# -- the table of functions ---------------------------------------------------------------------

@tf.custom_gradient
def clipped_identity(x):
    return tf.identity(x), lambda dy: tf.clip_by_value(dy, -0.1, 0.1)


@tf.custom_gradient
def zero_gradient(x):
    return 2 * x, lambda dy: tf.zeros_like(dy)


@tf.custom_gradient
def safe_log(x):
    return tf.math.log(tf.maximum(x, 1e-3)), lambda dy: dy / tf.maximum(x, tf.cast(1e-3, x.dtype))


@dataclasses.dataclass(frozen=True)
class Case:
    fn: Callable
    points: tuple  # each point is one tuple of fn's arguments (nested lists of floats, TINY allowed)
    dtypes: tuple = FLOATS
    graph: bool = False  # compare with the tape inside a tf.function (see reference_states)
    variables: bool = False  # pass the points as tf.Variables
    expect: tuple = ()  # (point, argument, op_type, problem) that must be found, in every dtype
    clean: tuple = ()  # points whose inputs must have no finding at all


def _unary(*extra):
    return tuple((v,) for v in ([-1.5, 0.5, 2.0], [0.0], [-1e30], [1e30], [TINY], [INF], [NAN], *extra))


UNARY = _unary()  # point 0: ordinary values; 1: 0; 2: -1e30; 3: 1e30; 4: a subnormal; 5: inf; 6: NaN
VECTORS = tuple((v,) for v in ([-1.5, 0.5, 2.0], [0.0, 0.0, 0.0], [1e30, -1e30, 1.0], [TINY, 0.0, NEG_TINY],
                               [INF, -INF, 2.0], [NAN, 1.0, 2.0], [-1.0, -2.0, -3.0]))
A = [[1.0, -2.0, 3.0], [0.5, 4.0, -1.0]]
B = [[1.0, 0.0], [0.0, 1.0], [1.0, -1.0]]
MATRICES = ((A, B), (A, [[0.0] * 2] * 3), ([[0.0] * 3] * 2, [[0.0] * 2] * 3), ([[1e30] * 3, [-1.0] * 3], B),
            ([[TINY] * 3] * 2, B), ([[NAN, 1.0, 1.0], [1.0, 1.0, 1.0]], B))


def _cast_like(value, x):
    return tf.cast(value, x.dtype)


F64, F32_64, ALL = (tf.float64,), (tf.float32, tf.float64), FLOATS

# Inputs with inf or NaN behave alike in every dtype: they are tried in float64 only, while 0, ±1e30 (inf in
# float16) and the subnormals are tried in every dtype a case lists.
CASES = {
    # elementwise ops with a kink at 0 or at the clip points
    "relu": Case(tf.nn.relu, UNARY, F32_64, expect=((1, 0, "Relu", "zero"), (2, 0, "Relu", "zero")), clean=(0,)),
    "leaky_relu": Case(lambda x: tf.nn.leaky_relu(x, 0.2), UNARY, F64, clean=(0, 1, 2)),
    "abs": Case(tf.abs, UNARY, F64, expect=((1, 0, "Abs", "zero"),), clean=(0,)),
    "where_leaky": Case(lambda x: tf.where(x > 0, x, 0.1 * x), UNARY, F64, clean=(0, 1, 2, 3)),
    "maximum": Case(lambda x: tf.maximum(x, 0.0), UNARY, F64, expect=((2, 0, "Maximum", "zero"),)),
    "minimum": Case(lambda x: tf.minimum(x, 1.0), UNARY, F64, expect=((3, 0, "Minimum", "zero"),)),
    "clip_by_value": Case(lambda x: tf.clip_by_value(x, -1.0, 1.0), _unary([1.0], [-1.0], [0.75, -0.75]), F64),
    # 0 and overflow
    "sqrt_abs": Case(lambda x: tf.sqrt(tf.abs(x)), UNARY, F32_64, expect=((1, 0, "Sqrt", "inf"),)),
    "log_abs": Case(lambda x: tf.math.log(tf.abs(x)), UNARY, F64, expect=((1, 0, "Log", "inf"),)),
    "where_log": Case(lambda x: tf.where(x > 0, tf.math.log(x), 0.0), UNARY, ALL, expect=((1, 0, "Log", "nan"),)),
    "double_where": Case(lambda x: tf.where(x > 0, tf.math.log(tf.where(x > 0, x, 1.0)), 0.0), UNARY, F64,
                         clean=(0,)),  # at 0 the tf.where picks the constant: a true zero
    # (in float16 1e30 is itself inf: the input is then to blame, see test_dead_relu_..._and_exp_overflow)
    "exp": Case(tf.exp, UNARY, F32_64, expect=((3, 0, "Exp", "inf"),), clean=(0, 1)),
    "sigmoid": Case(tf.sigmoid, UNARY, ALL, expect=((3, 0, "Sigmoid", "zero"),), clean=(0, 1)),
    "tanh": Case(tf.tanh, UNARY, F32_64, expect=((3, 0, "Tanh", "zero"),), clean=(0, 1)),
    "softplus": Case(tf.nn.softplus, _unary([100.0], [-100.0], [100.0, -100.0]), ALL),
    "square": Case(tf.square, UNARY, F64, expect=((1, 0, "Square", "zero"),), clean=(0,)),
    "sin": Case(tf.sin, UNARY, F64, clean=(0, 1)),
    "sign": Case(tf.sign, UNARY[:2], F64, expect=((0, 0, "Sign", "zero"),)),
    # None: not differentiable, stopped, cast to integers or booleans
    "round": Case(lambda x: tf.round(x) * 3, UNARY, F64, expect=((0, 0, "Round", "none"), (1, 0, "Round", "none"))),
    "x_plus_round": Case(lambda x: x + tf.round(x), UNARY, F64, expect=((0, 0, "Round", "none"),)),
    "straight_through": Case(lambda x: x + tf.stop_gradient(tf.round(x) - x), UNARY, F64,
                             clean=(0, 1, 2, 3, 4, 5, 6)),
    "stop_gradient": Case(lambda x: tf.stop_gradient(x) * 2, UNARY[:3], F64,
                          expect=((0, 0, "StopGradient", "none"),)),
    "cast_int": Case(lambda x: _cast_like(tf.cast(x, tf.int32), x), UNARY[:3], F64, expect=((0, 0, "Cast", "none"),)),
    "step": Case(lambda x: _cast_like(x > 0, x), UNARY[:3], F64, expect=((0, 0, "Greater", "none"),)),
    "relu_by_mask": Case(lambda x: x * _cast_like(x > 0, x), UNARY[:3], F64, clean=(0,)),
    "argmax": Case(lambda x: tf.one_hot(tf.argmax(x), 3, dtype=x.dtype) * x, VECTORS[:2], F64,
                   expect=((0, 0, "ArgMax", "none"),)),
    # custom gradients
    "custom_clip": Case(lambda x: clipped_identity(x) * 5, UNARY, F64, clean=(0, 1, 2, 3, 4)),
    "custom_zero": Case(zero_gradient, UNARY[:2], F64, expect=((0, 0, "IdentityN", "zero"),)),
    "custom_safe_log": Case(safe_log, UNARY[:2] + (([1e-30],),), F64, clean=(0, 1, 2)),
    # vectors: norms, reductions, IndexedSlices, multi-output ops
    "norm": Case(tf.norm, VECTORS, ALL, expect=((1, 0, "Sqrt", "inf"),), clean=(0,)),
    "gather": Case(lambda x: tf.gather(x, [0, 0, 2]), VECTORS, (tf.float16, tf.float64), clean=(0, 1, 3)),
    "gather_relu": Case(lambda x: tf.nn.relu(tf.gather(x, [2, 1])), VECTORS, F64, expect=((6, 0, "Relu", "zero"),)),
    "concat_split": Case(lambda x: tf.reduce_prod(tf.stack(tf.split(tf.concat([x, 2 * x], 0), 2)), 0), VECTORS, F64),
    "reduce_max": Case(tf.reduce_max, VECTORS + (([2.0, 2.0, 1.0],),), F64, clean=(0, 1)),
    "reduce_mean": Case(tf.reduce_mean, VECTORS, F64, clean=(0, 1, 2, 3, 4, 5, 6)),
    "reduce_prod": Case(tf.reduce_prod, VECTORS, F64),
    "logsumexp": Case(tf.reduce_logsumexp, VECTORS, F32_64, clean=(0, 1)),
    "softmax": Case(lambda x: tf.nn.softmax(x)[0], VECTORS, F64),
    # matrices
    "matmul": Case(lambda a, b: a @ b, MATRICES, F32_64, expect=((1, 0, "MatMul", "zero"),), clean=(0,)),
    "dense_relu": Case(lambda a, b: tf.nn.relu(a @ b) ** 2, MATRICES, F64, clean=(0,)),
    # control flow (cond_round: the tape inside a tf.function, where the branch not taken sends zeros)
    "cond": Case(lambda x: tf.cond(tf.reduce_sum(x) > 0, lambda: tf.sqrt(tf.abs(x)), lambda: x * x), VECTORS,
                 (tf.float32,)),
    "cond_round": Case(lambda x: tf.cond(tf.reduce_sum(x) > 0, lambda: tf.round(x), lambda: 2 * x), VECTORS[:2],
                       (tf.float32,), graph=True, expect=((0, 0, "StatelessIf", "zero"),)),
    "while_loop": Case(lambda x: tf.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, tf.tanh(y) * 2), (0, x))[1],
                       VECTORS, (tf.float32,), clean=(0,)),
    "map_fn": Case(lambda x: tf.map_fn(tf.nn.relu, x), VECTORS, (tf.float32,), clean=(0,)),
    # variables: ReadVariableOp, ResourceGather (IndexedSlices)
    "variable": Case(lambda v: tf.nn.relu(v) * v, VECTORS, (tf.float32,), variables=True, clean=(0,)),
    "variable_gather": Case(lambda v: tf.gather(v, [2, 2]) ** 2, VECTORS, (tf.float32,), variables=True, clean=(0,)),
}


def _array(point_value, tiny: float) -> np.ndarray:
    array = np.array(point_value, dtype=object)
    return np.where(array == TINY, tiny, np.where(array == NEG_TINY, -tiny, array)).astype(np.float64)


def _value(point_value, dtype) -> tf.Tensor:
    tiny = float(np.finfo(dtype.as_numpy_dtype).smallest_subnormal)
    with np.errstate(over="ignore"):  # ±1e30 is ±inf in float16, on purpose
        return tf.constant(_array(point_value, tiny).astype(dtype.as_numpy_dtype))


def _kept(case: Case, dtype) -> list:
    """The indices of the points tried in ``dtype``: those with inf or NaN in float64 only."""
    return [p for p, point in enumerate(case.points)
            if dtype == tf.float64 or all(np.isfinite(_array(v, 0.0)).all() for v in point)]


def _stacked(fn, arity):
    """One function of all points: input ``arity * p + a`` is argument ``a`` of point ``p``."""
    def stacked(*inputs):
        return tf.add_n([tf.reduce_sum(fn(*inputs[i:i + arity])) for i in range(0, len(inputs), arity)])
    return stacked


def _inputs(case: Case, dtype, kept) -> list:
    values = [_value(v, dtype) for p in kept for v in case.points[p]]
    return [tf.Variable(v) for v in values] if case.variables else values


PARAMS = [pytest.param(name, dtype, id=f"{name}-{dtype.name}") for name, case in CASES.items()
          for dtype in case.dtypes]


def test_the_table_is_broad_enough():
    assert len(CASES) >= 25 and len(PARAMS) >= 60
    assert {dtype for case in CASES.values() for dtype in case.dtypes} == set(FLOATS)
    values = {float(x) for case in CASES.values() for point in case.points for v in point
              for x in _array(v, 1e-300).ravel()}
    assert {0.0, 1e30, -1e30, 1e-300, -1e-300, INF, -INF} <= values and any(np.isnan(x) for x in values)


@pytest.mark.parametrize("name, dtype", PARAMS)
def test_every_input_gets_what_the_tape_gives_it(name, dtype):
    case = CASES[name]
    arity, kept = len(case.points[0]), _kept(case, dtype)
    inputs = _inputs(case, dtype, kept)
    report = diagnose_and_compare(_stacked(case.fn, arity), *inputs, graph=case.graph)
    got = {(kept[f.input // arity], f.input % arity, f.op_type, f.problem) for f in report.findings}
    missing = {e for e in case.expect if e[0] in kept} - got
    assert not missing, f"expected {sorted(missing)} among {sorted(got)}"
    for point in case.clean:
        assert not [g for g in got if g[0] == point], f"point {point}: {sorted(got)}"


@pytest.mark.parametrize("name", ["where_log", "custom_zero", "matmul"])
def test_one_call_per_point_finds_what_the_stacked_call_finds(name):
    case = CASES[name]
    arity = len(case.points[0])
    inputs = _inputs(case, tf.float64, range(len(case.points)))
    together = diagnose(_stacked(case.fn, arity), *inputs)
    for p in range(len(case.points)):
        alone = diagnose(case.fn, *inputs[p * arity:(p + 1) * arity])
        assert [(s.index, s.state) for s in alone.inputs] == [
            (s.index - p * arity, s.state) for s in together.inputs[p * arity:(p + 1) * arity]]
        assert [(f.input, f.op_type, f.problem, f.reason) for f in alone.findings] == [
            (f.input - p * arity, f.op_type, f.problem, f.reason) for f in together.findings
            if p * arity <= f.input < (p + 1) * arity]


# -- the findings the contract requires ---------------------------------------------------------

X = tf.constant([-1.0, 0.0, 2.0])


def test_round_is_found_at_the_round_op():
    report = diagnose_and_compare(lambda x: tf.round(x) * 3, X)
    assert not report.ok and report.inputs[0].state == "none"
    (finding,) = report.findings
    assert (finding.input, finding.op_type, finding.problem, finding.reason) == (0, "Round", "none", "none")
    assert finding.op_name.startswith("Round")


@pytest.mark.parametrize("dtype", FLOATS)
def test_the_where_trap_is_found_at_the_log(dtype):
    trap = lambda x: tf.where(x > 0, tf.math.log(x), 0.0)  # noqa: E731
    # on a vector, the other entries carry a gradient through the Log: a finite gradient becomes NaN
    report = diagnose_and_compare(trap, tf.constant([-1.0, 0.0, 2.0], dtype))
    assert findings(report) == [(0, "Log", "nan", "nan")] and report.inputs[0].state == "nan"
    # at the scalar 0 the tf.where sends the Log a zero, and 0 × inf is NaN; the zero itself is reported too
    report = diagnose_and_compare(trap, tf.constant(0.0, dtype))
    assert findings(report) == [(0, "Log", "nan", "zero_nan"), (0, "SelectV2", "zero", "zero")]
    # the double where: clean on a vector with 0
    fixed = lambda x: tf.where(x > 0, tf.math.log(tf.where(x > 0, x, 1.0)), 0.0)  # noqa: E731
    report = diagnose_and_compare(fixed, tf.constant([-1.0, 0.0, 2.0], dtype))
    assert report.ok and report.findings == () and report.inputs[0].state == "ok"


@pytest.mark.parametrize("integer", [tf.int32, tf.int64, tf.uint8])
def test_a_cast_to_an_integer_is_found_at_the_cast(integer):
    report = diagnose_and_compare(lambda x: tf.cast(tf.cast(x, integer), tf.float32), tf.constant([0.4, 1.6]))
    (finding,) = report.findings
    assert (finding.input, finding.op_type, finding.problem, finding.reason) == (0, "Cast", "none", "integer")
    assert finding.dtype == integer.name and integer.name in finding.explain("en")
    # the first Cast, the one that turned floats into integers, not the one back
    assert finding.op_name == "Cast"


def test_a_clean_function_gives_an_empty_report():
    for fn in (lambda x: tf.sin(x) * x, tf.nn.softplus, lambda x: tf.reduce_sum(x ** 2 + 1.0)):
        report = diagnose_and_compare(fn, tf.constant([-1.0, 0.5, 2.0]))
        assert report.ok and bool(report) and report.findings == ()
        assert [i.state for i in report.inputs] == ["ok"]


# -- the rules of the docstring -----------------------------------------------------------------

@pytest.mark.parametrize("x", [2.0, -2.0, 0.0])
def test_the_branch_a_where_did_not_take_is_routing_not_death(x):
    report = diagnose_and_compare(lambda x: tf.where(x > 0, x, 0.1 * x), tf.constant(x))
    assert report.ok, report.findings


def test_a_dead_path_is_reported_although_another_path_carries_a_gradient():
    x = tf.constant([0.3, 1.6])
    report = diagnose_and_compare(lambda x: x + tf.round(x), x)
    assert report.inputs[0].state == "ok"  # the tape's answer looks healthy: 1, the first term only
    assert not report.ok and findings(report) == [(0, "Round", "none", "none")]


def test_stop_gradient_is_taken_as_meant_unless_nothing_else_reaches_the_input():
    x = tf.constant([0.3, 1.6, -2.5])
    ste = lambda x: x + tf.stop_gradient(tf.round(x) - x)  # noqa: E731
    assert diagnose_and_compare(ste, x).ok
    report = diagnose_and_compare(lambda x: tf.stop_gradient(x) * 2, x)
    assert findings(report) == [(0, "StopGradient", "none", "stop")]
    assert "no other path" in report.findings[0].explain("en")
    # ignore=() treats the stop like any op that sends None: the STE is reported
    report = diagnose_and_compare(ste, x, ignore=())
    assert report.inputs[0].state == "ok" and findings(report) == [(0, "StopGradient", "none", "none")]
    # a type named in ignore is a deliberate stop too (a list works as well as a tuple)
    assert diagnose_and_compare(lambda x: x * tf.round(x), x, ignore=["Round"]).ok
    report = diagnose_and_compare(lambda x: tf.round(x), x, ignore=["Round", "StopGradient"])
    assert findings(report) == [(0, "Round", "none", "stop")]


def test_a_comparison_is_blamed_only_when_nothing_else_explains_a_none():
    x = tf.constant([-1.0, 0.5, 2.0])
    for fn in (lambda x: tf.cast(x > 0, tf.float32), lambda x: tf.where(x > 0, 1.0, 0.0)):
        report = diagnose_and_compare(fn, x)
        assert findings(report) == [(0, "Greater", "none", "integer")] and report.findings[0].dtype == "bool"
    report = diagnose_and_compare(lambda x: tf.cast(tf.math.count_nonzero(x), tf.float32), x)
    assert findings(report) == [(0, "NotEqual", "none", "integer")]
    # the condition of a working tf.where, or a mask times x, is not a death
    assert diagnose_and_compare(lambda x: x * tf.cast(x > 0, tf.float32), x).ok
    assert diagnose_and_compare(lambda x: tf.where(x > 0, x, 0.0), x).ok
    # when another op explains the None, the comparison is not added
    report = diagnose_and_compare(lambda x: tf.where(x > 0, tf.round(x), 0.0), x)
    assert findings(report) == [(0, "Round", "none", "none")]


def test_an_unused_input_and_an_input_that_only_reaches_an_assign():
    w = tf.Variable([0.0, 0.0])
    x, y, z = tf.constant([1.0, 2.0]), tf.constant([3.0, 4.0]), tf.constant([5.0, 6.0])

    def fn(x, y, z):
        w.assign(y * 2)
        return tf.sin(x)

    report = diagnose_and_compare(fn, x, y, z)
    assert [i.state for i in report.inputs] == ["ok", "none", "none"]
    assert findings(report) == [(1, "AssignVariableOp", "none", "dead_end"), (2, None, "none", "unused")]
    dead, unused = report.findings
    assert dead.op_name.startswith("AssignVariableOp") and unused.op_name is None
    assert "AssignVariableOp" in dead.explain("en") and "never reaches the output" in dead.explain("en")
    assert unused.explain("en") == "the output does not use this input at all"


def test_a_detour_through_numpy_is_untraced():
    x, y = tf.constant([1.0, 2.0]), tf.constant([3.0, 4.0])
    report = diagnose_and_compare(lambda x: tf.constant(np.sin(x.numpy())), x)
    assert findings(report) == [(0, None, "none", "untraced")]
    # only the input that went through NumPy loses its gradient
    report = diagnose_and_compare(lambda x, y: x * tf.constant(np.sin(y.numpy())), x, y)
    assert [i.state for i in report.inputs] == ["ok", "none"]
    assert findings(report) == [(1, None, "none", "untraced")]
    assert "NumPy" in report.findings[0].explain("en")


def test_a_python_if_on_a_tensor_with_a_working_gradient_raises_and_says_what_to_use():
    def python_if(x):
        if tf.reduce_sum(x) > 0:
            return x * 2
        return -x

    x = tf.constant([1.0, 2.0])
    assert reference_states(python_if, x) == ["ok"]  # eagerly, the function and its gradient work
    with pytest.raises(ValueError, match=r"cannot trace fn into a graph") as error:
        diagnose(python_if, x)
    assert "tf.where or tf.cond" in str(error.value) and "Python `if`" in str(error.value)


def test_an_error_in_fn_itself_is_raised_as_it_is():
    with pytest.raises(ValueError, match="Shape must be rank 2") as error:
        diagnose(lambda x: tf.matmul(x, x), tf.constant([1.0, 2.0]))
    assert "cannot trace" not in str(error.value)
    with pytest.raises(KeyError):
        diagnose(lambda x: {}["missing"], tf.constant(1.0))


@pytest.mark.parametrize("fn, op_type", [
    (lambda x: tf.unique(x)[0] * 2, "Unique"),
    (lambda x: tf.raw_ops.PreventGradient(input=x) * 2, "PreventGradient"),
])
def test_an_op_without_a_gradient_is_no_gradient(fn, op_type):
    x = tf.constant([1.0, 2.0, 1.0])
    with pytest.raises(LookupError):  # what the tape does with it
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(fn(x))
        tape.gradient(y, x)
    report = diagnose(fn, x)
    assert findings(report) == [(0, op_type, "none", "no_gradient")] and report.inputs[0].state == "none"
    assert "LookupError" in report.findings[0].explain("en")


def test_numpy_function_is_a_pyfunc_that_sends_none():
    report = diagnose_and_compare(lambda x: tf.numpy_function(np.sin, [x], tf.float32), tf.constant([1.0, 2.0]))
    assert findings(report) == [(0, "PyFunc", "none", "none")]


@pytest.mark.parametrize("dtype", FLOATS)
def test_dead_relu_saturated_sigmoid_norm_at_zero_and_exp_overflow(dtype):
    big = 20.0 if dtype == tf.float16 else 1e3  # exp overflows: float16 at 12, float32 at 89, float64 at 710
    cases = [
        (tf.nn.relu, [-1.0, -2.0], "Relu", "zero", "zero"),
        (tf.sigmoid, [100.0, 200.0] if dtype == tf.float64 else [50.0, 60.0], "Sigmoid", "zero", "zero"),
        (tf.norm, [0.0, 0.0], "Sqrt", "inf", "nan"),  # inf at the Sqrt, then 0 × inf below it
        (tf.exp, [big, 1.0], "Exp", "inf", "inf"),
    ]
    for fn, value, op_type, problem, state in cases:
        report = diagnose_and_compare(fn, tf.constant(value, dtype))
        assert findings(report) == [(0, op_type, problem, problem)] and report.inputs[0].state == state


def test_findings_are_sorted_worst_first_for_each_input():
    def fn(x, y):
        return (tf.where(x[0] > 0, tf.math.log(x[0]), 0.0)  # NaN: 0 × inf
                + tf.sqrt(x[1])  # inf
                + tf.round(x[2])  # None
                + tf.nn.relu(x[3])  # zero
                + tf.nn.relu(y) + tf.round(y))  # y: None before zero

    report = diagnose_and_compare(fn, tf.constant([0.0, 0.0, 1.0, -1.0]), tf.constant([-1.0]))
    assert [(f.input, f.problem) for f in report.findings] == [
        (0, "nan"), (0, "inf"), (0, "none"), (0, "zero"), (0, "zero"), (1, "none"), (1, "zero")]
    assert [f.op_type for f in report.findings[:3]] == ["Log", "Sqrt", "Round"]
    assert {f.op_type for f in report.findings[3:5]} == {"SelectV2", "Relu"}  # then from the output back
    assert [f.op_type for f in report.findings[5:]] == ["Round", "Relu"]


def test_each_finding_names_its_own_input():
    def fn(a, b, c, d):
        return tf.round(a) + tf.sqrt(b) + c * 2 + tf.nn.relu(d)

    report = diagnose_and_compare(fn, tf.constant([1.0]), tf.constant([0.0]), tf.constant([1.0]),
                                  tf.constant([-1.0]))
    assert findings(report) == [(0, "Round", "none", "none"), (1, "Sqrt", "inf", "inf"), (3, "Relu", "zero", "zero")]
    assert [i.state for i in report.inputs] == ["none", "inf", "ok", "zero"]
    # one tensor passed twice is two inputs, by position (the tape would add up both gradients)
    a = tf.constant([2.0])
    report = diagnose(lambda p, q: tf.round(p) * q, a, a)
    assert findings(report) == [(0, "Round", "none", "none")] and [i.state for i in report.inputs] == ["none", "ok"]


def test_a_custom_gradient_that_returns_zeros_is_reported_as_zero():
    report = diagnose_and_compare(zero_gradient, tf.constant([1.0, 2.0]))
    assert report.inputs[0].state == "zero"
    assert findings(report) == [(0, "IdentityN", "zero", "custom")]  # the None to its forward half is routing


def test_a_cond_and_a_while_loop_are_reported_as_one_op():
    x = tf.constant([0.0, 1.0])
    report = diagnose_and_compare(lambda x: tf.cond(x[1] > 0, lambda: tf.sqrt(x), lambda: x), x)
    assert [(f.op_type, f.problem) for f in report.findings] == [("StatelessIf", "inf")]
    report = diagnose_and_compare(
        lambda x: tf.while_loop(lambda i, y: i < 2, lambda i, y: (i + 1, tf.sqrt(y)), (0, x))[1], x)
    assert [(f.op_type, f.problem) for f in report.findings] == [("StatelessWhile", "inf")]
    # a None inside a branch arrives as zeros, as for the tape inside a tf.function (eagerly it stays None)
    cond_round = lambda x: tf.cond(x[1] > 0, lambda: tf.round(x), lambda: x)  # noqa: E731
    assert reference_states(cond_round, x) == ["none"]
    report = diagnose_and_compare(cond_round, x, graph=True)
    assert report.inputs[0].state == "zero" and [(f.op_type, f.problem) for f in report.findings] == [
        ("StatelessIf", "zero")]


def test_a_gradient_in_a_tensor_list_does_not_break_the_diagnosis():
    # tf.map_fn keeps its gradient in a TensorList (a variant tensor) that cannot be looked into
    report = diagnose_and_compare(lambda x: tf.map_fn(tf.sin, x), tf.constant([1.0, 2.0]))
    assert report.ok
    report = diagnose_and_compare(lambda x: tf.map_fn(tf.nn.relu, x), tf.constant([-1.0, -2.0]))
    assert report.inputs[0].state == "zero" and [f.problem for f in report.findings] == ["zero"]


# -- variables and Keras ------------------------------------------------------------------------

def test_a_tf_variable_is_passed_to_fn_and_its_reads_are_traced():
    v = tf.Variable([1.0, -2.0])
    seen = []

    def fn(w):
        seen.append(w)
        return tf.nn.relu(w) * w.read_value()

    report = diagnose_and_compare(fn, v)
    assert report.ok and seen and all(w is v for w in seen)
    assert report.inputs[0].dtype == "float32" and report.inputs[0].shape == (2,)
    v.assign([-1.0, -2.0])
    assert findings(diagnose_and_compare(fn, v)) == [(0, "Relu", "zero", "zero")]


def test_a_keras_variable_works_like_a_tf_variable():
    kv = keras.Variable([1.0, -2.0], name="kv")
    seen = []

    def fn(w):
        seen.append(w)
        return keras.ops.relu(w) * w

    assert diagnose_and_compare(fn, kv).ok
    assert seen and all(isinstance(w, VARIABLES) for w in seen)
    kv.assign([-1.0, -2.0])
    assert findings(diagnose_and_compare(fn, kv)) == [(0, "Relu", "zero", "zero")]
    assert diagnose(lambda w: tf.round(w), keras.Variable([1.5])).findings[0].op_type == "Round"


RNG = np.random.default_rng(9)
FEATURES = RNG.normal(size=(8, 3))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("setup", ["healthy", "one_dead_unit", "dead_layer", "zero_kernel", "huge_kernel"])
def test_keras_dense_weights_against_the_tape(setup, dtype):
    dense = keras.layers.Dense(4, activation="relu", dtype=dtype)
    dense.build((None, 3))
    dense.kernel.assign(RNG.normal(size=(3, 4)))
    dense.bias.assign(np.zeros(4))
    if setup == "one_dead_unit":
        dense.bias.assign([-100.0, 0.0, 0.0, 0.0])
    elif setup == "dead_layer":
        dense.bias.assign([-100.0] * 4)
    elif setup == "zero_kernel":
        dense.kernel.assign(np.zeros((3, 4)))
        dense.bias.assign([1.0] * 4)
    elif setup == "huge_kernel":
        dense.kernel.assign(np.full((3, 4), 1e308 if dtype == "float64" else 1e38))
    features = tf.constant(FEATURES, dtype)
    report = diagnose_and_compare(lambda kernel, bias: tf.reduce_sum(dense(features) ** 2, axis=1),
                                  dense.kernel, dense.bias)
    expected = {"healthy": [], "one_dead_unit": [], "zero_kernel": [],
                "dead_layer": [(0, "Pow", "zero", "zero"), (1, "Pow", "zero", "zero")],  # the square of 0 first
                # float32: the square overflows; float64 (1e308): the forward pass overflows first, at the
                # MatMul, and the gradients inherit its inf
                "huge_kernel": [(0, "Pow", "inf", "inf"), (1, "Pow", "inf", "inf")] if dtype == "float32" else
                               [(0, "MatMul", "inf", "forward"), (1, "MatMul", "inf", "forward")]}
    assert findings(report) == expected[setup]


def test_a_models_trainable_variables_as_inputs():
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, activation="relu"), keras.layers.Dense(1)])
    features = tf.constant(FEATURES, tf.float32)
    targets = tf.constant(RNG.normal(size=(8, 1)), tf.float32)
    loss = lambda *weights: keras.losses.mean_squared_error(targets, model(features))  # noqa: E731
    report = diagnose_and_compare(loss, *model.trainable_variables)
    assert report.ok and len(report.inputs) == 4
    assert [i.shape for i in report.inputs] == [(3, 4), (4,), (4, 1), (1,)]
    # a large negative bias kills every ReLU of the first layer for all inputs
    model.layers[0].bias.assign([-100.0] * 4)
    report = diagnose_and_compare(loss, *model.trainable_variables)
    assert [i.state for i in report.inputs] == ["zero", "zero", "zero", "ok"]
    assert findings(report) == [(0, "Relu", "zero", "zero"), (1, "Relu", "zero", "zero"),
                                (2, "MatMul", "zero", "zero")]  # the second kernel sees only zeros


def test_a_variable_that_fn_does_not_read_is_unused():
    report = diagnose_and_compare(lambda v, x: x * 2, tf.Variable([1.0]), tf.constant([1.0]))
    assert findings(report) == [(0, None, "none", "unused")]


# -- no noise -----------------------------------------------------------------------------------

def test_repeated_calls_print_nothing(capfd, caplog):
    # tf.function warns after five retracings of one Python function: each call of diagnose traces once, but
    # through get_concrete_function, which the warning does not count.  Outside pytest the warning goes to
    # stderr; here pytest's log capture takes it, hence caplog as well as capfd.
    capfd.readouterr()
    x = tf.constant([-1.0, 0.0, 2.0])
    with caplog.at_level(logging.INFO):
        for _ in range(4):
            diagnose(lambda x: tf.round(x) * x, x)
            diagnose(tf.nn.relu, x)
        for dtype in FLOATS:
            diagnose(tf.sin, tf.constant([1.0], dtype))
    out, err = capfd.readouterr()
    assert out == "" and err == "", err
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_inputs_of_every_kind_are_summarised():
    report = diagnose(lambda a, b, c, d: a * tf.cast(tf.reduce_sum(b), tf.float32) * c * tf.cast(d, tf.float32),
                      2.0, np.array([1.0, 2.0]), [[1.0], [2.0]], np.array([1.0], np.float16).reshape(()))
    assert report.ok
    assert [(i.dtype, i.shape) for i in report.inputs] == [
        ("float32", ()), ("float64", (2,)), ("float32", (2, 1)), ("float16", ())]
    with pytest.raises(TypeError, match=r"input 1 is a function, not a tensor: diagnose\(fn, \*inputs\) takes "):
        diagnose(tf.sin, X, tf.cos)
    with pytest.raises(TypeError, match=r"fn must return a tensor; got NoneType"):
        diagnose(lambda x: None, X)
    with pytest.raises(TypeError, match=r"fn returned a string tensor"):
        diagnose(lambda x: tf.constant("text"), X)
    with pytest.raises(TypeError, match=r"got a list\. Return the loss"):
        diagnose(lambda x: [x, x], X)


# -- the report ---------------------------------------------------------------------------------

HEADERS = {"en": "| input | op | op name | problem | what happened |",
           "zh": "| 输入 | 算子 | 算子名 | 问题 | 发生了什么 |"}
INPUT_HEADERS = {"en": "| input | dtype | shape | gradient |", "zh": "| 输入 | 数据类型 | 形状 | 梯度 |"}


def _two_inputs_report(lang="en"):
    return diagnose(lambda x, y: tf.round(x) + tf.sqrt(y) + tf.nn.relu(y - 5.0), tf.constant([1.0, 2.0]),
                    tf.constant([0.0, 1.0]), lang=lang)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_table_has_the_headers_of_its_language_and_one_row_per_finding(lang):
    from IPython.display import Markdown

    report = _two_inputs_report()
    table = report.table(lang)
    assert isinstance(table, Markdown)
    blocks = table.data.split("\n\n")
    assert len(blocks) == 3  # the summary sentence, the findings, the inputs
    rows = blocks[1].splitlines()
    assert rows[0] == HEADERS[lang] and rows[1] == "|---|---|---|---|---|"
    assert len(rows) - 2 == len(report.findings) == 3
    for row, finding in zip(rows[2:], report.findings):
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[:3] == [str(finding.input), finding.op_type, finding.op_name]
        assert cells[4] == finding.explain(lang)
    inputs = blocks[2].splitlines()
    assert inputs[0] == INPUT_HEADERS[lang] and len(inputs) - 2 == len(report.inputs)
    assert inputs[2].startswith("| 0 | float32 | [2] |")
    other = "zh" if lang == "en" else "en"
    assert HEADERS[other] not in table.data
    assert {"en": "3 place(s) where a gradient dies", "zh": "梯度在 3 处失效"}[lang] in blocks[0]


def test_the_report_shows_in_its_own_language():
    en, zh = _two_inputs_report("en"), _two_inputs_report("zh")
    assert en.findings == zh.findings and en.inputs == zh.inputs
    assert en._repr_markdown_() == en.table().data == zh.table("en").data
    assert zh._repr_markdown_() == zh.table().data == en.table("zh").data
    assert HEADERS["zh"] in zh._repr_markdown_() and HEADERS["en"] in en._repr_markdown_()
    with pytest.raises(ValueError, match="`lang` must be one of"):
        en.table("fr")
    with pytest.raises(ValueError, match="`lang` must be one of"):
        en.findings[0].explain("fr")


def test_an_ok_report_says_so_and_still_lists_the_inputs():
    report = diagnose(tf.sin, tf.constant([1.0, 2.0]))
    text = report.table("en").data
    assert text.startswith("No gradient dies on the way back") and HEADERS["en"] not in text
    assert INPUT_HEADERS["en"] in text and "| 0 | float32 | [2] | finite, not all zero |" in text
    assert "反向传播途中没有梯度失效" in report.table("zh").data
    assert repr(report).startswith("<Diagnosis: No gradient dies") and repr(report).endswith(">")


def test_the_repr_is_readable():
    text = repr(_two_inputs_report())
    lines = text.splitlines()
    assert lines[0] == "<Diagnosis: 3 place(s) where a gradient dies:" and text.endswith(">")
    assert lines[1] == "  input 0: Round (Round) -> None: Round sends no gradient (None) to the path back to this input"
    assert lines[2].startswith("  input 1: Sqrt (Sqrt) -> inf: Sqrt turns a finite gradient into inf")
    zh = repr(_two_inputs_report("zh"))
    assert zh.splitlines()[1].startswith("  输入 0: Round (Round) -> None: Round 不向通往该输入的路径传回梯度")


# What may stay in Latin letters in the Chinese text: names from code and products, and dtypes.
CODE = ("tape.gradient", ".numpy()", "tf.custom_gradient", "LookupError", "TensorFlow", "NumPy", "Python", "Diagnosis")
CODE_WORDS = {"None", "NaN", "inf", "fn", "float32", "int32"}


def _latin_words(text: str, allowed) -> set:
    for name in CODE:
        text = text.replace(name, " ")
    return set(re.findall(r"[A-Za-z_][A-Za-z_0-9]*", text)) - set(allowed)


def test_the_chinese_text_has_no_english_words():
    report = _two_inputs_report("zh")
    op_words = {w for f in report.findings for w in re.findall(r"\w+", f.op_name + " " + f.op_type)}
    for text in (report.table("zh").data, report._repr_markdown_(), repr(report)):
        assert _latin_words(text, CODE_WORDS | op_words) == set(), text
    for reason in REASONS:
        finding = Finding(0, "Round", "Round", "none", reason, "int32", terms=2)
        zh, en = finding.explain("zh"), finding.explain("en")
        assert _latin_words(zh, CODE_WORDS | {"Round"}) == set(), zh
        assert _latin_words(en, CODE_WORDS | {"Round"}), en  # the check finds English where there is some
        assert re.search(r"[\u4e00-\u9fff]", zh) and zh != en
        if reason not in NO_OP:
            assert "Round" in zh and "Round" in en
        if reason == "integer":
            assert "int32" in zh and "int32" in en
    ok = diagnose(tf.sin, tf.constant([1.0]), lang="zh")
    assert _latin_words(ok.table().data + repr(ok), CODE_WORDS) == set()
    # and the English text is English
    assert not re.search(r"[\u4e00-\u9fff]", _two_inputs_report("en").table().data)


def test_findings_and_reports_are_frozen():
    report = _two_inputs_report()
    finding = report.findings[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        finding.problem = "zero"
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.findings = ()
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.inputs[0].state = "ok"
    assert finding == Finding(0, "Round", finding.op_name, "none", "none") and hash(finding) == hash(
        Finding(0, "Round", finding.op_name, "none", "none"))
    assert [f.name for f in dataclasses.fields(Finding)] == ["input", "op_type", "op_name", "problem", "reason",
                                                             "dtype", "terms"]
    assert isinstance(report.findings, tuple) and isinstance(report.inputs, tuple)


def test_the_public_names():
    assert gradlib.diagnose is diagnose and gradlib.Diagnosis is Diagnosis and gradlib.Finding is Finding
    assert {"diagnose", "Diagnosis", "Finding"} <= set(gradlib.__all__)
    parameters = inspect.signature(diagnose).parameters
    assert list(parameters) == ["fn", "inputs", "ignore", "lang"]
    assert parameters["inputs"].kind is inspect.Parameter.VAR_POSITIONAL
    assert parameters["ignore"].default == ("StopGradient",) and parameters["lang"].default == "en"
    assert debugging.PROBLEMS == PROBLEMS


# -- from the expert review: sums, values that were bad on the way forward, custom gradients, slips


def test_a_sum_of_healthy_gradients_that_overflows_is_reported():
    report = diagnose_and_compare(lambda x: x * 3e38 + x * 3e38, tf.constant([1.0, 2.0]))
    assert not report.ok and findings(report) == [(0, None, "inf", "sum_input")]
    assert report.findings[0].terms == 2 and "2" in report.findings[0].explain("en")
    # float16 (largest finite 65504): a skip connection and a branch, each gradient 40000, together inf
    x = tf.constant([[0.001, 0.002]], tf.float16)
    report = diagnose_and_compare(lambda x: x * 40000.0 + tf.nn.relu(x) * 40000.0, x)
    assert findings(report) == [(0, None, "inf", "sum_input")] and report.inputs[0].state == "inf"


def test_a_sum_that_cancels_is_reported_only_when_the_whole_gradient_is_zero():
    assert findings(diagnose_and_compare(lambda x: x - x, tf.constant([1.0, 2.0])))[0][2] == "zero"
    # the shift inside reduce_logsumexp cancels exactly, by design: not reported
    assert diagnose_and_compare(tf.reduce_logsumexp, tf.constant([1.0, 2.0, 3.0])).ok


def test_nan_in_the_data_is_blamed_on_the_data_not_on_the_loss():
    features = np.array([[1.0, 2.0], [np.nan, 0.5]], np.float32)
    kernel = tf.Variable([[0.5], [-1.0]])
    report = diagnose_and_compare(lambda k: tf.reduce_mean((features @ k - 1.0) ** 2), kernel)
    assert findings(report) == [(0, "Const", "nan", "data")]
    nan_input = diagnose_and_compare(lambda x, y: x * y, tf.constant([1.0]), tf.constant([np.nan]))
    assert findings(nan_input) == [(0, "Placeholder", "nan", "data")]
    assert nan_input.findings[0].explain("en") == "input 1 already contains NaN, and the gradient inherits it"
    assert nan_input.findings[0].explain("zh").startswith("输入 1 本身已含 NaN")


def test_a_value_made_bad_on_the_way_forward_is_blamed_where_it_was_made():
    scores = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    mask = tf.constant([[True, False], [False, False]])  # the second row is fully masked
    values = tf.constant([[1.0], [2.0]])
    attention = lambda s: tf.reduce_sum((tf.nn.softmax(tf.where(mask, s, -np.inf)) @ values) ** 2)  # noqa: E731
    assert findings(diagnose(attention, scores)) == [(0, "Softmax", "nan", "forward")]
    summed = lambda s: tf.reduce_sum(tf.nn.softmax(tf.where(mask, s, -np.inf)) @ values)  # noqa: E731
    assert findings(diagnose(summed, scores)) == [(0, "Softmax", "nan", "forward")]  # not the -inf mask
    # exp(100) is inf in float32: the Mul's gradient by z is inf because the value it multiplies is
    assert findings(diagnose_and_compare(lambda z: tf.exp(z) * z, tf.constant([100.0, 1.0]))) == [
        (0, "Exp", "inf", "forward")]
    # but a log(0) in a branch that tf.where discards is harmless forward: the Log's gradient is to blame
    assert findings(diagnose(lambda x: tf.where(x > 0, tf.math.log(x), 0.0), tf.constant([0.0, 1.0]))) == [
        (0, "Log", "nan", "nan")]


@tf.custom_gradient
def _drops_b(a, b):
    return a * b, lambda dy: (dy * b, None)  # forgets the gradient of b


def test_a_custom_gradient_that_drops_an_argument_is_reported():
    report = diagnose(lambda v: _drops_b(v, v * v), tf.constant([1.0, 2.0]))
    assert findings(report) == [(0, "IdentityN", "none", "custom")]
    assert "tf.custom_gradient" in report.findings[0].explain("en")


def test_slips_a_reader_makes_get_clear_errors_or_answers():
    variables = [tf.Variable([1.0]), tf.Variable([2.0])]
    with pytest.raises(TypeError, match=r"input 0 is a list of 2 tensors or variables.*\*model.trainable_variables"):
        diagnose(lambda *w: w[0] * w[1], variables)
    with pytest.raises(TypeError, match=r"`ignore` must be a sequence of op types"):
        diagnose(tf.sin, tf.constant([1.0]), ignore=None)
    with pytest.raises(TypeError, match=r"`ignore` must be a sequence of op types"):
        diagnose(tf.sin, tf.constant([1.0]), ignore=[tf.stop_gradient])
    # a list of numbers is one input, a tensor
    assert diagnose(tf.sin, [1.0, 2.0]).inputs[0].shape == (2,)
    # tf.py_function's gradient has an unknown rank: it is checked all the same (NumPy inside: a silent zero)
    report = diagnose_and_compare(lambda x: tf.py_function(np.square, [x], tf.float32), tf.constant([1.0, 2.0]))
    assert findings(report) == [(0, "EagerPyFunc", "zero", "zero")]


def test_a_keras_layer_built_inside_diagnose_is_traced_once_cleanly():
    layer = keras.layers.Dense(2)  # built on its first call, inside the trace: tf.function traces twice
    report = diagnose(lambda x: tf.reduce_sum(layer(x) ** 2), tf.constant([[1.0, 2.0]]))
    assert report.ok and len(layer.weights) == 2


# -- from the verification review


def test_a_zero_from_a_constant_factor_is_not_a_death():
    z = tf.constant([-2.0, 0.5, 3.0])
    zeros = tf.zeros(3)
    for loss in (lambda z: tf.nn.sigmoid_cross_entropy_with_logits(labels=zeros, logits=z),
                 lambda z: tf.nn.softplus(z) - zeros * z,  # exercise 2's answer on a batch without a positive
                 lambda z: keras.losses.BinaryCrossentropy(from_logits=True)(zeros, z)):
        assert diagnose_and_compare(loss, z).ok
    # a kink still counts on one path of two, and a product counts when it zeroes the whole gradient
    assert findings(diagnose_and_compare(lambda x: x + tf.nn.relu(x), tf.constant([-1.0, -2.0]))) == [
        (0, "Relu", "zero", "zero")]
    assert findings(diagnose_and_compare(lambda x: x * 0.0, tf.constant([1.0, 2.0]))) == [(0, "Mul", "zero", "zero")]


def test_slices_of_a_gather_that_add_up_are_checked_dense():
    x = tf.constant([1.0, 2.0])
    report = diagnose_and_compare(lambda x: tf.gather(x, [1, 1]) * 3e38, x)
    assert not report.ok and report.inputs[0].state == "inf"
    assert diagnose_and_compare(lambda x: tf.gather(x, [0, 1]) * 3e38, x).ok


@tf.custom_gradient
def _fake_quant(v, scale):
    return tf.round(v / scale) * scale, lambda dy: (dy, None)


def test_a_custom_gradient_may_drop_an_argument_that_is_stopped_anyway():
    x = tf.constant([0.3, -1.2, 2.0])
    assert diagnose(lambda v: _fake_quant(v, tf.stop_gradient(tf.reduce_max(tf.abs(v)))), x).ok
    assert findings(diagnose(lambda v: _fake_quant(v, tf.reduce_max(tf.abs(v))), x)) == [
        (0, "IdentityN", "none", "custom")]


def test_a_deliberate_minus_inf_is_not_blamed_for_an_op_that_multiplies_by_it():
    scores = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    mask = tf.constant([[True, False], [True, True]])  # no row fully masked
    values = tf.constant([[1.0], [2.0]])
    tempered = lambda tau: tf.reduce_sum((tf.nn.softmax(tf.where(mask, scores, -np.inf) / tau) @ values) ** 2)  # noqa: E731
    report = diagnose_and_compare(tempered, tf.constant(2.0))
    assert [(f.op_type, f.problem) for f in report.findings] == [("RealDiv", "nan")]


def test_a_nan_output_with_healthy_gradients_is_said():
    z = tf.constant([[1.0, 2.0, 3.0]])
    mask = tf.constant([[True, True, False]])
    labels = tf.constant([[1.0, 0.0, 0.0]])
    loss = lambda z: -tf.reduce_sum(labels * tf.nn.log_softmax(tf.where(mask, z, -np.inf)))  # noqa: E731
    report = diagnose(loss, z)
    assert report.output == "nan" and "The output's value itself contains NaN." in report.table("en").data
    assert "输出的值本身含 NaN。" in report.table("zh").data and "contains NaN" in repr(report)
    assert diagnose(tf.sin, z).output == "ok"


@tf.custom_gradient
def _wrong_shape(x):
    return tf.reduce_sum(x), lambda dy: dy * tf.ones([5])  # x has 3 entries


def test_a_gradient_function_that_fails_is_not_blamed_on_tracing():
    with pytest.raises(ValueError, match=r"TensorFlow could not build the gradient of fn") as raised:
        diagnose(_wrong_shape, tf.constant([1.0, 2.0, 3.0]))
    assert "tf.where" not in str(raised.value)
