"""The classroom's messages: one catalogue per language, and text that remembers its key.

Standard library only, so the grader can use it without TensorFlow.
"""

from __future__ import annotations

import functools
import json
import pathlib
import types
from typing import Mapping, Optional

LANGUAGES = ("en", "zh")

# Every message of the classroom, one catalogue per language: ``messages/en.json``
# and ``messages/zh.json`` map a key ("common.raised", "ch02.ste_outside",
# "grade.kernel_died") to a template with ``{placeholders}``.  The namespace is
# "common", "grade", or the chapter ("ch02"; "ch03-ex1" and "ch03-ex2", whose
# tables once shared names).  ``tests/test_classroom_messages.py`` checks that
# both catalogues have the same keys and the same placeholders per key.
CATALOGUE_DIR = pathlib.Path(__file__).resolve().parent / "messages"


@functools.lru_cache(maxsize=None)
def catalogue(lang: str) -> Mapping[str, str]:
    """The message catalogue of ``lang`` ("en" or "zh"): key -> template (read-only)."""
    if lang not in LANGUAGES:
        raise ValueError(f"`lang` must be one of {LANGUAGES}; got {lang!r}")
    with open(CATALOGUE_DIR / f"{lang}.json", encoding="utf-8") as handle:
        return types.MappingProxyType(json.load(handle))


class Text(str):
    """A message for the reader that remembers the catalogue key it came from.

    Concatenation keeps a key: ``Text + str`` and ``str + Text`` keep the
    Text's key, and of two Texts the left one's (a prefix such as "at x = 1: "
    is a plain str, see :func:`fragment`); :func:`join` gives a sentence the
    key of its hint, which names the mistake.
    """

    key: Optional[str]

    def __new__(cls, value: str, key: Optional[str] = None) -> "Text":
        made = super().__new__(cls, value)
        made.key = key
        return made

    def __add__(self, other):
        if not isinstance(other, str):
            return NotImplemented
        return Text(str.__add__(str(self), str(other)), self.key or getattr(other, "key", None))

    def __radd__(self, other):
        if not isinstance(other, str):
            return NotImplemented
        return Text(str.__add__(str(other), str(self)), getattr(other, "key", None) or self.key)


def message(key: str, lang: str, **values) -> Text:
    """The catalogue message ``key`` in ``lang``, formatted with ``values``; it carries ``key``."""
    try:
        template = catalogue(lang)[key]
    except KeyError:
        raise KeyError(f"no message {key!r} in the {lang!r} catalogue ({CATALOGUE_DIR})") from None
    return Text(template.format(**values), key)


def fragment(key: str, lang: str, **values) -> str:
    """A catalogue entry that is part of a sentence (a prefix, a word), as a plain str without a key."""
    return str(message(key, lang, **values))


def join(sentence: str, hint: str, lang: str) -> str:
    """Append a hint to a sentence: a space in English, nothing after a Chinese full stop.

    The hint names the mistake ("Because |x| > 1, the gradient must be
    blocked"), so its key, when it has one, is the key of the result; else
    the sentence's.  An empty hint leaves the sentence as it is.
    """
    if not hint:
        return sentence
    joined = str(sentence) + ("" if lang == "zh" else " ") + str(hint)
    return Text(joined, getattr(hint, "key", None) or getattr(sentence, "key", None))


def seconds_text(value: float) -> str:
    """A number of seconds for a message: "30", "0.5"."""
    return f"{value:g}"
