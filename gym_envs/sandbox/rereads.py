"""Reading a table's digest again after updates of known columns: the same digest a full read gives, from a
read of those columns only.

Contract: :func:`reread` gives ``(digest, rows)`` of a table now, where ``rows`` are the rows a full scan
(``SELECT *``) gives now, in its order, or None when it cannot be sure of them (the caller then reads the whole
table). It is given a :class:`~gym_envs.sandbox.digests.Base` of the table (a content the table had, known by its
digest, from which its content now differs at most in the values of some columns and by rows deleted, as the
digest cache keeps it) and the rows a full read of that content gave (:data:`~gym_envs.sandbox.digests.ROWS_READ`).

Why it is exact. It is used only for a table whose full scan comes in rowid order and whose rowid is a column
(:func:`layout`: one ``INTEGER PRIMARY KEY`` column that SQLite gives no index of its own, no generated or hidden
column, a ``SELECT *`` that SQLite plans as a scan of the table itself), and only when the base's rows are in that
column's order (ints, strictly increasing). The columns that may have changed are known by name, none of them the
rowid (an ``UPDATE`` of the rowid is named ``ROWID`` or by the key column, and a name that is no column of the table
sends the caller to a full read). So no row was inserted, none changed its rowid, and each row now is the row of the
base with the same rowid, but for those columns; rows may have gone (a ``REPLACE`` conflict deletes the rows in its
way), and the count says whether any did (the rows now are a subset of the base's). Those columns are read in rowid
order (``ORDER BY rowid``), so the n-th value belongs to the base's n-th row; a row whose values are not exactly the
base's (same type and ``repr``: ``1`` and ``1.0`` differ, as do ``0.0`` and ``-0.0``) is made again from the base's
row with the new values, and the digest is :func:`~gym_envs.sandbox.digests.read_digest` of the rows so made, which
are the rows a full scan gives.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Callable
from itertools import chain, compress, count
from operator import itemgetter, ne
from typing import Any, NamedTuple

from gym_envs.sandbox.digests import (
    EXACT_VALUES,
    ROWS_READ,
    Base,
    Kept,
    float_columns,
    fold,
    sorted_texts,
    texts_digest,
)
from gym_envs.sandbox.sqlpolicy import quote_identifier

__all__ = ["Layout", "TableReads", "layout", "reread"]

#: runs a trusted statement with its parameters and gives its rows (the host's)
Execute = Callable[[str, tuple[Any, ...]], list[tuple[Any, ...]]]


class Layout(NamedTuple):
    """What :func:`reread` needs of a table's schema."""

    quoted: str  #: the table's name as an identifier
    key: int  #: the index, in a ``SELECT *``'s order, of the column that is the rowid
    order: str  #: that column's name, quoted
    columns: dict[str, tuple[int, str]]  #: folded column name -> (its index in a ``SELECT *``, itself quoted)
    unsure: tuple[int, ...]  #: the indexes of the columns that may hold a float (:func:`~.digests.float_columns`)


def layout(execute: Execute, table: str, xinfo: list[tuple[Any, ...]], unsure: tuple[int, ...]) -> Layout | None:
    """The :class:`Layout` of ``table`` (its ``PRAGMA table_xinfo`` rows ``xinfo``), or None when :func:`reread`
    cannot be sure of it (see the module docstring)."""
    if any(row[6] for row in xinfo):  # a generated column (its value follows other columns) or a hidden one
        return None
    keys = [i for i, row in enumerate(xinfo) if row[5]]
    if len(keys) != 1 or str(xinfo[keys[0]][2]).upper() != "INTEGER":
        return None
    quoted = quote_identifier(table)  # PRAGMA statements, not table-valued functions (see StateDB.load_image)
    listed = execute(f"PRAGMA main.table_list({quoted})", ())  # schema, name, type, ncol, wr, strict
    if len(listed) != 1 or listed[0][2] != "table" or listed[0][4]:  # a view, a virtual table, WITHOUT ROWID
        return None
    if any(row[3] == "pk" for row in execute(f"PRAGMA main.index_list({quoted})", ())):
        return None  # INTEGER PRIMARY KEY DESC: a key of its own, not the rowid
    plan = execute(f"EXPLAIN QUERY PLAN SELECT * FROM main.{quoted}", ())
    if len(plan) != 1 or "INDEX" in str(plan[0][-1]).upper():  # not a scan of the table's own b-tree
        return None
    columns = {fold(str(row[1])): (i, quote_identifier(str(row[1]))) for i, row in enumerate(xinfo)}
    return Layout(quoted, keys[0], quote_identifier(str(xinfo[keys[0]][1])), columns, unsure)


def reread(execute: Execute, shape: Layout, base: Base, kept: Kept) -> tuple[str, Kept] | None:
    """``(digest, kept)`` of the table now (:class:`~gym_envs.sandbox.digests.Kept`: its rows as a full scan gives
    them, and their texts), from ``base`` and ``kept`` (what a full read of the base's content gave), reading only
    the base's columns; None when that cannot be sure (see the module docstring)."""
    rows = kept.rows
    if not base.columns or not rows:
        return None
    at: list[int] = []
    names: list[str] = []
    for name in base.columns:
        spot = shape.columns.get(name)
        if spot is None or spot[0] == shape.key:  # ROWID, or the key column: rows may have moved
            return None
        at.append(spot[0])
        names.append(spot[1])
    if shape.key not in kept.keyed:
        keys = list(map(itemgetter(shape.key), rows))
        if set(map(type, keys)) != {int} or not all(map(int.__lt__, keys, keys[1:])):
            return None
        kept.keyed.add(shape.key)
    fetched = execute(f"SELECT {', '.join(names)} FROM main.{shape.quoted} ORDER BY {shape.order}", ())
    if len(fetched) != len(rows):
        return None
    if len(at) == 1:
        new: list[Any] = [v for (v,) in fetched]
        old = list(map(itemgetter(at[0]), rows))
        exact = at[0] not in shape.unsure or EXACT_VALUES.issuperset(set(map(type, new)) | set(map(type, old)))
    else:
        new, old = fetched, list(map(itemgetter(*at), rows))
        exact = EXACT_VALUES.issuperset(set(map(type, chain.from_iterable(new))) |
                                        set(map(type, chain.from_iterable(old))))
    if exact:  # equal values of these types are equal exactly (and have one repr); the counts are equal (above)
        changed = list(compress(count(), map(ne, new, old)))
    else:
        changed = [i for i, (a, b) in enumerate(zip(new, old, strict=True)) if a != b or repr(a) != repr(b)]
    if not changed:
        return base.digest, kept
    out, texts = list(rows), list(kept.texts)
    for i in changed:
        row = list(rows[i])
        for j, k in enumerate(at):
            row[k] = fetched[i][j]
        out[i] = tuple(row)
        was = repr(rows[i])
        where = bisect_left(texts, was)
        if where == len(texts) or texts[where] != was:  # not the texts of these rows: read it whole
            return None
        del texts[where]
        insort(texts, repr(out[i]))
    return texts_digest(texts), Kept(out, texts, (shape.key,))


class TableReads:
    """One connection's reads of a table for its digest: of the columns that may differ from a :class:`Base` where
    :func:`reread` can be sure of them, else of every row; what each read gives is kept in
    :data:`~gym_envs.sandbox.digests.ROWS_READ`. What each table's schema allows is kept until :meth:`clear` (the
    schema may have changed)."""

    def __init__(self, execute: Execute):
        self.execute = execute
        self.unsure: dict[str, tuple[int, ...]] = {}  #: table -> its columns that may hold floats (float_columns)
        self.layouts: dict[str, Layout | None] = {}  #: table -> its :class:`Layout` (made when first needed)

    def clear(self) -> None:
        """Forget what the schema allowed."""
        self.unsure, self.layouts = {}, {}

    def read(self, table: str, base: Base | None) -> str:
        """The digest of ``table`` now, from the columns that may differ from ``base`` (None: unknown) where
        :func:`reread` can be sure of it, else from every row."""
        quoted = quote_identifier(table)
        if (unsure := self.unsure.get(table)) is None:
            unsure = self.unsure[table] = float_columns(self.execute(f"PRAGMA main.table_xinfo({quoted})", ()))
        if base is not None and base.columns and (kept := ROWS_READ.kept(base.digest)) is not None:
            if table not in self.layouts:
                xinfo = self.execute(f"PRAGMA main.table_xinfo({quoted})", ())
                self.layouts[table] = layout(self.execute, table, xinfo, unsure)
            shape = self.layouts[table]
            if shape is not None and (got := reread(self.execute, shape, base, kept)) is not None:
                digest, now = got
                if now is not kept:
                    ROWS_READ.keep(digest, now.rows, now.texts, now.keyed)
                return digest
        rows = self.execute(f"SELECT * FROM main.{quoted}", ())
        texts = sorted_texts(rows, unsure=unsure)
        digest = texts_digest(texts)
        ROWS_READ.keep(digest, rows, texts)
        return digest
