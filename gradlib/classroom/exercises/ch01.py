"""Checks for chapter 1: tf.gradients and GradientTape.

* ``ch01-ex2``: ``second_derivative(f, x)`` with two nested tapes.  Before the
  generic "your second derivative is ...; expected ..." the check names the
  likeliest mistakes: the first derivative returned (``first_derivative``),
  0 or ``None`` where the second derivative is not 0 because the outer tape
  never recorded the inner gradient (``zero_unconnected``,
  ``none_unconnected``; worded for any tape, one persistent tape included),
  ``None`` for a linear function (``second_none``), one non-persistent tape
  asked twice (``one_tape``) and an unwatched constant (``not_watched``).
* ``ch01-ex3``: ``train(loss_fn, w, steps)``, a projected gradient-descent
  loop with a Keras optimizer whose bug is ``w = tf.clip_by_norm(w, 1.0)``
  (the variable replaced by a tensor).  ``loss_fn`` is a recorder that notes
  what the reader's loop passes it, so the check can tell a tensor
  (``still_tensor``) from the object ``w.assign(...)`` returns
  (``assign_rebound``: ``w = w.assign(...)``) and from a new variable each
  step (``new_variable``); the result is compared with projected gradient
  descent in NumPy (``not_projected``, ``sphere``, ``not_in_place``), and
  with the likeliest wrong loops, each computed in NumPy too: plain descent
  projected once after the loop (``project_once``; the last case is one
  where the constraint binds and the path bends, so that the two differ),
  each step followed by ``tf.clip_by_value(w, -1, 1)``, the box instead of
  the ball (``box``), the projection before each step instead of after it
  (``before_step``), and no projection at all (``no_projection``).  Where a
  combined mistake ends at the same w (``ALSO``: ``clip_by_value`` once after
  the loop, or before each step), the message names it too
  (``box_also``, ``no_projection_also``).

Every reference below is a closed form in NumPy, independent of the chapter's
solutions.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from ._core import COMMON, PROPAGATE, Mismatch, as_array, describe, exercise, fmt, message

MESSAGES = {
    # ch01-ex2
    "where": {"en": "f(x) = {f}, x = {x}: ", "zh": "f(x) = {f}，x = {x} 时："},
    "second_wrong": {
        "en": "for f(x) = {f} at x = {x} your second derivative is {got}; expected {expected}.",
        "zh": "对 f(x) = {f}，在 x = {x} 处你的二阶导数为 {got}，应为 {expected}。",
    },
    "first_derivative": {
        "en": "for f(x) = {f} at x = {x} your result is {got}, which is f'(x), the first derivative; expected "
              "f''(x) = {expected}. Differentiate once more: an outer tape around the inner one records "
              "dy = inner.gradient(y, x), and outer.gradient(dy, x) is f''(x) (outer.gradient(y, x) is f'(x) again).",
        "zh": "对 f(x) = {f}，在 x = {x} 处你的结果为 {got}，这是一阶导数 f'(x)；应为 f''(x) = {expected}。"
              "请再求一次导：在内层梯度带外面套一个外层梯度带，由它记录 dy = inner.gradient(y, x)，"
              "outer.gradient(dy, x) 才是 f''(x)（outer.gradient(y, x) 得到的仍是 f'(x)）。",
    },
    "zero_unconnected": {
        "en": "for f(x) = {f} at x = {x} your second derivative is 0; expected {expected}. A 0 here means the tape "
              "you differentiated the first derivative with never recorded how it depends on x, and "
              "unconnected_gradients=ZERO turned that None into 0. A tape records only while its with block is "
              "open: compute dy = inner.gradient(y, x) inside the outer tape's with block, and let the outer tape "
              "watch x too.",
        "zh": "对 f(x) = {f}，在 x = {x} 处你的二阶导数为 0，应为 {expected}。这里的 0 说明你用来对一阶导数求导的梯度带"
              "从未记录一阶导数如何依赖于 x，而 unconnected_gradients=ZERO 把这个 None 变成了 0。梯度带只在 with 块"
              "打开时记录：请在外层梯度带的 with 块内部计算 dy = inner.gradient(y, x)，并让外层梯度带也监视 x。",
    },
    "none_unconnected": {
        "en": "for f(x) = {f} at x = {x} your function returned None; expected {expected}. The tape you "
              "differentiated the first derivative with has no path from it back to x: a tape records only while "
              "its with block is open. Compute dy = inner.gradient(y, x) inside the outer tape's with block, and "
              "let the outer tape watch x too.",
        "zh": "对 f(x) = {f}，在 x = {x} 处你的函数返回了 None，应为 {expected}。在你用来对一阶导数求导的梯度带中，"
              "没有从一阶导数回到 x 的路径：梯度带只在 with 块打开时记录。请在外层梯度带的 with 块内部计算 "
              "dy = inner.gradient(y, x)，并让外层梯度带也监视 x。",
    },
    "second_none": {
        "en": "for f(x) = {f} at x = {x} your function returned None. The inner gradient of a linear function is a "
              "constant that does not depend on x, so the outer gradient is unconnected: its value is 0, which you "
              "get with unconnected_gradients=tf.UnconnectedGradients.ZERO.",
        "zh": "对 f(x) = {f}，在 x = {x} 处你的函数返回了 None。线性函数的内层梯度是一个不依赖于 x 的常数，"
              "所以外层梯度是未连接的：它的值是 0，用 unconnected_gradients=tf.UnconnectedGradients.ZERO 即可得到。",
    },
    "one_tape": {
        "en": "{raised}. A non-persistent tape answers one gradient call. Record the first derivative with a second "
              "tape: an outer tape around the inner one, and call inner.gradient inside the outer with block.",
        "zh": "{raised}。非持久梯度带只能回答一次梯度调用。请用第二个梯度带记录一阶导数：在内层梯度带外面再套一个外层梯度带，"
              "并在外层的 with 块内部调用 inner.gradient。",
    },
    "not_watched": {
        "en": "{raised}. The inner gradient was None: x is a tf.constant, and a tape records the operations on a "
              "constant only after tape.watch(x). Watch x on both tapes.",
        "zh": "{raised}。内层梯度为 None：x 是 tf.constant，梯度带只有在 tape.watch(x) 之后才会记录对常量的运算。"
              "请在两个梯度带上都监视 x。",
    },
    "passed": {"en": "correct on {n} functions and points, including 3x, whose second derivative is 0, not None.",
               "zh": "在 {n} 组函数与点上都正确，包括二阶导数为 0（而不是 None）的 3x。"},
    # ch01-ex3
    "case": {"en": "loss {loss}, w = {w0}, steps = {steps}: ", "zh": "损失 {loss}，w = {w0}，steps = {steps} 时："},
    "still_tensor": {
        "en": "{raised}After the first step your loop passed loss_fn a tensor, not the variable w: "
              "w = tf.clip_by_norm(w, 1.0) binds the name w to a new tensor. A tape does not watch tensors, and an "
              "optimizer can update only variables: watching the tensor or asking for zeros fails the same way, and "
              "skipping None gradients only changes the error message; neither brings the variable back. Write the "
              "projection into the variable: w.assign(tf.clip_by_norm(w, 1.0)).",
        "zh": "{raised}第一步之后，你的循环传给 loss_fn 的是一个张量，而不是变量 w：w = tf.clip_by_norm(w, 1.0) 让名字 w "
              "指向了一个新张量。梯度带不会监视张量，优化器也只能更新变量：监视这个张量或要求返回零，会以同样的方式失败；"
              "跳过 None 梯度也只是换了一条报错信息；这些办法都不能把变量找回来。请把投影的结果写回变量："
              "w.assign(tf.clip_by_norm(w, 1.0))。",
    },
    "assign_rebound": {
        "en": "{raised}After the first step your loop passed loss_fn what w.assign(...) returns, not the variable w: "
              "w = w.assign(...) binds the name w to that object. It reads the same variable, but a tape does not "
              "watch reads through it, so from the second step on the gradient is None. Call "
              "w.assign(tf.clip_by_norm(w, 1.0)) as a statement, without rebinding w.",
        "zh": "{raised}第一步之后，你的循环传给 loss_fn 的是 w.assign(...) 的返回值，而不是变量 w：w = w.assign(...) "
              "让名字 w 指向了这个返回值。它读取的是同一个变量，但梯度带不会监视经由它的读取，所以从第二步起梯度为 None。"
              "请把 w.assign(tf.clip_by_norm(w, 1.0)) 单独写成一条语句，不要再赋值给 w。",
    },
    "new_variable": {
        "en": "{raised}Your loop passed loss_fn a new tf.Variable after the first step. The optimizer was built for "
              "the variables of its first call and refuses others ('Unknown variable'), and the variable you were "
              "given stops changing. Keep one variable and write the projection into it: "
              "w.assign(tf.clip_by_norm(w, 1.0)).",
        "zh": "{raised}第一步之后，你的循环传给 loss_fn 的是一个新建的 tf.Variable。优化器是为它第一次调用时的变量构建的，"
              "会拒绝其他变量（'Unknown variable'），而传给你的那个变量也就不再变化。请始终使用同一个变量，"
              "并把投影的结果写回它：w.assign(tf.clip_by_norm(w, 1.0))。",
    },
    "not_projected": {
        "en": "your w is {got}, of norm {norm}: it left the unit ball. Project after every optimizer step "
              "(tf.clip_by_norm(w, 1.0) after apply_gradients); the expected w is {expected}.",
        "zh": "你的 w 为 {got}，范数为 {norm}：它离开了单位球。请在每次优化器更新之后投影（在 apply_gradients 之后调用 "
              "tf.clip_by_norm(w, 1.0)）；w 应为 {expected}。",
    },
    "no_projection": {
        "en": "your w is {got}, of norm {norm}: where plain gradient descent ends, with no projection at all{also}; "
              "the expected w is {expected}. Project after every optimizer step: w.assign(tf.clip_by_norm(w, 1.0)) "
              "after apply_gradients.",
        "zh": "你的 w 为 {got}，范数为 {norm}：这是完全不投影的普通梯度下降的结果{also}；w 应为 {expected}。请在每次优化器更新之后"
              "投影：在 apply_gradients 之后调用 w.assign(tf.clip_by_norm(w, 1.0))。",
    },
    "no_projection_also": {  # tf.clip_by_value before each step, when it never clips on this case
        "en": " (on this loss, tf.clip_by_value(w, -1, 1) before each step ends there too)",
        "zh": "（在这个损失上，每一步之前调用 tf.clip_by_value(w, -1, 1) 也会得到这个结果）",
    },
    "before_step": {
        "en": "your w is {got}, of norm {norm}: where the loop ends when it projects before each optimizer step "
              "instead of after it; the expected w is {expected}. The last step then leaves w outside the ball: "
              "project after apply_gradients, not before.",
        "zh": "你的 w 为 {got}，范数为 {norm}：这是在每次优化器更新之前而不是之后投影得到的结果；w 应为 {expected}。"
              "这样最后一步会把 w 留在球外：请在 apply_gradients 之后投影，而不是之前。",
    },
    "box": {
        "en": "your w is {got}: where the loop ends when each step is followed by tf.clip_by_value(w, -1, 1){also}; "
              "expected {expected}. clip_by_value clips each coordinate on its own: that projects onto the box "
              "[-1, 1]^2, not onto the unit ball. Use tf.clip_by_norm(w, 1.0), which shrinks the whole vector when "
              "its norm exceeds 1, after every optimizer step.",
        "zh": "你的 w 为 {got}：这是每一步之后调用 tf.clip_by_value(w, -1, 1) 得到的结果{also}；w 应为 {expected}。"
              "clip_by_value 逐个坐标地截断，投影到的是方形区域 [-1, 1]^2，而不是单位球。请在每次优化器更新之后调用 "
              "tf.clip_by_norm(w, 1.0)：范数超过 1 时，它把整个向量按比例缩小。",
    },
    "box_also": {  # tf.clip_by_value once after the loop, when it gives the same w on this case
        "en": " (on this loss, one tf.clip_by_value after the loop ends there too)",
        "zh": "（在这个损失上，循环结束后只调用一次 tf.clip_by_value 也会得到这个结果）",
    },
    "project_once": {
        "en": "your w is {got}: where plain gradient descent ends when it is projected only once, after the loop; "
              "expected {expected}. On this loss the constraint binds during the descent and the path bends, so "
              "one projection at the end is not the same: project after every optimizer step, inside the loop.",
        "zh": "你的 w 为 {got}：这是普通梯度下降只在循环结束后投影一次得到的结果；w 应为 {expected}。在这个损失上，"
              "约束在下降途中就起作用，路径会拐弯，所以最后投影一次并不等价：请在循环内部、每次优化器更新之后投影。",
    },
    "sphere": {
        "en": "your w is {got}, of norm 1, but this loss has its minimum inside the ball and the expected w is "
              "{expected}, of norm {norm}: you projected onto the sphere (w / ||w||). Project onto the ball: shrink w "
              "only when ||w|| > 1, as tf.clip_by_norm(w, 1.0) does.",
        "zh": "你的 w 为 {got}，范数为 1；但这个损失的最小值点在球内，w 应为 {expected}，范数为 {norm}：你投影到的是球面"
              "（w / ||w||）。请投影到球上：只在 ||w|| > 1 时缩小 w，tf.clip_by_norm(w, 1.0) 正是这样做的。",
    },
    "not_in_place": {
        "en": "your function returned the right w, {got}, but the variable it was given holds {held}. Update that "
              "variable itself (w.assign(...)): binding the name w to a new tensor or to a copy leaves the "
              "caller's variable behind.",
        "zh": "你的函数返回的 w 是对的（{got}），但传给它的那个变量的值是 {held}。请更新这个变量本身（w.assign(...)）："
              "让名字 w 指向新张量或副本，调用者的变量就被落下了。",
    },
    "train_wrong": {
        "en": "your w is {got}; expected {expected} (plain gradient descent with learning rate 0.1, each step followed "
              "by the projection onto the unit ball).",
        "zh": "你的 w 为 {got}，应为 {expected}（学习率为 0.1 的普通梯度下降，每一步之后投影到单位球上）。",
    },
    "train_passed": {
        "en": "correct on {n} losses and starting points: one variable, updated in place, projected onto the unit "
              "ball after every step.",
        "zh": "在 {n} 组损失与起点上都正确：始终是同一个变量，原地更新，每一步之后都投影到单位球上。",
    },
}


def _text(key, lang, **values):
    return message(MESSAGES, key, lang, **values)


def _raised_text(err: BaseException, lang: str, where: str) -> str:
    return message(COMMON, "raised", lang, where=where, error=type(err).__name__, detail=describe(err, lang))


def _sentence(text: str, lang: str) -> str:
    """``text`` closed as a sentence, ready for the next one ("... '_unique_id'. " / "……'_unique_id'。")."""
    text = text.rstrip()
    if text.endswith("…") and lang != "zh":  # an error message cut short (describe): no "." after "…"
        return text + " "
    if lang == "zh":
        return text if text.endswith("。") else text.rstrip(".") + "。"
    return (text if text.endswith(".") else text + ".") + " "


# -- ch01-ex2: second_derivative(f, x) ---------------------------------------------

# (description, function, x, f'(x), f''(x)) with independent closed-form references
CASES = [
    ("x**3", lambda x: x ** 3, 1.5, 6.75, 9.0),  # not x = 2, where f' = f'' = 12
    ("sin(x)", tf.sin, 0.7, np.cos(0.7), -np.sin(0.7)),
    ("exp(2x)", lambda x: tf.exp(2 * x), -0.5, 2 * np.exp(-1.0), 4 * np.exp(-1.0)),
    ("tanh(x)", tf.tanh, 0.3, 1 - np.tanh(0.3) ** 2, -2 * np.tanh(0.3) * (1 - np.tanh(0.3) ** 2)),
    ("relu(x)", tf.nn.relu, 1.0, 1.0, 0.0),
    ("3x", lambda x: 3.0 * x, 1.0, 3.0, 0.0),  # the inner gradient is a constant: None unless asked for zeros
    ("x**2", lambda x: x ** 2, -3.0, -6.0, 2.0),
]


def _close(a: float, b: float) -> bool:
    return bool(np.isclose(a, b, rtol=1e-4, atol=1e-5))


def _call_second(answer, f, x, lang, where):
    """answer(f, x), with the two exceptions of this exercise explained."""
    try:
        return answer(f, tf.constant(x))
    except (Mismatch, *PROPAGATE):
        raise
    except BaseException as err:  # the reader's code may raise anything
        raised = _raised_text(err, lang, where)
        detail = describe(err, lang)
        if "non-persistent GradientTape" in detail:
            raise Mismatch(_text("one_tape", lang, raised=raised.rstrip("."))) from None
        if isinstance(err, TypeError) and "received None" in detail:
            raise Mismatch(_text("not_watched", lang, raised=raised.rstrip("."))) from None
        raise Mismatch(raised) from None


@exercise("ch01-ex2", MESSAGES, answer="second_derivative")
def check_second_derivative(answer, lang):
    for text, f, x, first, expected in CASES:
        where = _text("where", lang, f=text, x=x)
        result = _call_second(answer, f, x, lang, where)
        if result is None:
            key = "second_none" if expected == 0 else "none_unconnected"
            raise Mismatch(_text(key, lang, f=text, x=x, expected=fmt(expected)))
        got = float(as_array(result, lang=lang, what="result", where=where, shape=()))
        if _close(got, expected):
            continue
        values = dict(f=text, x=x, got=fmt(got), expected=fmt(expected))
        if got == 0:
            raise Mismatch(_text("zero_unconnected", lang, **values))
        if _close(got, first):
            raise Mismatch(_text("first_derivative", lang, **values))
        raise Mismatch(_text("second_wrong", lang, **values))
    return _text("passed", lang, n=len(CASES))


# -- ch01-ex3: train(loss_fn, w, steps) ---------------------------------------------

LEARNING_RATE = 0.1  # the default of the exercise's train(); the reference uses the same

# (target t, scale s, start w0, steps): loss_fn(w) = sum(s * (w - t)**2)
TRAIN_CASES = [
    ((2.0, 1.0), (1.0, 1.0), (0.0, 0.0), 4),      # minimum outside the ball: the projection acts
    ((0.3, -0.4), (1.0, 1.0), (0.9, 0.0), 3),     # minimum inside the ball: w ends inside
    ((-3.0, 0.5), (0.5, 2.0), (0.6, -0.6), 5),    # different curvatures, minimum outside
    ((0.5, 0.2), (1.0, 1.0), (0.0, 0.8), 1),      # one step
    ((2.0, 1.0), (1.0, 4.0), (0.9, -0.4), 4),     # the constraint binds and the path bends: projecting once differs
]


def _loss_text(target, scale) -> str:
    t = fmt(np.asarray(target))
    if all(s == 1.0 for s in scale):
        return f"sum((w - {t})**2)"
    return f"sum({fmt(np.asarray(scale))} * (w - {t})**2)"


def _project(w: np.ndarray) -> np.ndarray:
    return w / max(np.linalg.norm(w), 1.0)


PROJECTIONS = {
    "ball": _project,                       # tf.clip_by_norm(w, 1.0): the reference
    "box": lambda w: np.clip(w, -1.0, 1.0),  # tf.clip_by_value(w, -1, 1): a likely wrong answer
    "none": lambda w: w,                     # no projection at all
}


def _projected_descent(target, scale, w0, steps, *, every_step=True, projection="ball",
                       before_step=False) -> np.ndarray:
    """The reference: w <- w - lr * 2 s (w - t), then w <- w / max(||w||, 1), in float64.

    The options give the likeliest wrong answers instead: ``every_step=False``
    plain descent projected once after the loop, ``projection="box"`` each step
    followed by the clip to [-1, 1] per coordinate, ``projection="none"`` no
    projection, ``before_step=True`` the projection before each step.
    """
    t, s, w = (np.asarray(v, np.float64) for v in (target, scale, w0))
    project = PROJECTIONS[projection]
    for _ in range(steps):
        if every_step and before_step:
            w = project(w)
        w = w - LEARNING_RATE * 2 * s * (w - t)
        if every_step and not before_step:
            w = project(w)
    return w if every_step else project(w)


# combined mistakes that coincide with a named one on some cases (on the first, clip_by_value before each
# step never clips, and once after the loop it clips as after each step): the message then names both
ALSO = {"no_projection": dict(projection="box", before_step=True),
        "box": dict(projection="box", every_step=False)}


def _close_to(a, b) -> bool:
    return bool(np.allclose(a, b, rtol=1e-4, atol=1e-5))


class _RecordingLoss:
    """The loss_fn the check passes to the reader's ``train``: a quadratic bowl that
    notes whether it was called with something other than the reader's variable."""

    def __init__(self, target, scale, variable):
        self.target = tf.constant(target, tf.float32)
        self.scale = tf.constant(scale, tf.float32)
        self.variable = variable
        self.saw_tensor = False
        self.saw_assign_result = False
        self.saw_other_variable = False

    def __call__(self, w):
        if w is not self.variable:
            if not isinstance(w, tf.Variable):
                self.saw_tensor = True
            elif self._same_handle(w):  # what w.assign(...) returns: the same variable, read without the tape
                self.saw_assign_result = True
            else:
                self.saw_other_variable = True
        return tf.reduce_sum(self.scale * (w - self.target) ** 2)

    def _same_handle(self, w) -> bool:
        try:
            return w.handle is self.variable.handle
        except PROPAGATE:
            raise
        except BaseException:  # the reader's object may raise anything
            return False


def _diagnosis(loss: _RecordingLoss, lang: str, raised: str):
    if loss.saw_assign_result:
        return Mismatch(_text("assign_rebound", lang, raised=raised))
    if loss.saw_other_variable:
        return Mismatch(_text("new_variable", lang, raised=raised))
    if loss.saw_tensor:
        return Mismatch(_text("still_tensor", lang, raised=raised))
    return None


@exercise("ch01-ex3", MESSAGES, answer="train")
def check_train(answer, lang):
    for target, scale, w0, steps in TRAIN_CASES:
        where = _text("case", lang, loss=_loss_text(target, scale), w0=fmt(np.asarray(w0)), steps=steps)
        w = tf.Variable(np.asarray(w0, np.float32))
        loss = _RecordingLoss(target, scale, w)
        try:
            result = answer(loss, w, steps)
        except (Mismatch, *PROPAGATE):
            raise
        except BaseException as err:  # the reader's code may raise anything
            raised = _raised_text(err, lang, where)
            raise (_diagnosis(loss, lang, _sentence(raised, lang)) or Mismatch(raised)) from None
        got = as_array(result, lang=lang, what="result", where=where, shape=(2,)).astype(np.float64)
        held = w.numpy().astype(np.float64)
        expected = _projected_descent(target, scale, w0, steps)
        if np.allclose(got, expected, rtol=1e-4, atol=1e-5):
            if np.allclose(held, expected, rtol=1e-4, atol=1e-5):
                continue
            raise Mismatch(where + _text("not_in_place", lang, got=fmt(got), held=fmt(held)))
        norm, expected_norm = float(np.linalg.norm(got)), float(np.linalg.norm(expected))
        values = dict(got=fmt(got), expected=fmt(expected), norm=fmt(norm))
        for key, options in (("project_once", dict(every_step=False)), ("box", dict(projection="box")),
                             ("before_step", dict(before_step=True)), ("no_projection", dict(projection="none"))):
            wrong = _projected_descent(target, scale, w0, steps, **options)
            if not _close_to(wrong, expected) and _close_to(got, wrong):
                also = ALSO.get(key)  # a combined mistake that ends at the same w on this case is named too
                same = also is not None and _close_to(got, _projected_descent(target, scale, w0, steps, **also))
                raise Mismatch(where + _text(key, lang, also=_text(key + "_also", lang) if same else "", **values))
        if norm > 1 + 1e-4:
            raise Mismatch(where + _text("not_projected", lang, got=fmt(got), norm=fmt(norm),
                                         expected=fmt(expected)))
        if abs(norm - 1) < 1e-4 and expected_norm < 1 - 1e-3:
            raise Mismatch(where + _text("sphere", lang, got=fmt(got), expected=fmt(expected),
                                         norm=fmt(expected_norm)))
        raise (_diagnosis(loss, lang, where) or
               Mismatch(where + _text("train_wrong", lang, got=fmt(got), expected=fmt(expected))))
    return _text("train_passed", lang, n=len(TRAIN_CASES))
