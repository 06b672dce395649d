"""The classroom's message catalogues (gradlib/classroom/messages/*.json).

Both languages must have the same keys and the same ``{placeholders}`` per key,
and every key the code names must exist: a missing or mistyped key would
otherwise surface only when a reader makes that particular mistake.
"""

import ast
import json
import re
import string
from pathlib import Path

import pytest

from gradlib.classroom.exercises import _core

PACKAGE = Path(_core.__file__).resolve().parent.parent  # gradlib/classroom


def placeholders(template):
    return sorted({field for _, field, _, _ in string.Formatter().parse(template) if field is not None})


def test_both_catalogues_have_the_same_keys_and_placeholders():
    en, zh = _core.catalogue("en"), _core.catalogue("zh")
    assert sorted(en) == sorted(zh)
    for key in en:
        assert placeholders(en[key]) == placeholders(zh[key]), key
        assert bool(en[key].strip()) == bool(zh[key].strip()), key  # an empty filler is empty in both


def test_catalogue_files_are_plain_flat_json():
    for lang in _core.LANGUAGES:
        data = json.loads((PACKAGE / "messages" / f"{lang}.json").read_text(encoding="utf-8"))
        assert all(isinstance(key, str) and isinstance(value, str) for key, value in data.items())
        namespaces = {key.split(".", 1)[0] for key in data}
        assert namespaces <= {"common", "grade", "ch01", "ch02", "ch03-ex1", "ch03-ex2", "ch04", "ch05", "ch06", "ch07",
                              "ch08", "ch09"}


KEY_LIKE = re.compile(r"(common|grade|ch0\d|ch03-ex\d)\.[a-z0-9_]+")


def literal_keys():
    """Every key the classroom's code names as a literal: message("k"), fragment("k"), any string
    constant shaped like a key ("ch05.xnor_plain" in a spec's table or ``upstream_key=``), and a
    "ns." + ... prefix, which must be the namespace of at least one key."""
    keys, prefixes = set(), set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and KEY_LIKE.fullmatch(node.value):
                keys.add((path.name, node.value))
            if not (isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None))
                    in ("message", "fragment", "_msg") and node.args):
                continue
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                keys.add((path.name, first.value))
            elif isinstance(first, ast.BinOp) and isinstance(first.left, ast.Constant):
                prefixes.add((path.name, first.left.value))
    return keys, prefixes


def test_every_key_named_in_the_code_exists():
    en = _core.catalogue("en")
    keys, prefixes = literal_keys()
    assert len(keys) > 200
    missing = sorted((path, key) for path, key in keys if key not in en and f"grade.{key}" not in en)
    assert not missing
    for path, prefix in prefixes:
        assert any(key.startswith(prefix) for key in en), (path, prefix)


def test_chinese_feedback_says_blocked_not_clipped():
    # 阻断 = block a gradient; 截断 = clip (the glossary's terms)
    en, zh = _core.catalogue("en"), _core.catalogue("zh")
    assert "阻断" in zh["ch02.ste_outside"]
    for key in en:  # chapter 2's messages; chapter 5 names the clipped estimator (截断的) and blocking
        if key.startswith("ch02.") and "blocked" in en[key]:
            assert "截断" not in zh[key], key


def test_a_missing_key_is_a_clear_error():
    with pytest.raises(KeyError, match="no message 'common.nope'"):
        _core.message("common.nope", "en")
    with pytest.raises(ValueError, match="lang"):
        _core.catalogue("fr")


def test_text_keeps_the_key_of_the_main_sentence():
    sentence = _core.message("common.none", "en", where="")
    hint = _core.message("ch02.ste_outside", "en")
    assert (("at x = 1: " + sentence) + " more").key == "common.none"
    assert _core.join(sentence, hint, "en").key == "ch02.ste_outside"   # the hint names the mistake
    assert _core.join(sentence, "plain hint", "en").key == "common.none"
    assert _core.join(sentence, hint, "zh") == str(sentence) + str(hint)
    assert _core.join(sentence, "", "en") is sentence
    assert _core.Mismatch(sentence).key == "common.none"
    assert _core.Mismatch("plain").key is None
    assert type(_core.fragment("common.at", "en", x=1)) is str
