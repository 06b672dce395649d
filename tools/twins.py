"""Check that the English and Chinese twin of every chapter say the same code.

A chapter exists as ``chapters/en/<name>.md`` and ``chapters/zh/<name>.md``.
Prose is translated; code is not.  :func:`check_twins` reports:

* a chapter present in one language only;
* a source that is not a MyST notebook (jupytext ``format_name: myst``);
* a different number of code cells, or a code cell whose *code* differs.
  Code is compared as its Python token stream with comments and blank lines
  dropped and every string literal (f-strings included, adjacent literals
  merged) replaced by ``<str>``, so comments and display text may be
  translated.  IPython lines (``%magic``, ``!shell``) are compared as text,
  and a ``%%cell-magic`` cell is compared line by line as text;
* code cell options (``tags`` ...) that differ, after removing the language
  prefix from ``name``/``label`` values and ignoring ``caption``/``alt``;
* a label without its language prefix (``en-`` / ``zh-``), a ``{ref}`` or
  ``{numref}`` into the other language, or a ``{solution}`` of an exercise
  of the other language;
* label sequences that differ once the prefix is removed;
* exercise id sequences that differ (``en-ch01-ex1`` -> ``ch01-ex1``).

The pages come from ``_toc.yml``, code cells from jupytext and labels,
directives and roles from the MyST parser (``tools.book``).  The first
language of the toc is the reference the others are compared with.

Usage: ``python -m tools.twins [--root DIR]``; exit 1 when there are problems.
"""

from __future__ import annotations

import argparse
import io
import re
import tokenize
from pathlib import Path

from tools import book
from tools.book import ROOT

STR = "<str>"
DROP = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER}
FSTRING_START = getattr(tokenize, "FSTRING_START", None)  # Python >= 3.12
FSTRING_END = getattr(tokenize, "FSTRING_END", None)
PROSE_OPTIONS = {"caption", "alt"}
LABEL_OPTIONS = {"name", "label"}

EXERCISES = ("exercise", "exercise-start")
SOLUTIONS = ("solution", "solution-start")
REF_ROLES = ("ref", "numref")
REF_TARGET = re.compile(r"^(?:[^<]*<)?([^<>]+)>?$")  # {ref}`text <label>` or {ref}`label`


def strip_lang(label: str, langs=None) -> str:
    """``en-ch01-lists`` -> ``ch01-lists``; other labels unchanged."""
    for lang in langs or book.languages():
        if label.startswith(lang + "-"):
            return label[len(lang) + 1:]
    return label


def _notebook(md_path: Path):
    return book.read_notebook(md_path)


# -- code --------------------------------------------------------------------

def _is_ipython(line: str) -> bool:
    return line.lstrip().startswith(("%", "!"))


def normalise_code(source: str) -> list[str]:
    """A cell's code as normalised lines (see the module docstring)."""
    lines = source.splitlines()
    if lines and lines[0].startswith("%%"):
        return [line.rstrip() for line in lines if line.strip()]
    magics = {}
    python = []
    for line in lines:
        if _is_ipython(line):
            name = f"__ipython_line_{len(magics)}__"
            magics[name] = line.strip()
            line = line[: len(line) - len(line.lstrip())] + name
        python.append(line)
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO("\n".join(python) + "\n").readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return [line.rstrip() for line in lines if line.strip()]
    out, current, depth, fdepth = [], [], 0, 0
    for tok in tokens:
        if fdepth:  # inside an f-string (3.12+): all of it is one literal
            fdepth += (tok.type == FSTRING_START) - (tok.type == FSTRING_END)
            continue
        if tok.type in DROP or not tok.string.strip() and tok.type == tokenize.ERRORTOKEN:
            continue
        if tok.type == tokenize.INDENT:
            depth += 1
        elif tok.type == tokenize.DEDENT:
            depth -= 1
        elif tok.type == tokenize.NEWLINE:
            if current:
                out.append("    " * depth + " ".join(current))
            current = []
        elif tok.type == tokenize.STRING or tok.type == FSTRING_START:
            fdepth = 1 if tok.type == FSTRING_START else 0
            if not current or current[-1] != STR:  # "a" "b" == "ab"
                current.append(STR)
        else:
            current.append(magics.get(tok.string, tok.string))
    if current:
        out.append("    " * depth + " ".join(current))
    return out


def _options(metadata: dict) -> dict:
    """Cell options with label prefixes removed and prose options dropped."""
    clean = {}
    for key, value in metadata.items():
        if key in PROSE_OPTIONS:
            continue
        if isinstance(value, dict):
            value = _options(value)
        elif key in LABEL_OPTIONS and isinstance(value, str):
            value = strip_lang(value)
        clean[key] = value
    return clean


def _metadata_labels(metadata: dict) -> list[str]:
    found = []
    for key, value in metadata.items():
        if isinstance(value, dict):
            found += _metadata_labels(value)
        elif key in LABEL_OPTIONS and isinstance(value, str):
            found.append(value)
    return found


def _code_cells(nb) -> list[dict]:
    return [
        {
            "source": cell.source,
            "code": normalise_code(cell.source),
            "options": _options(dict(cell.metadata)),
        }
        for cell in nb.cells
        if cell.cell_type == "code"
    ]


def code_cells(md_path: Path) -> list[dict]:
    """The code cells of a chapter: ``{"source", "code", "options"}`` each.

    ``code`` is the normalised code (:func:`normalise_code`), ``options`` the
    normalised cell options (tags etc.).
    """
    return _code_cells(_notebook(md_path))


# -- labels and exercises ----------------------------------------------------

def _markdown_items(nb):
    """In order: ``("target", label)`` for ``(label)=`` targets,
    ``("directive", name, argument, options)`` for directives and
    ``("code", labels)`` for the labels in a code cell's options."""
    for cell in nb.cells:
        if cell.cell_type == "code":
            yield "code", _metadata_labels(dict(cell.metadata))
            continue
        if cell.cell_type != "markdown":
            continue
        items = [(d.begin, "directive", d.name, d.argument, d.options) for d in book.directives(cell.source)]
        text_lines = cell.source.splitlines()
        for label in book.targets(cell.source):
            line = next((i for i, text in enumerate(text_lines) if text.strip() == f"({label})="), -1)
            items.append((line, "target", label))
        for _, *item in sorted(items, key=lambda item: item[0]):
            yield tuple(item)


def _labels(nb) -> list[str]:
    found = []
    for kind, *rest in _markdown_items(nb):
        if kind == "target":
            found.append(rest[0])
        elif kind == "code":
            found += rest[0]
        else:
            found += [rest[2][key] for key in ("label", "name") if key in rest[2]]
    return found


def _exercise_ids(nb, langs=None) -> list[str]:
    return [
        strip_lang(rest[2].get("label", "?"), langs)
        for kind, *rest in _markdown_items(nb)
        if kind == "directive" and rest[0] in EXERCISES
    ]


def labels(md_path: Path) -> list[str]:
    """Every explicit label of a chapter, in order: ``(x)=`` targets,
    ``label``/``name`` directive options and code cell options."""
    return _labels(_notebook(md_path))


def exercise_ids(md_path: Path) -> list[str]:
    """Exercise labels without language prefix, in order (``?`` if unlabelled)."""
    return _exercise_ids(_notebook(md_path))


# -- the check ---------------------------------------------------------------

def _short(text: str, limit: int = 100) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _first_difference(a: list[str], b: list[str]):
    for i in range(max(len(a), len(b))):
        left = a[i] if i < len(a) else "<nothing>"
        right = b[i] if i < len(b) else "<nothing>"
        if left != right:
            return i + 1, left.strip(), right.strip()
    return None


def _language_problems(nb, lang: str, rel: str, langs) -> list[str]:
    problems = []
    fmt = nb.metadata.get("jupytext", {}).get("text_representation", {})
    if fmt.get("format_name") != "myst":
        problems.append(f"{rel}: not a MyST notebook (jupytext format_name is not myst)")
    prefix, others = f"{lang}-", tuple(f"{o}-" for o in langs if o != lang)
    for label in _labels(nb):
        if not label.startswith(prefix):
            problems.append(f"{rel}: label {label!r} lacks the {prefix!r} prefix")
    for kind, *rest in _markdown_items(nb):
        if kind != "directive":
            continue
        name, argument, options = rest
        if name in EXERCISES and "label" not in options:
            problems.append(f"{rel}: an exercise has no label")
        if name in SOLUTIONS and not argument.startswith(prefix):
            problems.append(f"{rel}: solution of {argument!r} is not a {prefix!r} exercise")
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            refs = [REF_TARGET.match(content.strip()) for name, content in book.roles(cell.source)
                    if name in REF_ROLES]
            for target in [ref[1].strip() for ref in refs if ref]:
                if target.startswith(others):
                    problems.append(f"{rel}: reference to {target!r} points into the other language")
    return problems


def _compare(en, zh, ren: str, rzh: str, langs) -> list[str]:
    """Problems between the reference language's notebook ``en`` and another
    language's ``zh`` (``langs``: the two languages' names)."""
    first, other = langs
    problems = []
    a, b = _code_cells(en), _code_cells(zh)
    if len(a) != len(b):
        problems.append(f"{ren} has {len(a)} code cells, {rzh} has {len(b)}")
    for n, (x, y) in enumerate(zip(a, b), start=1):
        diff = _first_difference(x["code"], y["code"])
        if diff:
            line, left, right = diff
            problems.append(
                f"{ren} vs {rzh}: code cell {n} differs (code line {line}):\n"
                f"    {first}: {_short(left)}\n    {other}: {_short(right)}"
            )
        if x["options"] != y["options"]:
            problems.append(
                f"{ren} vs {rzh}: code cell {n} options differ: "
                f"{first} {x['options']} vs {other} {y['options']}"
            )
    la = [strip_lang(label, langs) for label in _labels(en)]
    lb = [strip_lang(label, langs) for label in _labels(zh)]
    if la != lb:
        only_en, only_zh = sorted(set(la) - set(lb)), sorted(set(lb) - set(la))
        detail = f"only in {first} {only_en}, only in {other} {only_zh}" if only_en or only_zh else "order differs"
        problems.append(f"{ren} vs {rzh}: labels differ ({detail})")
    ea, eb = _exercise_ids(en, langs), _exercise_ids(zh, langs)
    if ea != eb:
        problems.append(f"{ren} vs {rzh}: exercise ids differ: {first} {ea} vs {other} {eb}")
    return problems


def check_twins(root: Path = ROOT) -> list[str]:
    """Human-readable problems between the languages' pages; empty if none."""
    root = Path(root)
    langs = book.languages(root)
    by_lang = {lang: {md.name: md for md in book.pages(lang, root)} for lang in langs}
    problems = []
    names = sorted({name for pages in by_lang.values() for name in pages})
    reference = langs[0]
    for name in names:
        rel = {lang: f"chapters/{lang}/{name}" for lang in langs}
        notebooks = {}
        for lang in langs:
            md = by_lang[lang].get(name)
            if md is None or not md.is_file():
                others = [rel[o] for o in langs if o != lang and name in by_lang[o]]
                problems.append(f"{rel[lang]} is missing (twin of {', '.join(others)})")
                continue
            notebooks[lang] = _notebook(md)
            problems += _language_problems(notebooks[lang], lang, rel[lang], langs)
        for lang in langs[1:]:
            if reference in notebooks and lang in notebooks:
                problems += _compare(notebooks[reference], notebooks[lang], rel[reference], rel[lang],
                                     (reference, lang))
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="book root (default: the repository)")
    args = parser.parse_args(argv)
    return book.cli(check_twins(args.root))


if __name__ == "__main__":
    raise SystemExit(main())
