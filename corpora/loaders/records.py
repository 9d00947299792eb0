"""Turn tabular records (JSONL lines, Parquet rows, dataset rows) into documents.

Role: the field mapping shared by the ``jsonl``, ``parquet`` and ``hf``
loaders, with The Stack's column names as defaults (``content``, ``path``,
``lang``).

Contract:

* ``text_field`` must be present and hold a string in every record.
* ``path_field`` (unless ``None``) must be present; a null or empty value, or
  ``path_field=None``, gives the path ``"record-<n>"`` (``n`` counts records
  from 0 across the whole source).
* ``language_field`` (unless ``None``) must be present; a null or empty value,
  or ``language_field=None``, infers the language from the path's extension.
* ``id_field`` (optional) names a column whose value replaces the path in
  the id; ``metadata_fields`` (``None`` = every other column) are copied into
  ``Document.metadata``; a listed one must be present.
* A configured field missing from a record raises
  :class:`~corpora.errors.RecordFieldError` naming the field, the record's
  location and the keys it has, and the option to change.
* Ids are ``"<corpus>:<path or id value>"``; a repeated id gets ``"@<n>"``
  appended, so ids are unique within a source and stable across runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from corpora.document import Document, make_id
from corpora.errors import CorpusError, RecordFieldError, option_hint
from corpora.languages import language_from_path, normalize_language

__all__ = ["RecordFields", "check_source_path", "records_to_documents"]


@dataclass(kw_only=True)
class RecordFields:
    """Which record fields hold a document's parts (The Stack's names by default).

    Attributes:
        text_field: The field holding the text.
        path_field: The field holding the file path; ``None`` numbers records instead.
        language_field: The field holding the language label; ``None`` infers
            it from the path's extension.
        id_field: A field whose value identifies the record (replaces the path in the id).
        metadata_fields: Fields copied into ``metadata``; ``None`` copies every
            field not used above.
        corpus: The id prefix; each loader has its default (the file or dataset name).
    """

    text_field: str = "content"
    path_field: str | None = "path"
    language_field: str | None = "lang"
    id_field: str | None = None
    metadata_fields: tuple[str, ...] | None = None
    corpus: str | None = None

    def check_fields(self) -> None:
        """Validate the field names; called by the loaders' configs."""
        if not self.text_field:
            raise CorpusError("text_field must name the record field that holds the text (e.g. 'content')")
        if isinstance(self.metadata_fields, str):
            self.metadata_fields = (self.metadata_fields,)
        elif self.metadata_fields is not None:
            self.metadata_fields = tuple(self.metadata_fields)
        if self.corpus is not None and (not self.corpus or ":" in self.corpus):
            raise CorpusError(f"corpus {self.corpus!r} must be non-empty and contain no ':'")

    def used_fields(self) -> tuple[str, ...]:
        """The fields the mapping reads (metadata included when listed)."""
        named = (self.text_field, self.path_field, self.language_field, self.id_field)
        return tuple(dict.fromkeys(f for f in (*named, *(self.metadata_fields or ())) if f))


def check_source_path(path: Path, kind: str) -> None:
    """Refuse a records path (``kind``: ``JSONL``, ``Parquet``) that does not exist, or that is neither a regular
    file nor a directory (a named pipe or a device would block or never end a read)."""
    if not path.exists():
        raise CorpusError(f"{kind} path {str(path)!r} does not exist")
    if not (path.is_dir() or path.is_file()):
        raise CorpusError(f"{kind} path {str(path)!r} is neither a regular file nor a directory "
                          "(a named pipe or a device is not read); pass a file or a directory of them")


def _missing(field: str, option: str, record: Mapping[str, Any], where: str) -> RecordFieldError:
    keys = ", ".join(sorted(map(str, record))) or "(none)"
    hint = f"set {option_hint(option, 'KEY')} to one of them" + (
        "" if option == "text_field" else f", or {option_hint(option, 'None')}")
    return RecordFieldError(
        f"{where}: record has no field {field!r} ({option}); available keys: {keys}; {hint}"
    )


def _get(record: Mapping[str, Any], field: str | None, option: str, where: str) -> Any:
    if field is None:
        return None
    if field not in record:
        raise _missing(field, option, record, where)
    return record[field]


def _metadata(record: Mapping[str, Any], fields: RecordFields, where: str) -> dict[str, Any]:
    if fields.metadata_fields is None:
        used = {fields.text_field, fields.path_field, fields.language_field, fields.id_field}
        return {str(k): v for k, v in record.items() if k not in used}
    return {f: _get(record, f, "metadata_fields", where) for f in fields.metadata_fields}


def records_to_documents(
    records: Iterable[tuple[str, Mapping[str, Any]]], fields: RecordFields, corpus: str
) -> Iterator[Document]:
    """Yield one document per ``(location, record)``; ``location`` is used in error messages."""
    seen: set[str] = set()
    for n, (where, record) in enumerate(records):
        if not isinstance(record, Mapping):
            raise CorpusError(f"{where}: expected a JSON object (mapping), got {type(record).__name__}")
        text = _get(record, fields.text_field, "text_field", where)
        if not isinstance(text, str):
            raise CorpusError(
                f"{where}: field {fields.text_field!r} holds {type(text).__name__}, expected a string; "
                f"set {option_hint('text_field', 'KEY')} to the field with the text"
            )
        path = _get(record, fields.path_field, "path_field", where)
        path = str(path).replace("\\", "/") if path not in (None, "") else f"record-{n}"
        label = _get(record, fields.language_field, "language_field", where)
        language = normalize_language(label) if label not in (None, "") else language_from_path(path)
        key = _get(record, fields.id_field, "id_field", where)
        doc_id = make_id(corpus, path if key in (None, "") else str(key))
        if doc_id in seen:
            doc_id = f"{doc_id}@{n}"
        seen.add(doc_id)
        yield Document(
            id=doc_id, path=path, language=language, text=text, metadata=_metadata(record, fields, where)
        )
