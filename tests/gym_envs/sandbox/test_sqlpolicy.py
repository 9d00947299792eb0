"""``gym_envs.sandbox.sqlpolicy``: what untrusted SQL may do, through tool code and on a bare connection."""

from __future__ import annotations

import json
import os
import time
from typing import Any

import pytest

from gym_envs.errors import StateError
from gym_envs.sandbox import Executor, LoadFailure, SqlLimits, StateDB
from gym_envs.sandbox.sqlpolicy import split_sql
from tests.gym_envs.sandbox.attacks import (
    assert_contained,
    assert_next_episode_runs,
    attempt,
    make_spec,
)
from tests.gym_envs.sandbox.judging import check

DB_SCHEMA = """
CREATE TABLE acct (id INTEGER PRIMARY KEY, owner TEXT NOT NULL, balance INTEGER NOT NULL);
CREATE TABLE log (id INTEGER PRIMARY KEY AUTOINCREMENT, note TEXT);
CREATE INDEX acct_owner ON acct (owner);
"""
DB_LIMITS = SqlLimits(statement_timeout_s=0.2)


@pytest.fixture
def db() -> StateDB:
    """A connection with an open episode over the acct/log template."""
    template = StateDB(DB_LIMITS)
    template.script(DB_SCHEMA, mode="setup")
    template.script("INSERT INTO acct VALUES (1, 'ann', 100), (2, 'bob', 50);", mode="rw")
    state = StateDB(DB_LIMITS)
    state.load_image(template.image())
    template.close()
    state.open_episode()
    return state


SQL_BOMBS = {
    "recursive CTE": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c",
    "randomblob": "SELECT randomblob(1000000000)",
    "zeroblob": "SELECT zeroblob(1000000000)",
    "replace blowup": "SELECT length(replace(hex(zeroblob(400000)), '0', 'aaaaaaaaaa'))",
    "printf blowup": "SELECT length(printf('%.*c', 1000000000, 'x'))",
    "result too large": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 100) "
                        "SELECT zeroblob(900000) FROM c",
    "LIKE pattern too long": "SELECT 'a' LIKE '" + "%a" * 2000 + "'",
    "recursive CTE insert": "INSERT INTO secret WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL "
                            "SELECT x + 1 FROM c) SELECT hex(x) FROM c",
}


@pytest.mark.parametrize("name", list(SQL_BOMBS))
def test_sql_bombs_are_refused(name: str, ex: Executor, host: dict[str, Any]) -> None:
    """SQL runs under length, result-size and time limits in both modes."""
    code = "def t(db, sql):\n    return db.query(sql)"
    assert_contained(attempt(ex, code, {"sql": SQL_BOMBS[name]}), call={"SQLError"})
    assert_next_episode_runs(ex)


BOUND = '''
def find(db, owner):
    return db.query("SELECT id, balance FROM acct WHERE owner = ?", [owner])
'''


CONCATENATING = '''
def find(db, owner):
    return db.query("SELECT id FROM acct WHERE owner = '" + owner + "'")
'''


@pytest.mark.parametrize("payload", [
    "' OR '1'='1", "ann'; DROP TABLE acct; --", "x' UNION SELECT k, 0 FROM secret --",
    "1; ATTACH DATABASE '/tmp/envwright-attack.db' AS x",
])
def test_injection_strings_bound_as_parameters_are_data(payload: str, ex: Executor, host: dict[str, Any]) -> None:
    """Parameters are always bound, so an injection string is just a value that matches nothing
    (hidden tables stay unreadable)."""
    s = ex.session(make_spec(BOUND, "find"))
    r = s.call("find", {"owner": payload})
    assert r.ok and r.result == []
    assert check(s, [{"kind": "sql", "query": "SELECT count(*) FROM acct", "expect": [[2]]}], "", [])[0].passed
    s.close()
    assert not os.path.exists("/tmp/envwright-attack.db")
    assert_next_episode_runs(ex)


def test_injection_into_concatenating_tool_cannot_stack_statements(ex: Executor, host: dict[str, Any]) -> None:
    """A tool that concatenates arguments into SQL is the spec author's bug, but even then one
    ``query`` runs one statement: ``; DROP TABLE`` fails and the table survives."""
    s = ex.session(make_spec(CONCATENATING, "find"))
    r = s.call("find", {"owner": "ann'; DROP TABLE acct; --"})
    assert not r.ok and r.error_type == "SQLError" and "one statement" in str(r.error)
    assert check(s, [{"kind": "sql", "query": "SELECT count(*) FROM acct", "expect": [[2]]}], "", [])[0].passed
    s.close()


FORBIDDEN_SQL = {
    "ATTACH DATABASE": "ATTACH DATABASE '/tmp/envwright-attach.db' AS x",
    "VACUUM INTO": "VACUUM INTO '/tmp/envwright-vacuum.db'",
    "comment-prefixed VACUUM INTO": "/* x */ -- y\n VACUUM INTO '/tmp/envwright-vacuum.db'",
    "PRAGMA writable_schema": "PRAGMA writable_schema = 1",
    "write sqlite_master": "UPDATE sqlite_master SET sql = 'x'",
    "load_extension": "SELECT load_extension('/tmp/evil.so')",
    "DROP TABLE": "DROP TABLE acct",
    "CREATE TRIGGER": "CREATE TRIGGER tr AFTER INSERT ON acct BEGIN DELETE FROM acct; END",
    "BEGIN / COMMIT": "COMMIT",
    "RELEASE the host's savepoint": "RELEASE episode",
    "temp table write": "INSERT INTO temp.envwright_reset (rowid) VALUES (5)",
    "total_changes (connection history)": "SELECT total_changes()",
    "two statements": "SELECT 1; DELETE FROM acct",
}


@pytest.mark.parametrize("name", list(FORBIDDEN_SQL))
def test_forbidden_sql_is_refused(name: str, ex: Executor, host: dict[str, Any]) -> None:
    code = "def t(db, sql):\n    return db.execute(sql)"
    assert_contained(attempt(ex, code, {"sql": FORBIDDEN_SQL[name]}), call={"SQLError"})
    for path in ("/tmp/envwright-attach.db", "/tmp/envwright-vacuum.db"):
        assert not os.path.exists(path)
    assert_next_episode_runs(ex)


def test_hidden_tables_are_not_readable_through_injection(ex: Executor, host: dict[str, Any]) -> None:
    s = ex.session(make_spec(BOUND, "find"))
    for payload in ("x' UNION SELECT k, 0 FROM secret --", "s3cr3t"):
        r = s.call("find", {"owner": payload})
        assert r.ok and "s3cr3t" not in json.dumps(r.result)
    s.close()


def test_setup_mode_creates_tables_only() -> None:
    state = StateDB(DB_LIMITS)
    assert state.script(DB_SCHEMA, mode="setup") == 3
    for bad in ("CREATE VIEW v AS SELECT 1", "CREATE TRIGGER t AFTER INSERT ON acct BEGIN SELECT 1; END",
                "CREATE TEMP TABLE x (a)", "INSERT INTO acct VALUES (9, 'x', 1)", "DROP TABLE acct"):
        with pytest.raises(StateError):
            state.run(bad, mode="setup", fetch=False)


@pytest.mark.parametrize("sql", [
    "CREATE TABLE x (a)", "DROP TABLE acct", "ALTER TABLE acct ADD COLUMN y", "PRAGMA writable_schema = 1",
    "ATTACH DATABASE ':memory:' AS other", "DETACH DATABASE other", "VACUUM", "VACUUM INTO '/tmp/x.db'",
    "BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT s", "RELEASE episode", "ANALYZE", "REINDEX",
    "SELECT load_extension('x')", "SELECT random()", "SELECT randomblob(8)", "SELECT total_changes()",
    "UPDATE sqlite_master SET sql = ''", "DELETE FROM sqlite_sequence",
    "INSERT INTO temp.envwright_reset (rowid) VALUES (1)", "SELECT * FROM temp.envwright_reset",
    "SELECT name FROM sqlite_temp_master", "SELECT 1; SELECT 2",
])
def test_tool_mode_refuses(db: StateDB, sql: str) -> None:
    with pytest.raises(StateError):
        db.run(sql, mode="rw", fetch=False)


@pytest.mark.parametrize("sql", [
    "UPDATE acct SET balance = 0", "DELETE FROM acct", "INSERT INTO acct VALUES (9, 'x', 1)",
    "WITH c AS (SELECT 1) DELETE FROM acct RETURNING id", "REPLACE INTO acct VALUES (1, 'x', 1)",
])
def test_read_only_mode_refuses_writes(db: StateDB, sql: str) -> None:
    with pytest.raises(StateError):
        db.run(sql, mode="ro", fetch=True)
    assert db.run("SELECT count(*) AS n FROM acct", mode="ro", fetch=True) == [{"n": 2}]


def test_keyword_filter_sees_through_comments(db: StateDB) -> None:
    for sql in ("/* c */ VACUUM INTO '/tmp/y.db'", "-- c\n  PRAGMA query_only = 0", "  \n\tATTACH ':memory:' AS x"):
        with pytest.raises(StateError, match="not allowed"):
            db.run(sql, mode="rw", fetch=False)


@pytest.mark.parametrize("sql", [
    "SELECT zeroblob(1000000000)",
    "SELECT length(replace(hex(zeroblob(400000)), '0', 'aaaaaaaaaa'))",
    "SELECT printf('%.*c', 1000000000, 'x')",
    "SELECT format('%2000000000d', 1)",
    "SELECT 'a' LIKE '" + "%a" * 100 + "'",
])
def test_value_and_function_blowups_fail_fast(db: StateDB, sql: str) -> None:
    start = time.perf_counter()
    with pytest.raises(StateError):
        db.run(sql, mode="ro", fetch=True)
    assert time.perf_counter() - start < 1.0


def test_printf_still_works(db: StateDB) -> None:
    rows = db.run("SELECT printf('%.2f|%5d|%s|%%|%.*c', 1.5, 3, 'x', 3, 'y') AS p, format('%x', 255) AS f",
                  mode="ro", fetch=True)
    assert rows == [{"p": "1.50|    3|x|%|yyy", "f": "ff"}]


def test_split_sql() -> None:
    assert split_sql("INSERT INTO t VALUES ('a;b'); -- c\nINSERT INTO t VALUES (2)") == [
        "INSERT INTO t VALUES ('a;b');", "-- c\nINSERT INTO t VALUES (2);"]
    assert split_sql("  ;; -- only a comment\n") == []


# -- the allow-lists ------------------------------------------------------------------------------------

OUTSIDE_THE_LISTS = [
    "SELECT sqlite_version() AS v", "SELECT sqlite_source_id() AS v", "SELECT total_changes() AS v",
    "SELECT sqlite_compileoption_used('THREADSAFE') AS v", "SELECT fts3_tokenizer('simple') AS v",
    "SELECT random() AS v", "SELECT randomblob(4) AS v", "SELECT CURRENT_TIMESTAMP AS v", "SELECT current_date AS v",
    "SELECT sql AS v FROM sqlite_stmt", "SELECT count(*) AS v FROM sqlite_stmt", "SELECT 1 AS v FROM sqlite_stmt",
    "SELECT count(*) AS v FROM dbstat", "SELECT name AS v FROM dbstat",
    "SELECT count(*) AS v FROM pragma_table_info('acct')",
    "SELECT count(*) AS v FROM pragma_function_list", "SELECT count(*) AS v FROM envwright_reset",
    "SELECT count(*) AS v FROM temp.envwright_reset", "SELECT rowid AS v FROM sqlite_stmt",
    "SELECT EXISTS (SELECT 1 FROM sqlite_stmt) AS v", "SELECT * FROM sqlite_temp_master",
]


@pytest.mark.parametrize("sql", OUTSIDE_THE_LISTS)
def test_functions_and_tables_outside_the_allow_lists_are_refused(sql: str, ex: Executor) -> None:
    """Whatever the SQLite build compiles in: only the schema's tables, the JSON table functions and the
    listed functions (``sqlite_stmt`` would list the connection's SQL, other episodes' and the host's)."""
    code = "def t(db, sql):\n    return db.query(sql)\n"
    text = assert_contained(attempt(ex, code, {"sql": sql}), call={"SQLError"})
    assert any(w in text for w in ("not authorized", "not allowed", "vtable constructor failed")), text


@pytest.mark.parametrize("default", [
    "DEFAULT (random())", "DEFAULT (randomblob(8))", "DEFAULT (fts3_tokenizer('simple'))", "DEFAULT CURRENT_TIMESTAMP",
    "DEFAULT (sqlite_version())", "DEFAULT (date('now'))", "DEFAULT (datetime('now', 'localtime'))",
])
def test_a_column_default_cannot_call_what_the_authorizer_refuses(default: str, ex: Executor) -> None:
    """A DEFAULT expression is compiled into each INSERT without the authorizer seeing it: every function off
    the allow-list is also replaced on the connection by one that refuses, so the insert fails instead."""
    schema = f"CREATE TABLE acct (id INTEGER PRIMARY KEY, owner TEXT NOT NULL, balance INTEGER NOT NULL, x {default});"
    spec = make_spec("def t(db, **kw):\n    return db.execute(\"INSERT INTO acct (owner, balance) VALUES ('c', 1)\")")
    spec = spec.model_copy(update={"state": spec.state.model_copy(update={
        "schema_sql": schema, "seed_sql": "INSERT INTO acct (id, owner, balance) VALUES (1, 'ann', 100);"})})
    try:
        s = ex.session(spec)
    except LoadFailure as e:  # refused while seeding: the same policy
        assert e.response["error_type"] == "SchemaError"
        return
    r = s.call("t", {})
    s.close()
    assert not r.ok and r.error_type == "SQLError" and ("not allowed" in str(r.error) or "clock" in str(r.error)), r


def test_the_allowed_functions_work(db: StateDB) -> None:
    rows = db.run(
        "SELECT abs(-2) AS a, upper('x') AS u, json_extract('{\"k\": [1, 2]}', '$.k[1]') AS j, "
        "'{\"a\": 3}' ->> 'a' AS o, "
        "round(2.567, 2) AS r, json_array_length('[1, 2]') AS g, "
        "(SELECT count(*) FROM acct) AS n, max(1, 2) AS m, iif(1, 'y', 'n') AS i, sqrt(16) AS q, "
        "date('2024-01-31', '+1 month') AS d, strftime('%Y-%m', '2024-02-03') AS f, julianday('2024-01-01') AS jd, "
        "unixepoch('2024-01-01 00:00:00') AS ue, time('12:00', '+90 minutes') AS tm, printf('%05.1f', 3.14159) AS p",
        mode="ro", fetch=True)
    assert rows == [{"a": 2, "u": "X", "j": 2, "o": 3, "r": 2.57, "g": 2, "n": 2, "m": 2, "i": "y", "q": 4.0,
                     "d": "2024-03-02", "f": "2024-02", "jd": 2460310.5, "ue": 1704067200, "tm": "13:30:00",
                     "p": "003.1"}]
    assert db.run("WITH c(x) AS (SELECT 1) SELECT count(*) AS n FROM c", mode="ro", fetch=True) == [{"n": 1}]
    assert db.run("SELECT count(*) AS n FROM (SELECT id FROM acct) s", mode="ro", fetch=True) == [{"n": 2}]


@pytest.mark.parametrize("sql", [
    "SELECT date('now') AS v", "SELECT date() AS v", "SELECT datetime('NOW') AS v", "SELECT time(' now ') AS v",
    "SELECT julianday('now') AS v", "SELECT unixepoch() AS v", "SELECT strftime('%s') AS v",
    "SELECT strftime('%s', 'now') AS v", "SELECT date('2024-01-01', 'localtime') AS v",
    "SELECT datetime('2024-01-01', 'utc') AS v", "SELECT date(?) AS v",
])
def test_date_functions_refuse_the_clock_and_the_hosts_time_zone(sql: str, db: StateDB) -> None:
    with pytest.raises(StateError, match=r"clock|time zone"):
        db.run(sql, ["now"] if "?" in sql else (), mode="ro", fetch=True)


# -- printf / format widths -------------------------------------------------------------------------------

@pytest.mark.parametrize("args", [
    ("%.*c", 100000000, "x"), ("%.*c", "100000000", "x"), ("%.*c", b"100000000", "x"), ("%*s", "  +20000", "x"),
    ("%*s", b" 20001", "x"), ("%.*c", 1e8, "x"), ("%.*c", -100000000, "x"), ("%*d", -20000, 1),
    ("%*%%.*c", "x", 100000000, "y"), ("%5%%.*c", 100000000, "y"), (b"%.*c", 100000000, "y"), (b"%20000s", "y"),
    ("%20000s", "y"), ("%.20000f", 1.5), ("%0200000d", 1), ("%.*c", "4394967296", "x"), ("%" + "9" * 5000 + "s", "x"),
    ("%.*q", 100000000, "x"), ("%!.*w", 100000000, "x"), ("%,*d", 100000000, 1), ("%*lld", 100000000, 1),
])
def test_printf_widths_are_capped_for_any_argument_type(args: tuple[Any, ...], ex: Executor) -> None:
    """The red team's case: the cap read only numeric ``*`` arguments, so a text or blob width ran a
    statement for 38 s. Widths and precisions past the cap are refused whatever carries them."""
    code = "def t(db, args):\n    vals = [bytes(a) if isinstance(a, list) else a for a in args]\n" \
           "    q = 'SELECT length(printf(' + ','.join('?' * len(vals)) + ')) AS n'\n" \
           "    return db.query(q, vals)[0]['n']\n"
    start = time.perf_counter()
    outcome = attempt(ex, code, {"args": [list(a) if isinstance(a, bytes) else a for a in args]})
    assert time.perf_counter() - start < 5
    assert "width" in assert_contained(outcome, call={"SQLError"})


def _native_printf(fmt: Any, *args: Any) -> Any:
    import sqlite3

    conn = sqlite3.connect(":memory:")
    try:
        return conn.execute("SELECT printf(" + ",".join("?" * (len(args) + 1)) + ")", (fmt, *args)).fetchone()[0]
    finally:
        conn.close()


def test_printf_writes_what_sqlite_writes(db: StateDB) -> None:
    """``printf``/``format`` run SQLite's own code on a canonical format: the same text for every format
    (flags, ``*`` from any type, ``l``, unknown letters, a trailing ``%``) whose widths are under the cap."""
    import random

    rng = random.Random(15)
    pieces = ["%", "-", "+", " ", "#", "!", "0", ",", "*", ".", ".*", "l", "ll", "5", "12", "d", "s", "c", "f", "g",
              "x", "X", "o", "q", "Q", "w", "e", "i", "u", "p", "r", "n", "%%", "z", "T", "y", "abc", " ", "é"]
    values = [0, 7, -3, 2.5, -0.5, "12", "x", " 4", b"3", None, "héllo", "-6", 1e3, "9abc"]
    for _ in range(400):
        fmt = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 10)))
        args = tuple(rng.choice(values) for _ in range(rng.randint(0, 5)))
        placeholders = ",".join("?" * (len(args) + 1))
        got = db.run(f"SELECT printf({placeholders}) AS p", [fmt, *args], mode="ro", fetch=True)[0]["p"]
        assert got == _native_printf(fmt, *args), (fmt, args)
        got = db.run(f"SELECT format({placeholders}) AS p", [fmt.encode(), *args], mode="ro", fetch=True)[0]["p"]
        assert got == _native_printf(fmt.encode(), *args), (fmt, args)


def test_the_authorizer_allows_by_action() -> None:
    """Unknown action codes are denied; the schema's tables are read and written, nothing else."""
    import sqlite3

    from gym_envs.sandbox.sqlpolicy import authorize

    tables = {"acct"}
    assert authorize("rw", tables, sqlite3.SQLITE_READ, "acct", "id", "main") == sqlite3.SQLITE_OK
    assert authorize("rw", tables, sqlite3.SQLITE_READ, "acct", "id", "temp") == sqlite3.SQLITE_DENY
    assert authorize("rw", tables, sqlite3.SQLITE_READ, "sqlite_stmt", "sql", "main") == sqlite3.SQLITE_DENY
    assert authorize("rw", tables, sqlite3.SQLITE_READ, "sqlite_stmt", "", None) == sqlite3.SQLITE_DENY
    assert authorize("rw", tables, sqlite3.SQLITE_READ, "a_cte", "", None) == sqlite3.SQLITE_OK
    assert authorize("rw", tables, sqlite3.SQLITE_UPDATE, "acct", "id", "main") == sqlite3.SQLITE_OK
    assert authorize("ro", tables, sqlite3.SQLITE_UPDATE, "acct", "id", "main") == sqlite3.SQLITE_DENY
    assert authorize("rw", tables, sqlite3.SQLITE_UPDATE, "sqlite_sequence", "seq", "main") == sqlite3.SQLITE_DENY
    assert authorize("rw", tables, sqlite3.SQLITE_FUNCTION, None, "LOWER", None) == sqlite3.SQLITE_OK
    assert authorize("rw", tables, sqlite3.SQLITE_FUNCTION, None, "unknown_fn", None) == sqlite3.SQLITE_DENY
    assert authorize("rw", tables, 9999, None, None, None) == sqlite3.SQLITE_DENY
    assert authorize("rw", tables, sqlite3.SQLITE_CREATE_TABLE, "x", None, "main") == sqlite3.SQLITE_DENY
    assert authorize("setup", tables, sqlite3.SQLITE_CREATE_TABLE, "x", None, "main") == sqlite3.SQLITE_OK
    assert "x" in tables  # its CHECK constraints read it as it is created
