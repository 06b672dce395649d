"""Checks for chapter 6: DANN and the gradient reversal layer.

* ``ch06-ex1``: ``reverse_gradient(x, lam)`` with ``tf.custom_gradient``: the
  value is ``x`` bit for bit, the gradient is :math:`-\\lambda` times the
  upstream gradient, ``lam`` gets no gradient.  ``gradlib.gradient_reversal``
  (or the ``GradientReversal`` layer) is the answer in one line and is
  refused, and so is a layer without a custom gradient (the stop_gradient
  trick).
* ``ch06-ex2``: ``dann_lambda(p)``, the schedule
  :math:`\\lambda_p = 2/(1 + e^{-10 p}) - 1` of Ganin et al. (2016).
* ``ch06-ex3``: find the bug in a colleague's DANN loss
  :math:`L_y - \\lambda L_d` behind a reversal layer, and write
  ``dann_loss(model, x_source, y_source, x_target, lam)``, fixed.  The
  gradient the answer's loss gives each part of a small network is written
  as multiples of the gradients of :math:`L_y` and :math:`L_d`, computed
  independently in NumPy (float64); the features must get
  :math:`1 \\cdot \\nabla L_y - \\lambda \\nabla L_d`, the label predictor
  :math:`\\nabla L_y`, the domain classifier :math:`\\nabla L_d`, and the
  value must be :math:`L_y + L_d`.  The likeliest wrong fixes are named.

``lam`` is tried as Python numbers (0 included), as a tensor, as a
``tf.Variable`` and as a ``tf.Variable`` changed by ``assign`` between two
calls of one ``tf.function``.  Every reference is a closed NumPy formula.
"""

from __future__ import annotations

from typing import Callable, Optional, Tuple

import numpy as np
import tensorflow as tf

from ...logs import captured_tf_warnings
from ._core import (COMMON, Mismatch, as_array, call, describe, exercise, fmt, kink_and_random_points,
                    message, require_tensor, to_array)

MESSAGES = {
    # ex1
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
              "read λ when the gradient is computed, not once and for all (lam.numpy() or "
              "tf.get_static_value(lam) at trace time, or a value stored outside the function).",
        "zh": "{prefix}在 x = {x} 处，你的梯度为 {got}，应为 {expected}。你的层仍在使用旧的 λ："
              "请在计算梯度时读取 λ，而不是一次性读取后一直沿用（例如在追踪时调用 lam.numpy() 或 "
              "tf.get_static_value(lam)，或者使用保存在函数外部的值）。",
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
    "library": {
        "en": "your code uses gradlib's own reversal (gradlib.gradient_reversal or the GradientReversal layer), "
              "which is this exercise's answer in one line. Write the layer yourself with @tf.custom_gradient.",
        "zh": "你的代码用了 gradlib 自带的反转层（gradlib.gradient_reversal 或 GradientReversal 层），"
              "它一行就给出了本题的答案。请自己用 @tf.custom_gradient 编写这一层。",
    },
    "no_custom": {
        "en": "your layer gives the right values and gradients, but without tf.custom_gradient (the stop_gradient "
              "trick, for example). This exercise asks for tf.custom_gradient: decorate reverse_gradient with "
              "@tf.custom_gradient, return tf.identity(x) and a grad_fn.",
        "zh": "你的层给出的值和梯度都正确，但没有用 tf.custom_gradient（例如用了 stop_gradient 技巧）。"
              "本练习要求使用 tf.custom_gradient：用 @tf.custom_gradient 装饰 reverse_gradient，"
              "返回 tf.identity(x) 和一个 grad_fn。",
    },
    "lam_gradient": {
        "en": "with λ = {lam} (a tensor), lam itself gets a gradient ({got} for an upstream gradient of 1): "
              "λ is a setting, not a parameter, so grad_fn must return None for it.",
        "zh": "当 λ = {lam}（张量）时，lam 本身得到了梯度（上游梯度为 1 时为 {got}）：λ 是一个设置，"
              "而不是参数，所以 grad_fn 应当为它返回 None。",
    },
    "ex1_passed": {
        "en": "correct: the value is x bit for bit and the gradient is −λ·dy for λ in {lams}, "
              "for λ as a tensor and a tf.Variable (also changed by assign inside a tf.function), "
              "for a 2-D input and for upstream gradients other than 1.",
        "zh": "正确：对 λ ∈ {lams}、λ 为张量或 tf.Variable（包括在 tf.function 中用 assign 修改）、二维输入，"
              "以及不为 1 的上游梯度，前向值都与 x 逐位相同，梯度都是 −λ·dy。",
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
    # ex3: the colleague's DANN loss
    "loss_word": {"en": "loss", "zh": "损失"},
    "loss_with_lam": {"en": "with λ = {lam}: ", "zh": "当 λ = {lam} 时，"},
    "coefficients": {
        "en": "{prefix}one step of gradient descent on your loss gives the features {a} × ∇L_y and {b} × ∇L_d "
              "(DANN: 1 and {want_b}), the label predictor {e} × ∇L_y (DANN: 1) and the domain classifier "
              "{c} × ∇L_d (DANN: 1).",
        "zh": "{prefix}对你的损失做一步梯度下降，特征得到的是 {a} × ∇L_y 与 {b} × ∇L_d（DANN 应为 1 与 {want_b}），"
              "标签预测器得到 {e} × ∇L_y（DANN 应为 1），领域分类器得到 {c} × ∇L_d（DANN 应为 1）。",
    },
    "not_combination": {
        "en": "{prefix}the gradient your loss gives the {part} is not a multiple of the gradients of L_y and L_d "
              "(computed by the check with the same weights and data). Did you change the network or the data, "
              "add another term, or average L_d differently from the colleague (it is one mean over the source "
              "and target points together)?",
        "zh": "{prefix}你的损失给{part}的梯度，不是 L_y 与 L_d 的梯度（由检查程序用同样的权重和数据算出）的组合。"
              "你是否改动了网络或数据，另加了一项，或者没有像同事那样求 L_d 的平均（它是对源领域和目标领域的所有点一起求的一个平均）？",
    },
    "part_features": {"en": "features", "zh": "特征"},
    "part_label": {"en": "label predictor", "zh": "标签预测器"},
    "part_domain": {"en": "domain classifier", "zh": "领域分类器"},
    "hint_colleague": {
        "en": "That is the colleague's loss: the minus sign and the reversal layer each flip the features' share "
              "of ∇L_d, so the two flips cancel and the features help the domain classifier; the minus sign alone "
              "acts on the domain classifier, which therefore climbs L_d. That is why L_d runs away.",
        "zh": "这正是同事的损失：减号和反转层各自翻转一次特征所得的那份 ∇L_d，两次翻转相互抵消，特征反而在帮助领域分类器；"
              "而作用在领域分类器上的只有减号，所以它沿 L_d 上升。这就是 L_d 一路飙升的原因。",
    },
    "hint_minus": {
        "en": "The features are right now, but the domain classifier climbs L_d: a minus sign in front of L_d "
              "(or a reversal after the domain classifier) flips the gradient of everything L_d depends on, "
              "the domain classifier included. Only a reversal between the features and the domain classifier "
              "flips the features' share alone.",
        "zh": "特征现在是对的，但领域分类器在沿 L_d 上升：L_d 前面的减号（或放在领域分类器之后的反转层）会翻转 L_d 所依赖的"
              "每个参数的梯度，领域分类器的也不例外。只有放在特征与领域分类器之间的反转层，才只翻转特征那一份。",
    },
    "hint_twice": {
        "en": "λ acts twice: the reversal layer already multiplies the features' share of ∇L_d by −λ, and the λ "
              "in your loss multiplies it again (−λ²); it also scales the domain classifier's step by λ. "
              "Let λ act in one place only, the reversal layer.",
        "zh": "λ 起了两次作用：反转层已经把特征所得的那份 ∇L_d 乘以 −λ，你损失中的 λ 又乘了一次（得到 −λ²）；"
              "它还把领域分类器的步长缩放了 λ 倍。只让 λ 在一个地方起作用，即反转层。",
    },
    "hint_cooperative": {
        "en": "Nothing reverses the features' share of ∇L_d: the features descend L_d together with the domain "
              "classifier and make the domains easier to tell apart (the cooperative DANN of exercise 4). "
              "The reversal layer has to stay between the features and the domain classifier.",
        "zh": "没有任何东西翻转特征所得的那份 ∇L_d：特征与领域分类器一起沿 L_d 下降，让两个领域更容易区分"
              "（即练习 4 中合作的 DANN）。反转层必须留在特征与领域分类器之间。",
    },
    "hint_label_reversed": {
        "en": "The label loss reaches the features through the reversal layer too, so the features climb L_y: "
              "put the reversal on the domain branch only.",
        "zh": "标签损失也经过反转层到达特征，于是特征沿 L_y 上升：反转层只能放在领域分支上。",
    },
    "hint_no_lambda": {
        "en": "The features' share of ∇L_d is reversed but not scaled by λ: pass lam to the reversal layer.",
        "zh": "特征所得的那份 ∇L_d 被翻转了，但没有乘以 λ：请把 lam 传给反转层。",
    },
    "hint_domain_frozen": {
        "en": "The domain classifier gets no gradient at all, so it never learns to tell the domains apart: "
              "it must descend L_d.",
        "zh": "领域分类器完全得不到梯度，因此永远学不会区分两个领域：它必须沿 L_d 下降。",
    },
    "hint_paper": {
        "en": "The features are right, but the domain classifier learns at λ times the rate: that is the paper's "
              "Algorithm 1, where λ also scales the domain classifier's step. This chapter's DANN gives the domain "
              "classifier the full rate: let λ act in the reversal layer only.",
        "zh": "特征是对的，但领域分类器的学习速率被乘了 λ：这是论文算法 1 的写法，在那里 λ 也缩放领域分类器的步长。"
              "本章的 DANN 让领域分类器以完整的速率学习：只让 λ 在反转层中起作用。",
    },
    "hint_sum": {
        "en": "Your steps are as many times too big as there are points ({n_source} source points for L_y, "
              "{n_both} points for L_d): did you sum the per-example losses (reduce_sum) instead of averaging "
              "them (reduce_mean), as the colleague does?",
        "zh": "你的步长大了若干倍，倍数恰好等于点数（L_y 有 {n_source} 个源领域点，L_d 有 {n_both} 个点）："
              "你是否对逐个样本的损失求了和（reduce_sum），而不是像同事那样求平均（reduce_mean）？",
    },
    "hint_scaled": {
        "en": "Every coefficient is {scale} × the DANN one: your loss is {scale} × (L_y + L_d) in its gradients, "
              "so every step is {scale} times the DANN step. Do not rescale the sum of the two losses.",
        "zh": "每个系数都是 DANN 对应系数的 {scale} 倍：从梯度看，你的损失是 {scale} × (L_y + L_d)，"
              "所以每一步都是 DANN 那一步的 {scale} 倍。不要对两项损失之和再做缩放。",
    },
    "hint_no_domain": {
        "en": "The features get nothing from L_d: nothing pushes them against the domain classifier.",
        "zh": "特征从 L_d 中什么也得不到：没有任何力量推动它们去对抗领域分类器。",
    },
    "loss_value": {
        "en": "{prefix}the gradients are right, but your loss is {got}, not L_y + L_d = {expected}. A constant "
              "changes no gradient, but return label_loss + domain_loss, so that a log of the loss shows the "
              "two losses DANN trains on.",
        "zh": "{prefix}梯度都对，但你的损失为 {got}，而不是 L_y + L_d = {expected}。加上一个常数不会改变任何梯度，"
              "但请返回 label_loss + domain_loss，这样记录下来的损失才是 DANN 所训练的那两项损失之和。",
    },
    "ex3_passed": {
        "en": "correct: for λ in {lams}, one step on your loss moves the label predictor down L_y, the domain "
              "classifier down L_d and the features along ∇L_y − λ∇L_d, and its value is L_y + L_d.",
        "zh": "正确：对 λ ∈ {lams}，在你的损失上走一步，标签预测器沿 L_y 下降，领域分类器沿 L_d 下降，"
              "特征沿 ∇L_y − λ∇L_d 移动，损失的值为 L_y + L_d。",
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


# -- the gradient reversal layer: ex1 ----------------------------------------------

POINTS = kink_and_random_points([0.0, 1.5, -2.0, 0.1], seed=6)
LAMS = (1.0, 0.5, 0.0, 2.0)
UPSTREAM = np.random.default_rng(7).uniform(-3, 3, POINTS.shape).astype(np.float32)
# Random points where t + (x - t) with t = -0.5 x differs from x for many of
# them, then the two zeros: the sign of -0.0 is what an added zero loses.
EXACT_POINTS = np.concatenate([np.random.default_rng(8).uniform(-3, 3, 200).astype(np.float32),
                               np.array([0.0, -0.0], np.float32)])


def _bits(values) -> np.ndarray:
    return np.asarray(values, np.float32).view(np.int32)


def _run(answer: Callable, x: np.ndarray, lam, upstream, *, lang: str, prefix: str):
    """Value and gradient (weighted by ``upstream``) of ``answer(x, lam)`` on a tape, validated.

    A tensor ``lam`` is watched too: the third result is its gradient (None
    when it gets none, as it should; always None for other kinds of ``lam``).
    """
    xt = tf.constant(x)
    watch_lam = isinstance(lam, tf.Tensor)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        if watch_lam:
            tape.watch(lam)
        y = call(answer, xt, lam, lang=lang, where=prefix)
    y_array = as_array(y, lang=lang, what="forward", where=prefix, shape=x.shape)
    require_tensor(y, lang=lang, where=prefix)
    try:
        grads = tape.gradient(y, [xt, lam] if watch_lam else [xt],
                              output_gradients=None if upstream is None else tf.constant(upstream))
    except Exception as err:
        _raise_gradient_error(err, lang, prefix)
    g_array = as_array(grads[0], lang=lang, what="gradient", where=prefix, shape=x.shape, none_key="none_gradient")
    return y_array, g_array, (grads[1] if watch_lam else None)


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
    """Value ≈ x and gradient = −λ with an upstream gradient of ones; returns the value and λ's gradient."""
    y, g, lam_grad = _run(answer, x, lam, None, lang=lang, prefix=prefix)
    flat_x = np.ravel(x)
    _compare_forward(y, x, lang=lang, prefix=prefix)
    expected = np.full(x.shape, -lam_value, np.float32)
    i = _first_bad(g, expected)
    if i is not None:
        got = float(np.ravel(g)[i])
        text = message(COMMON, "value", lang, where=prefix + message(COMMON, "at", lang, x=fmt(flat_x[i])),
                       what=message(COMMON, "gradient", lang), got=fmt(got), expected=fmt(-lam_value))
        raise Mismatch(_join(text, _gradient_hint(got, lam_value, lang), lang))
    return y, lam_grad


def _compare_upstream(answer, x, lam, lam_value: float, upstream, *, lang: str, prefix: str):
    y, g, _ = _run(answer, x, lam, upstream, lang=lang, prefix=prefix)
    _compare_forward(y, x, lang=lang, prefix=prefix)  # every call of the answer counts
    expected = -lam_value * upstream
    i = _first_bad(g, expected)
    if i is not None:
        raise Mismatch(_text("upstream", lang, prefix=prefix, x=fmt(np.ravel(x)[i]), dy=fmt(np.ravel(upstream)[i]),
                             got=fmt(np.ravel(g)[i]), expected=fmt(np.ravel(expected)[i])))


def _compare_in_function(answer, x, upstream, *, lang: str) -> Optional[bool]:
    """λ a tf.Variable read inside one tf.function; assign a new value between two calls.

    Returns whether the traced answer contains a tf.custom_gradient, which marks
    the IdentityN op it creates in a graph with a ``_gradient_op_type``
    attribute (None when the graph cannot be read).
    """
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
    try:  # the trace made above: no new call of the answer
        graph_def = layer_gradient.get_concrete_function(xt).graph.as_graph_def()
    except Exception:
        return None
    # A tf.custom_gradient leaves an IdentityN marked with _gradient_op_type.  An answer
    # that runs in a tf.function of its own (or calls one) leaves it in a nested function
    # (a PartitionedCall), whose body is in the graph's function library: look there too.
    nodes = list(graph_def.node)
    for function in graph_def.library.function:
        nodes.extend(function.node_def)
    if any(node.op == "IdentityN" and "_gradient_op_type" in node.attr for node in nodes):
        return True
    library = {function.signature.name for function in graph_def.library.function}
    for node in nodes:  # a called function whose body is not here: unknown, so accept
        if "f" in node.attr and node.attr["f"].func.name and node.attr["f"].func.name not in library:
            return None
    return False


def _check_reversal(answer, lang: str) -> Tuple[object, Optional[bool]]:
    """Values and gradients of the layer for every kind of λ; raises Mismatch.

    Returns the gradient that a tensor λ received (None if none, as it should
    be) and whether the answer uses a tf.custom_gradient (None: unknown).
    """
    x = POINTS
    for lam in LAMS:
        _compare(answer, x, lam, lam, lang=lang, prefix=_text("with_lam", lang, lam=fmt(lam), kind=""))
    _compare_upstream(answer, x, 0.5, 0.5, UPSTREAM, lang=lang,
                      prefix=_text("with_lam", lang, lam=fmt(0.5), kind=""))
    _, lam_grad = _compare(answer, x, tf.constant(0.3), 0.3, lang=lang,
                           prefix=_text("with_lam", lang, lam=fmt(0.3), kind=_text("kind_tensor", lang)))
    _compare_upstream(answer, x, tf.Variable(0.75), 0.75, UPSTREAM, lang=lang,
                      prefix=_text("with_lam", lang, lam=fmt(0.75), kind=_text("kind_variable", lang)))
    matrix = x[:12].reshape(3, 4)
    _compare_upstream(answer, matrix, 0.5, 0.5, UPSTREAM[:12].reshape(3, 4), lang=lang,
                      prefix=_text("matrix", lang) + _text("with_lam", lang, lam=fmt(0.5), kind=""))
    custom = _compare_in_function(answer, x, UPSTREAM, lang=lang)
    return lam_grad, custom


def _lams_text() -> str:
    return "{" + ", ".join(fmt(v) for v in LAMS) + "}"


class _ReversalWatch:
    """While the check runs, gradlib's own reversal notes that it was used.

    ``gradlib.gradient_reversal`` and the ``GradientReversal`` layer both end in
    ``gradlib.reversal._reverse``, however the reader imported them; that
    module attribute is replaced by a wrapper that records the call and does
    the same work, and is restored on exit, also when the check is stopped by
    its time limit.
    """

    def __enter__(self) -> "_ReversalWatch":
        from ... import reversal  # here, not at import time: gradlib imports this module

        self.module, self.original, self.used = reversal, reversal._reverse, False
        original = self.original

        def watched(*args, **kwargs):
            self.used = True
            return original(*args, **kwargs)

        reversal._reverse = watched
        return self

    def __exit__(self, *exc_info) -> bool:
        self.module._reverse = self.original
        return False


def _is_library_reversal(answer) -> bool:
    """``answer`` is gradlib's reversal itself (the function or a GradientReversal layer)."""
    from ... import reversal

    try:
        return answer is reversal.gradient_reversal or isinstance(answer, reversal.GradientReversal)
    except Exception:  # a reader's object whose comparison raises: not ours
        return False


def _check_ex1(answer, lang: str) -> str:
    lam_grad, custom = _check_reversal(answer, lang)
    prefix = _text("with_lam", lang, lam=fmt(0.5), kind="")
    y, _ = _compare(answer, EXACT_POINTS, 0.5, 0.5, lang=lang, prefix=prefix)
    differ = np.flatnonzero(_bits(y) != _bits(EXACT_POINTS))
    if differ.size:
        i = int(differ[0])
        raise Mismatch(_text("not_exact", lang, lam=fmt(0.5), x=_exact(EXACT_POINTS[i]), got=_exact(y[i]),
                             count=differ.size, n=EXACT_POINTS.size))
    if custom is False:
        raise Mismatch(_text("no_custom", lang))
    if lam_grad is not None:
        got = to_array(lam_grad)
        text = fmt(got) if got is not None and got.dtype.kind in "iuf" and got.size <= 8 else type(lam_grad).__name__
        raise Mismatch(_text("lam_gradient", lang, lam=fmt(0.3), got=text))
    return _text("ex1_passed", lang, lams=_lams_text())


@exercise("ch06-ex1", MESSAGES, answer="reverse_gradient")
def check_reverse_gradient(answer, lang):
    library = _text("library", lang)
    if _is_library_reversal(answer):
        raise Mismatch(library)
    with _ReversalWatch() as watch:
        try:
            result = _check_ex1(answer, lang)
        except Mismatch:
            if watch.used:
                raise Mismatch(library) from None
            raise
    if watch.used:
        raise Mismatch(library)
    return result


# -- ex3: the colleague's DANN loss, fixed ------------------------------------------------

LOSS_LAMS = (0.5, 2.0)
HIDDEN = 5


def _ex3_data():
    """A small network's weights and data: features 2 -> HIDDEN sigmoid units, two logistic heads."""
    rng = np.random.default_rng(60)
    weights = {"features": (rng.normal(0, 0.8, (2, HIDDEN)), rng.normal(0, 0.3, HIDDEN)),
               "label": (rng.normal(0, 0.8, (HIDDEN, 1)), rng.normal(0, 0.3, 1)),
               "domain": (rng.normal(0, 0.8, (HIDDEN, 1)), rng.normal(0, 0.3, 1))}
    weights = {k: tuple(w.astype(np.float32) for w in v) for k, v in weights.items()}
    x_source = rng.normal(0, 1, (10, 2)).astype(np.float32)
    y_source = (rng.uniform(size=(10, 1)) < 0.5).astype(np.float32)
    x_target = (rng.normal(0, 1, (12, 2)) + [0.5, -0.3]).astype(np.float32)
    return weights, x_source, y_source, x_target


EX3_WEIGHTS, EX3_X_SOURCE, EX3_Y_SOURCE, EX3_X_TARGET = _ex3_data()


class _Dense(tf.Module):
    """``activation(x @ kernel + bias)``: one layer of the exercise's model."""

    def __init__(self, kernel, bias, activation=None, name=None):
        super().__init__(name=name)
        self.kernel = tf.Variable(kernel, name="kernel")
        self.bias = tf.Variable(bias, name="bias")
        self._activation = activation

    def __call__(self, x):
        y = tf.matmul(x, self.kernel) + self.bias
        return y if self._activation is None else self._activation(y)


class DannModel:
    """What the exercise calls ``model``: ``features`` (G_f), ``label`` (G_y) and ``domain`` (G_d)."""

    def __init__(self):
        self.features = _Dense(*EX3_WEIGHTS["features"], activation=tf.sigmoid, name="features")
        self.label = _Dense(*EX3_WEIGHTS["label"], name="label")
        self.domain = _Dense(*EX3_WEIGHTS["domain"], name="domain")

    def parts(self):
        return {"features": [self.features.kernel, self.features.bias],
                "label": [self.label.kernel, self.label.bias],
                "domain": [self.domain.kernel, self.domain.bias]}


def _sigmoid(z):
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def _softplus(z):
    return np.maximum(z, 0) + np.log1p(np.exp(-np.abs(z)))


def loss_references():
    """L_y, L_d and their gradients for each part of the model, in NumPy float64 (no TensorFlow).

    Returns ``(L_y, L_d, {part: flat gradient of L_y}, {part: flat gradient of L_d})``.
    """
    (W, b), (v, c), (u, d) = ([w.astype(np.float64) for w in EX3_WEIGHTS[k]] for k in ("features", "label", "domain"))
    xs, ys, xt = (a.astype(np.float64) for a in (EX3_X_SOURCE, EX3_Y_SOURCE, EX3_X_TARGET))

    def hidden(x):
        return _sigmoid(x @ W + b)

    def mean_bce(labels, z):  # mean of softplus(z) - labels z, and its derivative in z
        return float(np.mean(_softplus(z) - labels * z)), (_sigmoid(z) - labels) / z.size

    def through_features(x, h, dh):  # gradient of the features' weights from dL/dh
        dz = dh * h * (1 - h)
        return np.concatenate([(x.T @ dz).ravel(), dz.sum(0)])

    hs = hidden(xs)
    label_loss, dzy = mean_bce(ys, hs @ v + c)
    x_both = np.concatenate([xs, xt])
    h_both = hidden(x_both)
    domains = np.concatenate([np.zeros((len(xs), 1)), np.ones((len(xt), 1))])
    domain_loss, dzd = mean_bce(domains, h_both @ u + d)
    grad_y = {"features": through_features(xs, hs, dzy @ v.T),
              "label": np.concatenate([(hs.T @ dzy).ravel(), dzy.sum(0)]),
              "domain": np.zeros(u.size + d.size)}
    grad_d = {"features": through_features(x_both, h_both, dzd @ u.T),
              "label": np.zeros(v.size + c.size),
              "domain": np.concatenate([(h_both.T @ dzd).ravel(), dzd.sum(0)])}
    return label_loss, domain_loss, grad_y, grad_d


def _fit(g: np.ndarray, columns) -> Tuple[np.ndarray, bool]:
    """Least-squares coefficients of ``g`` on ``columns``, and whether they explain it."""
    A = np.stack(columns, axis=1)
    coefficients = np.linalg.lstsq(A, g, rcond=None)[0]
    residual = np.linalg.norm(A @ coefficients - g)
    return coefficients, residual <= 1e-4 * (np.linalg.norm(g) + np.linalg.norm(A)) + 1e-7


def _coefficient(value: float) -> str:
    """A fitted coefficient for the reader: three decimals, float32 noise (and -0) shown as 0."""
    return fmt(round(float(value), 3) + 0.0)


def _close(a: float, b: float) -> bool:
    return bool(np.isclose(a, b, rtol=2e-3, atol=2e-4))


def _scale_hint(a: float, b: float, c: float, e: float, lam: float) -> Optional[Tuple[str, dict]]:
    """A hint (message key, its fields) when the label predictor's coefficient e is not 1."""
    n_source, n_both = EX3_X_SOURCE.shape[0], EX3_X_SOURCE.shape[0] + EX3_X_TARGET.shape[0]
    if _close(e, n_source) or (_close(e, 1) and _close(c, n_both)):
        return "hint_sum", {"n_source": n_source, "n_both": n_both}
    if not _close(e, 0) and _close(a, e) and _close(b, -lam * e) and _close(c, e):
        return "hint_scaled", {"scale": _coefficient(e)}
    return None


def _loss_hint(a: float, b: float, c: float, lam: float) -> Optional[str]:
    if _close(a, -lam):
        return "hint_label_reversed"
    if _close(b, lam * lam) and _close(c, -lam):
        return "hint_colleague"
    if _close(b, -lam) and c < 0:
        return "hint_minus"
    if _close(b, -lam * lam) and _close(c, lam):
        return "hint_twice"
    if _close(a, 1) and _close(b, -lam) and _close(c, lam):
        return "hint_paper"
    if b > 0 and c > 0:
        return "hint_cooperative"
    if _close(c, 0):
        return "hint_domain_frozen"
    if _close(b, 0):
        return "hint_no_domain"
    if _close(b, -1) and _close(c, 1):
        return "hint_no_lambda"
    return None


def _check_loss_at(answer, lam: float, references, lang: str) -> None:
    label_loss, domain_loss, grad_y, grad_d = references
    prefix = _text("loss_with_lam", lang, lam=fmt(lam))
    model = DannModel()  # fresh weights for every call: an answer that changes them changes nothing here
    parts = model.parts()
    variables = [v for part in parts.values() for v in part]
    inputs = (tf.constant(EX3_X_SOURCE), tf.constant(EX3_Y_SOURCE), tf.constant(EX3_X_TARGET))
    with tf.GradientTape() as tape:
        loss = call(answer, model, *inputs, lam, lang=lang, where=prefix)
    value = as_array(loss, lang=lang, what=_text("loss_word", lang), where=prefix, shape=())
    require_tensor(loss, lang=lang, where=prefix)
    try:
        grads = tape.gradient(loss, variables)
    except Exception as err:
        raise Mismatch(message(COMMON, "raised", lang, where=prefix, error=type(err).__name__,
                               detail=_detail(err))) from None
    flat, i = {}, 0
    for name, part in parts.items():
        arrays = []
        for v in part:
            g = grads[i]
            i += 1
            array = np.zeros(v.shape, np.float64) if g is None else to_array(tf.convert_to_tensor(g))
            if array is None or array.dtype.kind != "f" or not np.all(np.isfinite(array)):
                raise Mismatch(message(COMMON, "nan", lang, where=prefix, what=message(COMMON, "gradient", lang)))
            arrays.append(np.ravel(array).astype(np.float64))
        flat[name] = np.concatenate(arrays)
    (a, b), ok_f = _fit(flat["features"], [grad_y["features"], grad_d["features"]])
    (e,), ok_y = _fit(flat["label"], [grad_y["label"]])
    (c,), ok_d = _fit(flat["domain"], [grad_d["domain"]])
    for ok, part in ((ok_f, "part_features"), (ok_y, "part_label"), (ok_d, "part_domain")):
        if not ok:
            raise Mismatch(_text("not_combination", lang, prefix=prefix, part=_text(part, lang)))
    if not (_close(a, 1) and _close(b, -lam) and _close(c, 1) and _close(e, 1)):
        text = _text("coefficients", lang, prefix=prefix, a=_coefficient(a), b=_coefficient(b), c=_coefficient(c),
                     e=_coefficient(e), want_b=fmt(-lam))
        hint = _loss_hint(a, b, c, lam) if _close(e, 1) else None
        fields = {}
        if hint is None:
            hint, fields = _scale_hint(a, b, c, e, lam) or (None, {})
        raise Mismatch(text if hint is None else _join(text, _text(hint, lang, **fields), lang))
    expected = label_loss + domain_loss
    if not np.isclose(float(value), expected, rtol=1e-4, atol=1e-5):
        raise Mismatch(_text("loss_value", lang, prefix=prefix, got=fmt(float(value)), expected=fmt(expected)))


@exercise("ch06-ex3", MESSAGES, answer="dann_loss")
def check_dann_loss(answer, lang):
    references = loss_references()
    for lam in LOSS_LAMS:
        _check_loss_at(answer, lam, references, lang)
    return _text("ex3_passed", lang, lams="{" + ", ".join(fmt(v) for v in LOSS_LAMS) + "}")


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
