"""One-call corpus selection: filter, deduplicate, sample.

Role: the recipe the generator runs on a loaded corpus, as one typed config
(:class:`SelectConfig`) instead of hand-chained filters.

Contract: :func:`select_documents` applies, in this order, the size filter,
the language filter, the test-code filter, the stateful filter, deduplication and sampling; the
result is deterministic for a given input sequence and config (deduplication
keeps the first copy, so reordering duplicates can change which copy is
kept; sampling itself does not depend on the order). The config is
validated at construction with errors that name the field to fix.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from corpora.dedup import dedup_exact, dedup_near
from corpora.document import Document
from corpora.errors import CorpusError, UnknownNameError, did_you_mean
from corpora.filters import filter_language, filter_size, filter_stateful, filter_tests
from corpora.sampling import sample

__all__ = ["DEDUP_MODES", "SelectConfig", "SelectionReport", "select_documents"]

DEDUP_MODES = ("none", "exact", "near")
"""Accepted values of :attr:`SelectConfig.dedup`."""


@dataclass(kw_only=True)
class SelectConfig:
    """How to cut a corpus down.

    Attributes:
        min_chars: Drop documents shorter than this.
        max_chars: Drop documents longer than this (``None``: no bound).
        languages: Keep only these languages (``None``: all).
        keep_tests: Keep test code (``tests/`` folders, ``test_*.py``, ``*_test.go``, ``*.spec.ts``, ...;
            :func:`~corpora.filters.is_test_path`), which is dropped by default.
        min_stateful_score: Keep documents whose stateful score is greater
            than this (``0.0`` keeps those with a stateful class; ``None``
            skips the analysis).
        dedup: ``"none"``, ``"exact"`` (sha256) or ``"near"`` (exact, then MinHash).
        near_threshold: Jaccard similarity at or above which ``"near"`` drops a document.
        sample: Keep this many documents, chosen by ``seed`` (``None``: all, in input order).
        seed: Seed of the sample.
    """

    min_chars: int = 1
    max_chars: int | None = 500_000
    languages: tuple[str, ...] | None = None
    keep_tests: bool = False
    min_stateful_score: float | None = None
    dedup: str = "exact"
    near_threshold: float = 0.85
    sample: int | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if self.dedup not in DEDUP_MODES:
            raise UnknownNameError(
                f"dedup={self.dedup!r} is not one of {', '.join(DEDUP_MODES)}"
                f"{did_you_mean(self.dedup, DEDUP_MODES)}"
            )
        if not 0.0 < self.near_threshold <= 1.0:
            raise CorpusError(f"near_threshold must be in (0, 1], got {self.near_threshold}")
        if self.sample is not None and self.sample < 0:
            raise CorpusError(f"sample must be >= 0 or None, got {self.sample}")
        if self.min_chars < 0 or (self.max_chars is not None and self.max_chars < self.min_chars):
            raise CorpusError(f"need 0 <= min_chars <= max_chars, got {self.min_chars} and {self.max_chars}")
        if isinstance(self.languages, str):
            self.languages = (self.languages,)
        if self.min_stateful_score is not None and self.min_stateful_score < 0:
            raise CorpusError(f"min_stateful_score must be >= 0 or None, got {self.min_stateful_score}")


@dataclass
class SelectionReport:
    """How many documents were left after each stage of :func:`select_documents` (in order)."""

    stages: list[tuple[str, int]] = field(default_factory=list)  #: (stage, documents left after it)
    languages: dict[str, int] = field(default_factory=dict)  #: language -> documents read

    def _count(self, stage: str, docs: Iterable[Document], *, languages: bool = False) -> Iterator[Document]:
        """Count what ``docs`` yields under ``stage`` (registered now, in pipeline order)."""
        index = len(self.stages)
        self.stages.append((stage, 0))
        return self._counting(index, stage, docs, languages)

    def _counting(self, index: int, stage: str, docs: Iterable[Document], languages: bool) -> Iterator[Document]:
        for doc in docs:
            self.stages[index] = (stage, self.stages[index][1] + 1)
            if languages:
                self.languages[doc.language] = self.languages.get(doc.language, 0) + 1
            yield doc

    def explain(self) -> str:
        """One sentence per stage that removed documents, e.g. ``read 3 documents; ...``."""
        if not self.stages:
            return "nothing was read"
        parts = []
        before = None
        for stage, left in self.stages:
            if before is None:
                langs = ", ".join(f"{n} {lang}" for lang, n in sorted(self.languages.items(), key=lambda kv: -kv[1]))
                parts.append(f"read {left} document{'' if left == 1 else 's'}" + (f" ({langs})" if langs else ""))
            elif left < before:
                parts.append(f"{stage} removed {before - left}")
            before = left
        return "; ".join(parts)


def select_documents(docs: Iterable[Document], config: SelectConfig | None = None,
                     report: SelectionReport | None = None) -> list[Document]:
    """Filter, deduplicate and sample ``docs`` as ``config`` (default :class:`SelectConfig`) says.

    With ``report``, the documents left after each stage are counted into it.
    """
    cfg = config or SelectConfig()

    def counted(stage: str, stream: Iterable[Document], **kw: bool) -> Iterable[Document]:
        return stream if report is None else report._count(stage, stream, **kw)

    stream = counted("read", docs, languages=True)
    bounds = f"{cfg.min_chars}..{cfg.max_chars}" if cfg.max_chars is not None else f">= {cfg.min_chars}"
    stream = counted(f"the size filter ({bounds} characters)",
                     filter_size(stream, min_chars=cfg.min_chars, max_chars=cfg.max_chars))
    if cfg.languages is not None:
        stream = counted(f"the language filter (only {', '.join(cfg.languages)})",
                         filter_language(stream, cfg.languages))
    if not cfg.keep_tests:
        stream = counted("the test-code filter (tests/ folders, test_*.py, *_test.go, *.spec.ts, ...)",
                         filter_tests(stream))
    if cfg.min_stateful_score is not None:
        stream = counted("the stateful filter (documents with no class, struct or type whose CRUD-named "
                         "methods change the state it keeps)",
                         filter_stateful(stream, cfg.min_stateful_score))
    if cfg.dedup != "none":
        stream = counted("deduplication (exact copies)", dedup_exact(stream))
    if cfg.dedup == "near":
        stream = counted("deduplication (near copies)", dedup_near(stream, threshold=cfg.near_threshold))
    if cfg.sample is not None:
        return sample(stream, cfg.sample, seed=cfg.seed)
    return list(stream)
