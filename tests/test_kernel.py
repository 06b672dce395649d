"""gradlib/book/kernel.py: the one kernel environment and the one notebook runner."""

import json
import subprocess
import sys

import nbformat
import pytest

from gradlib.book import kernel

SPEC = json.loads(kernel.SPEC_FILE.read_text(encoding="utf-8"))


def notebook(*sources, tags=None):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    tags = tags or {}
    nb.cells = [nbformat.v4.new_code_cell(src, metadata={"tags": tags[i]} if i in tags else {})
                for i, src in enumerate(sources)]
    return nb


@pytest.mark.parametrize("mode", sorted(SPEC["modes"]))
def test_every_mode_sets_the_quiet_variables_and_its_own(mode):
    base = {"PATH": "/bin", "GRADBOOK_BUILD": "1", "PYTHONPATH": "/src", "TF_NUM_INTRAOP_THREADS": "8"}
    env = kernel.kernel_env(mode, base)
    for key, value in {**SPEC["quiet"], **SPEC["modes"][mode]["set"]}.items():
        assert env[key] == value, (mode, key)
    for key in SPEC["modes"][mode]["drop"]:
        assert key not in env, (mode, key)
    assert env["PATH"] == "/bin"
    assert base["TF_NUM_INTRAOP_THREADS"] == "8"  # the caller's mapping is not modified


def test_the_modes_differ_where_they_must():
    assert kernel.kernel_env("build", {})["GRADBOOK_BUILD"] == "1"
    for mode in ("colab", "grade", "test"):
        assert "GRADBOOK_BUILD" not in kernel.kernel_env(mode, {"GRADBOOK_BUILD": "1"})
    assert "PYTHONPATH" not in kernel.kernel_env("colab", {"PYTHONPATH": "/checkout"})
    assert kernel.kernel_env("grade", {})["MPLBACKEND"] == "Agg"
    assert kernel.modes() == ["build", "colab", "grade", "test"]


def test_an_unknown_mode_is_refused_by_name():
    with pytest.raises(ValueError, match=r"mode must be one of \['build', 'colab', 'grade', 'test'\], not 'colab2'"):
        kernel.kernel_env("colab2")


def test_the_module_loads_by_path_without_tensorflow_or_gradlib(repo_root):
    code = (
        "import importlib.util, os, sys\n"
        f"spec = importlib.util.spec_from_file_location('k', {str(kernel.__file__)!r})\n"
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
        "os.environ['GRADBOOK_BUILD'] = '1'; m.apply('test')\n"
        "print(sorted(n for n in sys.modules if n.split('.')[0] in ('tensorflow', 'gradlib', 'numpy')),"
        " os.environ['TF_CPP_MIN_LOG_LEVEL'], 'GRADBOOK_BUILD' in os.environ)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[] 2 False"


def test_a_notebook_runs_in_the_environment_it_is_given(tmp_path):
    nb = notebook("import os; print(os.environ['TF_NUM_INTRAOP_THREADS'], os.environ.get('GRADBOOK_BUILD'), os.getcwd())",
                  "x = 40 + 2\nx")
    run = kernel.run_notebook(nb, cwd=tmp_path, env=kernel.kernel_env("build"))
    assert run.ok and run.error is None
    assert run.notebook.cells[0].outputs[0]["text"].split() == ["1", "1", str(tmp_path)]
    assert run.notebook.cells[1].outputs[0]["data"]["text/plain"] == "42"
    assert nb.cells[1].outputs == []  # the caller's notebook is not executed in place
    assert run.seconds > 0


def test_the_first_raising_cell_stops_the_run_and_is_named(tmp_path):
    nb = notebook("a = 1", "raise RuntimeError('expected')", "1 / 0", "print('never')", tags={1: ["raises-exception"]})
    run = kernel.run_notebook(nb, cwd=tmp_path)
    assert run.error == "restart and run all: code cell 2 raised: ZeroDivisionError: division by zero"
    assert not run.ok
    assert run.notebook.cells[3].outputs == []


def test_a_second_pass_catches_a_cell_that_fails_on_rerun(tmp_path):
    nb = notebook("state = globals().setdefault('state', [])\nstate.append(1)", "assert len(state) == 1, 'ran twice'")
    assert kernel.run_notebook(nb, cwd=tmp_path).ok
    run = kernel.run_notebook(nb, cwd=tmp_path, passes=2)
    assert run.error == "run all again: code cell 1 raised: AssertionError: ran twice"
    assert run.notebook.cells[1].outputs == []  # the first pass's outputs: the assert passed there


def test_a_cell_past_its_timeout_and_a_dead_kernel_are_reported(tmp_path):
    run = kernel.run_notebook(notebook("import time; time.sleep(30)"), cwd=tmp_path, timeout=1)
    assert run.error == "restart and run all: code cell 0 ran longer than 1 s"
    run = kernel.run_notebook(notebook("import os; os._exit(3)"), cwd=tmp_path, timeout=30)
    assert run.error == "restart and run all: the kernel died in code cell 0"


@pytest.mark.parametrize("passes", [0, 3, "2"])
def test_passes_must_be_one_or_two(tmp_path, passes):
    with pytest.raises(ValueError, match="passes must be 1 or 2"):
        kernel.run_notebook(notebook("1"), cwd=tmp_path, passes=passes)
