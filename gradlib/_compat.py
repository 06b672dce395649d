"""TensorFlow import and version gate (private).

gradlib is tested with the TensorFlow releases from ``OLDEST`` (the oldest
Colab may still ship) to ``NEWEST`` (the one this book is built with).

* Older than ``OLDEST``: ``import gradlib`` fails at once with an ImportError
  naming the range, instead of failing later in an obscure way.
* Newer than ``NEWEST``: a :class:`UntestedTensorFlowWarning` naming both
  versions, and gradlib loads.  Colab upgrades TensorFlow without asking; a
  hard upper bound would break every chapter on that day.  The upper bound
  of what pip installs lives in the ``cpu``/``tf`` extras instead.
* An unreadable version string: the same warning (gradlib cannot tell).
"""

from __future__ import annotations

import re
import warnings

OLDEST, NEWEST = (2, 19), (2, 21)  # (major, minor) of the oldest and newest tested release


class UntestedTensorFlowWarning(UserWarning):
    """The installed TensorFlow is newer than (or not recognisable as) a release gradlib was tested with."""


def _text(version) -> str:
    return ".".join(map(str, version))


def _supported_text() -> str:
    return f"{_text(OLDEST)} to {_text(NEWEST)}"


def _installed(name: str) -> bool:
    from importlib import metadata

    try:
        metadata.version(name)
    except metadata.PackageNotFoundError:
        return False
    return True


def distribution() -> str:
    """The name TensorFlow is installed under: ``tensorflow`` (Colab's) or
    ``tensorflow-cpu``; pip must be told the same name, or it installs a
    second TensorFlow beside the first."""
    for name in ("tensorflow-cpu", "tensorflow"):
        if _installed(name):
            return name
    return "tensorflow"


def upgrade_advice() -> str:
    """The pip command(s) that install the newest tested TensorFlow in place of the installed one.

    On Windows, TensorFlow 2.11 to 2.18.0 (``tensorflow-cpu`` 2.10 to 2.18.0)
    came as a package holding only metadata plus ``tensorflow-intel``, which
    held the module; upgrading the first alone leaves the old module behind,
    so when ``tensorflow-intel`` is installed the advice removes all three
    first (pip skips a name that is not installed).
    """
    install = f'`pip install "{distribution()}=={_text(NEWEST)}.*"`'
    if _installed("tensorflow-intel"):
        return f"first `pip uninstall tensorflow tensorflow-cpu tensorflow-intel`, then {install}"
    return install


def check_version(version: str) -> None:
    """Check the TensorFlow ``version`` (e.g. ``"2.21.0"``) gradlib runs with.

    Raises:
        ImportError: ``version`` is older than the oldest tested release.

    Warns:
        UntestedTensorFlowWarning: ``version`` is newer than the newest tested
            release, or cannot be read.
    """
    match = re.match(r"(\d+)\.(\d+)", str(version))
    if match is None:
        warnings.warn(f"gradlib could not read the TensorFlow version {version!r}; it is tested with "
                      f"TensorFlow {_supported_text()}.", UntestedTensorFlowWarning, stacklevel=2)
        return
    found = (int(match[1]), int(match[2]))
    if found < OLDEST:
        raise ImportError(f"gradlib supports TensorFlow {_supported_text()}, but TensorFlow {version} is "
                          f"installed: upgrade it ({upgrade_advice()}).")
    if found > NEWEST:
        warnings.warn(f"gradlib is tested with TensorFlow up to {_text(NEWEST)}, but TensorFlow {version} is "
                      f"installed: it will probably work; if something breaks, install TensorFlow "
                      f"{_text(NEWEST)} ({upgrade_advice()}).",
                      UntestedTensorFlowWarning, stacklevel=2)


try:
    import tensorflow as tf
except ImportError as err:  # pragma: no cover - exercised only without TF
    raise ImportError(
        f"gradlib needs TensorFlow {_supported_text()}: `pip install \"tensorflow-cpu=={_text(NEWEST)}.*\"` "
        "(or use the TensorFlow that Colab already has)."
    ) from err

check_version(tf.__version__)
