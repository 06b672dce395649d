"""Generate and check the Colab ``.ipynb`` twins of the chapter sources.

Every page ``chapters/<lang>/<name>.md`` of ``_toc.yml`` (a MyST Markdown
notebook) has a ``<name>.ipynb`` beside it, generated from the ``.md`` by
jupytext with all outputs stripped.  The ``.md`` is never edited.  Generation
is deterministic, so ``--check`` can compare each twin byte for byte with
what ``--write`` would produce (``tools.book.notebook``):

* the notebook is read with ``jupytext.read`` and written with
  ``jupytext.writes(nb, fmt="ipynb")``;
* the Colab install cell (from ``_config.yml``'s ``repository``) is added
  before the first code cell;
* the ``jupytext`` notebook metadata (text representation, jupytext version,
  default lexer) is dropped, so upgrading jupytext does not churn the twins;
* cell ids, random in nbformat >= 4.5, become ``cell-<index>``;
* code cells get ``outputs: []`` and ``execution_count: null``;
* the file ends with a newline and is written as UTF-8.

Usage::

    python -m tools.notebooks --write   # (re)generate twins that changed
    python -m tools.notebooks --check   # exit 1 and list the problems
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Iterable, Optional

from tools import book
from tools.book import ROOT

FIX = "run `make notebooks` (python -m tools.notebooks --write) to regenerate"


def _rel(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def write_twins(root: Path = ROOT, only: Optional[Iterable[Path]] = None) -> list[Path]:
    """Write every twin whose content is missing or out of date; return them.

    ``only``: restrict to these chapter sources (each must be one of
    ``tools.book.pages``), e.g. while other chapters are being edited.
    """
    root = Path(root)
    sources = book.pages(root=root)
    if only is not None:
        wanted = [Path(p).resolve() for p in only]
        unknown = [str(p) for p in wanted if p not in [s.resolve() for s in sources]]
        if unknown:
            raise ValueError(f"not a page of {root}/_toc.yml: {', '.join(unknown)}")
        sources = [s for s in sources if s.resolve() in wanted]
    written = []
    for md in sources:
        twin = md.with_suffix(".ipynb")
        text = book.render_ipynb(md, root).encode("utf-8")
        if not twin.exists() or twin.read_bytes() != text:
            twin.write_bytes(text)
            written.append(twin)
    return written


def _outputs_in(text: str) -> bool:
    """True when a notebook's JSON text carries outputs or execution counts."""
    cells = json.loads(text).get("cells", [])
    return any(
        cell.get("outputs") or cell.get("execution_count") is not None
        for cell in cells
        if cell.get("cell_type") == "code"
    )


def stale_twins(root: Path = ROOT) -> list[str]:
    """Human-readable problems with the twins; empty when all is well."""
    root = Path(root)
    problems = []
    sources = book.pages(root=root)
    for md in sources:
        twin = md.with_suffix(".ipynb")
        name = _rel(twin, root)
        if not twin.exists():
            problems.append(f"{name} is missing (generate it from {_rel(md, root)})")
            continue
        actual = twin.read_bytes()
        try:
            if _outputs_in(actual.decode("utf-8")):
                problems.append(f"{name} carries outputs or execution counts")
                continue
        except (UnicodeDecodeError, ValueError):
            problems.append(f"{name} is not valid UTF-8 JSON")
            continue
        try:
            expected = book.render_ipynb(md, root).encode("utf-8")
        except ValueError as err:
            problems.append(str(err))
            continue
        if actual != expected:
            problems.append(f"{name} is stale (differs from what {_rel(md, root)} generates)")
    expected = {md.with_suffix(".ipynb") for md in sources}
    for nb in sorted((root / "chapters").rglob("*.ipynb")):
        if ".ipynb_checkpoints" in nb.parts or nb in expected:
            continue
        problems.append(f"{_rel(nb, root)} is an orphan: no chapter source generates it")
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="regenerate twins that changed")
    mode.add_argument("--check", action="store_true", help="report missing/stale/orphan twins")
    parser.add_argument("--root", type=Path, default=ROOT, help="book root (default: the repository)")
    parser.add_argument("sources", nargs="*", type=Path,
                        help="with --write: only these chapter sources (default: all)")
    args = parser.parse_args(argv)
    if args.sources and not args.write:
        parser.error("chapter sources can only be given with --write")
    if args.write:
        try:
            written = write_twins(args.root, args.sources or None)
        except ValueError as err:
            parser.error(str(err))
        for path in written:
            print(f"wrote {_rel(path, Path(args.root))}")
        return 0
    return book.cli(stale_twins(args.root), fix=FIX)


if __name__ == "__main__":
    raise SystemExit(main())
