"""`make test` relies on pytest-xdist's ``--dist loadgroup``: the tests of one
``xdist_group`` run on one worker, so that a module's expensive fixture (the
Colab simulation, the Lighthouse measurement) runs once.  With pytest 9.2 and
pytest-xdist 3.8 the group silently stops working (xdist writes the group into
an attribute pytest no longer reads) and each worker repeats the fixture; in
one environment both Colab simulations then uninstalled gradlib under each
other.  This runs a small suite the way `make test` does and checks."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

SUITE = textwrap.dedent('''
    import os, time
    import pytest

    @pytest.fixture(scope="module")
    def expensive():
        with open(os.environ["SETUPS"], "a") as log:
            log.write(os.environ.get("PYTEST_XDIST_WORKER", "-") + "\\n")

    @pytest.mark.xdist_group("one")
    @pytest.mark.parametrize("n", range(6))
    def test_grouped(expensive, n):
        time.sleep(0.1)

    @pytest.mark.parametrize("m", range(12))
    def test_free(m):
        time.sleep(0.05)
''')


@pytest.mark.slow
def test_a_group_runs_on_one_worker_and_its_module_fixture_once(tmp_path):
    (tmp_path / "test_suite.py").write_text(SUITE, encoding="utf-8")
    setups = tmp_path / "setups.txt"
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2",
                          "--dist", "loadgroup", "-c", "/dev/null", "--rootdir", str(tmp_path), str(tmp_path)],
                         capture_output=True, text=True, cwd=tmp_path, env={**os.environ, "SETUPS": str(setups)})
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    workers = setups.read_text().split()
    assert len(workers) == 1, f"the group's module fixture ran on {workers}: --dist loadgroup does not group"
