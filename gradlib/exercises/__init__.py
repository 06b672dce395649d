"""Automatic checks for the book's exercises.

Usage in a chapter (the language argument is the only difference between the
English and the Chinese notebook)::

    gradlib.exercises.check("ch01-ex2", second_derivative, lang="en")

Each check calls the reader's answer on kink points and random inputs,
compares with a reference and returns a :class:`Feedback` whose message says
what is wrong and where.  ``answer_name(id)`` is the name of the function the
reader defines for an exercise (``"second_derivative"``); ``gradlib.grade``
finds the answers in a student's notebook by it.  Reference solutions are not in this package: they
live, hidden, in the chapters.
"""

import importlib
import pkgutil
import re

from ._core import CHECKS, Feedback, answer_name, run_check

# Each chapter's checks live in a module chNN.py that registers them on import.
for _module in pkgutil.iter_modules(__path__):
    if re.fullmatch(r"ch\d\d", _module.name):
        importlib.import_module(f"{__name__}.{_module.name}")

__all__ = ["Feedback", "answer_name", "check", "exercise_ids"]


def check(exercise_id: str, answer, *, lang: str = "en") -> Feedback:
    """Check the reader's ``answer`` to exercise ``exercise_id`` (e.g. ``"ch01-ex2"``).

    Returns a :class:`Feedback` (truthy when correct) with a message in
    ``lang`` ("en" or "zh").  Never raises because of the answer; raises
    ValueError for an unknown exercise id or language.
    """
    return run_check(exercise_id, answer, lang=lang)


def exercise_ids():
    """Every exercise id that has an automatic check, sorted."""
    return sorted(CHECKS)
