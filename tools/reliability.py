"""Reliability gates for the chapters: restart-and-run-all, run-all-again, determinism.

For every page of the book that has code (``chapters/{en,zh}/*.md``), in a
fresh kernel set up exactly as the book build sets it up (cwd = the chapter's
folder, ``GRADBOOK_BUILD=1``, TensorFlow quiet, inline matplotlib):

1. **restart and run all**: every cell runs in order in the fresh kernel
   (cells tagged ``raises-exception`` may raise, no other);
2. **determinism**: the outputs of that run equal the outputs the book build
   recorded (its execution cache, ``_build/.jupyter_cache``), number for number.  Timing
   figures are the only allowed difference, and they carry a mark: the
   ``[12.3 s]`` that :func:`gradlib.progress` prints (``TIMING`` below), so
   they are blanked before comparing.  Images are compared byte for byte;
3. **run all again**: every cell runs a second time in the same kernel, as
   when a student presses "Run all" twice, and none may raise (again except
   ``raises-exception`` cells).

Usage::

    python tools/reliability.py [CHAPTER.md ...]   # default: every chapter; exit 1 on a problem
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import os
import re
import sys
from pathlib import Path
from typing import List, Sequence, Tuple

if __package__ in (None, ""):  # run as a script: python tools/reliability.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tools.bench import kernel_env  # noqa: E402  (the environment the build gives every kernel)
from tools.notebooks import ROOT, md_sources as chapter_sources  # noqa: E402

CELL_TIMEOUT_S = 600
# The mark of a timing figure: gradlib.progress ends its bar with "[12.3 s]".
TIMING = re.compile(r"\[\d+(?:\.\d+)? s\]")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
TEXT_TYPES = ("text/plain", "text/markdown", "text/html", "text/latex", "image/svg+xml", "application/json")

Output = Tuple[int, str]  # (code cell number, one normalised output)


def built_notebook(md: Path, root: Path = ROOT):
    """The executed notebook the book build recorded for ``md`` (its execution
    cache, keyed on the code cells), or None when the build has none."""
    import jupytext
    from jupyter_cache import get_cache

    try:
        return get_cache(str(root / "_build" / ".jupyter_cache")).merge_match_into_notebook(jupytext.read(md))[1]
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


def _allowed_to_raise(cell) -> bool:
    return "raises-exception" in cell.get("metadata", {}).get("tags", [])


def run_twice(nb, cwd: Path, *, timeout: int = CELL_TIMEOUT_S) -> Tuple[object, List[str]]:
    """Run every cell of ``nb`` in a fresh kernel, then every cell again in the
    same kernel.  Returns the notebook as it was after the first pass and the
    problems (a cell that raised, in which pass)."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb = copy.deepcopy(nb)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(cwd)}})
    env = kernel_env()
    problems: List[str] = []
    first = None
    code = [(index, cell) for index, cell in enumerate(nb.cells) if cell.cell_type == "code"]
    with open(os.devnull, "w") as quiet, client.setup_kernel(env=env, cwd=str(cwd), stdout=quiet, stderr=quiet):
        for run in ("restart and run all", "run all again"):
            for number, (index, cell) in enumerate(code):
                try:
                    client.execute_cell(cell, index)
                except CellExecutionError as err:
                    lines = [l for l in ANSI.sub("", str(err)).strip().splitlines() if l.strip()]
                    problems.append(f"{run}: code cell {number} raised: {_short(lines[-1] if lines else '?')}")
                    break
            if first is None:
                first = copy.deepcopy(nb)
            if problems:
                break
    return first, problems


def check_chapter(md: Path, reference=None) -> List[str]:
    """Every reliability problem of one chapter (empty when none).

    ``reference`` is an executed notebook to compare with (default: the one
    the book build recorded in its execution cache)."""
    import jupytext

    md = Path(md)
    built = reference if reference is not None else built_notebook(md)
    if built is None:
        return [f"{md}: the book build has no executed copy of the current code: build the book first (make book)"]
    first, problems = run_twice(jupytext.read(md), md.parent)
    if not any(p.startswith("restart and run all") for p in problems):
        problems += differences(normalised_outputs(built), normalised_outputs(first))
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chapters", nargs="*", type=Path, help="default: every chapters/{en,zh}/*.md")
    args = parser.parse_args(argv)
    failed = 0
    for md in args.chapters or chapter_sources(ROOT):
        problems = check_chapter(md)
        failed += bool(problems)
        print(f"{md}: " + ("ok" if not problems else "\n  ".join(["FAILED", *problems])), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
