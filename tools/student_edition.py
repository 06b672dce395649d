"""Make the student edition of the chapter notebooks: no solutions, tagged checks.

From every chapter ``chapters/{en,zh}/NN_*.md`` (rendered in memory exactly as
its Colab ``.ipynb`` twin, see ``tools/notebooks.py``) this writes
``OUT/<lang>/NN_*.ipynb`` where

* every solution is gone: a ``{solution-start}`` directive, everything after
  it (prose, code cells) and the ``{solution-end}`` directive, and every plain
  ``{solution}`` directive (backtick or colon fences);
* the check cells (code cells calling
  ``gradlib.exercises.check("chNN-exK", answer, lang=...)``, i.e. the stubs the
  student fills in) are kept, tagged ``gradbook-check``, marked not deletable,
  and carry ``metadata["gradbook"] = {"exercise", "answer", "lang"}``;
* a header cell (id ``gradbook-header``) at the top says, in the notebook's
  language, which exercises to fill in (ids and function names), that the
  check cells must stay, and how to run the checks;
* the notebook metadata carries ``metadata["gradbook"] = {"edition":
  "student", "chapter", "lang", "exercises": {id: answer name}}``, which
  ``python -m gradlib.grade`` reads when the check cells are gone;
* outputs and execution counts are stripped; cell ids are kept.

Usage::

    python tools/student_edition.py --out _build/student [--lang en|zh|both]
"""

from __future__ import annotations

import argparse
import copy
import re
import sys
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import nbformat

if __package__ in (None, ""):  # run as a script: python tools/student_edition.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tools.notebooks import LANGS, ROOT, render_ipynb  # noqa: E402

CHECK_TAG = "gradbook-check"
HEADER_ID = "gradbook-header"
CHAPTER_FILE = re.compile(r"^\d\d_[\w-]+\.md$")
FENCE = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,}|:{3,})(?P<info>.*)$")
DIRECTIVE = re.compile(r"^\s*\{(?P<name>[\w-]+)\}")
EXERCISE_LABEL = re.compile(r"^:label:\s*(?P<lang>en|zh)-(?P<id>ch\d\d-ex\d+)\s*$", re.M)
SOLUTION_DIRECTIVES = ("solution", "solution-start", "solution-end")

HEADER = {
    "en": {
        "intro": "**Student edition.** This notebook is chapter {number} without its solutions.",
        "fill": "Fill in these exercises; each has a code cell that defines a function and checks it:",
        "table": "| exercise | define the function |\n|---|---|",
        "none": "This chapter has no exercise with an automatic check.",
        "written": "Answer the other exercises ({ids}) in a text cell below each one; they are not checked "
                   "automatically.",
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
        "written": "其余练习（{ids}）请在各自下方的文本单元格中作答，它们不会被自动检查。",
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

def _closing(lines: List[str], start: int, fence: str) -> int:
    """Index of the line closing the fence opened at ``lines[start]`` (the last
    line when it is never closed, as in CommonMark)."""
    closing = re.compile(r"^ {0,3}" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}\s*$")
    for j in range(start + 1, len(lines)):
        if closing.match(lines[j]):
            return j
    return len(lines) - 1


def _directive(info: str) -> Optional[str]:
    match = DIRECTIVE.match(info)
    return match.group("name") if match else None


def strip_solutions(text: str, inside: bool = False) -> Tuple[str, bool]:
    """Remove the solutions from one markdown cell's text.

    ``inside`` says whether the cell starts between a ``{solution-start}`` and
    its ``{solution-end}``; the returned flag says whether it ends there.
    Fenced blocks are skipped whole, so a fence inside a solution (or a
    directive shown inside a code block) is never mistaken for a boundary.
    """
    lines = text.splitlines(keepends=True)
    kept: List[str] = []
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if match is None:
            if not inside:
                kept.append(lines[i])
            i += 1
            continue
        end = _closing(lines, i, match.group("fence"))
        name = _directive(match.group("info"))
        if name == "solution-start":
            inside = True
        elif name == "solution-end":
            inside = False
        elif name != "solution" and not inside:
            kept.extend(lines[i:end + 1])
        i = end + 1
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


def student_notebook(nb, *, lang: Optional[str] = None):
    """The student edition of a chapter notebook (an nbformat v4 node); ``nb``
    is not modified.  ``lang`` is used when the notebook's own language (from
    its check calls and labels) cannot be determined."""
    from gradlib import exercises
    from gradlib.grade import check_calls, inspect_notebook

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
                answers.setdefault(call["exercise"], name)
    markdown = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    written = [m.group("id") for m in EXERCISE_LABEL.finditer(markdown) if m.group("id") not in answers]

    header = nbformat.v4.new_markdown_cell(_header(chapter, lang, answers, written))
    header["id"] = HEADER_ID
    header.metadata["gradbook"] = {"role": "header"}
    header.metadata["deletable"] = False
    nb.cells.insert(0, header)
    nb.metadata.pop("jupytext", None)
    nb.metadata["gradbook"] = {"edition": "student", "chapter": chapter, "lang": lang,
                               "title": _first_heading(nb), "exercises": answers}
    return nb


def chapter_sources(root: Path = ROOT, langs=LANGS) -> List[Path]:
    """The chapter sources ``chapters/<lang>/NN_*.md`` that exist, sorted."""
    found: List[Path] = []
    for lang in langs:
        found += sorted(p for p in (Path(root) / "chapters" / lang).glob("*.md") if CHAPTER_FILE.match(p.name))
    return found


def source_notebook(md: Path):
    """The chapter's Colab notebook, generated in memory from its ``.md``."""
    return nbformat.reads(render_ipynb(md), as_version=4)


def write_student_edition(out: Path, *, root: Path = ROOT, langs=LANGS) -> List[Path]:
    """Write ``out/<lang>/NN_*.ipynb`` for every chapter source; return the paths."""
    written = []
    for md in chapter_sources(root, langs):
        lang = md.parent.name
        nb = student_notebook(source_notebook(md), lang=lang)
        nbformat.validate(nb)
        target = Path(out) / lang / md.with_suffix(".ipynb").name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(nbformat.writes(nb) + "\n", encoding="utf-8")
        written.append(target)
    return written


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, type=Path, help="the folder to write <lang>/NN_*.ipynb into")
    parser.add_argument("--lang", choices=LANGS + ("both",), default="both", help="which language (default both)")
    parser.add_argument("--root", type=Path, default=ROOT, help="book root (default: the repository)")
    args = parser.parse_args(argv)
    langs = LANGS if args.lang == "both" else (args.lang,)
    paths = write_student_edition(args.out, root=args.root, langs=langs)
    for path in paths:
        print(f"wrote {path}")
    if not paths:
        print("no chapter sources found", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
