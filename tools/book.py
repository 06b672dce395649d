"""The model of the book that every tool uses: its pages, their cells, their kernels.

* **Pages** come from ``_toc.yml``, the one list: :func:`docnames` (every
  entry, in order), :func:`languages` (``chapters/<lang>/`` folders the toc
  names), :func:`pages` (every page of a language), :func:`chapters` (its
  numbered chapters ``NN_*``) and :func:`one_twin_each` (the pages the costly
  gates share out).
* **Cells** are read with real parsers: jupytext (``md:myst``) gives the code
  cells with their options (:func:`read_notebook`); markdown-it-py with the
  MyST plugins of mdit-py-plugins, set up as myst-parser sets them up, gives
  the directives, targets and roles (:func:`directives`, :func:`targets`,
  :func:`roles`), directive options parsed as jupytext parses them.
* **Colab**: the ``.md`` files are the only source and carry no install cell.
  :func:`notebook` (the ``.ipynb`` twin and the student edition start there)
  adds it before the first code cell, from ``_config.yml``'s ``repository``
  (:func:`install_cell`).
* **Kernels** run through ``gradlib/book/kernel.py`` only; :func:`kernel`
  loads it by path (standard library only), so a tool that needs no
  TensorFlow does not import it.

Tools run as ``python -m tools.NAME`` from the repository root.
"""

from __future__ import annotations

import functools
import importlib.util
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import yaml

ROOT = Path(__file__).resolve().parents[1]
CHAPTER_FILE = re.compile(r"^\d\d_[\w-]+$")  # a numbered chapter's file stem: 01_gradients
INSTALL_TAG = "remove-cell"
INSTALL_COMMENT = {
    "en": ("# On Colab, or with GRADBOOK_INSTALL_SOURCE set, install gradlib (this book's library) first; "
           "elsewhere do nothing."),
    "zh": "# 在 Colab 上，或者设置了 GRADBOOK_INSTALL_SOURCE 时，先安装 gradlib（本书的配套库）；在其他环境中什么也不做。",
}
INSTALL_CELL = '''{comment}
import os, subprocess, sys
if "google.colab" in sys.modules or "GRADBOOK_INSTALL_SOURCE" in os.environ:
    source = os.environ.get("GRADBOOK_INSTALL_SOURCE", "{source}")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", source], check=True)'''
INSTALL_ID = "gradbook-install"  # the cell id of the injected install cell
LITERAL_DIRECTIVES = {"code-cell", "code-block", "code", "math", "raw", "eval-rst"}  # bodies not Markdown


# -- pages (from _toc.yml) -------------------------------------------------------

def _yaml(path: Path) -> dict:
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: the book model reads it")
    return yaml.safe_load(path.read_text(encoding="utf-8")) or {}


def docnames(root: Path = ROOT) -> List[str]:
    """``root`` and every ``file`` entry of ``_toc.yml``, in order, without suffix."""
    found: List[str] = []

    def walk(node) -> None:
        if isinstance(node, dict):
            for key in ("root", "file"):
                if key in node:
                    found.append(str(node[key]).removesuffix(".md").removesuffix(".ipynb"))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(_yaml(Path(root) / "_toc.yml"))
    return found


def _by_language(root: Path) -> Dict[str, List[str]]:
    by_lang: Dict[str, List[str]] = {}
    for doc in docnames(root):
        parts = doc.split("/")
        if len(parts) == 3 and parts[0] == "chapters":
            by_lang.setdefault(parts[1], []).append(parts[2])
    return by_lang


def languages(root: Path = ROOT) -> Tuple[str, ...]:
    """The book's languages, in toc order: ``("en", "zh")``."""
    return tuple(_by_language(root))


def _lang(lang: str, root: Path) -> List[str]:
    by_lang = _by_language(root)
    if lang not in by_lang:
        raise ValueError(f"no language {lang!r} in {Path(root) / '_toc.yml'} (it has {', '.join(by_lang)})")
    return by_lang[lang]


def pages(lang: Optional[str] = None, root: Path = ROOT) -> List[Path]:
    """Every page ``chapters/<lang>/<name>.md`` of ``lang`` (default: of every
    language, in toc order)."""
    root = Path(root)
    langs = languages(root) if lang is None else (lang,)
    return [root / "chapters" / one / f"{name}.md" for one in langs for name in _lang(one, root)]


def one_twin_each(turn: int, root: Path = ROOT) -> List[Path]:
    """One twin of every page, the languages taking turns down the toc: page
    ``k`` of the first language's toc order, in ``languages()[(k + turn) % n]``.

    The two costly gates run every page's code once, not once per language.
    ``tools/twins.py`` fails a pair whose code differs in anything but
    comments and string literals, and the book build executes every page of
    both languages.  Not compared, so a fault there in one twin can pass the
    gate that does not run it: string literals (f-strings' code included,
    and ``lang=`` arguments) and the pages' front matter.  The reliability
    gate takes turn 0 and the Colab simulation turn 1: with two languages
    every page file goes through exactly one of them, and each gate runs
    pages of both languages.
    """
    if not isinstance(turn, int) or isinstance(turn, bool):
        raise TypeError(f"turn must be an int, not {type(turn).__name__}")
    langs = languages(root)
    return [Path(root) / "chapters" / langs[(k + turn) % len(langs)] / f"{name}.md"
            for k, name in enumerate(_lang(langs[0], root))]


def chapters(lang: Optional[str] = None, root: Path = ROOT) -> List[Path]:
    """The numbered chapters ``chapters/<lang>/NN_*.md`` among :func:`pages`."""
    return [path for path in pages(lang, root) if CHAPTER_FILE.match(path.stem)]


def language_of(md: Path) -> str:
    """``chapters/zh/01_x.md`` -> ``"zh"``."""
    return Path(md).parent.name


def site_path(md: Path, root: Path = ROOT) -> str:
    """A page's address in the built site: ``chapters/en/01_gradients.html``."""
    return Path(md).resolve().relative_to(Path(root).resolve()).with_suffix(".html").as_posix()


def site_pages(lang: Optional[str] = None, root: Path = ROOT) -> List[str]:
    """:func:`site_path` of every page of :func:`pages` (toc order)."""
    return [site_path(md, root) for md in pages(lang, root)]


def twin_page(path: str, root: Path = ROOT) -> str:
    """The other language's page of a page: ``chapters/en/01_x.html`` ->
    ``chapters/zh/01_x.html`` (the book has two languages)."""
    parts = path.split("/")
    langs = languages(root)
    if len(parts) != 3 or parts[0] != "chapters" or parts[1] not in langs or len(langs) != 2:
        raise ValueError(f"{path} is not a page of one of two languages {langs}")
    parts[1] = langs[1 - langs.index(parts[1])]
    return "/".join(parts)


# -- Colab (from _config.yml) ----------------------------------------------------

def repository(root: Path = ROOT) -> Tuple[str, str]:
    """``(url, ref)`` from ``_config.yml``'s ``repository`` section."""
    repo = _yaml(Path(root) / "_config.yml").get("repository") or {}
    url, ref = str(repo.get("url", "")).rstrip("/"), str(repo.get("branch", ""))
    if not url.startswith("https://github.com/") or not ref:
        raise ValueError("_config.yml needs repository.url (a https://github.com/... URL) and repository.branch")
    return url, ref


def install_source(root: Path = ROOT) -> str:
    """What the install cell pip-installs on Colab: ``gradlib @ git+<url>@<ref>``."""
    url, ref = repository(root)
    return f"gradlib @ git+{url}@{ref}"


def install_cell(lang: str, root: Path = ROOT) -> str:
    """The Colab install cell's code in ``lang``: installs gradlib on Colab (or
    from ``GRADBOOK_INSTALL_SOURCE``), does nothing elsewhere, never installs
    TensorFlow."""
    if lang not in INSTALL_COMMENT:
        raise ValueError(f"install_cell: no install comment for language {lang!r}")
    return INSTALL_CELL.format(comment=INSTALL_COMMENT[lang], source=install_source(root))


def colab_url(md: Path, root: Path = ROOT) -> str:
    """The Colab address of a page's ``.ipynb`` twin."""
    url, ref = repository(root)
    relative = Path(md).resolve().relative_to(Path(root).resolve()).with_suffix(".ipynb").as_posix()
    return f"https://colab.research.google.com/github/{url.removeprefix('https://github.com/')}/blob/{ref}/{relative}"


# -- cells -----------------------------------------------------------------------

def read_notebook(md: Path):
    """A page's ``.md`` as jupytext reads it (``md:myst``): an nbformat v4
    notebook whose cells carry their options (tags ...) as metadata."""
    import jupytext

    return jupytext.read(Path(md), fmt="md:myst")


def execution_mode(md: Path, root: Path = ROOT) -> str:
    """How the build executes a page: its front matter's ``mystnb:
    execution_mode`` (``force``: on every build, never from the cache), else
    ``_config.yml``'s ``execute.execute_notebooks``."""
    own = (read_notebook(md).metadata.get("mystnb") or {}).get("execution_mode")
    if own:
        return str(own)
    return str((_yaml(Path(root) / "_config.yml").get("execute") or {}).get("execute_notebooks", "auto"))


def reads_notebook(text: str):
    """:func:`read_notebook` of MyST text."""
    import jupytext

    return jupytext.reads(text, fmt="md:myst")


def code_sources(text: str) -> List[str]:
    """The code of every code cell of MyST text, options dropped."""
    return [cell.source for cell in reads_notebook(text).cells if cell.cell_type == "code"]


def is_install_cell(cell) -> bool:
    """True for a Colab install cell (what :func:`notebook` injects)."""
    return (cell.get("cell_type") == "code" and cell.get("id") == INSTALL_ID) or (
        cell.get("cell_type") == "code" and "GRADBOOK_INSTALL_SOURCE" in cell.get("source", "")
        and INSTALL_TAG in cell.get("metadata", {}).get("tags", []))


def notebook(md: Path, root: Path = ROOT):
    """A page as a Colab notebook: :func:`read_notebook` with the install cell
    (:func:`install_cell`, tagged ``remove-cell``) before the first code cell,
    cell ids ``cell-<index>`` (the install cell's is ``gradbook-install``),
    outputs and execution counts empty, jupytext's own metadata dropped."""
    import nbformat

    nb = read_notebook(md)
    nb.metadata.pop("jupytext", None)
    if any(is_install_cell(cell) for cell in nb.cells):
        raise ValueError(f"{md}: the Colab install cell is generated; delete it from the .md")
    install = nbformat.v4.new_code_cell(install_cell(language_of(md), root), metadata={"tags": [INSTALL_TAG]})
    first = next((i for i, cell in enumerate(nb.cells) if cell.cell_type == "code"), len(nb.cells))
    nb.cells.insert(first, install)
    for index, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{index}"
        if cell.cell_type == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
    nb.cells[first]["id"] = INSTALL_ID
    return nb


def render_ipynb(md: Path, root: Path = ROOT) -> str:
    """The exact text of the ``.ipynb`` twin of ``md`` (see tools/notebooks.py)."""
    import jupytext

    return jupytext.writes(notebook(md, root), fmt="ipynb") + "\n"


# -- directives (markdown-it-py with myst-parser's plugins) -------------------

@dataclass
class Directive:
    """A MyST directive: ``name`` (``exercise``), its ``argument`` (the text
    after ``{name}``), ``options`` (``{"label": "en-ch01-ex1"}``), ``body``
    (the content after the options), ``begin``/``end`` (0-based line range
    of the whole block in the text, ``end`` exclusive) and ``fence``."""

    name: str
    argument: str
    options: Dict[str, object] = field(default_factory=dict)
    body: str = ""
    begin: int = 0
    end: int = 0
    fence: str = "```"


# The MyST syntax extensions _config.yml may enable, as mdit-py-plugins provides them
# (the plugins myst-parser wires into markdown-it-py; myst-parser itself is not
# needed, so the model also works in the Colab-like environment).
def _plugins() -> dict:
    from mdit_py_plugins.amsmath import amsmath_plugin
    from mdit_py_plugins.colon_fence import colon_fence_plugin
    from mdit_py_plugins.deflist import deflist_plugin
    from mdit_py_plugins.dollarmath import dollarmath_plugin
    from mdit_py_plugins.substitution import substitution_plugin

    return {"colon_fence": colon_fence_plugin, "dollarmath": dollarmath_plugin, "amsmath": amsmath_plugin,
            "deflist": deflist_plugin, "substitution": substitution_plugin}


@functools.lru_cache(maxsize=None)
def _parser():
    """markdown-it-py as myst-parser sets it up: CommonMark, tables, front
    matter, MyST blocks (targets) and roles, plus the extensions _config.yml
    enables (``parse.myst_enable_extensions``)."""
    from markdown_it import MarkdownIt
    from mdit_py_plugins.front_matter import front_matter_plugin
    from mdit_py_plugins.myst_blocks import myst_block_plugin
    from mdit_py_plugins.myst_role import myst_role_plugin

    md = MarkdownIt("commonmark").enable("table").use(front_matter_plugin).use(myst_block_plugin).use(
        myst_role_plugin)
    enabled = (_yaml(ROOT / "_config.yml").get("parse") or {}).get("myst_enable_extensions", [])
    plugins = _plugins()
    for name in enabled:
        if name not in plugins:
            raise ValueError(f"_config.yml enables the MyST extension {name!r}, which tools/book.py does not know")
        md.use(plugins[name])
    return md


def _options(content: str) -> Tuple[Dict[str, object], str]:
    """Split a directive's content into options and body, as jupytext and
    myst-parser do (a leading block of ``:key: value`` lines, or a ``---``
    YAML block; values parsed as YAML)."""
    from jupytext.myst import parse_directive_options

    lines, options = parse_directive_options(content, "directive options: ")
    return dict(options), "\n".join(lines).strip("\n")


def _fences(text: str, nested: bool, offset: int = 0):
    """``(token, begin, end, directive name or None, options, body)`` for every
    fenced block of ``text`` (backtick, tilde or colon), lines counted from
    ``offset``; with ``nested``, the blocks inside a directive's body too
    (MyST parses a directive's body as Markdown)."""
    for token in _parser().parse(text):
        if token.type not in ("fence", "colon_fence") or not token.map:
            continue
        begin, end = token.map[0] + offset, token.map[1] + offset
        match = re.match(r"^\{([\w:-]+)\}\s*(.*)$", token.info.strip())
        if not match:
            yield token, begin, end, None, {}, token.content
            continue
        options, body = _options(token.content)
        yield token, begin, end, match[1], options, body
        if nested and body and match[1] not in LITERAL_DIRECTIVES:
            inner = begin + 1 + token.content[: token.content.find(body)].count("\n")
            yield from _fences(body, nested, inner)


def directives(text: str, nested: bool = True) -> List[Directive]:
    """Every directive of MyST Markdown ``text`` (backtick or colon fences), in
    order; with ``nested``, directives inside another directive's body too
    (their lines counted in ``text``)."""
    return [Directive(name, token.info.strip()[len(name) + 2:].strip(), options, body, begin, end, token.markup)
            for token, begin, end, name, options, body in _fences(text, nested) if name]


def code_blocks(text: str) -> List[Tuple[int, int, str]]:
    """``(begin, end, code)`` of every ``{code-cell}`` (options dropped) and
    every plain fenced code block of MyST text, directive bodies included."""
    return [(begin, end, body) for token, begin, end, name, options, body in _fences(text, True)
            if name == "code-cell" or (name is None and token.type == "fence")]


def _walk(tokens):
    for token in tokens:
        yield token
        if token.children:
            yield from _walk(token.children)


def targets(text: str) -> List[str]:
    """The labels of the ``(label)=`` targets of MyST text, in order."""
    return [token.content.strip() for token in _parser().parse(text) if token.type == "myst_target"]


def roles(text: str) -> List[Tuple[str, str]]:
    """``(name, content)`` of every role of MyST text (``{ref}`x <label>```), in
    order, outside code and directives."""
    return [(token.meta["name"], token.content) for token in _walk(_parser().parse(text))
            if token.type == "myst_role"]


def solution_ranges(text: str) -> List[Tuple[int, int]]:
    """The line ranges ``[begin, end)`` of ``text`` that are solutions: each
    ``{solution}`` directive, and ``{solution-start}`` through its
    ``{solution-end}``.  A ``{solution-start}`` without an end is an error."""
    ranges: List[Tuple[int, int]] = []
    start: Optional[Directive] = None
    for directive in directives(text, nested=False):
        if directive.name == "solution" and start is None:
            ranges.append((directive.begin, directive.end))
        elif directive.name == "solution-start":
            if start is not None:
                raise ValueError(f"line {directive.begin + 1}: {{solution-start}} inside another solution")
            start = directive
        elif directive.name == "solution-end":
            if start is None:
                raise ValueError(f"line {directive.begin + 1}: {{solution-end}} without {{solution-start}}")
            ranges.append((start.begin, directive.end))
            start = None
    if start is not None:
        raise ValueError(f"line {start.begin + 1}: a {{solution-start}} directive has no {{solution-end}}")
    return ranges


# -- kernels ---------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def kernel():
    """``gradlib/book/kernel.py`` loaded by path (so TensorFlow is not imported):
    ``kernel_env(mode)``, ``apply(mode)``, ``Kernel``, ``run_notebook``."""
    import sys

    for name in ("gradlib.book.kernel", "_gradbook_kernel"):  # imported, or loaded here before
        if name in sys.modules:
            return sys.modules[name]
    spec = importlib.util.spec_from_file_location("_gradbook_kernel", ROOT / "gradlib" / "book" / "kernel.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules["_gradbook_kernel"] = module
    return module


def cli(problems: List[str], *, fix: str = "") -> int:
    """The tail every checking tool ends with: print each problem, then (when
    there are any) ``fix`` on stderr; return the exit status (1: problems)."""
    import sys

    for problem in problems:
        print(problem)
    if problems and fix:
        print(fix, file=sys.stderr)
    return 1 if problems else 0
