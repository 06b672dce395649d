"""gradlib.benchmarks: the report the book's appendix shows, in both languages."""

from __future__ import annotations

import re

import pytest

from gradlib import benchmarks

RESULTS = {
    "floor_s": 4.0, "floor_samples_s": [4.0, 3.0, 5.0],
    "chapters": {"chapters/en/01_gradients.md": {"seconds": 10.0, "ratio_to_floor": 2.5}},
    "cold_build_s": 80.0, "warm_build_s": 2.0,
    "python": "3.11.7", "tensorflow": "2.21.0", "date": "2026-11-23T12:00:00+00:00",
    "ops": {"identity (tf.identity, the reference)": {"seconds": 0.002, "ratio_to_identity": 1.0},
            benchmarks.CUSTOM: {"seconds": 0.006, "ratio_to_identity": 3.0},
            benchmarks.TRICK: {"seconds": 0.004, "ratio_to_identity": 2.0}},
    "op_elements": 1_000_000, "op_rounds": 15,
    "explorer_latency": {"live_ms": 8.0, "bare_ms": 6.4, "ratio": 1.25},
    "experiments": {"dann.moons_experiment('dann')": 2.5},
    "page_weights": {"chapters/en/01_gradients.html": {"bytes": 300_000, "files": 4}},
    "page_weight_budget": 1_500_000,
}
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def numbers(text: str):
    return NUMBER.findall(text)


def test_both_languages_show_the_same_numbers():
    en, zh = (benchmarks.report(RESULTS, lang=lang).data for lang in ("en", "zh"))
    assert numbers(en) == numbers(zh)
    assert "× floor" in en and "× 基线" in zh and re.search(r"[\u4e00-\u9fff]", zh)


def test_ratios_are_computed_from_the_seconds():
    text = benchmarks.report(RESULTS, lang="en").data
    assert "| chapter `chapters/en/01_gradients.md` | 10.00 | 2.50× | — |" in text
    assert "| warm rebuild (same output dir, nothing changed) | 2.00 | 0.50× | 0.03× |" in text
    assert "stop_gradient trick (the same STE for round): 1.50×" in text  # 0.006 / 0.004
    assert "| `chapters/en/01_gradients.html` | 300.0 | 4 | 0.20× |" in text
    assert "| control change → TensorFlow recompute → matplotlib redraw | 8.0 | 1.25× |" in text


def test_missing_report_and_bad_language(tmp_path, monkeypatch):
    assert benchmarks.latest(tmp_path / "none.json") is None
    monkeypatch.setattr(benchmarks, "LATEST", tmp_path / "none.json")
    with pytest.raises(FileNotFoundError, match="make bench"):
        benchmarks.report()
    with pytest.raises(ValueError, match="lang"):
        benchmarks.report(RESULTS, lang="fr")


def test_the_shipped_report_is_a_full_run():
    """The appendix needs every section: `make bench` writes them all on a full run."""
    results = benchmarks.latest()
    assert results is not None, f"{benchmarks.LATEST} is missing: run `make bench` and commit it"
    for key in ("floor_s", "chapters", "cold_build_s", "warm_build_s", "ops", "explorer_latency",
                "experiments", "page_weights", "page_weight_budget"):
        assert results.get(key) not in (None, {}, []), key
    assert benchmarks.CUSTOM in results["ops"] and benchmarks.TRICK in results["ops"]
