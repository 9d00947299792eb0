"""corpora: documents from code corpora, for the environment generator.

Role: load source documents (a source tree, JSONL, Parquet, a Hugging Face
dataset, the Python standard library — the offline default), filter them,
remove duplicates, sample them by seed, score how much they define stateful
operations and excerpt them to a token budget.

Contract: this package imports nothing from the other envwright packages.
Loaders are registered by short name (:func:`register_loader`) and reached
through :func:`load_corpus`; every result is deterministic for the same
source, options and seed. Importing the package imports no loader's
dependencies: the built-in loaders are ``"module:attr"`` entry points
(:mod:`corpora.builtin`), imported when first used.

The base layer of the project lives here: :mod:`corpora.registry` (:class:`Registry`, the one
registry implementation every package builds its registries with) and :mod:`corpora.errors`
(:func:`~corpora.errors.did_you_mean`, the one "did you mean") import only the standard library,
and ``gym_envs`` and the packages above may import them.

Quick start::

    from corpora import load_corpus, select_documents, SelectConfig, excerpt

    docs = select_documents(load_corpus("stdlib"), SelectConfig(min_stateful_score=0.0, sample=20, seed=1))
    prompt_text = excerpt(docs[0], 1500)
"""

from __future__ import annotations

from corpora.analysis import (
    ClassProfile,
    ModuleProfile,
    analyze,
    identifiers,
    stateful_classes,
    stateful_score,
)
from corpora.dedup import MinHasher, NearDuplicateIndex, dedup_exact, dedup_near, shingle_jaccard
from corpora.document import Document, TokenCounter, approx_tokens, make_id, text_sha256
from corpora.errors import CorpusError, MissingDependencyError, RecordFieldError, UnknownNameError
from corpora.excerpt import Excerpt, excerpt, excerpt_parts, truncate_text
from corpora.filters import filter_language, filter_size, filter_stateful, where
from corpora.languages import language_from_path, normalize_language
from corpora.load import load_corpus, resolve_spec
from corpora.loaders.hf import HFConfig
from corpora.loaders.jsonl import JsonlConfig
from corpora.loaders.parquet import ParquetConfig
from corpora.loaders.records import RecordFields
from corpora.loaders.registry import LoaderEntry, LoaderOptions, get_loader, loader_names, register_loader
from corpora.loaders.stdlib import StdlibConfig
from corpora.loaders.tree import TreeConfig
from corpora.pipeline import SelectConfig, select_documents
from corpora.registry import Registry
from corpora.sampling import keep_fraction, rank, sample, shuffle
from corpora.similarity import jaccard, text_similarity, word_shingles
from corpora.verbs import method_category, snake_case

__all__ = [
    "ClassProfile",
    "CorpusError",
    "Document",
    "Excerpt",
    "HFConfig",
    "JsonlConfig",
    "LoaderEntry",
    "LoaderOptions",
    "MinHasher",
    "MissingDependencyError",
    "ModuleProfile",
    "NearDuplicateIndex",
    "ParquetConfig",
    "RecordFieldError",
    "RecordFields",
    "Registry",
    "SelectConfig",
    "StdlibConfig",
    "TokenCounter",
    "TreeConfig",
    "UnknownNameError",
    "analyze",
    "approx_tokens",
    "dedup_exact",
    "dedup_near",
    "excerpt",
    "excerpt_parts",
    "filter_language",
    "filter_size",
    "filter_stateful",
    "get_loader",
    "identifiers",
    "jaccard",
    "keep_fraction",
    "language_from_path",
    "load_corpus",
    "loader_names",
    "make_id",
    "method_category",
    "normalize_language",
    "rank",
    "register_loader",
    "resolve_spec",
    "sample",
    "select_documents",
    "shingle_jaccard",
    "shuffle",
    "snake_case",
    "stateful_classes",
    "stateful_score",
    "text_sha256",
    "text_similarity",
    "truncate_text",
    "where",
    "word_shingles",
]
