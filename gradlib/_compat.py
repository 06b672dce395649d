"""TensorFlow import and version gate (private).

gradlib supports the TensorFlow releases Colab ships and the one this book is
built with.  Importing gradlib on anything else fails at once with a message
naming the supported range, instead of failing later in an obscure way.
"""

from __future__ import annotations

SUPPORTED = ((2, 19), (2, 21))  # inclusive range of (major, minor)


def _supported_text() -> str:
    (lo_major, lo_minor), (hi_major, hi_minor) = SUPPORTED
    return f"{lo_major}.{lo_minor} to {hi_major}.{hi_minor}"


def check_version(version: str) -> None:
    """Raise ImportError unless ``version`` (e.g. "2.21.0") is supported."""
    try:
        major, minor = (int(part) for part in version.split(".")[:2])
    except ValueError:
        raise ImportError(
            f"gradlib could not read the TensorFlow version {version!r}; "
            f"it supports TensorFlow {_supported_text()}."
        ) from None
    if not SUPPORTED[0] <= (major, minor) <= SUPPORTED[1]:
        raise ImportError(
            f"gradlib supports TensorFlow {_supported_text()}, "
            f"but TensorFlow {version} is installed."
        )


try:
    import tensorflow as tf
except ImportError as err:  # pragma: no cover - exercised only without TF
    raise ImportError(
        "gradlib needs TensorFlow "
        f"{_supported_text()}: `pip install 'gradlib[cpu]'` (or use the "
        "TensorFlow that Colab already has)."
    ) from err

check_version(tf.__version__)
