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
import unicodedata
from typing import Dict, List

import numpy as np

from . import _explorer_format as fmt
from ._explorer_format import HEIGHT, PANELS, SIGNIFICANT, WIDTH

#: Greek letters and letter-like symbols: like a variable, they swallow the space after them (``\Delta t`` is ``Δt``)
GREEK = {
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "varepsilon": "ε", "zeta": "ζ",
    "eta": "η", "theta": "θ", "vartheta": "ϑ", "iota": "ι", "kappa": "κ", "lambda": "λ", "mu": "μ", "nu": "ν",
    "xi": "ξ", "pi": "π", "varpi": "ϖ", "rho": "ρ", "varrho": "ϱ", "sigma": "σ", "varsigma": "ς", "tau": "τ",
    "upsilon": "υ", "phi": "φ", "varphi": "φ", "chi": "χ", "psi": "ψ", "omega": "ω",
    "Gamma": "Γ", "Delta": "Δ", "Theta": "Θ", "Lambda": "Λ", "Xi": "Ξ", "Pi": "Π", "Sigma": "Σ",
    "Upsilon": "Υ", "Phi": "Φ", "Psi": "Ψ", "Omega": "Ω",
    "partial": "∂", "nabla": "∇", "ell": "ℓ", "infty": "∞", "star": "⋆", "prime": "′", "top": "⊤",
    "emptyset": "∅", "Vert": "‖", "vert": "|",
}
#: operators, relations, arrows and dots: the spacing typed around them stays (``a \geq b`` is ``a ≥ b``)
SYMBOLS = {
    "cdot": "·", "times": "×", "div": "÷", "pm": "±", "mp": "∓", "odot": "⊙", "otimes": "⊗", "oplus": "⊕",
    "circ": "∘", "ast": "∗", "bullet": "•", "le": "≤", "leq": "≤", "ge": "≥", "geq": "≥", "ne": "≠", "neq": "≠",
    "lt": "<", "gt": ">", "ll": "≪", "gg": "≫", "approx": "≈", "sim": "∼", "simeq": "≃", "equiv": "≡",
    "propto": "∝", "in": "∈", "notin": "∉", "subset": "⊂", "subseteq": "⊆", "cup": "∪", "cap": "∩",
    "forall": "∀", "exists": "∃", "mid": "|", "to": "→", "rightarrow": "→", "leftarrow": "←", "gets": "←",
    "Rightarrow": "⇒", "leftrightarrow": "↔", "mapsto": "↦", "sum": "∑", "prod": "∏", "int": "∫",
    "ldots": "…", "cdots": "…", "dots": "…", "vdots": "⋮",
}
#: paired delimiters: no space after an opening one (``\l…``) or before a closing one (``\r…``)
DELIMITERS = {"lVert": "‖", "rVert": "‖", "lvert": "|", "rvert": "|", "langle": "⟨", "rangle": "⟩",
              "lfloor": "⌊", "rfloor": "⌋", "lceil": "⌈", "rceil": "⌉", "lbrace": "{", "rbrace": "}"}
#: operator names written as words, with a space between them and a following letter (``\log x`` is ``log x``);
#: the names matplotlib's mathtext knows
FUNCTIONS = {"arccos", "arcsin", "arctan", "arg", "cos", "cosh", "cot", "coth", "csc", "deg", "det", "dim", "exp",
             "gcd", "hom", "inf", "ker", "lg", "lim", "liminf", "limsup", "ln", "log", "max", "min", "Pr", "sec",
             "sin", "sinh", "sup", "tan", "tanh"}
#: TeX commands that only choose a font: their argument stays, as plain text (``\mathbb{1}``, the indicator, is ``1``)
FONT_COMMANDS = ("mathrm", "mathit", "mathbf", "mathsf", "mathtt", "mathcal", "mathbb", "mathfrak", "mathnormal",
                 "boldsymbol", "bm", "text", "textrm", "textit", "textbf", "operatorname")
DOUBLE_STRUCK = str.maketrans("CNQRZ", "ℂℕℚℝℤ")  # \mathbb{R} is ℝ
#: accents, as a combining mark after each character (``\hat{y}`` is ``ŷ``)
ACCENTS = {"hat": "\u0302", "widehat": "\u0302", "bar": "\u0304", "overline": "\u0305", "tilde": "\u0303",
           "widetilde": "\u0303", "dot": "\u0307", "ddot": "\u0308", "vec": "\u20d7", "check": "\u030c",
           "underline": "\u0332"}
#: delimiter sizes, dropped (the delimiter after them stays; ``\left.`` is nothing)
SIZING = {"left", "right", "middle"} | {b + s for b in ("big", "Big", "bigg", "Bigg") for s in ("", "l", "r", "m")}
#: TeX spaces and escaped characters
SPACES = {",": " ", ";": " ", ":": " ", "!": "", " ": " ", "quad": " ", "qquad": " ", "\\": " ",
          "|": "‖", "{": "{", "}": "}", "_": "_", "%": "%", "&": "&", "#": "#", "$": "$"}
# Unicode has sub- and superscripts for these characters only; other scripts are written x_t or x_(max)
SUBSCRIPT = str.maketrans("0123456789+-=()aehijklmnoprstuvx", "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓ")
SUPERSCRIPT = str.maketrans("0123456789+-=()ni", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁿⁱ")
_TOKEN = re.compile(r"\\[A-Za-z]+|\\.|\s+|.", re.S)
# The curve explorer's panel titles as the page has always written them.
PLAIN_TITLES = {r"$y = f(x)$": "y = f(x)", r"$\partial y / \partial x$": "∂y/∂x"}

def plain_label(label: str) -> str:
    """A label with TeX math, such as ``r"$\\beta_{1}$"``, as plain Unicode text (``β₁``).

    Only the parts between ``$`` signs are math, as in matplotlib; the rest is kept as it is
    (``\\$`` is a dollar sign). In math: Greek letters, symbols and delimiters become characters
    (the tables above); ``\\log`` and the other operator names become words, spaced from a
    following letter; font commands keep their argument (``\\mathrm{epoch}`` is ``epoch``,
    ``\\mathbb{1}`` is ``1``); ``\\left``/``\\right`` and ``\\big`` sizes are dropped; accents
    become combining marks (``\\hat{y}`` is ``ŷ``); ``\\frac{a+1}{b}`` is ``(a+1)/b`` and
    ``\\sqrt{x}`` is ``√x``; a script, one token or a braced group as in TeX, becomes Unicode
    sub- or superscript characters when all of its characters have one (``\\log_{10}`` is
    ``log₁₀``, ``x^{-1}`` is ``x⁻¹``, ``x_12`` is ``x₁2``), else ``x_d``, ``x^T`` or
    ``x_(1,2)``; ``x^\\star`` is ``x⋆``. Spaces typed in the label stay, collapsed to one.

    Raises:
        ValueError: the math uses a command none of the tables knows; a label should not
            show the command's name, so the build stops instead.
    """
    parts = re.split(r"(?<!\\)\$", str(label))
    if len(parts) % 2 == 0:  # an unmatched $ is a dollar sign
        parts[-2:] = [parts[-2] + "$" + parts[-1]]
    text = "".join(_math(part, label) if i % 2 else part.replace(r"\$", "$") for i, part in enumerate(parts))
    return re.sub(r"\s+", " ", text).strip()


def _math(tex: str, label: str) -> str:
    return unicodedata.normalize("NFC", _group(_TOKEN.findall(tex)[::-1], label))  # NFC: ŷ as one character


def _group(tokens: List[str], label: str, closing: bool = False) -> str:
    """Plain text of ``tokens`` (reversed, consumed from the end) up to the ``}`` that closes the group."""
    out, function = "", False
    while tokens:
        token = tokens.pop()
        name = token[1:] if token.startswith("\\") else None
        if token == "}" and closing:
            break
        if token in ("_", "^"):
            out += _script(token, _argument(tokens, label))
            continue  # the script belongs to the token before, which may be a function
        if name is None:
            piece = _group(tokens, label, closing=True) if token == "{" else {"}": "", "~": " "}.get(token, token)
            piece = " " if token.isspace() else piece
        elif name in FUNCTIONS:
            piece = (" " if out[-1:].isalnum() else "") + name
        elif name in GREEK or (name in DELIMITERS and name.startswith("l")):
            piece = GREEK.get(name) or DELIMITERS[name]
            _skip_space(tokens)
        elif name in DELIMITERS:
            out, piece = out.rstrip(), DELIMITERS[name]
        elif name in SYMBOLS or name in SPACES:
            piece = SYMBOLS.get(name) or SPACES[name]
        elif name in FONT_COMMANDS:
            piece = _argument(tokens, label)
            piece = piece.translate(DOUBLE_STRUCK) if name == "mathbb" else piece
            piece = (" " if name == "operatorname" and out[-1:].isalnum() else "") + piece
        elif name in ACCENTS:
            piece = "".join(c if c.isspace() else c + ACCENTS[name] for c in _argument(tokens, label))
        elif name in ("frac", "dfrac", "tfrac"):
            piece = _paren(_argument(tokens, label)) + "/" + _paren(_argument(tokens, label))
        elif name == "sqrt":
            _skip_space(tokens)
            index = []  # \sqrt[3]{x}: ³√x
            if tokens and tokens[-1] == "[":
                tokens.pop()
                while tokens and tokens[-1] != "]":
                    index.append(tokens.pop())
                tokens[-1:] = []  # the "]"
            piece = _script("^", _group(index[::-1], label)) + "√" + _paren(_argument(tokens, label))
        elif name in SIZING:
            _skip_space(tokens)
            delimiter = tokens.pop() if tokens else "."
            out = out.rstrip() if name == "right" or name.endswith("r") else out
            piece = "" if delimiter == "." else _group([delimiter], label)
            if name == "left" or name.endswith("l"):
                _skip_space(tokens)
        else:
            raise ValueError(f"unknown TeX command {token} in the label {label!r}: "
                             "add it to a table in gradlib/_static_explorer.py or write the label without it")
        if function and piece[:1].isalnum() and out[-1:].isalnum():
            out += " "  # \log\theta: log θ
        function = name in FUNCTIONS or name == "operatorname"
        out += piece
    return out


def _argument(tokens: List[str], label: str) -> str:
    """A command's argument or a script: the next token, or the next braced group, as plain text."""
    _skip_space(tokens)
    if not tokens:
        return ""
    token = tokens.pop()
    return _group(tokens, label, closing=True) if token == "{" else _group([token], label)


def _skip_space(tokens: List[str]) -> None:
    while tokens and tokens[-1].isspace():
        tokens.pop()


def _script(mark: str, text: str) -> str:
    table = SUBSCRIPT if mark == "_" else SUPERSCRIPT
    if all(ord(c) in table for c in text):
        return text.translate(table)
    if mark == "^" and text in ("⋆", "*", "′", "'"):
        return text
    return mark + (text if len(text) == 1 or re.fullmatch(r"\([^()]*\)", text) else f"({text})")  # w^(t)


def _paren(text: str) -> str:
    """``text`` as a fraction's numerator or denominator: parenthesised if it has an operator or a space."""
    return f"({text})" if re.search(r"[\s+\-=<>/·×±∓≤≥≠≈,]", text) else text


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
    described = " | ".join(titles)  # language-neutral, like the figure: the same on English and Chinese pages
    svg = [f'<svg class="gbx-plot" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
           f'aria-label="{described}">']
    for p, panel in enumerate(PANELS):
        left, top, w, h = panel["left"], panel["top"], panel["width"], panel["height"]
        svg.append(f'<text class="gbx-title" x="{left + w / 2}" y="{top - 12}" text-anchor="middle">{titles[p]}</text>')
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
        svg.append(f'<text class="gbx-axis" x="{left + w / 2}" y="{top + h + 34}" text-anchor="middle">{html.escape(plain_label(explorer.xlabel))}</text>')
        points = fmt.points(xs, all_frames[key][p], panel, xlim, ylims[p])
        svg.append(f'<polyline class="gbx-curve {fmt.CURVES[p]}" points="{points}"/>')
    svg.append("</svg>")

    payload = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    return (f'<div class="{fmt.ROOT}" id="{element_id}" {fmt.FRAME}="{key}">'
            f'<div class="gbx-controls">{"".join(controls)}</div>{"".join(svg)}'
            f'<script type="application/json" class="{fmt.DATA}">{payload}</script></div>')
