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

Usage: ``python tools/twins.py [--root DIR]``; exit 1 when there are problems.
"""

from __future__ import annotations

import argparse
import io
import re
import sys
import tokenize
from pathlib import Path

import jupytext

if __package__ in (None, ""):  # run as a script: python tools/twins.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tools.notebooks import LANGS, ROOT, md_sources  # noqa: E402

STR = "<str>"
DROP = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER}
FSTRING_START = getattr(tokenize, "FSTRING_START", None)  # Python >= 3.12
FSTRING_END = getattr(tokenize, "FSTRING_END", None)
PROSE_OPTIONS = {"caption", "alt"}
LABEL_OPTIONS = {"name", "label"}

TARGET = re.compile(r"^\s*\(([^()\s]+)\)=\s*$")
FENCE = re.compile(r"^\s*(`{3,}|:{3,})\{([\w-]+)\}\s*(\S*)")
EXERCISES = ("exercise", "exercise-start")
SOLUTIONS = ("solution", "solution-start")
ROLE_REF = re.compile(r"\{(?:ref|numref)\}`(?:[^`<]*<)?([^`<>]+)>?`")


def strip_lang(label: str) -> str:
    """``en-ch01-lists`` -> ``ch01-lists``; other labels unchanged."""
    for lang in LANGS:
        if label.startswith(lang + "-"):
            return label[len(lang) + 1:]
    return label


def _notebook(md_path: Path):
    return jupytext.read(Path(md_path))


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

def _directive_options(lines: list[str], start: int) -> dict:
    """Options of the directive opened on ``lines[start - 1]``: ``:key: value``
    lines, or a ``---`` delimited ``key: value`` block."""
    options, rest = {}, lines[start:]
    if rest and rest[0].strip() == "---":
        for line in rest[1:]:
            if line.strip() == "---":
                break
            found = re.match(r"^\s*([\w-]+)\s*:\s*(.*?)\s*$", line)
            if found:
                options[found[1]] = found[2].strip("'\"")
        return options
    for line in rest:
        found = re.match(r"^\s*:([\w-]+):\s*(.*?)\s*$", line)
        if not found:
            break
        options[found[1]] = found[2]
    return options


def _markdown_items(nb):
    """In order: ``("target", label)`` for ``(label)=`` lines,
    ``("directive", name, argument, options)`` for fenced directives and
    ``("code", labels)`` for the labels in a code cell's options."""
    for cell in nb.cells:
        if cell.cell_type == "code":
            yield "code", _metadata_labels(dict(cell.metadata))
            continue
        if cell.cell_type != "markdown":
            continue
        lines = cell.source.splitlines()
        for i, line in enumerate(lines):
            if match := TARGET.match(line):
                yield "target", match[1]
            elif match := FENCE.match(line):
                yield "directive", match[2], match[3], _directive_options(lines, i + 1)


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


def _exercise_ids(nb) -> list[str]:
    return [
        strip_lang(rest[2].get("label", "?"))
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


def _language_problems(nb, lang: str, rel: str) -> list[str]:
    problems = []
    fmt = nb.metadata.get("jupytext", {}).get("text_representation", {})
    if fmt.get("format_name") != "myst":
        problems.append(f"{rel}: not a MyST notebook (jupytext format_name is not myst)")
    prefix, others = f"{lang}-", tuple(f"{o}-" for o in LANGS if o != lang)
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
            for target in ROLE_REF.findall(cell.source):
                if target.startswith(others):
                    problems.append(f"{rel}: reference to {target!r} points into the other language")
    return problems


def _compare(en, zh, ren: str, rzh: str) -> list[str]:
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
                f"    en: {_short(left)}\n    zh: {_short(right)}"
            )
        if x["options"] != y["options"]:
            problems.append(
                f"{ren} vs {rzh}: code cell {n} options differ: "
                f"en {x['options']} vs zh {y['options']}"
            )
    la = [strip_lang(label) for label in _labels(en)]
    lb = [strip_lang(label) for label in _labels(zh)]
    if la != lb:
        only_en, only_zh = sorted(set(la) - set(lb)), sorted(set(lb) - set(la))
        detail = f"only in en {only_en}, only in zh {only_zh}" if only_en or only_zh else "order differs"
        problems.append(f"{ren} vs {rzh}: labels differ ({detail})")
    ea, eb = _exercise_ids(en), _exercise_ids(zh)
    if ea != eb:
        problems.append(f"{ren} vs {rzh}: exercise ids differ: en {ea} vs zh {eb}")
    return problems


def check_twins(root: Path = ROOT) -> list[str]:
    """Human-readable problems between the en and zh chapters; empty if none."""
    root = Path(root)
    by_lang = {lang: {} for lang in LANGS}
    for md in md_sources(root):
        by_lang[md.parent.name][md.name] = _notebook(md)
    problems = []
    en, zh = by_lang["en"], by_lang["zh"]
    for name in sorted(set(en) | set(zh)):
        rel = {lang: f"chapters/{lang}/{name}" for lang in LANGS}
        if name not in zh:
            problems.append(f"{rel['zh']} is missing (twin of {rel['en']})")
        if name not in en:
            problems.append(f"{rel['en']} is missing (twin of {rel['zh']})")
        for lang in LANGS:
            if name in by_lang[lang]:
                problems += _language_problems(by_lang[lang][name], lang, rel[lang])
        if name in en and name in zh:
            problems += _compare(en[name], zh[name], rel["en"], rel["zh"])
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="book root (default: the repository)")
    args = parser.parse_args(argv)
    problems = check_twins(args.root)
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
