"""Numbers in prose are computed: no page types a number its cells compute.

``tools/prose_numbers.py`` lists the decimal numbers of a page's prose that
are neither literals of its code cells nor declared with a reason in a
``<!-- typed: ... -->`` comment; every such number must come from the build through
``gradlib.glue`` and ``{glue:text}``.  The fault tests show what it catches.
"""

from pathlib import Path

import pytest

import gradlib
from tools import book
from tools.book import ROOT
from tools.prose_numbers import typed_numbers


PAGES = book.pages(root=ROOT)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_number_is_typed_by_hand(page):
    problems = typed_numbers(page, root=ROOT)
    assert not problems, "glue these numbers from a cell ({glue:text}) or declare an input:\n" + "\n".join(
        map(str, problems))


@pytest.fixture
def chapter(tmp_path, myst_header):
    """``chapter(prose, code)``: a page ``01_demo.md`` with one code cell, then the prose."""
    def make(prose: str, code: str = "x = 1") -> Path:
        path = tmp_path / "01_demo.md"
        path.write_text(myst_header + f"\n# Demo\n\n```{{code-cell}} ipython3\n{code}\n```\n\n{prose}\n",
                        encoding="utf-8")
        return path
    return make


def numbers(path: Path):
    return [typed.number for typed in typed_numbers(path)]


def test_a_stale_typed_result_is_caught(chapter):
    # Chapter 6's sentence as it was: the cells printed +0.250 and +0.143.
    path = chapter("DANN's gain on the target, +0.247 and +0.133 with Adam on these two seeds.")
    assert numbers(path) == ["+0.247", "+0.133"]


def test_glued_numbers_code_and_inputs_pass(chapter):
    path = chapter("The gain is {glue:text}`gain:+.3f` at a learning rate of 0.03, "
                             "see `tf.Variable(2.5)`.", code="lr = 0.03\ngain = gradlib.glue('gain', 0.25)")
    assert numbers(path) == []


def test_versions_sections_arxiv_and_links_are_not_numbers(chapter):
    path = chapter("Since TensorFlow 2.21 (and TF 1.9, Keras 3.15, TF 2.19–2.21), see §5.1.1, "
                             "arXiv:1308.3432, JMLR 17(59) and [a link](https://example.org/v1.5).")
    assert numbers(path) == []


def test_numbers_in_math_and_exercise_text_are_checked(chapter):
    path = chapter("$$\nE = 0.48\n$$\n\n```{exercise}\n:label: en-ch01-ex1\n\nShow that 1.79 is right.\n```")
    assert numbers(path) == ["0.48", "1.79"]


def test_indented_code_in_a_solution_is_code(chapter):
    path = chapter("Like this:\n\n    gradlib.run_graph(build)  # 25.0\n")
    assert numbers(path) == []


def test_declared_inputs_pass_and_stale_or_bare_declarations_fail(chapter):
    ok = chapter("<!-- typed: 0.75 — the exponent of the paper's schedule -->\n\n$\\mu_0 (1 + 10p)^{-0.75}$")
    assert numbers(ok) == []
    stale = chapter("<!-- typed: 0.75 — the exponent of the paper's schedule -->\n\nNo number here.")
    assert [t.context for t in typed_numbers(stale)] == ["declared by `<!-- typed: -->` but no longer in the prose"]
    bare = chapter("<!-- typed: 0.75 -->\n\n$(1 + 10p)^{0.75}$")
    assert any("needs a number and a reason" in t.context for t in typed_numbers(bare))


def test_the_checker_finds_what_the_old_chapter_6_typed(chapter):
    # The sentence the review found stale, and the ln 2 claim next to it.
    old = ("target, +0.247 and +0.133 with Adam on these two seeds, is gone: −0.013 and\n"
           "+0.003, differences of a few points out of 300.")
    assert [t.number for t in typed_numbers(chapter(old))] == [
        "+0.247", "+0.133", "−0.013", "+0.003"]


# -- gradlib.glue -----------------------------------------------------------------

@pytest.mark.build
def test_glue_displays_what_myst_nb_glue_displays(monkeypatch):
    import IPython.display
    from myst_nb.ext import glue as myst_glue

    calls = []
    monkeypatch.setattr(IPython.display, "display", lambda *a, **k: calls.append(("gradlib", a, k)))
    monkeypatch.setattr(myst_glue, "ipy_display", lambda *a, **k: calls.append(("myst_nb", a, k)))
    monkeypatch.setenv("GRADBOOK_BUILD", "1")
    for value in (0.25, -3, "text", 1e-30):
        assert gradlib.glue("key", value) == value
        myst_glue.glue("key", value, display=False)
    ours, theirs = calls[0::2], calls[1::2]
    assert [c[1:] for c in ours] == [c[1:] for c in theirs]


def test_glue_converts_numpy_scalars_to_python_numbers(monkeypatch):
    import IPython.display
    import numpy as np

    calls = []
    monkeypatch.setattr(IPython.display, "display", lambda *a, **k: calls.append(a[0]))
    monkeypatch.setenv("GRADBOOK_BUILD", "1")
    assert gradlib.glue("mean", np.float32(0.5)) == 0.5 and type(gradlib.glue("n", np.int64(3))) is int
    assert calls == [{"application/papermill.record/text/plain": "0.5"},
                     {"application/papermill.record/text/plain": "3"}]


def test_glue_shows_nothing_in_a_live_kernel(monkeypatch):
    import IPython.display

    calls = []
    monkeypatch.setattr(IPython.display, "display", lambda *a, **k: calls.append(a))
    monkeypatch.delenv("GRADBOOK_BUILD", raising=False)
    assert gradlib.glue("x", 1.5) == 1.5 and calls == []


@pytest.mark.parametrize("name, value, error, message", [
    ("x", True, TypeError, "real number or a string"),
    ("x", [1.0], TypeError, "real number or a string"),
    ("x", None, TypeError, "real number or a string"),
    (3, 1.0, TypeError, "`name` must be a string"),
    ("two words", 1.0, ValueError, "`name` must be letters"),
    ("", 1.0, ValueError, "`name` must be letters"),
])
def test_glue_bad_input(name, value, error, message):
    with pytest.raises(error, match=message):
        gradlib.glue(name, value)


def test_a_number_at_the_end_of_a_sentence_is_found(chapter):
    assert numbers(chapter("The gain is 0.247. The loss is 1.5.")) == ["0.247", "1.5"]


def test_fenced_code_blocks_are_code_and_directives_are_prose(chapter):
    path = chapter("```bash\npip install x==2.5.1  # 0.33\n```\n\n```{exercise}\n:label: en-ch01-ex1\n\n"
                             "Show that 1.79 holds.\n```\n\n```python\ny = 0.77\n```\n\nAnd 0.91 too.")
    assert numbers(path) == ["1.79", "0.91"]
