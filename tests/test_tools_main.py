"""Every tool's command line (main) on the mini book or a mini site, so a crash
in the reporting path (a problem to print, a note, a failure) is caught."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tools import browsercheck, colab_sim, notebooks, reliability, sitecheck, student_edition, twins

NOISY = ('<div class="cell_output docutils container"><div class="output stderr"><pre>'
         "W0000 00:00:1.5 1 port.cc:1] oneDNN custom operations are on.</pre></div></div>")


def mini_site(root: Path, noisy: bool) -> Path:
    html = root / "html"
    (html / "chapters" / "en").mkdir(parents=True)
    (html / "index.html").write_text("<html><body>home</body></html>", encoding="utf-8")
    body = NOISY if noisy else "<p>quiet</p>"
    (html / "chapters" / "en" / "01_demo.html").write_text(f"<html><body>{body}</body></html>", encoding="utf-8")
    return html


def test_sitecheck_main(tmp_path, capsys):
    assert sitecheck.main([str(mini_site(tmp_path / "a", noisy=False))]) == 0
    assert capsys.readouterr().out == ""
    assert sitecheck.main([str(mini_site(tmp_path / "b", noisy=True))]) == 1
    out = capsys.readouterr().out
    assert out.startswith("chapters/en/01_demo.html: stderr output: W0000") and "oneDNN" in out
    assert sitecheck.main([str(tmp_path / "nothing")]) == 2


def test_notebooks_and_twins_main(mini_book, capsys):
    assert notebooks.main(["--check", "--root", str(mini_book)]) == 1
    assert "missing" in capsys.readouterr().out
    assert notebooks.main(["--write", "--root", str(mini_book)]) == 0
    assert notebooks.main(["--check", "--root", str(mini_book)]) == 0
    assert twins.main(["--root", str(mini_book)]) == 0
    md = mini_book / "chapters" / "zh" / "01_demo.md"
    md.write_text(md.read_text(encoding="utf-8").replace("x = 3.0", "x = 5.0"), encoding="utf-8")
    capsys.readouterr()
    assert twins.main(["--root", str(mini_book)]) == 1
    assert "code cell 2 differs" in capsys.readouterr().out


def test_reliability_main_without_a_build_reports_each_page(mini_book, capsys):
    assert reliability.main(["--root", str(mini_book)]) == 1
    out = capsys.readouterr().out
    assert out.count("FAILED") == 4 and "build the book first (make book)" in out


def test_student_edition_main_refuses_an_unknown_language(tmp_path):
    with pytest.raises(SystemExit) as exit_:
        student_edition.main(["--out", str(tmp_path), "--lang", "fr"])
    assert exit_.value.code == 2


def test_browsercheck_main_without_a_site(tmp_path, capsys):
    assert browsercheck.main([str(tmp_path)]) == 2
    assert "no built site" in capsys.readouterr().err


def test_browsercheck_main_reports_problems_and_notes(tmp_path, monkeypatch, capsys):
    """The reporting path (where P1's NameError was), with the browser faked."""
    import contextlib

    html = mini_site(tmp_path, noisy=False)
    monkeypatch.setattr(browsercheck, "browser_missing", lambda: None)
    monkeypatch.setattr(browsercheck, "serve", lambda html: contextlib.nullcontext("http://127.0.0.1:1/"))
    monkeypatch.setattr(browsercheck, "launch", lambda: contextlib.nullcontext(object()))

    def check_page(browser, base, path):
        weight = browsercheck.Weight(path=path, files={path: 1000}, shared=0)
        problems = {"math": ["KaTeX's stylesheet did not load"]} if path.endswith("01_gradients.html") else {}
        return browsercheck.PageReport(path, problems, weight, 0.1, notes=["a known console error"])

    monkeypatch.setattr(browsercheck, "check_page", check_page)
    monkeypatch.setattr(browsercheck, "search", lambda browser, base, query, start: ([], []))
    assert browsercheck.main([str(html)]) == 1
    out = capsys.readouterr().out
    assert "chapters/en/01_gradients.html [math] KaTeX's stylesheet did not load" in out
    assert "chapters/zh/index.html: a known console error" in out
    assert "search for 'gradient' returned no results" in out and "page weight outside _static/" in out


def test_colab_sim_main_reports_each_notebook(tmp_path, monkeypatch, capsys):
    """The simulation's reporting path, without touching any environment."""
    monkeypatch.setattr(colab_sim, "package_copy", lambda dest: dest)
    monkeypatch.setattr(colab_sim, "_pip", lambda *args: None)

    def run_notebook(path, source, timeout):
        failed = path.stem == "bad"
        return {"notebook": path.name, "problems": ["a cell raised: boom"] if failed else [],
                "tensorflow": "2.19.0", "seconds": 1.0}

    monkeypatch.setattr(colab_sim, "run_notebook", run_notebook)
    out_json = tmp_path / "results.json"
    assert colab_sim.main([str(tmp_path / "good.ipynb"), str(tmp_path / "bad.ipynb"), "--json", str(out_json)]) == 1
    out = capsys.readouterr().out
    assert "good.ipynb: TensorFlow 2.19.0, 1 s, ok" in out and "bad.ipynb: TensorFlow 2.19.0, 1 s, FAILED: a cell raised: boom" in out
    assert out.rstrip().endswith("1 passed, 1 failed")
    assert [r["notebook"] for r in json.loads(out_json.read_text(encoding="utf-8"))] == ["good.ipynb", "bad.ipynb"]


# -- browsercheck's explorer oracle, on static HTML ---------------------------------

EXPLORER_HTML = """<div class="gradbook-explorer" id="gradbook-explorer-1"><svg>
<polyline class="gbx-curve-0" points="1.0,2.0 3.0,4.0"/><polyline class="gbx-curve-1" points="5.0,6.0"/></svg>
<input type="range" data-index="0"></div>
<div class="gradbook-explorer"><svg><polyline class="gbx-curve-0" points="0.0,0.0"/>
<polyline class="gbx-curve-1" points="9.0,9.0"/></svg></div>"""


def test_rendered_points_reads_the_server_html():
    assert browsercheck.rendered_points(EXPLORER_HTML) == {
        "gradbook-explorer-1": ["1.0,2.0 3.0,4.0", "5.0,6.0"], "#2": ["0.0,0.0", "9.0,9.0"]}


def test_points_problems_compare_with_the_server_rendered_curves():
    rendered = browsercheck.rendered_points(EXPLORER_HTML)["gradbook-explorer-1"]
    assert browsercheck.points_problems("x", rendered, list(rendered)) == []
    flipped = ["1.0,4.0 3.0,2.0", "5.0,6.0"]  # the y axis flipped by a script
    found = browsercheck.points_problems("explorer 1 after moving back", rendered, flipped)
    assert len(found) == 1 and "curve 0 points differ" in found[0]
    assert "1 curves, the server rendered 2" in browsercheck.points_problems("x", rendered, rendered[:1])[0]
