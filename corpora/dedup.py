r"""Exact and near-duplicate removal.

Role: keep one copy of each text. Code corpora repeat files verbatim
(vendored copies) and nearly (forks, version bumps); duplicates waste
generation and leak between train and eval.

Contract:

* Both removers are lazy, keep the *first* occurrence and preserve order.
* :func:`dedup_exact` compares ``Document.sha256``.
* :func:`dedup_near` uses MinHash over hashed token shingles with LSH
  banding, implemented here with :mod:`hashlib` and NumPy: token hashes are
  ``blake2b`` digests and the permutations' coefficients derive from
  ``blake2b`` of the seed, so results never depend on ``PYTHONHASHSEED``,
  the platform or the run. A document is dropped when its estimated
  Jaccard similarity to an earlier kept document is ``>= threshold``.
* Tokens are ``\w+`` runs and single punctuation characters, so whitespace
  and layout changes do not matter; shingles are ``shingle_size``
  consecutive tokens (a shorter text is one shingle).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np

from corpora.document import Document
from corpora.errors import CorpusError
from corpora.similarity import jaccard

__all__ = ["MinHasher", "NearDuplicateIndex", "dedup_exact", "dedup_near", "shingle_hashes", "shingle_jaccard"]

_TOKEN_RE = re.compile(r"\w+|[^\w\s]")
_MAX = np.uint64(0xFFFFFFFFFFFFFFFF)
_MIX = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_CHUNK = 4096


def dedup_exact(docs: Iterable[Document]) -> Iterator[Document]:
    """Drop documents whose text (``sha256``) was already seen."""
    seen: set[str] = set()
    for doc in docs:
        if doc.sha256 not in seen:
            seen.add(doc.sha256)
            yield doc


def _token_hash(token: str) -> int:
    digest = hashlib.blake2b(token.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def shingle_hashes(text: str, shingle_size: int = 5) -> np.ndarray:
    """Return the sorted unique 64-bit hashes of the token shingles of ``text``.

    Deterministic across runs and platforms (``blake2b`` token hashes,
    polynomial combination modulo 2**64).
    """
    if shingle_size < 1:
        raise CorpusError(f"shingle_size must be >= 1, got {shingle_size}")
    tokens = _TOKEN_RE.findall(text)
    if not tokens:
        return np.empty(0, dtype=np.uint64)
    table = {token: _token_hash(token) for token in dict.fromkeys(tokens)}
    hashes = np.fromiter(map(table.__getitem__, tokens), dtype=np.uint64, count=len(tokens))
    k = min(shingle_size, len(tokens))
    n = len(tokens) - k + 1
    combined = np.zeros(n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for i in range(k):
            combined = combined * _MIX + hashes[i : i + n]
    return np.unique(combined)


def shingle_jaccard(a: str, b: str, shingle_size: int = 5) -> float:
    """Return the exact Jaccard similarity of the token shingles of two texts: what MinHash estimates.

    :func:`corpora.similarity.jaccard` of the shingle hashes (1.0 for two empty texts).
    """
    return jaccard(shingle_hashes(a, shingle_size).tolist(), shingle_hashes(b, shingle_size).tolist())


def _seeds(seed: int, num_perm: int) -> np.ndarray:
    """One 64-bit key per hash function, from ``blake2b`` of the seed."""
    keys = [
        int.from_bytes(hashlib.blake2b(f"corpora-minhash:{seed}:{i}".encode(), digest_size=8).digest(), "big")
        for i in range(num_perm)
    ]
    return np.array(keys, dtype=np.uint64)


def _mix(z: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser, element-wise (a bijection of uint64 with good avalanche)."""
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * _M1
        z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


@dataclass(frozen=True)
class MinHasher:
    """MinHash signatures of texts: ``num_perm`` hash functions ``splitmix64(x ^ key_i)``.

    Attributes:
        num_perm: Signature length (more is more precise and slower).
        shingle_size: Tokens per shingle.
        seed: Selects the hash functions; signatures compare only under the same seed.
    """

    num_perm: int = 128
    shingle_size: int = 5
    seed: int = 0
    _keys: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.num_perm < 1:
            raise CorpusError(f"num_perm must be >= 1, got {self.num_perm}")
        if self.shingle_size < 1:
            raise CorpusError(f"shingle_size must be >= 1, got {self.shingle_size}")
        object.__setattr__(self, "_keys", _seeds(self.seed, self.num_perm))

    def signature(self, text: str) -> np.ndarray:
        """Return the ``uint64`` MinHash signature of ``text`` (all ``2**64 - 1`` for an empty text)."""
        shingles = shingle_hashes(text, self.shingle_size)
        sig = np.full(self.num_perm, _MAX, dtype=np.uint64)
        for start in range(0, shingles.size, _CHUNK):
            values = _mix(shingles[start : start + _CHUNK, None] ^ self._keys[None, :])
            np.minimum(sig, values.min(axis=0), out=sig)
        return sig

    @staticmethod
    def similarity(sig_a: np.ndarray, sig_b: np.ndarray) -> float:
        """Estimate the Jaccard similarity from two signatures of the same hasher."""
        if sig_a.shape != sig_b.shape:
            raise CorpusError("signatures differ in length; compute both with the same MinHasher")
        return float(np.count_nonzero(sig_a == sig_b)) / sig_a.size


def _bands(num_perm: int, threshold: float) -> int:
    """Rows per LSH band: the largest-threshold banding still below ``threshold - 0.1``.

    The ``0.1`` margin keeps recall high (a pair at the threshold is a
    candidate with probability > 0.98 for the default 128 permutations);
    candidates are then checked against the threshold.
    """
    best = 1
    for rows in range(1, num_perm + 1):
        if num_perm % rows:
            continue
        bands = num_perm // rows
        if (1 / bands) ** (1 / rows) <= threshold - 0.1:
            best = rows
    return best


class NearDuplicateIndex:
    """An LSH index of kept signatures answering "is this a near duplicate of one kept?".

    Use :meth:`add` in stream order; it keeps the first of each group.
    """

    def __init__(self, *, threshold: float = 0.85, num_perm: int = 128, shingle_size: int = 5, seed: int = 0):
        if not 0.0 < threshold <= 1.0:
            raise CorpusError(f"threshold must be in (0, 1], got {threshold}")
        self.threshold = threshold
        self.hasher = MinHasher(num_perm=num_perm, shingle_size=shingle_size, seed=seed)
        self.rows = _bands(num_perm, threshold)
        self._buckets: dict[bytes, list[int]] = {}
        self._signatures: list[np.ndarray] = []

    def __len__(self) -> int:
        return len(self._signatures)

    def _keys(self, sig: np.ndarray) -> list[bytes]:
        r = self.rows
        return [i.to_bytes(4, "big") + sig[i * r : (i + 1) * r].tobytes() for i in range(sig.size // r)]

    def add(self, text: str) -> bool:
        """Index ``text`` and return ``True``, or return ``False`` when it near-duplicates a kept text."""
        sig = self.hasher.signature(text)
        keys = self._keys(sig)
        candidates = sorted({j for key in keys for j in self._buckets.get(key, ())})
        for j in candidates:
            if MinHasher.similarity(sig, self._signatures[j]) >= self.threshold:
                return False
        index = len(self._signatures)
        self._signatures.append(sig)
        for key in keys:
            self._buckets.setdefault(key, []).append(index)
        return True


def dedup_near(
    docs: Iterable[Document],
    *,
    threshold: float = 0.85,
    num_perm: int = 128,
    shingle_size: int = 5,
    seed: int = 0,
) -> Iterator[Document]:
    """Drop documents whose estimated Jaccard similarity to an earlier kept one is ``>= threshold``.

    Raises :class:`~corpora.errors.CorpusError` at call time for bad parameters.
    """
    index = NearDuplicateIndex(threshold=threshold, num_perm=num_perm, shingle_size=shingle_size, seed=seed)
    return (doc for doc in docs if index.add(doc.text))
