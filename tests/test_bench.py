"""Fast tests for tools/bench.py: no kernels, no builds (the op timings import TensorFlow)."""

from __future__ import annotations

import functools
import json
import os
import re
from pathlib import Path

import pytest

from tools import bench as bench_module


@pytest.fixture(scope="module")
def bench():
    return bench_module


FAKE = dict(
    floor_samples=[4.0, 5.0, 7.0],  # median 5.0
    chapters={"chapters/en/01_gradients.md": 12.5, "chapters/zh/01_gradients.md": 10.0},
    cold=80.0,
    warm=4.0,
)


def fake_results(bench, *, with_build=True):
    return bench.assemble_results(
        FAKE["floor_samples"],
        FAKE["chapters"],
        FAKE["cold"] if with_build else None,
        FAKE["warm"] if with_build else None,
        python="3.11.0",
        tensorflow="2.21.0",
        date="2026-01-01T00:00:00+00:00",
    )


def table_rows(markdown: str) -> dict[str, list[float | None]]:
    """{row label: [seconds, x floor, x cold]} parsed back from the table."""
    rows = {}
    for line in markdown.splitlines():
        if not line.startswith("| ") or line.startswith("| measurement") or line.startswith("|---"):
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert len(cells) == 4, line
        values = []
        for cell in cells[1:]:
            if cell == "—":
                values.append(None)
            else:
                match = re.fullmatch(r"(\d+\.\d\d)×?", cell)
                assert match, f"unexpected cell {cell!r} in {line!r}"
                values.append(float(match.group(1)))
        rows[cells[0]] = values
    return rows


def find_row(rows, needle):
    matches = [label for label in rows if needle in label]
    assert len(matches) == 1, (needle, list(rows))
    return rows[matches[0]]


def test_assemble_results_is_flat_and_numerically_right(bench):
    results = fake_results(bench)
    assert results["floor_s"] == 5.0
    assert results["floor_samples_s"] == [4.0, 5.0, 7.0]
    assert results["chapters"]["chapters/en/01_gradients.md"] == {"seconds": 12.5, "ratio_to_floor": 2.5}
    assert results["chapters"]["chapters/zh/01_gradients.md"]["ratio_to_floor"] == pytest.approx(2.0)
    assert results["cold_build_s"] == 80.0 and results["warm_build_s"] == 4.0
    assert results["cold_build_ratio_to_floor"] == pytest.approx(16.0)
    assert results["warm_build_ratio_to_floor"] == pytest.approx(0.8)
    assert results["warm_build_ratio_to_cold"] == pytest.approx(0.05)
    for key in ("python", "tensorflow", "date"):
        assert isinstance(results[key], str)
    # Flat apart from the chapters map, and JSON-serialisable.
    assert all(not isinstance(v, dict) for k, v in results.items() if k != "chapters")
    assert json.loads(json.dumps(results)) == results


def test_format_report_numbers(bench):
    rows = table_rows(bench.format_report(fake_results(bench)))
    assert len(rows) == 5
    assert find_row(rows, "floor") == [5.0, 1.0, None]
    assert find_row(rows, "chapters/en/01_gradients.md") == [12.5, 2.5, None]
    assert find_row(rows, "chapters/zh/01_gradients.md") == [10.0, 2.0, None]
    assert find_row(rows, "cold build") == [80.0, 16.0, 1.0]
    assert find_row(rows, "warm rebuild") == [4.0, 0.8, 0.05]


def test_format_report_without_build(bench):
    results = fake_results(bench, with_build=False)
    assert results["cold_build_s"] is None and results["warm_build_ratio_to_cold"] is None
    rows = table_rows(bench.format_report(results))
    assert len(rows) == 3
    assert not any("build" in label for label in rows)


def test_format_report_recomputes_ratios_from_seconds(bench):
    # Only the seconds are needed; stale or missing ratios do not leak in.
    results = {
        "floor_s": 2.0,
        "chapters": {"a.md": {"seconds": 3.0, "ratio_to_floor": 99.0}},
        "cold_build_s": 10.0,
        "warm_build_s": 1.0,
    }
    rows = table_rows(bench.format_report(results))
    assert find_row(rows, "a.md") == [3.0, 1.5, None]
    assert find_row(rows, "warm") == [1.0, 0.5, 0.1]


def test_markdown_document_contains_table_and_versions(bench):
    doc = bench.format_markdown_document(fake_results(bench))
    assert "TensorFlow 2.21.0" in doc and "Python 3.11.0" in doc
    assert bench.format_report(fake_results(bench)) in doc


@pytest.fixture
def fake_repo(bench, tmp_path, monkeypatch):
    for rel in [
        "chapters/en/index.md",
        "chapters/en/01_gradients.md",
        "chapters/en/02_custom.md",
        "chapters/en/notes.txt",
        "chapters/en/01_gradients.ipynb",
        "chapters/zh/index.md",
        "chapters/zh/01_gradients.md",
        "chapters/glossary.md",
        "chapters/en/03_not_in_toc.md",
        "index.md",
    ]:
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("# x\n", encoding="utf-8")
    (tmp_path / "_toc.yml").write_text(
        "format: jb-book\nroot: index\nparts:\n"
        "  - chapters:\n      - file: chapters/en/index\n      - file: chapters/en/01_gradients\n"
        "      - file: chapters/en/02_custom\n"
        "  - chapters:\n      - file: chapters/zh/index\n      - file: chapters/zh/01_gradients\n"
        "  - chapters:\n      - file: chapters/glossary\n", encoding="utf-8")
    monkeypatch.setattr(bench, "REPO", tmp_path)
    return tmp_path


def rels(bench, paths):
    return [bench.display_path(p) for p in paths]


def test_default_glob_selects_chapters_only(bench, fake_repo):
    assert rels(bench, bench.select_chapters()) == [
        "chapters/en/01_gradients.md",
        "chapters/en/02_custom.md",
        "chapters/zh/01_gradients.md",
    ]


@pytest.mark.parametrize(
    "pattern, expected",
    [
        ("chapters/en/*.md", ["chapters/en/01_gradients.md", "chapters/en/02_custom.md"]),
        ("chapters/*/01_*", ["chapters/en/01_gradients.md", "chapters/zh/01_gradients.md"]),
        ("chapters/zh/*", ["chapters/zh/01_gradients.md"]),
        ("chapters/**/*.md", ["chapters/en/01_gradients.md", "chapters/en/02_custom.md", "chapters/zh/01_gradients.md"]),
        ("chapters/*/index.md", []),
        ("chapters/glossary.md", []),
        ("chapters/fr/*.md", []),
    ],
)
def test_chapters_glob(bench, fake_repo, pattern, expected):
    assert rels(bench, bench.select_chapters(pattern)) == expected


def test_only_pages_of_the_toc_are_timed(bench, fake_repo):
    assert bench.select_chapters("chapters/en/03_*") == []  # on disk, not in _toc.yml
    absolute = (fake_repo / "chapters/en/02_custom.md").resolve()
    assert bench.select_chapters(absolute.as_posix()) == [absolute]
    assert bench.display_path(absolute) == "chapters/en/02_custom.md"


def test_parse_args(bench):
    args = bench.parse_args([])
    assert args.chapters == bench.DEFAULT_CHAPTERS and not args.skip_build
    args = bench.parse_args(["--skip-build", "--chapters", "chapters/en/*.md"])
    assert args.skip_build and args.chapters == "chapters/en/*.md"


def test_build_command_shape(bench, tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "jupyter_book_executable", lambda: Path("/venv/bin/jupyter-book"))
    cmd = bench.build_command(tmp_path)
    assert cmd[:3] == ["/venv/bin/jupyter-book", "build", str(bench.REPO)]
    assert cmd[cmd.index("--path-output") + 1] == str(tmp_path)
    assert cmd[cmd.index("--builder") + 1] == "html"
    assert {"-n", "-W", "--keep-going"} <= set(cmd)


def test_main_with_fake_measurements(bench, fake_repo, monkeypatch, capsys):
    timed = []
    monkeypatch.setattr(bench, "floor_runs", lambda runs=3: [3.0, 2.0, 4.0])

    def fake_chapter(path):
        timed.append(bench.display_path(path))
        return 5.0

    monkeypatch.setattr(bench, "chapter_seconds", fake_chapter)
    monkeypatch.setattr(bench, "build_seconds", lambda *a, **k: pytest.fail("build ran despite --skip-build"))
    monkeypatch.setattr(bench.bench_ops, "op_timings", lambda: pytest.fail("ops ran despite --skip-ops"))
    monkeypatch.setattr(bench, "op_sections", lambda: pytest.fail("ops ran despite --skip-ops"))
    assert bench.main(["--skip-build", "--skip-ops", "--chapters", "chapters/zh/*.md"]) == 0
    assert timed == ["chapters/zh/01_gradients.md"]
    report = json.loads((fake_repo / "bench-report.json").read_text(encoding="utf-8"))
    assert report["floor_s"] == 3.0
    assert report["chapters"] == {"chapters/zh/01_gradients.md": {"seconds": 5.0, "ratio_to_floor": 5.0 / 3.0}}
    assert report["cold_build_s"] is None and report["warm_build_s"] is None
    out = capsys.readouterr().out
    assert out == bench.format_report(report)
    assert out in (fake_repo / "bench-report.md").read_text(encoding="utf-8")


def test_main_fails_when_a_chapter_fails(bench, fake_repo, monkeypatch, capsys):
    monkeypatch.setattr(bench, "floor_runs", lambda runs=3: [1.0, 1.0, 1.0])

    def broken(path):
        raise bench.BenchError(f"{bench.display_path(path)} failed to execute:\nZeroDivisionError: boom")

    monkeypatch.setattr(bench, "chapter_seconds", broken)
    assert bench.main(["--skip-build"]) != 0
    err = capsys.readouterr().err
    assert "ZeroDivisionError: boom" in err and "chapters/en/01_gradients.md" in err
    assert not (fake_repo / "bench-report.json").exists()


def test_op_table_reports_ratios_to_identity():
    from gradlib import benchmarks

    text = benchmarks.detail_tables({"ops": {"identity": {"seconds": 0.002, "ratio_to_identity": 1.0},
                                         "ste_round": {"seconds": 0.003, "ratio_to_identity": 1.5}},
                                 "experiments": {"dann": 1.25}})
    assert "| ste_round | 3.00 | 1.50× |" in text and "| `dann` | 1.25 |" in text
    assert benchmarks.detail_tables({}) == ""


def test_op_timings_measure_every_op_against_identity():
    from tools import bench_ops

    timings = bench_ops.op_timings(n=1000, rounds=2)
    reference = next(iter(timings))
    assert reference.startswith("identity")
    assert {"ste_round", "gradient_reversal(lam=1)", "round, stop_gradient trick (straight_through)"} <= set(timings)
    identity = timings[reference]["seconds"]
    for entry in timings.values():
        assert entry["ratio_to_identity"] == pytest.approx(entry["seconds"] / identity)


def test_op_timings_see_a_costly_op(monkeypatch):
    # An op doing ~4 GFLOP more than identity per call must come out slower
    # (a timing that measured nothing, or the wrong function, would not). The
    # extra work is hundreds of times a call's overhead on any CPU, so that a
    # fast BLAS cannot bring the ratio near the bound (300x300 matrices once
    # gave 2.98 on CI).
    import tensorflow as tf

    from tools import bench_ops

    big = tf.ones((1000, 1000))

    def costly(v):
        return v + 0.0 * tf.reduce_sum(tf.matmul(tf.matmul(big, big), big))

    monkeypatch.setattr(bench_ops, "_ops", lambda: {"identity": tf.identity, "costly": costly})
    timings = bench_ops.op_timings(n=1000, rounds=5)
    assert list(timings) == ["identity", "costly"]
    assert timings["costly"]["ratio_to_identity"] > 3, timings


def test_only_a_full_run_replaces_the_report_the_book_shows(bench, fake_repo):
    (fake_repo / bench.LATEST).parent.mkdir(parents=True)
    partial = fake_results(bench, with_build=False)
    bench.write_reports(partial)
    assert (fake_repo / "bench-report.json").is_file() and not (fake_repo / bench.LATEST).exists()
    full = {**fake_results(bench), "ops": {"identity": {"seconds": 0.002, "ratio_to_identity": 1.0}}}
    bench.write_reports(full)
    assert json.loads((fake_repo / bench.LATEST).read_text(encoding="utf-8")) == full


def test_the_graders_default_budget_is_several_times_the_longest_chapter():
    # The teachers' guide says so: grading an untouched notebook of any chapter
    # with the default --timeout must not run out of time on a machine like the
    # one of the latest `make bench` (its chapter times, in the appendix), with
    # room for a slower one and for another job on the same cores.
    from gradlib import benchmarks
    from gradlib.classroom import grade

    chapters = benchmarks.latest()["chapters"]
    longest = max(chapters, key=lambda page: chapters[page]["seconds"])
    assert 3 * chapters[longest]["seconds"] <= grade.NOTEBOOK_TIMEOUT, (longest, chapters[longest])


# -- ops in three modes, the layer step, larq, --ops-only ----------------------------------------

def test_op_timings_by_mode_time_every_op_in_every_mode():
    # every op must also compile under XLA, or a 40-minute `make bench` fails at its end
    from tools import bench_ops

    timings = bench_ops.op_timings_by_mode(n=1000, rounds=1)
    assert list(timings) == list(bench_ops.MODES) == ["eager", "function", "xla"]
    names = list(bench_ops._ops())
    for mode, ops in timings.items():
        assert list(ops) == names, mode
        assert ops[bench_ops.IDENTITY]["ratio_to_identity"] == 1.0
        for entry in ops.values():
            assert entry["seconds"] > 0
            assert entry["ratio_to_identity"] == pytest.approx(entry["seconds"] / ops[bench_ops.IDENTITY]["seconds"])
            assert len(entry["ratio_iqr"]) == len(entry["ratio_ci"]) == 2  # the spread of the per-round ratios
        assert ops[bench_ops.IDENTITY]["ratio_iqr"] == ops[bench_ops.IDENTITY]["ratio_ci"] == [1.0, 1.0]
    assert {"dorefa_weights(bits=2)", "sign_with_surrogate('swish_sign')", "ste_sign(clip=1)"} <= set(names)
    with pytest.raises(ValueError, match="mode"):
        bench_ops.op_timings_by_mode(n=10, rounds=1, modes=["graph"])


@pytest.mark.parametrize("mode", ["eager", "xla"])
def test_op_timings_see_a_costly_op_in_every_mode(mode):
    # as test_op_timings_see_a_costly_op, eagerly and under XLA; the matrix is a
    # variable so that XLA cannot fold the products away at compile time
    import tensorflow as tf

    from tools import bench_ops

    big = tf.Variable(tf.ones((1000, 1000)))

    def costly(v):
        return v + 0.0 * tf.reduce_sum(tf.matmul(tf.matmul(big, big), big))

    timings = bench_ops.op_timings_by_mode(n=1000, rounds=5, modes=[mode],
                                           ops={"identity": tf.identity, "costly": costly})[mode]
    assert timings["costly"]["ratio_to_identity"] > 3, timings


def test_the_upstream_gradient_is_a_real_tensor():
    # the reference's backward pass must pass a real dy (not a constant of ones
    # that a compiler could fold): an op whose gradient is 2 dy sums to twice
    # the identity's gradient sum, which is not the element count
    import tensorflow as tf

    from tools import bench_ops

    seen = {}

    @tf.custom_gradient
    def spy(v):
        def grad(dy):
            seen["dy"] = dy
            return dy
        return tf.identity(v), grad

    bench_ops.op_timings_by_mode(n=100, rounds=1, modes=["eager"], ops={"identity": tf.identity, "spy": spy})
    dy = seen["dy"].numpy()
    assert dy.shape == (100,) and len(set(dy.tolist())) > 50  # random values, not ones


def test_round_robin_shuffles_the_order_of_each_round():
    from tools import bench_ops

    order = []
    calls = {key: functools.partial(order.append, key) for key in "abcdef"}
    medians = bench_ops._round_robin(calls, rounds=4)
    assert set(medians) == set("abcdef")
    rounds = [order[6 + 6 * i: 12 + 6 * i] for i in range(4)]  # after the warm-up calls
    assert all(sorted(r) == list("abcdef") for r in rounds)
    assert len({tuple(r) for r in rounds}) > 1  # not the same order every round


def test_layer_step_timings_structure():
    from tools import bench_ops

    shape = {"batch": 8, "inputs": 16, "hidden": 8, "classes": 3}
    step = bench_ops.layer_step_timings(rounds=2, shape=shape)
    assert list(step) == ["function", "xla"]
    for entry in step.values():
        assert set(entry) == {"dense_s", "quantized_s", "ratio", "ratio_iqr", "ratio_ci"}
        assert entry["ratio"] == pytest.approx(entry["quantized_s"] / entry["dense_s"])
        assert entry["ratio_iqr"][0] <= entry["ratio_iqr"][1]


def test_layer_step_times_other_kernel_quantizers_in_the_same_rounds():
    from tools import bench_ops

    shape = {"batch": 8, "inputs": 16, "hidden": 8, "classes": 3}
    step = bench_ops.layer_step_timings(rounds=2, shape=shape, modes=["function"],
                                        others={"dorefa_weights": "dorefa_weights"})
    other = step["function"]["others"]["dorefa_weights"]
    assert set(other) == {"quantized_s", "ratio", "ratio_iqr", "ratio_ci"}
    assert other["ratio"] == pytest.approx(other["quantized_s"] / step["function"]["dense_s"])


def test_the_spread_is_of_the_per_round_ratios():
    from tools import bench_ops

    reference = [1.0, 2.0, 4.0, 8.0, 16.0]  # the machine's speed varies from round to round ...
    samples = [2 * r for r in reference]  # ... the ratio does not
    assert bench_ops.ratio_iqr(samples, reference) == [2.0, 2.0]
    assert bench_ops.median_ci(samples, reference) == [2.0, 2.0]
    ratios = [1.0, 2.0, 3.0, 4.0, 5.0]  # quartiles (inclusive) 2 and 4
    assert bench_ops.ratio_iqr(ratios, [1.0] * 5) == [2.0, 4.0]
    low, high = bench_ops.median_ci(ratios * 10, [1.0] * 50)
    assert 1.0 < low < 3.0 < high < 5.0  # the ratio of medians is pinned down more closely than one round varies
    assert bench_ops.median_ci(ratios * 10, [1.0] * 50) == [low, high]  # seeded: the same samples, the same interval
    assert bench_ops.ratio_iqr([3.0], [1.0]) == bench_ops.median_ci([3.0], [1.0]) == [3.0, 3.0]


def test_the_report_records_the_machine(bench, monkeypatch):
    monkeypatch.setenv("TF_NUM_INTRAOP_THREADS", "1")
    machine = bench.machine()
    assert machine["cpu_count"] == os.cpu_count() and machine["TF_NUM_INTRAOP_THREADS"] == "1"
    assert isinstance(machine["cpu"], str) and machine["cpu"]


def test_layer_step_sees_a_costly_quantizer():
    # the step really runs the quantized layers: a kernel quantizer that does
    # ~2 GFLOP of extra work per call makes the quantized step several times slower
    import tensorflow as tf

    from tools import bench_ops

    big = tf.Variable(tf.ones((800, 800)))

    def costly(kernel):
        return kernel + 0.0 * tf.reduce_sum(tf.matmul(tf.matmul(big, big), big))

    shape = {"batch": 8, "inputs": 16, "hidden": 8, "classes": 3}
    step = bench_ops.layer_step_timings(rounds=3, shape=shape, modes=["function"], kernel_quantizer=costly)
    assert step["function"]["ratio"] > 3, step


def test_larq_missing_is_reported_not_raised(tmp_path):
    from tools import bench_ops

    result = bench_ops.larq_timings(site=tmp_path / "no-larq")
    assert result == {"available": False, "reason": result["reason"]}
    assert "not installed" in result["reason"] and "larq.txt" in result["reason"]


def test_a_larq_that_fails_is_reported_not_raised(tmp_path):
    from tools import bench_ops

    (tmp_path / "larq").mkdir()
    (tmp_path / "larq" / "__init__.py").write_text("raise ImportError('this larq is broken')\n", encoding="utf-8")
    result = bench_ops.larq_timings(site=tmp_path, rounds=1, n=10)
    assert result["available"] is False
    assert "exit 1" in result["reason"] and "this larq is broken" in result["reason"]


@pytest.mark.slow  # a subprocess that imports TensorFlow and larq, and compiles under XLA
def test_larq_timings_compare_like_with_like():
    from tools import bench_ops

    if not (bench_ops.LARQ_SITE / "larq").is_dir():
        pytest.skip(f"larq is not installed in {bench_ops.LARQ_SITE} (make bench installs it)")
    import re

    import tensorflow as tf

    pin = re.search(r"^tf-keras==(\d+\.\d+)", (bench_ops.REPO / "requirements" / "larq.txt").read_text(), re.M)
    if pin and not tf.__version__.startswith(pin.group(1) + "."):
        pytest.skip(f"the larq folder's tf-keras {pin.group(1)} is for .venv's TensorFlow, not {tf.__version__}")
    result = bench_ops.larq_timings(rounds=2, n=1000)
    assert result["available"], result
    assert result["versions"]["larq"] == "0.14.0"
    assert list(result["ops"]) == list(bench_ops.MODES)
    for mode, ops in result["ops"].items():
        assert list(ops)[0] == bench_ops.IDENTITY
        for label, (ours, theirs) in bench_ops.LARQ_PAIRS.items():
            assert result["gradlib_over_larq"][mode][label] == pytest.approx(
                ops[ours]["seconds"] / ops[theirs]["seconds"])
            assert len(result["gradlib_over_larq_iqr"][mode][label]) == len(result["gradlib_over_larq_ci"][mode][label]) == 2


FAKE_SECTIONS = {"ops": {"identity": {"seconds": 0.001, "ratio_to_identity": 1.0}},
                 "ops_eager": {"identity": {"seconds": 0.002, "ratio_to_identity": 1.0}},
                 "ops_xla": {"identity": {"seconds": 0.0005, "ratio_to_identity": 1.0}},
                 "layer_step": {"function": {"dense_s": 0.01, "quantized_s": 0.011, "ratio": 1.1}},
                 "larq": {"available": False, "reason": "not here"}, "ops_date": "2026-02-02T00:00:00+00:00"}


def test_ops_only_merges_into_the_shipped_report_and_keeps_the_rest(bench, fake_repo, monkeypatch, capsys):
    latest = fake_repo / bench.LATEST
    latest.parent.mkdir(parents=True)
    full = {**fake_results(bench, with_build=True), "python": bench.platform.python_version(),
            "tensorflow": bench.tensorflow_version(), "ops": {"old": {"seconds": 1.0, "ratio_to_identity": 9.0}}}
    latest.write_text(json.dumps(full), encoding="utf-8")
    monkeypatch.setattr(bench, "op_sections", lambda: dict(FAKE_SECTIONS))
    monkeypatch.setattr(bench, "floor_runs", lambda runs=3: pytest.fail("--ops-only timed the floor"))
    assert bench.main(["--ops-only"]) == 0
    merged = json.loads(latest.read_text(encoding="utf-8"))
    assert merged == {**full, **FAKE_SECTIONS}
    assert merged["date"] == full["date"] and merged["ops_date"] == FAKE_SECTIONS["ops_date"]
    assert "larq was not measured: not here" in capsys.readouterr().out


def test_higher_only_merges_only_chapter_8s_timings(bench, fake_repo, monkeypatch):
    latest = fake_repo / bench.LATEST
    latest.parent.mkdir(parents=True)
    full = {**fake_results(bench, with_build=True), "python": bench.platform.python_version(),
            "tensorflow": bench.tensorflow_version(), **FAKE_SECTIONS}
    latest.write_text(json.dumps(full), encoding="utf-8")
    higher = {"higher_order": {"jacobian": {}, "hessian": {}, "date": "2026-11-27T00:00:00+00:00"}}
    monkeypatch.setattr(bench, "op_sections", lambda: pytest.fail("--higher-only measured the ops"))
    monkeypatch.setattr(bench, "higher_sections", lambda: dict(higher))
    assert bench.main(["--higher-only"]) == 0
    assert json.loads(latest.read_text(encoding="utf-8")) == {**full, **higher}


def test_higher_order_timings_measure_every_kind_against_one_gradient(monkeypatch):
    from tools import bench_ops

    monkeypatch.setattr(bench_ops, "HESSIAN_DIMS", (4, 8))
    monkeypatch.setattr(bench_ops, "JACOBIAN_SHAPE", {"batch": 3, "width": 5})
    result = bench_ops.higher_order_timings(rounds=3)
    assert set(result["jacobian"]) == set(bench_ops.JACOBIAN_KINDS)
    assert set(result["hessian"]) == {"4", "8"}
    for entries in [result["jacobian"], *result["hessian"].values()]:
        assert entries["gradient"]["ratio"] == 1.0
        assert all(e["seconds"] > 0 and e["ratio"] > 0 and len(e["ratio_iqr"]) == 2 for e in entries.values())
    assert set(result["hessian"]["4"]) == set(bench_ops.HESSIAN_KINDS)


def test_ops_only_refuses_a_report_of_another_tensorflow(bench, fake_repo, monkeypatch, capsys):
    latest = fake_repo / bench.LATEST
    latest.parent.mkdir(parents=True)
    latest.write_text(json.dumps({**fake_results(bench), "tensorflow": "1.15.0"}), encoding="utf-8")
    monkeypatch.setattr(bench, "op_sections", lambda: pytest.fail("measured before checking the versions"))
    assert bench.main(["--ops-only"]) == 1
    assert "1.15.0" in capsys.readouterr().err
    assert json.loads(latest.read_text(encoding="utf-8"))["tensorflow"] == "1.15.0"


def test_a_full_run_stores_the_op_sections(bench, fake_repo, monkeypatch):
    monkeypatch.setattr(bench, "floor_runs", lambda runs=3: [1.0, 1.0, 1.0])
    monkeypatch.setattr(bench, "chapter_seconds", lambda path: 2.0)
    monkeypatch.setattr(bench, "op_sections", lambda: dict(FAKE_SECTIONS))
    monkeypatch.setattr(bench.bench_ops, "experiment_timings", lambda: {"e": 1.0})
    monkeypatch.setattr(bench.bench_ops, "explorer_latency", lambda: {"live_ms": 1.0, "bare_ms": 1.0, "ratio": 1.0})
    results = bench.run(bench.parse_args(["--skip-build", "--chapters", "chapters/zh/*.md"]))
    assert {key: results[key] for key in FAKE_SECTIONS} == FAKE_SECTIONS
    assert results["experiments"] == {"e": 1.0}
