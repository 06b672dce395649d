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
from typing import Callable

import numpy as np
import tensorflow as tf

from ._core import (Elementwise, Mismatch, as_array, call, check_elementwise, exercise, first_mistake, fmt, fragment,
                    kink_and_random_points, matches, message, raised, refuse_library,
                    require_tensor, to_array)

# -- ex1 and ex2 ask for the trick itself, not gradlib.straight_through --------------

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
        return refuse_library(check, answer, lang, names=[("gradlib", "straight_through")],
                              key="ch02.straight_through", made_by=_made_by_straight_through)
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
    if matches(y, clip) and not matches(y, value):
        wrong = ~np.isclose(clip, value)
        return message("ch02.ste_forward_clip", lang, **_at(x, y, value, wrong))
    if not matches(y, value):
        return ""
    outside = np.abs(x) > 1
    if matches(g, 1.0) and outside.any():
        return message("ch02.ste_unclipped", lang, **_at(x, g, grad, outside))
    smooth = 1 - np.tanh(x) ** 2
    if matches(g, smooth):
        return message("ch02.ste_tanh", lang, **_at(x, g, grad, ~np.isclose(smooth, grad)))
    if grad.any() and matches(g, 0.5 * grad):
        return message("ch02.ste_half_slope", lang, **_at(x, g, grad, grad != 0))
    boundary = np.abs(x) == 1
    if (boundary.any() and matches(g[~boundary], grad[~boundary])
            and matches(g[boundary], 0.0)):
        return message("ch02.ste_boundary", lang)
    return ""


def _diagnose_ste_nan(x, y, lang: str) -> str:
    """The message for a value that is NaN or inf at x = 0 only: a division by x there, as in the multiplicative variant."""
    bad = ~np.isfinite(y)
    if bad.any() and np.all(x[bad] == 0):
        return message("ch02.ste_multiplicative", lang)
    return ""


def _ste_gradient_hint(lang, x, g, i, params) -> str:
    return message("ch02." + ("ste_inside" if abs(x[i]) <= 1 else "ste_outside"), lang)


STE = Elementwise(
    points=STE_POINTS, shapes=[(5, 6)], reference=lambda x: _ste_reference(x), upstream=2.5,
    upstream_key="ch02.upstream", forward_hint="ch02.ste_forward", gradient_hint=_ste_gradient_hint,
    all_zero=lambda lang, where, params: where + message("ch02.ste_all_zero", lang),
    diagnose=lambda lang, x, y, g, params: _diagnose_ste(x, y, g, lang),
    diagnose_nan=lambda lang, x, y: _diagnose_ste_nan(x, y, lang))


def _ste(surrogate: Callable) -> Callable:
    """The trick with ``surrogate`` as the backward function: forward sign, gradient surrogate'."""
    return lambda x: surrogate(x) + tf.stop_gradient(tf.sign(x) - surrogate(x))


def _library_ste(x):
    import gradlib
    return gradlib.straight_through(tf.sign, lambda v: tf.clip_by_value(v, -1.0, 1.0))(x)


@exercise("ch02-ex1", answer="clipped_identity_ste", wrong_answers=[
    ("plain straight-through", _ste(lambda x: x), "ch02.ste_unclipped"),
    ("tanh surrogate", _ste(tf.tanh), "ch02.ste_tanh"),
    ("sign only", tf.sign, "ch02.ste_all_zero"),
    ("clip as the value", lambda x: tf.clip_by_value(x, -1.0, 1.0), "ch02.ste_forward_clip"),
    ("gradlib.straight_through", _library_ste, "ch02.straight_through"),
])
@_without_straight_through
def check_clipped_identity_ste(answer, lang):
    check_elementwise(STE, answer, lang)
    return message("ch02.ste_passed", lang, n=STE_POINTS.size)


# -- ch02-ex2: forward identity, gradient times s -------------------------------

SCALED_POINTS = kink_and_random_points([0.0, 1.5, -2.0], seed=3)
SCALES = (0.5, -1.0, 0.0, 3.0)


def _diagnose_scaled(x, y, g, s: float, lang: str) -> str:
    """The message for a recognised wrong scaled gradient, or ""."""
    if s != 1 and matches(y, s * x) and not matches(y, x):
        key = "scaled_swapped" if matches(g, 1.0) else "scaled_value"
        return message("ch02." + key, lang, **_at(x, y, x, ~np.isclose(s * x, x)))
    if s != 0 and matches(y, (1 + s) * x) and matches(g, s):
        return message("ch02.scaled_sum", lang, **_at(x, y, x, ~np.isclose((1 + s) * x, x)))
    if matches(y, x) and not np.isclose(1 - s, s) and matches(g, 1 - s):
        return message("ch02.scaled_wrong_term", lang, got=fmt(1 - s), expected=fmt(s))
    return ""


def _bits_differ(y: np.ndarray, x: np.ndarray) -> int:
    """How many entries of ``y`` are not ``x`` exactly (the sign of zero included)."""
    return int(np.sum((y != x) | (np.signbit(y) != np.signbit(x))))


SCALED = Elementwise(
    points=SCALED_POINTS, params=[(s,) for s in SCALES], upstream=4.0, upstream_key="ch02.upstream",
    reference=lambda x, s: (x.copy(), np.full_like(x, s)),
    where=lambda lang, params: fragment("ch02.with_s", lang, s=fmt(params[0])),
    forward_hint="ch02.scaled_forward",
    gradient_hint=lambda lang, x, g, i, params: message("ch02.scaled_gradient", lang),
    none_gradient=lambda lang, where, params: message("ch02.scaled_none", lang, where=where),
    diagnose=lambda lang, x, y, g, params: _diagnose_scaled(x, y, g, params[0], lang))


@exercise("ch02-ex2", answer="scaled_gradient", wrong_answers=[
    ("value scaled too", lambda x, s: s * x, "ch02.scaled_value"),
    ("stopped x plus s x", lambda x, s: tf.stop_gradient(x) + s * x, "ch02.scaled_sum"),
    ("gradient and value swapped", lambda x, s: s * tf.stop_gradient(x) + x - tf.stop_gradient(x),
     "ch02.scaled_swapped"),
    ("the other term stopped", lambda x, s: s * tf.stop_gradient(x) + (1 - s) * x, "ch02.scaled_wrong_term"),
])
@_without_straight_through
def check_scaled_gradient(answer, lang):
    x = SCALED_POINTS
    values = check_elementwise(SCALED, answer, lang)
    inexact = [(s, _bits_differ(y, x)) for s, y in zip(SCALES, values) if _bits_differ(y, x)]
    passed = message("ch02.scaled_passed", lang, ss="{" + ", ".join(fmt(s) for s in SCALES) + "}")
    if not inexact:
        return passed + message("ch02.scaled_exact", lang)
    s, n = max(inexact, key=lambda pair: pair[1])
    return passed + message("ch02.scaled_rounded", lang, s=fmt(s), n=n, m=x.size)


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


def _value_message(value: float, expected: float, case: dict, where: str, lang: str) -> str:
    """The message for a wrong loss value; the wrong masks and two common slips (no 1/2, a sum) are named."""
    values = dict(where=where, got=fmt(value), expected=fmt(expected))
    if np.all(np.isfinite(case["phi_next"])):
        key = first_mistake(value, expected, td_wrong_masks(case["w"], case["phi"], case["phi_next"], case["reward"],
                                                            case["done"], case["gamma"]).items(), rtol=1e-4, atol=1e-8)
        if key is not None:
            return message("ch02." + key, lang, **values)
    n = len(case["reward"])
    if not np.isclose(expected, 0, atol=1e-6):
        if np.isclose(value, 2 * expected, rtol=1e-4):
            return message("ch02.td_half", lang, **values)
        if n > 1 and np.isclose(value, n * expected, rtol=1e-4):
            return message("ch02.td_sum", lang, n=n, **values)
    return message("ch02.td_value", lang, **values)


# Typical wrong answers (``wrong_answers`` below), written as a reader writes them.

def _td_product(w, phi, phi_next, reward, done, gamma):  # the mask as a product: 0 * NaN on a terminal row
    target = reward + gamma * (1 - done) * tf.stop_gradient(tf.linalg.matvec(phi_next, w))
    return tf.reduce_mean(0.5 * (tf.linalg.matvec(phi, w) - target) ** 2)


def _td_unstopped(w, phi, phi_next, reward, done, gamma):  # the target not stopped
    target = reward + gamma * tf.where(done > 0, 0.0, tf.linalg.matvec(phi_next, w))
    return tf.reduce_mean(0.5 * (tf.linalg.matvec(phi, w) - target) ** 2)


def _td_no_mask(w, phi, phi_next, reward, done, gamma):  # done ignored
    target = reward + gamma * tf.stop_gradient(tf.linalg.matvec(phi_next, w))
    return tf.reduce_mean(0.5 * (tf.linalg.matvec(phi, w) - target) ** 2)


def _td_mask_reversed(w, phi, phi_next, reward, done, gamma):  # done where 1 - done belongs
    target = reward + gamma * done * tf.stop_gradient(tf.linalg.matvec(phi_next, w))
    return tf.reduce_mean(0.5 * (tf.linalg.matvec(phi, w) - target) ** 2)


def _td_prediction_stopped(w, phi, phi_next, reward, done, gamma):  # v(s) stopped instead of the target
    target = reward + gamma * tf.where(done > 0, 0.0, tf.linalg.matvec(phi_next, w))
    return tf.reduce_mean(0.5 * (tf.stop_gradient(tf.linalg.matvec(phi, w)) - target) ** 2)


def _td_loss_stopped(w, phi, phi_next, reward, done, gamma):  # the whole loss stopped
    target = reward + gamma * tf.where(done > 0, 0.0, tf.linalg.matvec(phi_next, w))
    return tf.stop_gradient(tf.reduce_mean(0.5 * (tf.linalg.matvec(phi, w) - target) ** 2))


def _td_summed(w, phi, phi_next, reward, done, gamma):  # a sum over the batch, not its mean
    target = reward + gamma * tf.where(done > 0, 0.0, tf.stop_gradient(tf.linalg.matvec(phi_next, w)))
    return tf.reduce_sum(0.5 * (tf.linalg.matvec(phi, w) - target) ** 2)


def _td_no_half(w, phi, phi_next, reward, done, gamma):  # (v(s) - y)^2 without its 1/2
    target = reward + gamma * tf.where(done > 0, 0.0, tf.stop_gradient(tf.linalg.matvec(phi_next, w)))
    return tf.reduce_mean((tf.linalg.matvec(phi, w) - target) ** 2)


@exercise("ch02-ex4", answer="td_loss", wrong_answers=[
    ("mask as a product", _td_product, "ch02.td_nan"),
    ("target not stopped", _td_unstopped, "ch02.td_full"),
    ("done ignored", _td_no_mask, "ch02.td_no_mask"),
    ("mask reversed", _td_mask_reversed, "ch02.td_mask_reversed"),
    ("prediction stopped", _td_prediction_stopped, "ch02.td_reversed"),
    ("whole loss stopped", _td_loss_stopped, "ch02.td_none"),
    ("sum over the batch", _td_summed, "ch02.td_sum"),
    ("no one half", _td_no_half, "ch02.td_half"),
])
def check_td_loss(answer, lang):
    loss_word = fragment("ch02.loss_word", lang)
    for k, case in enumerate(TD_CASES, start=1):
        where = fragment("ch02.td_case", lang, k=k, gamma=case["gamma"])
        w = tf.Variable(case["w"])
        args = (tf.constant(case["phi"]), tf.constant(case["phi_next"]), tf.constant(case["reward"]),
                tf.constant(case["done"]), case["gamma"])
        with tf.GradientTape() as tape:
            loss = call(answer, w, *args, lang=lang, where=where)
        raw = to_array(loss)
        if (raw is not None and raw.dtype.kind == "f" and raw.shape == () and np.isnan(raw)
                and not np.all(np.isfinite(case["phi_next"]))):
            raise Mismatch(message("ch02.td_nan", lang, where=where))
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
            raise Mismatch(message("ch02.td_none", lang, where=where))
        got = as_array(grad, lang=lang, what="gradient", where=where, shape=case["w"].shape)
        if matches(got, semi):
            continue
        key = "td_full" if matches(got, full) else "td_reversed" if matches(got, target_only) else "td_gradient"
        raise Mismatch(message("ch02." + key, lang, where=where, got=fmt(got), expected=fmt(semi)))
    return message("ch02.td_passed", lang, n=len(TD_CASES))
