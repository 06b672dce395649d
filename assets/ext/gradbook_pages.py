"""Light pages: each page loads only what it uses, and nothing moves as it loads.

* **Scripts.**  A page loads a script only if it uses it: not the PyData
  theme's 1.5 MB Font Awesome script (its icons come from the theme's CSS and
  web fonts), not Sphinx's search tools and 0.3 MB search index outside the
  search pages (the theme's search-as-you-type is off: its search box opens
  the search page), not sphinx-thebe (no Thebe launch button), and the
  explorer, tab, toggle and copy-button scripts only on pages that have
  explorers, tabs, dropdowns or code.
* **Sizes.**  Every ``<img>`` of the site's ``_images`` gets its ``width`` and
  ``height`` (CSS scales it down with ``height: auto``), so the browser
  reserves its box before it arrives; the fonts of the math are preloaded.
* **Text for figures.**  A figure a code cell drew has no alternative text of
  its own, and the HTML writer would use its file path (which a screen reader
  reads out): it gets a sentence, in the page's language, saying it is the
  output of the code above it, whose prose describes it.
* **Sidebar.**  A chapter page's sidebar lists its own language's part of the
  book (and the shared ones), not the other language's: a page's twin is one
  click away through the language switch at its top.
* **Head.**  Each page gets a ``<meta name="description">`` (its first
  paragraph), and its ``<title>`` shows math as text (``forward f``, ``± 1``), not
  TeX (``gradbook_math.plain_math``).

Rewriting the final HTML (what templates hard-code) is done by
:class:`TemplateBridge`, set as Sphinx's ``template_bridge``.
"""

from __future__ import annotations

import html
import posixpath
import re
from pathlib import Path
from typing import Callable, Dict, Optional

from docutils import nodes
from sphinx.jinja2glue import BuiltinTemplateLoader

import gradbook_i18n
import gradbook_math

DESCRIPTION_CHARS = 160
SEARCH_PAGES = ("search", gradbook_i18n.ZH_SEARCH)
# Template-written tags no page needs (see the module docstring).
FONT_AWESOME_JS = re.compile(r'\s*<script defer src="[^"]*_static/scripts/fontawesome\.js[^"]*"></script>')
SEARCH_SCRIPTS = re.compile(r'\s*<script src="[^"]*(?:_static/searchtools\.js|_static/language_data\.js|'
                            r'searchindex\.js)"></script>')
SCRIPT_TAG = re.compile(r'\s*<script src="([^"]+)"></script>')
SEARCH_ACTION = re.compile(r'(<form class="bd-search[^"]*"\s+action=")[^"]*(")')
IMG = re.compile(r'<img (?![^>]*\bwidth=)([^>]*?)src="([^"]+)"([^>]*?)\s*/?>')
# Scripts (by file name) and the mark in a page's body that says the page uses them.
USED_IF: Dict[str, Callable[[str], bool]] = {
    "gradbook-explorer.js": lambda body: "gradbook-explorer" in body,
    "design-tabs.js": lambda body: "sd-tab-set" in body,
    "togglebutton.js": lambda body: "toggle" in body or "dropdown" in body,
    "copybutton.js": lambda body: "<pre" in body,
    "clipboard.min.js": lambda body: "<pre" in body,
    "sphinx-thebe.js": lambda body: False,
}
CSS_USED_IF: Dict[str, Callable[[str], bool]] = {
    "sphinx-thebe.css": lambda body: False,
    "togglebutton.css": USED_IF["togglebutton.js"],
    "copybutton.css": USED_IF["copybutton.js"],
}
TOGGLE_SETTINGS = ("let toggleHintShow", "let toggleHintHide", "let toggleOpenOnPrint", "const toggleSelector")


def _name(asset) -> str:
    return posixpath.basename(str(getattr(asset, "filename", asset) or "")).split("?")[0]


def used_scripts(scripts, body: str):
    """``scripts`` (Sphinx's ``script_files``) without those :data:`USED_IF` says ``body`` does not use."""
    toggles = USED_IF["togglebutton.js"](body)
    kept = []
    for script in scripts:
        name, inline = _name(script), getattr(script, "attributes", {}).get("body") or ""
        if name in USED_IF and not USED_IF[name](body):
            continue
        if not toggles and inline.lstrip().startswith(TOGGLE_SETTINGS):
            continue
        kept.append(script)
    return kept


def used_css(files, body: str):
    return [f for f in files if not (_name(f) in CSS_USED_IF and not CSS_USED_IF[_name(f)](body))]


def plain_text(node: nodes.Node) -> str:
    """The text of ``node``, its math as plain Unicode text (``\\beta`` is ``β``, ``\\pm 1`` is ``± 1``)."""
    def pieces(node):
        if isinstance(node, nodes.math):
            yield gradbook_math.plain_math(node)
        elif isinstance(node, nodes.Text):
            yield node.astext()
        else:
            for child in node.children:
                yield from pieces(child)
    return " ".join("".join(pieces(node)).split())


def description(doctree: Optional[nodes.document]) -> str:
    """The first paragraph of the page's first section, cut at a word to :data:`DESCRIPTION_CHARS`."""
    if doctree is None:
        return ""
    for paragraph in doctree.findall(nodes.paragraph):
        if "gradbook-lang-switch" in paragraph.get("classes", []):
            continue
        text = plain_text(paragraph)
        if len(text) >= 40:
            if len(text) > DESCRIPTION_CHARS:
                text = text[:DESCRIPTION_CHARS].rsplit(" ", 1)[0] + "…"
            return text
    return ""


def _page_context(app, pagename, templatename, context, doctree):
    if app.builder.format != "html":
        return
    body = context.get("body", "")
    if "script_files" in context:
        context["script_files"] = used_scripts(context["script_files"], body)
    if "css_files" in context:
        context["css_files"] = used_css(context["css_files"], body)
    title = app.env.titles.get(pagename)
    if title is not None:
        context["title"] = html.escape(plain_text(title))
    lang = gradbook_i18n.page_language(pagename)
    text = description(doctree) or SITE_DESCRIPTION[lang]
    pathto = context["pathto"]
    context["metatags"] = (context.get("metatags", "") + f'\n<meta name="description" content="{html.escape(text)}" />\n'
                           + gradbook_math.font_preloads(pathto))
    context["gradbook_search_page"] = pathto(gradbook_i18n.search_page(pagename))
    add_book_downloads(context.get("header_buttons", []), lang, pathto)
    for key in ("prev", "next"):
        if context.get(key) and not same_language_link(pagename, context[key].get("link", "")):
            context[key] = None
    if "rellinks" in context:  # the head's <link rel="prev/next">: docnames, not links
        context["rellinks"] = [r for r in context["rellinks"] if r[2] not in ("P", "N") or pagename == "index"
                               or _folder_language(r[0]) == _folder_language(pagename)]
        # The head's <link rel="prev/next"> take their titles, rendered HTML, stripped of its tags: KaTeX's
        # glyphs would run together ("forward fff"); finish_page writes the title as text instead.
        titles = app.env.titles
        context["gradbook_rel_titles"] = {{"P": "prev", "N": "next"}[r[2]]: plain_text(titles[r[0]])
                                          for r in context["rellinks"] if r[2] in ("P", "N") and r[0] in titles}


def _folder_language(pagename: str) -> Optional[str]:
    parts = pagename.split("/")
    return parts[1] if len(parts) > 2 and parts[0] == "chapters" and parts[1] in gradbook_i18n.HTML_LANG else None


def same_language_link(pagename: str, link: str) -> bool:
    """Whether the previous/next link ``link`` (relative to ``pagename``) stays in the page's
    language: a chapter page's leads to a page of its own language's folder, a shared page's
    (the glossary) into no language's folder.  The book's home page leads anywhere."""
    if pagename == "index":
        return True
    target = posixpath.normpath(posixpath.join(posixpath.dirname(pagename), link.split("#")[0]))
    return _folder_language(target.removesuffix(".html")) == _folder_language(pagename)


# The whole-book downloads (make book writes them after the Sphinx build: tools/pdf.py,
# tools/downloads.py), added to every page's download menu: (path, icon, text per language).
BOOK_DOWNLOADS = (
    ("pdf/gradbook-en.pdf", "fas fa-book", {"en": "Book PDF (English)", "zh": "全书 PDF（英文版）"}),
    ("pdf/gradbook-zh.pdf", "fas fa-book", {"en": "Book PDF (Chinese)", "zh": "全书 PDF（中文版）"}),
    ("downloads/gradbook-notebooks.zip", "fas fa-file-zipper",
     {"en": "Notebooks and gradlib (zip)", "zh": "笔记本与 gradlib（zip）"}),
    ("downloads/gradbook-site.zip", "fas fa-file-zipper", {"en": "This site, offline (zip)", "zh": "离线网站（zip）"}),
)


def add_book_downloads(buttons: list, lang: str, pathto) -> None:
    """Append :data:`BOOK_DOWNLOADS` to the theme's download menu (``header_buttons``)."""
    for button in buttons:
        if button.get("type") == "group" and button.get("label") == "download-buttons":
            button["buttons"] = [*button["buttons"], *(
                {"type": "link", "url": pathto(path, 1), "text": text[lang], "icon": icon,
                 "label": "download-" + posixpath.basename(path).replace(".", "-")}
                for path, icon, text in BOOK_DOWNLOADS)]


SITE_DESCRIPTION = {
    "en": "gradbook: how to customise gradients in TensorFlow, with live code, explorers and exercises.",
    "zh": "gradbook：在 TensorFlow 中定制梯度，配有可运行的代码、交互图和练习。",
}


OUTPUT_FIGURE_ALT = {
    "en": "Figure drawn by the code cell above",
    "zh": "上方代码单元格绘制的图",
}


def _output_figure_alt(app, doctree, docname):
    """Alternative text for the images of cell outputs that have none (see the module docstring)."""
    alt = OUTPUT_FIGURE_ALT[gradbook_i18n.page_language(docname)]
    for image in doctree.findall(nodes.image):
        if image.get("alt"):
            continue
        parent = image.parent
        while parent is not None and "cell_output" not in parent.get("classes", ()):
            parent = parent.parent
        if parent is not None:
            image["alt"] = alt


class ImageSizes:
    """``width``/``height`` of an image of the site, by its path in the output folder: those
    the build copies to ``_images`` at its end are read from their sources, the others in place."""

    def __init__(self, app):
        self.app = app
        self.sizes: Dict[str, Optional[tuple]] = {}

    def size(self, target: str) -> Optional[tuple]:
        if target not in self.sizes:
            path = Path(self.app.outdir) / target
            if target.startswith("_images/"):
                name = target[len("_images/"):]
                path = next((Path(self.app.srcdir) / source for source, dest in self.app.builder.images.items()
                             if dest == name), path)
            self.sizes[target] = _image_size(path) if path.is_file() else None
        return self.sizes[target]


def _image_size(path: Path) -> Optional[tuple]:
    if path.suffix.lower() not in (".png", ".jpg", ".jpeg", ".gif", ".webp"):
        return None
    from PIL import Image

    with Image.open(path) as image:
        return image.size


def size_images(page: str, pagename: str, size_of: Callable[[str], Optional[tuple]]) -> str:
    """Every ``<img>`` of ``page`` in the site's ``_images/`` (figures, cell outputs) gets its width and height."""
    folder = posixpath.dirname(pagename)

    def sized(match):
        src = match[2]
        if ":" in src or src.startswith("/"):
            return match[0]
        target = posixpath.normpath(posixpath.join(folder, src.split("?")[0]))
        if not target.startswith("_images/"):  # the themes size their own images (logos) in CSS
            return match[0]
        found = size_of(target)
        if not found:
            return match[0]
        return f'<img {match[1]}src="{src}"{match[3]} width="{found[0]}" height="{found[1]}" />'

    return IMG.sub(sized, page)


def finish_page(page: str, context: dict, sizes: Optional[ImageSizes]) -> str:
    """The template-written parts of a rendered page that :func:`_page_context` cannot reach."""
    pagename = context.get("pagename", "")
    page = gradbook_i18n.localize_page(FONT_AWESOME_JS.sub("", page), pagename)
    if pagename not in SEARCH_PAGES:
        page = SEARCH_SCRIPTS.sub("", page)
    page = own_language_sidebar(unique_script_tags(page), pagename)
    # A wide table scrolls sideways: reachable by keyboard from the start, wherever it is on the page
    # (gradbook-page.js takes the stop away again, as it comes into view, from a table that fits).
    page = page.replace('<div class="pst-scrollable-table-container">',
                        '<div class="pst-scrollable-table-container" tabindex="0">')
    if "gradbook_search_page" in context:
        page = SEARCH_ACTION.sub(lambda m: m[1] + context["gradbook_search_page"] + m[2], page)
    if sizes is not None:
        page = size_images(page, pagename, sizes.size)
    for rel, title in context.get("gradbook_rel_titles", {}).items():
        page = page_link_title(page, rel, title)
    return page


def page_link_title(page: str, rel: str, title: str) -> str:
    """``page`` with the title of its ``<link rel="{rel}">`` replaced by ``title`` (text)."""
    link = re.compile(rf'(<link rel="{rel}" title=")[^"]*(")')
    return link.sub(lambda m: m[1] + html.escape(title) + m[2], page, count=1)


SIDEBAR_PART = re.compile(r'\s*<p aria-level="2" class="caption" role="heading">(?:(?!</p>).)*</p>\s*'
                          r'<ul class="[^"]*\bbd-sidenav\b[^"]*">(?:(?!<ul).)*?</ul>', re.S)
HREF = re.compile(r'href="([^"#?]+)')


def own_language_sidebar(page: str, pagename: str) -> str:
    """On a chapter page (``chapters/<lang>/...``), drop the sidebar parts whose every link
    leads to another language's chapters (see the module docstring)."""
    parts = pagename.split("/")
    if len(parts) < 3 or parts[0] != "chapters" or parts[1] not in gradbook_i18n.HTML_LANG:
        return page
    folder = posixpath.dirname(pagename)
    others = [lang for lang in gradbook_i18n.HTML_LANG if lang != parts[1]]

    def other(match):
        targets = [posixpath.normpath(posixpath.join(folder, href)) for href in HREF.findall(match[0])]
        foreign = targets and all(any(t.startswith(f"chapters/{lang}/") for lang in others) for t in targets)
        return "" if foreign else match[0]

    return SIDEBAR_PART.sub(other, page)


def unique_script_tags(page: str) -> str:
    """Each ``<script src>`` once: the theme's head loads the search scripts on every page but
    ``search``, and the search template loads them again (on ``search-zh``: twice)."""
    seen = set()

    def first(match):
        if match[1] in seen:
            return ""
        seen.add(match[1])
        return match[0]

    return SCRIPT_TAG.sub(first, page)


class TemplateBridge(BuiltinTemplateLoader):
    """Sphinx's own template loader, whose pages go through :func:`finish_page`."""

    def init(self, builder, theme=None, dirs=None):
        super().init(builder, theme, dirs)
        self._sizes = ImageSizes(builder.app) if hasattr(builder, "images") else None

    def render(self, template, context):
        return finish_page(super().render(template, context), context, self._sizes)


def _use_bridge(app, config):
    config.template_bridge = "gradbook_pages.TemplateBridge"


def setup(app):
    app.connect("config-inited", _use_bridge)
    app.connect("doctree-resolved", _output_figure_alt)
    # After the themes' handlers (500) and the language's (900): the body and the script list are final.
    app.connect("html-page-context", _page_context, priority=950)
