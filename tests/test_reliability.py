"""Reliability gates: every chapter survives restart-and-run-all and a second
"Run all" in the same kernel, and a fresh run reproduces the build's outputs."""

from __future__ import annotations

from pathlib import Path

import jupytext
import pytest

from tools import book, reliability

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def chapter(tmp_path, myst_header):
    """``chapter(*cells)``: a page ``demo.md`` with these code cells."""
    def make(*cells: str) -> Path:
        md = tmp_path / "demo.md"
        md.write_text(myst_header + "\n# Demo\n" + "".join(f"\n```{{code-cell}} ipython3\n{c}\n```\n" for c in cells),
                      encoding="utf-8")
        return md
    return make


def problems_of(md: Path):
    """Check ``md`` against a first fresh run of itself (standing in for the build)."""
    reference, problems = reliability.run_twice(jupytext.read(md), md.parent)
    return problems or reliability.check_chapter(md, reference=reference)


@pytest.mark.site
@pytest.mark.parametrize("md", [p.relative_to(ROOT).as_posix() for p in book.one_twin_each(0, ROOT)])
def test_chapter_is_rerunnable_and_deterministic(md):
    """One twin of each page (``book.one_twin_each``: the Colab simulation runs the other)."""
    assert reliability.check_chapter(ROOT / md) == []


def test_the_gates_share_out_every_page_file_once():
    """The reliability gate and the Colab simulation between them run every
    page file exactly once, one twin each, and each runs both languages."""
    gates = [book.one_twin_each(turn, ROOT) for turn in (0, 1)]
    assert sorted(gates[0] + gates[1]) == sorted(book.pages(root=ROOT))
    for gate in gates:
        assert sorted(md.name for md in gate) == sorted(md.name for md in book.pages(book.languages()[0], ROOT))
        assert {book.language_of(md) for md in gate} == set(book.languages(ROOT))
    with pytest.raises(TypeError, match="turn must be an int"):
        book.one_twin_each("0", ROOT)


def test_a_deterministic_chapter_passes(chapter):
    md = chapter("import random\nrandom.seed(0)\nprint(random.random())")
    assert problems_of(md) == []


def test_an_untagged_raising_cell_is_caught(chapter):
    found = problems_of(chapter("raise ValueError('not tagged raises-exception')"))
    assert found and found[0].startswith("restart and run all: code cell 0 raised") and "ValueError" in found[0], found


def test_a_non_deterministic_cell_is_caught(chapter):
    md = chapter("x = 1", "import random\nprint(random.random())")
    found = problems_of(md)
    assert len(found) == 1 and "code cell 1: output differs between runs" in found[0], found


@pytest.mark.slow  # a kernel importing TensorFlow (~13 s); the format contract is tested in-process below
def test_marked_timing_figures_may_differ(chapter):
    # gradlib.progress's own bar (the build's kernel sets GRADBOOK_BUILD), over steps of random length
    md = chapter("import random, time\nfrom gradlib.book.progress import progress\n"
                           "for _ in progress(range(3), desc='epochs'):\n    time.sleep(random.uniform(0, 0.2))")
    assert problems_of(md) == []


def test_the_timing_mark_is_what_progress_prints(monkeypatch, capsys):
    from gradlib.book.progress import progress

    monkeypatch.setenv("GRADBOOK_BUILD", "1")
    assert list(progress(range(4), desc="epochs")) == [0, 1, 2, 3]
    printed = capsys.readouterr().out
    assert printed.startswith("epochs: |") and "4/4" in printed
    assert len(reliability.TIMING.findall(printed)) == 1
    assert reliability.TIMING.sub("[timing]", printed).rstrip().endswith("4/4 [timing]")


def test_a_cell_that_fails_on_rerun_is_caught(chapter):
    md = chapter("import tensorflow as tf",
                 "@tf.RegisterGradient('GradbookRerunDemo')\ndef _grad(op, dy):\n    return dy")
    found = problems_of(md)
    assert len(found) == 1 and found[0].startswith("run all again: code cell 1 raised"), found
    assert "GradbookRerunDemo" in found[0] or "KeyError" in found[0], found


def test_a_cell_that_needs_a_later_cell_fails_restart_and_run_all(chapter):
    md = chapter("print(helper())", "def helper():\n    return 1")
    found = problems_of(md)
    assert found and found[0].startswith("restart and run all: code cell 0 raised") and "NameError" in found[0], found


def test_tagged_raising_cells_are_allowed(chapter):
    md = chapter(":tags: [raises-exception]\n\nraise ValueError('on purpose')")
    assert problems_of(md) == []


def test_outputs_are_normalised():
    import nbformat

    cell = nbformat.v4.new_code_cell("x")
    cell.outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="a "),
        nbformat.v4.new_output("stream", name="stderr", text="noise"),
        nbformat.v4.new_output("stream", name="stdout", text="b [3.2 s]"),
        nbformat.v4.new_output("execute_result", data={"text/plain": "1", "image/png": "AAAA"}, execution_count=1),
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("m"), cell])
    out = reliability.normalised_outputs(nb)
    assert out[0] == (0, "stdout: a b [timing]")
    assert out[1][1].startswith("image/png: sha256 ") and out[2] == (0, "text/plain: 1")
