"""The built site (_build/html): every page, both languages, quiet outputs, search.

Run ``make book`` first; these tests fail (they do not skip) without a build.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from bs4 import BeautifulSoup

from tools import book
from tools.sitecheck import log_noise


pytestmark = pytest.mark.site

ROOT = Path(__file__).resolve().parents[1]
HTML = Path(os.environ.get("GRADBOOK_HTML", ROOT / "_build" / "html"))  # override for a build elsewhere
NOISE_LINE = "I0000 00:00:1795354791.870488 2031 port.cc:153] oneDNN custom operations are on."


def chapters():
    """``{lang: [page names]}`` from _toc.yml."""
    return {lang: [md.stem for md in book.pages(lang)] for lang in book.languages()}


@pytest.fixture(scope="module")
def real_stderr_markup(tmp_path_factory, myst_header) -> str:
    """The markup myst-nb really gives a cell's stderr: a one-page book whose
    cell writes a TensorFlow-style log line to stderr, built with jupyter-book
    (stderr shown, as a build without ``stderr_output: remove-warn`` would)."""
    root = tmp_path_factory.mktemp("stderr-book")
    (root / "_config.yml").write_text("title: stderr\nexecute:\n  execute_notebooks: force\n  stderr_output: show\n",
                                      encoding="utf-8")
    (root / "_toc.yml").write_text("format: jb-book\nroot: index\n", encoding="utf-8")
    (root / "index.md").write_text(
        myst_header + f"\n# stderr\n\n```{{code-cell}} ipython3\nimport sys\nprint({NOISE_LINE!r}, file=sys.stderr)\n```\n",
        encoding="utf-8")
    build = subprocess.run([str(Path(sys.executable).parent / "jupyter-book"), "build", str(root), "--builder", "html"],
                           capture_output=True, text=True)
    page = root / "_build" / "html" / "index.html"
    assert build.returncode == 0 and page.is_file(), build.stdout[-2000:] + build.stderr[-2000:]
    block = soup(page).select_one("div.cell_output")
    assert block is not None and NOISE_LINE in block.get_text(), "myst-nb rendered no stderr output"
    return str(block)


@pytest.fixture(scope="module")
def html() -> Path:
    if not (HTML / "index.html").is_file():
        pytest.fail(f"{HTML} has no built site: run `make book` first")
    return HTML


def soup(page: Path) -> BeautifulSoup:
    assert page.is_file(), f"{page} was not built"
    return BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")


def resolve(page: Path, href: str) -> Path:
    """The file an ``href`` on ``page`` points to (fragment and query dropped)."""
    path = unquote(urlsplit(href).path)
    return (page.parent / path).resolve() if path else page.resolve()


def test_toc_has_both_languages():
    by_lang = chapters()
    assert by_lang["en"] and by_lang["en"] == by_lang["zh"], by_lang


@pytest.mark.parametrize("doc", book.docnames())
def test_every_toc_entry_is_built(html, doc):
    assert (html / f"{doc}.html").is_file(), f"{doc}.html was not built"


def test_no_log_noise(html):
    problems = log_noise(html)
    assert problems == [], "\n".join(problems)


def test_log_noise_is_detected(html, tmp_path, real_stderr_markup):
    page = html / "chapters" / "en" / f"{chapters()['en'][-1]}.html"
    text = page.read_text(encoding="utf-8")
    clean, dirty = tmp_path / "clean", tmp_path / "dirty"
    clean.mkdir(), dirty.mkdir()
    shutil.copy(page, clean / page.name)
    assert log_noise(clean) == []
    assert "</body>" in text
    (dirty / page.name).write_text(text.replace("</body>", real_stderr_markup + "</body>", 1), encoding="utf-8")
    problems = log_noise(dirty)
    assert problems and all(p.startswith(page.name + ": ") for p in problems)
    assert any("oneDNN custom operations" in p for p in problems)


@pytest.mark.parametrize("lang, other", [("en", "zh"), ("zh", "en")])
def test_language_switch_links_to_twin(html, lang, other):
    for name in chapters()[lang]:
        page = html / "chapters" / lang / f"{name}.html"
        links = soup(page).select("p.gradbook-lang-switch a[href]")
        assert links, f"{page.name} ({lang}) has no language switch"
        target = resolve(page, links[0]["href"])
        twin = (html / "chapters" / other / f"{name}.html").resolve()
        assert target == twin, f"{lang}/{name}: switch points to {target}, not {twin}"
        assert twin.is_file()


@pytest.mark.parametrize("lang, code", [("en", "en"), ("zh", "zh-CN")])
def test_html_lang_attribute(html, lang, code):
    for name in chapters()[lang]:
        root = soup(html / "chapters" / lang / f"{name}.html").html
        assert root is not None and root.get("lang") == code, f"{lang}/{name}: lang={root and root.get('lang')}"


def search_index(html: Path) -> dict:
    text = (html / "searchindex.js").read_text(encoding="utf-8").strip()
    match = re.fullmatch(r"Search\.setIndex\((.*)\);?", text, re.S)
    assert match, "searchindex.js is not Search.setIndex({...})"
    return json.loads(match[1])


@pytest.mark.parametrize(
    "term, lang", [("梯度", "zh"), ("反向传播", "zh"), ("直通估计器", "zh"), ("gradient", "en")]
)
def test_search_index_terms(html, term, lang):
    index = search_index(html)
    docnames = index["docnames"]
    docs = []
    for table in ("terms", "titleterms"):
        hits = index.get(table, {}).get(term, [])
        docs += [docnames[i] for i in ([hits] if isinstance(hits, int) else hits)]
    assert any(d.startswith(f"chapters/{lang}/") for d in docs), f"{term!r} indexed for {docs}"


def test_search_results_show_math_in_titles_as_text(html):
    """A section title with math ("The effect of $\\lambda$") is listed as "The effect of λ", not as TeX."""
    titles = list(search_index(html)["alltitles"])  # (a page's own title is stored as HTML, typeset)
    assert [t for t in titles if re.search(r"\\[A-Za-z]", t)] == []
    assert any("λ" in t for t in titles)  # the titles with math are there, as text


@pytest.mark.parametrize("term, lang", [("english", "zh"), ("中文", "en")])
def test_the_language_switch_is_not_indexed(html, term, lang):
    """Every chapter page links its twin ("English version", "中文版"); were the link indexed, a search
    for "English" on the Chinese pages would find every chapter. Only pages whose text has it do."""
    index = search_index(html)
    hits = index["terms"].get(term, [])
    found = {index["docnames"][i] for i in ([hits] if isinstance(hits, int) else hits)}
    for name in chapters()[lang]:
        page = soup(html / "chapters" / lang / f"{name}.html").select_one("article")
        for switch in page.select("p.gradbook-lang-switch"):
            switch.decompose()
        has_term = term in page.get_text().lower()
        assert (f"chapters/{lang}/{name}" in found) <= has_term, f"{lang}/{name} is found by {term!r}"


@pytest.mark.parametrize("lang", book.languages())
def test_index_links_to_glossary(html, lang):
    page = html / "chapters" / lang / "index.html"
    glossary = (html / "chapters" / "glossary.html").resolve()
    targets = {resolve(page, a["href"]) for a in soup(page).select("a[href]")}
    assert glossary in targets, f"chapters/{lang}/index.html does not link to glossary.html"


@pytest.mark.parametrize("lang", book.languages())
def test_chapters_have_outputs_and_figures(html, lang):
    names = [n for n in chapters()[lang] if re.match(r"\d\d_", n)]
    assert names, f"no numbered chapters in {lang}"
    for name in names:
        page = soup(html / "chapters" / lang / f"{name}.html")
        assert page.select("div.cell_output"), f"{lang}/{name}: no executed output"
        figures = page.select(".cell_output img") + page.select(".cell_output .gradbook-explorer svg")
        assert figures, f"{lang}/{name}: no figure in the outputs"


@pytest.mark.parametrize("lang, word", [("en", "Exercise"), ("zh", "练习")])
def test_exercises_are_numbered_per_chapter_in_the_page_language(html, lang, word):
    for name in chapters()[lang]:
        match = re.match(r"(\d\d)_", name)
        if not match:
            continue
        page = soup(html / "chapters" / lang / f"{name}.html")
        titles = [t.get_text().strip() for t in page.select("div.exercise p.admonition-title span.caption-number")]
        chapter = int(match[1])
        assert titles == [f"{word} {chapter}.{k}" for k in range(1, len(titles) + 1)], (name, titles)
        ids = [div["id"] for div in page.select("div.exercise")]
        assert ids == [f"{lang}-ch{match[1]}-ex{k}" for k in range(1, len(ids) + 1)], ids
        for solution in page.select("div.solution p.admonition-title"):
            assert solution.get_text().strip().startswith("解答：" if lang == "zh" else "Solution to"), solution
