"""The host's reads of a state's content: column names, row counts, the columns holding a text, dumps, and whether
a table's rows come in an order its content decides.

:class:`ContentReads` is a mixin of :class:`~gym_envs.sandbox.db.StateDB` built on two of its methods only,
``host`` (a trusted statement) and ``tables`` (the schema's tables). Every read names the ``main`` database, so
a schema table named like one of the host's own temporary tables is read, never the host's table.
"""

from __future__ import annotations

from itertools import chain
from typing import Any

from gym_envs.sandbox.sqlpolicy import quote_identifier

__all__ = ["ContentReads", "Holding", "holding_answer"]


class ContentReads:
    """Reads of the content through :meth:`host` and :meth:`tables` (which the class using it defines)."""

    def host(self, sql: str, params: Any = ()) -> list[tuple[Any, ...]]:
        """A trusted statement's rows."""
        raise NotImplementedError

    def tables(self) -> list[str]:
        """The schema's tables, by name."""
        raise NotImplementedError

    def columns(self, table: str) -> list[str]:
        """The column names of ``table``."""
        return [r[1] for r in self.host("SELECT * FROM pragma_table_info(?, 'main')", (table,))]

    def row_counts(self) -> dict[str, int]:
        """Rows per table."""
        return {t: self.host(f"SELECT count(*) FROM main.{quote_identifier(t)}")[0][0] for t in self.tables()}

    def columns_holding(self, text: str, limit: int) -> list[tuple[str, list[str]]]:
        """``("table.column", its distinct string values)`` for each column with a string value equal to
        ``text`` (ignoring case and surrounding space), else for each with a value that contains it, read from
        the first ``limit`` rows of each table (:func:`holding_answer` of each table's :meth:`table_holding`)."""
        return holding_answer([self.table_holding(t, text, limit) for t in self.tables()])

    def table_holding(self, table: str, text: str, limit: int, rows: list[tuple[Any, ...]] | None = None) -> Holding:
        """``(equal, within)`` of one table, read from its first ``limit`` rows (of ``rows``, its rows in a full scan's
        order, when the caller has them): ``("table.column", its distinct string values)`` for each column with a
        string value equal to ``text`` (ignoring case and surrounding space), and for each other column with a value
        that contains it."""
        want = text.strip().lower()
        equal: list[tuple[str, list[str]]] = []
        within: list[tuple[str, list[str]]] = []
        if rows is None:
            rows = self.host(f"SELECT * FROM main.{quote_identifier(table)} LIMIT ?", (limit,))
        elif len(rows) > limit:
            rows = rows[:limit]
        for i, column in enumerate(zip(*rows, strict=True)):  # (SQLite's rows: each text a str)
            values = [v for v in column if isinstance(v, str)]
            lows = list(map(str.lower, map(str.strip, values)))
            if want in lows:
                equal.append((f"{table}.{self.columns(table)[i]}", list(dict.fromkeys(values))))
            elif want and any(want in v for v in lows):
                within.append((f"{table}.{self.columns(table)[i]}", list(dict.fromkeys(values))))
        return equal, within

    def dump(self, tables: list[str] | None, limit: int) -> dict[str, Any]:
        """Columns, row count and up to ``limit`` rows of each table (or of ``tables``), as plain JSON: SQLite's
        values as they are, but a blob as its ``repr`` text (what ``json.dumps(..., default=repr)`` makes of it).
        The rows are a full scan's first ones, in its order."""
        known = self.tables()
        out = {}
        for t in tables or known:
            if t in known:
                q = quote_identifier(t)
                rows = self.host(f"SELECT * FROM main.{q} LIMIT ?", (limit,))
                count = self.host(f"SELECT count(*) FROM main.{q}")[0][0]
                out[t] = {"columns": self.columns(t), "rows": _plain_rows(rows), "count": count}
        return out

    def dump_rows(self, table: str, rows: list[tuple[Any, ...]], limit: int) -> dict[str, Any]:
        """``dump([table], limit)[table]`` made from ``rows``, the table's rows now in a full scan's order."""
        return {"columns": self.columns(table), "rows": _plain_rows(rows[:limit]), "count": len(rows)}

    def ordered(self, table: str) -> bool:
        """Whether a full scan of ``table`` comes in an order its content decides: by its primary key in a ``WITHOUT
        ROWID`` table, by its rowid where a column is the rowid (one ``INTEGER PRIMARY KEY`` column that SQLite
        gives no index of its own, as it does to ``INTEGER PRIMARY KEY DESC``). Elsewhere the rowid is hidden: the
        same rows may come in another order."""
        listed = self.host("SELECT wr FROM pragma_table_list WHERE schema = 'main' AND name = ?", (table,))
        if not listed:
            return False
        if listed[0][0]:
            return True
        keys = self.host("SELECT type FROM pragma_table_info(?, 'main') WHERE pk > 0", (table,))
        own = self.host("SELECT 1 FROM pragma_index_list(?, 'main') WHERE origin = 'pk'", (table,))
        return len(keys) == 1 and str(keys[0][0]).upper() == "INTEGER" and not own


#: one table's columns holding a text: ``(equal, within)``, each a list of ``("table.column", distinct strings)``
Holding = tuple[list[tuple[str, list[str]]], list[tuple[str, list[str]]]]


def holding_answer(parts: list[Holding]) -> list[tuple[str, list[str]]]:
    """The columns holding a text in a state, from each table's :meth:`ContentReads.table_holding` (in table order):
    those with a value equal to it, else those with a value that contains it."""
    equal = [c for found, _ in parts for c in found]
    return equal or [c for _, found in parts for c in found]


def _plain_rows(rows: list[tuple[Any, ...]]) -> list[list[Any]]:
    """Rows' values as ``json.loads(json.dumps(row, default=repr))`` gives them, without the round trip: SQLite gives
    None, int, float, str or bytes, and only a blob (bytes) changes, to its ``repr`` text."""
    if bytes not in set(map(type, chain.from_iterable(rows))):
        return list(map(list, rows))
    return [[repr(v) if v.__class__ is bytes else v for v in row] for row in rows]
