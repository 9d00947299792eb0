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
