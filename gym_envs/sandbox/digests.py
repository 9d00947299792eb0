"""Table digests, and the exact per-table cache that keeps them cheap.

The formats, recorded in specs (``state`` and ``unchanged`` checks compare them; the world compiler and the τ²
converter write them): a table's digest (:func:`rows_digest`) is the SHA-256 of its rows' ``repr`` texts,
sorted and joined by newlines (``repr`` of SQLite's values is exact and deterministic; sorting makes it
independent of row order); the state's digest (:func:`digest_of`) is the SHA-256 of the tables' digests in
name order. :func:`read_digest` computes a table's digest from its rows, each row's text remembered for the next
read of the same row (a table read again after a write formats only the rows the write changed). The rows a read for a
digest gave, with their sorted texts (:class:`Kept`), are kept by that digest, the last ones within a bound
(:data:`ROWS_READ`): a dump of a table whose order its content decides, and whose digest is known, is made from them
(:mod:`~gym_envs.sandbox.recall`), and so is the digest of a table written since by updates of some columns only
(:mod:`~gym_envs.sandbox.rereads`).

:class:`DigestCache` keeps each table's digest until the table's content may have changed. Its
:class:`~gym_envs.sandbox.db.StateDB` tells it of every event that can change content:

* **a statement ran** (its text is added to :attr:`DigestCache.ran`; what it may have written is marked by
  :meth:`DigestCache.settle`, which its owner calls before every use of the cache: a digest, a savepoint, a
  rollback, a new schema). The connection's authorizer is asked about each table a statement writes when
  SQLite prepares it (:attr:`DigestCache.prepared`), the child tables that foreign-key actions write included
  (``ON DELETE``/``ON UPDATE`` ``CASCADE``, ``SET NULL``, ``SET DEFAULT``, also for the rows a ``REPLACE``
  deletes); :func:`write_closure` adds those children again from the schema's foreign keys, transitively. A
  statement the statement cache serves is not prepared again, so the set is kept per statement text for the
  schema; one whose set is unknown marks every table (:meth:`DigestCache.mark_all`), as does a trusted
  statement that may write. Between two uses of the cache no savepoint opens or rolls back, so the statements
  that ran in between are marked at once, and running one costs a set insertion. A table a statement writes only
  by its own ``UPDATE`` of named columns (the authorizer names each; not an insert, a delete, a trigger's write,
  nor a table its foreign-key actions reach) keeps its :class:`Base`: the content whose digest was last known,
  and the columns written since, which may differ from it (every other write drops the base).
* **a savepoint was opened** (:meth:`DigestCache.opened`) **or rolled back to**
  (:meth:`DigestCache.rolled_back`): the digest of every table marked since the
  savepoint opened is dropped (its content went back to what it was then, which a digest taken since may not
  show); a table not marked since has the content it had, so its digest stays; the digests known of the
  content the savepoint opened on (when it opened, or computed later of a table not marked since) are valid
  again, so they come back, and so do the bases it knew of that content (each savepoint keeps them). When
  SQLite ended the transaction itself (:meth:`DigestCache.aborted`) the content is what it was before the
  outermost savepoint. Savepoints are kept as SQLite keeps them, a stack in which a name means its most recent
  entry.
* **the content was replaced** (an image loaded: :meth:`DigestCache.reset`, with the new content's digests
  when known), or **the schema changed** (:meth:`DigestCache.schema`: every table is marked).

Marks and savepoint openings are numbered by one counter that only grows, so "marked since" is one
comparison; a mark is never taken back (a rollback that undoes a write keeps its mark, and a later rollback
past it drops that table's digest again: a recompute, never a wrong digest). Tables are keyed by their names
folded as SQLite folds them (ASCII letters only: :func:`fold`). Nothing of this lives in SQL: no trigger,
table or function is added to the connection, so nothing spec code can observe changes with the cache
(``changes()``, ``last_insert_rowid()``, the connection's change count behind a ``WITH`` statement's row
count, how deep its foreign-key cascades may go before SQLite's trigger-depth limit).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from itertools import chain
from operator import itemgetter
from typing import Any, NamedTuple

__all__ = ["EXACT_VALUES", "ROWS_READ", "Base", "DigestCache", "Kept", "RowsRead", "digest_of", "float_columns",
           "fold", "read_digest", "rows_digest", "sorted_texts", "texts_digest", "write_closure"]

_FK_WRITES = frozenset({"CASCADE", "SET NULL", "SET DEFAULT"})  #: foreign-key actions that write the child table
_MAX_STATEMENTS = 4096  #: statement texts whose write sets are kept (past it, all are forgotten and learned again)
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
#: the value types whose equality is their ``repr``'s (``1 == 1.0`` and ``0.0 == -0.0``: floats are not among them)
EXACT_VALUES = frozenset({int, str, bytes, type(None)})
_ROW_TEXTS: dict[tuple[Any, ...], str] = {}  #: a row of exact values -> its ``repr`` (see :func:`read_digest`)
MAX_ROW_CHARS = 1 << 23  #: the characters of the texts :data:`_ROW_TEXTS` keeps (emptied when they would pass it)
_kept = [0]  #: the characters of the texts kept now


def rows_digest(rows: Iterable[tuple[Any, ...]]) -> str:
    """A table's digest: SHA-256 of its rows' ``repr`` texts, sorted, joined by newlines."""
    return hashlib.sha256("\n".join(sorted(map(repr, rows))).encode("utf-8", "surrogatepass")).hexdigest()


def read_digest(rows: list[tuple[Any, ...]], *, unsure: tuple[int, ...] | None = None) -> str:
    """:func:`rows_digest` of ``rows`` (a table's, as SQLite gives them), from :func:`sorted_texts`."""
    return texts_digest(sorted_texts(rows, unsure=unsure))


def texts_digest(texts: list[str]) -> str:
    """A table's digest from its rows' ``repr`` texts, sorted."""
    return hashlib.sha256("\n".join(texts).encode("utf-8", "surrogatepass")).hexdigest()


def sorted_texts(rows: list[tuple[Any, ...]], *, unsure: tuple[int, ...] | None = None) -> list[str]:
    """The ``repr`` texts of ``rows`` (a table's, as SQLite gives them), sorted, each row's remembered by the
    row (up to :data:`MAX_ROW_CHARS` characters of them in a process): a table read again after a write formats its
    new rows only. Only the rows of a table whose values are all ``int``, ``str``, ``bytes`` or None are remembered
    or looked up: two such rows are equal exactly when their texts are (a float equals an int, and ``-0.0`` equals
    ``0.0``, with another ``repr``; a ``bool`` equals an int). ``unsure``: the indexes of the only columns whose
    values may be floats (:func:`float_columns`; None: any column's)."""
    if unsure is None:
        types = set(map(type, chain.from_iterable(rows)))
    elif len(unsure) == 1:
        types = set(map(type, map(itemgetter(unsure[0]), rows)))
    else:
        types = set(map(type, chain.from_iterable(map(itemgetter(*unsure), rows)))) if unsure else set()
    if not EXACT_VALUES.issuperset(types):
        return sorted(map(repr, rows))
    memo = _ROW_TEXTS
    texts = list(map(memo.get, rows))
    if None in texts:
        for i, text in enumerate(texts):
            if text is None:
                row = rows[i]
                texts[i] = new = repr(row)
                if _kept[0] + len(new) > MAX_ROW_CHARS:
                    memo.clear()
                    _kept[0] = 0
                memo[row] = new
                _kept[0] += len(new)
    texts.sort()  # type: ignore[call-arg]
    return texts  # type: ignore[return-value]


def float_columns(columns: Iterable[tuple[Any, ...]]) -> tuple[int, ...]:
    """The indexes, in a ``SELECT *``'s order, of a table's columns that may hold a float, from the rows ``PRAGMA
    table_xinfo`` gives of it (``cid, name, type, notnull, dflt_value, pk, hidden``): every column but those of
    ``TEXT`` affinity by SQLite's rules on the declared type (it holds ``INT``: integer; else ``CHAR``, ``CLOB`` or
    ``TEXT``: text), which store a number as its text, and so only text, blobs and nulls. A generated column (hidden
    2 or 3) counts as one that may (a hidden column of a virtual table, 1, is not in a ``SELECT *``)."""
    out: list[int] = []
    i = 0
    for _cid, _name, declared, _notnull, _default, _pk, hidden in columns:
        if hidden == 1:
            continue
        kind = str(declared or "").upper()
        if hidden or "INT" in kind or not any(t in kind for t in ("CHAR", "CLOB", "TEXT")):
            out.append(i)
        i += 1
    return tuple(out)


class Kept:
    """A table content's rows as a full scan gave them, their ``repr`` texts sorted (what its digest is of), and the
    indexes of the columns whose values the rows are known to be in strictly increasing order of (ints)."""

    __slots__ = ("keyed", "rows", "texts")

    def __init__(self, rows: list[tuple[Any, ...]], texts: list[str], keyed: Iterable[int] = ()):
        self.rows, self.texts, self.keyed = rows, texts, set(keyed)


class RowsRead:
    """The rows of the tables read last for their digest (:func:`read_digest`), by digest, in a full scan's order: the
    rows of any table whose content has that digest and whose order its content decides (a rowid alias, a ``WITHOUT
    ROWID`` table's key), in any connection (a digest is its rows'), with their texts (:class:`Kept`). At most
    :attr:`max_rows` rows in all (the least recently used dropped); the lists are shared: callers read them, never
    change them."""

    def __init__(self, max_rows: int = 200_000):
        self.max_rows = max_rows
        self._by_digest: OrderedDict[str, Kept] = OrderedDict()
        self._rows = 0
        self._lock = threading.Lock()

    def keep(self, digest: str, rows: list[tuple[Any, ...]], texts: list[str] | None = None,
             keyed: Iterable[int] = ()) -> None:
        """Keep ``rows``, a full scan of a table whose digest is ``digest`` (``texts``: their ``repr`` texts, sorted;
        ``keyed``: see :class:`Kept`)."""
        if len(rows) > self.max_rows:
            return
        kept = Kept(rows, sorted(map(repr, rows)) if texts is None else texts, keyed)
        with self._lock:
            old = self._by_digest.pop(digest, None)
            self._rows += len(rows) - (len(old.rows) if old is not None else 0)
            self._by_digest[digest] = kept
            while self._rows > self.max_rows:
                _, dropped = self._by_digest.popitem(last=False)
                self._rows -= len(dropped.rows)

    def get(self, digest: str) -> list[tuple[Any, ...]] | None:
        """The rows kept for ``digest``, or None."""
        kept = self.kept(digest)
        return None if kept is None else kept.rows

    def kept(self, digest: str) -> Kept | None:
        """What is kept for ``digest`` (:class:`Kept`), or None."""
        with self._lock:
            kept = self._by_digest.get(digest)
            if kept is not None:
                self._by_digest.move_to_end(digest)
            return kept


ROWS_READ = RowsRead()  #: the process's rows read for digests (:class:`RowsRead`)


def digest_of(tables: dict[str, str]) -> str:
    """The state's digest: SHA-256 of its tables' digests, in name order."""
    return hashlib.sha256(json.dumps(sorted(tables.items())).encode()).hexdigest()


def fold(name: str) -> str:
    """A table name as SQLite compares it: ASCII letters lower-cased, every other character kept (``"É"`` and
    ``"é"`` name two tables)."""
    return name.lower() if name.isascii() else name.translate(_ASCII_LOWER)


def write_closure(written: Iterable[str], children: Mapping[str, frozenset[str]]) -> frozenset[str]:
    """``written`` and every table a foreign-key action can write from it, transitively; ``children`` maps a
    table to the tables whose foreign keys to it have an action that writes (all names folded)."""
    out = set(written)
    todo = list(out)
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in out:
                out.add(child)
                todo.append(child)
    return frozenset(out)


class Base(NamedTuple):
    """What a table's content is known to be, without its digest: the content whose digest is :attr:`digest`, but
    for the values of :attr:`columns` in some rows and for some rows deleted (by a ``REPLACE`` conflict). True
    while every write to the table since that content was an ``UPDATE`` of its own setting those columns (what the
    authorizer names as SQLite prepares it), and through rollbacks, as each savepoint keeps the bases of the content
    it opened on. :mod:`~gym_envs.sandbox.rereads` reads such a table's digest from those columns only."""

    digest: str  #: the digest of the content it was
    columns: frozenset[str]  #: the (folded) columns that may differ since


class DigestCache:
    """The table digests of one connection's content, each kept until its table may have changed (see the
    module docstring). Tables are named as :func:`fold` folds them; savepoints by their SQL names."""

    __slots__ = ("_all", "_bases", "_children", "_digests", "_last", "_marked", "_savepoints", "_schema", "_seq",
                 "_writes", "prepared", "ran")

    def __init__(self) -> None:
        self.ran: set[str] = set()  #: texts of the statements that ran (or began) since the last settle
        #: of those SQLite prepared: text -> what it writes: a (folded) table, or ``(table, column)`` for a column its
        #: own ``UPDATE`` sets (not a trigger's)
        self.prepared: dict[str, set[str | tuple[str, str]]] = {}
        self._digests: dict[str, str] = {}  #: table -> its digest, for the current content
        self._bases: dict[str, Base] = {}  #: table -> a content it differs from in known columns only (:class:`Base`)
        self._marked: dict[str, int] = {}  #: table -> the counter at its last mark
        self._all = 0  #: the counter when every table was last marked (0: never)
        #: open: folded name, counter, digests then, bases then
        self._savepoints: list[tuple[str, int, dict[str, str], dict[str, Base]]] = []
        self._seq = 0  #: the counter (only grows)
        self._last = 0  #: the counter of the content and savepoints as they are now (a rollback takes it back)
        #: statement text -> the tables it may write, and those of them it writes only by its own UPDATEs of these
        #: columns (this schema)
        self._writes: dict[str, tuple[frozenset[str], dict[str, frozenset[str]]]] = {}
        self._children: dict[str, frozenset[str]] = {}  #: table -> the tables its foreign-key actions write
        self._schema: list[Any] | None = None  #: the schema the two above were made for

    # -- the schema and its statements ---------------------------------------------------------------------
    def schema(self, schema: list[Any], foreign_keys: Callable[[str], list[Any]]) -> None:
        """The schema may have changed (setup ran, an image was loaded): every table is marked, and when
        ``schema`` (``sqlite_master``'s ``(type, name, tbl_name, sql)`` rows) is not the one the statements'
        write sets were learned for, those are forgotten. ``foreign_keys(table)`` gives the ``(parent,
        on_update, on_delete)`` of each of ``table``'s foreign keys."""
        self.settle()
        self.mark_all()
        if schema == self._schema:
            return
        children: dict[str, set[str]] = {}
        for kind, name, *_ in schema:
            if kind == "table":
                for parent, on_update, on_delete in foreign_keys(name):
                    if on_update in _FK_WRITES or on_delete in _FK_WRITES:
                        children.setdefault(fold(str(parent)), set()).add(fold(name))
        self._children = {t: frozenset(c) for t, c in children.items()}
        self._writes = {}
        self._schema = schema

    def settle(self) -> None:
        """Mark what the statements in :attr:`ran` may have written, and learn the write sets of those in
        :attr:`prepared` (with the children their foreign-key actions write); a statement whose write set is
        unknown (the statement cache served it, and its set was forgotten) marks every table. Both are emptied
        (the same objects: their owner holds their methods)."""
        ran = self.ran
        if not ran:
            return
        prepared, known = self.prepared, self._writes
        marked, digests, bases = self._marked, self._digests, self._bases
        seq = self._seq + 1
        wrote = unknown = False
        for sql in ran:
            writes = prepared.get(sql) if prepared else None
            learned: tuple[frozenset[str], dict[str, frozenset[str]]] | None
            if writes is not None:
                if len(known) >= _MAX_STATEMENTS:
                    known.clear()
                learned = known[sql] = self._learn(writes)
            else:
                learned = known.get(sql)
            if learned is None:
                unknown = True
            elif learned[0]:
                wrote = True
                columns = learned[1]
                for t in learned[0]:  # what mark() does, for every statement at one count
                    marked[t] = seq
                    digests.pop(t, None)
                    base = bases.get(t)
                    if base is not None:
                        if t in columns:
                            bases[t] = Base(base.digest, base.columns | columns[t])
                        else:
                            del bases[t]
        ran.clear()
        prepared.clear()
        if wrote:
            self._seq = self._last = seq
        if unknown:
            self.mark_all()

    def _learn(self, writes: set[str | tuple[str, str]]) -> tuple[frozenset[str], dict[str, frozenset[str]]]:
        """What a statement that SQLite prepared writes (the authorizer's notes, :attr:`prepared`): every table it
        may write, with the children its foreign-key actions write (:func:`write_closure`), and, of those, the
        tables it writes only by its own ``UPDATE`` of some columns (none that an insert, a delete, a trigger or a
        foreign-key action of it writes), with those columns (folded)."""
        whole = {w for w in writes if w.__class__ is str}
        updated: dict[str, set[str]] = {}
        for w in writes:
            if w.__class__ is tuple:
                updated.setdefault(w[0], set()).add(fold(w[1]))
        tables = write_closure(whole | updated.keys(), self._children)
        reached = write_closure({c for t in tables for c in self._children.get(t, ())}, self._children)
        return tables, {t: frozenset(c) for t, c in updated.items() if t not in whole and t not in reached}

    # -- digests and marks ------------------------------------------------------------------------------
    def get(self, table: str) -> str | None:
        """The cached digest of ``table`` (folded), or None."""
        return self._digests.get(table)

    def base(self, table: str) -> Base | None:
        """A content ``table`` (folded) had, known by its digest, from which its content now differs at most in the
        values of some columns of some rows and by rows deleted (:class:`Base`), or None."""
        return self._bases.get(table)

    def put(self, table: str, digest: str) -> None:
        """Keep ``digest``, just computed from ``table``'s (folded) current content; it is also the table's
        digest when each savepoint opened since the table's last mark opened, so their rollbacks bring it back."""
        self._digests[table] = digest
        self._bases[table] = base = Base(digest, frozenset())
        last = max(self._marked.get(table, 0), self._all)
        for _name, since, then, bases in reversed(self._savepoints):
            if since < last:
                break
            then[table] = digest
            bases[table] = base

    def mark(self, tables: Iterable[str]) -> None:
        """``tables`` (folded) may have changed: their digests are dropped, and dropped again by a rollback
        past now."""
        self._seq = self._last = seq = self._seq + 1
        marked, digests, bases = self._marked, self._digests, self._bases
        for t in tables:
            marked[t] = seq
            digests.pop(t, None)
            bases.pop(t, None)

    def mark_all(self) -> None:
        """Every table may have changed (those the cache has not heard of included)."""
        self._seq += 1
        self._all = self._last = self._seq
        self._digests = {}
        self._bases = {}

    # -- savepoints -------------------------------------------------------------------------------------
    def opened(self, savepoint: str) -> None:
        """``savepoint`` opened, on content whose digests the cache holds now."""
        self._seq += 1
        self._last = self._seq
        self._savepoints.append((fold(savepoint), self._seq, dict(self._digests), dict(self._bases)))

    def rolled_back(self, savepoint: str) -> None:
        """The content went back to ``savepoint`` (its rollback succeeded; it stays open): the tables marked
        since it opened hold what they held then, so their digests are dropped and they count as last marked
        then, the digests known of that content come back, and the savepoints opened since are gone. Called
        after the rollback (one that fails changes nothing), before anything else uses the cache; a savepoint
        the cache does not know of drops every digest."""
        at = self._find(savepoint)
        if at is None:
            self._digests = {}
            self._bases = {}
        else:
            self._back_to(at)

    def released(self, savepoint: str) -> None:
        """``savepoint`` was released with every savepoint opened after it (their writes are now the enclosing
        transaction's, whose rollback still drops them: the marks stay)."""
        at = self._find(savepoint)
        if at is not None:
            del self._savepoints[at:]

    @property
    def in_savepoint(self) -> bool:
        """A savepoint is open (so the content may still be rolled back)."""
        return bool(self._savepoints)

    def aborted(self) -> None:
        """SQLite ended the transaction (an interrupted write, out of memory): the content went back to what it
        was before the outermost savepoint opened (the one that began the transaction), and none is open."""
        if self._savepoints:
            self._back_to(0)
            self._savepoints = []

    def reset(self, digests: Mapping[str, str] | None = None) -> None:
        """The content was replaced and no savepoint is open: forget everything but the statements' write sets
        (those just learned kept too); ``digests`` (table -> digest) are the new content's."""
        self.settle()
        self._digests = {fold(t): d for t, d in (digests or {}).items()}
        self._bases = {t: Base(d, frozenset()) for t, d in self._digests.items()}
        self._marked = {}
        self._all = 0
        self._savepoints = []

    def _find(self, savepoint: str) -> int | None:
        """The index of ``savepoint``'s most recent entry (SQLite's names are case-insensitive), or None."""
        stack = self._savepoints
        if stack and stack[-1][0] == savepoint:  # the innermost, named as folded
            return len(stack) - 1
        name = fold(savepoint)
        for i in range(len(stack) - 1, -1, -1):
            if stack[i][0] == name:
                return i
        return None

    def _back_to(self, at: int) -> None:
        """The content is what it was when savepoint ``at`` opened: the digests of the tables marked since are
        dropped and their marks move back to its counter (a later rollback to a savepoint opened before it
        still drops those tables; one to a savepoint opened after it need not), the digests known when it
        opened come back, and the savepoints opened after it are gone."""
        _name, since, then, then_bases = self._savepoints[at]
        if self._last == since:  # nothing was marked nor opened since: the digests held are of this content
            return
        self._last = since
        digests, bases = self._digests, self._bases
        if self._all > since:
            self._all = since
            digests, bases = {}, {}
        marked = self._marked
        for t, seq in marked.items():
            if seq > since:
                marked[t] = since
                digests.pop(t, None)
                bases.pop(t, None)
        then.update(digests)  # both hold digests of this same content
        then_bases.update(bases)  # and bases of it
        self._digests = dict(then)
        self._bases = dict(then_bases)
        del self._savepoints[at + 1:]
