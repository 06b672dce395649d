"""Run every chapter notebook the way Colab does, on the oldest supported TensorFlow.

Run this with the Python of an environment shaped like Colab's
(``.venv-colab``, made by ``make colab-env`` from ``requirements/colab.txt``):
TensorFlow 2.19 and the notebook packages Colab ships, but no gradlib.  For
every page's ``.ipynb`` twin (``tools.book.pages``) it

1. uninstalls gradlib, so each notebook starts from an environment without it;
2. copies the notebook alone into an empty folder (Colab has no checkout
   beside the notebook) and executes it there in a fresh kernel of this
   Python, with ``GRADBOOK_INSTALL_SOURCE`` pointing at a copy of the local
   checkout's package sources: the notebook's install cell (generated into
   the twin by ``tools/notebooks.py``) installs gradlib from it with pip,
   exactly as it installs from GitHub on Colab;
3. appends one cell that reports which TensorFlow ran and where gradlib was
   imported from, and fails the notebook unless gradlib came from the
   installed package and TensorFlow is still the one the environment had;
4. compares ``pip freeze`` before and after: installing gradlib must not
   install, upgrade or downgrade anything else (Colab's TensorFlow, NumPy,
   ipywidgets... are used as they are).

(``make test`` simulates one twin of each page, ``tools.book.one_twin_each``:
the reliability gate runs the other, and the build executes both.)

Prints one line per notebook and, with ``--json FILE``, writes the results;
exits 1 if any notebook failed.  Only the standard library, PyYAML (for
``_toc.yml``), nbformat and nbclient are imported here, so the script runs in
that bare environment; the kernel runs through ``gradlib/book/kernel.py``
(mode ``colab``), loaded by path.

Usage (from the repository root)::

    .venv-colab/bin/python -m tools.colab_sim [--json results.json] [NOTEBOOK ...]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional

from tools import book
from tools.book import ROOT

MARKER = "GRADBOOK-COLAB-CHECK "
# What a reader's Colab runtime reports, checked after the chapter's cells.
REPORT_CELL = f"""\
import json, tensorflow as tf, gradlib
print({MARKER!r} + json.dumps({{"tensorflow": tf.__version__, "gradlib": gradlib.__file__}}))
"""
PACKAGE_FILES = ("pyproject.toml", "README.md")


def notebooks(root: Path = ROOT) -> List[Path]:
    """Every page's ``.ipynb`` twin, in toc order (English first)."""
    return [md.with_suffix(".ipynb") for md in book.pages(root=root)]


def package_copy(dest: Path, root: Path = ROOT) -> Path:
    """Copy what pip needs to build gradlib from the checkout (the working
    tree, uncommitted edits included) into ``dest``; keeps the checkout free
    of build folders."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in PACKAGE_FILES:
        shutil.copy2(root / name, dest / name)
    shutil.copytree(root / "gradlib", dest / "gradlib",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return dest


def _pip(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # see the installed packages only
    return subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True, env=env)


def frozen() -> Dict[str, str]:
    """``{name: version}`` of every installed distribution but gradlib."""
    lines = _pip("freeze", "--all").stdout.splitlines()
    pairs = (line.split("==", 1) for line in lines if "==" in line)
    found = {re.sub(r"[-_.]+", "-", name).lower(): version for name, version in pairs}
    found.pop("gradlib", None)
    return found


def changes(before: Dict[str, str], after: Dict[str, str]) -> List[str]:
    """What installing gradlib did to the other packages, as readable lines."""
    found = []
    for name in sorted(set(before) | set(after)):
        old, new = before.get(name), after.get(name)
        if old != new:
            found.append(f"{name}: {old or 'absent'} -> {new or 'removed'}")
    return found


def kernel_env(source: Path) -> Dict[str, str]:
    """The kernel's environment: ``kernel_env("colab")`` (no path into the
    checkout, Colab's matplotlib backend), this Python first on PATH, and the
    install source overridden."""
    env = book.kernel().kernel_env("colab")
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["GRADBOOK_INSTALL_SOURCE"] = str(source)
    return env


def report_of(nb) -> Optional[dict]:
    """The JSON the report cell printed, or None."""
    for output in nb.cells[-1].get("outputs", []):
        if output.get("output_type") == "stream":
            for line in output.get("text", "").splitlines():
                if line.startswith(MARKER):
                    return json.loads(line[len(MARKER):])
    return None


def run_notebook(path: Path, source: Path, *, timeout: int = 600) -> dict:
    """Execute one notebook as on Colab; the result's ``problems`` is empty on success."""
    import nbformat

    start = time.perf_counter()
    result = {"notebook": path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path),
              "problems": []}
    uninstall = _pip("uninstall", "--yes", "gradlib")
    if uninstall.returncode != 0:
        result["problems"].append(f"could not uninstall gradlib: {uninstall.stderr.strip()[-300:]}")
        return result
    before = frozen()
    with tempfile.TemporaryDirectory(prefix="colab-") as workdir:
        nb = nbformat.read(path, as_version=4)
        nb.cells.append(nbformat.v4.new_code_cell(REPORT_CELL))
        run = book.kernel().run_notebook(nb, cwd=workdir, env=kernel_env(source), timeout=timeout)
        if run.error:
            tail = f" (kernel stderr: {run.kernel_output[-400:]})" if "raised" not in run.error else ""
            result["problems"].append(run.error[:400] + tail)
    report = None if result["problems"] else report_of(run.notebook)
    if report is not None:
        result.update(report)
        imported = Path(report["gradlib"]).resolve()
        if any(folder in imported.parents for folder in (source.resolve(), ROOT / "gradlib")):
            result["problems"].append(f"gradlib was imported from the sources, not the installed package: {report['gradlib']}")
    elif not result["problems"]:
        result["problems"].append("the report cell printed nothing")
    expected_tf = before.get("tensorflow-cpu") or before.get("tensorflow")
    if report is not None and report["tensorflow"] != expected_tf:
        result["problems"].append(f"TensorFlow {report['tensorflow']} ran, not the environment's {expected_tf}")
    result["changed"] = changes(before, frozen())
    if result["changed"]:
        result["problems"].append("installing gradlib changed other packages: " + "; ".join(result["changed"]))
    result["seconds"] = round(time.perf_counter() - start, 1)
    return result


LOCK = ".gradbook-colab-sim.lock"


@contextlib.contextmanager
def _exclusive(path: Path):
    """Hold an exclusive lock on ``path`` (POSIX ``flock``) while the body runs.

    Each notebook starts by uninstalling gradlib from this environment and
    installs it again: two simulations at once in one environment would pull
    the package from under each other's kernels (``No module named
    'gradlib.classroom'``).  That happens when a test worker dies and its
    simulation goes on as an orphan while the replacement starts another: the
    second now waits for the first."""
    import fcntl

    with open(path, "w", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: every page's twin")
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per cell")
    args = parser.parse_args(argv)
    paths = [p.resolve() for p in args.notebooks] or notebooks()
    if not paths:
        print("no notebooks found", file=sys.stderr)
        return 1
    results = []
    with _exclusive(Path(sys.prefix) / LOCK), tempfile.TemporaryDirectory(prefix="gradlib-src-") as tmp:
        source = package_copy(Path(tmp) / "gradlib-src")
        for path in paths:
            result = run_notebook(path, source, timeout=args.timeout)
            results.append(result)
            verdict = "ok" if not result["problems"] else "FAILED: " + " | ".join(result["problems"])
            print(f"{result['notebook']}: TensorFlow {result.get('tensorflow', '?')}, "
                  f"{result.get('seconds', 0):.0f} s, {verdict}", flush=True)
        _pip("uninstall", "--yes", "gradlib")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, ensure_ascii=False), encoding="utf-8")
    failed = sum(bool(r["problems"]) for r in results)
    print(f"{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
