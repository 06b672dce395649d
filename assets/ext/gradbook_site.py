"""gradbook's own Sphinx extension: what makes one build a bilingual site.

* Every executing kernel inherits the book's kernel environment
  (``gradlib/book/kernel.json``, mode ``build``): TensorFlow quiet and
  reproducible, and ``GRADBOOK_BUILD=1``, which tells :func:`gradlib.explore`
  to render static figures, not live widgets.
* Every chapter page gets a link to its twin in the other language, right
  under its title (a ``doc`` reference, so a missing twin is a warning and
  ``-W`` fails the build).
* Chinese pages are served with ``lang="zh-CN"``.
* Exercises are numbered per chapter from their stable ids ("Exercise 3.1"
  for ``ch03-ex1``; "练习 3.1" on Chinese pages), not by sphinx-exercise's
  book-wide counter.
* The site serves MathJax itself: ``node_modules/mathjax/es5`` (installed
  from npm by ``make book``) is copied to ``_static/mathjax``; the build
  stops if it is missing rather than fall back to a CDN.
* The search index learns the book's Chinese terms: the Chinese terms of the
  glossary become a jieba user dictionary, so 反向传播 and 直通估计器 are
  indexed as words and not only as their pieces.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
import shutil
from pathlib import Path

from docutils import nodes
from sphinx import addnodes

LANGUAGES = {"en": ("English", "en"), "zh": ("中文", "zh-CN")}
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


MATHJAX_SOURCE = Path("node_modules") / "mathjax" / "es5"


def _check_mathjax(app):
    source = Path(app.srcdir) / MATHJAX_SOURCE
    if not (source / "tex-mml-chtml.js").is_file():
        raise RuntimeError(f"{source} is missing: run `make book` (it runs `npm ci`) so that the site "
                           "can serve MathJax itself instead of loading it from a CDN")


def _copy_mathjax(app, exception):
    if exception is None and app.builder.format == "html":
        shutil.copytree(Path(app.srcdir) / MATHJAX_SOURCE, Path(app.outdir) / "_static" / "mathjax",
                        dirs_exist_ok=True)


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


def _page_language(app, pagename, templatename, context, doctree):
    # Jupyter Book leaves the theme's default_mode empty, which makes the
    # pydata theme log "Got invalid theme mode" in every reader's console.
    if not context.get("default_mode"):
        context["default_mode"] = "auto"
    if "script_files" in context:
        context["script_files"] = unique_scripts(context["script_files"])
    found = chapter_language(pagename)
    if found:
        context["language"] = LANGUAGES[found[0]][1]
        if "body" in context:
            context["body"] = localize_exercises(context["body"], found[0])


def setup(app):
    # Editing this file must rewrite every page: a config value that changes
    # with the source makes Sphinx treat the environment as outdated.
    source_hash = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]
    app.add_config_value("gradbook_site_source", source_hash, "env")
    # Every kernel the build starts inherits the book's kernel environment.
    _kernel_module().apply("build")
    # The sidebar shows chapter titles with math ($f$, $g$) on every page, so
    # every page needs MathJax, not only the pages whose body has math.
    app.set_html_assets_policy("always")
    app.connect("config-inited", _jieba_dictionary)
    app.connect("builder-inited", _check_mathjax)
    app.connect("build-finished", _copy_mathjax)
    app.connect("doctree-read", _language_switch)
    app.connect("html-page-context", _page_language)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
