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

from ._core import PROPAGATE, Mismatch, as_array, describe, exercise, first_mistake, fmt, fragment, matches, message


def _raised_text(err: BaseException, lang: str, where: str) -> str:
    return message("common.raised", lang, where=where, error=type(err).__name__, detail=describe(err, lang))


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
            raise Mismatch(message("ch01.one_tape", lang, raised=raised.rstrip("."))) from None
        if isinstance(err, TypeError) and "received None" in detail:
            raise Mismatch(message("ch01.not_watched", lang, raised=raised.rstrip("."))) from None
        raise Mismatch(raised) from None


# The likeliest wrong answers (tests/test_classroom_wrong_answers.py runs them), as a reader writes them.

def _first_derivative(f, x):  # one tape: the first derivative
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return tape.gradient(y, x)


def _without_zeros(f, x):  # the right tapes, but None (not 0) for a linear f
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        dy = inner.gradient(y, x)
    return outer.gradient(dy, x)


def _inner_gradient_outside(f, x):  # inner.gradient after the outer block: nothing records it, zeros asked for
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
    dy = inner.gradient(y, x)
    return outer.gradient(dy, x, unconnected_gradients=tf.UnconnectedGradients.ZERO)


def _one_tape_twice(f, x):  # one non-persistent tape asked for both derivatives
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    dy = tape.gradient(y, x)
    return tape.gradient(dy, x)


def _nothing_watched(f, x):  # x is a constant: neither tape records anything
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            y = f(x)
        dy = inner.gradient(y, x)
    return outer.gradient(dy, x)


@exercise("ch01-ex2", answer="second_derivative", wrong_answers=[
    ("one tape: the first derivative", _first_derivative, "ch01.first_derivative"),
    ("no zeros for a linear f", _without_zeros, "ch01.second_none"),
    ("inner gradient after the outer block", _inner_gradient_outside, "ch01.zero_unconnected"),
    ("one tape asked twice", _one_tape_twice, "ch01.one_tape"),
    ("x not watched", _nothing_watched, "ch01.not_watched"),
])
def check_second_derivative(answer, lang):
    for text, f, x, first, expected in CASES:
        where = fragment("ch01.where", lang, f=text, x=x)
        result = _call_second(answer, f, x, lang, where)
        if result is None:
            key = "second_none" if expected == 0 else "none_unconnected"
            raise Mismatch(message("ch01." + key, lang, f=text, x=x, expected=fmt(expected)))
        got = float(as_array(result, lang=lang, what="result", where=where, shape=()))
        if matches(got, expected):
            continue
        values = dict(f=text, x=x, got=fmt(got), expected=fmt(expected))
        if got == 0:
            raise Mismatch(message("ch01.zero_unconnected", lang, **values))
        if matches(got, first):
            raise Mismatch(message("ch01.first_derivative", lang, **values))
        raise Mismatch(message("ch01.second_wrong", lang, **values))
    return message("ch01.passed", lang, n=len(CASES))


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


# The likeliest wrong loops, in the order they are recognised: message key -> options of _projected_descent.
WRONG_LOOPS = {"project_once": dict(every_step=False), "box": dict(projection="box"),
               "before_step": dict(before_step=True), "no_projection": dict(projection="none")}

# combined mistakes that coincide with a named one on some cases (on the first, clip_by_value before each
# step never clips, and once after the loop it clips as after each step): the message then names both
ALSO = {"no_projection": dict(projection="box", before_step=True),
        "box": dict(projection="box", every_step=False)}


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
        return Mismatch(message("ch01.assign_rebound", lang, raised=raised))
    if loss.saw_other_variable:
        return Mismatch(message("ch01.new_variable", lang, raised=raised))
    if loss.saw_tensor:
        return Mismatch(message("ch01.still_tensor", lang, raised=raised))
    return None


# The likeliest wrong loops (tests/test_classroom_wrong_answers.py runs them), as a reader writes them: the
# exercise's loop with its last line changed, and one projection moved after the loop.

def _loop(last_line, *, watch=False):
    """The exercise's ``train`` with ``w = last_line(w)`` ending each step (and ``tape.watch(w)`` if ``watch``)."""
    def train(loss_fn, w, steps, learning_rate=0.1):
        import keras  # the chapter's optimizer; loaded when a wrong answer runs, not with gradlib
        optimizer = keras.optimizers.SGD(learning_rate)
        for _ in range(steps):
            with tf.GradientTape() as tape:
                if watch:
                    tape.watch(w)
                loss = loss_fn(w)
            grads = tape.gradient(loss, [w])
            optimizer.apply_gradients(zip(grads, [w]))
            w = last_line(w)
        return w
    return train


def _assigned(w, value):  # w.assign(value) as a statement: the name w stays bound to the variable
    w.assign(value)
    return w


def _projected_once(loss_fn, w, steps, learning_rate=0.1):  # plain descent, projected once after the loop
    w = _loop(lambda w: w)(loss_fn, w, steps, learning_rate)
    w.assign(tf.clip_by_norm(w, 1.0))
    return w


@exercise("ch01-ex3", answer="train", wrong_answers=[
    ("the tensor watched", _loop(lambda w: tf.clip_by_norm(w, 1.0), watch=True), "ch01.still_tensor"),
    ("w = w.assign(...)", _loop(lambda w: w.assign(tf.clip_by_norm(w, 1.0))), "ch01.assign_rebound"),
    ("a new variable each step", _loop(lambda w: tf.Variable(tf.clip_by_norm(w, 1.0))), "ch01.new_variable"),
    ("projected once after the loop", _projected_once, "ch01.project_once"),
    ("clip_by_value: the box", _loop(lambda w: _assigned(w, tf.clip_by_value(w, -1.0, 1.0))), "ch01.box"),
])
def check_train(answer, lang):
    for target, scale, w0, steps in TRAIN_CASES:
        where = fragment("ch01.case", lang, loss=_loss_text(target, scale), w0=fmt(np.asarray(w0)), steps=steps)
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
            raise Mismatch(where + message("ch01.not_in_place", lang, got=fmt(got), held=fmt(held)))
        norm, expected_norm = float(np.linalg.norm(got)), float(np.linalg.norm(expected))
        values = dict(got=fmt(got), expected=fmt(expected), norm=fmt(norm))
        key = first_mistake(got, expected, [(name, _projected_descent(target, scale, w0, steps, **options))
                                            for name, options in WRONG_LOOPS.items()], atol=1e-5)
        if key is not None:
            also = ALSO.get(key)  # a combined mistake that ends at the same w on this case is named too
            same = also is not None and matches(got, _projected_descent(target, scale, w0, steps, **also))
            raise Mismatch(where + message("ch01." + key, lang, also=message("ch01." + key + "_also", lang) if same else "", **values))
        if norm > 1 + 1e-4:
            raise Mismatch(where + message("ch01.not_projected", lang, got=fmt(got), norm=fmt(norm),
                                         expected=fmt(expected)))
        if abs(norm - 1) < 1e-4 and expected_norm < 1 - 1e-3:
            raise Mismatch(where + message("ch01.sphere", lang, got=fmt(got), expected=fmt(expected),
                                         norm=fmt(expected_norm)))
        raise (_diagnosis(loss, lang, where) or
               Mismatch(where + message("ch01.train_wrong", lang, got=fmt(got), expected=fmt(expected))))
    return message("ch01.train_passed", lang, n=len(TRAIN_CASES))
