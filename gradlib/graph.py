r"""TF1-style graph code inside TensorFlow 2, without touching eager mode.

``run_graph`` gives readers the ``tf.Graph`` + ``tf.compat.v1.Session`` world
that ``tf.gradients``, ``tf.RegisterGradient`` and ``gradient_override_map``
were designed for, while the rest of the notebook stays eager.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Union

import tensorflow as tf

from ._validate import callable_arg, integer

__all__ = ["run_graph", "register_gradient"]


def _is_fetchable(leaf: Any) -> bool:
    return isinstance(leaf, (tf.Tensor, tf.Variable, tf.Operation, tf.IndexedSlices))


def _feed_dict(graph: tf.Graph, feed: Mapping[str, Any]) -> Dict[tf.Tensor, Any]:
    """``{"lam": 0.5}`` as a session feed dict: each name resolved in ``graph``."""
    if not isinstance(feed, Mapping):
        raise TypeError(f"each feed must be a mapping from a tensor name to a value; got {type(feed).__name__}")
    resolved = {}
    for name, value in feed.items():
        if not isinstance(name, str) or not name:
            raise TypeError(f"feed keys must be tensor names (strings such as 'lam'); got {name!r}")
        try:
            tensor = graph.get_tensor_by_name(name if ":" in name else name + ":0")
        except (KeyError, ValueError):
            names = sorted(op.name for op in graph.get_operations() if op.type == "Placeholder")
            raise ValueError(f"no tensor named {name!r} in the graph built by `build`; "
                             f"its placeholders: {names or 'none'}") from None
        resolved[tensor] = value
    return resolved


def run_graph(build: Callable[[], Any], *, repeat: Optional[int] = None,
              feed: Union[None, Mapping[str, Any], Sequence[Mapping[str, Any]]] = None):
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

    ``feed`` gives values to placeholders (``tf.compat.v1.placeholder``) by
    name, as ``session.run(..., feed_dict=...)`` did: ``{"lam": 0.5}`` feeds
    the tensor ``"lam:0"``.  A list of such mappings runs the fetches once per
    mapping in one session (variables keep their values between the runs)
    and returns a list, like ``repeat``: this is how a TF1 graph followed a
    schedule such as DANN's :math:`\lambda_p`.

    Reference: the TF1 programming model, *TensorFlow: A system for
    large-scale machine learning*, M. Abadi et al., OSDI 2016.

    Raises:
        TypeError: ``build`` is not callable, or ``feed`` is not a mapping
            from tensor names to values (or a list of them).
        ValueError: ``repeat`` is not a positive integer, ``feed`` names a
            tensor the graph does not have, or ``feed`` is a list whose length
            differs from ``repeat``.
    """
    callable_arg(build, "build")
    if repeat is not None:
        repeat = integer(repeat, "repeat")
    feeds = None
    if feed is not None:
        if isinstance(feed, Mapping):
            feeds = [feed] * (repeat or 1)
        elif isinstance(feed, (list, tuple)) and feed:
            feeds = list(feed)
            if repeat is not None and repeat != len(feeds):
                raise ValueError(f"`feed` holds {len(feeds)} mappings but `repeat` is {repeat}; give one or the other")
            repeat = len(feeds)
        else:
            raise TypeError("`feed` must be a mapping from tensor names to values, or a non-empty list of them; "
                            f"got {feed!r}")
    graph = tf.Graph()
    with graph.as_default():
        structure = build()
        leaves = tf.nest.flatten(structure)
        slots = [i for i, leaf in enumerate(leaves) if _is_fetchable(leaf)]
        init = tf.compat.v1.global_variables_initializer()
        feed_dicts = [_feed_dict(graph, f) for f in feeds] if feeds is not None else None
    with tf.compat.v1.Session(graph=graph) as session:
        session.run(init)

        def once(feed_dict=None):
            values = session.run([leaves[i] for i in slots], feed_dict=feed_dict) if slots else []
            out = list(leaves)
            for i, value in zip(slots, values):
                out[i] = value
            return tf.nest.pack_sequence_as(structure, out)

        if repeat is None:
            return once(feed_dicts[0] if feed_dicts else None)
        return [once(feed_dicts[i] if feed_dicts else None) for i in range(repeat)]


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

    For an op with :math:`n` outputs and :math:`m` inputs, TensorFlow calls
    the gradient function with the op and one upstream gradient
    :math:`\bar y_j` per output, and it returns one downstream gradient
    :math:`\bar x_k` per input:

    .. math:: (\bar x_1, \dots, \bar x_m) = \mathrm{fn}(\mathrm{op}, \bar y_1, \dots, \bar y_n)

    as tensors (or ``None`` for an input that gets no gradient), never
    Python numbers.

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
