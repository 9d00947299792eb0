"""Excerpting to a token budget."""

from __future__ import annotations

import ast

import pytest

from corpora import approx_tokens, excerpt, excerpt_parts, load_corpus, truncate_text

from .conftest import STATEFUL_SOURCE, make_doc

BIG_FUNCTION = (
    "def big_helper(x):\n" + "".join(f"    x = x + {i}  # step {i}\n" for i in range(120)) + "    return x\n"
)
MODULE = (
    '"""Module docstring."""\n\nimport os\n\n\n'
    + BIG_FUNCTION
    + "\n\n"
    + STATEFUL_SOURCE.split('"""\n', 1)[1]
)


def words(text: str) -> int:
    return len(text.split())


def test_fitting_document_is_returned_whole() -> None:
    doc = make_doc(STATEFUL_SOURCE)
    parts = excerpt_parts(doc, 10_000)
    assert parts.complete and parts.text == STATEFUL_SOURCE
    assert excerpt(doc, 10_000) == STATEFUL_SOURCE


@pytest.mark.parametrize("budget", [0, 1, 5, 20, 60, 120, 200, 400, 800])
@pytest.mark.parametrize("counter", [approx_tokens, words])
def test_budget_is_respected(budget: int, counter) -> None:
    doc = make_doc(MODULE)
    text = excerpt(doc, budget, counter=counter)
    assert counter(text) <= budget
    if budget == 0:
        assert text == ""


def test_stateful_class_is_preferred_over_a_big_function() -> None:
    doc = make_doc(MODULE)
    parts = excerpt_parts(doc, approx_tokens(STATEFUL_SOURCE) + 20)
    assert parts.kept[0] == "Inventory"
    assert "class Inventory:" in parts.text and "def remove_item" in parts.text
    assert "big_helper" not in parts.text
    assert "# ..." in parts.text
    ast.parse(parts.text)


def test_big_class_is_cut_at_method_level() -> None:
    methods = "".join(
        f"\n    def get_{i}(self):\n        '''Getter {i}.'''\n        return self.items.get({i})\n"
        for i in range(40)
    )
    text = "class Store:\n    '''A store.'''\n\n    def __init__(self):\n        self.items = {}\n" + methods
    parts = excerpt_parts(make_doc(text), 120)
    assert parts.kept == ("Store (partial)",)
    assert parts.text.startswith("class Store:\n    '''A store.'''")
    assert "def __init__" in parts.text and "def get_0" in parts.text and "def get_39" not in parts.text
    assert parts.text.rstrip().endswith("# ...")
    assert approx_tokens(parts.text) <= 120
    ast.parse(parts.text)


def test_other_languages_and_broken_python_are_line_prefixes() -> None:
    js = make_doc("".join(f"let v{i} = {i};\n" for i in range(100)), "a.js")
    parts = excerpt_parts(js, 30)
    assert parts.truncated and js.text.startswith(parts.text) and parts.text.endswith(";")
    broken = make_doc("def f(:\n" + "x = 1\n" * 100)
    assert broken.text.startswith(excerpt(broken, 10))


def test_truncate_text_falls_back_to_characters() -> None:
    assert truncate_text("a" * 100, 5) == "a" * 20
    assert truncate_text("ab\ncd\nef", 1) == "ab"
    assert truncate_text("", 5) == ""


def test_stdlib_excerpts_stay_within_budget_and_parse() -> None:
    wanted = {"queue.py", "mailbox.py", "json/decoder.py", "collections/__init__.py", "sched.py"}
    docs = [d for d in load_corpus("stdlib") if d.path in wanted]
    assert len(docs) == len(wanted)
    for doc in docs:
        for budget in (100, 500, 2000):
            parts = excerpt_parts(doc, budget)
            assert parts.tokens == approx_tokens(parts.text) <= budget
            if not parts.truncated:
                ast.parse(parts.text)
