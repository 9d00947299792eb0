"""Load JSONL files (one JSON object per line), optionally gzipped.

Role: read exported corpora such as The Stack's JSONL dumps.

Contract:

* ``path`` is a ``.jsonl``/``.ndjson`` file, the same with ``.gz``, or a
  directory whose such files are read in sorted order (recursively).
* Blank lines are skipped; a line that is not a JSON object, or whose bytes
  are not text in ``encoding``, raises :class:`~corpora.errors.CorpusError`
  naming the file and line (and the ``encoding`` option); a ``.gz`` file that
  is not gzip data (or is cut short) raises one naming the file.
* Fields map to documents as in :mod:`corpora.loaders.records`; locations in
  errors are ``"<file>:<line>"``.
* The corpus name (id prefix) defaults to the file name without its
  suffixes (or the directory's name).
"""

from __future__ import annotations

import codecs
import gzip
import json
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, TextIO

from corpora.document import Document
from corpora.errors import CorpusError, option_hint
from corpora.loaders.records import RecordFields, check_source_path, records_to_documents

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
        check_source_path(self.path, "JSONL")
        if self.path.is_dir() and not _files(self.path):
            raise CorpusError(f"directory {str(self.path)!r} has no {'/'.join(JSONL_SUFFIXES)} files")
        try:
            codecs.lookup(self.encoding)
        except LookupError:
            raise CorpusError(f"unknown text encoding {self.encoding!r}; give one Python knows with "
                              f"{option_hint('encoding', 'utf-8')}") from None
        if self.corpus is None:
            self.corpus = _stem(self.path) or "jsonl"


def _open(path: Path, encoding: str) -> TextIO:
    if path.name.lower().endswith(".gz"):
        return gzip.open(path, "rt", encoding=encoding)
    return path.open(encoding=encoding)


def _first_undecodable_line(path: Path, encoding: str) -> int | None:
    """The number of the first line of ``path`` whose bytes do not decode (None: none found)."""
    try:
        with gzip.open(path, "rb") if path.name.lower().endswith(".gz") else path.open("rb") as raw:
            for line_no, line in enumerate(raw, start=1):
                try:
                    line.decode(encoding)
                except UnicodeDecodeError:
                    return line_no
    except (OSError, EOFError, zlib.error):
        return None
    return None


def _undecodable(path: Path, encoding: str, exc: UnicodeDecodeError) -> CorpusError:
    line_no = _first_undecodable_line(path, encoding)
    where = f"{path}:{line_no}" if line_no is not None else str(path)
    byte = exc.object[exc.start:exc.start + 1].hex() if exc.start < len(exc.object) else "?"
    return CorpusError(
        f"{where}: not {encoding} text (byte 0x{byte}: {exc.reason}); give the file's encoding with "
        f"{option_hint('encoding', 'cp1252')} (or latin-1, utf-16, ...), or convert the file to {encoding}"
    )


def _file_records(path: Path, encoding: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    with _open(path, encoding) as handle:
        for line_no, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            where = f"{path}:{line_no}"
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise CorpusError(f"{where}: invalid JSON ({exc.msg} at column {exc.colno})") from None
            yield where, record


def _records(files: list[Path], encoding: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for file in files:
        try:
            yield from _file_records(file, encoding)
        except UnicodeDecodeError as exc:
            raise _undecodable(file, encoding, exc) from None
        except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
            raise CorpusError(
                f"{file}: not a valid gzip file ({exc}); a name ending in .gz must hold gzip-compressed JSONL: "
                "re-compress it, or if it is plain JSONL, rename it without the .gz"
            ) from None
        except OSError as exc:
            raise CorpusError(f"{file}: cannot be read ({exc.strerror or exc}); check that it exists and that "
                              "you may read it") from None


def load_jsonl(config: JsonlConfig) -> Iterator[Document]:
    """Yield one document per JSONL record, in file and line order."""
    files = _files(Path(config.path))
    yield from records_to_documents(_records(files, config.encoding), config, str(config.corpus))
