"""The site's downloads (tools/downloads.py): the source archive and the offline site."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tools import book
from tools import downloads as dl

HTML = Path(os.environ.get("GRADBOOK_HTML", book.ROOT / "_build" / "html"))


def _tiny_site(tmp_path: Path) -> Path:
    html = tmp_path / "html"
    (html / "chapters" / "en").mkdir(parents=True)
    (html / "index.html").write_text("<html>home</html>", encoding="utf-8")
    (html / "chapters" / "en" / "01.html").write_text("<html>one</html>", encoding="utf-8")
    return html


def test_archives_are_reproducible_and_the_site_holds_the_source_but_not_itself(tmp_path):
    html = _tiny_site(tmp_path)
    first = [p.read_bytes() for p in dl.write_downloads(html)]
    os.utime(html / "index.html", (0, 0))  # dates do not matter, content does
    second = [p.read_bytes() for p in dl.write_downloads(html)]
    assert first == second
    names = zipfile.ZipFile(html / dl.FOLDER / dl.SITE).namelist()
    assert names == ["gradbook-site/chapters/en/01.html", f"gradbook-site/{dl.FOLDER}/{dl.NOTEBOOKS}",
                     "gradbook-site/index.html"]
    (html / "index.html").write_text("<html>changed</html>", encoding="utf-8")
    assert dl.write_downloads(html)[1].read_bytes() != second[1]


def test_no_site_is_a_clear_error(tmp_path, capsys):
    with pytest.raises(FileNotFoundError, match="no built site"):
        dl.write_downloads(tmp_path)
    assert dl.main([str(tmp_path)]) == 1
    assert "run `make book`" in capsys.readouterr().err


def test_source_walk_without_git_skips_build_folders(tmp_path):
    (tmp_path / "gradlib").mkdir()
    (tmp_path / "gradlib" / "__init__.py").write_text("", encoding="utf-8")
    for junk in (".venv/lib/x.py", "_build/html/index.html", "node_modules/k/i.js", "gradlib/__pycache__/a.pyc"):
        (tmp_path / junk).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / junk).write_text("", encoding="utf-8")
    assert dl.source_files(tmp_path) == ["gradlib/__init__.py"]
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no source files"):
        dl.source_files(tmp_path / "empty")


@pytest.mark.site
def test_the_built_site_offers_both_archives(tmp_path):
    folder = HTML / dl.FOLDER
    if not (folder / dl.NOTEBOOKS).is_file() or not (folder / dl.SITE).is_file():
        pytest.fail(f"{folder} lacks {dl.NOTEBOOKS} or {dl.SITE}: run `make book`")
    site = set(zipfile.ZipFile(folder / dl.SITE).namelist())
    for page in ["index.html", "search.html", *book.site_pages()]:
        assert f"{dl.SITE_PREFIX}/{page}" in site, page
    # The offline copy's download links work (the source archive is in it), but for the one to itself.
    assert {n for n in site if n.startswith(f"{dl.SITE_PREFIX}/{dl.FOLDER}/")} == {
        f"{dl.SITE_PREFIX}/{dl.FOLDER}/{dl.NOTEBOOKS}"}

    with zipfile.ZipFile(folder / dl.NOTEBOOKS) as archive:
        names = set(archive.namelist())
        for md in book.pages():
            notebook = Path(md).with_suffix(".ipynb").relative_to(book.ROOT)
            if (book.ROOT / notebook).is_file():
                assert f"{dl.SOURCE_PREFIX}/{notebook.as_posix()}" in names, notebook
        for needed in ("gradlib/__init__.py", "pyproject.toml", "Makefile", "requirements/constraints.txt"):
            assert f"{dl.SOURCE_PREFIX}/{needed}" in names, needed
        assert not any("/.venv/" in n or "/_build/" in n or "/node_modules/" in n for n in names)
        archive.extractall(tmp_path)
    # The unpacked source is a working gradlib (what `pip install ./gradbook` installs).
    done = subprocess.run([sys.executable, "-c", "import gradlib, sys; print(gradlib.__file__)"],
                          cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(tmp_path / dl.SOURCE_PREFIX)},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().startswith(str(tmp_path / dl.SOURCE_PREFIX))
