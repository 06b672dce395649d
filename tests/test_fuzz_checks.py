"""Hostile readers' code: every exercise check against generated wrong answers.

For every id in ``gradlib.exercises.exercise_ids()`` a generator seeded with
the id builds about 120 hostile answers (1779 in all at the time of writing):

* answers that raise: ordinary exceptions of many types, TensorFlow errors,
  real recursion, an exception whose ``__str__`` raises, one with a long
  multi-line message, ``GeneratorExit``, ``SystemExit`` (``sys.exit()``) and
  a BaseException subclass of the reader's own;
* answers that hang: ``while True: pass``, ``time.sleep(1e6)``, and one of a
  loop that swallows the first time-out, waiting on an Event, an object whose
  ``__array__`` loops (the check's conversion hangs, not the call); checked
  with a short ``timeout``;
* answers that return None, NaN, ±inf, Python numbers, bools, strings,
  lists, dicts, NumPy arrays and tensors of the wrong shape, of the right
  shape but dtype int32, float64 (with wrong values), complex or bool, NaN
  tensors, ``tf.Variable``\\ s, ragged and sparse tensors, a callable, a
  generator, objects whose ``__array__``, ``numpy``, ``__getattr__`` or
  ``__float__`` raise;
* functions with the wrong number of parameters, and non-callable answers;
* answers that mutate their inputs (a ``tf.Variable`` assigned, an array
  overwritten in place);
* answers that are correct on their first k calls and then raise, return
  None, NaN, a wrong value, an int, the wrong shape (every k from 1 to the
  number of calls the check makes to the reference solution, minus one) or
  hang (one k drawn at random), so that the later, deeper parts of each
  check meet hostile values too, and a check that ignores the result of one
  of its calls is caught.

Each answer is checked in English and in Chinese (the default run checks
each answer in one of the two, alternating; the half marked slow, run by
``make test``, checks it in the other): ``check`` must return a
Feedback (never raise), not passed, for the right exercise and language,
with a non-empty message in that language (Chinese messages contain CJK
characters, English ones do not) whose ``key`` is a catalogue key, no
unformatted ``{placeholder}``, not the "the check itself failed" message
(key ``common.check_failed``: an exception raised by the check's own code),
no "your code raised" for an answer that raised nothing, the time-out
message (``common.timeout``) exactly for the answers that hang, and within
the time-out.  The reference solutions (the chapters' own, read by
``chapter_solutions.py``) must pass before and after.  The checks' module-level reference data must be unchanged
afterwards.  ``feedback_problems`` is that assertion; it returns the problems
instead of raising, and ``test_a_broken_check_is_caught`` shows that it
catches deliberately broken checks.

By design one exception propagates out of ``check`` and is not fuzzed:
KeyboardInterrupt (the reader or the grader interrupting the kernel);
``test_keyboard_interrupt_propagates_and_system_exit_is_feedback`` pins that
down, and that ``sys.exit()`` in the reader's code (SystemExit, also fuzzed
here) is a failing Feedback of its own (``common.exit``), not an escape.

``test_fuzz_summary`` prints the total number of cases (``fuzz cases: ...``)
and records it as the junit test-suite property ``fuzz_cases``; it builds
the cases itself, so it does not depend on the order of the tests.
"""

from __future__ import annotations

import functools
import inspect
import math
import random
import re
import signal
import sys
import threading
import time
import zlib
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional

import numpy as np
import pytest
import tensorflow as tf

from gradlib import exercises
from gradlib.classroom.exercises import _core

from test_classroom_wrong_answers import references

LANGS = ("en", "zh")
HANG_TIMEOUT = 0.15       # seconds given to check() for an answer that hangs
TIMEOUT = 30.0            # for the others: only a check that hangs by itself reaches it
SLACK = 5.0               # a hanging answer must be stopped within timeout + SLACK (generous: a loaded 2-core CI box)
MIN_CASES = 1000          # the fuzzer must have tried at least this many answers (x 2 languages)
CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\u3000-\u303f\uff00-\uffef]")
PLACEHOLDER = re.compile(r"\{[a-z_]+\}")


# -- reference solutions: the chapters' own (English edition) ----------------------

REFERENCES: Dict[str, Callable] = references()


# -- building blocks of hostile answers ----------------------------------------------

class ReadersError(BaseException):
    """A BaseException subclass of the reader's own (not an Exception)."""


class UnprintableError(Exception):
    def __str__(self):
        raise RuntimeError("__str__ of the reader's exception raises")


class NotAStringError(Exception):
    def __str__(self):
        return 42  # noqa: PLE0307  (str() raises TypeError)


class RaisingArray:
    def __array__(self, dtype=None, copy=None):
        raise ValueError("__array__ raises")


class HangingArray:
    def __array__(self, dtype=None, copy=None):
        while True:
            pass


class RaisingNumpy:
    @property
    def numpy(self):
        raise RuntimeError("the numpy attribute raises")


class SelfNumpy:
    def numpy(self):
        return self


class RaisingGetattr:
    def __getattr__(self, name):
        raise RuntimeError(f"no {name} here")  # not AttributeError: hasattr() lets it through


class RaisingFloat:
    def __float__(self):
        raise ValueError("__float__ raises")

    def __index__(self):
        raise ValueError("__index__ raises")


class RaisingBool:
    def __bool__(self):
        raise ValueError("__bool__ raises")

    def __eq__(self, other):
        raise ValueError("__eq__ raises")

    __hash__ = object.__hash__


class LyingShape:
    shape = (3,)
    dtype = np.float32

    def __array__(self, dtype=None, copy=None):
        return np.zeros((2, 2), np.float32)


class NoCall:
    __call__ = None  # callable() is True, calling raises TypeError


class Constructed:
    def __init__(self, *args, **kwargs):
        pass


def first_shape(args) -> tuple:
    """The shape of the first array-like argument (None dimensions as 1), () if there is none."""
    for arg in args:
        shape = getattr(arg, "shape", None)
        if shape is None or isinstance(arg, type):
            continue
        try:
            dims = shape.as_list() if hasattr(shape, "as_list") else list(shape)
        except ValueError:  # unknown rank
            continue
        return tuple(1 if d is None else int(d) for d in dims)
    return ()


def first_tensor(args):
    for arg in args:
        if isinstance(arg, (tf.Tensor, tf.Variable, np.ndarray)):
            return arg
    return args[0] if args else None


def mutate(args, rng: np.random.Generator) -> None:
    """Change every mutable argument in place: variables, arrays, lists, dicts."""
    for arg in args:
        try:
            if isinstance(arg, tf.Variable):
                arg.assign(tf.cast(rng.uniform(5, 9, first_shape([arg])), arg.dtype))
            elif isinstance(arg, np.ndarray) and arg.flags.writeable:
                arg[...] = np.nan if arg.dtype.kind == "f" else 7
            elif isinstance(arg, (list, dict)):
                arg.clear()
        except Exception:
            pass


def perturb(value, amount: float):
    """A value of the same kind, shifted (tensors stay tensors, arrays arrays)."""
    if isinstance(value, (tf.Tensor, tf.Variable)):
        return value + tf.cast(amount, value.dtype)
    if isinstance(value, (list, tuple)):
        return type(value)(perturb(v, amount) for v in value)
    return value + amount


def like(args, value) -> Any:
    """A tensor filled with ``value`` in the shape and (float) dtype of the first tensor argument."""
    return tf.fill(first_shape(args), tf.constant(value, tf.float32))


# -- the generator ---------------------------------------------------------------------

@dataclass
class Case:
    label: str
    make: Callable[[], Any]       # a fresh answer for each check
    hangs: bool = False
    timeout: Optional[float] = None
    raises: bool = False          # the answer raises (a wrong signature included)

    def __post_init__(self):
        self.raises = self.raises or self.label.startswith(("raises", "takes", "has __call__")) \
            or self.label.endswith("then raise")


def returning(make_value: Callable[[tuple], Any]) -> Callable[[], Callable]:
    def make():
        def answer(*args, **kwargs):
            return make_value(args)
        return answer
    return make


def raising(make_error: Callable[[], BaseException]) -> Callable[[], Callable]:
    def make():
        def answer(*args, **kwargs):
            raise make_error()
        return answer
    return make


def calling(body: Callable[[tuple], Any]) -> Callable[[], Callable]:
    return returning(body)


def recurse(args):
    return recurse(args)


def hang_loop(args):
    while True:
        pass


def hang_sleep(args):
    time.sleep(1e6)


def hang_swallowing(args):
    n = 0
    try:
        while True:
            n += len(args)
    except BaseException:  # the reader's code swallows the first time-out ...
        pass
    while True:            # ... and keeps looping
        n += 1


def hang_event(args):
    threading.Event().wait()


def generator_answer(*args):
    yield 1.0


def registered_like(wrapper: Callable, fn: Callable) -> Callable:
    """``wrapper``, registered with Keras when ``fn`` is (ch07-ex2 saves the quantizer it is given)."""
    import keras

    if not inspect.isclass(fn) and ">" in keras.saving.get_registered_name(fn):
        keras.saving.register_keras_serializable(package="fuzz", name=f"answer_{id(wrapper)}")(wrapper)
    return wrapper


def counting(fn: Callable) -> Callable:
    """``fn``, counting its calls in ``.calls``."""
    @functools.wraps(fn)
    def counted(*args, **kwargs):
        counted.calls += 1
        return fn(*args, **kwargs)
    counted.calls = 0
    return registered_like(counted, fn)


LATE_BEHAVIOURS = ("raise", "none", "nan", "wrong", "int", "reshape", "hang")


def late(reference: Callable, correct_calls: int, behaviour: str) -> Callable[[], Callable]:
    """Correct on the first ``correct_calls`` calls, then ``behaviour``."""
    def make():
        state = {"calls": 0}

        def answer(*args):
            state["calls"] += 1
            if state["calls"] <= correct_calls:
                return reference(*args)
            if behaviour == "raise":
                raise ValueError("fails on a later call")
            if behaviour == "none":
                return None
            if behaviour == "hang":
                hang_loop(args)
            value = reference(*args)
            if behaviour == "nan":
                return perturb(value, float("nan"))
            if behaviour == "wrong":
                return perturb(value, 0.5)
            if behaviour == "int":
                return tf.cast(value, tf.int32) if isinstance(value, tf.Tensor) else np.asarray(value).astype(np.int32)
            return tf.reshape(value, [-1, 1]) if isinstance(value, tf.Tensor) else np.reshape(value, (-1, 1))
        return registered_like(answer, reference)
    return make


def hostile_answers(exercise_id: str, reference: Callable, reference_calls: int,
                    reference_seconds: float) -> List[Case]:
    """The hostile answers for one exercise, from a generator seeded with its id."""
    seed = zlib.crc32(exercise_id.encode())
    rnd, rng = random.Random(seed), np.random.default_rng(seed)
    words = ["wrong", "naïve", "emoji 🙃", "tab\there", "quote \" and '", "back\\slash", "ünïcödé"]

    def message():
        return " ".join(rnd.choice(words) for _ in range(rnd.randint(1, 4)))

    def shape():
        return tuple(rnd.randint(0, 5) for _ in range(rnd.randint(1, 3)))

    def wrong_shape(args):
        s = first_shape(args)
        return s + (2,) if rnd.random() < 0.5 else (s[1:] if s else (3,))

    cases = [
        # -- raising ---------------------------------------------------------------
        Case("raises ValueError", raising(lambda: ValueError(message()))),
        Case("raises TypeError", raising(lambda: TypeError(message()))),
        Case("raises ZeroDivisionError", calling(lambda args: 1 / 0)),
        Case("raises RuntimeError without a message", raising(RuntimeError)),
        Case("raises KeyError", calling(lambda args: {}[message()])),
        Case("raises IndexError", calling(lambda args: [][rnd.randint(0, 9)])),
        Case("raises AttributeError", calling(lambda args: args.no_such_attribute)),
        Case("raises NotImplementedError", raising(NotImplementedError)),
        Case("raises AssertionError", calling(lambda args: (_ for _ in ()).throw(AssertionError(message())))),
        Case("raises RecursionError (real recursion)", calling(recurse)),
        Case("raises MemoryError", raising(MemoryError)),
        Case("raises OverflowError", calling(lambda args: math.exp(1000))),
        Case("raises UnicodeDecodeError", calling(lambda args: b"\xff\xfe\xfa".decode("utf-8"))),
        Case("raises StopIteration", calling(lambda args: next(iter(())))),
        Case("raises tf InvalidArgumentError", calling(lambda args: tf.reshape(tf.zeros([3]), [2]))),
        Case("raises tf ResourceExhaustedError",
             raising(lambda: tf.errors.ResourceExhaustedError(None, None, message()))),
        Case("raises an exception whose __str__ raises", raising(UnprintableError)),
        Case("raises an exception whose __str__ returns an int", raising(NotAStringError)),
        Case("raises a long multi-line message",
             raising(lambda: ValueError("\n".join(message() * 50 for _ in range(40))))),
        Case("raises a message with only whitespace", raising(lambda: ValueError("  \n\t "))),
        Case("raises GeneratorExit", raising(GeneratorExit)),
        Case("raises SystemExit (sys.exit)", calling(lambda args: sys.exit(rnd.choice([0, 1, 3, None, "bye"])))),
        Case("raises a BaseException subclass", raising(lambda: ReadersError(message()))),
        # -- hanging ---------------------------------------------------------------
        Case("hangs: while True: pass", calling(hang_loop), hangs=True),
        Case("hangs: time.sleep(1e6)", calling(hang_sleep), hangs=True),
        rnd.choice([
            Case("hangs: swallows the first time-out and loops again", calling(hang_swallowing), hangs=True),
            Case("hangs: waits on an Event", calling(hang_event), hangs=True),
            Case("hangs: returns an object whose __array__ loops", returning(lambda args: HangingArray()),
                 hangs=True),
        ]),
        # -- returning the wrong thing -----------------------------------------------
        Case("returns None", returning(lambda args: None)),
        Case("returns NaN", returning(lambda args: float("nan"))),
        Case("returns inf", returning(lambda args: float("inf"))),
        Case("returns -inf", returning(lambda args: -float("inf"))),
        Case("returns a Python int", returning(lambda args: rnd.randint(2, 10 ** 6))),
        Case("returns a Python float", returning(lambda args: rnd.uniform(1.5, 1e3))),
        Case("returns True", returning(lambda args: True)),
        Case("returns False", returning(lambda args: False)),
        Case("returns a str", returning(lambda args: message())),
        Case("returns bytes", returning(lambda args: b"\x00\x01")),
        Case("returns a list of floats", returning(lambda args: [rnd.uniform(2, 3) for _ in range(rnd.randint(0, 6))])),
        Case("returns a dict", returning(lambda args: {"value": 1.0, "gradient": 2.0})),
        Case("returns a tuple of tensors", returning(lambda args: (like(args, 2.0), like(args, 3.0)))),
        Case("returns a set", returning(lambda args: {1.0, 2.0})),
        Case("returns a complex number", returning(lambda args: complex(2, 1))),
        Case("returns a huge int", returning(lambda args: 10 ** 400)),
        Case("returns Ellipsis", returning(lambda args: ...)),
        Case("returns a type", returning(lambda args: float)),
        Case("returns object()", returning(lambda args: object())),
        Case("returns an array of the wrong shape",
             returning(lambda args: rng.uniform(2, 3, wrong_shape(args)).astype(np.float32))),
        Case("returns an array of a random shape",
             returning(lambda args: rng.uniform(2, 3, shape()).astype(np.float32))),
        Case("returns an empty array", returning(lambda args: np.zeros((0,), np.float32))),
        Case("returns NaN in the right shape", returning(lambda args: np.full(first_shape(args), np.nan, np.float32))),
        Case("returns inf in the right shape", returning(lambda args: np.full(first_shape(args), np.inf, np.float32))),
        Case("returns int32 in the right shape", returning(lambda args: np.full(first_shape(args), 3, np.int32))),
        Case("returns float64 (wrong values) in the right shape",
             returning(lambda args: rng.uniform(2, 3, first_shape(args)))),
        Case("returns complex64 in the right shape",
             returning(lambda args: np.full(first_shape(args), 1 + 2j, np.complex64))),
        Case("returns bool in the right shape", returning(lambda args: np.ones(first_shape(args), bool))),
        Case("returns an object array", returning(lambda args: np.array([object(), None], dtype=object))),
        Case("returns a structured array",
             returning(lambda args: np.zeros(3, dtype=[("a", np.float32), ("b", np.int32)]))),
        Case("returns a NumPy string array", returning(lambda args: np.array(["1.0", "2.0"]))),
        Case("returns a tensor of the wrong shape",
             returning(lambda args: tf.constant(rng.uniform(2, 3, wrong_shape(args)), tf.float32))),
        Case("returns an int32 tensor", returning(lambda args: tf.fill(first_shape(args), 3))),
        Case("returns a float64 tensor (wrong values)",
             returning(lambda args: tf.constant(rng.uniform(2, 3, first_shape(args)), tf.float64))),
        Case("returns a complex tensor", returning(lambda args: tf.complex(like(args, 1.0), like(args, 2.0)))),
        Case("returns a bool tensor", returning(lambda args: tf.fill(first_shape(args), True))),
        Case("returns a string tensor", returning(lambda args: tf.fill(first_shape(args), "x"))),
        Case("returns a NaN tensor", returning(lambda args: like(args, float("nan")))),
        Case("returns a tf.Variable (wrong values)", returning(lambda args: tf.Variable(like(args, 2.5)))),
        Case("returns a ragged tensor", returning(lambda args: tf.ragged.constant([[1.0], [2.0, 3.0]]))),
        Case("returns a sparse tensor",
             returning(lambda args: tf.sparse.SparseTensor([[0, 0]], [1.0], [2, 2]))),
        Case("returns its first argument", returning(lambda args: args[0] if args else None)),
        Case("returns its last argument", returning(lambda args: args[-1] if args else None)),
        Case("returns zeros like its first argument", returning(lambda args: tf.zeros(first_shape(args)))),
        Case("returns a callable", returning(lambda args: (lambda *a, **k: a[0] if a else 1.0))),
        Case("returns a generator", lambda: generator_answer),
        Case("returns an iterator", returning(lambda args: iter([1.0, 2.0]))),
        Case("returns an object whose __array__ raises", returning(lambda args: RaisingArray())),
        Case("returns an object whose numpy attribute raises", returning(lambda args: RaisingNumpy())),
        Case("returns an object whose numpy() returns itself", returning(lambda args: SelfNumpy())),
        Case("returns an object whose __getattr__ raises RuntimeError", returning(lambda args: RaisingGetattr())),
        Case("returns an object whose __float__ raises", returning(lambda args: RaisingFloat())),
        Case("returns an object whose __bool__ and __eq__ raise", returning(lambda args: RaisingBool())),
        Case("returns an object with a lying shape", returning(lambda args: LyingShape())),
        # -- the wrong signature, or not a function ----------------------------------
        Case("takes no parameters", lambda: (lambda: 1.0)),
        Case("takes eight parameters", lambda: (lambda a, b, c, d, e, f, g, h: a)),
        Case("takes a required keyword-only parameter", lambda: (lambda *args, key: args[0])),
        Case("is a class", lambda: Constructed),
        Case("has __call__ = None", lambda: NoCall()),
        Case("is None", lambda: None),
        Case("is 3", lambda: 3),
        Case("is 'x'", lambda: "x"),
        Case("is a tensor", lambda: tf.constant(1.0)),
        # -- mutating its inputs --------------------------------------------------------
        Case("mutates its inputs and returns the first",
             calling(lambda args: (mutate(args, rng), args[0] if args else None)[1])),
        Case("mutates its inputs and returns a shifted reference",
             calling(lambda args: (mutate(args, rng), perturb(reference(*args), 0.5))[1]),
             raises=inspect.isclass(reference)),   # a layer (ch07-ex1) cannot be shifted: the answer raises
    ]
    # -- correct on the first calls, then hostile ------------------------------------------
    # (every number of correct calls for the quick behaviours, one drawn at random for a hang)
    for behaviour in LATE_BEHAVIOURS:
        hangs = behaviour == "hang"
        counts = [rnd.randint(1, reference_calls - 1)] if hangs else range(1, reference_calls)
        # a class's instance (ch07-ex1's layer) cannot be shifted, cast or reshaped: those answers raise
        raises = inspect.isclass(reference) and behaviour in ("nan", "wrong", "int", "reshape")
        for k in counts:
            cases.append(Case(f"correct on {k} of {reference_calls} calls, then {behaviour}",
                              late(reference, k, behaviour), hangs=hangs, raises=raises,
                              timeout=2 * reference_seconds + HANG_TIMEOUT if hangs else None))
    return cases


# -- the assertion -------------------------------------------------------------------------

def _raised_phrase(lang: str) -> str:
    """ "your code raised" / "你的代码抛出了": the words that blame an exception on the reader.

    Chapter messages embed the "raised" sentence (ch01's one_tape, ch06's
    function_raised ...), so the words are looked for as well as the key.
    """
    return _core.catalogue(lang)["common.raised"].split("}", 1)[1].split("{", 1)[0].strip()


def feedback_problems(exercise_id: str, case: Case, lang: str) -> List[str]:
    """Run one case through ``exercises.check``; return what is wrong with the outcome (empty: fine)."""
    where = f"{exercise_id} [{lang}] {case.label}"
    timeout = case.timeout or (HANG_TIMEOUT if case.hangs else TIMEOUT)
    answer = case.make()
    started = time.monotonic()
    try:
        feedback = exercises.check(exercise_id, answer, lang=lang, timeout=timeout)
    except BaseException as err:  # noqa: B902 -- any escape is the finding
        return [f"{where}: check raised {type(err).__name__}: {err!r}"[:500]]
    elapsed = time.monotonic() - started
    if not isinstance(feedback, exercises.Feedback):
        return [f"{where}: check returned {type(feedback).__name__}, not Feedback"]
    problems = []
    text = feedback.message
    if feedback.passed is not False:
        problems.append(f"passed is {feedback.passed!r}")
    if (feedback.exercise, feedback.lang) != (exercise_id, lang):
        problems.append(f"Feedback is for {feedback.exercise} [{feedback.lang}]")
    if not isinstance(text, str) or not text.strip():
        problems.append(f"empty message {text!r}")
        text = ""
    if lang == "zh" and text and not CJK.search(text):
        problems.append("the Chinese message has no Chinese")
    if lang == "en" and CJK.search(text):
        problems.append("the English message contains Chinese")
    if PLACEHOLDER.search(text):
        problems.append("an unformatted placeholder")
    if len(text) > 1500:
        problems.append(f"a message of {len(text)} characters")
    if feedback.key not in _core.catalogue(lang):
        problems.append(f"the feedback's key {feedback.key!r} is not a catalogue key")
    if feedback.key == "common.check_failed":
        problems.append("the check itself crashed")
    timed_out = feedback.key == "common.timeout"
    if not case.raises and (feedback.key == "common.raised" or _raised_phrase(lang) in text):
        problems.append("blames the reader's code for an exception it did not raise")
    if case.hangs and not timed_out:
        problems.append("a hanging answer is not reported as a time-out")
    if not case.hangs and timed_out:
        problems.append("timed out on an answer that returns")
    if case.hangs and elapsed > timeout + SLACK:
        problems.append(f"stopped after {elapsed:.1f} s with timeout={timeout:g}")
    return [f"{where}: {problem} -- {text[:300]!r}" for problem in problems]


# -- the checks' reference data must survive the answers --------------------------------

def freeze(value, depth=0):
    """A comparable snapshot of arrays, numbers and containers of them; None for the rest."""
    if depth > 4:
        return None
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, (bool, int, float, complex, str, np.generic)):
        return ("scalar", repr(value))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(freeze(v, depth + 1) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple((repr(k), freeze(v, depth + 1)) for k, v in value.items()))
    return None


def module_data() -> Dict[str, Any]:
    modules = {name: module for name, module in sys.modules.items()
               if re.fullmatch(r"gradlib\.classroom\.exercises\.(ch\d\d|_core)", name)}
    assert len(modules) >= 7, sorted(modules)   # _core and every chapter: an empty snapshot would prove nothing
    data = {f"{name}.{key}": freeze(value) for name, module in modules.items()
            for key, value in vars(module).items() if not key.startswith("__") and freeze(value) is not None}
    for lang in _core.LANGUAGES:   # the message catalogues are data too
        data[f"catalogue.{lang}"] = freeze(dict(_core.catalogue(lang)))
    return data


# -- the tests ------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def reference_run(exercise_id: str):
    """Check the reference; return (number of calls the check made, seconds)."""
    reference = counting(REFERENCES[exercise_id])
    started = time.monotonic()
    feedback = exercises.check(exercise_id, reference, timeout=TIMEOUT)
    assert feedback.passed, f"the fuzzer's reference for {exercise_id} fails: {feedback.message}"
    return reference.calls, time.monotonic() - started


def test_every_exercise_has_a_reference():
    assert set(REFERENCES) == set(exercises.exercise_ids())


# Each hostile answer is checked in both languages: in the default run in one of them (alternating
# from answer to answer), in the slow half (make test) in the other; together every answer in both.
@pytest.mark.parametrize("exercise_id, half", [
    pytest.param(exercise_id, half, marks=[pytest.mark.slow] if half else [], id=f"{exercise_id}-{LANGS[half]}-first")
    for exercise_id in exercises.exercise_ids() for half in (0, 1)])
def test_hostile_answers_get_feedback(exercise_id, half):
    handler = signal.getsignal(signal.SIGALRM)
    calls, seconds = reference_run(exercise_id)
    before = module_data()
    cases = hostile_answers(exercise_id, REFERENCES[exercise_id], calls, seconds)
    problems = []
    for i, case in enumerate(cases):
        problems += feedback_problems(exercise_id, case, LANGS[(i + half) % len(LANGS)])
    changed = sorted(key for key, value in module_data().items() if before.get(key) != value)
    problems += [f"{exercise_id}: an answer changed the check's data {key}" for key in changed]
    # the check still works after all that
    assert exercises.check(exercise_id, REFERENCES[exercise_id], timeout=TIMEOUT).passed
    assert signal.getsignal(signal.SIGALRM) is handler and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems[:40])


def test_keyboard_interrupt_propagates_and_system_exit_is_feedback():
    previous = signal.getsignal(signal.SIGALRM)

    def interrupted(*args):
        raise KeyboardInterrupt()

    def exits(*args):
        sys.exit(3)

    for exercise_id in exercises.exercise_ids():
        with pytest.raises(KeyboardInterrupt):
            exercises.check(exercise_id, interrupted, timeout=5)
        assert signal.getsignal(signal.SIGALRM) is previous
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
        for lang in LANGS:
            feedback = exercises.check(exercise_id, exits, lang=lang, timeout=5)
            assert (feedback.passed, feedback.key) == (False, "common.exit"), feedback
            assert "sys.exit()" in feedback.message and "3" in feedback.message
        assert signal.getsignal(signal.SIGALRM) is previous
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_a_system_exit_raised_by_the_check_itself_is_not_blamed_on_the_reader(monkeypatch):
    def exits_by_itself(answer, lang):
        sys.exit(1)

    monkeypatch.setitem(_core.CHECKS, "ch06-ex2", exits_by_itself)
    feedback = exercises.check("ch06-ex2", REFERENCES["ch06-ex2"], timeout=5)
    assert (feedback.passed, feedback.key) == (False, "common.check_failed"), feedback


def slow_dann_lambda(p):
    time.sleep(0.1)
    return REFERENCES["ch06-ex2"](p)


def test_the_timeout_bounds_the_whole_check_not_each_call():
    # ch06-ex2 calls the answer 7 times: 0.7 s in all, 0.1 s per call
    started = time.monotonic()
    feedback = exercises.check("ch06-ex2", slow_dann_lambda, lang="zh", timeout=0.35)
    assert time.monotonic() - started < 0.35 + SLACK
    assert not feedback and feedback.key == "common.timeout" and "0.35" in feedback.message
    assert exercises.check("ch06-ex2", slow_dann_lambda, timeout=5)
    assert exercises.check("ch06-ex2", slow_dann_lambda, timeout=None)


def test_a_timer_set_by_someone_else_is_paused_and_restored():
    fired = []
    previous = signal.signal(signal.SIGALRM, lambda *args: fired.append(time.monotonic()))
    try:
        signal.setitimer(signal.ITIMER_REAL, 5.0)
        feedback = exercises.check("ch01-ex2", lambda f, x: hang_loop(()), timeout=0.2)
        assert not feedback and feedback.key == "common.timeout" and "0.2" in feedback.message
        left, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 0 < left < 4.85 and not fired   # paused during the check's 0.2 s, not reset
        signal.setitimer(signal.ITIMER_REAL, 0.05)   # one that falls due during the check
        started = time.monotonic()
        assert not exercises.check("ch06-ex2", slow_dann_lambda, timeout=0.3)
        assert fired and fired[0] - started >= 0.25   # it fired once the check was over
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_no_time_limit_outside_the_main_thread():
    results = []
    thread = threading.Thread(target=lambda: results.append(
        exercises.check("ch06-ex2", slow_dann_lambda, timeout=0.2)))
    thread.start()
    thread.join(30)
    assert results and results[0].passed   # 0.7 s, but no SIGALRM outside the main thread


@pytest.mark.parametrize("timeout", [0, -1.0, float("nan"), "1", True])
def test_an_invalid_timeout_is_an_error_of_the_caller(timeout):
    with pytest.raises(ValueError, match="timeout"):
        exercises.check("ch06-ex2", REFERENCES["ch06-ex2"], timeout=timeout)


# -- a deliberately broken check must be caught ----------------------------------------------

def accepts_everything(answer, lang):
    return "ok"


def english_only(answer, lang):
    raise _core.Mismatch("wrong", key="ch06.schedule_value")


def without_a_key(answer, lang):
    raise _core.Mismatch("错了" if lang == "zh" else "wrong")


def empty_message(answer, lang):
    raise _core.Mismatch("")


def unprotected(answer, lang):
    return float(answer(1.0)) > 0 and None   # calls the answer with no protection, trusts the result


def hangs_by_itself(answer, lang):
    while True:
        pass


def lets_interrupt_escape(answer, lang):
    raise KeyboardInterrupt   # as if a check caught and re-raised the wrong exception


BROKEN = {
    "accepts everything": (accepts_everything, Case("returns None", returning(lambda args: None))),
    "English only": (english_only, Case("returns None", returning(lambda args: None))),
    "without a key": (without_a_key, Case("returns None", returning(lambda args: None))),
    "empty message": (empty_message, Case("returns None", returning(lambda args: None))),
    "unprotected call": (unprotected, Case("returns a str", returning(lambda args: "x"))),
    "hangs by itself": (hangs_by_itself, Case("returns None", returning(lambda args: None),
                                              timeout=0.2)),
    "lets an exception escape": (lets_interrupt_escape, Case("returns None", returning(lambda args: None))),
}


@pytest.mark.parametrize("name", list(BROKEN))
def test_a_broken_check_is_caught(name, monkeypatch):
    broken, case = BROKEN[name]
    monkeypatch.setitem(_core.CHECKS, "ch06-ex2", broken)
    problems = [p for lang in LANGS for p in feedback_problems("ch06-ex2", case, lang)]
    assert problems, f"the fuzzer did not notice a check that {name}"
    monkeypatch.undo()
    assert feedback_problems("ch06-ex2", case, "zh") == []


def test_fuzz_summary(record_testsuite_property, capsys):
    """Prints and records how many hostile answers the fuzzer has (independent of the other tests)."""
    counts = {exercise_id: len(hostile_answers(exercise_id, REFERENCES[exercise_id], *reference_run(exercise_id)))
              for exercise_id in exercises.exercise_ids()}
    answers = sum(counts.values())
    record_testsuite_property("fuzz_cases", answers * len(LANGS))
    with capsys.disabled():
        print(f"\nfuzz cases: {answers} hostile answers x {len(LANGS)} languages = {answers * len(LANGS)} "
              f"checks on {len(counts)} exercises (half of them in the default run, all in make test)")
    assert answers >= MIN_CASES
    assert min(counts.values()) >= 50, counts
