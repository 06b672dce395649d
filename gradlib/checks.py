r"""Checking gradients: finite differences and a strict ``tf.custom_gradient``.

``check_gradient`` compares what autodiff says with what the function does.
``strict_custom_gradient`` refuses a malformed ``grad_fn`` return that
TensorFlow itself would accept silently under ``GradientTape`` (a gradient
of the wrong shape or dtype, a Python number, a NumPy array).
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Mapping
from typing import Any, Callable, Optional, Sequence

import numpy as np
import tensorflow as tf

from ._validate import callable_arg, real_number

__all__ = ["GradientCheck", "GradientError", "check_gradient", "strict_custom_gradient"]


class GradientError(ValueError):
    """A gradient function returned something that is not a valid gradient."""

    # Inside tf.function, autograph re-raises an error with its own message
    # added, keeping the type only when __init__ is Exception's; without this
    # line users would see a StagingError instead of a GradientError.
    __init__ = Exception.__init__


_VERDICT = {
    "en": {"ok": "<gradient OK: {errors} over {size} entries {tolerance}>",
           "wrong": "<gradient WRONG: at {where} autodiff gives {autodiff}{note}, finite differences give "
                    "{numeric}; {errors} {tolerance}>",
           "point": "the point", "entry": "{index}", "none": " (autodiff returned None, taken as 0)",
           "tolerance": "(atol={atol:g}, rtol={rtol:g})",
           "abs": "max abs error {value}", "rel": "max rel error {value}"},
    "zh": {"ok": "<梯度正确：{errors}，共 {size} 个元素{tolerance}>",
           "wrong": "<梯度错误：{where}自动微分给出 {autodiff}{note}，有限差分给出 {numeric}；{errors}{tolerance}>",
           "point": "在该点处", "entry": "在 {index} 处", "tolerance": "（atol={atol:g}，rtol={rtol:g}）", "none": "（自动微分返回 None，按 0 计）",
           "abs": "最大绝对误差 {value}", "rel": "最大相对误差 {value}"},
}


@dataclasses.dataclass(frozen=True, repr=False)
class GradientCheck:
    """The verdict of :func:`check_gradient`.

    ``autodiff`` and ``numeric`` are the two Jacobians, shaped
    ``fn(x).shape + x.shape``; ``worst`` is the index (into them) of the
    entry with the largest excess over the tolerance.  ``max_rel_error`` is
    taken over the entries whose finite difference exceeds ``atol`` in
    magnitude (a relative error against a zero slope means nothing); it is
    NaN when there is none.  ``lang`` ("en" or "zh") is the language of the
    one-line verdict that ``repr`` gives.
    """

    ok: bool
    max_abs_error: float
    max_rel_error: float
    autodiff: np.ndarray
    numeric: np.ndarray
    worst: tuple
    atol: float
    rtol: float
    autodiff_was_none: bool = False
    lang: str = "en"

    def __bool__(self) -> bool:
        return self.ok

    def __repr__(self) -> str:
        text = _VERDICT[self.lang]
        errors = text["abs"].format(value=f"{self.max_abs_error:.2g}")
        if np.isfinite(self.max_rel_error):
            errors += (", " if self.lang == "en" else "，") + text["rel"].format(value=f"{self.max_rel_error:.2g}")
        tolerance = text["tolerance"].format(atol=self.atol, rtol=self.rtol)
        if self.ok:
            return text["ok"].format(errors=errors, size=self.numeric.size, tolerance=tolerance)
        index = f"[{', '.join(map(str, self.worst))}]"
        where = text["entry"].format(index=index) if self.worst else text["point"]
        return text["wrong"].format(
            where=where, autodiff=f"{float(self.autodiff[self.worst]):.6g}",
            note=text["none"] if self.autodiff_was_none else "",
            numeric=f"{float(self.numeric[self.worst]):.6g}", errors=errors, tolerance=tolerance)


def _max_relative(diff: np.ndarray, reference: np.ndarray, atol: float) -> float:
    """max |diff| / |reference| over the entries where |reference| > atol; NaN if none."""
    meaningful = np.abs(reference) > atol
    if not meaningful.any():
        return float("nan")
    return float(np.max(diff[meaningful] / np.abs(reference[meaningful])))


def check_gradient(fn: Callable, x, *, atol: float = 1e-5, rtol: float = 1e-3,
                   delta: Optional[float] = None, lang: str = "en") -> GradientCheck:
    r"""Compare the autodiff Jacobian of ``fn`` at ``x`` with central finite differences.

    Both are computed in float64. The numerical entry for input element
    :math:`j` is

    .. math:: J^{\mathrm{num}}_{ij} = \frac{f_i(x + h e_j) - f_i(x - h e_j)}{2h},
              \qquad h = \delta \max(1, |x_j|),

    with :math:`\delta = \epsilon^{1/3} \approx 6\cdot 10^{-6}` by default, and
    the check passes when :math:`|J^{\mathrm{ad}} - J^{\mathrm{num}}| \le
    \mathrm{atol} + \mathrm{rtol}\,|J^{\mathrm{num}}|` everywhere. An autodiff
    ``None`` is taken as zeros. At a kink (``relu`` at 0) the two sides
    disagree by design: finite differences average the one-sided slopes.

    Reference: the gradient check of numerical analysis; see e.g. J. Nocedal
    and S. Wright, *Numerical Optimization*, 2nd ed., §8.1 (2006), and
    ``tf.test.compute_gradient``.

    Args:
        fn: a function of one tensor; it must accept float64 input.
        x: the point (any real array-like or tensor).
        atol, rtol: tolerances, as in ``numpy.isclose``. The default ``atol``
            lets through any error smaller than ``1e-5``: a gradient of 0
            where the true one is ``4e-18`` passes. Pass ``atol=0`` to demand
            relative accuracy for tiny gradients.
        delta: relative step; ``None`` for :math:`\epsilon^{1/3}`.
        lang: the language of the verdict, ``"en"`` or ``"zh"``.

    Returns:
        A :class:`GradientCheck`, truthy when the gradient is right; its repr is
        a one-line verdict.  Its relative error is taken only where the finite
        difference exceeds ``atol``: never an infinite relative error against
        a zero slope.

    Raises:
        TypeError: ``fn`` not callable, ``x`` not real, or ``fn`` failing on float64.
        ValueError: a tolerance that is not a non-negative number, a
            ``delta`` that is not a positive number, or an unknown ``lang``.
    """
    callable_arg(fn, "fn")
    if lang not in _VERDICT:
        raise ValueError(f"`lang` must be one of {sorted(_VERDICT)}; got {lang!r}")
    atol, rtol = real_number(atol, "atol", minimum=0), real_number(rtol, "rtol", minimum=0)
    if delta is None:
        delta = float(np.finfo(np.float64).eps ** (1 / 3))
    else:
        delta = real_number(delta, "delta", positive=True)
    point = np.asarray(x.numpy() if hasattr(x, "numpy") else x)
    if point.dtype.kind not in "iuf":
        raise TypeError(f"`x` must hold real numbers; got dtype {point.dtype}")
    point = point.astype(np.float64)

    def evaluate(v):
        try:
            out = fn(v)
        except (TypeError, tf.errors.InvalidArgumentError) as err:
            raise TypeError(f"check_gradient evaluates `fn` in float64 and it failed: {err}. "
                            "Make fn follow its input's dtype (e.g. tf.cast(c, x.dtype)).") from err
        return tf.cast(out, tf.float64)

    xt = tf.constant(point)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(xt)
        y = evaluate(xt)
    # One vector-Jacobian product per output element (a one-hot upstream
    # gradient), instead of tape.jacobian: its pfor path traces tf.functions
    # and, called repeatedly, makes TensorFlow log retracing warnings.
    y_shape = tuple(y.shape)
    rows, autodiff_was_none = [], False
    for i in range(int(np.prod(y_shape, dtype=np.int64))):
        onehot = np.zeros(int(np.prod(y_shape, dtype=np.int64)))
        onehot[i] = 1.0
        row = tape.gradient(y, xt, output_gradients=tf.constant(onehot.reshape(y_shape)))
        autodiff_was_none |= row is None
        rows.append(np.zeros(point.shape) if row is None else tf.convert_to_tensor(row).numpy())
    del tape
    autodiff = np.stack(rows).reshape(y_shape + point.shape) if rows else np.zeros(y_shape + point.shape)

    numeric = np.zeros(y_shape + point.shape)
    flat = point.reshape(-1)
    for j in range(flat.size):
        h = delta * max(1.0, abs(flat[j]))
        up, down = flat.copy(), flat.copy()
        up[j] += h
        down[j] -= h
        slope = (evaluate(tf.constant(up.reshape(point.shape))).numpy()
                 - evaluate(tf.constant(down.reshape(point.shape))).numpy()) / (2 * h)
        numeric[(Ellipsis,) + np.unravel_index(j, point.shape)] = slope

    diff = np.abs(autodiff - numeric)
    excess = diff - (atol + rtol * np.abs(numeric))
    finite = np.isfinite(autodiff) & np.isfinite(numeric)
    excess = np.where(finite | (autodiff == numeric), excess, np.inf)
    worst = tuple(int(i) for i in np.unravel_index(int(np.argmax(excess)), excess.shape)) if excess.size else ()
    return GradientCheck(
        ok=bool(np.all(excess <= 0)),
        max_abs_error=float(diff.max()) if diff.size else 0.0,
        max_rel_error=_max_relative(diff, numeric, atol) if diff.size else float("nan"),
        autodiff=autodiff, numeric=numeric, worst=worst, atol=atol, rtol=rtol,
        autodiff_was_none=autodiff_was_none, lang=lang,
    )


# --------------------------------------------------------------------------
# strict_custom_gradient

def _describe(value: Any) -> str:
    if isinstance(value, (tf.Tensor, tf.Variable)):
        return f"shape {value.shape.as_list() if value.shape.rank is not None else '?'}, dtype {value.dtype.name}"
    return f"a {type(value).__name__} ({value!r})" if np.isscalar(value) else f"a {type(value).__name__}"


def _check_one(grad: Any, reference, what: str) -> None:
    expected = f"shape {reference.shape.as_list()}, dtype {reference.dtype.name}"
    if grad is None:
        return
    if isinstance(grad, tf.IndexedSlices):
        if grad.dtype != reference.dtype:
            raise GradientError(f"the gradient for {what}: expected {expected}; got IndexedSlices of dtype {grad.dtype.name}")
        return
    if not isinstance(grad, tf.Tensor):
        raise GradientError(
            f"the gradient for {what} must be a tensor or None; got {_describe(grad)}. "
            f"Expected {expected}: build it from TensorFlow ops, e.g. dy * ... or tf.zeros_like(x)."
        )
    if grad.dtype != reference.dtype:
        raise GradientError(f"the gradient for {what} has the wrong dtype: expected {expected}; got {_describe(grad)}")
    if not grad.shape.is_compatible_with(reference.shape) or (
            grad.shape.rank is not None and reference.shape.rank is not None and grad.shape.rank != reference.shape.rank):
        raise GradientError(f"the gradient for {what} has the wrong shape: expected {expected}; got {_describe(grad)}")


def _parameter_names(f: Callable, count: int) -> Sequence[str]:
    try:
        params = [p for p in inspect.signature(f).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    names = [p.name for p in params[:count]]
    return names + [f"input {i}" for i in range(len(names), count)]


def _check_grad_fn_return(result: Any, inputs: Sequence, names: Sequence[str], variables: Sequence) -> None:
    """Raise a GradientError unless ``result`` (what grad_fn returned) holds one valid gradient per input and variable."""
    variable_names = ", ".join(f"`{v.name}`" for v in variables)
    if variables:
        if not (isinstance(result, (tuple, list)) and len(result) == 2):
            raise GradientError(
                f"grad_fn received `variables` ({variable_names}), so it must return a pair "
                "(gradients for the inputs, list of gradients for the variables)")
        input_grads, variable_grads = result
    else:
        input_grads, variable_grads = result, []
    if len(inputs) == 1 and not isinstance(input_grads, (tuple, list)):
        input_grads = [input_grads]
    if not isinstance(input_grads, (tuple, list)):
        raise GradientError(f"grad_fn must return one gradient per input ({len(inputs)} inputs: "
                            f"{', '.join(names)}) as a list or tuple; got {_describe(input_grads)}")
    if len(input_grads) != len(inputs):
        raise GradientError(f"grad_fn returned {len(input_grads)} gradients for {len(inputs)} inputs "
                            f"({', '.join(names)}); return exactly one per input (None where not differentiable)")
    for i, (grad, x, name) in enumerate(zip(input_grads, inputs, names)):
        _check_one(grad, x, f"input `{name}` (argument {i})")
    variable_grads = list(variable_grads) if isinstance(variable_grads, (tuple, list)) else [variable_grads]
    if len(variable_grads) != len(variables):
        raise GradientError(f"grad_fn returned {len(variable_grads)} variable gradients for "
                            f"{len(variables)} variables ({variable_names}); return one per variable, "
                            "in the order received")
    for grad, var in zip(variable_grads, variables):
        _check_one(grad, var, f"variable `{var.name}`")


_TENSOR_TYPES = (tf.Tensor, tf.Variable, np.ndarray, tf.RaggedTensor, tf.SparseTensor)


def _holds_tensor(value: Any) -> bool:
    """True when ``value`` is a tensor, variable or array, or holds one anywhere in its nest.

    ``tf.nest.flatten`` opens lists, tuples, dicts, namedtuples and attrs
    classes down to their leaves, as ``tf.custom_gradient`` does with its
    positional arguments.  A dict it cannot open (keys that do not sort) is
    searched value by value; any other structure it cannot open is one leaf.
    """
    try:
        leaves = tf.nest.flatten(value)
    except Exception:  # e.g. TypeError from a dict whose keys do not sort
        if isinstance(value, Mapping):
            return any(_holds_tensor(item) for item in value.values())
        leaves = [value]
    return any(isinstance(leaf, _TENSOR_TYPES) for leaf in leaves)


class _StrictCustomGradient:
    """The callable :func:`strict_custom_gradient` returns (private).

    A descriptor, like ``tf.custom_gradient``'s own wrapper: decorating a
    method and reading it from an instance binds the instance, so ``self`` is
    never taken for a tensor input.  It carries ``__name__``, ``__doc__`` and
    ``__signature__`` of ``f`` but deliberately no ``__wrapped__``:
    ``tf.function`` follows ``__wrapped__`` when it builds the trace type of an
    argument, and would hand the traced body the undecorated ``f``.
    """

    def __init__(self, f: Callable):
        self._f = f
        for attribute in ("__module__", "__name__", "__qualname__", "__doc__"):
            try:
                setattr(self, attribute, getattr(f, attribute))
            except AttributeError:
                pass
        try:
            self.__signature__ = inspect.signature(f)
        except (TypeError, ValueError):
            pass

    def __set_name__(self, owner, name):
        self._name = name

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        bound = _StrictCustomGradient(self._f.__get__(instance, owner))
        # Cache the bound wrapper on the instance (as functools.cached_property
        # does), so that every access returns the same object: tf.function
        # keys a non-tensor argument on that object and would retrace for a
        # fresh wrapper on every call.
        name = getattr(self, "_name", None)
        if name is not None:
            try:
                vars(instance)[name] = bound
            except TypeError:  # no __dict__ (__slots__): a new wrapper each time
                pass
        return bound

    def __repr__(self) -> str:
        return f"<strict_custom_gradient {getattr(self._f, '__qualname__', self._f)!r}>"

    # Reading a decorated method from an instance builds a new wrapper each
    # time; two of them for the same function and instance are equal, so that
    # tf.function (which compares arguments by equality) traces it once.
    def __eq__(self, other):
        if not isinstance(other, _StrictCustomGradient):
            return NotImplemented
        return self._f == other._f

    def __hash__(self) -> int:
        try:
            return hash(self._f)
        except TypeError:  # a bound method of an unhashable instance
            return hash((id(getattr(self._f, "__self__", None)), getattr(self._f, "__func__", self._f)))

    def __call__(self, *args, **kwargs):
        f = self._f
        tensors_by_keyword = [k for k, v in kwargs.items() if _holds_tensor(v)]
        if tensors_by_keyword:
            raise GradientError(
                f"pass tensor arguments positionally, not as {', '.join(k + '=...' for k in tensors_by_keyword)} "
                "(a keyword argument that is a tensor, a variable or an array, or holds one anywhere "
                "in a list, tuple or dict): tf.custom_gradient differentiates positional arguments only, "
                "and would silently fall back to ordinary autodiff or give such an input no gradient")
        names = _parameter_names(f, len(args))

        def inner(*tensors):
            y, grad_fn = f(*tensors, **kwargs)
            callable_arg(grad_fn, "the second value returned by f (grad_fn)")
            params = inspect.signature(grad_fn).parameters.values()
            takes_variables = any(p.name == "variables" or p.kind == p.VAR_KEYWORD for p in params)

            if takes_variables:
                def checked(*dys, variables=None):
                    result = grad_fn(*dys, variables=variables)
                    _check_grad_fn_return(result, tensors, names, list(variables or []))
                    return result
            else:
                def checked(*dys):
                    result = grad_fn(*dys)
                    _check_grad_fn_return(result, tensors, names, [])
                    return result
            return y, checked

        inner.__name__ = getattr(f, "__name__", "strict_custom_gradient")
        return tf.custom_gradient(inner)(*args)


def strict_custom_gradient(f: Callable) -> Callable:
    r"""A drop-in for ``tf.custom_gradient`` that validates what ``grad_fn`` returns.

    ``f(*inputs)`` returns ``(y, grad_fn)`` exactly as for
    ``tf.custom_gradient``; forward and backward are unchanged:

    .. math:: y = f(x_1, \dots, x_n), \qquad
              \bar x_k = \texttt{grad\_fn}(\bar y)_k

    Each time the gradient is taken, the return of ``grad_fn`` is checked:
    one gradient per input (plus one per variable when ``grad_fn`` takes
    ``variables``), each a tensor or ``None`` (never a Python number or a
    NumPy array), each with its input's dtype and shape. A violation raises
    :class:`GradientError` naming the input, the expected and the actual
    shape/dtype, in eager mode, under a tape inside ``tf.function`` and with
    ``tf.gradients`` alike, where plain ``tf.custom_gradient`` silently
    accepts several of them under ``GradientTape``.  Tensors, variables and
    arrays passed by keyword, also inside a list, tuple or dict, are refused
    with a ``GradientError`` at the call: ``tf.custom_gradient`` would
    silently ignore them.

    Like ``tf.custom_gradient`` it decorates methods too (of a ``tf.Module``
    or a Keras layer): ``self`` is bound, not taken as an input, and the
    variables the method reads (``self.kernel``) reach ``grad_fn`` through
    its ``variables`` keyword.  Unlike ``tf.custom_gradient``, the decorated
    function can be passed to a ``tf.function`` as an argument and keeps its
    gradient there.

    Reference: ``tf.custom_gradient`` (TensorFlow API documentation).
    """
    callable_arg(f, "f")
    return _StrictCustomGradient(f)
