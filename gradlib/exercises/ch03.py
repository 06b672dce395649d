"""Checks for chapter 3: RegisterGradient and gradient_override_map.

``ch03-ex1``: the reader writes ``clipped_sign_grad(op, grad)``, the BinaryNet
gradient of ``Sign`` (``grad`` where :math:`|x| \\le 1`, 0 elsewhere).  The
check registers it through :func:`gradlib.register_gradient` (so re-running
the exercise cell is safe), maps ``Sign`` to it with
``gradient_override_map`` in a fresh TF1 graph and compares what
``tf.gradients`` returns with the closed form, first with a unit upstream
gradient, then with random upstream gradients.

``ch03-ex2``: the reader writes ``naive_xnor_grad(x, w)`` in NumPy, the
gradient of :math:`L = \\sum_i w_i\\, \\mathrm{sign}(x_i)\\, E` with
:math:`E = \\mathrm{mean}|x|` when ``Sign`` is overridden by ``Identity``
and :math:`E` is *not* stopped.  The reference is what TensorFlow computes
for that graph.
"""

import numpy as np
import tensorflow as tf

from ..graph import register_gradient, run_graph
from ._core import (COMMON, Mismatch, as_array, call, describe, exercise, fmt, kink_and_random_points,
                    message)

# -- ch03-ex1: the clipped Sign gradient -------------------------------------

ANSWER_NAME = "GradbookCh03Ex1Answer"  # a gradient name no one else uses
CLIP = 1.0

MESSAGES_EX1 = {
    "none": {
        "en": "your gradient function returned None, so tf.gradients treats x as unconnected and "
              "returns None; return grad where |x| ≤ 1 and 0 elsewhere.",
        "zh": "你的梯度函数返回了 None，tf.gradients 因此认为 x 未连接并返回 None；"
              "请在 |x| ≤ 1 处返回 grad，其余位置返回 0。",
    },
    "not_tensor": {
        "en": "your gradient function returned a {kind} ({value}), not a tensor; tf.gradients then fails "
              "with AttributeError: {error}. Return a tensor, e.g. tf.zeros_like(grad) instead of 0.",
        "zh": "你的梯度函数返回了 {kind}（{value}），而不是张量；tf.gradients 会因此报错 "
              "AttributeError: {error}。请返回张量，例如用 tf.zeros_like(grad) 代替 0。",
    },
    "count": {
        "en": "your gradient function returned {n} values; Sign has one input (op.inputs[0]), "
              "so return one tensor.",
        "zh": "你的梯度函数返回了 {n} 个值；Sign 只有一个输入（op.inputs[0]），所以只应返回一个张量。",
    },
    "shape": {
        "en": "your gradient has shape {got}; expected {expected}, the shape of x (and of grad).",
        "zh": "你的梯度形状为 {got}，应为 {expected}，即 x（也是 grad）的形状。",
    },
    "tf_error": {
        "en": "tf.gradients failed with your gradient function: {error}: {detail}",
        "zh": "使用你的梯度函数时 tf.gradients 出错：{error}：{detail}",
    },
    "inside": {"en": "|x| ≤ 1", "zh": "|x| ≤ 1"},
    "outside": {"en": "|x| > 1", "zh": "|x| > 1"},
    "wrong": {
        "en": "at x = {x} your gradient is {got}; expected {expected} because {reason}.",
        "zh": "在 x = {x} 处你的梯度为 {got}，应为 {expected}，因为 {reason}。",
    },
    "upstream": {
        "en": "with the upstream gradient grad = {g} at x = {x} your gradient is {got}; expected {expected} "
              "(grad where |x| ≤ 1, 0 elsewhere): pass the upstream gradient through, do not replace "
              "it by a constant.",
        "zh": "当上游梯度 grad = {g} 时，在 x = {x} 处你的梯度为 {got}，应为 {expected}"
              "（|x| ≤ 1 处为 grad，其余为 0）：请让上游梯度通过，而不是用常数代替它。",
    },
    "passed": {
        "en": "correct at {n} points, including the kinks 0 and ±1, with unit and with random "
              "upstream gradients.",
        "zh": "在 {n} 个点上都正确（包括不可导点 0 与 ±1），上游梯度为 1 或随机值时均正确。",
    },
}

POINTS_EX1 = kink_and_random_points([0.0, 1.0, -1.0, 1.5, -1.5, 0.5, -0.5], count=24, seed=3)


def _expected_ex1(x, upstream):
    return np.where(np.abs(x) <= CLIP, upstream, 0.0).astype(np.float32)


def _validate_direct(result, x, lang):
    """Look at what the gradient function itself returned, before TensorFlow does."""
    if isinstance(result, (list, tuple)):
        if len(result) != 1:
            raise Mismatch(message(MESSAGES_EX1, "count", lang, n=len(result)))
        result = result[0]
    if result is None:
        raise Mismatch(message(MESSAGES_EX1, "none", lang))
    if not isinstance(result, tf.Tensor):
        try:
            result.name  # tf.gradients reads the name of every returned gradient (for its log)
        except AttributeError as err:
            error = describe(err)
        else:  # something with a name that is still not a tensor
            raise Mismatch(message(COMMON, "not_numeric", lang, where="", kind=type(result).__name__))
        kind = type(result)
        kind = f"Python {kind.__name__}" if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__name__}"
        value = repr(result)
        value = value if len(value) <= 40 else value[:37] + "..."
        raise Mismatch(message(MESSAGES_EX1, "not_tensor", lang, kind=kind, value=value, error=error))
    if not result.dtype.is_floating:
        raise Mismatch(message(COMMON, "dtype", lang, where="", what=message(COMMON, "gradient", lang),
                               got=result.dtype.name, expected="float32"))
    shape = result.shape
    if shape.rank is not None and shape.as_list() != list(x.shape):
        raise Mismatch(message(MESSAGES_EX1, "shape", lang, got=shape.as_list(), expected=list(x.shape)))


@exercise("ch03-ex1", MESSAGES_EX1, answer="clipped_sign_grad")
def check_clipped_sign_grad(answer, lang):
    register_gradient(ANSWER_NAME)(answer)  # re-registering replaces the previous answer
    x_np = POINTS_EX1
    rng = np.random.default_rng(7)
    upstream_np = (rng.uniform(0.5, 2.5, x_np.size) * rng.choice([-1.0, 1.0], x_np.size)).astype(np.float32)

    def build():
        x = tf.constant(x_np)
        graph = tf.compat.v1.get_default_graph()
        with graph.gradient_override_map({"Sign": ANSWER_NAME}):
            y = tf.sign(x)
        ones, upstream = tf.ones_like(x), tf.constant(upstream_np)
        _validate_direct(call(answer, y.op, upstream, lang=lang), x_np, lang)
        try:
            unit = tf.gradients(y, x, grad_ys=ones)[0]
            weighted = tf.gradients(y, x, grad_ys=upstream)[0]
        except Exception as err:  # e.g. a gradient whose shape only fails inside TensorFlow
            raise Mismatch(message(MESSAGES_EX1, "tf_error", lang, error=type(err).__name__,
                                   detail=describe(err))) from None
        return unit, weighted

    try:
        unit, weighted = run_graph(build)
    except Mismatch:
        raise
    except Exception as err:  # raised while the session ran the reader's ops
        raise Mismatch(message(MESSAGES_EX1, "tf_error", lang, error=type(err).__name__,
                               detail=describe(err))) from None

    unit = as_array(unit, lang=lang, what="gradient", shape=x_np.shape, none_key="none_gradient")
    expected = _expected_ex1(x_np, np.ones_like(x_np))
    bad = np.flatnonzero(~np.isclose(unit, expected, atol=1e-5))
    if bad.size:
        i = int(bad[0])
        reason = message(MESSAGES_EX1, "inside" if abs(x_np[i]) <= CLIP else "outside", lang)
        raise Mismatch(message(MESSAGES_EX1, "wrong", lang, x=fmt(x_np[i]), got=fmt(unit[i]),
                               expected=fmt(expected[i]), reason=reason))

    weighted = as_array(weighted, lang=lang, what="gradient", shape=x_np.shape, none_key="none_gradient")
    expected = _expected_ex1(x_np, upstream_np)
    bad = np.flatnonzero(~np.isclose(weighted, expected, atol=1e-5, rtol=1e-4))
    if bad.size:
        i = int(bad[0])
        raise Mismatch(message(MESSAGES_EX1, "upstream", lang, g=fmt(upstream_np[i]), x=fmt(x_np[i]),
                               got=fmt(weighted[i]), expected=fmt(expected[i])))
    return message(MESSAGES_EX1, "passed", lang, n=x_np.size)


# -- ch03-ex2: the naive XNOR gradient ---------------------------------------

MESSAGES_EX2 = {
    "stopped": {
        "en": "for x = {x} and w = {w} your gradient is w·E = {got}: that is the gradient with E "
              "stopped (tf.stop_gradient). In the naive version E = mean|x| depends on x too: add "
              "(Σ_i w_i sign(x_i))·sign(x_j)/n; the expected gradient is {expected}.",
        "zh": "对 x = {x}、w = {w}，你的梯度为 w·E = {got}：这是 E 被停止梯度（tf.stop_gradient）后的梯度。"
              "在朴素版本中 E = mean|x| 同样依赖 x：还要加上 (Σ_i w_i sign(x_i))·sign(x_j)/n；"
              "正确的梯度为 {expected}。",
    },
    "straight": {
        "en": "for x = {x} and w = {w} your gradient is w = {got}: that is the straight-through "
              "gradient of the final version (x / E with E stopped). The naive version scales by E "
              "and differentiates E as well; expected {expected}.",
        "zh": "对 x = {x}、w = {w}，你的梯度为 w = {got}：这是最终版本（x / E 且 E 被停止梯度）的直通梯度。"
              "朴素版本会乘以 E，并且还会对 E 求导；应为 {expected}。",
    },
    "missing_n": {
        "en": "for x = {x} and w = {w} your extra term is n = {n} times too large: "
              "∂E/∂x_j = sign(x_j)/n for E = mean|x|; expected {expected}.",
        "zh": "对 x = {x}、w = {w}，你的附加项大了 n = {n} 倍：对 E = mean|x| 有 "
              "∂E/∂x_j = sign(x_j)/n；应为 {expected}。",
    },
    "wrong": {
        "en": "for x = {x} and w = {w}, at index {j} your gradient is {got}; expected {expected}.",
        "zh": "对 x = {x}、w = {w}，在下标 {j} 处你的梯度为 {got}，应为 {expected}。",
    },
    "passed": {
        "en": "correct on {n} inputs, including one where x contains 0 and one where Σ w_i sign(x_i) = 0 "
              "(there the extra term vanishes).",
        "zh": "在 {n} 组输入上都正确，包括 x 含 0 的情形，以及 Σ w_i sign(x_i) = 0（附加项消失）的情形。",
    },
}


def _cases_ex2():
    rng = np.random.default_rng(11)
    x_random = rng.uniform(-2, 2, 8)
    w_random = rng.uniform(-2, 2, 8)
    return [
        (np.array([0.9, -0.3, 1.6, -1.2, 0.4, -0.1]), np.array([1.0, 2.0, 0.5, -1.0, 3.0, 1.5])),
        (x_random, w_random),
        (np.array([0.0, 1.0, -2.0, 0.5]), np.array([1.0, 1.0, 1.0, 1.0])),  # sign(0) = 0
        (np.array([0.7, -1.1, 0.2, -0.4]), np.array([1.0, 1.0, 1.0, 1.0])),  # Σ w_i sign(x_i) = 0
    ]


def _tensorflow_naive_xnor_grad(x_np, w_np):
    """What TensorFlow computes: Sign overridden by Identity, E = mean|x| not stopped."""
    def build():
        x = tf.constant(x_np, tf.float32)
        graph = tf.compat.v1.get_default_graph()
        with graph.gradient_override_map({"Sign": "Identity"}):
            scale = tf.reduce_mean(tf.abs(x))
            q = tf.sign(x) * scale
        loss = tf.reduce_sum(tf.constant(w_np, tf.float32) * q)
        return tf.gradients(loss, x)[0]
    return run_graph(build)


def _close(a, b):
    return np.allclose(a, b, rtol=1e-4, atol=1e-5)


@exercise("ch03-ex2", MESSAGES_EX2, answer="naive_xnor_grad")
def check_naive_xnor_grad(answer, lang):
    cases = _cases_ex2()
    for x, w in cases:
        where = f"x = {fmt(x)}, w = {fmt(w)}: "
        got = as_array(call(answer, x.copy(), w.copy(), lang=lang, where=where), lang=lang,
                       what="gradient", where=where, shape=x.shape)
        expected = _tensorflow_naive_xnor_grad(x, w)
        if _close(got, expected):
            continue
        n, scale, signs = x.size, np.mean(np.abs(x)), np.sign(x)
        values = dict(x=fmt(x), w=fmt(w), got=fmt(got), expected=fmt(expected))
        if _close(got, w * scale):
            raise Mismatch(message(MESSAGES_EX2, "stopped", lang, **values))
        if _close(got, w):
            raise Mismatch(message(MESSAGES_EX2, "straight", lang, **values))
        if _close(got, w * scale + np.sum(w * signs) * signs):
            raise Mismatch(message(MESSAGES_EX2, "missing_n", lang, n=n, **values))
        j = int(np.flatnonzero(~np.isclose(got, expected, rtol=1e-4, atol=1e-5))[0])
        raise Mismatch(message(MESSAGES_EX2, "wrong", lang, j=j, x=fmt(x), w=fmt(w),
                               got=fmt(got[j]), expected=fmt(expected[j])))
    return message(MESSAGES_EX2, "passed", lang, n=len(cases))
