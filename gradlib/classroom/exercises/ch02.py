"""Checks for chapter 2: tf.stop_gradient and the "forward f, backward g" trick.

* ``ch02-ex1``: ``clipped_identity_ste(x)``, forward ``tf.sign(x)``, gradient 1
  where :math:`|x| \\le 1` and 0 elsewhere.
* ``ch02-ex2``: ``scaled_gradient(x, s)``, forward the identity, gradient
  multiplied by ``s``.  A correct answer passes whether or not its value is
  ``x`` bit for bit; the success message says which it is.
* ``ch02-ex4``: ``td_loss(w, phi, phi_next, reward, done, gamma)``, the TD(0)
  loss of a linear value function whose target is stopped (a semi-gradient)
  and is just the reward where ``done`` is 1.  The features of a terminal next
  state are arbitrary: finite numbers in the first cases (so that a wrong mask
  shows in the value), NaN in the last (so that a mask written as a product,
  0 * NaN, shows as a NaN loss).

Every reference below is a closed NumPy formula, independent of the chapter's
solutions.  Before the generic "your value is ...; expected ..." message, each
check recognises the most likely wrong answers and names the mistake
(``_diagnose_ste``, ``_diagnose_ste_nan``, ``_diagnose_scaled``, the ``td_*`` messages).  ch02-ex1 and
ch02-ex2 ask for the trick written with ``tf.stop_gradient``:
``_without_straight_through`` notices an answer that calls
``gradlib.straight_through`` (the exercise's answer in one line) instead.
(ch02-ex3, a "find the bug" exercise, is answered in writing; its reference
solution is tested in ``tests/test_exercises_ch02.py``.)
"""

from __future__ import annotations

import functools
from typing import Callable, Optional

import numpy as np
import tensorflow as tf

from ._core import (COMMON, Mismatch, as_array, call, exercise, fmt, kink_and_random_points,
                    message, raised, require_tensor, to_array)

MESSAGES = {
    # ch02-ex1
    "ste_forward": {
        "en": "The forward pass must be tf.sign(x) (0 at x = 0).",
        "zh": "前向必须是 tf.sign(x)（在 x = 0 处为 0）。",
    },
    "ste_forward_clip": {
        "en": "your value is clip(x, -1, 1) (at x = {x}: {got}; expected {expected}). The clip belongs to the "
              "backward pass only: it is the surrogate g whose gradient the op uses. The value must be tf.sign(x).",
        "zh": "你的前向值是 clip(x, -1, 1)（在 x = {x} 处为 {got}，应为 {expected}）。截断只属于反向：它是提供梯度的"
              "替代函数 g。前向值必须是 tf.sign(x)。",
    },
    "ste_unclipped": {
        "en": "your gradient is 1 everywhere, also where |x| > 1 (at x = {x}: {got}; expected 0): that is the plain "
              "straight-through estimator, g(x) = x. Use g(x) = clip(x, -1, 1), whose gradient is 0 outside [-1, 1].",
        "zh": "你的梯度处处为 1，在 |x| > 1 处也是如此（在 x = {x} 处为 {got}，应为 0）：这是普通的直通估计器，"
              "g(x) = x。请取 g(x) = clip(x, -1, 1)，它的梯度在 [-1, 1] 之外为 0。",
    },
    "ste_tanh": {
        "en": "your gradient is 1 - tanh(x)^2 (at x = {x}: {got}; expected {expected}): your surrogate is tanh. "
              "The exercise asks for g(x) = clip(x, -1, 1), whose gradient is exactly 1 on [-1, 1].",
        "zh": "你的梯度是 1 - tanh(x)^2（在 x = {x} 处为 {got}，应为 {expected}）：你用的替代函数是 tanh。"
              "本题要求 g(x) = clip(x, -1, 1)，它的梯度在 [-1, 1] 上恰好为 1。",
    },
    "ste_half_slope": {
        "en": "your gradient is 0.5 on [-1, 1] (at x = {x}: {got}; expected {expected}): that is the slope of "
              "hard_sigmoid(x) = clip((x + 1) / 2, 0, 1). Use g(x) = clip(x, -1, 1), or 2 * hard_sigmoid(x) - 1, "
              "whose slope is 1 there.",
        "zh": "你的梯度在 [-1, 1] 上为 0.5（在 x = {x} 处为 {got}，应为 {expected}）：这是 "
              "hard_sigmoid(x) = clip((x + 1) / 2, 0, 1) 的斜率。请取 g(x) = clip(x, -1, 1)，"
              "或 2 * hard_sigmoid(x) - 1，它们在那里的斜率为 1。",
    },
    "ste_multiplicative": {
        "en": "your value is NaN at x = 0 only: something in it divides by x (or takes log|x|) there, as the "
              "multiplicative variant tf.stop_gradient(f(x) / g(x)) * g(x) does, which divides by g(0) = 0 "
              "(and whose gradient is (f/g)·g', not g'). Use the additive trick, "
              "as in g(x) + tf.stop_gradient(tf.sign(x) - g(x)).",
        "zh": "你的前向值只在 x = 0 处为 NaN：其中有某一步在那里除以 x（或取 log|x|），就像乘法变体 "
              "tf.stop_gradient(f(x) / g(x)) * g(x) 那样，它要除以 g(0) = 0（而且它的梯度是 (f/g)·g'，而不是 g'）。请使用加法形式的技巧，例如 "
              "g(x) + tf.stop_gradient(tf.sign(x) - g(x))。",
    },
    "ste_boundary": {
        "en": "at x = ±1 your gradient is 0; everywhere else it is right. The boundary belongs to the interval: "
              "the gradient must be 1 where |x| ≤ 1. tf.clip_by_value's own gradient is 1 at the bounds; "
              "a hand-made mask needs <=, not <.",
        "zh": "在 x = ±1 处你的梯度为 0，其余各处都正确。边界属于区间：在 |x| ≤ 1 处梯度必须为 1。"
              "tf.clip_by_value 自身在边界上的梯度就是 1；自己构造掩码时要用 <=，而不是 <。",
    },
    "ste_inside": {
        "en": "Because |x| ≤ 1 (the boundary included), the gradient must pass through unchanged.",
        "zh": "因为 |x| ≤ 1（含边界），梯度应原样通过。",
    },
    "ste_outside": {
        "en": "Because |x| > 1, the gradient must be blocked (0).",
        "zh": "因为 |x| > 1，梯度应被阻断（为 0）。",
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
    "scaled_value": {
        "en": "your value is s·x (at x = {x}: {got}; expected {expected}): you scaled the value together with "
              "the gradient. The forward pass must return x unchanged: keep s * x for the gradient and add a "
              "stopped term that brings the value back to x.",
        "zh": "你的前向值是 s·x（在 x = {x} 处为 {got}，应为 {expected}）：你把值和梯度一起缩放了。前向必须原样"
              "返回 x：保留 s * x 来提供梯度，再加上一个被停止梯度的项，把值拉回 x。",
    },
    "scaled_swapped": {
        "en": "your value is s·x and your gradient is 1 (at x = {x}: value {got}, expected {expected}): the two "
              "roles are swapped. The term outside tf.stop_gradient sets the gradient, so it must be s * x; "
              "the stopped term must bring the value back to x.",
        "zh": "你的前向值是 s·x，梯度是 1（在 x = {x} 处值为 {got}，应为 {expected}）：两项的角色对调了。"
              "tf.stop_gradient 之外的项决定梯度，所以它必须是 s * x；被停止的项负责把值拉回 x。",
    },
    "scaled_sum": {
        "en": "your value is (1 + s)·x (at x = {x}: {got}; expected {expected}): tf.stop_gradient(x) + s * x "
              "gives the right gradient, but its value counts x and s·x. The stopped term must be x - s·x, "
              "so that the two s·x cancel in the value.",
        "zh": "你的前向值是 (1 + s)·x（在 x = {x} 处为 {got}，应为 {expected}）：tf.stop_gradient(x) + s * x "
              "的梯度是对的，但它的值把 x 和 s·x 都算了进去。被停止梯度的项必须是 x - s·x，"
              "这样两个 s·x 在值里才会相互抵消。",
    },
    "scaled_wrong_term": {
        "en": "your gradient is 1 - s = {got}, not s = {expected}: tf.stop_gradient is on the wrong term. "
              "The term that stays outside the stop must be s * x, the one whose derivative is s.",
        "zh": "你的梯度是 1 - s = {got}，而不是 s = {expected}：tf.stop_gradient 包错了项。"
              "留在停止之外的必须是 s * x，也就是导数为 s 的那一项。",
    },
    "scaled_none": {
        "en": "{where}the gradient is None: no differentiable path from x to your output (for example, "
              "s * tf.stop_gradient(x) stops x on every path). Keep s * x outside the stop, so that x stays "
              "connected even when s = 0: "
              "the gradient must then be 0, not None.",
        "zh": "{where}梯度为 None：从 x 到你的输出之间没有可求导的路径（例如 s * tf.stop_gradient(x) 会阻断 x 的"
              "每一条路径）。请把 s * x 留在停止之外，这样即使 s = 0，x 也仍然连通：此时梯度应为 0，而不是 None。",
    },
    "scaled_passed": {
        "en": "correct: forward x and gradient s·dy for s in {ss}, including s = 0 (gradient 0, not None) "
              "and s = -1 (a gradient reversal).",
        "zh": "正确：对 s ∈ {ss}，前向为 x、梯度为 s·dy；包括 s = 0（梯度为 0 而不是 None）"
              "和 s = -1（梯度反转）。",
    },
    "scaled_exact": {
        "en": " Your value is x bit for bit at every point.",
        "zh": "而且你的前向值在每个点上都与 x 逐位相同。",
    },
    "scaled_rounded": {
        "en": " Your value equals x up to rounding: with s = {s} it differs from x in the last bits at {n} of "
              "{m} points. That is accepted; for a bit-exact value see the chapter's section on the forward "
              "value, bit for bit.",
        "zh": "你的前向值只在舍入误差范围内等于 x：当 s = {s} 时，{m} 个点中有 {n} 个在最后几位上与 x 不同。"
              "这可以接受；想让值逐位精确，请看本章“逐位精确的前向值”一节。",
    },
    # shared by ex1 and ex2
    "straight_through": {
        "en": "your code calls gradlib.straight_through, which is this exercise's answer in one line. "
              "Write the trick yourself with tf.stop_gradient, as in g(x) + tf.stop_gradient(f(x) - g(x)).",
        "zh": "你的代码调用了 gradlib.straight_through，它一行就给出了本题的答案。"
              "请自己用 tf.stop_gradient 写出这个技巧，例如 g(x) + tf.stop_gradient(f(x) - g(x))。",
    },
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
        "en": "{where}your loss is {got}; expected {expected}, the batch mean of 1/2 (v(s) - y)^2 with "
              "y = r + gamma v(s'), and y = r where done = 1.",
        "zh": "{where}你的损失为 {got}，应为 {expected}，即 1/2 (v(s) - y)^2 的批均值，其中 y = r + gamma v(s')，"
              "在 done = 1 处 y = r。",
    },
    "td_half": {
        "en": "{where}your loss is {got}, twice the expected {expected}: the factor 1/2 of "
              "1/2 (v(s) - y)^2 is missing.",
        "zh": "{where}你的损失为 {got}，是应有值 {expected} 的两倍：1/2 (v(s) - y)^2 中的因子 1/2 漏掉了。",
    },
    "td_no_mask": {
        "en": "{where}your loss is {got}; expected {expected}. It is the loss with the target r + gamma v(s') "
              "everywhere: done is ignored. Where done = 1 the episode has ended, there is no v(s') to add, "
              "and the target is r alone.",
        "zh": "{where}你的损失为 {got}，应为 {expected}。这是处处以 r + gamma v(s') 为目标的损失：done 被忽略了。"
              "在 done = 1 处回合已经结束，没有 v(s') 可加，目标只是 r。",
    },
    "td_mask_reversed": {
        "en": "{where}your loss is {got}; expected {expected}. It is the loss with the mask reversed: your "
              "target adds gamma v(s') where done = 1 and drops it where done = 0. Keep gamma v(s') where "
              "done = 0 (1 - done, not done).",
        "zh": "{where}你的损失为 {got}，应为 {expected}。这是掩码反了的损失：你的目标在 done = 1 处加上了 "
              "gamma v(s')，在 done = 0 处却去掉了它。应在 done = 0 处保留 gamma v(s')（用 1 - done，而不是 done）。",
    },
    "td_nan": {
        "en": "{where}your loss is NaN. In this batch the terminal rows of phi_next are NaN, and a mask "
              "written as a product, such as (1 - done) * gamma * v(s'), then gives 0 * NaN = NaN, not 0. "
              "Choose the target with tf.where(done > 0, ...) instead of multiplying (or replace the terminal "
              "rows of phi_next first).",
        "zh": "{where}你的损失为 NaN。在这一批中，phi_next 的终止行是 NaN，于是写成乘积的掩码，"
              "例如 (1 - done) * gamma * v(s')，给出的是 0 * NaN = NaN，而不是 0。请用 tf.where(done > 0, ...) "
              "来选择目标，而不是做乘法（或者先替换掉 phi_next 的终止行）。",
    },
    "td_sum": {
        "en": "{where}your loss is {got}, {n} times the expected {expected}: that is the sum over the batch of "
              "{n} states; return the batch mean (tf.reduce_mean).",
        "zh": "{where}你的损失为 {got}，是应有值 {expected} 的 {n} 倍：这是对 {n} 个状态的批求和；"
              "请返回批均值（tf.reduce_mean）。",
    },
    "td_none": {
        "en": "{where}the gradient with respect to w is None: the prediction v(s) = phi · w must stay "
              "differentiable; stop only the target.",
        "zh": "{where}对 w 的梯度为 None：预测值 v(s) = phi · w 必须保持可导，只停止目标值的梯度。",
    },
    "td_full": {
        "en": "{where}your gradient {got} also flows through the target y; expected {expected}. "
              "Wrap the target (or v(s')) in tf.stop_gradient.",
        "zh": "{where}你的梯度 {got} 还流经了目标值 y，应为 {expected}。"
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
        "en": "correct on {n} batches, terminal transitions included (with NaN features in the last): the loss "
              "value, and a semi-gradient that flows through v(s) only.",
        "zh": "在 {n} 个批次上都正确，包括终止的转移（最后一批的终止特征为 NaN）：损失值正确，且半梯度只流经 v(s)。",
    },
}


# -- elementwise ops: value and vector-Jacobian product ----------------------

def _value_and_vjp(fn: Callable, x: np.ndarray, upstream: Optional[np.ndarray], *, lang: str,
                   prefix: str = "", none_message: str = "",
                   diagnose_nan: Optional[Callable[[np.ndarray, np.ndarray], str]] = None):
    """Run ``fn`` on ``x`` under a tape; return value and gradient (weighted by ``upstream``).

    ``none_message``, if given, replaces the generic message for a ``None`` gradient.
    ``diagnose_nan(x, y)``, if given, runs when the value has the right shape but
    non-finite entries: it returns the message for a recognised mistake, or "".
    """
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = call(fn, xt, lang=lang, where=prefix)
    if diagnose_nan is not None:
        raw = to_array(y)
        if (raw is not None and raw.dtype.kind == "f" and raw.shape == x.shape
                and not np.all(np.isfinite(raw))):
            text = diagnose_nan(x, raw)
            if text:
                raise Mismatch(prefix + text)
    y_array = as_array(y, lang=lang, what="forward", where=prefix, shape=x.shape)
    require_tensor(y, lang=lang, where=prefix)
    try:
        grad = tape.gradient(y, xt, output_gradients=None if upstream is None else tf.constant(upstream))
    except Exception as err:
        raise raised(err, lang, prefix) from None
    if grad is None and none_message:
        raise Mismatch(none_message)
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


def _matches(got, expected) -> bool:
    """``got`` equals ``expected`` everywhere, to the checks' tolerance."""
    return _first_bad(got, np.broadcast_to(expected, np.shape(got))) is None


def _compare_elementwise(answer: Callable, x: np.ndarray, value: np.ndarray, grad: np.ndarray, *,
                         lang: str, prefix: str = "", forward_hint: str = "",
                         gradient_hint: Callable[[float], str] = lambda x: "",
                         all_zero_hint: str = "", none_message: str = "",
                         diagnose: Optional[Callable[[np.ndarray, np.ndarray, np.ndarray], str]] = None,
                         diagnose_nan: Optional[Callable[[np.ndarray, np.ndarray], str]] = None):
    """Compare value and gradient (upstream ones) with the reference arrays; raise on the first mismatch.

    ``diagnose(x, y, g)`` runs first when anything mismatches: it returns the
    message for a recognised wrong answer, or "" to fall back on the generic
    point-by-point messages; ``diagnose_nan(x, y)`` does the same for a value
    with NaN or inf entries.  Returns the answer's value.
    """
    y, g = _value_and_vjp(answer, x, None, lang=lang, prefix=prefix, none_message=none_message,
                          diagnose_nan=diagnose_nan)
    flat_x = np.ravel(x)
    if diagnose is not None and (_first_bad(y, value) is not None or _first_bad(g, grad) is not None):
        text = diagnose(x, y, g)
        if text:
            raise Mismatch(prefix + text)
    _compare_values(y, value, x, lang=lang, prefix=prefix, hint=forward_hint)
    i = _first_bad(g, grad)
    if i is not None:
        if all_zero_hint and not np.any(g) and np.any(grad):
            raise Mismatch(prefix + all_zero_hint)
        text = message(COMMON, "value", lang, where=prefix + message(COMMON, "at", lang, x=fmt(flat_x[i])),
                       what=message(COMMON, "gradient", lang), got=fmt(np.ravel(g)[i]),
                       expected=fmt(np.ravel(grad)[i]))
        raise Mismatch(_join(text, gradient_hint(float(flat_x[i])), lang))
    return y


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


# -- ex1 and ex2 ask for the trick itself, not gradlib.straight_through --------------

class _StraightThroughWatch:
    """While the check runs, ``gradlib.straight_through`` notes that it was called.

    The package attribute is replaced by a wrapper that records the call and
    then does the same work, and is restored on exit, also when the check is
    stopped by its time limit.
    """

    def __enter__(self) -> "_StraightThroughWatch":
        import gradlib  # here, not at import time: gradlib imports this module

        self.package, self.original, self.used = gradlib, gradlib.straight_through, False

        @functools.wraps(self.original)
        def watched(*args, **kwargs):
            self.used = True
            return self.original(*args, **kwargs)

        gradlib.straight_through = watched
        return self

    def __exit__(self, *exc_info) -> bool:
        self.package.straight_through = self.original
        return False


def _made_by_straight_through(answer) -> bool:
    """``answer`` is an op that ``gradlib.straight_through`` returned (made before the check ran)."""
    try:
        return (getattr(answer, "__module__", None) == "gradlib.tricks"
                and str(getattr(answer, "__qualname__", "")).startswith("straight_through."))
    except Exception:  # a reader's object whose attributes raise: not ours
        return False


def _without_straight_through(check: Callable) -> Callable:
    """Wrap a check: an answer that uses ``gradlib.straight_through`` fails with its own message."""
    @functools.wraps(check)
    def wrapped(answer, lang):
        used = message(MESSAGES, "straight_through", lang)
        if _made_by_straight_through(answer):
            raise Mismatch(used)
        with _StraightThroughWatch() as watch:
            try:
                result = check(answer, lang)
            except Mismatch:
                if watch.used:
                    raise Mismatch(used) from None
                raise
        if watch.used:
            raise Mismatch(used)
        return result
    return wrapped


# -- ch02-ex1: the clipped straight-through estimator --------------------------

STE_POINTS = kink_and_random_points([0.0, 0.5, 1.0, -1.0, 1.5, -2.5, -0.3], seed=2)


def _ste_reference(x: np.ndarray):
    return np.sign(x).astype(np.float32), (np.abs(x) <= 1).astype(np.float32)


def _at(x, got, expected, mask):
    """Format the first point of ``mask`` (where the answer is wrong) for a message."""
    i = int(np.flatnonzero(np.ravel(mask))[0])
    return dict(x=fmt(np.ravel(x)[i]), got=fmt(np.ravel(got)[i]), expected=fmt(np.ravel(expected)[i]))


def _diagnose_ste(x, y, g, lang: str) -> str:
    """The message for a recognised wrong clipped STE, or ""."""
    value, grad = _ste_reference(x)
    clip = np.clip(x, -1, 1)
    if _matches(y, clip) and not _matches(y, value):
        wrong = ~np.isclose(clip, value)
        return message(MESSAGES, "ste_forward_clip", lang, **_at(x, y, value, wrong))
    if not _matches(y, value):
        return ""
    outside = np.abs(x) > 1
    if _matches(g, 1.0) and outside.any():
        return message(MESSAGES, "ste_unclipped", lang, **_at(x, g, grad, outside))
    smooth = 1 - np.tanh(x) ** 2
    if _matches(g, smooth):
        return message(MESSAGES, "ste_tanh", lang, **_at(x, g, grad, ~np.isclose(smooth, grad)))
    if grad.any() and _matches(g, 0.5 * grad):
        return message(MESSAGES, "ste_half_slope", lang, **_at(x, g, grad, grad != 0))
    boundary = np.abs(x) == 1
    if (boundary.any() and _matches(g[~boundary], grad[~boundary])
            and _matches(g[boundary], 0.0)):
        return message(MESSAGES, "ste_boundary", lang)
    return ""


def _diagnose_ste_nan(x, y, lang: str) -> str:
    """The message for a value that is NaN or inf at x = 0 only: a division by x there, as in the multiplicative variant."""
    bad = ~np.isfinite(y)
    if bad.any() and np.all(x[bad] == 0):
        return message(MESSAGES, "ste_multiplicative", lang)
    return ""


@exercise("ch02-ex1", MESSAGES, answer="clipped_identity_ste")
@_without_straight_through
def check_clipped_identity_ste(answer, lang):
    def gradient_hint(x):
        return message(MESSAGES, "ste_inside" if abs(x) <= 1 else "ste_outside", lang)

    hints = dict(forward_hint=message(MESSAGES, "ste_forward", lang), gradient_hint=gradient_hint,
                 all_zero_hint=message(MESSAGES, "ste_all_zero", lang),
                 diagnose=lambda x, y, g: _diagnose_ste(x, y, g, lang),
                 diagnose_nan=lambda x, y: _diagnose_ste_nan(x, y, lang))
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


def _diagnose_scaled(x, y, g, s: float, lang: str) -> str:
    """The message for a recognised wrong scaled gradient, or ""."""
    if s != 1 and _matches(y, s * x) and not _matches(y, x):
        key = "scaled_swapped" if _matches(g, 1.0) else "scaled_value"
        return message(MESSAGES, key, lang, **_at(x, y, x, ~np.isclose(s * x, x)))
    if s != 0 and _matches(y, (1 + s) * x) and _matches(g, s):
        return message(MESSAGES, "scaled_sum", lang, **_at(x, y, x, ~np.isclose((1 + s) * x, x)))
    if _matches(y, x) and not np.isclose(1 - s, s) and _matches(g, 1 - s):
        return message(MESSAGES, "scaled_wrong_term", lang, got=fmt(1 - s), expected=fmt(s))
    return ""


def _bits_differ(y: np.ndarray, x: np.ndarray) -> int:
    """How many entries of ``y`` are not ``x`` exactly (the sign of zero included)."""
    return int(np.sum((y != x) | (np.signbit(y) != np.signbit(x))))


@exercise("ch02-ex2", MESSAGES, answer="scaled_gradient")
@_without_straight_through
def check_scaled_gradient(answer, lang):
    x = SCALED_POINTS
    inexact = []
    for s in SCALES:
        prefix = message(MESSAGES, "with_s", lang, s=fmt(s))
        y = _compare_elementwise(lambda v, s=s: answer(v, s), x, x.copy(), np.full_like(x, s), lang=lang,
                                 prefix=prefix, forward_hint=message(MESSAGES, "scaled_forward", lang),
                                 gradient_hint=lambda _x: message(MESSAGES, "scaled_gradient", lang),
                                 none_message=message(MESSAGES, "scaled_none", lang, where=prefix),
                                 diagnose=lambda x_, y_, g_, s=s: _diagnose_scaled(x_, y_, g_, s, lang))
        if _bits_differ(y, x):
            inexact.append((s, _bits_differ(y, x)))
    s = SCALES[0]
    _compare_upstream(lambda v: answer(v, s), x, x.copy(), np.full_like(x, s), 4.0, lang=lang,
                      prefix=message(MESSAGES, "with_s", lang, s=fmt(s)),
                      forward_hint=message(MESSAGES, "scaled_forward", lang))
    passed = message(MESSAGES, "scaled_passed", lang, ss="{" + ", ".join(fmt(s) for s in SCALES) + "}")
    if not inexact:
        return passed + message(MESSAGES, "scaled_exact", lang)
    s, n = max(inexact, key=lambda pair: pair[1])
    return passed + message(MESSAGES, "scaled_rounded", lang, s=fmt(s), n=n, m=x.size)


# -- ch02-ex4: TD(0) loss with a stopped target and terminal transitions ------------

def _td_cases():
    """Three batches; ``done`` marks terminal next states, whose features are arbitrary.

    The first two hold finite features there, so that an answer that ignores
    ``done`` or reverses the mask gets a wrong value, not NaN; the last holds
    NaN, as the exercise warns, so that a mask written as a product shows.
    """
    rng = np.random.default_rng(4)
    cases = []
    for n, d, gamma, done, nan_rows in ((5, 3, 0.9, [0, 1, 0, 0, 1], False),
                                        (8, 4, 0.5, [0, 0, 1, 0, 0, 0, 1, 0], False),
                                        (6, 3, 0.99, [1, 0, 0, 1, 0, 0], True)):
        done = np.asarray(done, np.float32)
        phi_next = rng.normal(size=(n, d)).astype(np.float32)
        if nan_rows:
            phi_next[done > 0] = np.nan
        cases.append(dict(
            w=rng.normal(size=d).astype(np.float32),
            phi=rng.normal(size=(n, d)).astype(np.float32),
            phi_next=phi_next,
            reward=rng.normal(size=n).astype(np.float32),
            done=done,
            gamma=gamma,
        ))
    return cases


TD_CASES = _td_cases()


def td_reference(w, phi, phi_next, reward, done, gamma):
    """Loss, semi-gradient, full gradient and target-only gradient, in float64 NumPy.

    The terminal rows of ``phi_next`` are replaced by zeros first (they may be NaN).
    """
    w, phi, phi_next, reward, done = (np.asarray(a, np.float64) for a in (w, phi, phi_next, reward, done))
    live_next = np.where(done[:, None] > 0, 0.0, phi_next)
    error = phi @ w - (reward + gamma * live_next @ w)
    loss = np.mean(0.5 * error ** 2)
    n = len(reward)
    semi = phi.T @ error / n
    full = (phi - gamma * live_next).T @ error / n
    target_only = -gamma * live_next.T @ error / n
    return loss, semi, full, target_only


def td_wrong_masks(w, phi, phi_next, reward, done, gamma):
    """The loss of the two likeliest wrong masks: ``done`` ignored, and ``done`` for ``1 - done``."""
    w, phi, phi_next, reward, done = (np.asarray(a, np.float64) for a in (w, phi, phi_next, reward, done))
    v, v_next = phi @ w, phi_next @ w
    return {"td_no_mask": np.mean(0.5 * (v - reward - gamma * v_next) ** 2),
            "td_mask_reversed": np.mean(0.5 * (v - reward - gamma * done * v_next) ** 2)}


def _close(a, b):
    return bool(np.allclose(a, b, rtol=1e-4, atol=1e-5))


def _value_message(value: float, expected: float, case: dict, where: str, lang: str) -> str:
    """The message for a wrong loss value; the wrong masks and two common slips (no 1/2, a sum) are named."""
    values = dict(where=where, got=fmt(value), expected=fmt(expected))
    if np.all(np.isfinite(case["phi_next"])):
        for key, wrong in td_wrong_masks(case["w"], case["phi"], case["phi_next"], case["reward"], case["done"],
                                         case["gamma"]).items():
            if np.isclose(value, wrong, rtol=1e-4) and not np.isclose(wrong, expected, rtol=1e-4):
                return message(MESSAGES, key, lang, **values)
    n = len(case["reward"])
    if not np.isclose(expected, 0, atol=1e-6):
        if np.isclose(value, 2 * expected, rtol=1e-4):
            return message(MESSAGES, "td_half", lang, **values)
        if n > 1 and np.isclose(value, n * expected, rtol=1e-4):
            return message(MESSAGES, "td_sum", lang, n=n, **values)
    return message(MESSAGES, "td_value", lang, **values)


@exercise("ch02-ex4", MESSAGES, answer="td_loss")
def check_td_loss(answer, lang):
    loss_word = message(MESSAGES, "loss_word", lang)
    for k, case in enumerate(TD_CASES, start=1):
        where = message(MESSAGES, "td_case", lang, k=k, gamma=case["gamma"])
        w = tf.Variable(case["w"])
        args = (tf.constant(case["phi"]), tf.constant(case["phi_next"]), tf.constant(case["reward"]),
                tf.constant(case["done"]), case["gamma"])
        with tf.GradientTape() as tape:
            loss = call(answer, w, *args, lang=lang, where=where)
        raw = to_array(loss)
        if (raw is not None and raw.dtype.kind == "f" and raw.shape == () and np.isnan(raw)
                and not np.all(np.isfinite(case["phi_next"]))):
            raise Mismatch(message(MESSAGES, "td_nan", lang, where=where))
        value = float(as_array(loss, lang=lang, what=loss_word, where=where, shape=()))
        expected, semi, full, target_only = td_reference(case["w"], case["phi"], case["phi_next"],
                                                         case["reward"], case["done"], case["gamma"])
        if not np.isclose(value, expected, rtol=1e-4, atol=1e-6):
            raise Mismatch(_value_message(value, expected, case, where, lang))
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
