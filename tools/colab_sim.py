"""Run every chapter notebook the way Colab does, on the oldest supported TensorFlow.

Run this with the Python of an environment shaped like Colab's
(``.venv-colab``, made by ``make colab-env`` from ``requirements/colab.txt``):
TensorFlow 2.19 and the notebook packages Colab ships, but no gradlib.  For
every ``chapters/{en,zh}/*.ipynb`` twin it

1. uninstalls gradlib, so each notebook starts from an environment without it;
2. copies the notebook alone into an empty folder (Colab has no checkout
   beside the notebook) and executes it there in a fresh kernel of this
   Python, with ``GRADBOOK_INSTALL_SOURCE`` pointing at a copy of the local
   checkout's package sources: the notebook's own first cell installs gradlib
   from it with pip, exactly as it installs from GitHub on Colab;
3. appends one cell that reports which TensorFlow ran and where gradlib was
   imported from, and fails the notebook unless gradlib came from the
   installed package and TensorFlow is still the one the environment had;
4. compares ``pip freeze`` before and after: installing gradlib must not
   install, upgrade or downgrade anything else (Colab's TensorFlow, NumPy,
   ipywidgets... are used as they are).

Prints one line per notebook and, with ``--json FILE``, writes the results;
exits 1 if any notebook failed.  Only the standard library, nbformat and
nbclient are imported here, so the script runs in that bare environment.

Usage::

    .venv-colab/bin/python tools/colab_sim.py [--json results.json] [NOTEBOOK ...]
"""

from __future__ import annotations

import argparse
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

ROOT = Path(__file__).resolve().parent.parent
MARKER = "GRADBOOK-COLAB-CHECK "
# What a reader's Colab runtime reports, checked after the chapter's cells.
REPORT_CELL = f"""\
import json, tensorflow as tf, gradlib
print({MARKER!r} + json.dumps({{"tensorflow": tf.__version__, "gradlib": gradlib.__file__}}))
"""
PACKAGE_FILES = ("pyproject.toml", "README.md")


def notebooks(root: Path = ROOT) -> List[Path]:
    """Every chapter's ``.ipynb`` twin, English first."""
    return [nb for lang in ("en", "zh") for nb in sorted((root / "chapters" / lang).glob("*.ipynb"))]


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
    return subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True)


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
    """The kernel's environment: this Python first on PATH, no path into the
    checkout, and the install source overridden."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "GRADBOOK_BUILD")}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["GRADBOOK_INSTALL_SOURCE"] = str(source)
    env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"  # ipykernel 6's debugger notice
    env["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"  # as on Colab
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
    import nbclient
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
        client = nbclient.NotebookClient(nb, timeout=timeout, kernel_name="python3",
                                         resources={"metadata": {"path": workdir}})
        log = Path(workdir) / "kernel-stderr.log"  # TensorFlow's start-up notices go here
        try:
            with log.open("w") as stderr:
                client.execute(cwd=workdir, env=kernel_env(source), stdout=stderr, stderr=stderr)
        except nbclient.exceptions.CellExecutionError as err:
            last = re.sub(r"\x1b\[[0-9;]*m", "", str(err)).strip().splitlines()[-1]  # no terminal colours
            result["problems"].append(f"a cell raised: {last[:400]}")
        except Exception as err:  # a timeout or a dead kernel: still one result line
            tail = log.read_text(errors="replace")[-400:] if log.exists() else ""
            result["problems"].append(f"{type(err).__name__}: {str(err)[:400]} (kernel stderr: {tail})")
    report = None if result["problems"] else report_of(nb)
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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: every chapters/{en,zh}/*.ipynb")
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per cell")
    args = parser.parse_args(argv)
    paths = [p.resolve() for p in args.notebooks] or notebooks()
    if not paths:
        print("no notebooks found", file=sys.stderr)
        return 1
    results = []
    with tempfile.TemporaryDirectory(prefix="gradlib-src-") as tmp:
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
    sys.exit(main())
