"""The explorer's page format from both sides: Python writes it, gradbook-explorer.js reads it (under node).

The contract is gradlib/_explorer_format.py.  The JavaScript's projection must
give, for every frame of a real explorer, exactly the points Python computes;
the class names and attributes Python writes must be the ones the JavaScript
queries; and each combination of controls is computed once at build time.
"""

import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

import gradlib
from gradlib import _explorer_format as fmt

JS = Path(__file__).resolve().parents[1] / "assets" / "static" / "gradbook-explorer.js"
NODE = shutil.which("node")


@pytest.fixture
def node():
    """Node.js runs the JavaScript side; the book's build needs it anyway (npm), so its absence fails."""
    if NODE is None:
        pytest.fail("node is not installed: the explorer's JavaScript side cannot be tested (install Node.js)")
    return NODE


needs_node = pytest.mark.usefixtures("node")

# Reads {"data": ..., "keys": [...], "values": [...]} on stdin; writes the module's constants,
# framePoints for each key and toFixed(1) of each value.
HARNESS = """
const m = require(process.argv[1]);
let text = "";
process.stdin.on("data", d => text += d);
process.stdin.on("end", () => {
  const job = JSON.parse(text);
  const out = {constants: {ROOT: m.ROOT, DATA: m.DATA, CONTROL: m.CONTROL, FRAME: m.FRAME},
               frames: {}, fixed: job.values.map(v => v.toFixed(1)),
               keys: job.indices.map(i => m.frameKey(i, job.data.separator))};
  for (const key of job.keys) out.frames[key] = m.framePoints(job.data, key);
  process.stdout.write(JSON.stringify(out));
});
"""


def run_js(data, keys=(), values=(), indices=()):
    job = json.dumps({"data": data, "keys": list(keys), "values": list(values), "indices": list(indices)})
    done = subprocess.run([NODE, "-e", HARNESS, str(JS)], input=job, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def two_control_explorer():
    """Two controls (a slider and buttons), a kink, and NaN where sqrt meets negative x (gaps)."""
    def family(k, f):
        return {"relu": lambda x: tf.nn.relu(x) * k, "sqrt": lambda x: tf.sqrt(x) * k, "tanh": lambda x: tf.tanh(k * x)}[f]
    return gradlib.explore(family, np.linspace(-2, 2, 41), {"k": [0.5, 1, 3], "f": ["relu", "sqrt", "tanh"]},
                           defaults={"k": 1, "f": "sqrt"})


@pytest.fixture(scope="module")
def page():
    markup = two_control_explorer().static_html()
    return markup, fmt.page_data(markup)


@needs_node
def test_javascript_points_equal_python_points_for_every_frame(page):
    markup, data = page
    assert len(data["frames"]) == 9
    js = run_js(data, keys=data["frames"])["frames"]
    for key, frame in data["frames"].items():
        for p, panel in enumerate(data["panels"]):
            expected = fmt.points(data["x"], frame[p], panel, data["xlim"], data["ylim"][p])
            assert js[key][p] == expected, f"frame {key}, panel {p}"
    gaps = data["frames"][fmt.frame_key((1, 1))][0]
    assert gaps[0] is None and len(js["1,1"][0].split()) == sum(v is not None for v in gaps)  # the gaps are skipped


@needs_node
def test_the_svg_shows_what_the_javascript_draws_for_the_default_frame(page):
    markup, data = page
    key = re.search(rf'{fmt.FRAME}="([^"]*)"', markup)[1]
    assert key == fmt.frame_key((1, 1))
    drawn = run_js(data, keys=[key])["frames"][key]
    for p, name in enumerate(fmt.CURVES):
        assert re.search(rf'class="gbx-curve {name}" points="([^"]*)"', markup)[1] == drawn[p]


@needs_node
def test_javascript_rounds_as_python_writes():
    ties = [12.25, 12.75, 0.05, 0.15, -0.25, -0.04, -0.0, 0.0, 128.45, 1e-7, 699.95]
    values = ties + list(np.random.default_rng(0).uniform(-50, 800, 200))
    assert run_js({"separator": ","}, values=values)["fixed"] == [fmt.fixed(v) for v in values]


@needs_node
def test_the_names_python_writes_are_the_names_javascript_queries(page):
    markup, data = page
    js = run_js(data, indices=[[0], [2, 0], [1, 2, 3]])
    assert js["constants"] == {"ROOT": fmt.ROOT, "DATA": fmt.DATA, "CONTROL": fmt.CONTROL, "FRAME": fmt.FRAME}
    assert js["keys"] == [fmt.frame_key(i) for i in ([0], [2, 0], [1, 2, 3])]
    assert markup.startswith(f'<div class="{fmt.ROOT}" ')
    assert f'<script type="application/json" class="{fmt.DATA}">' in markup
    assert markup.count(f'{fmt.CONTROL}="') == 2
    assert data["curves"] == list(fmt.CURVES) and data["separator"] == fmt.SEPARATOR
    assert data["panels"] == list(fmt.PANELS)
    for name in fmt.CURVES:
        assert markup.count(f"class=\"gbx-curve {name}\"") == 1
    source = JS.read_text(encoding="utf-8")
    for literal in (*fmt.CURVES, 'join(",")', "left: 58"):  # read from the JSON, not written in the JavaScript
        assert literal not in source


def counting(family):
    calls = []

    def counted(**values):
        calls.append(values)
        return family(**values)
    return counted, calls


@pytest.mark.parametrize("controls, combinations", [({"beta": [0.5, 1, 2, 3, 4]}, 5),
                                                    ({"beta": [1, 2, 3], "gamma": [1, 2]}, 6)])
def test_each_combination_is_computed_once_at_build_time(controls, combinations):
    family, calls = counting(lambda beta, gamma=1: lambda x: tf.nn.softplus(beta * x) / beta * gamma)
    explorer = gradlib.explore(family, np.linspace(-3, 3, 31), controls)
    markup = explorer.static_html()
    explorer.limits()
    assert len(calls) == combinations
    assert sorted(map(sorted, (c.items() for c in calls))) == sorted(map(sorted, (c.items() for c in [
        dict(zip(controls, v)) for v in __import__("itertools").product(*controls.values())])))
    assert len(fmt.page_data(markup)["frames"]) == combinations


def test_limits_come_from_the_frames():
    explorer = two_control_explorer()
    frames = explorer.frames()
    for panel, (low, high) in enumerate(explorer.limits()):
        values = np.concatenate([f[panel] for f in frames.values()])
        values = values[np.isfinite(values)]
        span = values.max() - values.min()
        np.testing.assert_allclose([low, high], [values.min() - 0.06 * span, values.max() + 0.06 * span])


@pytest.mark.parametrize("x", [[0.5], [1.0, 1.0, 1.0], [], np.full(5, -2.0), [1.0, 1.0000001], [[0.0, 1.0]],
                               [0.0, np.nan, 1.0], [0.0, np.inf]])
def test_a_degenerate_axis_is_refused_up_front(x):
    with pytest.raises(ValueError, match="`x` must"):
        gradlib.explore(lambda beta: tf.sin, x, {"beta": [1, 2]})


@pytest.mark.parametrize("options, message", [([1, float("nan")], "not a finite number"),
                                              ([1, float("inf")], "not a finite number"),
                                              ([1, 2, 1], "repeats an option"), ([1, 1.0], "repeats an option")])
def test_bad_control_options_are_refused(options, message):
    with pytest.raises(ValueError, match=message):
        gradlib.explore(lambda beta: tf.sin, np.linspace(0, 1, 5), {"beta": options})


def test_frames_are_keyed_in_the_order_of_the_options():
    explorer = two_control_explorer()
    assert list(explorer.frames()) == [(i, j) for i in range(3) for j in range(3)]
    assert list(fmt.page_data(explorer.static_html())["frames"]) == [f"{i},{j}" for i in range(3) for j in range(3)]
