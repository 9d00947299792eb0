"""Table digests, and the exact per-table cache that keeps them cheap.

The formats, recorded in specs (``state`` and ``unchanged`` checks compare them; the world compiler and the τ²
converter write them): a table's digest (:func:`rows_digest`) is the SHA-256 of its rows' ``repr`` texts,
sorted and joined by newlines (``repr`` of SQLite's values is exact and deterministic; sorting makes it
independent of row order); the state's digest (:func:`digest_of`) is the SHA-256 of the tables' digests in
name order.

:class:`DigestCache` keeps each table's digest until the table's content may have changed. Its
:class:`~gym_envs.sandbox.db.StateDB` tells it of every event that can change content:

* **a statement ran** (:meth:`DigestCache.mark`, with every table it may have written). The connection's
  authorizer is asked about each table a statement writes when SQLite prepares it, the child tables that
  foreign-key actions write included (``ON DELETE``/``ON UPDATE`` ``CASCADE``, ``SET NULL``, ``SET DEFAULT``,
  also for the rows a ``REPLACE`` deletes); :func:`write_closure` adds those children again from the schema's
  foreign keys, transitively. A statement the statement cache serves is not prepared again, so the set is
  kept per statement text for the schema; one whose set is unknown marks every table.
* **a savepoint was opened** (:meth:`DigestCache.opened`) **or rolled back to**
  (:meth:`DigestCache.rolled_back`): a rollback drops the digest of every table marked since the savepoint
  opened (its content went back to what it was then, which a digest taken since may not show); a table not
  marked since has the content it had, so its digest stays. When SQLite ended the transaction itself
  (:meth:`DigestCache.aborted`) the content is what it was before the outermost savepoint.
* **the content was replaced** (an image loaded, the schema changed: :meth:`DigestCache.reset`), or a
  trusted statement wrote it (every table is marked).

Marks and savepoint openings are numbered by one counter that only grows, so "marked since" is one
comparison; a mark is never taken back (a rollback that undoes a write keeps its mark, and a later rollback
past it drops that table's digest again: a recompute, never a wrong digest). Nothing of this lives in SQL: no
trigger, table or function is added to the connection, so nothing spec code can observe changes with the
cache (``changes()``, ``last_insert_rowid()``, the connection's change count behind a ``WITH`` statement's
row count, how deep its foreign-key cascades may go before SQLite's trigger-depth limit).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["DigestCache", "digest_of", "rows_digest", "write_closure"]

_FK_WRITES = frozenset({"CASCADE", "SET NULL", "SET DEFAULT"})  #: foreign-key actions that write the child table
_MAX_STATEMENTS = 4096  #: statement texts whose write sets are kept (past it, all are forgotten and learned again)


def rows_digest(rows: Iterable[tuple[Any, ...]]) -> str:
    """A table's digest: SHA-256 of its rows' ``repr`` texts, sorted, joined by newlines."""
    return hashlib.sha256("\n".join(sorted(map(repr, rows))).encode("utf-8", "surrogatepass")).hexdigest()


def digest_of(tables: dict[str, str]) -> str:
    """The state's digest: SHA-256 of its tables' digests, in name order."""
    return hashlib.sha256(json.dumps(sorted(tables.items())).encode()).hexdigest()


def write_closure(written: Iterable[str], children: Mapping[str, frozenset[str]]) -> frozenset[str]:
    """``written`` and every table a foreign-key action can write from it, transitively; ``children`` maps a
    table to the tables whose foreign keys to it have an action that writes (all names lower-cased)."""
    out = set(written)
    todo = list(out)
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in out:
                out.add(child)
                todo.append(child)
    return frozenset(out)


class DigestCache:
    """The table digests of one connection's content, each kept until its table may have changed (see the
    module docstring). Tables are named lower-cased; savepoints by their SQL names."""

    __slots__ = ("_children", "_digests", "_marked", "_savepoints", "_schema", "_seq", "_writes")

    def __init__(self) -> None:
        self._digests: dict[str, str] = {}  #: table -> its digest, for the current content
        self._marked: dict[str, int] = {}  #: table -> the counter at its last mark
        self._savepoints: dict[str, int] = {}  #: open savepoint -> the counter when it opened
        self._seq = 0  #: the counter (only grows)
        self._writes: dict[str, frozenset[str]] = {}  #: statement text -> the tables it may write (this schema)
        self._children: dict[str, frozenset[str]] = {}  #: table -> the tables its foreign-key actions write
        self._schema: list[Any] = []  #: the schema the two above were made for

    def schema(self, schema: list[Any], foreign_keys: Callable[[str], list[Any]]) -> None:
        """The schema may have changed (setup ran, an image was loaded): the content's digests are forgotten,
        and when ``schema`` (``sqlite_master``'s ``(type, name, tbl_name, sql)`` rows) is not the one the
        statements' write sets were learned for, those are too. ``foreign_keys(table)`` gives the
        ``(parent, on_update, on_delete)`` of each of ``table``'s foreign keys."""
        self.reset()
        if schema == self._schema:
            return
        children: dict[str, set[str]] = {}
        for kind, name, *_ in schema:
            if kind == "table":
                for parent, on_update, on_delete in foreign_keys(name):
                    if on_update in _FK_WRITES or on_delete in _FK_WRITES:
                        children.setdefault(str(parent).lower(), set()).add(name.lower())
        self._children = {t: frozenset(c) for t, c in children.items()}
        self._writes = {}
        self._schema = schema

    def statement_ran(self, sql: str, written: set[str] | None, every_table: Iterable[str]) -> None:
        """Statement ``sql`` ran (or began): mark what it may have written. ``written`` holds the tables the
        authorizer saw it write when SQLite prepared it (None when the statement cache served it unprepared);
        with the children its foreign-key actions write, that is kept for ``sql``. A statement whose write set
        is unknown marks ``every_table``."""
        if written is not None:
            writes = write_closure(written, self._children)
            if len(self._writes) >= _MAX_STATEMENTS:
                self._writes = {}
            self._writes[sql] = writes
        else:
            known = self._writes.get(sql)
            writes = frozenset(every_table) if known is None else known
        if writes:
            self.mark(writes)

    def get(self, table: str) -> str | None:
        """The cached digest of ``table``, or None."""
        return self._digests.get(table)

    def put(self, table: str, digest: str) -> None:
        """Keep ``digest``, just computed from ``table``'s current content."""
        self._digests[table] = digest

    def mark(self, tables: Iterable[str]) -> None:
        """``tables`` may have changed: their digests are dropped, and dropped again by a rollback past now."""
        self._seq = seq = self._seq + 1
        marked, digests = self._marked, self._digests
        for t in tables:
            marked[t] = seq
            digests.pop(t, None)

    def opened(self, savepoint: str) -> None:
        """``savepoint`` is about to open. Called before the SQL runs: a savepoint that then fails to open
        leaves an entry that only makes later drops larger."""
        self._seq += 1
        self._savepoints.setdefault(savepoint, self._seq)  # a name opened twice: the older counter, more drops

    def undoing(self, savepoint: str) -> None:
        """The content is about to go back to ``savepoint``: drop the digests of the tables marked since it
        opened (of every marked table when it is unknown). Called before the SQL runs, so no digest of the
        content being undone outlives it, whether the rollback then succeeds or not."""
        self._drop_since(self._savepoints.get(savepoint, 0))

    def undone(self, savepoint: str) -> None:
        """The content went back to ``savepoint`` (its rollback succeeded): the tables marked since it opened
        hold what they held then, so they count as last marked then, and the savepoints opened since are gone."""
        since = self._savepoints.get(savepoint)
        if since is not None:
            self._back_to(since)

    def released(self, savepoint: str) -> None:
        """``savepoint`` was released (its content kept, its writes now part of the enclosing transaction's)."""
        self._savepoints.pop(savepoint, None)

    @property
    def in_savepoint(self) -> bool:
        """A savepoint is open (so the content may still be rolled back)."""
        return bool(self._savepoints)

    def aborted(self) -> None:
        """SQLite ended the transaction (an interrupted write, out of memory): the content went back to what it
        was before the outermost savepoint opened, and no savepoint is open."""
        if self._savepoints:
            since = min(self._savepoints.values())
            self._drop_since(since)
            self._back_to(since)
        self._savepoints = {}

    def _drop_since(self, since: int) -> None:
        for t, seq in self._marked.items():
            if seq > since:
                self._digests.pop(t, None)

    def _back_to(self, since: int) -> None:
        """The content is what it was at ``since``: later marks move back to it (a later rollback to a savepoint
        opened before it still drops those tables; one to a savepoint opened after it need not), and the
        savepoints opened after it are gone."""
        marked = self._marked
        for t, seq in marked.items():
            if seq > since:
                marked[t] = since
        self._savepoints = {n: s for n, s in self._savepoints.items() if s <= since}

    def reset(self, digests: Mapping[str, str] | None = None) -> None:
        """The content was replaced: forget everything; ``digests`` (table -> digest) are the new content's."""
        self._digests = {t.lower(): d for t, d in (digests or {}).items()}
        self._marked = {}
        self._savepoints = {}
