"""Find numbers typed by hand in a chapter's prose.

A number the build computes must reach the text through a cell: myst-nb's
``{glue:text}`key:.3f``` role pasting what ``gradlib.glue`` stored, or a
sentence printed by a cell.  A number typed into the prose goes stale the day
the computation changes (chapter 6 once said "+0.247 and +0.133" while its
cells printed +0.250 and +0.143).  This tool lists the decimal numbers of a
chapter's prose (Markdown cells, exercise and solution text, display math)
that are not *inputs*: an input is a number written as a literal in one of
the chapter's code cells (a setting the reader can see and change), or one
the chapter declares, with its reason, in an HTML comment on a line of its own
(invisible on the site and in Jupyter alike)::

    <!-- typed: 0.75 — the exponent of the paper's learning-rate schedule (§5.2.2) -->

A declaration whose number no longer occurs in the prose is reported too,
so the declarations cannot go stale.

What counts as a number: a decimal such as ``0.247``, ``+0.133`` or
``96.0`` (an integer is too often a count, a year or a section).  Not
looked at: code spans, MyST roles (``{glue:text}``, ``{ref}`` ...), labels,
directive options, links, version numbers after a product name
("TensorFlow 2.21", "TF 1.9"), section signs ("§5.1.1") and arXiv ids.

Usage: ``python -m tools.prose_numbers chapters/en/06_dann.md ...``; exit 1
when a chapter has a typed number (the test suite passes its allow-lists).
"""

from __future__ import annotations

import argparse
import io
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, List, Mapping, Optional, Set

from tools import book

# A code cell, or a fenced block with a language (```bash); a bare ``` closes a directive.
ROLE = re.compile(r"\{[\w:-]+\}`[^`]*`")
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+\1")
LINK = re.compile(r"\]\([^)]*\)|<https?://[^>]*>|https?://\S+")
PRODUCT_VERSION = re.compile(
    r"\b(?:TensorFlow|TF|Keras|Python|NumPy|numpy|SciPy|scikit-learn|Colab|CUDA|larq|jupyter-book|"
    r"Jupyter Book|myst-nb|Sphinx|Chromium|ipywidgets|version|versions|release|releases|v)\s*"
    r"(?:\d+(?:\.\d+|\.x)+)(?:\s*(?:–|-|to|and|或|与|和)\s*\d+(?:\.\d+|\.x)+)*", re.IGNORECASE)
SECTION = re.compile(r"§\s*\d+(?:\.\d+)*|arXiv:\s*\d+\.\d+|\b\d+\(\d+\)")
NUMBER = re.compile(r"(?<![\w.])([-+−]?\d+\.\d+)(?!\w|\.\d)")  # "is 0.247." ends a sentence
LABEL_LINE = re.compile(r"^\s*\([\w-]+\)=\s*$|^\s*:\w[\w-]*:|^\s*<!--.*-->\s*$")
DECLARED = re.compile(r"^<!--\s*typed:\s*([-+−]?\d+\.\d+)\s*(?:—|–|-|:)\s*(\S.*?)\s*-->$")


@dataclass(frozen=True)
class Typed:
    """A number found in the prose that is not an input."""

    path: str
    line: int
    number: str
    context: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: typed number {self.number} in: {self.context}"


def _value(text: str) -> float:
    return abs(float(text.replace("−", "-")))


def code_literals(source: str) -> Set[float]:
    """The absolute values of every numeric literal in the code cells of a MyST notebook."""
    values: Set[float] = set()
    for cell in code_cells(source):
        try:
            tokens = list(tokenize.generate_tokens(io.StringIO(cell).readline))
        except (tokenize.TokenError, IndentationError, SyntaxError):
            tokens = []
        for token in tokens:
            if token.type == tokenize.NUMBER:
                try:
                    values.add(abs(float(token.string.replace("_", "").rstrip("jJ"))))
                except ValueError:
                    pass
    return values


def code_cells(source: str) -> List[str]:
    """The code of every code cell and fenced code block (``tools.book.code_blocks``)."""
    return [code for _, _, code in book.code_blocks(source)]


def prose_lines(source: str) -> Iterable[tuple]:
    """``(line number, text)`` of every prose line: outside the front matter and code cells."""
    lines = source.splitlines()
    start = 0
    if lines and lines[0].strip() == "---":
        for i in range(1, len(lines)):
            if lines[i].strip() == "---":
                start = i + 1
                break
    code = {n for begin, end, _ in book.code_blocks(source) for n in range(begin, end)}
    previous_blank = True
    for number, line in enumerate(lines[start:], start=start + 1):
        if number - 1 in code:
            continue
        # An indented code block (four spaces after a blank line) is code too.
        if line.startswith("    ") and previous_blank:
            continue
        previous_blank = not line.strip()
        if LABEL_LINE.match(line):
            continue
        yield number, line


def _strip(line: str) -> str:
    for pattern in (ROLE, CODE_SPAN, LINK, PRODUCT_VERSION, SECTION):
        line = pattern.sub(" ", line)
    return line


def declared(source: str) -> dict:
    """``{number: reason}`` of the chapter's ``<!-- typed: <number> — <reason> -->`` lines."""
    found = {}
    for line in source.splitlines():
        match = DECLARED.match(line.strip())
        if match:
            found[match.group(1)] = match.group(2).strip()
        elif line.lstrip().startswith("<!--") and "typed:" in line:
            found[line.strip()] = ""  # malformed: reported by typed_numbers
    return found


def typed_numbers(path: Path, allowed: Optional[Mapping[str, str]] = None, *,
                  root: Optional[Path] = None) -> List[Typed]:
    """Decimal numbers in the prose of ``path`` that are neither code literals nor declared.

    Declarations are the chapter's ``<!-- typed: ... -->`` lines; ``allowed`` adds more
    (``{"0.03": "reason"}``).  Numbers match by value, so ``0.03`` also
    covers ``0.030``.  A malformed or stale declaration is reported as well.
    """
    path = Path(path)
    source = path.read_text(encoding="utf-8")
    shown = str(path.relative_to(root)) if root else str(path)
    declarations = declared(source)
    problems = [Typed(shown, 0, key, "a typed declaration needs a number and a reason: "
                      "`<!-- typed: 0.75 — why it may be typed -->`") for key, reason in declarations.items() if not reason]
    declarations = {key: reason for key, reason in declarations.items() if reason}
    problems += [Typed(shown, 0, key, "declared by `<!-- typed: -->` but no longer in the prose")
                 for key in unused_allowances(path, declarations)]
    inputs = code_literals(source) | {_value(key) for key in {**declarations, **(allowed or {})}}
    found = problems
    for number, line in prose_lines(source):
        for match in NUMBER.finditer(_strip(line)):
            value = _value(match.group(1))
            if not any(abs(value - known) <= 1e-12 * max(1.0, known) for known in inputs):
                found.append(Typed(shown, number, match.group(1), line.strip()[:160]))
    return found


def unused_allowances(path: Path, allowed: Mapping[str, str]) -> List[str]:
    """Keys of ``allowed`` that no longer occur in the prose of ``path`` (a stale allow-list)."""
    source = Path(path).read_text(encoding="utf-8")
    seen = {_value(m.group(1)) for _, line in prose_lines(source) for m in NUMBER.finditer(_strip(line))}
    return [key for key in allowed if _value(key) not in seen]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chapters", nargs="+", type=Path)
    args = parser.parse_args(argv)
    return book.cli([str(typed) for chapter in args.chapters for typed in typed_numbers(chapter)])


if __name__ == "__main__":
    raise SystemExit(main())
