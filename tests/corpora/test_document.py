"""Document, ids, digests and language names."""

from __future__ import annotations

import hashlib

import pytest

from corpora import CorpusError, Document, language_from_path, make_id, normalize_language

from .conftest import make_doc


def test_create_builds_id_sha_and_language() -> None:
    doc = Document.create("x = 1\n", corpus="stdlib", path="json\\decoder.py", metadata={"k": 1})
    assert doc.id == "stdlib:json/decoder.py"
    assert doc.path == "json/decoder.py"
    assert doc.language == "python"
    assert doc.sha256 == hashlib.sha256(b"x = 1\n").hexdigest()
    assert doc.corpus == "stdlib"
    assert doc.metadata == {"k": 1}
    assert doc.n_chars == 6 and doc.approx_tokens == 2


def test_wrong_sha_is_refused_and_right_one_accepted() -> None:
    good = hashlib.sha256(b"abc").hexdigest()
    assert Document(id="c:p", path="p", language="text", text="abc", sha256=good).sha256 == good
    with pytest.raises(CorpusError, match="does not match"):
        Document(id="c:p", path="p", language="text", text="abc", sha256="0" * 64)


def test_documents_are_immutable_and_hashable() -> None:
    doc = make_doc("a = 1\n")
    with pytest.raises(AttributeError):
        doc.text = "b"  # type: ignore[misc]
    assert len({doc, make_doc("a = 1\n")}) == 1


def test_bad_ids_are_refused() -> None:
    with pytest.raises(CorpusError):
        make_id("a:b", "x.py")
    with pytest.raises(CorpusError):
        Document(id="", path="p", language="text", text="")
    with pytest.raises(CorpusError, match="text must be str"):
        Document(id="c:p", path="p", language="text", text=b"bytes")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("label", "expected"),
    [
        ("Python", "python"),
        ("C++", "cpp"),
        ("C#", "csharp"),
        (None, "unknown"),
        ("", "unknown"),
        ("Go", "go"),
    ],
)
def test_normalize_language(label: str | None, expected: str) -> None:
    assert normalize_language(label) == expected


def test_language_from_path() -> None:
    assert language_from_path("a/b.PY") == "python"
    assert language_from_path("x.tsx") == "typescript"
    assert language_from_path("Makefile") == "unknown"
