"""Colab wiring derived from one place: ``repository`` in ``_config.yml``.

* The first code cell of every chapter installs gradlib on Colab from the
  repository at the configured ref (``repository.branch``: ``main`` while
  writing, a release tag when publishing) and does nothing elsewhere.  It
  never installs TensorFlow: Colab's own is used.  ``GRADBOOK_INSTALL_SOURCE``
  overrides the source (a test points it at the local checkout).
* The launch button of every page opens ``…/blob/<ref>/chapters/<lang>/<name>.ipynb``
  on Colab; sphinx-book-theme builds it from the same two settings.

``python tools/colab.py --write`` rewrites the install cell of every chapter
from ``_config.yml`` (``make notebooks`` runs it); ``--check`` reports stale ones.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import List, Tuple

import yaml

ROOT = Path(__file__).resolve().parents[1]
COMMENT = {
    "en": "# On Colab, install gradlib (this book's library) first; elsewhere do nothing.",
    "zh": "# 在 Colab 上先安装 gradlib（本书的配套库）；在其他环境中什么也不做。",
}
CELL = '''{comment}
import os, subprocess, sys
if "google.colab" in sys.modules or "GRADBOOK_INSTALL_SOURCE" in os.environ:
    source = os.environ.get("GRADBOOK_INSTALL_SOURCE", "{source}")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", source], check=True)
'''
# The install cell: a remove-cell code cell whose body pip-installs gradlib.
BLOCK = re.compile(r"(```\{code-cell\} ipython3\n:tags: \[remove-cell\]\n\n)(.*?)(```)", re.S)


def repository(root: Path = ROOT) -> Tuple[str, str]:
    """``(url, ref)`` from ``_config.yml``'s ``repository`` section."""
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    repo = config.get("repository") or {}
    url, ref = str(repo.get("url", "")).rstrip("/"), str(repo.get("branch", ""))
    if not url.startswith("https://github.com/") or not ref:
        raise ValueError("_config.yml needs repository.url (a https://github.com/... URL) and repository.branch")
    return url, ref


def install_source(root: Path = ROOT) -> str:
    url, ref = repository(root)
    return f"gradlib @ git+{url}@{ref}"


def colab_url(md_path: Path, root: Path = ROOT) -> str:
    """The Colab address of a chapter's ``.ipynb`` twin."""
    url, ref = repository(root)
    relative = md_path.resolve().relative_to(root.resolve()).with_suffix(".ipynb").as_posix()
    return f"https://colab.research.google.com/github/{url.removeprefix('https://github.com/')}/blob/{ref}/{relative}"


def install_cell(lang: str, root: Path = ROOT) -> str:
    return CELL.format(comment=COMMENT[lang], source=install_source(root))


def chapter_sources(root: Path = ROOT) -> List[Path]:
    return sorted(p for lang in COMMENT for p in (root / "chapters" / lang).glob("*.md"))


def _synced(text: str, lang: str, root: Path) -> Tuple[str, bool]:
    match = next((m for m in BLOCK.finditer(text) if "pip" in m[2] and "gradlib" in m[2]), None)
    if match is None:
        return text, False
    return text[:match.start(2)] + install_cell(lang, root) + text[match.end(2):], True


def stale(root: Path = ROOT) -> List[str]:
    """Chapters whose install cell is missing or differs from ``_config.yml``."""
    problems = []
    for path in chapter_sources(root):
        text = path.read_text(encoding="utf-8")
        new, found = _synced(text, path.parent.name, root)
        rel = path.relative_to(root).as_posix()
        if not found:
            problems.append(f"{rel}: no Colab install cell (a remove-cell code cell that pip-installs gradlib)")
        elif new != text:
            problems.append(f"{rel}: the Colab install cell does not match _config.yml (run `make notebooks`)")
    return problems


def write(root: Path = ROOT) -> List[Path]:
    changed = []
    for path in chapter_sources(root):
        text = path.read_text(encoding="utf-8")
        new, found = _synced(text, path.parent.name, root)
        if found and new != text:
            path.write_text(new, encoding="utf-8")
            changed.append(path)
    return changed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="rewrite stale install cells")
    parser.add_argument("--check", action="store_true", help="report stale install cells (exit 1)")
    parser.add_argument("--root", type=Path, default=ROOT)
    args = parser.parse_args(argv)
    if args.write:
        for path in write(args.root):
            print(f"updated {path.relative_to(args.root)}")
    problems = stale(args.root)
    for problem in problems:
        print(problem)
    return 1 if problems and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
