#!/usr/bin/env python
"""Time the gradbook against its floor: a fresh kernel importing TensorFlow.

Run from the repository root (``make bench`` does this)::

    python -m tools.bench                      # floor + every chapter + cold/warm build
    python -m tools.bench --skip-build         # floor + chapters only
    python -m tools.bench --chapters 'chapters/en/*.md'
    python -m tools.bench --ops-only           # only the op, layer, larq and chapter 8 timings,
                                               # merged into gradlib/book/bench-latest.json
    python -m tools.bench --higher-only        # only chapter 8's timings, merged likewise

The machine is shared and noisy, so absolute seconds mean little; every number
is also reported as a ratio to the *floor* measured in the same run.

What is measured
----------------
floor
    A fresh Jupyter kernel (``python3``, ipykernel, driven by nbclient) runs a
    one-cell notebook ``import tensorflow as tf``.  Kernel start-up, the import
    and kernel shutdown are all inside the timing.  Measured ``FLOOR_RUNS``
    times; the median is the floor.
chapters
    Every page of ``_toc.yml`` in a language folder (``tools.book.pages``)
    except ``index.md`` and ``benchmarks.md`` (the appendix that shows these
    timings), read with jupytext and executed the same way as the floor
    (``gradlib/book/kernel.py``'s ``run_notebook``, ``kernel_env("build")``),
    in a fresh kernel whose cwd is the notebook's folder, 600 s per cell.
    A notebook that raises makes the script stop with a non-zero exit code.
cold build
    ``jupyter-book build <repo> --path-output <tmp> --builder html -n -W
    --keep-going`` into a fresh temporary directory (the output lands in
    ``<tmp>/_build/html``; the execution cache in ``<tmp>/_build/.jupyter_cache``,
    so the user's own ``_build`` is neither used nor touched).
warm build
    The same command again into the same directory, nothing changed.
ops, layer step, larq
    ``tools/bench_ops.py``: each op's forward + backward against
    ``tf.identity`` eagerly, in ``tf.function`` and under XLA; one training
    step of a ``QuantizedDense`` MLP against a ``Dense`` one; gradlib's
    ``ste_sign`` against larq's (in a subprocess, from the copy ``make bench``
    installs into ``.venv/larq-site``; a report without larq says why).
    ``--ops-only`` measures just these and merges them into the shipped
    report (same Python and TensorFlow only), with their own date.
chapter 8
    ``tools/bench_ops.py``'s ``higher_order_timings``: ``tape.gradient``,
    ``batch_jacobian`` and ``jacobian`` (with and without pfor) of one
    batched layer; the gradient, ``gradlib.hvp`` both ways and the full
    Hessian of ``sum(softplus(A x))`` as the dimension grows; all inside
    ``tf.function``.  Part of ``--ops-only``; ``--higher-only`` measures
    just these (about two minutes) and merges them the same way.

Output
------
Markdown tables on stdout (progress goes to stderr), plus ``bench-report.md``
and ``bench-report.json`` in the repository root.  A full run (builds and
ops) also copies the JSON to ``gradlib/book/bench-latest.json``, which the book's
appendix shows in both languages (``gradlib.benchmarks``): commit it.  The
JSON is flat::

    {
      "floor_s": 5.1,                      # median of the floor runs (s)
      "floor_samples_s": [5.3, 5.1, 5.0],  # every floor run, in order (s)
      "chapters": {                        # keyed by path relative to the repo
        "chapters/en/01_gradients.md": {"seconds": 9.8, "ratio_to_floor": 1.92},
        ...
      },
      "cold_build_s": 60.2,                # null with --skip-build
      "warm_build_s": 3.1,                 # null with --skip-build
      "cold_build_ratio_to_floor": 11.8,   # null with --skip-build
      "warm_build_ratio_to_floor": 0.61,   # null with --skip-build
      "warm_build_ratio_to_cold": 0.05,    # null with --skip-build
      "python": "3.11.2",                  # interpreter running the bench/kernels
      "tensorflow": "2.21.0",              # installed distribution version
      "date": "2026-01-01T12:00:00+00:00", # UTC, when the run started
      "ops": {"ste_round": {"seconds": 0.004, "ratio_to_identity": 1.3}, ...},  # in tf.function
      "ops_eager": {...}, "ops_xla": {...},  # the same ops eagerly and with jit_compile=True
      "op_elements": 1000000, "op_rounds": 51,
      "layer_step": {"function": {"dense_s": 0.007, "quantized_s": 0.008, "ratio": 1.1}, "xla": {...}},
      "layer_shape": {"batch": 128, "inputs": 256, "hidden": 512, "classes": 10}, "layer_rounds": 51,
      "larq": {"available": true, "versions": {...}, "ops": {"eager": {...}, ...},
               "gradlib_over_larq": {"eager": {"clipped at 1": 0.98, "unclipped": 1.0}, ...}},
                                           # or {"available": false, "reason": "..."}
      "ops_date": "2026-01-01T12:40:00+00:00",  # when the ops, layer and larq were measured
      "experiments": {"dann.moons_experiment('dann')": 2.5, ...},
      "explorer_latency": {"live_ms": 7.1, "bare_ms": 6.0, "ratio": 1.18},
      "page_weights": {"chapters/en/01_gradients.html": {"bytes": 412000, "files": 3}, ...},
      "page_weight_budget": 1500000
    }

To add a section: write a ``something_seconds(...)`` function, call it from
``run()``, store flat keys in the results dict and add its table to
``gradlib.benchmarks.detail_tables`` (English and Chinese labels).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import fnmatch
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

from tools import bench_ops, book, browsercheck

if __name__ == "__main__":  # as a command: the build's kernel environment here too (TensorFlow quiet)
    book.kernel().apply("build")

# The floor's code and the ratio rule have one home: the appendix's tables.
from gradlib.book.benchmarks import FLOOR_SOURCE, ratio  # noqa: E402

REPO = book.ROOT

DEFAULT_CHAPTERS = "chapters/*/*.md"
EXCLUDED_NAMES = {"index.md", "benchmarks.md"}  # the appendix shows these timings
FLOOR_RUNS = 3
KERNEL_NAME = "python3"
CELL_TIMEOUT_S = 600
REPORT_JSON = "bench-report.json"
REPORT_MD = "bench-report.md"
LATEST = "gradlib/book/bench-latest.json"  # what the book's appendix shows (gradlib.benchmarks)

class BenchError(RuntimeError):
    """A measurement failed (a notebook raised, the build failed, ...)."""


def log(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# Measurements
# --------------------------------------------------------------------------


def time_notebook(nb, cwd: Path, label: str) -> tuple[float, object]:
    """Execute ``nb`` in a fresh kernel with cwd ``cwd``; return (seconds, nb).

    The timing covers kernel start, every cell and kernel shutdown
    (``run_notebook`` of ``gradlib/book/kernel.py``, ``kernel_env("build")``).
    Any failure (cell error, timeout, dead kernel) becomes a BenchError that
    carries the runner's message and the kernel process's own output.
    """
    kernel = book.kernel()
    run = kernel.run_notebook(nb, cwd=cwd, env=kernel.kernel_env("build"), timeout=CELL_TIMEOUT_S)
    if run.error:
        extra = f"\n--- kernel process output ---\n{run.kernel_output}" if run.kernel_output else ""
        raise BenchError(f"{label} failed to execute: {run.error}{extra}")
    return run.seconds, run.notebook


def floor_notebook():
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_code_cell(FLOOR_SOURCE))
    nb.metadata["kernelspec"] = {"name": KERNEL_NAME, "display_name": "Python 3", "language": "python"}
    return nb


def floor_runs(runs: int = FLOOR_RUNS) -> list[float]:
    """Seconds for each of ``runs`` fresh kernels executing ``import tensorflow as tf``."""
    samples = []
    for i in range(runs):
        seconds, _ = time_notebook(floor_notebook(), REPO, "floor notebook")
        log(f"floor {i + 1}/{runs}: {seconds:.2f} s")
        samples.append(seconds)
    return samples


def stderr_cells(nb) -> int:
    """How many code cells wrote to stderr (the -W book build rejects these)."""
    return sum(
        1
        for cell in nb.cells
        if cell.get("cell_type") == "code"
        and any(o.get("output_type") == "stream" and o.get("name") == "stderr" for o in cell.get("outputs", []))
    )


def chapter_seconds(md_path: Path | str) -> float:
    """Seconds for a fresh kernel (cwd = the notebook's folder) to run one chapter."""
    md_path = Path(md_path).resolve()
    nb = book.read_notebook(md_path)
    if not any(c.cell_type == "code" for c in nb.cells):
        log(f"warning: {display_path(md_path)} has no code cells")
    seconds, nb = time_notebook(nb, md_path.parent, display_path(md_path))
    noisy = stderr_cells(nb)
    if noisy:
        log(f"warning: {display_path(md_path)}: {noisy} cell(s) wrote to stderr (the -W build would fail)")
    return seconds


def jupyter_book_executable() -> Path:
    """The jupyter-book script installed beside the running interpreter."""
    # Not resolved: in a venv sys.executable is a symlink into the base Python.
    bindir = Path(sys.executable).parent
    for name in ("jupyter-book", "jupyter-book.exe"):
        candidate = bindir / name
        if candidate.exists():
            return candidate
    raise BenchError(f"jupyter-book not found next to {sys.executable}")


def build_command(out_dir: Path | str) -> list[str]:
    return [
        str(jupyter_book_executable()), "build", str(REPO),
        "--path-output", str(out_dir),
        "--builder", "html", "-n", "-W", "--keep-going",
    ]  # fmt: skip


def build_seconds(out_dir: Path | str, label: str = "build") -> float:
    """Seconds for one whole ``jupyter-book build`` into ``out_dir``.

    The build's output goes to ``out_dir/<label>.log``; on failure its tail is
    included in the BenchError.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    log_path = out_dir / f"{label}.log"
    env = dict(os.environ)  # the site extension gives the build's kernels kernel_env("build")
    with open(log_path, "w", encoding="utf-8") as log_file:
        start = time.perf_counter()
        proc = subprocess.run(
            build_command(out_dir), cwd=REPO, env=env,
            stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        seconds = time.perf_counter() - start
    if proc.returncode != 0:
        tail = "".join(log_path.read_text(encoding="utf-8", errors="replace").splitlines(True)[-60:])
        raise BenchError(f"{label} failed (exit {proc.returncode}); full log: {log_path}\n{tail}")
    if not (out_dir / "_build" / "html" / "index.html").exists():
        raise BenchError(f"{label} succeeded but wrote no {out_dir}/_build/html/index.html")
    return seconds


# --------------------------------------------------------------------------
# Selection, ratios and formatting (pure; covered by tests/test_bench.py)
# --------------------------------------------------------------------------


def display_path(path: Path | str) -> str:
    """Path relative to the repo (POSIX) if inside it, else absolute."""
    path = Path(path).resolve()
    try:
        return path.relative_to(REPO.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def select_chapters(pattern: str = DEFAULT_CHAPTERS) -> list[Path]:
    """The pages of ``_toc.yml`` (``tools.book.pages``) whose path relative to
    the repo root (or absolute path) matches the glob ``pattern``, in toc
    order, without ``index.md`` and the benchmarks appendix."""
    selected = []
    for path in book.pages(root=REPO):
        if path.name in EXCLUDED_NAMES or not path.is_file():
            continue
        if fnmatch.fnmatchcase(display_path(path), pattern) or fnmatch.fnmatchcase(path.resolve().as_posix(), pattern):
            selected.append(path.resolve())
    return selected


def assemble_results(
    floor_samples: list[float],
    chapters: dict[str, float],
    cold_build_s: float | None = None,
    warm_build_s: float | None = None,
    *,
    python: str | None = None,
    tensorflow: str | None = None,
    date: str | None = None,
) -> dict:
    """The flat report dict (see the module docstring) from raw seconds."""
    floor = statistics.median(floor_samples)
    return {
        "floor_s": floor,
        "floor_samples_s": list(floor_samples),
        "chapters": {
            name: {"seconds": seconds, "ratio_to_floor": ratio(seconds, floor)} for name, seconds in chapters.items()
        },
        "cold_build_s": cold_build_s,
        "warm_build_s": warm_build_s,
        "cold_build_ratio_to_floor": ratio(cold_build_s, floor),
        "warm_build_ratio_to_floor": ratio(warm_build_s, floor),
        "warm_build_ratio_to_cold": ratio(warm_build_s, cold_build_s),
        "python": python if python is not None else platform.python_version(),
        "tensorflow": tensorflow if tensorflow is not None else tensorflow_version(),
        "date": date if date is not None else _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }


def format_report(results: dict) -> str:
    """Markdown tables (English): builds and chapters against the floor (ratios
    recomputed from the seconds), then ops, explorer latency, experiments and
    page weights.  The book's appendix shows the same tables in both
    languages (``gradlib.benchmarks``)."""
    from gradlib import benchmarks

    return benchmarks.build_table(results) + "\n" + benchmarks.detail_tables(results)


def format_markdown_document(results: dict) -> str:
    """bench-report.md: a title, the environment line, the table."""
    samples = ", ".join(f"{s:.2f}" for s in results.get("floor_samples_s") or [])
    lines = [
        "# gradbook benchmark",
        "",
        f"{results['date']} · Python {results['python']} · TensorFlow {results['tensorflow']}"
        + (f" · floor runs: {samples} s" if samples else ""),
        "",
        "Ratios are to the floor measured in the same run (the machine is shared and noisy).",
        "",
        format_report(results),
    ]
    return "\n".join(lines)


def tensorflow_version() -> str | None:
    """Version of the installed TensorFlow distribution (without importing it)."""
    for dist in ("tensorflow-cpu", "tensorflow", "tf-nightly-cpu", "tf-nightly"):
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return None


# --------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m tools.bench",
        description="Time the floor (fresh kernel importing TensorFlow), each chapter and cold/warm builds.",
    )
    parser.add_argument("--skip-build", action="store_true", help="only the floor and the chapters")
    parser.add_argument("--skip-ops", action="store_true", help="skip the op and experiment timings")
    parser.add_argument("--ops-only", action="store_true",
                        help=f"only the op, layer and larq timings, merged into {LATEST} (keeps its other keys)")
    parser.add_argument("--higher-only", action="store_true",
                        help=f"only chapter 8's Jacobian and Hessian timings, merged into {LATEST}")
    parser.add_argument("--site-only", action="store_true",
                        help=f"only Lighthouse and axe-core on every page of the built _build/html, merged into {LATEST}")
    parser.add_argument(
        "--chapters",
        metavar="GLOB",
        default=DEFAULT_CHAPTERS,
        help=f"pages of _toc.yml to time, a glob relative to the repo root (default: {DEFAULT_CHAPTERS}; "
        "index.md and benchmarks.md are always skipped)",
    )
    return parser.parse_args(argv)


def run(args: argparse.Namespace) -> dict:
    started = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")

    chapters = select_chapters(args.chapters)
    if not chapters:
        log(f"warning: no chapter matches {args.chapters!r}")

    log(f"floor: {FLOOR_RUNS} fresh kernels running `{FLOOR_SOURCE}`")
    samples = floor_runs(FLOOR_RUNS)
    log(f"floor median: {statistics.median(samples):.2f} s")

    chapter_times: dict[str, float] = {}
    for i, path in enumerate(chapters, 1):
        name = display_path(path)
        log(f"chapter {i}/{len(chapters)}: {name} ...")
        chapter_times[name] = chapter_seconds(path)
        log(f"chapter {name}: {chapter_times[name]:.2f} s")

    cold = warm = out_dir = weights_from = None
    if not args.skip_build:
        out_dir = Path(tempfile.mkdtemp(prefix="gradbook-bench-"))
        log(f"cold build into {out_dir} ...")
        cold = build_seconds(out_dir, "cold-build")  # on failure the dir is kept for its log
        log(f"cold build: {cold:.2f} s")
        log("warm rebuild (same directory) ...")
        warm = build_seconds(out_dir, "warm-build")
        log(f"warm rebuild: {warm:.2f} s")
        weights_from = out_dir / "_build" / "html"

    results = assemble_results(samples, chapter_times, cold, warm, date=started)
    if not getattr(args, "skip_ops", False):
        results.update(op_sections())
        log("experiment timings ...")
        results["experiments"] = bench_ops.experiment_timings()
        log("live explorer latency (fresh kernel) ...")
        results["explorer_latency"] = bench_ops.explorer_latency()
    if weights_from is not None:
        log("page weights (headless Chromium) ...")
        results["page_weights"] = page_weights(weights_from)
        results["page_weight_budget"] = browsercheck.WEIGHT_BUDGET
        log("Lighthouse and axe-core on every page (headless Chromium) ...")
        results.update(site_sections(weights_from))
    if out_dir is not None:
        shutil.rmtree(out_dir, ignore_errors=True)
    return results


def op_sections() -> dict:
    """The op, layer-step and larq timings (``tools/bench_ops.py``) as report keys, with their date."""
    started = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    log("op timings (forward + backward on 10^6 elements; eagerly, tf.function, XLA) ...")
    modes = bench_ops.op_timings_by_mode()
    sections = {"ops": modes["function"], "ops_eager": modes["eager"], "ops_xla": modes["xla"],
                "op_elements": bench_ops.N_ELEMENTS, "op_rounds": bench_ops.ROUNDS}
    log("one training step: QuantizedDense MLP against Dense MLP ...")
    sections["layer_step"] = bench_ops.layer_step_timings(others={"dorefa_weights": "dorefa_weights"})
    sections["layer_shape"], sections["layer_rounds"] = dict(bench_ops.LAYER_SHAPE), bench_ops.ROUNDS
    log("gradlib's ste_sign against larq's (subprocess) ...")
    sections["larq"] = bench_ops.larq_timings()
    if not sections["larq"]["available"]:
        log(f"larq not measured: {sections['larq']['reason']}")
    sections.update(higher_sections())
    sections["ops_date"] = started
    sections["machine"] = machine()
    return sections


def machine() -> dict:
    """Where the op timings ran: the CPU model, ``os.cpu_count()`` and TensorFlow's intra-op threads
    (the ``TF_NUM_INTRAOP_THREADS`` setting, or 0 for TensorFlow's default, one per core)."""
    import tensorflow as tf

    model = platform.processor() or "?"
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpu": model, "cpu_count": os.cpu_count(),
            "intra_op_threads": tf.config.threading.get_intra_op_parallelism_threads(),
            "TF_NUM_INTRAOP_THREADS": os.environ.get("TF_NUM_INTRAOP_THREADS")}


def higher_sections() -> dict:
    """Chapter 8's timings alone (``--higher-only``), with the date and machine of the measurement."""
    started = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    log("chapter 8: Jacobians, H·v and full Hessians ...")
    return {"higher_order": {**bench_ops.higher_order_timings(), "date": started, "machine": machine()}}


def merge_op_sections(path: Path | None = None, sections=None) -> dict:
    """Measure :func:`op_sections` (or ``sections()``) and merge them into the shipped report
    (``LATEST``), keeping every other key; refuse when the report was measured
    with another Python or TensorFlow (its ratios would mix two setups)."""
    path = REPO / LATEST if path is None else Path(path)
    if not path.is_file():
        raise BenchError(f"no {display_path(path)} to merge into: run a full `make bench` first")
    results = json.loads(path.read_text(encoding="utf-8"))
    here = {"python": platform.python_version(), "tensorflow": tensorflow_version()}
    if any(results.get(key) != value for key, value in here.items()):
        raise BenchError(f"{display_path(path)} was measured with Python {results.get('python')} and TensorFlow "
                         f"{results.get('tensorflow')}, this is {here['python']} / {here['tensorflow']}: run a full "
                         "`make bench`")
    results.update((op_sections if sections is None else sections)())
    path.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    log(f"merged the new timings into {display_path(path)}")
    return results


def page_weights(html: Path) -> dict:
    """``{page: {"bytes", "files"}}``: what each chapter page of the site in
    ``html`` transfers outside ``_static/``, loaded in headless Chromium
    (the browser tests' measure); empty when no browser is available."""
    bc = browsercheck
    missing = bc.browser_missing()
    if missing:
        log(f"page weights skipped: {missing}")
        return {}
    weights = {}
    with bc.serve(html) as base, bc.launch() as browser:
        for path in [book.site_path(md, REPO) for md in book.pages(root=REPO)]:
            with bc.open_page(browser, base, path) as visit:
                weight = bc.page_weight(visit)
            weights[path] = {"bytes": weight.total, "files": len(weight.files)}
    return weights


#: Lighthouse runs per page; the report keeps each page's median run (its timings vary from run to run)
SITE_RUNS = 3


def site_sections(html: Path | None = None) -> dict:
    """``{"site_quality": {page: {scores, metrics, axe}}, "site_targets", "site_date"}``: Lighthouse
    (desktop, no throttling) and axe-core's violations by impact, light and dark
    (``tools/sitequality.py``); empty when the tools or the browser are missing."""
    from tools import sitequality

    html = browsercheck.HTML if html is None else Path(html)
    if reason := sitequality.missing():
        log(f"Lighthouse and axe skipped: {reason}")
        return {}
    started = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    report = sitequality.measure(html, runs=SITE_RUNS)
    log("\n" + sitequality.table(report))
    quality = {page: {**r["lighthouse"]["scores"], **r["lighthouse"]["metrics"],
                      "axe": sitequality.axe_counts(r["axe"]), "lighthouse": r["lighthouse"]["lighthouse"]}
               for page, r in report.items()}
    return {"site_quality": quality, "site_targets": dict(sitequality.TARGETS), "site_date": started,
            "site_runs": SITE_RUNS}


def write_reports(results: dict) -> None:
    text = json.dumps(results, indent=2, ensure_ascii=False) + "\n"
    (REPO / REPORT_JSON).write_text(text, encoding="utf-8")
    (REPO / REPORT_MD).write_text(format_markdown_document(results), encoding="utf-8")
    # The book's appendix shows the latest full run (commit it with the change it measures).
    if results.get("cold_build_s") is not None and results.get("ops"):
        (REPO / LATEST).write_text(text, encoding="utf-8")
        log(f"wrote {REPORT_JSON}, {REPORT_MD} and {LATEST}")
    else:
        log(f"wrote {REPORT_JSON} and {REPORT_MD} ({LATEST} keeps the last full run)")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.ops_only or args.higher_only or args.site_only:
        sections = higher_sections if args.higher_only else site_sections if args.site_only else None
        try:
            results = merge_op_sections(sections=sections)
        except BenchError as exc:
            log(f"FAILED: {exc}")
            return 1
        print(format_report(results), end="")
        return 0
    try:
        results = run(args)
    except BenchError as exc:
        log(f"FAILED: {exc}")
        return 1
    write_reports(results)
    print(format_report(results), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
