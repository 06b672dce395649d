"""Checks for chapter 6: DANN and the gradient reversal layer.

* ``ch06-ex1``: ``reverse_gradient(x, lam)`` with ``tf.custom_gradient``: the
  value is ``x`` bit for bit, the gradient is :math:`-\\lambda` times the
  upstream gradient, ``lam`` gets no gradient.  ``gradlib.gradient_reversal``
  (or the ``GradientReversal`` layer) is the answer in one line and is
  refused, and so is a layer without a custom gradient (the stop_gradient
  trick).
* ``ch06-ex2``: ``dann_lambda(p)``, the schedule
  :math:`\\lambda_p = 2/(1 + e^{-10 p}) - 1` of Ganin et al. (2016).  A
  :class:`Scalar` spec (``SCHEDULE``): the progress values, the reference and
  the typical wrong schedules, each with the key of its hint.
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
from ._core import (Mismatch, Scalar, as_array, call, check_scalar, describe, exercise, first_mismatch, first_mistake,
                    fmt, fragment, join, kink_and_random_points, message, probe, refuse_library, require_tensor,
                    to_array, value_mismatch)


def _exact(value) -> str:
    """All the digits of a float32, so that values one bit apart look different."""
    return f"{float(value):.9g}"


# -- the gradient reversal layer: ex1 ----------------------------------------------

POINTS = kink_and_random_points([0.0, 1.5, -2.0, 0.1], seed=6)
LAMS = (0.5, 1.0, 0.0, 2.0)  # Python numbers, with upstream ones; 0.5 first: at 1, +dy is both λ dy and dy unchanged
UPSTREAM_LAM = 0.5            # with UPSTREAM, as a number, and on a 3 x 4 matrix; also on EXACT_POINTS
TENSOR_LAM = 0.3              # as a tf.constant: it must get no gradient
VARIABLE_LAM = 0.75           # as a tf.Variable, with UPSTREAM
FUNCTION_LAMS = (0.25, 1.5)   # a tf.Variable assigned between two calls of one tf.function
UPSTREAM = np.random.default_rng(7).uniform(-3, 3, POINTS.shape).astype(np.float32)
# Random points where t + (x - t) with t = -0.5 x differs from x for many of
# them, then the two zeros: the sign of -0.0 is what an added zero loses.
EXACT_POINTS = np.concatenate([np.random.default_rng(8).uniform(-3, 3, 200).astype(np.float32),
                               np.array([0.0, -0.0], np.float32)])


def _bits(values) -> np.ndarray:
    return np.asarray(values, np.float32).view(np.int32)


# The value is x up to rounding, the gradient -lam * dy: a tight tolerance.
RTOL, ATOL = 1e-5, 1e-6


def _run(answer: Callable, x: np.ndarray, lam, upstream, *, lang: str, prefix: str):
    """The shared probe on ``answer(x, lam)``; a tensor ``lam`` is watched, and its gradient is the third result."""
    def gradient_error(err):
        detail = describe(err, lang)
        if "gradients, but returned" in detail or "expected to return" in detail:
            return message("ch06.gradient_count", lang, prefix=prefix, detail=detail)
        return None

    y, g, lam_grads = probe(answer, x, upstream=upstream, args=(lam,), lang=lang, where=prefix,
                            gradient_error=gradient_error)
    return y, g, (lam_grads[0] if lam_grads else None)


def _first_bad(got, expected):
    return first_mismatch(got, expected, rtol=RTOL, atol=ATOL)


def _gradient_hint(got: float, lam: float, lang: str) -> str:
    """The hint for a wrong gradient ``got`` (expected −λ): λ, −1 or +1 name a mistake."""
    mistakes = (("ch06.grad_sign", lam), ("ch06.grad_ignores_lam", -1.0), ("ch06.grad_not_reversed", 1.0))
    return message(first_mistake(got, -lam, mistakes, rtol=1e-5, atol=1e-8) or "ch06.grad_generic", lang)


def _compare_forward(y, x, *, lang: str, prefix: str):
    """The value must be x (up to rounding); raise on the first mismatch."""
    flat_x = np.ravel(x)
    i = _first_bad(y, x)
    if i is not None:
        text = value_mismatch(lang, prefix, flat_x[i], "forward", np.ravel(y)[i], flat_x[i])
        raise Mismatch(join(text, message("ch06.forward_identity", lang), lang))


def _compare(answer, x, lam, lam_value: float, *, lang: str, prefix: str):
    """Value ≈ x and gradient = −λ with an upstream gradient of ones; returns the value and λ's gradient."""
    y, g, lam_grad = _run(answer, x, lam, None, lang=lang, prefix=prefix)
    flat_x = np.ravel(x)
    _compare_forward(y, x, lang=lang, prefix=prefix)
    expected = np.full(x.shape, -lam_value, np.float32)
    i = _first_bad(g, expected)
    if i is not None:
        got = float(np.ravel(g)[i])
        text = value_mismatch(lang, prefix, flat_x[i], "gradient", got, -lam_value)
        raise Mismatch(join(text, _gradient_hint(got, lam_value, lang), lang))
    return y, lam_grad


def _compare_upstream(answer, x, lam, lam_value: float, upstream, *, lang: str, prefix: str):
    y, g, _ = _run(answer, x, lam, upstream, lang=lang, prefix=prefix)
    _compare_forward(y, x, lang=lang, prefix=prefix)  # every call of the answer counts
    expected = -lam_value * upstream
    i = _first_bad(g, expected)
    if i is not None:
        raise Mismatch(message("ch06.upstream", lang, prefix=prefix, x=fmt(np.ravel(x)[i]), dy=fmt(np.ravel(upstream)[i]),
                             got=fmt(np.ravel(g)[i]), expected=fmt(np.ravel(expected)[i])))


def _compare_in_function(answer, x, upstream, *, lang: str) -> Optional[bool]:
    """λ a tf.Variable read inside one tf.function; assign a new value between two calls.

    Returns whether the traced answer contains a tf.custom_gradient, which marks
    the IdentityN op it creates in a graph with a ``_gradient_op_type``
    attribute (None when the graph cannot be read).
    """
    lam = tf.Variable(FUNCTION_LAMS[0])
    xt, dy = tf.constant(x), tf.constant(upstream)

    @tf.function
    def layer_gradient(v):
        with tf.GradientTape() as tape:
            tape.watch(v)
            y = answer(v, lam)
        if not tf.is_tensor(y):  # reported below, outside the tf.function
            return y, None
        return y, tape.gradient(y, v, output_gradients=dy)

    for value in FUNCTION_LAMS:
        lam.assign(value)
        prefix = fragment("ch06.with_lam", lang, lam=fmt(value), kind=fragment("ch06.kind_function", lang))
        try:
            with captured_tf_warnings():  # a check run many times must not flood stderr with retracing notices
                y, grad = layer_gradient(xt)
        except Exception as err:
            raise Mismatch(message("ch06.function_raised", lang, prefix=prefix, error=type(err).__name__,
                                 detail=describe(err, lang))) from None
        y_array = as_array(y, lang=lang, what="forward", where=prefix, shape=x.shape)
        require_tensor(y, lang=lang, where=prefix)
        _compare_forward(y_array, x, lang=lang, prefix=prefix)
        g = as_array(grad, lang=lang, what="gradient", where=prefix, shape=x.shape, none_key="none_gradient")
        expected = -value * upstream
        i = _first_bad(g, expected)
        if i is not None:
            stale = FUNCTION_LAMS[0]  # the value λ had when the function was traced
            key = "function_stale" if value != stale and np.allclose(g, -stale * upstream) else "upstream"
            raise Mismatch(message("ch06." + key, lang, prefix=prefix, x=fmt(np.ravel(x)[i]), dy=fmt(np.ravel(upstream)[i]),
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
        _compare(answer, x, lam, lam, lang=lang, prefix=fragment("ch06.with_lam", lang, lam=fmt(lam), kind=""))
    _compare_upstream(answer, x, UPSTREAM_LAM, UPSTREAM_LAM, UPSTREAM, lang=lang,
                      prefix=fragment("ch06.with_lam", lang, lam=fmt(UPSTREAM_LAM), kind=""))
    _, lam_grad = _compare(answer, x, tf.constant(TENSOR_LAM), TENSOR_LAM, lang=lang,
                           prefix=fragment("ch06.with_lam", lang, lam=fmt(TENSOR_LAM),
                                           kind=fragment("ch06.kind_tensor", lang)))
    _compare_upstream(answer, x, tf.Variable(VARIABLE_LAM), VARIABLE_LAM, UPSTREAM, lang=lang,
                      prefix=fragment("ch06.with_lam", lang, lam=fmt(VARIABLE_LAM),
                                      kind=fragment("ch06.kind_variable", lang)))
    matrix = x[:12].reshape(3, 4)
    _compare_upstream(answer, matrix, UPSTREAM_LAM, UPSTREAM_LAM, UPSTREAM[:12].reshape(3, 4), lang=lang,
                      prefix=fragment("ch06.matrix", lang) + fragment("ch06.with_lam", lang, lam=fmt(UPSTREAM_LAM),
                                                                        kind=""))
    custom = _compare_in_function(answer, x, UPSTREAM, lang=lang)
    return lam_grad, custom


def _lams_text() -> str:
    return "{" + ", ".join(fmt(v) for v in LAMS) + "}"


def _is_library_reversal(answer) -> bool:
    """``answer`` is gradlib's reversal itself (the function or a GradientReversal layer)."""
    from ... import reversal

    try:
        return answer is reversal.gradient_reversal or isinstance(answer, reversal.GradientReversal)
    except Exception:  # a reader's object whose comparison raises: not ours
        return False


def _check_ex1(answer, lang: str) -> str:
    lam_grad, custom = _check_reversal(answer, lang)
    prefix = fragment("ch06.with_lam", lang, lam=fmt(UPSTREAM_LAM), kind="")
    y, _ = _compare(answer, EXACT_POINTS, UPSTREAM_LAM, UPSTREAM_LAM, lang=lang, prefix=prefix)
    differ = np.flatnonzero(_bits(y) != _bits(EXACT_POINTS))
    if differ.size:
        i = int(differ[0])
        raise Mismatch(message("ch06.not_exact", lang, lam=fmt(UPSTREAM_LAM), x=_exact(EXACT_POINTS[i]), got=_exact(y[i]),
                             count=differ.size, n=EXACT_POINTS.size))
    if custom is False:
        raise Mismatch(message("ch06.no_custom", lang))
    if lam_grad is not None:
        got = to_array(lam_grad)
        text = fmt(got) if got is not None and got.dtype.kind in "iuf" and got.size <= 8 else type(lam_grad).__name__
        raise Mismatch(message("ch06.lam_gradient", lang, lam=fmt(TENSOR_LAM), got=text))
    return message("ch06.ex1_passed", lang, lams=_lams_text())


# Typical wrong answers of ex1 (``wrong_answers`` below), written as a reader writes them.

def _reversal(scale_of_lam: Callable) -> Callable:
    """A layer whose gradient is ``scale_of_lam(lam)`` times dy (the right one is −λ)."""
    def answer(x, lam):
        @tf.custom_gradient
        def op(v):
            return tf.identity(v), lambda dy: scale_of_lam(lam) * dy
        return op(x)
    return answer


@tf.custom_gradient
def _no_gradient_for_lam(x, lam):  # grad_fn returns one gradient for two inputs
    return tf.identity(x), lambda dy: -lam * dy


@tf.custom_gradient
def _zero_gradient_for_lam(x, lam):  # a zero for lam is still a gradient; None is none
    return tf.identity(x), lambda dy: (-lam * dy, tf.zeros_like(lam))


@tf.custom_gradient
def _upstream_ignored(x, lam):  # the layer's own derivative, not multiplied by dy
    return tf.identity(x), lambda dy: (-lam * tf.ones_like(x), None)


@tf.custom_gradient
def _float_lam(x, lam):  # fine eagerly; inside a tf.function lam is a symbolic tensor
    lam = float(lam)
    return tf.identity(x), lambda dy: (-lam * dy, None)


def _stop_gradient_trick(x, lam):  # chapter 2's textbook arrangement: rounds twice
    t = -lam * x
    return t + tf.stop_gradient(x - t)


def _exact_stop_gradient_trick(x, lam):  # exact, but no tf.custom_gradient
    t = -lam * x
    return tf.stop_gradient(x) - (tf.stop_gradient(t) - t)


def _undecorated_reversal(x, lam):  # @tf.custom_gradient forgotten: the pair itself comes back
    return tf.identity(x), lambda dy: (-lam * dy, None)


def _library_reversal(x, lam):
    import gradlib
    return gradlib.gradient_reversal(x, lam)


@exercise("ch06-ex1", answer="reverse_gradient", wrong_answers=[
    ("identity", lambda x, lam: tf.identity(x), "ch06.grad_not_reversed"),
    ("lam without the minus", _reversal(lambda lam: lam), "ch06.grad_sign"),
    ("minus one whatever lam", _reversal(lambda lam: -1.0), "ch06.grad_ignores_lam"),
    ("no gradient for lam", _no_gradient_for_lam, "ch06.gradient_count"),
    ("a zero gradient for lam", _zero_gradient_for_lam, "ch06.lam_gradient"),
    ("upstream gradient ignored", _upstream_ignored, "ch06.upstream"),
    ("float(lam)", _float_lam, "ch06.function_raised"),
    ("the stop_gradient trick", _stop_gradient_trick, "ch06.not_exact"),
    ("the exact stop_gradient trick", _exact_stop_gradient_trick, "ch06.no_custom"),
    ("gradlib.gradient_reversal", _library_reversal, "ch06.library"),
    ("@tf.custom_gradient forgotten", _undecorated_reversal, "common.undecorated"),
])
def check_reverse_gradient(answer, lang):
    # gradlib.gradient_reversal and the GradientReversal layer both end in gradlib.reversal._reverse
    return refuse_library(_check_ex1, answer, lang, names=[("gradlib.reversal", "_reverse")], key="ch06.library",
                          made_by=_is_library_reversal)


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
    prefix = fragment("ch06.loss_with_lam", lang, lam=fmt(lam))
    model = DannModel()  # fresh weights for every call: an answer that changes them changes nothing here
    parts = model.parts()
    variables = [v for part in parts.values() for v in part]
    inputs = (tf.constant(EX3_X_SOURCE), tf.constant(EX3_Y_SOURCE), tf.constant(EX3_X_TARGET))
    with tf.GradientTape() as tape:
        loss = call(answer, model, *inputs, lam, lang=lang, where=prefix)
    value = as_array(loss, lang=lang, what=fragment("ch06.loss_word", lang), where=prefix, shape=())
    require_tensor(loss, lang=lang, where=prefix)
    try:
        grads = tape.gradient(loss, variables)
    except Exception as err:
        raise Mismatch(message("common.raised", lang, where=prefix, error=type(err).__name__,
                               detail=describe(err, lang))) from None
    flat, i = {}, 0
    for name, part in parts.items():
        arrays = []
        for v in part:
            g = grads[i]
            i += 1
            array = np.zeros(v.shape, np.float64) if g is None else to_array(tf.convert_to_tensor(g))
            if array is None or array.dtype.kind != "f" or not np.all(np.isfinite(array)):
                raise Mismatch(message("common.nan", lang, where=prefix, what=fragment("common.gradient", lang)))
            arrays.append(np.ravel(array).astype(np.float64))
        flat[name] = np.concatenate(arrays)
    (a, b), ok_f = _fit(flat["features"], [grad_y["features"], grad_d["features"]])
    (e,), ok_y = _fit(flat["label"], [grad_y["label"]])
    (c,), ok_d = _fit(flat["domain"], [grad_d["domain"]])
    for ok, part in ((ok_f, "part_features"), (ok_y, "part_label"), (ok_d, "part_domain")):
        if not ok:
            raise Mismatch(message("ch06.not_combination", lang, prefix=prefix, part=message("ch06." + part, lang)))
    if not (_close(a, 1) and _close(b, -lam) and _close(c, 1) and _close(e, 1)):
        text = message("ch06.coefficients", lang, prefix=prefix, a=_coefficient(a), b=_coefficient(b), c=_coefficient(c),
                     e=_coefficient(e), want_b=fmt(-lam))
        hint = _loss_hint(a, b, c, lam) if _close(e, 1) else None
        fields = {}
        if hint is None:
            hint, fields = _scale_hint(a, b, c, e, lam) or (None, {})
        raise Mismatch(text if hint is None else join(text, message("ch06." + hint, lang, **fields), lang))
    expected = label_loss + domain_loss
    if not np.isclose(float(value), expected, rtol=1e-4, atol=1e-5):
        raise Mismatch(message("ch06.loss_value", lang, prefix=prefix, got=fmt(float(value)), expected=fmt(expected)))


def _dann(domain_weight: Callable, *, reverse: bool = True, pass_lam: bool = True,
          reduce: Callable = tf.reduce_mean) -> Callable:
    """The colleague's loss with its pieces changed, as a reader's fix changes them (a wrong answer of ex3).

    ``label_loss + domain_weight(lam) * domain_loss``, with the reversal layer in front of
    the domain classifier when ``reverse`` (given ``lam`` when ``pass_lam``, else left at its
    default λ = 1), and each loss reduced over its points by ``reduce``.
    """
    def loss(model, x_source, y_source, x_target, lam):
        import gradlib
        f_source, f_target = model.features(x_source), model.features(x_target)
        label_loss = reduce(tf.nn.sigmoid_cross_entropy_with_logits(y_source, model.label(f_source)))
        domains = tf.concat([tf.zeros_like(f_source[:, :1]), tf.ones_like(f_target[:, :1])], axis=0)
        both = tf.concat([f_source, f_target], axis=0)
        if reverse:
            both = gradlib.gradient_reversal(both, lam) if pass_lam else gradlib.gradient_reversal(both)
        domain_loss = reduce(tf.nn.sigmoid_cross_entropy_with_logits(domains, model.domain(both)))
        return label_loss + domain_weight(lam) * domain_loss
    return loss


@exercise("ch06-ex3", answer="dann_loss", wrong_answers=[
    ("the colleague's loss, unchanged", _dann(lambda lam: -lam), "ch06.hint_colleague"),
    ("reversal dropped, minus kept", _dann(lambda lam: -lam, reverse=False), "ch06.hint_minus"),
    ("reversal kept, plus lam L_d", _dann(lambda lam: lam), "ch06.hint_twice"),
    ("reversal and minus both dropped", _dann(lambda lam: 1.0, reverse=False), "ch06.hint_cooperative"),
    ("lam not passed to the reversal", _dann(lambda lam: 1.0, pass_lam=False), "ch06.hint_no_lambda"),
    ("sums instead of means", _dann(lambda lam: 1.0, reduce=tf.reduce_sum), "ch06.hint_sum"),
    ("returns the model", lambda *a: a[0], "common.not_numeric"),
    ("a Python float", lambda *a: 1.5, "common.not_tensor"),
])
def check_dann_loss(answer, lang):
    references = loss_references()
    for lam in LOSS_LAMS:
        _check_loss_at(answer, lam, references, lang)
    return message("ch06.ex3_passed", lang, lams="{" + ", ".join(fmt(v) for v in LOSS_LAMS) + "}")


# -- ex2: the lambda schedule ------------------------------------------------------

PROGRESS = (0.0, 0.05, 0.1, 0.25, 0.5, 0.75, 1.0)


def lambda_reference(p: float) -> float:
    """2 / (1 + exp(-10 p)) - 1 in float64."""
    return 2.0 / (1.0 + np.exp(-10.0 * p)) - 1.0


# The schedule, its reference, and the typical wrong schedules each with the key of its hint.
SCHEDULE = Scalar(
    points=PROGRESS, reference=lambda_reference, name="p", where="ch06.at_p", what="ch06.lam_word",
    none="ch06.number_none", wrong="ch06.schedule_value",
    mistakes=(("ch06.schedule_plus_one", lambda p: lambda_reference(p) + 1.0),
              ("ch06.schedule_sign", lambda p: -lambda_reference(p)),
              ("ch06.schedule_sigmoid", lambda p: 1.0 / (1.0 + np.exp(-10.0 * p))),
              ("ch06.schedule_gamma", lambda p: 2.0 / (1.0 + np.exp(-p)) - 1.0)))


@exercise("ch06-ex2", answer="dann_lambda", wrong_answers=[
    ("schedule plus one", lambda p: 2.0 / (1.0 + np.exp(-10.0 * p)), "ch06.schedule_plus_one"),
    ("sigmoid", lambda p: 1.0 / (1.0 + np.exp(-10.0 * p)), "ch06.schedule_sigmoid"),
    ("exponent +10p", lambda p: 2.0 / (1.0 + np.exp(10.0 * p)) - 1.0, "ch06.schedule_sign"),
    ("exponent -p", lambda p: 2.0 / (1.0 + np.exp(-p)) - 1.0, "ch06.schedule_gamma"),
])
def check_dann_lambda(answer, lang):
    values = check_scalar(SCHEDULE, answer, lang)
    return message("ch06.ex2_passed", lang, ps="{" + ", ".join(fmt(p) for p in PROGRESS) + "}",
                   last=f"{values[-1]:.5f}")
