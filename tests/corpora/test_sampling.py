"""Deterministic sampling."""

from __future__ import annotations

import pytest

from corpora import CorpusError, keep_fraction, rank, sample, shuffle

from .conftest import make_doc

DOCS = [make_doc(f"text {i}", f"f{i:03d}.py") for i in range(200)]


def test_sample_is_deterministic_and_order_independent() -> None:
    first = sample(DOCS, 10, seed=1)
    assert first == sample(DOCS, 10, seed=1)
    assert first == sample(list(reversed(DOCS)), 10, seed=1)
    assert first == sample(iter(DOCS), 10, seed=1)
    assert first != sample(DOCS, 10, seed=2)
    assert len({d.id for d in first}) == 10


def test_sample_prefix_property_and_small_inputs() -> None:
    assert sample(DOCS, 5, seed=4) == sample(DOCS, 6, seed=4)[:5]
    assert len(sample(DOCS[:3], 10)) == 3
    assert sample(DOCS, 0) == []
    with pytest.raises(CorpusError):
        sample(DOCS, -1)


def test_shuffle_and_keep_fraction() -> None:
    shuffled = shuffle(DOCS, seed=5)
    assert sorted(d.id for d in shuffled) == sorted(d.id for d in DOCS)
    assert shuffled != DOCS and shuffled[:7] == sample(DOCS, 7, seed=5)
    kept = list(keep_fraction(DOCS, 0.25, seed=5))
    assert 25 <= len(kept) <= 75
    assert kept == list(keep_fraction(DOCS, 0.25, seed=5))
    assert list(keep_fraction(DOCS, 0.0)) == [] and len(list(keep_fraction(DOCS, 1.0))) == 200
    with pytest.raises(CorpusError):
        list(keep_fraction(DOCS, 2.0))


def test_rank_is_a_fixed_function_of_seed_and_id() -> None:
    assert rank(DOCS[0], 0) == rank(make_doc("other text", "f000.py"), 0)
    assert rank(DOCS[0], 0) != rank(DOCS[0], 1)
    assert 0 <= rank(DOCS[0]) < 2**64
