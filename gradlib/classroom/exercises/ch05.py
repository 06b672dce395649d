"""Checks for chapter 5: straight-through estimators.

* ``ch05-ex1``: ``binary_sign(x, clip)``, values in :math:`\\{-1, +1\\}` with
  sign(0) = +1, gradient 1 where :math:`|x| \\le \\text{clip}` and 0 elsewhere
  (BinaryNet's clipped straight-through estimator).
* ``ch05-ex2``: ``dorefa_weights(w, bits)``, DoReFa-Net's k-bit weights for
  k >= 2, :math:`2\\,\\operatorname{round}(n u)/n - 1` with
  :math:`u = \\tanh w / (2 \\max|\\tanh w|) + 1/2` and :math:`n = 2^k - 1`;
  straight through the rounding only, everything else differentiated.  (At
  k = 1 DoReFa-Net binarises the weights with a scaled sign instead.)
* ``ch05-ex3``: ``xnor_paper(w)``, XNOR-Net's binary weights with the
  gradient of the paper's section 3.1: forward :math:`\\operatorname{sign}(w)\\,E`
  with sign(0) = +1 and :math:`E = \\frac1n\\sum_i |w_i|` over the whole
  tensor; backward
  :math:`\\partial C/\\partial w_i = \\bar y_i\\,(1/n + E\\,\\mathbb{1}\\{|w_i| \\le 1\\})`.

Every reference below is a closed NumPy formula, independent of gradlib's ops
and of the chapter's solutions.  The answers run under ``tf.GradientTape``
with upstream gradients other than 1, so a ``grad_fn`` that forgets ``dy``
is caught.

Each check names the wrong answers students write most often, in both
languages: ex1 a ``tf.sign`` forward (sign(0) = 0), ``x > 0`` instead of
``x >= 0``, a strict boundary (|x| < clip) and the unclipped estimator; ex2
straight through the whole quantizer, the wrong maximum (of |w|, without
the absolute value, along one axis; each with and without a clip of u to
[0, 1]), q instead of 2q - 1 and 2^k levels; ex3 TensorFlow's product rule
through E (every term, not the paper's diagonal), the stop_gradient trick
with E left unstopped in the surrogate, E stopped with the clipped estimator
(no 1/n term), the identity of ``xnor_binarize``, sign(w)/n instead of 1/n,
the missing clip, the missing scale and a strict boundary.  The wrong DoReFa
variants are rebuilt from TensorFlow ops (:func:`_dorefa_variant`) only to
recognise them.  Ex3 reports a wrong gradient at a nonzero weight first:
at w = 0 TensorFlow's d|w|/dw is 0, which hides the product rule's coupling.

Ex1 and ex2 ask the reader to write what the library already has: while
such a check runs, :func:`_library_calls` wraps ``ste_sign`` and
``sign_with_surrogate`` on both ``gradlib`` and ``gradlib.ste`` (ex1), and
``gradlib.experiments.quantize_weights`` (ex2), as attributes of their
modules, and an answer that calls one of them through its module is told
so.  An answer that imported the function under another name before the
check (``from gradlib import ste_sign as s``) is not caught.
"""

from __future__ import annotations

import contextlib
import importlib
from typing import Callable, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf

from ._core import (COMMON, Mismatch, as_array, call, exercise, fmt, kink_and_random_points, message, raised,
                    require_tensor)

MESSAGES = {
    # shared
    "with_clip": {"en": "with clip = {clip}, ", "zh": "当 clip = {clip} 时，"},
    "with_bits": {"en": "with bits = {bits}, ", "zh": "当 bits = {bits} 时，"},
    "at_w": {"en": "at w{index} = {w}: ", "zh": "在 w{index} = {w} 处，"},
    "sign_zero": {
        "en": "{prefix}at x = 0: your value is {got}; expected +1: this exercise, like BinaryConnect and larq, "
              "takes sign(0) = +1 (tf.sign(0) = 0 would be a third value).",
        "zh": "{prefix}在 x = 0 处，你的前向值为 {got}，应为 +1：本练习与 BinaryConnect 和 larq 一样，"
              "取 sign(0) = +1（tf.sign(0) = 0 会引入第三个值）。",
    },
    "sign_zero_negative": {
        "en": "{prefix}at x = 0: your value is -1; expected +1: use x >= 0, not x > 0. This exercise, like "
              "BinaryConnect and larq, takes sign(0) = +1.",
        "zh": "{prefix}在 x = 0 处，你的前向值为 -1，应为 +1：请用 x >= 0，而不是 x > 0。本练习与 BinaryConnect "
              "和 larq 一样，取 sign(0) = +1。",
    },
    "library_call": {
        "en": "Your answer gives the right values and gradients, but it calls {name}, the library's version of "
              "what this exercise asks you to write. Write it with TensorFlow operations (the tf.stop_gradient "
              "trick or tf.custom_gradient){allowed}.",
        "zh": "你的答案的值和梯度都正确，但它调用了 {name}，也就是本练习要你自己编写的那个函数的库版本。"
              "请用 TensorFlow 运算（tf.stop_gradient 技巧或 tf.custom_gradient）来编写{allowed}。",
    },
    "dorefa_allowed": {"en": "; gradlib.dorefa_quantize is allowed", "zh": "；可以使用 gradlib.dorefa_quantize"},
    "nothing_allowed": {"en": "", "zh": ""},
    "sign_forward": {
        "en": "The forward pass must be +1 for x ≥ 0 and -1 for x < 0.",
        "zh": "前向必须在 x ≥ 0 时为 +1、在 x < 0 时为 -1。",
    },
    "no_gradient": {
        "en": "{prefix}your gradient is {kind} everywhere: tf.sign, tf.round and tf.where give no useful "
              "gradient. Put a surrogate outside tf.stop_gradient (g(x) + tf.stop_gradient(q(x) - g(x))), "
              "or use tf.custom_gradient or tf.grad_pass_through.",
        "zh": "{prefix}你的梯度处处为 {kind}：tf.sign、tf.round 和 tf.where 都不给出有用的梯度。"
              "请把替代函数放在 tf.stop_gradient 之外（g(x) + tf.stop_gradient(q(x) - g(x))），"
              "或使用 tf.custom_gradient、tf.grad_pass_through。",
    },
    "zero_word": {"en": "0", "zh": "0"},
    "none_word": {"en": "None", "zh": "None"},
    "upstream": {
        "en": "{prefix}with an upstream gradient of {dy} at {at}, your gradient is {got}; expected {expected}. "
              "Multiply by the upstream gradient dy.",
        "zh": "{prefix}在 {at} 处上游梯度为 {dy} 时，你的梯度为 {got}，应为 {expected}。请乘上上游梯度 dy。",
    },
    # ch05-ex1
    "clip_blocked": {
        "en": "Because |x| = {ax} > clip = {clip}, the gradient must be blocked (0).",
        "zh": "因为 |x| = {ax} > clip = {clip}，梯度应被阻断（为 0）。",
    },
    "clip_passes": {
        "en": "Because |x| = {ax} ≤ clip = {clip} (the boundary included), the gradient must pass through (1).",
        "zh": "因为 |x| = {ax} ≤ clip = {clip}（含边界），梯度应原样通过（为 1）。",
    },
    "clip_boundary": {
        "en": "At x = ±clip the gradient must still pass (1): the interval is closed, |x| ≤ clip, the boundary "
              "included. A strict |x| < clip blocks it there; use tf.abs(x) <= clip, or the gradient of "
              "tf.clip_by_value(x, -clip, clip), which passes at the boundary.",
        "zh": "在 x = ±clip 处梯度仍应通过（为 1）：区间是闭区间 |x| ≤ clip，含边界。"
              "严格不等式 |x| < clip 会在边界处阻断梯度；请用 tf.abs(x) <= clip，"
              "或 tf.clip_by_value(x, -clip, clip) 的梯度（它在边界处照常通过）。",
    },
    "plain_ste": {
        "en": "Your gradient is 1 everywhere, also where |x| > clip: that is the plain straight-through "
              "estimator. BinaryNet's is clipped: the gradient passes only where |x| ≤ clip and is blocked "
              "outside (the derivative of hard tanh, tf.clip_by_value(x, -clip, clip)).",
        "zh": "你的梯度处处为 1，在 |x| > clip 处也是：这是普通的直通估计器。BinaryNet 的估计器是截断的："
              "梯度只在 |x| ≤ clip 处通过，在区间外被阻断（即 hard tanh，tf.clip_by_value(x, -clip, clip) 的导数）。",
    },
    "binary_passed": {
        "en": "correct for clip = {clips} on {n} points including 0 and ±clip: values in {{-1, +1}} with "
              "sign(0) = +1, gradient 1 on [-clip, clip] and 0 outside, for a 2-D input and an upstream "
              "gradient other than 1.",
        "zh": "clip 取 {clips} 时，在包括 0 与 ±clip 在内的 {n} 个点上都正确：值属于 {{-1, +1}} 且 sign(0) = +1，"
              "梯度在 [-clip, clip] 上为 1、其外为 0；对二维输入和不为 1 的上游梯度也成立。",
    },
    # ch05-ex2
    "dorefa_value": {
        "en": "The value must be 2 round(n u)/n - 1 with n = 2^bits - 1 = {n} and u = tanh(w)/(2 max|tanh w|) + 1/2.",
        "zh": "前向值应为 2 round(n u)/n - 1，其中 n = 2^bits - 1 = {n}，u = tanh(w)/(2 max|tanh w|) + 1/2。",
    },
    "dorefa_levels": {
        "en": "bits = {bits} gives 2^bits = {levels} values from -1 to 1: round(n u)/n with n = 2^bits - 1 = {n}, "
              "not 2^bits.",
        "zh": "bits = {bits} 给出从 -1 到 1 的 2^bits = {levels} 个值：应为 round(n u)/n，其中 n = 2^bits - 1 = {n}，"
              "而不是 2^bits。",
    },
    "dorefa_identity": {
        "en": "{prefix}your gradient is the upstream gradient unchanged: you passed it straight through the whole "
              "quantizer. Only the rounding is straight through; tanh, the division by max|tanh w| and "
              "2q - 1 must be differentiated as usual.",
        "zh": "{prefix}你的梯度与上游梯度完全相同：你让梯度直通了整个量化器。只有取整这一步是直通的；"
              "tanh、除以 max|tanh w| 以及 2q - 1 都应照常求导。",
    },
    "dorefa_max": {
        "en": "This w has the largest |tanh w|: u is exactly 0 or 1 there, the ends of the clip range, where the "
              "straight-through gradient still passes (a closed interval), and max|tanh w| depends on it.",
        "zh": "这个 w 的 |tanh w| 最大：此处 u 恰好为 0 或 1，即截断区间的端点，直通梯度在端点处仍然通过"
              "（闭区间）；而且 max|tanh w| 依赖于它。",
    },
    "dorefa_gradient": {
        "en": "Only the rounding is straight through: the gradient is dy · 2 · du/dw, with u = tanh(w)/(2 max|tanh w|) + 1/2.",
        "zh": "只有取整是直通的：梯度为 dy · 2 · du/dw，其中 u = tanh(w)/(2 max|tanh w|) + 1/2。",
    },
    "dorefa_passed": {
        "en": "correct for bits = {bits} on {n} weights, including w = 0 (u = 1/2) and the largest |w| "
              "(u = 0 or 1), with random upstream gradients{variant}.",
        "zh": "bits 取 {bits} 时，在 {n} 个权重上都正确，包括 w = 0（u = 1/2）和 |w| 最大者（u = 0 或 1），"
              "上游梯度为随机值{variant}。",
    },
    "dorefa_max_w": {
        "en": "You divided tanh w by max|w|. DoReFa divides by max|tanh w|, the maximum of the transformed "
              "weights, so that the largest weight maps to u = 0 or u = 1 and the values span [-1, 1].",
        "zh": "你用 max|w| 去除 tanh w。DoReFa 除以的是 max|tanh w|，即变换后权重的最大值，"
              "这样绝对值最大的权重恰好映射到 u = 0 或 u = 1，取值才能覆盖 [-1, 1]。",
    },
    "dorefa_max_sign": {
        "en": "You divided by max(tanh w), without the absolute value. The maximum must be max|tanh w|: here "
              "the weight of largest magnitude is negative, and it must map to u = 0.",
        "zh": "你除以的是不带绝对值的 max(tanh w)。最大值应取 max|tanh w|：这里绝对值最大的权重是负数，"
              "它应映射到 u = 0。",
    },
    "dorefa_max_axis": {
        "en": "You took the maximum along one axis (one scale per row or per column). DoReFa's maximum runs "
              "over the whole tensor: tf.reduce_max(tf.abs(t)) without an axis.",
        "zh": "你沿某一个轴取了最大值（每行或每列一个缩放因子）。DoReFa 的最大值取遍整个张量："
              "不带 axis 的 tf.reduce_max(tf.abs(t))。",
    },
    "dorefa_affine": {
        "en": "Your values lie in [0, 1]: that is q_k(u). DoReFa's weights are 2 q_k(u) - 1, in [-1, 1].",
        "zh": "你的值落在 [0, 1] 中：那是 q_k(u)。DoReFa 的权重是 2 q_k(u) - 1，取值在 [-1, 1] 中。",
    },
    "stopped_max": {
        "en": "; you stopped the gradient through max|tanh w|, a common and valid variant",
        "zh": "；你停止了经过 max|tanh w| 的梯度，这是常见且可行的变体",
    },
    # ch05-ex3
    "at_w3": {"en": "{where}at w{index} = {w}: ", "zh": "{where}在 w{index} = {w} 处，"},
    "in_vector": {"en": "", "zh": ""},
    "in_matrix": {"en": "on the {shape} matrix, ", "zh": "在 {shape} 矩阵上，"},
    "xnor_value": {
        "en": "The value is sign(w)·E with E = mean|w| over the whole tensor, here E = {E}.",
        "zh": "前向值应为 sign(w)·E，其中 E 是整个张量上 |w| 的平均值，这里 E = {E}。",
    },
    "xnor_zero": {
        "en": "{where}at w = 0: your value is {got}; expected +E = {E}: this exercise, like BinaryConnect, larq "
              "and DoReFa-Net's code, takes sign(0) = +1 (tf.sign(0) = 0 would be a third value).",
        "zh": "{where}在 w = 0 处，你的前向值为 {got}，应为 +E = {E}：本练习与 BinaryConnect、larq 以及 "
              "DoReFa-Net 的代码一样，取 sign(0) = +1（tf.sign(0) = 0 会引入第三个值）。",
    },
    "xnor_zero_negative": {
        "en": "{where}at w = 0: your value is {got}; expected +E = {E}: use w >= 0, not w > 0 (sign(0) = +1).",
        "zh": "{where}在 w = 0 处，你的前向值为 {got}，应为 +E = {E}：请用 w >= 0，而不是 w > 0（sign(0) = +1）。",
    },
    "xnor_axis": {
        "en": "Your values use one scale per {axis}. Here E is one number, the mean of |w| over the whole tensor "
              "(tf.reduce_mean(tf.abs(w)) without an axis), and n counts all its entries.",
        "zh": "你的前向值对每一{axis}用了一个缩放因子。这里 E 只有一个，即整个张量上 |w| 的平均值"
              "（不带 axis 的 tf.reduce_mean(tf.abs(w))），n 是张量的全部元素个数。",
    },
    "row_word": {"en": "row", "zh": "行"},
    "column_word": {"en": "column", "zh": "列"},
    "xnor_product_rule": {
        "en": "Your gradient has every term of the product rule through E = mean|w|: dE/dw_j = sign(w_j)/n "
              "couples all the weights and adds (sign(w_j)/n)·Σ_i sign(w_i)·ȳ_i to each one. The paper keeps "
              "only the terms with i = j: ȳ_j (1/n + E·1{{|w_j| ≤ 1}}). Stop the gradient of E and write the "
              "backward pass yourself (tf.custom_gradient).",
        "zh": "你的梯度包含了经过 E = mean|w| 的乘积法则的全部项：dE/dw_j = sign(w_j)/n 把所有权重耦合在一起，"
              "给每个梯度都加上了 (sign(w_j)/n)·Σ_i sign(w_i)·ȳ_i。论文只保留 i = j 的项："
              "ȳ_j (1/n + E·1{{|w_j| ≤ 1}})。请停止 E 的梯度，自己写出反向传播（tf.custom_gradient）。",
    },
    "xnor_trick_unstopped": {
        "en": "Your surrogate w/n + E·clip(w, -1, 1) is the right one, but E is not stopped in it: autodiff also "
              "differentiates E = mean|w| inside the surrogate, which adds (sign(w_j)/n)·Σ_i clip(w_i, -1, 1)·ȳ_i "
              "to every weight. Use E = tf.stop_gradient(tf.reduce_mean(tf.abs(w))) in the surrogate.",
        "zh": "你的替代函数 w/n + E·clip(w, -1, 1) 是对的，但其中的 E 没有停止梯度：自动微分还会对替代函数中的 "
              "E = mean|w| 求导，给每个权重都加上 (sign(w_j)/n)·Σ_i clip(w_i, -1, 1)·ȳ_i。"
              "请在替代函数中使用 E = tf.stop_gradient(tf.reduce_mean(tf.abs(w)))。",
    },
    "xnor_sign_over_n": {
        "en": "Your term through the scale is sign(w_i)·ȳ_i/n. The product rule on E·sign(w_i) multiplies "
              "∂E/∂w_i = sign(w_i)/n by the forward's sign(w_i), and sign(w_i)² = 1: the factor is 1/n for every "
              "weight, whatever its sign.",
        "zh": "你经过缩放因子的那一项是 sign(w_i)·ȳ_i/n。对 E·sign(w_i) 用乘积法则时，∂E/∂w_i = sign(w_i)/n "
              "还要乘以前向中的 sign(w_i)，而 sign(w_i)² = 1：无论权重的符号如何，这个因子都是 1/n。",
    },
    "xnor_no_diagonal": {
        "en": "Your gradient is E·1{{|w| ≤ 1}}·ȳ: E stopped and the clipped estimator, larq's MagnitudeAwareSign. "
              "The paper also keeps the term through the scale, ȳ/n: ȳ (1/n + E·1{{|w| ≤ 1}}).",
        "zh": "你的梯度是 E·1{{|w| ≤ 1}}·ȳ：E 被停止梯度，再加上截断估计器，即 larq 的 MagnitudeAwareSign。"
              "论文还保留了经过缩放因子的那一项 ȳ/n：ȳ (1/n + E·1{{|w| ≤ 1}})。",
    },
    "xnor_plain": {
        "en": "Your gradient is E·ȳ: E stopped and the gradient straight through sign(w), unclipped. The paper's "
              "is ȳ (1/n + E·1{{|w| ≤ 1}}): a term 1/n through the scale, and the clip on the sign's part.",
        "zh": "你的梯度是 E·ȳ：E 被停止梯度，梯度不经截断地直通 sign(w)。论文的梯度是 ȳ (1/n + E·1{{|w| ≤ 1}})："
              "多一项经过缩放因子的 1/n，并且对 sign 的那一部分做截断。",
    },
    "xnor_identity": {
        "en": "Your gradient is the upstream gradient unchanged: the backward pass of xnor_binarize and of "
              "DoReFa-Net's 1-bit weights. The paper's is ȳ (1/n + E·1{{|w| ≤ 1}}).",
        "zh": "你的梯度就是原样传回的上游梯度：这是 xnor_binarize 以及 DoReFa-Net 的 1 位权重的反向传播。"
              "论文的梯度是 ȳ (1/n + E·1{{|w| ≤ 1}})。",
    },
    "xnor_no_clip": {
        "en": "Your gradient is ȳ (1/n + E) everywhere, also where |w| > 1. The paper clips the sign's part: "
              "ȳ (1/n + E·1{{|w| ≤ 1}}), so only ȳ/n is left where |w| > 1.",
        "zh": "你的梯度处处为 ȳ (1/n + E)，在 |w| > 1 处也是。论文对 sign 的那一部分做了截断："
              "ȳ (1/n + E·1{{|w| ≤ 1}})，因此在 |w| > 1 处只剩下 ȳ/n。",
    },
    "xnor_no_scale": {
        "en": "Your gradient is ȳ (1/n + 1{{|w| ≤ 1}}): the sign's part must be multiplied by the scale α = E, "
              "because the forward pass is E·sign(w): ȳ (1/n + E·1{{|w| ≤ 1}}).",
        "zh": "你的梯度是 ȳ (1/n + 1{{|w| ≤ 1}})：sign 的那一部分必须乘以缩放因子 α = E，"
              "因为前向是 E·sign(w)：ȳ (1/n + E·1{{|w| ≤ 1}})。",
    },
    "xnor_strict": {
        "en": "At w = ±1 the clipped part must still pass: the paper follows BinaryNet's indicator 1{{|r| ≤ 1}}, "
              "the boundary included (the authors' Torch code sets it to 0 where |W| ≥ 1; this exercise follows "
              "the paper).",
        "zh": "在 w = ±1 处截断的那一部分仍应通过：论文沿用 BinaryNet 的指示函数 1{{|r| ≤ 1}}，含边界"
              "（作者的 Torch 代码在 |W| ≥ 1 处把它设为 0；本练习以论文为准）。",
    },
    "xnor_gradient": {
        "en": "The gradient is ȳ_i (1/n + E·1{{|w_i| ≤ 1}}) with n = {n} entries and E = {E}.",
        "zh": "梯度应为 ȳ_i (1/n + E·1{{|w_i| ≤ 1}})，其中 n = {n} 是元素个数，E = {E}。",
    },
    "xnor_passed": {
        "en": "correct on a vector of {n} weights and a {shape} matrix, including w = 0 and w = ±1: values "
              "sign(w)·E with sign(0) = +1, gradient ȳ (1/n + E·1{{|w| ≤ 1}}), for upstream gradients other "
              "than 1.",
        "zh": "在 {n} 个权重的向量和一个 {shape} 矩阵上都正确，包括 w = 0 和 w = ±1：值为 sign(w)·E 且 "
              "sign(0) = +1，梯度为 ȳ (1/n + E·1{{|w| ≤ 1}})；对不为 1 的上游梯度也成立。",
    },
}


# -- shared machinery ----------------------------------------------------------------

def _listing(values, lang: str) -> str:
    """``1, 0.5, 2`` in English; ``1、0.5 和 2`` in Chinese (d2l-zh style)."""
    items = [fmt(v) for v in values]
    if lang != "zh" or len(items) < 2:
        return ", ".join(items)
    return "、".join(items[:-1]) + " 和 " + items[-1]


def _join(text: str, hint: str, lang: str) -> str:
    """Append a hint: a space after an English sentence, nothing after a Chinese full stop."""
    if not hint:
        return text
    return text + ("" if lang == "zh" else " ") + hint


def _value_and_vjp(fn: Callable, x: np.ndarray, upstream: np.ndarray, *, lang: str,
                   prefix: str = "") -> Tuple[np.ndarray, np.ndarray]:
    """Run the reader's ``fn(x)`` under a tape; return the value and the vector-Jacobian product."""
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = call(fn, xt, lang=lang, where=prefix)
    values = as_array(y, lang=lang, what="forward", where=prefix, shape=x.shape)
    require_tensor(y, lang=lang, where=prefix)
    try:
        grad = tape.gradient(y, xt, output_gradients=tf.constant(upstream))
    except Exception as err:  # e.g. a grad_fn that returns the wrong thing
        raise raised(err, lang, prefix) from None
    if grad is None:
        raise Mismatch(message(MESSAGES, "no_gradient", lang, prefix=prefix,
                               kind=message(MESSAGES, "none_word", lang)))
    grads = as_array(grad, lang=lang, what="gradient", where=prefix, shape=x.shape)
    return values, grads


def _first_bad(got, expected, atol: float = 1e-5) -> Optional[int]:
    bad = np.flatnonzero(~np.isclose(np.ravel(got), np.ravel(expected), atol=atol, rtol=1e-4))
    return None if bad.size == 0 else int(bad[0])


def _mismatch_text(lang: str, prefix: str, x: float, what: str, got, expected) -> str:
    return message(COMMON, "value", lang, where=prefix + message(COMMON, "at", lang, x=fmt(x)),
                   what=message(COMMON, what, lang), got=fmt(got), expected=fmt(expected))


def _check_elementwise(answer: Callable, x: np.ndarray, reference: Callable, *, lang: str, prefix: str,
                       gradient_hint: Callable[[float], str],
                       diagnose: Optional[Callable[[np.ndarray, np.ndarray], Optional[str]]] = None) -> None:
    """Value (sign with sign(0) = +1) and gradient of an elementwise binarizer, point by point.

    First with a unit upstream gradient (the local derivative), then with an
    upstream gradient of 2.5 (a grad_fn must multiply by dy).  When the local
    derivative is wrong, ``diagnose(x, gradient)`` may name the whole pattern
    (a typical wrong answer); otherwise ``gradient_hint(x_i)`` explains the
    expected value at the first wrong point.
    """
    value, local = reference(x)
    flat_x = np.ravel(x)

    def compare_values(y):
        flat_y = np.ravel(y)
        i = _first_bad(y, value)
        if i is not None:
            if flat_x[i] == 0:
                key = "sign_zero_negative" if flat_y[i] == -1 else "sign_zero"
                raise Mismatch(message(MESSAGES, key, lang, prefix=prefix, got=fmt(flat_y[i])))
            raise Mismatch(_join(_mismatch_text(lang, prefix, flat_x[i], "forward", flat_y[i],
                                                np.ravel(value)[i]),
                                 message(MESSAGES, "sign_forward", lang), lang))

    y, g = _value_and_vjp(answer, x, np.ones_like(x), lang=lang, prefix=prefix)
    compare_values(y)
    i = _first_bad(g, local)
    if i is not None:
        if not np.any(g) and np.any(local):
            raise Mismatch(message(MESSAGES, "no_gradient", lang, prefix=prefix,
                                   kind=message(MESSAGES, "zero_word", lang)))
        text = _mismatch_text(lang, prefix, flat_x[i], "gradient", np.ravel(g)[i], np.ravel(local)[i])
        hint = diagnose(x, g) if diagnose is not None else None
        raise Mismatch(_join(text, hint or gradient_hint(float(flat_x[i])), lang))
    dy = np.full(x.shape, 2.5, np.float32)
    y, g = _value_and_vjp(answer, x, dy, lang=lang, prefix=prefix)
    compare_values(y)  # every call of the answer counts
    i = _first_bad(g, local * dy)
    if i is not None:
        raise Mismatch(message(MESSAGES, "upstream", lang, prefix=prefix, dy=fmt(2.5),
                               at=f"x = {fmt(np.ravel(x)[i])}", got=fmt(np.ravel(g)[i]),
                               expected=fmt(np.ravel(local * dy)[i])))


def _sign_pm1(x: np.ndarray) -> np.ndarray:
    return np.where(x >= 0, 1.0, -1.0).astype(np.float32)


@contextlib.contextmanager
def _library_calls(names: Sequence[Tuple[str, str]]) -> Iterator[List[str]]:
    """While the block runs, record calls of the library functions ``names`` ((module, attribute) pairs).

    Each attribute is replaced, on its module, by a wrapper that appends
    ``"module.attribute"`` to the yielded list and calls the original; the
    originals are put back on exit, whatever happens.  Only calls that look
    the function up on its module at call time (``gradlib.ste_sign(x)``) are
    seen.
    """
    calls: List[str] = []
    saved = []

    def recorder(original, name):
        def wrapper(*args, **kwargs):
            calls.append(name)
            return original(*args, **kwargs)
        wrapper.__doc__, wrapper.__name__ = original.__doc__, original.__name__
        return wrapper

    try:
        for module_name, attribute in names:
            module = importlib.import_module(module_name)
            original = getattr(module, attribute)
            saved.append((module, attribute, original))
            setattr(module, attribute, recorder(original, f"{module_name}.{attribute}"))
        yield calls
    finally:
        for module, attribute, original in reversed(saved):
            setattr(module, attribute, original)


def _refuse_library(calls: List[str], lang: str, allowed: str = "nothing_allowed") -> None:
    if calls:
        raise Mismatch(message(MESSAGES, "library_call", lang, name=calls[0],
                               allowed=message(MESSAGES, allowed, lang)))


# -- ch05-ex1: binary_sign(x, clip) ----------------------------------------------------

CLIPS = (1.0, 0.5, 2.0)
# 0 first (the sign(0) trap), then the clip boundaries of every clip in CLIPS, then random points
SIGN_POINTS = kink_and_random_points([0.0, 0.5, -0.5, 1.0, -1.0, 1.5, -1.5, 2.0, -2.0, 2.5, -0.3],
                                     count=25, seed=5)


def binary_sign_reference(x: np.ndarray, clip: float) -> Tuple[np.ndarray, np.ndarray]:
    """sign with sign(0) = +1, and the clipped straight-through derivative 1{|x| <= clip}."""
    return _sign_pm1(x), (np.abs(x) <= clip).astype(np.float32)


EX1_LIBRARY = (("gradlib", "ste_sign"), ("gradlib", "sign_with_surrogate"),
               ("gradlib.ste", "ste_sign"), ("gradlib.ste", "sign_with_surrogate"))


@exercise("ch05-ex1", MESSAGES, answer="binary_sign")
def check_binary_sign(answer, lang):
    with _library_calls(EX1_LIBRARY) as calls:
        _check_binary_sign(answer, lang)
    _refuse_library(calls, lang)
    return message(MESSAGES, "binary_passed", lang, clips=_listing(CLIPS, lang), n=SIGN_POINTS.size)


def _check_binary_sign(answer, lang):
    for clip in CLIPS:
        prefix = message(MESSAGES, "with_clip", lang, clip=fmt(clip))

        def hint(x, clip=clip):
            if abs(x) == clip:  # expected 1 at the boundary: the answer blocked it
                return message(MESSAGES, "clip_boundary", lang)
            key = "clip_blocked" if abs(x) > clip else "clip_passes"
            return message(MESSAGES, key, lang, ax=fmt(abs(x)), clip=fmt(clip))

        def diagnose(x, g):
            if np.allclose(g, 1.0, atol=1e-5):  # straight through everywhere: no clip
                return message(MESSAGES, "plain_ste", lang)
            return None

        for x in (SIGN_POINTS, SIGN_POINTS[:36].reshape(6, 6)):
            _check_elementwise(lambda v, clip=clip: answer(v, clip), x,
                               lambda p, clip=clip: binary_sign_reference(p, clip),
                               lang=lang, prefix=prefix, gradient_hint=hint, diagnose=diagnose)


# -- ch05-ex2: dorefa_weights(w, bits) -------------------------------------------------

BITS = (2, 3, 8)  # at k = 1 DoReFa-Net binarises weights with a scaled sign, not this formula


def _dorefa_inputs():
    rng = np.random.default_rng(7)
    w = (0.8 * rng.standard_normal((4, 6))).astype(np.float32)
    w[0, 0] = 0.0  # u = 1/2: n u = n/2 is a tie, rounded up by tf.round for every odd n >= 3
    upstream = rng.choice([0.5, -1.0, 2.0, 3.0, -2.5], size=w.shape).astype(np.float32)
    return w, upstream


DOREFA_W, DOREFA_UPSTREAM = _dorefa_inputs()


def dorefa_weights_reference(w: np.ndarray, bits: int, upstream: np.ndarray, *, stop_max: bool = False):
    """Value and vector-Jacobian product of DoReFa's k-bit weights, straight through the rounding.

    ``stop_max=True`` treats :math:`M = \\max|\\tanh w|` as a constant.
    The value is computed in float32 like TensorFlow's; the gradient in float64.
    """
    n = 2 ** bits - 1
    t32 = np.tanh(w.astype(np.float32))
    u32 = t32 / (2 * np.max(np.abs(t32))) + np.float32(0.5)
    value = (2 * np.round(np.clip(u32, 0, 1) * np.float32(n)) / np.float32(n) - 1).astype(np.float32)
    t = np.tanh(w.astype(np.float64))
    j = np.argmax(np.abs(t))
    m = np.abs(t).flat[j]
    g_u = 2.0 * upstream.astype(np.float64)                       # y = 2 q - 1, q straight through
    g_t = g_u / (2 * m)                                            # u = t / (2 M) + 1/2
    if not stop_max:
        g_t.flat[j] -= np.sign(t.flat[j]) * np.sum(g_u * t) / (2 * m ** 2)  # M = |t_j|
    return value, g_t * (1 - t ** 2), n


def _dorefa_variant(w: np.ndarray, bits: int, upstream: np.ndarray, variant: str, clip: bool = True):
    """Value and vector-Jacobian product of a typical *wrong* ``dorefa_weights`` (for feedback only).

    Built from TensorFlow ops, not from gradlib: the rounding is straight
    through by the stop_gradient trick, after a clip of u to [0, 1] (as
    ``gradlib.dorefa_quantize`` does) or, with ``clip=False``, without one (as
    the plain trick ``u + tf.stop_gradient(tf.round(n u)/n - u)`` does; the two
    differ only where a wrong maximum puts u outside [0, 1]).
    ``variant`` names the mistake: ``"max_w"`` divides by max|w|,
    ``"max_sign"`` by max(tanh w) without the absolute value, ``"axis0"`` and
    ``"axis1"`` take the maximum along one axis, ``"affine"`` returns q_k(u)
    instead of 2 q_k(u) - 1.
    """
    n = float(2 ** bits - 1)
    wt = tf.constant(w)
    with tf.GradientTape() as tape:
        tape.watch(wt)
        t = tf.tanh(wt)
        if variant == "max_w":
            scale = tf.reduce_max(tf.abs(wt))
        elif variant == "max_sign":
            scale = tf.reduce_max(t)
        elif variant in ("axis0", "axis1"):
            scale = tf.reduce_max(tf.abs(t), axis=int(variant[-1]), keepdims=True)
        else:
            scale = tf.reduce_max(tf.abs(t))
        u = t / (2 * scale) + 0.5
        if clip:
            u = tf.clip_by_value(u, 0.0, 1.0)
        q = u + tf.stop_gradient(tf.round(u * n) / n - u)
        y = q if variant == "affine" else 2 * q - 1
    return y.numpy(), tape.gradient(y, wt, output_gradients=tf.constant(upstream)).numpy()


DOREFA_MISTAKES = (("max_w", "dorefa_max_w"), ("max_sign", "dorefa_max_sign"), ("axis0", "dorefa_max_axis"),
                   ("axis1", "dorefa_max_axis"), ("affine", "dorefa_affine"))


def _dorefa_mistake(y: np.ndarray, g: Optional[np.ndarray], bits: int, lang: str) -> Optional[str]:
    """The message for a typical wrong answer whose value (and gradient, when given) it reproduces."""
    for variant, key in DOREFA_MISTAKES:
        for clip in (True, False):
            value, grad = _dorefa_variant(DOREFA_W, bits, DOREFA_UPSTREAM, variant, clip=clip)
            if not np.allclose(y, value, atol=1e-5, rtol=1e-4):
                continue
            if g is None or np.allclose(g, grad, atol=1e-4, rtol=1e-4):
                return message(MESSAGES, key, lang)
    return None


def _index(i: int, shape) -> str:
    return "[" + ", ".join(str(k) for k in np.unravel_index(i, shape)) + "]"


EX2_LIBRARY = (("gradlib.experiments", "quantize_weights"),)


@exercise("ch05-ex2", MESSAGES, answer="dorefa_weights")
def check_dorefa_weights(answer, lang):
    with _library_calls(EX2_LIBRARY) as calls:
        variants = _check_dorefa_weights(answer, lang)
    _refuse_library(calls, lang, "dorefa_allowed")
    variant = message(MESSAGES, "stopped_max", lang) if variants == {"stopped"} else ""
    return message(MESSAGES, "dorefa_passed", lang, bits=_listing(BITS, lang), n=DOREFA_W.size,
                   variant=variant)


def _check_dorefa_weights(answer, lang):
    w, dy = DOREFA_W, DOREFA_UPSTREAM
    variants = set()
    for bits in BITS:
        prefix = message(MESSAGES, "with_bits", lang, bits=bits)
        value, grad, n = dorefa_weights_reference(w, bits, dy)
        _, grad_stopped, _ = dorefa_weights_reference(w, bits, dy, stop_max=True)
        y, g = _value_and_vjp(lambda v: answer(v, bits), w, dy, lang=lang, prefix=prefix)
        flat_w = np.ravel(w)
        bad = np.flatnonzero(~np.isclose(np.ravel(y), np.ravel(value), atol=1e-5, rtol=1e-4))
        if bad.size:
            # report a point away from the tie first: its message says more
            i = int(next((k for k in bad if flat_w[k] != 0), bad[0]))
            where = prefix + message(MESSAGES, "at_w", lang, index=_index(i, w.shape), w=fmt(flat_w[i]))
            got = np.ravel(y)[i]
            text = message(COMMON, "value", lang, where=where, what=message(COMMON, "forward", lang),
                           got=fmt(got), expected=fmt(np.ravel(value)[i]))
            mistake = _dorefa_mistake(y, None, bits, lang)
            if mistake is not None:
                hint = mistake
            elif 2 ** bits < len(np.unique(np.round(y, 5))) <= 2 ** (bits + 1) + 1:  # quantized, too finely
                hint = message(MESSAGES, "dorefa_levels", lang, bits=bits, levels=2 ** bits, n=n)
            else:
                hint = message(MESSAGES, "dorefa_value", lang, n=n)
            raise Mismatch(_join(text, hint, lang))
        if _first_bad(g, grad, atol=1e-4) is None:
            variants.add("full")
            continue
        if _first_bad(g, grad_stopped, atol=1e-4) is None:
            variants.add("stopped")
            continue
        if np.allclose(g, dy, atol=1e-5):
            raise Mismatch(message(MESSAGES, "dorefa_identity", lang, prefix=prefix))
        if not np.any(g):
            raise Mismatch(message(MESSAGES, "no_gradient", lang, prefix=prefix,
                                   kind=message(MESSAGES, "zero_word", lang)))
        mistake = _dorefa_mistake(y, g, bits, lang)
        # report against the variant the answer is closer to (fewer mismatching weights)
        target = min((grad, grad_stopped), key=lambda r: np.sum(~np.isclose(g, r, atol=1e-4, rtol=1e-4)))
        i = _first_bad(g, target, atol=1e-4)
        where = prefix + message(MESSAGES, "at_w", lang, index=_index(i, w.shape), w=fmt(flat_w[i]))
        text = message(COMMON, "value", lang, where=where, what=message(COMMON, "gradient", lang),
                       got=fmt(np.ravel(g)[i]), expected=fmt(np.ravel(target)[i]))
        key = "dorefa_max" if i == int(np.argmax(np.abs(flat_w))) else "dorefa_gradient"
        raise Mismatch(_join(text, mistake or message(MESSAGES, key, lang), lang))
    return variants


# -- ch05-ex3: xnor_paper(w) ------------------------------------------------------------

def _xnor_inputs():
    rng = np.random.default_rng(11)
    vector = np.concatenate([np.array([0.0, 1.0, -1.0, 1.5, -2.0, 0.25, -0.6], np.float32),
                             rng.uniform(-1.8, 1.8, 9).astype(np.float32)])
    matrix = rng.uniform(-1.6, 1.6, (3, 4)).astype(np.float32)
    matrix[0, 0], matrix[1, 2], matrix[2, 3] = 0.0, 1.0, -1.0
    inputs = []
    for w in (vector, matrix):
        upstream = rng.choice([0.5, -1.0, 2.0, 3.0, -2.5, 1.5], size=w.shape).astype(np.float32)
        inputs.append((w, upstream))
    return tuple(inputs)


XNOR_INPUTS = _xnor_inputs()


def xnor_paper_reference(w: np.ndarray, upstream: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    r"""Value (float32) and vector-Jacobian product (float64) of the paper's binarizer (section 3.1).

    Value :math:`\operatorname{sign}(w)\,E` with sign(0) = +1 and
    :math:`E = \operatorname{mean}|w|` over the whole tensor; gradient
    :math:`\bar y_i (1/n + E\,\mathbb{1}\{|w_i| \le 1\})`.
    """
    scale32 = np.mean(np.abs(w.astype(np.float32)), dtype=np.float32)
    value = (_sign_pm1(w) * scale32).astype(np.float32)
    scale, n = float(np.mean(np.abs(w.astype(np.float64)))), w.size
    return value, upstream.astype(np.float64) * (1.0 / n + scale * (np.abs(w) <= 1))


def _xnor_wrong_gradients(w: np.ndarray, upstream: np.ndarray):
    """The gradients of the typical wrong answers, each with the key of its message."""
    ybar, n = upstream.astype(np.float64), w.size
    scale, inside = float(np.mean(np.abs(w.astype(np.float64)))), (np.abs(w) <= 1).astype(np.float64)
    s = _sign_pm1(w).astype(np.float64)
    coupling = np.sum(s * ybar) / n
    for outer in (np.sign(w).astype(np.float64), s):  # TensorFlow's d|w|/dw is 0 at 0; by hand, +1
        yield "xnor_product_rule", scale * inside * ybar + outer * coupling
        yield "xnor_product_rule", scale * ybar + outer * coupling  # and the unclipped estimator
    clipped = np.clip(w.astype(np.float64), -1.0, 1.0)
    # the stop_gradient trick with the right surrogate w/n + E clip(w, -1, 1), but E not stopped in it
    yield "xnor_trick_unstopped", ybar * (1.0 / n + scale * inside) + np.sign(w) * np.sum(clipped * ybar) / n
    for outer in (np.sign(w).astype(np.float64), s):  # tf.sign(w)/n or the forward's sign/n, instead of 1/n
        yield "xnor_sign_over_n", ybar * (outer / n + scale * inside)
    yield "xnor_no_diagonal", scale * inside * ybar
    yield "xnor_plain", scale * ybar
    yield "xnor_identity", ybar
    yield "xnor_no_clip", ybar * (1.0 / n + scale)
    yield "xnor_no_scale", ybar * (1.0 / n + inside)


def _xnor_values(answer_values, w, where, lang):
    value, _ = xnor_paper_reference(w, np.ones_like(w))
    bad = np.flatnonzero(~np.isclose(np.ravel(answer_values), np.ravel(value), atol=1e-5, rtol=1e-4))
    if bad.size == 0:
        return
    i = int(next((k for k in bad if np.ravel(w)[k] != 0), bad[0]))  # w = 0 last: its message is narrower
    scale = np.mean(np.abs(w), dtype=np.float32)
    got, flat_w = np.ravel(answer_values)[i], np.ravel(w)
    text = message(COMMON, "value", lang,
                   where=message(MESSAGES, "at_w3", lang, where=where, index=_index(i, w.shape), w=fmt(flat_w[i])),
                   what=message(COMMON, "forward", lang), got=fmt(got), expected=fmt(np.ravel(value)[i]))
    if w.ndim == 2:
        for axis, word in ((0, "column_word"), (1, "row_word")):
            per_axis = _sign_pm1(w) * np.mean(np.abs(w), axis=axis, keepdims=True)
            if np.allclose(answer_values, per_axis, atol=1e-5, rtol=1e-4):
                raise Mismatch(_join(text, message(MESSAGES, "xnor_axis", lang, axis=message(MESSAGES, word, lang)),
                                     lang))
    if flat_w[i] == 0 and (np.isclose(got, 0.0, atol=1e-6) or np.isclose(got, -scale, atol=1e-5)):
        key = "xnor_zero" if np.isclose(got, 0.0, atol=1e-6) else "xnor_zero_negative"
        raise Mismatch(message(MESSAGES, key, lang, where=where, got=fmt(got), E=fmt(scale)))
    raise Mismatch(_join(text, message(MESSAGES, "xnor_value", lang, E=fmt(scale)), lang))


@exercise("ch05-ex3", MESSAGES, answer="xnor_paper")
def check_xnor_paper(answer, lang):
    close = lambda a, b: np.allclose(a, b, atol=1e-4, rtol=1e-4)  # noqa: E731
    for w, ybar in XNOR_INPUTS:
        where = "" if w.ndim == 1 else message(MESSAGES, "in_matrix", lang, shape="×".join(map(str, w.shape)))
        y, g = _value_and_vjp(answer, w, ybar, lang=lang, prefix=where)
        _xnor_values(y, w, where, lang)
        _, expected = xnor_paper_reference(w, ybar)
        flat_w = np.ravel(w)
        bad = np.flatnonzero(~np.isclose(np.ravel(g), np.ravel(expected), atol=1e-4, rtol=1e-4))
        if bad.size == 0:
            continue
        # a nonzero weight first: at w = 0 TensorFlow's d|w|/dw is 0, which hides the coupling through E
        i = int(next((k for k in bad if flat_w[k] != 0), bad[0]))
        if not np.any(g):
            raise Mismatch(message(MESSAGES, "no_gradient", lang, prefix=where,
                                   kind=message(MESSAGES, "zero_word", lang)))
        _, local = xnor_paper_reference(w, np.ones_like(w))
        if close(g, local):  # the local derivative, not multiplied by the upstream gradient
            raise Mismatch(message(MESSAGES, "upstream", lang, prefix=where, dy=fmt(np.ravel(ybar)[i]),
                                   at=f"w = {fmt(flat_w[i])}", got=fmt(np.ravel(g)[i]),
                                   expected=fmt(np.ravel(expected)[i])))
        text = message(COMMON, "value", lang,
                       where=message(MESSAGES, "at_w3", lang, where=where, index=_index(i, w.shape),
                                     w=fmt(flat_w[i])),
                       what=message(COMMON, "gradient", lang), got=fmt(np.ravel(g)[i]),
                       expected=fmt(np.ravel(expected)[i]))
        hint = next((message(MESSAGES, key, lang) for key, wrong in _xnor_wrong_gradients(w, ybar)
                     if close(g, wrong)), None)
        if hint is None and np.all(np.abs(flat_w[bad]) == 1):
            hint = message(MESSAGES, "xnor_strict", lang)  # wrong exactly at w = ±1: a strict |w| < 1
        if hint is None:
            hint = message(MESSAGES, "xnor_gradient", lang, n=w.size, E=fmt(np.mean(np.abs(w), dtype=np.float32)))
        raise Mismatch(_join(text, hint, lang))
    vector, matrix = XNOR_INPUTS[0][0], XNOR_INPUTS[1][0]
    return message(MESSAGES, "xnor_passed", lang, n=vector.size, shape="×".join(map(str, matrix.shape)))
