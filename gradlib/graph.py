r"""TF1-style graph code inside TensorFlow 2, without touching eager mode.

``run_graph`` gives readers the ``tf.Graph`` + ``tf.compat.v1.Session`` world
that ``tf.gradients``, ``tf.RegisterGradient`` and ``gradient_override_map``
were designed for, while the rest of the notebook stays eager.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional

import numpy as np
import tensorflow as tf

from ._validate import callable_arg

__all__ = ["run_graph", "register_gradient"]


def _is_fetchable(leaf: Any) -> bool:
    return isinstance(leaf, (tf.Tensor, tf.Variable, tf.Operation, tf.IndexedSlices))


def run_graph(build: Callable[[], Any], *, repeat: Optional[int] = None):
    r"""Build a fresh ``tf.Graph`` with ``build()`` and evaluate what it returns.

    Steps: enter a new graph, call ``build()``, run
    ``tf.compat.v1.global_variables_initializer()`` in a
    ``tf.compat.v1.Session``, then evaluate every tensor, variable or op in
    the structure ``build`` returned (lists, tuples, dicts nest freely).
    ``None`` leaves (for example an unconnected gradient from
    ``tf.gradients``) stay ``None``; an op evaluates to ``None``; other
    Python values are passed through.  The global eager setting is never
    changed: code after the call runs eagerly as before.

    With ``repeat=n`` the same fetches are run ``n`` times in one session (a
    TF1 training loop: fetch the train op and the loss together) and a list
    of ``n`` results is returned.

    Reference: the TF1 programming model, *TensorFlow: A system for
    large-scale machine learning*, M. Abadi et al., OSDI 2016.

    Raises:
        TypeError: ``build`` is not callable.
        ValueError: ``repeat`` is not a positive integer.
    """
    callable_arg(build, "build")
    if repeat is not None and (isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1):
        raise ValueError(f"`repeat` must be a positive integer or None; got {repeat!r}")
    graph = tf.Graph()
    with graph.as_default():
        structure = build()
        leaves = tf.nest.flatten(structure)
        slots = [i for i, leaf in enumerate(leaves) if _is_fetchable(leaf)]
        init = tf.compat.v1.global_variables_initializer()
    with tf.compat.v1.Session(graph=graph) as session:
        session.run(init)

        def once():
            values = session.run([leaves[i] for i in slots]) if slots else []
            out = list(leaves)
            for i, value in zip(slots, values):
                out[i] = value
            return tf.nest.pack_sequence_as(structure, out)

        if repeat is None:
            return once()
        return [once() for _ in range(repeat)]


# Gradient functions registered through gradlib, by name.  TensorFlow's
# registry refuses a second registration under the same name, so each name
# is registered once with a trampoline that calls the current entry here;
# re-running a notebook cell just replaces the entry.
_GRADIENTS: Dict[str, Callable] = {}


def register_gradient(op_type_name: str):
    r"""Decorator like ``tf.RegisterGradient`` that is safe to re-run in a notebook.

    ``@register_gradient("ClipSign")`` registers ``fn(op, *grads)`` as the
    gradient named ``"ClipSign"``; map an op type to it with
    ``graph.gradient_override_map({"Sign": "ClipSign"})``.  Registering the
    same name again (running the cell a second time) replaces the function;
    ``tf.RegisterGradient`` would raise ``KeyError`` instead.

    A gradient function maps the upstream gradient :math:`\bar y` of each
    output to the downstream gradient :math:`\bar x_k` of each input:

    .. math:: \bar x_k = \mathrm{fn}(\mathrm{op}, \bar y)_k

    and must return tensors (or ``None``), never Python numbers.

    Reference: TensorFlow, ``tf.RegisterGradient`` and
    ``tf.Graph.gradient_override_map`` (graph mode only).

    Raises:
        TypeError: ``op_type_name`` is not a string, or the decorated object
            is not callable.
        ValueError: ``op_type_name`` is empty, or the name is already taken by
            a gradient registered outside gradlib (TensorFlow's own, e.g.
            ``"Sign"``, or one made with ``tf.RegisterGradient``).
    """
    if not isinstance(op_type_name, str):
        raise TypeError(f"`op_type_name` must be a string; got {type(op_type_name).__name__}")
    if not op_type_name:
        raise ValueError("`op_type_name` must not be empty")

    def decorator(fn):
        callable_arg(fn, "the decorated gradient function")
        if op_type_name not in _GRADIENTS:

            def trampoline(op, *grads):
                return _GRADIENTS[op_type_name](op, *grads)

            try:
                tf.RegisterGradient(op_type_name)(trampoline)
            except KeyError:
                raise ValueError(
                    f"a gradient named {op_type_name!r} is already registered outside gradlib "
                    "(TensorFlow's own gradient for that op type, or an earlier "
                    "tf.RegisterGradient); choose a new name and map the op type to it with "
                    "gradient_override_map"
                ) from None
        _GRADIENTS[op_type_name] = fn
        return fn

    return decorator
