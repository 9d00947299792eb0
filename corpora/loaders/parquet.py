"""Load Parquet files (needs ``pyarrow``).

Role: read columnar corpora such as The Stack's Parquet shards
(``data/python/train-00000-of-00206.parquet``).

Contract:

* ``path`` is a ``.parquet`` file or a directory whose ``.parquet`` files are
  read in sorted order (recursively).
* Only the needed columns are read (all of them when ``metadata_fields`` is
  ``None``), in batches of ``batch_size`` rows, so memory stays bounded.
* A configured column missing from a file raises
  :class:`~corpora.errors.RecordFieldError` listing the file's columns,
  before any row is read; otherwise fields map as in
  :mod:`corpora.loaders.records`, with locations ``"<file>:row <n>"``.
* ``pyarrow`` is imported when loading starts; without it the config builds
  but loading raises :class:`~corpora.errors.MissingDependencyError`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from corpora.document import Document
from corpora.errors import CorpusError, MissingDependencyError, RecordFieldError, option_hint
from corpora.loaders.records import RecordFields, check_source_path, records_to_documents

__all__ = ["ParquetConfig", "load_parquet"]


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.rglob("*.parquet") if p.is_file())
    return [path]


@dataclass(kw_only=True)
class ParquetConfig(RecordFields):
    """Options of the ``parquet`` loader (plus the field options of :class:`RecordFields`).

    Attributes:
        path: A ``.parquet`` file or a directory of them.
        batch_size: Rows read at a time.
    """

    source_field: ClassVar[str | None] = "path"

    path: str | Path
    batch_size: int = 512

    def __post_init__(self) -> None:
        self.check_fields()
        self.path = Path(self.path).expanduser()
        check_source_path(self.path, "Parquet")
        if self.path.is_dir() and not _files(self.path):
            raise CorpusError(f"directory {str(self.path)!r} has no .parquet files")
        if self.batch_size <= 0:
            raise CorpusError(f"batch_size must be positive, got {self.batch_size}")
        if self.corpus is None:
            self.corpus = self.path.name.removesuffix(".parquet") or "parquet"


def _import_parquet() -> Any:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise MissingDependencyError("pyarrow", "the parquet corpus loader", extra="hf") from None
    return pq


def _rows(files: list[Path], config: ParquetConfig) -> Iterator[tuple[str, Mapping[str, Any]]]:
    pq = _import_parquet()
    for file in files:
        try:
            parquet = pq.ParquetFile(file)
        except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
            raise CorpusError(f"{file}: not a readable Parquet file ({exc}); check that it is complete, or "
                              "give the loader that reads it ('jsonl:PATH', 'tree:PATH')") from None
        names = list(parquet.schema_arrow.names)
        wanted = [f for f in config.used_fields() if f]
        for field in wanted:
            if field not in names:
                option = next((o for o in ("text_field", "path_field", "language_field", "id_field")
                               if getattr(config, o) == field), "metadata_fields")
                tail = "" if option in ("text_field", "metadata_fields") else f", or {option_hint(option, 'None')}"
                raise RecordFieldError(
                    f"{file}: no column {field!r} ({option}); available columns: {', '.join(names)}; "
                    f"set {option_hint(option, 'COLUMN')} to one of them{tail}"
                )
        columns = None if config.metadata_fields is None else wanted
        row = 0
        for batch in parquet.iter_batches(batch_size=config.batch_size, columns=columns):
            for record in batch.to_pylist():
                yield f"{file}:row {row}", record
                row += 1


def load_parquet(config: ParquetConfig) -> Iterator[Document]:
    """Yield one document per Parquet row, in file and row order."""
    files = _files(Path(config.path))
    yield from records_to_documents(_rows(files, config), config, str(config.corpus))
