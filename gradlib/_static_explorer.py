"""The explorer as it appears in the built book (private).

At build time every combination of control values is computed with
TensorFlow (:meth:`gradlib.Explorer.frames`, each once, exactly as the live
explorer computes them) and written into the page as JSON, next to an inline
SVG that already shows the default frame.  ``assets/static/gradbook-explorer.js``,
served by the site itself, redraws the curves when a control moves: no
kernel, no server, no third-party library.  The page format both sides
follow is :mod:`gradlib._explorer_format`.
"""

from __future__ import annotations

import html
import json
import math
import re
from typing import Dict, List

import numpy as np

from . import _explorer_format as fmt
from ._explorer_format import HEIGHT, PANELS, SIGNIFICANT, WIDTH
from ._plain_tex import GREEK, plain_label

# The curve explorer's panel titles as the page has always written them.
PLAIN_TITLES = {r"$y = f(x)$": "y = f(x)", r"$\partial y / \partial x$": "∂y/∂x"}


def _italic(tex: str) -> str:
    """A label that is one variable, ``$l$`` or ``$\\theta$``, is italic, as TeX sets it (an upright
    "l" reads as "1"); words, operators and upright commands (``$\\mathrm{d}$``) are not."""
    match = re.fullmatch(r"\$\s*(?:[A-Za-z]|\\([a-z]+))\s*\$", tex)
    return ' font-style="italic"' if match and (match[1] is None or match[1] in GREEK) else ""


def _round(values: np.ndarray) -> List:
    """Finite values to SIGNIFICANT digits; NaN/inf become None (a gap)."""
    out = []
    for v in np.asarray(values, dtype=np.float64).ravel():
        out.append(float(f"{v:.{SIGNIFICANT}g}") if math.isfinite(v) else None)
    return out


def _ticks(lo: float, hi: float, count: int = 5) -> List[float]:
    raw = (hi - lo) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = min((m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw), default=raw)
    first = math.ceil(lo / step) * step
    return [round(first + i * step, 10) for i in range(int((hi - first) / step) + 1)]


def _fmt_tick(v: float) -> str:
    return f"{v:g}"


def frames(explorer) -> Dict[str, List[List]]:
    """Every control combination: ``frame_key(indices) -> [y, dydx]``, rounded for the page."""
    return {fmt.frame_key(indices): [_round(y), _round(dydx)] for indices, (y, dydx) in explorer.frames().items()}


def render(explorer, element_id: str) -> str:
    """The HTML of a working, kernel-free explorer."""
    names = list(explorer.controls)
    all_frames = frames(explorer)
    xs = _round(explorer.x)
    xlim = (min(v for v in xs if v is not None), max(v for v in xs if v is not None))
    ylims = [tuple(float(f"{v:.{SIGNIFICANT}g}") for v in lim) for lim in explorer.limits()]
    default = [explorer.controls[n].index(explorer.values[n]) for n in names]
    key = fmt.frame_key(default)
    data = {
        "x": xs, "xlim": xlim, "ylim": ylims, "panels": PANELS, "curves": fmt.CURVES, "separator": fmt.SEPARATOR,
        "names": names, "options": [[str(o) for o in explorer.controls[n]] for n in names],
        "frames": all_frames,
    }

    controls = []
    for i, name in enumerate(names):
        label = html.escape(plain_label(explorer.labels[name]))
        options = explorer.controls[name]
        if all(isinstance(o, (int, float)) and not isinstance(o, bool) for o in options):
            shown = html.escape(str(options[default[i]]))
            widget = (f'<input type="range" min="0" max="{len(options) - 1}" step="1" value="{default[i]}" '
                      f'{fmt.CONTROL}="{i}" aria-label="{label}" aria-valuetext="{shown}">'
                      f'<output>{shown}</output>')
        else:
            choices = "".join(f'<option value="{j}"{" selected" if j == default[i] else ""}>{html.escape(str(o))}</option>'
                              for j, o in enumerate(options))
            widget = f'<select {fmt.CONTROL}="{i}" aria-label="{label}">{choices}</select>'
        controls.append(f'<label class="gbx-control"><span class="gbx-label">{label}</span>{widget}</label>')

    titles = [html.escape(PLAIN_TITLES.get(t, plain_label(t))) for t in explorer.titles]
    xlabel = plain_label(explorer.xlabel)
    described = " | ".join(titles)  # language-neutral, like the figure: the same on English and Chinese pages
    svg = [f'<svg class="gbx-plot" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
           f'aria-label="{described}">']
    for p, panel in enumerate(PANELS):
        left, top, w, h = panel["left"], panel["top"], panel["width"], panel["height"]
        svg.append(f'<text class="gbx-title" x="{left + w / 2}" y="{top - 12}" text-anchor="middle"'
                   f'{_italic(explorer.titles[p])}>{titles[p]}</text>')
        svg.append(f'<rect class="gbx-frame" x="{left}" y="{top}" width="{w}" height="{h}"/>')
        for axis, (lo, hi) in (("x", xlim), ("y", ylims[p])):
            for t in _ticks(lo, hi):
                if axis == "x":
                    px = left + (t - lo) / (hi - lo) * w
                    svg.append(f'<line class="gbx-grid{" gbx-zero" if t == 0 else ""}" x1="{px:.1f}" y1="{top}" x2="{px:.1f}" y2="{top + h}"/>')
                    svg.append(f'<text class="gbx-tick" x="{px:.1f}" y="{top + h + 15}" text-anchor="middle">{_fmt_tick(t)}</text>')
                else:
                    py = top + (1 - (t - lo) / (hi - lo)) * h
                    svg.append(f'<line class="gbx-grid{" gbx-zero" if t == 0 else ""}" x1="{left}" y1="{py:.1f}" x2="{left + w}" y2="{py:.1f}"/>')
                    svg.append(f'<text class="gbx-tick" x="{left - 6}" y="{py + 4:.1f}" text-anchor="end">{_fmt_tick(t)}</text>')
        svg.append(f'<text class="gbx-axis" x="{left + w / 2}" y="{top + h + 34}" text-anchor="middle"'
                   f'{_italic(explorer.xlabel)}>{html.escape(xlabel)}</text>')
        points = fmt.points(xs, all_frames[key][p], panel, xlim, ylims[p])
        svg.append(f'<polyline class="gbx-curve {fmt.CURVES[p]}" points="{points}"/>')
    svg.append("</svg>")

    payload = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    return (f'<div class="{fmt.ROOT}" id="{element_id}" {fmt.FRAME}="{key}">'
            f'<div class="gbx-controls">{"".join(controls)}</div>{"".join(svg)}'
            f'<script type="application/json" class="{fmt.DATA}">{payload}</script></div>')
