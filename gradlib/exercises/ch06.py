"""Checks for chapter 6: DANN and the gradient reversal layer.

* ``ch06-ex1``: ``reverse_gradient(x, lam)`` with ``tf.custom_gradient``: the
  value is ``x`` bit for bit, the gradient is :math:`-\\lambda` times the
  upstream gradient.
* ``ch06-ex2``: ``dann_lambda(p)``, the schedule
  :math:`\\lambda_p = 2/(1 + e^{-10 p}) - 1` of Ganin et al. (2016).
* ``ch06-ex3``: ``grl_trick(x, lam)``, the same layer with ``tf.stop_gradient``
  only, whose value is ``x`` bit for bit, signed zeros included: the
  textbook ``t + sg(x - t)`` rounds twice, ``sg(x) + (t - sg(t))`` turns
  ``-0.0`` into ``+0.0``, and ``sg(x) - (sg(t) - t)`` is exact.

``lam`` is tried as Python numbers (0 included), as a tensor, as a
``tf.Variable`` and as a ``tf.Variable`` changed by ``assign`` between two
calls of one ``tf.function``.  Every reference is a closed NumPy formula.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import tensorflow as tf

from ..logs import captured_tf_warnings
from ._core import (COMMON, Mismatch, as_array, call, describe, exercise, fmt, kink_and_random_points,
                    message, require_tensor, to_array)

MESSAGES = {
    # shared by ex1 and ex3
    "with_lam": {"en": "with λ = {lam}{kind}, ", "zh": "当 λ = {lam}{kind} 时，"},
    "kind_tensor": {"en": " (a tensor)", "zh": "（张量）"},
    "kind_variable": {"en": " (a tf.Variable)", "zh": "（tf.Variable）"},
    "kind_function": {"en": " (a tf.Variable set by assign, inside a tf.function)",
                      "zh": "（在 tf.function 中由 assign 设置的 tf.Variable）"},
    "matrix": {"en": "for a 3×4 input, ", "zh": "对 3×4 的输入，"},
    "forward_identity": {
        "en": "The forward pass must return x unchanged, whatever λ is.",
        "zh": "无论 λ 取何值，前向都必须原样返回 x。",
    },
    "grad_sign": {
        "en": "The sign is wrong: the layer multiplies the gradient by −λ, not by λ.",
        "zh": "符号错了：该层把梯度乘以 −λ，而不是 λ。",
    },
    "grad_ignores_lam": {
        "en": "Your gradient is −dy whatever λ is: multiply by λ as well.",
        "zh": "无论 λ 取何值，你的梯度都是 −dy：还要乘以 λ。",
    },
    "grad_not_reversed": {
        "en": "The gradient passes through unchanged: it is not reversed. Multiply the upstream gradient by −λ.",
        "zh": "梯度原样通过，没有被反转。请把上游梯度乘以 −λ。",
    },
    "grad_generic": {
        "en": "The gradient must be −λ times the upstream gradient, which is 1 here.",
        "zh": "梯度应为上游梯度（此处为 1）的 −λ 倍。",
    },
    "upstream": {
        "en": "{prefix}at x = {x} with an upstream gradient of {dy}, your gradient is {got}; expected {expected}. "
              "Multiply the upstream gradient dy by −λ.",
        "zh": "{prefix}在 x = {x} 处、上游梯度为 {dy} 时，你的梯度为 {got}，应为 {expected}。"
              "请把上游梯度 dy 乘以 −λ。",
    },
    "gradient_count": {
        "en": "{prefix}grad_fn must return one gradient per input of the decorated function "
              "(for x and for lam: return None for lam); TensorFlow said: {detail}",
        "zh": "{prefix}grad_fn 必须为被装饰函数的每个输入各返回一个梯度（x 和 lam 各一个，lam 的梯度返回 None）；"
              "TensorFlow 的报错是：{detail}",
    },
    "function_stale": {
        "en": "{prefix}at x = {x} your gradient is {got}; expected {expected}. Your layer still uses an old λ: "
              "read λ when the gradient is computed, and do not turn it into a Python number "
              "(float(lam), lam.numpy()).",
        "zh": "{prefix}在 x = {x} 处，你的梯度为 {got}，应为 {expected}。你的层仍在使用旧的 λ："
              "请在计算梯度时读取 λ，不要把它变成 Python 数（float(lam)、lam.numpy()）。",
    },
    "function_raised": {
        "en": "{prefix}your code raised {error}: {detail}. Inside a tf.function, λ is a symbolic tensor: "
              "use TensorFlow operations on it, not .numpy() or float().",
        "zh": "{prefix}你的代码抛出了 {error}：{detail}。在 tf.function 中 λ 是符号张量：请对它使用 TensorFlow 运算，"
              "不要用 .numpy() 或 float()。",
    },
    "not_exact": {
        "en": "with λ = {lam}, at x = {x}: your value is {got}, not exactly x (it differs in the last bits; "
              "{count} of {n} values do). The stop_gradient trick computes t + (x − t), which rounds twice; "
              "with tf.custom_gradient return x itself (tf.identity(x)).",
        "zh": "当 λ = {lam} 时，在 x = {x} 处，你的前向值为 {got}，并不严格等于 x（最后几位不同；{n} 个值中有 {count} 个如此）。"
              "stop_gradient 技巧计算的是 t + (x − t)，要舍入两次；用 tf.custom_gradient 时请直接返回 x 本身（tf.identity(x)）。",
    },
    "ex1_passed": {
        "en": "correct: the value is x bit for bit and the gradient is −λ·dy for λ in {lams}, "
              "for λ as a tensor and a tf.Variable (also changed by assign inside a tf.function), "
              "for a 2-D input and for upstream gradients other than 1.",
        "zh": "正确：对 λ ∈ {lams}、λ 为张量或 tf.Variable（包括在 tf.function 中用 assign 修改）、二维输入，"
              "以及不为 1 的上游梯度，前向值都与 x 逐位相同，梯度都是 −λ·dy。",
    },
    "ex3_passed": {
        "en": "correct: the value is x bit for bit (−0.0 included) and the gradient is −λ·dy for λ in {lams}, "
              "for λ as a tensor and a tf.Variable (also changed by assign inside a tf.function), "
              "for a 2-D input and for upstream gradients other than 1.",
        "zh": "正确：对 λ ∈ {lams}、λ 为张量或 tf.Variable（包括在 tf.function 中用 assign 修改）、二维输入，"
              "以及不为 1 的上游梯度，前向值都与 x 逐位相同（包括 −0.0），梯度都是 −λ·dy。",
    },
    "trick_rounds": {
        "en": "with λ = {lam}, at x = {x}: your value is {got}, not exactly x ({count} of {n} values differ in "
              "the last bits). A sum such as t + (x − t) or (x + t) − t rounds twice. Arrange it so that x "
              "meets only an exact zero going forward: t − t is exactly 0 for every finite t.",
        "zh": "当 λ = {lam} 时，在 x = {x} 处，你的前向值为 {got}，并不严格等于 x（{n} 个值中有 {count} 个在最后几位不同）。"
              "t + (x − t) 或 (x + t) − t 这样的和要舍入两次。请换一种写法，让 x 在前向只与一个精确的零运算："
              "对任何有限的 t，t − t 恰好为 0。",
    },
    "trick_signed_zero": {
        "en": "with λ = {lam}, at x = −0.0: your value is +0.0. Every other value is exact, but adding a zero "
              "loses the sign of −0.0 (−0 + 0 = +0); subtracting it keeps it (−0 − 0 = −0).",
        "zh": "当 λ = {lam} 时，在 x = −0.0 处，你的前向值为 +0.0。其余的值都精确，但加上一个零会丢掉 −0.0 的符号"
              "（−0 + 0 = +0）；减去它则能保留（−0 − 0 = −0）。",
    },
    "number_none": {
        "en": "{where}your function returned None; return the number λ_p (a Python float is fine).",
        "zh": "{where}你的函数返回了 None；请返回数值 λ_p（Python 浮点数即可）。",
    },
    # ex2
    "lam_word": {"en": "λ_p", "zh": "λ_p"},
    "schedule_value": {
        "en": "at p = {p}: your λ_p is {got}; expected {expected}.",
        "zh": "在 p = {p} 处，你的 λ_p 为 {got}，应为 {expected}。",
    },
    "schedule_plus_one": {
        "en": "You dropped the “− 1”: the schedule must start at 0 (p = 0) and approach 1.",
        "zh": "你漏掉了“− 1”：该调度必须从 0（p = 0）开始并趋近 1。",
    },
    "schedule_sign": {
        "en": "Your λ_p falls instead of rising: the exponent is −10p, not +10p.",
        "zh": "你的 λ_p 在下降而不是上升：指数应为 −10p，而不是 +10p。",
    },
    "schedule_sigmoid": {
        "en": "That is the sigmoid σ(10p), which starts at 1/2; the schedule is 2σ(10p) − 1.",
        "zh": "这是从 1/2 开始的 sigmoid σ(10p)；调度应为 2σ(10p) − 1。",
    },
    "schedule_gamma": {
        "en": "The rate is γ = 10: use exp(−10p).",
        "zh": "速率为 γ = 10：请使用 exp(−10p)。",
    },
    "ex2_passed": {
        "en": "correct at p ∈ {ps}: λ_p rises from 0 to {last} at p = 1.",
        "zh": "在 p ∈ {ps} 处都正确：λ_p 从 0 上升到 p = 1 时的 {last}。",
    },
}


def _text(key: str, lang: str, **values) -> str:
    return message(MESSAGES, key, lang, **values)


def _join(text: str, hint: str, lang: str) -> str:
    return text + ("" if lang == "zh" else " ") + hint


_detail = describe


def _exact(value) -> str:
    """All the digits of a float32, so that values one bit apart look different."""
    return f"{float(value):.9g}"


# -- the gradient reversal layer: ex1 and ex3 ----------------------------------------

POINTS = kink_and_random_points([0.0, 1.5, -2.0, 0.1], seed=6)
LAMS = (1.0, 0.5, 0.0, 2.0)
UPSTREAM = np.random.default_rng(7).uniform(-3, 3, POINTS.shape).astype(np.float32)
# Random points where t + (x - t) with t = -0.5 x differs from x for many of
# them, then the two zeros: the sign of -0.0 is what an added zero loses.
EXACT_POINTS = np.concatenate([np.random.default_rng(8).uniform(-3, 3, 200).astype(np.float32),
                               np.array([0.0, -0.0], np.float32)])
EXACT_LAMS = (0.5, 2.0, 0.3)


def _bits(values) -> np.ndarray:
    return np.asarray(values, np.float32).view(np.int32)


def _run(answer: Callable, x: np.ndarray, lam, upstream, *, lang: str, prefix: str):
    """Value and gradient (weighted by ``upstream``) of ``answer(x, lam)`` on a tape, validated."""
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = call(answer, xt, lam, lang=lang, where=prefix)
    y_array = as_array(y, lang=lang, what="forward", where=prefix, shape=x.shape)
    require_tensor(y, lang=lang, where=prefix)
    try:
        grad = tape.gradient(y, xt, output_gradients=None if upstream is None else tf.constant(upstream))
    except Exception as err:
        _raise_gradient_error(err, lang, prefix)
    g_array = as_array(grad, lang=lang, what="gradient", where=prefix, shape=x.shape, none_key="none_gradient")
    return y_array, g_array


def _raise_gradient_error(err: Exception, lang: str, prefix: str):
    detail = _detail(err)
    if "gradients, but returned" in detail or "expected to return" in detail:
        raise Mismatch(_text("gradient_count", lang, prefix=prefix, detail=detail)) from None
    raise Mismatch(message(COMMON, "raised", lang, where=prefix, error=type(err).__name__, detail=detail)) from None


def _first_bad(got, expected):
    bad = np.flatnonzero(~np.isclose(np.ravel(got), np.ravel(expected), rtol=1e-5, atol=1e-6))
    return None if bad.size == 0 else int(bad[0])


def _gradient_hint(got: float, lam: float, lang: str) -> str:
    if lam != 0 and np.isclose(got, lam, rtol=1e-5):
        return _text("grad_sign", lang)
    if lam != 1 and np.isclose(got, -1.0, rtol=1e-5):
        return _text("grad_ignores_lam", lang)
    if lam != -1 and np.isclose(got, 1.0, rtol=1e-5):
        return _text("grad_not_reversed", lang)
    return _text("grad_generic", lang)


def _compare_forward(y, x, *, lang: str, prefix: str):
    """The value must be x (up to rounding); raise on the first mismatch."""
    flat_x = np.ravel(x)
    i = _first_bad(y, x)
    if i is not None:
        text = message(COMMON, "value", lang, where=prefix + message(COMMON, "at", lang, x=fmt(flat_x[i])),
                       what=message(COMMON, "forward", lang), got=fmt(np.ravel(y)[i]), expected=fmt(flat_x[i]))
        raise Mismatch(_join(text, _text("forward_identity", lang), lang))


def _compare(answer, x, lam, lam_value: float, *, lang: str, prefix: str):
    """Value ≈ x and gradient = −λ with an upstream gradient of ones."""
    y, g = _run(answer, x, lam, None, lang=lang, prefix=prefix)
    flat_x = np.ravel(x)
    _compare_forward(y, x, lang=lang, prefix=prefix)
    expected = np.full(x.shape, -lam_value, np.float32)
    i = _first_bad(g, expected)
    if i is not None:
        got = float(np.ravel(g)[i])
        text = message(COMMON, "value", lang, where=prefix + message(COMMON, "at", lang, x=fmt(flat_x[i])),
                       what=message(COMMON, "gradient", lang), got=fmt(got), expected=fmt(-lam_value))
        raise Mismatch(_join(text, _gradient_hint(got, lam_value, lang), lang))
    return y


def _compare_upstream(answer, x, lam, lam_value: float, upstream, *, lang: str, prefix: str):
    y, g = _run(answer, x, lam, upstream, lang=lang, prefix=prefix)
    _compare_forward(y, x, lang=lang, prefix=prefix)  # every call of the answer counts
    expected = -lam_value * upstream
    i = _first_bad(g, expected)
    if i is not None:
        raise Mismatch(_text("upstream", lang, prefix=prefix, x=fmt(np.ravel(x)[i]), dy=fmt(np.ravel(upstream)[i]),
                             got=fmt(np.ravel(g)[i]), expected=fmt(np.ravel(expected)[i])))


def _compare_in_function(answer, x, upstream, *, lang: str):
    """λ a tf.Variable read inside one tf.function; assign a new value between two calls."""
    lam = tf.Variable(0.25)
    xt, dy = tf.constant(x), tf.constant(upstream)

    @tf.function
    def layer_gradient(v):
        with tf.GradientTape() as tape:
            tape.watch(v)
            y = answer(v, lam)
        if not tf.is_tensor(y):  # reported below, outside the tf.function
            return y, None
        return y, tape.gradient(y, v, output_gradients=dy)

    for value in (0.25, 1.5):
        lam.assign(value)
        prefix = _text("with_lam", lang, lam=fmt(value), kind=_text("kind_function", lang))
        try:
            with captured_tf_warnings():  # a check run many times must not flood stderr with retracing notices
                y, grad = layer_gradient(xt)
        except Exception as err:
            raise Mismatch(_text("function_raised", lang, prefix=prefix, error=type(err).__name__,
                                 detail=_detail(err))) from None
        y_array = as_array(y, lang=lang, what="forward", where=prefix, shape=x.shape)
        require_tensor(y, lang=lang, where=prefix)
        _compare_forward(y_array, x, lang=lang, prefix=prefix)
        g = as_array(grad, lang=lang, what="gradient", where=prefix, shape=x.shape, none_key="none_gradient")
        expected = -value * upstream
        i = _first_bad(g, expected)
        if i is not None:
            key = "function_stale" if value != 0.25 and np.allclose(g, -0.25 * upstream) else "upstream"
            raise Mismatch(_text(key, lang, prefix=prefix, x=fmt(np.ravel(x)[i]), dy=fmt(np.ravel(upstream)[i]),
                                 got=fmt(np.ravel(g)[i]), expected=fmt(np.ravel(expected)[i])))


def _check_reversal(answer, lang: str) -> None:
    """Everything ex1 and ex3 have in common; returns nothing, raises Mismatch."""
    x = POINTS
    for lam in LAMS:
        _compare(answer, x, lam, lam, lang=lang, prefix=_text("with_lam", lang, lam=fmt(lam), kind=""))
    _compare_upstream(answer, x, 0.5, 0.5, UPSTREAM, lang=lang,
                      prefix=_text("with_lam", lang, lam=fmt(0.5), kind=""))
    _compare(answer, x, tf.constant(0.3), 0.3, lang=lang,
             prefix=_text("with_lam", lang, lam=fmt(0.3), kind=_text("kind_tensor", lang)))
    _compare_upstream(answer, x, tf.Variable(0.75), 0.75, UPSTREAM, lang=lang,
                      prefix=_text("with_lam", lang, lam=fmt(0.75), kind=_text("kind_variable", lang)))
    matrix = x[:12].reshape(3, 4)
    _compare_upstream(answer, matrix, 0.5, 0.5, UPSTREAM[:12].reshape(3, 4), lang=lang,
                      prefix=_text("matrix", lang) + _text("with_lam", lang, lam=fmt(0.5), kind=""))
    _compare_in_function(answer, x, UPSTREAM, lang=lang)


def _lams_text() -> str:
    return "{" + ", ".join(fmt(v) for v in LAMS) + "}"


@exercise("ch06-ex1", MESSAGES, answer="reverse_gradient")
def check_reverse_gradient(answer, lang):
    _check_reversal(answer, lang)
    prefix = _text("with_lam", lang, lam=fmt(0.5), kind="")
    y = _compare(answer, EXACT_POINTS, 0.5, 0.5, lang=lang, prefix=prefix)
    differ = np.flatnonzero(_bits(y) != _bits(EXACT_POINTS))
    if differ.size:
        i = int(differ[0])
        raise Mismatch(_text("not_exact", lang, lam=fmt(0.5), x=_exact(EXACT_POINTS[i]), got=_exact(y[i]),
                             count=differ.size, n=EXACT_POINTS.size))
    return _text("ex1_passed", lang, lams=_lams_text())


@exercise("ch06-ex3", MESSAGES, answer="grl_trick")
def check_grl_trick(answer, lang):
    _check_reversal(answer, lang)
    zeros = EXACT_POINTS == 0
    signed_zero = None
    for lam in EXACT_LAMS:  # rounding is the bigger problem: it is reported first, for any λ
        y = _compare(answer, EXACT_POINTS, lam, lam, lang=lang, prefix=_text("with_lam", lang, lam=fmt(lam), kind=""))
        differ = _bits(y) != _bits(EXACT_POINTS)
        rounded = np.flatnonzero(differ & ~zeros)
        if rounded.size:
            i = int(rounded[0])
            raise Mismatch(_text("trick_rounds", lang, lam=fmt(lam), x=_exact(EXACT_POINTS[i]), got=_exact(y[i]),
                                 count=int(np.sum(differ)), n=EXACT_POINTS.size))
        if signed_zero is None and np.any(differ & zeros):
            signed_zero = lam
    if signed_zero is not None:
        raise Mismatch(_text("trick_signed_zero", lang, lam=fmt(signed_zero)))
    return _text("ex3_passed", lang, lams=_lams_text())


# -- ex2: the lambda schedule ------------------------------------------------------

PROGRESS = (0.0, 0.05, 0.1, 0.25, 0.5, 0.75, 1.0)


def lambda_reference(p: float) -> float:
    """2 / (1 + exp(-10 p)) - 1 in float64."""
    return 2.0 / (1.0 + np.exp(-10.0 * p)) - 1.0


def _schedule_hint(got: float, p: float, lang: str) -> str:
    ref = lambda_reference(p)
    candidates = (
        ("schedule_plus_one", ref + 1.0),
        ("schedule_sign", -ref),
        ("schedule_sigmoid", 1.0 / (1.0 + np.exp(-10.0 * p))),
        ("schedule_gamma", 2.0 / (1.0 + np.exp(-p)) - 1.0),
    )
    for key, value in candidates:
        if not np.isclose(value, ref) and np.isclose(got, value, rtol=1e-4, atol=1e-6):
            return " " + _text(key, lang) if lang == "en" else _text(key, lang)
    return ""


@exercise("ch06-ex2", MESSAGES, answer="dann_lambda")
def check_dann_lambda(answer, lang):
    last = None
    for p in PROGRESS:
        where = f"p = {fmt(p)}: " if lang == "en" else f"在 p = {fmt(p)} 处，"
        value = call(answer, p, lang=lang, where=where)
        if value is None:
            raise Mismatch(_text("number_none", lang, where=where))
        if isinstance(value, bool):
            raise Mismatch(message(COMMON, "not_numeric", lang, where=where, kind="bool"))
        array = to_array(value)
        if array is None or array.dtype.kind not in "iufc":
            raise Mismatch(message(COMMON, "not_numeric", lang, where=where, kind=type(value).__name__))
        if array.dtype.kind == "c":
            raise Mismatch(message(COMMON, "dtype", lang, where=where, what=_text("lam_word", lang),
                                   got=str(array.dtype), expected="float32"))
        if array.shape != ():
            raise Mismatch(message(COMMON, "shape", lang, where=where, what=_text("lam_word", lang),
                                   got=list(array.shape), expected=[]))
        got = float(array)
        if not np.isfinite(got):
            raise Mismatch(message(COMMON, "nan", lang, where=where, what=_text("lam_word", lang)))
        expected = lambda_reference(p)
        if not np.isclose(got, expected, rtol=1e-4, atol=1e-6):
            raise Mismatch(_text("schedule_value", lang, p=fmt(p), got=fmt(got), expected=fmt(expected))
                           + _schedule_hint(got, p, lang))
        last = got
    return _text("ex2_passed", lang, ps="{" + ", ".join(fmt(p) for p in PROGRESS) + "}", last=f"{last:.5f}")
