"""Text similarity: word shingles and Jaccard, the project's one implementation.

Role: how alike two texts (or two sets) are. The environment library refuses near-duplicate tasks
with it, the statistics measure a library's diversity with it, the skill library compares skills
with it, and the contamination report measures how much a library overlaps a benchmark.

Contract:

* :func:`word_shingles` lower-cases the text, takes its words (runs of ``[a-z0-9]``) and returns the
  set of its ``k`` consecutive words joined by one space; a text of fewer than ``k`` words (but at
  least one) is one shingle, a text without words has none.
* :func:`jaccard` is ``|A & B| / |A | B|`` of two collections of hashable items, and ``1.0`` when both
  are empty: two empty texts are the same text. Every similarity here follows that rule, so
  ``1 - jaccard`` is a distance.
* :func:`text_similarity` is the Jaccard similarity of two texts' word ``k``-shingles.
* Near-duplicate removal (:mod:`corpora.dedup`) shingles *code tokens* instead of words and hashes
  them for MinHash; its exact similarity is this module's :func:`jaccard` of those hashes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from corpora.errors import CorpusError

__all__ = ["jaccard", "text_similarity", "word_shingles"]

_WORD = re.compile(r"[a-z0-9]+")


def word_shingles(text: str, k: int = 3) -> frozenset[str]:
    """The word ``k``-shingles of ``text`` (see the module docstring).

    Raises:
        CorpusError: ``k`` is below 1.
    """
    if k < 1:
        raise CorpusError(f"k (words per shingle) must be >= 1, got {k}")
    words = _WORD.findall(text.lower())
    if len(words) < k:
        return frozenset({" ".join(words)}) if words else frozenset()
    return frozenset(" ".join(words[i:i + k]) for i in range(len(words) - k + 1))


def jaccard(a: Iterable[Any], b: Iterable[Any]) -> float:
    """``|A & B| / |A | B|`` of two collections (sets are used as they are); 1.0 when both are empty."""
    sa = a if isinstance(a, set | frozenset) else set(a)
    sb = b if isinstance(b, set | frozenset) else set(b)
    union = len(sa | sb)
    return len(sa & sb) / union if union else 1.0


def text_similarity(a: str, b: str, k: int = 3) -> float:
    """The Jaccard similarity of the word ``k``-shingles of two texts (1.0: the same shingles)."""
    return jaccard(word_shingles(a, k), word_shingles(b, k))
