"""The one similarity: word shingles and Jaccard, with one rule for empty text."""

from __future__ import annotations

import pytest

from corpora import CorpusError, jaccard, shingle_jaccard, text_similarity, word_shingles


def test_word_shingles() -> None:
    assert word_shingles("The cat sat on the mat") == {"the cat sat", "cat sat on", "sat on the", "on the mat"}
    assert word_shingles("Hi, there!") == {"hi there"}  # shorter than k words: one shingle
    assert word_shingles("") == frozenset() and word_shingles("... !!") == frozenset()
    assert word_shingles("a b c", k=1) == {"a", "b", "c"}
    with pytest.raises(CorpusError, match="k"):
        word_shingles("a b", k=0)


def test_jaccard_of_sets_and_of_any_collection() -> None:
    assert jaccard({1, 2}, {2, 3}) == pytest.approx(1 / 3)
    assert jaccard([1, 1, 2], (2, 1)) == 1.0
    assert jaccard({1}, set()) == 0.0


def test_empty_is_identical_everywhere() -> None:
    """Two empty texts are the same text: every similarity of the project says 1.0."""
    assert jaccard([], []) == 1.0
    assert text_similarity("", "") == 1.0
    assert shingle_jaccard("", "") == 1.0  # the MinHash side (code-token shingles) follows the same rule


def test_text_similarity() -> None:
    assert text_similarity("the cat sat on the mat", "The cat sat on the mat.") == 1.0
    assert text_similarity("the cat sat on the mat", "a completely different sentence here") == 0.0
    assert 0 < text_similarity("member 7 borrows Dune today", "member 7 borrows Dune tomorrow") < 1
