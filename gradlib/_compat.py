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

import platform
import re
import sys
import warnings
from pathlib import Path
from typing import Optional

OLDEST, NEWEST = (2, 19), (2, 21)  # (major, minor) of the oldest and newest tested release


class UntestedTensorFlowWarning(UserWarning):
    """The installed TensorFlow is newer than (or not recognisable as) a release gradlib was tested with,
    or mixes the files of two releases."""


def _text(version) -> str:
    return ".".join(map(str, version))


def _supported_text() -> str:
    return f"{_text(OLDEST)} to {_text(NEWEST)}"


# The packages that install the ``tensorflow`` module, or a wrapper around the
# one that does.  ``tensorflow`` and ``tensorflow-cpu`` hold it themselves from
# 2.19 on.  Before, some releases were small wrappers requiring the package
# that held it: on Windows ``tensorflow`` 2.11 to 2.18.0 and ``tensorflow-cpu``
# 2.10 to 2.18.0 (``tensorflow-intel``), on macOS on Apple silicon
# ``tensorflow`` 2.13.0 to 2.15.0 (``tensorflow-macos``, whose own 2.16
# releases are wrappers the other way round), on Linux on ARM64 ``tensorflow``
# 2.10 to 2.15.1 (``tensorflow-cpu-aws``).  ``tensorflow-gpu`` ended with 2.10;
# nightly, Intel-optimised, ROCm and Linaro's ARM64 builds are packages of their own.
MODULE_PACKAGES = ("tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tensorflow-intel", "tensorflow-macos",
                   "tensorflow-cpu-aws", "tensorflow-aarch64", "tf-nightly", "tf-nightly-cpu", "tf-nightly-gpu",
                   "intel-tensorflow", "tensorflow-rocm")
# The two names TensorFlow is published under today, one of them alone being the healthy install.
CURRENT = ("tensorflow", "tensorflow-cpu")


def _installed(name: str) -> bool:
    from importlib import metadata

    try:
        metadata.version(name)
    except metadata.PackageNotFoundError:
        return False
    return True


def _distributions(folder: Optional[Path] = None) -> list:
    """``(name, distribution)`` for each package of :data:`MODULE_PACKAGES` that is installed (in
    ``folder`` only, the site-packages folder TensorFlow was imported from, when given: a package in
    another folder of ``sys.path`` is shadowed, not mixed in)."""
    from importlib import metadata

    found = []
    for name in MODULE_PACKAGES:
        try:
            dist = metadata.distribution(name)
            if folder is None or Path(dist.locate_file("")).resolve() == folder.resolve():
                found.append((name, dist))
        except (metadata.PackageNotFoundError, OSError):
            continue
    return found


def installed_packages(folder: Optional[Path] = None) -> list:
    """The packages of :data:`MODULE_PACKAGES` that are installed (in ``folder``), in that order."""
    return [name for name, _ in _distributions(folder)]


def module_owners(folder: Optional[Path] = None) -> list:
    """The packages of :data:`MODULE_PACKAGES` that installed files of the ``tensorflow`` module
    (in ``folder``, when given).

    Two owners in one folder mean two installs' files mixed: pip lays the
    second over the first, and uninstalling either deletes files the other
    needs.  A package whose files cannot be read counts as no owner.
    """
    owners = []
    for name, dist in _distributions(folder):
        try:
            top_level = dist.read_text("top_level.txt")
            if top_level is not None:
                owns = "tensorflow" in top_level.split()
            else:
                owns = any(path.parts[:1] == ("tensorflow",) for path in dist.files or ())
        except OSError:
            continue
        if owns:
            owners.append(name)
    return owners


def distribution() -> str:
    """The name to install TensorFlow under: the installed one of :data:`CURRENT` (``tensorflow``,
    Colab's, when both are), else the one published for this machine (``tensorflow-cpu`` on
    Windows and Linux on x86-64, ``tensorflow`` elsewhere).  pip must be told the installed
    name, or it installs a second TensorFlow beside the first."""
    for name in CURRENT:
        if _installed(name):
            return name
    x86 = platform.machine().lower() in ("x86_64", "amd64")
    return "tensorflow-cpu" if sys.platform == "win32" or (sys.platform.startswith("linux") and x86) else "tensorflow"


def _no_tensorflow_here() -> Optional[str]:
    """Why no supported TensorFlow can be installed on this machine, or None."""
    machine = platform.machine().lower()
    if sys.platform == "darwin" and machine == "x86_64":
        return "TensorFlow publishes no release after 2.16 for Intel Macs"
    if sys.platform == "win32" and machine in ("arm64", "aarch64"):
        return "TensorFlow publishes no packages for Windows on ARM"
    return None


def upgrade_advice(reinstall: bool = False, folder: Optional[Path] = None) -> str:
    """The pip command(s) that put the newest tested TensorFlow in place of the installed one.

    One ``pip install`` under the installed name when exactly one of
    :data:`CURRENT` is installed.  Otherwise (a wrapper and the package
    holding the module, an old or nightly build, two installs mixed), and
    whenever ``reinstall`` is set, every package of :data:`MODULE_PACKAGES`
    that is installed (in ``folder``) is uninstalled first: an install laid
    over them would mix two releases' files and leave a package whose removal
    deletes the new TensorFlow.  The commands run this Python's pip.  A running
    kernel keeps the TensorFlow it imported until it restarts; on Windows it
    also holds the files pip must replace.  On a machine TensorFlow publishes
    nothing for, the advice says so instead.
    """
    nothing = _no_tensorflow_here()
    if nothing:
        return (f"{nothing}: use a Linux machine, a virtual machine or a class JupyterHub, as the book's page "
                "on running without Colab describes")
    pip = f'"{sys.executable}" -m pip' if sys.executable else "pip"
    install = f'`{pip} install "{distribution()}=={_text(NEWEST)}.*"`'
    installed = installed_packages(folder)
    if installed and (reinstall or len(installed) > 1 or installed[0] not in CURRENT):
        install = f"first `{pip} uninstall -y {' '.join(installed)}`, then {install}"
    if sys.platform == "win32":
        return f"in a terminal, with this kernel shut down: {install}; then start the kernel again"
    return f"{install}, then restart the kernel"


def check_version(version: str, folder: Optional[Path] = None) -> None:
    """Check the TensorFlow ``version`` (e.g. ``"2.21.0"``) gradlib runs with, imported from the
    site-packages ``folder`` (when known: packages in other folders are shadowed, not mixed in).

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
                          f"installed: upgrade it ({upgrade_advice(folder=folder)}).")
    if found > NEWEST:
        warnings.warn(f"gradlib is tested with TensorFlow up to {_text(NEWEST)}, but TensorFlow {version} is "
                      f"installed: it will probably work; if something breaks, install TensorFlow "
                      f"{_text(NEWEST)} ({upgrade_advice(folder=folder)}).",
                      UntestedTensorFlowWarning, stacklevel=2)
        return
    owners = module_owners(folder)
    if len(owners) > 1:
        warnings.warn(f"TensorFlow {version} was installed by more than one package ({', '.join(owners[:-1])} and "
                      f"{owners[-1]}): its folder mixes their files, and removing one package deletes files the "
                      f"other needs. Reinstall it ({upgrade_advice(folder=folder)}).", UntestedTensorFlowWarning, stacklevel=2)


def import_failed() -> ImportError:
    """The error for an ``import tensorflow`` that failed: nothing installed, or an installed
    TensorFlow that does not import (its own error, chained, says why)."""
    installed = installed_packages()
    if not installed:
        return ImportError(f"gradlib needs TensorFlow {_supported_text()}: install it ({upgrade_advice()}).")
    return ImportError(f"gradlib needs TensorFlow {_supported_text()}; {', '.join(installed)} is installed, but "
                       f"`import tensorflow` fails (the error above says why). If the installation is broken, "
                       f"reinstall it ({upgrade_advice(reinstall=True)}).")


def not_tensorflow(module) -> Optional[ImportError]:
    """An error when the module ``import tensorflow`` found is not TensorFlow (a reader's
    ``tensorflow.py`` next to the notebook, say), else None."""
    if isinstance(getattr(module, "__version__", None), str):
        return None
    where = getattr(module, "__file__", None) or "a folder without __init__.py"
    return ImportError(f"`import tensorflow` found {where}, which is not TensorFlow: rename that file or "
                       "folder, then restart the kernel.")


try:
    import tensorflow as tf
except ImportError as err:
    raise import_failed() from err

if not_tensorflow(tf) is not None:
    raise not_tensorflow(tf)
check_version(tf.__version__, folder=Path(tf.__file__).resolve().parent.parent)
