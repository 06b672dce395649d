"""Tables that a chapter computes and shows as Markdown."""

from __future__ import annotations

from typing import Sequence

__all__ = ["markdown_table"]


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
