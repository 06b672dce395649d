"""Make the student edition of the chapter notebooks: no solutions, tagged checks.

From every numbered chapter ``chapters/<lang>/NN_*.md`` of ``_toc.yml``
(rendered in memory exactly as its Colab ``.ipynb`` twin, install cell
included: ``tools.book.notebook``) this writes
``OUT/<lang>/NN_*.ipynb`` where

* every solution is gone: a ``{solution-start}`` directive, everything after
  it (prose, code cells) and the ``{solution-end}`` directive, and every plain
  ``{solution}`` directive (backtick or colon fences), found by the MyST
  parser (``tools.book.directives``);
* the check cells (code cells calling
  ``gradlib.exercises.check("chNN-exK", answer, lang=...)``, i.e. the stubs the
  student fills in) are kept, tagged ``gradbook-check``, marked not deletable,
  and carry ``metadata["gradbook"] = {"exercise", "answer", "lang", "stub"}``,
  where ``stub`` is the fingerprint of the answer function's stub as the cell
  defines it (``gradlib.classroom.grade.stub_fingerprint``), with which the
  grader reports an untouched stub as ``not-attempted`` (absent when the cell
  does not define the function at top level);
* a header cell (id ``gradbook-header``) at the top says, in the notebook's
  language, which exercises to fill in (ids and function names), that the
  check cells must stay, and how to run the checks;
* the notebook metadata carries ``metadata["gradbook"] = {"edition":
  "student", "chapter", "lang", "exercises": {id: answer name}}``, which
  ``python -m gradlib.grade`` reads when the check cells are gone;
* outputs and execution counts are stripped; cell ids are kept.

Usage::

    python -m tools.student_edition --out _build/student [--lang en|zh|both]
"""

from __future__ import annotations

import argparse
import copy
import re
import sys
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import nbformat

from tools import book
from tools.book import ROOT

if __name__ == "__main__":  # as a command: quiet TensorFlow (gradlib imports it), as for the grader
    book.kernel().apply("grade")

from gradlib.classroom.grade import CHECK_TAG  # noqa: E402,F401  (the grader's tag; re-exported for the tests)

HEADER_ID = "gradbook-header"
EXERCISE_ID = re.compile(r"^[a-z]{2}-(ch\d\d-ex\d+)$")  # an exercise's label: en-ch01-ex2

HEADER = {
    "en": {
        "intro": "**Student edition.** This notebook is chapter {number} without its solutions.",
        "fill": "Fill in these exercises; each has a code cell that defines a function and checks it:",
        "table": "| exercise | define the function |\n|---|---|",
        "none": "This chapter has no exercise with an automatic check.",
        "written": "The other exercises ({ids}) have no automatic check (your teacher reads them): answer "
                   "each in a text or code cell below it.",
        "rules": [
            "Replace the `...` in the exercise's code cell with your code; keep the function's name and "
            "arguments: the grader finds your answer by its name.",
            "**Do not delete the check cells**: the code cells ending with "
            "`gradlib.exercises.check(\"chNN-exK\", ...)`, which are tagged `gradbook-check`. The grader "
            "reports a deleted check cell.",
            "**To run the checks**, run the notebook from the top: *Runtime → Run all* on Colab, "
            "*Run → Run All Cells* in Jupyter. Each check cell shows ✅ or ❌ (✓ or ✗ as plain text) and what is wrong; after "
            "changing an answer, run its cell again. The grader runs your notebook the same way, from the "
            "top in a fresh kernel, then runs the same checks: everything your answers need must be "
            "defined in the notebook.",
        ],
    },
    "zh": {
        "intro": "**学生版。** 本笔记本是第 {number} 章去掉答案后的版本。",
        "fill": "请完成以下练习；每道练习都有一个代码单元格，在其中定义一个函数并检查它：",
        "table": "| 练习 | 需要定义的函数 |\n|---|---|",
        "none": "本章没有可自动检查的练习。",
        "written": "其余练习（{ids}）没有自动检查（由老师批阅）：请在各自下方的文本或代码单元格中作答。",
        "rules": [
            "把练习代码单元格中的 `...` 换成你的代码；不要改动函数名和参数：评分程序按函数名找到你的答案。",
            "**不要删除检查单元格**：即以 `gradlib.exercises.check(\"chNN-exK\", ...)` 结尾、带有 "
            "`gradbook-check` 标签的代码单元格。评分程序会报告被删除的检查单元格。",
            "**运行检查**：从头运行整个笔记本（Colab 中选择“代码执行程序 → 全部运行”，英文界面为 *Runtime → Run all*；"
            "Jupyter 中选择“运行 → 运行所有单元格”，英文界面为 *Run → Run All Cells*）。每个检查单元格会显示 ✅ 或 ❌"
            "（纯文本中为 ✓ 或 ✗），并指出错误所在；修改答案后，重新运行该单元格即可。"
            "评分程序也以同样的方式在全新的内核中从头运行你的笔记本，再运行同样的检查：你的答案所需的一切都必须在笔记本中定义。",
        ],
    },
}


# -- removing solutions -------------------------------------------------------

def strip_solutions(text: str, inside: bool = False) -> Tuple[str, bool]:
    """Remove the solutions from one markdown cell's text.

    ``inside`` says whether the cell starts between a ``{solution-start}`` and
    its ``{solution-end}``; the returned flag says whether it ends there.
    Directives come from the MyST parser, so a fence inside a solution (or a
    directive shown inside a code block) is never mistaken for a boundary.
    """
    lines = text.splitlines(keepends=True)
    kept: List[str] = []
    cursor = 0
    for directive in book.directives(text, nested=False):
        if not inside:
            kept.extend(lines[cursor:directive.begin])
        if directive.name == "solution-start":
            inside = True
        elif directive.name == "solution-end":
            inside = False
        elif directive.name != "solution" and not inside:
            kept.extend(lines[directive.begin:directive.end])
        cursor = directive.end
    if not inside:
        kept.extend(lines[cursor:])
    cleaned = re.sub(r"\n{3,}", "\n\n", "".join(kept)).strip("\n")
    return cleaned, inside


# -- the student notebook ------------------------------------------------------

def _first_heading(nb) -> str:
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return ""


def _header(chapter: str, lang: str, answers: Dict[str, str], written: List[str]) -> str:
    text = HEADER[lang]
    number = int(chapter[2:]) if re.fullmatch(r"ch\d\d", chapter or "") else "?"
    parts = [text["intro"].format(number=number)]
    if answers:
        rows = "\n".join(f"| {exercise} | `{name}` |" for exercise, name in answers.items())
        parts.append(text["fill"] + "\n\n" + text["table"] + "\n" + rows)
    else:
        parts.append(text["none"])
    if written:
        parts.append(text["written"].format(ids=(", " if lang == "en" else "、").join(written)))
    parts.append("\n".join(f"- {rule}" for rule in text["rules"]))
    return "\n\n".join(parts)


def _stub(source: str, name: Optional[str]) -> Optional[str]:
    """The fingerprint of the last top-level ``def name`` or ``class name`` in a check cell's source (None if there is none)."""
    import ast

    from gradlib.classroom.grade import stub_fingerprint

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    defs = [node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and node.name == name]
    return stub_fingerprint(defs[-1]) if defs else None


def student_notebook(nb, *, lang: Optional[str] = None):
    """The student edition of a chapter notebook (an nbformat v4 node); ``nb``
    is not modified.  ``lang`` is used when the notebook's own language (from
    its check calls and labels) cannot be determined."""
    from gradlib import exercises
    from gradlib.classroom.grade import check_calls, inspect_notebook

    nb = copy.deepcopy(nb)
    cells = []
    inside = False
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            text, inside_after = strip_solutions(cell.source, inside)
            inside = inside_after
            if text.strip():
                cell.source = text
                cells.append(cell)
        elif not inside:
            cells.append(cell)
    if inside:
        raise ValueError("a {solution-start} directive has no {solution-end}")
    nb.cells = cells

    info = inspect_notebook(nb)
    lang = info.lang or lang or "en"
    chapter = info.chapters[0] if info.chapters else ""
    answers: Dict[str, str] = {}
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
            cell.metadata.pop("execution", None)
            calls = check_calls(cell.source)
            if calls:
                call = calls[0]
                registered = call["exercise"] in exercises.exercise_ids()
                name = (exercises.answer_name(call["exercise"]) if registered else None) or call["answer"]
                tags = list(cell.metadata.get("tags", []))
                if CHECK_TAG not in tags:
                    tags.append(CHECK_TAG)
                cell.metadata["tags"] = tags
                cell.metadata["deletable"] = False
                cell.metadata["gradbook"] = {"exercise": call["exercise"], "answer": name,
                                             "lang": call["lang"] or lang}
                stub = _stub(cell.source, name)
                if stub is not None:
                    cell.metadata["gradbook"]["stub"] = stub
                answers.setdefault(call["exercise"], name)
    labels = [d.options.get("label", "") for c in nb.cells if c.cell_type == "markdown"
              for d in book.directives(c.source) if d.name in ("exercise", "exercise-start")]
    ids = [m[1] for m in map(EXERCISE_ID.match, labels) if m]
    written = [i for i in ids if i not in answers]

    header = nbformat.v4.new_markdown_cell(_header(chapter, lang, answers, written))
    header["id"] = HEADER_ID
    header.metadata["gradbook"] = {"role": "header"}
    header.metadata["deletable"] = False
    nb.cells.insert(0, header)
    nb.metadata.pop("jupytext", None)
    nb.metadata["gradbook"] = {"edition": "student", "chapter": chapter, "lang": lang,
                               "title": _first_heading(nb), "exercises": answers}
    return nb


def chapter_sources(root: Path = ROOT, langs=None) -> List[Path]:
    """The numbered chapters of ``langs`` (default: every language), in toc order."""
    return [md for lang in (langs or book.languages(root)) for md in book.chapters(lang, root)]


def source_notebook(md: Path, root: Path = ROOT):
    """The chapter's Colab notebook (its ``.ipynb`` twin), generated in memory from its ``.md``."""
    return book.notebook(md, root)


def write_student_edition(out: Path, *, root: Path = ROOT, langs=None) -> List[Path]:
    """Write ``out/<lang>/NN_*.ipynb`` for every chapter source; return the paths."""
    written = []
    for md in chapter_sources(root, langs):
        lang = md.parent.name
        nb = student_notebook(source_notebook(md, root), lang=lang)
        nbformat.validate(nb)
        target = Path(out) / lang / md.with_suffix(".ipynb").name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(nbformat.writes(nb) + "\n", encoding="utf-8")
        written.append(target)
    return written


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, type=Path, help="the folder to write <lang>/NN_*.ipynb into")
    parser.add_argument("--lang", default="both", help="which language of _toc.yml (default both)")
    parser.add_argument("--root", type=Path, default=ROOT, help="book root (default: the repository)")
    args = parser.parse_args(argv)
    known = book.languages(args.root)
    if args.lang not in known + ("both",):
        parser.error(f"--lang must be one of {', '.join(known)} or both, not {args.lang!r}")
    langs = known if args.lang == "both" else (args.lang,)
    paths = write_student_edition(args.out, root=args.root, langs=langs)
    for path in paths:
        print(f"wrote {path}")
    if not paths:
        print("no chapter sources found", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
