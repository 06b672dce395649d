r"""Straight-through estimators: quantizers with a surrogate gradient.

Each quantizer is one small function; they share one private helper that
attaches a backward formula to a forward value with ``tf.custom_gradient``.
"""

from __future__ import annotations

import numbers
from typing import Callable, Dict, Optional

import tensorflow as tf

from ._validate import float_tensor, integer, real_number

__all__ = [
    "SIGN_SURROGATES",
    "dorefa_quantize",
    "dorefa_weights",
    "sign_with_surrogate",
    "ste_round",
    "ste_sign",
    "xnor_binarize",
]


def _with_derivative(x: tf.Tensor, forward: Callable[[tf.Tensor], tf.Tensor],
                     derivative: Optional[Callable[[tf.Tensor], tf.Tensor]] = None, *,
                     mask: Optional[Callable[[tf.Tensor], tf.Tensor]] = None) -> tf.Tensor:
    """``forward(x)`` going forward; ``dy * derivative(x)`` going backward.

    Where the derivative is 0 the gradient is 0 whatever ``dy`` is: a blocked
    position passes nothing, not ``inf * 0 = NaN`` (larq masks with
    ``tf.where`` for the same reason).  For a finite ``dy`` and a general
    ``derivative`` the product is returned as is, so its values (and, eagerly
    and in ``tf.function``, the sign of its zeros) do not change.

    Two common derivatives take fewer ops: ``derivative=None`` is the constant
    1 (``dy`` itself is returned, never blocked; a product ``dy * 1`` differed
    only where eager CPU kernels flush a subnormal ``dy`` to 0, which graphs
    and XLA did not), and ``mask`` is a boolean function whose derivative is
    1 where it holds and 0 elsewhere: ``dy`` itself passes where the mask
    holds, and exactly +0 elsewhere (larq's ``tf.where(mask, dy, 0)``; the
    product ``dy * 0`` would be -0 for a negative ``dy``, which no update can
    tell from +0, and XLA returns +0 for it anyway).  Outside XLA each op is a
    full pass over the tensor, so the count matters (``make bench`` times it).
    """
    if derivative is not None and mask is not None:
        raise TypeError("give `derivative` or `mask`, not both")

    def backward(inp, dy):
        if mask is not None:
            return tf.where(mask(inp), dy, tf.constant(0, dy.dtype))
        if derivative is not None:
            d = tf.cast(derivative(inp), dy.dtype)
            product = dy * d
            keep = tf.logical_or(tf.not_equal(d, 0), tf.math.is_finite(dy))
            return tf.where(keep, product, tf.constant(0, product.dtype))
        return dy

    @tf.custom_gradient
    def op(inp):
        return forward(inp), lambda dy: backward(inp, dy)

    return op(x)


def _sign_pm1(x: tf.Tensor) -> tf.Tensor:
    """Sign with two values: +1 for x >= 0, -1 otherwise; NaN stays NaN (never a silent -1).

    ``sign(sign(x) + 0.1)`` (larq's spelling): three elementwise ops and no
    ``tf.where``, which alone costs about as much as the three outside XLA.
    ``sign(x)`` is -1, ±0 or +1, so adding 0.1 moves only the zeros, to +1;
    NaN propagates (as a NaN of TensorFlow's choosing).  Where TensorFlow's
    CPU kernels treat a subnormal ``x`` as 0, ``sign(x)`` is 0 or tiny and
    the result +1, as ``x >= 0`` is True there too.
    """
    return tf.sign(tf.sign(x) + 0.1)


def ste_round(x):
    r"""Round to the nearest integer going forward; pass the gradient straight through.

    Forward: :math:`y = \operatorname{round}(x)` (ties to even, as ``tf.round``).

    Backward: :math:`\partial y / \partial x := 1`.

    Reference: Y. Bengio, N. Léonard, A. Courville, *Estimating or Propagating
    Gradients Through Stochastic Neurons for Conditional Computation*,
    arXiv:1308.3432, 2013.

    Raises:
        TypeError: ``x`` is not a floating tensor.
    """
    x = float_tensor(x, "x")
    return _with_derivative(x, tf.round)


def ste_sign(x, clip: Optional[float] = None):
    r"""Binarize to :math:`\{-1, +1\}` with a straight-through (optionally clipped) gradient.

    Forward:

    .. math:: y = \begin{cases} +1 & x \ge 0 \\ -1 & x < 0 \end{cases}

    Note ``sign(0) = +1`` (as in BinaryConnect): ``tf.sign(0) = 0`` would give
    a binary network a third value, and exactly-zero inputs are common (zero
    init, ReLU outputs).  A NaN input gives NaN, as ``tf.sign`` does.

    Backward:

    .. math:: \frac{\partial y}{\partial x} :=
              \begin{cases} 1 & \text{clip is None} \\
                            \mathbb{1}\{|x| \le \text{clip}\} & \text{otherwise (BinaryNet)} \end{cases}

    References: M. Courbariaux, Y. Bengio, J.-P. David, *BinaryConnect:
    Training Deep Neural Networks with binary weights during propagations*,
    NeurIPS 2015, arXiv:1511.00363 (binary weights with sign(0) = +1, the plain
    straight-through gradient); M. Courbariaux, I. Hubara, D. Soudry,
    R. El-Yaniv, Y. Bengio, *Binarized Neural Networks*, arXiv:1602.02830,
    2016 (the clipped straight-through estimator, "hard tanh").

    Raises:
        TypeError: ``x`` is not a floating tensor.
        ValueError: ``clip`` is not a positive finite number.
    """
    x = float_tensor(x, "x")
    if clip is None:
        return _with_derivative(x, _sign_pm1)
    limit = real_number(clip, "clip", positive=True)
    return _with_derivative(x, _sign_pm1, mask=lambda v: _clipped_mask(v, limit))


def _axes(axis, rank: int, name: str = "axis"):
    """``axis`` (None, an int or a sequence of ints) as a sorted tuple of non-negative axes."""
    if axis is None:
        return None
    items = [axis] if isinstance(axis, numbers.Integral) and not isinstance(axis, bool) else axis
    try:
        items = list(items)
    except TypeError:
        raise TypeError(f"`{name}` must be None, an int or a sequence of ints; got {axis!r}") from None
    out = []
    for item in items:
        if isinstance(item, bool) or not isinstance(item, numbers.Integral):
            raise TypeError(f"`{name}` must be None, an int or a sequence of ints; got {axis!r}")
        if not -rank <= int(item) < rank:
            raise ValueError(f"`{name}` {int(item)} is out of range for a tensor of rank {rank}")
        out.append(int(item) % rank)
    if len(set(out)) != len(out):
        raise ValueError(f"`{name}` names an axis twice: {axis!r}")
    return tuple(sorted(out))


def xnor_binarize(x, axis=None):
    r"""XNOR-Net weight binarization: sign times the mean absolute value, identity gradient.

    Forward: :math:`y = \operatorname{sign}(x)\, E` with
    :math:`\operatorname{sign}(0) = +1` and :math:`E` the mean of :math:`|x|`:

    * ``axis=None`` (the default): one scale for the whole tensor,
      :math:`E = \frac{1}{n}\sum_i |x_i|`;
    * ``axis`` an int or a tuple of ints: the mean over those axes, kept
      for broadcasting, so there is one scale per remaining index.  For a
      dense kernel of shape ``(inputs, filters)``, ``axis=0`` gives one
      scale per output filter, :math:`\alpha_f = \frac{1}{n}\sum_i |W_{if}|`,
      as in the paper; for a ``(h, w, in, out)`` convolution kernel use
      ``axis=(0, 1, 2)``.

    Backward: :math:`\partial L/\partial x := \partial L/\partial y`, the
    upstream gradient unchanged: not scaled by :math:`E`, not clipped, with
    no term through :math:`E`.  This is exactly the straight-through
    gradient of :math:`\operatorname{sign}(x/E)\,E` with :math:`E` stopped
    (the third version of chapter 3).  Other choices exist and are not what
    this function does: straight through :math:`\operatorname{sign}` with
    :math:`E` stopped gives :math:`E\,\partial L/\partial y`; larq's
    ``MagnitudeAwareSign`` (Bi-Real Net's scaled sign, one scale per output
    channel) gives :math:`E\,\mathbb{1}\{|x| \le 1\}\,\partial L/\partial y`;
    the paper (§3.1) keeps a clip and a term through the scale,
    :math:`\partial L/\partial \tilde W_i\,(1/n + \alpha\,\mathbb{1}\{|W_i| \le 1\})`,
    which the authors' Torch code (allenai/XNOR-Net, ``updateBinaryGradWeight``)
    implements per output filter with the clip :math:`|W_i| < 1`, times a
    constant factor; a widely used
    PyTorch port (jiecaoyu/XNOR-Net-PyTorch) keeps the full product-rule sum
    through the scale instead of its diagonal :math:`1/n` term.

    Reference: M. Rastegari, V. Ordonez, J. Redmon, A. Farhadi, *XNOR-Net:
    ImageNet Classification Using Binary Convolutional Neural Networks*,
    ECCV 2016, arXiv:1603.05279, §3.1.

    Raises:
        TypeError: ``x`` is not a floating tensor, or ``axis`` is not None,
            an int or a sequence of ints.
        ValueError: an ``axis`` outside the rank of ``x``, or one named twice.
    """
    x = float_tensor(x, "x")
    if axis is not None and x.shape.rank is None:
        raise ValueError("`axis` needs a tensor of known rank")
    axes = _axes(axis, x.shape.rank if x.shape.rank is not None else 0)

    def forward(v):
        scale = tf.reduce_mean(tf.abs(v), axis=axes, keepdims=axes is not None)
        return _sign_pm1(v) * scale

    return _with_derivative(x, forward)


def dorefa_quantize(x, bits: int):
    r"""DoReFa-Net k-bit quantization of values in :math:`[0, 1]`.

    Forward, with :math:`n = 2^{k} - 1` levels above zero:

    .. math:: y = \frac{\operatorname{round}(n \cdot \operatorname{clip}(x, 0, 1))}{n}

    Backward: :math:`\partial y/\partial x := \mathbb{1}\{0 \le x \le 1\}`
    (straight through inside the range, zero where the clip is active).  In
    the paper the straight-through estimator of :math:`q_k` is the pure
    identity and the clip to :math:`[0, 1]` belongs to the activation before
    it; this function merges the two (as larq's ``DoReFa`` does).

    Reference: S. Zhou, Y. Wu, Z. Ni, X. Zhou, H. Wen, Y. Zou, *DoReFa-Net:
    Training Low Bitwidth Convolutional Neural Networks with Low Bitwidth
    Gradients*, arXiv:1606.06160, 2016.

    Raises:
        TypeError: ``x`` is not a floating tensor.
        ValueError: ``bits`` is not a positive integer.
    """
    x = float_tensor(x, "x")
    levels = float(2 ** integer(bits, "bits") - 1)
    return _with_derivative(x, lambda v: tf.round(tf.clip_by_value(v, 0.0, 1.0) * levels) / levels,
                            mask=lambda v: (v >= 0) & (v <= 1))


def dorefa_weights(x, bits: int = 2):
    r"""DoReFa-Net k-bit weight quantization: :math:`2^k` levels in :math:`[-1, 1]`.

    Forward, with :math:`q_k(u) = \operatorname{round}((2^k - 1)\,u) / (2^k - 1)`:

    .. math:: y = 2\, q_k\!\left(\frac{\tanh x}{2 \max_j |\tanh x_j|} + \frac12\right) - 1

    (one maximum over the whole tensor; an all-zero tensor gives
    :math:`q_k(1/2)`, with no division by zero).

    Backward: straight through :math:`q_k` only (:func:`dorefa_quantize`,
    whose derivative is 1 on :math:`[0, 1]`, where :math:`u` lies); the normalisation by
    :math:`\tanh` and by the maximum is differentiated as written, so the
    element holding the maximum also receives a term through it.  An
    all-zero ``x`` has a zero gradient (``divide_no_nan`` sends no gradient
    through the division by a zero maximum): a layer whose kernel starts at
    zero never moves under this quantizer, so initialise it otherwise.  The
    formula is the paper's for :math:`k \ge 2`; it runs for :math:`k = 1`
    too (values :math:`\pm 1`, and :math:`-1` at :math:`x = 0`, since
    ``tf.round`` takes :math:`1/2` to 0), but for 1-bit weights the paper uses
    :math:`\operatorname{sign}(x)\,E(|x|)`, which is :func:`xnor_binarize`.

    Reference: S. Zhou, Y. Wu, Z. Ni, X. Zhou, H. Wen, Y. Zou, *DoReFa-Net*,
    arXiv:1606.06160, 2016, §2.3, eq. (9).

    Raises:
        TypeError: ``x`` is not a floating tensor.
        ValueError: ``bits`` is not a positive integer.
    """
    x = float_tensor(x, "x")
    bits = integer(bits, "bits")
    t = tf.tanh(x)
    # u lies in [0, 1], where dorefa_quantize is q_k with the straight-through derivative 1
    u = tf.math.divide_no_nan(t, 2.0 * tf.reduce_max(tf.abs(t))) + 0.5
    return 2.0 * dorefa_quantize(u, bits) - 1.0


# -- surrogate gradients for sign --------------------------------------------

def _approx_sign(x, **_):
    a = tf.abs(x)
    return tf.where(a <= 1, 2 - 2 * a, tf.constant(0, x.dtype))


def _swish_sign(x, beta=5.0, **_):
    # Where |beta x| > 80 the derivative is negligible, |d| < 2.9e-33 * beta
    # (1.4e-32 for beta = 5; still representable in float32), and is set to 0:
    # the formula itself would give inf/inf = NaN once beta x overflows.
    bx = beta * x
    zero = tf.constant(0, bx.dtype)
    far = tf.abs(bx) > 80
    safe = tf.where(far, zero, bx)
    value = beta * (2 - safe * tf.tanh(safe / 2)) / (1 + tf.cosh(safe))
    return tf.where(far, zero, value)


def _identity_surrogate(x, **_):
    return tf.ones_like(x)


def _clipped_mask(x, clip=1.0):
    """``|x| <= clip`` as two comparisons (cheaper than abs and one; False for NaN either way)."""
    return tf.logical_and(x <= clip, x >= -clip)


def _clipped_surrogate(x, clip=1.0, **_):
    return tf.cast(_clipped_mask(x, clip), x.dtype)


SIGN_SURROGATES: Dict[str, Callable] = {
    # name: derivative used in the backward pass of sign
    "identity": _identity_surrogate,
    "clipped": _clipped_surrogate,
    "approx_sign": _approx_sign,
    "swish_sign": _swish_sign,
    "tanh": lambda x, **_: 1 - tf.tanh(x) ** 2,
}


def sign_with_surrogate(x, surrogate: str = "identity", *, clip: float = 1.0, beta: float = 5.0):
    r"""Sign in :math:`\{-1, +1\}` going forward, one of several surrogate derivatives going back.

    Backward :math:`\partial y/\partial x :=`

    * ``"identity"``: :math:`1` (plain straight-through estimator);
    * ``"clipped"``: :math:`\mathbb{1}\{|x| \le \text{clip}\}` (BinaryNet);
    * ``"approx_sign"``: :math:`\max(0,\, 2 - 2|x|)`, the derivative of a
      piecewise quadratic (Bi-Real Net: Z. Liu et al., ECCV 2018, arXiv:1808.00278);
    * ``"swish_sign"``: :math:`\frac{\beta\,(2 - \beta x \tanh(\beta x/2))}{1 + \cosh(\beta x)}`,
      the derivative of :math:`2\sigma(\beta x)(1 + \beta x(1 - \sigma(\beta x))) - 1`
      (BNN+: S. Darabi et al., arXiv:1812.11800, 2018);
    * ``"tanh"``: :math:`1 - \tanh^2(x)`.

    Reference: larq's quantizers (``larq.quantizers``) collect the same family.

    Raises:
        TypeError: ``x`` is not a floating tensor.
        ValueError: unknown ``surrogate``, or ``clip``/``beta`` not a positive finite number.
    """
    x = float_tensor(x, "x")
    if not isinstance(surrogate, str) or surrogate not in SIGN_SURROGATES:
        raise ValueError(f"`surrogate` must be one of {sorted(SIGN_SURROGATES)}; got {surrogate!r}")
    params = {"clip": real_number(clip, "clip", positive=True), "beta": real_number(beta, "beta", positive=True)}
    derivative = SIGN_SURROGATES[surrogate]
    # the two 0/1 derivatives take the shorter backward pass of _with_derivative (same values)
    if derivative is _identity_surrogate:
        return _with_derivative(x, _sign_pm1)
    if derivative is _clipped_surrogate:
        return _with_derivative(x, _sign_pm1, mask=lambda v: _clipped_mask(v, params["clip"]))
    return _with_derivative(x, _sign_pm1, lambda v: derivative(v, **params))
