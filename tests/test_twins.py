"""tools/twins.py: the en and zh chapters carry the same code and labels."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tools import book
from tools.twins import check_twins, code_cells, exercise_ids, labels, normalise_code

ROOT = Path(__file__).resolve().parents[1]
EN = Path("chapters/en/01_demo.md")
ZH = Path("chapters/zh/01_demo.md")


def edit(root: Path, rel: Path, old: str, new: str, count: int = 1) -> None:
    """Replace ``old`` (which must occur) by ``new`` in ``root/rel``."""
    path = root / rel
    text = path.read_text(encoding="utf-8")
    assert old in text, f"fixture changed: {old!r} not in {rel}"
    path.write_text(text.replace(old, new, count), encoding="utf-8")


def problems_mentioning(problems: list[str], *words: str) -> list[str]:
    return [p for p in problems if all(w in p for w in words)]


# -- the repository ----------------------------------------------------------

def test_repository_chapters_are_twins():
    assert book.languages(ROOT) == ("en", "zh")
    names = {lang: [p.name for p in book.pages(lang, ROOT)] for lang in book.languages(ROOT)}
    assert names["en"] == names["zh"] and len(names["en"]) >= 8, names
    problems = check_twins(ROOT)
    assert problems == [], "\n".join(problems)


# -- the fixture book ----------------------------------------------------------

def test_fixture_book_passes(mini_book):
    assert check_twins(mini_book) == []
    assert exercise_ids(mini_book / EN) == ["ch01-ex1", "ch01-ex2"]
    assert labels(mini_book / ZH)[:2] == ["zh-ch01", "zh-ch01-lists"]
    assert [c["options"] for c in code_cells(mini_book / EN)][2] == {"tags": ["raises-exception"]}


def test_missing_twin_is_named(mini_book):
    (mini_book / ZH).unlink()
    problems = check_twins(mini_book)
    assert problems_mentioning(problems, "chapters/zh/01_demo.md is missing", "chapters/en/01_demo.md")


def test_changed_number_fails(mini_book):
    edit(mini_book, ZH, "x = 3.0", "x = 4.0")
    found = problems_mentioning(check_twins(mini_book), "code cell 2 differs")
    assert found and "3.0" in found[0] and "4.0" in found[0]


def test_changed_magic_fails(mini_book):
    edit(mini_book, ZH, "%pip install --quiet gradlib", "%pip install gradlib")
    assert problems_mentioning(check_twins(mini_book), "code cell 1 differs")


def test_extra_code_cell_fails(mini_book):
    edit(mini_book, ZH, "See {ref}", "```{code-cell} ipython3\nprint(x)\n```\n\nSee {ref}")
    assert problems_mentioning(check_twins(mini_book), "has 3 code cells", "has 4")


@pytest.mark.parametrize(
    "old, new",
    [
        ("# 我们观察的点", "# 另一条注释\n# 再一条"),          # comments only
        ('label = "梯度"', 'label = "梯度（gradient）" "，续"'),  # string literals only
        ('print(f"梯度: {label} {x}"', "print(f'x = {x}'"),     # f-string text only
    ],
)
def test_prose_only_changes_pass(mini_book, old, new):
    edit(mini_book, ZH, old, new)
    assert check_twins(mini_book) == []


def test_tag_difference_fails(mini_book):
    edit(mini_book, ZH, ":tags: [raises-exception]", ":tags: [raises-exception, hide-input]")
    assert problems_mentioning(check_twins(mini_book), "code cell 3 options differ")


def test_renamed_label_fails(mini_book):
    edit(mini_book, ZH, "(zh-ch01-lists)=", "(zh-ch01-list)=")
    assert problems_mentioning(check_twins(mini_book), "labels differ", "ch01-lists")


def test_removed_exercise_fails(mini_book):
    edit(mini_book, ZH, ":::{exercise}\n:label: zh-ch01-ex2\n\n计算它。\n:::\n", "")
    assert problems_mentioning(check_twins(mini_book), "exercise ids differ")


def test_reordered_exercises_fail(mini_book):
    text = (mini_book / ZH).read_text(encoding="utf-8")
    swapped = text.replace("zh-ch01-ex1", "@").replace("zh-ch01-ex2", "zh-ch01-ex1").replace("@", "zh-ch01-ex2")
    (mini_book / ZH).write_text(swapped, encoding="utf-8")
    found = problems_mentioning(check_twins(mini_book), "exercise ids differ")
    assert found and "['ch01-ex2', 'ch01-ex1']" in found[0]


@pytest.mark.parametrize("bad", ["ch01-lists", "en-ch01-lists"])
def test_unprefixed_label_fails(mini_book, bad):
    edit(mini_book, ZH, "(zh-ch01-lists)=", f"({bad})=")
    assert problems_mentioning(check_twins(mini_book), "chapters/zh/01_demo.md", bad, "'zh-' prefix")


def test_reference_into_other_language_fails(mini_book):
    edit(mini_book, ZH, "{ref}`zh-ch01-lists`", "{ref}`en-ch01-lists`")
    assert problems_mentioning(check_twins(mini_book), "points into the other language")


def test_normalise_code_keeps_code_drops_prose():
    a = normalise_code('y = f(x, "a")  # note\n\n!ls -l\n')
    assert a == ["y = f ( x , <str> )", "!ls -l"]
    assert normalise_code('y = f(x, "b" "c")') == a[:1]
    assert normalise_code("y = f(x, 1)") != a[:1]
    assert normalise_code("!ls") != normalise_code("!ls -l")


def test_cli_exit_status(mini_book):
    def run():
        return subprocess.run([sys.executable, "-m", "tools.twins", "--root", mini_book],
                              capture_output=True, text=True, cwd=ROOT)

    ok = run()
    assert ok.returncode == 0, ok.stdout + ok.stderr
    edit(mini_book, ZH, "x = 3.0", "x = 4.0")
    bad = run()
    assert bad.returncode == 1 and "code cell 2 differs" in bad.stdout and "zh: x = 4.0" in bad.stdout
