"""The SQLite state of an episode and the ``db`` facade that tool code sees.

Contract (ENVSPEC.md, "Tool code"): generated code never holds a
``sqlite3.Connection``. It gets a :class:`DbFacade` with two methods,
``query(sql, params=()) -> list[dict]`` and ``execute(sql, params=()) ->
{"rowcount", "lastrowid"}``: one statement per call, parameters always bound.

:class:`StateDB` owns the connection and enforces, for every statement that
untrusted code prepares:

* an SQLite authorizer with modes ``setup`` (building from ``schema_sql`` /
  ``seed_sql``: CREATE TABLE / CREATE INDEX / INSERT only), ``rw`` (tools:
  SELECT / INSERT / UPDATE / DELETE) and ``ro`` (checks: reads only). Every mode
  refuses ATTACH, DETACH, PRAGMA, transactions and savepoints, schema changes
  outside ``setup``, writes to ``sqlite_master``, ``load_extension`` and the
  non-deterministic ``random``/``randomblob``;
* a leading-keyword filter (VACUUM has no authorizer code, so ``VACUUM INTO``
  is refused by keyword);
* a progress-handler deadline, so a recursive CTE cannot run forever;
* length limits (SQL text, string/blob values, bound variables, result rows,
  database pages).

The host (never untrusted code) uses ``host`` mode for savepoints around a tool
call, so a call that fails changes nothing.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["DbFacade", "SqlLimits", "StateDB", "StateError", "split_sql"]


class StateError(Exception):
    """A statement was refused or failed; the message is safe to show to the agent."""


@dataclass(frozen=True)
class SqlLimits:
    """Limits applied to every connection (see module docstring)."""

    max_sql_length: int = 20_000
    max_value_length: int = 1_000_000
    max_variables: int = 100
    max_rows: int = 10_000
    max_db_pages: int = 16_384  # x 4 KiB pages = 64 MiB
    statement_timeout_s: float = 2.0
    progress_interval: int = 2_000


_C = sqlite3
_ALWAYS_DENY = {
    _C.SQLITE_ATTACH, _C.SQLITE_DETACH, _C.SQLITE_PRAGMA, _C.SQLITE_ANALYZE, _C.SQLITE_REINDEX,
    _C.SQLITE_CREATE_VTABLE, _C.SQLITE_DROP_VTABLE, _C.SQLITE_TRANSACTION, _C.SQLITE_SAVEPOINT,
    _C.SQLITE_CREATE_TRIGGER, _C.SQLITE_CREATE_TEMP_TRIGGER, _C.SQLITE_CREATE_VIEW,
    _C.SQLITE_CREATE_TEMP_VIEW, _C.SQLITE_CREATE_TEMP_TABLE, _C.SQLITE_CREATE_TEMP_INDEX,
    _C.SQLITE_DROP_TABLE, _C.SQLITE_DROP_INDEX, _C.SQLITE_DROP_TRIGGER, _C.SQLITE_DROP_VIEW,
    _C.SQLITE_DROP_TEMP_TABLE, _C.SQLITE_DROP_TEMP_INDEX, _C.SQLITE_DROP_TEMP_TRIGGER,
    _C.SQLITE_DROP_TEMP_VIEW, _C.SQLITE_ALTER_TABLE,
}
_SETUP_ONLY = {_C.SQLITE_CREATE_TABLE, _C.SQLITE_CREATE_INDEX}
_WRITES = {_C.SQLITE_INSERT, _C.SQLITE_UPDATE, _C.SQLITE_DELETE}
_DENIED_FUNCTIONS = {"load_extension", "random", "randomblob", "readfile", "writefile", "edit",
                     "fts3_tokenizer", "sqlite_offset"}
_READ_KEYWORDS = {"SELECT", "WITH", "VALUES"}
_WRITE_KEYWORDS = {"INSERT", "UPDATE", "DELETE", "REPLACE"}
_SETUP_KEYWORDS = {"CREATE"}
_LEADING_NOISE = re.compile(r"^(?:\s+|--[^\n]*(?:\n|$)|/\*.*?\*/)*", re.S)
_PRIMITIVES = (str, int, float, bytes, type(None))


def _leading_keyword(sql: str) -> str:
    rest = _LEADING_NOISE.sub("", sql, count=1)
    m = re.match(r"[A-Za-z]+", rest)
    return m.group(0).upper() if m else ""


def split_sql(script: str) -> list[str]:
    """Split a script into complete statements (string literals with ';' are respected)."""
    out: list[str] = []
    buf = ""
    for piece in script.split(";"):
        buf += piece + ";"
        if sqlite3.complete_statement(buf):
            stmt = buf.strip()
            if stmt.strip(";").strip() and _LEADING_NOISE.sub("", stmt).strip(";").strip():
                out.append(stmt)
            buf = ""
    tail = buf[:-1].strip()  # the last piece got a ';' it did not have
    if tail and _LEADING_NOISE.sub("", tail).strip():
        out.append(tail)
    return out


class StateDB:
    """One in-memory SQLite database with the guards described in the module docstring."""

    def __init__(self, limits: SqlLimits | None = None):
        self.limits = limits or SqlLimits()
        self.conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        self.mode = "host"
        self._deadline = float("inf")
        self._configure()

    # -- configuration ------------------------------------------------------------------------
    def _configure(self) -> None:
        c, lim = self.conn, self.limits
        c.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, lim.max_value_length)
        c.setlimit(sqlite3.SQLITE_LIMIT_SQL_LENGTH, lim.max_sql_length)
        c.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        c.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, lim.max_variables)
        c.setlimit(sqlite3.SQLITE_LIMIT_EXPR_DEPTH, 200)
        c.setlimit(sqlite3.SQLITE_LIMIT_COMPOUND_SELECT, 50)
        c.setlimit(sqlite3.SQLITE_LIMIT_TRIGGER_DEPTH, 10)
        c.execute(f"PRAGMA max_page_count = {int(lim.max_db_pages)}")
        c.execute("PRAGMA foreign_keys = ON")
        c.set_authorizer(self._authorize)
        c.set_progress_handler(self._progress, lim.progress_interval)

    def _authorize(self, action: int, arg1: str | None, arg2: str | None, dbname: str | None,
                   trigger: str | None) -> int:
        mode = self.mode
        if mode == "host":
            return sqlite3.SQLITE_OK
        if action in _ALWAYS_DENY:
            return sqlite3.SQLITE_DENY
        if action == sqlite3.SQLITE_FUNCTION:
            return sqlite3.SQLITE_DENY if (arg2 or "").lower() in _DENIED_FUNCTIONS else sqlite3.SQLITE_OK
        if action in _SETUP_ONLY:
            return sqlite3.SQLITE_OK if mode == "setup" else sqlite3.SQLITE_DENY
        if action in _WRITES:
            if mode == "ro" or (mode != "setup" and (arg1 or "").lower().startswith("sqlite_")):
                return sqlite3.SQLITE_DENY
            return sqlite3.SQLITE_OK
        return sqlite3.SQLITE_OK

    def _progress(self) -> int:
        return 1 if time.perf_counter() > self._deadline else 0

    # -- images -------------------------------------------------------------------------------
    def image(self) -> bytes:
        """A byte image of the whole database (``sqlite3`` serialize)."""
        return self.conn.serialize()

    def load_image(self, image: bytes) -> None:
        """Replace the database content with ``image`` (cheap: one memcpy)."""
        self.conn.deserialize(image)
        self.conn.execute(f"PRAGMA max_page_count = {int(self.limits.max_db_pages)}")

    # -- statements ---------------------------------------------------------------------------
    def run(self, sql: str, params: Any = (), *, mode: str, fetch: bool,
            timeout_s: float | None = None) -> Any:
        """Run one statement in ``mode``; returns rows (list of dicts) or a rowcount dict."""
        if not isinstance(sql, str):
            raise StateError(f"sql must be a string, not {type(sql).__name__}")
        if len(sql) > self.limits.max_sql_length:
            raise StateError(f"sql is too long ({len(sql)} > {self.limits.max_sql_length} characters)")
        params = _check_params(params, self.limits.max_variables)
        kw = _leading_keyword(sql)
        allowed = {"setup": _SETUP_KEYWORDS, "rw": _READ_KEYWORDS | _WRITE_KEYWORDS,
                   "ro": _READ_KEYWORDS, "host": None}[mode]
        if allowed is not None and kw not in allowed:
            raise StateError(f"statement {kw or sql[:20]!r} is not allowed here; "
                             f"use one of {sorted(allowed)}")
        self.mode = mode
        self._deadline = time.perf_counter() + (timeout_s or self.limits.statement_timeout_s)
        try:
            cur = self.conn.execute(sql, params)
            if not fetch:
                return {"rowcount": cur.rowcount, "lastrowid": cur.lastrowid}
            cols = [d[0] for d in cur.description or ()]
            rows = cur.fetchmany(self.limits.max_rows + 1)
            if len(rows) > self.limits.max_rows:
                raise StateError(f"query returned more than {self.limits.max_rows} rows; add a LIMIT")
            return [dict(zip(cols, r, strict=False)) for r in rows]
        except sqlite3.Warning as e:  # e.g. "You can only execute one statement at a time."
            raise StateError(str(e)) from None
        except sqlite3.Error as e:
            msg = str(e)
            if "interrupted" in msg:
                msg = "statement took too long and was interrupted"
            elif "not authorized" in msg or "prohibited" in msg:
                msg = f"not authorized: {msg}"
            raise StateError(msg) from None
        finally:
            self.mode = "host"
            self._deadline = float("inf")

    def script(self, script: str, *, mode: str = "setup") -> int:
        """Run every statement of a script; returns how many ran."""
        stmts = split_sql(script)
        for i, stmt in enumerate(stmts):
            try:
                self.run(stmt, (), mode=mode, fetch=False, timeout_s=max(2.0, self.limits.statement_timeout_s))
            except StateError as e:
                raise StateError(f"statement {i + 1} ({stmt[:60]!r}...): {e}") from None
        return len(stmts)

    def host(self, sql: str, params: Any = ()) -> list[tuple[Any, ...]]:
        """A trusted statement (savepoints, introspection)."""
        return self.conn.execute(sql, params).fetchall()

    # -- introspection ------------------------------------------------------------------------
    def tables(self) -> list[str]:
        rows = self.host("SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' "
                         "ORDER BY name")
        return [r[0] for r in rows]

    def row_counts(self) -> dict[str, int]:
        return {t: self.host(f'SELECT count(*) FROM "{t}"')[0][0] for t in self.tables()}

    def table_rows(self, table: str) -> list[list[Any]]:
        rows = [list(r) for r in self.host(f'SELECT * FROM "{table}"')]
        rows.sort(key=lambda r: json.dumps(r, default=_b64, sort_keys=True))
        return rows

    def table_digests(self, tables: list[str] | None = None) -> dict[str, str]:
        """SHA-256 of each table's rows, order-independent."""
        names = tables or self.tables()
        known = set(self.tables())
        out: dict[str, str] = {}
        for t in names:
            if t not in known:
                out[t] = "<missing>"
                continue
            blob = json.dumps(self.table_rows(t), default=_b64, separators=(",", ":"))
            out[t] = hashlib.sha256(blob.encode()).hexdigest()
        return out

    def digest(self) -> str:
        blob = json.dumps(sorted(self.table_digests().items()))
        return hashlib.sha256(blob.encode()).hexdigest()

    def close(self) -> None:
        self.conn.close()


def _b64(v: Any) -> str:
    if isinstance(v, bytes):
        return "b64:" + __import__("base64").b64encode(v).decode()
    raise TypeError(type(v).__name__)


def _check_params(params: Any, max_vars: int) -> Any:
    if params is None:
        return ()
    if isinstance(params, dict):
        items: Iterator[Any] = iter(params.values())
        n = len(params)
    elif isinstance(params, list | tuple):
        items = iter(params)
        n = len(params)
    else:
        raise StateError("params must be a list, tuple or dict of values")
    if n > max_vars:
        raise StateError(f"too many parameters ({n} > {max_vars})")
    for v in items:
        if type(v) is bool:
            continue
        if not isinstance(v, _PRIMITIVES):
            raise StateError(f"parameter values must be str, int, float, bool, bytes or None, "
                             f"not {type(v).__name__}")
    if isinstance(params, dict):
        return {str(k): _plain(v) for k, v in params.items()}
    return tuple(_plain(v) for v in params)


def _plain(v: Any) -> Any:
    """Strip subclasses (a ``str`` subclass with a rigged ``__eq__`` becomes a plain str)."""
    if v is None or type(v) in (str, int, float, bytes, bool):
        return v
    for base in (bool, int, float, str, bytes):
        if isinstance(v, base):
            return base(v)
    return v


class DbFacade:
    """The ``db`` object that tool and check code receive.

    It holds its :class:`StateDB` in a closure, not an attribute, so restricted
    code (which cannot touch ``_``-names anyway) has nothing to reach through.
    """

    __slots__ = ("execute", "query")

    def __init__(self, state: StateDB, *, read_only: bool, timeout_s: Callable[[], float]):
        mode = "ro" if read_only else "rw"

        def query(sql: str, params: Any = ()) -> list[dict[str, Any]]:
            """Run one SELECT (or a write with RETURNING) and return its rows as dicts."""
            return state.run(sql, params, mode=mode, fetch=True, timeout_s=timeout_s())

        def execute(sql: str, params: Any = ()) -> dict[str, Any]:
            """Run one INSERT / UPDATE / DELETE; returns ``{"rowcount", "lastrowid"}``."""
            if read_only:
                raise StateError("this database view is read-only")
            return state.run(sql, params, mode=mode, fetch=False, timeout_s=timeout_s())

        self.query = query
        self.execute = execute

    def __repr__(self) -> str:
        return "<db>"
