"""The PDF editions (tools/pdf.py, `make pdf`).

Two kinds of tests:

* ``site``: the two PDFs `make pdf` wrote from the built book, read with
  pypdf: both there (and copied into the site), every page of the language
  as a bookmark in toc order with its title (read here from the Markdown
  sources, not from the tool), Chinese text that extracts, every font
  embedded, every figure and formula, the exercise solutions printed open,
  a note under each explorer, none of the theme's chrome.  Without the PDFs
  these fail (run `make pdf`); they never skip.  One more drives Chromium on
  a tiny made-up edition to prove the print checks catch a missing image,
  content cut at the margin and a CJK font that does not load.
* ``build``: the pure helpers on made-up pages and PDFs (no book, no
  browser), each fed the fault it must catch.  (pypdf is a ``book`` extra,
  absent from the Colab-like venv: hence ``build``.)

The PDFs are looked for in ``$GRADBOOK_PDF``, default: beside the site
(``$GRADBOOK_HTML``, default ``_build/html``) in ``pdf/``.
"""

from __future__ import annotations

import functools
import io
import logging
import os
import re
import unicodedata
from pathlib import Path
from typing import Dict, List

import pytest

from tools import book
from tools import browsercheck as bc
from tools import pdf

ROOT = book.ROOT
PDF_DIR = Path(os.environ.get("GRADBOOK_PDF", bc.HTML.parent / "pdf"))
LANGS = list(book.languages())
site = pytest.mark.site
build = pytest.mark.build
# Under pytest-xdist, every test here on one worker: each edition's text is extracted once.
pytestmark = pytest.mark.xdist_group("pdf")


def _flat(text: str) -> str:
    """Without whitespace, ligatures (ﬂ) as their letters."""
    return re.sub(r"\s+", "", unicodedata.normalize("NFKC", text))


def _spaced(text: str) -> str:
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text)).strip()


# -- what the sources say (independent of tools/pdf.py's reading of the HTML) ------


def markdown_title(md: Path, math: bool = True) -> str:
    """A page's title: the text of its first ``#`` heading (code and, with
    ``math``, formulas as their text)."""
    kinds = ("text", "code_inline", "softbreak") + (("math_inline",) if math else ())
    tokens = book._parser().parse(md.read_text(encoding="utf-8"))
    for i, token in enumerate(tokens):
        if token.type == "heading_open" and token.tag == "h1":
            parts = [" " if child.type == "softbreak" else child.content for child in tokens[i + 1].children
                     if child.type in kinds]
            return re.sub(r"\s+", " ", "".join(parts)).strip()
    raise AssertionError(f"{md} has no # heading")


def _quotes(text: str) -> str:
    """Docutils' smart quotes, undone: the Markdown has straight ones."""
    return text.translate(str.maketrans({"“": '"', "”": '"', "‘": "'", "’": "'"}))


def expected_titles(lang: str) -> List[str]:
    return [markdown_title(ROOT / Path(path).with_suffix(".md")) for path in pdf.edition_pages(lang)]


@functools.lru_cache(maxsize=None)
def _articles(lang: str):
    from bs4 import BeautifulSoup

    found = []
    for path in pdf.edition_pages(lang):
        soup = BeautifulSoup((bc.HTML / path).read_text(encoding="utf-8"), "html.parser")
        found.append((path, soup, soup.select_one("article.bd-article")))
    return found


def _article(lang: str):
    """``(site path, soup, article)`` of each page of the edition, as the built site has it."""
    return iter(_articles(lang))


# -- the PDFs, read once ------------------------------------------------------------


class Read:
    """One edition: its reader, each page's text, and the text drawn in KaTeX's fonts."""

    def __init__(self, path: Path):
        from pypdf import PdfReader

        logging.getLogger("pypdf").setLevel(logging.ERROR)
        self.path = path
        self.reader = PdfReader(path)
        self.math: List[str] = []

        def visit(text, cm, tm, font, size):
            if font is not None and "KaTeX" in str(font.get("/BaseFont", "")) and text.strip():
                self.math.append(text)

        self.pages = [page.extract_text(visitor_text=visit) for page in self.reader.pages]
        self.text = "\n".join(self.pages)


class Editions(dict):
    """Each edition read on first use (text extraction takes a while)."""

    def __missing__(self, lang: str) -> Read:
        path = PDF_DIR / pdf.pdf_name(lang)
        if not path.is_file():
            pytest.fail(f"{path} is missing: run `make pdf` (after `make book`)")
        self[lang] = Read(path)
        return self[lang]


@pytest.fixture(scope="module")
def editions() -> Dict[str, Read]:
    return Editions()


@site
def test_both_editions_exist_and_are_in_the_site(editions):
    for lang in LANGS:
        copy = bc.HTML / pdf.SITE_FOLDER / pdf.pdf_name(lang)
        assert copy.is_file(), f"{copy} is missing: make pdf copies each edition into the site"
        assert copy.read_bytes() == editions[lang].path.read_bytes(), f"{copy} is not the edition in {PDF_DIR}"
        assert editions[lang].path.read_bytes()[:5] == b"%PDF-"


@site
@pytest.mark.parametrize("lang", LANGS)
def test_page_count_is_sane(editions, lang):
    count = len(editions[lang].reader.pages)
    pages = len(pdf.edition_pages(lang))
    # A title page, the contents, then each page of the book from a new page; a chapter runs to many pages.
    assert 2 + 5 * pages <= count <= 60 * pages, f"{lang}: {count} PDF pages for {pages} pages of the book"
    box = editions[lang].reader.pages[0].mediabox
    assert (round(float(box.width) * 25.4 / 72), round(float(box.height) * 25.4 / 72)) == pdf.PAGE_MM, "not A4"


@site
@pytest.mark.parametrize("lang", LANGS)
def test_one_bookmark_per_page_in_toc_order(editions, lang):
    reader = editions[lang].reader
    titles = [_quotes(t) for t in pdf.outline_titles(reader)]
    assert titles == [_quotes(t) for t in expected_titles(lang)], "top bookmarks are not the pages' titles in toc order"
    tops = [item for item in reader.outline if not isinstance(item, list)]
    pages = [reader.get_destination_page_number(item) for item in tops]
    assert pages == sorted(pages) and len(set(pages)) == len(pages), f"bookmarks' pages out of order: {pages}"
    assert pages[0] >= 2, "the first page of the book comes after the title page and the contents"
    # Sections below the chapters: the numbered chapters have several each.
    sections = [item for item in reader.outline if isinstance(item, list)]
    assert len(sections) >= len(book.chapters(lang)), "the chapters' sections are not bookmarked"


@site
def test_chinese_text_extracts(editions):
    text = _flat(editions["zh"].text)
    # Formulas left out: pypdf's plain extraction drops text drawn in KaTeX's fonts (the math test reads it).
    for md in book.pages("zh"):
        title = markdown_title(md, math=False)
        assert _flat(_quotes(title)) in _flat(_quotes(text)), f"{md.name}: title {title!r} not in the PDF's text"
    # Body text too, not only headings: the first paragraph of chapter 5 (no math in its first words).
    first = "取整和二值化在高效网络中随处可见"
    assert first in text.replace("\n", ""), "Chinese prose does not extract"


@site
@pytest.mark.parametrize("lang", LANGS)
def test_every_font_is_embedded(editions, lang):
    fonts = pdf.pdf_fonts(editions[lang].reader)
    assert fonts, "no fonts found"
    assert [name for name, embedded in fonts.items() if not embedded] == []
    # Both editions: the title page and the glossary have Chinese.
    assert any(pdf.CJK_FAMILY.replace(" ", "") in name for name in fonts), f"no {pdf.CJK_FAMILY} in {fonts}"
    assert any("KaTeX_Main" in name for name in fonts), "KaTeX's fonts are not in the PDF"


def _images(reader) -> int:
    count = 0
    for page in reader.pages:
        xobjects = (page.get("/Resources") or {}).get("/XObject") or {}
        count += sum(1 for x in xobjects.values() if x.get_object().get("/Subtype") == "/Image")
    return count


@site
@pytest.mark.parametrize("lang", LANGS)
def test_every_figure_is_printed(editions, lang):
    imgs = sum(len(article.find_all("img")) for _, _, article in _article(lang))
    assert imgs > 0, "the edition's pages have no figure: is the site built?"
    assert _images(editions[lang].reader) >= imgs


@site
@pytest.mark.parametrize("lang", LANGS)
def test_math_is_printed_in_katex_fonts(editions, lang):
    drawn = "".join(editions[lang].math)
    # Chapter 5's opening: quantization to $k$ bits, binarization to $\pm 1$; chapter 6's $\lambda$.
    for symbol in ("±", "λ", "k"):
        assert symbol in drawn, f"{symbol!r} not drawn in a KaTeX font"
    math = sum(len(article.select(".katex")) for _, _, article in _article(lang))
    assert len(editions[lang].math) >= math // 2, f"{len(editions[lang].math)} KaTeX text runs for {math} formulas"


@site
@pytest.mark.parametrize("lang", LANGS)
def test_solutions_are_printed_open(editions, lang):
    text = _flat(editions[lang].text)
    solutions = 0
    for path, _, article in _article(lang):
        for solution in article.select("div.solution"):
            solutions += 1
            body = next((p for p in solution.select("section p, p:not(.admonition-title)")
                         if not p.select(".katex, code") and len(_flat(p.get_text())) >= 12), None)
            if body is not None:
                words = _flat(body.get_text())[:12].translate(str.maketrans(pdf.SUBSTITUTES))
                assert words in text, f"{path}: solution {solution.get('id')} ({words!r}...) is not printed"
    assert solutions > 0, "no exercise solutions in the pages"


@site
@pytest.mark.parametrize("lang", LANGS)
def test_each_explorer_has_its_note(editions, lang):
    explorers = sum(len(article.select("div.gradbook-explorer")) for _, _, article in _article(lang))
    assert explorers > 0
    mark = pdf.EXPLORER_MARK[lang]
    text = _flat(editions[lang].text) if lang == "zh" else _spaced(editions[lang].text)
    wanted = _flat(mark) if lang == "zh" else mark
    assert text.count(wanted) == explorers, f"{text.count(wanted)} explorer notes for {explorers} explorers"
    assert "makelab" in _flat(editions[lang].text) and "colab.research.google.com" in _flat(editions[lang].text)


@site
@pytest.mark.parametrize("lang", LANGS)
def test_no_theme_chrome(editions, lang):
    text = _spaced(editions[lang].text)
    chrome = ["Skip to main content", "Toggle primary sidebar", "Back to top", "Ctrl+K", "Search Ctrl",
              "跳转至主要内容", "回到顶部", "Copy to clipboard", "点击展开", "Click to show"]
    _, soup, article = next(_article(lang))
    switch = article.select_one("p.gradbook-lang-switch")
    assert switch is not None
    chrome.append(switch.get_text(strip=True))  # the language switch ("中文版" / "English version")
    assert [words for words in chrome if words in text] == []


# -- the print checks, on a tiny made-up edition in a real Chromium -------------------


PAGE = """<!DOCTYPE html><html lang="{lang}"><head><title>x</title></head><body>
<div id="pst-skip-link"><a href="#main-content">Skip to main content</a></div>
<div class="bd-container"><main class="bd-main"><div class="bd-content"><div class="bd-article-container">
<article class="bd-article"><section id="{name}">
<h1>{title}<a class="headerlink" href="#{name}">#</a></h1>
<p class="gradbook-lang-switch"><a href="../xx/{name}.html">Other language</a></p>
<section id="{name}-s"><h2>Section of {title}</h2><p>{body}</p></section>
</section></article></div></div></main></div></body></html>"""


def _tiny(tmp_path: Path, body: str, lang: str = "en"):
    folder = tmp_path / "site" / "chapters" / lang
    folder.mkdir(parents=True)
    (tmp_path / "site" / "index.html").write_text("<html></html>")
    pages = []
    for name, title in (("01_a", "First 梯度"), ("02_b", "Second")):
        text = PAGE.format(lang=lang, name=name, title=title, body=body if name == "02_b" else "Plain text.")
        (folder / f"{name}.html").write_text(text, encoding="utf-8")
        pages.append((f"chapters/{lang}/{name}.html", text))
    return tmp_path / "site", pages


def _print_tiny(site_dir: Path, pages, lang: str, tmp_path: Path):
    edition = pdf.Edition(lang=lang, title="Tiny", date="2026-01-01", commit="abc")
    document = pdf.combine(pages, edition)
    with bc.serve(site_dir) as base, bc.launch() as browser:
        data, info = pdf.print_document(browser, base, lang, document.html)
    out = tmp_path / "tiny.pdf"
    return pdf.print_problems(info, cjk=True), pdf.finish(data, document, edition, out, cjk=True), out


@pytest.fixture
def chromium():
    if reason := bc.browser_missing():
        pytest.fail(reason)


@site
def test_print_checks_pass_on_a_good_edition(tmp_path, chromium):
    from pypdf import PdfReader

    site_dir, pages = _tiny(tmp_path, "Nothing wrong here.")
    before, after, out = _print_tiny(site_dir, pages, "en", tmp_path)
    assert before == [] and after == []
    reader = PdfReader(out)
    assert pdf.outline_titles(reader) == ["First 梯度", "Second"]
    assert pdf.outline_titles(reader, depth=2) == ["First 梯度", "Section of First 梯度", "Second", "Section of Second"]
    text = "".join(page.extract_text() for page in reader.pages)
    assert "Tiny" in text and "Skip to main content" not in text and "Other language" not in text


@site
def test_print_checks_catch_a_missing_image_and_a_cut_line(tmp_path, chromium):
    body = ('<img src="../../_images/nowhere.png" width="10" height="10">'
            '<span style="white-space:nowrap">' + "unbreakable " * 150 + "</span>")
    site_dir, pages = _tiny(tmp_path, body)
    before, _, _ = _print_tiny(site_dir, pages, "en", tmp_path)
    assert any("image not loaded" in p and "nowhere.png" in p for p in before), before
    assert any("cut at the right margin" in p for p in before), before


@site
def test_print_checks_catch_a_cjk_font_that_does_not_load(tmp_path, chromium, monkeypatch):
    monkeypatch.setattr(pdf, "CJK_FAMILY", "No Such Font gradbook")
    monkeypatch.setattr(pdf, "CJK_MONO_FAMILY", "No Such Font gradbook Mono")
    site_dir, pages = _tiny(tmp_path, "中文正文。", lang="zh")
    before, after, _ = _print_tiny(site_dir, pages, "zh", tmp_path)
    assert any("did not load" in p for p in before), before
    assert any("No Such Font gradbook" in p and "tofu" in p for p in after), after


# -- pure helpers, each shown the fault it must catch -----------------------------------


def _heads(*specs):
    return [pdf.Heading(level, title, ident) for level, title, ident in specs]


@build
def test_outline_nests_sections_under_their_page():
    heads = _heads((1, "One", "a"), (2, "One.1", "b"), (2, "One.2", "c"), (1, "Two", "d"), (2, "Two.1", "e"))
    top = pdf.build_outline(heads, {"a": 2, "b": 2, "c": 4, "d": 7, "e": 8})
    assert [(e.title, e.page, [(c.title, c.page) for c in e.children]) for e in top] == [
        ("One", 2, [("One.1", 2), ("One.2", 4)]), ("Two", 7, [("Two.1", 8)])]


@build
def test_outline_rejects_what_cannot_be_right():
    heads = _heads((1, "One", "a"), (2, "One.1", "b"), (1, "Two", "c"))
    with pytest.raises(ValueError, match="no destination.*One.1"):
        pdf.build_outline(heads, {"a": 2, "c": 5})  # Chromium wrote no destination for b
    with pytest.raises(ValueError, match="backwards"):
        pdf.build_outline(heads, {"a": 2, "b": 9, "c": 5})
    with pytest.raises(ValueError, match="not a page's h1"):
        pdf.build_outline(_heads((2, "Orphan", "x")), {"x": 0})


def _fake_page(lang: str, name: str, body: str, title: str = "Title") -> str:
    return f"""<!DOCTYPE html><html lang="{lang}"><head><title>t</title>
<link rel="stylesheet" href="../../_static/a.css"><link rel="preload" href="../../_static/f.woff2">
<script src="../../_static/x.js"></script></head><body>
<div id="pst-skip-link"><a href="#main-content">Skip to main content</a></div>
<div class="bd-container"><div class="bd-sidebar-primary">Toggle primary sidebar</div>
<main class="bd-main"><div class="bd-content"><div class="bd-article-container">
<article class="bd-article"><section id="{name}"><span id="id1"></span>
<h1>{title}<a class="headerlink" href="#{name}">#</a></h1>{body}</section></article>
</div></div></main></div></body></html>"""


EXPLORER = """<div class="gradbook-explorer" id="gradbook-explorer-1"><div class="gbx-controls">
<label class="gbx-control"><span class="gbx-label">k</span><input type="range" value="1" data-index="0"><output>2</output></label>
<label class="gbx-control"><span class="gbx-label">f</span><select data-index="1"><option value="0">sign</option>
<option value="1" selected>round</option></select></label></div><svg class="gbx-plot"></svg>
<script type="application/json" class="gbx-data">{}</script></div>"""


@build
def test_combine_joins_pages_into_one_print_document():
    from bs4 import BeautifulSoup

    one = _fake_page("en", "en-ch01", '<p class="gradbook-lang-switch"><a href="../zh/01_a.html">中文版</a></p>'
                     '<p>See <a href="02_b.html#en-ch02-x">there</a>, <a href="#id1">here</a>, '
                     '<a href="../../genindex.html">the index</a> and <a href="https://example.org/">out</a>. ✅</p>'
                     '<details><summary>s</summary>hidden</details>' + EXPLORER, "One $x$")
    two = _fake_page("en", "en-ch02", '<section id="en-ch02-x"><h2>Sub <span class="katex"><span class="katex-mathml">'
                     '<math><semantics><mi>λ</mi><annotation encoding="application/x-tex">\\lambda</annotation>'
                     '</semantics></math></span><span class="katex-html">λ</span></span></h2>'
                     '<img src="../../_images/p.png"></section>', "Two")
    gloss = _fake_page("en", "glossary", '<img src="../_images/g.png"><link rel="stylesheet" href="../_static/b.css">',
                       "Glossary")
    gloss = gloss.replace('<link rel="stylesheet" href="../../_static/a.css">',
                          '<link rel="stylesheet" href="../_static/a.css"><link rel="stylesheet" href="../_static/b.css">')
    edition = pdf.Edition(lang="en", title="Book", date="2026-01-01", commit="abc123",
                          colab={"chapters/en/01_a.html": "https://colab.example/01_a.ipynb"})
    pages = [("chapters/en/01_a.html", one), ("chapters/en/02_b.html", two), ("chapters/glossary.html", gloss)]
    document = pdf.combine(pages, edition)
    soup = BeautifulSoup(document.html, "html.parser")

    assert document.titles == ["One $x$", "Two", "Glossary"]
    assert [(h.level, h.title) for h in document.headings] == [
        (1, "One $x$"), (1, "Two"), (2, "Sub λ"), (1, "Glossary")]
    ids = [node["id"] for node in soup.find_all(id=True)]
    assert len(ids) == len(set(ids)), "ids collide across pages"
    assert all(soup.find(id=h.ident) for h in document.headings)
    text = soup.get_text(" ")
    for chrome in ("Skip to main content", "Toggle primary sidebar", "中文版"):
        assert chrome not in text
    assert soup.find("script") is None and soup.select("a.headerlink") == []
    hrefs = {a.get_text(): a.get("href") for a in soup.select("section.gradbook-print-page a")}
    assert hrefs["there"] == "#p1-en-ch02-x" and soup.find(id="p1-en-ch02-x") is not None
    assert hrefs["here"] == "#p0-id1"
    assert hrefs["the index"] is None  # elsewhere in the site: no target in the PDF
    assert hrefs["out"] == "https://example.org/"
    assert "✓" in text and "✅" not in text
    assert soup.find("details").has_attr("open")
    # Images and stylesheets rebased onto the print document (chapters/en/), stylesheets once each.
    assert [img["src"] for img in soup.find_all("img")] == ["../../_images/p.png", "../../_images/g.png"]
    css = [link["href"] for link in soup.head.find_all("link")]
    assert css == ["../../_static/a.css", "../../_static/b.css"], css
    assert soup.select_one("style#gradbook-print") is not None
    # The explorer: controls out, its default setting and the note in.
    assert soup.select(".gbx-controls, input, select, .gbx-data") == []
    note = soup.select_one("div.gradbook-explorer + p.gradbook-print-note")
    assert note is not None and "(k = 2, f = round)" in note.get_text()
    assert pdf.EXPLORER_MARK["en"] in _spaced(note.get_text()) and "make lab" in note.get_text()
    assert note.find("a", href="https://colab.example/01_a.ipynb") is not None
    assert "chapters/en/01_a.html" in note.get_text()
    # Title page and contents first, then the pages.
    sections = soup.select("article.bd-article > section")
    assert [s["class"][0] for s in sections] == ["gradbook-print-title", "gradbook-print-contents"] + [
        "gradbook-print-page"] * 3
    assert "Built 2026-01-01 from commit abc123." in sections[0].get_text()
    assert [a["href"] for a in sections[1].find_all("a")] == ["#" + h.ident for h in document.headings]


@build
def test_combine_rejects_a_page_that_is_not_the_books():
    edition = pdf.Edition(lang="en", title="Book", date="2026-01-01")
    with pytest.raises(ValueError, match="chapters/en/x.html: no article.bd-article"):
        pdf.combine([("chapters/en/x.html", "<html><body><p>404</p></body></html>")], edition)
    with pytest.raises(ValueError, match="at least one page"):
        pdf.combine([], edition)


@build
def test_explorer_note_with_a_web_address_links_the_page():
    from bs4 import BeautifulSoup

    soup = BeautifulSoup("", "html.parser")
    edition = pdf.Edition(lang="zh", title="B", date="d", web="https://book.example/")
    note = pdf.explorer_note(soup, edition, "chapters/zh/05_ste.html", "k = 2")
    assert note.find("a", href="https://book.example/chapters/zh/05_ste.html") is not None
    assert pdf.EXPLORER_MARK["zh"] in note.get_text() and "k = 2" in note.get_text()


@build
def test_cjk_missing_finds_characters_the_font_lacks():
    cmap = {ord(c) for c in "梯度"}
    assert pdf.cjk_missing("梯度 gradient ±λ", cmap) == []
    assert pdf.cjk_missing("梯度下降，", cmap) == ["下", "降", "，"]


def _pdf_with_font(name: str, embedded: bool):
    """A one-page PDF whose page uses one TrueType font, embedded (a FontFile2) or not."""
    from pypdf import PdfReader, PdfWriter
    from pypdf.generic import DictionaryObject, NameObject, StreamObject

    writer = PdfWriter()
    page = writer.add_blank_page(100, 100)
    descriptor = DictionaryObject({NameObject("/Type"): NameObject("/FontDescriptor"),
                                   NameObject("/FontName"): NameObject(name)})
    if embedded:
        descriptor[NameObject("/FontFile2")] = writer._add_object(StreamObject())
    font = DictionaryObject({NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"): NameObject("/TrueType"),
                             NameObject("/BaseFont"): NameObject(name),
                             NameObject("/FontDescriptor"): writer._add_object(descriptor)})
    page[NameObject("/Resources")] = DictionaryObject({
        NameObject("/Font"): DictionaryObject({NameObject("/F1"): writer._add_object(font)})})
    buffer = io.BytesIO()
    writer.write(buffer)
    return PdfReader(io.BytesIO(buffer.getvalue()))


@build
def test_pdf_fonts_sees_a_font_that_is_not_embedded():
    reader = _pdf_with_font("/Helvetica", embedded=False)
    assert pdf.pdf_fonts(reader) == {"/Helvetica": False}
    problems = pdf.pdf_problems(reader, [], cjk=True)
    assert "font /Helvetica is not embedded" in problems
    assert any("tofu" in p for p in problems)  # and no CJK font in a Chinese edition
    reader = _pdf_with_font("/ABCDEF+WenQuanYiMicroHei", embedded=True)
    assert pdf.pdf_fonts(reader) == {"/ABCDEF+WenQuanYiMicroHei": True}
    assert pdf.pdf_problems(reader, [], cjk=True) == []
    assert pdf.pdf_problems(reader, ["Chapter"], cjk=True) != []  # the bookmarks are not the pages
    assert pdf.pdf_problems(_pdf_with_font("/Helvetica", embedded=True), [], cjk=False) == []


@build
def test_math_text_takes_each_formula_once():
    from bs4 import BeautifulSoup

    h = BeautifulSoup('<h2>Pick <span class="katex"><span class="katex-mathml"><math><semantics><mi>f</mi>'
                      '<annotation encoding="application/x-tex">f</annotation></semantics></math></span>'
                      '<span class="katex-html">f</span></span>\n and g<a class="headerlink">#</a></h2>',
                      "html.parser")
    assert pdf.math_text(h) == "Pick f and g"


@build
def test_edition_pages_are_the_language_then_the_shared_pages():
    for lang in LANGS:
        pages = pdf.edition_pages(lang)
        assert pages[: len(book.site_pages(lang))] == book.site_pages(lang)
        assert pages[len(book.site_pages(lang)):] == ["chapters/glossary.html"]


@build
def test_it_fails_loudly_without_a_site_or_font(tmp_path, capsys):
    assert pdf.main([str(tmp_path / "nowhere"), "--out", str(tmp_path / "out")]) == 2
    assert "has no built site: run `make book` first" in capsys.readouterr().err
    (tmp_path / "index.html").write_text("<html></html>")
    reason = pdf.missing(tmp_path, font=tmp_path / "no-font.ttc")
    assert reason and pdf.CJK_FONT_PACKAGE in reason and "no-font.ttc" in reason


@build
def test_makefile_installs_the_font_the_tool_needs():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    target = re.search(r"^pdf:.*\n((?:\t.*\n)+)", makefile, re.M)
    assert target, "no pdf target in the Makefile"
    assert str(pdf.CJK_FONT_FILE) in makefile and pdf.CJK_FONT_PACKAGE in target.group(1)
    assert "tools.pdf" in target.group(1)
