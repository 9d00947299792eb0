"""The :class:`Document`: one text of a corpus, with a stable id.

Role: the only type the rest of the package (and ``envgen``) passes around.

Contract:

* ``id`` is stable and deterministic: ``"<corpus>:<path>"`` (for example
  ``"stdlib:json/decoder.py"``); loading the same source twice gives the
  same ids in the same order.
* ``sha256`` is the hex SHA-256 of ``text`` encoded as UTF-8. It is computed
  when left empty and checked when given, so a document never carries a
  wrong digest.
* ``language`` is a canonical name from :mod:`corpora.languages`.
* Documents are immutable; ``metadata`` is a plain mapping of JSON-like
  values that takes part in equality but not in hashing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from corpora.errors import CorpusError
from corpora.languages import language_from_path, normalize_language

__all__ = ["Document", "TokenCounter", "approx_tokens", "make_id", "text_sha256"]

TokenCounter = Callable[[str], int]
"""A function giving the number of tokens of a text (a tokenizer's ``len(encode(text))``)."""


def approx_tokens(text: str) -> int:
    """Approximate the token count of ``text`` as ``ceil(len(text) / 4)``.

    A fair estimate for code with BPE tokenizers, and the default counter of
    :func:`corpora.excerpt.excerpt`.
    """
    return (len(text) + 3) // 4


def text_sha256(text: str) -> str:
    """Return the hex SHA-256 digest of ``text`` encoded as UTF-8 (surrogates escaped)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def make_id(corpus: str, path: str) -> str:
    """Return the document id ``"<corpus>:<path>"``, with ``path`` in POSIX form.

    Raises :class:`~corpora.errors.CorpusError` when ``corpus`` is empty or
    contains a colon (the id separator).
    """
    if not corpus or ":" in corpus:
        raise CorpusError(f"corpus name {corpus!r} must be non-empty and contain no ':'")
    return f"{corpus}:{path.replace(chr(92), '/')}"


@dataclass(frozen=True, slots=True)
class Document:
    """One text of a corpus.

    Attributes:
        id: Stable, deterministic identifier, ``"<corpus>:<path>"``.
        path: The document's path inside its corpus (POSIX separators).
        language: Canonical language name (``"python"``, ``"unknown"``, ...).
        text: The full text.
        sha256: Hex SHA-256 of ``text``; computed when empty, checked when given.
        metadata: Extra JSON-like fields of the source record (repository,
            licence, stars, module name, ...).
    """

    id: str
    path: str
    language: str
    text: str
    sha256: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise CorpusError(f"document {self.id!r}: text must be str, got {type(self.text).__name__}")
        if not self.id:
            raise CorpusError("document id must be non-empty; build it with corpora.make_id(corpus, path)")
        digest = text_sha256(self.text)
        if not self.sha256:
            object.__setattr__(self, "sha256", digest)
        elif self.sha256 != digest:
            raise CorpusError(
                f"document {self.id!r}: sha256 {self.sha256[:12]}... does not match its text; "
                "leave sha256 empty to have it computed"
            )

    @classmethod
    def create(
        cls,
        text: str,
        *,
        corpus: str,
        path: str,
        language: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Document:
        """Build a document with id ``"<corpus>:<path>"``.

        ``language`` is normalised; when ``None`` it is inferred from the
        path's extension.
        """
        path = path.replace("\\", "/")
        lang = language_from_path(path) if language is None else normalize_language(language)
        return cls(
            id=make_id(corpus, path),
            path=path,
            language=lang,
            text=text,
            metadata=dict(metadata or {}),
        )

    @property
    def corpus(self) -> str:
        """The corpus name: the part of ``id`` before the first colon."""
        return self.id.split(":", 1)[0]

    @property
    def n_chars(self) -> int:
        """Length of ``text`` in characters."""
        return len(self.text)

    @property
    def approx_tokens(self) -> int:
        """Approximate token count of ``text`` (:func:`approx_tokens`)."""
        return approx_tokens(self.text)
