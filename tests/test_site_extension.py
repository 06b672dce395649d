"""The site extension's parts (assets/ext), without a build: KaTeX, the page
rewriting, the Chinese catalogs.  The built site is tested in test_site_pages.py."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from tools.book import ROOT

pytestmark = pytest.mark.build  # Sphinx and the themes: not in the Colab-like venv
# The run in .venv-colab deselects these tests, but it still imports the module:
# there the extension's imports (Sphinx and the themes) are absent.  In .venv a
# missing theme fails `make book` long before this skip could hide it.
pytest.importorskip("sphinx_book_theme", reason="the book's build tools are not in this venv (make venv)")

sys.path.insert(0, str(ROOT / "assets" / "ext"))
import gradbook_i18n  # noqa: E402
import gradbook_math  # noqa: E402
import gradbook_pages  # noqa: E402
import gradbook_site  # noqa: E402


@pytest.fixture(scope="module")
def katex():
    if shutil.which("node") is None or not (ROOT / gradbook_math.KATEX_SOURCE / "katex.min.css").is_file():
        pytest.fail("node and node_modules/katex are needed: `npm ci` (make book runs it)")
    return gradbook_math.KaTeX(ROOT / gradbook_math.KATEX_SOURCE)


def test_katex_typesets_inline_and_display_math(katex):
    inline = katex.render(r"\frac{\partial y}{\partial x}", display=False)
    assert 'class="katex"' in inline and "<math" in inline and "katex-display" not in inline
    assert "katex-display" in katex.render(r"\begin{aligned}a&=b\\c&=d\end{aligned}", display=True)
    assert katex.render("x", False) is katex.render("x", False)  # cached


def test_katex_refuses_what_it_cannot_typeset(katex):
    with pytest.raises(gradbook_math.KaTeXError, match=r"\\notacommand"):
        katex.render(r"\notacommand{x}", display=False)
    assert "katex" in katex.render("y", False)  # the process survives an error


def test_the_indicator_is_drawn_bold_and_other_blackboard_digits_fail(katex):
    assert "mathbf" in katex.render(r"\mathbb{1}\{x > 0\}", display=False)  # not a plain upright 1
    assert "mathbb" in katex.render(r"\mathbb{R}", display=False)
    assert "mathbf" in katex.render(r"\mathbb 1_{x > 0}", display=False)  # without braces too
    with pytest.raises(gradbook_math.KaTeXError, match="double-struck"):
        katex.render(r"\mathbb{2}", display=False)


def test_display_tex_follows_sphinx_mathjax_layout():
    assert gradbook_math.display_tex("a = b") == "a = b"
    assert gradbook_math.display_tex(r"a \\ b") == r"\begin{split}a \\ b\end{split}"
    assert gradbook_math.display_tex("a = 1\n\nb = 2") == r"\begin{aligned}a = 1\\b = 2\end{aligned}"


class Script:
    def __init__(self, filename, body=None):
        self.filename, self.attributes = filename, {"body": body} if body else {}


def test_scripts_a_page_does_not_use_are_dropped():
    scripts = [Script("documentation_options.js"), Script("gradbook-explorer.js"), Script("copybutton.js"),
               Script("clipboard.min.js"), Script("togglebutton.js"), Script(None, "let toggleHintShow = 'x';"),
               Script("sphinx-thebe.js"), Script("design-tabs.js")]
    kept = [s.filename or s.attributes["body"][:5] for s in gradbook_pages.used_scripts(scripts, "<p>prose</p>")]
    assert kept == ["documentation_options.js"]
    body = '<div class="gradbook-explorer"></div><pre>x</pre><details class="toggle">'
    kept = [s.filename or "inline" for s in gradbook_pages.used_scripts(scripts, body)]
    assert kept == ["documentation_options.js", "gradbook-explorer.js", "copybutton.js", "clipboard.min.js",
                    "togglebutton.js", "inline"]


def test_a_script_is_loaded_once():
    page = '<script src="a.js"></script>\n<script src="b.js"></script>\n<script src="a.js"></script>'
    assert gradbook_pages.unique_script_tags(page) == '<script src="a.js"></script>\n<script src="b.js"></script>'


def test_images_get_their_size_and_others_are_left_alone():
    page = ('<img alt="a" src="../../_images/a.png" /><img src="../../_static/logo.png">'
            '<img src="https://example.org/x.png"><img width="3" src="../../_images/b.png">')
    sizes = {"_images/a.png": (640, 480)}
    out = gradbook_pages.size_images(page, "chapters/en/01", sizes.get)
    assert '<img alt="a" src="../../_images/a.png" width="640" height="480" />' in out
    assert out.count("width=") == 2  # a.png, and b.png's own


@pytest.mark.parametrize("docname, lang", [("chapters/en/05_ste", "en"), ("chapters/zh/05_ste", "zh")])
def test_figures_of_cell_outputs_get_a_text_in_the_page_language(docname, lang):
    from docutils import nodes

    drawn, given, prose = nodes.image(uri="a.png"), nodes.image(uri="b.png", alt="the loss"), nodes.image(uri="c.png")
    output = nodes.container("", nodes.container("", drawn, given), classes=["cell_output"])
    doctree = nodes.section("", output, nodes.paragraph("", "", prose))
    gradbook_pages._output_figure_alt(None, doctree, docname)
    assert drawn["alt"] == gradbook_pages.OUTPUT_FIGURE_ALT[lang] and given["alt"] == "the loss"
    assert "alt" not in prose  # a figure of the prose is the author's to describe


def test_a_chapter_pages_sidebar_keeps_its_own_language_and_the_shared_parts():
    def part(caption, *hrefs, current=""):
        links = "".join(f'<li class="toctree-l1"><a href="{h}">{h}</a></li>' for h in hrefs)
        return (f'<p aria-level="2" class="caption" role="heading"><span class="caption-text">{caption}</span></p>\n'
                f'<ul class="{current}nav bd-sidenav">{links}</ul>')

    nav = "".join([part("English", "../en/index.html", "../en/01.html", current="current "),
                   part("中文", "../zh/index.html", "../zh/01.html"), part("Reference", "../glossary.html")])
    en = gradbook_pages.own_language_sidebar(nav, "chapters/en/01")
    assert "../en/01.html" in en and "../glossary.html" in en and "../zh/" not in en and "中文" not in en
    zh = gradbook_pages.own_language_sidebar(nav, "chapters/zh/01")
    assert "../zh/01.html" in zh and "../glossary.html" in zh and "../en/" not in zh and "English" not in zh
    for shared in ("index", "chapters/glossary", "search"):
        assert gradbook_pages.own_language_sidebar(nav, shared) == nav


def test_description_is_the_first_real_paragraph():
    from docutils import nodes

    doc = nodes.document(None, None)
    doc += nodes.paragraph(text="⇄ English version", classes=["gradbook-lang-switch"])
    doc += nodes.paragraph(text="Short.")
    doc += nodes.paragraph(text="word " * 60)
    text = gradbook_pages.description(doc)
    assert text.startswith("word word") and text.endswith("…") and len(text) <= gradbook_pages.DESCRIPTION_CHARS + 1
    assert gradbook_pages.description(None) == ""


def test_descriptions_and_titles_write_math_as_text():
    from docutils import nodes

    paragraph = nodes.paragraph("", "", nodes.Text("binarization to "), nodes.math("", r"\pm 1"),
                                nodes.Text(", with "), nodes.math("", r"\beta_{1}"), nodes.Text("."))
    assert gradbook_pages.plain_text(paragraph) == "binarization to ± 1, with β₁."
    with pytest.raises(gradbook_math.ExtensionError, match=r"unknown TeX command \\notacommand"):
        gradbook_pages.plain_text(nodes.paragraph("", "", nodes.math("", r"\notacommand x")))


def test_math_in_a_title_reads_as_text_and_typesets_as_tex():
    """Sphinx turns titles into text for the search index, {ref} links and <title>: there a
    TitleMath is plain text; the HTML writer still hands KaTeX its TeX."""
    from docutils import nodes

    title = nodes.title("", "", nodes.Text("The effect of "), nodes.math("", r"\lambda"))
    section = nodes.section("", title, nodes.paragraph("", "", nodes.math("", r"\lambda")), ids=["s"])
    from docutils.utils import new_document

    document = new_document("test")
    document += section
    gradbook_math.title_math(document)
    assert title.astext() == "The effect of λ" and isinstance(title[1], gradbook_math.TitleMath)
    assert title.deepcopy().astext() == "The effect of λ"  # the table of contents keeps a copy
    assert section[1].astext() == r"\lambda"  # math outside titles is untouched
    assert nodes.Element.astext(title[1]) == r"\lambda"  # what visit_math typesets
    # docutils' visitors dispatch on the class name (Sphinx's title collector copies titles with one)
    copier = nodes.TreeCopyVisitor(document)
    title.walkabout(copier)
    assert copier.get_tree_copy().astext() == "The effect of λ"
    from sphinx.transforms import SphinxContentsFilter
    title.walkabout(SphinxContentsFilter(document))
    import pickle
    assert pickle.loads(pickle.dumps(section)).astext().startswith("The effect of λ")  # the doctree cache


def test_the_search_index_reads_the_page_without_its_language_switch():
    from docutils import nodes

    doc = nodes.document(None, None)
    doc += nodes.section("", nodes.title("", "Title"), nodes.paragraph("", "English version",
                                                                       classes=["gradbook-lang-switch"]),
                         nodes.paragraph("", "Body."))
    indexed = gradbook_site.without_language_switch(doc)
    assert indexed.astext().split() == ["Title", "Body."]
    assert "English version" in doc.astext()  # the page itself keeps it
    plain = nodes.document(None, None)
    plain += nodes.paragraph("", "Body.")
    assert gradbook_site.without_language_switch(plain) is plain  # nothing to remove: no copy


def test_text_in_the_other_language_is_marked():
    from docutils import nodes

    switch = '<p class="gradbook-lang-switch"><a class="reference internal" href="../en/05_ste.html">'
    assert 'hreflang="en" lang="en" class=' in gradbook_site.mark_languages(switch, "chapters/zh/05_ste")
    switch = switch.replace("../en/", "../zh/")
    assert 'hreflang="zh-CN" lang="zh-CN"' in gradbook_site.mark_languages(switch, "chapters/en/05_ste")

    def page():
        doc = nodes.document(None, None)
        doc += nodes.section("", nodes.title("", "Glossary · 术语表"),
                             nodes.paragraph("", "The post says “目标权重应接近 2.0” here."),
                             nodes.paragraph("", "", nodes.literal("", "{term}`梯度`"), nodes.math("", r"\text{梯度}")))
        return doc
    english = page()
    gradbook_site.mark_chinese(english, "chapters/glossary")
    marked = [(n.astext(), n["classes"]) for n in english.findall(nodes.inline)]
    assert marked == [("术语表", ["language-zh-CN"]), ("目标权重应接近", ["language-zh-CN"])], marked
    assert english.astext() == page().astext()  # the text itself is unchanged; code and math are left alone
    chinese = page()
    gradbook_site.mark_chinese(chinese, "chapters/zh/05_ste")
    title = next(iter(chinese.findall(nodes.title)))
    assert title[0]["classes"] == ["language-zh-CN"] and title.astext() == "Glossary · 术语表"
    assert len(list(chinese.findall(nodes.inline))) == 1  # only the title, for the pages that show it
    gradbook_site.mark_chinese(chinese, "chapters/zh/05_ste")
    assert len(list(chinese.findall(nodes.inline))) == 1  # marked once


def test_chinese_the_theme_writes_on_english_pages_is_marked():
    page = ('<html lang="en"><head><title>Index · 索引</title><script>var s = "中文";</script></head><body>\n'
            '<p class="title logo__title">gradbook · 定制梯度</p><br/><img alt="图">\n'
            '<p class="caption"><span class="caption-text">Reference · 参考 &amp; 术语表</span></p>\n'
            '<a lang="zh-CN" href="x">已标记</a><code>"梯度"</code>\n'
            '<article><p>Marked in the doctree: <span lang="zh-CN">梯度</span>, code 梯度</p></article>'
            '<footer>上游 梯度</footer></body></html>')
    marked = gradbook_site.mark_chinese_html(page, skip_article=True)
    zh = '<span lang="zh-CN">{}</span>'.format
    assert marked == (page.replace("gradbook · 定制梯度", "gradbook · " + zh("定制梯度"))
                      .replace("参考 &amp; 术语表", zh("参考") + " &amp; " + zh("术语表"))
                      .replace("上游 梯度", zh("上游 梯度")))
    everywhere = gradbook_site.mark_chinese_html(page)  # a page without a doctree (the index): its article too
    assert "code " + zh("梯度") + "</p></article>" in everywhere
    assert gradbook_site.mark_chinese_html(marked, skip_article=True) == marked  # marked once
    assert gradbook_site.mark_chinese_html("<p>plain English</p>") == "<p>plain English</p>"


def test_the_heads_links_get_their_titles_as_text():
    head = ('<link rel="index" title="Index" href="../../genindex.html" />\n'
            '<link rel="next" title="2. the “forward fff, backward ggg” trick" href="02.html" />')
    out = gradbook_pages.page_link_title(head, "next", "2. the “forward f, backward g” trick & more")
    assert 'title="2. the “forward f, backward g” trick &amp; more" href="02.html"' in out
    assert out.startswith('<link rel="index" title="Index"')


def test_the_chinese_catalogs_have_the_theme_text():
    sphinx_zh = gradbook_i18n.zh_translator("sphinx", gradbook_i18n.CATALOGS[("general", "sphinx")])
    book_zh = gradbook_i18n.zh_translator("booktheme", gradbook_i18n.CATALOGS[("general", "booktheme")])
    for message in ("Skip to main content", "Back to top", "Search", "previous", "next", "Contents",
                    "Link to this heading", "Color mode", "Toggle primary sidebar", "Warning", "Note"):
        assert sphinx_zh.gettext(message) != message, message
    for message in ("Download this page", "Launch on", "Print to PDF", "Fullscreen mode"):
        assert book_zh.gettext(message) != message, message
    with pytest.raises(RuntimeError, match="no zh_CN messages"):
        gradbook_i18n.zh_translator("sphinx", (Path("/nonexistent"),))


def test_pages_by_language():
    assert gradbook_i18n.page_language("chapters/zh/05_ste") == "zh"
    assert gradbook_i18n.page_language("chapters/en/05_ste") == "en"
    assert gradbook_i18n.page_language("search") == "en"
    assert gradbook_i18n.page_language(gradbook_i18n.ZH_SEARCH) == "zh"
    assert gradbook_i18n.search_page("chapters/zh/01_gradients") == gradbook_i18n.ZH_SEARCH
    page = '<nav aria-label="Main"><nav aria-label="Page">'
    assert gradbook_i18n.localize_page(page, "chapters/zh/x") == '<nav aria-label="主导航"><nav aria-label="本页">'
    assert gradbook_i18n.localize_page(page, "chapters/en/x") == page
