"""``gym_envs.sandbox.db``: the guarded connection, its episodes, its statements and the ``db`` facade."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from gym_envs.errors import StateError
from gym_envs.sandbox import DbFacade, SqlLimits, StateDB
from gym_envs.sandbox.sqlpolicy import quote_identifier
from tests.gym_envs.sandbox.store import state_image

SCHEMA = """
CREATE TABLE acct (id INTEGER PRIMARY KEY, owner TEXT NOT NULL, balance INTEGER NOT NULL);
CREATE TABLE log (id INTEGER PRIMARY KEY AUTOINCREMENT, note TEXT);
CREATE INDEX acct_owner ON acct (owner);
"""


SEED = "INSERT INTO acct VALUES (1, 'ann', 100), (2, 'bob', 50);"


LIMITS = SqlLimits(statement_timeout_s=0.2)


_ROOT = Path(__file__).resolve().parents[3]


def template() -> bytes:
    return state_image(SCHEMA, SEED, LIMITS)


@pytest.fixture
def db() -> StateDB:
    state = StateDB(LIMITS)
    state.load_image(template())
    state.open_episode()
    return state


def rw(state: StateDB, sql: str, params: object = ()) -> object:
    return state.run(sql, params, mode="rw", fetch=sql.lstrip().upper().startswith(("SELECT", "WITH")))


def test_tool_mode_allows_dml_and_returning(db: StateDB) -> None:
    assert db.run("INSERT INTO acct VALUES (3, 'cy', 1)", mode="rw", fetch=False) == {"rowcount": 1,
                                                                                     "lastrowid": 3}
    rows = db.run("UPDATE acct SET balance = balance + 1 WHERE id = ? RETURNING balance", [3], mode="rw",
                  fetch=True)
    assert rows == [{"balance": 2}]
    assert db.run("WITH c AS (SELECT 3 AS i) DELETE FROM acct WHERE id IN (SELECT i FROM c)", mode="rw",
                  fetch=False)["rowcount"] == 1
    assert db.run("INSERT INTO log (note) VALUES ('x')", mode="rw", fetch=False)["lastrowid"] == 1


def test_read_only_view_refuses_a_write_prepared_earlier_in_tool_mode(db: StateDB) -> None:
    """SQLite authorizes a statement when it is prepared; the statement cache would hand a check the
    statement a tool prepared. A read-only view's statements run under a text of their own, so each is prepared,
    and authorized, in ``ro`` mode."""
    sql = "WITH c AS (SELECT 1) DELETE FROM acct WHERE id = 2 RETURNING id"
    db.run("WITH c AS (SELECT 1) DELETE FROM acct WHERE id = 99 RETURNING id", mode="rw", fetch=True)
    with pytest.raises(StateError):
        db.run(sql, mode="ro", fetch=True)
    assert db.run(sql.replace("id = 2", "id = 2"), mode="rw", fetch=True) == [{"id": 2}]
    assert db.run(sql.replace("id = 2", "id = 1"), mode="rw", fetch=True) == [{"id": 1}]
    with pytest.raises(StateError):  # the very text that just ran in rw mode
        db.run(sql.replace("id = 2", "id = 1"), mode="ro", fetch=True)
    assert db.run("SELECT 1 AS one", mode="rw", fetch=True) == [{"one": 1}]  # back to writable


class _CountingDB(StateDB):
    """A StateDB that counts the authorizer's calls (SQLite calls it only while it prepares a statement)."""

    def __init__(self, limits: SqlLimits) -> None:
        self.authorized = 0
        super().__init__(limits)

    def _authorize(self, *args: Any) -> int:
        self.authorized += 1
        return super()._authorize(*args)


def test_checks_between_tool_calls_make_nothing_prepare_again() -> None:
    """A read-only view's statements run under their own text, so nothing is toggled between a tool's statements
    and a check's: the tool's prepared statements stay valid (a ``PRAGMA`` change would expire every one of them,
    and each would be prepared and authorized again)."""
    state = _CountingDB(LIMITS)
    state.load_image(template())
    state.open_episode()
    tool = "UPDATE acct SET balance = balance + ? WHERE id = ?"
    check = "SELECT balance FROM acct WHERE id = 1"
    for _ in range(2):  # both prepared once
        state.run(tool, [1, 1], mode="rw", fetch=False)
        state.run(check, mode="ro", fetch=True)
    before = state.authorized
    for _ in range(3):
        state.run(tool, [1, 1], mode="rw", fetch=False)
        assert state.run(check, mode="ro", fetch=True)
    assert state.authorized == before
    assert state.run(check, mode="ro", fetch=True) == [{"balance": 105}]


def test_read_only_statements_cannot_be_named_by_untrusted_sql(db: StateDB) -> None:
    """The tag a read-only view's statements run under holds the host's mark, which no mode admits, so no tool can
    prepare a statement under a read-only text; a read-only statement as long as the limit allows still runs."""
    from gym_envs.sandbox import db as db_module

    tagged = db_module._RO_TAG + "WITH c AS (SELECT 1) DELETE FROM acct WHERE id = 2"
    for mode in ("rw", "ro"):
        with pytest.raises(StateError, match="envwright host"):
            db.run(tagged, mode=mode, fetch=False)
    assert db.run("SELECT count(*) AS n FROM acct", mode="rw", fetch=True) == [{"n": 2}]
    longest = "SELECT 1 AS one" + " " * (LIMITS.max_sql_length - len("SELECT 1 AS one"))
    assert db.run(longest, mode="ro", fetch=True) == [{"one": 1}]


def test_host_statements_are_never_served_to_untrusted_sql(db: StateDB) -> None:
    """Host statements carry a per-process tag, so the same text from a tool is prepared (and
    authorized) afresh: the counters' scratch table stays unwritable."""
    db.reset_episode()
    with pytest.raises(StateError):
        db.run("INSERT OR REPLACE INTO temp.envwright_reset (rowid) VALUES (0)", mode="rw", fetch=False)


def test_recursive_cte_hits_the_statement_deadline(db: StateDB) -> None:
    start = time.perf_counter()
    with pytest.raises(StateError, match="too long"):
        db.run("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c",
               mode="ro", fetch=True)
    assert time.perf_counter() - start < 1.0
    assert not db.lost  # a read that is interrupted leaves the transaction alone


def test_row_and_byte_limits(db: StateDB) -> None:
    state = StateDB(SqlLimits(max_rows=5, max_result_bytes=1000))
    with pytest.raises(StateError, match="more than 5 rows"):
        state.run("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 6) SELECT x FROM c",
                  mode="ro", fetch=True)
    with pytest.raises(StateError, match="larger than"):
        state.run("SELECT zeroblob(600) UNION ALL SELECT zeroblob(601)", mode="ro", fetch=True)
    with pytest.raises(StateError, match="too many parameters"):
        db.run("SELECT ?", list(range(101)), mode="ro", fetch=True)
    with pytest.raises(StateError, match="too long"):
        db.run("SELECT 1" + " " * 20_000, mode="ro", fetch=True)


def test_database_size_is_capped() -> None:
    state = StateDB(SqlLimits(max_db_pages=64))
    state.script("CREATE TABLE t (x)", mode="setup")
    state.load_image(state.image())
    state.open_episode()
    with pytest.raises(StateError, match="full"):
        state.run("INSERT INTO t WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c LIMIT 1000) "
                  "SELECT zeroblob(1000) FROM c", mode="rw", fetch=False)


def test_parameters_are_plain_values(db: StateDB) -> None:
    class Sneaky(str):
        def __eq__(self, other: object) -> bool:
            return True

        __hash__ = str.__hash__

    rows = db.run("SELECT ? AS v, typeof(?) AS t", [Sneaky("ann"), True], mode="ro", fetch=True)
    assert rows == [{"v": "ann", "t": "integer"}] and type(rows[0]["v"]) is str
    assert db.run("SELECT :a AS a", {"a": 1}, mode="ro", fetch=True) == [{"a": 1}]
    for bad in ([object()], [[1]], "not a sequence", 5):
        with pytest.raises(StateError):
            db.run("SELECT ?", bad, mode="ro", fetch=True)
    with pytest.raises(StateError, match="must be a string"):
        db.run(b"SELECT 1", mode="ro", fetch=True)  # type: ignore[arg-type]


def test_reset_restores_the_template_exactly(db: StateDB) -> None:
    before = db.digest()
    rw(db, "UPDATE acct SET balance = 0")
    rw(db, "INSERT INTO log (note) VALUES ('x')")
    assert db.digest() != before
    db.reset_episode()
    assert db.digest() == before
    assert db.run("INSERT INTO log (note) VALUES ('y')", mode="rw", fetch=False)["lastrowid"] == 1


def test_connection_counters_look_fresh_after_reset(db: StateDB) -> None:
    fresh = StateDB(LIMITS)
    fresh.load_image(template())
    fresh.open_episode()
    probe = "SELECT last_insert_rowid() AS r, changes() AS c"
    expected = fresh.run(probe, mode="ro", fetch=True)
    assert expected == [{"r": 0, "c": 0}]
    rw(db, "INSERT INTO acct VALUES (7, 'x', 1)")
    rw(db, "UPDATE acct SET balance = 1")
    assert db.run(probe, mode="ro", fetch=True) == [{"r": 7, "c": 3}]
    db.reset_episode()
    assert db.run(probe, mode="ro", fetch=True) == expected


def test_savepoint_release_and_rollback(db: StateDB) -> None:
    db.savepoint()
    rw(db, "UPDATE acct SET balance = 1 WHERE id = 1")
    db.release(commit=False)
    assert db.run("SELECT balance FROM acct WHERE id = 1", mode="ro", fetch=True) == [{"balance": 100}]
    db.savepoint()
    rw(db, "UPDATE acct SET balance = 2 WHERE id = 1")
    db.release(commit=True)
    assert db.run("SELECT balance FROM acct WHERE id = 1", mode="ro", fetch=True) == [{"balance": 2}]


def test_interrupted_write_loses_the_transaction_and_blocks_further_sql(db: StateDB) -> None:
    rw(db, "UPDATE acct SET balance = 1 WHERE id = 1")
    with pytest.raises(StateError) as info:
        db.run("INSERT INTO log (note) WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
               "SELECT x FROM c", mode="rw", fetch=False)
    assert info.value.transient
    assert db.lost
    with pytest.raises(StateError, match="aborted"):
        rw(db, "DELETE FROM acct")
    with pytest.raises(RuntimeError):
        db.reset_episode()
    db.load_image(template())
    db.open_episode()
    assert not db.lost
    assert db.run("SELECT count(*) AS n FROM acct", mode="ro", fetch=True) == [{"n": 2}]


def test_introspection_quotes_identifiers() -> None:
    state = StateDB(LIMITS)
    state.script('CREATE TABLE "we""ird" (a); CREATE TABLE plain (b)', mode="setup")
    state.run("INSERT INTO \"we\"\"ird\" VALUES (1), (2)", mode="rw", fetch=False)
    assert state.tables() == ["plain", 'we"ird']
    assert state.row_counts() == {"plain": 0, 'we"ird': 2}
    assert state.columns('we"ird') == ["a"]
    assert set(state.table_digests()) == {"plain", 'we"ird'}
    assert state.table_digests(["nope"]) == {"nope": "<missing>"}
    assert quote_identifier('a"b') == '"a""b"'


def test_a_table_named_with_a_non_ascii_capital_is_the_schemas() -> None:
    """The authorizer looks a table up by its name lower-cased as Python does; the schema's names are listed the
    same way (SQLite's ``lower()`` leaves ``Ä``), so tool code can use a table named ``Ärger``."""
    state = StateDB(LIMITS)
    state.script('CREATE TABLE "Ärger" (x)', mode="setup")
    state.run('INSERT INTO "Ärger" VALUES (1)', mode="rw", fetch=False)
    assert state.run('SELECT x FROM "Ärger"', mode="ro", fetch=True) == [{"x": 1}]


def test_table_digests_are_order_independent() -> None:
    a, b = StateDB(LIMITS), StateDB(LIMITS)
    for s in (a, b):
        s.script("CREATE TABLE t (x, y)", mode="setup")
    a.run("INSERT INTO t VALUES (1, X'00'), (2, 'b')", mode="rw", fetch=False)
    b.run("INSERT INTO t VALUES (2, 'b'), (1, X'00')", mode="rw", fetch=False)
    assert a.table_digests() == b.table_digests() and a.digest() == b.digest()


def test_facade_exposes_only_query_and_execute(db: StateDB) -> None:
    owner = object()
    facade = DbFacade(db, read_only=True, timeout_s=0.5, owner=owner)
    assert not hasattr(facade, "__dict__") and repr(facade) == "<db>"
    db.guard.owner = owner  # what the engine does around a call
    assert facade.query("SELECT 1 AS one") == [{"one": 1}]
    with pytest.raises(StateError, match="read-only"):
        facade.execute("DELETE FROM acct")
    writable = DbFacade(db, read_only=False, timeout_s=0.5, owner=owner)
    assert writable.execute("UPDATE acct SET balance = 3 WHERE id = 1")["rowcount"] == 1


def test_sqlite_errors_are_state_errors(db: StateDB) -> None:
    with pytest.raises(StateError, match="UNIQUE"):
        rw(db, "INSERT INTO acct VALUES (1, 'dup', 1)")
    with pytest.raises(StateError, match="no such table"):
        db.run("SELECT * FROM nope", mode="ro", fetch=True)
    assert isinstance(db.conn, sqlite3.Connection)


def test_no_statement_is_left_unfinished(tmp_path: object) -> None:
    """A statement that stops early (a limit error, rows a write did not read) is finished at once:
    one still open when the database is replaced by ``load_image`` crashes the process when it is
    finally released (here, with the exception that kept it alive)."""
    script = f"""
import sys
sys.path.insert(0, {str(_ROOT)!r})
from gym_envs.errors import StateError
from gym_envs.sandbox import SqlLimits, StateDB
db = StateDB(SqlLimits(max_rows=20))
db.script("CREATE TABLE t (x)", mode="setup")
db.script("INSERT INTO t WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c LIMIT 100) "
          "SELECT i FROM c", mode="rw")
image = db.image()
for _ in range(20):  # a use after free need not crash the first time
    db.load_image(image)
    db.open_episode()
    kept = []
    try:
        db.run("SELECT x FROM t", mode="rw", fetch=True)
    except StateError as e:
        kept.append(e)
    assert db.run("UPDATE t SET x = x + 1 RETURNING x", mode="rw", fetch=False)["rowcount"] == 0
    db.load_image(image)
    db.open_episode()
    assert db.run("SELECT count(*) AS n FROM t", mode="ro", fetch=True) == [{{"n": 100}}]
    kept.clear()
db.close()
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "ok", (done.returncode, done.stderr[-2000:])


def test_a_new_image_after_the_host_read_a_table_valued_pragma() -> None:
    """The host's reads of columns use ``pragma_table_info``, an eponymous virtual table, which SQLite (3.40)
    frees when ``deserialize`` replaces the database under it: the next read used freed memory. A connection
    that has run such a statement takes its next image through the backup API instead."""
    script = f"""
import sys
sys.path.insert(0, {str(_ROOT)!r})
from gym_envs.sandbox import SqlLimits, StateDB
def image():
    db = StateDB(SqlLimits())
    db.script("CREATE TABLE p (id INTEGER PRIMARY KEY, k TEXT); CREATE TABLE a (x)", mode="setup")
    out = db.image()
    db.close()
    return out
db = StateDB(SqlLimits())
db.script("CREATE TABLE a (x)", mode="setup")
for _ in range(10):  # a use after free need not crash the first time
    assert db.columns("a") == ["x"]
    db.load_image(image())
    assert db.columns("p") == ["id", "k"]
db.close()
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "ok", (done.returncode, done.stderr[-2000:])


# -- the guard: owner token, one statement at a time, save and restore ------------------------------------

def test_a_facade_works_only_while_its_owner_token_is_installed(db: StateDB) -> None:
    mine, other = object(), object()
    facade = DbFacade(db, read_only=False, timeout_s=0.5, owner=mine)
    with pytest.raises(StateError, match="only be used during the tool call"):
        facade.query("SELECT 1 AS one")  # no call running
    db.guard.owner = other  # another facade's call (another episode on a pooled connection)
    with pytest.raises(StateError, match="only be used during the tool call"):
        facade.execute("DELETE FROM acct")
    db.guard.owner = mine
    assert facade.query("SELECT count(*) AS n FROM acct") == [{"n": 2}]
    assert (db.guard.mode, db.guard.deadline, db.guard.busy) == ("host", float("inf"), False)


def test_a_nested_statement_cannot_reset_the_guard(db: StateDB) -> None:
    """The red team's bypass: a statement started while another was being prepared failed, and its
    cleanup set the guard to host mode with no deadline, so the outer statement skipped the authorizer
    (``random()`` ran) and its deadline (a CTE ran for 14.7 s). Now the nested statement is refused before
    it touches the guard, and each statement restores what it replaced."""
    owner = object()
    facade = DbFacade(db, read_only=False, timeout_s=0.2, owner=owner)
    db.guard.owner = owner
    outer_authorize = db._authorize
    nested: list[Any] = []

    def authorize(*args: Any) -> int:  # a nested statement from inside the outer one's preparation
        if not nested:
            try:
                nested.append(facade.query("SELECT 1 AS x"))
            except StateError as e:
                nested.append(e)
        return outer_authorize(*args)

    db.conn.set_authorizer(authorize)
    with pytest.raises(StateError, match="not authorized"):
        facade.query("SELECT random() AS r")
    assert isinstance(nested[0], StateError) and "one statement at a time" in str(nested[0])
    nested.clear()
    start = time.perf_counter()
    with pytest.raises(StateError, match="too long"):
        facade.query("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 30000000) "
                     "SELECT count(*) AS n FROM c")
    assert time.perf_counter() - start < 2.0
    assert (db.guard.mode, db.guard.deadline, db.guard.busy) == ("host", float("inf"), False)


def test_a_dump_holds_the_values_a_json_round_trip_gives(db: StateDB) -> None:
    """A dump's rows are plain JSON values, as ``json.dumps(..., default=repr)`` and back would make them: a blob
    becomes its ``repr`` text, every other SQLite value (an infinite or negative-zero float, a big integer, text
    with a NUL) stays as it is."""
    import json

    db.script("CREATE TABLE v (id INTEGER PRIMARY KEY, x)")
    values = [None, 2**62, -0.0, 1.5, float("inf"), "é\x00", b"\x00\xff", ""]
    for i, v in enumerate(values):
        db.run("INSERT INTO v VALUES (?, ?)", (i, v), mode="rw", fetch=False)
    rows = db.host("SELECT * FROM v")
    dumped = db.dump(["v"], limit=100)["v"]["rows"]
    assert dumped == json.loads(json.dumps([list(r) for r in rows], default=repr))
    assert [type(r[1]) for r in dumped] == [type(v) if not isinstance(v, bytes) else str for v in values]
    assert repr(dumped[2][1]) == "-0.0" and dumped[6][1] == repr(b"\x00\xff")
