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
from typing import Optional

from ._core import CHECKS, Feedback, answer_name, run_check

# Each chapter's checks live in a module chNN.py that registers them on import.
for _module in pkgutil.iter_modules(__path__):
    if re.fullmatch(r"ch\d\d", _module.name):
        importlib.import_module(f"{__name__}.{_module.name}")

__all__ = ["Feedback", "answer_name", "check", "exercise_ids"]


def check(exercise_id: str, answer, *, lang: str = "en", timeout: Optional[float] = 30.0) -> Feedback:
    """Check the reader's ``answer`` to exercise ``exercise_id`` (e.g. ``"ch01-ex2"``).

    Returns a :class:`Feedback` (truthy when correct) with a message in
    ``lang`` ("en" or "zh").  Never raises because of the answer: an answer
    that raises (any exception, BaseException subclasses included), returns
    None, NaN, a wrong shape or dtype, or is not a function gets a failing
    Feedback that says so; an answer that calls ``sys.exit()`` (or raises
    SystemExit) gets the failing Feedback ``common.exit`` (in a Jupyter
    kernel the builtin ``exit()`` raises nothing: it shuts the kernel down).  One exception propagates on purpose:
    KeyboardInterrupt (the reader, or the grader, interrupting the kernel).

    ``timeout`` bounds the whole check in seconds (every call the check makes
    into the reader's code together, not each call); ``None`` disables it.
    When the answer has not returned by then, the check stops it and returns
    a failing Feedback saying it did not finish in time.  The limit uses
    SIGALRM (``signal.setitimer``) and works in the main thread on POSIX
    systems, which is where a Jupyter kernel and pytest run the reader's
    code; in another thread, or on a platform without SIGALRM (Windows), the
    check runs without a time limit.  It interrupts Python code only: code
    stuck inside one TensorFlow kernel that never returns is not stopped.
    While the check runs, a SIGALRM timer set by someone else is paused, then
    re-armed with the time it had left.

    The Feedback's ``key`` names its message in the catalogues
    (``gradlib/classroom/messages/*.json``), e.g. ``"ch02.ste_outside"``.

    Raises ValueError for an unknown exercise id or language, or a
    ``timeout`` that is not a positive finite number or None.
    """
    return run_check(exercise_id, answer, lang=lang, timeout=timeout)


def exercise_ids():
    """Every exercise id that has an automatic check, sorted."""
    return sorted(CHECKS)
