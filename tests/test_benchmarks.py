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
    assert "stop_gradient trick (the same STE for round), in `tf.function`: 1.50×" in text  # 0.006 / 0.004
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
                "experiments", "page_weights", "page_weight_budget",
                "ops_eager", "ops_xla", "layer_step", "layer_shape", "larq", "ops_date",
                "site_quality", "site_targets", "site_date", "site_runs"):
        assert results.get(key) not in (None, {}, []), key
    assert benchmarks.CUSTOM in results["ops"] and benchmarks.TRICK in results["ops"]
    assert list(results["ops_xla"]) == list(results["ops"]) == list(results["ops_eager"])
    assert set(results["layer_step"]) == {"function", "xla"}
    assert results["larq"]["available"], results["larq"]  # the appendix compares with larq
    goal = benchmarks.quantizer_goal(results)
    assert len(goal["met"]) + len(goal["missed"]) + len(goal["undecided"]) >= 7  # distinct programs
    assert set(goal["aliases"]) == set(benchmarks.ALIASES)
    for section in ("ops_eager", "ops", "ops_xla"):  # every ratio carries its spread and interval
        assert all(len(e["ratio_iqr"]) == len(e["ratio_ci"]) == 2 for e in results[section].values())
    for entry in results["layer_step"].values():
        assert "dorefa_weights" in entry["others"] and entry["ratio_ci"]
    assert set(results["larq"]["gradlib_over_larq_ci"]) == {"eager", "function", "xla"}
    assert results["machine"]["cpu_count"] >= 1


# -- the sections of issue 13: ops in three modes, the layer step, larq --------------------------

def _ops(ratios):
    return {name: {"seconds": 0.001 * r, "ratio_to_identity": r} for name, r in ratios.items()}


IDENTITY = "identity (tf.identity, the reference)"
NEW = {
    **RESULTS,
    "ops_eager": _ops({IDENTITY: 1.0, "ste_sign": 2.5, "ste_sign(clip=1)": 5.0, benchmarks.CUSTOM: 3.0,
                       benchmarks.TRICK: 2.0}),
    "ops": _ops({IDENTITY: 1.0, "ste_sign": 1.5, "ste_sign(clip=1)": 2.5, benchmarks.CUSTOM: 3.0,
                 benchmarks.TRICK: 2.0}),
    "ops_xla": _ops({IDENTITY: 1.0, "ste_sign": 1.25, "ste_sign(clip=1)": 1.75, benchmarks.CUSTOM: 1.5,
                     benchmarks.TRICK: 1.0}),
    "op_rounds": 51,
    "layer_step": {"function": {"dense_s": 0.008, "quantized_s": 0.0088, "ratio": 1.1},
                   "xla": {"dense_s": 0.006, "quantized_s": 0.0057, "ratio": 0.95}},
    "layer_shape": {"batch": 128, "inputs": 256, "hidden": 512, "classes": 10}, "layer_rounds": 51,
    "larq": {"available": True, "versions": {"larq": "0.14.0", "tf_keras": "2.21.0"},
             "ops": {mode: _ops({IDENTITY: 1.0, "gradlib ste_sign(x, clip=1.0)": 2.0,
                                 "larq ste_sign(x) (clip_value=1.0)": 1.6}) for mode in ("eager", "function", "xla")},
             "gradlib_over_larq": {"eager": {"clipped at 1": 1.19, "unclipped": 1.01},
                                   "function": {"clipped at 1": 1.06, "unclipped": 0.99},
                                   "xla": {"clipped at 1": 0.98, "unclipped": 1.02}}},
    "ops_date": "2026-11-27T14:00:00+00:00",
}


def test_the_new_sections_render_in_both_languages_with_the_same_numbers():
    en, zh = (benchmarks.report(NEW, lang=lang).data for lang in ("en", "zh"))
    assert numbers(en) == numbers(zh)
    # the op table: one column per mode, ratios to the identity of the same mode
    assert "| op | eagerly | `tf.function` | XLA |" in en and "| 运算 | 即时执行 | `tf.function` | XLA |" in zh
    assert "| ste_sign(clip=1) | 5.00× | 2.50× | 1.75× |" in en
    assert "(eagerly: 1.00 ms; `tf.function`: 1.00 ms; XLA: 1.00 ms)" in en
    assert "Within it: `ste_sign`. Above it: `ste_sign(clip=1)`." in en  # 1.25 <= 1.3 < 1.75
    assert "达到的：`ste_sign`。未达到的：`ste_sign(clip=1)`。" in zh
    # the layer step
    assert "(256 → 512 → 512 → 10, batch 128), median of 51 rounds; goal ≤ 1.3×" in en
    assert "| `tf.function` | `ste_sign` | 8.00 | 8.80 | 1.10× |" in en and "| XLA | `ste_sign` | 6.00 | 5.70 | 0.95× |" in en
    assert "批大小 128" in zh
    # larq: the table, then gradlib over larq like with like
    assert "larq 0.14.0's (tf_keras 2.21.0" in en
    assert "| `larq ste_sign(x) (clip_value=1.0)` | 1.60× | 1.60× | 1.60× |" in en
    assert "| clipped at 1 (larq's default) | 1.19× | 1.06× | 0.98× |" in en
    assert "| 不截断 | 1.01× | 0.99× | 1.02× |" in zh
    # when the op timings were merged later than the full run
    assert "(op, layer and larq timings: 2026-11-27T14:00:00+00:00)" in en
    assert "custom_gradient` against the stop_gradient trick (the same STE for round), in `tf.function`: 1.50×." in en


def test_an_older_report_without_the_new_keys_still_renders():
    # RESULTS is the shape of a report from before issue 13: tf.function ops only
    for lang in ("en", "zh"):
        text = benchmarks.report(RESULTS, lang=lang).data
        assert "XLA" not in text and "larq" not in text and "QuantizedDense" not in text
    text = benchmarks.report(RESULTS, lang="en").data
    assert "| op | milliseconds | × identity |" in text
    assert "| round, tf.custom_gradient STE | 6.00 | 3.00× |" in text
    assert benchmarks.quantizer_goal(RESULTS) is None


SITE = {
    "site_quality": {"chapters/en/05_ste.html": {
        "performance": 97, "accessibility": 100, "best-practices": 100, "seo": 100, "cls": 0.0004, "tbt_ms": 63,
        "bytes": 1_953_524, "axe": {"moderate": 3, "serious": 1, "critical": 1}, "lighthouse": "12.2.3"}},
    "site_targets": {"performance": 95, "accessibility": 100, "best-practices": 100, "seo": 95, "cls": 0.02},
    "site_date": "2026-11-28T08:00:00+00:00", "site_runs": 3,
}


def test_the_shipped_site_figures_meet_the_targets_on_every_page():
    """The appendix's figures are the issue's targets, met (without the tests' margin for a busy machine)."""
    results = benchmarks.latest()
    targets, quality = results["site_targets"], results["site_quality"]
    assert results["site_runs"] >= 3  # each figure is a median
    for page, q in quality.items():
        assert q["performance"] >= targets["performance"], page
        assert q["accessibility"] >= targets["accessibility"] and q["best-practices"] >= targets["best-practices"], page
        assert q["seo"] >= targets["seo"] and q["cls"] <= targets["cls"], page
        assert q["axe"].get("serious", 0) + q["axe"].get("critical", 0) == 0, page


def test_the_site_table_shows_each_pages_scores_and_axe_count_in_both_languages():
    en, zh = (benchmarks.report({**RESULTS, **SITE}, lang=lang).data for lang in ("en", "zh"))
    assert numbers(en) == numbers(zh)
    row = "| `chapters/en/05_ste.html` | 97 | 100 | 100 | 100 | 0.000 | 63 | 2 |"  # axe: serious + critical only
    assert row in en and row in zh
    assert "Lighthouse 12.2.3 (desktop, no throttling; each page's median of 3 runs; 2026-11-28T08:00:00+00:00)" in en
    assert "每个页面取 3 次运行的中位数" in zh
    assert "performance ≥ 95" in en and "layout shift ≤ 0.02" in en and "性能 ≥ 95" in zh
    assert "| page | performance | accessibility | best practices | SEO | layout shift |" in en



@pytest.mark.parametrize("broken", [{}, {"site_quality": []}, {"site_quality": "x", "site_targets": "y"}])
def test_a_report_without_site_figures_says_so(broken):
    en, zh = (benchmarks.report({**RESULTS, **broken}, lang=lang).data for lang in ("en", "zh"))  # an older report
    assert "| performance |" not in en and "has no Lighthouse or axe-core figures" in en
    assert "没有网站各页面的 Lighthouse 与 axe-core 结果" in zh


@pytest.mark.parametrize("entry, row", [
    # Lighthouse gave no SEO score and no CLS; axe did not run: dashes, never a 0 that reads as a pass
    ({"performance": 99, "seo": None, "cls": None}, "| `index.html` | 99 | — | — | — | — | — | — |"),
    ({"performance": 99, "cls": "0.1", "axe": {"serious": None, "critical": 2}}, "| `index.html` | 99 | — | — | — | — | — | 2 |"),
    (None, "| `index.html` | — | — | — | — | — | — | — |"),
    ({"performance": True, "cls": float("nan"), "axe": {"serious": None, "critical": None}},
     "| `index.html` | — | — | — | — | — | — | — |"),
    ({"seo": 100, "axe": {"serious": "3"}}, "| `index.html` | — | — | — | 100 | — | — | — |"),
])
def test_the_site_table_shows_what_a_partial_report_lacks_as_a_dash(entry, row):
    partial = {**SITE, "site_quality": {"index.html": entry}, "site_targets": {"performance": 95}}
    partial.pop("site_date")
    text = benchmarks.report({**RESULTS, **partial}).data
    assert row in text
    assert "Lighthouse ? (desktop, no throttling; each page's median of 3 runs; ?)" in text and "performance ≥ 95" in text
    assert "best practices ?" in text and "None" not in text


def test_a_report_without_larq_says_why():
    results = {**NEW, "larq": {"available": False, "reason": "larq is not installed in /x"}}
    en, zh = (benchmarks.report(results, lang=lang).data for lang in ("en", "zh"))
    assert "larq was not measured: larq is not installed in /x" in en
    assert "没有测量 larq：larq is not installed in /x" in zh
    assert "gradlib's time over larq's" not in en


def test_the_quantizer_goal_counts_only_quantizers():
    results = {"ops_xla": _ops({IDENTITY: 1.0, "ste_sign": 1.3, "xnor_binarize": 1.31, "gradient_reversal(lam=1)": 9.0,
                                "sign_with_surrogate('tanh')": 2.0, "dorefa_weights(bits=2)": 1.0,
                                "round, tf.grad_pass_through": 5.0})}
    assert benchmarks.quantizer_goal(results) == {
        "met": ["ste_sign", "dorefa_weights(bits=2)"],
        "missed": ["xnor_binarize", "sign_with_surrogate('tanh')"], "undecided": [], "aliases": {}}


def test_the_quantizers_are_those_of_gradlib_layers():
    from gradlib import layers

    assert {q.rstrip("(") for q in benchmarks.QUANTIZERS} == set(layers.QUANTIZERS)


def test_the_verdict_is_judged_by_the_interval():
    assert benchmarks.verdict(1.2, [1.1, 1.29], 1.3) == "met"
    assert benchmarks.verdict(1.4, [1.31, 1.5], 1.3) == "missed"
    assert benchmarks.verdict(1.2, [1.1, 1.4], 1.3) == "undecided"
    assert benchmarks.verdict(1.2, None, 1.3) == "met" and benchmarks.verdict(1.4, None, 1.3) == "missed"


def _spread_ops(entries):
    return {name: {"seconds": 0.001 * r, "ratio_to_identity": r, "ratio_iqr": iqr, "ratio_ci": ci}
            for name, (r, iqr, ci) in entries.items()}


def test_aliases_are_counted_once_and_the_spread_is_shown():
    ops = _spread_ops({IDENTITY: (1.0, [1.0, 1.0], [1.0, 1.0]),
                       "ste_sign": (1.25, [1.0, 1.6], [1.2, 1.28]),
                       "sign_with_surrogate('identity')": (1.35, [1.1, 1.7], [1.31, 1.4]),
                       "ste_round": (1.3, [1.0, 1.6], [1.2, 1.4]),
                       "xnor_binarize": (1.8, [1.5, 2.1], [1.7, 1.9])})
    results = {**NEW, "ops_xla": ops, "ops": ops, "ops_eager": ops}
    goal = benchmarks.quantizer_goal(results)
    assert goal == {"met": ["ste_sign"], "missed": ["xnor_binarize"], "undecided": ["ste_round"],
                    "aliases": {"sign_with_surrogate('identity')": "ste_sign"}}
    en, zh = (benchmarks.report(results, lang=lang).data for lang in ("en", "zh"))
    assert numbers(en) == numbers(zh)
    assert "| sign_with_surrogate('identity') (= ste_sign) | 1.35× (1.10–1.70) |" in en
    assert "Undecided (the interval of the median straddles the goal): `ste_round`." in en
    assert "interquartile range of the per-round ratios" in en and "四分位距" in zh


def test_the_layer_table_has_a_row_per_kernel_quantizer_and_the_machine_is_named():
    step = {mode: {**entry, "ratio_iqr": [0.9, 1.2], "ratio_ci": [1.0, 1.1],
                   "others": {"dorefa_weights": {"quantized_s": 0.012, "ratio": 1.5, "ratio_iqr": [1.2, 1.8],
                                                 "ratio_ci": [1.4, 1.6]}}}
            for mode, entry in NEW["layer_step"].items()}
    machine = {"cpu": "AMD EPYC", "cpu_count": 2, "intra_op_threads": 0, "TF_NUM_INTRAOP_THREADS": "1"}
    larq = {**NEW["larq"], "gradlib_over_larq_iqr": {m: {"clipped at 1": [0.8, 1.2], "unclipped": [0.9, 1.1]}
                                                    for m in ("eager", "function", "xla")}}
    results = {**NEW, "layer_step": step, "machine": machine, "larq": larq}
    en, zh = (benchmarks.report(results, lang=lang).data for lang in ("en", "zh"))
    assert numbers(en) == numbers(zh)
    assert "| `tf.function` | `dorefa_weights` | 8.00 | 12.00 | 1.50× (1.20–1.80) |" in en
    assert "| `tf.function` | `ste_sign` | 8.00 | 8.80 | 1.10× (0.90–1.20) |" in en
    assert " · AMD EPYC, 2 cores, intra-op threads 1" in en
    assert "| clipped at 1 (larq's default) | 1.19× (0.80–1.20) |" in en


def test_the_larq_version_the_prose_names_is_the_pinned_one():
    """The appendix types "larq 0.14" (a version, not a result): it must be the one requirements/larq.txt pins."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    pinned = re.search(r"^larq==(\d+\.\d+)\.\d+$", (root / "requirements" / "larq.txt").read_text(encoding="utf-8"),
                       re.M).group(1)
    for lang in ("en", "zh"):
        named = set(re.findall(r"larq (\d+\.\d+)", (root / "chapters" / lang / "benchmarks.md").read_text(encoding="utf-8")))
        assert named == {pinned}, (lang, named, pinned)
