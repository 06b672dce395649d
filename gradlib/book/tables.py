"""What a chapter computes and shows: Markdown tables, and numbers glued into the prose."""

from __future__ import annotations

import numbers
import re
from typing import Any, Sequence

import numpy as np

from ..explorer import building_book

__all__ = ["glue", "markdown_table"]

# myst-nb reads a glued value from a display output whose MIME types carry
# this prefix and whose metadata names the key (myst_nb.glue, display=False).
GLUE_PREFIX = "application/papermill.record/"
_GLUE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def _cell(value) -> str:
    return str(value).replace("|", r"\|").replace("\n", " ")


def _sequence(value, name: str, quoted: bool = True) -> list:
    """``value`` as a list; a string (one cell per character) or a non-iterable is refused."""
    what = f"`{name}`" if quoted else name
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{what} must be a sequence of cells, not a string; got {value!r}")
    try:
        return list(value)
    except TypeError:
        raise TypeError(f"{what} must be a sequence; got {type(value).__name__}") from None


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence]):
    """Return an ``IPython.display.Markdown`` table of ``rows`` under ``headers``.

    Every row must have one cell per header; cells are converted with ``str``
    and ``|`` is escaped, so computed values (reprs, numbers) are safe.

    Raises:
        TypeError: ``headers``, ``rows`` or a row is a string or not iterable.
        ValueError: ``headers`` is empty or a row has the wrong number of cells.
    """
    from IPython.display import Markdown

    headers = _sequence(headers, "headers")
    if not headers:
        raise ValueError("`headers` must name at least one column")
    lines = ["| " + " | ".join(_cell(h) for h in headers) + " |",
             "|" + "---|" * len(headers)]
    for number, row in enumerate(_sequence(rows, "rows")):
        row = _sequence(row, f"row {number} of `rows`", quoted=False)
        if len(row) != len(headers):
            raise ValueError(f"row {number} has {len(row)} cells; expected {len(headers)} (one per header)")
        lines.append("| " + " | ".join(_cell(c) for c in row) + " |")
    return Markdown("\n".join(lines))


def _plain(value: Any):
    """A glueable Python value: numbers (NumPy's included) and strings."""
    if isinstance(value, np.generic) or (isinstance(value, np.ndarray) and value.ndim == 0):
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, str)):
        raise TypeError(f"`value` must be a real number or a string; got {type(value).__name__} {value!r}")
    if isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral):
        value = float(value)
    return value


def glue(name: str, value: Any) -> Any:
    """Make ``value`` available to the chapter's prose as ``{glue:text}`name:.3f```.

    Numbers in a chapter's text are never typed by hand: the cell that
    computes them glues them, and the prose pastes them with myst-nb's
    ``glue:text`` role and a format spec, so the page always says what the
    build computed.  While the book is built (``GRADBOOK_BUILD=1``) this
    displays the value the way ``myst_nb.glue(name, value, display=False)``
    does, without needing myst-nb in the kernel; in a live kernel (Colab,
    JupyterLab) it displays nothing.  Returns ``value`` (NumPy scalars as
    Python numbers), so a cell can glue and use a number in one line.

    Raises:
        TypeError: ``value`` is not a real number or a string (a bool, a
            tensor or an array must be converted first), or ``name`` is not a
            string.
        ValueError: ``name`` is not an identifier-like key (letters, digits,
            ``_`` and ``-``).
    """
    if not isinstance(name, str):
        raise TypeError(f"`name` must be a string; got {type(name).__name__}")
    if not _GLUE_NAME.fullmatch(name):
        raise ValueError(f"`name` must be letters, digits, '_' or '-', starting with a letter; got {name!r}")
    value = _plain(value)
    if building_book():
        from IPython.display import display

        display({GLUE_PREFIX + "text/plain": repr(value)}, raw=True,
                metadata={"scrapbook": {"name": name, "mime_prefix": GLUE_PREFIX}})
    return value
