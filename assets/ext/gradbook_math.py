"""Math typeset at build time with KaTeX: the reader's browser runs no math script.

Every ``math`` and ``math_block`` node (prose, glossary, the sidebar's chapter
titles, Markdown and LaTeX cell outputs) is rendered by KaTeX from npm
(``node_modules/katex``, installed by ``make book``) in one ``node`` process
(``katex-render.js``), strictly: TeX that KaTeX cannot typeset fails the build
with the formula and the page.  Pages load ``katex.min.css`` and its fonts,
served from the site itself (``_static/katex``); no CDN, no JavaScript.

KaTeX writes MathML next to its HTML, so screen readers read the formula.
Equation numbers and the multi-equation layout follow Sphinx's MathJax
renderer (``sphinx/ext/mathjax.py``), so the same source gives the same math.
"""

from __future__ import annotations

import atexit
import importlib.util
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Dict, Optional, Tuple

from docutils import nodes
from sphinx.errors import ExtensionError
from sphinx.locale import _
from sphinx.transforms import SphinxTransform
from sphinx.util.math import get_node_equation_number

RENDERER = "gradbook_katex"
KATEX_SOURCE = Path("node_modules") / "katex" / "dist"
SCRIPT = Path(__file__).with_name("katex-render.js")
STATIC = "katex"  # _static/katex: katex.min.css and fonts/
# The fonts almost every page uses (the sidebar's titles have an italic f):
# preloaded, so that text typeset in them does not shift when they arrive.
PRELOAD_FONTS = ("KaTeX_Main-Regular.woff2", "KaTeX_Math-Italic.woff2")


def _load_plain_tex():
    """gradlib's TeX-to-text module, loaded by its path: importing gradlib would import TensorFlow."""
    path = Path(__file__).resolve().parents[2] / "gradlib" / "_plain_tex.py"
    spec = importlib.util.spec_from_file_location("gradbook_plain_tex", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_plain_tex = _load_plain_tex()


def plain_math(node: nodes.math) -> str:
    """Inline math as plain Unicode text (``\\lambda`` is ``λ``), for places that hold text only.

    Raises:
        ExtensionError: the TeX uses a command gradlib/_plain_tex.py does not know (naming the place).
    """
    tex = nodes.Element.astext(node)  # the TeX itself, also for a TitleMath
    try:
        return _plain_tex.plain_label(f"${tex}$")
    except ValueError as error:
        raise ExtensionError(f"{node.source or '?'}:{node.line or '?'}: {error}") from None


class TitleMath(nodes.math):
    """Math in a title: typeset like any inline math, but plain text where Sphinx turns the title into
    text (the search index's section titles, ``{ref}`` link texts, the page's ``<title>``)."""

    def astext(self) -> str:
        return plain_math(self)


# docutils' visitors (Sphinx's title collector, table of contents, writers) dispatch on the class's
# name: named "math", a TitleMath is visited as any math.  Pickling uses the qualified name, TitleMath.
TitleMath.__name__ = "math"


class MathInTitles(SphinxTransform):
    """Makes every math node inside a title a :class:`TitleMath`, before Sphinx's domains record the
    section names (priority 850) and the table of contents takes the titles (doctree-read)."""

    default_priority = 840

    def apply(self, **kwargs) -> None:
        if self.app.builder.format == "html":  # (LaTeX would get the plain text inside its math mode)
            title_math(self.document)


def title_math(document: nodes.Node) -> None:
    """Replaces each math node inside a title of ``document`` by a :class:`TitleMath`."""
    for title in list(document.findall(nodes.title)):
        for math in list(title.findall(nodes.math)):
            if not isinstance(math, TitleMath):
                replacement = TitleMath(math.rawsource, *math.children, **math.attributes)
                replacement.source, replacement.line = math.source, math.line
                math.replace_self(replacement)


class KaTeX:
    """One ``node katex-render.js`` process, started on first use; answers are cached."""

    def __init__(self, katex_dir: Path):
        self.katex_dir = katex_dir
        self.process: Optional[subprocess.Popen] = None
        self.cache: Dict[Tuple[str, bool], str] = {}

    def _start(self) -> subprocess.Popen:
        node = shutil.which("node")
        if node is None:
            raise ExtensionError("`node` is not on PATH: the book typesets its math with KaTeX at build time "
                                 "(install Node.js, e.g. Debian's nodejs package)")
        process = subprocess.Popen([node, str(SCRIPT), str(self.katex_dir.parent)],
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                   encoding="utf-8", bufsize=1)
        atexit.register(process.kill)
        return process

    def render(self, tex: str, display: bool) -> str:
        key = (tex, display)
        tex = katex_tex(tex)
        if key not in self.cache:
            if self.process is None or self.process.poll() is not None:
                self.process = self._start()
            self.process.stdin.write(json.dumps({"tex": tex, "display": display}) + "\n")
            self.process.stdin.flush()
            line = self.process.stdout.readline()
            if not line:
                raise ExtensionError(f"the KaTeX process ({SCRIPT.name}) stopped while typesetting {tex!r}")
            answer = json.loads(line)
            if "error" in answer:
                raise KaTeXError(tex, answer["error"])
            self.cache[key] = answer["html"]
        return self.cache[key]


# KaTeX's double-struck font has capitals (and k) only: it draws \mathbb{1} as a
# plain upright 1, silently (strict mode does not catch it), where MathJax (on
# Colab) draws the indicator 𝟙.  The indicator is written \mathbb{1} in the
# sources and drawn in bold here, a usual form of it; any other digit or
# lowercase letter in \mathbb fails the build.
BLACKBOARD = re.compile(r"\\mathbb\s*(?:\{\s*([^{}]*?)\s*\}|([0-9A-Za-z]))")
BLACKBOARD_AS = {"1": r"\mathbf{1}"}


def katex_tex(tex: str) -> str:
    """``tex`` in a form KaTeX draws as MathJax does (see :data:`BLACKBOARD`)."""
    def blackboard(match):
        letters = match[1] if match[1] is not None else match[2]  # \mathbb{1} or \mathbb 1
        if letters in BLACKBOARD_AS:
            return BLACKBOARD_AS[letters]
        if any(c.isdigit() or (c.islower() and c != "k") for c in letters):
            raise KaTeXError(tex, f"KaTeX has no double-struck {letters!r} (it would draw it upright)")
        return match[0]

    return BLACKBOARD.sub(blackboard, tex)


class KaTeXError(ExtensionError):
    def __init__(self, tex: str, message: str):
        super().__init__(f"KaTeX cannot typeset {tex!r}: {message}")


_katex: Optional[KaTeX] = None


def _renderer(translator) -> KaTeX:
    global _katex
    if _katex is None:
        _katex = KaTeX(Path(translator.builder.srcdir) / KATEX_SOURCE)
    return _katex


def _render(translator, node, tex: str, display: bool) -> str:
    try:
        return _renderer(translator).render(tex, display)
    except KaTeXError as error:
        where = f"{node.source or translator.builder.current_docname}:{node.line or '?'}"
        raise ExtensionError(f"{where}: {error}") from None


def visit_math(self, node: nodes.math) -> None:
    self.body.append(self.starttag(node, "span", "", CLASS="math notranslate nohighlight"))
    tex = nodes.Element.astext(node)  # a TitleMath's astext() is its plain text
    self.body.append(_render(self, node, tex, display=False) + "</span>")
    raise nodes.SkipNode


def display_tex(text: str) -> str:
    """The TeX Sphinx's MathJax renderer would typeset for a wrapped ``math_block``:
    paragraphs are equations, aligned together; an equation with ``\\\\`` is split."""
    parts = [part for part in text.split("\n\n") if part.strip()]
    body = r"\\".join(r"\begin{split}" + part + r"\end{split}" if r"\\" in part else part for part in parts)
    return r"\begin{aligned}" + body + r"\end{aligned}" if len(parts) > 1 else body


def visit_displaymath(self, node: nodes.math_block) -> None:
    self.body.append(self.starttag(node, "div", CLASS="math notranslate nohighlight"))
    if not node["nowrap"] and node["number"]:
        number = get_node_equation_number(self, node)
        self.body.append('<span class="eqno">(%s)' % number)
        self.add_permalink_ref(node, _("Link to this equation"))
        self.body.append("</span>")
    tex = node.astext() if node["nowrap"] else display_tex(node.astext())
    self.body.append(_render(self, node, tex, display=True) + "</div>\n")
    raise nodes.SkipNode


def _use_katex(app, config):
    config.html_math_renderer = RENDERER


def _check_katex(app):
    source = Path(app.srcdir) / KATEX_SOURCE
    if not (source / "katex.min.css").is_file():
        raise ExtensionError(f"{source} is missing: run `make book` (it runs `npm ci`), which installs KaTeX, "
                             "the book's build-time math typesetter")
    app.add_css_file(f"{STATIC}/katex.min.css")


def _copy_katex(app, exception):
    if exception is None and app.builder.format == "html":
        source, target = Path(app.srcdir) / KATEX_SOURCE, Path(app.outdir) / "_static" / STATIC
        (target / "fonts").mkdir(parents=True, exist_ok=True)
        shutil.copy2(source / "katex.min.css", target / "katex.min.css")
        for font in (source / "fonts").glob("*.woff2"):  # every browser that runs the site reads woff2
            shutil.copy2(font, target / "fonts" / font.name)


def font_preloads(pathto) -> str:
    """``<link rel="preload">`` tags for :data:`PRELOAD_FONTS` (``pathto``: the page's)."""
    return "".join(
        f'<link rel="preload" href="{pathto(f"_static/{STATIC}/fonts/{name}", 1)}" as="font" '
        'type="font/woff2" crossorigin="anonymous">' for name in PRELOAD_FONTS)


def setup(app):
    app.add_html_math_renderer(RENDERER, (visit_math, None), (visit_displaymath, None))
    app.add_transform(MathInTitles)
    app.connect("config-inited", _use_katex)
    app.connect("builder-inited", _check_katex)
    app.connect("build-finished", _copy_katex)
    # env_version: the stored doctrees hold TitleMath nodes; a change to what the transform stores
    # must bump it, so that an incremental build reads every page afresh.
    return {"env_version": 1, "parallel_read_safe": True, "parallel_write_safe": True}
