"""Shared test helpers for gradlib's ops (as larq's ``testing_utils``).

``value_and_grad`` is :func:`gradlib.value_and_grad` (tested on its own in
``tests/test_core_value_and_grad.py`` against ``tf.test.compute_gradient``);
``upstream_like`` is the non-uniform upstream gradient that catches an op
whose backward pass drops or misuses ``dy``.
"""

import numpy as np

from gradlib import value_and_grad

__all__ = ["upstream_like", "value_and_grad"]


def upstream_like(x, low: float = 0.5, high: float = 2.0) -> np.ndarray:
    """A non-uniform upstream gradient with the shape and dtype of ``x``: ``low`` .. ``high``, evenly spaced."""
    x = np.asarray(x)
    return np.linspace(low, high, x.size).reshape(x.shape).astype(x.dtype)
