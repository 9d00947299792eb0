"""``gym_envs.sandbox.rereads``: a table read again after updates of known columns gives, from those columns
alone, the digest and the rows (their order and types too) a full read gives, over any history of writes,
savepoints and rollbacks; anything it cannot be sure of is read whole."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

import gym_envs.sandbox.rereads as rereads_module
from gym_envs.sandbox import SqlLimits, StateDB
from gym_envs.sandbox.digests import ROWS_READ, rows_digest
from tests.gym_envs.sandbox.histories import histories, run
from tests.gym_envs.sandbox.histories import play as play_history
from tests.gym_envs.sandbox.store import state_image

LIMITS = SqlLimits(statement_timeout_s=0.2)

# p -> c (ON DELETE CASCADE, ON UPDATE CASCADE); u replaces a row whose key an UPDATE repeats (no OR REPLACE needed);
# x and y hold values of any type (1, 1.0, -0.0, text, blobs); q has a non-rowid key; d's key is not the rowid
SCHEMA = """
CREATE TABLE p (id INTEGER PRIMARY KEY, k TEXT UNIQUE, v INTEGER, f REAL, x);
CREATE TABLE c (id INTEGER PRIMARY KEY, pid INTEGER REFERENCES p(id) ON DELETE CASCADE ON UPDATE CASCADE,
                v INTEGER, note TEXT);
CREATE INDEX c_v ON c (v, note, pid);
CREATE TABLE u (id INTEGER PRIMARY KEY, k TEXT UNIQUE ON CONFLICT REPLACE, y);
CREATE TABLE q (k TEXT PRIMARY KEY, v INTEGER);
CREATE TABLE d (id INTEGER PRIMARY KEY DESC, v INTEGER);
"""
SEED = """
INSERT INTO p VALUES (1, 'a', 1, 0.5, 1), (2, 'b', 2, 1.0, 1.0), (3, 'c', 3, -0.0, 'x'), (4, 'd', 4, 2.5, NULL),
                     (5, 'e', 5, 0.0, X'00'), (6, 'f', 6, 1.5, 2);
INSERT INTO c VALUES (10, 1, 0, 'n'), (11, 2, 0, NULL), (12, 3, 1, 'm'), (13, 1, 2, 'o'), (14, 5, 0, 'p');
INSERT INTO u VALUES (1, 'a', 0), (2, 'b', 0.0), (3, 'c', 'z'), (4, 'd', NULL);
INSERT INTO q VALUES ('a', 1), ('b', 2);
INSERT INTO d VALUES (3, 1), (1, 2), (2, 3);
"""

#: statements of tool code (fixed texts: the statement cache serves them again), each with one parameter 0..5
STATEMENTS = [
    "UPDATE p SET v = ? WHERE id = 1",  # a value set, and set back
    "UPDATE p SET v = v + 1 WHERE id % 2 = ? % 2",
    "UPDATE p SET x = CASE ? % 4 WHEN 0 THEN 1 WHEN 1 THEN 1.0 WHEN 2 THEN -0.0 ELSE 0.0 END WHERE id = 2",
    "UPDATE p SET f = CASE ? % 3 WHEN 0 THEN 0.0 WHEN 1 THEN -0.0 ELSE 1 END WHERE id = 3",
    "UPDATE p SET k = 'k' || (? % 2) WHERE id = 3",  # its second run fails on the UNIQUE key
    "UPDATE OR REPLACE p SET k = 'k' || (? % 2) WHERE id = 2",  # deletes the row in its way (cascading into c)
    "UPDATE OR FAIL p SET k = 'same' || (? % 2) WHERE id > 3",  # fails at its second row, keeps the first
    "UPDATE p SET (v, x) = (?, 'text') WHERE id = 4",
    "UPDATE p SET id = id + 10 WHERE id = ?",  # the rowid moves (ON UPDATE CASCADE into c)
    "UPDATE p SET rowid = ? + 20 WHERE id = 5",
    "INSERT OR IGNORE INTO p (k, v, f, x) VALUES ('n' || ?, 0, 0.0, NULL)",
    "DELETE FROM p WHERE id = ?",
    "REPLACE INTO p (id, k, v, f, x) VALUES (?, 'r', 0, 0.0, 0)",
    "UPDATE c SET v = ? WHERE pid = 1",
    "UPDATE c SET note = CASE ? % 2 WHEN 0 THEN NULL ELSE 'n' END WHERE id = 11",
    "UPDATE u SET k = 'k' || (? % 3) WHERE id = 1",  # the table's ON CONFLICT REPLACE deletes the row in its way
    "UPDATE u SET y = CASE ? % 3 WHEN 0 THEN 0 WHEN 1 THEN 0.0 ELSE x'00' END",
    "UPDATE q SET v = ?",
    "UPDATE d SET v = ? WHERE id = 2",
    "WITH n(x) AS (SELECT ?) UPDATE c SET v = v + (SELECT x FROM n) WHERE id = 12",
]
OPS = histories(len(STATEMENTS), 5)


def episode() -> StateDB:
    state = StateDB(LIMITS)
    state.load_image(state_image(SCHEMA, SEED, LIMITS))
    state.open_episode()
    return state


def assert_as_a_full_read(state: StateDB) -> None:
    """Every table's digest is the digest of a full read, made without the cache (which a full read through
    ``table_digests`` would reset), and the rows kept for it are those rows, in their order, of the same types, with
    their texts."""
    digests = state.table_digests()
    for table, digest in digests.items():
        rows = state.host(f'SELECT * FROM main."{table}"')
        assert digest == rows_digest(rows), table
        kept = ROWS_READ.kept(digest)
        assert kept is not None and kept.texts == sorted(map(repr, kept.rows)), table
        if table in ("p", "c", "u"):  # tables whose scan order their content decides
            assert repr(kept.rows) == repr(rows), table


@pytest.fixture
def rereads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Counts the tables read from the columns that changed only."""
    count = [0]
    reread = rereads_module.reread

    def counted(*args: Any) -> Any:
        got = reread(*args)
        count[0] += got is not None
        return got

    monkeypatch.setattr(rereads_module, "reread", counted)
    yield count


def test_an_update_of_known_columns_reads_those_columns_only(rereads: list[int]) -> None:
    state = episode()
    assert_as_a_full_read(state)
    run(state, "UPDATE p SET v = v + 1 WHERE id = 2")
    run(state, "UPDATE p SET x = 1.0 WHERE id = 1")  # 1 -> 1.0: equal, not the same
    assert_as_a_full_read(state)
    assert rereads[0] == 1
    run(state, "UPDATE p SET v = v - 1 WHERE id = 2")
    run(state, "UPDATE p SET x = 1 WHERE id = 1")  # back to the first content
    first = state.table_digests(["p"])
    assert_as_a_full_read(state)
    assert rereads[0] == 2 and first == state.table_digests(["p"], cached=False)


@pytest.mark.parametrize("sql", [
    "INSERT INTO p (k) VALUES ('new')",
    "DELETE FROM p WHERE id = 6",
    "REPLACE INTO p (id, k) VALUES (6, 'z')",
    "UPDATE p SET id = 9 WHERE id = 6",  # the key column is the rowid
    "UPDATE p SET rowid = 9 WHERE id = 6",
    "UPDATE p SET k = 'z' WHERE id = 1",  # p's own columns, but it is c's parent: c is read whole
])
def test_what_may_add_delete_or_move_rows_is_read_whole(sql: str, rereads: list[int]) -> None:
    state = episode()
    assert_as_a_full_read(state)
    run(state, sql)
    assert_as_a_full_read(state)
    assert rereads[0] == (1 if sql.startswith("UPDATE p SET k") else 0)  # p from its columns, c whole


def test_tables_whose_rows_it_cannot_align_are_read_whole(rereads: list[int]) -> None:
    """A key that is not the rowid (``INTEGER PRIMARY KEY DESC``, a text key, ``WITHOUT ROWID``), a generated column
    (its value follows columns no UPDATE names), a full scan that SQLite plans through a covering index: read whole,
    and right."""
    state = StateDB(LIMITS)
    state.script("CREATE TABLE g (id INTEGER PRIMARY KEY, a INTEGER, b INTEGER GENERATED ALWAYS AS (a * 2) STORED);"
                 "CREATE TABLE w (k INTEGER PRIMARY KEY, v INTEGER) WITHOUT ROWID;", mode="setup")
    run(state, "INSERT INTO g (id, a) VALUES (1, 1), (2, 2)")
    run(state, "INSERT INTO w VALUES (1, 1), (2, 2)")
    state.open_episode()
    ep = episode()
    for db, sql in ((state, "UPDATE g SET a = a + 1"), (state, "UPDATE w SET v = v + 1"), (ep, "UPDATE q SET v = 7"),
                    (ep, "UPDATE d SET v = 7 WHERE id = 2")):
        assert_as_a_full_read(db)
        run(db, sql)
        assert_as_a_full_read(db)
    assert rereads[0] == 0
    assert [state._reads.layouts[t] for t in ("g", "w")] == [None, None]
    assert [ep._reads.layouts[t] for t in ("q", "d")] == [None, None]


def test_a_layout_needs_a_scan_of_the_tables_own_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where SQLite would scan an index for ``SELECT *`` (its order is not the rowid's), no layout."""
    state = episode()
    real = state._reads.execute

    def planned(sql: str, params: Any = ()) -> list[tuple[Any, ...]]:
        if sql.startswith("EXPLAIN QUERY PLAN"):
            return [(2, 0, 0, "SCAN c USING COVERING INDEX c_v")]
        return real(sql, params)

    monkeypatch.setattr(state._reads, "execute", planned)
    assert_as_a_full_read(state)
    run(state, "UPDATE c SET v = 3")
    assert_as_a_full_read(state)
    assert state._reads.layouts["c"] is None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS)
def test_rereads_equal_full_reads_over_random_histories(ops: list[tuple[int, int, bool]]) -> None:
    """Any history of statements (updates of some columns, set back or to an equal value of another type, REPLACE
    conflicts, rows failing part way, inserts, deletes, cascades, rowid moves), digests, checkpoints and their
    restores, call savepoints kept or undone, resets and trusted writes: every digest is a full read's."""
    play_history(episode(), ops, STATEMENTS, digests=lambda s: s.table_digests(), trusted="UPDATE c SET v = v + ?",
                 check=assert_as_a_full_read)
