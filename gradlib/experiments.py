r"""Quantized networks on scikit-learn's 8×8 digits, trained with and without STE.

A two-layer network without biases,

.. math:: \text{logits} = Q_a\bigl(x\, Q_w(W_1)\, s_1\bigr)\, Q_w(W_2)\, s_2,
          \qquad s_\ell = \sqrt{3 / \text{fan-in}_\ell},

where :math:`Q_w` quantizes the weights and :math:`Q_a` the hidden
activations.  The latent weights :math:`W_\ell` stay in floating point and
are trained by full-batch Adam on the softmax cross-entropy.  With
``ste=True`` every quantizer is a straight-through estimator from
:mod:`gradlib.ste`; with ``ste=False`` the *same* forward value is wrapped in
``tf.stop_gradient``, so that, as with a plain ``tf.round`` or ``tf.sign``,
no gradient reaches anything behind a quantizer.  The network has no biases
on purpose: every trainable parameter sits behind the weight quantizer, so
"no gradient" means "nothing is trained".

References: M. Courbariaux, Y. Bengio, J.-P. David, *BinaryConnect*,
NeurIPS 2015, arXiv:1511.00363 (binary weights, latent weights clipped to
:math:`[-1, 1]`); M. Courbariaux et al., *Binarized Neural Networks*,
arXiv:1602.02830, 2016 (binary activations too, clipped STE); S. Zhou et al.,
*DoReFa-Net*, arXiv:1606.06160, 2016 (k-bit weights and activations).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Tuple

import numpy as np
import tensorflow as tf

from . import _validate
from ._validate import callable_arg, flag, float_tensor, integer, real_number
from .book.progress import progress as _progress
from .ste import dorefa_quantize, dorefa_weights, ste_sign

__all__ = ["KINDS", "digits_experiment", "load_digits_split", "quantize_activations", "quantize_weights"]

KINDS = ("float", "binary", "kbit")


def _kind(value, name: str) -> str:
    if value not in KINDS:
        raise ValueError(f"`{name}` must be one of {KINDS}; got {value!r}")
    return value


def _quantizer_args(kind, x, name: str, bits, ste):
    return _kind(kind, "kind"), float_tensor(x, name), integer(bits, "bits"), flag(ste, "ste")


def quantize_weights(w, kind: str, bits: int = 2, ste: bool = True) -> tf.Tensor:
    r"""The weight quantizer :math:`Q_w` of :func:`digits_experiment`.

    * ``"float"``: :math:`Q_w(w) = w`.
    * ``"binary"``: :math:`\operatorname{sign}(w) \in \{-1, +1\}`, backward
      :math:`\mathbb{1}\{|w| \le 1\}` (:func:`gradlib.ste_sign` with ``clip=1``).  BinaryConnect
      and BinaryNet put no mask on the weights' gradient (BinaryNet masks only
      the activations').  With the latent weights clipped to :math:`[-1, 1]`
      after each step the mask never blocks, since it passes at :math:`|w| = 1`;
      only a strict :math:`|w| < 1` would act, on the weights sitting at
      :math:`\pm 1`.
    * ``"kbit"``: DoReFa's k-bit weights
      :math:`2\, q_k\!\left(\frac{\tanh w}{2 \max|\tanh w|} + \frac12\right) - 1`,
      (:func:`gradlib.dorefa_weights`, with :math:`q_k` = :func:`gradlib.dorefa_quantize`); values in :math:`[-1, 1]`.

    With ``ste=False`` the forward value is the same and the gradient is
    stopped (``None`` for ``w``).

    Raises:
        TypeError: ``w`` is not a floating tensor, or ``ste`` is not a bool.
        ValueError: an unknown ``kind``, or ``bits`` not a positive integer.
    """
    kind, w, bits, ste = _quantizer_args(kind, w, "w", bits, ste)
    if kind == "float":
        return tf.convert_to_tensor(w)
    if kind == "binary":
        q = ste_sign(w, clip=1.0)
    else:
        q = dorefa_weights(w, bits)
    return q if ste else tf.stop_gradient(q)


def quantize_activations(h, kind: str, bits: int = 2, ste: bool = True) -> tf.Tensor:
    r"""The activation :math:`Q_a` of :func:`digits_experiment` (it replaces the nonlinearity).

    * ``"float"``: :math:`\operatorname{relu}(h)`.
    * ``"binary"``: :math:`\operatorname{sign}(h) \in \{-1, +1\}`, backward
      :math:`\mathbb{1}\{|h| \le 1\}` (BinaryNet's hard-tanh STE).
    * ``"kbit"``: :func:`gradlib.dorefa_quantize` (clip to :math:`[0, 1]`, k bits),
      backward :math:`\mathbb{1}\{0 \le h \le 1\}`.

    With ``ste=False`` the forward value is the same and the gradient is stopped.

    Raises:
        TypeError: ``h`` is not a floating tensor, or ``ste`` is not a bool.
        ValueError: an unknown ``kind``, or ``bits`` not a positive integer.
    """
    kind, h, bits, ste = _quantizer_args(kind, h, "h", bits, ste)
    if kind == "float":
        return tf.nn.relu(h)
    q = ste_sign(h, clip=1.0) if kind == "binary" else dorefa_quantize(h, bits)
    return q if ste else tf.stop_gradient(q)


def load_digits_split(test_size: int = 597, split_seed: int = 0) -> Tuple[np.ndarray, ...]:
    """scikit-learn's 1797 digits (8×8 pixels in 0..16), scaled to [0, 1] and split once.

    Returns ``(x_train, y_train, x_test, y_test)``: float32 inputs of shape
    ``(n, 64)`` and int32 labels; the split is a fixed permutation
    (``split_seed``), the same for every configuration.

    Raises:
        ValueError: ``test_size`` not an integer from 1 to 1796, or
            ``split_seed`` not a non-negative integer.
    """
    test_size = integer(test_size, "test_size", minimum=1, maximum=1796)
    split_seed = _validate.seed(split_seed, "split_seed")
    from sklearn.datasets import load_digits  # gradlib's `experiments` extra; only this function needs it

    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int32)
    order = np.random.default_rng(split_seed).permutation(len(x))
    test, train = order[:test_size], order[test_size:]
    return x[train], y[train], x[test], y[test]


def digits_experiment(weights: str = "float", activations: str = "float", ste: bool = True, bits: int = 2,
                      epochs: int = 30, seed: int = 0, *, hidden: int = 64, steps_per_epoch: int = 10,
                      learning_rate: float = 0.01, progress: bool = True,
                      weight_quantizer: Optional[Callable[[tf.Tensor], tf.Tensor]] = None) -> Dict[str, Any]:
    r"""Train the 64 → ``hidden`` → 10 network of this module on the digits.

    Args:
        weights: ``"float"``, ``"binary"`` or ``"kbit"`` (:func:`quantize_weights`).
        activations: ``"float"`` (ReLU), ``"binary"`` or ``"kbit"`` (:func:`quantize_activations`).
        ste: straight-through gradients (True) or stopped ones (False).
        bits: k for the ``"kbit"`` quantizers.
        epochs: evaluations; each runs ``steps_per_epoch`` full-batch Adam
            steps inside one ``tf.function``.
        seed: seeds the initial weights (uniform in :math:`[-1, 1]`); the data
            split is fixed.
        progress: show :func:`gradlib.progress` over the epochs.
        weight_quantizer: a function ``q(w)`` used instead of
            ``quantize_weights(w, weights, bits, ste)`` for both weight
            matrices (to try another estimator); ``weights`` still decides
            whether the latent weights are clipped to :math:`[-1, 1]`.

    Returns:
        A dict with ``test_accuracy`` and ``train_accuracy`` (after training),
        ``initial_test_accuracy``, ``gradient_is_none`` (for ``W1`` and ``W2``
        at the start: what ``tape.gradient`` returned before any ``None`` was
        replaced by zeros for the optimizer), ``curves`` (``step``,
        ``test_accuracy``, ``train_loss``, one entry per epoch plus the start),
        ``latent_weights`` (the float ``W1`` and ``W2`` after training, as
        NumPy arrays), ``label`` and ``settings``.  Deterministic for a given seed.

    Raises:
        TypeError: ``ste`` or ``progress`` is not a bool.
        ValueError: an unknown kind, a count that is not a positive integer,
            a ``learning_rate`` that is not a positive number, or a ``seed``
            that is not a non-negative integer.
        TypeError: ``weight_quantizer`` is given and not callable.
    """
    weights, activations = _kind(weights, "weights"), _kind(activations, "activations")
    if weight_quantizer is not None:
        callable_arg(weight_quantizer, "weight_quantizer")
    bits, epochs, hidden, steps = (integer(v, n) for v, n in
                                   ((bits, "bits"), (epochs, "epochs"), (hidden, "hidden"),
                                    (steps_per_epoch, "steps_per_epoch")))
    learning_rate = real_number(learning_rate, "learning_rate", positive=True)
    ste, progress, seed = flag(ste, "ste"), flag(progress, "progress"), _validate.seed(seed)
    x_train, y_train, x_test, y_test = (tf.constant(a) for a in load_digits_split())
    rng = np.random.default_rng(seed)
    w1 = tf.Variable(rng.uniform(-1, 1, (64, hidden)).astype(np.float32))
    w2 = tf.Variable(rng.uniform(-1, 1, (hidden, 10)).astype(np.float32))
    params = [w1, w2]
    s1, s2 = np.float32(np.sqrt(3.0 / 64)), np.float32(np.sqrt(3.0 / hidden))

    def q_w(w):
        return quantize_weights(w, weights, bits, ste) if weight_quantizer is None else weight_quantizer(w)

    def logits(x):
        h = x @ q_w(w1) * s1
        return quantize_activations(h, activations, bits, ste) @ q_w(w2) * s2

    def loss_fn():
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(y_train, logits(x_train)))

    def accuracy(x, y):
        return float(np.mean(np.argmax(logits(x).numpy(), axis=1) == y.numpy()))

    with tf.GradientTape() as tape:
        start_loss = loss_fn()
    gradient_is_none = dict(zip(("W1", "W2"), (g is None for g in tape.gradient(start_loss, params))))

    optimizer = tf.keras.optimizers.Adam(learning_rate=learning_rate)
    clip_latent = weights == "binary"

    @tf.function
    def train_epoch():
        loss = tf.constant(0.0)
        for _ in tf.range(steps):
            with tf.GradientTape() as tape:
                loss = loss_fn()
            grads = tape.gradient(loss, params, unconnected_gradients=tf.UnconnectedGradients.ZERO)
            optimizer.apply_gradients(zip(grads, params))
            if clip_latent:  # BinaryConnect (and BinaryNet) keep the latent weights in [-1, 1]
                for v in params:
                    v.assign(tf.clip_by_value(v, -1.0, 1.0))
        return loss

    label = f"weights={weights}, activations={activations}, ste={ste}"
    if "kbit" in (weights, activations):
        label += f", bits={bits}"
    if weight_quantizer is not None:
        label += f", weight_quantizer={getattr(weight_quantizer, '__name__', 'custom')}"
    curves = {"step": [0], "test_accuracy": [accuracy(x_test, y_test)], "train_loss": [float(start_loss)]}
    epoch_range = _progress(range(epochs), total=epochs, desc=label) if progress else range(epochs)
    for epoch in epoch_range:
        curves["train_loss"].append(float(train_epoch()))  # the loss before the epoch's last step
        curves["step"].append((epoch + 1) * steps)
        curves["test_accuracy"].append(accuracy(x_test, y_test))
    return {
        "label": label,
        "test_accuracy": curves["test_accuracy"][-1],
        "train_accuracy": accuracy(x_train, y_train),
        "initial_test_accuracy": curves["test_accuracy"][0],
        "gradient_is_none": gradient_is_none,
        "curves": curves,
        "latent_weights": (w1.numpy(), w2.numpy()),
        "settings": {"weights": weights, "activations": activations, "ste": ste, "bits": bits, "epochs": epochs,
                     "seed": seed, "hidden": hidden, "steps_per_epoch": steps, "learning_rate": learning_rate,
                     "weight_quantizer": weight_quantizer},
    }
