"""The grader's details that need no kernel: the budgets' defaults, the stub's
fingerprint (``not-attempted``), the notes' wording, the install hint, and a
quiet ``python -m gradlib.grade``.
"""

import ast
import inspect
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from gradlib import grade
from gradlib.classroom.grade import _notes, _Run, _untouched, definition_fingerprint, stub_fingerprint
from tools.notebooks import ROOT

STUB = '''\
def second_derivative(f, x):
    ...  # your code here
    return None

gradlib.exercises.check("ch01-ex2", second_derivative, lang="en")
'''


def fingerprint_of(source, name="second_derivative"):
    return stub_fingerprint(next(n for n in ast.parse(source).body if getattr(n, "name", None) == name))


def notebook(*sources):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    return nb


# -- H1: the budgets ----------------------------------------------------------------

def test_the_default_notebook_budget_is_600_seconds(tmp_path, monkeypatch):
    assert grade.NOTEBOOK_TIMEOUT == 600
    assert (grade.CHECK_TIMEOUT, grade.STARTUP_TIMEOUT, grade.INTERRUPT_GRACE, grade.WATCHDOG_GRACE) == (60, 60, 10, 30)
    assert grade.INTERRUPT_GRACE < grade.WATCHDOG_GRACE  # the grace kill comes before the watchdog's
    defaults = inspect.signature(grade.grade_file).parameters
    assert defaults["timeout"].default == grade.NOTEBOOK_TIMEOUT
    assert defaults["check_timeout"].default == grade.CHECK_TIMEOUT
    assert defaults["startup_timeout"].default == grade.STARTUP_TIMEOUT
    seen = {}
    monkeypatch.setattr(grade, "grade", lambda paths, **options: seen.update(options) or [])
    assert grade.main(["a.ipynb", "--out", str(tmp_path / "g.csv")]) == 0
    assert (seen["timeout"], seen["check_timeout"]) == (600, 60)
    assert "[--timeout 600]" in grade.__doc__


# -- M6: not attempted ----------------------------------------------------------------

def test_the_stub_fingerprint_ignores_comments_and_spacing_only():
    stub = fingerprint_of(STUB)
    assert stub == fingerprint_of("# my answer\ndef second_derivative( f,x ):\n\n    ...\n    return None  # todo\n")
    for attempt in ("def second_derivative(f, x):\n    return None\n",                 # the `...` removed
                    "def second_derivative(f, x):\n    ...\n    return 0\n",            # another value
                    "def second_derivative(f, y):\n    ...\n    return None\n",         # a parameter renamed
                    "@tf.function\ndef second_derivative(f, x):\n    ...\n    return None\n"):
        assert fingerprint_of(attempt) != stub, attempt


def test_the_definition_the_notebook_leaves_is_compared():
    stub = fingerprint_of(STUB)
    assert definition_fingerprint(notebook("import gradlib", STUB), "second_derivative") == stub
    answer = "def second_derivative(f, x):\n    return 9.0\n"
    # the last definition counts: a stub after an answer replaces it, an answer after the stub replaces it
    assert definition_fingerprint(notebook(answer, STUB), "second_derivative") == stub
    assert definition_fingerprint(notebook(STUB, answer), "second_derivative") != stub
    # anything else that binds the name after the stub: not the stub (graded as before)
    for later in ("second_derivative = lambda f, x: 9.0", "from mine import second_derivative",
                  "for second_derivative in [1]: pass", "def helper():\n    def second_derivative(f, x):\n"
                  "        ...\n        return None\n"):
        assert definition_fingerprint(notebook(STUB, later), "second_derivative") is None, later
    # a cell that does not parse never runs, so it defines nothing; magics are ignored
    assert definition_fingerprint(notebook(STUB, "def second_derivative(f, x:\n"), "second_derivative") == stub
    assert definition_fingerprint(notebook("%time x = 1\n" + STUB), "second_derivative") == stub
    assert definition_fingerprint(notebook("x = 1"), "second_derivative") is None


def test_the_stub_fingerprint_comes_from_the_check_cells_metadata():
    nb = notebook("import gradlib", STUB)
    info = grade.inspect_notebook(nb)
    assert info.stubs == {}  # the book's own chapters, older student editions: graded as before
    nb.cells[1].metadata["gradbook"] = {"exercise": "ch01-ex2", "answer": "second_derivative", "lang": "en",
                                        "stub": fingerprint_of(STUB)}
    assert grade.inspect_notebook(nb).stubs == {"ch01-ex2": fingerprint_of(STUB)}


def test_a_not_attempted_row():
    result = {"exercise": "ch01-ex2", "status": "not-attempted", "answer": "second_derivative"}
    for lang, text in (("en", "`second_derivative` is still the student edition's stub"),
                       ("zh", "`second_derivative` 仍是学生版中的原始模板")):
        row = grade._outcome(result, _Run(), "second_derivative", lang, 600, 60)
        assert (row["status"], row.get("passed", 0)) == ("not-attempted", 0)
        assert str(row["feedback"]).startswith(text) and row["feedback"].key == "grade.not_attempted"
    assert "``not-attempted``" in grade.__doc__


def test_an_attempt_the_stub_replaces_is_still_an_attempt():
    # The student drafted an answer in a cell above the untouched check cell: the stub, run later,
    # replaces it, so the check fails on the stub; but the student did attempt it.
    stub = fingerprint_of(STUB)
    attempt = "def second_derivative(f, x):\n    return 9.0\n"
    assert _untouched(notebook("import gradlib", STUB), "second_derivative", stub)
    assert not _untouched(notebook(attempt, STUB), "second_derivative", stub)
    assert not _untouched(notebook(STUB, attempt), "second_derivative", stub)
    assert not _untouched(notebook("x = 1"), "second_derivative", stub)  # never defined: not-defined, not this


def test_a_failure_of_the_check_itself_is_a_grader_error_not_the_students():
    result = {"exercise": "ch01-ex2", "status": "graded", "answer": "second_derivative", "passed": False,
              "message": "the check itself failed on your answer (RuntimeError: bug)", "key": "common.check_failed"}
    row = grade._outcome(result, _Run(), "second_derivative", "en", 600, 60)
    assert (row["status"], row.get("passed", 0)) == ("grader-error", 0)
    assert row["feedback"].key == "common.check_failed"
    wrong = dict(result, key="ch01.first_derivative", message="your value is 6")
    assert grade._outcome(wrong, _Run(), "second_derivative", "en", 600, 60)["status"] == "graded"


# -- M3: a kernel that ignored the interrupt ---------------------------------------------

def test_the_notes_say_the_kernel_was_stopped():
    run = _Run(timeout_cell=5, timeout_line="`while True:`", skipped=2, killed_cell=5)
    assert _notes(run, "en", 30, 60) == ("cell 5 (`while True:`) ignored the interrupt after the notebook's 30 s, "
                                         "so the grader stopped the kernel; 2 later code cells were not run")
    assert "强制结束了内核" in _notes(run, "zh", 30, 60)
    row = grade._outcome(None, run, "train", "en", 30, 60)
    assert row["status"] == "timeout" and row["feedback"].key == "grade.interrupt_ignored"
    run = _Run(killed_check="train")
    assert _notes(run, "en", 30, 60) == "the check of `train` ignored the interrupt after 60 s, so the grader " \
                                        "stopped the kernel"
    row = grade._outcome(None, run, "second_derivative", "en", 30, 60)
    assert row["status"] == "timeout" and str(row["feedback"]).startswith(
        "`second_derivative` could not be checked: the check of `train` ignored the interrupt")


# -- M4, L7, L8: wording ---------------------------------------------------------------------

def test_no_result_names_what_silences_the_grader():
    for lang, words in (("en", ("print", "IPython's output display")), ("zh", ("print", "IPython 的输出显示"))):
        text = grade._msg("no_result", lang)
        assert all(word in text for word in words) and "sys.stdout" not in text and "gradlib" not in text


@pytest.mark.parametrize("count, en", [(1, "1 later code cell was not run"), (2, "2 later code cells were not run")])
def test_the_notes_count_in_english(count, en):
    run = _Run(errors=[f"cell {i} raised" for i in range(3 + count)], timeout_cell=4, timeout_line="`x`",
               skipped=count)
    notes = _notes(run, "en", 120, 60)
    assert f"{count} more cell{'s' if count > 1 else ''} raised" in notes
    assert notes.endswith(f"was stopped after the notebook's 120 s; {en}")
    assert f"另有 {count} 个单元格抛出异常" in _notes(run, "zh", 120, 60)


def test_the_missing_dependency_hint_names_the_extra(monkeypatch, capsys):
    import builtins

    real_import = builtins.__import__

    def no_nbclient(name, *args, **kwargs):
        if name == "nbclient":
            raise ImportError("No module named 'nbclient'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_nbclient)
    with pytest.raises(SystemExit) as stop:
        grade.main(["a.ipynb", "--out", "g.csv"])
    assert stop.value.code == 2
    assert 'pip install "gradlib[classroom]"' in capsys.readouterr().err


def test_the_grader_process_is_quiet_and_importing_gradlib_changes_no_environment(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TF_")}
    env["PYTHONPATH"] = str(ROOT)
    graded = subprocess.run([sys.executable, "-m", "gradlib.grade", "missing.ipynb", "--out", "g.csv"],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert graded.returncode == 0, graded.stderr
    assert "port.cc" not in graded.stderr and "oneDNN" not in graded.stderr, graded.stderr
    assert graded.stderr.splitlines() == ["missing.ipynb: file-not-found", "wrote 1 rows to g.csv"]
    probe = "import os, gradlib; print(os.environ.get('TF_ENABLE_ONEDNN_OPTS'), os.environ.get('TF_CPP_MIN_LOG_LEVEL'))"
    user = subprocess.run([sys.executable, "-c", probe, "-m", "gradlib.grade"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert user.stdout.split() == ["None", "None"], user.stderr


def test_the_makefile_grades_with_the_default_budget():
    line = next(l for l in (ROOT / "Makefile").read_text().splitlines() if "-m gradlib.grade" in l)
    assert "--timeout" not in line, line  # make grade takes NOTEBOOK_TIMEOUT from the grader
    assert Path(grade.__file__).name == "grade.py"
