"""The package's shape: what ``import gradlib`` loads, the lazy names, the TensorFlow gate."""

import json
import os
import subprocess
import sys
import warnings

import pytest

import gradlib
from gradlib import _compat

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PROBE = """
import json, sys
import gradlib
loaded = sorted(m for m in sys.modules if m == "gradlib" or m.startswith("gradlib."))
listed = dir(gradlib)
resolved = {name: type(getattr(gradlib, name)).__name__ for name in gradlib.__all__}
import gradlib.explorer as explorer_module, gradlib.autodiff as autodiff_module
import gradlib.book.progress as progress_module
print(json.dumps({"loaded": loaded, "listed": listed, "resolved": resolved,
                  "after": sorted(m for m in sys.modules if m.startswith("gradlib.")),
                  "modules": [type(m).__name__ for m in (explorer_module, autodiff_module, progress_module)],
                  "functions": [type(f).__name__ for f in (gradlib.explore, gradlib.curves, gradlib.progress)]}))
"""

LAZY_PREFIXES = ("gradlib.book", "gradlib.classroom", "gradlib.dann", "gradlib.data", "gradlib.experiments",
                 "gradlib.exercises", "gradlib.grade")


@pytest.fixture(scope="module")
def fresh():
    """What a fresh interpreter sees (this process has imported everything already)."""
    env = {**os.environ, "PYTHONPATH": ROOT}
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_import_gradlib_loads_the_gradient_tools_only(fresh):
    eager = [m for m in fresh["loaded"] if m.startswith(LAZY_PREFIXES)]
    assert eager == [], f"`import gradlib` loaded {eager}"
    for module in ("gradlib.ste", "gradlib.reversal", "gradlib.tricks", "gradlib.checks", "gradlib.graph",
                   "gradlib.autodiff", "gradlib.explorer", "gradlib.logs"):
        assert module in fresh["loaded"]
    assert "gradlib.book.kernel" not in fresh["after"]  # not even after every name was used


def test_every_public_name_resolves_and_is_listed(fresh):
    assert sorted(fresh["resolved"]) == sorted(gradlib.__all__)
    assert set(gradlib.__all__) <= set(fresh["listed"])
    assert fresh["resolved"]["exercises"] == fresh["resolved"]["dann"] == "module"
    assert fresh["resolved"]["progress"] == fresh["resolved"]["glue"] == "function"
    assert "gradlib.classroom.exercises" in fresh["after"] and "gradlib.book.tables" in fresh["after"]


def test_no_function_shadows_its_module(fresh):
    assert fresh["modules"] == ["module"] * 3
    assert fresh["functions"] == ["function"] * 3


def test_lazy_names_are_the_objects_of_their_modules():
    from gradlib.book import benchmarks, progress, tables
    from gradlib.classroom import exercises

    assert gradlib.progress is progress.progress
    assert gradlib.glue is tables.glue and gradlib.markdown_table is tables.markdown_table
    assert gradlib.benchmarks is benchmarks and gradlib.exercises is exercises
    with pytest.raises(AttributeError, match="no attribute 'banana'"):
        gradlib.banana  # noqa: B018


def test_version_is_the_installed_metadata():
    from importlib import metadata

    try:
        installed = metadata.version("gradlib")
    except metadata.PackageNotFoundError:  # a checkout on PYTHONPATH, never installed (make test's TF 2.19 pass)
        installed = "0+unknown"
    assert gradlib.__version__ == installed


# -- the TensorFlow version gate ---------------------------------------------------------------

@pytest.mark.parametrize("version", ["2.18.1", "2.9.0", "1.15.5", "0.12.0"])
def test_older_versions_raise_naming_the_range(version):
    with pytest.raises(ImportError, match=r"2\.19 to 2\.21.*" + version.replace(".", r"\.")):
        _compat.check_version(version)


@pytest.mark.parametrize("version", ["2.22.0", "2.30.0rc0", "3.0.0", "10.1.0"])
def test_newer_versions_warn_naming_both(version):
    with pytest.warns(gradlib.UntestedTensorFlowWarning, match=r"up to 2\.21.*" + version.replace(".", r"\.")):
        _compat.check_version(version)
    assert issubclass(gradlib.UntestedTensorFlowWarning, UserWarning)


@pytest.mark.parametrize("version", ["nightly", "", "2", "v2.21"])
def test_an_unreadable_version_warns(version):
    with pytest.warns(gradlib.UntestedTensorFlowWarning, match="could not read the TensorFlow version"):
        _compat.check_version(version)


@pytest.fixture
def packages(tmp_path, monkeypatch):
    """Installs fake packages on disk, as pip does (``name-version.dist-info`` with its top-level
    modules), in a folder that is all importlib.metadata searches during the test, on a Linux x86-64
    machine whatever machine runs the test."""
    import platform

    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(platform, "machine", lambda: "x86_64")
    monkeypatch.setattr(sys, "executable", "")  # the advice then says plain `pip` (tested on its own below)

    def install(name, version, module=True, top_level=True, folder=tmp_path):
        info = folder / f"{name.replace('-', '_')}-{version}.dist-info"
        info.mkdir(parents=True)
        info.joinpath("METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        files = ["tensorflow/__init__.py"] if module else []
        info.joinpath("RECORD").write_text("".join(f"{f},,\n" for f in [*files, f"{info.name}/METADATA"]))
        if top_level:  # a wrapper holds no module: an empty top_level.txt and only its .dist-info files
            info.joinpath("top_level.txt").write_text("tensorflow\n" if module else "")
        return info
    return install


@pytest.mark.parametrize("version", ["2.19.0", "2.20.1", "2.21.0", "2.21.0rc1", "2.21.5"])
@pytest.mark.parametrize("name", ["tensorflow", "tensorflow-cpu"])
def test_one_tensorflow_in_the_range_passes_quietly(packages, name, version):
    packages(name, version)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _compat.check_version(version)


@pytest.mark.parametrize("name", ["tensorflow", "tensorflow-cpu"])
def test_the_advice_names_the_tensorflow_distribution_that_is_installed(packages, name):
    """pip must be told the installed name: `tensorflow-cpu` beside `tensorflow` would be a second TensorFlow."""
    packages(name, "2.18.0")
    assert _compat.distribution() == name and _compat.module_owners() == [name]
    with pytest.raises(ImportError, match=f'pip install "{name}==2.21.\\*"`, then restart the kernel') as raised:
        _compat.check_version("2.18.0")
    assert "uninstall" not in str(raised.value)  # nothing to remove: the install replaces the module
    with pytest.warns(gradlib.UntestedTensorFlowWarning, match=f'pip install "{name}==2.21.\\*"'):
        _compat.check_version("2.22.0")


@pytest.mark.parametrize("wrapper, holder", [("tensorflow", "tensorflow-intel"), ("tensorflow-cpu", "tensorflow-intel"),
                                             ("tensorflow", "tensorflow-macos"), ("tensorflow", "tensorflow-cpu-aws")])
def test_the_advice_removes_a_split_tensorflow_first(packages, wrapper, holder):
    """Windows (up to 2.18.0), macOS on Apple silicon and Linux ARM64 (up to 2.15) installed a wrapper
    without the module plus the package holding it: an install on top would mix two releases' files."""
    packages(wrapper, "2.15.0", module=False)
    packages(holder, "2.15.0")
    assert _compat.module_owners() == [holder]
    advice = f'first `pip uninstall -y {wrapper} {holder}`, then `pip install "{wrapper}==2\\.21\\.\\*"`'
    with pytest.raises(ImportError, match=advice):
        _compat.check_version("2.15.0")
    with pytest.warns(gradlib.UntestedTensorFlowWarning, match=advice):
        _compat.check_version("2.22.0")


def test_a_wrapper_the_other_way_round_is_removed_too(packages):
    """tensorflow-macos 2.16 is a wrapper requiring tensorflow: installing tensorflow 2.21 beside it
    would break its pin, so it goes first."""
    packages("tensorflow", "2.16.2")
    packages("tensorflow-macos", "2.16.2", module=False)
    assert _compat.module_owners() == ["tensorflow"]
    with pytest.raises(ImportError, match=r'first `pip uninstall -y tensorflow tensorflow-macos`, then `pip install "tensorflow=='):
        _compat.check_version("2.16.2")


@pytest.mark.parametrize("system, machine, name", [("linux", "x86_64", "tensorflow-cpu"), ("win32", "AMD64", "tensorflow-cpu"),
                                                   ("darwin", "arm64", "tensorflow"), ("linux", "aarch64", "tensorflow")])
@pytest.mark.parametrize("holder, version", [("tensorflow-macos", "2.12.0"), ("tensorflow-gpu", "2.10.1"),
                                             ("tf-nightly", "2.23.0.dev20261026"), ("intel-tensorflow", "2.14.0"),
                                             ("tensorflow-aarch64", "2.15.1")])
def test_another_package_alone_is_replaced_by_the_one_published_for_the_machine(
        packages, monkeypatch, holder, version, system, machine, name):
    """tensorflow-cpu exists for Windows and Linux on x86-64 only."""
    import platform

    packages(holder, version)
    monkeypatch.setattr(sys, "platform", system)
    monkeypatch.setattr(platform, "machine", lambda: machine)
    with pytest.raises(ImportError, match=f'first `pip uninstall -y {holder}`, then `pip install "{name}=='):
        _compat.check_version("2.12.0")


def test_on_windows_the_advice_says_to_shut_the_kernel_down_first(packages, monkeypatch):
    packages("tensorflow", "2.18.0", module=False)
    packages("tensorflow-intel", "2.18.0")
    monkeypatch.setattr(sys, "platform", "win32")
    with pytest.raises(ImportError, match=r"in a terminal, with this kernel shut down: first `pip uninstall -y "
                                          r"tensorflow tensorflow-intel`, then .*; then start the kernel again"):
        _compat.check_version("2.18.0")


def test_both_current_names_prefer_colabs_tensorflow(packages):
    packages("tensorflow", "2.21.0")
    packages("tensorflow-cpu", "2.21.0")
    assert _compat.distribution() == "tensorflow"
    with pytest.warns(gradlib.UntestedTensorFlowWarning, match=r"more than one package \(tensorflow and tensorflow-cpu\).*"
                      r'first `pip uninstall -y tensorflow tensorflow-cpu`, then `pip install "tensorflow=='):
        _compat.check_version("2.21.0")


def test_a_tensorflow_laid_over_another_release_warns_even_in_the_range(packages):
    """The plain upgrade run on Windows' split 2.18.0: tensorflow-cpu 2.21 now holds the module, and so
    does the old tensorflow-intel, whose removal would delete 2.21's files.  (A package without a
    top_level.txt is read from its RECORD.)"""
    packages("tensorflow-cpu", "2.21.0")
    packages("tensorflow-intel", "2.18.0", top_level=False)
    assert _compat.module_owners() == ["tensorflow-cpu", "tensorflow-intel"]
    advice = r'first `pip uninstall -y tensorflow-cpu tensorflow-intel`, then `pip install "tensorflow-cpu==2\.21\.\*"`'
    with pytest.warns(gradlib.UntestedTensorFlowWarning, match=r"\(tensorflow-cpu and tensorflow-intel\).*" + advice):
        _compat.check_version("2.21.0")


def test_a_listed_tensorflow_without_its_module_is_reinstalled(packages):
    """After the holder of a split install was uninstalled, pip still lists tensorflow but nothing imports:
    `pip install` would answer "already satisfied", so the advice when the import fails reinstalls."""
    packages("tensorflow", "2.21.0")
    assert _compat.upgrade_advice() == '`pip install "tensorflow==2.21.*"`, then restart the kernel'
    assert _compat.upgrade_advice(reinstall=True).startswith('first `pip uninstall -y tensorflow`, then')


def test_nothing_installed_gets_a_plain_install(packages):
    assert _compat.upgrade_advice(reinstall=True) == '`pip install "tensorflow-cpu==2.21.*"`, then restart the kernel'


def test_a_package_in_another_folder_is_shadowed_not_mixed(packages, tmp_path, monkeypatch):
    """A user site over the system one: two installs in two folders, the imported one healthy."""
    user, system = tmp_path / "user", tmp_path / "system"
    packages("tensorflow-cpu", "2.21.0", folder=user)
    packages("tensorflow", "2.19.0", folder=system)
    monkeypatch.setattr(sys, "path", [str(user), str(system)])
    assert _compat.module_owners(user) == ["tensorflow-cpu"] and _compat.installed_packages(user) == ["tensorflow-cpu"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _compat.check_version("2.21.0", folder=user)
    with pytest.warns(gradlib.UntestedTensorFlowWarning, match="more than one package"):
        _compat.check_version("2.21.0")  # without the folder, both count


def test_the_advice_runs_the_pip_of_this_python(packages, monkeypatch):
    packages("tensorflow", "2.18.0")
    monkeypatch.setattr(sys, "executable", "/opt/my env/bin/python")
    assert _compat.upgrade_advice() == ('`"/opt/my env/bin/python" -m pip install "tensorflow==2.21.*"`, '
                                        'then restart the kernel')


@pytest.mark.parametrize("system, machine, reason", [("darwin", "x86_64", "no release after 2.16 for Intel Macs"),
                                                     ("win32", "ARM64", "no packages for Windows on ARM")])
def test_a_machine_tensorflow_publishes_nothing_for_is_told_so(packages, monkeypatch, system, machine, reason):
    import platform

    packages("tensorflow", "2.16.2")
    monkeypatch.setattr(sys, "platform", system)
    monkeypatch.setattr(platform, "machine", lambda: machine)
    with pytest.raises(ImportError, match=reason + ": use a Linux machine, a virtual machine or a class JupyterHub"):
        _compat.check_version("2.16.2")


def test_a_failed_import_says_whether_tensorflow_is_installed(packages):
    assert "install it (`pip install \"tensorflow-cpu==2.21.*\"`" in str(_compat.import_failed())
    packages("tensorflow-cpu", "2.21.0")
    message = str(_compat.import_failed())
    assert "tensorflow-cpu is installed, but `import tensorflow` fails (the error above says why)" in message
    assert 'reinstall it (first `pip uninstall -y tensorflow-cpu`, then `pip install "tensorflow-cpu==2.21.*"`' in message


def test_a_module_that_is_not_tensorflow_is_named(tmp_path):
    import types

    import tensorflow as tf

    assert _compat.not_tensorflow(tf) is None
    impostor = types.ModuleType("tensorflow")
    impostor.__file__ = str(tmp_path / "tensorflow.py")
    assert f"found {impostor.__file__}, which is not TensorFlow: rename" in str(_compat.not_tensorflow(impostor))


def test_the_classroom_keeps_its_old_import_paths_as_the_same_modules():
    import gradlib.exercises.ch02 as old_ch02
    import gradlib.grade as old_grade
    from gradlib.classroom import grade
    from gradlib.classroom.exercises import ch02

    assert old_ch02 is ch02 and old_grade is grade
    assert gradlib.exercises is sys.modules["gradlib.classroom.exercises"]


# -- the supported range, written down outside gradlib ----------------------------------------

RANGE_FILES = ["README.md", "CONTRIBUTING.md", "Makefile", "pyproject.toml", "requirements/colab.txt",
               "chapters/en/offline.md", "chapters/zh/offline.md",
               "chapters/en/teachers.md", "chapters/zh/teachers.md"]


def test_every_file_that_names_the_supported_tensorflow_range_names_gradlibs():
    # _compat's OLDEST and NEWEST are the range's one home; the prose, the
    # pins and the Colab environment repeat it and must follow when it moves.
    import re

    oldest, newest = (_compat._text(v) for v in (_compat.OLDEST, _compat.NEWEST))
    after_newest = f"{_compat.NEWEST[0]}.{_compat.NEWEST[1] + 1}"
    seen = 0
    for name in RANGE_FILES:
        with open(os.path.join(ROOT, name), encoding="utf-8") as f:
            text = f.read()
        # (a range of releases such as "2.11 to 2.18.0", the Windows split wheels, is not the supported range)
        for low, high in re.findall(r"\b(2\.\d+)\s*(?:–|-|to)\s*(2\.\d+)\b(?!\.\d)", text):
            assert (low, high) == (oldest, newest), (name, low, high)
            seen += 1
        for low, high in re.findall(r"tensorflow(?:-cpu)?>=(2\.\d+),<(2\.\d+)", text):
            assert (low, high) == (oldest, after_newest), (name, low, high)
            seen += 1
        for line in text.splitlines():
            if re.search(r"oldest|最旧", line, re.I):
                for version in re.findall(r"TensorFlow \(?(2\.\d+)\b|\((2\.\d+)\)", line):
                    assert oldest in version, (name, line)
    assert seen >= 6, seen  # the README's, the teachers' guides' and pyproject's two pins at least
