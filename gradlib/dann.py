r"""The inter-twinning moons experiment of domain-adversarial training.

Ganin et al., *Domain-Adversarial Training of Neural Networks*, JMLR 17(59),
2016, §5.1.1: a source domain of two labelled moons, a target domain drawn
independently and rotated by 35°, a network with one hidden layer of 15
units.  The source-only network is trained on the labelled source alone;
DANN also trains a domain classifier on the hidden layer through a gradient
reversal layer, so the hidden features become hard to tell apart across
domains.  Target labels are used for evaluation only.
"""

from __future__ import annotations

from typing import Any, Dict

import numpy as np
import tensorflow as tf

from . import _validate
from ._validate import integer, real_number
from .data import two_moons
from .logs import captured_tf_warnings
from .reversal import gradient_reversal

__all__ = ["DEFAULTS", "lambda_schedule", "learning_rate_schedule", "moons_experiment"]

DEFAULTS: Dict[str, Any] = {
    "n_per_class": 150,      # source points per class; the target has as many
    "noise": 0.1,
    "rotation_deg": 35.0,
    "hidden": 15,
    "steps": 4000,           # full-batch gradient steps
    "learning_rate": 0.03,   # mu_0 of the annealed schedule
    "lam": 2.0,              # the final lambda; the schedule rises to it
    "domain_hidden": 15,     # hidden units of the domain classifier (0 = logistic regression)
    "optimizer": "adam",     # "adam" or "sgd" (plain full-batch SGD: DANN is unstable with it here)
    "grid": 0,               # > 0: also return class probabilities on a grid x grid mesh
}


def _progress(p) -> np.ndarray:
    """Training progress as a float64 array, every value in [0, 1]."""
    try:
        progress = np.asarray(p, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"`p` must be training progress: real numbers in [0, 1]; got {p!r}") from None
    outside = progress[~((progress >= 0) & (progress <= 1))]  # NaN is outside too
    if outside.size:
        raise ValueError(f"`p` must be training progress: real numbers in [0, 1]; got {float(outside.flat[0])!r}")
    return progress


def lambda_schedule(p, gamma: float = 10.0):
    r""":math:`\lambda_p = \frac{2}{1 + \exp(-\gamma p)} - 1`, rising from 0 to 1 as training progress :math:`p` goes 0 → 1 (Ganin et al. 2016, §5.2.2).

    ``p`` is a number or an array of numbers in :math:`[0, 1]`; the result is
    a float64 array of the same shape.

    Raises:
        ValueError: a value of ``p`` outside :math:`[0, 1]` (or not a number),
            or ``gamma`` not a positive number.
    """
    gamma = real_number(gamma, "gamma", positive=True)
    return 2.0 / (1.0 + np.exp(-gamma * _progress(p))) - 1.0


def learning_rate_schedule(p, mu0: float = 0.01, alpha: float = 10.0, beta: float = 0.75):
    r""":math:`\mu_p = \mu_0 / (1 + \alpha p)^\beta` (Ganin et al. 2016, §5.2.2).

    ``p`` is a number or an array of numbers in :math:`[0, 1]`; the result is
    a float64 array of the same shape.

    Raises:
        ValueError: a value of ``p`` outside :math:`[0, 1]` (or not a number),
            ``mu0`` not a positive number, or ``alpha``/``beta`` negative.
    """
    mu0 = real_number(mu0, "mu0", positive=True)
    alpha, beta = real_number(alpha, "alpha", minimum=0), real_number(beta, "beta", minimum=0)
    return mu0 / (1.0 + alpha * _progress(p)) ** beta


def _init(shape, rng):
    limit = np.sqrt(6.0 / sum(shape))  # Glorot uniform
    return tf.Variable(rng.uniform(-limit, limit, shape).astype(np.float32))


def _check_options(method: str, options: Dict[str, Any]) -> Dict[str, Any]:
    if method not in ("dann", "source_only"):
        raise ValueError(f"`method` must be 'dann' or 'source_only'; got {method!r}")
    unknown = set(options) - set(DEFAULTS)
    if unknown:
        raise ValueError(f"unknown options {sorted(unknown)}; known: {sorted(DEFAULTS)}")
    settings = {**DEFAULTS, **options}
    for name in ("steps", "hidden", "n_per_class"):
        integer(settings[name], name, minimum=1)
    for name in ("domain_hidden", "grid"):
        integer(settings[name], name, minimum=0)
    real_number(settings["noise"], "noise", minimum=0)
    real_number(settings["lam"], "lam")  # negative is allowed: chapter 6 trains a "cooperative" DANN
    real_number(settings["rotation_deg"], "rotation_deg")
    real_number(settings["learning_rate"], "learning_rate", positive=True)
    if settings["optimizer"] not in ("sgd", "adam"):
        raise ValueError(f"`optimizer` must be 'sgd' or 'adam'; got {settings['optimizer']!r}")
    return settings


def moons_experiment(method: str, seed: int = 0, **options) -> Dict[str, Any]:
    r"""Train a source-only network or DANN on the two-moons adaptation problem.

    The label classifier is :math:`G_y(G_f(x))` with
    :math:`G_f(x) = \operatorname{sigmoid}(W x + b)` (``hidden`` units) and a
    logistic output; DANN adds a domain classifier :math:`G_d` on
    :math:`\operatorname{GRL}_\lambda(G_f(x))` and minimises

    .. math:: \frac{1}{n}\sum_{\text{source}} \ell_y + \frac{1}{2n}\sum_{\text{both}} \ell_d

    by full-batch gradient descent with :math:`\mu_p` and :math:`\lambda_p`
    annealed as in the paper (:func:`learning_rate_schedule` scaled to
    ``learning_rate``, :func:`lambda_schedule` scaled to ``lam``).  Because of
    the reversal layer, :math:`G_f` ascends the domain loss while :math:`G_d`
    descends it.

    Args:
        method: ``"dann"`` or ``"source_only"``.
        seed: seeds the data (source seed, target seed + 1000) and the weights.
        options: any key of :data:`DEFAULTS`.

    Returns:
        A dict with ``source_accuracy`` and ``target_accuracy`` (target labels
        are used only here), ``domain_accuracy`` (the domain classifier's final
        accuracy; ``None`` for source-only), ``history`` (per 100 steps:
        ``step``, ``label_loss``, ``domain_loss``, ``lam``), the data
        (``source``, ``target``: ``(X, y)`` pairs), the settings, and with
        ``grid > 0`` a ``grid`` entry ``(xx, yy, probabilities)``.

    Raises:
        ValueError: unknown ``method`` or option, an invalid setting (a count
            that is not a positive integer, ``domain_hidden`` or ``grid`` not a
            non-negative integer, a negative ``noise``, a ``lam`` that is not finite, a
            non-positive ``learning_rate``, an unknown ``optimizer``), or
            ``seed`` not a non-negative integer.
    """
    settings = _check_options(method, options)
    seed = _validate.seed(seed)
    rng = np.random.default_rng(seed)
    xs, ys = two_moons(settings["n_per_class"], settings["noise"], 0.0, seed=seed)
    xt, yt = two_moons(settings["n_per_class"], settings["noise"], settings["rotation_deg"], seed=seed + 1000)
    centre = xs.mean(axis=0)
    xs_in, xt_in = tf.constant(xs - centre), tf.constant(xt - centre)
    ys_f = tf.constant(ys.astype(np.float32)[:, None])
    domain_labels = tf.constant(np.r_[np.zeros(len(xs)), np.ones(len(xt))].astype(np.float32)[:, None])

    h, dh = settings["hidden"], settings["domain_hidden"]
    feature = [_init((2, h), rng), tf.Variable(np.zeros(h, np.float32))]
    label = [_init((h, 1), rng), tf.Variable(np.zeros(1, np.float32))]
    if dh:
        domain = [_init((h, dh), rng), tf.Variable(np.zeros(dh, np.float32)),
                  _init((dh, 1), rng), tf.Variable(np.zeros(1, np.float32))]
    else:
        domain = [_init((h, 1), rng), tf.Variable(np.zeros(1, np.float32))]
    adversarial = method == "dann"
    params = feature + label + (domain if adversarial else [])
    lam = tf.Variable(0.0)
    lr = tf.Variable(0.0)
    if settings["optimizer"] == "adam":
        optimizer = tf.keras.optimizers.Adam(learning_rate=lambda: lr)
    else:
        optimizer = None

    def features(x):
        return tf.sigmoid(x @ feature[0] + feature[1])

    def label_logits(f):
        return f @ label[0] + label[1]

    def domain_logits(f):
        if dh:
            return tf.nn.relu(f @ domain[0] + domain[1]) @ domain[2] + domain[3]
        return f @ domain[0] + domain[1]

    bce = tf.nn.sigmoid_cross_entropy_with_logits

    steps = settings["steps"]
    final_lam, mu0 = float(settings["lam"]), float(settings["learning_rate"])

    @tf.function
    def train():
        label_losses = tf.TensorArray(tf.float32, size=steps)
        domain_losses = tf.TensorArray(tf.float32, size=steps)
        for i in tf.range(steps):
            p = tf.cast(i, tf.float32) / steps
            lam.assign(final_lam * (2.0 / (1.0 + tf.exp(-10.0 * p)) - 1.0))   # lambda_schedule
            lr.assign(mu0 / (1.0 + 10.0 * p) ** 0.75)                         # learning_rate_schedule
            with tf.GradientTape() as tape:
                fs = features(xs_in)
                label_loss = tf.reduce_mean(bce(ys_f, label_logits(fs)))
                if adversarial:
                    both = tf.concat([fs, features(xt_in)], axis=0)
                    domain_loss = tf.reduce_mean(bce(domain_labels, domain_logits(gradient_reversal(both, lam))))
                else:
                    domain_loss = tf.constant(0.0)
                loss = label_loss + domain_loss
            grads = tape.gradient(loss, params)
            if optimizer is None:
                for var, grad in zip(params, grads):
                    var.assign_sub(lr * grad)
            else:
                optimizer.apply_gradients(zip(grads, params))
            label_losses = label_losses.write(i, label_loss)
            domain_losses = domain_losses.write(i, domain_loss)
        return label_losses.stack(), domain_losses.stack()

    # Each call traces a new training loop; after a few calls TensorFlow would
    # log a retracing warning (to stderr), so tracing happens out of its sight.
    with captured_tf_warnings():
        label_curve, domain_curve = (t.numpy() for t in train())
    history = [{"step": i, "label_loss": float(label_curve[i]),
                "domain_loss": float(domain_curve[i]) if adversarial else None,
                "lam": float(final_lam * lambda_schedule(i / steps))}
               for i in sorted(set(range(0, steps, 100)) | {steps - 1})]

    def accuracy(x, y):
        predicted = (label_logits(features(x)).numpy()[:, 0] > 0).astype(np.int32)
        return float(np.mean(predicted == y))

    result: Dict[str, Any] = {
        "method": method,
        "seed": seed,
        "source_accuracy": accuracy(xs_in, ys),
        "target_accuracy": accuracy(xt_in, yt),
        "domain_accuracy": None,
        "history": history,
        "source": (xs, ys),
        "target": (xt, yt),
        "settings": settings,
    }
    if adversarial:
        both = tf.concat([features(xs_in), features(xt_in)], axis=0)
        guess = (domain_logits(both).numpy()[:, 0] > 0).astype(np.float32)
        result["domain_accuracy"] = float(np.mean(guess == domain_labels.numpy()[:, 0]))
    if settings["grid"]:
        lo = np.minimum(xs.min(axis=0), xt.min(axis=0)) - 0.5
        hi = np.maximum(xs.max(axis=0), xt.max(axis=0)) + 0.5
        xx, yy = np.meshgrid(np.linspace(lo[0], hi[0], settings["grid"]), np.linspace(lo[1], hi[1], settings["grid"]))
        mesh = np.stack([xx.ravel(), yy.ravel()], axis=1).astype(np.float32) - centre
        probabilities = tf.sigmoid(label_logits(features(tf.constant(mesh)))).numpy().reshape(xx.shape)
        result["grid"] = (xx, yy, probabilities)
    return result
