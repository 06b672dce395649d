"""Execute the book's pages on every core before ``jupyter-book build`` reads them.

The build executes a page only when its execution cache (``_build/.jupyter_cache``,
keyed on the page's code cells) has no record of it, one page after the other.
This runs the pages that lack a record in parallel (one kernel per core) and
records them, exactly as the build would have: the same function
(``jupyter_cache``'s ``single_nb_execution``, the one myst-nb's cache mode
calls), the same working directory (the page's folder), the same kernel
environment (``kernel_env("build")``), the same cell timeout
(``_config.yml``'s ``execute.timeout``), errors only in cells tagged
``raises-exception``.  The build then takes every output from the cache.

Pages the build executes every time (``execution_mode: force``) are left to it.
A page that fails here is reported and left to the build, which fails on it
with its usual message.

Usage: ``python -m tools.prebuild [--jobs N] [PAGE.md ...]`` (default: every page).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

from tools import book
from tools.book import ROOT

CACHE = ROOT / "_build" / ".jupyter_cache"


def timeout(root: Path = ROOT) -> int:
    return int((book._yaml(Path(root) / "_config.yml").get("execute") or {}).get("timeout", 600))


def uncached(pages: Sequence[Path], cache_dir: Path = CACHE) -> List[Path]:
    """The ``pages`` the build would execute: not ``force``d, with no cache record; costliest first
    (by source size: the pages with long trainings are the long ones)."""
    from jupyter_cache import get_cache

    cache = get_cache(str(cache_dir))
    todo = []
    for md in pages:
        if book.execution_mode(md) not in ("cache", "auto"):
            continue
        try:
            cache.match_cache_notebook(book.read_notebook(md))
        except KeyError:
            todo.append(Path(md))
    return sorted(todo, key=lambda md: -md.stat().st_size)


def _execute(md: str, seconds: int) -> Tuple[str, Optional[str], float, Optional[str]]:
    """Run one page in a fresh kernel (in a worker process): ``(md, notebook JSON, seconds, error)``."""
    import nbformat
    from jupyter_cache.executors.utils import single_nb_execution

    nb = book.read_notebook(Path(md))
    result = single_nb_execution(nb, cwd=str(Path(md).parent), timeout=seconds, allow_errors=False)
    if result.err is not None:
        return md, None, result.time, f"{type(result.err).__name__}: {str(result.err).strip()[-1500:]}"
    return md, nbformat.writes(result.nb), result.time, None


def prebuild(pages: Sequence[Path], jobs: int, cache_dir: Path = CACHE) -> List[str]:
    """Execute and record the :func:`uncached` ``pages``, ``jobs`` at a time; returns the failures."""
    import nbformat
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    todo = uncached(pages, cache_dir)
    if not todo:
        print("prebuild: every page is in the execution cache")
        return []
    book.kernel().apply("build")  # the worker processes and their kernels inherit it
    print(f"prebuild: executing {len(todo)} pages, {jobs} at a time", flush=True)
    cache, failures, started = get_cache(str(cache_dir)), [], time.perf_counter()
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(_execute, str(md), timeout()) for md in todo]
        for future in as_completed(futures):
            md, text, seconds, error = future.result()
            name = Path(md).relative_to(ROOT).as_posix()
            if error:
                failures.append(f"{name}: {error}")
                print(f"prebuild: {name} FAILED after {seconds:.0f} s (the build will run it again and report it)",
                      flush=True)
                continue
            cache.cache_notebook_bundle(CacheBundleIn(nbformat.reads(text, as_version=4), md,
                                                      data={"execution_seconds": seconds}),
                                        check_validity=False, overwrite=True)
            print(f"prebuild: {name} in {seconds:.0f} s", flush=True)
    print(f"prebuild: done in {time.perf_counter() - started:.0f} s", flush=True)
    return failures


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pages", nargs="*", type=Path, help="pages to execute (default: every page)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="kernels at a time (default: cores)")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    pages = [p.resolve() for p in args.pages] or book.pages()
    failures = prebuild(pages, args.jobs)
    for failure in failures:
        print(f"prebuild: {failure}", file=sys.stderr)
    return 0  # the build reports failing pages itself


if __name__ == "__main__":
    sys.exit(main())
