"""Checks for chapter 2: tf.stop_gradient and the "forward f, backward g" trick.

* ``ch02-ex1``: ``clipped_identity_ste(x)``, forward ``tf.sign(x)``, gradient 1
  where :math:`|x| \\le 1` and 0 elsewhere.
* ``ch02-ex2``: ``scaled_gradient(x, s)``, forward the identity, gradient
  multiplied by ``s``.
* ``ch02-ex4``: ``td_loss(w, phi, phi_next, reward, gamma)``, the TD(0) loss of
  a linear value function whose target is stopped (a semi-gradient).

Every reference below is a closed NumPy formula, independent of the chapter's
solutions.
"""

from __future__ import annotations

from typing import Callable, Optional

import numpy as np
import tensorflow as tf

from ._core import (COMMON, Mismatch, as_array, call, exercise, fmt, kink_and_random_points,
                    message, raised, require_tensor)

MESSAGES = {
    # ch02-ex1
    "ste_forward": {
        "en": "The forward pass must be tf.sign(x) (0 at x = 0).",
        "zh": "前向必须是 tf.sign(x)（在 x = 0 处为 0）。",
    },
    "ste_inside": {
        "en": "Because |x| ≤ 1 (the boundary included), the gradient must pass through unchanged.",
        "zh": "因为 |x| ≤ 1（含边界），梯度应原样通过。",
    },
    "ste_outside": {
        "en": "Because |x| > 1, the gradient must be blocked (0).",
        "zh": "因为 |x| > 1，梯度应被截断（为 0）。",
    },
    "ste_all_zero": {
        "en": "Your gradient is 0 everywhere: tf.sign's own gradient is zero. Put a surrogate g(x) "
              "outside tf.stop_gradient, as in g(x) + tf.stop_gradient(tf.sign(x) - g(x)).",
        "zh": "你的梯度处处为 0：tf.sign 自身的梯度就是零。请把替代函数 g(x) 放在 tf.stop_gradient "
              "之外，例如 g(x) + tf.stop_gradient(tf.sign(x) - g(x))。",
    },
    "ste_passed": {
        "en": "correct: forward tf.sign(x), gradient 1 on [-1, 1] (boundary included) and 0 outside, "
              "on {n} points including 0 and ±1, for a 2-D input, and scaled by the upstream gradient.",
        "zh": "正确：前向为 tf.sign(x)，梯度在 [-1, 1]（含边界）上为 1、其外为 0；在包括 0 与 ±1 在内的 "
              "{n} 个点上、对二维输入、以及乘上上游梯度之后都成立。",
    },
    # ch02-ex2
    "with_s": {"en": "with s = {s}, ", "zh": "当 s = {s} 时，"},
    "scaled_forward": {
        "en": "The forward pass must return x unchanged, whatever s is.",
        "zh": "无论 s 取何值，前向都必须原样返回 x。",
    },
    "scaled_gradient": {
        "en": "The gradient must be s times the upstream gradient, which is 1 here.",
        "zh": "梯度应为上游梯度（此处为 1）的 s 倍。",
    },
    "scaled_passed": {
        "en": "correct: forward x and gradient s·dy for s in {ss}, including s = 0 (gradient 0, not None) "
              "and s = -1 (a gradient reversal).",
        "zh": "正确：对 s ∈ {ss}，前向为 x、梯度为 s·dy；包括 s = 0（梯度为 0 而不是 None）"
              "和 s = -1（梯度反转）。",
    },
    # shared by ex1 and ex2
    "upstream": {
        "en": "{prefix}with an upstream gradient of {dy} at x = {x}, your gradient is {got}; expected {expected}. "
              "Multiply by the upstream gradient (dy); tf.stop_gradient tricks do this automatically.",
        "zh": "{prefix}在 x = {x} 处上游梯度为 {dy} 时，你的梯度为 {got}，应为 {expected}。"
              "请乘上上游梯度（dy）；用 tf.stop_gradient 的写法会自动做到这一点。",
    },
    # ch02-ex4
    "loss_word": {"en": "loss", "zh": "损失"},
    "td_case": {"en": "case {k} (gamma = {gamma}): ", "zh": "第 {k} 组（gamma = {gamma}）："},
    "td_value": {
        "en": "{where}your loss is {got}; expected {expected}, the batch mean of "
              "1/2 (v(s) - (r + gamma v(s')))^2.",
        "zh": "{where}你的损失为 {got}，应为 {expected}，即 1/2 (v(s) - (r + gamma v(s')))^2 的批均值。",
    },
    "td_none": {
        "en": "{where}the gradient with respect to w is None: the prediction v(s) = phi · w must stay "
              "differentiable; stop only the target.",
        "zh": "{where}对 w 的梯度为 None：预测值 v(s) = phi · w 必须保持可导，只停止目标值的梯度。",
    },
    "td_full": {
        "en": "{where}your gradient {got} also flows through the target r + gamma v(s'); expected {expected}. "
              "Wrap the target (or v(s')) in tf.stop_gradient.",
        "zh": "{where}你的梯度 {got} 还流经了目标值 r + gamma v(s')，应为 {expected}。"
              "请用 tf.stop_gradient 包住目标值（或 v(s')）。",
    },
    "td_reversed": {
        "en": "{where}your gradient {got} flows only through the target; expected {expected}. "
              "You stopped the prediction v(s) instead of the target.",
        "zh": "{where}你的梯度 {got} 只流经了目标值，应为 {expected}。你停止的是预测值 v(s)，而不是目标值。",
    },
    "td_gradient": {
        "en": "{where}your gradient with respect to w is {got}; expected {expected}, "
              "the batch mean of (v(s) - y) phi with y stopped.",
        "zh": "{where}你对 w 的梯度为 {got}，应为 {expected}，即目标 y 停止梯度后 (v(s) - y) phi 的批均值。",
    },
    "td_passed": {
        "en": "correct on {n} batches: the loss value, and a semi-gradient that flows through v(s) only.",
        "zh": "在 {n} 个批次上都正确：损失值正确，且半梯度只流经 v(s)。",
    },
}


# -- elementwise ops: value and vector-Jacobian product ----------------------

def _value_and_vjp(fn: Callable, x: np.ndarray, upstream: Optional[np.ndarray], *, lang: str,
                   prefix: str = ""):
    """Run ``fn`` on ``x`` under a tape; return value and gradient (weighted by ``upstream``)."""
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = call(fn, xt, lang=lang, where=prefix)
    y_array = as_array(y, lang=lang, what="forward", where=prefix, shape=x.shape)
    require_tensor(y, lang=lang, where=prefix)
    try:
        grad = tape.gradient(y, xt, output_gradients=None if upstream is None else tf.constant(upstream))
    except Exception as err:
        raise raised(err, lang, prefix) from None
    g_array = as_array(grad, lang=lang, what="gradient", where=prefix, shape=x.shape, none_key="none_gradient")
    return y_array, g_array


def _join(text: str, hint: str, lang: str) -> str:
    """Append a hint to a sentence: a space in English, nothing after a Chinese full stop."""
    if not hint:
        return text
    return text + ("" if lang == "zh" else " ") + hint


def _first_bad(got, expected, atol=1e-5):
    bad = np.flatnonzero(~np.isclose(np.ravel(got), np.ravel(expected), atol=atol, rtol=1e-4))
    return None if bad.size == 0 else int(bad[0])


def _compare_elementwise(answer: Callable, x: np.ndarray, value: np.ndarray, grad: np.ndarray, *,
                         lang: str, prefix: str = "", forward_hint: str = "",
                         gradient_hint: Callable[[float], str] = lambda x: "",
                         all_zero_hint: str = ""):
    """Compare value and gradient (upstream ones) with the reference arrays; raise on the first mismatch."""
    y, g = _value_and_vjp(answer, x, None, lang=lang, prefix=prefix)
    flat_x = np.ravel(x)
    _compare_values(y, value, x, lang=lang, prefix=prefix, hint=forward_hint)
    i = _first_bad(g, grad)
    if i is not None:
        if all_zero_hint and not np.any(g) and np.any(grad):
            raise Mismatch(prefix + all_zero_hint)
        text = message(COMMON, "value", lang, where=prefix + message(COMMON, "at", lang, x=fmt(flat_x[i])),
                       what=message(COMMON, "gradient", lang), got=fmt(np.ravel(g)[i]),
                       expected=fmt(np.ravel(grad)[i]))
        raise Mismatch(_join(text, gradient_hint(float(flat_x[i])), lang))


def _compare_values(y: np.ndarray, value: np.ndarray, x: np.ndarray, *, lang: str, prefix: str = "",
                    hint: str = ""):
    """The forward values must be the reference's; raise on the first mismatch."""
    i = _first_bad(y, value)
    if i is not None:
        text = message(COMMON, "value", lang, where=prefix + message(COMMON, "at", lang, x=fmt(np.ravel(x)[i])),
                       what=message(COMMON, "forward", lang), got=fmt(np.ravel(y)[i]),
                       expected=fmt(np.ravel(value)[i]))
        raise Mismatch(_join(text, hint, lang))


def _compare_upstream(answer: Callable, x: np.ndarray, value: np.ndarray, local_grad: np.ndarray,
                      upstream: float, *, lang: str, prefix: str = "", forward_hint: str = ""):
    """The gradient must be the local derivative times a non-unit upstream gradient.

    The value of this call is compared as well: every call of the answer counts.
    """
    dy = np.full(x.shape, upstream, dtype=x.dtype)
    y, g = _value_and_vjp(answer, x, dy, lang=lang, prefix=prefix)
    _compare_values(y, value, x, lang=lang, prefix=prefix, hint=forward_hint)
    expected = local_grad * dy
    i = _first_bad(g, expected)
    if i is not None:
        raise Mismatch(message(MESSAGES, "upstream", lang, prefix=prefix, dy=fmt(upstream),
                               x=fmt(np.ravel(x)[i]), got=fmt(np.ravel(g)[i]),
                               expected=fmt(np.ravel(expected)[i])))


# -- ch02-ex1: the clipped straight-through estimator --------------------------

STE_POINTS = kink_and_random_points([0.0, 0.5, 1.0, -1.0, 1.5, -2.5, -0.3], seed=2)


def _ste_reference(x: np.ndarray):
    return np.sign(x).astype(np.float32), (np.abs(x) <= 1).astype(np.float32)


@exercise("ch02-ex1", MESSAGES, answer="clipped_identity_ste")
def check_clipped_identity_ste(answer, lang):
    def gradient_hint(x):
        return message(MESSAGES, "ste_inside" if abs(x) <= 1 else "ste_outside", lang)

    hints = dict(forward_hint=message(MESSAGES, "ste_forward", lang), gradient_hint=gradient_hint,
                 all_zero_hint=message(MESSAGES, "ste_all_zero", lang))
    value, grad = _ste_reference(STE_POINTS)
    _compare_elementwise(answer, STE_POINTS, value, grad, lang=lang, **hints)
    # any shape: a 2-D batch of the same points
    square = STE_POINTS[:30].reshape(5, 6)
    value, grad = _ste_reference(square)
    _compare_elementwise(answer, square, value, grad, lang=lang, **hints)
    _compare_upstream(answer, STE_POINTS, *_ste_reference(STE_POINTS), 2.5, lang=lang,
                      forward_hint=hints["forward_hint"])
    return message(MESSAGES, "ste_passed", lang, n=STE_POINTS.size)


# -- ch02-ex2: forward identity, gradient times s -------------------------------

SCALED_POINTS = kink_and_random_points([0.0, 1.5, -2.0], seed=3)
SCALES = (0.5, -1.0, 0.0, 3.0)


@exercise("ch02-ex2", MESSAGES, answer="scaled_gradient")
def check_scaled_gradient(answer, lang):
    x = SCALED_POINTS
    for s in SCALES:
        prefix = message(MESSAGES, "with_s", lang, s=fmt(s))
        _compare_elementwise(lambda v, s=s: answer(v, s), x, x.copy(), np.full_like(x, s), lang=lang,
                             prefix=prefix, forward_hint=message(MESSAGES, "scaled_forward", lang),
                             gradient_hint=lambda _x: message(MESSAGES, "scaled_gradient", lang))
    s = SCALES[0]
    _compare_upstream(lambda v: answer(v, s), x, x.copy(), np.full_like(x, s), 4.0, lang=lang,
                      prefix=message(MESSAGES, "with_s", lang, s=fmt(s)),
                      forward_hint=message(MESSAGES, "scaled_forward", lang))
    return message(MESSAGES, "scaled_passed", lang, ss="{" + ", ".join(fmt(s) for s in SCALES) + "}")


# -- ch02-ex4: TD(0) loss with a stopped target -----------------------------------

def _td_cases():
    rng = np.random.default_rng(4)
    cases = []
    for n, d, gamma in ((5, 3, 0.9), (8, 4, 0.5), (1, 2, 0.99)):
        cases.append(dict(
            w=rng.normal(size=d).astype(np.float32),
            phi=rng.normal(size=(n, d)).astype(np.float32),
            phi_next=rng.normal(size=(n, d)).astype(np.float32),
            reward=rng.normal(size=n).astype(np.float32),
            gamma=gamma,
        ))
    return cases


TD_CASES = _td_cases()


def td_reference(w, phi, phi_next, reward, gamma):
    """Loss, semi-gradient, full gradient and target-only gradient, in float64 NumPy."""
    w, phi, phi_next, reward = (np.asarray(a, np.float64) for a in (w, phi, phi_next, reward))
    error = phi @ w - (reward + gamma * phi_next @ w)
    loss = np.mean(0.5 * error ** 2)
    n = len(reward)
    semi = phi.T @ error / n
    full = (phi - gamma * phi_next).T @ error / n
    target_only = -gamma * phi_next.T @ error / n
    return loss, semi, full, target_only


def _close(a, b):
    return bool(np.allclose(a, b, rtol=1e-4, atol=1e-5))


@exercise("ch02-ex4", MESSAGES, answer="td_loss")
def check_td_loss(answer, lang):
    loss_word = message(MESSAGES, "loss_word", lang)
    for k, case in enumerate(TD_CASES, start=1):
        where = message(MESSAGES, "td_case", lang, k=k, gamma=case["gamma"])
        w = tf.Variable(case["w"])
        args = (tf.constant(case["phi"]), tf.constant(case["phi_next"]), tf.constant(case["reward"]), case["gamma"])
        with tf.GradientTape() as tape:
            loss = call(answer, w, *args, lang=lang, where=where)
        value = float(as_array(loss, lang=lang, what=loss_word, where=where, shape=()))
        expected, semi, full, target_only = td_reference(case["w"], case["phi"], case["phi_next"],
                                                         case["reward"], case["gamma"])
        if not np.isclose(value, expected, rtol=1e-4, atol=1e-6):
            raise Mismatch(message(MESSAGES, "td_value", lang, where=where, got=fmt(value), expected=fmt(expected)))
        require_tensor(loss, lang=lang, where=where)
        try:
            grad = tape.gradient(loss, w)
        except Exception as err:
            raise raised(err, lang, where) from None
        if grad is None:
            raise Mismatch(message(MESSAGES, "td_none", lang, where=where))
        got = as_array(grad, lang=lang, what="gradient", where=where, shape=case["w"].shape)
        if _close(got, semi):
            continue
        key = "td_full" if _close(got, full) else "td_reversed" if _close(got, target_only) else "td_gradient"
        raise Mismatch(message(MESSAGES, key, lang, where=where, got=fmt(got), expected=fmt(semi)))
    return message(MESSAGES, "td_passed", lang, n=len(TD_CASES))
