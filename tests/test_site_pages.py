"""The built pages as issue 16 wants them (assets/ext: gradbook_math, gradbook_i18n, gradbook_pages).

Math typeset at build time (no math script), only the scripts a page uses,
sized images, a description per page, Chinese pages whose theme text is
Chinese, and the book's downloads in every page's menu.  Run ``make book``
first; these tests fail (they do not skip) without a build.
"""

from __future__ import annotations

import os
import posixpath
import re
import struct
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from bs4 import BeautifulSoup

from tools import book
from tools import sitequality

pytestmark = pytest.mark.site

HTML = Path(os.environ.get("GRADBOOK_HTML", book.ROOT / "_build" / "html"))
PAGES = sitequality.pages()
CHAPTER_PAGES = book.site_pages()
SEARCH_PAGES = ("search.html", "search-zh.html")
# What the themes write on every page, in English; none of it may be on a Chinese page.
THEME_ENGLISH = ["Skip to main content", "Back to top", "Toggle primary sidebar", "Toggle secondary sidebar",
                 "Color mode", "Link to this heading", "Download this page", "Print to PDF", "Fullscreen mode",
                 "Launch on", "Search this book", "Source repository", "Site navigation", "previous page",
                 "next page", '"Main"', '"Page"', "On this page", ">Contents<", "© Copyright", "Download notebook file",
                 "Download source file"]


@pytest.fixture(scope="module")
def pages():
    if not (HTML / "index.html").is_file():
        pytest.fail(f"{HTML} has no built site: run `make book` first")
    return {page: (HTML / page).read_text(encoding="utf-8") for page in [*PAGES, "search-zh.html"]}


def _scripts(text: str):
    return [unquote(urlsplit(s.get("src")).path).rsplit("/", 1)[-1]
            for s in BeautifulSoup(text, "html.parser").select("script[src]")]


@pytest.mark.parametrize("page", PAGES)
def test_no_page_loads_a_script_it_does_not_use(pages, page):
    text, scripts = pages[page], _scripts(pages[page])
    for never in ("fontawesome.js", "tex-mml-chtml.js", "sphinx-thebe.js"):
        assert never not in scripts, never
    assert ("searchindex.js" in scripts) == (page in SEARCH_PAGES)
    assert ("gradbook-explorer.js" in scripts) == ('class="gradbook-explorer"' in text)
    assert ("copybutton.js" in scripts) == ("<pre" in text)


@pytest.mark.parametrize("page", PAGES)
def test_math_is_typeset_at_build_time(pages, page):
    soup = BeautifulSoup(pages[page], "html.parser")
    math = soup.select("span.math, div.math")
    assert math, "every page has math (the sidebar's titles)"
    raw = [m.get_text()[:40] for m in math if m.select_one(".katex") is None]
    assert raw == []
    assert soup.select_one('link[href*="_static/katex/katex.min.css"]') is not None
    for tex in re.findall(r"\\\(|\\\[", soup.title.get_text()):
        pytest.fail(f"TeX delimiter {tex} in <title>")


def _png_size(path: Path):
    with path.open("rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n", path
    return struct.unpack(">II", head[16:24])


@pytest.mark.parametrize("page", CHAPTER_PAGES)
def test_images_carry_their_size(pages, page):
    images = BeautifulSoup(pages[page], "html.parser").select('article img[src*="_images/"]')
    for img in images:
        path = (HTML / page).parent / unquote(img["src"])
        if path.suffix == ".png":
            assert (int(img.get("width", 0)), int(img.get("height", 0))) == _png_size(path), img["src"]


@pytest.mark.parametrize("page", CHAPTER_PAGES)
def test_no_figure_is_described_by_its_file_path(pages, page):
    images = BeautifulSoup(pages[page], "html.parser").select("article img")
    for img in images:
        alt = img.get("alt", "")
        assert alt and alt != img["src"] and "_images/" not in alt and not alt.endswith(".png"), img


@pytest.mark.parametrize("page", PAGES)
def test_every_page_has_a_description(pages, page):
    meta = BeautifulSoup(pages[page], "html.parser").select('meta[name="description"]')
    assert len(meta) == 1 and 20 <= len(meta[0]["content"]) <= 170, meta
    if page.startswith("chapters/zh/"):
        assert re.search(r"[\u4e00-\u9fff]", meta[0]["content"]), meta[0]["content"]


@pytest.mark.parametrize("page", PAGES)
def test_text_made_from_math_shows_no_tex(pages, page):
    """Where the page holds math as text, not typeset (its <title>, description, and the links {ref}
    writes from a section title), the math reads "λ", "± 1", never "\\lambda", "\\pm 1"."""
    soup = BeautifulSoup(pages[page], "html.parser")
    texts = [soup.title.get_text(), *(m["content"] for m in soup.select('meta[name="description"]')),
             *(ref.get_text() for ref in soup.select(".std-ref"))]
    assert [t for t in texts if re.search(r"\\[A-Za-z]", t)] == []
    for link in soup.select('link[rel="prev"], link[rel="next"]'):  # the head's links: the target's own title
        target = posixpath.normpath(posixpath.join(posixpath.dirname(page), link["href"]))
        title = BeautifulSoup((HTML / target).read_text(encoding="utf-8"), "html.parser").title.get_text()
        assert title.startswith(link["title"] + " \u2014 "), (link["title"], title)


@pytest.mark.parametrize("page", [p for p in PAGES if p.startswith("chapters/")] + ["search-zh.html"])
def test_theme_text_is_in_the_page_language(pages, page):
    text = pages[page]
    lang = "zh" if page.startswith("chapters/zh/") or page == "search-zh.html" else "en"
    assert f'<html lang="{"zh-CN" if lang == "zh" else "en"}"' in text
    found = [phrase for phrase in THEME_ENGLISH if phrase in text]
    if lang == "zh":
        assert found == [], found
        for chinese in ("跳转至主要内容", "回到顶部", "搜索", "颜色模式"):
            assert chinese in text, chinese
    else:
        assert "Skip to main content" in text and "Color mode" in text and "跳转至主要内容" not in text


@pytest.mark.parametrize("page", [p for p in CHAPTER_PAGES if p.startswith("chapters/")])
def test_explorer_labels_are_language_neutral(pages, page):
    """An explorer's control labels are the same on English and Chinese pages: a symbol such as
    "g" or "φ", never a word (the chapter's prose says what the symbol is)."""
    labels = [span.get_text() for span in BeautifulSoup(pages[page], "html.parser").select(".gbx-label")]
    words = [label for label in labels if re.search(r"[A-Za-z]{2}|[\u4e00-\u9fff]", label)]
    assert words == [], f"{page}: explorer controls labelled with words: {words} (give explore() labels=)"


@pytest.mark.parametrize("page", ["index.html", "genindex.html", "search.html", "chapters/glossary.html",
                                  *(p for p in PAGES if p.startswith("chapters/"))])
def test_text_in_the_other_language_is_marked(pages, page):
    """WCAG 3.1.2: a screen reader reads Chinese on an English page with a Chinese voice only if told,
    and the link to a page's twin is in the twin's language.  The whole page: the article, and what
    the theme writes around it (the book's title, the sidebar's captions, the index's entries)."""
    soup = BeautifulSoup(pages.get(page) or (HTML / page).read_text(encoding="utf-8"), "html.parser")
    article = soup.select_one("article")
    if page.startswith("chapters/") and page.count("/") == 2 and "/glossary" not in page:
        other = "zh-CN" if "/en/" in page else "en"
        link = article.select_one("p.gradbook-lang-switch a")
        assert (link.get("lang"), link.get("hreflang")) == (other, other)
    if soup.html.get("lang") != "en":
        return
    for skipped in soup.body.select("math, code, pre, script, style, .gradbook-explorer"):
        skipped.decompose()
    unmarked = [text.strip()[:30] for text in soup.body.find_all(string=re.compile(r"[\u4e00-\u9fff]"))
                if not text.find_parent(attrs={"lang": "zh-CN"})]
    assert unmarked == []


@pytest.mark.parametrize("page", [p for p in CHAPTER_PAGES if p.startswith("chapters/en/")])
def test_an_explorer_reads_the_same_on_both_twins(pages, page):
    """The twins share their code cells, but the twins check ignores string literals: the labels,
    options, titles and axes of each explorer must match between the English and the Chinese page."""
    def texts(text):
        return [[node.get_text() for node in explorer.select(".gbx-label, option, .gbx-title, .gbx-axis")]
                for explorer in BeautifulSoup(text, "html.parser").select(".gradbook-explorer")]
    twin = page.replace("chapters/en/", "chapters/zh/")
    assert texts(pages[page]) == texts(pages[twin])


@pytest.mark.parametrize("page", CHAPTER_PAGES)
def test_the_search_box_searches_in_the_page_language(pages, page):
    form = BeautifulSoup(pages[page], "html.parser").select_one("form.bd-search")
    target = (HTML / page).parent / unquote(urlsplit(form["action"]).path)
    expected = "search-zh.html" if page.startswith("chapters/zh/") else "search.html"
    assert target.resolve() == (HTML / expected).resolve()


@pytest.mark.parametrize("page", [p for p in PAGES if p.startswith("chapters/")])
def test_the_sidebar_lists_the_pages_language_only(pages, page):
    nav = BeautifulSoup(pages[page], "html.parser").select_one("nav.bd-docs-nav")
    targets = {posixpath.normpath(posixpath.join(posixpath.dirname(page), a["href"].split("#")[0]))
               for a in nav.select("a[href]")}
    lang = page.split("/")[1]
    if lang in book.languages():
        other = {other for other in book.languages() if other != lang}
        assert not {t for t in targets if t.split("/")[:2] in [["chapters", o] for o in other]}, targets
        assert {book.site_path(md) for md in book.pages(lang)} - {page} <= targets  # its language's other pages
    else:  # the glossary serves both languages
        assert {book.site_path(md) for md in book.pages()} - {page} <= targets


def test_the_chinese_search_page_speaks_chinese(pages):
    text = pages["search-zh.html"]
    assert "translations-zh_CN.js" in _scripts(text)
    assert (HTML / "_static" / "translations-zh_CN.js").is_file()
    assert "<title>搜索" in text
    assert _scripts(text).count("searchtools.js") == 1


@pytest.mark.parametrize("page", [p for p in PAGES if p not in ("search.html", "genindex.html")])
def test_every_page_offers_the_book_downloads(pages, page):  # (pages built from a source: the theme's menu)
    links = BeautifulSoup(pages[page], "html.parser").select(".dropdown-download-buttons a[href]")
    targets = {(HTML / page).parent.joinpath(unquote(a["href"])).resolve() for a in links}
    for download in ("pdf/gradbook-en.pdf", "pdf/gradbook-zh.pdf", "downloads/gradbook-notebooks.zip",
                     "downloads/gradbook-site.zip"):
        path = (HTML / download).resolve()
        assert path in targets, download
        assert path.is_file() and path.stat().st_size > 10_000, f"{download} is missing: run `make book`"
