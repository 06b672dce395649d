"""Small generated data sets for the book's experiments."""

from __future__ import annotations

from typing import Tuple

import numpy as np

from . import _validate
from ._validate import integer, real_number

__all__ = ["two_moons"]


def two_moons(n_per_class: int, noise: float, rotation_deg: float = 0.0, seed: int = 0) -> Tuple[np.ndarray, np.ndarray]:
    r"""Two interleaving half circles, optionally rotated about their centre.

    Class 0 lies on :math:`(\cos t, \sin t)`, class 1 on
    :math:`(1 - \cos t, \tfrac12 - \sin t)`, :math:`t \in [0, \pi]` uniform,
    plus Gaussian noise of standard deviation ``noise``; then every point is
    rotated by ``rotation_deg`` degrees (counter-clockwise) about the centre
    :math:`(\tfrac12, \tfrac14)` of the two moons.

    Reference: the inter-twinning moons of Ganin et al., *Domain-Adversarial
    Training of Neural Networks*, JMLR 2016, §5.1.1 (target domain = source
    rotated by 35°); the shape follows scikit-learn's ``make_moons``.

    Returns:
        ``(X, y)``: ``X`` float32 of shape ``(2 n, 2)``, ``y`` int32 labels in {0, 1},
        class 0 first.

    Raises:
        ValueError: ``n_per_class`` is not a positive integer, ``noise`` is not
            a non-negative number, ``rotation_deg`` is not a finite number, or
            ``seed`` is not a non-negative integer.
    """
    n_per_class = integer(n_per_class, "n_per_class", minimum=1)
    noise = real_number(noise, "noise", minimum=0)
    rotation_deg = real_number(rotation_deg, "rotation_deg")
    rng = np.random.default_rng(_validate.seed(seed))
    t0, t1 = rng.uniform(0, np.pi, n_per_class), rng.uniform(0, np.pi, n_per_class)
    upper = np.stack([np.cos(t0), np.sin(t0)], axis=1)
    lower = np.stack([1 - np.cos(t1), 0.5 - np.sin(t1)], axis=1)
    X = np.concatenate([upper, lower]) + rng.normal(0.0, noise, (2 * n_per_class, 2))
    angle = np.deg2rad(rotation_deg)
    rotation = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    centre = np.array([0.5, 0.25])
    X = (X - centre) @ rotation.T + centre
    y = np.repeat(np.array([0, 1], dtype=np.int32), n_per_class)
    return X.astype(np.float32), y
