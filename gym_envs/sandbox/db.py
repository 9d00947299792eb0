"""The SQLite state of an episode and the ``db`` facade that tool code sees.

Contract (gym_envs/ENVSPEC.md, "Tool code"): spec code never holds a ``sqlite3.Connection``. It gets a
:class:`~gym_envs.sandbox.facade.DbFacade` with two methods, ``query(sql, params=()) -> list[dict]`` and
``execute(sql, params=()) -> {"rowcount", "lastrowid"}``: one statement per call, parameters always bound.

:class:`StateDB` owns the connection and applies to every statement of untrusted code the policy of
:mod:`gym_envs.sandbox.sqlpolicy` (authorizer in modes ``setup``, ``rw`` and ``ro``, function allow-list,
keyword filter) plus: a read-only view's statements run under a text of their own (see "Read-only
statements" below); a progress-handler deadline; length limits (SQL text, values, LIKE patterns,
columns, bound variables, result rows and bytes, database pages). What a statement binds and returns
(plain parameter values, rows as dicts) is :mod:`gym_envs.sandbox.binding`'s.

Read-only statements. SQLite authorizes a statement when it prepares it (``sqlite3_set_authorizer``: the
callback runs during ``sqlite3_prepare*``, and again whenever ``sqlite3_step`` re-prepares it, never while it
runs), and the connection's statement cache serves a statement again by its exact text. A check running a text a
tool prepared in ``rw`` mode (``WITH x AS (...) DELETE ...``) would get the tool's statement, authorized for
writing. So every statement of a read-only view runs as its text behind a per-process tag (:data:`_RO_TAG`, which
holds the mark untrusted SQL may not contain, in any mode): no statement of another mode has that text, so each is
prepared, and authorized, in ``ro`` mode, where the authorizer denies every write (``INSERT``, ``UPDATE``,
``DELETE``, and everything that is not reading). No pragma is toggled between tool calls and checks: changing one
(``PRAGMA query_only``) expires every prepared statement of the connection, so the next call prepares (and
authorizes) all its statements again.

The guard. What the authorizer and the progress handler read lives in one :class:`Guard` per connection. A
statement function refuses to run unless its facade's owner token is the one the engine installed for the running
call (so a ``db`` works only inside a call of its own episode) and no other statement is running on the connection
(its mode would be installed: a nested call, from whatever callback, is refused before it touches anything); it
saves the authorizer mode and deadline, sets its own, and restores the saved ones.

Episodes. A connection holds one program's template database and an open ``SAVEPOINT episode``;
:meth:`StateDB.reset_episode` rolls back to it, which restores the template page for page and resets the connection's
``last_insert_rowid()`` and ``changes()`` to a fresh connection's values (0, 0: :meth:`StateDB.counters`), so a reused
connection is indistinguishable from a new one. Tool calls run inside that transaction without a savepoint of their own
(:attr:`StateDB.total_changes` tells whether a call wrote); the engine undoes a failed call that wrote by rolling back
to the episode start and replaying, using :meth:`StateDB.savepoint` there. When SQLite aborts the whole transaction (an
interrupted write, out of memory) :attr:`StateDB.lost` turns true, every further statement of untrusted code is refused,
and the owner rebuilds the episode. The host uses :meth:`StateDB.host` for savepoints and introspection; its statements
carry a per-process tag, which untrusted SQL may not contain, so it is never served a statement the host prepared.

Digests. :meth:`StateDB.table_digests` reads a table only when its content may have changed since its digest
was last computed (:class:`~gym_envs.sandbox.digests.DigestCache`): the authorizer notes the tables each
untrusted statement writes while SQLite prepares it, each statement's text is noted as it begins (what it may
have written is marked before the cache is next used), and every savepoint, rollback, image load, schema
change and trusted write is told to the cache; a table updated in some columns only since a known content is read
from those columns (:mod:`~gym_envs.sandbox.rereads`). Other reads of content: :class:`.content.ContentReads`.
"""

from __future__ import annotations

import contextlib
import secrets
import sqlite3
import time
from collections.abc import Callable, Mapping, MutableMapping
from sqlite3 import SQLITE_UPDATE
from typing import Any

from gym_envs.errors import StateError
from gym_envs.sandbox.binding import EXACT_TYPES, bind_params, row_builder
from gym_envs.sandbox.content import ContentReads
from gym_envs.sandbox.digests import DigestCache, digest_of, fold
from gym_envs.sandbox.facade import named
from gym_envs.sandbox.limits import SqlLimits
from gym_envs.sandbox.rereads import TableReads
from gym_envs.sandbox.sqlpolicy import (
    _FunctionErrors,
    authorize,
    install_functions,
    leading_keyword,
    quote_identifier,
    split_sql,
    state_error,
)

__all__ = ["Guard", "StateDB", "digest_of"]

_READ_KEYWORDS = frozenset({"SELECT", "WITH", "VALUES"})
_WRITE_KEYWORDS = frozenset({"INSERT", "UPDATE", "DELETE", "REPLACE"})
_ALLOWED = {"setup": frozenset({"CREATE"}), "rw": _READ_KEYWORDS | _WRITE_KEYWORDS, "ro": _READ_KEYWORDS}
_HOST_MARK = "envwright host"  #: in the tag of every host statement; refused in untrusted SQL
_HOST_TAG = f"/* {_HOST_MARK} {secrets.token_hex(8)} */ "
#: before the text of every read-only view's statement (see the module docstring); untrusted SQL may not hold it
_RO_TAG = f"/* {_HOST_MARK} ro {secrets.token_hex(8)} */ "
_RESET_TABLE = "envwright_reset"
_KW_CACHE_MAX = 4096
_RESET_ROWID = _HOST_TAG + f"INSERT OR REPLACE INTO temp.{_RESET_TABLE} (rowid) VALUES (0)"
_RESET_CHANGES = _HOST_TAG + f"UPDATE temp.{_RESET_TABLE} SET x = 0 WHERE 0"
_SET_ROWID = _HOST_TAG + f"INSERT OR REPLACE INTO temp.{_RESET_TABLE} (rowid) VALUES (?)"
_RELEASE_CALL = _HOST_TAG + "RELEASE call"
_ROLLBACK_CALL = _HOST_TAG + "ROLLBACK TO call"
_ROLLBACK_EPISODE = _HOST_TAG + "ROLLBACK TO episode"
_SCHEMA = _HOST_TAG + "SELECT type, name, tbl_name, sql FROM main.sqlite_master ORDER BY type, name"
_COUNTERS = _HOST_TAG + "SELECT last_insert_rowid(), changes()"
_WRITE_ACTIONS = frozenset({sqlite3.SQLITE_INSERT, sqlite3.SQLITE_UPDATE, sqlite3.SQLITE_DELETE})
_NEVER = float("inf")
_CHUNK = 16  #: rows fetched at a time (the row and byte limits are checked between chunks)
_clock = time.perf_counter
_NOT_IN_CALL = ("db can only be used during the tool call (or check) it was passed to, not after it, nor "
                "from another episode")
_BUSY = "db is already running a statement; one statement at a time"


class Guard:
    """What one connection's authorizer and progress handler read, and the cursor of untrusted statements."""

    __slots__ = ("current", "cursor", "deadline", "episode", "mode", "owner")

    def __init__(self) -> None:
        self.mode = "host"  #: the authorizer mode: setup, rw or ro while an untrusted statement runs, else host
        self.cursor: Any = None  #: runs untrusted statements; never left holding an unfinished one
        self.deadline = _NEVER  #: on the clock of :func:`time.perf_counter`: a running statement stops after it
        self.episode = False  #: an episode savepoint is open
        self.owner: object | None = None  #: the token of the facade whose call is running
        self.current = ""  #: the text of the last untrusted statement (the one SQLite prepares while it runs)

    @property
    def busy(self) -> bool:
        """An untrusted statement is running on the connection (its mode is installed)."""
        return self.mode != "host"

    def progress(self) -> int:
        """The progress handler: 1 (interrupt) once the clock is past ``deadline``, else 0."""
        return 1 if _clock() > self.deadline else 0


class StateDB(ContentReads):
    """One in-memory SQLite database with the guards described in the module docstring."""

    def __init__(self, limits: SqlLimits | None = None):
        self.limits = limits or SqlLimits()
        self._max_rows, self._max_bytes = self.limits.max_rows, self.limits.max_result_bytes
        self.conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        self.guard = Guard()
        self._function_errors = _FunctionErrors()
        self._savepoint = False  # a call savepoint is open
        self._native_conn: sqlite3.Connection | None = None
        self._counters_at = -1  # total_changes when last_insert_rowid() and changes() were last zeroed
        self._readable: set[str] = set()  # lower-cased names of the schema's tables
        self._tables: list[str] | None = None  # the schema's tables by name, once listed
        self._reads = TableReads(self._host_rows)  # reads a table for its digest (what its schema allows)
        self._admitted: dict[str, dict[str, str]] = {m: {} for m in _ALLOWED}  # mode -> text -> keyword
        self._shapes: dict[str, tuple[int, Callable[[tuple[Any, ...]], dict[str, Any]], tuple[str, ...]]] = {}
        # statement text -> (rows that need no counting, row builder, column names)
        self._run_owner = object()  # the owner token of run()'s statements
        self._statements: dict[tuple[str, bool, float], Callable[..., Any]] = {}  # run()'s functions
        self._digests = DigestCache()
        self._prepared = self._digests.prepared
        self._pristine = True  # no statement of spec code nor of host() has run (see load_image)
        self._configure()
        self.guard.cursor = self.conn.cursor()
        self._host = self.conn.cursor()  # the host's fixed statements (no cursor to build per statement)

    # -- configuration ------------------------------------------------------------------------
    def _configure(self) -> None:
        c, lim = self.conn, self.limits
        c.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, lim.max_value_length)
        c.setlimit(sqlite3.SQLITE_LIMIT_SQL_LENGTH, lim.max_sql_length + len(_RO_TAG))  # the limit is _admit's
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
        install_functions(c, self._native, lim.max_format_width, self._function_errors)
        c.set_authorizer(self._authorize)
        c.set_progress_handler(self.guard.progress, lim.progress_interval)

    def _native(self) -> sqlite3.Connection:
        """A private connection with SQLite's own functions (for checked printf and date calls)."""
        if self._native_conn is None:
            self._native_conn = sqlite3.connect(":memory:", check_same_thread=False)
            self._native_conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, self.limits.max_value_length)
        return self._native_conn

    def _authorize(self, action: int, arg1: str | None, arg2: str | None, dbname: str | None,
                   trigger: str | None) -> int:
        guard = self.guard
        mode = guard.mode
        if mode == "host":
            return sqlite3.SQLITE_OK
        prepared = self._prepared  # SQLite is preparing the statement: note the tables it writes
        written = prepared.get(guard.current)
        if written is None:
            written = prepared[guard.current] = set()
        if action in _WRITE_ACTIONS and arg1:  # an UPDATE's own column, else the whole table (see DigestCache)
            written.add((fold(arg1), arg2) if action == SQLITE_UPDATE and arg2 and trigger is None else fold(arg1))
        return authorize(mode, self._readable, action, arg1, arg2, dbname)

    def _refresh_tables(self) -> None:
        """After the schema may have changed (setup, a new image): list the tables again (lower-cased as
        :func:`~gym_envs.sandbox.sqlpolicy.authorize` looks them up) and tell the digest cache
        (:meth:`DigestCache.schema`)."""
        schema = self._host.execute(_SCHEMA).fetchall()
        self._readable = {r[1].lower() for r in schema if r[0] == "table"}
        self._tables = None
        self._reads.clear()
        self._digests.schema(schema, self._foreign_keys)

    def _foreign_keys(self, table: str) -> list[tuple[Any, ...]]:
        """``(parent, on_update, on_delete)`` of each foreign key of ``table`` (a ``PRAGMA`` statement: no
        table-valued function, see :meth:`load_image`)."""
        return [(r[2], r[5], r[6]) for r in self._host_rows(f"PRAGMA main.foreign_key_list({quote_identifier(table)})")]

    def _sync_digests(self) -> None:
        """Bring the digest cache up to the content: the marks of the statements that ran since it was last
        used, and the rollback SQLite did when it ended the transaction itself. Called before every digest,
        savepoint and rollback."""
        self._digests.settle()
        if self._digests.in_savepoint and not self.conn.in_transaction:
            self._digests.aborted()

    def _open_savepoint(self, name: str) -> None:
        """``SAVEPOINT name``, told to the digest cache."""
        self._sync_digests()
        self._host.execute(f"{_HOST_TAG}SAVEPOINT {name}")
        self._digests.opened(name)

    def _rollback_to(self, name: str, sql: str | None = None) -> None:
        """``ROLLBACK TO name`` (``sql``, when given, is its text), told to the digest cache
        (``sqlite3.OperationalError`` when it is not open)."""
        self._sync_digests()
        self._host.execute(sql or f"{_HOST_TAG}ROLLBACK TO {name}")
        self._digests.rolled_back(name)

    # -- images and episodes ------------------------------------------------------------------
    def image(self) -> bytes:
        """A byte image of the whole database (``sqlite3`` serialize)."""
        return self.conn.serialize()

    def load_image(self, image: bytes, digests: dict[str, str] | None = None) -> None:
        """Replace the database content with ``image`` (ends any open episode); ``digests`` are its table
        digests when known (:meth:`table_digests` of the content the image was taken of)."""
        if self.conn.in_transaction:
            self.conn.execute(_HOST_TAG + "ROLLBACK")
        self.guard.episode = self._savepoint = False
        self._forget_statements()
        self._drop_cursor()
        if self._pristine:
            self.conn.deserialize(image)
        else:
            # SQLite (3.40) frees the eponymous virtual tables a connection has used (json_each, pragma_*) when
            # deserialize replaces its database, and crashes on their next use: copy the pages in instead
            source = sqlite3.connect(":memory:")
            try:
                source.deserialize(image)
                source.backup(self.conn)
            finally:
                source.close()
        self.conn.execute(_HOST_TAG + f"PRAGMA max_page_count = {int(self.limits.max_db_pages)}")
        self._refresh_tables()
        self._digests.reset(digests)

    def open_episode(self) -> None:
        """Start an episode on the current content: everything after this can be rolled back."""
        if self.guard.episode:
            raise RuntimeError("an episode is already open on this connection")
        self._counters_at = -1
        self._reset_counters()  # before the savepoint, so the scratch row is part of the baseline
        self._open_savepoint("episode")
        self.guard.episode = True

    def reset_episode(self) -> None:
        """Roll back to the start of the episode (the template), cheaply."""
        if not self.guard.episode or self.lost:
            raise RuntimeError("no intact episode to reset")
        self._savepoint = False
        self._rollback_to("episode", _ROLLBACK_EPISODE)
        self._reset_counters()

    def _reset_counters(self) -> None:
        # last_insert_rowid() and changes() belong to the connection: each episode gets a fresh connection's (0, 0),
        # so reuse is invisible and replays agree. They are known zero (_counters_at) while no row changed since and
        # no statement failed (one that fails after an insert moves last_insert_rowid() alone: _failed).
        if self.conn.total_changes == self._counters_at:
            return
        self._host.execute(_RESET_ROWID)
        self._host.execute(_RESET_CHANGES)
        self._counters_at = self.conn.total_changes

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
        self._open_savepoint("call")
        self._savepoint = True

    def release(self, commit: bool) -> None:
        """Keep (``commit``) or undo everything written since :meth:`savepoint`."""
        if not self._savepoint:
            return
        self._savepoint = False
        if not self.conn.in_transaction:  # SQLite already rolled everything back
            return
        if not commit:
            self._rollback_to("call", _ROLLBACK_CALL)
        self._host.execute(_RELEASE_CALL)
        self._digests.released("call")

    def counters(self) -> tuple[int, int]:
        """The connection's ``(last_insert_rowid(), changes())``, which SQL may read: (0, 0) unread while known zero."""
        return (0, 0) if self.conn.total_changes == self._counters_at else self._host.execute(_COUNTERS).fetchone()

    def fork(self, n: int) -> tuple[Any, ...] | None:
        """A checkpoint between calls for :meth:`back_to`: savepoint ``fork<n>``, :meth:`counters` and the statement
        cursor's ``lastrowid``; None when they cannot be restored exactly (the last statement changed 2+ rows)."""
        if not self.guard.episode or self.lost or self._savepoint:
            return None
        rowid, changes = self.counters()
        if changes > 1:
            return None
        saved = (rowid, changes, self.guard.cursor.lastrowid)
        self._open_savepoint(f"fork{int(n)}")
        return saved

    def back_to(self, n: int, saved: tuple[Any, ...]) -> bool:
        """Roll the episode back to checkpoint ``fork<n>`` (see :meth:`fork`) and put its counters back;
        False when the savepoint is gone (the episode was reset or rebuilt since: nothing was done)."""
        if not self.guard.episode or self.lost or self._savepoint:
            return False
        try:
            self._rollback_to(f"fork{int(n)}")
        except sqlite3.OperationalError:  # no such savepoint
            return False
        rowid, changes, cursor_rowid = saved
        if cursor_rowid is None:
            self._drop_cursor()  # a fresh cursor has no lastrowid, as the statement cursor had none
        else:
            self.guard.cursor.execute(_SET_ROWID, (cursor_rowid,))
        self._host.execute(_SET_ROWID, (rowid,))
        if changes == 0:
            self._host.execute(_RESET_CHANGES)
            self._counters_at = self.conn.total_changes if rowid == 0 else -1  # at (0, 0): zeroed
        return True

    # -- statements ---------------------------------------------------------------------------
    def _admit(self, sql: Any, mode: str) -> tuple[str, str]:
        """``(sql, keyword)`` for a statement ``mode`` allows (``sql`` as an exact ``str``), else
        :class:`StateError`; the verdict is cached per mode and statement text."""
        if not isinstance(sql, str):
            raise StateError(f"sql must be a string, not {type(sql).__name__}")
        sql = str.__str__(sql)  # a subclass is copied once, so its methods cannot change the text later
        if len(sql) > self.limits.max_sql_length:
            raise StateError(f"sql is too long ({len(sql)} > {self.limits.max_sql_length} characters)")
        if _HOST_MARK in sql:
            raise StateError(f"sql may not contain {_HOST_MARK!r} (it marks the host's own statements)")
        kw = leading_keyword(sql)
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

    def run(self, sql: str, params: Any = (), *, mode: str, fetch: bool, timeout_s: float | None = None) -> Any:
        """Run one statement of untrusted code in ``mode`` (``setup``, ``rw``, ``ro``), for the host (schema
        and seed scripts, ``sql`` checks). Returns the rows as a list of dicts when ``fetch``, else
        ``{"rowcount", "lastrowid"}``."""
        key = (mode, fetch, timeout_s or self.limits.statement_timeout_s)
        fn = self._statements.get(key)
        if fn is None:
            fn = self._statements[key] = self.statement(mode, fetch=fetch, timeout_s=key[2], owner=self._run_owner)
        guard = self.guard
        saved, guard.owner = guard.owner, self._run_owner
        try:
            return fn(sql, params)
        finally:
            guard.owner = saved

    def statement(self, mode: str, *, fetch: bool, timeout_s: float, owner: object) -> Callable[..., Any]:
        """A function ``(sql, params=()) -> result`` that runs one statement of untrusted code in ``mode``
        while ``owner`` is the connection's owner token (:attr:`Guard.owner`). Everything that does not
        change between statements (the mode's cache of admitted statements, the limits) is bound once; it is
        the hot path of every ``db`` call, so the constants it reads are closure variables too."""
        state, guard, conn = self, self.guard, self.conn
        ran = self._digests.ran.add
        self._pristine = False
        admitted = self._admitted_cache(mode).get
        shape_of = self._shapes.get
        max_vars = self.limits.max_variables
        read_only = mode == "ro"
        seconds = float(timeout_s)
        clock, exact, chunk = _clock, EXACT_TYPES, _CHUNK

        def run(sql: Any, params: Any = ()) -> Any:
            if guard.owner is not owner or guard.mode != "host":  # refused before the guard is touched
                raise StateError(_NOT_IN_CALL if guard.owner is not owner else _BUSY)
            kw = admitted(sql) if sql.__class__ is str else None
            if kw is None:
                sql, kw = state._admit(sql, mode)
            if (params.__class__ is not list and params.__class__ is not tuple) or len(params) > max_vars:
                params = bind_params(params, max_vars)
            else:
                for v in params:
                    if v.__class__ not in exact:  # subclasses are stripped, anything else refused
                        params = bind_params(params, max_vars)
                        break
            if read_only:  # prepared in ro mode only: no other mode's statement has this text
                sql = _RO_TAG + sql
            if not conn.in_transaction and guard.episode:
                raise StateError("the episode's transaction was aborted by an earlier error; no further "
                                 "statements run in this call", transient=True)
            cur = guard.cursor
            saved_mode, saved_deadline = guard.mode, guard.deadline
            guard.current = sql
            ran(sql)  # from here on it may write: marked in the digest cache before the cache is used
            guard.mode = mode
            guard.deadline = clock() + seconds
            try:
                if fetch:
                    rows = cur.execute(sql, params).fetchmany(chunk)
                    small, build, _ = shape_of(sql) or state._shape(sql, cur)
                    # the whole result, and too small for the limits: no counting
                    return ([build(rows[0])] if len(rows) == 1 else list(map(build, rows))) if len(rows) <= small \
                        else state._rows(cur, build, rows)
                if kw == "WITH":
                    return state._execute_with(cur, sql, params)
                cur.execute(sql, params)
                if cur.description is not None:  # rows are pending (RETURNING): finish the statement now
                    state._drop_cursor()
                return {"rowcount": cur.rowcount, "lastrowid": cur.lastrowid}
            except BaseException as e:
                raise state._failed(e) from None
            finally:
                guard.mode = saved_mode
                guard.deadline = saved_deadline

        return named(run, "query" if fetch else "execute")

    def _admitted_cache(self, mode: str) -> dict[str, str]:
        if mode not in _ALLOWED:
            raise ValueError(f"unknown mode {mode!r}")
        return self._admitted[mode]

    def _failed(self, e: BaseException) -> BaseException:
        """After a statement raised ``e``: the cursor replaced (it may hold an unfinished statement), the counters not
        known (:meth:`counters`); to raise, a :class:`StateError` for SQLite's own errors, else ``e`` itself."""
        self._counters_at = -1
        self._drop_cursor()
        if isinstance(e, sqlite3.Error | sqlite3.Warning | MemoryError):
            return state_error(e, self._function_errors)
        return e

    def _drop_cursor(self) -> None:
        """Replace the cursor of untrusted statements, so its statement (if unfinished) is reset now."""
        with contextlib.suppress(sqlite3.Error):
            self.guard.cursor.close()
        with contextlib.suppress(sqlite3.Error):  # a closed connection: the closed cursor stays
            self.guard.cursor = self.conn.cursor()

    def _shape(self, sql: str, cur: sqlite3.Cursor) -> tuple[int, Callable[[tuple[Any, ...]], dict[str, Any]],
                                                             tuple[str, ...]]:
        """``(small, build, cols)`` for ``sql``, just executed on ``cur``: ``build`` turns a row into its dict
        keyed by the column names ``cols``; a whole result of at most ``small`` rows is under the row and
        byte limits without counting (SQLite refuses any value longer than ``max_value_length``)."""
        cols = tuple(d[0] for d in cur.description or ())
        small = min(_CHUNK - 1, self._max_rows,
                    self._max_bytes // max(1, self.limits.max_value_length * len(cols)))
        shape = self._shapes[sql] = (small, row_builder(cols), cols)
        return shape

    def _execute_with(self, cur: sqlite3.Cursor, sql: str, params: Any) -> dict[str, Any]:
        """``db.execute`` of a ``WITH`` statement: Python reports no rowcount for WITH ... UPDATE/DELETE, the
        change counter does."""
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
            finally:
                if mode == "setup":
                    self._refresh_tables()
        return len(stmts)

    def host(self, sql: str, params: Any = ()) -> list[tuple[Any, ...]]:
        """A trusted statement (introspection); one that is not a ``SELECT`` marks every table in the digest
        cache (it may have written them, or rolled them back)."""
        self._pristine = False
        if leading_keyword(sql) != "SELECT":
            self._sync_digests()
            self._digests.mark_all()
            self._counters_at = -1  # (it may move them: see _failed)
        return self.conn.execute(_HOST_TAG + sql, params).fetchall()

    # -- introspection ------------------------------------------------------------------------
    def tables(self) -> list[str]:
        """The schema's tables, by name (kept until the schema changes: only setup creates tables)."""
        if self._tables is None:
            rows = self.host("SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' "
                             "ORDER BY name")
            self._tables = [r[0] for r in rows]
        return list(self._tables)

    def table_digests(self, tables: list[str] | None = None, *, cached: bool = True,
                      memo: MutableMapping[str, str] | None = None) -> dict[str, str]:
        """The digest of each table (:func:`~gym_envs.sandbox.digests.rows_digest`; ``<missing>`` for a name
        that is no table), from the digest cache where the table cannot have changed since it was computed
        (``cached=False``, or :attr:`SqlLimits.digest_cache` off: every one read afresh). ``memo`` (folded table
        name -> digest): the digests the caller knows of this very content (:mod:`~gym_envs.sandbox.recall`),
        used where the cache has none (and not kept in the cache: a later caller that asks without the memo gets
        the table read); each table read here is added to it, and its rows to :data:`~.digests.ROWS_READ`."""
        self._sync_digests()
        known = set(self.tables())
        cache = self._digests
        cached = cached and self.limits.digest_cache
        if not cached:
            memo = None
        out: dict[str, str] = {}
        for t in tables or sorted(known):
            if t not in known:
                out[t] = "<missing>"
                continue
            key = fold(t)
            digest = cache.get(key) if cached else None
            if digest is None and memo is not None:
                digest = memo.get(key)
            if digest is None:
                digest = self._reads.read(t, cache.base(key) if cached else None)
                cache.put(key, digest)
                if memo is not None:
                    memo[key] = digest
            out[t] = digest
        return out

    def _host_rows(self, sql: str, params: Any = ()) -> list[tuple[Any, ...]]:
        """The rows of a trusted statement that writes nothing (a read, a ``PRAGMA`` that only reports)."""
        return self._host.execute(_HOST_TAG + sql, params).fetchall()

    def known_digest(self, table: str, memo: Mapping[str, str] | None = None) -> str | None:
        """``table``'s digest when it is known without reading the table (the digest cache's, else ``memo``'s, as
        :meth:`table_digests` takes it), else None (also with :attr:`SqlLimits.digest_cache` off)."""
        if not self.limits.digest_cache:
            return None
        self._sync_digests()
        key = fold(table)
        digest = self._digests.get(key)
        return memo.get(key) if digest is None and memo is not None else digest

    def digest(self) -> str:
        """SHA-256 of every table's digest."""
        return digest_of(self.table_digests())

    def close(self) -> None:
        """Close the connections."""
        self.guard.cursor.close()
        self._host.close()
        self.conn.close()
        if self._native_conn is not None:
            self._native_conn.close()
