"""tools/notebooks.py: every page .md has an up-to-date, output-free .ipynb twin with the Colab install cell."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from tools import book
from tools.book import render_ipynb
from tools.notebooks import stale_twins, write_twins

ROOT = Path(__file__).resolve().parents[1]
DEMO = Path("chapters/en/01_demo")


def problems_about(problems: list[str], name: str, word: str) -> list[str]:
    return [p for p in problems if name in p and word in p]


# -- the repository ----------------------------------------------------------

def md_sources(root):
    return book.pages(root=root)


def copy_of_the_book(tmp_path):
    shutil.copytree(ROOT / "chapters", tmp_path / "chapters",
                    ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    for name in ("_toc.yml", "_config.yml"):
        shutil.copy(ROOT / name, tmp_path / name)
    return tmp_path


def test_repository_twins_are_current():
    assert md_sources(ROOT), "no pages in _toc.yml"
    problems = stale_twins(ROOT)
    assert problems == [], "\n".join(problems) + "\nrun: make notebooks"


def test_fault_injection_on_a_copy_of_the_real_chapters(tmp_path):
    copy_of_the_book(tmp_path)
    write_twins(tmp_path)
    assert stale_twins(tmp_path) == []
    md = md_sources(tmp_path)[-1]
    text = md.read_text(encoding="utf-8")
    fence = "```{code-cell} ipython3\n"
    assert fence in text, f"{md.name} has no code cell"
    md.write_text(text.replace(fence, fence + "_injected = 1\n", 1), encoding="utf-8")
    rel = md.relative_to(tmp_path).with_suffix(".ipynb").as_posix()
    assert problems_about(stale_twins(tmp_path), rel, "stale")


# -- the fixture book ----------------------------------------------------------

def test_write_then_check_is_clean(mini_book):
    written = write_twins(mini_book)
    assert len(written) == len(md_sources(mini_book)) == 4
    assert not (mini_book / "chapters" / "glossary.ipynb").exists()
    assert stale_twins(mini_book) == []
    assert write_twins(mini_book) == []  # nothing left to do


def test_edited_code_cell_makes_twin_stale(mini_book):
    write_twins(mini_book)
    md = mini_book / DEMO.with_suffix(".md")
    md.write_text(md.read_text(encoding="utf-8").replace("x = 3.0", "x = 4.0"), encoding="utf-8")
    problems = stale_twins(mini_book)
    assert problems_about(problems, "chapters/en/01_demo.ipynb", "stale")
    assert len(problems) == 1
    assert write_twins(mini_book) == [mini_book / DEMO.with_suffix(".ipynb")]
    assert stale_twins(mini_book) == []


def test_deleted_twin_is_missing(mini_book):
    write_twins(mini_book)
    (mini_book / "chapters/zh/index.ipynb").unlink()
    assert problems_about(stale_twins(mini_book), "chapters/zh/index.ipynb", "missing")
    write_twins(mini_book)
    assert stale_twins(mini_book) == []


def test_outputs_are_reported_and_removed(mini_book):
    write_twins(mini_book)
    twin = mini_book / DEMO.with_suffix(".ipynb")
    nb = json.loads(twin.read_text(encoding="utf-8"))
    code = [c for c in nb["cells"] if c["cell_type"] == "code"][1]
    code["execution_count"] = 1
    code["outputs"] = [{"output_type": "stream", "name": "stdout", "text": ["6.0\n"]}]
    twin.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    assert problems_about(stale_twins(mini_book), "chapters/en/01_demo.ipynb", "outputs")
    write_twins(mini_book)
    assert stale_twins(mini_book) == []


def test_orphan_notebook_is_reported(mini_book):
    write_twins(mini_book)
    shutil.copy(mini_book / DEMO.with_suffix(".ipynb"), mini_book / "chapters/en/02_gone.ipynb")
    assert problems_about(stale_twins(mini_book), "chapters/en/02_gone.ipynb", "orphan")


def test_render_is_stable_and_output_free(mini_book):
    md = mini_book / DEMO.with_suffix(".md")
    first, second = render_ipynb(md), render_ipynb(md)
    assert first == second
    nb = nbformat.reads(first, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert len(code) == 4  # the install cell, then the chapter's three
    assert all(c.outputs == [] and c.execution_count is None for c in code)
    assert book.is_install_cell(code[0]) and code[1].source == "%pip install --quiet gradlib"
    assert code[3].metadata.tags == ["raises-exception"]
    assert "jupytext" not in nb.metadata  # no version stamps to churn
    assert first.endswith("}\n")


def cli(*args):
    return subprocess.run([sys.executable, "-m", "tools.notebooks", *map(str, args)],
                          capture_output=True, text=True, cwd=ROOT)


def test_cli_check_and_write(mini_book):
    def run(*args):
        return cli(*args, "--root", mini_book)

    bad = run("--check")
    assert bad.returncode == 1 and "missing" in bad.stdout
    assert run("--write").returncode == 0
    good = run("--check")
    assert good.returncode == 0, good.stdout + good.stderr


def test_write_only_the_named_sources_leaves_other_stale_twins_alone(mini_book):
    write_twins(mini_book)
    sources = md_sources(mini_book)
    for md in sources[:2]:
        md.write_text(md.read_text(encoding="utf-8") + "\nOne more sentence.\n", encoding="utf-8")
    assert write_twins(mini_book, only=[sources[0]]) == [sources[0].with_suffix(".ipynb")]
    problems = stale_twins(mini_book)
    assert len(problems) == 1 and sources[1].with_suffix(".ipynb").name in problems[0]


def test_write_only_refuses_a_path_that_is_not_a_chapter_source(mini_book, tmp_path):
    stray = tmp_path / "notes.md"
    stray.write_text("# notes\n", encoding="utf-8")
    with pytest.raises(ValueError, match="not a page of"):
        write_twins(mini_book, only=[stray])
    result = cli("--check", stray, "--root", mini_book)
    assert result.returncode == 2 and "only be given with --write" in result.stderr


# -- the Colab install cell: generated into the twins, never in the .md ----------

def test_the_sources_carry_no_install_cell_and_the_twins_start_with_it():
    url, ref = book.repository(ROOT)
    for md in md_sources(ROOT):
        assert "GRADBOOK_INSTALL_SOURCE" not in "".join(book.code_sources(md.read_text(encoding="utf-8"))), md
        nb = nbformat.read(md.with_suffix(".ipynb"), as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert code[0].source == book.install_cell(md.parent.name, ROOT), md
        assert f'"gradlib @ git+{url}@{ref}"' in code[0].source
        assert code[0].metadata.tags == ["remove-cell"] and code[0].id == book.INSTALL_ID
        assert sum(book.is_install_cell(c) for c in nb.cells) == 1
        # the rest of the twin is the .md, cell for cell
        source = book.read_notebook(md)
        assert [c.source for c in code[1:]] == [c.source for c in source.cells if c.cell_type == "code"]


def test_the_install_cell_speaks_the_page_language():
    for lang in book.languages(ROOT):
        assert book.install_cell(lang, ROOT).splitlines()[0] == book.INSTALL_COMMENT[lang]
        assert "tensorflow" not in book.install_cell(lang, ROOT).lower()  # Colab's TF is used as is
    with pytest.raises(ValueError, match="fr"):
        book.install_cell("fr", ROOT)


def test_changing_the_config_makes_every_twin_stale_until_regenerated(mini_book):
    write_twins(mini_book)
    sources = {md: md.read_bytes() for md in md_sources(mini_book)}
    config = mini_book / "_config.yml"
    config.write_text(config.read_text(encoding="utf-8").replace("branch: main", "branch: v9.9.9"), encoding="utf-8")
    assert len(stale_twins(mini_book)) == len(sources) == 4
    write_twins(mini_book)
    assert stale_twins(mini_book) == []
    assert {md: md.read_bytes() for md in sources} == sources  # no tool edits a .md
    twin = (mini_book / "chapters/zh/01_demo.ipynb").read_text(encoding="utf-8")
    assert "git+https://github.com/gradbook/gradbook@v9.9.9" in twin and book.INSTALL_COMMENT["zh"] in twin


def test_a_source_with_an_install_cell_is_refused(mini_book):
    write_twins(mini_book)
    md = mini_book / DEMO.with_suffix(".md")
    cell = "```{code-cell} ipython3\n:tags: [remove-cell]\n\n" + book.install_cell("en", mini_book) + "\n```\n"
    md.write_text(md.read_text(encoding="utf-8") + "\n" + cell, encoding="utf-8")
    with pytest.raises(ValueError, match="install cell is generated"):
        render_ipynb(md, mini_book)
    assert problems_about(stale_twins(mini_book), "01_demo.md", "install cell is generated")


def test_a_bad_repository_is_refused(mini_book):
    (mini_book / "_config.yml").write_text("repository:\n  url: http://example.org/x\n", encoding="utf-8")
    with pytest.raises(ValueError, match="repository.url"):
        render_ipynb(mini_book / DEMO.with_suffix(".md"), mini_book)
