"""``gym_envs.sandbox.digests``: the digest formats, and the per-table cache of :class:`StateDB` giving the digests
a fresh read gives, across every event that changes content, while reading only the tables that changed."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gym_envs.sandbox.rereads as rereads_module
from gym_envs.errors import StateError
from gym_envs.sandbox import InProcessExecutor, Limits, SqlLimits, StateDB
from gym_envs.sandbox.digests import (
    DigestCache,
    RowsRead,
    digest_of,
    float_columns,
    fold,
    read_digest,
    rows_digest,
    write_closure,
)
from tests.gym_envs.sandbox.histories import histories, run
from tests.gym_envs.sandbox.histories import play as play_history
from tests.gym_envs.sandbox.store import STORE_TOOLS, state_image, store_spec

LIMITS = SqlLimits(statement_timeout_s=0.2)

# p -> c (ON DELETE CASCADE by id, ON UPDATE CASCADE / ON DELETE SET NULL by key) -> g (ON DELETE SET NULL);
# "Mixed" is written in other cases; "É" and "é" are two tables (SQLite folds ASCII letters only); lone has no key
SCHEMA = """
CREATE TABLE p (id INTEGER PRIMARY KEY, k TEXT UNIQUE, v INTEGER);
CREATE TABLE c (id INTEGER PRIMARY KEY, pid INTEGER REFERENCES p(id) ON DELETE CASCADE,
                pk TEXT REFERENCES P(k) ON UPDATE CASCADE ON DELETE SET NULL, v INTEGER);
CREATE TABLE g (id INTEGER PRIMARY KEY, cid INTEGER REFERENCES c(id) ON DELETE SET NULL, v INTEGER);
CREATE TABLE "Mixed" (id INTEGER PRIMARY KEY, v);
CREATE TABLE "É" (v);
CREATE TABLE "é" (v);
CREATE TABLE lone (v);
"""
SEED = """
INSERT INTO p VALUES (1, 'a', 1), (2, 'b', 2), (3, 'c', 3);
INSERT INTO c VALUES (10, 1, 'a', 0), (11, 2, 'b', 0), (12, 3, 'c', 0);
INSERT INTO g VALUES (100, 10, 0), (101, 11, 0), (102, 12, 0);
INSERT INTO "Mixed" VALUES (1, 'x');
INSERT INTO "É" VALUES (1);
INSERT INTO "é" VALUES (2);
INSERT INTO lone VALUES (0);
"""

#: statements of tool code, each a fixed text (so the statement cache serves them again), with one parameter
STATEMENTS = [
    "INSERT OR REPLACE INTO p VALUES (?, 'k' || ?, 7)",  # REPLACE deletes rows: their cascades run
    "UPDATE p SET k = k || 'x' WHERE id = ?",  # ON UPDATE CASCADE into c
    "DELETE FROM p WHERE id = ?",  # ON DELETE CASCADE into c, then SET NULL into g
    "INSERT INTO c (id, pid, pk, v) VALUES (20 + ?, 1, NULL, 0)",
    "DELETE FROM c WHERE id = 10 + ?",  # SET NULL into g
    "INSERT OR REPLACE INTO g VALUES (100 + ?, NULL, 5)",
    "UPDATE \"MIXED\" SET v = v || ?",
    "INSERT INTO \"É\" VALUES (?)",
    "DELETE FROM \"é\" WHERE v <= ?",
    "WITH n(x) AS (SELECT ?) UPDATE lone SET v = v + (SELECT x FROM n)",
    "SELECT count(*) AS n FROM p WHERE id > ?",
    "UPDATE p SET v = v + 1 WHERE id = ? RETURNING v",
]


#: the store's tools that keep nothing between calls (so an episode's checkpoint is a savepoint)
PURE_CODE = """
def get(db, item_id):
    return db.query("SELECT id, name, qty FROM items WHERE id = ?", [item_id])[0]

def take(db, item_id, qty):
    db.execute("UPDATE items SET qty = qty - ? WHERE id = ?", [qty, item_id])
    return get(db, item_id)
"""


def template() -> bytes:
    return state_image(SCHEMA, SEED, LIMITS)


def episode(**limits: Any) -> StateDB:
    state = StateDB(SqlLimits(statement_timeout_s=0.2, **limits))
    state.load_image(template())
    state.open_episode()
    return state


def assert_exact(state: StateDB) -> None:
    """The cached digests are the ones every table read afresh gives."""
    assert state.table_digests() == state.table_digests(cached=False)


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Counts the tables :meth:`StateDB.table_digests` reads (whole, or the columns that changed)."""
    count = [0]
    read = rereads_module.TableReads.read

    def counted(reads: rereads_module.TableReads, table: str, base: Any) -> str:
        count[0] += 1
        return read(reads, table, base)

    monkeypatch.setattr(rereads_module.TableReads, "read", counted)
    yield count


def test_formats_are_the_recorded_ones() -> None:
    """A table's digest: SHA-256 of its rows' reprs, sorted, joined by newlines; the state's: of the tables'."""
    rows = [(2, "é", None), (1, b"\x00", 1.5)]
    want = hashlib.sha256("(1, b'\\x00', 1.5)\n(2, 'é', None)".encode()).hexdigest()
    assert rows_digest(rows) == rows_digest(reversed(rows)) == want
    state = StateDB(LIMITS)
    state.script("CREATE TABLE t (a, b, c)", mode="setup")
    state.run("INSERT INTO t VALUES (?, ?, ?), (?, ?, ?)", [x for r in rows for x in r], mode="rw", fetch=False)
    assert state.table_digests() == {"t": want}
    assert state.digest() == hashlib.sha256(f'[["t", "{want}"]]'.encode()).hexdigest() == digest_of({"t": want})


def test_a_write_rereads_only_the_tables_it_wrote(reads: list[int]) -> None:
    state = episode()
    assert_exact(state)
    reads[0] = 0
    run(state, "INSERT INTO lone VALUES (1)")
    assert_exact(state)
    assert reads[0] == 1 + 7  # lone, then every table read afresh by assert_exact
    reads[0] = 0
    state.table_digests()
    run(state, "SELECT count(*) AS n FROM p")
    assert state.table_digests() and reads[0] == 0


@pytest.mark.parametrize("sql,written", [
    ("DELETE FROM p WHERE id = 1", {"p", "c", "g"}),  # CASCADE, then SET NULL
    ("INSERT OR REPLACE INTO p VALUES (2, 'z', 0)", {"p", "c", "g"}),  # the rows REPLACE deletes cascade too
    ("UPDATE p SET k = 'q' WHERE id = 3", {"p", "c", "g"}),  # ON UPDATE CASCADE (g by the closure)
    ("DELETE FROM c WHERE id = 11", {"c", "g"}),
    ("UPDATE \"MIXED\" SET v = 'y'", {"mixed"}),
    ("DELETE FROM \"é\"", {"é"}),
])
def test_foreign_key_actions_mark_their_children(sql: str, written: set[str], reads: list[int]) -> None:
    state = episode()
    state.table_digests()
    reads[0] = 0
    state.run(sql, mode="rw", fetch=False)
    assert_exact(state)
    assert reads[0] == len(written) + 7


def test_the_statement_cache_serves_a_statement_its_marks_still_hold() -> None:
    """A statement served again unprepared (no authorizer call) still marks the tables it writes."""
    state = episode()
    for i in range(4):
        state.table_digests()
        run(state, STATEMENTS[2], i)  # the same text: prepared once
        assert_exact(state)
    ro = "SELECT count(*) AS n FROM c"
    state.run(ro, mode="ro", fetch=True)
    state.table_digests()
    state.run(ro, mode="rw", fetch=True)
    assert_exact(state)


def test_nested_savepoints_and_rollbacks(reads: list[int]) -> None:
    state = episode()
    base = state.table_digests()
    run(state, STATEMENTS[0], 1)
    first = state.fork(1)
    after_one = state.table_digests()
    run(state, STATEMENTS[6], "m")
    second = state.fork(2)
    run(state, STATEMENTS[7], 9)
    assert_exact(state)
    assert first is not None and second is not None
    assert state.back_to(2, second)
    assert_exact(state)
    assert state.back_to(1, first)
    reads[0] = 0
    assert state.table_digests() == after_one and reads[0] == 0  # the digests known at fork 1 came back
    assert not state.back_to(2, second)  # gone with the rollback past it
    state.savepoint()
    run(state, STATEMENTS[1], 1)
    assert_exact(state)
    state.release(commit=False)
    assert state.table_digests() == after_one
    state.savepoint()
    run(state, STATEMENTS[1], 1)
    state.release(commit=True)
    assert_exact(state)
    assert state.back_to(1, first)  # a released write is the enclosing savepoint's: its rollback drops it
    assert state.table_digests() == after_one
    assert_exact(state)
    state.reset_episode()
    reads[0] = 0
    assert state.table_digests() == base and reads[0] == 0


def test_an_aborted_transaction_takes_the_digests_back() -> None:
    """An interrupted write makes SQLite roll back the whole transaction: every table written in it since the
    episode began (not only the one the interrupted statement wrote) has the content it had then."""
    state = episode()
    base = state.table_digests()
    run(state, "UPDATE lone SET v = 5")
    assert state.table_digests() != base
    with pytest.raises(StateError):
        state.run("INSERT INTO g (v) WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) "
                  "SELECT x FROM n", mode="rw", fetch=False)
    assert state.lost
    assert state.table_digests() == base == state.table_digests(cached=False)


def test_a_statement_whose_write_set_was_forgotten_marks_every_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the statements whose write sets are kept, they are forgotten while the statement cache still serves
    their statements unprepared: such a statement marks every table."""
    monkeypatch.setattr("gym_envs.sandbox.digests._MAX_STATEMENTS", 2)
    state = episode()
    for sql in (STATEMENTS[6], STATEMENTS[10], STATEMENTS[11]):  # the third forgets the first two
        run(state, sql, 1)
        state.table_digests()
    run(state, STATEMENTS[6], 2)  # served by the statement cache, its write set forgotten
    assert_exact(state)


def test_a_second_rollback_to_a_savepoint_rereads_nothing(reads: list[int]) -> None:
    """After a rollback to a savepoint, a table written since it opened counts as unchanged since then: its
    digest, computed after the rollback, comes back with the next rollback to it (past another write)."""
    state = episode()
    saved = state.fork(1)
    assert saved is not None
    run(state, STATEMENTS[9], 3)
    assert state.back_to(1, saved)
    state.table_digests()
    run(state, STATEMENTS[7], 3)
    reads[0] = 0
    assert state.back_to(1, saved)
    assert_exact(state)
    assert reads[0] == 7  # assert_exact's fresh reads only


def test_schema_changes_image_loads_and_trusted_writes() -> None:
    state = StateDB(LIMITS)
    state.script("CREATE TABLE a (x)", mode="setup")
    state.run("INSERT INTO a VALUES (1)", mode="rw", fetch=False)
    assert_exact(state)
    state.script("CREATE TABLE b (y REFERENCES a(x) ON DELETE CASCADE); CREATE UNIQUE INDEX ax ON a (x)", mode="setup")
    state.run("INSERT INTO b VALUES (1)", mode="rw", fetch=False)
    assert_exact(state)
    state.run("DELETE FROM a", mode="rw", fetch=False)  # learned under the new schema: cascades into b
    assert_exact(state)
    state.load_image(template())
    assert_exact(state)
    other = StateDB(LIMITS)
    other.load_image(template())
    run(other, STATEMENTS[2], 1)  # no episode: the image holds the write
    image, digests = other.image(), other.table_digests()
    state.load_image(image, digests)
    assert state.table_digests() == digests == state.table_digests(cached=False)
    state.host("UPDATE lone SET v = 42")
    assert_exact(state)


def test_non_ascii_names_are_two_tables() -> None:
    """``"É"`` and ``"é"`` are two tables to SQLite; the cache keeps one digest for each."""
    state = episode()
    state.table_digests()
    run(state, "INSERT INTO \"É\" VALUES (3)")
    digests = state.table_digests()
    assert digests["É"] != digests["é"]
    assert_exact(state)
    assert fold("ÉMixed") == "Émixed"


def test_spec_code_cannot_observe_the_cache() -> None:
    """Every result tool code sees (rows, rowcounts, ``changes()``, ``last_insert_rowid()``, the schema) is the
    same whether digests are taken between its statements or not, cached or not."""
    probe = "SELECT changes() AS c, last_insert_rowid() AS r, (SELECT count(*) FROM sqlite_schema) AS s"
    script = [(STATEMENTS[i % len(STATEMENTS)], i) for i in range(30)] + [(probe, 0)]

    def play(state: StateDB, digest: bool) -> list[Any]:
        out = []
        for k, (sql, arg) in enumerate(script):
            out.append(run(state, sql, *([arg] if "?" in sql else [])))
            out.append(run(state, probe))
            if digest:
                state.table_digests()
            if k == 12:
                state.savepoint()
            if k == 20:
                state.release(commit=k % 2 == 0)
                if digest:
                    state.table_digests()
        return out

    plain = play(episode(), False)
    assert play(episode(), True) == plain
    assert play(episode(digest_cache=False), True) == plain
    watched = episode()
    play(watched, True)
    assert watched.host("SELECT type, name FROM sqlite_schema") == template_schema()
    assert watched.host("SELECT name FROM temp.sqlite_schema") == [("envwright_reset",)]


def template_schema() -> list[tuple[Any, ...]]:
    state = StateDB(LIMITS)
    state.load_image(template())
    return state.host("SELECT type, name FROM sqlite_schema")


def test_engine_episodes_start_from_the_template_digests(reads: list[int]) -> None:
    """A fresh episode, on a new or a pooled connection, takes the template's digests; a call that wrote makes
    the next digest read its table once; a checkpoint's restore brings back the digests known then."""
    spec = store_spec(PURE_CODE, [t for t in STORE_TOOLS if t["name"] in ("get", "take")])
    ex = InProcessExecutor(Limits(sql=LIMITS))
    try:
        first = ex.session(spec, seed=0)
        reads[0] = 0
        start = first.digest()
        assert reads[0] == 0
        token = first.fork()
        assert first.call("take", {"item_id": 1, "qty": 1}).ok
        assert first.digest() != start and reads[0] == 1
        assert first.digest()["tables"] == first.digest()["tables"] and reads[0] == 1
        assert token is not None and first.restore(token)
        assert first.digest() == start and reads[0] == 1
        first.close()
        again = ex.session(spec, seed=1)  # the pooled connection, reset
        assert again.digest() == start and reads[0] == 1
        again.close()
    finally:
        ex.close()


def test_an_episode_opened_with_setup_statements_digests_their_content() -> None:
    """A task's setup statements change the template before the first call: the episode's digests are its
    content's (the same content reached by a call digests the same), never the template's."""
    ex = InProcessExecutor(Limits(sql=LIMITS))
    try:
        plain = ex.session(store_spec(), seed=0)
        template = plain.digest()
        setup = ex.session(store_spec(), seed=0, start=False)
        setup.setup = ("UPDATE items SET qty = 1 WHERE id = 1",)
        setup.open(0)
        got = setup.digest()
        assert plain.call("take", {"item_id": 1, "qty": 2}).ok
        assert got != template and got == plain.digest()
    finally:
        ex.close()


def test_digest_cache_unit_savepoints_of_one_name() -> None:
    """Savepoints are a stack in which a name means its most recent entry, as in SQLite."""
    cache = DigestCache()
    cache.reset({"t": "t0", "u": "u0"})
    cache.opened("s")
    cache.mark({"t"})
    cache.put("t", "t1")
    cache.opened("S")  # the same name, nested
    cache.mark({"u"})
    cache.put("u", "u1")
    cache.rolled_back("s")  # the inner one: u as it was when it opened, t as written before
    assert cache.get("u") == "u0" and cache.get("t") == "t1"
    cache.released("s")  # the inner one
    cache.rolled_back("s")
    assert (cache.get("t"), cache.get("u")) == ("t0", "u0")
    cache.rolled_back("nowhere")  # a savepoint the cache does not know of
    assert cache.get("t") is None
    cache.mark_all()
    assert cache.get("t") is None
    assert write_closure({"p"}, {"p": frozenset({"c"}), "c": frozenset({"g"})}) == {"p", "c", "g"}


OPS = histories(len(STATEMENTS), 4)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS)
def test_cached_digests_equal_fresh_ones_over_random_histories(ops: list[tuple[int, int, bool]]) -> None:
    """Any history of statements (cascades, failures, the statement cache), digests, checkpoints and their
    restores, call savepoints kept or undone, resets and trusted writes: the cached digests are the fresh ones."""
    play_history(episode(), ops, STATEMENTS, digests=lambda s: s.table_digests(["p", "lone"]),
                 trusted="UPDATE g SET v = v + ?", check=assert_exact)


def test_a_read_digest_is_the_rows_digest_whatever_rows_came_before(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows' texts are remembered by the rows only where equal rows have equal texts: ``1``, ``1.0`` and ``True``
    are equal with three texts, as are ``0.0`` and ``-0.0``."""
    import gym_envs.sandbox.digests as digests

    monkeypatch.setattr(digests, "_ROW_TEXTS", {})
    tables = [[(1, "a", None)], [(1.0, "a", None)], [(True, "a", None)], [(1, "a", None), (2, b"x", "")],
              [(0.0,)], [(-0.0,)], [(0,)], [(False,)], [("1",)], [(b"1",)], [(1, "a", None)] * 2]
    for _ in range(2):  # read again: the remembered texts are the ones read
        for rows in tables:
            assert read_digest(list(rows)) == rows_digest(rows), rows
    assert (1, "a", None) in digests._ROW_TEXTS
    assert not any(type(v) in (float, bool) for row in digests._ROW_TEXTS for v in row)


def test_the_remembered_row_texts_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    import gym_envs.sandbox.digests as digests

    monkeypatch.setattr(digests, "_ROW_TEXTS", {})
    monkeypatch.setattr(digests, "_kept", [0])
    monkeypatch.setattr(digests, "MAX_ROW_CHARS", 100)
    rows = [(i, "x" * 10) for i in range(40)]
    assert read_digest(rows) == rows_digest(rows)
    assert sum(map(len, digests._ROW_TEXTS.values())) <= 100 and digests._kept[0] <= 100


@given(st.lists(st.tuples(st.one_of(st.none(), st.integers(-3, 3), st.floats(-2, 2, allow_nan=False),
                                    st.sampled_from(["a", "A", "é", "1"]), st.binary(max_size=2)),
                          st.integers(0, 2)), max_size=6), st.lists(st.integers(0, 5), max_size=4))
@settings(max_examples=200, deadline=None)
def test_read_digests_equal_rows_digests_over_random_tables(rows: list[tuple[Any, ...]], picks: list[int]) -> None:
    seen = [rows[i % len(rows)] for i in picks] if rows else []
    assert read_digest(seen) == rows_digest(seen)  # some rows remembered first
    assert read_digest(rows) == rows_digest(rows)


def test_the_rows_read_for_digests_are_kept_by_digest_within_their_bound() -> None:
    kept = RowsRead(max_rows=5)
    a, b, c = [(1, "x"), (2, "y")], [(3, "z")] * 3, [(4, None)] * 2
    kept.keep(rows_digest(a), a)
    kept.keep(rows_digest(b), b)
    assert kept.get(rows_digest(b)) is b and kept.get(rows_digest(a)) is a
    kept.keep(rows_digest(c), c)  # 7 rows: the least recently used (b, after a was asked for) goes
    assert kept.get(rows_digest(b)) is None and kept.get(rows_digest(a)) is a and kept.get(rows_digest(c)) is c
    kept.keep("big", [(i,) for i in range(6)])  # more than the bound alone: not kept, nothing dropped for it
    assert kept.get("big") is None and kept.get(rows_digest(a)) is a
    assert kept.get(rows_digest([(9,)])) is None


def test_only_columns_of_text_affinity_are_taken_to_hold_no_floats() -> None:
    """SQLite's affinity rules on the declared type: ``INT`` anywhere is integer (``CHARINT`` too), then ``CHAR``,
    ``CLOB`` or ``TEXT`` is text; a generated column may hold anything; a virtual table's hidden one is no column of a
    ``SELECT *``."""
    xinfo = [(0, "id", "INTEGER", 0, None, 1, 0), (1, "name", "VARCHAR(20)", 0, None, 0, 0),
             (2, "n", "BIGINT", 0, None, 0, 0), (3, "x", "", 0, None, 0, 0), (4, "hidden", "", 0, None, 0, 1),
             (5, "p", "REAL", 0, None, 0, 0), (6, "t", "text", 0, None, 0, 0), (7, "g", "TEXT", 0, None, 0, 2),
             (8, "c", "CHARINT", 0, None, 0, 0), (9, "b", "CLOB", 0, None, 0, 0), (10, "m", "NUMERIC", 0, None, 0, 0)]
    assert float_columns(xinfo) == (0, 2, 3, 4, 6, 7, 9)


def test_floats_equal_to_remembered_rows_are_digested_as_floats(monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``REAL`` or untyped column holding ``2.0`` next to a table whose ``2`` was read before: the digests are the
    rows' own, so the float columns are type-checked (taking every column as text gives a wrong digest)."""
    import gym_envs.sandbox.digests as digests

    def digests_of(state: StateDB) -> dict[str, str]:
        assert state.table_digests(["ints"], cached=False)  # remembers the text of (2, 'x')
        return state.table_digests(cached=False)

    for unsure in (float_columns, lambda columns: ()):
        monkeypatch.setattr(digests, "_ROW_TEXTS", {})
        monkeypatch.setattr(rereads_module, "float_columns", unsure)
        state = StateDB(LIMITS)
        state.script("CREATE TABLE ints (a INTEGER, b TEXT); CREATE TABLE reals (a REAL, b TEXT); "
                     "CREATE TABLE untyped (a, b TEXT); CREATE TABLE texts (a TEXT, b TEXT)", mode="setup")
        for t in ("ints", "reals", "untyped", "texts"):
            state.run(f"INSERT INTO {t} VALUES (?, 'x')", [2.0 if t == "untyped" else 2], mode="rw", fetch=False)
        got = digests_of(state)
        want = {t: rows_digest(state.host(f"SELECT * FROM {t}")) for t in got}
        assert [type(r[0]) for t in ("ints", "reals", "untyped", "texts") for r in state.host(f"SELECT * FROM {t}")] \
            == [int, float, float, str]
        assert (got == want) is (unsure is float_columns)
        state.close()
