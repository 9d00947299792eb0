"""The SQLite state of an episode and the ``db`` facade that tool code sees.

Contract (ENVSPEC.md, "Tool code"): generated code never holds a
``sqlite3.Connection``. It gets a :class:`DbFacade` with two methods,
``query(sql, params=()) -> list[dict]`` and ``execute(sql, params=()) ->
{"rowcount", "lastrowid"}``: one statement per call, parameters always bound.

:class:`StateDB` owns the connection and enforces, for every statement that
untrusted code prepares:

* an SQLite authorizer with modes ``setup`` (``schema_sql``: CREATE TABLE /
  CREATE INDEX only; ``seed_sql`` runs in ``rw``), ``rw`` (tools: SELECT /
  INSERT / UPDATE / DELETE) and ``ro`` (checks: reads only). Every mode refuses
  ATTACH, DETACH, PRAGMA, transactions and savepoints, schema changes outside
  ``setup``, writes to ``sqlite_*`` tables and to any database but ``main``,
  reads of ``temp`` (it holds only the host's scratch table), ``load_extension``,
  and the functions whose result depends on something other than the episode
  (``random``, ``randomblob``, ``total_changes``);
* a leading-keyword filter (VACUUM has no authorizer code, so ``VACUUM INTO``
  is refused by keyword), applied before the statement is prepared;
* ``PRAGMA query_only`` while a read-only view runs: SQLite authorizes a
  statement when it is prepared, and the statement cache would otherwise hand
  a check a write statement the tool prepared in ``rw`` mode;
* a progress-handler deadline, so a recursive CTE cannot run forever;
* length limits (SQL text, string/blob values, LIKE patterns, columns, bound
  variables, result rows and result bytes, database pages), and
  ``printf``/``format`` widths: SQLite's ``printf('%.*c', 10**9, 'x')`` loops
  for seconds inside one function call, where no progress handler runs, so the
  two are overridden by a wrapper that checks the format and then calls the
  real ``printf`` (the output is SQLite's own).

Episodes. A connection holds one program's template database and an open
``SAVEPOINT episode``; :meth:`StateDB.reset_episode` rolls back to it, which
restores the template page for page (no new connection, no re-parse of the
schema) and resets the connection's ``last_insert_rowid()`` and ``changes()``
to a fresh connection's values, so a reused connection is indistinguishable from
a new one. Tool calls run inside that transaction without a savepoint of their
own (each statement is atomic; :attr:`StateDB.total_changes` tells whether a
call wrote); the executor undoes a failed call that wrote by rolling back to
the episode start and replaying the episode, using :meth:`StateDB.savepoint`
there. SQLite itself aborts the whole transaction on some errors (an
interrupted write, out of memory): :attr:`StateDB.lost` then turns true, every
further statement of untrusted code is refused, and the owner must rebuild the
episode (the executor reloads the image and replays it).

The host (never untrusted code) uses :meth:`StateDB.host` for savepoints and
introspection; its statements carry a per-process tag, so untrusted SQL can
never be served a statement the host prepared without the authorizer.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import hashlib
import json
import os
import re
import secrets
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["DbFacade", "SqlLimits", "StateDB", "StateError", "quote_identifier", "split_sql"]


class StateError(Exception):
    """A statement was refused or failed; the message is safe to show to the agent.

    ``transient`` marks failures that depend on timing or memory (an interrupted
    statement, an aborted transaction), which a replay cannot be expected to repeat.
    """

    def __init__(self, message: str, *, transient: bool = False):
        super().__init__(message)
        self.transient = transient


@dataclass(frozen=True)
class SqlLimits:
    """Limits applied to every connection (see module docstring)."""

    max_sql_length: int = 20_000
    max_value_length: int = 1_000_000
    max_variables: int = 100
    max_rows: int = 10_000
    max_result_bytes: int = 16 << 20  #: bytes of text and blob values one query may return
    max_columns: int = 100
    max_like_pattern: int = 100
    max_db_pages: int = 16_384  # x 4 KiB pages = 64 MiB
    statement_timeout_s: float = 2.0
    progress_interval: int = 2_000


_C = sqlite3
_ALWAYS_DENY = frozenset({
    _C.SQLITE_ATTACH, _C.SQLITE_DETACH, _C.SQLITE_PRAGMA, _C.SQLITE_ANALYZE, _C.SQLITE_REINDEX,
    _C.SQLITE_CREATE_VTABLE, _C.SQLITE_DROP_VTABLE, _C.SQLITE_TRANSACTION, _C.SQLITE_SAVEPOINT,
    _C.SQLITE_CREATE_TRIGGER, _C.SQLITE_CREATE_TEMP_TRIGGER, _C.SQLITE_CREATE_VIEW,
    _C.SQLITE_CREATE_TEMP_VIEW, _C.SQLITE_CREATE_TEMP_TABLE, _C.SQLITE_CREATE_TEMP_INDEX,
    _C.SQLITE_DROP_TABLE, _C.SQLITE_DROP_INDEX, _C.SQLITE_DROP_TRIGGER, _C.SQLITE_DROP_VIEW,
    _C.SQLITE_DROP_TEMP_TABLE, _C.SQLITE_DROP_TEMP_INDEX, _C.SQLITE_DROP_TEMP_TRIGGER,
    _C.SQLITE_DROP_TEMP_VIEW, _C.SQLITE_ALTER_TABLE,
})
_SETUP_ONLY = frozenset({_C.SQLITE_CREATE_TABLE, _C.SQLITE_CREATE_INDEX})
_WRITES = frozenset({_C.SQLITE_INSERT, _C.SQLITE_UPDATE, _C.SQLITE_DELETE})
_DENIED_FUNCTIONS = frozenset({"load_extension", "random", "randomblob", "readfile", "writefile", "edit",
                               "fts3_tokenizer", "sqlite_offset", "total_changes"})
_READ_KEYWORDS = frozenset({"SELECT", "WITH", "VALUES"})
_WRITE_KEYWORDS = frozenset({"INSERT", "UPDATE", "DELETE", "REPLACE"})
_ALLOWED = {"setup": frozenset({"CREATE"}), "rw": _READ_KEYWORDS | _WRITE_KEYWORDS, "ro": _READ_KEYWORDS}
_LEADING_NOISE = re.compile(r"^(?:\s+|--[^\n]*(?:\n|$)|/\*.*?\*/)*", re.S)
_WORD = re.compile(r"[A-Za-z]+")
_PRIMITIVES = (str, int, float, bytes, type(None))
_EXACT = frozenset({str, int, float, bytes, bool, type(None)})
_HOST_TAG = f"/* envwright host {secrets.token_hex(8)} */ "
_RESET_TABLE = "envwright_reset"
_KW_CACHE_MAX = 4096
_PRINTF_SPEC = re.compile(r"%([-+ 0#,!]*)(\*|\d+)?(?:\.(\*|\d+))?(?:ll|l)?(.)", re.S)
_MAX_PRINTF_WIDTH = 10_000
_SAVEPOINT_CALL = _HOST_TAG + "SAVEPOINT call"
_RESET_ROWID = _HOST_TAG + f"INSERT OR REPLACE INTO temp.{_RESET_TABLE} (rowid) VALUES (0)"
_RESET_CHANGES = _HOST_TAG + f"UPDATE temp.{_RESET_TABLE} SET x = 0 WHERE 0"
_RELEASE_CALL = _HOST_TAG + "RELEASE call"
_ROLLBACK_CALL = _HOST_TAG + "ROLLBACK TO call"
_ROLLBACK_EPISODE = _HOST_TAG + "ROLLBACK TO episode"
_NEVER = float("inf")
_CHUNK = 16  #: rows fetched at a time (the row and byte limits are checked between chunks)
_clock = time.perf_counter


def _load_speedups() -> Any:
    """The C versions of the hot paths (``gym_envs/_speedups.c``), or ``None``.

    They are built at install time when a C compiler is at hand (an optional extension) and used
    unless ``ENVWRIGHT_PURE_PYTHON`` is set to something other than ``0``. Each has a pure-Python twin
    in this package that stays the reference; the tests compare the two.
    """
    if os.environ.get("ENVWRIGHT_PURE_PYTHON", "0") not in ("", "0"):
        return None
    try:
        from gym_envs import _speedups
    except ImportError:
        return None
    return _speedups


#: ``gym_envs._speedups`` or ``None``; read when a statement function or argument check is built
speedups = _load_speedups()


def _leading_keyword(sql: str) -> str:
    rest = _LEADING_NOISE.sub("", sql, count=1)
    m = _WORD.match(rest)
    return m.group(0).upper() if m else ""


def quote_identifier(name: str) -> str:
    """``name`` as an SQL identifier (double quotes, embedded quotes doubled)."""
    return '"' + str(name).replace('"', '""') + '"'


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


class _Guard:
    """What one connection's authorizer and progress handler read, and the cursor of untrusted statements.

    The pure-Python twin of ``_speedups.Guard`` (same attributes and methods): the statement functions
    set ``mode`` and ``deadline`` around each statement and read the rest.
    """

    __slots__ = ("cursor", "deadline", "episode", "mode", "query_only")

    def __init__(self) -> None:
        self.mode = "host"  #: the authorizer mode: host, setup, rw or ro
        self.cursor: Any = None  #: runs untrusted statements; never left holding an unfinished one
        self.deadline = _NEVER  #: on the clock of now(); a running statement is interrupted after it
        self.query_only = False  #: PRAGMA query_only is on
        self.episode = False  #: an episode savepoint is open

    now = staticmethod(_clock)

    def progress(self) -> int:
        """The progress handler: 1 (interrupt) once :meth:`now` is past ``deadline``, else 0."""
        return 1 if _clock() > self.deadline else 0


class StateDB:
    """One in-memory SQLite database with the guards described in the module docstring."""

    def __init__(self, limits: SqlLimits | None = None):
        self.limits = limits or SqlLimits()
        self._max_rows, self._max_bytes = self.limits.max_rows, self.limits.max_result_bytes
        self.conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        self._speedups = speedups  # the C twins, or None: chosen once per connection
        self.guard = speedups.Guard() if speedups is not None else _Guard()
        self._savepoint = False  # a call savepoint is open
        self._printf_conn: sqlite3.Connection | None = None
        self._counters_at = -1  # total_changes when last_insert_rowid() and changes() were last zeroed
        self._facades: tuple[float, DbFacade, DbFacade] | None = None
        self._admitted: dict[str, dict[str, str]] = {m: {} for m in _ALLOWED}  # mode -> text -> keyword
        self._shapes: dict[str, tuple[int, Callable[[tuple[Any, ...]], dict[str, Any]], tuple[str, ...]]] = {}
        # statement text -> (rows that need no counting, row builder, column names)
        self._statements: dict[tuple[str, bool, float], Callable[..., Any]] = {}  # run()'s functions
        self._configure()
        self.guard.cursor = self.conn.cursor()
        self._host = self.conn.cursor()  # the host's fixed statements (no cursor to build per statement)

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
        c.setlimit(sqlite3.SQLITE_LIMIT_COLUMN, lim.max_columns)
        c.setlimit(sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH, lim.max_like_pattern)
        c.execute(f"PRAGMA max_page_count = {int(lim.max_db_pages)}")
        c.execute("PRAGMA foreign_keys = ON")
        c.execute("PRAGMA temp_store = MEMORY")  # sorts and temporary b-trees never touch the disk
        c.execute(f"CREATE TEMP TABLE {_RESET_TABLE} (x)")
        for name in ("printf", "format"):  # SQLite's own, minus widths that loop for seconds
            c.create_function(name, -1, self._printf, deterministic=True)
        c.set_authorizer(self._authorize)
        c.set_progress_handler(self.guard.progress, lim.progress_interval)

    def _authorize(self, action: int, arg1: str | None, arg2: str | None, dbname: str | None,
                   trigger: str | None) -> int:
        mode = self.guard.mode
        if mode == "host":
            return sqlite3.SQLITE_OK
        if action in _ALWAYS_DENY:
            if action == sqlite3.SQLITE_REINDEX and mode == "setup":  # CREATE INDEX builds the index
                return sqlite3.SQLITE_OK
            return sqlite3.SQLITE_DENY
        if action == sqlite3.SQLITE_FUNCTION:
            return sqlite3.SQLITE_DENY if (arg2 or "").lower() in _DENIED_FUNCTIONS else sqlite3.SQLITE_OK
        if action in _SETUP_ONLY:
            return sqlite3.SQLITE_OK if mode == "setup" and dbname == "main" else sqlite3.SQLITE_DENY
        if action == sqlite3.SQLITE_READ and dbname == "temp":  # the host's scratch table
            return sqlite3.SQLITE_DENY
        if action in _WRITES:
            if mode == "ro" or dbname != "main":
                return sqlite3.SQLITE_DENY
            if mode != "setup" and (arg1 or "").lower().startswith("sqlite_"):
                return sqlite3.SQLITE_DENY
            return sqlite3.SQLITE_OK
        return sqlite3.SQLITE_OK

    def _printf(self, *args: Any) -> Any:
        """``printf``/``format`` with widths and precisions capped at ``_MAX_PRINTF_WIDTH``.

        SQLite's ``printf('%.*c', 1000000000, 'x')`` spends tens of seconds inside one function
        call, where the progress handler never runs; the call is checked here and then handed to
        SQLite's real ``printf`` on a private connection, so the output is unchanged.
        """
        if not args:
            return None
        fmt = args[0]
        if isinstance(fmt, str) and "%" in fmt:
            _check_printf(fmt, args[1:])
        if self._printf_conn is None:
            self._printf_conn = sqlite3.connect(":memory:", check_same_thread=False)
            self._printf_conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, self.limits.max_value_length)
        sql = "SELECT printf(" + ",".join("?" * len(args)) + ")"
        return self._printf_conn.execute(sql, args).fetchone()[0]

    # -- images and episodes ------------------------------------------------------------------
    def image(self) -> bytes:
        """A byte image of the whole database (``sqlite3`` serialize)."""
        return self.conn.serialize()

    def load_image(self, image: bytes) -> None:
        """Replace the database content with ``image`` (ends any open episode)."""
        self._set_query_only(False)
        if self.conn.in_transaction:
            self.conn.execute(_HOST_TAG + "ROLLBACK")
        self.guard.episode = self._savepoint = False
        self._forget_statements()
        self._drop_cursor()
        self.conn.deserialize(image)
        self.conn.execute(_HOST_TAG + f"PRAGMA max_page_count = {int(self.limits.max_db_pages)}")

    def open_episode(self) -> None:
        """Start an episode on the current content: everything after this can be rolled back."""
        if self.guard.episode:
            raise RuntimeError("an episode is already open on this connection")
        self._set_query_only(False)
        self._counters_at = -1
        self._reset_counters()  # before the savepoint, so the scratch row is part of the baseline
        self.conn.execute(_HOST_TAG + "SAVEPOINT episode")
        self.guard.episode = True

    def reset_episode(self) -> None:
        """Roll back to the start of the episode (the template), cheaply."""
        if not self.guard.episode or self.lost:
            raise RuntimeError("no intact episode to reset")
        self._set_query_only(False)
        self._savepoint = False
        self._host.execute(_ROLLBACK_EPISODE)
        self._reset_counters()

    def _reset_counters(self) -> None:
        # last_insert_rowid() and changes() belong to the connection, not the database: give every
        # episode a fresh connection's values (0, 0) so reuse is invisible and replays agree. Both
        # only move when a row changes, so a connection whose change count has not moved is still at 0.
        if self.conn.total_changes == self._counters_at:
            return
        self._host.execute(_RESET_ROWID)
        self._host.execute(_RESET_CHANGES)
        self._counters_at = self.conn.total_changes

    def facades(self, timeout_s: float) -> tuple[DbFacade, DbFacade]:
        """The read-write and read-only :class:`DbFacade` of this connection (cached: they hold no
        state and cannot be written, so episodes on this connection can share them)."""
        if self._facades is None or self._facades[0] != timeout_s:
            self._facades = (timeout_s, DbFacade(self, read_only=False, timeout_s=timeout_s),
                             DbFacade(self, read_only=True, timeout_s=timeout_s))
        return self._facades[1], self._facades[2]

    @property
    def lost(self) -> bool:
        """True when SQLite aborted the episode's transaction (the content is no longer the episode's)."""
        return self.guard.episode and not self.conn.in_transaction

    @property
    def total_changes(self) -> int:
        """Rows inserted, updated or deleted on this connection so far (a call wrote iff it moved)."""
        return self.conn.total_changes

    def savepoint(self) -> None:
        """Open a savepoint for one call (see :meth:`release`)."""
        self._host.execute(_SAVEPOINT_CALL)
        self._savepoint = True

    def release(self, commit: bool) -> None:
        """Keep (``commit``) or undo everything written since :meth:`savepoint`."""
        if not self._savepoint:
            return
        self._savepoint = False
        if not self.conn.in_transaction:  # SQLite already rolled everything back
            return
        if not commit:
            self._host.execute(_ROLLBACK_CALL)
        self._host.execute(_RELEASE_CALL)

    def _set_query_only(self, on: bool) -> None:
        if self.guard.query_only != on:
            self.conn.execute(_HOST_TAG + ("PRAGMA query_only = 1" if on else "PRAGMA query_only = 0"))
            self.guard.query_only = on

    # -- statements ---------------------------------------------------------------------------
    def _admit(self, sql: Any, mode: str) -> tuple[str, str]:
        """``(sql, keyword)`` for a statement ``mode`` allows (``sql`` as an exact ``str``), else
        :class:`StateError`; the verdict is cached per mode and statement text."""
        if not isinstance(sql, str):
            raise StateError(f"sql must be a string, not {type(sql).__name__}")
        sql = str.__str__(sql)  # a subclass is copied once, so its methods cannot change the text later
        if len(sql) > self.limits.max_sql_length:
            raise StateError(f"sql is too long ({len(sql)} > {self.limits.max_sql_length} characters)")
        kw = _leading_keyword(sql)
        if kw not in _ALLOWED[mode]:
            raise StateError(f"statement {kw or sql[:20]!r} is not allowed here; "
                             f"use one of {sorted(_ALLOWED[mode])}")
        admitted = self._admitted[mode]
        if len(admitted) >= _KW_CACHE_MAX:
            self._forget_statements()
        admitted[sql] = kw
        return sql, kw

    def _forget_statements(self) -> None:
        for admitted in self._admitted.values():
            admitted.clear()
        self._shapes.clear()

    def run(self, sql: str, params: Any = (), *, mode: str, fetch: bool,
            timeout_s: float | None = None) -> Any:
        """Run one statement of untrusted code in ``mode`` (``setup``, ``rw``, ``ro``).

        Returns the rows as a list of dicts when ``fetch``, else ``{"rowcount", "lastrowid"}``.
        """
        key = (mode, fetch, timeout_s or self.limits.statement_timeout_s)
        fn = self._statements.get(key)
        if fn is None:
            fn = self._statements[key] = self.statement(mode, fetch=fetch, timeout_s=key[2])
        return fn(sql, params)

    def statement(self, mode: str, *, fetch: bool, timeout_s: float) -> Callable[..., Any]:
        """A function ``(sql, params=()) -> result`` that runs one statement of untrusted code in ``mode``.

        It does what :meth:`run` describes, with everything that does not change between statements
        (the mode's cache of admitted statements, the limits) bound once: the facades keep one per
        method. Every guard of the module docstring applies to every statement. With
        :data:`speedups`, the function is its C twin (``_speedups.Statement``), which runs the same steps
        and calls back into this object for everything but the common case.
        """
        if mode not in _ALLOWED:
            raise ValueError(f"unknown mode {mode!r}")
        if self._speedups is not None:
            return self._statement_c(mode, fetch, float(timeout_s))
        return self._statement_py(mode, fetch, float(timeout_s))

    def _statement_py(self, mode: str, fetch: bool, seconds: float) -> Callable[..., Any]:
        """:meth:`statement`'s function in Python (the reference for the C twin)."""
        state = self
        guard = self.guard
        conn = self.conn
        admitted = self._admitted[mode].get
        shape_of = self._shapes.get
        max_vars = self.limits.max_variables
        read_only = mode == "ro"

        def run(sql: Any, params: Any = ()) -> Any:
            kw = admitted(sql) if sql.__class__ is str else None
            if kw is None:
                sql, kw = state._admit(sql, mode)
            if (params.__class__ is not list and params.__class__ is not tuple) or len(params) > max_vars:
                params = _check_params(params, max_vars)
            else:
                for v in params:
                    if v.__class__ not in _EXACT:  # subclasses are stripped
                        params = _check_params(params, max_vars)
                        break
            if read_only is not guard.query_only:
                state._set_query_only(read_only)
            if not conn.in_transaction and guard.episode:
                raise StateError("the episode's transaction was aborted by an earlier error; no further "
                                 "statements run in this call", transient=True)
            cur = guard.cursor
            guard.mode = mode
            guard.deadline = _clock() + seconds
            try:
                if fetch:
                    rows = cur.execute(sql, params).fetchmany(_CHUNK)
                    small, build, _ = shape_of(sql) or state._shape(sql, cur)
                    if len(rows) <= small:  # the whole result, and too small for the limits: no counting
                        return [build(rows[0])] if len(rows) == 1 else list(map(build, rows))
                    return state._rows(cur, build, rows)
                if kw == "WITH":
                    return state._execute_with(cur, sql, params)
                cur.execute(sql, params)
                if cur.description is not None:  # rows are pending (RETURNING): finish the statement now
                    state._drop_cursor()
                return {"rowcount": cur.rowcount, "lastrowid": cur.lastrowid}
            except BaseException as e:
                state._drop_cursor()  # it may hold an unfinished statement
                if isinstance(e, sqlite3.Error | sqlite3.Warning | MemoryError):
                    raise _state_error(e) from None
                raise
            finally:
                guard.mode = "host"
                guard.deadline = _NEVER

        return _named(run, "query" if fetch else "execute")

    def _statement_c(self, mode: str, fetch: bool, seconds: float) -> Callable[..., Any]:
        """:meth:`statement`'s function as ``_speedups.Statement``: the common case in C, the rest through
        these hooks (the same methods the Python function calls)."""
        hooks = (self._admit, _check_params, self._set_query_only, self._shape, self._rows, self._execute_with,
                 self._drop_cursor, _state_error, StateError, (sqlite3.Error, sqlite3.Warning, MemoryError))
        name = "query" if fetch else "execute"
        return self._speedups.Statement(name, self.guard, self.conn,  # type: ignore[no-any-return]
                                        self._admitted[mode], self._shapes, mode, fetch, mode == "ro", seconds,
                                        self.limits.max_variables, _CHUNK, hooks)

    def _drop_cursor(self) -> None:
        """Replace the cursor of untrusted statements, so its statement (if unfinished) is reset now."""
        with contextlib.suppress(sqlite3.Error):
            self.guard.cursor.close()
        with contextlib.suppress(sqlite3.Error):  # a closed connection: the closed cursor stays
            self.guard.cursor = self.conn.cursor()

    def _shape(self, sql: str, cur: sqlite3.Cursor) -> tuple[int, Callable[[tuple[Any, ...]], dict[str, Any]],
                                                             tuple[str, ...]]:
        """``(small, build, cols)`` for ``sql``, just executed on ``cur``: ``build`` turns a row into its dict
        keyed by the column names ``cols``;
        a whole result of at most ``small`` rows is under the row and byte limits without counting
        (SQLite refuses any value longer than ``max_value_length``, SQLITE_LIMIT_LENGTH)."""
        cols = tuple(d[0] for d in cur.description or ())
        small = min(_CHUNK - 1, self._max_rows,
                    self._max_bytes // max(1, self.limits.max_value_length * len(cols)))
        shape = self._shapes[sql] = (small, _row_builder(cols), cols)
        return shape

    def _execute_with(self, cur: sqlite3.Cursor, sql: str, params: Any) -> dict[str, Any]:
        # Python reports no rowcount for WITH ... UPDATE/DELETE; the change counter does
        before = self.conn.total_changes
        cur.execute(sql, params)
        rowcount = cur.rowcount if cur.rowcount >= 0 else self.conn.total_changes - before
        if cur.description is not None:
            self._drop_cursor()
        return {"rowcount": rowcount, "lastrowid": cur.lastrowid}

    def _rows(self, cur: sqlite3.Cursor, build: Callable[[tuple[Any, ...]], dict[str, Any]],
              chunk: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
        """The rows of a result larger than one small chunk, counting rows and bytes as they come."""
        out: list[dict[str, Any]] = []
        size = 0
        while chunk:  # small chunks: the byte limit is checked before much more is held
            for row in chunk:
                for v in row:
                    if v.__class__ is str or v.__class__ is bytes:
                        size += len(v)
                out.append(build(row))
            if size > self._max_bytes:
                raise StateError(f"query result is larger than {self._max_bytes:,} bytes; select fewer rows "
                                 "or columns")
            if len(out) > self._max_rows:
                raise StateError(f"query returned more than {self._max_rows} rows; add a LIMIT")
            if len(chunk) < _CHUNK:
                break
            chunk = cur.fetchmany(_CHUNK)
        return out

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
        return self.conn.execute(_HOST_TAG + sql, params).fetchall()

    # -- introspection ------------------------------------------------------------------------
    def tables(self) -> list[str]:
        rows = self.host("SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' "
                         "ORDER BY name")
        return [r[0] for r in rows]

    def columns(self, table: str) -> list[str]:
        return [r[1] for r in self.host("SELECT * FROM pragma_table_info(?)", (table,))]

    def row_counts(self) -> dict[str, int]:
        return {t: self.host(f"SELECT count(*) FROM {quote_identifier(t)}")[0][0] for t in self.tables()}

    def table_rows(self, table: str) -> list[list[Any]]:
        rows = [list(r) for r in self.host(f"SELECT * FROM {quote_identifier(table)}")]
        rows.sort(key=lambda r: json.dumps(r, default=_b64, sort_keys=True))
        return rows

    def table_digests(self, tables: list[str] | None = None) -> dict[str, str]:
        """SHA-256 of each table's rows, order-independent."""
        known = set(self.tables())
        names = tables or sorted(known)
        out: dict[str, str] = {}
        for t in names:
            if t not in known:
                out[t] = "<missing>"
                continue
            # repr of SQLite values (int, float, str, bytes, None) is exact and deterministic; sorting the
            # row texts makes the digest independent of row order
            rows = sorted(repr(r) for r in self.host(f"SELECT * FROM {quote_identifier(t)}"))
            out[t] = hashlib.sha256("\n".join(rows).encode("utf-8", "surrogatepass")).hexdigest()
        return out

    def digest(self) -> str:
        blob = json.dumps(sorted(self.table_digests().items()))
        return hashlib.sha256(blob.encode()).hexdigest()

    def close(self) -> None:
        self.guard.cursor.close()
        self._host.close()
        self.conn.close()
        if self._printf_conn is not None:
            self._printf_conn.close()


def _check_printf(fmt: str, args: tuple[Any, ...]) -> None:
    i = 0  # the argument a '*' or a conversion consumes next
    for m in _PRINTF_SPEC.finditer(fmt):
        if m.group(4) == "%":
            continue
        for part in (m.group(2), m.group(3)):
            if part == "*":
                n = args[i] if i < len(args) else 0
                i += 1
                if isinstance(n, int | float) and abs(n) > _MAX_PRINTF_WIDTH:
                    raise ValueError("printf width or precision too large")
            elif part and int(part) > _MAX_PRINTF_WIDTH:
                raise ValueError("printf width or precision too large")
        i += 1


def _state_error(e: sqlite3.Error | sqlite3.Warning | MemoryError) -> StateError:
    if isinstance(e, MemoryError):
        return StateError("out of memory", transient=True)
    msg = str(e)
    if isinstance(e, sqlite3.Warning):  # e.g. "You can only execute one statement at a time."
        return StateError(msg)
    if "user-defined function raised exception" in msg:
        return StateError(f"printf/format width or precision larger than {_MAX_PRINTF_WIDTH}")
    if msg == "not authorized":
        return StateError("not authorized: the statement does something this view does not allow")
    if "interrupted" in msg:
        return StateError("statement took too long and was interrupted", transient=True)
    if "out of memory" in msg:
        return StateError("out of memory", transient=True)
    if "not authorized" in msg or "prohibited" in msg:
        return StateError(f"not authorized: {msg}")
    if "readonly database" in msg:
        return StateError("not authorized: this database view is read-only")
    return StateError(msg)


def _b64(v: Any) -> str:
    if isinstance(v, bytes):
        return "b64:" + base64.b64encode(v).decode()
    raise TypeError(type(v).__name__)


@functools.lru_cache(maxsize=1024)
def _row_builder(cols: tuple[str, ...]) -> Callable[[tuple[Any, ...]], dict[str, Any]]:
    """A function from a result row to its dict keyed by ``cols``: a dict display, several times faster
    than ``dict(zip(cols, row))`` and equal to it (a repeated name keeps its last value). Only indices are
    in the generated text; the column names are values in its globals. Cached per column list, so SQL
    texts that differ only in their constants share one."""
    names: dict[str, Any] = {f"c{i}": c for i, c in enumerate(cols)}
    items = ", ".join(f"c{i}: row[{i}]" for i in range(len(cols)))
    exec(f"def build(row):\n    return {{{items}}}\n", names)  # the text holds indices only
    return names["build"]  # type: ignore[no-any-return]


def _named(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    """``fn`` named ``db.<name>`` for the messages tool code sees (``db.query() takes from 1 to 2
    positional arguments ...``); Python words those from the code object."""
    fn.__code__ = fn.__code__.replace(co_name=name, co_qualname=f"db.{name}")
    fn.__name__, fn.__qualname__ = name, f"db.{name}"
    return fn


def _check_params(params: Any, max_vars: int) -> Any:
    cls = params.__class__
    if cls is list or cls is tuple:
        if len(params) > max_vars:
            raise StateError(f"too many parameters ({len(params)} > {max_vars})")
        for v in params:
            if v.__class__ not in _EXACT:
                break
        else:
            return params if cls is tuple else tuple(params)
        return tuple(_plain(v) for v in params)
    if params is None:
        return ()
    if isinstance(params, dict):
        if len(params) > max_vars:
            raise StateError(f"too many parameters ({len(params)} > {max_vars})")
        return {str(k): _plain(v) for k, v in params.items()}
    if isinstance(params, list | tuple):
        return _check_params(list(params), max_vars)
    raise StateError("params must be a list, tuple or dict of values")


def _plain(v: Any) -> Any:
    """A bindable value, subclasses stripped (a ``str`` subclass becomes a plain str)."""
    if v.__class__ in _EXACT:
        return v
    for base in (bool, int, float, str, bytes):
        if isinstance(v, base):
            return base(v)  # type: ignore[arg-type]
    raise StateError(f"parameter values must be str, int, float, bool, bytes or None, not {type(v).__name__}")


class DbFacade:
    """The ``db`` object that tool and check code receive.

    It holds its :class:`StateDB` in a closure, not an attribute, so restricted
    code (which cannot touch ``_``-names anyway) has nothing to reach through.
    """

    __slots__ = ("execute", "query")

    def __init__(self, state: StateDB, *, read_only: bool, timeout_s: float | Callable[[], float]):
        seconds = timeout_s() if callable(timeout_s) else float(timeout_s)
        self.query = state.statement("ro" if read_only else "rw", fetch=True, timeout_s=seconds)
        if read_only:
            def execute(sql: str, params: Any = ()) -> dict[str, Any]:
                """Refused: checks read the state, they never write it."""
                raise StateError("this database view is read-only")

            self.execute = _named(execute, "execute")
        else:
            self.execute = state.statement("rw", fetch=False, timeout_s=seconds)

    def __repr__(self) -> str:
        return "<db>"
