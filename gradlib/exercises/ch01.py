"""Checks for chapter 1: tf.gradients and GradientTape."""

import numpy as np
import tensorflow as tf

from ._core import Mismatch, as_array, call, exercise, fmt, message

MESSAGES = {
    "second_wrong": {
        "en": "for f(x) = {f} at x = {x} your second derivative is {got}; expected {expected}.",
        "zh": "对 f(x) = {f}，在 x = {x} 处你的二阶导数为 {got}，应为 {expected}。",
    },
    "second_none": {
        "en": "for f(x) = {f} at x = {x} your function returned None; an unconnected second "
              "derivative should be 0 (unconnected_gradients=tf.UnconnectedGradients.ZERO).",
        "zh": "对 f(x) = {f}，在 x = {x} 处你的函数返回了 None；未连接的二阶导数应为 0"
              "（使用 unconnected_gradients=tf.UnconnectedGradients.ZERO）。",
    },
    "passed": {"en": "correct on {n} functions and points, including 3x, whose second derivative is 0, not None.",
               "zh": "在 {n} 组函数与点上都正确，包括二阶导数为 0（而不是 None）的 3x。"},
}

# (description, function, x, f''(x)) with an independent closed-form reference
CASES = [
    ("x**3", lambda x: x ** 3, 1.5, 9.0),  # not x = 2, where f' = f'' = 12
    ("sin(x)", tf.sin, 0.7, -np.sin(0.7)),
    ("exp(2x)", lambda x: tf.exp(2 * x), -0.5, 4 * np.exp(-1.0)),
    ("tanh(x)", tf.tanh, 0.3, -2 * np.tanh(0.3) * (1 - np.tanh(0.3) ** 2)),
    ("relu(x)", tf.nn.relu, 1.0, 0.0),
    ("3x", lambda x: 3.0 * x, 1.0, 0.0),  # the inner gradient is a constant: None unless asked for zeros
    ("x**2", lambda x: x ** 2, -3.0, 2.0),
]


@exercise("ch01-ex2", MESSAGES, answer="second_derivative")
def check_second_derivative(answer, lang):
    for text, f, x, expected in CASES:
        where = f"f(x) = {text}, x = {x}: "
        result = call(answer, f, tf.constant(x), lang=lang, where=where)
        if result is None and expected == 0:
            raise Mismatch(message(MESSAGES, "second_none", lang, f=text, x=x))
        got = float(as_array(result, lang=lang, what="result", where=where, shape=()))
        if not np.isclose(got, expected, rtol=1e-4, atol=1e-5):
            raise Mismatch(message(MESSAGES, "second_wrong", lang, f=text, x=x, got=fmt(got), expected=fmt(expected)))
    return message(MESSAGES, "passed", lang, n=len(CASES))
