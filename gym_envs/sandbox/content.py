"""The host's reads of a state's content: column names, row counts, the columns holding a text, and dumps.

:class:`ContentReads` is a mixin of :class:`~gym_envs.sandbox.db.StateDB` built on two of its methods only,
``host`` (a trusted statement) and ``tables`` (the schema's tables). Every read names the ``main`` database, so
a schema table named like one of the host's own temporary tables is read, never the host's table.
"""

from __future__ import annotations

from typing import Any

from gym_envs.sandbox.sqlpolicy import quote_identifier

__all__ = ["ContentReads"]


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
        the first ``limit`` rows of each table."""
        want = text.strip().lower()
        equal: list[tuple[str, list[str]]] = []
        within: list[tuple[str, list[str]]] = []
        for t in self.tables():
            rows = self.host(f"SELECT * FROM main.{quote_identifier(t)} LIMIT ?", (limit,))
            for i in range(len(rows[0]) if rows else 0):
                values = [r[i] for r in rows if isinstance(r[i], str)]
                lows = [v.strip().lower() for v in values]
                if want in lows:
                    equal.append((f"{t}.{self.columns(t)[i]}", list(dict.fromkeys(values))))
                elif want and not equal and any(want in v for v in lows):
                    within.append((f"{t}.{self.columns(t)[i]}", list(dict.fromkeys(values))))
        return equal or within

    def dump(self, tables: list[str] | None, limit: int) -> dict[str, Any]:
        """Columns, row count and up to ``limit`` rows of each table (or of ``tables``), as plain JSON: SQLite's
        values as they are, but a blob as its ``repr`` text (what ``json.dumps(..., default=repr)`` makes of it)."""
        known = self.tables()
        counts = self.row_counts()
        out = {}
        for t in tables or known:
            if t in known:
                rows = self.host(f"SELECT * FROM main.{quote_identifier(t)} LIMIT ?", (limit,))
                out[t] = {"columns": self.columns(t), "rows": [_plain_row(r) for r in rows], "count": counts[t]}
        return out


def _plain_row(row: tuple[Any, ...]) -> list[Any]:
    """A row's values as ``json.loads(json.dumps(row, default=repr))`` gives them, without the round trip: SQLite
    gives None, int, float, str or bytes, and only a blob (bytes) changes, to its ``repr`` text."""
    return [repr(v) if v.__class__ is bytes else v for v in row]
