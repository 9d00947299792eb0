"""What the engine remembers of the contents its episodes reach, so that it reads less of the database.

Role: the process keeps one :class:`Recall` for each of the programs its engines used last (:data:`RECALLS`, at most
:data:`PROGRAMS`, apart by the engine's limits); nothing of it is visible to spec code, and every answer is the one
reading the database gives.

* **Digests by the calls that made the content** (:meth:`Recall.digests`). For a program whose code keeps no state
  between calls (:mod:`~gym_envs.sandbox.purity`), an episode's content is a function of its setup statements and
  of the logged calls that moved the connection's change count since it opened, in order (its content key): a
  call's effect is a function of the content it runs on and of its arguments, a call that changed no row changed
  nothing, and one the engine did not log was undone (the ground the engine's checkpoints already stand on:
  restoring one gives what replaying the log gives; a logged call whose writes were undone stays in the key, which
  costs a read, never a wrong digest). So the table digests read for one such
  content key are those of any episode that reaches the same key again: the validity gate's wrong trajectories
  that make the reference's writes after other reads, or an earlier trajectory's writes, read no table. The
  engine asks for a table only what the digest cache (:mod:`~gym_envs.sandbox.digests`) does not hold, and keeps
  out of that cache what came from here; a digest asked for ``fresh`` (the gate's determinism rule, which replays a
  trajectory to compare what it reads) never comes from here.
* **The columns holding a text** (:meth:`Recall.columns_holding`, what a ``reply_contains`` check reads of the
  state): each table's part of the answer is the same on the same content of the table, by its digest (when the
  table's order is its content's), as a wrong trajectory's reply is judged again and again on the reference's
  state, and a trajectory that wrote one table has that table read alone.
* **Dumps the caller holds** (:meth:`Recall.dump`). A caller that holds a dump of a table can name its digest
  (``unless``): a table whose full scan comes in an order its content decides (a rowid alias, or a ``WITHOUT ROWID``
  table's primary key: :meth:`~gym_envs.sandbox.content.ContentReads.ordered`) dumps the same rows in the same order
  whenever its content is the same, which its digest says, so when its digest is known (from the cache or the memo
  above) and is that one, it is answered "the same" instead of read and sent again. For the same reason such a
  table is dumped from the rows a read for its digest gave, in this process (:data:`~gym_envs.sandbox.digests.
  ROWS_READ`), when its digest now is known and is that one, and the columns holding a text are read from them.

* **Results of calls that change nothing** (:meth:`Recall.result`), for the episodes that ask for it (the
  ``open`` request's ``recall``: the validity gate's, which make the reference's reads again and again). For a pure
  program, a call is a function of the content (its key), the connection's counters (``last_insert_rowid()``,
  ``changes()``, which SQL text may read) and its arguments: the code keeps nothing between calls, and an episode's
  globals are made afresh from the program alone (the one thing they hold that differs between episodes, the seed,
  reaches only ``random``, which no pure program imports). So a call that succeeded, changed no row and left the
  counters as it found them had no effect at all, and answers the same on the same key again. Kept as ``marshal``
  bytes of the plain JSON result, so that every answer is a copy of its own; an episode that computes in its own
  decimal context (one that imported ``decimal``, whose flags outlive a call) neither keeps nor takes one.

The memos are bounded (:data:`MAX_KEYS` content keys, and as many call results, a program; each emptied when full).
"""

from __future__ import annotations

import marshal
import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any, NamedTuple

from gym_envs.sandbox.content import Holding, holding_answer
from gym_envs.sandbox.db import StateDB
from gym_envs.sandbox.digests import ROWS_READ
from gym_envs.sandbox.scope import DECIMAL_KEY
from gym_envs.sandbox.values import dumps

__all__ = ["MAX_KEYS", "PROGRAMS", "RECALLS", "Asked", "Recall", "Recalls", "call_key"]

PROGRAMS = 4  #: programs whose memos are kept (a generation worker compiles, then validates, one spec at a time)
MAX_KEYS = 4096  #: content keys whose digests a program's memo keeps


def call_key(name: str, arguments: dict[str, Any]) -> tuple[str, str]:
    """A call as a part of a content key: its tool and its arguments' exact JSON (``1`` and ``1.0`` differ)."""
    return name, dumps(arguments)


class Asked(NamedTuple):
    """What :meth:`Recall.asked` found of a call: its key, the counters before it, and its result when ``found``."""

    key: tuple[Any, ...]
    counters: tuple[int, int]
    found: bool
    result: Any


class Recall:
    """One program's memos (see the module docstring)."""

    __slots__ = ("_digests", "_holding", "_ordered", "_results")

    def __init__(self) -> None:
        self._digests: dict[tuple[Any, ...], dict[str, str]] = {}  #: content key -> folded table -> digest
        #: (setup, content key, counters, tool, arguments' JSON) -> the result of a call that changed nothing (marshal)
        self._results: dict[tuple[Any, ...], bytes] = {}
        self._ordered: dict[str, bool] = {}  #: table -> its scan order is its content's (the schema is fixed)
        #: (text, limit, table, its digest) -> the table's columns holding the text (equal, within)
        self._holding: dict[tuple[str, int, str, str], Holding] = {}

    def digests(self, key: tuple[Any, ...]) -> dict[str, str]:
        """The digests known of the content whose key is ``key`` (the dict to add those read to)."""
        memo = self._digests.get(key)
        if memo is None:
            if len(self._digests) >= MAX_KEYS:
                self._digests.clear()
            memo = self._digests[key] = {}
        return memo

    def asked(self, state: StateDB, setup: tuple[str, ...], content: tuple[Any, ...], glb: dict[str, Any], name: str,
              args: dict[str, Any]) -> Asked | None:
        """A pure program's call ``name(**args)`` in an episode on ``state`` whose setup statements, content key and
        globals are ``setup``, ``content`` and ``glb``, about to be made: what is remembered of it (:class:`Asked`), or
        None when its episode computes in a decimal context of its own (whose flags outlive a call)."""
        if DECIMAL_KEY in glb:
            return None
        counters = state.counters()
        key = (setup, content, counters, name, dumps(args))
        found = self.result(key)
        return Asked(key, counters, *found)

    def answered(self, asked: Asked, state: StateDB, glb: dict[str, Any], value: Any) -> None:
        """The call ``asked`` was made, succeeded and changed no row, returning ``value``: keep it when the call also
        left the connection's counters as they were and installed no decimal context."""
        if state.counters() == asked.counters and DECIMAL_KEY not in glb:
            self.keep_result(asked.key, value)

    def result(self, key: tuple[Any, ...]) -> tuple[bool, Any]:
        """``(True, a fresh copy of its result)`` for the call ``key`` (:meth:`keep_result`), or ``(False, None)``."""
        kept = self._results.get(key)
        return (False, None) if kept is None else (True, marshal.loads(kept))

    def keep_result(self, key: tuple[Any, ...], value: Any) -> None:
        """Keep ``value`` (plain JSON) as the result of the call ``key``: ``(setup, content key, counters, tool,
        arguments' JSON)`` of a pure program's call that succeeded, changed no row and left the counters as they were
        (the module docstring)."""
        if len(self._results) >= MAX_KEYS:
            self._results.clear()
        self._results[key] = marshal.dumps(value)

    def dump(self, state: StateDB, tables: list[str] | None, limit: int, digests: dict[str, str] | None,
             unless: dict[str, Any]) -> dict[str, Any]:
        """``state.dump(tables, limit)``, each table dumped with its digest when known without reading it (else None),
        but a table named in ``unless`` with that digest whose order its content decides answered ``{"same": true}``:
        its dump is the one the caller holds of that digest. ``digests``: the memo of the content's digests, or
        None."""
        known = state.tables()
        out: dict[str, Any] = {}
        for t in tables or known:
            if t not in known:
                continue
            digest = state.known_digest(t, digests)
            ordered = digest is not None and self._is_ordered(state, t)
            if ordered and unless.get(t) == digest:
                out[t] = {"same": True, "digest": digest}
                continue
            rows = ROWS_READ.get(digest) if ordered and digest is not None else None
            out[t] = (state.dump([t], limit)[t] if rows is None else state.dump_rows(t, rows, limit)) | \
                {"digest": digest}
        return out

    def columns_holding(self, state: StateDB, text: str, limit: int,
                        digests: dict[str, str] | None) -> list[tuple[str, list[Any]]]:
        """``state.columns_holding(text, limit)``: each table's part as the part given on a content of that table with
        the same digest, when its order is its content's (the answer lists values in row order), else read. A table
        whose digest is not known is read for its digest first (the checks that ask for the columns holding their
        answer mostly ask for the digests too)."""
        parts: list[Holding] = []
        for t in state.tables():
            key = None
            if self._is_ordered(state, t) and state.limits.digest_cache:
                digest = state.known_digest(t, digests) or state.table_digests([t], memo=digests)[t]
                key = (text, limit, t, digest)
            part = self._holding.get(key) if key is not None else None
            if part is None:
                part = state.table_holding(t, text, limit, ROWS_READ.get(key[3]) if key is not None else None)
                if key is not None:
                    if len(self._holding) >= MAX_KEYS:
                        self._holding.clear()
                    self._holding[key] = part
            parts.append(part)
        return [(label, list(values)) for label, values in holding_answer(parts)]

    def _is_ordered(self, state: StateDB, table: str) -> bool:
        ordered = self._ordered.get(table)
        if ordered is None:
            ordered = self._ordered[table] = state.ordered(table)
        return ordered


class Recalls:
    """The memos of the programs used last, by program (at most :data:`PROGRAMS`)."""

    __slots__ = ("_by_program", "_lock")

    def __init__(self) -> None:
        self._by_program: OrderedDict[Hashable, Recall] = OrderedDict()
        self._lock = threading.Lock()

    def of(self, program: Hashable) -> Recall:
        """``program``'s memos (made, and the least recently used program's dropped, as needed)."""
        with self._lock:
            recall = self._by_program.get(program)
            if recall is None:
                while len(self._by_program) >= PROGRAMS:
                    self._by_program.popitem(last=False)
                recall = self._by_program[program] = Recall()
            else:
                self._by_program.move_to_end(program)
            return recall


#: the process's memos, shared by its engines (a compiler's simulation of a spec's reference, then the gate's run
#: of it), by program key and limits
RECALLS = Recalls()
