"""What the book's code costs: the latest ``make bench`` report, as tables.

``make bench`` (``tools/bench.py``) measures, in one run on one machine, the
cold and warm builds and each chapter against a floor (a fresh kernel that
only imports TensorFlow), each gradlib op's forward + backward time against
``tf.identity`` (eagerly, in ``tf.function`` and under XLA), one training
step of a ``QuantizedDense`` MLP against the same ``Dense`` MLP, gradlib's
``ste_sign`` against larq's, the experiments, the live explorer's redraw
against a bare matplotlib redraw, and the weight of every chapter page.  It writes
``bench-report.{md,json}`` and copies the JSON next to this module
(``bench-latest.json``, shipped with gradlib), where the book's appendix
reads it when the book is built.

Only ratios measured within one run are meaningful: the machines are shared
and noisy, so absolute seconds vary from run to run.
"""

from __future__ import annotations

import collections
import json
import math
import os
from pathlib import Path
from typing import Optional

__all__ = ["LATEST", "latest", "report"]  # FLOOR_SOURCE and ratio are for tools/bench.py; GOALS,
# ALIASES, verdict, verdict_label and quantizer_goal for the appendix page

LATEST = Path(__file__).with_name("bench-latest.json")
FLOOR_SOURCE = "import tensorflow as tf"
CUSTOM = "round, tf.custom_gradient STE"
TRICK = "round, stop_gradient trick (straight_through)"
#: the op modes of the report: results key -> label key (ops_* keys are absent from older reports)
OP_MODES = {"ops_eager": "eager", "ops": "function", "ops_xla": "xla"}
#: issue 13's goals, as ratios measured in one run: a quantizer's forward + backward under XLA
#: against tf.identity's, a QuantizedDense training step against a Dense one, gradlib's
#: ste_sign against larq's
GOALS = {"quantizer_xla": 1.3, "layer_step": 1.3, "gradlib_over_larq": 1.0}
#: the op names (prefixes) that are gradlib's quantizers, which the XLA goal is about: the functions of
#: ``gradlib.layers.QUANTIZERS`` (what a ``QuantizedDense`` kernel or a ``Quantizer`` may name)
QUANTIZERS = ("ste_sign", "ste_round", "xnor_binarize", "dorefa_weights", "sign_with_surrogate(")
#: timed ops that compile to the same program as another one (alias -> the op it repeats): they are
#: counted once, and their difference is the noise of the run
ALIASES = {"sign_with_surrogate('identity')": "ste_sign",  # the same optimized HLO
           "sign_with_surrogate('clipped')": "ste_sign(clip=1)"}  # the same code path (a mask at 1.0)

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
        "en": "`tf.custom_gradient` against the stop_gradient trick (the same STE for round), in `tf.function`: "
              "{ratio:.2f}×.",
        "zh": "`tf.custom_gradient` 与 stop_gradient 技巧（同一个 round 的直通估计器）之比（`tf.function` 中）："
              "{ratio:.2f}×。"},
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
    "site_intro": {
        "en": "Each page of the site in Lighthouse {version} (desktop, no throttling; each page's median of {runs} "
              "runs; {date}) and axe-core "
              "(light and dark mode). Targets: performance ≥ {performance}, accessibility {accessibility}, "
              "best practices {best_practices}, SEO ≥ {seo}, layout shift ≤ {cls}, no serious or critical axe "
              "violation:",
        "zh": "网站每个页面在 Lighthouse {version}（桌面模式，不限速；每个页面取 {runs} 次运行的中位数；{date}）和 axe-core（浅色与深色模式）中的结果。"
              "目标：性能 ≥ {performance}，无障碍 {accessibility}，最佳实践 {best_practices}，SEO ≥ {seo}，布局偏移 ≤ {cls}，"
              "axe 没有严重（serious）或致命（critical）的违规："},
    "site_none": {
        "en": "This report has no Lighthouse or axe-core figures for the site's pages: `make bench` measures "
              "them on a built site (`make book` first).",
        "zh": "这份报告没有网站各页面的 Lighthouse 与 axe-core 结果：`make bench` 在构建好的网站上测量它们"
              "（先运行 `make book`）。"},
    "performance": {"en": "performance", "zh": "性能"},
    "accessibility": {"en": "accessibility", "zh": "无障碍"},
    "best-practices": {"en": "best practices", "zh": "最佳实践"},
    "seo": {"en": "SEO", "zh": "SEO"},
    "cls": {"en": "layout shift", "zh": "布局偏移"},
    "tbt": {"en": "blocking ms", "zh": "阻塞毫秒"},
    "axe_blocking": {"en": "axe serious + critical", "zh": "axe 严重 + 致命"},
    "environment": {"en": "Measured {date} · Python {python} · TensorFlow {tensorflow}",
                    "zh": "测量于 {date} · Python {python} · TensorFlow {tensorflow}"},
    "ops_date": {"en": " (op, layer and larq timings: {date})", "zh": "（运算、层与 larq 的计时：{date}）"},
    "modes_intro": {
        "en": "Forward + backward on {n:,} float32 elements with a random upstream gradient, median of "
              "{rounds} rounds, as a multiple of `tf.identity` in the same mode ({reference}):",
        "zh": "在 {n:,} 个 float32 元素上的前向 + 反向（上游梯度为随机张量），{rounds} 轮的中位数，"
              "表示为同一模式下 `tf.identity` 耗时的倍数（{reference}）："},
    "eager": {"en": "eagerly", "zh": "即时执行"},
    "function": {"en": "`tf.function`", "zh": "`tf.function`"},
    "xla": {"en": "XLA", "zh": "XLA"},
    "identity_ms": {"en": "{mode}: {ms:.2f} ms", "zh": "{mode}：{ms:.2f} 毫秒"},
    "quantizer_goal": {
        "en": "Goal under XLA: ≤ {goal:.1f}× identity. Within it: {met}. Above it: {missed}.",
        "zh": "XLA 下的目标：≤ identity 的 {goal:.1f} 倍。达到的：{met}。未达到的：{missed}。"},
    "undecided_list": {"en": " Undecided (the interval of the median straddles the goal): {names}.",
                  "zh": "未定（中位数的区间跨过目标）：{names}。"},
    "spread": {"en": "In brackets: the interquartile range of the per-round ratios (how much one round varies). "
                     "A goal is judged by a 95 % bootstrap interval of the ratio shown (rounds resampled in pairs).",
               "zh": "括号中：逐轮比值的四分位距（单轮的波动）。目标按所示比值的 95% 自助法区间（按轮成对重抽样）判定。"},
    "alias": {"en": " (= {of})", "zh": "（= {of}）"},
    "aliases_note": {"en": "Marked (= …): the same compiled program as the op named, timed twice; counted once.",
                     "zh": "标有（= …）的：与所指的运算是同一个编译后的程序，计时了两次，只算一次。"},
    "machine": {"en": " · {cpu}, {cpu_count} cores, intra-op threads {threads}",
                "zh": " · {cpu}，{cpu_count} 个核，算子内线程数 {threads}"},
    "kernel_quantizer": {"en": "kernel quantizer", "zh": "权重量化器"},
    "met": {"en": "met", "zh": "达到"},
    "missed": {"en": "missed", "zh": "未达到"},
    "undecided": {"en": "undecided", "zh": "未定"},
    "none": {"en": "none", "zh": "无"},
    "sep": {"en": "; ", "zh": "；"},
    "list_sep": {"en": ", ", "zh": "、"},
    "layer_intro": {
        "en": "One training step (`train_on_batch`, Adam) of an MLP of three layers, all `Dense` or all "
              "`QuantizedDense` with the kernel quantizer shown{shape}, median of {rounds} rounds; goal ≤ {goal:.1f}× "
              "the `Dense` step:",
        "zh": "一个三层 MLP 的一步训练（`train_on_batch`，Adam），各层全为 `Dense`，或全为以所示量化器 "
              "量化权重的 `QuantizedDense`{shape}，{rounds} 轮的中位数；目标：≤ `Dense` 那一步的 {goal:.1f} 倍："},
    "mlp_shape": {"en": " ({inputs} → {hidden} → {hidden} → {classes}, batch {batch})",
                  "zh": "（{inputs} → {hidden} → {hidden} → {classes}，批大小 {batch}）"},
    "compiled": {"en": "compiled", "zh": "编译方式"},
    "dense_ms": {"en": "`Dense` ms", "zh": "`Dense` 毫秒"},
    "quantized_ms": {"en": "`QuantizedDense` ms", "zh": "`QuantizedDense` 毫秒"},
    "x_dense": {"en": "× Dense", "zh": "× Dense"},
    "larq_intro": {
        "en": "gradlib's `ste_sign` against larq {version}'s (tf_keras {tf_keras}, in a subprocess), forward + "
              "backward on {n:,} elements, as a multiple of `tf.identity` in the same mode:",
        "zh": "gradlib 的 `ste_sign` 与 larq {version} 的 `ste_sign`（tf_keras {tf_keras}，在子进程中）对比，"
              "在 {n:,} 个元素上的前向 + 反向，表示为同一模式下 `tf.identity` 耗时的倍数："},
    "larq_pairs": {
        "en": "gradlib's time over larq's (goal ≤ {goal:.2f}×, never slower):",
        "zh": "gradlib 的耗时除以 larq 的耗时（目标：≤ {goal:.2f} 倍，即从不更慢）："},
    "comparison": {"en": "comparison", "zh": "对比"},
    "clipped at 1": {"en": "clipped at 1 (larq's default)", "zh": "在 1 处截断（larq 的默认值）"},
    "unclipped": {"en": "unclipped", "zh": "不截断"},
    "larq_missing": {"en": "larq was not measured: {reason}", "zh": "没有测量 larq：{reason}"},
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


def verdict(ratio: float, interval=None, goal: float = 1.0) -> str:
    """``"met"``, ``"missed"`` or ``"undecided"``: with an ``interval`` ([low, high],
    the report's ``ratio_ci``, a bootstrap interval of the ratio shown), met when all of it is within ``goal``, missed when all of it is
    above, undecided when it straddles the goal; without one (an older
    report), the median alone decides."""
    if interval and None not in interval:
        return "met" if interval[1] <= goal else "missed" if interval[0] > goal else "undecided"
    return "met" if ratio <= goal else "missed"


def verdict_label(verdict_: str, lang: str = "en") -> str:
    """A :func:`verdict` in words of ``lang``: met / missed / undecided (达到 / 未达到 / 未定)."""
    if verdict_ not in ("met", "missed", "undecided"):
        raise ValueError(f"not a verdict: {verdict_!r}")
    return _t(verdict_, lang)


def quantizer_goal(results: dict) -> Optional[dict]:
    """``{"met": [...], "missed": [...], "undecided": [...], "aliases": {...}}``:
    gradlib's quantizers (:data:`QUANTIZERS`) classified against :data:`GOALS`
    ``["quantizer_xla"]`` times ``tf.identity`` under XLA (:func:`verdict`),
    each distinct program once: an op of :data:`ALIASES` whose original was
    timed too is left out of the three lists and named in ``aliases``
    (None without XLA timings)."""
    ops = results.get("ops_xla") or {}
    if not ops:
        return None
    aliases = {name: of for name, of in ALIASES.items() if name in ops and of in ops}
    names = [name for name in ops if name.startswith(QUANTIZERS) and name not in aliases]
    goal = {"met": [], "missed": [], "undecided": []}
    for name in names:
        goal[verdict(ops[name]["ratio_to_identity"], ops[name].get("ratio_ci"), GOALS["quantizer_xla"])].append(name)
    return {**goal, "aliases": aliases}


def _cell(ratio, iqr=None) -> str:
    """``1.23×``, with the spread when there is one: ``1.23× (1.15–1.31)``."""
    if ratio is None:
        return "—"
    if iqr and None not in iqr:
        return f"{ratio:.2f}× ({iqr[0]:.2f}–{iqr[1]:.2f})"
    return f"{ratio:.2f}×"


def _names(names, lang: str) -> str:
    return _t("list_sep", lang).join(f"`{n}`" for n in names) if names else _t("none", lang)


def _op_tables(results: dict, lang: str) -> list:
    lines = []
    ops = results.get("ops") or {}
    rounds, n = results.get("op_rounds", 15), results.get("op_elements", 10 ** 6)
    modes = {key: label for key, label in OP_MODES.items() if results.get(key)}
    if ops and len(modes) > 1:  # a report with every mode: one column per mode
        reference = next(iter(ops))
        idents = _t("sep", lang).join(_t("identity_ms", lang, mode=_t(label, lang), ms=results[key][reference]["seconds"] * 1e3)
                           for key, label in modes.items() if reference in results[key])
        lines += ["", _t("modes_intro", lang, n=n, rounds=rounds, reference=idents), ""]
        aliases = {name: of for name, of in ALIASES.items() if name in ops and of in ops}
        rows = [[name + (_t("alias", lang, of=aliases[name]) if name in aliases else "")]
                + [_cell(results[key][name]["ratio_to_identity"], results[key][name].get("ratio_iqr"))
                   if name in results[key] else "—" for key in modes] for name in ops]
        lines += _table([_t("op", lang)] + [_t(label, lang) for label in modes.values()], rows)
        notes = ([_t("spread", lang)] if any(e.get("ratio_iqr") for e in ops.values()) else []) + \
            ([_t("aliases_note", lang)] if aliases else [])
        if notes:
            lines += ["", " ".join(notes) if lang == "en" else "".join(notes)]
        goal = quantizer_goal(results)
        if goal is not None:
            text = _t("quantizer_goal", lang, goal=GOALS["quantizer_xla"], met=_names(goal["met"], lang),
                      missed=_names(goal["missed"], lang))
            if goal["undecided"]:
                text += _t("undecided_list", lang, names=_names(goal["undecided"], lang))
            lines += ["", text]
    elif ops:  # an older report: tf.function only
        lines += ["", _t("ops_intro", lang, n=n, rounds=rounds), ""]
        lines += _table([_t(k, lang) for k in ("op", "ms", "x_identity")],
                        [(name, f"{e['seconds'] * 1e3:.2f}", f"{e['ratio_to_identity']:.2f}×") for name, e in ops.items()])
    if CUSTOM in ops and TRICK in ops:
        lines += ["", _t("custom_vs_trick", lang, ratio=ops[CUSTOM]["seconds"] / ops[TRICK]["seconds"])]
    return lines


def _layer_table(results: dict, lang: str) -> list:
    step = results.get("layer_step") or {}
    if not step:
        return []
    shape = results.get("layer_shape")
    lines = ["", _t("layer_intro", lang, shape=_t("mlp_shape", lang, **shape) if shape else "",
                    rounds=results.get("layer_rounds", results.get("op_rounds", 15)), goal=GOALS["layer_step"]), ""]
    rows = []
    for mode, e in step.items():
        kernels = {"ste_sign": e, **(e.get("others") or {})}
        rows += [(_t(mode, lang), f"`{kernel}`", f"{e['dense_s'] * 1e3:.2f}", f"{q['quantized_s'] * 1e3:.2f}",
                  _cell(q["ratio"], q.get("ratio_iqr"))) for kernel, q in kernels.items()]
    lines += _table([_t(k, lang) for k in ("compiled", "kernel_quantizer", "dense_ms", "quantized_ms", "x_dense")],
                    rows)
    return lines


def _larq_tables(results: dict, lang: str) -> list:
    larq = results.get("larq")
    if not larq:
        return []
    if not larq.get("available"):
        return ["", _t("larq_missing", lang, reason=larq.get("reason", "?"))]
    ops, versions = larq["ops"], larq.get("versions", {})
    modes = list(ops)
    names = list(ops[modes[0]])
    lines = ["", _t("larq_intro", lang, version=versions.get("larq", "?"), tf_keras=versions.get("tf_keras", "?"),
                    n=results.get("op_elements", 10 ** 6)), ""]
    lines += _table([_t("op", lang)] + [_t(mode, lang) for mode in modes],
                    [[f"`{name}`"] + [f"{ops[mode][name]['ratio_to_identity']:.2f}×" for mode in modes]
                     for name in names])
    pairs = larq.get("gradlib_over_larq") or {}
    spreads = larq.get("gradlib_over_larq_iqr") or {}
    if pairs:
        labels = list(pairs[modes[0]])
        lines += ["", _t("larq_pairs", lang, goal=GOALS["gradlib_over_larq"]), ""]
        lines += _table([_t("comparison", lang)] + [_t(mode, lang) for mode in modes],
                        [[_t(label, lang)] + [_cell(pairs[mode][label], spreads.get(mode, {}).get(label))
                                              for mode in modes] for label in labels])
    return lines


def detail_tables(results: dict, lang: str = "en") -> str:
    """Ops (in every mode measured), the layer step, larq, explorer latency,
    experiments, page weights and each page's Lighthouse and axe figures
    (those present; older reports lack some)."""
    _t("op", lang)  # checks `lang`
    lines = _op_tables(results, lang) + _layer_table(results, lang) + _larq_tables(results, lang)
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
    if results:  # an empty report has no tables, and no sentence about a missing one
        lines += _site_table(results, lang)
    return "\n".join(lines) + ("\n" if lines else "")


#: the Lighthouse categories of a page's entry in ``site_quality``, in the table's order
SITE_SCORES = ("performance", "accessibility", "best-practices", "seo")


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _num3(value) -> str:
    return f"{value:.3f}" if _number(value) else "—"


def _text(value) -> str:
    return str(value) if _number(value) else "—"  # Lighthouse gives None for a score it could not compute


def _axe_blocking(axe) -> str:
    """axe's serious + critical count, or a dash when axe did not measure the page."""
    counts = [axe.get(impact) for impact in ("serious", "critical")] if isinstance(axe, dict) else []
    if not any(_number(count) for count in counts):
        return "—"
    return str(sum(count for count in counts if _number(count)))


def _site_table(results: dict, lang: str) -> list:
    """Lighthouse's scores and axe's serious + critical count per page (``make bench``'s
    ``site_quality``, from ``tools/sitequality.py``), or a sentence saying the report has none.
    What a partial report lacks shows as a dash (or ``?`` in the sentence above the table)."""
    quality, targets = results.get("site_quality"), results.get("site_targets")
    if not quality or not isinstance(quality, dict):
        return ["", _t("site_none", lang)]
    targets = collections.defaultdict(lambda: "?", {key.replace("-", "_"): value for key, value
                                                    in (targets.items() if isinstance(targets, dict) else ())})
    entries = {page: q if isinstance(q, dict) else {} for page, q in quality.items()}
    version = next((q["lighthouse"] for q in entries.values() if q.get("lighthouse")), "?")
    targets.update(version=version, date=results.get("site_date") or "?", runs=results.get("site_runs") or "?")
    header = [_t(k, lang) for k in ("page", *SITE_SCORES, "cls", "tbt", "axe_blocking")]  # checks lang
    lines = ["", TEXT["site_intro"][lang].format_map(targets), ""]
    rows = [(f"`{page}`", *(_text(q.get(key)) for key in SITE_SCORES), _num3(q.get("cls")), _text(q.get("tbt_ms")),
             _axe_blocking(q.get("axe"))) for page, q in entries.items()]
    return lines + _table(header, rows)


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
    if results.get("ops_date") and results["ops_date"] != results.get("date"):
        head += _t("ops_date", lang, date=results["ops_date"])
    machine = results.get("machine")
    if machine:
        threads = machine.get("TF_NUM_INTRAOP_THREADS") or machine.get("intra_op_threads") or "default"
        head += _t("machine", lang, cpu=machine.get("cpu", "?"), cpu_count=machine.get("cpu_count", "?"),
                   threads=threads)
    return Markdown(head + "\n\n" + build_table(results, lang) + "\n" + detail_tables(results, lang))
