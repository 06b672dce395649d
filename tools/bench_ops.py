"""Op, layer and experiment timings for ``make bench`` (imported by tools/bench.py).

Ops
    Each op's forward + backward pass over 10^6 float32 elements, in three
    modes (:data:`MODES`): eagerly, inside one ``tf.function``, and inside
    ``tf.function(jit_compile=True)`` (XLA, which can fuse the elementwise
    ops of both passes).  The backward pass gets a real upstream gradient (a
    random tensor passed in, ``output_gradients=dy``), so that no mode can fold
    it away, and the function returns ``sum(y) + sum(dx)`` so that neither
    pass can be pruned.  The reference, ``tf.identity``, does no work of its
    own in any mode: its compiled program is just ``sum(x) + sum(dy)`` (it
    reads both inputs, it writes no array).  So every ratio is against "read
    the inputs and do nothing", a floor, not against a forward and backward
    pass.  What an op costs above it under XLA (on the CPU) is mostly the
    arrays its compiled program writes and reads again, plus its arithmetic.
Layer step
    One ``train_on_batch`` of a small MLP of ``gradlib.QuantizedDense``
    layers against the same MLP of ``keras.layers.Dense`` (same shapes, same
    optimizer), compiled without and with XLA.
larq
    gradlib's ``ste_sign`` against larq's, in a subprocess (larq 0.14 needs
    ``tf_keras`` and ``TF_USE_LEGACY_KERAS=1``), from the copy that
    ``make bench`` installs into :data:`LARQ_SITE` (``requirements/larq.txt``).

Everything is timed round-robin (one call of each per round, every mode in
the same round, in an order shuffled anew each round) so that machine noise
and cache states hit all alike, and each is reported
as its median over the rounds divided by the median of its reference in the
same run.  Because every round times an op and its reference together, each
round also gives one paired ratio; the report keeps the interquartile range of
those per-round ratios (``ratio_iqr``, how much one round varies) and a 95 %
bootstrap interval of the reported ratio of medians, resampling whole rounds
(``ratio_ci``, how precisely the rounds pin that ratio down), by which a goal
is judged.
"""

from __future__ import annotations

import functools
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Dict, Iterable, Optional

N_ELEMENTS = 10 ** 6
ROUNDS = 51
IDENTITY = "identity (tf.identity, the reference)"
#: mode -> how the forward + backward function is run
MODES = {"eager": "eagerly", "function": "tf.function", "xla": "tf.function(jit_compile=True)"}

REPO = Path(__file__).resolve().parents[1]
LARQ_SITE = REPO / ".venv" / "larq-site"  # make bench installs requirements/larq.txt here (--no-deps)
LARQ_REQUIREMENTS = REPO / "requirements" / "larq.txt"
#: the MLP of the layer step: batch, inputs, hidden units (two layers), classes
LAYER_SHAPE = {"batch": 128, "inputs": 256, "hidden": 512, "classes": 10}


def _ops() -> Dict[str, Callable]:
    import tensorflow as tf

    import gradlib

    @tf.custom_gradient
    def custom_round(x):
        return tf.round(x), lambda dy: dy

    surrogates = {f"sign_with_surrogate('{name}')": functools.partial(gradlib.sign_with_surrogate, surrogate=name)
                  for name in gradlib.SIGN_SURROGATES}
    return {
        IDENTITY: tf.identity,
        "ste_round": gradlib.ste_round,
        "ste_sign": gradlib.ste_sign,
        "ste_sign(clip=1)": lambda x: gradlib.ste_sign(x, clip=1.0),
        "xnor_binarize": gradlib.xnor_binarize,
        "dorefa_quantize(bits=2)": lambda x: gradlib.dorefa_quantize(x, 2),
        "dorefa_weights(bits=2)": lambda x: gradlib.dorefa_weights(x, 2),
        **surrogates,
        "gradient_reversal(lam=1)": gradlib.gradient_reversal,
        "round, tf.custom_gradient STE": custom_round,
        "round, stop_gradient trick (straight_through)": gradlib.straight_through(tf.round),
        "round, tf.grad_pass_through": tf.grad_pass_through(tf.round),
    }


def _round_robin_samples(calls: Dict[object, Callable[[], object]], rounds: int,
                         seed: int = 0) -> Dict[object, list]:
    """Seconds of each call in each round, one call of each per round (after one warm-up call each).

    The order changes from round to round (shuffled with ``seed``): a call
    that always came after the same one would always find the caches in the
    state that one left, and two identical ops could differ by that alone.
    ``samples[key][i]`` is round ``i``'s time, so two keys' samples are paired.
    """
    import random

    for call in calls.values():
        call()
    order, shuffle = list(calls), random.Random(seed).shuffle
    samples = {key: [] for key in calls}
    for _ in range(rounds):
        shuffle(order)
        for key in order:
            start = time.perf_counter()
            calls[key]()
            samples[key].append(time.perf_counter() - start)
    return samples


def _round_robin(calls: Dict[object, Callable[[], object]], rounds: int, seed: int = 0) -> Dict[object, float]:
    """Median seconds of each call (see :func:`_round_robin_samples`)."""
    return {key: statistics.median(values) for key, values in _round_robin_samples(calls, rounds, seed).items()}


def median_ci(samples: list, reference: list, resamples: int = 2000, level: float = 0.95, seed: int = 0) -> list:
    """``[low, high]``, a bootstrap interval (percentile, ``level``) of the ratio the report shows,
    ``median(samples) / median(reference)``, resampling whole rounds (so the pairs stay paired): how
    precisely the rounds pin that ratio down (the interquartile range of the per-round ratios,
    :func:`ratio_iqr`, says how much one round varies)."""
    import random

    pairs = list(zip(samples, reference))
    if len(pairs) < 2:
        return [pairs[0][0] / pairs[0][1]] * 2 if pairs else [None, None]
    rng = random.Random(seed)
    ratios = []
    for _ in range(resamples):
        drawn = rng.choices(pairs, k=len(pairs))
        ratios.append(statistics.median(a for a, _ in drawn) / statistics.median(b for _, b in drawn))
    ratios.sort()
    tail = (1 - level) / 2
    return [ratios[int(tail * (resamples - 1))], ratios[int((1 - tail) * (resamples - 1))]]


def ratio_iqr(samples: list, reference: list) -> list:
    """``[q1, q3]``, the interquartile range of the per-round ratios ``samples[i] / reference[i]``."""
    ratios = sorted(a / b for a, b in zip(samples, reference))
    if len(ratios) < 2:
        return [ratios[0], ratios[0]] if ratios else [None, None]
    q1, _, q3 = statistics.quantiles(ratios, n=4, method="inclusive")
    return [q1, q3]


def _run(fn, *args):
    return fn(*args).numpy()  # .numpy() waits for the result


def op_timings_by_mode(n: int = N_ELEMENTS, rounds: int = ROUNDS, modes: Iterable[str] = tuple(MODES),
                       ops: Optional[Dict[str, Callable]] = None,
                       samples_out: Optional[dict] = None) -> Dict[str, Dict[str, dict]]:
    """``{mode: {name: {"seconds": median, "ratio_to_identity": ..., "ratio_iqr": [q1, q3]}}}`` for every op.

    The first op of ``ops`` (default :func:`_ops`) is the reference of its
    mode; every (mode, op) pair is timed in the same rounds.  ``ratio_to_identity``
    is the op's median over the reference's median; ``ratio_iqr`` the
    interquartile range of the per-round ratios (its spread), ``ratio_ci`` a
    95 % bootstrap interval of ``ratio_to_identity`` (:func:`median_ci`).
    """
    import numpy as np
    import tensorflow as tf

    import gradlib

    modes = list(modes)
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        raise ValueError(f"unknown mode(s) {unknown}; the modes are {list(MODES)}")
    rng = np.random.default_rng(0)
    x = tf.constant(rng.uniform(-2, 2, n).astype(np.float32))
    dy = tf.constant(rng.normal(size=n).astype(np.float32))  # a real upstream gradient

    def compile_op(op, mode):
        # A closure, not a default argument: autograph would strip the
        # tf.custom_gradient decorator from an op passed in as an argument.
        def forward_backward(v, upstream):
            with tf.GradientTape() as tape:
                tape.watch(v)
                y = op(v)
            # use both results so that neither pass can be pruned away
            return tf.reduce_sum(y) + tf.reduce_sum(tape.gradient(y, v, output_gradients=upstream))
        if mode == "eager":
            return forward_backward
        return tf.function(forward_backward, jit_compile=mode == "xla")

    ops = _ops() if ops is None else ops
    calls = {}
    with gradlib.captured_tf_warnings():  # one trace per op is expected, not a retracing problem
        for mode in modes:
            for name, op in ops.items():
                fn = compile_op(op, mode)
                fn(x, dy).numpy()  # trace (and compile) outside the timing
                calls[(mode, name)] = functools.partial(_run, fn, x, dy)
        samples = _round_robin_samples(calls, rounds)
    if samples_out is not None:  # {(mode, name): [seconds per round]}
        samples_out.update(samples)
    medians = {key: statistics.median(values) for key, values in samples.items()}
    reference = next(iter(ops))
    return {mode: {name: {"seconds": medians[(mode, name)],
                          "ratio_to_identity": medians[(mode, name)] / medians[(mode, reference)],
                          "ratio_iqr": ratio_iqr(samples[(mode, name)], samples[(mode, reference)]),
                          "ratio_ci": median_ci(samples[(mode, name)], samples[(mode, reference)])}
                   for name in ops}
            for mode in modes}


def op_timings(n: int = N_ELEMENTS, rounds: int = ROUNDS, mode: str = "function") -> Dict[str, dict]:
    """``{name: {"seconds": median, "ratio_to_identity": ...}}`` for every op, in one mode."""
    return op_timings_by_mode(n, rounds, modes=(mode,))[mode]


def _mlp(layer: Callable, shape: Dict[str, int]):
    import keras

    return keras.Sequential([keras.Input((shape["inputs"],)),
                             layer(shape["hidden"], activation="relu"),
                             layer(shape["hidden"], activation="relu"),
                             layer(shape["classes"])])


def layer_step_timings(rounds: int = ROUNDS, shape: Optional[Dict[str, int]] = None,
                       modes: Iterable[str] = ("function", "xla"), kernel_quantizer="ste_sign",
                       others: Optional[Dict[str, object]] = None) -> Dict[str, dict]:
    """One training step of an MLP of ``QuantizedDense`` against the same MLP of ``Dense``.

    Returns ``{mode: {"dense_s", "quantized_s", "ratio"}}`` with ``mode``
    ``"function"`` (``compile(jit_compile=False)``) or ``"xla"``
    (``jit_compile=True``); ``ratio`` is quantized / dense.  Both models have
    :data:`LAYER_SHAPE`'s layers (two hidden ReLU layers and a linear
    output), Adam and a sparse cross-entropy loss, and train on the same batch;
    ``kernel_quantizer`` is the quantized layers' (anything ``QuantizedDense``
    takes).  ``ratio_iqr`` is the interquartile range of the per-round ratios.
    ``ratio_ci`` a bootstrap interval of ``ratio`` (:func:`median_ci`).
    ``others`` (label -> kernel quantizer) adds more quantized MLPs to the same
    rounds, reported under ``entry["others"][label]`` as ``{"quantized_s",
    "ratio", "ratio_iqr", "ratio_ci"}``.
    """
    import keras
    import numpy as np

    import gradlib

    shape = dict(LAYER_SHAPE if shape is None else shape)
    modes = list(modes)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(shape["batch"], shape["inputs"])).astype(np.float32)
    y = rng.integers(0, shape["classes"], shape["batch"])
    layers = {"dense": keras.layers.Dense,
              "quantized": functools.partial(gradlib.QuantizedDense, kernel_quantizer=kernel_quantizer)}
    others = dict(others or {})
    for label, quantizer in others.items():
        layers[("other", label)] = functools.partial(gradlib.QuantizedDense, kernel_quantizer=quantizer)
    calls = {}
    for mode in modes:
        for kind, layer in layers.items():
            keras.utils.set_random_seed(0)
            model = _mlp(layer, shape)
            model.compile(optimizer=keras.optimizers.Adam(1e-3),
                          loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                          jit_compile=mode == "xla")
            model.train_on_batch(x, y)  # build and trace (and compile) outside the timing
            calls[(mode, kind)] = functools.partial(model.train_on_batch, x, y)
    samples = _round_robin_samples(calls, rounds)
    medians = {key: statistics.median(values) for key, values in samples.items()}

    def entry(mode, kind):
        return {"quantized_s": medians[(mode, kind)], "ratio": medians[(mode, kind)] / medians[(mode, "dense")],
                "ratio_iqr": ratio_iqr(samples[(mode, kind)], samples[(mode, "dense")]),
                "ratio_ci": median_ci(samples[(mode, kind)], samples[(mode, "dense")])}

    result = {}
    for mode in modes:
        result[mode] = {"dense_s": medians[(mode, "dense")], **entry(mode, "quantized")}
        if others:
            result[mode]["others"] = {label: entry(mode, ("other", label)) for label in others}
    return result


# -- chapter 8: Jacobians, Hessian-vector products, full Hessians ---------------------

#: the Jacobian comparison's shape: ``y = tanh(x W)`` with ``x`` (batch, width), every row independent
JACOBIAN_SHAPE = {"batch": 32, "width": 64}
#: the dimensions at which an H·v is timed against the full Hessian
HESSIAN_DIMS = (16, 64, 256, 1024, 2048)
JACOBIAN_KINDS = {
    "gradient": "tape.gradient (one vector-Jacobian product)",
    "batch_jacobian": "tape.batch_jacobian",
    "jacobian": "tape.jacobian (pfor)",
    "jacobian_loop": "tape.jacobian(experimental_use_pfor=False)",
}
HESSIAN_KINDS = ("gradient", "forward-over-reverse", "reverse-over-reverse", "hessian")


def _jacobian_calls(shape: Dict[str, int]) -> Dict[str, Callable]:
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(0)
    x = tf.constant(rng.normal(size=(shape["batch"], shape["width"])), tf.float32)
    w = tf.constant(rng.normal(size=(shape["width"], shape["width"])) / np.sqrt(shape["width"]), tf.float32)

    def make(kind):
        @tf.function
        def run(x):
            with tf.GradientTape(persistent=kind == "jacobian_loop") as tape:
                tape.watch(x)
                y = tf.tanh(x @ w)
            if kind == "gradient":
                return tape.gradient(y, x)
            if kind == "batch_jacobian":
                return tape.batch_jacobian(y, x)
            return tape.jacobian(y, x, experimental_use_pfor=kind == "jacobian")
        return functools.partial(_run, run, x)

    return {kind: make(kind) for kind in JACOBIAN_KINDS}


def _hessian_calls(n: int) -> Dict[str, Callable]:
    """``f(x) = sum(softplus(A x))``, ``A`` n×n: its gradient, H·v both ways (gradlib.hvp) and the full Hessian."""
    import numpy as np
    import tensorflow as tf

    import gradlib

    rng = np.random.default_rng(n)
    a = tf.constant(rng.normal(size=(n, n)) / np.sqrt(n), tf.float32)
    x = tf.constant(rng.normal(size=n), tf.float32)
    v = tf.constant(rng.normal(size=n), tf.float32)

    def f(x):
        return tf.reduce_sum(tf.nn.softplus(tf.linalg.matvec(a, x)))

    @tf.function
    def gradient(x, v):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        return tape.gradient(y, x)

    @tf.function
    def hessian(x, v):
        with tf.GradientTape() as outer:
            outer.watch(x)
            g = gradient(x, v)
        return outer.jacobian(g, x)

    calls = {"gradient": gradient, "hessian": hessian}
    for mode in ("forward-over-reverse", "reverse-over-reverse"):
        calls[mode] = tf.function(functools.partial(lambda x, v, mode: gradlib.hvp(f, x, v, mode=mode), mode=mode))
    return {kind: functools.partial(_run, calls[kind], x, v) for kind in HESSIAN_KINDS}


def higher_order_timings(rounds: int = ROUNDS) -> dict:
    """Chapter 8's costs, each a median over ``rounds`` round-robin rounds inside ``tf.function``.

    ``{"jacobian": {kind: {"seconds", "ratio", "ratio_iqr"}}, "hessian": {n: {kind: {...}}}, "shape": ...}``:
    for the Jacobian of ``y = tanh(x W)`` the ratio is to one ``tape.gradient``; for
    ``f(x) = sum(softplus(A x))`` at each dimension ``n`` of :data:`HESSIAN_DIMS`, to one gradient of ``f``.
    """
    samples = _round_robin_samples(_jacobian_calls(JACOBIAN_SHAPE), rounds)

    def entries(samples):
        medians = {key: statistics.median(values) for key, values in samples.items()}
        return {key: {"seconds": medians[key], "ratio": medians[key] / medians["gradient"],
                      "ratio_iqr": ratio_iqr(samples[key], samples["gradient"])} for key in samples}

    result = {"jacobian": entries(samples), "jacobian_shape": dict(JACOBIAN_SHAPE), "hessian": {},
              "rounds": rounds}
    for n in HESSIAN_DIMS:
        result["hessian"][str(n)] = entries(_round_robin_samples(_hessian_calls(n), rounds))
    return result


# -- gradlib's ste_sign against larq's (in a subprocess) -------------------------

#: the comparisons the report shows: label -> (gradlib's op, larq's op), like with like
LARQ_PAIRS = {
    "clipped at 1": ("gradlib ste_sign(x, clip=1.0)", "larq ste_sign(x) (clip_value=1.0)"),
    "unclipped": ("gradlib ste_sign(x)", "larq ste_sign(x, clip_value=None)"),
}


def _larq_ops() -> Dict[str, Callable]:
    """The reference, then gradlib's and larq's ste_sign, clipped at 1 and unclipped (larq's default clips)."""
    import larq
    import tensorflow as tf

    import gradlib

    return {IDENTITY: tf.identity,
            "gradlib ste_sign(x, clip=1.0)": functools.partial(gradlib.ste_sign, clip=1.0),
            "larq ste_sign(x) (clip_value=1.0)": larq.quantizers.ste_sign,
            "gradlib ste_sign(x)": gradlib.ste_sign,
            "larq ste_sign(x, clip_value=None)": functools.partial(larq.quantizers.ste_sign, clip_value=None)}


def larq_comparison(rounds: int, n: int = N_ELEMENTS, modes: Iterable[str] = tuple(MODES)) -> dict:
    """In a process where larq imports: versions and op timings (see :func:`larq_timings`)."""
    from importlib import metadata

    samples = {}
    timings = op_timings_by_mode(n, rounds, modes=modes, ops=_larq_ops(), samples_out=samples)
    return {"available": True,
            "versions": {dist: metadata.version(dist) for dist in ("larq", "tf_keras")},
            "ops": timings,
            "gradlib_over_larq": {mode: {label: timings[mode][ours]["seconds"] / timings[mode][theirs]["seconds"]
                                         for label, (ours, theirs) in LARQ_PAIRS.items()}
                                  for mode in timings},
            # the spread of gradlib's time over larq's, round by round
            "gradlib_over_larq_iqr": {mode: {label: ratio_iqr(samples[(mode, ours)], samples[(mode, theirs)])
                                             for label, (ours, theirs) in LARQ_PAIRS.items()}
                                      for mode in timings},
            "gradlib_over_larq_ci": {mode: {label: median_ci(samples[(mode, ours)], samples[(mode, theirs)])
                                            for label, (ours, theirs) in LARQ_PAIRS.items()}
                                     for mode in timings}}


def larq_timings(rounds: int = ROUNDS, n: int = N_ELEMENTS, site: Optional[Path] = None,
                 timeout: float = 900) -> dict:
    """gradlib's ``ste_sign`` against larq's, forward + backward, in every mode.

    larq 0.14 does not import under Keras 3, so the timing runs in a
    subprocess with ``TF_USE_LEGACY_KERAS=1`` and ``site`` (default
    :data:`LARQ_SITE`, where ``make bench`` installs larq, tf_keras and
    terminaltables with ``--no-deps``) first on its path.  Returns
    ``{"available": True, "versions", "ops": {mode: {name: ...}},
    "gradlib_over_larq": {mode: {"clipped at 1": r, "unclipped": r}}}``
    (``r`` < 1: gradlib is faster), or ``{"available": False, "reason"}``
    when larq is missing or its run fails, so that the report says so.
    """
    site = Path(LARQ_SITE if site is None else site)
    if not (site / "larq").is_dir():
        return {"available": False,
                "reason": f"larq is not installed in {site} (make bench installs {LARQ_REQUIREMENTS.name} there)"}
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(REPO)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env["TF_USE_LEGACY_KERAS"] = "1"
    command = [sys.executable, "-m", "tools.bench_ops", "larq", "--rounds", str(rounds), "--elements", str(n)]
    try:
        proc = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return {"available": False, "reason": f"the larq timing did not finish in {timeout:.0f} s"}
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = " ".join(proc.stderr.strip().splitlines()[-3:])
        return {"available": False, "reason": f"the larq timing failed (exit {proc.returncode}): {tail}"}
    return json.loads(lines[-1])


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


def main(argv=None) -> int:
    """``python -m tools.bench_ops larq``: the larq comparison as one JSON line (run by larq_timings)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m tools.bench_ops")
    parser.add_argument("what", choices=["larq"])
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--elements", type=int, default=N_ELEMENTS)
    args = parser.parse_args(argv)
    print(json.dumps(larq_comparison(args.rounds, args.elements)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
