"""One table of wrong answers and the message key each must get, for every check.

The key (``Feedback.key``, a catalogue key) is asserted, not English words, and
in both languages: the Chinese feedback must name the same mistake.  The
generic rows are the answers every check must survive (an exception, None,
NaN, a wrong shape, a string, an integer dtype, a wrong signature, no
function at all, a call of ``sys.exit()``); the fuzzer (``test_fuzz_checks.py``) tries hundreds more
but asserts only that the feedback is well-formed, so this table pins down
*which* message each gets.  The other rows are each exercise's typical
mistakes with a message of their own, declared with its check
(``@exercise(..., wrong_answers=...)`` in ``gradlib/classroom/exercises/chNN.py``):
a new exercise brings its own rows.
"""

import functools
import sys

import pytest
import tensorflow as tf

from chapter_solutions import reference_solutions
from gradlib import exercises
from gradlib.classroom.catalogue import catalogue
from gradlib.classroom.exercises._core import WRONG_ANSWERS
from tools import book


@functools.lru_cache(maxsize=None)
def references():
    """{exercise id: the chapter's reference solution}, from the English chapters."""
    return {exercise: answer for md in book.chapters("en")
            for exercise, answer, _, _ in reference_solutions(md)}


def reference(exercise_id):
    """The chapter's own reference solution of ``exercise_id`` (English edition), read by chapter_solutions:
    the tests use these, never copies of their own."""
    return references()[exercise_id]

# -- every check -----------------------------------------------------------------------------

GENERIC = {
    "raises": lambda *a: 1 / 0,
    "returns None": lambda *a: None,
    "returns NaN": lambda *a: a[0] * float("nan") if tf.is_tensor(a[0]) else float("nan"),
    "wrong shape": lambda *a: tf.zeros([7, 7]),
    "returns a str": lambda *a: "text",
    "int32": lambda *a: tf.ones(tf.shape(a[0]), tf.int32) if tf.is_tensor(a[0]) else tf.constant(1),
    "no parameters": lambda: 1.0,
    "not callable": 42,
    "calls sys.exit": lambda *a: sys.exit(3),
}

# What each generic answer gets where it differs from the common message of its row.
COMMON_KEY = {"raises": "common.raised", "returns None": "common.none", "returns NaN": "common.nan",
              "wrong shape": "common.shape", "returns a str": "common.not_numeric", "int32": "common.dtype",
              "no parameters": "common.raised", "not callable": "common.not_callable",
              "calls sys.exit": "common.exit"}
SPECIAL = {
    ("ch01-ex2", "returns None"): "ch01.none_unconnected",   # None: the inner gradient was unconnected
    ("ch01-ex3", "returns NaN"): "common.shape",              # a scalar NaN for a vector w
    ("ch02-ex4", "returns NaN"): "common.shape",              # w * NaN is a vector, the loss a scalar
    ("ch03-ex1", "returns None"): "ch03-ex1.none",
    ("ch03-ex1", "returns NaN"): "ch03-ex1.not_tensor",       # a grad function returns a tuple of tensors
    ("ch03-ex1", "wrong shape"): "ch03-ex1.one",
    ("ch03-ex1", "returns a str"): "ch03-ex1.not_tensor",
    ("ch03-ex1", "int32"): "ch03-ex1.one",
    ("ch03-ex2", "returns None"): "ch03-ex2.none",
    ("ch03-ex2", "wrong shape"): "ch03-ex2.shape",
    ("ch03-ex2", "returns a str"): "ch03-ex2.not_tensor",
    ("ch04-ex1", "returns NaN"): "ch04.mismatch",             # ch04 compares NaN values point by point
    ("ch04-ex2", "returns NaN"): "ch04.overflow",
    ("ch04-ex3", "returns NaN"): "ch04.mismatch",
    ("ch06-ex2", "returns None"): "ch06.number_none",         # ex2 asks for a number, not a tensor
    ("ch06-ex2", "int32"): "ch06.schedule_plus_one",          # the number 1 at p = 0: the schedule without its "- 1"
    # ch07-ex1's answer is a layer class: a generic answer that returns no layer is told so
    **{("ch07-ex1", name): "ch07.not_layer" for name in ("returns None", "returns NaN", "wrong shape",
                                                          "returns a str", "int32")},
    ("ch08-ex1", "returns None"): "ch08.jvp_none",            # None: the outer tape found no path from u
    ("ch08-ex1", "returns NaN"): "common.shape",              # a[0] is the function f: a scalar NaN
    ("ch09-ex1", "returns NaN"): "common.shape",              # w * NaN is shaped like w, the loss a scalar
    ("ch09-ex3", "returns NaN"): "common.shape",              # x * NaN is shaped like x: one norm per row expected
}

# -- typical mistakes with a message of their own ------------------------------------------------
# Each exercise declares them with its check: ``@exercise(..., wrong_answers=[(name, answer, key), ...])``.

MINIMUM = 3  # "the three most likely wrong answers" (CONTRIBUTING.md)


def wrong_answer(exercise_id, name):
    """The wrong answer ``name`` that ``exercise_id`` declares (the chapters' test modules
    take the answers they test further from here, never copies of their own)."""
    return {wrong.name: wrong.answer for wrong in WRONG_ANSWERS[exercise_id]}[name]


def rows():
    for exercise_id in exercises.exercise_ids():
        for name, answer in GENERIC.items():
            key = SPECIAL.get((exercise_id, name), COMMON_KEY[name])
            yield pytest.param(exercise_id, answer, key, id=f"{exercise_id}-{name}")
    for exercise_id, wrong_answers in sorted(WRONG_ANSWERS.items()):
        for name, answer, key in wrong_answers:
            yield pytest.param(exercise_id, answer, key, id=f"{exercise_id}-{name}")


def test_the_special_rows_name_real_cases():
    ids = set(exercises.exercise_ids())
    assert {e for e, _ in SPECIAL} <= ids and {name for _, name in SPECIAL} <= set(GENERIC)


@pytest.mark.parametrize("exercise_id", exercises.exercise_ids())
def test_every_exercise_declares_its_typical_wrong_answers(exercise_id):
    wrong_answers = WRONG_ANSWERS[exercise_id]
    assert len(wrong_answers) >= MINIMUM, f"{exercise_id} declares {len(wrong_answers)} wrong answers"
    names = [w.name for w in wrong_answers]
    assert len(set(names)) == len(names), names
    for wrong in wrong_answers:
        assert wrong.key in catalogue("en") and wrong.key in catalogue("zh"), wrong


def expect_key(exercise_id, answer, key):
    """``answer`` fails ``exercise_id`` with the message ``key``, in English and in Chinese
    (the chapters' test modules use this for their own tables of mistakes)."""
    en = exercises.check(exercise_id, answer, lang="en")
    zh = exercises.check(exercise_id, answer, lang="zh")
    assert (en.passed, en.key) == (False, key), en.message
    assert (zh.passed, zh.key) == (False, key), zh.message
    assert en.message != zh.message


@pytest.mark.parametrize("exercise_id, answer, key", list(rows()))
def test_a_wrong_answer_gets_its_message(exercise_id, answer, key):
    expect_key(exercise_id, answer, key)


@pytest.mark.parametrize("exercise_id", exercises.exercise_ids())
def test_a_correct_answer_gets_its_chapters_success_message(exercise_id):
    for lang in ("en", "zh"):
        feedback = exercises.check(exercise_id, reference(exercise_id), lang=lang)
        assert feedback.passed and feedback.key in catalogue(lang), feedback
        assert feedback.key.startswith(exercise_id[:4]) and "passed" in feedback.key, feedback.key
