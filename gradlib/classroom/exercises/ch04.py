"""Checks for chapter 4: tf.custom_gradient.

ch04-ex1  ``fake_quant(x, bits)``: clipped straight-through gradient, ``None`` for ``bits``.
ch04-ex2  ``logaddexp(a, b)``: value that never overflows, both gradients right in
          relative terms (also where one is tiny), 1/2 each at a = b, finite second derivative,
          right inside a tf.function too, and a custom gradient (``tf.custom_gradient`` in the
          traced graph): a plain-autodiff answer, even a correct one such as
          ``tf.math.reduce_logsumexp``, gets a message that the exercise asks for a grad_fn.
ch04-ex3  ``clip_gradient_rows(x, max_norm)``: identity forward; backward, each row of
          ``dy`` clipped to the norm ``max_norm``.

Every reference below is an independent NumPy formula; the reader's function
is run under ``tf.GradientTape`` with upstream gradients other than 1, so a
``grad_fn`` that forgets ``dy`` is caught.
"""

import numpy as np
import tensorflow as tf

from ...logs import captured_tf_warnings
from ._core import (COMMON, PROPAGATE, Mismatch, call, describe, exercise, fmt, kink_and_random_points,
                    message, require_tensor, to_array)

MESSAGES = {
    # shared by the three checks
    "upstream": {
        "en": "at {at} with upstream gradient {u} your gradient is {got}; expected {expected}. "
              "grad_fn must multiply by the upstream gradient dy.",
        "zh": "在 {at} 处、上游梯度为 {u} 时，你的梯度为 {got}，应为 {expected}。"
              "grad_fn 必须乘以上游梯度 dy。",
    },
    "gradient_count": {
        "en": "grad_fn must return one gradient per input ({inputs}); TensorFlow said: {detail}",
        "zh": "grad_fn 必须为每个输入各返回一个梯度（{inputs}）；TensorFlow 的报错是：{detail}",
    },
    "mismatch": {
        "en": "at {at} {subject} is {got}; expected {expected}",
        "zh": "在 {at} 处，{subject}为 {got}，应为 {expected}",
    },
    "your": {"en": "your {what}", "zh": "你的{what}"},
    "end": {"en": ".", "zh": "。"},
    "at_bits": {"en": "x = {x}, bits = {bits}", "zh": "x = {x}，bits = {bits}"},
    "when_bits": {"en": "bits = {bits}: ", "zh": "bits = {bits} 时，"},
    "because": {"en": " because {reason}", "zh": "，因为{reason}"},
    "then": {"en": ". {hint}", "zh": "。{hint}"},
    "second": {"en": "second derivative", "zh": "二阶导数"},
    # ch04-ex1
    "outside": {
        "en": "x is outside [0, 1], where the forward pass is clipped and flat: the backward pass needs "
              "the mask tf.where((x >= 0) & (x <= 1), dy, 0), not dy everywhere.",
        "zh": " x 在 [0, 1] 之外，前向传播在那里被截断、是平的：反向传播需要掩码 "
              "tf.where((x >= 0) & (x <= 1), dy, 0)，而不是处处返回 dy。",
    },
    "inside": {
        "en": "x is inside [0, 1], where the gradient passes straight through.",
        "zh": " x 在 [0, 1] 之内，梯度在那里直通。",
    },
    "boundary": {
        "en": "x = {x} is an end of [0, 1], and the ends belong to the straight-through part: "
              "use x >= 0 and x <= 1, not > and <.",
        "zh": " x = {x} 是 [0, 1] 的端点，而端点属于直通的部分：请用 x >= 0 和 x <= 1，而不是 > 和 <。",
    },
    "int_bits": {
        "en": "The argument bits is an int32 tensor, so 2 ** bits - 1 is an int32 tensor too, and TensorFlow "
              "does not multiply it with the float x: cast it first, tf.cast(2 ** bits - 1, x.dtype).",
        "zh": "bits 是 int32 张量，所以 2 ** bits - 1 也是 int32 张量，TensorFlow 不会把它与浮点数 x 相乘："
              "请先转换类型，tf.cast(2 ** bits - 1, x.dtype)。",
    },
    "num_bits": {
        "en": "TensorFlow's tf.quantization.fake_quant_with_min_max_args takes num_bits as a Python int from "
              "2 to 16, and this exercise also asks for bits = 1, passed as a tensor: write the op yourself.",
        "zh": "tf.quantization.fake_quant_with_min_max_args 的 num_bits 必须是 2 到 16 之间的 Python 整数，"
              "而本练习还要求 bits = 1，且 bits 是张量：请自己写出这个运算。",
    },
    "pow2_levels": {
        "en": "You rounded to steps of 1/2^bits. With b bits there are 2^b levels, 0 and 1 included, so "
              "the step is 1/(2^b - 1): multiply by 2 ** bits - 1 and divide by it again.",
        "zh": "你按 1/2^bits 的步长取整。b 位共有 2^b 个取值（包括 0 和 1），因此步长是 1/(2^b - 1)："
              "请乘以 2 ** bits - 1，再除以它。",
    },
    "no_clip": {
        "en": "You rounded without clipping: clip x to [0, 1] (tf.clip_by_value) before rounding.",
        "zh": "你没有截断就取整了：请在取整之前用 tf.clip_by_value 把 x 截断到 [0, 1]。",
    },
    "raised_hint": {"en": "{raised}. {hint}", "zh": "{raised}。{hint}"},
    "quant_none": {
        "en": "the gradient is None: tf.round has no gradient, so nothing reaches x unless "
              "@tf.custom_gradient supplies one (and grad_fn returns a tensor, not None, for x).",
        "zh": "梯度为 None：tf.round 没有梯度，因此除非由 @tf.custom_gradient 提供梯度"
              "（并且 grad_fn 为 x 返回张量而不是 None），否则没有梯度能到达 x。",
    },
    "quant_passed": {
        "en": "correct for bits = 1, 2, 4 on {n} points: straight through inside [0, 1], 0 outside.",
        "zh": "bits 取 1、2、4 时，在 {n} 个点上都正确：[0, 1] 内直通，区间外为 0。",
    },
    # ch04-ex2
    "at_ab": {"en": "a = {a}, b = {b}", "zh": "a = {a}，b = {b}"},
    "gradient_for": {"en": "gradient for {name}", "zh": "梯度（对 {name}）"},
    "your_gradient_for": {"en": "your gradient for {name}", "zh": "你对 {name} 的梯度"},
    "space": {"en": " ", "zh": ""},
    "list_sep": {"en": ", ", "zh": "、"},
    "none_for": {
        "en": "the gradient for {name} is None: grad_fn must return one gradient for each of a and b, "
              "and both depend on a and b.",
        "zh": "对 {name} 的梯度为 None：grad_fn 必须为 a 和 b 各返回一个梯度，而且两者都依赖于 a 和 b。",
    },
    "overflow": {
        "en": "e^a overflows float32 for a > 88: subtract the larger input first, "
              "max(a, b) + log1p(exp(-|a - b|)), so that exp only sees numbers <= 0.",
        "zh": "a > 88 时 e^a 超出 float32 的范围：先减去较大的输入，即 max(a, b) + log1p(exp(-|a - b|))，"
              "这样 exp 只会遇到不大于 0 的数。",
    },
    "gradient_overflow": {
        "en": "Your gradient is NaN or inf where the value is finite, so something in the backward pass "
              "overflows: e^100 is inf in float32, and inf/inf or 0 * inf is NaN. "
              "Return tf.sigmoid(a - b) and tf.sigmoid(b - a) from grad_fn: they never overflow.",
        "zh": "函数值是有限的，梯度却是 NaN 或 inf，说明反向传播中有运算溢出了：float32 中 e^100 为 inf，"
              "而 inf/inf 或 0 * inf 都是 NaN。请让 grad_fn 返回 tf.sigmoid(a - b) 和 tf.sigmoid(b - a)：它们不会溢出。",
    },
    "where_trap": {
        "en": "Your function has no custom gradient, so autodiff differentiates both branches of your "
              "tf.where: the branch not chosen gets a zero upstream gradient, and where its own derivative "
              "is inf (e^100), 0 * inf is NaN. This is chapter 1's tf.where trap; the double where would fix "
              "the NaN, but this exercise asks for a grad_fn: decorate logaddexp with @tf.custom_gradient "
              "and return tf.sigmoid(a - b) and tf.sigmoid(b - a).",
        "zh": "你的函数没有自定义梯度，因此自动微分会对 tf.where 的两个分支都求导：没被选中的分支收到的上游梯度为 0，"
              "而它自己的导数在那里是 inf（e^100），0 * inf 就是 NaN。这正是第 1 章讲的 tf.where 陷阱；"
              "双重 where 可以消除 NaN，但本练习要求写 grad_fn：请用 @tf.custom_gradient 装饰 logaddexp，"
              "并返回 tf.sigmoid(a - b) 和 tf.sigmoid(b - a)。",
    },
    "swapped": {
        "en": "Your two gradients are swapped: grad_fn returns them in the order of the inputs, first the "
              "gradient for a (the larger one where a > b), then the one for b.",
        "zh": "你的两个梯度顺序颠倒了：grad_fn 按输入的顺序返回梯度，先返回对 a 的梯度（a > b 时它是较大的那个），再返回对 b 的梯度。",
    },
    "no_custom": {
        "en": "Your function gets every value and gradient right, but by plain autodiff: it contains no "
              "tf.custom_gradient. This exercise asks for the gradients in a grad_fn: decorate logaddexp with "
              "@tf.custom_gradient and return one gradient for each of a and b, written so that neither "
              "overflows nor cancels.",
        "zh": "你的函数的值和梯度都正确，但用的是普通的自动微分：其中没有 tf.custom_gradient。"
              "本练习要求在 grad_fn 中给出梯度：请用 @tf.custom_gradient 装饰 logaddexp，"
              "并为 a 和 b 各返回一个梯度，写法要保证两者既不溢出也不相消。",
    },
    "library_logsumexp": {
        "en": "tf.math.reduce_logsumexp gets every value and gradient right by plain autodiff: it subtracts "
              "the maximum and holds it constant with tf.stop_gradient. This exercise asks for the gradients "
              "in a grad_fn, though: decorate logaddexp with @tf.custom_gradient and return one gradient for "
              "each of a and b yourself.",
        "zh": "tf.math.reduce_logsumexp 靠普通的自动微分就能得到正确的值和梯度：它先减去最大值，"
              "再用 tf.stop_gradient 把最大值当作常量。不过本练习要求在 grad_fn 中给出梯度："
              "请用 @tf.custom_gradient 装饰 logaddexp，自己为 a 和 b 各返回一个梯度。",
    },
    "in_function": {
        "en": "inside a tf.function (the check runs your function there once, to see whether it uses "
              "tf.custom_gradient), ",
        "zh": "在 tf.function 内部（检查程序会在那里运行一次你的函数，以查看它是否使用了 tf.custom_gradient），",
    },
    "symbolic": {
        "en": "Inside a tf.function tensors have no value yet, so .numpy() fails there: compute the forward "
              "pass with TensorFlow operations.",
        "zh": "在 tf.function 内部，张量还没有具体的值，所以 .numpy() 在那里会失败：请用 TensorFlow 运算来计算前向传播。",
    },
    "half": {
        "en": "logaddexp is smooth, and at a = b each of its slopes is exactly 1/2. Autodiff through "
              "tf.maximum and tf.abs uses the convention of each at its kink (tf.maximum gives the whole "
              "slope to one input, the slope of tf.abs at 0 is 0), which is not 1/2; return the gradients "
              "yourself in grad_fn.",
        "zh": "logaddexp 是光滑的，在 a = b 处它的两个斜率都恰为 1/2。对 tf.maximum 和 tf.abs 自动求导时，"
              "二者在各自的不可导点处都采用某种约定（tf.maximum 把整个斜率给其中一个输入，tf.abs 在 0 处的斜率为 0），"
              "结果不是 1/2；请在 grad_fn 中自己返回梯度。",
    },
    "cancel": {
        "en": "The absolute error is tiny, but the relative error is {rel}: your formula subtracts two "
              "numbers that are both 1 up to rounding, such as 1 - sigmoid(a - b) or 1 - 1/(1 + e^(a - b)), "
              "and the difference cancels. Compute the small gradient directly: tf.sigmoid(a - b) for a, "
              "tf.sigmoid(b - a) for b.",
        "zh": "绝对误差很小，但相对误差为 {rel}：你的公式把两个舍入后都等于 1 的数相减，"
              "例如 1 - sigmoid(a - b) 或 1 - 1/(1 + e^(a - b))，差值因相消而丢失。"
              "请直接计算这个很小的梯度：对 a 用 tf.sigmoid(a - b)，对 b 用 tf.sigmoid(b - a)。",
    },
    "second_overflow": {
        "en": "The outer tape differentiates the operations of your grad_fn, and their derivatives overflow "
              "(e^x is inf, or a tf.where branch not chosen is), so 0 * inf gives NaN. Write grad_fn with "
              "tf.sigmoid, whose own gradient sigmoid * (1 - sigmoid) never overflows.",
        "zh": "外层梯度带会对你的 grad_fn 中的运算求导，而这些导数会溢出（e^x 为 inf，或者没被选中的 tf.where 分支溢出），"
              "于是 0 * inf 得到 NaN。请用 tf.sigmoid 来写 grad_fn，它自己的梯度 sigmoid * (1 - sigmoid) 不会溢出。",
    },
    "second_kink": {
        "en": "Your first derivatives are right, also at a = b, but the outer tape differentiates the operations "
              "of your grad_fn and, through them, every tensor they use. When one of those was computed with "
              "tf.maximum or tf.abs (the forward result y, for instance), the outer tape meets their kinks at "
              "a = b, where their slopes are conventions, not the true ones. Compute the gradients from a - b "
              "alone, e.g. tf.sigmoid(a - b), not from y.",
        "zh": "你的一阶导数是对的（在 a = b 处也是），但外层梯度带会对 grad_fn 中的运算求导，并经由它们对它们用到的每个张量求导。"
              "如果其中某个张量是用 tf.maximum 或 tf.abs 算出来的（例如前向结果 y），外层梯度带就会在 a = b 处遇到它们的不可导点，"
              "那里的斜率只是约定，而不是真实的斜率。请只用 a - b 来计算梯度，例如 tf.sigmoid(a - b)，而不要用 y。",
    },
    "second_none": {
        "en": "the second derivative is None: your grad_fn leaves TensorFlow (NumPy, .numpy()) or "
              "does not use a; write it with TensorFlow ops so that nested tapes can differentiate it.",
        "zh": "二阶导数为 None：你的 grad_fn 离开了 TensorFlow（NumPy、.numpy()）或没有用到 a；"
              "请用 TensorFlow 运算来写，这样嵌套的梯度带才能对它求导。",
    },
    "logaddexp_passed": {
        "en": "value, both gradients (relative error below {rtol:g}, also where a gradient is as small as "
              "{smallest:.1e}) and the second derivative correct on {n} points, including a = b and |a - b| = 100; "
              "a custom gradient, also right inside a tf.function.",
        "zh": "在包括 a = b 和 |a - b| = 100 在内的 {n} 个点上，函数值、两个梯度（相对误差低于 {rtol:g}，"
              "梯度小到 {smallest:.1e} 时也是如此）和二阶导数都正确；梯度是自定义的，在 tf.function 内部也正确。",
    },
    # ch04-ex3
    "at_row": {
        "en": "max_norm = {c}, row {i} of dy = {row} (norm {norm}): ",
        "zh": "max_norm = {c}，dy 的第 {i} 行 = {row}（范数为 {norm}）时，",
    },
    "when_c": {"en": "max_norm = {c}: ", "zh": "max_norm = {c} 时，"},
    "at_value_row": {"en": "max_norm = {c}, row {i}", "zh": "max_norm = {c}，第 {i} 行"},
    "row_mismatch": {
        "en": "{at}your gradient row is {got}; expected {expected}.",
        "zh": "{at}你的梯度中这一行是 {got}，应为 {expected}。",
    },
    "forward_clipped": {
        "en": "at row {i} your value is {got}; expected x itself, {expected}. You clipped x in the forward "
              "pass: the forward pass must be the identity, and the clipping belongs to dy, inside grad_fn.",
        "zh": "在第 {i} 行，你的前向值为 {got}，应为 x 本身 {expected}。你在前向传播中截断了 x："
              "前向传播必须是恒等映射，截断的对象是 grad_fn 中的 dy。",
    },
    "not_clipped": {
        "en": "The gradient passed through unclipped. The norm of this row exceeds max_norm, so grad_fn must "
              "scale it down to max_norm; a backward pass that autodiff derives is linear in dy and "
              "cannot clip, so this needs @tf.custom_gradient.",
        "zh": "梯度未经截断就通过了。这一行的范数超过了 max_norm，grad_fn 必须把它缩小到 max_norm；"
              "自动微分推导出的反向传播对 dy 是线性的，无法截断，所以这里需要 @tf.custom_gradient。",
    },
    "whole_norm": {
        "en": "You clipped the norm of the whole dy, so one large row shrinks every other row as well. "
              "Take one norm per row: tf.clip_by_norm(dy, max_norm, axes=[1]).",
        "zh": "你截断的是整个 dy 的范数，于是一行很大就会把其他所有行一起缩小。"
              "请每行各取一个范数：tf.clip_by_norm(dy, max_norm, axes=[1])。",
    },
    "by_value": {
        "en": "You clipped each entry to [-max_norm, max_norm] (tf.clip_by_value), which changes the "
              "direction of the row. Scale the whole row instead: tf.clip_by_norm(dy, max_norm, axes=[1]).",
        "zh": "你把每个元素截断到 [-max_norm, max_norm]（tf.clip_by_value），这会改变这一行的方向。"
              "请整行按比例缩放：tf.clip_by_norm(dy, max_norm, axes=[1])。",
    },
    "per_column": {
        "en": "You took one norm per column (axis 0); the examples are the rows: axes=[1].",
        "zh": "你按列（轴 0）取了范数；样本是行：应为 axes=[1]。",
    },
    "scaled_up": {
        "en": "You rescaled every row to the norm max_norm, so rows below the limit grew. Only rows whose "
              "norm exceeds max_norm are scaled down; the others pass unchanged.",
        "zh": "你把每一行都缩放到范数 max_norm，于是低于上限的行被放大了。只有范数超过 max_norm 的行才缩小，其余的行保持不变。",
    },
    "zero_row": {
        "en": "This row of dy is zero, and dividing by its norm gives 0/0 = NaN. A zero row is below the "
              "limit and passes unchanged: tf.clip_by_norm handles it, and so does "
              "dy * tf.minimum(1.0, max_norm / norm), where max_norm / 0 = inf.",
        "zh": "dy 的这一行为零，除以它的范数得到 0/0 = NaN。零行低于上限，应原样通过：tf.clip_by_norm 能处理这种情况，"
              "dy * tf.minimum(1.0, max_norm / norm) 也可以（此时 max_norm / 0 = inf）。",
    },
    "keepdims": {
        "en": "The per-row norms have shape [n]; keep the axis (keepdims=True, shape [n, 1]) so that they "
              "divide the rows of dy, or use tf.clip_by_norm(dy, max_norm, axes=[1]).",
        "zh": "每行的范数形状为 [n]；请保留这个轴（keepdims=True，形状为 [n, 1]），这样才能用它们按行去除 dy；"
              "或者直接用 tf.clip_by_norm(dy, max_norm, axes=[1])。",
    },
    "clip_passed": {
        "en": "correct for max_norm = {norms}: the identity forward, and each row of dy clipped to its norm "
              "limit, the zero row included.",
        "zh": "max_norm 取 {norms} 时都正确：前向为恒等映射，dy 的每一行都按范数上限截断，零行也正确。",
    },
}


# -- helpers -------------------------------------------------------------------

def _text(key, lang, **values):
    return message(MESSAGES, key, lang, **values)


def _subject(lang, what=None, name=None):
    """"your gradient" (``what``), or "your gradient for a" (``name``) / "你对 a 的梯度"."""
    if name is not None:
        return _text("your_gradient_for", lang, name=name)
    return _text("your", lang, what=what)


def _mismatch(lang, *, at, what=None, name=None, got, expected, because=None, hint=None):
    """"at x = 1.5 your gradient is 2; expected 0 because ..." (or ". hint"), as a Mismatch.

    ``what`` names the quantity ("gradient"); ``name`` instead makes it the gradient for that input.
    """
    text = _text("mismatch", lang, at=at, subject=_subject(lang, what, name), got=fmt(got), expected=fmt(expected))
    if because is not None:
        text += _text("because", lang, reason=_text(because, lang))
    elif hint is not None:
        text += _text("then", lang, hint=_text(hint, lang))
    else:
        text += _text("end", lang)
    return Mismatch(text)


def _tidy(detail):
    """TensorFlow's error text without its "{{function_node ...}}" prefix and "[Op:...] name:" suffix."""
    if detail.startswith("{{") and "}}" in detail:
        detail = detail.split("}}", 1)[1].strip() or detail
    if " [Op:" in detail:
        detail = detail.split(" [Op:", 1)[0].strip() or detail
    return detail.removesuffix("name:").strip() or detail


def _gradient(tape, target, source, *, lang, inputs, **kwargs):
    """tape.gradient, with TensorFlow's errors turned into reader-facing messages."""
    require_tensor(target, lang=lang)
    try:
        return tape.gradient(target, source, **kwargs)
    except Exception as err:
        detail = describe(err, lang)
        if "gradients, but returned" in detail:
            raise Mismatch(_text("gradient_count", lang, inputs=inputs, detail=detail)) from None
        raise Mismatch(message(COMMON, "raised", lang, where="", error=type(err).__name__,
                               detail=_tidy(detail))) from None


def _array(value, *, lang, what, shape, none_key="none"):
    """A numeric float array of the right shape; NaN and inf are kept (compared later)."""
    if value is None:
        if none_key in MESSAGES:
            raise Mismatch(_text(none_key, lang))
        raise Mismatch(message(COMMON, none_key, lang, where=""))
    array = to_array(value)
    if array is None or array.dtype.kind not in "biufc":
        raise Mismatch(message(COMMON, "not_numeric", lang, where="", kind=type(value).__name__))
    if array.dtype.kind != "f":
        raise Mismatch(message(COMMON, "dtype", lang, where="", what=what,
                               got=str(array.dtype), expected="float32"))
    if tuple(array.shape) != tuple(shape):
        raise Mismatch(message(COMMON, "shape", lang, where="", what=what,
                               got=list(array.shape), expected=list(shape)))
    return array.astype(np.float64)


def _first_mismatch(got, expected, *, atol, rtol=1e-4):
    """Index of the first entry that differs (NaN and inf always differ from finite values)."""
    good = np.isclose(got, expected, atol=atol, rtol=rtol) & np.isfinite(got)
    bad = np.flatnonzero(~good.reshape(-1))
    return int(bad[0]) if bad.size else None


# -- ch04-ex1: fake_quant(x, bits) -------------------------------------------------

# Kinks of the clipping, and no rounding ties (x * levels never within 1e-3 of k + 1/2):
# the check must not depend on how the reader's rounding breaks ties.
QUANT_POINTS = kink_and_random_points([0.0, 1.0, 0.35, -0.25, 1.5, -3.0, 2.0], low=-0.5, high=1.5, seed=4)
QUANT_UPSTREAM = np.random.default_rng(1).choice([0.5, 2.0, 5.0, -3.0], size=QUANT_POINTS.shape).astype(np.float32)


def _quant_reference(x, bits, *, levels=None, clip=True):
    """round(clip(x) * levels) / levels in float64; ``levels`` defaults to 2^bits - 1."""
    levels = 2.0 ** bits - 1 if levels is None else levels
    return np.round((np.clip(x, 0.0, 1.0) if clip else x) * levels) / levels


def _call_quant(answer, x, bits, lang):
    """answer(x, bits), with the typical exceptions of this exercise explained."""
    where = _text("when_bits", lang, bits=bits)
    try:
        return answer(x, tf.constant(bits))
    except (Mismatch, *PROPAGATE):
        raise
    except BaseException as err:  # the reader's code may raise anything
        detail = _tidy(describe(err, lang))
        text = message(COMMON, "raised", lang, where=where, error=type(err).__name__, detail=detail)
        for hint, found in (("num_bits", "num_bits" in detail),
                            ("int_bits", "int32" in detail and "float" in detail)):
            if found:
                raise Mismatch(_text("raised_hint", lang, raised=text, hint=_text(hint, lang))) from None
        raise Mismatch(text) from None


def _close(a, b, atol=1e-5):
    return bool(np.isfinite(a) and np.isclose(a, b, atol=atol, rtol=1e-4))


@exercise("ch04-ex1", MESSAGES, answer="fake_quant")
def check_fake_quant(answer, lang):
    value_text, grad_text = message(COMMON, "forward", lang), message(COMMON, "gradient", lang)
    x_np, upstream = QUANT_POINTS, QUANT_UPSTREAM
    x64 = x_np.astype(np.float64)
    inside = (x_np >= 0) & (x_np <= 1)
    for bits in (1, 2, 4):
        x = tf.constant(x_np)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = _call_quant(answer, x, bits, lang)
        values = _array(y, lang=lang, what=value_text, shape=x_np.shape)
        expected = _quant_reference(x64, bits)
        i = _first_mismatch(values, expected, atol=1e-5)
        if i is not None:
            hint = None
            if _close(values[i], _quant_reference(x64[i], bits, levels=2.0 ** bits)):
                hint = "pow2_levels"
            elif _close(values[i], _quant_reference(x64[i], bits, clip=False)):
                hint = "no_clip"
            raise _mismatch(lang, at=_text("at_bits", lang, x=fmt(x_np[i]), bits=bits), what=value_text,
                            got=values[i], expected=expected[i], hint=hint)
        grad = _gradient(tape, y, x, lang=lang, inputs="x, bits", output_gradients=tf.constant(upstream))
        grads = _array(grad, lang=lang, what=grad_text, shape=x_np.shape, none_key="quant_none")
        expected = np.where(inside, upstream, 0.0)
        i = _first_mismatch(grads, expected, atol=1e-6)
        if i is not None:
            at = _text("at_bits", lang, x=fmt(x_np[i]), bits=bits)
            if inside[i] and np.isclose(grads[i], 1.0):
                raise Mismatch(_text("upstream", lang, at=at, u=fmt(upstream[i]),
                                     got=fmt(grads[i]), expected=fmt(expected[i])))
            wrong = ~np.isclose(grads, expected, atol=1e-6, rtol=1e-4)
            if grads[i] == 0 and np.all(np.isin(x_np[wrong], (0.0, 1.0))):  # right except at the ends
                text = _text("mismatch", lang, at=at, subject=_subject(lang, grad_text), got=fmt(grads[i]),
                             expected=fmt(expected[i]))
                raise Mismatch(text + _text("because", lang, reason=_text("boundary", lang, x=fmt(x_np[i]))))
            raise _mismatch(lang, at=at, what=grad_text, got=grads[i], expected=expected[i],
                            because="inside" if inside[i] else "outside")
    return _text("quant_passed", lang, n=x_np.size)


# -- ch04-ex2: logaddexp(a, b) ----------------------------------------------------------

def _logaddexp_points():
    """(a, b) pairs: the tie, overflow both ways, tiny gradients both ways, then random pairs."""
    special = [(0.0, 0.0), (100.0, 0.0), (0.0, 100.0), (-20.0, 0.0), (0.0, -30.0), (50.0, -30.0),
               (-100.0, -100.0), (3.0, 3.0), (-2.5, 1.0), (20.0, 0.0), (-30.0, 0.0)]
    rng = np.random.default_rng(2)
    pairs = np.concatenate([np.array(special), rng.uniform(-6.0, 6.0, (14, 2))])
    return pairs[:, 0].astype(np.float32), pairs[:, 1].astype(np.float32)


LOGADDEXP_A, LOGADDEXP_B = _logaddexp_points()
GRAD_RTOL = 1e-4
# Below the smallest normal float32 TensorFlow returns 0 (its CPU kernels flush subnormal
# numbers), so exact gradients smaller than this are compared in absolute terms only.
GRAD_TINY = float(np.finfo(np.float32).tiny)


def _sigmoid(x):
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def _grad_ok(got, expected):
    """Relative accuracy; NaN and inf never pass."""
    return np.isfinite(got) & (np.abs(got - expected) <= GRAD_RTOL * np.abs(expected) + GRAD_TINY)


def _graph_facts(operations):
    """(uses tf.custom_gradient, uses tf.where, uses tf.math.reduce_logsumexp) in a traced graph."""
    custom = any(op.type == "IdentityN" and "_gradient_op_type" in op.node_def.attr for op in operations)
    where = any(op.type in ("Select", "SelectV2") for op in operations)
    logsumexp = any("ReduceLogSumExp" in op.name for op in operations)
    return custom, where, logsumexp


def _forward_facts(answer, *args):
    """:func:`_graph_facts` of ``answer(*args)`` traced in a tf.function.

    None when the reader's function cannot be traced (it may use .numpy(), Python control
    flow on tensors ...): the caller then gives the general hint.
    """
    try:
        with captured_tf_warnings():
            traced = tf.function(lambda *tensors: answer(*tensors), autograph=False)
            specs = [tf.TensorSpec(np.shape(arg), tf.float32) for arg in args]
            operations = traced.get_concrete_function(*specs).graph.get_operations()
    except PROPAGATE:
        raise
    except BaseException:  # the reader's code may raise anything while it is traced
        return None
    return _graph_facts(operations)


def _in_function(answer, a_np, b_np, upstream, lang):
    """``answer(a, b)`` and its gradients for ``upstream``, inside a tf.function.

    Returns (value, gradient for a, gradient for b, facts), the three arrays validated
    (numeric, float, right shape; NaN kept), ``facts`` from :func:`_graph_facts` of the
    traced graph.  The reader's function is called once, while it is traced; every
    problem becomes a Mismatch that says it happened inside a tf.function.
    """
    where = _text("in_function", lang)
    value_text = message(COMMON, "forward", lang)

    def step(a, b):
        with tf.GradientTape() as tape:
            tape.watch([a, b])
            try:
                y = answer(a, b)
            except (Mismatch, *PROPAGATE):
                raise
            except BaseException as err:  # the reader's code may raise anything
                detail = _tidy(describe(err, lang))
                text = message(COMMON, "raised", lang, where=where, error=type(err).__name__, detail=detail)
                if "numpy" in detail:
                    text = _text("raised_hint", lang, raised=text, hint=_text("symbolic", lang))
                raise Mismatch(text) from None
        if y is None:
            raise Mismatch(message(COMMON, "none", lang, where=where))
        if not isinstance(y, tf.Tensor):
            raise Mismatch(message(COMMON, "not_tensor", lang, where=where, kind=type(y).__name__))
        if not y.dtype.is_floating:
            raise Mismatch(message(COMMON, "dtype", lang, where=where, what=value_text,
                                   got=y.dtype.name, expected="float32"))
        if y.shape.rank is not None and y.shape.is_fully_defined() and tuple(y.shape) != a_np.shape:
            raise Mismatch(message(COMMON, "shape", lang, where=where, what=value_text,
                                   got=y.shape.as_list(), expected=list(a_np.shape)))
        grads = _gradient(tape, y, [a, b], lang=lang, inputs="a, b",
                          output_gradients=tf.cast(tf.constant(upstream), y.dtype))
        for g, name in zip(grads, "ab"):
            if g is None:
                raise Mismatch(_text("none_for", lang, name=name))
        return (y, *grads)

    specs = [tf.TensorSpec(a_np.shape, tf.float32)] * 2
    with captured_tf_warnings():
        concrete = tf.function(step, autograph=False).get_concrete_function(*specs)
    facts = _graph_facts(concrete.graph.get_operations())
    try:
        outputs = concrete(tf.constant(a_np), tf.constant(b_np))
    except PROPAGATE:
        raise
    except BaseException as err:  # a runtime error of the reader's graph
        raise Mismatch(message(COMMON, "raised", lang, where=where, error=type(err).__name__,
                               detail=_tidy(describe(err, lang)))) from None
    whats = (value_text, _text("gradient_for", lang, name="a"), _text("gradient_for", lang, name="b"))
    arrays = [_array(t, lang=lang, what=what, shape=a_np.shape) for t, what in zip(outputs, whats)]
    return (*arrays, facts)


def _swapped(arrays, ref_grads):
    """Both gradients right everywhere, but each returned for the other input."""
    return all(bool(np.all(_grad_ok(got, expected))) for got, expected in zip(arrays, reversed(ref_grads)))


@exercise("ch04-ex2", MESSAGES, answer="logaddexp")
def check_logaddexp(answer, lang):
    value_text = message(COMMON, "forward", lang)
    a_np, b_np = LOGADDEXP_A, LOGADDEXP_B
    a64, b64 = a_np.astype(np.float64), b_np.astype(np.float64)
    ref_value = np.logaddexp(a64, b64)
    ref_grads = (_sigmoid(a64 - b64), _sigmoid(b64 - a64))
    ref_second = ref_grads[0] * ref_grads[1]

    def at(i):
        return _text("at_ab", lang, a=fmt(a_np[i]), b=fmt(b_np[i]))

    a, b = tf.constant(a_np), tf.constant(b_np)
    with tf.GradientTape() as outer:
        outer.watch(a)
        with tf.GradientTape() as inner:
            inner.watch([a, b])
            y = call(answer, a, b, lang=lang)
        values = _array(y, lang=lang, what=value_text, shape=a_np.shape)
        i = _first_mismatch(values, ref_value, atol=1e-5)
        if i is not None:
            raise _mismatch(lang, at=at(i), what=value_text, got=values[i], expected=ref_value[i],
                            hint=None if np.isfinite(values[i]) else "overflow")
        grads = _gradient(inner, y, [a, b], lang=lang, inputs="a, b")
    arrays = []
    for g, name in zip(grads, "ab"):
        if g is None:
            raise Mismatch(_text("none_for", lang, name=name))
        arrays.append(_array(g, lang=lang, what=_text("gradient_for", lang, name=name), shape=a_np.shape))

    for i in range(a_np.size):  # point by point, a before b: the first problem is reported
        for got, expected, name in zip(arrays, ref_grads, "ab"):
            if _grad_ok(got[i], expected[i]):
                continue
            if not np.isfinite(got[i]):
                facts = _forward_facts(answer, a_np, b_np)
                hint = "where_trap" if facts is not None and not facts[0] and facts[1] else "gradient_overflow"
                raise _mismatch(lang, at=at(i), name=name, got=got[i], expected=expected[i], hint=hint)
            if _swapped(arrays, ref_grads):
                raise _mismatch(lang, at=at(i), name=name, got=got[i], expected=expected[i], hint="swapped")
            if a_np[i] == b_np[i]:
                raise _mismatch(lang, at=at(i), name=name, got=got[i], expected=expected[i], hint="half")
            if abs(got[i] - expected[i]) < 1e-5:  # right in absolute terms, wrong in relative ones
                text = _text("mismatch", lang, at=at(i), subject=_subject(lang, name=name), got=fmt(got[i]),
                             expected=fmt(expected[i]))
                rel = f"{abs(got[i] - expected[i]) / expected[i]:.0%}"
                raise Mismatch(text + _text("then", lang, hint=_text("cancel", lang, rel=rel)))
            raise _mismatch(lang, at=at(i), name=name, got=got[i], expected=expected[i])

    if not isinstance(grads[0], tf.Tensor):  # a NumPy gradient: nothing for the outer tape to differentiate
        raise Mismatch(_text("second_none", lang))
    second = _gradient(outer, grads[0], a, lang=lang, inputs="a, b")
    seconds = _array(second, lang=lang, what=_text("second", lang), shape=a_np.shape, none_key="second_none")
    i = _first_mismatch(seconds, ref_second, atol=1e-5)
    if i is not None:
        hint = None
        if not np.isfinite(seconds[i]):
            hint = "second_overflow"
        elif a_np[i] == b_np[i]:  # the first derivatives passed, also here: a kink reached through grad_fn
            hint = "second_kink"
        raise _mismatch(lang, at=at(i), what=_text("second", lang), got=seconds[i], expected=ref_second[i],
                        hint=hint)

    # Inside a tf.function, with upstream gradients other than 1 (a grad_fn that ignores dy passed
    # everything above); the traced graph also shows whether the answer uses tf.custom_gradient.
    a_up, b_up = np.array([1.0, -2.0], np.float32), np.array([-1.0, 0.5], np.float32)
    upstream = np.array([3.0, -0.5], np.float32)
    values, grad_a, grad_b, facts = _in_function(answer, a_up, b_up, upstream, lang)
    expected = np.logaddexp(a_up.astype(np.float64), b_up.astype(np.float64))
    i = _first_mismatch(values, expected, atol=1e-5)
    if i is not None:
        raise _mismatch(lang, at=_text("at_ab", lang, a=fmt(a_up[i]), b=fmt(b_up[i])), what=value_text,
                        got=values[i], expected=expected[i])
    diff = (a_up - b_up).astype(np.float64)
    for got, expected_slope in zip((grad_a, grad_b), (_sigmoid(diff), _sigmoid(-diff))):
        expected = upstream * expected_slope
        i = _first_mismatch(got, expected, atol=1e-5)
        if i is not None:
            raise Mismatch(_text("upstream", lang, at=_text("at_ab", lang, a=fmt(a_up[i]), b=fmt(b_up[i])),
                                 u=fmt(upstream[i]), got=fmt(got[i]), expected=fmt(expected[i])))
    custom, _, logsumexp = facts
    if not custom:
        raise Mismatch(_text("library_logsumexp" if logsumexp else "no_custom", lang))
    smallest = float(min(g[g >= GRAD_TINY].min() for g in ref_grads))
    return _text("logaddexp_passed", lang, n=a_np.size, rtol=GRAD_RTOL, smallest=smallest)


# -- ch04-ex3: clip_gradient_rows(x, max_norm) -----------------------------------------------

CLIP_X = (2.0 * np.random.default_rng(3).standard_normal((5, 3))).astype(np.float32)
CLIP_UPSTREAM = np.array([[3.0, 4.0, 0.0],     # norm 5: clipped
                          [0.3, -0.4, 0.0],    # norm 0.5: below the first limit, at the second
                          [0.0, 0.0, 0.0],     # a zero row: unchanged (no 0/0)
                          [-6.0, 2.0, 3.0],    # norm 7: clipped
                          [1.0, -1.0, 1.0]],   # norm 1.73: below the first limit, above the second
                         np.float32)
CLIP_NORMS = (2.0, 0.5)


def _clip_rows(dy, c, axis=1):
    """Each slice along ``axis`` scaled to norm at most ``c`` (float64; zero slices unchanged)."""
    norms = np.linalg.norm(dy, axis=axis, keepdims=True)
    return dy * np.minimum(1.0, c / np.where(norms > 0, norms, np.inf))


def _same(got, expected, rows=slice(None)):
    return bool(np.allclose(got[rows], expected[rows], atol=1e-5, rtol=1e-4))


def _clip_hint(got, dy, c):
    """The likely mistake behind a wrong gradient ``got`` for upstream ``dy`` and limit ``c``."""
    norms = np.linalg.norm(dy, axis=1)
    nonzero = norms > 0
    candidates = (
        ("not_clipped", dy, slice(None)),
        ("whole_norm", dy * min(1.0, c / np.linalg.norm(dy)), slice(None)),
        ("by_value", np.clip(dy, -c, c), slice(None)),
        ("per_column", _clip_rows(dy, c, axis=0), slice(None)),
        ("scaled_up", dy[nonzero] * (c / norms[nonzero])[:, None], None),
    )
    for key, expected, rows in candidates:
        if rows is None:  # compared on the nonzero rows only
            if np.all(np.isfinite(got[nonzero])) and np.allclose(got[nonzero], expected, atol=1e-5, rtol=1e-4):
                return key
        elif np.all(np.isfinite(got)) and _same(got, expected, rows):
            return key
    return None


@exercise("ch04-ex3", MESSAGES, answer="clip_gradient_rows")
def check_clip_gradient_rows(answer, lang):
    value_text, grad_text = message(COMMON, "forward", lang), message(COMMON, "gradient", lang)
    x_np, dy_np = CLIP_X, CLIP_UPSTREAM
    dy64 = dy_np.astype(np.float64)
    for c in CLIP_NORMS:
        x = tf.constant(x_np)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = call(answer, x, c, lang=lang, where=_text("when_c", lang, c=fmt(c)))
        values = _array(y, lang=lang, what=value_text, shape=x_np.shape)
        if not _same(values, x_np):
            i = int(np.flatnonzero(~np.all(np.isclose(values, x_np, atol=1e-5, rtol=1e-4), axis=1))[0])
            if _same(values, _clip_rows(x_np.astype(np.float64), c)) or _same(
                    values, x_np * min(1.0, c / np.linalg.norm(x_np))):
                raise Mismatch(_text("forward_clipped", lang, i=i, got=fmt(values[i]), expected=fmt(x_np[i])))
            raise _mismatch(lang, at=_text("at_value_row", lang, c=fmt(c), i=i), what=value_text, got=values[i],
                            expected=x_np[i])
        try:
            grad = _gradient(tape, y, x, lang=lang, inputs="x, max_norm", output_gradients=tf.constant(dy_np))
        except Mismatch as problem:
            if "Incompatible shapes" in str(problem) or "must be broadcastable" in str(problem):
                raise Mismatch(str(problem) + _text("then", lang, hint=_text("keepdims", lang))) from None
            raise
        grads = _array(grad, lang=lang, what=grad_text, shape=x_np.shape, none_key="none_gradient")
        expected = _clip_rows(dy64, c)
        good = np.all(np.isfinite(grads) & np.isclose(grads, expected, atol=1e-5, rtol=1e-4), axis=1)
        if np.all(good):
            continue
        i = int(np.flatnonzero(~good)[0])
        at = _text("at_row", lang, c=fmt(c), i=i, row=fmt(dy_np[i]), norm=fmt(np.linalg.norm(dy64[i])))
        text = _text("row_mismatch", lang, at=at, got=fmt(grads[i]), expected=fmt(expected[i]))
        if not np.all(dy_np[i] == 0) or np.all(np.isfinite(grads[i])):
            hint = _clip_hint(grads, dy64, c)
        else:
            hint = "zero_row"
        if hint is not None:
            text += _text("space", lang) + _text(hint, lang)
        raise Mismatch(text)
    return _text("clip_passed", lang, norms=_text("list_sep", lang).join(fmt(c) for c in CLIP_NORMS))
