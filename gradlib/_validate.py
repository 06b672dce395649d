"""Argument checks shared by the public ops (private).

Every public function validates its input here so that a wrong dtype or a
wrong parameter gives an error naming the argument, never a silent result.
"""

from __future__ import annotations

import math
import numbers
from typing import Any, Callable, Optional

import numpy as np
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
            f"`{name}` has dtype {dtype.name}, but gradlib's ops need a floating dtype "
            f"(float16/bfloat16/float32/float64; TensorFlow sends no gradient through integer "
            f"tensors); cast it first, e.g. tf.cast({name}, tf.float32)."
        )
    return x


def callable_arg(fn: Any, name: str) -> Callable:
    if not callable(fn):
        raise TypeError(f"`{name}` must be callable; got {type(fn).__name__}")
    return fn


def same_shape(a: tf.Tensor, b: tf.Tensor, what_a: str, what_b: str) -> None:
    if a.shape.is_fully_defined() and b.shape.is_fully_defined() and a.shape != b.shape:
        raise ValueError(f"{what_a} has shape {a.shape.as_list()} but {what_b} has shape {b.shape.as_list()}; they must match")


def real_number(value: Any, name: str, *, minimum: Optional[float] = None, positive: bool = False,
                type_error: bool = False) -> float:
    """Return ``value`` as a finite float or raise a ValueError naming ``name``.

    Bools are refused (``True`` is an int in Python, never a meant number);
    NaN and ±inf are refused; ``positive`` asks for ``> 0``, ``minimum`` for
    ``>= minimum``.  With ``type_error=True`` a value that is not a real
    number at all (a string, None, a bool) raises a TypeError instead.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        kind = "a bool, not a number: " if isinstance(value, (bool, np.bool_)) else ""
        if type_error:
            raise TypeError(f"`{name}` must be a real number; got {kind}{type(value).__name__} {value!r}")
        raise ValueError(f"`{name}` must be a finite real number; got {kind}{value!r}")
    if not math.isfinite(value):
        raise ValueError(f"`{name}` must be a finite real number; got {value!r}")
    if positive and not value > 0:
        raise ValueError(f"`{name}` must be a positive number; got {value!r}")
    if minimum is not None and not value >= minimum:
        wanted = "a non-negative number" if minimum == 0 else f"a number >= {minimum:g}"
        raise ValueError(f"`{name}` must be {wanted}; got {value!r}")
    return float(value)


def integer(value: Any, name: str, *, minimum: int = 1, maximum: Optional[int] = None) -> int:
    """Return ``value`` as an int in ``[minimum, maximum]`` or raise a ValueError naming ``name``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral) or value < minimum or (
            maximum is not None and value > maximum):
        wanted = {0: "a non-negative integer", 1: "a positive integer"}.get(minimum, f"an integer >= {minimum}")
        if maximum is not None:
            wanted = f"an integer from {minimum} to {maximum}"
        raise ValueError(f"`{name}` must be {wanted}; got {value!r}")
    return int(value)


def seed(value: Any, name: str = "seed") -> int:
    """A seed for ``numpy.random.default_rng``: a non-negative integer."""
    return integer(value, name, minimum=0)


def flag(value: Any, name: str) -> bool:
    """Return ``value`` if it is a bool, else raise a TypeError naming ``name``.

    A string such as ``"False"`` is truthy, so it is refused rather than read.
    """
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"`{name}` must be True or False; got {value!r}")
    return bool(value)
