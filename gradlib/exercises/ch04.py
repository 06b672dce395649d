"""Checks for chapter 4: tf.custom_gradient.

ch04-ex1  ``fake_quant(x, bits)``: clipped straight-through gradient, ``None`` for ``bits``.
ch04-ex2  ``log1pexp(x)``: value, gradient and second derivative stable everywhere.
ch04-ex3  ``safe_norm(v)``: the Euclidean norm with gradient 0 (not NaN) at the zero vector.

Every reference below is an independent NumPy formula; the reader's function
is run under ``tf.GradientTape`` with upstream gradients other than 1, so a
``grad_fn`` that forgets ``dy`` is caught.
"""

import numpy as np
import tensorflow as tf

from ._core import (COMMON, PROPAGATE, Mismatch, call, describe, exercise, fmt, kink_and_random_points,
                    message, raised, require_tensor, to_array)

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
        "en": "at {at} your {what} is {got}; expected {expected}",
        "zh": "在 {at} 处，你的{what}为 {got}，应为 {expected}",
    },
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
        "en": "correct for bits = 1, 2, 4 on {n} points: straight through inside [0, 1], 0 outside, None for bits.",
        "zh": "在 bits = 1、2、4 和 {n} 个点上都正确：[0, 1] 内直通，区间外为 0，bits 的梯度为 None。",
    },
    # ch04-ex2
    "overflow": {
        "en": "e^x overflows float32 for x > 88; compute it without exp(x) for large x (e.g. tf.nn.softplus).",
        "zh": "x > 88 时 e^x 超出 float32 的范围；x 很大时不要计算 exp(x)（例如用 tf.nn.softplus）。",
    },
    "gradient_overflow": {
        "en": "A gradient built from e^x (or e^-x) overflows for large |x|: e^100 is inf in float32, and "
              "inf/inf or 0 * inf is NaN. tf.sigmoid(x) computes the same function without overflow.",
        "zh": "用 e^x（或 e^-x）写出的梯度在 |x| 很大时会溢出：float32 中 e^100 为 inf，而 inf/inf 或 0 * inf 都是 NaN。"
              "tf.sigmoid(x) 计算的是同一个函数，但不会溢出。",
    },
    "second_overflow": {
        "en": "The outer tape differentiates the operations of your grad_fn, and their derivatives overflow. "
              "For example, 1 - 1/(1 + e^x) has a finite value, but its derivative multiplies the derivative of the "
              "reciprocal, 0, by that of e^x, inf, and 0 * inf is NaN. Write grad_fn with tf.sigmoid(x), "
              "whose own gradient sigmoid(x) * (1 - sigmoid(x)) is stable.",
        "zh": "外层梯度带会对你的 grad_fn 中的运算求导，而这些导数会溢出。例如 1 - 1/(1 + e^x) 的值是有限的，"
              "但它的导数要把倒数的导数 0 与 e^x 的导数 inf 相乘，0 * inf 是 NaN。请用 tf.sigmoid(x) 来写 grad_fn，"
              "它自己的梯度 sigmoid(x) * (1 - sigmoid(x)) 是数值稳定的。",
    },
    "half": {
        "en": "log(1 + e^x) is smooth, its slope at 0 is exactly 1/2: autodiff through tf.maximum or "
              "tf.abs picks one side at 0; return the gradient yourself in grad_fn.",
        "zh": "log(1 + e^x) 是光滑的，在 0 处的斜率恰为 1/2；对 tf.maximum 或 tf.abs 自动求导会在 0 处只取一侧，"
              "请在 grad_fn 中自己返回梯度。",
    },
    "second_none": {
        "en": "the second derivative is None: your grad_fn leaves TensorFlow (NumPy, .numpy()) or "
              "does not use x; write it with TensorFlow ops so that nested tapes can differentiate it.",
        "zh": "二阶导数为 None：你的 grad_fn 离开了 TensorFlow（NumPy、.numpy()）或没有用到 x；"
              "请用 TensorFlow 运算来写，这样嵌套的梯度带才能对它求导。",
    },
    "log1pexp_passed": {
        "en": "value, gradient and second derivative correct and finite on {n} points, including 0, ±50 and 100.",
        "zh": "在包括 0、±50 和 100 在内的 {n} 个点上，函数值、梯度和二阶导数都正确且有限。",
    },
    # ch04-ex3
    "zero_vector": {
        "en": "At the zero vector v / ||v|| is 0/0 = NaN (in tf.norm's own gradient too), and the norm has "
              "no derivative there; return 0 there, e.g. with tf.math.divide_no_nan(v, norm).",
        "zh": "在零向量处 v / ||v|| 是 0/0 = NaN（tf.norm 自带的梯度也是如此），而范数在那里不可导；"
              "请在那里返回 0，例如使用 tf.math.divide_no_nan(v, norm)。",
    },
    "norm_shape": {
        "en": "your gradient has shape {got}; expected {expected}. The gradient with respect to v has one "
              "entry per entry of v: grad_fn gets a scalar dy and returns the vector dy * v / ||v||.",
        "zh": "你的梯度形状为 {got}，应为 {expected}。对 v 的梯度中每个元素对应 v 的一个元素："
              "grad_fn 收到的 dy 是标量，应返回向量 dy * v / ||v||。",
    },
    "norm_passed": {
        "en": "correct on {n} vectors, including the zero vector (gradient 0, not NaN).",
        "zh": "在 {n} 个向量上都正确，包括零向量（梯度为 0，而不是 NaN）。",
    },
}


# -- helpers -------------------------------------------------------------------

def _text(key, lang, **values):
    return message(MESSAGES, key, lang, **values)


def _mismatch(lang, *, at, what, got, expected, because=None, hint=None):
    """"at x = 1.5 your gradient is 2; expected 0 because ..." (or ". hint"), as a Mismatch."""
    text = _text("mismatch", lang, at=at, what=what, got=fmt(got), expected=fmt(expected))
    if because is not None:
        text += _text("because", lang, reason=_text(because, lang))
    elif hint is not None:
        text += _text("then", lang, hint=_text(hint, lang))
    else:
        text += _text("end", lang)
    return Mismatch(text)


def _gradient(tape, target, source, *, lang, inputs, **kwargs):
    """tape.gradient, with TensorFlow's errors turned into reader-facing messages."""
    require_tensor(target, lang=lang)
    try:
        return tape.gradient(target, source, **kwargs)
    except Exception as err:
        detail = describe(err)
        if "gradients, but returned" in detail:
            raise Mismatch(_text("gradient_count", lang, inputs=inputs, detail=detail)) from None
        raise raised(err, lang) from None


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
        detail = describe(err)
        if detail.startswith("{{") and "}}" in detail:  # TensorFlow's "{{function_node ...}}" prefix
            detail = detail.split("}}", 1)[1].strip() or detail
        detail = detail.removesuffix("name:").strip() or detail  # and its empty "name:" suffix
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
                text = _text("mismatch", lang, at=at, what=grad_text, got=fmt(grads[i]), expected=fmt(expected[i]))
                raise Mismatch(text + _text("because", lang, reason=_text("boundary", lang, x=fmt(x_np[i]))))
            raise _mismatch(lang, at=at, what=grad_text, got=grads[i], expected=expected[i],
                            because="inside" if inside[i] else "outside")
    return _text("quant_passed", lang, n=x_np.size)


# -- ch04-ex2: log1pexp(x) ----------------------------------------------------------

LOG1PEXP_POINTS = kink_and_random_points([0.0, 100.0, 50.0, -50.0, -100.0, 1.0, -2.5],
                                         low=-6.0, high=6.0, count=16, seed=2)


def _sigmoid(x):
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


@exercise("ch04-ex2", MESSAGES, answer="log1pexp")
def check_log1pexp(answer, lang):
    value_text, grad_text = message(COMMON, "forward", lang), message(COMMON, "gradient", lang)
    x_np = LOG1PEXP_POINTS
    x64 = x_np.astype(np.float64)
    ref_value, ref_grad = np.logaddexp(0.0, x64), _sigmoid(x64)
    ref_second = ref_grad * (1.0 - ref_grad)

    x = tf.constant(x_np)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = call(answer, x, lang=lang)
        values = _array(y, lang=lang, what=value_text, shape=x_np.shape)
        grad = _gradient(inner, y, x, lang=lang, inputs="x")
    grads = _array(grad, lang=lang, what=grad_text, shape=x_np.shape, none_key="none_gradient")

    for what, got, expected, hint in ((value_text, values, ref_value, "overflow"),
                                      (grad_text, grads, ref_grad, "gradient_overflow")):
        i = _first_mismatch(got, expected, atol=1e-5)
        if i is not None:
            if not np.isfinite(got[i]):
                reason = {"hint": hint}
            elif what == grad_text and x_np[i] == 0:
                reason = {"hint": "half"}
            else:
                reason = {}
            raise _mismatch(lang, at=f"x = {fmt(x_np[i])}", what=what, got=got[i], expected=expected[i], **reason)

    if not isinstance(grad, tf.Tensor):  # a NumPy gradient: nothing for the outer tape to differentiate
        raise Mismatch(_text("second_none", lang))
    second = _gradient(outer, grad, x, lang=lang, inputs="x")
    seconds = _array(second, lang=lang, what=_text("second", lang), shape=x_np.shape, none_key="second_none")
    i = _first_mismatch(seconds, ref_second, atol=1e-5)
    if i is not None:
        raise _mismatch(lang, at=f"x = {fmt(x_np[i])}", what=_text("second", lang), got=seconds[i],
                        expected=ref_second[i], hint=None if np.isfinite(seconds[i]) else "second_overflow")

    # a grad_fn that ignores dy passes everything above (the upstream gradient was 1)
    point = np.array([1.0, -2.0], np.float32)
    upstream = np.array([3.0, -0.5], np.float32)
    xt = tf.constant(point)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = call(answer, xt, lang=lang)
    values = _array(y, lang=lang, what=value_text, shape=point.shape)  # this call's value counts too
    expected = np.logaddexp(0.0, point.astype(np.float64))
    i = _first_mismatch(values, expected, atol=1e-5)
    if i is not None:
        raise _mismatch(lang, at=f"x = {fmt(point[i])}", what=value_text, got=values[i], expected=expected[i])
    grad = _gradient(tape, y, xt, lang=lang, inputs="x", output_gradients=tf.constant(upstream))
    grads = _array(grad, lang=lang, what=grad_text, shape=point.shape, none_key="none_gradient")
    expected = upstream * _sigmoid(point.astype(np.float64))
    i = _first_mismatch(grads, expected, atol=1e-5)
    if i is not None:
        raise Mismatch(_text("upstream", lang, at=f"x = {fmt(point[i])}", u=fmt(upstream[i]),
                             got=fmt(grads[i]), expected=fmt(expected[i])))
    return _text("log1pexp_passed", lang, n=x_np.size)


# -- ch04-ex3: safe_norm(v) ------------------------------------------------------------

def _norm_cases():
    rng = np.random.default_rng(3)
    vectors = [np.zeros(3), np.array([3.0, 4.0, 0.0]), np.array([0.0, -2.0, 0.0])]
    vectors += [rng.standard_normal(3) for _ in range(4)]
    upstreams = [2.0, 1.0, 0.5, 1.0, -3.0, 2.5, 1.0]
    return [(v.astype(np.float32), np.float32(u)) for v, u in zip(vectors, upstreams)]


NORM_CASES = _norm_cases()


@exercise("ch04-ex3", MESSAGES, answer="safe_norm")
def check_safe_norm(answer, lang):
    value_text, grad_text = message(COMMON, "forward", lang), message(COMMON, "gradient", lang)
    for v_np, u in NORM_CASES:
        at = f"v = {fmt(v_np)}"
        v = tf.constant(v_np)
        with tf.GradientTape() as tape:
            tape.watch(v)
            y = call(answer, v, lang=lang, where=at + ": ")
        value = _array(y, lang=lang, what=value_text, shape=())
        norm = float(np.linalg.norm(v_np.astype(np.float64)))
        if _first_mismatch(value.reshape(1), np.array([norm]), atol=1e-5) is not None:
            raise _mismatch(lang, at=at, what=value_text, got=value, expected=norm)
        grad = _gradient(tape, y, v, lang=lang, inputs="v", output_gradients=tf.constant(u))
        grad_array = None if grad is None else to_array(grad)
        if grad_array is not None and grad_array.dtype.kind in "biufc" and grad_array.shape != v_np.shape:
            raise Mismatch(_text("norm_shape", lang, got=list(grad_array.shape), expected=list(v_np.shape)))
        grads = _array(grad, lang=lang, what=grad_text, shape=v_np.shape, none_key="none_gradient")
        unit = (v_np / norm if norm > 0 else np.zeros_like(v_np)).astype(np.float64)
        expected = u * unit
        if _first_mismatch(grads, expected, atol=1e-5) is None:
            continue
        if u != 1 and np.allclose(grads, unit, atol=1e-5):
            raise Mismatch(_text("upstream", lang, at=at, u=fmt(u), got=fmt(grads), expected=fmt(expected)))
        raise _mismatch(lang, at=at, what=grad_text, got=grads, expected=expected,
                        hint="zero_vector" if norm == 0 else None)
    return _text("norm_passed", lang, n=len(NORM_CASES))
