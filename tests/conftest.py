"""Shared test setup: quiet TensorFlow, headless matplotlib, repository paths."""

from pathlib import Path

from tools import book

ROOT = Path(__file__).resolve().parents[1]

# The book's kernel environment (mode "test"), set before anything imports
# TensorFlow (book.kernel() loads gradlib/book/kernel.py by path: importing it
# as gradlib.book.kernel would import TensorFlow first).
book.kernel().apply("test")

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return ROOT


# -- tools/ tests: a tiny book ---------------------------------------------------
# (pyproject's pytest `pythonpath = ["."]` makes the repository importable as `tools`)

MINI_HEADER = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---
"""

# Prose, comments and string literals per language; the code is shared.
MINI_TEXT = {
    "en": dict(title="Demo", lists="Lists", comment="# the point we look at",
               word="gradient", exercise="Compute it.", solution="Like this."),
    "zh": dict(title="演示", lists="列表", comment="# 我们观察的点",
               word="梯度", exercise="计算它。", solution="这样。"),
}


def mini_chapter(lang: str) -> str:
    """The demo chapter ``01_demo.md`` of ``mini_book`` in ``lang``."""
    t = MINI_TEXT[lang]
    return MINI_HEADER + f"""
({lang}-ch01)=
# {t['title']}

```{{code-cell}} ipython3
:tags: [remove-cell]

%pip install --quiet gradlib
```

({lang}-ch01-lists)=
## {t['lists']}

```{{code-cell}} ipython3
{t['comment']}
x = 3.0
label = "{t['word']}"
print(f"{t['word']}: {{label}} {{x}}", 2 * x)
```

```{{code-cell}} ipython3
:tags: [raises-exception]

raise ValueError("{t['word']}")
```

See {{ref}}`{lang}-ch01-lists`.

```{{math}}
:label: {lang}-ch01-eq
f(x) = x^2
```

```{{exercise}}
:label: {lang}-ch01-ex1

{t['exercise']}
```

```{{solution}} {lang}-ch01-ex1
:label: {lang}-ch01-ex1-sol
:class: dropdown

{t['solution']}
```

:::{{exercise}}
:label: {lang}-ch01-ex2

{t['exercise']}
:::
"""


MINI_LANGUAGES = tuple(MINI_TEXT)


def _mini_toc(languages=MINI_LANGUAGES) -> str:
    """The mini book's _toc.yml: index and 01_demo per language, then the glossary."""
    parts = "".join(
        f"  - caption: {lang}\n    chapters:\n      - file: chapters/{lang}/index\n"
        f"      - file: chapters/{lang}/01_demo\n" for lang in languages)
    return f"format: jb-book\nroot: index\nparts:\n{parts}  - caption: Reference\n    chapters:\n" \
           "      - file: chapters/glossary\n"


@pytest.fixture(scope="session")
def myst_header() -> str:
    """The front matter of a MyST notebook page (jupytext, python3 kernel)."""
    return MINI_HEADER


@pytest.fixture(scope="session")
def mini_toc():
    """``mini_toc(languages)``: the text of a _toc.yml with index and 01_demo per language."""
    return _mini_toc


@pytest.fixture
def mini_book(tmp_path: Path) -> Path:
    """A book root under tmp_path, shaped like the real one, for the tools'
    tests: _toc.yml, _config.yml (the real one), index.md,
    chapters/{en,zh}/{index,01_demo}.md and chapters/glossary.md."""
    (tmp_path / "_toc.yml").write_text(_mini_toc(), encoding="utf-8")
    (tmp_path / "_config.yml").write_bytes((ROOT / "_config.yml").read_bytes())
    (tmp_path / "index.md").write_text("# Mini book\n", encoding="utf-8")
    for lang in MINI_LANGUAGES:
        folder = tmp_path / "chapters" / lang
        folder.mkdir(parents=True)
        (folder / "01_demo.md").write_text(mini_chapter(lang), encoding="utf-8")
        (folder / "index.md").write_text(
            MINI_HEADER + f"\n({lang}-intro)=\n# Index\n\n```{{code-cell}} ipython3\nprint(1 + 1)\n```\n",
            encoding="utf-8",
        )
    (tmp_path / "chapters" / "glossary.md").write_text("# Glossary\n", encoding="utf-8")
    return tmp_path
