"""The machinery every exercise check shares (private).

A check receives the reader's answer (usually a function), calls it on kink
points and random inputs, compares with a reference and returns
:class:`Feedback` in the chapter's language.  The reader's code is never
trusted: an exception, ``None``, NaN, a wrong shape or dtype each become a
message, never a crash of the check.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf

LANGUAGES = ("en", "zh")

# Messages shared by all checks; each chapter module adds its own.
COMMON = {
    "not_callable": {"en": "`{name}` must be a function; got {kind}.",
                     "zh": "`{name}` 应该是一个函数，但得到的是 {kind}。"},
    "raised": {"en": "{where}your code raised {error}: {detail}",
               "zh": "{where}你的代码抛出了 {error}：{detail}"},
    "none": {"en": "{where}your code returned None; return a tensor.",
             "zh": "{where}你的代码返回了 None；请返回一个张量。"},
    "none_gradient": {"en": "{where}the gradient is None: no differentiable path from x to your output.",
                      "zh": "{where}梯度为 None：从 x 到你的输出之间没有可求导的路径。"},
    "not_numeric": {"en": "{where}your code returned {kind}, which is not a numeric tensor.",
                    "zh": "{where}你的代码返回了 {kind}，它不是数值张量。"},
    "nan": {"en": "{where}your {what} contains NaN or inf.",
            "zh": "{where}你的{what}中含有 NaN 或 inf。"},
    "shape": {"en": "{where}your {what} has shape {got}; expected {expected}.",
              "zh": "{where}你的{what}形状为 {got}，应为 {expected}。"},
    "dtype": {"en": "{where}your {what} has dtype {got}; expected a floating dtype like {expected}.",
              "zh": "{where}你的{what}的数据类型为 {got}，应为浮点类型（如 {expected}）。"},
    "value": {"en": "{where}your {what} is {got}; expected {expected}.",
              "zh": "{where}你的{what}为 {got}，应为 {expected}。"},
    "at": {"en": "at x = {x}: ", "zh": "在 x = {x} 处，"},
    "forward": {"en": "value", "zh": "前向值"},
    "gradient": {"en": "gradient", "zh": "梯度"},
    "result": {"en": "result", "zh": "结果"},
    "passed": {"en": "correct", "zh": "正确"},
}


def message(table: Mapping[str, Mapping[str, str]], key: str, lang: str, **values) -> str:
    template = table.get(key) or COMMON[key]
    return template[lang].format(**values)


@dataclasses.dataclass(frozen=True)
class Feedback:
    """The outcome of one exercise check: ``passed`` and a message for the reader."""

    exercise: str
    passed: bool
    message: str
    lang: str = "en"

    def __bool__(self) -> bool:
        return self.passed

    def __str__(self) -> str:
        mark = "✓" if self.passed else "✗"
        return f"{mark} {self.exercise}: {self.message}"

    def __repr__(self) -> str:
        return str(self)

    def _repr_markdown_(self) -> str:
        mark = "✅" if self.passed else "❌"
        return f"{mark} **{self.exercise}**: {self.message}"


class Mismatch(Exception):
    """Raised inside a check to stop at the first problem with a message."""

    __init__ = Exception.__init__


def fmt(value: Any) -> str:
    """A short, readable rendering of a number or small array."""
    array = np.asarray(value)
    if array.ndim == 0:
        return f"{array.item():.6g}" if array.dtype.kind in "fc" else str(array.item())
    return np.array2string(array, precision=4, separator=", ", threshold=8)


def call(fn: Callable, *args, lang: str, where: str = "") -> Any:
    """Call the reader's function; turn any exception into a Mismatch."""
    try:
        return fn(*args)
    except Mismatch:
        raise
    except Exception as err:  # the reader's code may raise anything
        detail = str(err).strip().splitlines()[0][:200] if str(err).strip() else "(no message)"
        raise Mismatch(message(COMMON, "raised", lang, where=where,
                               error=type(err).__name__, detail=detail)) from None


def as_array(value: Any, *, lang: str, what: str, where: str = "",
             shape: Optional[Tuple[int, ...]] = None, none_key: str = "none") -> np.ndarray:
    """Validate a returned value: not None, numeric, finite, floating, right shape."""
    what_text = message(COMMON, what, lang) if what in COMMON else what
    if value is None:
        raise Mismatch(message(COMMON, none_key, lang, where=where))
    try:
        array = value.numpy() if hasattr(value, "numpy") else np.asarray(value)
    except Exception:
        array = None
    if array is None or array.dtype.kind not in "biuf":
        raise Mismatch(message(COMMON, "not_numeric", lang, where=where, kind=type(value).__name__))
    if array.dtype.kind != "f":
        raise Mismatch(message(COMMON, "dtype", lang, where=where, what=what_text,
                               got=str(array.dtype), expected="float32"))
    if shape is not None and tuple(array.shape) != tuple(shape):
        raise Mismatch(message(COMMON, "shape", lang, where=where, what=what_text,
                               got=list(array.shape), expected=list(shape)))
    if not np.all(np.isfinite(array)):
        raise Mismatch(message(COMMON, "nan", lang, where=where, what=what_text))
    return array


def value_and_gradient(fn: Callable, x: np.ndarray, *, lang: str) -> Tuple[np.ndarray, np.ndarray]:
    """Run the reader's elementwise op on ``x`` under a tape; validate both results."""
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = call(fn, xt, lang=lang)
    y_array = as_array(y, lang=lang, what="forward", shape=x.shape)
    try:
        grad = tape.gradient(y, xt)
    except Exception as err:
        raise Mismatch(message(COMMON, "raised", lang, where="",
                               error=type(err).__name__, detail=str(err).splitlines()[0][:200])) from None
    g_array = as_array(grad, lang=lang, what="gradient", shape=x.shape, none_key="none_gradient")
    return y_array, g_array


def compare_op(answer: Callable, reference: Callable, points: Sequence[float], *, lang: str,
               explain: Optional[Callable[[float, str], str]] = None,
               messages: Optional[Mapping] = None, atol: float = 1e-5) -> None:
    """Compare value and gradient of an elementwise op with a reference, point by point.

    ``explain(x, lang)`` adds the reason the expected gradient is what it is
    ("because |x| > clip"); the first mismatching point is reported.
    """
    x = np.asarray(points, dtype=np.float32)
    y, g = value_and_gradient(answer, x, lang=lang)
    ry, rg = value_and_gradient(reference, x, lang=lang)
    for kind, got, expected in (("forward", y, ry), ("gradient", g, rg)):
        bad = np.flatnonzero(~np.isclose(got, expected, atol=atol, rtol=1e-4))
        if bad.size:
            i = int(bad[0])
            text = message(COMMON, "value", lang, where=message(COMMON, "at", lang, x=fmt(x[i])),
                           what=message(COMMON, kind, lang), got=fmt(got[i]), expected=fmt(expected[i]))
            if explain is not None and kind == "gradient":
                text += " " + explain(float(x[i]), lang)
            raise Mismatch(text)


def kink_and_random_points(kinks: Sequence[float], *, low: float = -3.0, high: float = 3.0,
                           count: int = 24, seed: int = 0) -> np.ndarray:
    """The kink points first (so they are reported first), then seeded random points."""
    rng = np.random.default_rng(seed)
    return np.concatenate([np.asarray(kinks, np.float32),
                           rng.uniform(low, high, count).astype(np.float32)])


# -- the registry ------------------------------------------------------------

CHECKS: Dict[str, Tuple[Callable, Mapping]] = {}

# The name of the function the reader defines for each exercise
# ("ch01-ex2" -> "second_derivative"): the grader looks the answer up by it.
ANSWERS: Dict[str, str] = {}


def exercise(exercise_id: str, messages: Mapping[str, Mapping[str, str]], *,
             answer: Optional[str] = None):
    """Register ``check(answer, lang) -> str`` (the success message) under an id.

    The check raises :class:`Mismatch` with the reader-facing message on the
    first problem it finds.  ``answer`` is the name of the function the
    reader defines in the chapter's check cell (e.g. ``"second_derivative"``).
    """
    def decorator(check: Callable):
        CHECKS[exercise_id] = (check, messages)
        if answer is not None:
            ANSWERS[exercise_id] = answer
        return check
    return decorator


def answer_name(exercise_id: str) -> Optional[str]:
    """The name of the reader's function for ``exercise_id``; None if not recorded."""
    if exercise_id not in CHECKS:
        raise ValueError(f"unknown exercise id {exercise_id!r}; known ids: {', '.join(sorted(CHECKS))}")
    return ANSWERS.get(exercise_id)


def run_check(exercise_id: str, answer: Any, *, lang: str = "en") -> Feedback:
    if lang not in LANGUAGES:
        raise ValueError(f"`lang` must be one of {LANGUAGES}; got {lang!r}")
    if exercise_id not in CHECKS:
        raise ValueError(f"unknown exercise id {exercise_id!r}; known ids: {', '.join(sorted(CHECKS))}")
    check, messages = CHECKS[exercise_id]
    try:
        if not callable(answer):
            raise Mismatch(message(COMMON, "not_callable", lang, name="answer", kind=type(answer).__name__))
        detail = check(answer, lang)
    except Mismatch as problem:
        return Feedback(exercise_id, False, str(problem), lang)
    except Exception as err:  # a reader's object can break a check in unforeseen ways
        return Feedback(exercise_id, False, message(COMMON, "raised", lang, where="", error=type(err).__name__,
                                                    detail=str(err).splitlines()[0][:200] if str(err) else ""), lang)
    return Feedback(exercise_id, True, detail or message(COMMON, "passed", lang), lang)
