"""Relational tables for τ²'s databases: declarations, SQL text, table digests and per-task setup statements.

Role: the part of the conversion that every domain shares. A domain (:mod:`eval.tau2.retail`, ...) declares its
tables (:class:`Table`) and maps τ²'s ``model_dump()`` to rows and back; this module writes the ``CREATE TABLE``
and ``INSERT`` text of a spec's ``state``, computes a table's digest exactly as the runtime does
(gym_envs/ENVSPEC.md, "Table digests") without building a database, and writes the statements that turn one
set of rows into another (a task's ``setup_sql``).

Contract:

- A column is ``TEXT``, ``INTEGER`` or untyped (``""``). An untyped column has no SQLite affinity, so it keeps
  a value exactly as written: τ²'s float fields are untyped because τ²'s models may hold an ``int`` there after an
  assignment (``exchange_price_difference = 0``) and its hash tells ``0`` from ``0.0``.
- Row values are ``None``, ``int``, ``float`` or ``str`` (a ``bool`` must be written as ``0``/``1``): what SQLite
  hands back for them is the same value, so :func:`table_digest` of the rows equals the runtime's digest of the
  table they fill (a test checks it on every domain's database).
- :func:`insert_sql` keeps each statement under the sandbox's statement length (20,000 characters).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gym_envs.sandbox.sqlpolicy import quote_identifier

__all__ = ["ADDRESS_KEYS", "MAX_STATEMENT_CHARS", "NUMBER", "Column", "Rows", "Table", "check_rows", "digests",
           "grouped", "insert_sql", "literal", "schema_sql", "seed_sql", "setup_statements", "table_digest"]

MAX_STATEMENT_CHARS = 19_000  #: under the sandbox's 20,000-character limit on one statement

Rows = dict[str, list[tuple[Any, ...]]]  #: table name -> its rows, each a tuple in column order

#: the fields of τ²'s ``address`` records (users and orders), in their order; also spliced into the tool code
ADDRESS_KEYS = ("address1", "address2", "city", "country", "state", "zip")
NUMBER = "a number as τ² holds it (int or float)"  #: the comment of an untyped column holding one of τ²'s numbers


@dataclass(frozen=True)
class Column:
    """One column: its name, its declared type (``TEXT``, ``INTEGER`` or ``""``: none) and a comment."""

    name: str
    type: str = "TEXT"
    null: bool = False
    comment: str = ""


@dataclass(frozen=True)
class Table:
    """One table: its columns and primary key, with what it holds of τ²'s database."""

    name: str
    columns: tuple[Column, ...]
    key: tuple[str, ...]
    doc: str = ""

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def ddl(self) -> str:
        """The ``CREATE TABLE`` statement (each column's comment after it)."""
        parts = [f"{c.name}{' ' + c.type if c.type else ''}{'' if c.null else ' NOT NULL'}" for c in self.columns]
        parts.append(f"PRIMARY KEY ({', '.join(self.key)})")
        comments = [c.comment for c in self.columns] + [""]
        lines = [f"  {p}{',' if i < len(parts) - 1 else ''}" + (f"  -- {cm}" if cm else "")
                 for i, (p, cm) in enumerate(zip(parts, comments, strict=True))]
        head = f"-- {self.doc}\n" if self.doc else ""
        return f"{head}CREATE TABLE {self.name} (\n" + "\n".join(lines) + "\n);"


def literal(value: Any) -> str:
    """``value`` as an SQL literal that SQLite reads back as the same Python value."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        raise TypeError("a bool must be written as 0 or 1 (SQLite has no booleans)")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        text = repr(value)
        if text in ("inf", "-inf", "nan"):
            raise ValueError(f"{text} has no SQL literal")
        return text if any(c in text for c in ".e") else text + ".0"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    raise TypeError(f"no SQL literal for a {type(value).__name__}")


def schema_sql(tables: Sequence[Table]) -> str:
    """The ``schema_sql`` of a spec holding ``tables``."""
    return "\n\n".join(t.ddl() for t in tables) + "\n"


def insert_sql(table: Table, rows: Iterable[Sequence[Any]]) -> list[str]:
    """``INSERT`` statements that add ``rows`` to ``table``, several rows each, each under
    :data:`MAX_STATEMENT_CHARS` characters."""
    head = f"INSERT INTO {table.name} ({', '.join(table.names)}) VALUES\n"
    out: list[str] = []
    batch: list[str] = []
    size = len(head)
    for row in rows:
        text = "(" + ", ".join(literal(v) for v in row) + ")"
        if batch and size + len(text) + 2 > MAX_STATEMENT_CHARS:
            out.append(head + ",\n".join(batch) + ";")
            batch, size = [], len(head)
        if len(head) + len(text) + 1 > MAX_STATEMENT_CHARS:
            raise ValueError(f"a row of {table.name} is too long for one statement ({len(text)} characters)")
        batch.append(text)
        size += len(text) + 2
    if batch:
        out.append(head + ",\n".join(batch) + ";")
    return out


def seed_sql(tables: Sequence[Table], rows: Rows) -> str:
    """The ``seed_sql`` of a spec whose tables hold ``rows``."""
    return "\n".join(s for t in tables for s in insert_sql(t, rows.get(t.name, ())))


def table_digest(rows: Iterable[Sequence[Any]]) -> str:
    """The digest of a table holding ``rows`` (gym_envs/ENVSPEC.md, "Table digests"), as the runtime computes it
    from the rows SQLite returns (each row's ``repr`` as a tuple, sorted, joined by newlines)."""
    texts = sorted(repr(tuple(r)) for r in rows)
    return hashlib.sha256("\n".join(texts).encode("utf-8", "surrogatepass")).hexdigest()


def digests(tables: Sequence[Table], rows: Rows) -> dict[str, str]:
    """Each table's digest (every table, an empty one included)."""
    return {t.name: table_digest(rows.get(t.name, ())) for t in tables}


def grouped(rows: Iterable[tuple[Any, ...]], pos: int) -> dict[Any, list[tuple[Any, ...]]]:
    """Rows by their first value (a parent's key), each group in the order of column ``pos``."""
    out: dict[Any, list[tuple[Any, ...]]] = {}
    for r in sorted(rows, key=lambda r: (r[0], r[pos])):
        out.setdefault(r[0], []).append(r)
    return out


def _where(table: Table, row: Sequence[Any]) -> str:
    values = dict(zip(table.names, row, strict=True))
    return " AND ".join(f"{quote_identifier(k)} = {literal(values[k])}" for k in table.key)


def setup_statements(tables: Sequence[Table], base: Rows, target: Rows) -> list[str]:
    """Statements that turn tables holding ``base`` into tables holding ``target``: per table, a ``DELETE`` of
    each row (by key) that is not in ``target`` and an ``INSERT`` of each row that is not in ``base``."""
    out: list[str] = []
    for t in tables:
        old, new = set(base.get(t.name, ())), set(target.get(t.name, ()))
        gone = [r for r in base.get(t.name, ()) if r not in new]
        came = [r for r in target.get(t.name, ()) if r not in old]
        out += [f"DELETE FROM {t.name} WHERE {_where(t, r)}" for r in gone]
        out += insert_sql(t, came)
    return out


def check_rows(tables: Sequence[Table], rows: Mapping[str, Sequence[Sequence[Any]]]) -> None:
    """Raise ``ValueError`` when ``rows`` does not fit ``tables``: an unknown table, a row of the wrong width, a
    value SQLite would not give back unchanged, or two rows with one key."""
    known = {t.name: t for t in tables}
    for name, table_rows in rows.items():
        if name not in known:
            raise ValueError(f"rows for an unknown table {name!r}")
        t = known[name]
        keys = set()
        for r in table_rows:
            if len(r) != len(t.columns):
                raise ValueError(f"{name}: a row of {len(r)} values for {len(t.columns)} columns: {r!r}")
            for c, v in zip(t.columns, r, strict=True):
                bad = (isinstance(v, bool) or (v is None and not c.null)
                       or (c.type == "TEXT" and v is not None and not isinstance(v, str))
                       or (c.type == "INTEGER" and v is not None and not isinstance(v, int)))
                if bad or not isinstance(v, str | int | float | type(None)):
                    raise ValueError(f"{name}.{c.name}: {v!r} does not fit a {c.type or 'untyped'} column")
            key = tuple(v for c, v in zip(t.columns, r, strict=True) if c.name in t.key)
            if key in keys:
                raise ValueError(f"{name}: two rows with the key {key!r}")
            keys.add(key)
