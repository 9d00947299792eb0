"""Load JSONL files (one JSON object per line), optionally gzipped.

Role: read exported corpora such as The Stack's JSONL dumps.

Contract:

* ``path`` is a ``.jsonl``/``.ndjson`` file, the same with ``.gz``, or a
  directory whose such files are read in sorted order (recursively).
* Blank lines are skipped; a line that is not a JSON object raises
  :class:`~corpora.errors.CorpusError` naming the file and line.
* Fields map to documents as in :mod:`corpora.loaders.records`; locations in
  errors are ``"<file>:<line>"``.
* The corpus name (id prefix) defaults to the file name without its
  suffixes (or the directory's name).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, TextIO

from corpora.document import Document
from corpora.errors import CorpusError
from corpora.loaders.records import RecordFields, records_to_documents

__all__ = ["JSONL_SUFFIXES", "JsonlConfig", "is_jsonl_path", "load_jsonl"]

JSONL_SUFFIXES: tuple[str, ...] = (".jsonl", ".ndjson", ".jsonl.gz", ".ndjson.gz")
"""File name endings the ``jsonl`` loader reads."""


def is_jsonl_path(path: str | Path) -> bool:
    """Whether ``path``'s name ends with one of :data:`JSONL_SUFFIXES`."""
    return str(path).lower().endswith(JSONL_SUFFIXES)


def _stem(path: Path) -> str:
    name = path.name
    for suffix in sorted(JSONL_SUFFIXES, key=len, reverse=True):
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return name


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.is_file() and is_jsonl_path(p))
    return [path]


@dataclass(kw_only=True)
class JsonlConfig(RecordFields):
    """Options of the ``jsonl`` loader (plus the field options of :class:`RecordFields`).

    Attributes:
        path: A JSONL file (``.jsonl``, ``.jsonl.gz``, ...) or a directory of them.
        encoding: Text encoding of the files.
    """

    source_field: ClassVar[str | None] = "path"

    path: str | Path
    encoding: str = "utf-8"

    def __post_init__(self) -> None:
        self.check_fields()
        self.path = Path(self.path).expanduser()
        if not self.path.exists():
            raise CorpusError(f"JSONL path {str(self.path)!r} does not exist")
        if self.path.is_dir() and not _files(self.path):
            raise CorpusError(f"directory {str(self.path)!r} has no {'/'.join(JSONL_SUFFIXES)} files")
        if self.corpus is None:
            self.corpus = _stem(self.path) or "jsonl"


def _open(path: Path, encoding: str) -> TextIO:
    if path.name.lower().endswith(".gz"):
        return gzip.open(path, "rt", encoding=encoding)
    return path.open(encoding=encoding)


def _records(files: list[Path], encoding: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for file in files:
        with _open(file, encoding) as handle:
            for line_no, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                where = f"{file}:{line_no}"
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise CorpusError(f"{where}: invalid JSON ({exc.msg} at column {exc.colno})") from None
                yield where, record


def load_jsonl(config: JsonlConfig) -> Iterator[Document]:
    """Yield one document per JSONL record, in file and line order."""
    files = _files(Path(config.path))
    yield from records_to_documents(_records(files, config.encoding), config, str(config.corpus))
