"""Checks for chapter 3: RegisterGradient and gradient_override_map.

``ch03-ex1``: the reader writes ``clip_grad(op, *grads)``, the gradient
function of an ``IdentityN`` op built as ``y, _ = IdentityN([x, c])``: the
forward value is :math:`x`, the backward value is the upstream gradient
clipped to :math:`[-c, c]`, with the threshold :math:`c` read from the op
(``op.inputs[1]``), a placeholder fed per run.  One registration serves every
:math:`c`.  The check registers the answer through
:func:`gradlib.register_gradient` (so re-running the exercise cell is safe),
builds that graph once and feeds :math:`c = 0.5, 1, 2`; the reference is
``np.clip(upstream, -c, c)``, and the gradient returned for ``c`` must be
``None`` or zero (``c`` is a threshold, not a parameter).  Besides the shape
of the answer, the diagnosis names: no clip, clipping ``x`` instead of the
gradient, the chapter's multiplication by ``c``, ``grad_c`` taken for ``c``
(all zeros), the explorer's mask by ``|x| <= c``, zeroing instead of
clipping beyond ``±c``, a ``c`` baked in, and a one-sided clip.

``ch03-ex2``: find the bugs.  A colleague's ``binarize`` has three silent
bugs (a misspelled op type in the map, the map entered on a graph fetched
once at the top, a mask computed from ``op.outputs[0]``).  Bugs 1 and 2
leave TensorFlow's zero gradient of ``Sign``; the network survives bug 3,
whose mask passes the upstream gradient everywhere (a straight-through
estimator without BinaryNet's clip).  The reader fixes all three and keeps
the colleague's override: the expected gradient is BinaryNet's, the upstream
gradient where ``|x| <= 1`` and 0 beyond, through a ``Sign`` op of the graph
marked by a map for ``Sign``.  The check calls the answer inside a
fresh TF1 graph and differentiates with ``tf.gradients``; while the answer
runs it records which graph each ``gradient_override_map`` was entered on and
with which keys, so that it can say which bug is left.  It names: bug 3 left
(the upstream gradient everywhere, the likeliest mistake: the network
learns), the chapter's ``BinaryNetSign`` mapped instead of the colleague's
function fixed, bug 1 or bug 2 left, the map entered around a ``tf.cond`` /
``tf.while_loop`` / ``tf.function`` whose ``Sign`` is built in a graph of its
own, a ``Sign`` created after the block, a ``tf.custom_gradient`` or other
answer that bypasses the override, ``Sign`` mapped to ``"Identity"``, and a
map to a name that nothing registered (the colleague's ``"ColleagueSign"``,
registered only in the exercise's text, a Python function's name, or any
other name).
"""

from __future__ import annotations

import contextlib
import inspect
from typing import Any, List, Tuple

import numpy as np
import tensorflow as tf

from ...graph import register_gradient, run_graph
from ._core import (COMMON, Mismatch, as_array, call, describe, exercise, fmt, kink_and_random_points,
                    message, to_array)


def _kind(value: Any) -> str:
    kind = type(value)
    return f"Python {kind.__name__}" if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__name__}"


def _short(value: Any) -> str:
    try:
        text = repr(value)
    except Exception:  # a reader's __repr__ may raise
        text = "?"
    return text if len(text) <= 40 else text[:37] + "..."


# -- ch03-ex1: a gradient clip whose threshold is fed per run ------------------------

ANSWER_NAME_EX1 = "GradbookCh03Ex1Answer"  # a gradient name no one else uses
THRESHOLDS = (0.5, 1.0, 2.0)
# Upstream gradients on both sides of every threshold, exact thresholds included.
UPSTREAM_EX1 = np.concatenate([
    np.array([0.25, -0.25, 0.5, -0.5, 0.75, -1.0, 1.0, 1.5, -1.5, 2.0, -2.0, 3.0, -3.0], np.float32),
    np.random.default_rng(5).uniform(-3.0, 3.0, 11).astype(np.float32)])
# The forward input: values that differ from the upstream gradient everywhere,
# so that an answer which clips x instead of the gradient is recognised.
X_EX1 = np.random.default_rng(6).uniform(-2.5, 2.5, UPSTREAM_EX1.size).astype(np.float32)

MESSAGES_EX1 = {
    "signature": {
        "en": "IdentityN has two outputs (y and c), so TensorFlow calls your gradient function with two "
              "upstream gradients: write def clip_grad(op, grad_y, grad_c) or def clip_grad(op, *grads).",
        "zh": "IdentityN 有两个输出（y 和 c），所以 TensorFlow 调用你的梯度函数时会传入两个上游梯度："
              "请写成 def clip_grad(op, grad_y, grad_c) 或 def clip_grad(op, *grads)。",
    },
    "none": {
        "en": "your gradient function returned None; return a list of two values: the clipped gradient "
              "for x and None for c.",
        "zh": "你的梯度函数返回了 None；请返回含两个值的列表：x 的梯度（截断后的上游梯度），以及 c 的梯度 None。",
    },
    "one": {
        "en": "your gradient function returned one tensor; IdentityN has two inputs (x and c), so return "
              "two values: [the clipped gradient for x, None for c].",
        "zh": "你的梯度函数只返回了一个张量；IdentityN 有两个输入（x 和 c），所以要返回两个值："
              "[x 的截断后梯度, c 的梯度 None]。",
    },
    "count_one": {
        "en": "your gradient function returned only 1 value; IdentityN here has two inputs (x and c), so "
              "return two: [the clipped gradient for x, None for c].",
        "zh": "你的梯度函数只返回了 1 个值；这里的 IdentityN 有两个输入（x 和 c），所以应返回两个值："
              "[x 的截断后梯度, c 的梯度 None]。",
    },
    "count": {
        "en": "your gradient function returned {n} values; IdentityN here has two inputs (x and c), so "
              "return two: [the clipped gradient for x, None for c].",
        "zh": "你的梯度函数返回了 {n} 个值；这里的 IdentityN 有两个输入（x 和 c），所以应返回两个值："
              "[x 的截断后梯度, c 的梯度 None]。",
    },
    "first_none": {
        "en": "the gradient you returned for x is None, so no gradient reaches x; return the clipped "
              "upstream gradient.",
        "zh": "你为 x 返回的梯度是 None，于是没有梯度到达 x；请返回截断后的上游梯度。",
    },
    "not_tensor": {
        "en": "the {which} value you returned is a {kind} ({value}), not a tensor (or None); tf.gradients "
              "needs tensors, e.g. tf.clip_by_value(grad_y, -c, c).",
        "zh": "你返回的第 {which} 个值是 {kind}（{value}），不是张量（也不是 None）；tf.gradients 需要张量，"
              "例如 tf.clip_by_value(grad_y, -c, c)。",
    },
    "first": {"en": "first", "zh": "1"},
    "second": {"en": "second", "zh": "2"},
    "shape": {
        "en": "your gradient for x has shape {got}; expected {expected}, the shape of x (and of grad_y).",
        "zh": "你为 x 返回的梯度形状为 {got}，应为 {expected}，即 x（也是 grad_y）的形状。",
    },
    "tf_error": {
        "en": "tf.gradients failed with your gradient function: {error}: {detail}",
        "zh": "使用你的梯度函数时 tf.gradients 出错：{error}：{detail}",
    },
    "no_clip": {
        "en": "your gradient is the upstream gradient unchanged (for c = {c} it is {got} where {expected} "
              "was expected): clip it to [-c, c].",
        "zh": "你的梯度就是原样的上游梯度（c = {c} 时为 {got}，应为 {expected}）：请把它截断到 [-c, c]。",
    },
    "fixed": {
        "en": "your gradient is the same for c = {c1} and for c = {c2}: the threshold must come from the op, "
              "op.inputs[1] (the placeholder fed on each run), not from a Python number fixed when the "
              "function was written.",
        "zh": "c = {c1} 与 c = {c2} 时你的梯度完全相同：阈值必须从算子中读取，即 op.inputs[1]"
              "（每次运行时喂入的占位符），而不是写函数时就固定下来的 Python 数。",
    },
    "input": {
        "en": "your gradient is computed from x = op.inputs[0] (for c = {c}: {got}); clip the upstream "
              "gradient grad_y instead: the forward value x is not what flows backward.",
        "zh": "你的梯度是由 x = op.inputs[0] 算出的（c = {c} 时为 {got}）；应截断的是上游梯度 grad_y："
              "反向传播的不是前向值 x。",
    },
    "scaled": {
        "en": "your gradient is the upstream gradient multiplied by {sign}c, as in the chapter's reversal; "
              "here c is a bound: clip to [-c, c] instead of multiplying.",
        "zh": "你的梯度是上游梯度乘以 {sign}c，就像本章的梯度反转那样；这里的 c 是一个界：应截断到 [-c, c]，"
              "而不是相乘。",
    },
    "one_sided": {
        "en": "with c = {c} an upstream gradient of {g} becomes {got}; expected {expected}: clip both sides, "
              "tf.clip_by_value(grad_y, -c, c), not only tf.minimum or tf.maximum.",
        "zh": "c = {c} 时，上游梯度 {g} 变成了 {got}，应为 {expected}：要两侧都截断，"
              "即 tf.clip_by_value(grad_y, -c, c)，而不只是 tf.minimum 或 tf.maximum。",
    },
    "mask_x": {
        "en": "you masked the gradient by the input x (zero where |x| > c), as the explorer's clip_mask_grad "
              "does; here nothing depends on x: the value of the upstream gradient itself is clipped, "
              "tf.clip_by_value(grad_y, -c, c).",
        "zh": "你按输入 x 给梯度加了掩码（在 |x| > c 处置零），就像探索器中的 clip_mask_grad 那样；"
              "这里与 x 无关：要截断的是上游梯度本身的值，即 tf.clip_by_value(grad_y, -c, c)。",
    },
    "zeroed": {
        "en": "you zeroed the gradient where |grad_y| > c (with c = {c} an upstream gradient of {g} becomes "
              "{got}); clip it to ±c instead: tf.clip_by_value(grad_y, -c, c) keeps {expected}.",
        "zh": "你在 |grad_y| > c 处把梯度置零了（c = {c} 时，上游梯度 {g} 变成了 {got}）；"
              "应当把它截断到 ±c：tf.clip_by_value(grad_y, -c, c) 会保留 {expected}。",
    },
    "grad_c": {
        "en": "your gradient is 0 for every c, which is what clipping to [-grad_c, grad_c] gives: grad_c is "
              "the upstream gradient of IdentityN's second output (zeros, since nothing uses that output), "
              "not c. The threshold is the op's second input, op.inputs[1].",
        "zh": "对每个 c 你的梯度都是 0，截断到 [-grad_c, grad_c] 就会得到这个结果：grad_c 是 IdentityN "
              "第二个输出的上游梯度（因为没有任何运算使用这个输出，它全为零），而不是 c。"
              "阈值是算子的第二个输入 op.inputs[1]。",
    },
    "grad_for_c": {
        "en": "the gradient you returned for c is {got} for c = {c}, not zero: c is a threshold, not a "
              "parameter to train, so return None (or zeros) for it.",
        "zh": "c = {c} 时你为 c 返回的梯度是 {got}，不是零：c 是一个阈值，而不是要训练的参数，"
              "所以它的梯度应返回 None（或零）。",
    },
    "wrong": {
        "en": "with c = {c} an upstream gradient of {g} becomes {got}; expected {expected} "
              "(the upstream gradient clipped to [-c, c]).",
        "zh": "c = {c} 时，上游梯度 {g} 变成了 {got}，应为 {expected}（即截断到 [-c, c] 的上游梯度）。",
    },
    "passed": {
        "en": "correct: one registration, and the gradient is clipped to [-c, c] for every fed c "
              "({cs}), on {n} upstream values including ±c themselves.",
        "zh": "正确：只注册一次，对每个喂入的 c（{cs}），梯度都被截断到 [-c, c]；"
              "共 {n} 个上游梯度值，包括恰好等于 ±c 的值。",
    },
}


def _binds(fn, count: int) -> bool:
    """True when ``fn`` accepts ``count`` positional arguments (unknown: True)."""
    try:
        signature = inspect.signature(fn)
    except Exception:  # builtins, objects whose signature cannot be read
        return True
    try:
        signature.bind(*range(count))
    except TypeError:
        return False
    return True


def _validate_ex1(result, lang):
    """Look at what the gradient function itself returned, before TensorFlow does."""
    if result is None:
        raise Mismatch(message(MESSAGES_EX1, "none", lang))
    if isinstance(result, tf.Tensor):
        raise Mismatch(message(MESSAGES_EX1, "one", lang))
    if not isinstance(result, (list, tuple)):
        raise Mismatch(message(MESSAGES_EX1, "not_tensor", lang, which=message(MESSAGES_EX1, "first", lang),
                               kind=_kind(result), value=_short(result)))
    if len(result) != 2:
        raise Mismatch(message(MESSAGES_EX1, "count_one" if len(result) == 1 else "count", lang, n=len(result)))
    first, second = result
    if first is None:
        raise Mismatch(message(MESSAGES_EX1, "first_none", lang))
    for which, value, allow_none in (("first", first, False), ("second", second, True)):
        if value is None and allow_none:
            continue
        if not isinstance(value, tf.Tensor):
            raise Mismatch(message(MESSAGES_EX1, "not_tensor", lang, which=message(MESSAGES_EX1, which, lang),
                                   kind=_kind(value), value=_short(value)))
    if not first.dtype.is_floating:
        raise Mismatch(message(COMMON, "dtype", lang, where="", what=message(COMMON, "gradient", lang),
                               got=first.dtype.name, expected="float32"))
    shape = first.shape
    if shape.rank is not None and shape.as_list() != list(UPSTREAM_EX1.shape):
        raise Mismatch(message(MESSAGES_EX1, "shape", lang, got=shape.as_list(), expected=list(UPSTREAM_EX1.shape)))


def _close(a, b) -> bool:
    return bool(np.allclose(a, b, rtol=1e-5, atol=1e-6))


def _diagnose_ex1(got: List[np.ndarray], lang: str) -> None:
    """Name the mistake behind wrong gradients (one array per threshold)."""
    up, x = UPSTREAM_EX1, X_EX1
    expected = [np.clip(up, -c, c) for c in THRESHOLDS]
    bad = [k for k in range(len(THRESHOLDS)) if not _close(got[k], expected[k])]
    if not bad:
        return
    k = bad[0]
    c = THRESHOLDS[k]
    i = int(np.flatnonzero(~np.isclose(got[k], expected[k], rtol=1e-5, atol=1e-6))[0])
    values = dict(c=fmt(c), g=fmt(up[i]), got=fmt(got[k][i]), expected=fmt(expected[k][i]))
    if all(_close(g, up) for g in got):
        raise Mismatch(message(MESSAGES_EX1, "no_clip", lang, **values))
    if all(_close(g, np.clip(x, -c_, c_)) or _close(g, x) for g, c_ in zip(got, THRESHOLDS)):
        raise Mismatch(message(MESSAGES_EX1, "input", lang, c=fmt(c), got=fmt(got[k])))
    for sign in (1.0, -1.0):
        if all(_close(g, sign * c_ * up) for g, c_ in zip(got, THRESHOLDS)):
            raise Mismatch(message(MESSAGES_EX1, "scaled", lang, sign="" if sign > 0 else "-"))
    zero = np.zeros_like(up)
    if all(_close(g, zero) for g in got):  # clip_by_value(grad_y, -grad_c, grad_c): grad_c is zeros
        raise Mismatch(message(MESSAGES_EX1, "grad_c", lang))
    for within in (np.less_equal, np.less):  # either choice at |.| == c is the same mistake
        if all(_close(g, np.where(within(np.abs(x), c_), up, zero)) for g, c_ in zip(got, THRESHOLDS)):
            raise Mismatch(message(MESSAGES_EX1, "mask_x", lang))
        if all(_close(g, np.where(within(np.abs(up), c_), up, zero)) for g, c_ in zip(got, THRESHOLDS)):
            raise Mismatch(message(MESSAGES_EX1, "zeroed", lang, **values))
    if _close(got[0], got[-1]):
        raise Mismatch(message(MESSAGES_EX1, "fixed", lang, c1=fmt(THRESHOLDS[0]), c2=fmt(THRESHOLDS[-1])))
    if all(_close(g, np.minimum(up, c_)) or _close(g, np.maximum(up, -c_)) for g, c_ in zip(got, THRESHOLDS)):
        raise Mismatch(message(MESSAGES_EX1, "one_sided", lang, **values))
    raise Mismatch(message(MESSAGES_EX1, "wrong", lang, **values))


@exercise("ch03-ex1", MESSAGES_EX1, answer="clip_grad")
def check_clip_grad(answer, lang):
    if not _binds(answer, 3) and _binds(answer, 2):
        raise Mismatch(message(MESSAGES_EX1, "signature", lang))
    register_gradient(ANSWER_NAME_EX1)(answer)  # re-registering replaces the previous answer

    def build():
        c = tf.compat.v1.placeholder(tf.float32, [], name="c")
        x = tf.constant(X_EX1)
        graph = tf.compat.v1.get_default_graph()
        with graph.gradient_override_map({"IdentityN": ANSWER_NAME_EX1}):
            y, _ = tf.raw_ops.IdentityN(input=[x, c])
        upstream = tf.constant(UPSTREAM_EX1)
        _validate_ex1(call(answer, y.op, upstream, tf.zeros_like(c), lang=lang), lang)
        try:
            return tf.gradients(y, [x, c], grad_ys=upstream)  # c's entry: the second value returned, or None
        except Exception as err:  # e.g. a later call of the answer that fails inside TensorFlow
            raise Mismatch(message(MESSAGES_EX1, "tf_error", lang, error=type(err).__name__,
                                   detail=describe(err))) from None

    try:
        results = run_graph(build, feed=[{"c": c} for c in THRESHOLDS])
    except Mismatch:
        raise
    except Exception as err:  # raised while the session ran the reader's ops
        raise Mismatch(message(MESSAGES_EX1, "tf_error", lang, error=type(err).__name__,
                               detail=describe(err))) from None
    got = [as_array(r[0], lang=lang, what="gradient", shape=UPSTREAM_EX1.shape, none_key="none_gradient")
           for r in results]
    _diagnose_ex1(got, lang)
    for c, (_, for_c) in zip(THRESHOLDS, results):
        if for_c is None:
            continue
        value = to_array(for_c)
        if value is None or value.dtype.kind not in "biuf" or value.size != 1:
            raise Mismatch(message(MESSAGES_EX1, "grad_for_c", lang, c=fmt(c), got=_short(for_c)))
        if not np.isfinite(value).all():
            raise Mismatch(message(MESSAGES_EX1, "grad_for_c", lang, c=fmt(c), got=fmt(value.item())))
        if value.item() != 0:
            raise Mismatch(message(MESSAGES_EX1, "grad_for_c", lang, c=fmt(c), got=fmt(value.item())))
    return message(MESSAGES_EX1, "passed", lang, cs=", ".join(fmt(c) for c in THRESHOLDS), n=UPSTREAM_EX1.size)


# -- ch03-ex2: find the bugs in a binarize function --------------------------------

CLIP = 1.0
POINTS_EX2 = kink_and_random_points([0.0, 1.0, -1.0, 1.5, -1.5, 0.5, -0.5, 2.5, -2.5], count=15, seed=3)
MATRIX_EX2 = np.array([[1.0, -0.25, 2.0, 0.0], [-1.0, 1.25, -3.0, 0.75], [0.5, -1.5, 1.0, -0.5]], np.float32)


def _upstream(shape, seed):
    rng = np.random.default_rng(seed)
    size = int(np.prod(shape))
    return (rng.uniform(0.5, 2.5, size) * rng.choice([-1.0, 1.0], size)).astype(np.float32).reshape(shape)


CASES_EX2 = [(POINTS_EX2, _upstream(POINTS_EX2.shape, 7)), (MATRIX_EX2, _upstream(MATRIX_EX2.shape, 8))]

MESSAGES_EX2 = {
    "none": {
        "en": "binarize returned None; return the tensor tf.sign(x), created inside the override map.",
        "zh": "binarize 返回了 None；请返回在覆盖映射中创建的张量 tf.sign(x)。",
    },
    "binarynet_forward": {
        "en": "at x = 0 binarize(x) is {got}: that is the Sign of the BinaryNet paper (+1 at 0), but the "
              "colleague's code returns tf.sign(x), which is 0 at x = 0; fix the bugs, not the forward value.",
        "zh": "在 x = 0 处 binarize(x) 为 {got}：这是 BinaryNet 论文中的 Sign（在 0 处取 +1），但同事的代码返回的是 "
              "tf.sign(x)（在 x = 0 处为 0）；要修正的是错误，而不是前向值。",
    },
    "forward": {
        "en": "at x = {x} binarize(x) is {got}; expected {expected}: the forward value must stay tf.sign(x) "
              "(0 at x = 0); the bugs are in the gradient.",
        "zh": "在 x = {x} 处 binarize(x) 为 {got}，应为 {expected}：前向值必须仍是 tf.sign(x)"
              "（在 x = 0 处为 0），错误都出在梯度上。",
    },
    "not_tensor": {
        "en": "binarize returned a {kind} ({value}), not a tensor of the graph being built; return the "
              "tensor tf.sign(x) created inside the override map.",
        "zh": "binarize 返回了 {kind}（{value}），而不是正在构建的计算图中的张量；请返回在覆盖映射中"
              "创建的张量 tf.sign(x)。",
    },
    "shape": {
        "en": "binarize(x) has shape {got}; expected {expected}, the shape of x.",
        "zh": "binarize(x) 的形状为 {got}，应为 {expected}，即 x 的形状。",
    },
    "lookup": {
        "en": "tf.gradients raised LookupError: the map sends Sign to {names}, but no gradient is registered "
              "under that name. The values of the map are registered names (the string given to "
              "register_gradient), not Python function names.",
        "zh": "tf.gradients 抛出了 LookupError：映射把 Sign 指向 {names}，但没有以这个名字注册的梯度。"
              "映射的值是注册名（传给 register_gradient 的字符串），而不是 Python 函数名。",
    },
    "colleague_name": {
        "en": "tf.gradients raised LookupError: the map sends Sign to 'ColleagueSign', but that name is "
              "registered only in the colleague's code, which this notebook never runs. Register the "
              "colleague's gradient function in your cell with gradlib.register_gradient, under that name or "
              "one of your own, and map Sign to it.",
        "zh": "tf.gradients 抛出了 LookupError：映射把 Sign 指向 'ColleagueSign'，但这个名字只在同事的代码中注册过，"
              "而本笔记本从未运行那段代码。请在你的单元格中用 gradlib.register_gradient 注册同事的梯度函数"
              "（用这个名字或你自己取的名字），再把 Sign 映射到这个名字。",
    },
    "unregistered": {
        "en": "tf.gradients raised LookupError: the map sends Sign to {names}, but no gradient is registered "
              "under that name. Register your gradient function under exactly that string "
              "(@gradlib.register_gradient(\"Name\")) in a cell that runs before the check.",
        "zh": "tf.gradients 抛出了 LookupError：映射把 Sign 指向 {names}，但没有以这个名字注册的梯度。"
              "请在检查之前运行的单元格中，以完全相同的字符串注册你的梯度函数"
              "（@gradlib.register_gradient(\"Name\")）。",
    },
    "tf_error": {
        "en": "tf.gradients failed on binarize(x): {error}: {detail}",
        "zh": "对 binarize(x) 调用 tf.gradients 时出错：{error}：{detail}",
    },
    "no_map": {
        "en": "your gradient is 0 everywhere, TensorFlow's own gradient of Sign: binarize never entered "
              "gradient_override_map. Keep the colleague's map.",
        "zh": "你的梯度处处为 0，这是 TensorFlow 自带的 Sign 梯度：binarize 从未进入 gradient_override_map。"
              "请保留同事的覆盖映射。",
    },
    "outer_graph": {
        "en": "your gradient is 0 everywhere, TensorFlow's own gradient of Sign: the map was entered on a "
              "graph other than the one the Sign op was built in (a graph fetched once, outside binarize). "
              "With this bug left the layers before binarize learn nothing, so it is not the one the network "
              "survives: call tf.compat.v1.get_default_graph() inside binarize.",
        "zh": "你的梯度处处为 0，这是 TensorFlow 自带的 Sign 梯度：覆盖映射是在另一个计算图上进入的，"
              "而不是构建 Sign 算子的那个计算图（一个在 binarize 之外只获取一次的计算图）。"
              "留着这个错误，binarize 之前的各层什么也学不到，所以它不是网络能带着训练的那个错误："
              "请在 binarize 内部调用 tf.compat.v1.get_default_graph()。",
    },
    "key": {
        "en": "your gradient is 0 everywhere, TensorFlow's own gradient of Sign: the keys of your map are "
              "{keys}, and TensorFlow does not check them. A key is an op type spelled as op.type prints "
              "it: \"Sign\". With this bug left the layers before binarize learn nothing, so it is not the one "
              "the network survives.",
        "zh": "你的梯度处处为 0，这是 TensorFlow 自带的 Sign 梯度：你的映射的键是 {keys}，而 TensorFlow "
              "不检查键。键是算子类型，写法与 op.type 打印出的一致：\"Sign\"。留着这个错误，binarize "
              "之前的各层什么也学不到，所以它不是网络能带着训练的那个错误。",
    },
    "nested": {
        "en": "your gradient is 0 everywhere, TensorFlow's own gradient of Sign: the map for Sign was entered "
              "on the right graph, but your tf.sign was built inside a tf.cond, a tf.while_loop or a "
              "tf.function (an if or a while on a tensor in a tf.function becomes one), and those build their "
              "ops in a graph of their own, which the map never marks. Enter the map inside the branch, right "
              "around tf.sign(x).",
        "zh": "你的梯度处处为 0，这是 TensorFlow 自带的 Sign 梯度：Sign 的覆盖映射是在正确的计算图上进入的，"
              "但你的 tf.sign 构建在 tf.cond、tf.while_loop 或 tf.function 之中（tf.function 中对张量的 if "
              "或 while 也会变成它们），它们在自己的计算图中构建算子，映射不会给那里的算子打标记。"
              "请在分支内部、紧贴着 tf.sign(x) 进入覆盖映射。",
    },
    "outside": {
        "en": "your gradient is 0 everywhere, TensorFlow's own gradient of Sign: you entered a map for Sign "
              "on the right graph, but no Sign op was created inside the with block. Create tf.sign(x) "
              "inside the block.",
        "zh": "你的梯度处处为 0，这是 TensorFlow 自带的 Sign 梯度：你在正确的计算图上进入了 Sign 的覆盖映射，"
              "但 with 代码块内没有创建任何 Sign 算子。请在代码块内创建 tf.sign(x)。",
    },
    "custom_gradient": {
        "en": "your binarize does not map Sign with gradient_override_map: it uses tf.custom_gradient, which "
              "replaces the colleague's override instead of fixing it. This exercise is about the colleague's "
              "bugs: keep the colleague's gradient function and map, and fix them.",
        "zh": "你的 binarize 没有用 gradient_override_map 映射 Sign，而是用了 tf.custom_gradient：它取代了同事的"
              "覆盖，而不是修正它。这个练习针对的是同事代码中的错误：请保留同事的梯度函数和覆盖映射，"
              "并修正其中的错误。",
    },
    "bypass": {
        "en": "your binarize gets its gradient without mapping Sign in gradient_override_map (with "
              "gradlib.straight_through or tf.stop_gradient, for example), which replaces the colleague's "
              "override instead of fixing it. This exercise is about the colleague's bugs: keep the "
              "colleague's gradient function and map, and fix them.",
        "zh": "你的 binarize 没有通过 gradient_override_map 映射 Sign 就得到了梯度（例如用了 "
              "gradlib.straight_through 或 tf.stop_gradient），这取代了同事的覆盖，而不是修正它。"
              "这个练习针对的是同事代码中的错误：请保留同事的梯度函数和覆盖映射，并修正其中的错误。",
    },
    "bug3_left": {
        "en": "the override now takes effect and the layers before binarize learn, but at x = {x} (upstream "
              "gradient {g}) your gradient is {got}; BinaryNet's is {expected}, zero where |x| > 1. Your "
              "gradient function passes the upstream gradient everywhere, as the colleague's mask does: it is "
              "computed from op.outputs[0] = sign(x), which is always within [-1, 1]. That is the third bug, "
              "the one the network survives: mask by the input of Sign, op.inputs[0].",
        "zh": "覆盖映射现在生效了，binarize 之前的各层也能学习；但在 x = {x} 处（上游梯度为 {g}）你的梯度为 "
              "{got}，而 BinaryNet 的梯度是 {expected}：在 |x| > 1 处为 0。你的梯度函数处处让上游梯度通过，"
              "同事的掩码正是如此：它由 op.outputs[0] = sign(x) 计算，而 sign(x) 总在 [-1, 1] 之内。这就是第三个错误，也是网络能带着"
              "照常训练的那个：请用 Sign 的输入 op.inputs[0] 计算掩码。",
    },
    "chapter": {
        "en": "you mapped Sign to 'BinaryNetSign', the chapter's gradient function, which has none of the "
              "colleague's bugs. The gradient is right, but the exercise asks you to fix the colleague's code: "
              "keep the colleague's gradient function (registered in your cell) and fix its bugs.",
        "zh": "你把 Sign 映射到了 'BinaryNetSign'，即本章自己的梯度函数，它没有同事代码中的任何错误。"
              "梯度是对的，但这个练习要求修正同事的代码：请保留同事的梯度函数（在你的单元格中注册），并修正其中的错误。",
    },
    "identity": {
        "en": "you mapped Sign to \"Identity\", TensorFlow's gradient of Identity, not the colleague's gradient "
              "function. Keep colleague_sign_grad, registered in your cell, and map Sign to its name.",
        "zh": "你把 Sign 映射到了 \"Identity\"，这是 TensorFlow 为 Identity 写的梯度，而不是同事的梯度函数。"
              "请保留 colleague_sign_grad，在你的单元格中注册它，并把 Sign 映射到它的注册名。",
    },
    "upstream": {
        "en": "with the upstream gradient {g} at x = {x} your gradient is {got}; expected {expected}: a "
              "gradient function lets the upstream gradient grad through, it does not replace it by 1.",
        "zh": "当上游梯度为 {g} 时，在 x = {x} 处你的梯度为 {got}，应为 {expected}：梯度函数要让上游梯度 "
              "grad 原样通过，而不是用 1 代替它。",
    },
    "wrong": {
        "en": "at x = {x} (upstream gradient {g}) your gradient is {got}; expected {expected}, BinaryNet's "
              "gradient: the upstream gradient where |x| <= 1 and 0 beyond.",
        "zh": "在 x = {x} 处（上游梯度为 {g}）你的梯度为 {got}；应为 {expected}，即 BinaryNet 的梯度："
              "在 |x| <= 1 处为上游梯度，超出之处为 0。",
    },
    "passed": {
        "en": "correct: with the key \"Sign\" and the graph fetched inside binarize the map takes effect, and "
              "the mask computed from the input of Sign, op.inputs[0], gives BinaryNet's gradient: the upstream "
              "gradient where |x| <= 1 and 0 beyond ({n} points, including 0 and ±1, 1-D and 2-D, random upstream "
              "gradients). Bugs 1 and 2 each leave Sign's own zero gradient, so nothing before binarize learns; "
              "the network survives bug 3, whose mask from op.outputs[0] = sign(x) passes the gradient "
              "everywhere: a straight-through estimator without BinaryNet's clip.",
        "zh": "正确：键写成 \"Sign\"、并在 binarize 内部获取计算图之后，覆盖映射生效；掩码由 Sign 的输入 "
              "op.inputs[0] 计算，给出 BinaryNet 的梯度：在 |x| <= 1 处为上游梯度，超出之处为 0（共 {n} 个点，"
              "包括 0 与 ±1，一维和二维输入，随机上游梯度）。错误 1 和错误 2 都会留下 Sign 自带的零梯度，"
              "binarize 之前的各层什么也学不到；网络能带着错误 3 照常训练：由 op.outputs[0] = sign(x) "
              "计算的掩码处处让梯度通过，相当于没有 BinaryNet 截断的直通估计器。",
    },
}


@contextlib.contextmanager
def _recording_override_maps():
    """Record ``(graph, op_type_map)`` for every ``gradient_override_map`` entered in the block."""
    records: List[Tuple[Any, Any]] = []
    original = tf.Graph.gradient_override_map

    def recording(self, op_type_map):
        try:
            copied = dict(op_type_map) if isinstance(op_type_map, dict) else None
        except Exception:
            copied = None
        records.append((self, copied))
        return original(self, op_type_map)

    tf.Graph.gradient_override_map = recording
    try:
        yield records
    finally:
        tf.Graph.gradient_override_map = original


def _sign_targets(records) -> List[str]:
    """The names the recorded maps send ``Sign`` to, on whichever graph they were entered."""
    return [str(m["Sign"]) for _, m in records if m and "Sign" in m]


def _python_function_names(answer) -> set:
    """Names of the functions the answer's module (the notebook) defines, for the LookupError message."""
    try:
        namespace = dict(getattr(answer, "__globals__", None) or {})
    except Exception:
        return set()
    return {name for name, value in namespace.items() if inspect.isfunction(value)}


def _lookup_message(answer, names, lang) -> str:
    """A map whose value names no registered gradient: say which mistake that is."""
    if "ColleagueSign" in names:  # the exercise's text registers it; the notebook never runs that text
        return message(MESSAGES_EX2, "colleague_name", lang)
    shown = ", ".join(repr(n) for n in names) or "?"
    if set(names) & _python_function_names(answer):
        return message(MESSAGES_EX2, "lookup", lang, names=shown)
    return message(MESSAGES_EX2, "unregistered", lang, names=shown)


def _build_ex2(answer, x_np, up_np, lang):
    """In a fresh graph: y = binarize(x) and dy/dx for the upstream gradient; the maps entered."""
    records: List[Tuple[Any, Any]] = []
    box = {}

    def build():
        graph = tf.compat.v1.get_default_graph()
        x = tf.constant(x_np)
        with _recording_override_maps() as seen:
            y = call(answer, x, lang=lang)
        records.extend(seen)
        if y is None:
            raise Mismatch(message(MESSAGES_EX2, "none", lang))
        if not isinstance(y, tf.Tensor) or getattr(y, "graph", None) is not graph:
            raise Mismatch(message(MESSAGES_EX2, "not_tensor", lang, kind=_kind(y), value=_short(y)))
        if y.shape.rank is not None and y.shape.as_list() != list(x_np.shape):
            raise Mismatch(message(MESSAGES_EX2, "shape", lang, got=y.shape.as_list(), expected=list(x_np.shape)))
        if not y.dtype.is_floating:
            raise Mismatch(message(COMMON, "dtype", lang, where="", what=message(COMMON, "forward", lang),
                                   got=y.dtype.name, expected="float32"))
        box["graph"] = graph
        try:
            gradient = tf.gradients(y, x, grad_ys=tf.constant(up_np))[0]
        except LookupError:
            raise Mismatch(_lookup_message(answer, sorted(set(_sign_targets(records))), lang)) from None
        except Exception as err:
            raise Mismatch(message(MESSAGES_EX2, "tf_error", lang, error=type(err).__name__,
                                   detail=describe(err))) from None
        return y, gradient

    try:
        y, gradient = run_graph(build)
    except Mismatch:
        raise
    except Exception as err:  # raised while the session ran the reader's ops
        raise Mismatch(message(MESSAGES_EX2, "tf_error", lang, error=type(err).__name__,
                               detail=describe(err))) from None
    return y, gradient, records, box["graph"]


# Ops whose graph-valued attributes hold other graphs: a branch, a loop body, a function.
NESTED_OP_TYPES = {"If", "StatelessIf", "While", "StatelessWhile", "Case", "StatelessCase",
                   "PartitionedCall", "StatefulPartitionedCall"}
CHAPTER_GRADIENT = "BinaryNetSign"  # the name the chapter registers BinaryNet's gradient under


def _marked_sign_ops(graph) -> bool:
    """True when a Sign op of ``graph`` itself carries an override mark."""
    return any(op.type == "Sign" and "_gradient_op_type" in op.node_def.attr for op in graph.get_operations())


def _diagnose_ex2(x, up, got, records, graph, lang):
    """Name the mistake behind a wrong gradient; return quietly when it is the expected one.

    The expected gradient is the colleague's with all three bugs fixed,
    BinaryNet's: the upstream gradient where ``|x| <= 1``, 0 beyond.
    """
    expected = np.where(np.abs(x) <= CLIP, up, 0.0).astype(np.float32)
    targets = _sign_targets(records)  # a map entered inside a branch or a tf.function counts too
    marked = any(_marked_sign_ops(g) for g in {graph, *(g for g, _ in records)})
    if not np.any(got):  # Sign's own gradient: the override never took effect
        if not records:
            raise Mismatch(message(MESSAGES_EX2, "no_map", lang))
        on_graph = [m for g, m in records if g is graph]
        if not on_graph:
            raise Mismatch(message(MESSAGES_EX2, "outer_graph", lang))
        keys = sorted({str(k) for m in on_graph if m for k in m})
        if "Sign" not in keys:
            raise Mismatch(message(MESSAGES_EX2, "key", lang, keys=", ".join(repr(k) for k in keys) or "{}"))
        if not marked:
            nested = any(op.type in NESTED_OP_TYPES for op in graph.get_operations())
            raise Mismatch(message(MESSAGES_EX2, "nested" if nested else "outside", lang))
    if not targets or not marked:  # a gradient that does not come through a Sign override
        custom = any(m and any(str(v).startswith("CustomGradient") for v in m.values()) for _, m in records)
        raise Mismatch(message(MESSAGES_EX2, "custom_gradient" if custom else "bypass", lang))
    if _close(got, expected):
        if CHAPTER_GRADIENT in targets:
            raise Mismatch(message(MESSAGES_EX2, "chapter", lang))
        return
    wrong = ~np.isclose(got, expected, rtol=1e-5, atol=1e-6)
    i = np.unravel_index(int(np.flatnonzero(wrong)[0]), x.shape)
    if _close(got, up):  # the upstream gradient everywhere: the mask passes all
        if "Identity" in targets:
            raise Mismatch(message(MESSAGES_EX2, "identity", lang))
        raise Mismatch(message(MESSAGES_EX2, "bug3_left", lang, x=fmt(x[i]), g=fmt(up[i]), got=fmt(got[i]),
                               expected=fmt(expected[i])))
    for ones in (np.ones_like(up), np.where(np.abs(x) <= CLIP, 1.0, 0.0)):  # 1 in place of the upstream gradient
        if _close(got, ones):
            raise Mismatch(message(MESSAGES_EX2, "upstream", lang, x=fmt(x[i]), g=fmt(up[i]), got=fmt(got[i]),
                                   expected=fmt(expected[i])))
    raise Mismatch(message(MESSAGES_EX2, "wrong", lang, x=fmt(x[i]), g=fmt(up[i]), got=fmt(got[i]),
                           expected=fmt(expected[i])))


@exercise("ch03-ex2", MESSAGES_EX2, answer="binarize")
def check_binarize(answer, lang):
    for x_np, up_np in CASES_EX2:
        y, gradient, records, graph = _build_ex2(answer, x_np, up_np, lang)
        y = as_array(y, lang=lang, what="forward", shape=x_np.shape)
        expected = np.sign(x_np)
        wrong = ~np.isclose(y, expected, atol=1e-6)
        if wrong.any() and np.array_equal(y, np.where(x_np >= 0, 1.0, -1.0)):
            raise Mismatch(message(MESSAGES_EX2, "binarynet_forward", lang, got=fmt(1.0)))
        if wrong.any():
            i = np.unravel_index(int(np.flatnonzero(wrong)[0]), x_np.shape)
            raise Mismatch(message(MESSAGES_EX2, "forward", lang, x=fmt(x_np[i]), got=fmt(y[i]),
                                   expected=fmt(expected[i])))
        gradient = as_array(gradient, lang=lang, what="gradient", shape=x_np.shape, none_key="none_gradient")
        _diagnose_ex2(x_np, up_np, gradient, records, graph, lang)
    return message(MESSAGES_EX2, "passed", lang, n=sum(x.size for x, _ in CASES_EX2))
