"""Checks for chapter 3: RegisterGradient and gradient_override_map.

``ch03-ex1``: the reader writes ``clip_grad(op, *grads)``, the gradient
function of an ``IdentityN`` op built as ``y, _ = IdentityN([x, c])``: the
forward value is :math:`x`, the backward value is the upstream gradient
clipped to :math:`[-c, c]`, with the threshold :math:`c` read from the op
(``op.inputs[1]``), a placeholder fed per run.  One registration serves every
:math:`c`.  The check registers the answer through
:func:`gradlib.register_gradient` (so re-running the exercise cell is safe),
builds that graph once and feeds :math:`c = 0.5, 1, 2`; the reference is
``np.clip(upstream, -c, c)``, and the gradient returned for ``c`` must be
``None`` or zero (``c`` is a threshold, not a parameter).  Besides the shape
of the answer, the diagnosis names: no clip, clipping ``x`` instead of the
gradient, the chapter's multiplication by ``c``, ``grad_c`` taken for ``c``
(all zeros), the explorer's mask by ``|x| <= c``, zeroing instead of
clipping beyond ``±c``, a ``c`` baked in, and a one-sided clip.

``ch03-ex2``: find the bugs.  A colleague's ``binarize`` has three silent
bugs (a misspelled op type in the map, the map entered on a graph fetched
once at the top, a mask computed from ``op.outputs[0]``).  Bugs 1 and 2
leave TensorFlow's zero gradient of ``Sign``; the network survives bug 3,
whose mask passes the upstream gradient everywhere (a straight-through
estimator without BinaryNet's clip).  The reader fixes all three and keeps
the colleague's override: the expected gradient is BinaryNet's, the upstream
gradient where ``|x| <= 1`` and 0 beyond, through a ``Sign`` op of the graph
marked by a map for ``Sign``.  The check calls the answer inside a
fresh TF1 graph and differentiates with ``tf.gradients``; while the answer
runs it records which graph each ``gradient_override_map`` was entered on and
with which keys, so that it can say which bug is left.  It names: bug 3 left
(the upstream gradient everywhere, the likeliest mistake: the network
learns), the chapter's ``BinaryNetSign`` mapped instead of the colleague's
function fixed, bug 1 or bug 2 left, the map entered around a ``tf.cond`` /
``tf.while_loop`` / ``tf.function`` whose ``Sign`` is built in a graph of its
own, a ``Sign`` created after the block, a ``tf.custom_gradient`` or other
answer that bypasses the override, ``Sign`` mapped to ``"Identity"``, and a
map to a name that nothing registered (the colleague's ``"ColleagueSign"``,
registered only in the exercise's text, a Python function's name, or any
other name).
"""

from __future__ import annotations

import contextlib
import inspect
from typing import Any, List, Tuple

import numpy as np
import tensorflow as tf

from ...graph import register_gradient, run_graph
from ._core import (Mismatch, as_array, call, describe, exercise, fmt, fragment, kink_and_random_points, matches,
                    message, to_array)


def _kind(value: Any) -> str:
    kind = type(value)
    return f"Python {kind.__name__}" if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__name__}"


def _short(value: Any) -> str:
    try:
        text = repr(value)
    except Exception:  # a reader's __repr__ may raise
        text = "?"
    return text if len(text) <= 40 else text[:37] + "..."


# -- ch03-ex1: a gradient clip whose threshold is fed per run ------------------------

ANSWER_NAME_EX1 = "GradbookCh03Ex1Answer"  # a gradient name no one else uses
THRESHOLDS = (0.5, 1.0, 2.0)
# Upstream gradients on both sides of every threshold, exact thresholds included.
UPSTREAM_EX1 = np.concatenate([
    np.array([0.25, -0.25, 0.5, -0.5, 0.75, -1.0, 1.0, 1.5, -1.5, 2.0, -2.0, 3.0, -3.0], np.float32),
    np.random.default_rng(5).uniform(-3.0, 3.0, 11).astype(np.float32)])
# The forward input: values that differ from the upstream gradient everywhere,
# so that an answer which clips x instead of the gradient is recognised.
X_EX1 = np.random.default_rng(6).uniform(-2.5, 2.5, UPSTREAM_EX1.size).astype(np.float32)


def _binds(fn, count: int) -> bool:
    """True when ``fn`` accepts ``count`` positional arguments (unknown: True)."""
    try:
        signature = inspect.signature(fn)
    except Exception:  # builtins, objects whose signature cannot be read
        return True
    try:
        signature.bind(*range(count))
    except TypeError:
        return False
    return True


def _validate_ex1(result, lang):
    """Look at what the gradient function itself returned, before TensorFlow does."""
    if result is None:
        raise Mismatch(message("ch03-ex1.none", lang))
    if isinstance(result, tf.Tensor):
        raise Mismatch(message("ch03-ex1.one", lang))
    if not isinstance(result, (list, tuple)):
        raise Mismatch(message("ch03-ex1.not_tensor", lang, which=fragment("ch03-ex1.first", lang),
                               kind=_kind(result), value=_short(result)))
    if len(result) != 2:
        raise Mismatch(message("ch03-ex1." + ("count_one" if len(result) == 1 else "count"), lang, n=len(result)))
    first, second = result
    if first is None:
        raise Mismatch(message("ch03-ex1.first_none", lang))
    for which, value, allow_none in (("first", first, False), ("second", second, True)):
        if value is None and allow_none:
            continue
        if not isinstance(value, tf.Tensor):
            raise Mismatch(message("ch03-ex1.not_tensor", lang, which=message("ch03-ex1." + which, lang),
                                   kind=_kind(value), value=_short(value)))
    if not first.dtype.is_floating:
        raise Mismatch(message("common.dtype", lang, where="", what=fragment("common.gradient", lang),
                               got=first.dtype.name, expected="float32"))
    shape = first.shape
    if shape.rank is not None and shape.as_list() != list(UPSTREAM_EX1.shape):
        raise Mismatch(message("ch03-ex1.shape", lang, got=shape.as_list(), expected=list(UPSTREAM_EX1.shape)))


def _close(a, b) -> bool:
    return matches(a, b, rtol=1e-5, atol=1e-6)


def _diagnose_ex1(got: List[np.ndarray], lang: str) -> None:
    """Name the mistake behind wrong gradients (one array per threshold)."""
    up, x = UPSTREAM_EX1, X_EX1
    expected = [np.clip(up, -c, c) for c in THRESHOLDS]
    bad = [k for k in range(len(THRESHOLDS)) if not _close(got[k], expected[k])]
    if not bad:
        return
    k = bad[0]
    c = THRESHOLDS[k]
    i = int(np.flatnonzero(~np.isclose(got[k], expected[k], rtol=1e-5, atol=1e-6))[0])
    values = dict(c=fmt(c), g=fmt(up[i]), got=fmt(got[k][i]), expected=fmt(expected[k][i]))
    if all(_close(g, up) for g in got):
        raise Mismatch(message("ch03-ex1.no_clip", lang, **values))
    if all(_close(g, np.clip(x, -c_, c_)) or _close(g, x) for g, c_ in zip(got, THRESHOLDS)):
        raise Mismatch(message("ch03-ex1.input", lang, c=fmt(c), got=fmt(got[k])))
    for sign in (1.0, -1.0):
        if all(_close(g, sign * c_ * up) for g, c_ in zip(got, THRESHOLDS)):
            raise Mismatch(message("ch03-ex1.scaled", lang, sign="" if sign > 0 else "-"))
    zero = np.zeros_like(up)
    if all(_close(g, zero) for g in got):  # clip_by_value(grad_y, -grad_c, grad_c): grad_c is zeros
        raise Mismatch(message("ch03-ex1.grad_c", lang))
    for within in (np.less_equal, np.less):  # either choice at |.| == c is the same mistake
        if all(_close(g, np.where(within(np.abs(x), c_), up, zero)) for g, c_ in zip(got, THRESHOLDS)):
            raise Mismatch(message("ch03-ex1.mask_x", lang))
        if all(_close(g, np.where(within(np.abs(up), c_), up, zero)) for g, c_ in zip(got, THRESHOLDS)):
            raise Mismatch(message("ch03-ex1.zeroed", lang, **values))
    if _close(got[0], got[-1]):
        raise Mismatch(message("ch03-ex1.fixed", lang, c1=fmt(THRESHOLDS[0]), c2=fmt(THRESHOLDS[-1])))
    if all(_close(g, np.minimum(up, c_)) or _close(g, np.maximum(up, -c_)) for g, c_ in zip(got, THRESHOLDS)):
        raise Mismatch(message("ch03-ex1.one_sided", lang, **values))
    raise Mismatch(message("ch03-ex1.wrong", lang, **values))


# The likeliest wrong answers (tests/test_classroom_wrong_answers.py runs them), as a reader writes them.

def _one_upstream_gradient(op, grad):  # the one-output signature of the chapter's first examples
    c = op.inputs[1]
    return [tf.clip_by_value(grad, -c, c), None]


def _mask_by_input(op, grad_y, grad_c):  # the explorer's clip_mask_grad, copied: a mask by |x| <= c
    x, c = op.inputs
    return [tf.where(tf.abs(x) <= c, grad_y, tf.zeros_like(grad_y)), None]


def _zeroed_beyond_c(op, grad_y, grad_c):  # the gradient zeroed beyond ±c instead of clipped
    c = op.inputs[1]
    return [tf.where(tf.abs(grad_y) <= c, grad_y, tf.zeros_like(grad_y)), None]


@exercise("ch03-ex1", answer="clip_grad", wrong_answers=[
    ("one upstream gradient", _one_upstream_gradient, "ch03-ex1.signature"),
    ("one gradient returned", lambda op, *grads: tf.clip_by_value(grads[0], -op.inputs[1], op.inputs[1]),
     "ch03-ex1.one"),
    ("the chapter's reversal copied", lambda op, grad_y, grad_c: [-op.inputs[1] * grad_y, None], "ch03-ex1.scaled"),
    ("c baked in", lambda op, *grads: [tf.clip_by_value(grads[0], -1.0, 1.0), None], "ch03-ex1.fixed"),
    ("x clipped, not the gradient",
     lambda op, *grads: [tf.clip_by_value(op.inputs[0], -op.inputs[1], op.inputs[1]), None], "ch03-ex1.input"),
    ("the explorer's mask by |x| <= c", _mask_by_input, "ch03-ex1.mask_x"),
    ("zeroed beyond c", _zeroed_beyond_c, "ch03-ex1.zeroed"),
    ("grad_c taken for c", lambda op, grad_y, grad_c: [tf.clip_by_value(grad_y, -grad_c, grad_c), None],
     "ch03-ex1.grad_c"),
    ("c as its own gradient",
     lambda op, grad_y, grad_c: [tf.clip_by_value(grad_y, -op.inputs[1], op.inputs[1]), op.inputs[1]],
     "ch03-ex1.grad_for_c"),
])
def check_clip_grad(answer, lang):
    if not _binds(answer, 3) and _binds(answer, 2):
        raise Mismatch(message("ch03-ex1.signature", lang))
    register_gradient(ANSWER_NAME_EX1)(answer)  # re-registering replaces the previous answer

    def build():
        c = tf.compat.v1.placeholder(tf.float32, [], name="c")
        x = tf.constant(X_EX1)
        graph = tf.compat.v1.get_default_graph()
        with graph.gradient_override_map({"IdentityN": ANSWER_NAME_EX1}):
            y, _ = tf.raw_ops.IdentityN(input=[x, c])
        upstream = tf.constant(UPSTREAM_EX1)
        _validate_ex1(call(answer, y.op, upstream, tf.zeros_like(c), lang=lang), lang)
        try:
            return tf.gradients(y, [x, c], grad_ys=upstream)  # c's entry: the second value returned, or None
        except Exception as err:  # e.g. a later call of the answer that fails inside TensorFlow
            raise Mismatch(message("ch03-ex1.tf_error", lang, error=type(err).__name__,
                                   detail=describe(err))) from None

    try:
        results = run_graph(build, feed=[{"c": c} for c in THRESHOLDS])
    except Mismatch:
        raise
    except Exception as err:  # raised while the session ran the reader's ops
        raise Mismatch(message("ch03-ex1.tf_error", lang, error=type(err).__name__,
                               detail=describe(err))) from None
    got = [as_array(r[0], lang=lang, what="gradient", shape=UPSTREAM_EX1.shape, none_key="none_gradient")
           for r in results]
    _diagnose_ex1(got, lang)
    for c, (_, for_c) in zip(THRESHOLDS, results):
        if for_c is None:
            continue
        value = to_array(for_c)
        if value is None or value.dtype.kind not in "biuf" or value.size != 1:
            raise Mismatch(message("ch03-ex1.grad_for_c", lang, c=fmt(c), got=_short(for_c)))
        if not np.isfinite(value).all():
            raise Mismatch(message("ch03-ex1.grad_for_c", lang, c=fmt(c), got=fmt(value.item())))
        if value.item() != 0:
            raise Mismatch(message("ch03-ex1.grad_for_c", lang, c=fmt(c), got=fmt(value.item())))
    return message("ch03-ex1.passed", lang, cs=", ".join(fmt(c) for c in THRESHOLDS), n=UPSTREAM_EX1.size)


# -- ch03-ex2: find the bugs in a binarize function --------------------------------

CLIP = 1.0
POINTS_EX2 = kink_and_random_points([0.0, 1.0, -1.0, 1.5, -1.5, 0.5, -0.5, 2.5, -2.5], count=15, seed=3)
MATRIX_EX2 = np.array([[1.0, -0.25, 2.0, 0.0], [-1.0, 1.25, -3.0, 0.75], [0.5, -1.5, 1.0, -0.5]], np.float32)


def _upstream(shape, seed):
    rng = np.random.default_rng(seed)
    size = int(np.prod(shape))
    return (rng.uniform(0.5, 2.5, size) * rng.choice([-1.0, 1.0], size)).astype(np.float32).reshape(shape)


CASES_EX2 = [(POINTS_EX2, _upstream(POINTS_EX2.shape, 7)), (MATRIX_EX2, _upstream(MATRIX_EX2.shape, 8))]


@contextlib.contextmanager
def _recording_override_maps():
    """Record ``(graph, op_type_map)`` for every ``gradient_override_map`` entered in the block."""
    records: List[Tuple[Any, Any]] = []
    original = tf.Graph.gradient_override_map

    def recording(self, op_type_map):
        try:
            copied = dict(op_type_map) if isinstance(op_type_map, dict) else None
        except Exception:
            copied = None
        records.append((self, copied))
        return original(self, op_type_map)

    tf.Graph.gradient_override_map = recording
    try:
        yield records
    finally:
        tf.Graph.gradient_override_map = original


def _sign_targets(records) -> List[str]:
    """The names the recorded maps send ``Sign`` to, on whichever graph they were entered."""
    return [str(m["Sign"]) for _, m in records if m and "Sign" in m]


def _python_function_names(answer) -> set:
    """Names of the functions the answer's module (the notebook) defines, for the LookupError message."""
    try:
        namespace = dict(getattr(answer, "__globals__", None) or {})
    except Exception:
        return set()
    return {name for name, value in namespace.items() if inspect.isfunction(value)}


def _lookup_message(answer, names, lang) -> str:
    """A map whose value names no registered gradient: say which mistake that is."""
    if "ColleagueSign" in names:  # the exercise's text registers it; the notebook never runs that text
        return message("ch03-ex2.colleague_name", lang)
    shown = ", ".join(repr(n) for n in names) or "?"
    if set(names) & _python_function_names(answer):
        return message("ch03-ex2.lookup", lang, names=shown)
    return message("ch03-ex2.unregistered", lang, names=shown)


def _build_ex2(answer, x_np, up_np, lang):
    """In a fresh graph: y = binarize(x) and dy/dx for the upstream gradient; the maps entered."""
    records: List[Tuple[Any, Any]] = []
    box = {}

    def build():
        graph = tf.compat.v1.get_default_graph()
        x = tf.constant(x_np)
        with _recording_override_maps() as seen:
            y = call(answer, x, lang=lang)
        records.extend(seen)
        if y is None:
            raise Mismatch(message("ch03-ex2.none", lang))
        if not isinstance(y, tf.Tensor) or getattr(y, "graph", None) is not graph:
            raise Mismatch(message("ch03-ex2.not_tensor", lang, kind=_kind(y), value=_short(y)))
        if y.shape.rank is not None and y.shape.as_list() != list(x_np.shape):
            raise Mismatch(message("ch03-ex2.shape", lang, got=y.shape.as_list(), expected=list(x_np.shape)))
        if not y.dtype.is_floating:
            raise Mismatch(message("common.dtype", lang, where="", what=fragment("common.forward", lang),
                                   got=y.dtype.name, expected="float32"))
        box["graph"] = graph
        try:
            gradient = tf.gradients(y, x, grad_ys=tf.constant(up_np))[0]
        except LookupError:
            raise Mismatch(_lookup_message(answer, sorted(set(_sign_targets(records))), lang)) from None
        except Exception as err:
            raise Mismatch(message("ch03-ex2.tf_error", lang, error=type(err).__name__,
                                   detail=describe(err))) from None
        return y, gradient

    try:
        y, gradient = run_graph(build)
    except Mismatch:
        raise
    except Exception as err:  # raised while the session ran the reader's ops
        raise Mismatch(message("ch03-ex2.tf_error", lang, error=type(err).__name__,
                               detail=describe(err))) from None
    return y, gradient, records, box["graph"]


# Ops whose graph-valued attributes hold other graphs: a branch, a loop body, a function.
NESTED_OP_TYPES = {"If", "StatelessIf", "While", "StatelessWhile", "Case", "StatelessCase",
                   "PartitionedCall", "StatefulPartitionedCall"}
CHAPTER_GRADIENT = "BinaryNetSign"  # the name the chapter registers BinaryNet's gradient under


def _marked_sign_ops(graph) -> bool:
    """True when a Sign op of ``graph`` itself carries an override mark."""
    return any(op.type == "Sign" and "_gradient_op_type" in op.node_def.attr for op in graph.get_operations())


def _diagnose_ex2(x, up, got, records, graph, lang):
    """Name the mistake behind a wrong gradient; return quietly when it is the expected one.

    The expected gradient is the colleague's with all three bugs fixed,
    BinaryNet's: the upstream gradient where ``|x| <= 1``, 0 beyond.
    """
    expected = np.where(np.abs(x) <= CLIP, up, 0.0).astype(np.float32)
    targets = _sign_targets(records)  # a map entered inside a branch or a tf.function counts too
    marked = any(_marked_sign_ops(g) for g in {graph, *(g for g, _ in records)})
    if not np.any(got):  # Sign's own gradient: the override never took effect
        if not records:
            raise Mismatch(message("ch03-ex2.no_map", lang))
        on_graph = [m for g, m in records if g is graph]
        if not on_graph:
            raise Mismatch(message("ch03-ex2.outer_graph", lang))
        keys = sorted({str(k) for m in on_graph if m for k in m})
        if "Sign" not in keys:
            raise Mismatch(message("ch03-ex2.key", lang, keys=", ".join(repr(k) for k in keys) or "{}"))
        if not marked:
            nested = any(op.type in NESTED_OP_TYPES for op in graph.get_operations())
            raise Mismatch(message("ch03-ex2." + ("nested" if nested else "outside"), lang))
    if not targets or not marked:  # a gradient that does not come through a Sign override
        custom = any(m and any(str(v).startswith("CustomGradient") for v in m.values()) for _, m in records)
        raise Mismatch(message("ch03-ex2." + ("custom_gradient" if custom else "bypass"), lang))
    if _close(got, expected):
        if CHAPTER_GRADIENT in targets:
            raise Mismatch(message("ch03-ex2.chapter", lang))
        return
    wrong = ~np.isclose(got, expected, rtol=1e-5, atol=1e-6)
    i = np.unravel_index(int(np.flatnonzero(wrong)[0]), x.shape)
    if _close(got, up):  # the upstream gradient everywhere: the mask passes all
        if "Identity" in targets:
            raise Mismatch(message("ch03-ex2.identity", lang))
        raise Mismatch(message("ch03-ex2.bug3_left", lang, x=fmt(x[i]), g=fmt(up[i]), got=fmt(got[i]),
                               expected=fmt(expected[i])))
    for ones in (np.ones_like(up), np.where(np.abs(x) <= CLIP, 1.0, 0.0)):  # 1 in place of the upstream gradient
        if _close(got, ones):
            raise Mismatch(message("ch03-ex2.upstream", lang, x=fmt(x[i]), g=fmt(up[i]), got=fmt(got[i]),
                                   expected=fmt(expected[i])))
    raise Mismatch(message("ch03-ex2.wrong", lang, x=fmt(x[i]), g=fmt(up[i]), got=fmt(got[i]),
                           expected=fmt(expected[i])))


# The likeliest wrong answers (tests/test_classroom_wrong_answers.py runs them), as a reader writes them.  The
# reader's cell registers the gradient function; here binarize registers it when called, so that importing gradlib
# registers nothing.  The names are gradlib's own: "ColleagueSign" must stay unregistered (one mistake is to map to it).

def _colleague_sign_grad(op, grad):  # the colleague's function: bug 3 left, the output of Sign
    y = op.outputs[0]
    return tf.where(tf.abs(y) <= 1.0, grad, tf.zeros_like(grad))


def _fixed_sign_grad(op, grad):  # bug 3 fixed: the input of Sign (BinaryNet's gradient, as the chapter's)
    x = op.inputs[0]
    return tf.where(tf.abs(x) <= 1.0, grad, tf.zeros_like(grad))


_G = tf.compat.v1.get_default_graph()  # the colleague's G: the default graph when the notebook started (bug 2)


def _binarize(key, name, grad=None, graph=None):
    """The reader's ``binarize``: ``grad`` registered as ``name`` (unless None: a name never registered), and
    ``tf.sign`` under the map ``{key: name}`` entered on ``graph`` (the graph being built when None)."""
    def binarize(x):
        if grad is not None:
            register_gradient(name)(grad)
        with (graph or tf.compat.v1.get_default_graph()).gradient_override_map({key: name}):
            return tf.sign(x)
    return binarize


def _with_custom_gradient(x):  # BinaryNet's gradient, replacing the override instead of fixing it
    @tf.custom_gradient
    def sign(v):
        return tf.sign(v), lambda upstream: tf.where(tf.abs(v) <= 1.0, upstream, tf.zeros_like(upstream))
    return sign(x)


@exercise("ch03-ex2", answer="binarize", wrong_answers=[
    ("bug 3 left", _binarize("Sign", "GradbookCh03Ex2Bug3", _colleague_sign_grad), "ch03-ex2.bug3_left"),
    ("bug 1 left", _binarize("sign", "GradbookCh03Ex2Fixed", _fixed_sign_grad), "ch03-ex2.key"),
    ("bug 2 left", _binarize("Sign", "GradbookCh03Ex2Fixed", _fixed_sign_grad, graph=_G), "ch03-ex2.outer_graph"),
    ("the colleague's name, never registered", _binarize("Sign", "ColleagueSign"), "ch03-ex2.colleague_name"),
    ("the chapter's BinaryNetSign", _binarize("Sign", CHAPTER_GRADIENT, _fixed_sign_grad), "ch03-ex2.chapter"),
    ("tf.custom_gradient", _with_custom_gradient, "ch03-ex2.custom_gradient"),
])
def check_binarize(answer, lang):
    for x_np, up_np in CASES_EX2:
        y, gradient, records, graph = _build_ex2(answer, x_np, up_np, lang)
        y = as_array(y, lang=lang, what="forward", shape=x_np.shape)
        expected = np.sign(x_np)
        wrong = ~np.isclose(y, expected, atol=1e-6)
        if wrong.any() and np.array_equal(y, np.where(x_np >= 0, 1.0, -1.0)):
            raise Mismatch(message("ch03-ex2.binarynet_forward", lang, got=fmt(1.0)))
        if wrong.any():
            i = np.unravel_index(int(np.flatnonzero(wrong)[0]), x_np.shape)
            raise Mismatch(message("ch03-ex2.forward", lang, x=fmt(x_np[i]), got=fmt(y[i]),
                                   expected=fmt(expected[i])))
        gradient = as_array(gradient, lang=lang, what="gradient", shape=x_np.shape, none_key="none_gradient")
        _diagnose_ex2(x_np, up_np, gradient, records, graph, lang)
    return message("ch03-ex2.passed", lang, n=sum(x.size for x, _ in CASES_EX2))
