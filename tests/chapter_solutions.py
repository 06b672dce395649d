"""The reference solutions of the chapters, found by a line scan of their MyST sources.

The scan is independent of ``tools/student_edition.py``, so that tool cannot
hide its own mistakes; ``test_student_edition.py`` checks that every solution
passes, and ``test_fuzz_checks.py`` builds its almost-correct answers from them.
"""

import re
from pathlib import Path
from typing import Callable, List, Tuple

CHECK_LINE = re.compile(r"""gradlib\.exercises\.check\("(ch\d\d-ex\d+)", (\w+), lang="(en|zh)"\)""")
CODE_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```\s*$", re.M | re.S)


def solution_parts(text):
    """(solution lines, other lines) of a chapter source: ``{solution}``
    blocks, and ``{solution-start}`` through the closing fence of ``{solution-end}``."""
    lines = text.splitlines()
    solution, other = [], []
    i = 0
    while i < len(lines):
        match = re.match(r"^(`{3,}|:{3,})\{(solution|solution-start)\}", lines[i])
        if not match:
            other.append(lines[i])
            i += 1
            continue
        fence, j = match.group(1), i + 1
        if match.group(2) == "solution-start":
            while not re.match(r"^(`{3,}|:{3,})\{solution-end\}", lines[j]):
                j += 1
            j += 1
        while lines[j].strip() != fence:
            j += 1
        solution.extend(lines[i:j + 1])
        i = j + 1
    return solution, other


def code_cells(text):
    """The code of each ``{code-cell}`` in MyST text (cell options dropped)."""
    cells = []
    for body in CODE_CELL.findall(text):
        body_lines = body.splitlines()
        if body_lines and body_lines[0].startswith(":"):
            while body_lines and body_lines[0].strip():
                body_lines.pop(0)
        cells.append("\n".join(body_lines).strip("\n"))
    return cells


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
