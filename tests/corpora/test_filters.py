"""Size, language and stateful filters, and the select pipeline."""

from __future__ import annotations

import pytest

from corpora import (
    CorpusError,
    SelectConfig,
    UnknownNameError,
    filter_language,
    filter_size,
    filter_stateful,
    select_documents,
    where,
)

from .conftest import PLAIN_SOURCE, STATEFUL_SOURCE, make_doc

DOCS = [
    make_doc("x" * 10, "a.py"),
    make_doc("y" * 100, "b.js"),
    make_doc(STATEFUL_SOURCE, "c.py"),
    make_doc(PLAIN_SOURCE, "d.py"),
]


def test_filter_size() -> None:
    assert [d.path for d in filter_size(DOCS, min_chars=11, max_chars=150)] == ["b.js"]
    assert [d.path for d in filter_size(DOCS, max_tokens=3)] == ["a.py"]
    assert [d.path for d in filter_size(DOCS, max_tokens=10, counter=lambda t: len(t.split()))] == [
        "a.py",
        "b.js",
    ]
    with pytest.raises(CorpusError, match="max_chars"):
        filter_size(DOCS, min_chars=5, max_chars=1)


def test_filter_language() -> None:
    assert [d.path for d in filter_language(DOCS, "JavaScript")] == ["b.js"]
    assert len(list(filter_language(DOCS, ["python", "js"]))) == 4
    with pytest.raises(CorpusError):
        filter_language(DOCS, [])


def test_filter_stateful_and_where() -> None:
    assert [d.path for d in filter_stateful(DOCS)] == ["c.py"]
    assert list(filter_stateful(DOCS, min_score=10)) == []
    assert [d.path for d in where(DOCS, lambda d: d.path.startswith("d"))] == ["d.py"]


def test_select_documents() -> None:
    docs = [*DOCS, make_doc(STATEFUL_SOURCE, "copy.py")]
    kept = select_documents(docs, SelectConfig(languages=("python",), min_stateful_score=0.0))
    assert [d.path for d in kept] == ["c.py"]  # the exact copy is dropped
    both = select_documents(docs, SelectConfig(min_stateful_score=0.0, dedup="none"))
    assert [d.path for d in both] == ["c.py", "copy.py"]
    sampled = select_documents(DOCS, SelectConfig(sample=2, seed=3, dedup="near"))
    assert len(sampled) == 2
    assert sampled == select_documents(list(reversed(DOCS)), SelectConfig(sample=2, seed=3, dedup="near"))


def test_select_config_validation() -> None:
    with pytest.raises(UnknownNameError, match="did you mean 'near'"):
        SelectConfig(dedup="nearr")
    with pytest.raises(CorpusError, match="near_threshold"):
        SelectConfig(near_threshold=0)
    with pytest.raises(CorpusError, match="sample"):
        SelectConfig(sample=-1)


@pytest.mark.parametrize(("path", "is_test"), [
    ("tests/test_cart.py", True), ("src/cart_test.go", True), ("web/cart.spec.ts", True),
    ("web/__tests__/cart.js", True), ("src/test/java/CartTest.java", True), ("spec/cart_spec.rb", True),
    ("conftest.py", True), ("pkg/testing/helpers.py", True), ("app/Cart.test.tsx", True),
    ("src/cart.py", False), ("src/contest.py", False), ("lib/attestation.go", False), ("src/Testament.java", False),
    ("unittest/case.py", False), ("docs/latest.md", False), ("src/protest_test_helpers/x.py", False),
])
def test_test_code_is_recognised_by_its_path(path: str, is_test: bool) -> None:
    from corpora.filters import is_test_path

    assert is_test_path(path) is is_test


def test_the_pipeline_drops_test_code_unless_asked_and_says_so() -> None:
    """An outside tester's all-tests repository gave 'Fake carts (tests.test_cart)' environments."""
    from corpora.pipeline import SelectConfig, SelectionReport, select_documents

    docs = [make_doc(STATEFUL_SOURCE, path=p) for p in ("shop/cart.py", "tests/test_cart.py")]
    report = SelectionReport()
    kept = select_documents(docs, SelectConfig(), report)
    assert [d.path for d in kept] == ["shop/cart.py"]
    assert "the test-code filter (tests/ folders" in report.explain() and "removed 1" in report.explain()
    assert len(select_documents(docs, SelectConfig(keep_tests=True, dedup="none"))) == 2
