"""Chinese pages in Chinese: the theme's own text follows the page's language.

The book is one Sphinx build (``language: en``) with a part per language.  On
a Chinese page (``chapters/zh/...``), everything Sphinx, the PyData theme
and the book theme write is taken from their own ``zh_CN`` message catalogs
(the ones a ``language: zh_CN`` build would use): admonition titles, the
in-page contents, prev/next, the search box, the buttons' labels and
tooltips, the footer.  The catalogs in force are switched per document, just
before it is written (``doctree-resolved``: admonition titles are written into
the body) and again before its page is rendered (``html-page-context``: the
templates' text).  English pages keep the build's own, English, catalogs.

Chinese pages search with a Chinese search page, ``search-zh.html``, which
also loads Sphinx's Chinese messages for the results.  It sits at the site's
root, beside ``search.html``: Sphinx's search script writes result links
relative to the search page, as if it were at the root.  Text that no
catalog has (the book's search-box placeholder, the toggle buttons' hints) is
in :data:`TEXT`.
"""

from __future__ import annotations

import gettext
import re
import shutil
from pathlib import Path
from typing import Dict, Optional, Tuple

import pydata_sphinx_theme
import sphinx
import sphinx_book_theme
from sphinx import locale as sphinx_locale
from sphinx.builders.html._assets import _JavaScript

ZH = "zh"
LOCALE = "zh_CN"
HTML_LANG = {"en": "en", ZH: "zh-CN"}
ZH_SEARCH = "search-zh"
ZH_TRANSLATIONS_JS = "_static/translations-zh_CN.js"

_BOOK_THEME_LOCALES = Path(sphinx_book_theme.__file__).parent / "theme" / "sphinx_book_theme" / "static" / "locales"
# (namespace, catalog) -> where its zh_CN (or zh) .mo files are, in Sphinx's order of precedence.
CATALOGS: Dict[Tuple[str, str], Tuple[Path, ...]] = {
    ("general", "sphinx"): (Path(sphinx.__file__).parent / "locale",
                            Path(pydata_sphinx_theme.__file__).parent / "locale", _BOOK_THEME_LOCALES),
    ("general", "booktheme"): (_BOOK_THEME_LOCALES,),
}
SPHINX_JS = Path(sphinx.__file__).parent / "locale" / LOCALE / "LC_MESSAGES" / "sphinx.js"

# Messages the zh_CN catalogs lack (or give in Taiwan's usage), by catalog: looked up first.
SUPPLEMENT: Dict[str, Dict[str, str]] = {
    "sphinx": {
        "Link to this heading": "指向此标题的链接",
        "Link to this equation": "指向此公式的链接",
        "Link to this code": "指向此代码的链接",
        "Link to this image": "指向此图片的链接",
        "Link to this table": "指向此表格的链接",
        "Link to this definition": "指向此定义的链接",
        "Color mode": "颜色模式",
        "Toggle primary sidebar": "显示或隐藏主侧边栏",
        "Toggle secondary sidebar": "显示或隐藏本页目录",
        "© Copyright %(copyright)s.": "© 版权所有 %(copyright)s。",
    },
    "booktheme": {
        "Launch on": "在以下平台打开：",
        "Launch interactive content": "打开可交互的版本",
        "logo": "标志",
        "Print to PDF": "打印为 PDF",
    },
}
# Labels the themes' templates write as literals: {English: Chinese}, replaced on Chinese pages.
LITERALS = {'aria-label="Main"': 'aria-label="主导航"', 'aria-label="Page"': 'aria-label="本页"'}

# Text the page carries that no catalog translates: {language: {what: text}}.
TEXT = {
    "en": {"search_bar": "Search this book...", "toggle_show": "Click to show", "toggle_hide": "Click to hide"},
    ZH: {"search_bar": "搜索本书……", "toggle_show": "点击展开", "toggle_hide": "点击收起"},
}


def page_language(pagename: str) -> str:
    """``"zh"`` for the Chinese pages (``chapters/zh/...`` and the Chinese search page), else ``"en"``."""
    return ZH if pagename.startswith("chapters/zh/") or pagename == ZH_SEARCH else "en"


class Supplement(gettext.NullTranslations):
    """Messages from a dict, falling back to the catalogs behind it."""

    def __init__(self, messages: Dict[str, str]):
        super().__init__()
        self.messages = messages

    def gettext(self, message):
        if message in self.messages:
            return self.messages[message]
        return super().gettext(message)

    def ngettext(self, singular, plural, n):
        if singular in self.messages and n == 1:
            return self.messages[singular]
        return super().ngettext(singular, plural, n)


def zh_translator(catalog: str, directories) -> gettext.NullTranslations:
    """The ``zh_CN`` messages of ``catalog``: :data:`SUPPLEMENT`, then those found
    in ``directories``, merged in order (the first one that has a message wins),
    as :func:`sphinx.locale.init` does."""
    merged = Supplement(SUPPLEMENT.get(catalog, {}))
    found_any = False
    for directory in directories:
        try:
            found = gettext.translation(catalog, localedir=str(directory), languages=[LOCALE, ZH])
        except OSError:
            continue
        merged.add_fallback(found)
        found_any = True
    if not found_any:
        raise RuntimeError(f"no {LOCALE} messages for the catalog {catalog!r} in {[str(d) for d in directories]}")
    return merged


class Catalogs:
    """The translators of both languages, and which one is in force."""

    def __init__(self):
        self.translators = {
            "en": {key: sphinx_locale.translators[key] for key in CATALOGS},
            ZH: {key: zh_translator(key[1], dirs) for key, dirs in CATALOGS.items()},
        }
        self.current = "en"

    def use(self, app, lang: str) -> None:
        if lang == self.current:
            return
        sphinx_locale.translators.update(self.translators[lang])
        app.builder.templates.environment.install_gettext_translations(self.translators[lang][("general", "sphinx")])
        self.current = lang


def _catalogs(app) -> Optional[Catalogs]:
    return getattr(app.builder, "gradbook_catalogs", None)


def _builder_inited(app):
    if app.builder.format != "html":
        return
    app.builder.gradbook_catalogs = Catalogs()


def _doctree_resolved(app, doctree, docname):
    if (catalogs := _catalogs(app)) is not None:
        catalogs.use(app, page_language(docname))


def _collect_pages(app):
    """The Chinese search page (same template as ``search.html``)."""
    if _catalogs(app) is None:
        return []
    return [(ZH_SEARCH, {}, "search.html")]


def localize_context(pagename: str, context: dict) -> None:
    """The page's language in the context: ``lang``, the search box and its target, toggle hints."""
    lang = page_language(pagename)
    text = TEXT[lang]
    context["language"] = HTML_LANG[lang]
    context["theme_search_bar_text"] = text["search_bar"]
    if "script_files" in context:
        scripts = []
        for script in context["script_files"]:
            body = getattr(script, "attributes", {}).get("body") or ""
            if body.startswith("let toggleHintShow = "):
                script.attributes["body"] = f"let toggleHintShow = '{text['toggle_show']}';"
            elif body.startswith("let toggleHintHide = "):
                script.attributes["body"] = f"let toggleHintHide = '{text['toggle_hide']}';"
            scripts.append(script)
        context["script_files"] = scripts


SEARCH_LINK = re.compile(r'(<link rel="search"[^>]*href="[^"]*?)search\.html"')


def localize_page(page: str, pagename: str) -> str:
    """A rendered page with the themes' literal labels (:data:`LITERALS`) in the page's language,
    and its head's search link to its language's search page."""
    if page_language(pagename) != ZH:
        return page
    for english, chinese in LITERALS.items():
        page = page.replace(english, chinese)
    return SEARCH_LINK.sub(lambda m: f'{m[1]}{ZH_SEARCH}.html"', page)


def search_page(pagename: str) -> str:
    """The search page a page's search box submits to."""
    return ZH_SEARCH if page_language(pagename) == ZH else "search"


def _page_context(app, pagename, templatename, context, doctree):
    if (catalogs := _catalogs(app)) is None:
        return
    catalogs.use(app, page_language(pagename))
    localize_context(pagename, context)
    # Sphinx's Chinese messages (a zh_CN build's translations.js): the search page's results, and
    # the "Hide Search Matches" button a page shows when opened from a search result.
    if page_language(pagename) == ZH:
        context["script_files"] = [*context["script_files"], _JavaScript(ZH_TRANSLATIONS_JS)]


def _copy_messages(app, exception):
    if exception is None and _catalogs(app) is not None:
        shutil.copy2(SPHINX_JS, Path(app.outdir) / ZH_TRANSLATIONS_JS)


def setup(app):
    app.connect("builder-inited", _builder_inited)
    app.connect("doctree-resolved", _doctree_resolved)
    app.connect("html-collect-pages", _collect_pages)
    # After the themes' own handlers (priority 500), which build the buttons and the search text.
    app.connect("html-page-context", _page_context, priority=900)
    app.connect("build-finished", _copy_messages)
