"""Reliability gates for the chapters: restart-and-run-all, run-all-again, determinism.

For every page of the book (``tools.book.pages``: the ``_toc.yml``), in a
fresh kernel set up exactly as the book build sets it up (cwd = the chapter's
folder, ``kernel_env("build")`` of ``gradlib/book/kernel.py``, whose
``run_notebook`` runs it; ``make test`` runs one twin of each page,
``tools.book.one_twin_each``, and the Colab simulation the other):

1. **restart and run all**: every cell runs in order in the fresh kernel
   (cells tagged ``raises-exception`` may raise, no other);
2. **determinism**: the outputs of that run equal the outputs the book build
   recorded (its execution cache, ``_build/.jupyter_cache``), number for number;
   a page the build executes every time (``execution_mode: force``, the
   benchmarks appendix) is not cached, so a first fresh run stands in for it.  Timing
   figures are the only allowed difference, and they carry a mark: the
   ``[12.3 s]`` that :func:`gradlib.progress` prints (``TIMING`` below), so
   they are blanked before comparing.  Images are compared byte for byte;
3. **run all again**: every cell runs a second time in the same kernel, as
   when a student presses "Run all" twice, and none may raise (again except
   ``raises-exception`` cells).

Usage::

    python -m tools.reliability [CHAPTER.md ...]   # default: every page; exit 1 on a problem
"""

from __future__ import annotations

import argparse
import hashlib
import re
from pathlib import Path
from typing import List, Sequence, Tuple

from tools import book
from tools.book import ROOT

CELL_TIMEOUT_S = 600
# The mark of a timing figure: gradlib.progress ends its bar with "[12.3 s]".
TIMING = re.compile(r"\[\d+(?:\.\d+)? s\]")
TEXT_TYPES = ("text/plain", "text/markdown", "text/html", "text/latex", "image/svg+xml", "application/json")

Output = Tuple[int, str]  # (code cell number, one normalised output)


def built_notebook(md: Path, root: Path = ROOT):
    """The executed notebook the book build recorded for ``md`` (its execution
    cache, keyed on the code cells), or None when the build has none."""
    cache = Path(root) / "_build" / ".jupyter_cache"
    if not cache.is_dir():
        return None  # no build yet (and get_cache would create an empty cache)
    from jupyter_cache import get_cache

    try:
        return get_cache(str(cache)).merge_match_into_notebook(book.read_notebook(md))[1]
    except KeyError:
        return None


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def normalised_outputs(nb) -> List[Output]:
    """Every output of every code cell as comparable text, timing blanked.

    Consecutive stdout chunks are joined (how they were split depends on
    timing) and stderr is left out (the build drops it from the page).
    """
    found: List[Output] = []
    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    for number, cell in enumerate(code_cells):
        stdout = ""
        for output in cell.get("outputs", []):
            kind = output.get("output_type")
            if kind == "stream":
                if output.get("name") == "stdout":
                    stdout += _text(output.get("text", ""))
                continue
            if stdout:
                found.append((number, "stdout: " + stdout))
                stdout = ""
            if kind == "error":
                found.append((number, f"error: {output.get('ename')}: {output.get('evalue')}"))
                continue
            data = output.get("data", {})
            for mime in sorted(data):
                value = _text(data[mime]) if mime in TEXT_TYPES or mime.startswith("text/") else None
                if value is None:  # a binary image: its bytes must not change either
                    value = "sha256 " + hashlib.sha256(_text(data[mime]).encode()).hexdigest()
                found.append((number, f"{mime}: {value}"))
        if stdout:
            found.append((number, "stdout: " + stdout))
    return [(number, TIMING.sub("[timing]", text)) for number, text in found]


def _short(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"


def _first_change(a: str, b: str, context: int = 60) -> Tuple[str, str]:
    at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    start = max(0, at - context)
    return a[start:at + context], b[start:at + context]


def differences(reference: Sequence[Output], fresh: Sequence[Output]) -> List[str]:
    """Readable differences between two runs' outputs (empty when equal)."""
    problems = []
    if len(reference) != len(fresh):
        problems.append(f"{len(reference)} outputs in the build, {len(fresh)} in a fresh run")
    for (cell_a, a), (cell_b, b) in zip(reference, fresh):
        if (cell_a, a) != (cell_b, b):
            was, now = _first_change(a, b)
            problems.append(f"code cell {cell_b}: output differs between runs: "
                            f"build {_short(was)!r} vs fresh {_short(now)!r}")
    return problems


def run_twice(nb, cwd: Path, *, timeout: int = CELL_TIMEOUT_S) -> Tuple[object, List[str]]:
    """Run every cell of ``nb`` in a fresh kernel, then every cell again in the
    same kernel.  Returns the notebook as it was after the first pass and the
    problems (a cell that raised, in which pass)."""
    kernel = book.kernel()
    run = kernel.run_notebook(nb, cwd=cwd, env=kernel.kernel_env("build"), passes=2, timeout=timeout)
    return run.notebook, [] if run.ok else [_short(run.error)]


def check_chapter(md: Path, reference=None, root: Path = ROOT) -> List[str]:
    """Every reliability problem of one chapter (empty when none).

    ``reference`` is an executed notebook to compare with (default: the one
    the book build recorded in its execution cache)."""
    md = Path(md)
    built = reference if reference is not None else built_notebook(md, root)
    if built is None and book.execution_mode(md, root) == "force":
        built, problems = run_twice(book.read_notebook(md), md.parent)
        if problems:
            return problems
    if built is None:
        return [f"{md}: the book build has no executed copy of the current code: build the book first (make book)"]
    first, problems = run_twice(book.read_notebook(md), md.parent)
    if not any(p.startswith("restart and run all") for p in problems):
        problems += differences(normalised_outputs(built), normalised_outputs(first))
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chapters", nargs="*", type=Path, help="default: every page of _toc.yml")
    parser.add_argument("--root", type=Path, default=ROOT, help="book root (default: the repository)")
    args = parser.parse_args(argv)
    failed = 0
    for md in args.chapters or book.pages(root=args.root):
        problems = check_chapter(md, root=args.root)
        failed += bool(problems)
        print(f"{md}: " + ("ok" if not problems else "\n  ".join(["FAILED", *problems])), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
