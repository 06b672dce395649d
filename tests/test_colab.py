"""Colab wiring: one source of truth (_config.yml) for install cells and launch links,
and the simulated Colab run.  (The install cell in the twins: test_notebooks.py.)"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import nbformat
import pytest
from bs4 import BeautifulSoup

from tools import book, colab_sim

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"


def test_install_cell_does_nothing_off_colab_and_installs_the_override(tmp_path, monkeypatch):
    cell = book.install_cell("en", ROOT)
    calls = []
    monkeypatch.setattr(subprocess, "run", lambda args, check: calls.append(args))
    monkeypatch.delenv("GRADBOOK_INSTALL_SOURCE", raising=False)
    exec(cell, {})
    assert calls == []  # not on Colab: nothing happens
    monkeypatch.setenv("GRADBOOK_INSTALL_SOURCE", str(tmp_path))
    exec(cell, {})
    assert calls and calls[0][-1] == str(tmp_path) and calls[0][1:4] == ["-m", "pip", "install"]


@pytest.mark.site
@pytest.mark.parametrize("lang", book.languages())
def test_every_chapter_page_links_to_its_notebook_on_colab(lang):
    if not (HTML / "index.html").is_file():
        pytest.fail(f"{HTML} has no built site: run `make book` first")
    tracked = set(subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split())
    for md in book.pages(lang, ROOT):
        page = BeautifulSoup((HTML / book.site_path(md, ROOT)).read_text(encoding="utf-8"), "html.parser")
        links = {a["href"] for a in page.select("a[href]") if "colab.research.google.com" in a["href"]}
        assert links == {book.colab_url(md, ROOT)}, (md.name, links)
        target = re.sub(r"^.*/blob/[^/]+/", "", next(iter(links)))
        assert target in tracked and (ROOT / target).is_file(), f"{target} is not in the repository"


# -- the simulated Colab run (TensorFlow 2.19, no gradlib until the notebook installs it) --

COLAB_PYTHON = ROOT / ".venv-colab" / "bin" / "python"


def _simulate(tmp_path, *notebooks):
    if not COLAB_PYTHON.is_file():
        pytest.fail(f"{COLAB_PYTHON} is missing: run `make colab-env` (make test does)")
    out = tmp_path / "results.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT))  # `tools` importable; the kernels drop it (mode colab)
    run = subprocess.run([str(COLAB_PYTHON), "-m", "tools.colab_sim", "--json", str(out),
                          *map(str, notebooks)], capture_output=True, text=True, cwd=tmp_path, env=env)
    results = json.loads(out.read_text(encoding="utf-8")) if out.is_file() else []
    return run, results


def test_one_simulation_at_a_time_per_environment(tmp_path):
    """A second simulation in the same environment waits for the first
    (tools/colab_sim.py: _exclusive), instead of uninstalling gradlib under it."""
    import sys

    lock = tmp_path / colab_sim.LOCK
    probe = [sys.executable, "-c", "import fcntl, sys; f = open(sys.argv[1], 'w');"
             " fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)", str(lock)]
    with colab_sim._exclusive(lock):
        held = subprocess.run(probe, capture_output=True, text=True)
    assert held.returncode != 0 and "BlockingIOError" in held.stderr, held
    free = subprocess.run(probe, capture_output=True, text=True)
    assert free.returncode == 0, free.stderr


# One twin of each page (book.one_twin_each: the reliability gate runs the other).
SIMULATED = [md.with_suffix(".ipynb") for md in book.one_twin_each(1, ROOT)]


@pytest.fixture(scope="module")
def colab_results(tmp_path_factory):
    run, results = _simulate(tmp_path_factory.mktemp("colab"), *SIMULATED)
    assert results, run.stdout[-2000:] + run.stderr[-2000:]
    return {r["notebook"]: r for r in results}


@pytest.mark.colab
@pytest.mark.xdist_group("colab")  # one simulation (colab_results) for every notebook: one worker
@pytest.mark.parametrize("notebook", [p.relative_to(ROOT).as_posix() for p in SIMULATED])
def test_notebook_runs_as_on_colab(colab_results, notebook, record_property):
    result = colab_results[notebook]
    record_property("seconds", result.get("seconds"))
    assert result["problems"] == [], result["problems"]
    assert result["tensorflow"].startswith("2.19."), result  # the oldest supported release
    assert "site-packages" in result["gradlib"], result  # installed by the notebook's first cell


@pytest.mark.colab
@pytest.mark.xdist_group("colab")  # the same environment as the whole run: after it, not waiting for its lock
def test_simulation_fails_a_notebook_without_the_install_cell(tmp_path):
    source = ROOT / "chapters" / "en" / "index.ipynb"
    nb = nbformat.read(source, as_version=4)
    assert sum(map(book.is_install_cell, nb.cells)) == 1
    nb.cells = [c for c in nb.cells if not book.is_install_cell(c)]
    broken = tmp_path / "no_install.ipynb"
    nbformat.write(nb, broken)
    run, results = _simulate(tmp_path, broken)
    assert run.returncode == 1 and len(results) == 1
    assert "ModuleNotFoundError" in results[0]["problems"][0], results


def test_package_changes_are_reported():
    before = {"tensorflow-cpu": "2.19.0", "ipywidgets": "7.7.1", "numpy": "2.0.2"}
    after = {"tensorflow-cpu": "2.19.0", "ipywidgets": "8.1.9", "comm": "0.2.3", "numpy": "2.0.2"}
    assert colab_sim.changes(before, after) == ["comm: absent -> 0.2.3", "ipywidgets: 7.7.1 -> 8.1.9"]
    assert colab_sim.changes(before, dict(before)) == []


def test_first_code_cell_of_every_notebook_is_the_install_cell():
    assert colab_sim.notebooks(ROOT) == [md.with_suffix(".ipynb") for md in book.pages(root=ROOT)]
    for path in colab_sim.notebooks(ROOT):
        nb = nbformat.read(path, as_version=4)
        first = next(c for c in nb.cells if c.cell_type == "code")
        assert book.is_install_cell(first) and first.source == book.install_cell(path.parent.name, ROOT), path


def test_the_kernel_environment_is_colab_s_with_the_install_source(tmp_path):
    env = colab_sim.kernel_env(tmp_path)
    assert env["GRADBOOK_INSTALL_SOURCE"] == str(tmp_path)
    assert "PYTHONPATH" not in env and "GRADBOOK_BUILD" not in env
    colab = book.kernel().kernel_env("colab")
    assert {k: env[k] for k in colab if k != "PATH"} == {k: v for k, v in colab.items() if k != "PATH"}
