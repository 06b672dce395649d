"""A progress bar that works live and in the built book."""

from __future__ import annotations

import re
import sys
import time
from typing import Iterable, Iterator, Optional, TypeVar

from .._validate import integer
from ..explorer import building_book

__all__ = ["progress"]

# The one figure of a built page that changes from run to run: the bar ends with
# "[12.3 s]".  Tools that compare outputs (tools/reliability.py) mask TIMING.
TIMING = re.compile(r"\[\d+(?:\.\d+)? s\]")

T = TypeVar("T")


def progress(iterable: Iterable[T], *, total: Optional[int] = None, desc: str = "") -> Iterator[T]:
    """Iterate over ``iterable`` with a progress bar.

    In a live kernel (or a terminal) this is ``tqdm.auto.tqdm``: a widget in
    Jupyter and Colab, a text bar elsewhere.  While the book is built
    (``GRADBOOK_BUILD=1``) a live bar would leave a dead widget or stderr
    in the page, so one finished bar is printed to stdout at the end instead.

    Raises:
        TypeError: at the call, not at the first step: ``iterable`` is not
            iterable, or ``desc`` is not a string.
        ValueError: ``total`` is neither None nor a non-negative integer.
    """
    try:
        iter(iterable)
    except TypeError:
        raise TypeError(f"`iterable` must be iterable; got {type(iterable).__name__}") from None
    if total is not None:
        total = integer(total, "total", minimum=0)
    if not isinstance(desc, str):
        raise TypeError(f"`desc` must be a string; got {type(desc).__name__}")
    return _progress(iterable, total, desc)


def _progress(iterable: Iterable[T], total: Optional[int], desc: str) -> Iterator[T]:
    if not building_book():
        from tqdm.auto import tqdm

        yield from tqdm(iterable, total=total, desc=desc)
        return
    if total is None and hasattr(iterable, "__len__"):
        total = len(iterable)  # type: ignore[arg-type]
    start, count = time.perf_counter(), 0
    for count, item in enumerate(iterable, start=1):  # noqa: B007  (count is read after the loop)
        yield item
    seconds = time.perf_counter() - start
    width = 30
    done = width if not total else min(width, round(width * count / total))
    label = f"{desc}: " if desc else ""
    sys.stdout.write(f"{label}|{'█' * done}{' ' * (width - done)}| {count}/{total or count} [{seconds:.1f} s]\n")
