"""progress: a finished text bar on stdout while building, tqdm otherwise."""

import re

import gradlib
from gradlib.book.progress import TIMING


def test_build_mode_prints_one_finished_bar_to_stdout(monkeypatch, capsys):
    monkeypatch.setenv("GRADBOOK_BUILD", "1")
    assert list(gradlib.progress(range(5), desc="train")) == [0, 1, 2, 3, 4]
    out, err = capsys.readouterr()
    assert err == ""
    assert out.startswith("train: |" + "█" * 30 + "| 5/5 [") and out.count("\n") == 1
    assert TIMING.sub("[timing]", out) == "train: |" + "█" * 30 + "| 5/5 [timing]\n"  # the mark tools mask


def test_generators_without_length(monkeypatch, capsys):
    monkeypatch.setenv("GRADBOOK_BUILD", "1")
    assert sum(gradlib.progress(i for i in range(3))) == 3
    assert "| 3/3 [" in capsys.readouterr().out


def test_live_mode_uses_tqdm(monkeypatch, capsys):
    monkeypatch.delenv("GRADBOOK_BUILD", raising=False)
    assert list(gradlib.progress(range(3), desc="x")) == [0, 1, 2]
    assert "3/3" in capsys.readouterr().err  # tqdm's text bar in a terminal


def test_a_partial_bar_and_a_known_total(monkeypatch, capsys):
    monkeypatch.setenv("GRADBOOK_BUILD", "1")
    assert list(gradlib.progress(iter(range(3)), total=12, desc="")) == [0, 1, 2]
    out = capsys.readouterr().out
    assert re.fullmatch(r"\|█{8} {22}\| 3/12 \[\d+\.\d s\]\n", out), out  # 30 * 3 / 12 = 7.5 -> 8
