"""Checks for chapter 5: straight-through estimators.

* ``ch05-ex1``: ``binary_sign(x, clip)``, values in :math:`\\{-1, +1\\}` with
  sign(0) = +1, gradient 1 where :math:`|x| \\le \\text{clip}` and 0 elsewhere
  (BinaryNet's clipped straight-through estimator).
* ``ch05-ex2``: ``dorefa_weights(w, bits)``, DoReFa-Net's k-bit weights for
  k >= 2, :math:`2\\,\\operatorname{round}(n u)/n - 1` with
  :math:`u = \\tanh w / (2 \\max|\\tanh w|) + 1/2` and :math:`n = 2^k - 1`;
  straight through the rounding only, everything else differentiated.  (At
  k = 1 DoReFa-Net binarises the weights with a scaled sign instead.)  A
  :class:`WholeTensor` spec (``DOREFA``).
* ``ch05-ex3``: ``xnor_paper(w)``, XNOR-Net's binary weights with the
  gradient of the paper's section 3.1: forward :math:`\\operatorname{sign}(w)\\,E`
  with sign(0) = +1 and :math:`E = \\frac1n\\sum_i |w_i|` over the whole
  tensor; backward
  :math:`\\partial C/\\partial w_i = \\bar y_i\\,(1/n + E\\,\\mathbb{1}\\{|w_i| \\le 1\\})`.
  A :class:`WholeTensor` spec (``XNOR``).

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
such a check runs, :func:`library_calls` (``_core``) wraps ``ste_sign`` and
``sign_with_surrogate`` on both ``gradlib`` and ``gradlib.ste`` (ex1), and
``gradlib.experiments.quantize_weights`` and ``dorefa_weights`` on ``gradlib`` and
``gradlib.ste`` (ex2), as attributes of their
modules, and an answer that calls one of them through its module is told
so.  An answer that *is* one of them (``gradlib.ste_sign`` passed bare, or
imported under another name: ``from gradlib import ste_sign as s``) is
refused by identity before the check runs.  A reader's function that calls
such an alias bound before the check is not caught.
"""

from __future__ import annotations

from typing import List, Optional, Tuple

import numpy as np
import tensorflow as tf

from ._core import (Elementwise, Mismatch, WholeTensor, check_elementwise, check_whole, exercise, fmt, fragment, join,
                    kink_and_random_points, library_calls, message)

# -- shared machinery ----------------------------------------------------------------

def _listing(values, lang: str) -> str:
    """``1, 0.5, 2`` in English; ``1、0.5 和 2`` in Chinese (d2l-zh style)."""
    items = [fmt(v) for v in values]
    if lang != "zh" or len(items) < 2:
        return ", ".join(items)
    return "、".join(items[:-1]) + " 和 " + items[-1]


def _no_gradient(lang: str, prefix: str) -> str:
    return message("ch05.no_gradient", lang, prefix=prefix, kind=fragment("ch05.none_word", lang))


def _zero_gradient(lang: str, where: str, params: tuple = ()) -> str:
    return message("ch05.no_gradient", lang, prefix=where, kind=fragment("ch05.zero_word", lang))


def _sign_pm1(x: np.ndarray) -> np.ndarray:
    return np.where(x >= 0, 1.0, -1.0).astype(np.float32)


def _library_itself(answer, library) -> List[str]:
    """``["gradlib.ste_sign"]`` when the answer *is* one of the library's functions (passed bare, or
    under another name: ``from gradlib import ste_sign as s``), which no wrapper sees being called."""
    import importlib

    for module, name in library:
        if answer is getattr(importlib.import_module(module), name, None):
            return [f"{module}.{name}"]
    return []


def _refuse_library(calls: List[str], lang: str, allowed: str = "nothing_allowed") -> None:
    if calls:
        raise Mismatch(message("ch05.library_call", lang, name=calls[0],
                               allowed=message("ch05." + allowed, lang)))


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


# The likeliest wrong answers, as a reader writes them (``@exercise(..., wrong_answers=...)``).

def _plus_minus_one(x):
    """sign with sign(0) = +1, as the exercises ask."""
    return tf.where(x >= 0, 1.0, -1.0)


def _sign_tf_sign(x, clip):  # tf.sign as the forward: sign(0) = 0
    t = tf.clip_by_value(x, -clip, clip)
    return t + tf.stop_gradient(tf.sign(x) - t)


def _sign_strictly_positive(x, clip):  # x > 0 instead of x >= 0: sign(0) = -1
    t = tf.clip_by_value(x, -clip, clip)
    return t + tf.stop_gradient(tf.where(x > 0, 1.0, -1.0) - t)


def _sign_strict_boundary(x, clip):  # |x| < clip: the boundary blocked
    t = tf.where(tf.abs(x) < clip, x, tf.stop_gradient(x))
    return t + tf.stop_gradient(_plus_minus_one(x) - t)


def _sign_unclipped(x, clip):  # the plain straight-through estimator: clip ignored
    return x + tf.stop_gradient(_plus_minus_one(x) - x)


def _sign_without_dy(x, clip):  # the mask instead of dy times the mask
    @tf.custom_gradient
    def op(v):
        return _plus_minus_one(v), lambda dy: tf.cast(tf.abs(v) <= clip, dy.dtype)
    return op(x)


def _sign_library(x, clip):  # the library's op, which the exercise asks the reader to write
    import gradlib
    return gradlib.ste_sign(x, clip=clip)


@exercise("ch05-ex1", answer="binary_sign", wrong_answers=[
    ("tf.sign forward", _sign_tf_sign, "ch05.sign_zero"),
    ("x > 0", _sign_strictly_positive, "ch05.sign_zero_negative"),
    ("strict boundary", _sign_strict_boundary, "ch05.clip_boundary"),
    ("clip ignored", _sign_unclipped, "ch05.plain_ste"),
    ("no straight-through", lambda x, clip: _plus_minus_one(x), "ch05.no_gradient"),
    ("dy ignored", _sign_without_dy, "ch05.upstream"),
    ("gradlib.ste_sign", _sign_library, "ch05.library_call"),
    ("bool", lambda x, clip: tf.cast(x > 0, tf.bool), "common.dtype"),
    ("None instead of a function", None, "common.not_callable"),
])
def check_binary_sign(answer, lang):
    _refuse_library(_library_itself(answer, EX1_LIBRARY), lang)
    with library_calls(EX1_LIBRARY) as calls:
        _check_binary_sign(answer, lang)
    _refuse_library(calls, lang)
    return message("ch05.binary_passed", lang, clips=_listing(CLIPS, lang), n=SIGN_POINTS.size)


def _sign_zero(lang, where, x, y, i, params) -> str:
    """sign(0) must be +1 here: a wrong value at x = 0 gets its own message."""
    if x[i] != 0:
        return ""
    return message("ch05." + ("sign_zero_negative" if y[i] == -1 else "sign_zero"), lang, prefix=where, got=fmt(y[i]))


def _clip_hint(lang, x, g, i, params) -> str:
    (clip,) = params
    if np.allclose(g, 1.0, atol=1e-5):  # straight through everywhere: no clip
        return message("ch05.plain_ste", lang)
    if abs(x[i]) == clip:  # expected 1 at the boundary: the answer blocked it
        return message("ch05.clip_boundary", lang)
    key = "clip_blocked" if abs(x[i]) > clip else "clip_passes"
    return message("ch05." + key, lang, ax=fmt(abs(x[i])), clip=fmt(clip))


# Value (sign with sign(0) = +1) and gradient, for every clip, on the points and a 6 x 6 batch of them,
# each time with upstream ones and then 2.5.
BINARY_SIGN = Elementwise(
    points=SIGN_POINTS, params=[(clip,) for clip in CLIPS], shapes=[(6, 6)], upstream=2.5, upstream_each=True,
    reference=binary_sign_reference, upstream_key="ch05.upstream",
    where=lambda lang, params: fragment("ch05.with_clip", lang, clip=fmt(params[0])),
    forward_hint="ch05.sign_forward", value_problem=_sign_zero, gradient_hint=_clip_hint,
    none_gradient=lambda lang, where, params: _no_gradient(lang, where),
    all_zero=_zero_gradient)


def _check_binary_sign(answer, lang):
    check_elementwise(BINARY_SIGN, answer, lang)


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


def _dorefa_value_mistake(w: np.ndarray, y: np.ndarray, bits: int, lang: str) -> Optional[str]:
    """The message for a typical wrong answer whose value at ``w`` is ``y``."""
    for variant, key in DOREFA_MISTAKES:
        for clip in (True, False):
            value, _ = _dorefa_variant(w, bits, np.ones_like(w), variant, clip=clip)
            if np.allclose(y, value, atol=1e-5, rtol=1e-4):
                return message("ch05." + key, lang)
    return None


def _dorefa_wrong_gradients(w: np.ndarray, upstream: np.ndarray, bits: int):
    """The gradients of the typical wrong answers whose value is right here, each with the key of its message."""
    value, _, _ = dorefa_weights_reference(w, bits, upstream)
    for variant, key in DOREFA_MISTAKES:
        for clip in (True, False):
            wrong_value, grad = _dorefa_variant(w, bits, upstream, variant, clip=clip)
            if np.allclose(value, wrong_value, atol=1e-5, rtol=1e-4):
                yield "ch05." + key, grad


def _dorefa_value_problem(lang, where, text, w, y, i, params):
    """A typical wrong value, values quantized too finely, or else the formula of the value."""
    (bits,) = params
    n = 2 ** bits - 1
    hint = _dorefa_value_mistake(w, y, bits, lang)
    if hint is None and 2 ** bits < len(np.unique(np.round(y, 5))) <= 2 ** (bits + 1) + 1:  # too finely
        hint = message("ch05.dorefa_levels", lang, bits=bits, levels=2 ** bits, n=n)
    return join(text, hint or message("ch05.dorefa_value", lang, n=n), lang)


def _index(i: int, shape) -> str:
    return "[" + ", ".join(str(k) for k in np.unravel_index(i, shape)) + "]"


# At each bits, with random upstream gradients; both the gradient with max|tanh w| differentiated and the one
# with it held constant pass.  A point away from the tie w = 0 is reported first: its message says more.
DOREFA = WholeTensor(
    cases=[(DOREFA_W, DOREFA_UPSTREAM)], params=[(bits,) for bits in BITS], name="w", report_first=lambda w: w != 0,
    reference=lambda w, dy, bits: dorefa_weights_reference(w, bits, dy)[:2],
    alternatives=lambda w, dy, bits: [dorefa_weights_reference(w, bits, dy, stop_max=True)[1]],
    where=lambda lang, w, params: fragment("ch05.with_bits", lang, bits=params[0]),
    at=lambda lang, where, w, i: where + fragment("ch05.at_w", lang, index=_index(i, w.shape), w=fmt(np.ravel(w)[i])),
    none_gradient=_no_gradient, value_problem=_dorefa_value_problem, identity_key="ch05.dorefa_identity",
    all_zero=_zero_gradient,
    mistakes=_dorefa_wrong_gradients,
    gradient_hint=lambda lang, w, g, bad, i, params: message(
        "ch05." + ("dorefa_max" if i == int(np.argmax(np.abs(w))) else "dorefa_gradient"), lang))

EX2_LIBRARY = (("gradlib.experiments", "quantize_weights"), ("gradlib", "dorefa_weights"), ("gradlib.ste", "dorefa_weights"))


def _dorefa_with_max(maximum, affine=True):
    """DoReFa's weights with the maximum computed by ``maximum(w, tanh w)``: the typical wrong maxima
    (and, with ``affine=False``, q instead of 2q - 1)."""
    def answer(w, bits):
        import gradlib
        t = tf.tanh(w)
        q = gradlib.dorefa_quantize(t / (2 * maximum(w, t)) + 0.5, bits)
        return 2 * q - 1 if affine else q
    return answer


def _dorefa_round(w, bits):  # the formula with tf.round and no straight-through
    t = tf.tanh(w)
    n = 2.0 ** bits - 1
    return 2 * tf.round((t / (2 * tf.reduce_max(tf.abs(t))) + 0.5) * n) / n - 1


def _dorefa_whole(w, bits):  # the stop_gradient trick around the whole quantizer, tanh and maximum included
    t = tf.tanh(w)
    n = 2.0 ** bits - 1
    y = 2 * tf.round((t / (2 * tf.reduce_max(tf.abs(t))) + 0.5) * n) / n - 1
    return w + tf.stop_gradient(y - w)


def _dorefa_pow2_steps(w, bits):  # n = 2^bits instead of 2^bits - 1
    t = tf.tanh(w)
    u = t / (2 * tf.reduce_max(tf.abs(t))) + 0.5
    n = 2.0 ** bits
    return 2 * (u + tf.stop_gradient(tf.round(u * n) / n - u)) - 1


def _dorefa_library(w, bits):  # the experiment's quantizer, which the exercise asks the reader to write
    from gradlib import experiments
    return experiments.quantize_weights(w, "kbit", bits)


def _dorefa_gradlib(w, bits):  # gradlib's op, the same function
    import gradlib
    return gradlib.dorefa_weights(w, bits)


@exercise("ch05-ex2", answer="dorefa_weights", wrong_answers=[
    ("no straight-through", _dorefa_round, "ch05.no_gradient"),
    ("straight through the whole quantizer", _dorefa_whole, "ch05.dorefa_identity"),
    ("max|w|", _dorefa_with_max(lambda w, t: tf.reduce_max(tf.abs(w))), "ch05.dorefa_max_w"),
    ("max without the absolute value", _dorefa_with_max(lambda w, t: tf.reduce_max(t)), "ch05.dorefa_max_sign"),
    ("max along one axis", _dorefa_with_max(lambda w, t: tf.reduce_max(tf.abs(t), axis=0)), "ch05.dorefa_max_axis"),
    ("q instead of 2q - 1", _dorefa_with_max(lambda w, t: tf.reduce_max(tf.abs(t)), affine=False),
     "ch05.dorefa_affine"),
    ("2^bits steps", _dorefa_pow2_steps, "ch05.dorefa_levels"),
    ("experiments.quantize_weights", _dorefa_library, "ch05.library_call"),
    ("gradlib.dorefa_weights", _dorefa_gradlib, "ch05.library_call"),
])
def check_dorefa_weights(answer, lang):
    _refuse_library(_library_itself(answer, EX2_LIBRARY), lang, "dorefa_allowed")
    with library_calls(EX2_LIBRARY) as calls:
        matched = check_whole(DOREFA, answer, lang)
    _refuse_library(calls, lang, "dorefa_allowed")
    variant = message("ch05.stopped_max", lang) if all(k == 1 for k in matched) else ""
    return message("ch05.dorefa_passed", lang, bits=_listing(BITS, lang), n=DOREFA_W.size,
                   variant=variant)


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
        yield "ch05.xnor_product_rule", scale * inside * ybar + outer * coupling
        yield "ch05.xnor_product_rule", scale * ybar + outer * coupling  # and the unclipped estimator
    clipped = np.clip(w.astype(np.float64), -1.0, 1.0)
    # the stop_gradient trick with the right surrogate w/n + E clip(w, -1, 1), but E not stopped in it
    yield "ch05.xnor_trick_unstopped", ybar * (1.0 / n + scale * inside) + np.sign(w) * np.sum(clipped * ybar) / n
    for outer in (np.sign(w).astype(np.float64), s):  # tf.sign(w)/n or the forward's sign/n, instead of 1/n
        yield "ch05.xnor_sign_over_n", ybar * (outer / n + scale * inside)
    yield "ch05.xnor_no_diagonal", scale * inside * ybar
    yield "ch05.xnor_plain", scale * ybar
    yield "ch05.xnor_identity", ybar
    yield "ch05.xnor_no_clip", ybar * (1.0 / n + scale)
    yield "ch05.xnor_no_scale", ybar * (1.0 / n + inside)


def _xnor_value_problem(lang, where, text, w, y, i, params):
    """One scale per row or column, sign(0) not +1, or else the formula of the value."""
    scale = np.mean(np.abs(w), dtype=np.float32)
    got = np.ravel(y)[i]
    if w.ndim == 2:
        for axis, word in ((0, "column_word"), (1, "row_word")):
            per_axis = _sign_pm1(w) * np.mean(np.abs(w), axis=axis, keepdims=True)
            if np.allclose(y, per_axis, atol=1e-5, rtol=1e-4):
                return join(text, message("ch05.xnor_axis", lang, axis=message("ch05." + word, lang)), lang)
    if np.ravel(w)[i] == 0 and (np.isclose(got, 0.0, atol=1e-6) or np.isclose(got, -scale, atol=1e-5)):
        key = "xnor_zero" if np.isclose(got, 0.0, atol=1e-6) else "xnor_zero_negative"
        return message("ch05." + key, lang, where=where, got=fmt(got), E=fmt(scale))
    return join(text, message("ch05.xnor_value", lang, E=fmt(scale)), lang)


def _xnor_gradient_hint(lang, w, g, bad, i, params):
    if np.all(np.abs(np.ravel(w)[bad]) == 1):
        return message("ch05.xnor_strict", lang)  # wrong exactly at w = ±1: a strict |w| < 1
    return message("ch05.xnor_gradient", lang, n=w.size, E=fmt(np.mean(np.abs(w), dtype=np.float32)))


def _shape(w: np.ndarray) -> str:
    return "×".join(map(str, w.shape))


# On a vector and a matrix, each with kinks (0, ±1) and random upstream gradients.  A nonzero
# weight is reported first: at w = 0 TensorFlow's d|w|/dw is 0, which hides the coupling through E.
XNOR = WholeTensor(
    cases=XNOR_INPUTS, reference=xnor_paper_reference, name="w", report_first=lambda w: w != 0,
    where=lambda lang, w, params: "" if w.ndim == 1 else fragment("ch05.in_matrix", lang, shape=_shape(w)),
    at=lambda lang, where, w, i: fragment("ch05.at_w3", lang, where=where, index=_index(i, w.shape),
                                          w=fmt(np.ravel(w)[i])),
    none_gradient=_no_gradient, value_problem=_xnor_value_problem,
    all_zero=_zero_gradient,
    upstream_key="ch05.upstream", mistakes=_xnor_wrong_gradients, gradient_hint=_xnor_gradient_hint)


def _mean_abs(v):
    return tf.reduce_mean(tf.abs(v))


def _clipped(v):
    """BinaryNet's indicator 1{|v| <= 1}."""
    return tf.cast(tf.abs(v) <= 1, v.dtype)


def _xnor_with(backward, forward=_plus_minus_one):
    """Forward ``forward(w)·E``, backward ``backward(dy, w, E, n)``: the shape of a typical wrong answer."""
    def answer(w):
        scale = _mean_abs(w)
        n = tf.cast(tf.size(w), w.dtype)

        @tf.custom_gradient
        def binarize(v):
            return forward(v) * scale, lambda dy: backward(dy, v, scale, n)
        return binarize(w)
    return answer


def _xnor_product_rule(w):  # the chapter's table's last row: autodiff through E too
    import gradlib
    return _mean_abs(w) * gradlib.ste_sign(w, clip=1.0)


def _xnor_stopped_scale(w):  # E stopped: the term 1/n through E is lost (larq's rule)
    import gradlib
    return tf.stop_gradient(_mean_abs(w)) * gradlib.ste_sign(w, clip=1.0)


def _xnor_trick_unstopped(w):  # the right surrogate, but E = mean|w| left to autodiff inside it
    scale = _mean_abs(w)
    n = tf.cast(tf.size(w), w.dtype)
    surrogate = w / n + scale * tf.clip_by_value(w, -1.0, 1.0)
    return surrogate + tf.stop_gradient(_plus_minus_one(w) * scale - surrogate)


def _xnor_library(w):  # gradlib's binarizer: straight through, gradient dy
    import gradlib
    return gradlib.xnor_binarize(w)


@exercise("ch05-ex3", answer="xnor_paper", wrong_answers=[
    ("autodiff of E times ste_sign", _xnor_product_rule, "ch05.xnor_product_rule"),
    ("the trick with E not stopped", _xnor_trick_unstopped, "ch05.xnor_trick_unstopped"),
    ("E stopped", _xnor_stopped_scale, "ch05.xnor_no_diagonal"),
    ("sign(w)/n instead of 1/n", _xnor_with(lambda dy, v, scale, n: dy * (tf.sign(v) / n + scale * _clipped(v))),
     "ch05.xnor_sign_over_n"),
    ("tf.sign forward", _xnor_with(lambda dy, v, scale, n: dy * (1 / n + scale * _clipped(v)), forward=tf.sign),
     "ch05.xnor_zero"),
    ("gradlib.xnor_binarize", _xnor_library, "ch05.xnor_identity"),
])
def check_xnor_paper(answer, lang):
    check_whole(XNOR, answer, lang)
    vector, matrix = XNOR_INPUTS[0][0], XNOR_INPUTS[1][0]
    return message("ch05.xnor_passed", lang, n=vector.size, shape=_shape(matrix))
