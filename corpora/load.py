"""The single entry point: ``load_corpus(spec, **options)``.

Role: turn a corpus spec string (what the CLI and configs hold) into a
lazy stream of documents.

Contract — a spec is one of:

* a registered loader name that needs no source: ``"stdlib"``;
* ``"<loader>:<source>"`` for any registered loader: ``"hf:bigcode/the-stack-smol"``,
  ``"hf:/data/saved"``, ``"jsonl:/data/dump.txt"``, ``"tree:./src"``;
* a filesystem path: a directory is a ``tree`` (or ``hf`` when it has the layout
  ``save_to_disk`` writes: ``state.json`` and ``dataset_info.json`` with ``.arrow``
  files, or ``dataset_dict.json``; ``tree:PATH`` reads any directory as a tree);
  ``*.jsonl``, ``*.ndjson`` and their ``.gz`` forms are ``jsonl``; ``*.parquet``
  is ``parquet``.

``options`` are the loader's config fields (``text_field="text"``,
``include=("*.py",)``, ...). The spec and options are validated eagerly —
``load_corpus`` raises :class:`~corpora.errors.CorpusError` (with
suggestions for typos) before returning — while documents are read lazily
as the returned iterator advances.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from corpora.document import Document
from corpora.errors import CorpusError, UnknownNameError, did_you_mean
from corpora.loaders.hf import is_saved_dataset
from corpora.loaders.jsonl import JSONL_SUFFIXES, is_jsonl_path
from corpora.loaders.registry import get_loader, loader_config, loader_names

__all__ = ["load_corpus", "resolve_spec"]

_PREFIX_RE = re.compile(r"^([a-z][a-z0-9_-]+):(.*)$", re.DOTALL)


def _resolve_path(spec: str) -> tuple[str, str]:
    path = Path(spec).expanduser()
    if path.is_dir():
        return ("hf" if is_saved_dataset(path) else "tree"), spec
    if is_jsonl_path(path):
        return "jsonl", spec
    if path.name.lower().endswith(".parquet"):
        return "parquet", spec
    raise CorpusError(
        f"cannot tell how to load file {spec!r}: use a directory, a file ending in "
        f"{', '.join(JSONL_SUFFIXES)} or .parquet, or prefix a loader name ('jsonl:{spec}')"
    )


def resolve_spec(spec: str) -> tuple[str, str | None]:
    """Return ``(loader name, source or None)`` for a corpus spec.

    Raises:
        UnknownNameError: the spec is neither a loader, a ``loader:`` prefix
            nor an existing path (with a close-match suggestion).
        CorpusError: an existing file has a suffix no loader claims.
    """
    if not spec or not spec.strip():
        raise CorpusError("corpus spec is empty; use 'stdlib', a path, or 'hf:NAME'")
    names = loader_names()
    if spec in names:
        return spec, None
    match = _PREFIX_RE.match(spec)
    if match and match.group(1) in names:
        source = match.group(2)
        if not source:
            raise CorpusError(f"corpus spec {spec!r} has an empty source after '{match.group(1)}:'")
        return match.group(1), source
    try:
        if Path(spec).expanduser().exists():
            return _resolve_path(spec)
    except PermissionError as exc:  # a folder on the way cannot be searched
        raise CorpusError(f"corpus path {spec!r} cannot be read ({exc.strerror}); fix its permissions (and "
                          "those of the folders above it), or give another corpus") from None
    if match:
        raise UnknownNameError(
            f"corpus spec {spec!r}: unknown loader {match.group(1)!r}{did_you_mean(match.group(1), names)} "
            f"(registered: {', '.join(names)})"
        )
    raise UnknownNameError(
        f"corpus spec {spec!r} is neither a registered loader nor an existing path{did_you_mean(spec, names)} "
        f"(loaders: {', '.join(names)}; or 'hf:NAME', or a directory / .jsonl / .parquet path)"
    )


def load_corpus(spec: str, *, limit: int | None = None, **options: Any) -> Iterator[Document]:
    """Load the corpus ``spec`` lazily.

    Args:
        spec: ``"stdlib"``, a path, or ``"<loader>:<source>"`` (see the module docstring).
        limit: Stop after this many documents (``None``: all).
        **options: Fields of the loader's config (see ``corpora.loader_names()``
            and each loader's ``*Config``).

    Returns:
        An iterator of documents, in the loader's deterministic order.

    Raises:
        CorpusError: the spec or an option is invalid (raised here, before iteration).
    """
    if limit is not None and limit < 0:
        raise CorpusError(f"limit must be >= 0 or None, got {limit}")
    name, source = resolve_spec(spec)
    entry = get_loader(name)
    config = loader_config(entry, source, options)
    docs = iter(entry.fn(config))
    return docs if limit is None else itertools.islice(docs, limit)
