"""The grader (python -m gradlib.grade) on a class of small submissions.

The submissions are built from the student edition of chapters 1 and 2,
trimmed to the header, the setup cell and the exercise cells (the grader
finds answers by name, so it grades a trimmed notebook like a whole one);
all but the looping one are graded in one call, two kernels at a time (the
looping one spends its whole budget, so it is graded on its own, in ``make
test`` only: it is marked slow):

* ch01, English: the reference solution pasted in;
* ch01, Chinese: a typical wrong answer (the first derivative), and a
  ``train`` that calls ``sys.exit()``;
* ch01, English: the check cell deleted, the answer defined in another cell;
* ch02, English: a cell that raises, an answer whose cell raises before the
  definition, untouched stubs (``not-attempted``; so are the untouched
  ``train`` stubs of the ch01 notebooks);
* ch02, English: an answer with ``while True: pass`` (its check cell, with
  the check's own time limit switched off by ``timeout=None``, loops until
  the notebook's budget is spent, so the later cells never run; the
  grader's check of the answer is stopped by ``--check-timeout``);
* ch01, English: a correct answer, then a cell that ignores the interrupt
  (``except KeyboardInterrupt: pass`` in a loop; the grader kills its kernel
  after ``INTERRUPT_GRACE``), and an answer that ignores the interrupt when
  the grader checks it (slow, graded apart like the looping one);
* a file that is not JSON, and a file that does not exist.
"""

import asyncio
import csv
import os
import re
import time
from pathlib import Path

import nbformat
import pytest
from chapter_solutions import CHECK_LINE, code_cells, solution_parts

from gradlib import exercises, grade
from gradlib.classroom.grade import CHECK_TAG
from tools.notebooks import ROOT
from tools.student_edition import source_notebook, student_notebook

# Chapter 2's auto-checked exercises, from the registry (adding an exercise needs no edit here).
CH02 = [exercise for exercise in exercises.exercise_ids() if exercise.startswith("ch02-")]
TIMEOUT, CHECK_TIMEOUT = 40, 15   # the looping notebook spends both, so they stay short
STUBBORN_TIMEOUT = 30             # the notebook that ignores the interrupt spends it
# The notebooks that finish get budgets they never come near, even on a loaded 2-core box.
GENEROUS = dict(timeout=180, check_timeout=60)


def reference_solution(lang, chapter_file, exercise):
    """The reference solution cell of ``exercise`` in the chapter source."""
    text = (ROOT / "chapters" / lang / chapter_file).read_text(encoding="utf-8")
    solution, _ = solution_parts(text)
    for code in code_cells("\n".join(solution)):
        if f'check("{exercise}"' in code:
            return code.strip("\n")
    raise LookupError(exercise)


def trimmed_student_edition(lang, chapter_file):
    """The student edition, keeping the header, import-only cells and exercises."""
    nb = student_notebook(source_notebook(ROOT / "chapters" / lang / chapter_file))

    def keep(index, cell):
        if index == 0 or CHECK_TAG in cell.metadata.get("tags", []):
            return True
        if cell.cell_type == "markdown":
            return "{exercise}" in cell.source
        lines = [l for l in cell.source.splitlines() if l.strip() and not l.startswith("#")]
        return bool(lines) and all(re.match(r"(import|from) \w", l) for l in lines)

    nb.cells = [cell for i, cell in enumerate(nb.cells) if keep(i, cell)]
    return nb


def check_cell(nb, exercise):
    return next(c for c in nb.cells if c.metadata.get("gradbook", {}).get("exercise") == exercise)


def setup_index(nb):
    return next(i for i, c in enumerate(nb.cells) if c.cell_type == "code" and "import gradlib" in c.source)


FIRST_DERIVATIVE = '''\
def second_derivative(f, x):
    x = tf.convert_to_tensor(x, tf.float32)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return tape.gradient(y, x)

gradlib.exercises.check("ch01-ex2", second_derivative, lang="zh")
'''


EXITS = '''\
def train(loss_fn, w, steps, learning_rate=0.1):
    import sys
    sys.exit(1)

'''

STUBBORN = '''\
import time
while True:   # ignores the grader's interrupt
    try:
        time.sleep(0.5)
    except KeyboardInterrupt:
        pass
'''

STUBBORN_ANSWER = '''\
def second_derivative(f, x):
    import time
    while True:   # ignores the grader's interrupt
        try:
            time.sleep(0.5)
        except KeyboardInterrupt:
            pass
'''


def write(nb, path):
    nbformat.write(nb, str(path))
    return path


def submissions(folder: Path):
    ch01 = "01_gradients.md"
    ch02 = "02_stop_gradient.md"
    paths = {}

    nb = trimmed_student_edition("en", ch01)
    check_cell(nb, "ch01-ex2").source = reference_solution("en", ch01, "ch01-ex2")
    paths["correct"] = write(nb, folder / "correct.ipynb")

    nb = trimmed_student_edition("zh", ch01)
    check_cell(nb, "ch01-ex2").source = FIRST_DERIVATIVE
    cell = check_cell(nb, "ch01-ex3")
    cell.source = EXITS + cell.source.splitlines()[-1]
    paths["wrong"] = write(nb, folder / "wrong.ipynb")

    nb = trimmed_student_edition("en", ch01)
    nb.cells.remove(check_cell(nb, "ch01-ex2"))
    answer = CHECK_LINE.sub("", reference_solution("en", ch01, "ch01-ex2")).strip()
    assert "check(" not in answer and "def second_derivative" in answer
    nb.cells.append(nbformat.v4.new_code_cell(answer))
    paths["deleted"] = write(nb, folder / "deleted.ipynb")

    nb = trimmed_student_edition("en", ch02)
    nb.cells.insert(setup_index(nb) + 1, nbformat.v4.new_code_cell("1 / 0"))
    check_cell(nb, "ch02-ex1").source = reference_solution("en", ch02, "ch02-ex1")
    cell = check_cell(nb, "ch02-ex2")
    cell.source = 'raise RuntimeError("not finished")\n\n' + cell.source
    paths["raising"] = write(nb, folder / "raising.ipynb")

    nb = trimmed_student_edition("en", ch02)
    cell = check_cell(nb, "ch02-ex1")
    cell.source = cell.source.replace("...  # your code here", "while True:\n        pass")
    # the check would stop the loop after its default 30 s (timeout=): switch that off, so that the
    # cell loops until the notebook's budget is spent
    cell.source = cell.source.replace('lang="en")', 'lang="en", timeout=None)')
    assert "timeout=None" in cell.source
    paths["loop"] = write(nb, folder / "loop.ipynb")

    nb = trimmed_student_edition("en", ch01)
    cell = check_cell(nb, "ch01-ex2")
    cell.source = reference_solution("en", ch01, "ch01-ex2")
    nb.cells.insert(nb.cells.index(cell) + 1, nbformat.v4.new_code_cell(STUBBORN))
    paths["stubborn"] = write(nb, folder / "stubborn.ipynb")

    nb = trimmed_student_edition("en", ch01)
    cell = check_cell(nb, "ch01-ex2")  # its check (of the stub) runs; the answer the grader checks comes later
    nb.cells.insert(nb.cells.index(cell) + 1, nbformat.v4.new_code_cell(STUBBORN_ANSWER))
    paths["stubborn_check"] = write(nb, folder / "stubborn_check.ipynb")

    paths["invalid"] = folder / "invalid.ipynb"
    paths["invalid"].write_text('{"cells": [', encoding="utf-8")
    paths["missing"] = folder / "missing.ipynb"
    return paths


def children():
    """Live (non-zombie) child processes of this process."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == os.getpid() and fields[0] != "Z":
            found.add(int(stat.parent.name))
    return found


def grade_class(folder, paths, jobs, timeout=TIMEOUT, check_timeout=CHECK_TIMEOUT):
    """Grade ``paths`` with ``python -m gradlib.grade``; the CSV's header and rows, and left-over processes."""
    out = folder / "grades.csv"
    before = children()
    code = grade.main([str(p) for p in paths.values()]
                      + ["--out", str(out), "--timeout", str(timeout), "--check-timeout", str(check_timeout),
                         "--jobs", str(jobs)])
    with out.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        header, rows = reader.fieldnames, list(reader)
    by_file = {}
    for row in rows:
        by_file.setdefault(Path(row["file"]).stem, []).append(row)
    return {"code": code, "header": header, "rows": rows, "by_file": by_file,
            "left_over": children() - before, "paths": paths}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The class without the notebook that loops (two kernels at a time)."""
    folder = tmp_path_factory.mktemp("class")
    paths = submissions(folder)
    del paths["loop"], paths["stubborn"], paths["stubborn_check"]
    return grade_class(folder, paths, jobs=2, **GENEROUS)


@pytest.fixture(scope="module")
def graded_loop(tmp_path_factory):
    """The notebook that loops forever: it spends its whole budget (TIMEOUT s), so it runs in make test only."""
    folder = tmp_path_factory.mktemp("loop")
    paths = {"loop": submissions(folder)["loop"]}
    return grade_class(folder, paths, jobs=1)


@pytest.fixture(scope="module")
def graded_stubborn(tmp_path_factory):
    """The notebooks whose cell, or answer, ignores the interrupt: they spend their budgets, so they run in make
    test only."""
    folder = tmp_path_factory.mktemp("stubborn")
    made = submissions(folder)
    paths = {name: made[name] for name in ("stubborn", "stubborn_check")}
    started = time.monotonic()
    result = grade_class(folder, paths, jobs=2, timeout=STUBBORN_TIMEOUT, check_timeout=CHECK_TIMEOUT)
    result["seconds"] = time.monotonic() - started
    return result


def one(graded, name, exercise=None):
    rows = [r for r in graded["by_file"][name] if exercise is None or r["exercise"] == exercise]
    assert len(rows) == 1, rows
    return rows[0]


def test_the_run_completes_with_exit_code_0_and_kills_every_kernel(graded):
    assert graded["code"] == 0
    assert graded["header"] == grade.COLUMNS
    assert {"file", "exercise", "passed", "feedback"} <= set(graded["header"])
    assert graded["left_over"] == set()


def test_rows_follow_the_order_of_the_files(graded):
    order = list(dict.fromkeys(Path(r["file"]).stem for r in graded["rows"]))
    assert order == list(graded["paths"])
    assert [r["exercise"] for r in graded["by_file"]["raising"]] == CH02


def test_reference_solution_passes(graded):
    row = one(graded, "correct", "ch01-ex2")
    assert row["exercise"] == "ch01-ex2" and row["answer"] == "second_derivative"
    assert (row["status"], row["passed"], row["lang"], row["check_cell"]) == ("graded", "1", "en", "present")
    assert row["feedback"].startswith("correct on 7 functions") and row["notes"] == ""


def test_wrong_answer_fails_with_the_message_in_the_notebooks_language(graded):
    row = one(graded, "wrong", "ch01-ex2")
    assert (row["status"], row["passed"], row["lang"]) == ("graded", "0", "zh")
    assert row["feedback"].startswith("对 f(x) = x**3，在 x = 1.5 处你的结果为 6.75，这是一阶导数 f'(x)；应为 f''(x) = 9。")


def test_an_answer_that_calls_sys_exit_is_graded_not_a_grader_error(graded):
    row = one(graded, "wrong", "ch01-ex3")
    assert (row["status"], row["passed"], row["answer"]) == ("graded", "0", "train")
    assert row["feedback"].startswith("你的代码调用了 sys.exit()（1）"), row


def test_an_untouched_stub_is_not_attempted(graded):
    for name in ("correct", "deleted"):
        row = one(graded, name, "ch01-ex3")
        assert (row["status"], row["passed"], row["answer"]) == ("not-attempted", "0", "train")
        assert row["feedback"] == "`train` is still the student edition's stub (unchanged apart from comments " \
                                  "and spacing): not attempted"


def test_deleted_check_cell_is_reported_and_the_answer_still_graded(graded):
    row = one(graded, "deleted", "ch01-ex2")
    assert (row["status"], row["passed"], row["check_cell"]) == ("graded", "1", "deleted")
    assert row["feedback"].startswith("the check cell for ch01-ex2 was deleted; graded `second_derivative` anyway")


def test_cells_that_raise_do_not_stop_the_grading(graded):
    rows = {r["exercise"]: r for r in graded["by_file"]["raising"]}
    ex1, ex2 = rows.pop("ch02-ex1"), rows.pop("ch02-ex2")
    assert (ex1["status"], ex1["passed"]) == ("graded", "1")
    assert (ex2["status"], ex2["passed"], ex2["answer"]) == ("not-defined", "0", "scaled_gradient")
    assert ex2["feedback"].startswith("`scaled_gradient` is not defined")
    assert rows, "chapter 2 has untouched stubs besides ex1 and ex2"
    for stub in rows.values():  # untouched stubs (`...`): not attempted, not a specific mistake
        assert (stub["status"], stub["passed"]) == ("not-attempted", "0")
        assert "still the student edition's stub" in stub["feedback"], stub
    assert ex1["notes"].startswith("cell 3 (`1 / 0`) raised ZeroDivisionError: division by zero; cell 7 (`raise")
    assert "RuntimeError: not finished" in ex1["notes"] and all(r["notes"] == ex1["notes"] for r in rows.values())


@pytest.mark.slow
def test_a_notebook_that_loops_forever_is_stopped(graded_loop):
    assert graded_loop["code"] == 0 and graded_loop["left_over"] == set()
    rows = graded_loop["by_file"]["loop"]
    assert [r["exercise"] for r in rows] == CH02
    assert all(r["status"] == "timeout" and r["passed"] == "0" for r in rows)
    ex1, ex2 = rows[0], rows[1]
    assert ex1["feedback"] == f"the check of `clipped_identity_ste` did not finish within {CHECK_TIMEOUT} s: " \
                              "does it loop forever?"
    assert ex2["feedback"].startswith(f"`scaled_gradient` is not defined: the notebook ran out of time ({TIMEOUT} s)")
    later = len(CH02) - 1  # one code cell per exercise (its stub and check call) after the looping one
    assert ex1["notes"] == (f"cell 4 (`def clipped_identity_ste(x):`) was stopped after the notebook's {TIMEOUT} s; "
                            f"{later} later code cells were not run")


@pytest.mark.slow
def test_a_notebook_that_ignores_the_interrupt_is_killed(graded_stubborn):
    assert graded_stubborn["code"] == 0 and graded_stubborn["left_over"] == set()
    rows = graded_stubborn["by_file"]["stubborn"]
    nb = nbformat.read(str(graded_stubborn["paths"]["stubborn"]), as_version=4)
    cell = next(i for i, c in enumerate(nb.cells) if c.source == STUBBORN) + 1
    assert [r["exercise"] for r in rows] == ["ch01-ex2", "ch01-ex3"]
    for row, name in zip(rows, ("second_derivative", "train")):
        # the correct answer defined before the loop and the answer never defined alike: not checked
        assert (row["status"], row["passed"]) == ("timeout", "0")
        assert row["feedback"] == (f"`{name}` could not be checked: the notebook ignored the interrupt in cell "
                                   f"{cell} (after its {STUBBORN_TIMEOUT} s), so the grader stopped its kernel "
                                   "before the answers were checked")
        assert row["notes"] == (f"cell {cell} (`import time`) ignored the interrupt after the notebook's "
                                f"{STUBBORN_TIMEOUT} s, so the grader stopped the kernel; 1 later code cell was not run")
    # killed after the grace period, long before the watchdog (which would add the checks' budgets)
    # (the checks would have waited CHECK_TIMEOUT each, behind the loop)
    assert graded_stubborn["seconds"] < STUBBORN_TIMEOUT + grade.INTERRUPT_GRACE + 20


@pytest.mark.slow
def test_an_answer_that_ignores_the_interrupt_is_killed_and_the_later_checks_say_so(graded_stubborn):
    ex2, ex3 = graded_stubborn["by_file"]["stubborn_check"]
    assert (ex2["exercise"], ex2["status"], ex2["passed"]) == ("ch01-ex2", "timeout", "0")
    assert ex2["feedback"] == f"the check of `second_derivative` did not finish within {CHECK_TIMEOUT} s: " \
                              "does it loop forever?"
    assert (ex3["exercise"], ex3["status"], ex3["passed"]) == ("ch01-ex3", "timeout", "0")
    assert ex3["feedback"] == (f"`train` could not be checked: the check of `second_derivative` ignored the "
                               f"interrupt after {CHECK_TIMEOUT} s, so the grader stopped the kernel")
    assert ex2["notes"] == ex3["notes"] == (f"the check of `second_derivative` ignored the interrupt after "
                                            f"{CHECK_TIMEOUT} s, so the grader stopped the kernel")


def test_invalid_and_missing_files_get_one_row_each(graded):
    invalid, missing = one(graded, "invalid"), one(graded, "missing")
    assert (invalid["status"], invalid["exercise"], invalid["passed"]) == ("invalid-notebook", "", "0")
    assert invalid["feedback"].startswith("not a valid notebook: not valid JSON")
    assert (missing["status"], missing["feedback"]) == ("file-not-found", "file not found")


# -- without a kernel ---------------------------------------------------------------

def test_chapter_and_language_are_found_without_check_cells():
    nb = trimmed_student_edition("zh", "02_stop_gradient.md")
    info = grade.inspect_notebook(nb)
    assert (info.chapters, info.lang, sorted(info.checks)) == (["ch02"], "zh", CH02)
    assert info.checks["ch02-ex2"]["answer"] == "scaled_gradient"
    nb.cells = [c for c in nb.cells if CHECK_TAG not in c.metadata.get("tags", [])]
    info = grade.inspect_notebook(nb)  # from the notebook metadata
    assert (info.chapters, info.lang, info.checks) == (["ch02"], "zh", {})
    nb.metadata = {}
    info = grade.inspect_notebook(nb)  # from the exercise labels
    assert (info.chapters, info.lang) == (["ch02"], "zh")
    assert grade.chapter_exercises(info.chapters) == CH02


def test_check_calls_are_parsed():
    source = 'x = 1\ngradlib.exercises.check("ch01-ex2", second_derivative,\n    lang="zh")\ncheck("ch03-ex1", f)'
    assert grade.check_calls(source) == [{"exercise": "ch01-ex2", "answer": "second_derivative", "lang": "zh"}]
    assert grade.check_calls('exercises.check("ch02-ex1", lambda x: x)') == [
        {"exercise": "ch02-ex1", "answer": None, "lang": None}]
    # the call's parts, not its spelling: a string that only looks like a call is not one
    assert grade.check_calls('s = \'exercises.check("ch01-ex2", f, lang="en")\'') == []
    assert grade.check_calls('gradlib.exercises.check(\n  "ch05-ex3" , answer=None, lang = "en")') == [
        {"exercise": "ch05-ex3", "answer": None, "lang": "en"}]
    # IPython magics are blanked; a cell that does not parse is read line by line
    assert grade.check_calls('%timeit f(1)\n!ls\nexercises.check("ch01-ex3", train)') == [
        {"exercise": "ch01-ex3", "answer": "train", "lang": None}]
    broken = 'def f(x:\n    return x\ngradlib.exercises.check("ch02-ex2", scaled_gradient, lang="zh")'
    assert grade.check_calls(broken) == [{"exercise": "ch02-ex2", "answer": "scaled_gradient", "lang": "zh"}]
    assert grade.check_calls('def f(x:\nexercises.check("ch02-ex2",\n   f)') == []


def test_a_notebook_without_exercises_gets_one_row(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("print(1)")]
    path = write(nb, tmp_path / "empty.ipynb")
    rows = grade.grade([path], lang="zh")
    assert [(r["status"], r["lang"], r["exercise"], r["key"]) for r in rows] == [
        ("no-exercises", "zh", "", "grade.no_exercises")]
    assert rows[0]["feedback"].startswith("没有找到可自动检查的练习：笔记本中既没有检查单元格")


@pytest.mark.parametrize("argv", [[], ["a.ipynb"], ["a.ipynb", "--out", "g.csv", "--timeout", "0"],
                                  ["a.ipynb", "--out", "g.csv", "--jobs", "0"],
                                  ["a.ipynb", "--out", "g.csv", "--kernel", "no-such-kernel"]])
def test_usage_errors_exit_with_2(argv, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stop:
        grade.main(argv)
    assert stop.value.code == 2
    assert not (tmp_path / "g.csv").exists()


def test_every_exercise_of_the_test_chapters_has_an_answer_name():
    assert exercises.answer_name("ch01-ex2") == "second_derivative"
    assert exercises.answer_name("ch02-ex1") == "clipped_identity_ste"


def test_grade_works_inside_a_running_event_loop(tmp_path):
    """As in a Jupyter cell, where asyncio.run() alone would refuse to start."""
    broken = tmp_path / "broken.ipynb"
    broken.write_text("{not json", encoding="utf-8")

    async def in_a_notebook_cell():
        return grade.grade([broken])

    rows = asyncio.run(in_a_notebook_cell())
    assert [(r["status"], r["passed"], r["key"]) for r in rows] == [("invalid-notebook", 0, "grade.invalid")]
    zh = grade.grade([broken], lang="zh")  # the reason is in the asked language too
    assert zh[0]["feedback"].startswith("不是有效的笔记本：不是合法的 JSON（")
