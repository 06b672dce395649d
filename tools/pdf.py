"""The PDF editions: ``_build/pdf/gradbook-<lang>.pdf``, one per language, from the built site.

The route: headless Chromium (Debian's ``/usr/bin/chromium`` through
Playwright, as in :mod:`tools.browsercheck`) prints the site's own HTML, and
pypdf finishes the file.  No LaTeX: the site is already typeset (KaTeX
pre-rendered its math at build time, the explorers are inline SVG, the
figures are PNG), so the browser prints exactly what the web edition shows.

1. :func:`combine` (pure, no browser) joins every page of a language, in
   table-of-contents order (:func:`edition_pages`: ``tools.book``'s pages of
   that language, then the shared reference pages such as the bilingual
   glossary), into one print document: a title page, a contents page, then each page's
   ``article.bd-article`` in a section of its own.  It drops the theme's
   chrome and every script (nothing left needs one: the page is static),
   prefixes each page's ids so they stay unique, turns links to pages of the
   edition into links inside the PDF (links elsewhere in the site lose their
   target, external links stay), opens every dropdown (the exercise
   solutions are printed, expanded), prints each explorer at its default
   setting with a note (:data:`EXPLORER_NOTE`) saying where the live one is,
   and adds the print stylesheet (:data:`PRINT_CSS`): A4, code that wraps,
   Chinese in the CJK font :data:`CJK_FAMILY` (embedded in the PDF, so the
   reader's fonts do not matter).
2. Chromium loads it from a local server (requests elsewhere are aborted)
   at the printed width, waits for every image and font, checks them (a
   broken image, a CJK font that did not load, anything reaching past the
   right margin is a problem), and prints it once: A4, page numbers in the
   footer.  One document gives continuous page numbers, a contents page and
   links across chapters.  The PDF is not tagged (:data:`TAGGED`): tagging
   doubles its size and time.
3. pypdf writes the bookmarks (:func:`build_outline`): one per page of the
   book with its title, its sections below, each at the page of the named
   destination Chromium wrote for the heading (every heading is the target
   of a link of the contents page).  Chromium's own outline
   (``outline=True``) is not used: it repeats each formula (KaTeX's MathML
   and HTML) or drops it, and it needs a tagged PDF.  pypdf also sets the
   metadata; the result is checked (:func:`pdf_problems`: the bookmarks are
   the pages' titles, every font is embedded, the CJK font is there), then
   copied into the site as ``_build/html/pdf/gradbook-<lang>.pdf``.

It fails loudly (exit 2, one clear line) when the site is not built, Chromium
or Playwright is missing, or the CJK font :data:`CJK_FONT_FILE` (Debian's
:data:`CJK_FONT_PACKAGE`, installed by ``make pdf``) is not there.

Usage: ``python -m tools.pdf [_build/html] [--out _build/pdf]``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import html as htmllib
import posixpath
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple
from urllib.parse import urljoin, urlsplit

from tools import book
from tools import browsercheck as bc
from tools.book import ROOT

OUT = ROOT / "_build" / "pdf"
SITE_FOLDER = "pdf"  # the copies in the site: _build/html/pdf/gradbook-<lang>.pdf
PRINT_NAME = "gradbook-print.html"  # the print document's address, beside the language's pages
CJK_FONT_PACKAGE = "fonts-wqy-microhei"  # Debian; 1.6 MB download, 5.3 MB installed
CJK_FONT_FILE = Path("/usr/share/fonts/truetype/wqy/wqy-microhei.ttc")
CJK_FAMILY = "WenQuanYi Micro Hei"
CJK_MONO_FAMILY = "WenQuanYi Micro Hei Mono"
# Unicode blocks that take the CJK font: CJK radicals to Bopomofo, CJK symbols
# and punctuation, the unified ideographs (and extension A), compatibility
# ideographs, vertical and small forms, full-width forms.
CJK_RANGES = ((0x2E80, 0x33FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF),
              (0xFE10, 0xFE1F), (0xFE30, 0xFE4F), (0xFF00, 0xFFEF))
# Characters no font this machine is sure to have can draw (the colour emoji
# of the exercise checks' feedback), and what the PDF prints instead.
SUBSTITUTES = {"✅": "✓", "❌": "✗"}
PAGE_MM = (210, 297)  # A4
MARGIN_MM = {"top": 14, "bottom": 16, "left": 14, "right": 14}
# The width Chromium lays the print out at, in CSS pixels (96 per inch): the
# print document is also loaded at this width, to find what would be cut.
PRINT_WIDTH_PX = round((PAGE_MM[0] - MARGIN_MM["left"] - MARGIN_MM["right"]) * 96 / 25.4)
FOOTER = ('<div style="width:100%;font-size:8px;color:#666;text-align:center;">'
          '<span class="pageNumber"></span> / <span class="totalPages"></span></div>')
OUTLINE_DEPTH = 2  # h1 (a page of the book) and h2 (its sections) in the bookmarks
PRINT_TIMEOUT_MS = 300_000
TAGGED = False  # a tagged PDF (accessibility structure) is twice the size and takes ~50% longer

EDITION = {"en": "English edition", "zh": "中文版"}
CONTENTS = {"en": "Contents", "zh": "目录"}
TITLE_PAGE = {
    "en": "Built {date} from commit {commit}.",
    "zh": "构建于 {date}，提交 {commit}。",
}
NO_COMMIT = {"en": "Built {date}.", "zh": "构建于 {date}。"}
EXPLORER_NOTE = {
    "en": ("Printed at its default setting ({setting}). The live explorer is on the same page of the web "
           "edition ({web}) and in the chapter notebook: on Colab ({colab}) or locally with "
           "<code>make lab</code>."),
    "zh": ("此处印出的是默认设置（{setting}）。可交互的探索器见网页版的同一页（{web}），以及本章的笔记本："
           "在 Colab 上（{colab}）或在本地用 <code>make lab</code> 打开。"),
}
# A fragment of each note, as the PDF's text shows it (the tests look for it).
EXPLORER_MARK = {"en": "The live explorer is on the same page of the web edition", "zh": "可交互的探索器见网页版的同一页"}

PRINT_CSS = """
@font-face { font-family: "gradbook CJK"; src: local("%(cjk)s"), local("%(cjk_ps)s"); unicode-range: %(ranges)s; }
@font-face { font-family: "gradbook CJK Mono"; src: local("%(mono)s"), local("%(mono_ps)s"); unicode-range: %(ranges)s; }
html:root {
  --pst-font-family-base-system: "gradbook CJK", system-ui, sans-serif !important;
  --pst-font-family-monospace-system: "gradbook CJK Mono", "DejaVu Sans Mono", monospace !important;
  --pst-font-size-base: 10pt;
}
.bd-article h1 { font-size: 20pt !important; }
.bd-article h2 { font-size: 15pt !important; }
.bd-article h3 { font-size: 12.5pt !important; }
.bd-article h4 { font-size: 11pt !important; }
html, body { font-family: "gradbook CJK", system-ui, sans-serif; background: #fff !important; }
code, kbd, pre, samp, .highlight pre, .output pre, div.highlight {
  font-family: "gradbook CJK Mono", "DejaVu Sans Mono", monospace !important;
}
/* Only the article: no header, sidebars, search, buttons, footers. */
.bd-container, .bd-container__inner, .bd-main, .bd-content, .bd-article-container {
  display: block !important; max-width: none !important; width: auto !important;
  margin: 0 !important; padding: 0 !important; height: auto !important; overflow: visible !important;
}
.bd-article { padding: 0 !important; overflow: visible !important; }
/* sphinx-book-theme's print style hides each page's first h1 (it prints its own title block). */
.bd-main .bd-content .bd-article h1:first-of-type { display: block !important; }
a.headerlink, button, .copybtn, .toggle-button, dialog, .d-print-none { display: none !important; }
/* Everything rendered: no lazy sections, no collapsed dropdowns. */
* { content-visibility: visible !important; }
.toggle-hidden .admonition-title ~ * { height: auto !important; opacity: 1 !important; visibility: visible !important; }
/* Code wraps instead of being cut at the margin. */
code, span.pre { white-space: pre-wrap !important; overflow-wrap: anywhere; }
pre, .highlight pre, .output pre, .cell_output pre {
  white-space: pre-wrap !important; overflow-wrap: anywhere; word-break: break-word; overflow: visible !important;
  max-height: none !important; font-size: 8.5pt;
}
.cell_output, .output, div.highlight, .pst-scrollable-table-container, .table-wrapper, .math-wrapper, div.math,
.katex-display {
  overflow: visible !important; max-height: none !important;
}
table { max-width: 100%%; font-size: 85%%; }
td, th { overflow-wrap: anywhere; }  /* a wide table must fit the page: words may break */
/* An equation or a short code cell is never split by a page break; the frame of a
   cell goes with its code (a long one still breaks, where it must). */
.katex-display, div.math { break-inside: avoid; }
div.cell_input, div.cell_input div.highlight, div.cell_output { break-inside: avoid; }
img { max-width: 100%% !important; height: auto !important; break-inside: avoid; }
h1, h2, h3, h4, p.admonition-title { break-after: avoid; }
.gradbook-explorer, figure, .cell_output img, .admonition-title + * { break-inside: avoid; }
.gradbook-explorer { max-width: 100%%; }
.gradbook-explorer .gbx-controls { display: none !important; }
p.gradbook-print-note { font-size: 85%%; color: #444; margin-top: 0.2rem; }
section.gradbook-print-page { break-before: page; }
section.gradbook-print-title {
  break-after: page; text-align: center; padding-top: 30vh;
}
section.gradbook-print-title .gradbook-print-book { font-size: 30pt; font-weight: 700; margin-bottom: 1rem; }
section.gradbook-print-title .gradbook-print-edition { font-size: 16pt; margin-bottom: 3rem; }
section.gradbook-print-title p { font-size: 11pt; }
section.gradbook-print-contents { break-after: page; }
section.gradbook-print-contents a { color: inherit; text-decoration: none; }
p.gradbook-print-contents-title { font-size: 20pt; font-weight: 700; margin-bottom: 1rem; }
p.gradbook-print-contents-page { font-weight: 600; margin: 0.7rem 0 0.1rem; break-after: avoid; }
p.gradbook-print-contents-sections { font-size: 85%%; margin: 0 0 0 1.2rem; line-height: 1.5; }
"""


def print_css() -> str:
    """:data:`PRINT_CSS` with the CJK font's names and ranges filled in."""
    ranges = ", ".join(f"U+{lo:04X}-{hi:04X}" for lo, hi in CJK_RANGES)
    return PRINT_CSS % {"cjk": CJK_FAMILY, "cjk_ps": CJK_FAMILY.replace(" ", ""), "mono": CJK_MONO_FAMILY,
                        "mono_ps": CJK_MONO_FAMILY.replace(" ", ""), "ranges": ranges}


class PdfError(RuntimeError):
    """Why an edition cannot be made (printed as one line, exit status 2)."""


# -- the book's editions ----------------------------------------------------------


def edition_pages(lang: str, root: Path = ROOT) -> List[str]:
    """The site paths of an edition, in toc order: every page of ``lang``,
    then the pages of the toc outside any language folder under ``chapters/``
    (the bilingual glossary), which both editions share."""
    shared = [f"{doc}.html" for doc in book.docnames(root)
              if doc.startswith("chapters/") and doc.count("/") == 1]
    return book.site_pages(lang, root) + shared


def pdf_name(lang: str) -> str:
    return f"gradbook-{lang}.pdf"


def print_path(lang: str) -> str:
    """Where the print document of ``lang`` is served: beside its pages, so
    their relative addresses hold."""
    return f"chapters/{lang}/{PRINT_NAME}"


# -- the print document (pure) ------------------------------------------------------


@dataclass
class Edition:
    """What the title page and the notes say."""

    lang: str
    title: str
    date: str
    commit: Optional[str] = None
    web: Optional[str] = None  # the web edition's address (ends in /), or None: site paths are printed
    colab: Dict[str, str] = field(default_factory=dict)  # site path -> Colab address of its notebook


def _soup(text: str):
    from bs4 import BeautifulSoup

    return BeautifulSoup(text, "html.parser")


def _relative(url: str, page: str, target: str) -> str:
    """``url`` as written in site page ``page``, rewritten for a document at ``target``."""
    parts = urlsplit(url)
    if parts.scheme or parts.netloc or url.startswith(("/", "#")) or not parts.path:
        return url
    absolute = posixpath.normpath(posixpath.join(posixpath.dirname(page), parts.path))
    rel = posixpath.relpath(absolute, posixpath.dirname(target))
    return rel + (f"?{parts.query}" if parts.query else "") + (f"#{parts.fragment}" if parts.fragment else "")


def _site_target(url: str, page: str) -> Optional[Tuple[str, str]]:
    """``(site path, fragment)`` a link in site page ``page`` leads to, or None
    for a link out of the site (another scheme or host)."""
    parts = urlsplit(url)
    if parts.scheme or parts.netloc:
        return None
    if url.startswith("#"):
        return page, parts.fragment
    return posixpath.normpath(posixpath.join(posixpath.dirname(page), parts.path)), parts.fragment


def anchor(index: int, ident: str = "") -> str:
    """The id, in the print document, of id ``ident`` of the ``index``-th page
    (``""``: the page's own section)."""
    return f"p{index}" + (f"-{ident}" if ident else "")


def math_text(node) -> str:
    """A node's text with each KaTeX formula once, as its MathML's characters
    (``λ``, not ``\\lambda`` nor KaTeX's MathML and HTML both), whitespace
    collapsed, headerlinks dropped."""
    node = _soup(str(node))
    for link in node.select("a.headerlink"):
        link.decompose()
    for katex in node.select(".katex"):
        mathml = katex.select_one(".katex-mathml math") or katex
        for annotation in mathml.select("annotation"):
            annotation.decompose()
        katex.replace_with(mathml.get_text())
    return re.sub(r"\s+", " ", node.get_text()).strip()


def explorer_setting(explorer) -> str:
    """An explorer's default setting, as its controls show it: ``k = 2, f = round``."""
    shown = []
    for control in explorer.select(".gbx-control"):
        label = control.select_one(".gbx-label")
        name = label.get_text(strip=True) if label else "?"
        select = control.select_one("select")
        if select is not None:
            option = select.select_one("option[selected]") or select.select_one("option")
            value = option.get_text(strip=True) if option else "?"
        else:
            output = control.select_one("output")
            value = output.get_text(strip=True) if output else (control.select_one("input") or {}).get("value", "?")
        shown.append(f"{name} = {value}")
    return ", ".join(shown) or "-"


def _link(soup, href: str, text: str):
    a = soup.new_tag("a", href=href)
    a.string = text
    return a


def explorer_note(soup, edition: Edition, page: str, setting: str):
    """The ``p.gradbook-print-note`` printed under an explorer of site page ``page``."""
    web = (edition.web + page) if edition.web else page
    colab = edition.colab.get(page, "")
    text = EXPLORER_NOTE[edition.lang].format(setting=htmllib.escape(setting), web="\0web\0", colab="\0colab\0")
    note = soup.new_tag("p", attrs={"class": "gradbook-print-note"})
    for piece in re.split(r"(\0web\0|\0colab\0)", text):
        if piece == "\0web\0":
            note.append(_link(soup, web, web) if edition.web else soup.new_string(web))
        elif piece == "\0colab\0":
            note.append(_link(soup, colab, colab) if colab else soup.new_string("-"))
        elif piece:
            note.append(_soup(piece))
    return note


def _substitute(soup) -> None:
    for node in soup.find_all(string=re.compile("[" + "".join(SUBSTITUTES) + "]")):
        text = str(node)
        for char, instead in SUBSTITUTES.items():
            text = text.replace(char, instead)
        node.replace_with(text)


def title_page(soup, edition: Edition):
    """The first page: the book's title, the edition, the build's date and commit."""
    section = soup.new_tag("section", attrs={"class": "gradbook-print-title"})
    for cls, text in (("gradbook-print-book", edition.title), ("gradbook-print-edition", EDITION[edition.lang])):
        p = soup.new_tag("p", attrs={"class": cls})
        p.string = text
        section.append(p)
    p = soup.new_tag("p")
    template = TITLE_PAGE if edition.commit else NO_COMMIT
    p.string = template[edition.lang].format(date=edition.date, commit=edition.commit)
    section.append(p)
    return section


@dataclass
class Heading:
    """A heading of the print document that gets a bookmark."""

    level: int  # 1: a page of the book (its h1), 2: a section
    title: str  # :func:`math_text` of the heading
    ident: str  # its id in the print document


@dataclass
class Document:
    html: str
    headings: List[Heading]
    titles: List[str]  # each page's title (its first h1), read before any change
    lang_tag: str = ""  # the language of the first page (<html lang>): zh-CN


def contents_page(soup, lang: str, heads: Sequence[Heading], sources: Dict[str, object]):
    """The contents: each page of the book (a link to its h1), its sections
    (links to its h2s) below.  Its links also make Chromium write a named
    destination for every heading, which :func:`build_outline` reads."""
    section = soup.new_tag("section", attrs={"class": "gradbook-print-contents"})
    title = soup.new_tag("p", attrs={"class": "gradbook-print-contents-title"})
    title.string = CONTENTS[lang]
    section.append(title)
    line = None
    for head in heads:
        link = soup.new_tag("a", href="#" + head.ident)
        for child in list(_soup(str(sources[head.ident])).contents):
            link.append(child)
        for junk in link.select("a.headerlink"):
            junk.decompose()
        for inner in link.find_all("a"):  # no link inside a link
            inner.unwrap()
        if head.level == 1:
            chapter = soup.new_tag("p", attrs={"class": "gradbook-print-contents-page"})
            chapter.append(link)
            section.append(chapter)
            line = soup.new_tag("p", attrs={"class": "gradbook-print-contents-sections"})
            section.append(line)
        elif line is not None:
            if line.contents:
                line.append(" · ")
            line.append(link)
    for empty in section.select("p.gradbook-print-contents-sections"):
        if not empty.contents:
            empty.decompose()
    return section


def combine(pages: Sequence[Tuple[str, str]], edition: Edition, depth: int = OUTLINE_DEPTH) -> Document:
    """The print document of an edition from its ``pages``: ``(site path,
    HTML)`` in order, to be served at :func:`print_path` of the edition's
    language; with its headings down to ``h<depth>`` (the bookmarks).

    Raises ``ValueError`` when a page has no ``article.bd-article`` with an
    ``h1`` (not a page of the built book)."""
    if not pages:
        raise ValueError("combine: an edition needs at least one page")
    target = print_path(edition.lang)
    index_of = {path: i for i, (path, _) in enumerate(pages)}
    soups, titles = [], []
    for path, text in pages:
        soup = _soup(text)
        article = soup.select_one("article.bd-article")
        if article is None or article.find("h1") is None:
            raise ValueError(f"{path}: no article.bd-article with an h1: not a page of the built book")
        soups.append(soup)
        titles.append(math_text(article.find("h1")))

    doc = soups[0]
    first = pages[0][0]
    # The head: the first page's, every script out, each stylesheet of any page once, then ours.
    for script in doc.find_all("script"):
        script.decompose()
    for tag in doc.head.find_all("link"):
        if "stylesheet" not in (tag.get("rel") or []):
            tag.decompose()  # preloads and navigation links
    seen = set()
    for link in doc.head.find_all("link", rel="stylesheet"):
        link["href"] = _relative(link["href"], first, target)
        seen.add(link["href"].split("?")[0])
    for (path, _), soup in zip(pages[1:], soups[1:]):
        for link in soup.head.find_all("link", rel="stylesheet"):
            href = _relative(link["href"], path, target)
            if href.split("?")[0] not in seen:
                seen.add(href.split("?")[0])
                doc.head.append(doc.new_tag("link", rel="stylesheet", href=href))
    style = doc.new_tag("style", id="gradbook-print")
    style.string = print_css()
    doc.head.append(style)
    if doc.title is not None:
        doc.title.string = f"{edition.title} · {EDITION[edition.lang]}"
    doc.html["data-theme"] = "light"
    doc.html["data-mode"] = "light"

    # The body: only the article's chain of containers, emptied.
    article = doc.select_one("article.bd-article")
    keep = article
    for parent in article.parents:
        if parent.name in ("html", "[document]"):
            break
        for sibling in list(parent.children):
            if sibling is not keep and getattr(sibling, "name", None):
                sibling.decompose()
        keep = parent
    contents = [list(s.select_one("article.bd-article").children) for s in soups]
    article.clear()

    heads: List[Heading] = []
    sources: Dict[str, object] = {}
    sections = []
    for i, ((path, _), soup, children) in enumerate(zip(pages, soups, contents)):
        section = doc.new_tag("section", attrs={"class": "gradbook-print-page", "id": anchor(i)})
        lang = soup.html.get("lang", "") if soup.html else ""
        if lang:
            section["lang"] = lang
        for child in children:
            section.append(child)
        _prepare(section, doc, i, path, target, index_of, edition)
        for k, heading in enumerate(section.find_all([f"h{n}" for n in range(1, depth + 1)])):
            if not heading.get("id"):
                heading["id"] = anchor(i, f"heading-{k}")
            heads.append(Heading(int(heading.name[1]), math_text(heading), heading["id"]))
            sources[heading["id"]] = heading.decode_contents()
        sections.append(section)
    article.append(title_page(doc, edition))
    article.append(contents_page(doc, edition.lang, heads, sources))
    for section in sections:
        article.append(section)
    _substitute(doc)
    return Document(str(doc), heads, titles, doc.html.get("lang", ""))


def _prepare(section, doc, index: int, page: str, target: str, index_of: Dict[str, int], edition: Edition) -> None:
    """One page's content, made fit for the print document (see :func:`combine`)."""
    for junk in section.select("script, a.headerlink, p.gradbook-lang-switch, button, .gbx-controls"):
        if junk.name == "div" and "gbx-controls" in (junk.get("class") or []):
            explorer = junk.find_parent("div", class_="gradbook-explorer")
            if explorer is not None and not explorer.get("data-gradbook-setting"):
                explorer["data-gradbook-setting"] = explorer_setting(junk)
        junk.decompose()
    for details in section.find_all("details"):
        details["open"] = ""
    for node in section.find_all(id=True):
        node["id"] = anchor(index, node["id"])
    for node in section.find_all(attrs={"aria-labelledby": True}):
        node["aria-labelledby"] = " ".join(anchor(index, ident) for ident in node["aria-labelledby"].split())
    for node in section.find_all(["img", "source", "video", "audio", "iframe", "embed"], src=True):
        node["src"] = _relative(node["src"], page, target)
    for node in section.find_all("object", data=True):
        node["data"] = _relative(node["data"], page, target)
    for link in section.find_all("a", href=True):
        found = _site_target(link["href"], page)
        if found is None:
            continue  # another host: kept
        path, fragment = found
        if path in index_of:
            link["href"] = "#" + anchor(index_of[path], fragment)
        else:  # elsewhere in the site (the other language, the index, a download): no target in the PDF
            del link["href"]
    for explorer in section.select("div.gradbook-explorer"):
        setting = explorer.attrs.pop("data-gradbook-setting", None) or explorer_setting(explorer)
        explorer.insert_after(explorer_note(doc, edition, page, setting))


# -- the outline (pure) ---------------------------------------------------------------


@dataclass
class Entry:
    title: str
    page: int  # 0-based page of the PDF
    children: List["Entry"] = field(default_factory=list)


def build_outline(heads: Sequence[Heading], dests: Dict[str, int]) -> List[Entry]:
    """The bookmarks: each of ``heads`` at its page, ``dests[heading.ident]``
    (the PDF's named destinations), under the last heading of a lower level
    before it.

    Raises ``ValueError`` when a heading has no destination (Chromium wrote
    none: a heading not laid out), the pages go backwards, or the first
    heading is not a page's h1."""
    lost = [head.title for head in heads if head.ident not in dests]
    if lost:
        raise ValueError(f"no destination in the PDF for the headings {lost}")
    pages = [dests[head.ident] for head in heads]
    back = [(a.title, b.title) for a, b, pa, pb in zip(heads, heads[1:], pages, pages[1:]) if pb < pa]
    if back:
        raise ValueError(f"the headings' pages go backwards: {back}")
    if heads and heads[0].level != 1:
        raise ValueError(f"the first heading is an h{heads[0].level} ({heads[0].title!r}), not a page's h1")
    top: List[Entry] = []
    stack: List[Tuple[int, Entry]] = []
    for head, page in zip(heads, pages):
        entry = Entry(head.title, page)
        while stack and stack[-1][0] >= head.level:
            stack.pop()
        (stack[-1][1].children if stack else top).append(entry)
        stack.append((head.level, entry))
    return top


def named_destinations(reader) -> Dict[str, int]:
    """``{name: 0-based page}`` of a PDF's named destinations (no leading ``/``)."""
    return {str(name).lstrip("/"): reader.get_destination_page_number(dest)
            for name, dest in reader.named_destinations.items()}


def outline_titles(reader, depth: int = 1) -> List[str]:
    """The titles of a PDF's outline entries down to ``depth`` levels, in order."""
    titles: List[str] = []

    def walk(items, level: int) -> None:
        for item in items:
            if isinstance(item, list):
                if level < depth:
                    walk(item, level + 1)
            else:
                titles.append(str(item.title))

    walk(reader.outline, 1)
    return titles


# -- checks of a finished PDF ---------------------------------------------------------


def pdf_fonts(reader) -> Dict[str, bool]:
    """``{font name: embedded?}`` for every font the pages use (descendant
    fonts of composite fonts included; Type 3 fonts count as embedded)."""
    found: Dict[str, bool] = {}

    def visit(font) -> None:
        font = font.get_object()
        name = str(font.get("/BaseFont", font.get("/Name", "?")))
        if font.get("/Subtype") == "/Type0":
            for descendant in font["/DescendantFonts"]:
                visit(descendant)
            return
        descriptor = font.get("/FontDescriptor")
        descriptor = descriptor.get_object() if descriptor is not None else {}
        embedded = font.get("/Subtype") == "/Type3" or any(
            key in descriptor for key in ("/FontFile", "/FontFile2", "/FontFile3"))
        found[name] = found.get(name, True) and embedded

    def resources(obj, seen) -> None:
        obj = obj.get_object()
        if id(obj) in seen:
            return
        seen.add(id(obj))
        fonts = obj.get("/Font")
        if fonts is not None:
            for font in fonts.get_object().values():
                visit(font)
        xobjects = obj.get("/XObject")
        if xobjects is not None:
            for xobject in xobjects.get_object().values():
                xobject = xobject.get_object()
                if xobject.get("/Subtype") == "/Form" and "/Resources" in xobject:
                    resources(xobject["/Resources"], seen)

    seen: set = set()
    for page in reader.pages:
        if "/Resources" in page:
            resources(page["/Resources"], seen)
    return found


def pdf_problems(reader, titles: Sequence[str], cjk: bool) -> List[str]:
    """What is wrong with a finished edition: its top outline entries are not
    ``titles``, a font is not embedded, or (``cjk``: the edition has Chinese
    text) the CJK font is absent."""
    problems = []
    got = outline_titles(reader)
    if got != list(titles):
        problems.append(f"outline entries {got} are not the pages' titles {list(titles)}")
    fonts = pdf_fonts(reader)
    problems += [f"font {name} is not embedded" for name, embedded in sorted(fonts.items()) if not embedded]
    wanted = CJK_FAMILY.replace(" ", "")
    if cjk and not any(wanted in name for name in fonts):
        problems.append(f"no {CJK_FAMILY} font in the PDF: its Chinese text would print as tofu")
    return problems


def cjk_missing(text: str, cmap: Iterable[int]) -> List[str]:
    """The CJK characters (:data:`CJK_RANGES`) of ``text`` that ``cmap`` (the
    code points a font draws) lacks."""
    have = set(cmap)
    return sorted({c for c in text if any(lo <= ord(c) <= hi for lo, hi in CJK_RANGES) and ord(c) not in have})


# -- printing -----------------------------------------------------------------------


def missing(html: Path, font: Path = CJK_FONT_FILE) -> Optional[str]:
    """Why no edition can be made (site, font, pypdf, browser), or None."""
    if not (Path(html) / "index.html").is_file():
        return f"{html} has no built site: run `make book` first"
    if not Path(font).is_file():
        return (f"the CJK font {font} is missing: install Debian's {CJK_FONT_PACKAGE} "
                f"(`make pdf` does, with apt-get as root)")
    try:
        import pypdf  # noqa: F401
    except ImportError:
        return "pypdf is not installed: `make venv` (the `book` extra) installs it"
    return bc.browser_missing()


def font_cmap(font: Path = CJK_FONT_FILE) -> set:
    from fontTools.ttLib import TTCollection, TTFont

    if font.suffix.lower() == ".ttc":
        return set(TTCollection(str(font)).fonts[0].getBestCmap())
    return set(TTFont(str(font)).getBestCmap())


def build_info(html: Path, root: Path = ROOT) -> Tuple[str, Optional[str]]:
    """``(date, commit)``: the build's date (of its ``index.html``, UTC) and
    the repository's commit (``+`` when the work tree has changes), or None."""
    date = dt.datetime.fromtimestamp((Path(html) / "index.html").stat().st_mtime, dt.timezone.utc)
    commit = None
    try:
        commit = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=root, capture_output=True,
                                text=True, check=True).stdout.strip() or None
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, check=True).stdout.strip()
        if commit and dirty:
            commit += "+"
    except (OSError, subprocess.CalledProcessError):
        pass
    return date.strftime("%Y-%m-%d"), commit


_READY_JS = """async () => {
  await Promise.all(Array.from(document.images, img => img.complete ? null
    : new Promise(done => { img.addEventListener('load', done); img.addEventListener('error', done); })));
  await Promise.all(Array.from(document.images, img => img.decode().catch(() => null)));
  await document.fonts.ready;
  return {
    images: document.images.length,
    broken: Array.from(document.images).filter(img => !img.naturalWidth).map(img => img.getAttribute('src')),
    katex: !document.querySelector('.katex') || document.fonts.check('12px KaTeX_Main'),
    cjk: Array.from(document.fonts).filter(f => f.family.replace(/"/g, '') === 'gradbook CJK').map(f => f.status),
    cut: (() => {  // past the right margin (more than an inline box's padding; SVG and KaTeX's hidden MathML clip their own)
      const article = document.querySelector('article.bd-article');
      if (!article) return [];
      const edge = article.getBoundingClientRect().right + 8, found = [], cut = new Set();
      for (const el of article.querySelectorAll('*')) {
        if (el.closest('svg, .katex-mathml')) continue;
        const box = el.getBoundingClientRect();
        if (!box.width || box.right <= edge) continue;
        cut.add(el);
        if (!cut.has(el.parentElement)) found.push(`<${el.tagName.toLowerCase()}> ${Math.round(box.right - edge)} px: `
          + (el.textContent || '').trim().slice(0, 60));
      }
      return found;
    })(),
  };
}"""


def print_document(browser, base: str, lang: str, document: str) -> Tuple[bytes, dict]:
    """Chromium's PDF of ``document`` (served at :func:`print_path`), and what the page reported."""
    context = browser.new_context(service_workers="block", viewport={"width": PRINT_WIDTH_PX, "height": 1200})
    context.set_default_timeout(PRINT_TIMEOUT_MS)  # a whole edition loads and prints in one page
    outside: List[str] = []
    url = urljoin(base, print_path(lang))

    def guard(route):
        request = route.request.url
        if request == url:
            route.fulfill(status=200, content_type="text/html; charset=utf-8", body=document)
        elif bc._is_local(request, base):
            route.continue_()
        else:
            outside.append(request)
            route.abort("blockedbyclient")

    context.route("**/*", guard)
    try:
        page = context.new_page()
        failed: List[str] = []
        page.on("requestfailed", lambda r: failed.append(f"{r.url}: {r.failure}"))
        page.on("response", lambda r: failed.append(f"{r.url}: HTTP {r.status}") if r.status >= 400 else None)
        page.goto(url, wait_until="load", timeout=PRINT_TIMEOUT_MS)
        page.emulate_media(media="print")
        info = page.evaluate(_READY_JS)
        info["failed"] = [f for f in failed if not any(o in f for o in outside)]
        info["outside"] = outside
        data = page.pdf(width=f"{PAGE_MM[0]}mm", height=f"{PAGE_MM[1]}mm",
                        margin={side: f"{mm}mm" for side, mm in MARGIN_MM.items()}, print_background=True,
                        display_header_footer=True, header_template="<span></span>", footer_template=FOOTER,
                        tagged=TAGGED)
        return data, info
    finally:
        context.close()


def print_problems(info: dict, cjk: bool) -> List[str]:
    """What went wrong loading the print document before printing it
    (``cjk``: the document has Chinese text, so the CJK font must load)."""
    problems = [f"image not loaded: {src}" for src in info.get("broken", [])]
    problems += [f"request failed: {text}" for text in info.get("failed", [])]
    problems += [f"request to another host (blocked): {url}" for url in info.get("outside", [])]
    problems += [f"cut at the right margin: {what}" for what in info.get("cut", [])]
    if not info.get("katex", True):
        problems.append("KaTeX's font KaTeX_Main did not load: the math would print in a fallback font")
    if cjk and "loaded" not in info.get("cjk", []):
        problems.append(f"the CJK font {CJK_FAMILY} did not load ({', '.join(info.get('cjk', [])) or 'not used'}): "
                        f"is {CJK_FONT_PACKAGE} installed?")
    return problems


def finish(data: bytes, document: Document, edition: Edition, out: Path, cjk: bool = True) -> List[str]:
    """Write Chromium's ``data`` to ``out`` with :func:`build_outline`'s
    bookmarks and the metadata; return its problems (:func:`pdf_problems`:
    the top bookmarks must be the pages' titles)."""
    import io
    import logging

    from pypdf import PdfReader, PdfWriter

    # Chromium's trailer undercounts its objects; pypdf says so and reads on.
    logging.getLogger("pypdf").setLevel(logging.ERROR)

    reader = PdfReader(io.BytesIO(data))
    entries = build_outline(document.headings, named_destinations(reader))
    writer = PdfWriter(clone_from=reader)
    writer._root_object.pop("/Outlines", None)  # Chromium's, replaced below

    def add(items: List[Entry], parent=None) -> None:
        for entry in items:
            item = writer.add_outline_item(title=entry.title, page_number=entry.page, parent=parent)
            add(entry.children, item)

    add(entries)
    writer.page_mode = "/UseOutlines"
    stamp = "D:" + edition.date.replace("-", "") + "000000Z"
    writer.add_metadata({
        "/Title": f"{edition.title} · {EDITION[edition.lang]}",
        "/Author": str(book._yaml(ROOT / "_config.yml").get("author", "")),
        "/Subject": f"commit {edition.commit}" if edition.commit else "",
        "/Creator": "gradbook tools/pdf.py (Chromium, pypdf)",
        "/CreationDate": stamp,
        "/ModDate": stamp,
    })
    writer._root_object[_name("/Lang")] = _text(document.lang_tag or edition.lang)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".pdf.tmp")
    with open(tmp, "wb") as handle:
        writer.write(handle)
    tmp.replace(out)
    return pdf_problems(PdfReader(out), document.titles, cjk)


def _name(text: str):
    from pypdf.generic import NameObject

    return NameObject(text)


def _text(text: str):
    from pypdf.generic import TextStringObject

    return TextStringObject(text)


def make_edition(browser, base: str, html: Path, lang: str, out: Path, root: Path = ROOT,
                 web: Optional[str] = None) -> Tuple[Path, List[str], float]:
    """Print one edition to ``out/gradbook-<lang>.pdf``: ``(path, problems, seconds)``."""
    start = time.perf_counter()
    paths = edition_pages(lang, root)
    missing_pages = [p for p in paths if not (html / p).is_file()]
    if missing_pages:
        raise PdfError(f"{html} lacks {', '.join(missing_pages)}: rebuild the site (`make book`)")
    pages = [(p, (html / p).read_text(encoding="utf-8")) for p in paths]
    date, commit = build_info(html, root)
    colab = {book.site_path(md, root): book.colab_url(md, root) for md in book.pages(lang, root)}
    edition = Edition(lang=lang, title=str(book._yaml(root / "_config.yml").get("title", "gradbook")),
                      date=date, commit=commit, web=web, colab=colab)
    document = combine(pages, edition)
    problems = []
    body = document.html[document.html.find("<body"):]
    text = htmllib.unescape(re.sub(r"<[^>]*>", "", body))
    cjk = any(lo <= ord(c) <= hi for c in set(text) for lo, hi in CJK_RANGES)  # the title has some
    if cjk:
        lacking = cjk_missing(text, font_cmap())
        if lacking:
            problems.append(f"{CJK_FAMILY} has no glyph for {''.join(lacking)}: they would print as tofu")
    data, info = print_document(browser, base, lang, document.html)
    problems += print_problems(info, cjk)
    target = out / pdf_name(lang)
    target.unlink(missing_ok=True)  # never leave an older edition behind as if it were this one
    try:
        problems += finish(data, document, edition, target, cjk)
    except ValueError as error:
        problems.append(str(error))
    return target, problems, time.perf_counter() - start


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("html", nargs="?", type=Path, default=bc.HTML, help="the built site (default: _build/html)")
    parser.add_argument("--out", type=Path, default=OUT, help="where the PDFs go (default: _build/pdf)")
    parser.add_argument("--lang", action="append", help="only this language (repeatable; default: every one)")
    parser.add_argument("--web", help="the web edition's address, for the explorer notes (default: site paths)")
    parser.add_argument("--root", type=Path, default=ROOT, help="book root (default: the repository)")
    args = parser.parse_args(argv)
    if reason := missing(args.html):
        print(f"make pdf: {reason}", file=sys.stderr)
        return 2
    langs = args.lang or list(book.languages(args.root))
    unknown = [lang for lang in langs if lang not in book.languages(args.root)]
    if unknown:
        print(f"make pdf: no language {', '.join(unknown)} in the book", file=sys.stderr)
        return 2
    web = args.web.rstrip("/") + "/" if args.web else None
    problems: List[str] = []
    try:
        with bc.serve(args.html) as base, bc.launch() as browser:
            for lang in langs:
                target, found, seconds = make_edition(browser, base, args.html, lang, args.out, args.root, web)
                problems += [f"{target.name}: {p}" for p in found]
                if not target.is_file():
                    continue
                copy = args.html / SITE_FOLDER / target.name
                copy.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(target, copy)
                print(f"{target} ({target.stat().st_size / 1e6:.1f} MB, {seconds:.0f} s), copied to {copy}")
    except PdfError as error:
        print(f"make pdf: {error}", file=sys.stderr)
        return 2
    return book.cli(problems, fix="make pdf: the PDF editions have problems (above)")


if __name__ == "__main__":
    raise SystemExit(main())
