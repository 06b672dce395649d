"""TeX math as plain Unicode text (private): ``$\\beta_{1}$`` is ``β₁``.

For text that cannot hold typeset math: an explorer's control labels and
panel titles, and, in the site extension (``assets/ext/gradbook_math.py``
loads this file by its path, without importing gradlib or TensorFlow), math
in section titles and page descriptions where Sphinx makes them text (the
search index, ``{ref}`` links, ``<title>``, ``<meta name="description">``).
Standard library only.
"""

from __future__ import annotations

import re
import unicodedata
from typing import List

__all__ = ["plain_label"]

#: Greek letters and letter-like symbols: like a variable, they swallow the space after them (``\Delta t`` is ``Δt``);
#: the characters TeX and KaTeX typeset (``\phi`` is U+03D5 ϕ, ``\varphi`` U+03C6 φ), so a label matches the prose
GREEK = {
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ϵ", "varepsilon": "ε", "zeta": "ζ",
    "eta": "η", "theta": "θ", "vartheta": "ϑ", "iota": "ι", "kappa": "κ", "lambda": "λ", "mu": "μ", "nu": "ν",
    "xi": "ξ", "pi": "π", "varpi": "ϖ", "rho": "ρ", "varrho": "ϱ", "sigma": "σ", "varsigma": "ς", "tau": "τ",
    "upsilon": "υ", "phi": "ϕ", "varphi": "φ", "chi": "χ", "psi": "ψ", "omega": "ω",
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
    "forall": "∀", "exists": "∃", "mid": "|", "bmod": "mod", "to": "→", "rightarrow": "→", "leftarrow": "←", "gets": "←",
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
#: commands that only choose a style or placement: dropped
STYLES = {"displaystyle", "textstyle", "scriptstyle", "limits", "nolimits"}
#: TeX spaces and escaped characters
SPACES = {",": " ", ";": " ", ":": " ", "!": "", " ": " ", "quad": " ", "qquad": " ", "\\": " ",
          "|": "‖", "{": "{", "}": "}", "_": "_", "%": "%", "&": "&", "#": "#", "$": "$"}
# Unicode has sub- and superscripts for these characters only; other scripts are written x_t or x_(max)
SUBSCRIPT = str.maketrans("0123456789+-=()aehijklmnoprstuvx", "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓ")
SUPERSCRIPT = str.maketrans("0123456789+-=()ni", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁿⁱ")
_TOKEN = re.compile(r"\\[A-Za-z]+|\\.|\s+|.", re.S)
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
        elif name in STYLES:
            piece = ""
        elif name in SIZING:
            _skip_space(tokens)
            delimiter = tokens.pop() if tokens else "."
            out = out.rstrip() if name == "right" or name.endswith("r") else out
            piece = "" if delimiter == "." else _group([delimiter], label)
            if name == "left" or name.endswith("l"):
                _skip_space(tokens)
        else:
            raise ValueError(f"unknown TeX command {token} in the label {label!r}: "
                             "add it to a table in gradlib/_plain_tex.py or write the label without it")
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
