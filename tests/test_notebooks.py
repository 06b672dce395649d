"""tools/notebooks.py: every chapter .md has an up-to-date, output-free .ipynb twin."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from tools.notebooks import md_sources, render_ipynb, stale_twins, write_twins

ROOT = Path(__file__).resolve().parents[1]
DEMO = Path("chapters/en/01_demo")


def problems_about(problems: list[str], name: str, word: str) -> list[str]:
    return [p for p in problems if name in p and word in p]


# -- the repository ----------------------------------------------------------

def test_repository_twins_are_current():
    assert md_sources(ROOT), "no chapter sources under chapters/en, chapters/zh"
    problems = stale_twins(ROOT)
    assert problems == [], "\n".join(problems) + "\nrun: make notebooks"


def test_fault_injection_on_a_copy_of_the_real_chapters(tmp_path):
    shutil.copytree(ROOT / "chapters", tmp_path / "chapters",
                    ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
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
    assert len(code) == 3
    assert all(c.outputs == [] and c.execution_count is None for c in code)
    assert code[2].metadata.tags == ["raises-exception"]
    assert "jupytext" not in nb.metadata  # no version stamps to churn
    assert first.endswith("}\n")


def test_cli_check_and_write(mini_book):
    script = ROOT / "tools" / "notebooks.py"

    def run(*args):
        return subprocess.run([sys.executable, script, *args, "--root", mini_book],
                              capture_output=True, text=True)

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
    with pytest.raises(ValueError, match="not a chapter source"):
        write_twins(mini_book, only=[stray])
    result = subprocess.run([sys.executable, ROOT / "tools" / "notebooks.py", "--check", stray, "--root", mini_book],
                            capture_output=True, text=True)
    assert result.returncode == 2 and "only be given with --write" in result.stderr
