"""gradbook's own Sphinx extension: what makes one build a bilingual site.

* Every executing kernel inherits the book's kernel environment
  (``gradlib/book/kernel.json``, mode ``build``): TensorFlow quiet and
  reproducible, and ``GRADBOOK_BUILD=1``, which tells :func:`gradlib.explore`
  to render static figures, not live widgets.
* Every chapter page gets a link to its twin in the other language, right
  under its title (a ``doc`` reference, so a missing twin is a warning and
  ``-W`` fails the build); the search index leaves the link's text out.
* Chinese pages are served with ``lang="zh-CN"``, and the themes write their
  own text on them in Chinese (:mod:`gradbook_i18n`).  Text in the other
  language is marked too: the link to a page's twin, and Chinese on the
  English pages (the home page, the glossary, quoted phrases in chapters,
  and the theme's own parts: the book's title, sidebar captions, the index).
* Exercises are numbered per chapter from their stable ids ("Exercise 3.1"
  for ``ch03-ex1``; "练习 3.1" on Chinese pages), not by sphinx-exercise's
  book-wide counter.
* Math is typeset at build time by KaTeX (:mod:`gradbook_math`); the site
  serves KaTeX's CSS and fonts itself, and no page runs a math script.
* Each page loads only the scripts it uses, its images have their sizes, and
  it has a description (:mod:`gradbook_pages`).
* The search index learns the book's Chinese terms: the Chinese terms of the
  glossary become a jieba user dictionary, so 反向传播 and 直通估计器 are
  indexed as words and not only as their pieces.
"""

from __future__ import annotations

import hashlib
import html.parser
import importlib.util
import re
from pathlib import Path

import gradbook_i18n
import gradbook_math
import gradbook_pages
from docutils import nodes
from sphinx import addnodes

LANGUAGES = tuple(gradbook_i18n.HTML_LANG)  # the page languages; their lang codes live in gradbook_i18n
SWITCH_TEXT = {"en": "中文版", "zh": "English version"}
GLOSSARY = "chapters/glossary.md"
CJK = re.compile(r"[\u4e00-\u9fff]+")

KERNEL_MODULE = Path(__file__).resolve().parents[2] / "gradlib" / "book" / "kernel.py"


def _kernel_module():
    """gradlib/book/kernel.py, loaded by path: importing it as gradlib.book.kernel
    would import TensorFlow into the Sphinx process."""
    spec = importlib.util.spec_from_file_location("_gradbook_kernel", KERNEL_MODULE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def chapter_language(docname: str):
    """``("en", "01_gradients")`` for ``chapters/en/01_gradients``, else None."""
    parts = docname.split("/")
    if len(parts) == 3 and parts[0] == "chapters" and parts[1] in LANGUAGES:
        return parts[1], parts[2]
    return None


def glossary_terms(text: str):
    """The Chinese terms defined in the glossary source (term lines only)."""
    terms, inside = [], False
    for line in text.splitlines():
        if line.startswith(":::{glossary}"):
            inside = True
            continue
        if inside and line.startswith(":::"):
            inside = False
        elif inside and line and not line[0].isspace():
            terms.extend(CJK.findall(line))
    return terms


def _jieba_dictionary(app, config):
    source = Path(app.srcdir) / GLOSSARY
    if not source.exists():
        return
    words = sorted(set(glossary_terms(source.read_text(encoding="utf-8"))))
    target = Path(app.doctreedir) / "gradbook-jieba.txt"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("".join(f"{w} 100000 n\n" for w in words), encoding="utf-8")
    config.html_search_options = {**config.html_search_options, "dict": str(target)}


def _language_switch(app, doctree):
    found = chapter_language(app.env.docname)
    if not found:
        return
    lang, name = found
    other = "zh" if lang == "en" else "en"
    target = f"chapters/{other}/{name}"
    ref = addnodes.pending_xref(
        "", nodes.inline("", SWITCH_TEXT[lang]),
        refdomain="std", reftype="doc", reftarget="/" + target,
        refexplicit=True, refwarn=True, refdoc=app.env.docname,
    )
    para = nodes.paragraph("", "", ref, classes=["gradbook-lang-switch"])
    section = next(iter(doctree.findall(nodes.section)), None)
    if section is None:
        doctree.insert(0, para)
        return
    title = next(iter(section.findall(nodes.title)), None)
    section.insert(section.index(title) + 1 if title is not None else 0, para)


def without_language_switch(doctree: nodes.document) -> nodes.document:
    """``doctree`` without its language switch (a copy, if it has one): the search index leaves it out,
    or searching "English" on the Chinese pages would find every chapter."""
    def is_switch(node):
        return isinstance(node, nodes.paragraph) and "gradbook-lang-switch" in node["classes"]
    if next(iter(doctree.findall(is_switch)), None) is None:
        return doctree
    doctree = doctree.deepcopy()
    for switch in list(doctree.findall(is_switch)):
        switch.parent.remove(switch)
    return doctree


def _index_without_language_switch(app):
    index_page = getattr(app.builder, "index_page", None)
    if index_page is not None:
        app.builder.index_page = lambda pagename, doctree, title: index_page(
            pagename, without_language_switch(doctree), title)


# A run of Chinese: Han characters and CJK punctuation, with the spaces and digits between them.
CHINESE_RUN = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]+(?:[\s\d]+[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]+)*")
ZH_CLASS = "language-zh-CN"  # docutils' HTML writer makes a class language-X the attribute lang="X"
NOT_PROSE = (nodes.literal, nodes.literal_block, nodes.math, nodes.math_block, nodes.raw, nodes.comment)


def mark_chinese(doctree: nodes.Node, docname: str) -> None:
    """Marks Chinese text on pages written in English (WCAG 3.1.2, language of parts), so that a
    screen reader reads it with a Chinese voice: each run of Chinese characters in prose becomes a
    span with ``lang="zh-CN"``.  On a Chinese page only its title is marked, for the English pages
    whose sidebar or links show it (the book's home page, the glossary)."""
    if gradbook_i18n.page_language(docname) != "en":
        for title in doctree.findall(nodes.title):
            if CHINESE_RUN.search(title.astext()) and not any(ZH_CLASS in c.get("classes", []) for c in title.children
                                                                if isinstance(c, nodes.Element)):
                inline = nodes.inline("", "", *title.children, classes=[ZH_CLASS])
                title.clear()
                title += inline
        return
    for text in list(doctree.findall(nodes.Text)):
        parent = text.parent
        if parent is None or not CHINESE_RUN.search(str(text)):
            continue
        ancestors, node = [], parent
        while node is not None:
            ancestors.append(node)
            node = node.parent
        if any(isinstance(a, NOT_PROSE) or ZH_CLASS in a.get("classes", []) for a in ancestors
               if isinstance(a, nodes.Element)):
            continue
        value, pieces, start = str(text), [], 0
        for match in CHINESE_RUN.finditer(value):
            if match.start() > start:
                pieces.append(nodes.Text(value[start:match.start()]))
            pieces.append(nodes.inline(match[0], match[0], classes=[ZH_CLASS]))
            start = match.end()
        if start < len(value):
            pieces.append(nodes.Text(value[start:]))
        parent.replace(text, pieces)


class _UnmarkedChinese(html.parser.HTMLParser):
    """Finds the runs of Chinese in a rendered page that no ``lang="zh-CN"`` element holds, outside
    scripts, styles, code and math (and, with ``skip_article``, outside ``<article>``)."""
    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
    SKIP = {"script", "style", "title", "textarea", "code", "pre", "math", "svg", "template"}

    def __init__(self, page: str, skip_article: bool):
        super().__init__(convert_charrefs=False)  # data arrives as raw slices of the page
        self.page, self.skip_article, self.runs = page, skip_article, []
        self.stack = []  # (tag, leave alone) of each open element
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", page)]

    def handle_starttag(self, tag, attrs):
        if tag in self.VOID:
            return
        leave = (bool(self.stack) and self.stack[-1][1]) or tag in self.SKIP \
            or dict(attrs).get("lang") == gradbook_i18n.HTML_LANG["zh"] or (tag == "article" and self.skip_article)
        self.stack.append((tag, leave))

    def handle_endtag(self, tag):
        for depth in range(len(self.stack) - 1, -1, -1):
            if self.stack[depth][0] == tag:
                del self.stack[depth:]
                return

    def handle_data(self, data):
        if self.stack and self.stack[-1][1]:
            return
        line, column = self.getpos()
        start = self.line_starts[line - 1] + column
        if self.page[start:start + len(data)] != data:
            return  # never guess an offset
        self.runs += [(start + m.start(), start + m.end()) for m in CHINESE_RUN.finditer(data)]


def mark_chinese_html(page: str, skip_article: bool = False) -> str:
    """A rendered English page with every unmarked run of Chinese in a ``<span lang="zh-CN">``: the
    theme's own parts (the book's title, the sidebar's captions, the index), which no doctree holds.
    ``skip_article``: the article's text was marked in the doctree (:func:`mark_chinese`)."""
    finder = _UnmarkedChinese(page, skip_article)
    finder.feed(page)
    finder.close()
    pieces, done = [], 0
    for start, end in finder.runs:
        pieces += [page[done:start], f'<span lang="{gradbook_i18n.HTML_LANG["zh"]}">', page[start:end], "</span>"]
        done = end
    return "".join(pieces) + page[done:]


MARK_PAGE = "gradbook_mark_chinese"  # a page context key: the template whose output is marked


def _mark_rendered_pages(app):
    templates = getattr(app.builder, "templates", None)
    if templates is None or not hasattr(templates, "render"):
        return
    render = templates.render

    def marked(template, context):
        output = render(template, context)
        mark = context.get(MARK_PAGE)
        return mark_chinese_html(output, skip_article=mark[1]) if mark and mark[0] == template else output
    templates.render = marked


def _mark_chinese(app, doctree, docname=None):
    # Read (titles, before Sphinx collects them), and again once resolved (the texts of {doc} links).
    mark_chinese(doctree, docname or app.env.docname)


EXERCISE_WORD = {"en": "Exercise", "zh": "练习"}
SOLUTION_WORD = {"en": "Solution to", "zh": "解答："}
EXERCISE_TITLE = re.compile(
    r'<div class="exercise admonition" id="(?:en|zh)-ch(\d\d)-ex(\d+)">\s*'
    r'<p class="admonition-title"><span class="caption-number">Exercise (\d+) </span>')


def localize_exercises(body: str, lang: str) -> str:
    """Renumber a page's exercises per chapter and translate their titles."""
    local = {int(g): f"{int(ch)}.{int(n)}" for ch, n, g in EXERCISE_TITLE.findall(body)}
    word = EXERCISE_WORD[lang]

    def renumber(match):
        number = int(match[2])
        return f"{word} {local[number]}" if number in local else match[0]

    body = re.sub(r"(Exercise|练习)\s*(\d+)\b", renumber, body)
    return body.replace('<p class="admonition-title">Solution to<a', f'<p class="admonition-title">{SOLUTION_WORD[lang]}<a')


def unique_scripts(scripts):
    """Drop repeated inline scripts: sphinx-thebe's config script is listed twice
    (once with filename None, once with ''), and its second ``const`` throws a
    SyntaxError in every reader's console."""
    seen, kept = set(), []
    for script in scripts:
        body = getattr(script, "attributes", {}).get("body")
        if body:
            if body in seen:
                continue
            seen.add(body)
        kept.append(script)
    return kept


def mark_languages(body: str, pagename: str) -> str:
    """A chapter's link to its twin gets ``lang`` and ``hreflang`` (WCAG 3.1.2: a screen reader reads
    "English version" on a Chinese page with an English voice).  Chinese text on English pages is
    marked in the doctree (:func:`mark_chinese`)."""
    found = chapter_language(pagename)
    if not found:
        return body
    other = gradbook_i18n.HTML_LANG["zh" if found[0] == "en" else "en"]
    return body.replace('<p class="gradbook-lang-switch"><a ',
                        f'<p class="gradbook-lang-switch"><a hreflang="{other}" lang="{other}" ', 1)


def _page_language(app, pagename, templatename, context, doctree):
    # Jupyter Book leaves the theme's default_mode empty, which makes the
    # pydata theme log "Got invalid theme mode" in every reader's console.
    if not context.get("default_mode"):
        context["default_mode"] = "auto"
    if "script_files" in context:
        context["script_files"] = unique_scripts(context["script_files"])
    found = chapter_language(pagename)
    if found and "body" in context:
        context["body"] = localize_exercises(context["body"], found[0])
    if "body" in context:
        context["body"] = mark_languages(context["body"], pagename)
    if gradbook_i18n.page_language(pagename) == "en":
        context[MARK_PAGE] = (templatename, doctree is not None)


def setup(app):
    # Editing the extension, its templates or the site's CSS and scripts must
    # rewrite every page: a config value that changes with their sources makes
    # Sphinx treat the environment as outdated.
    assets = Path(__file__).resolve().parents[1]
    sources = sorted(p for folder in ("ext", "templates", "static") for p in (assets / folder).rglob("*")
                     if p.is_file() and "__pycache__" not in p.parts)
    source_hash = hashlib.sha256(b"".join(p.read_bytes() for p in sources)).hexdigest()[:16]
    app.add_config_value("gradbook_site_source", source_hash, "env")
    # Every kernel the build starts inherits the book's kernel environment.
    _kernel_module().apply("build")
    for module in (gradbook_math, gradbook_i18n, gradbook_pages):
        module.setup(app)
    app.connect("config-inited", _jieba_dictionary)
    app.connect("doctree-read", _language_switch)
    app.connect("doctree-read", _mark_chinese, priority=400)  # before Sphinx collects the titles (500)
    app.connect("doctree-resolved", _mark_chinese)
    app.connect("builder-inited", _index_without_language_switch)
    app.connect("builder-inited", _mark_rendered_pages)
    app.connect("html-page-context", _page_language)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
