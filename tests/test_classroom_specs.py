"""The spec interpreters and the mistake table of ``gradlib.classroom.exercises._core``, on their own.

The chapters' tests exercise them through real exercises; these pin down the
rules a new spec relies on: which typical mistake :func:`first_mistake` names,
what :func:`check_scalar` accepts and rejects, with which catalogue key, and in which order
:func:`check_whole` reports the problems of a whole-tensor op.
The spec below borrows ch06's messages (the only Scalar spec today) with a
reference of its own, so that it fails when the interpreter, not ch06, changes.
"""

import dataclasses
import functools

import numpy as np
import pytest
import tensorflow as tf

from gradlib.classroom.exercises import _core

MISTAKES = [("twice", 2.0), ("negated", -1.0), ("zero", 0.0)]


@pytest.mark.parametrize("got, expected, key", [
    (2.0, 1.0, "twice"),
    (-1.0, 1.0, "negated"),
    (0.0, 0.0, None),          # right: every mistake equals the right value at 0, none is a mistake here
    (0.0, 2.0, "zero"),
    (4.0, 2.0, "twice"),
    (3.0, 1.0, None),
    (np.nan, 1.0, None),       # NaN reproduces no mistake
    (2.00001, 1.0, "twice"),   # within the tolerance
])
def test_first_mistake_names_the_first_wrong_answer_that_differs_from_the_right_one(got, expected, key):
    table = [(name, factor * expected if name != "zero" else 0.0) for name, factor in MISTAKES]
    assert _core.first_mistake(got, expected, table) == key


def test_first_mistake_keeps_the_order_of_the_table_and_compares_arrays_everywhere():
    expected = np.array([1.0, 2.0])
    table = [("a", np.array([5.0, 2.0])), ("b", np.array([5.0, 2.0])), ("c", np.array([5.0, 6.0]))]
    assert _core.first_mistake(np.array([5.0, 2.0]), expected, table) == "a"
    assert _core.first_mistake(np.array([5.0, 6.0]), expected, table) == "c"
    assert _core.first_mistake(np.array([5.0, 2.1]), expected, table) is None


SPEC = _core.Scalar(points=(0.0, 0.5, 2.0), reference=lambda p: p * p + 1.0, name="p", where="ch06.at_p",
                    what="ch06.lam_word", none="ch06.number_none", wrong="ch06.schedule_value",
                    mistakes=(("ch06.schedule_plus_one", lambda p: p * p + 2.0), ("ch06.schedule_sign", lambda p: p)))


def outcome(check, spec, answer, lang="en"):
    """("passed", what the check returns), or the key and text of the first problem it finds."""
    try:
        return "passed", check(spec, answer, lang)
    except _core.Mismatch as problem:
        return problem.key, str(problem)


run = functools.partial(outcome, _core.check_scalar, SPEC)


@pytest.mark.parametrize("answer", [
    lambda p: p * p + 1.0,                       # a Python float
    lambda p: np.float32(p * p + 1.0),           # a NumPy scalar
    lambda p: tf.constant(p * p + 1.0),          # a 0-d tensor
    lambda p: int(p * p + 1.0) if p in (0.0, 2.0) else p * p + 1.0,  # an integer where the value is one
])
def test_check_scalar_accepts_any_real_number(answer):
    outcome, values = run(answer)
    assert outcome == "passed"
    np.testing.assert_allclose(values, [1.0, 1.25, 5.0])


@pytest.mark.parametrize("answer, key, point", [
    (lambda p: None, "ch06.number_none", "0"),
    (lambda p: True, "common.not_numeric", "0"),
    (lambda p: "one", "common.not_numeric", "0"),
    (lambda p: complex(p * p + 1.0), "common.dtype", "0"),
    (lambda p: np.array([p * p + 1.0]), "common.shape", "0"),
    (lambda p: float("inf"), "common.nan", "0"),
    (lambda p: 1 / p, "common.raised", "0"),
    (lambda p: p * p + 2.0, "ch06.schedule_plus_one", "0"),    # a named mistake, at the first point
    (lambda p: p if p else 1.0, "ch06.schedule_sign", "0.5"),  # right at p = 0, the mistake shows at 0.5
    (lambda p: 1.0, "ch06.schedule_value", "0.5"),             # wrong, but no named mistake
])
def test_check_scalar_stops_at_the_first_problem_with_its_key(answer, key, point):
    got_key, text = run(answer)
    assert got_key == key, text
    assert f"p = {point}" in text  # the point is named
    zh_key, zh_text = run(answer, "zh")
    assert zh_key == key and f"p = {point}" in zh_text


def test_check_scalar_appends_the_mistakes_hint_to_the_wrong_value_message():
    _, text = run(lambda p: p * p + 2.0)
    assert text.startswith("at p = 0: your λ_p is 2; expected 1. ")  # the formatted numbers, then the hint
    _, plain = run(lambda p: 1.0 if p == 0 else 7.0)
    assert plain == "at p = 0.5: your λ_p is 7; expected 1.25."


# -- WholeTensor: y = 3x at fixed points, with ch05's messages borrowed ----------------------------

WHOLE_X = np.array([0.0, 1.0, -2.0, 0.5], np.float32)
WHOLE_UP = np.array([2.0, -1.0, 3.0, 0.5], np.float32)
WHOLE = _core.WholeTensor(
    cases=[(WHOLE_X, WHOLE_UP)], reference=lambda x, u: (3.0 * x, 3.0 * u.astype(np.float64)),
    where=lambda lang, x, params: "", at=lambda lang, where, x, i: f"{where}at x[{i}] = {_core.fmt(x[i])}: ",
    report_first=lambda x: x != 0,
    none_gradient=lambda lang, where: _core.message("ch05.no_gradient", lang, prefix=where, kind="None"),
    value_problem=lambda lang, where, text, x, y, i, params: text,
    all_zero=lambda lang, where: _core.message("ch05.no_gradient", lang, prefix=where, kind="0"),
    upstream_key="ch05.upstream",
    mistakes=lambda x, u: [("ch05.xnor_identity", u), ("ch05.xnor_plain", -3.0 * u)],
    gradient_hint=lambda lang, x, g, bad, i, params: _core.message("ch05.xnor_strict", lang) if np.all(x[bad] == 1) else "")


def with_gradient(backward, forward=lambda v: 3.0 * v):
    @tf.custom_gradient
    def op(v):
        return forward(v), lambda dy: backward(v, dy)
    return op


run_whole = functools.partial(outcome, _core.check_whole, WHOLE)


@pytest.mark.parametrize("answer, key, text", [
    (lambda v: 3.0 * v, "passed", None),
    (with_gradient(lambda v, dy: 3.0 * dy), "passed", None),
    (lambda v: 3.0 * v + 1.0, "common.value", "at x[1] = 1: your value is 4; expected 3"),      # x != 0 first
    (lambda v: 3.0 * v + tf.where(v == 0, 1.0, 0.0), "common.value", "at x[0] = 0: your value is 1"),  # else x = 0
    (with_gradient(lambda v, dy: 3.0 * tf.ones_like(v)), "ch05.upstream",
     "with an upstream gradient of -1 at x = 1, your gradient is 3; expected -3"),             # dy forgotten
    (with_gradient(lambda v, dy: tf.zeros_like(v)), "ch05.no_gradient", "your gradient is 0 everywhere"),
    (lambda v: tf.stop_gradient(3.0 * v), "ch05.no_gradient", "your gradient is None everywhere"),
    (with_gradient(lambda v, dy: dy), "ch05.xnor_identity", "at x[1] = 1: your gradient is -1; expected -3"),
    (with_gradient(lambda v, dy: -3.0 * dy), "ch05.xnor_plain", "at x[1] = 1: your gradient is 3; expected -3"),
    (with_gradient(lambda v, dy: tf.where(v == 1, 0.0, 3.0 * dy)), "ch05.xnor_strict", "at x[1] = 1: "),  # the hint
    (with_gradient(lambda v, dy: tf.where(v == 0.5, 0.0, 3.0 * dy)), "common.value",
     "at x[3] = 0.5: your gradient is 0; expected 1.5."),                                      # no hint
])
def test_check_whole_reports_each_problem_with_its_key(answer, key, text):
    got_key, got_text = run_whole(answer)
    assert got_key == key, got_text
    if text is not None:
        assert got_text.startswith(text) or text in got_text, got_text
    assert run_whole(answer, "zh")[0] == key


# y = s·x with a parameter s; the gradient s·dy is right, and so is 0 (an alternative reference, as ch05-ex2
# accepts a gradient with max|tanh w| held constant); dy unchanged is the identity mistake.
SCALED = dataclasses.replace(
    WHOLE, params=[(2.0,), (-1.0,)], reference=lambda x, u, s: (s * x, s * u.astype(np.float64)),
    alternatives=lambda x, u, s: [np.zeros_like(x)], upstream_key=None, identity_key="ch05.dorefa_identity",
    where=lambda lang, x, params: f"with s = {_core.fmt(params[0])}, ", mistakes=lambda x, u, s: [])


run_scaled = functools.partial(outcome, _core.check_whole, SCALED)


def test_check_whole_runs_every_parameter_and_says_which_correct_gradient_each_pass_matched():
    assert run_scaled(lambda v, s: s * v) == ("passed", [0, 0])
    assert run_scaled(lambda v, s: tf.stop_gradient(s * v) + 0.0 * v) == ("passed", [1, 1])
    mixed = with_gradient(lambda v, dy: tf.zeros_like(v), forward=lambda v: -v)
    assert run_scaled(lambda v, s: 2.0 * v if s == 2.0 else mixed(v)) == ("passed", [0, 1])


def test_check_whole_names_the_parameter_the_identity_and_compares_with_the_closest_correct_gradient():
    key, text = run_scaled(lambda v, s: s * v + tf.where(v == 1.0, 1.0, 0.0) if s == -1.0 else s * v)
    assert key == "common.value" and text.startswith("with s = -1, at x[1] = 1: your value is 0; expected -1")
    identity = with_gradient(lambda v, dy: dy, forward=lambda v: 2.0 * v)
    key, text = run_scaled(lambda v, s: identity(v))
    assert key == "ch05.dorefa_identity" and text.startswith("with s = 2, your gradient is the upstream gradient")
    # zero except at x = -2: closer to the alternative 0 than to 2·dy, so reported against 0 (expected 0)
    almost_zero = with_gradient(lambda v, dy: tf.where(v == -2.0, 1.0, 0.0), forward=lambda v: 2.0 * v)
    key, text = run_scaled(lambda v, s: almost_zero(v))
    assert key == "common.value" and text == "with s = 2, at x[2] = -2: your gradient is 1; expected 0."
