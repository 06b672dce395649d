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
    from gradlib import dann

    timings = {}
    for method in ("source_only", "dann"):
        start = time.perf_counter()
        dann.moons_experiment(method, seed=0)
        timings[f"dann.moons_experiment('{method}')"] = time.perf_counter() - start
    return timings


def format_ops(results: dict) -> str:
    """Markdown tables for the op ratios and experiment times (empty if absent)."""
    lines = []
    ops = results.get("ops") or {}
    if ops:
        lines += ["", f"Forward + backward on {N_ELEMENTS:,} float32 elements, median of {ROUNDS} rounds:", "",
                  "| op | milliseconds | × identity |", "|---|---:|---:|"]
        lines += [f"| {name} | {entry['seconds'] * 1e3:.2f} | {entry['ratio_to_identity']:.2f}× |"
                  for name, entry in ops.items()]
    experiments = results.get("experiments") or {}
    if experiments:
        lines += ["", "| experiment | seconds |", "|---|---:|"]
        lines += [f"| `{name}` | {seconds:.2f} |" for name, seconds in experiments.items()]
    return "\n".join(lines) + ("\n" if lines else "")
