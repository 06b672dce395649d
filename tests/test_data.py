"""two_moons: shape, reproducibility and the rotation used by the DANN experiment."""

import numpy as np
import pytest

from gradlib.data import two_moons


def test_shapes_labels_and_dtypes():
    X, y = two_moons(150, 0.1, seed=3)
    assert X.shape == (300, 2) and X.dtype == np.float32
    assert y.dtype == np.int32 and (y[:150] == 0).all() and (y[150:] == 1).all()


def test_noise_free_points_lie_on_the_moons():
    X, y = two_moons(50, 0.0)
    upper, lower = X[y == 0], X[y == 1]
    np.testing.assert_allclose(np.hypot(*upper.T), 1.0, atol=1e-6)
    np.testing.assert_allclose(np.hypot(lower[:, 0] - 1, lower[:, 1] - 0.5), 1.0, atol=1e-6)
    assert (upper[:, 1] >= -1e-7).all() and (lower[:, 1] <= 0.5 + 1e-7).all()


def test_seed_reproducibility():
    a, b, c = two_moons(20, 0.1, seed=1), two_moons(20, 0.1, seed=1), two_moons(20, 0.1, seed=2)
    np.testing.assert_array_equal(a[0], b[0])
    assert not np.allclose(a[0], c[0])


def test_rotation_is_a_rigid_motion_about_the_centre():
    X0, _ = two_moons(100, 0.05, seed=0)
    X35, _ = two_moons(100, 0.05, rotation_deg=35.0, seed=0)
    centre = np.array([0.5, 0.25])
    np.testing.assert_allclose(np.linalg.norm(X35 - centre, axis=1), np.linalg.norm(X0 - centre, axis=1), atol=1e-5)
    angle = np.deg2rad(35.0)
    expected = (X0 - centre) @ np.array([[np.cos(angle), np.sin(angle)], [-np.sin(angle), np.cos(angle)]]) + centre
    np.testing.assert_allclose(X35, expected, atol=1e-5)


@pytest.mark.parametrize("n, noise, name", [(0, 0.1, "n_per_class"), (2.5, 0.1, "n_per_class"),
                                            (True, 0.1, "n_per_class"), (10, -0.1, "noise")])
def test_bad_input(n, noise, name):
    with pytest.raises(ValueError, match=name):
        two_moons(n, noise)
