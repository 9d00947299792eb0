"""Filters over document streams.

Role: cut a corpus down to the documents worth generating from: by size,
language, whether they are a program or its tests, and how much they define
stateful operations.

Contract: every filter takes an iterable of documents and returns a lazy
iterator that keeps the input order; none reads more of the input than it
yields plus what it skips. Bad arguments raise
:class:`~corpora.errors.CorpusError` when the filter is called, not when
iteration starts.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator

from corpora.analysis import stateful_score
from corpora.document import Document, TokenCounter, approx_tokens
from corpora.errors import CorpusError
from corpora.languages import normalize_language

__all__ = ["filter_language", "filter_size", "filter_stateful", "filter_tests", "is_test_path", "where"]


def where(docs: Iterable[Document], predicate: Callable[[Document], bool]) -> Iterator[Document]:
    """Keep the documents for which ``predicate`` is true."""
    return (doc for doc in docs if predicate(doc))


def filter_size(
    docs: Iterable[Document],
    *,
    min_chars: int = 0,
    max_chars: int | None = None,
    max_tokens: int | None = None,
    counter: TokenCounter = approx_tokens,
) -> Iterator[Document]:
    """Keep documents with ``min_chars <= len(text) <= max_chars`` and at most ``max_tokens`` tokens.

    ``None`` bounds are open; tokens are counted with ``counter``.
    """
    if min_chars < 0:
        raise CorpusError(f"min_chars must be >= 0, got {min_chars}")
    if max_chars is not None and max_chars < min_chars:
        raise CorpusError(f"max_chars ({max_chars}) must be >= min_chars ({min_chars}) or None")
    if max_tokens is not None and max_tokens < 0:
        raise CorpusError(f"max_tokens must be >= 0 or None, got {max_tokens}")

    def keep(doc: Document) -> bool:
        n = len(doc.text)
        if n < min_chars or (max_chars is not None and n > max_chars):
            return False
        return max_tokens is None or counter(doc.text) <= max_tokens

    return where(docs, keep)


def filter_language(docs: Iterable[Document], languages: str | Iterable[str]) -> Iterator[Document]:
    """Keep documents whose language is one of ``languages`` (any spelling: ``"Python"``, ``"C++"``)."""
    names = (languages,) if isinstance(languages, str) else tuple(languages)
    wanted = frozenset(normalize_language(name) for name in names)
    if not wanted:
        raise CorpusError("languages must name at least one language, e.g. 'python'")
    return where(docs, lambda doc: doc.language in wanted)


def filter_stateful(docs: Iterable[Document], min_score: float = 0.0) -> Iterator[Document]:
    """Keep documents whose :func:`~corpora.analysis.stateful_score` is greater than ``min_score``.

    The default keeps every document with at least one stateful class.
    """
    if min_score < 0:
        raise CorpusError(f"min_score must be >= 0, got {min_score}")
    return where(docs, lambda doc: stateful_score(doc) > min_score)


#: folders that hold test code, in any language
_TEST_DIRS = frozenset({"test", "tests", "testing", "__tests__", "spec", "specs", "e2e", "testdata", "fixtures",
                        "idle_test"})
#: file names of test code: test_x.py, x_test.py, x_test.go, x.test.ts, x.spec.js, XTest.java, x_spec.rb, ...
_TEST_FILE = re.compile(r"^(?:test_.+|.+_tests?|conftest|.+[._](?:test|spec)|.+Tests?|.+_spec)"
                        r"\.[A-Za-z0-9]+$")


def is_test_path(path: str) -> bool:
    """Whether a document's path names test code: a file under a ``tests/`` (``test/``, ``__tests__/``,
    ``spec/`` ...) folder, or named like a test in its language (``test_x.py``, ``x_test.go``, ``x.spec.ts``,
    ``XTest.java``, ``x_spec.rb``, ``conftest.py``)."""
    parts = [p for p in re.split(r"[/\\]", path) if p]
    if not parts:
        return False
    return any(p.lower() in _TEST_DIRS for p in parts[:-1]) or bool(_TEST_FILE.match(parts[-1]))


def filter_tests(docs: Iterable[Document]) -> Iterator[Document]:
    """Drop test code (:func:`is_test_path`): tests call a program's API on made-up data, so an environment
    modelled on them models the test (fake carts, ``new_test_user``), not the program."""
    return where(docs, lambda doc: not is_test_path(doc.path))
