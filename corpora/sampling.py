"""Deterministic sampling by seed.

Role: pick documents reproducibly. Every draw derives from an explicit seed
and the document's id, never from global random state.

Contract:

* A document's rank is ``blake2b(f"{seed}:{doc.id}")`` (64 bits), so the
  result depends only on the seed and the *set* of ids — not on the input
  order, the process or the platform.
* :func:`sample` returns the ``n`` lowest-ranked documents (fewer when the
  input is shorter) in rank order, keeping only ``n`` in memory; the sample
  of ``n`` is a prefix of the sample of ``n + 1``.
* :func:`keep_fraction` is a lazy Bernoulli filter with the same ranks.
* Documents with equal ids rank equally; ties break by ``sha256``.
"""

from __future__ import annotations

import hashlib
import heapq
from collections.abc import Iterable, Iterator

from corpora.document import Document
from corpora.errors import CorpusError

__all__ = ["keep_fraction", "rank", "sample", "shuffle"]

_SPAN = float(1 << 64)


def rank(doc: Document, seed: int = 0) -> int:
    """Return the document's 64-bit rank under ``seed``."""
    digest = hashlib.blake2b(f"{seed}:{doc.id}".encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def sample(docs: Iterable[Document], n: int, *, seed: int = 0) -> list[Document]:
    """Return ``n`` documents chosen by ``seed``, in rank order (all of them, shuffled, when fewer)."""
    if n < 0:
        raise CorpusError(f"sample size must be >= 0, got {n}")
    return heapq.nsmallest(n, docs, key=lambda d: (rank(d, seed), d.sha256))


def shuffle(docs: Iterable[Document], *, seed: int = 0) -> list[Document]:
    """Return all documents in the order of their rank under ``seed``."""
    return sorted(docs, key=lambda d: (rank(d, seed), d.sha256))


def keep_fraction(docs: Iterable[Document], fraction: float, *, seed: int = 0) -> Iterator[Document]:
    """Lazily keep each document with probability ``fraction``, decided by its rank under ``seed``."""
    if not 0.0 <= fraction <= 1.0:
        raise CorpusError(f"fraction must be in [0, 1], got {fraction}")
    return (doc for doc in docs if rank(doc, seed) / _SPAN < fraction)
