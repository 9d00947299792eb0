"""``gym_envs.sandbox.checks``: every check kind, and checks that try to pass or write what they should not."""

from __future__ import annotations

from typing import Any

import pytest

from gym_envs.sandbox import Executor
from tests.gym_envs.sandbox.attacks import (
    BENIGN,
    make_spec,
)
from tests.gym_envs.sandbox.store import store_spec


def test_every_check_kind(ex: Executor) -> None:
    s = ex.session(store_spec())
    s.mark()
    s.call("take", {"item_id": 1, "qty": 1})
    s.call("fly", {})
    checks = [
        {"kind": "sql", "query": "SELECT name, qty FROM items", "expect": [["pear", 0], ["apple", 2]]},
        {"kind": "sql", "query": "SELECT name FROM items ORDER BY id", "expect": [["pear"], ["apple"]],
         "ordered": True},
        {"kind": "python", "code": "def check(db):\n    return db.query('SELECT qty FROM items WHERE id = 1')"
                                   "[0]['qty'] == 2"},
        {"kind": "python", "code": "def nope(db):\n    return True"},
        {"kind": "python", "code": "def check(db):\n    return undefined"},
        {"kind": "reply_contains", "any_of": ["TWO", "2"]},
        {"kind": "reply_contains", "any_of": ["three"]},
        {"kind": "unchanged", "tables": ["items"]},
        {"kind": "calls", "require": ["take"], "forbid": ["fly"]},
        {"kind": "calls", "require": ["take"]},
        {"kind": "nonsense"},
    ]
    results = s.check(checks, "There are two left.", ["take"], attempted=["take", "fly"])
    assert [r.passed for r in results] == [True, False, True, False, False, True, False, False, False, True,
                                           False]
    assert "forbidden calls ['fly']" in results[8].detail
    assert "defines no check" in results[3].detail
    s.close()


@pytest.mark.parametrize("ret", ["1", "'yes'", "[1]", "{'ok': True}", "1.0", "None", "not_defined"])
def test_python_check_must_return_the_real_true(ret: str, ex: Executor, host: dict[str, Any]) -> None:
    s = ex.session(make_spec(BENIGN, "balance"))
    res = s.check([{"kind": "python", "code": f"def check(db):\n    return {ret}"}], "", [])
    assert not res[0].passed, res
    good = "def check(db):\n    return db.query('SELECT 1 AS x')[0]['x'] == 1"
    res = s.check([{"kind": "python", "code": good}], "", [])
    assert res[0].passed, res
    s.close()


CHECK_WRITES = {
    "db.execute": "def check(db):\n    db.execute('DELETE FROM acct')\n    return True",
    "UPDATE ... RETURNING through query": "def check(db):\n"
                                          "    db.query('UPDATE acct SET balance = 0 RETURNING id')\n    return True",
    "WITH ... DELETE through query": "def check(db):\n"
                                     "    db.query('WITH x AS (SELECT 1) DELETE FROM acct RETURNING id')\n"
                                     "    return True",
}


@pytest.mark.parametrize("name", list(CHECK_WRITES))
def test_checks_cannot_mutate_state(name: str, ex: Executor, host: dict[str, Any]) -> None:
    """Checks get a read-only view: a writing check fails and the state is unchanged."""
    s = ex.session(make_spec(BENIGN, "balance"))
    before = s.digest()["digest"]
    (res,) = s.check([{"kind": "python", "code": CHECK_WRITES[name]}], "", [])
    assert not res.passed and ("read-only" in res.detail or "not authorized" in res.detail or
                               "not allowed" in res.detail), res
    assert s.digest()["digest"] == before
    s.close()


def test_check_cannot_reuse_a_write_statement_the_tool_prepared(ex: Executor, host: dict[str, Any]) -> None:
    """SQLite authorizes a statement when it is prepared, and prepared statements are cached per
    connection: a tool can prepare ``WITH ... DELETE`` (allowed for tools), and a check running the
    same text would get the cached, already-authorized statement (it did, before ``ro`` views ran
    under ``PRAGMA query_only``, whose change also makes SQLite re-prepare, so re-authorize, it)."""
    sql = "WITH x AS (SELECT 1) DELETE FROM acct WHERE id = 99 RETURNING id"
    code = f"def t(db, **kw):\n    return db.query({sql!r})"
    s = ex.session(make_spec(code))
    assert s.call("t", {}).ok
    before = s.digest()["digest"]
    check = f"def check(db):\n    db.query({sql!r})\n    return True"
    (res,) = s.check([{"kind": "python", "code": check}], "", [])
    assert not res.passed and ("read-only" in res.detail or "not authorized" in res.detail), res
    (res,) = s.check([{"kind": "sql", "query": sql, "expect": []}], "", [])
    assert not res.passed
    assert s.digest()["digest"] == before
    s.close()
