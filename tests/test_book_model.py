"""tools/book.py: the one model of the book (pages from _toc.yml, MyST cells and directives)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tools import book


ROOT = Path(__file__).resolve().parents[1]


# -- pages ---------------------------------------------------------------------

def test_pages_are_the_toc_entries_in_order():
    toc = (ROOT / "_toc.yml").read_text(encoding="utf-8")
    listed = re.findall(r"file: (chapters/(?:en|zh)/\S+)", toc)
    assert [md.relative_to(ROOT).with_suffix("").as_posix() for md in book.pages(root=ROOT)] == listed
    assert book.languages(ROOT) == ("en", "zh")
    assert all(md.is_file() for md in book.pages(root=ROOT))


def test_chapters_are_the_numbered_pages():
    for lang in book.languages(ROOT):
        names = [md.stem for md in book.chapters(lang, ROOT)]
        assert names == sorted(names) and len(names) >= 6
        assert all(re.fullmatch(r"\d\d_\w+", name) for name in names)
        others = {md.stem for md in book.pages(lang, ROOT)} - set(names)
        assert others == {"index", "teachers", "offline", "benchmarks"}


def test_a_toc_drives_languages_and_pages(tmp_path, mini_toc):
    (tmp_path / "_toc.yml").write_text(mini_toc(("zh", "en", "fr")), encoding="utf-8")
    assert book.languages(tmp_path) == ("zh", "en", "fr")
    assert [md.relative_to(tmp_path).as_posix() for md in book.pages("fr", tmp_path)] == [
        "chapters/fr/index.md", "chapters/fr/01_demo.md"]
    assert [md.name for md in book.chapters(root=tmp_path)] == ["01_demo.md"] * 3
    with pytest.raises(ValueError, match="no language 'de'"):
        book.pages("de", tmp_path)


def test_a_missing_toc_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="_toc.yml"):
        book.pages(root=tmp_path)


# -- MyST: directives, targets, roles --------------------------------------------

SAMPLE = """---
kernelspec:
  name: python3
---

(en-ch09)=
# Title

See {ref}`the list <en-ch09-list>` and {numref}`en-ch09-fig`.

```{exercise}
:label: en-ch09-ex1
:class: dropdown

Do it.
```

:::{exercise-start}
---
label: en-ch09-ex2
---
:::

```python
```{solution} not-a-directive: inside a code block
```

````{solution} en-ch09-ex1
:label: en-ch09-ex1-sol

```python
SECRET = 1
```
````

```{code-cell} ipython3
:tags: [remove-input]

x = 1
```
"""


def test_directives_come_with_arguments_options_and_lines():
    found = [(d.name, d.argument, d.options) for d in book.directives(SAMPLE)]
    assert found == [
        ("exercise", "", {"label": "en-ch09-ex1", "class": "dropdown"}),
        ("exercise-start", "", {"label": "en-ch09-ex2"}),
        ("solution", "en-ch09-ex1", {"label": "en-ch09-ex1-sol"}),
        ("code-cell", "ipython3", {"tags": ["remove-input"]}),
    ]
    lines = SAMPLE.splitlines()
    solution = book.directives(SAMPLE)[2]
    assert lines[solution.begin] == "````{solution} en-ch09-ex1" and lines[solution.end - 1] == "````"
    assert "SECRET = 1" in solution.body and solution.fence == "````"


def test_targets_and_roles():
    assert book.targets(SAMPLE) == ["en-ch09"]
    assert book.roles(SAMPLE) == [("ref", "the list <en-ch09-list>"), ("numref", "en-ch09-fig")]


def test_solution_ranges_pair_start_and_end():
    text = "A\n\n```{solution-start} x\n```\n\nhidden\n\n```{solution-end}\n```\n\nB\n"
    (begin, end), = book.solution_ranges(text)
    assert text.splitlines()[begin:end] == ["```{solution-start} x", "```", "", "hidden", "",
                                            "```{solution-end}", "```"]
    with pytest.raises(ValueError, match="no \\{solution-end\\}"):
        book.solution_ranges("```{solution-start} x\n```\n")
    with pytest.raises(ValueError, match="without \\{solution-start\\}"):
        book.solution_ranges("```{solution-end}\n```\n")


def test_code_sources_match_the_chapter_cells():
    md = book.chapters("en", ROOT)[0]
    sources = book.code_sources(md.read_text(encoding="utf-8"))
    nb = book.read_notebook(md)
    assert sources == [c.source for c in nb.cells if c.cell_type == "code"] and len(sources) > 10


# -- the appendix re-executes on its own -------------------------------------------

def test_only_the_appendix_is_forced_to_execute():
    forced = [md.relative_to(ROOT).as_posix() for md in book.pages(root=ROOT)
              if book.execution_mode(md, ROOT) == "force"]
    assert forced == ["chapters/en/benchmarks.md", "chapters/zh/benchmarks.md"]
    assert book.execution_mode(book.chapters("en", ROOT)[0]) == "cache"


def _hashes(root: Path) -> list[str]:
    return subprocess.run(["make", "-s", "--no-print-directory", "-f", "Makefile", "-f", "-", "print-hashes"],
                          input="print-hashes:\n\t@echo $(GRADLIB_HASH) $(BENCH_HASH)\n",
                          capture_output=True, text=True, cwd=root, check=True).stdout.split()


def test_a_new_bench_report_does_not_invalidate_the_whole_book(tmp_path):
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    shutil.copytree(ROOT / "gradlib", tmp_path / "gradlib", ignore=shutil.ignore_patterns("__pycache__"))
    gradlib_hash, bench_hash = _hashes(tmp_path)
    report = tmp_path / "gradlib" / "book" / "bench-latest.json"
    report.write_text(report.read_text(encoding="utf-8").replace("{", '{"note": 1, ', 1), encoding="utf-8")
    assert _hashes(tmp_path) == [gradlib_hash, _hashes(tmp_path)[1]] and _hashes(tmp_path)[1] != bench_hash
    with open(tmp_path / "gradlib" / "ste.py", "a", encoding="utf-8") as code:
        code.write("\n# changed\n")
    assert _hashes(tmp_path)[0] != gradlib_hash  # gradlib's code still restarts the build


# -- kernels ---------------------------------------------------------------------------

def test_the_kernel_module_is_loaded_without_tensorflow():
    code = ("import sys; from tools import book; k = book.kernel(); "
            "assert 'tensorflow' not in sys.modules and 'gradlib' not in sys.modules; "
            "print(sorted(k.modes()))")
    out = subprocess.run([__import__("sys").executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['build', 'colab', 'grade', 'test']"
