"""The explorer's page format: what Python writes and ``gradbook-explorer.js`` reads (private).

The contract, written down once (``tests/test_explorer_format.py`` checks both sides,
the JavaScript under node):

* the explorer is a ``<div class="{ROOT}" data-frame="{key}">``; ``key`` is the
  frame shown, the option indices of the controls joined by ``SEPARATOR``
  (``"2,0"``: third option of the first control, first of the second);
* each control is an ``<input type="range">`` or a ``<select>`` with
  ``CONTROL`` (``data-index``) = its position among the controls; its ``value``
  is the index of the chosen option; an ``<output>`` beside a slider shows
  the option itself;
* ``len(PANELS)`` curves, ``<polyline class="gbx-curve {CURVES[p]}">`` inside one
  ``<svg>``;
* the data is JSON in ``<script type="application/json" class="{DATA}">``:
  ``x`` (the points), ``xlim`` ``[lo, hi]``, ``ylim`` (one ``[lo, hi]`` per
  panel), ``panels`` (``PANELS``: left, top, width, height of each plot area
  in SVG units), ``curves`` (``CURVES``), ``separator`` (``SEPARATOR``),
  ``names``/``options`` (the controls and their options as text) and
  ``frames``: ``key -> [y of panel 0, y of panel 1]``, ``null`` for a value
  that is not finite (a gap);
* a curve's points are :func:`points`, and the JavaScript's ``points`` must
  give the same string for every frame.

The JavaScript finds the root, the data and the controls by ``ROOT``, ``DATA``
and ``CONTROL``; everything else (geometry, curve classes, the separator) it
reads from the JSON.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from typing import Dict, Sequence

ROOT = "gradbook-explorer"
DATA = "gbx-data"
CONTROL = "data-index"
FRAME = "data-frame"
CURVES = ("gbx-curve-0", "gbx-curve-1")
SEPARATOR = ","
WIDTH, HEIGHT = 720, 270
PANELS = (  # left, top, width, height of each plot area inside the SVG
    {"left": 58, "top": 34, "width": 282, "height": 190},
    {"left": 418, "top": 34, "width": 282, "height": 190},
)
SIGNIFICANT = 6  # digits kept of each value in the JSON
DECIMALS = 1  # of each SVG coordinate


def frame_key(indices: Sequence[int]) -> str:
    """The key of the frame for these option indices, e.g. ``(2, 0) -> "2,0"``."""
    return SEPARATOR.join(str(int(i)) for i in indices)


def fixed(value: float) -> str:
    """``value`` with ``DECIMALS`` decimals exactly as JavaScript's ``toFixed`` writes it.

    ``toFixed`` rounds the exact binary value half away from zero; Python's
    ``f"{v:.1f}"`` rounds half to even (``12.25`` gives ``12.2``, not ``12.3``).
    """
    text = str(Decimal(value).quantize(Decimal(1).scaleb(-DECIMALS), rounding=ROUND_HALF_UP))
    return text[1:] if text.startswith("-") and value == 0 else text  # -0 is "0.0" in JavaScript


def points(xs: Sequence, ys: Sequence, panel: Dict, xlim, ylim) -> str:
    """SVG polyline points of one curve in one panel; a ``None`` value is skipped."""
    (x0, x1), (y0, y1) = xlim, ylim
    parts = []
    for x, y in zip(xs, ys):
        if y is None:
            continue
        px = panel["left"] + (x - x0) / (x1 - x0) * panel["width"]
        py = panel["top"] + (1 - (y - y0) / (y1 - y0)) * panel["height"]
        parts.append(f"{fixed(px)},{fixed(py)}")
    return " ".join(parts)


def page_data(markup: str) -> Dict:
    """The JSON data of the first explorer in ``markup`` (HTML), as the JavaScript reads it."""
    import json
    import re

    found = re.search(rf'<script type="application/json" class="{DATA}">(.*?)</script>', markup, re.S)
    if found is None:
        raise ValueError(f"no <script class=\"{DATA}\"> in the markup")
    return json.loads(found[1].replace("<\\/", "</"))
