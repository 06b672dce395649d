"""The student edition (tools/student_edition.py) and the exercises' answer names.

The solutions are located by the line scan of the MyST sources in
``chapter_solutions.py``, independent of the tool, so the tool cannot hide
its own mistakes.
"""

import ast
import re

import nbformat
import pytest

from gradlib import exercises
from gradlib.classroom.grade import stub_fingerprint
from tools import book
from tools.book import ROOT
from tools.student_edition import (CHECK_TAG, HEADER_ID, chapter_sources, main, source_notebook,
                                   strip_solutions, student_notebook)

from chapter_solutions import CHECK_LINE, code_cells, reference_solutions, solution_parts

SOURCES = chapter_sources(ROOT)


def _id(md):
    return f"{md.parent.name}/{md.stem}"


@pytest.fixture(scope="module")
def editions():
    return {md: student_notebook(source_notebook(md)) for md in SOURCES}


def cell_text(nb):
    return "\n".join(cell.source for cell in nb.cells)


def test_every_chapter_has_a_source():
    assert [md.name for md in SOURCES if md.parent.name == "en"][:4] == [
        "01_gradients.md", "02_stop_gradient.md", "03_override_map.md", "04_custom_gradient.md"]


# -- answer names ------------------------------------------------------------

def test_every_registered_check_has_an_answer_name():
    for exercise in exercises.exercise_ids():
        assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", exercises.answer_name(exercise) or ""), exercise
    with pytest.raises(ValueError):
        exercises.answer_name("ch99-ex1")


@pytest.mark.parametrize("lang", book.languages())
def test_answer_names_match_the_check_cells(lang):
    found = {}
    for md in (p for p in SOURCES if p.parent.name == lang):
        _, other = solution_parts(md.read_text(encoding="utf-8"))
        for code in code_cells("\n".join(other) + "\n"):
            for exercise, name, call_lang in CHECK_LINE.findall(code):
                assert call_lang == lang, (md.name, exercise)
                assert re.search(rf"^(def|class) {name}\(", code, re.M), f"{md.name}: the cell of {exercise} defines no {name}"
                found[exercise] = name
    chapters = {md.name[:2] for md in SOURCES if md.parent.name == lang}
    expected = {i: exercises.answer_name(i) for i in exercises.exercise_ids() if i[2:4] in chapters}
    assert found == expected
    if lang == "en":
        assert set(found) == set(exercises.exercise_ids())  # every check has its English chapter


# -- the student notebooks ---------------------------------------------------

@pytest.mark.parametrize("md", SOURCES, ids=_id)
def test_no_solution_survives(md, editions):
    text = md.read_text(encoding="utf-8")
    solution, other = solution_parts(text)
    assert solution, "the chapter has no solutions?"
    other_text = "\n".join(other)
    student = cell_text(editions[md])
    assert "{solution" not in student
    unique = {line.strip() for line in solution if len(line.strip()) >= 8 and line.strip() not in other_text}
    assert len(unique) > 10
    leaked = sorted(line for line in unique if line in student)
    assert not leaked, leaked[:5]


@pytest.mark.parametrize("md", SOURCES, ids=_id)
def test_check_cells_are_kept_and_tagged(md, editions):
    lang = md.parent.name
    _, other = solution_parts(md.read_text(encoding="utf-8"))
    stubs = [code for code in code_cells("\n".join(other) + "\n") if CHECK_LINE.search(code)]
    nb = editions[md]
    tagged = [cell for cell in nb.cells if CHECK_TAG in cell.metadata.get("tags", [])]
    assert [cell.source.strip("\n") for cell in tagged] == stubs
    for cell in tagged:
        exercise, name, _ = CHECK_LINE.search(cell.source).groups()
        meta = dict(cell.metadata["gradbook"])
        stub = meta.pop("stub")  # the fingerprint of the stub the cell defines
        assert meta == {"exercise": exercise, "answer": name, "lang": lang}
        definition = [n for n in ast.parse(cell.source).body if getattr(n, "name", None) == name]
        assert stub == stub_fingerprint(definition[-1]) and re.fullmatch(r"sha256:[0-9a-f]{32}", stub)
        assert cell.metadata["deletable"] is False
    untagged = [cell for cell in nb.cells if cell.cell_type == "code" and cell not in tagged]
    assert not any("exercises.check(" in cell.source for cell in untagged)


@pytest.mark.parametrize("md", SOURCES, ids=_id)
def test_header_lists_the_exercises(md, editions):
    nb = editions[md]
    lang, chapter = md.parent.name, "ch" + md.name[:2]
    header = nb.cells[0]
    assert header.cell_type == "markdown" and header.id == HEADER_ID
    ids = [i for i in exercises.exercise_ids() if i.startswith(chapter + "-")]
    assert ids
    for exercise in ids:
        assert f"| {exercise} | `{exercises.answer_name(exercise)}` |" in header.source
    assert nb.metadata["gradbook"] == {
        "edition": "student", "chapter": chapter, "lang": lang, "title": nb.metadata["gradbook"]["title"],
        "exercises": {i: exercises.answer_name(i) for i in ids}}
    if lang == "en":
        assert "Do not delete the check cells" in header.source and "Run all" in header.source
    else:
        assert "不要删除检查单元格" in header.source and "全部运行" in header.source
        assert "运行 → 运行所有单元格" in header.source and "notebook" not in header.source  # 笔记本
    written = re.findall(rf":label: {lang}-(ch\d\d-ex\d+)\n", md.read_text(encoding="utf-8"))
    for exercise in set(written) - set(ids):
        assert exercise in header.source  # the exercises without an automatic check are listed too
    if set(written) - set(ids):  # some of them ask for code (fix a bug, run a measurement)
        assert ("have no automatic check (your teacher reads them): answer each in a text or code cell below it"
                if lang == "en" else "没有自动检查（由老师批阅）：请在各自下方的文本或代码单元格中作答") in header.source


@pytest.mark.parametrize("md", SOURCES, ids=_id)
def test_outputs_stripped_ids_kept_and_valid(md, editions):
    nb = editions[md]
    nbformat.validate(nb)
    source = source_notebook(md)
    source_ids = [cell.id for cell in source.cells]
    kept = [cell.id for cell in nb.cells[1:]]
    assert kept == [i for i in source_ids if i in kept]  # a subsequence: same ids, same order
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None
    first = next(cell for cell in nb.cells if cell.cell_type == "code")
    assert book.is_install_cell(first) and first.source == book.install_cell(md.parent.name)  # opens on Colab


def test_the_source_notebook_is_not_modified():
    md = SOURCES[0]
    nb = source_notebook(md)
    before = nbformat.writes(nb)
    student_notebook(nb)
    assert nbformat.writes(nb) == before


# -- the reference solutions pass their checks ---------------------------------

@pytest.mark.parametrize("md", SOURCES, ids=_id)
def test_reference_solutions_pass(md):
    lang = md.parent.name
    checked = set()
    for exercise, answer, name, call_lang in reference_solutions(md):
        assert call_lang == lang and name == exercises.answer_name(exercise)
        feedback = exercises.check(exercise, answer, lang=lang)
        assert feedback.passed, str(feedback)
        checked.add(exercise)
    chapter = "ch" + md.name[:2]
    assert checked == {i for i in exercises.exercise_ids() if i.startswith(chapter + "-")}


# -- the solution stripper on its own -------------------------------------------

def test_strip_solutions_handles_fences_and_ranges():
    text = "\n".join([
        "Intro.", "",
        ":::{solution} en-ch09-ex1", ":label: en-ch09-ex1-sol", "", "SECRET colon", ":::", "",
        "````{solution} en-ch09-ex2", "```python", "SECRET = 'nested fence'", "```", "````", "",
        "```python", "```{solution} not a directive: shown in a code block", "```", "",
        "```{exercise}", ":label: en-ch09-ex3", "", "Keep me.", "```", "",
        "```{solution-start} en-ch09-ex3", ":class: dropdown", "```", "", "SECRET prose",
    ])
    kept, inside = strip_solutions(text)
    assert inside is True
    assert "SECRET" not in kept and "Intro." in kept and "Keep me." in kept
    assert "```{solution} not a directive" in kept
    kept, inside = strip_solutions("SECRET tail\n\n```{solution-end}\n```\n\nAfter.", inside=True)
    assert (kept, inside) == ("After.", False)


def test_solution_code_cells_inside_a_range_are_dropped():
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("(en-ch01)=\n# 1. Demo\n\n```{exercise}\n:label: en-ch01-ex2\n\nDo it.\n```"),
        nbformat.v4.new_code_cell('def second_derivative(f, x):\n    ...\n\n'
                                  'gradlib.exercises.check("ch01-ex2", second_derivative, lang="en")'),
        nbformat.v4.new_markdown_cell("```{solution-start} en-ch01-ex2\n```\n\nSECRET prose"),
        nbformat.v4.new_code_cell("SECRET = 1", outputs=[nbformat.v4.new_output("stream", text="x")]),
        nbformat.v4.new_markdown_cell("```{solution-end}\n```"),
        nbformat.v4.new_code_cell("print(2)", execution_count=3,
                                  outputs=[nbformat.v4.new_output("stream", text="2")]),
    ]
    student = student_notebook(nb)
    assert "SECRET" not in cell_text(student)
    assert [c.cell_type for c in student.cells] == ["markdown", "markdown", "code", "code"]
    assert student.cells[2].metadata["gradbook"]["exercise"] == "ch01-ex2"
    assert student.cells[3].outputs == [] and student.cells[3].execution_count is None
    nb.cells.pop(4)
    with pytest.raises(ValueError, match="solution-end"):
        student_notebook(nb)


def test_command_line_writes_one_language(tmp_path, capsys):
    assert main(["--out", str(tmp_path), "--lang", "zh"]) == 0
    written = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.ipynb"))
    assert written == [f"zh/{md.with_suffix('.ipynb').name}" for md in SOURCES if md.parent.name == "zh"]
    nb = nbformat.read(tmp_path / written[0], as_version=4)
    assert nb.metadata["gradbook"]["lang"] == "zh" and nb.cells[0].id == HEADER_ID
    assert "wrote" in capsys.readouterr().out
