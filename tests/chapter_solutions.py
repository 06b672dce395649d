"""The reference solutions of the chapters, read from their MyST sources.

Only the parser is shared with ``tools/student_edition.py`` (``tools.book``:
jupytext for code cells, myst-parser's markdown-it for directives); the
solution logic here is written separately, so that tool cannot hide its own
mistakes.  ``test_student_edition.py`` checks that every solution passes, and
``test_fuzz_checks.py`` builds its almost-correct answers from them.
"""

import re
from pathlib import Path
from typing import Callable, List, Tuple

from tools import book

CHECK_LINE = re.compile(r"""gradlib\.exercises\.check\("(ch\d\d-ex\d+)", (\w+), lang="(en|zh)"\)""")


def solution_parts(text):
    """(solution lines, other lines) of a chapter source: ``{solution}``
    blocks, and ``{solution-start}`` through the closing fence of ``{solution-end}``."""
    lines = text.splitlines()
    inside = [False] * len(lines)
    for begin, end in book.solution_ranges(text):
        inside[begin:end] = [True] * (end - begin)
    return ([line for line, flag in zip(lines, inside) if flag],
            [line for line, flag in zip(lines, inside) if not flag])


def code_cells(text):
    """The code of each ``{code-cell}`` in MyST text (cell options dropped)."""
    return [code.strip("\n") for code in book.code_sources(text)]


def is_setup(code):
    """A cell of imports only (the chapter's Setup)."""
    statements = [line for line in code.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return bool(statements) and all(re.match(r"(import|from) \w", line) for line in statements)


def reference_solutions(md: Path) -> List[Tuple[str, Callable, str, str]]:
    """``(exercise id, answer, answer name, lang of its check call)`` for each
    solution code cell with a check call, in order: the cell run after the
    chapter's Setup cells, with the check call itself left out."""
    text = Path(md).read_text(encoding="utf-8")
    solution, other = solution_parts(text)
    setup = [code for code in code_cells("\n".join(other) + "\n") if is_setup(code)]
    assert setup, f"{md}: no setup cell"
    namespace = {}
    for code in setup:
        exec(compile(code, f"{Path(md).name}:setup", "exec"), namespace)
    found = []
    for code in code_cells("\n".join(solution) + "\n"):
        call = CHECK_LINE.search(code)
        if not call:
            continue
        exercise, name, lang = call.groups()
        scope = dict(namespace)
        exec(compile(CHECK_LINE.sub("None", code), f"{Path(md).name}:{exercise}", "exec"), scope)
        found.append((exercise, scope[name], name, lang))
    return found
