r"""Keras 3 pieces for gradlib's ops: a quantized dense layer and a gradient-reversal schedule.

* :class:`Quantizer` names a gradlib quantizer and its parameters, so that a
  layer holding it saves and loads (``model.save("m.keras")``);
* :class:`QuantizedDense` keeps latent float weights in ``self.kernel`` and
  multiplies by their quantized value (quantization-aware training);
* :class:`ReversalSchedule` is a callback that moves a
  :class:`~gradlib.GradientReversal` layer's :math:`\lambda` along DANN's
  schedule during ``fit``, without retracing the compiled train step.

The ops themselves live in :mod:`gradlib.ste` and :mod:`gradlib.reversal`;
these classes only call them.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Dict, Optional, Union

import keras
import numpy as np
import tensorflow as tf

from ._validate import callable_arg, float_tensor, integer
from .dann import lambda_schedule
from .reversal import GradientReversal
from .ste import dorefa_weights, ste_round, ste_sign, sign_with_surrogate, xnor_binarize

__all__ = ["QUANTIZERS", "Quantizer", "QuantizedDense", "ReversalSchedule"]

#: The quantizers a :class:`Quantizer` (and a layer's ``*_quantizer`` string) may name.
QUANTIZERS: Dict[str, Callable] = {
    "ste_sign": ste_sign,
    "ste_round": ste_round,
    "xnor_binarize": xnor_binarize,
    "dorefa_weights": dorefa_weights,
    "sign_with_surrogate": sign_with_surrogate,
}


@keras.saving.register_keras_serializable(package="gradlib")
class Quantizer:
    r"""One of gradlib's quantizers with its parameters: ``Quantizer("ste_sign", clip=1.0)(x)``.

    A callable that Keras can serialise (``get_config``/``from_config``), so a
    layer that holds it survives ``model.save("m.keras")`` and
    ``keras.models.load_model``; a lambda or a ``functools.partial`` would not.
    Forward and backward are those of the named op (:data:`QUANTIZERS`).

    Raises:
        ValueError: ``name`` is not in :data:`QUANTIZERS`.
        TypeError, ValueError: a parameter the op refuses (tried once, at
            construction, on a small tensor).
    """

    def __init__(self, name: str, **params: Any):
        if not isinstance(name, str) or name not in QUANTIZERS:
            raise ValueError(f"unknown quantizer {name!r}; gradlib's quantizers are {sorted(QUANTIZERS)}, "
                             "or pass any callable of one tensor")
        self.name, self.params = name, dict(params)
        # A bad parameter fails here, by name.  The probe has rank 5, so that every axis of a dense
        # (rank 2) or a convolution kernel, up to Conv3D's rank 5, is accepted (xnor_binarize's axis).
        try:
            QUANTIZERS[name](tf.reshape(tf.range(-16.0, 16.0), [2, 2, 2, 2, 2]), **self.params)
        except (TypeError, ValueError) as err:
            raise type(err)(f"Quantizer({name!r}, ...): {err} (checked on a kernel of rank 5, the largest "
                            "a Keras layer has)") from None

    def __call__(self, x):
        return QUANTIZERS[self.name](x, **self.params)

    def __repr__(self) -> str:
        args = "".join(f", {k}={v!r}" for k, v in self.params.items())
        return f"Quantizer({self.name!r}{args})"

    def __eq__(self, other):
        return isinstance(other, Quantizer) and (self.name, self.params) == (other.name, other.params)

    __hash__ = None

    def get_config(self) -> Dict[str, Any]:
        return {"name": self.name, **self.params}

    @classmethod
    def from_config(cls, config: Dict[str, Any]) -> "Quantizer":
        config = dict(config)
        return cls(config.pop("name"), **config)


def _quantizer(spec: Union[None, str, Callable], what: str) -> Optional[Callable]:
    """A layer's ``*_quantizer`` argument as a callable (None stays None)."""
    if spec is None or isinstance(spec, Quantizer):
        return spec
    if isinstance(spec, str):
        return Quantizer(spec)
    if isinstance(spec, dict):  # from a saved config
        return keras.saving.deserialize_keras_object(spec)
    if not callable(spec):
        raise TypeError(f"`{what}` must be None, the name of a gradlib quantizer ({sorted(QUANTIZERS)}), "
                        f"a gradlib.Quantizer or a callable of one tensor; got {type(spec).__name__}")
    return spec


def _quantizer_config(fn: Optional[Callable], what: str):
    if fn is None or isinstance(fn, Quantizer):
        return None if fn is None else keras.saving.serialize_keras_object(fn)
    name = keras.saving.get_registered_name(fn)
    if keras.saving.get_registered_object(name) is not fn:
        raise TypeError(
            f"`{what}` {getattr(fn, '__qualname__', type(fn).__name__)} cannot be saved: Keras saves a "
            "callable by its registered name. Use "
            "gradlib.Quantizer(name, **params), or decorate your function with "
            "@keras.saving.register_keras_serializable(package=...)")
    return keras.saving.serialize_keras_object(fn)


@keras.saving.register_keras_serializable(package="gradlib")
class QuantizedDense(keras.layers.Dense):
    r"""A dense layer whose kernel (and optionally inputs) are quantized going forward.

    Forward, with :math:`W` the latent float kernel (``self.kernel``), :math:`q_W`
    the kernel quantizer and :math:`q_a` the activation quantizer (the identity
    when ``None``):

    .. math:: y = \phi\big(q_a(x)\, q_W(W) + b\big)

    Backward: the quantizers' surrogate gradients, so :math:`\partial L/\partial W`
    is the straight-through estimate of the gradient at :math:`q_W(W)` (for
    ``"ste_sign"``, :math:`\partial L/\partial W = x^\top \partial L/\partial y`
    exactly as for the float layer evaluated at :math:`\operatorname{sign}(W)`).
    The optimizer updates the latent :math:`W`; only its quantized value is
    ever used in a product.

    ``kernel_quantizer`` and ``activation_quantizer`` take the name of a gradlib
    quantizer (:data:`QUANTIZERS`, called with its defaults), a
    :class:`Quantizer` (a name with parameters), or any callable of one tensor
    (saved only if registered with Keras).  ``activation_quantizer`` quantizes
    the layer's *inputs*, the previous layer's activations (larq calls it
    ``input_quantizer``).  Every other keyword goes to ``keras.layers.Dense``.

    Under a mixed-precision policy the quantizers see the kernel already cast
    to the compute dtype (``float16`` under ``mixed_float16``), so their
    backward pass runs in that dtype; the latent kernel stays ``float32``.

    Reference: M. Courbariaux, Y. Bengio, J.-P. David, *BinaryConnect*,
    NeurIPS 2015, arXiv:1511.00363 (latent float weights, binary in the
    forward pass); larq's ``QuantDense`` (larq.dev) for the interface.

    Raises:
        TypeError: a quantizer that is neither a name, a :class:`Quantizer`
            nor a callable; at save time, an unregistered callable.
        ValueError: an unknown quantizer name.
    """

    def __init__(self, units, kernel_quantizer="ste_sign", activation_quantizer=None, use_bias=True,
                 **dense_kwargs):
        super().__init__(integer(units, "units"), use_bias=use_bias, **dense_kwargs)
        self.kernel_quantizer = _quantizer(kernel_quantizer, "kernel_quantizer")
        self.activation_quantizer = _quantizer(activation_quantizer, "activation_quantizer")

    def call(self, inputs, training=None):
        x = tf.convert_to_tensor(inputs)
        if x.dtype.is_integer:  # as keras.layers.Dense does: integers become the compute dtype
            x = tf.cast(x, self.compute_dtype)
        x = float_tensor(x, "inputs")
        if self.activation_quantizer is not None:
            x = self.activation_quantizer(x)
        kernel = tf.convert_to_tensor(self.kernel)  # the autocast read: float16 under mixed_float16
        if self.kernel_quantizer is not None:
            kernel = self.kernel_quantizer(kernel)
        y = tf.matmul(x, kernel) if x.shape.rank == 2 else tf.tensordot(x, kernel, axes=[[-1], [0]])
        if self.bias is not None:
            y = y + tf.convert_to_tensor(self.bias)
        if self.activation is not None:
            y = self.activation(y)
        return y

    def quantized_kernel(self) -> tf.Tensor:
        """The kernel as the forward pass uses it: ``kernel_quantizer(self.kernel)``."""
        kernel = tf.convert_to_tensor(self.kernel)
        return kernel if self.kernel_quantizer is None else self.kernel_quantizer(kernel)

    def get_config(self) -> Dict[str, Any]:
        config = super().get_config()
        config["kernel_quantizer"] = _quantizer_config(self.kernel_quantizer, "kernel_quantizer")
        config["activation_quantizer"] = _quantizer_config(self.activation_quantizer, "activation_quantizer")
        return config


class ReversalSchedule(keras.callbacks.Callback):
    r"""Set a :class:`~gradlib.GradientReversal` layer's :math:`\lambda` at every training batch.

    Before training batch :math:`t` (counted from 0 over every epoch and every
    ``fit`` call since the callback was made) it assigns

    .. math:: \lambda \leftarrow \texttt{schedule}(\min(t / T, 1)), \qquad T = \texttt{total\_steps},

    by default DANN's :math:`\lambda_p = 2/(1 + e^{-10 p}) - 1`
    (:func:`gradlib.dann.lambda_schedule`).  :math:`\lambda` is the layer's
    non-trainable variable, so the compiled train step reads the new value
    without being retraced.  With ``steps_per_execution = k`` Keras calls the
    callback once per :math:`k` batches, and :math:`\lambda` is set at the first
    batch of each group.

    Reference: Y. Ganin et al., *Domain-Adversarial Training of Neural
    Networks*, JMLR 17(59), 2016, §5.2.2.

    Raises:
        TypeError: ``layer`` is not a :class:`~gradlib.GradientReversal`, or
            ``schedule`` is not callable.
        ValueError: ``total_steps`` is not a positive integer; during
            training, ``schedule`` returns something that is not one finite
            real number.
    """

    def __init__(self, layer, total_steps: int, schedule: Callable = lambda_schedule):
        super().__init__()
        if not isinstance(layer, GradientReversal):
            raise TypeError(f"`layer` must be a gradlib.GradientReversal layer (it holds the variable `lam`); "
                            f"got {type(layer).__name__}")
        self.layer = layer
        self.total_steps = integer(total_steps, "total_steps")
        self.schedule = callable_arg(schedule, "schedule")
        self.step = 0          # batches seen so far, over epochs and fit calls
        self._epoch_start = 0  # self.step when the current epoch began
        self._begin = 0        # the batch index the current group of batches began at
        self.history: list = []  # (step, lambda) for every assignment

    def lam_at(self, step: int) -> float:
        """The value the schedule gives at training step ``step``."""
        p = min(step / self.total_steps, 1.0)
        value = self.schedule(p)
        try:
            number = float(np.asarray(value).item())
        except (TypeError, ValueError):
            raise ValueError(f"`schedule` must return one real number; at p={p} it returned {value!r}") from None
        if not math.isfinite(number):
            raise ValueError(f"`schedule` returned {number} at p={p}: lambda must be finite")
        return number

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch_start = self.step

    def on_train_batch_begin(self, batch, logs=None):
        self._begin = int(batch)
        step = self._epoch_start + self._begin
        lam = self.lam_at(step)
        self.layer.lam.assign(lam)
        self.history.append((step, lam))

    def on_train_batch_end(self, batch, logs=None):
        # Keras 3.15 passes the last batch of a group of steps_per_execution batches, Keras 3.8
        # the first: either way the group ends steps_per_execution batches after it began,
        # or at the end of the epoch.
        per_execution = int(getattr(self.model, "steps_per_execution", 1) or 1)
        end = max(int(batch) + 1, self._begin + per_execution)
        steps = (self.params or {}).get("steps")
        if steps:
            end = min(end, int(steps))
        self.step = self._epoch_start + end
