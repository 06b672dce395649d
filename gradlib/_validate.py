"""Argument checks shared by the public ops (private).

Every public function validates its input here so that a wrong dtype or a
wrong parameter gives an error naming the argument, never a silent result.
"""

from __future__ import annotations

from typing import Any, Callable

import tensorflow as tf


def float_tensor(x: Any, name: str = "x") -> tf.Tensor:
    """Return ``x`` as a floating tensor or raise a TypeError naming ``name``.

    Variables are returned unchanged so that reading them is still recorded
    by a ``GradientTape``.
    """
    if isinstance(x, tf.Variable):
        dtype = x.dtype
    else:
        try:
            x = tf.convert_to_tensor(x)
        except (TypeError, ValueError) as err:
            raise TypeError(f"`{name}` must be a floating tensor; got {type(x).__name__}: {err}") from None
        dtype = x.dtype
    if not dtype.is_floating:
        raise TypeError(
            f"`{name}` has dtype {dtype.name}, but gradients flow only through "
            f"floating dtypes (float16/bfloat16/float32/float64); cast it first, "
            f"e.g. tf.cast({name}, tf.float32)."
        )
    return x


def callable_arg(fn: Any, name: str) -> Callable:
    if not callable(fn):
        raise TypeError(f"`{name}` must be callable; got {type(fn).__name__}")
    return fn


def same_shape(a: tf.Tensor, b: tf.Tensor, what_a: str, what_b: str) -> None:
    if a.shape.is_fully_defined() and b.shape.is_fully_defined() and a.shape != b.shape:
        raise ValueError(f"{what_a} has shape {a.shape.as_list()} but {what_b} has shape {b.shape.as_list()}; they must match")
