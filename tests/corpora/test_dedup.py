"""Exact and near-duplicate removal."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from corpora import CorpusError, MinHasher, NearDuplicateIndex, dedup_exact, dedup_near, shingle_jaccard
from corpora.dedup import shingle_hashes

from .conftest import PLAIN_SOURCE, STATEFUL_SOURCE, make_doc

BASE = "\n".join(f"def function_{i}(arg):\n    return arg * {i} + offset_{i}" for i in range(60))


def test_dedup_exact_keeps_first() -> None:
    docs = [make_doc("a", "1.py"), make_doc("b", "2.py"), make_doc("a", "3.py")]
    assert [d.path for d in dedup_exact(docs)] == ["1.py", "2.py"]


def test_dedup_near_drops_edited_copies_and_keeps_different_texts() -> None:
    edited = BASE.replace("function_7(", "renamed_7(")  # one token changed
    reformatted = BASE.replace("    return", "  return")  # whitespace only
    docs = [
        make_doc(BASE, "orig.py"),
        make_doc(STATEFUL_SOURCE, "other.py"),
        make_doc(edited, "edited.py"),
        make_doc(reformatted, "reformatted.py"),
        make_doc(PLAIN_SOURCE, "plain.py"),
    ]
    assert shingle_jaccard(BASE, edited) > 0.9
    assert shingle_jaccard(BASE, reformatted) == 1.0
    assert [d.path for d in dedup_near(docs)] == ["orig.py", "other.py", "plain.py"]
    assert len(list(dedup_near(docs, threshold=1.0))) == 4  # the edited copy is not identical


def test_minhash_estimates_jaccard() -> None:
    half = "\n".join(BASE.split("\n")[:60])
    hasher = MinHasher(num_perm=256)
    estimate = MinHasher.similarity(hasher.signature(BASE), hasher.signature(half))
    assert estimate == pytest.approx(shingle_jaccard(BASE, half), abs=0.1)
    assert MinHasher.similarity(hasher.signature(BASE), hasher.signature(STATEFUL_SOURCE)) < 0.1
    with pytest.raises(CorpusError):
        MinHasher.similarity(hasher.signature(BASE), MinHasher(num_perm=8).signature(BASE))


def test_short_and_empty_texts() -> None:
    assert shingle_hashes("").size == 0
    assert shingle_hashes("one two").size == 1
    assert shingle_jaccard("", "") == 1.0
    index = NearDuplicateIndex()
    assert index.add("a b") and not index.add("a  b") and index.add("c d")
    assert len(index) == 2


def test_parameters_are_validated() -> None:
    with pytest.raises(CorpusError):
        dedup_near([], threshold=1.5)
    with pytest.raises(CorpusError):
        MinHasher(num_perm=0)
    with pytest.raises(CorpusError):
        shingle_hashes("x", 0)


def test_signatures_do_not_depend_on_the_process() -> None:
    code = (
        "from corpora import MinHasher; import sys; "
        "print(MinHasher(num_perm=16, seed=7).signature('alpha beta gamma delta epsilon zeta').tolist())"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={"PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("1", "2")
    }
    assert len(outputs) == 1
    here = MinHasher(num_perm=16, seed=7).signature("alpha beta gamma delta epsilon zeta")
    assert outputs.pop().strip() == str(here.tolist())
    assert not np.array_equal(
        here, MinHasher(num_perm=16, seed=8).signature("alpha beta gamma delta epsilon zeta")
    )
