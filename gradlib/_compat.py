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
* A ``tensorflow`` module installed by two packages (an upgrade laid over
  Windows' split ``tensorflow-intel``, say): the same warning, with the
  commands that reinstall it cleanly.
"""

from __future__ import annotations

import re
import warnings

OLDEST, NEWEST = (2, 19), (2, 21)  # (major, minor) of the oldest and newest tested release


class UntestedTensorFlowWarning(UserWarning):
    """The installed TensorFlow is newer than (or not recognisable as) a release gradlib was tested with,
    or mixes the files of two releases."""


def _text(version) -> str:
    return ".".join(map(str, version))


def _supported_text() -> str:
    return f"{_text(OLDEST)} to {_text(NEWEST)}"


# The packages that have installed the ``tensorflow`` module on some platform.
# ``tensorflow`` and ``tensorflow-cpu`` hold it themselves from 2.19 on; before,
# on Windows (``tensorflow`` 2.11 to 2.18.0, ``tensorflow-cpu`` 2.10 to 2.18.0),
# macOS on Apple silicon (``tensorflow`` 2.13 to 2.15) and Linux on ARM64
# (``tensorflow`` 2.10 to 2.15) they were small packages requiring the one that
# held it (``tensorflow-intel``, ``tensorflow-macos``, ``tensorflow-cpu-aws``);
# ``tensorflow-gpu`` ended with 2.10 (its later releases refuse to install).
MODULE_PACKAGES = ("tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tensorflow-intel", "tensorflow-macos",
                   "tensorflow-cpu-aws")


def _installed(name: str) -> bool:
    from importlib import metadata

    try:
        metadata.version(name)
    except metadata.PackageNotFoundError:
        return False
    return True


def module_owners() -> list:
    """The packages of :data:`MODULE_PACKAGES` that installed files of the ``tensorflow`` module.

    Two owners mean two releases' files mixed in one folder: pip lays the
    second over the first, and uninstalling either deletes files the other
    needs.
    """
    from importlib import metadata

    owners = []
    for name in MODULE_PACKAGES:
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        top_level = dist.read_text("top_level.txt")
        if top_level is not None:
            owns = "tensorflow" in top_level.split()
        else:
            owns = any(path.parts[:1] == ("tensorflow",) for path in dist.files or ())
        if owns:
            owners.append(name)
    return owners


def distribution() -> str:
    """The name TensorFlow is installed under: ``tensorflow`` (Colab's) or
    ``tensorflow-cpu``; pip must be told the same name, or it installs a
    second TensorFlow beside the first."""
    for name in ("tensorflow-cpu", "tensorflow"):
        if _installed(name):
            return name
    return "tensorflow"


def upgrade_advice() -> str:
    """The pip command(s) that put the newest tested TensorFlow in place of the installed one.

    Usually one ``pip install`` under the installed name.  When the module is
    held by another package than ``tensorflow``/``tensorflow-cpu`` (the split
    packages of :data:`MODULE_PACKAGES`, or ``tensorflow-gpu``), or by more than
    one, an install on top would mix two releases' files and leave a package
    whose removal deletes the new TensorFlow: every TensorFlow package is
    uninstalled first.  Either way, a running kernel keeps the TensorFlow it
    imported until it restarts.
    """
    install = f'`pip install "{distribution()}=={_text(NEWEST)}.*"`'
    owners = module_owners()
    if len(owners) > 1 or set(owners) - {"tensorflow", "tensorflow-cpu"}:
        installed = " ".join(name for name in MODULE_PACKAGES if _installed(name))
        install = f"first `pip uninstall -y {installed}`, then {install}"
    return f"{install}, then restart the kernel"


def check_version(version: str) -> None:
    """Check the TensorFlow ``version`` (e.g. ``"2.21.0"``) gradlib runs with.

    Raises:
        ImportError: ``version`` is older than the oldest tested release.

    Warns:
        UntestedTensorFlowWarning: ``version`` is newer than the newest tested
            release, or cannot be read, or the module was installed by more
            than one package (two releases' files mixed).
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
        return
    owners = module_owners()
    if len(owners) > 1:
        warnings.warn(f"TensorFlow {version} was installed over the files of another release: {', '.join(owners)} "
                      f"all installed the tensorflow module, so its folder mixes their files, and removing one "
                      f"package deletes files the other needs. Reinstall it ({upgrade_advice()}).",
                      UntestedTensorFlowWarning, stacklevel=2)


try:
    import tensorflow as tf
except ImportError as err:  # pragma: no cover - exercised only without TF
    raise ImportError(
        f"gradlib needs TensorFlow {_supported_text()}: `pip install \"tensorflow-cpu=={_text(NEWEST)}.*\"` "
        "(or use the TensorFlow that Colab already has)."
    ) from err

check_version(tf.__version__)
