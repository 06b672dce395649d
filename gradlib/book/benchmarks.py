"""What the book's code costs: the latest ``make bench`` report, as tables.

``make bench`` (``tools/bench.py``) measures, in one run on one machine, the
cold and warm builds and each chapter against a floor (a fresh kernel that
only imports TensorFlow), each gradlib op's forward + backward time against
``tf.identity``, the experiments, the live explorer's redraw against a bare
matplotlib redraw, and the weight of every chapter page.  It writes
``bench-report.{md,json}`` and copies the JSON next to this module
(``bench-latest.json``, shipped with gradlib), where the book's appendix
reads it when the book is built.

Only ratios measured within one run are meaningful: the machines are shared
and noisy, so absolute seconds vary from run to run.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Optional

__all__ = ["LATEST", "latest", "report"]  # FLOOR_SOURCE and ratio are for tools/bench.py

LATEST = Path(__file__).with_name("bench-latest.json")
FLOOR_SOURCE = "import tensorflow as tf"
CUSTOM = "round, tf.custom_gradient STE"
TRICK = "round, stop_gradient trick (straight_through)"

TEXT = {
    "measurement": {"en": "measurement", "zh": "测量项"},
    "seconds": {"en": "seconds", "zh": "秒"},
    "x_floor": {"en": "× floor", "zh": "× 基线"},
    "x_cold": {"en": "× cold build", "zh": "× 冷构建"},
    "floor": {"en": "floor: fresh kernel + `{source}`", "zh": "基线：新内核 + `{source}`"},
    "median_of": {"en": " (median of {n})", "zh": "（{n} 次的中位数）"},
    "chapter": {"en": "chapter `{name}`", "zh": "章节 `{name}`"},
    "cold": {"en": "cold build (`jupyter-book build`, empty output dir)",
             "zh": "冷构建（`jupyter-book build`，空输出目录）"},
    "warm": {"en": "warm rebuild (same output dir, nothing changed)",
             "zh": "热构建（同一输出目录，没有改动）"},
    "ops_intro": {"en": "Forward + backward on {n:,} float32 elements, median of {rounds} rounds:",
                  "zh": "在 {n:,} 个 float32 元素上的前向 + 反向，{rounds} 轮的中位数："},
    "op": {"en": "op", "zh": "运算"},
    "ms": {"en": "milliseconds", "zh": "毫秒"},
    "x_identity": {"en": "× identity", "zh": "× identity"},
    "custom_vs_trick": {
        "en": "`tf.custom_gradient` against the stop_gradient trick (the same STE for round): {ratio:.2f}×.",
        "zh": "`tf.custom_gradient` 与 stop_gradient 技巧（同一个 round 的直通估计器）之比：{ratio:.2f}×。"},
    "latency_intro": {
        "en": "Live explorer (fresh kernel, median; target ≤ 60 ms and ≤ 1.5× the bare redraw):",
        "zh": "实时探索器（新内核，中位数；目标：≤ 60 ms，且 ≤ 裸重绘的 1.5 倍）："},
    "redraw": {"en": "redraw", "zh": "重绘"},
    "x_bare": {"en": "× bare", "zh": "× 裸重绘"},
    "live": {"en": "control change → TensorFlow recompute → matplotlib redraw",
             "zh": "控件变化 → TensorFlow 重新计算 → matplotlib 重绘"},
    "bare": {"en": "bare matplotlib redraw of the same figure", "zh": "同一张图的裸 matplotlib 重绘"},
    "experiment": {"en": "experiment", "zh": "实验"},
    "weights_intro": {
        "en": "Page weight (bytes each chapter page transfers outside the shared `_static/`; budget {budget:.1f} MB):",
        "zh": "页面大小（每个章节页面在共享的 `_static/` 之外传输的字节数；预算 {budget:.1f} MB）："},
    "page": {"en": "page", "zh": "页面"},
    "kb": {"en": "kB", "zh": "kB"},
    "files": {"en": "files", "zh": "文件数"},
    "x_budget": {"en": "× budget", "zh": "× 预算"},
    "environment": {"en": "Measured {date} · Python {python} · TensorFlow {tensorflow}",
                    "zh": "测量于 {date} · Python {python} · TensorFlow {tensorflow}"},
}


def _t(key: str, lang: str, **values) -> str:
    if lang not in ("en", "zh"):
        raise ValueError(f"`lang` must be 'en' or 'zh', not {lang!r}")
    return TEXT[key][lang].format(**values)


def latest(path: Optional[Path] = None) -> Optional[dict]:
    """The latest report (``bench-latest.json``), or None if there is none."""
    if path is not None and not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"`path` must be a file path; got {type(path).__name__}")
    path = Path(path) if path is not None else LATEST
    if not path.is_file():
        return None
    return json.loads(path.read_text(encoding="utf-8"))


def ratio(value, reference):
    """``value / reference``, or None when either is missing (or the reference is 0)."""
    if value is None or not reference:
        return None
    return value / reference


def _num(value, suffix: str = "") -> str:
    return "—" if value is None else f"{value:.2f}{suffix}"


def _table(headers, rows) -> list:
    return ["| " + " | ".join(headers) + " |", "|---|" + "---:|" * (len(headers) - 1)] + \
        ["| " + " | ".join(row) + " |" for row in rows]


def build_table(results: dict, lang: str = "en") -> str:
    """Builds and chapters against the floor, as a Markdown table.

    Ratios are recomputed from the seconds, so only ``floor_s``, each
    ``chapters[*]["seconds"]`` and the build times are needed.
    """
    floor = results["floor_s"]
    cold, warm = results.get("cold_build_s"), results.get("warm_build_s")
    samples = results.get("floor_samples_s") or []
    label = _t("floor", lang, source=FLOOR_SOURCE) + (_t("median_of", lang, n=len(samples)) if samples else "")
    rows = [(label, floor, 1.0 if floor else None, None)]
    rows += [(_t("chapter", lang, name=name), entry["seconds"], ratio(entry["seconds"], floor), None)
             for name, entry in results.get("chapters", {}).items()]
    if cold is not None:
        rows.append((_t("cold", lang), cold, ratio(cold, floor), 1.0))
    if warm is not None:
        rows.append((_t("warm", lang), warm, ratio(warm, floor), ratio(warm, cold)))
    headers = [_t(k, lang) for k in ("measurement", "seconds", "x_floor", "x_cold")]
    return "\n".join(_table(headers, [(label, _num(s), _num(f, "×"), _num(c, "×")) for label, s, f, c in rows]))


def detail_tables(results: dict, lang: str = "en") -> str:
    """Ops, explorer latency, experiments and page weights (those present)."""
    lines = []
    ops = results.get("ops") or {}
    if ops:
        rounds, n = results.get("op_rounds", 15), results.get("op_elements", 10 ** 6)
        lines += ["", _t("ops_intro", lang, n=n, rounds=rounds), ""]
        lines += _table([_t(k, lang) for k in ("op", "ms", "x_identity")],
                        [(name, f"{e['seconds'] * 1e3:.2f}", f"{e['ratio_to_identity']:.2f}×") for name, e in ops.items()])
        if CUSTOM in ops and TRICK in ops:
            lines += ["", _t("custom_vs_trick", lang, ratio=ops[CUSTOM]["seconds"] / ops[TRICK]["seconds"])]
    latency = results.get("explorer_latency")
    if latency:
        lines += ["", _t("latency_intro", lang), ""]
        lines += _table([_t(k, lang) for k in ("redraw", "ms", "x_bare")],
                        [(_t("live", lang), f"{latency['live_ms']:.1f}", f"{latency['ratio']:.2f}×"),
                         (_t("bare", lang), f"{latency['bare_ms']:.1f}", "1.00×")])
    experiments = results.get("experiments") or {}
    if experiments:
        lines += [""] + _table([_t("experiment", lang), _t("seconds", lang)],
                               [(f"`{name}`", f"{seconds:.2f}") for name, seconds in experiments.items()])
    weights, budget = results.get("page_weights") or {}, results.get("page_weight_budget")
    if weights and budget:
        lines += ["", _t("weights_intro", lang, budget=budget / 1e6), ""]
        lines += _table([_t(k, lang) for k in ("page", "kb", "files", "x_budget")],
                        [(f"`{page}`", f"{w['bytes'] / 1e3:.1f}", str(w["files"]), f"{w['bytes'] / budget:.2f}×")
                         for page, w in weights.items()])
    return "\n".join(lines) + ("\n" if lines else "")


def report(results: Optional[dict] = None, lang: str = "en"):
    """The whole report as ``IPython.display.Markdown``: where and when it was
    measured, then every table.  ``results`` defaults to :func:`latest`."""
    from IPython.display import Markdown

    _t("environment", lang, date="", python="", tensorflow="")  # checks `lang` first
    if results is not None and not isinstance(results, dict):
        raise TypeError(f"`results` must be a report dict (as `latest()` returns); got {type(results).__name__}")
    results = latest() if results is None else results
    if results is None:
        raise FileNotFoundError(f"no benchmark report at {LATEST}: run `make bench` in a clone of the book")
    head = _t("environment", lang, date=results.get("date", "?"), python=results.get("python", "?"),
              tensorflow=results.get("tensorflow", "?"))
    return Markdown(head + "\n\n" + build_table(results, lang) + "\n" + detail_tables(results, lang))
