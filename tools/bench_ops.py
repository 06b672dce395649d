"""Op and experiment timings for ``make bench`` (imported by tools/bench.py).

Each op's forward + backward pass over 10^6 float32 elements runs inside one
``tf.function``; ops are timed round-robin (one call of each per round) so
that machine noise hits them alike, and each is reported as its median over
the rounds divided by the median of a plain ``tf.identity`` in the same run.
"""

from __future__ import annotations

import statistics
import time
from typing import Callable, Dict

N_ELEMENTS = 10 ** 6
ROUNDS = 15


def _ops() -> Dict[str, Callable]:
    import tensorflow as tf

    import gradlib

    @tf.custom_gradient
    def custom_round(x):
        return tf.round(x), lambda dy: dy

    return {
        "identity (tf.identity, the reference)": tf.identity,
        "ste_round": gradlib.ste_round,
        "ste_sign": gradlib.ste_sign,
        "ste_sign(clip=1)": lambda x: gradlib.ste_sign(x, clip=1.0),
        "xnor_binarize": gradlib.xnor_binarize,
        "dorefa_quantize(bits=2)": lambda x: gradlib.dorefa_quantize(x, 2),
        "sign_with_surrogate('swish_sign')": lambda x: gradlib.sign_with_surrogate(x, "swish_sign"),
        "gradient_reversal(lam=1)": gradlib.gradient_reversal,
        "round, tf.custom_gradient STE": custom_round,
        "round, stop_gradient trick (straight_through)": gradlib.straight_through(tf.round),
        "round, tf.grad_pass_through": tf.grad_pass_through(tf.round),
    }


def op_timings(n: int = N_ELEMENTS, rounds: int = ROUNDS) -> Dict[str, dict]:
    """``{name: {"seconds": median, "ratio_to_identity": ...}}`` for every op."""
    import numpy as np
    import tensorflow as tf

    import gradlib

    x = tf.constant(np.random.default_rng(0).uniform(-2, 2, n).astype(np.float32))

    def compile_op(op):
        # A closure, not a default argument: autograph would strip the
        # tf.custom_gradient decorator from an op passed in as an argument.
        def forward_backward(v):
            with tf.GradientTape() as tape:
                tape.watch(v)
                y = op(v)
            # use both results so that neither pass can be pruned away
            return tf.reduce_sum(y) + tf.reduce_sum(tape.gradient(y, v))
        return tf.function(forward_backward)

    compiled = {}
    with gradlib.captured_tf_warnings():  # one trace per op is expected, not a retracing problem
        for name, op in _ops().items():
            compiled[name] = compile_op(op)
            compiled[name](x).numpy()  # trace and warm up
    samples = {name: [] for name in compiled}
    for _ in range(rounds):
        for name, fn in compiled.items():
            start = time.perf_counter()
            fn(x).numpy()
            samples[name].append(time.perf_counter() - start)
    medians = {name: statistics.median(values) for name, values in samples.items()}
    reference = next(iter(medians.values()))
    return {name: {"seconds": s, "ratio_to_identity": s / reference} for name, s in medians.items()}


def experiment_timings() -> Dict[str, float]:
    """Wall time of one run of each of the book's experiments (seed 0)."""
    from gradlib import dann, experiments

    timings = {}
    start = time.perf_counter()
    experiments.digits_experiment()
    timings["experiments.digits_experiment()"] = time.perf_counter() - start
    for method in ("source_only", "dann"):
        start = time.perf_counter()
        dann.moons_experiment(method, seed=0)
        timings[f"dann.moons_experiment('{method}')"] = time.perf_counter() - start
    return timings


LATENCY_CELL = r"""
import json, statistics, time
import numpy as np, tensorflow as tf
import gradlib

explorer = gradlib.explore(lambda beta: lambda x: tf.nn.softplus(beta * x) / beta,
                           np.linspace(-3, 3, 241), {"beta": [0.5, 1, 2, 4, 8, 16]})
box = explorer.widget()
slider, image = box.children[0], box.children[-1]
options = list(slider.options)
live, bare = [], []
for i in range(1, 1 + ROUNDS):
    # live: a control change -> TensorFlow recomputes -> lines redrawn -> new PNG sent
    start = time.perf_counter()
    slider.value = options[i % len(options)]
    live.append(time.perf_counter() - start)
    # bare: the same figure redrawn and sent, with no TensorFlow
    start = time.perf_counter()
    image.value = explorer.png()
    bare.append(time.perf_counter() - start)
print(json.dumps({"live_ms": 1e3 * statistics.median(live[5:]), "bare_ms": 1e3 * statistics.median(bare[5:])}))
"""


def explorer_latency(rounds: int = 60) -> Dict[str, float]:
    """Median live-explorer redraw vs a bare matplotlib redraw, in one fresh kernel.

    Returns ``{"live_ms", "bare_ms", "ratio"}``; the live time covers the
    control's value change, TensorFlow recomputing the curves, redrawing the
    lines and replacing the widget's PNG.
    """
    import json
    import tempfile

    import nbformat

    from tools import book

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(LATENCY_CELL.replace("ROUNDS", str(rounds)))]
    kernel = book.kernel()
    with tempfile.TemporaryDirectory() as cwd:
        # a live kernel as a reader has (no GRADBOOK_BUILD switch), TensorFlow quiet
        run = kernel.run_notebook(notebook, cwd=cwd, env=kernel.kernel_env("test"), timeout=600)
    if run.error:
        raise RuntimeError(f"the explorer latency notebook failed: {run.error}")
    cell = run.notebook.cells[0]
    text = "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")
    result = json.loads(text.strip().splitlines()[-1])
    result["ratio"] = result["live_ms"] / result["bare_ms"]
    return result
