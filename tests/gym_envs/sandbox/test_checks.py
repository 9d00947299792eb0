"""``gym_envs.sandbox.checks``: the state reads of every check kind, and checks that try to pass or write what they
should not."""

from __future__ import annotations

from typing import Any

import pytest

from gym_envs.sandbox import Executor
from tests.gym_envs.sandbox.attacks import (
    BENIGN,
    make_spec,
)
from tests.gym_envs.sandbox.judging import check
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
        {"kind": "python", "code": "def check(db):\n    return undefined"},
        {"kind": "reply_contains", "any_of": ["TWO", "2"]},
        {"kind": "reply_contains", "any_of": ["three"]},
        {"kind": "unchanged", "tables": ["items"]},
        {"kind": "calls", "require": ["take"], "forbid": ["fly"]},
        {"kind": "calls", "require": ["take"]},
    ]
    results = check(s, checks, "There are two left.", ["take"], attempted=["take", "fly"])
    assert [r.passed for r in results] == [True, False, True, False, True, False, False, False, True]
    assert "forbidden calls ['fly']" in results[7].detail
    # the model refuses a python check without check(db); the engine refuses one that reaches it all the same
    (nope,) = s.probe([{"python": "def nope(db):\n    return True"}])["results"]
    assert nope["ok"] and not nope["value"]["passed"] and "defines no check" in nope["value"]["detail"]
    with pytest.raises(ValueError, match="unknown check kind 'nonsense'"):
        check(s, [{"kind": "nonsense"}])
    s.close()


def test_an_unknown_probe_is_refused_as_data(ex: Executor) -> None:
    """The engine answers only its probe kinds; anything else is a failed answer, never a crash."""
    s = ex.session(store_spec())
    resp = s.probe([{"shell": "ls"}, {"sql": "SELECT 1", "python": "x"}, "digests", {"marks": None}])
    assert resp["ok"] and [r["ok"] for r in resp["results"]] == [False, False, False, True]
    assert "unknown probe" in resp["results"][0]["error"]
    s.close()


@pytest.mark.parametrize("ret", ["1", "'yes'", "[1]", "{'ok': True}", "1.0", "None", "not_defined"])
def test_python_check_must_return_the_real_true(ret: str, ex: Executor, host: dict[str, Any]) -> None:
    s = ex.session(make_spec(BENIGN, "balance"))
    res = check(s, [{"kind": "python", "code": f"def check(db):\n    return {ret}"}], "", [])
    assert not res[0].passed, res
    good = "def check(db):\n    return db.query('SELECT 1 AS x')[0]['x'] == 1"
    res = check(s, [{"kind": "python", "code": good}], "", [])
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
    (res,) = check(s, [{"kind": "python", "code": CHECK_WRITES[name]}], "", [])
    assert not res.passed and ("read-only" in res.detail or "not authorized" in res.detail or
                               "not allowed" in res.detail), res
    assert s.digest()["digest"] == before
    s.close()


def test_check_cannot_reuse_a_write_statement_the_tool_prepared(ex: Executor, host: dict[str, Any]) -> None:
    """SQLite authorizes a statement when it is prepared, and prepared statements are cached per
    connection: a tool can prepare ``WITH ... DELETE`` (allowed for tools), and a check running the
    same text would get the cached, already-authorized statement (it did, before ``ro`` views' statements ran
    under a text of their own, prepared and authorized in ``ro`` mode)."""
    sql = "WITH x AS (SELECT 1) DELETE FROM acct WHERE id = 99 RETURNING id"
    code = f"def t(db, **kw):\n    return db.query({sql!r})"
    s = ex.session(make_spec(code))
    assert s.call("t", {}).ok
    before = s.digest()["digest"]
    writes = f"def check(db):\n    db.query({sql!r})\n    return True"
    (res,) = check(s, [{"kind": "python", "code": writes}], "", [])
    assert not res.passed and ("read-only" in res.detail or "not authorized" in res.detail), res
    (res,) = check(s, [{"kind": "sql", "query": sql, "expect": []}], "", [])
    assert not res.passed
    assert s.digest()["digest"] == before
    s.close()


@pytest.mark.parametrize(("reply", "answer", "found"), [
    # an outside red team's wrong answers, each paid 1.0 by a plain substring test
    ("I am not sure; the room holds 13 people.", "3", False),
    ("Stock is now 420 units.", "42", False),
    ("I could not count them, sorry (error 4404).", "44", False),
    ("The bill is 1670.00.", "167", False),
    # the same numbers as answers, however written
    ("3 rooms are free.", "3", True), ("The bill is 167.00.", "167", True), ("Total: 42.", "42", True),
    ("It costs $1,670.", "1670", True), ("Answer: 2, 3 and 4", "3", True), ("balance is -5", "-5", True),
    ("0.5 kg left", "0.5", True), ("ticket T-1042 is open", "1042", True),
    # a sign, a decimal part, a digit inside a word or a code changes the number
    ("balance is 5", "-5", False), ("Set it to -5.", "5", False), ("4.5 stars", "4", False),
    ("release v2 is out", "2", False), ("on 2024-06-10", "6", False), ("code 0042", "42", False),
    ("code 0042", "0042", True),
    # words: case-insensitive substrings
    ("Two books", "two", True), ("DUNE is lent", "dune", True),
])
def test_a_number_counts_only_as_a_number_of_its_own(reply: str, answer: str, found: bool) -> None:
    from gym_envs.checks.text import reply_contains

    assert reply_contains(reply, answer) is found


def test_a_reply_listing_every_candidate_number_is_no_answer() -> None:
    """A reply that names more than MAX_REPLY_NUMBERS distinct numbers passes no numeric check (it would pass
    whatever the answer); the gate's distinctiveness test reads the same numbers without that cap."""
    from gym_envs.checks import ReplyContainsCheck, TurnView
    from gym_envs.checks.text import MAX_REPLY_NUMBERS, reply_contains, text_contains

    listing = "Maybe one of " + ", ".join(str(n) for n in range(100, 100 + MAX_REPLY_NUMBERS + 1))
    assert not reply_contains(listing, "105") and text_contains(listing, "105")
    assert reply_contains(listing.rsplit(",", 1)[0], "105")  # MAX_REPLY_NUMBERS numbers: still an answer
    assert reply_contains(listing + " Paris", "paris")  # a word is still found
    v = ReplyContainsCheck(any_of=["105"]).verdict(TurnView(listing), [])
    assert not v.passed and "at most 20 numbers" in v.detail


def test_reply_numbers_do_not_depend_on_the_hosts_decimal_context() -> None:
    """A negative number in a reply was negated in the host thread's decimal context: under a host precision of
    3, ``-12345`` became ``-1.23E+4`` (the check failed) and the host's flags collected Inexact and Rounded."""
    import decimal

    from gym_envs.checks.text import text_contains

    with decimal.localcontext() as ctx:
        ctx.prec = 3
        ctx.clear_flags()
        assert text_contains("the balance is -12345 now", "-12345")
        assert not text_contains("the balance is -12346 now", "-12345")
        assert not any(ctx.flags.values())


def _crew(names: list[str]) -> Any:
    """A spec whose ``crew`` table holds ``names`` (and a ``role`` column of two values)."""
    from gym_envs.spec import parse_spec

    rows = ", ".join(f"({i}, '{n}', '{'pilot' if i % 2 else 'cook'}')" for i, n in enumerate(names, 1))
    return parse_spec({
        "id": "crew", "title": "Crew", "state": {"schema_sql": "CREATE TABLE crew (id INTEGER PRIMARY KEY, "
                                                               "name TEXT, role TEXT);",
                                                "seed_sql": f"INSERT INTO crew VALUES {rows};"},
        "tools": [{"name": "noop", "parameters": {"type": "object", "properties": {}}}],
        "code": "def noop(db):\n    return None\n",
        "tasks": [{"id": "t0", "kind": "read", "turns": [{"instruction": "Who?", "checks": [
            {"kind": "reply_contains", "any_of": ["x"]}]}]}]})


def _said(ex: Executor, names: list[str], reply: str, *answers: list[str]) -> list[Any]:
    s = ex.session(_crew(names))
    return check(s, [{"kind": "reply_contains", "any_of": a} for a in answers], reply)


NINE = ["Ada Byron", "Grace Hopper", "Alan Turing", "Edsger Dijkstra", "Barbara Liskov", "Donald Knuth",
        "Frances Allen", "John Backus", "Niklaus Wirth"]


def test_a_reply_listing_the_candidate_names_is_no_answer(ex: Executor) -> None:
    """A string answer counts only in a reply that answers: one that names the answer among too many other values
    of its column (at most half of them, at most MAX_REPLY_NAMES in all) passes no check for it, on both
    executors; a reply that names the answer alone, or with a few others, still passes."""
    assert _said(ex, NINE, "It is Grace Hopper.", ["Grace Hopper"])[0].passed
    assert _said(ex, NINE, "grace hopper, not Alan Turing or Ada Byron", ["Grace Hopper"])[0].passed
    shotgun = _said(ex, NINE, "One of: " + ", ".join(NINE), ["Grace Hopper"])[0]
    assert not shotgun.passed and "list of the candidates" in shotgun.detail and "crew.name" in shotgun.detail
    four = ", ".join(NINE[:4])  # the answer and 3 of the 8 others: at the cap for 9 values (half of them)
    assert _said(ex, NINE, four, ["Grace Hopper"])[0].passed
    assert not _said(ex, NINE, four + ", Donald Knuth", ["Grace Hopper"])[0].passed
    ten = [*NINE, "Radia Perlman"]  # 10 values: 5 named at most, the answer included
    assert _said(ex, ten, ", ".join(ten[:5]), ["Grace Hopper"])[0].passed
    assert not _said(ex, ten, ", ".join(ten[:6]), ["Grace Hopper"])[0].passed
    # a small column: the answer and none of the others (naming both of two candidates is no answer)
    assert not _said(ex, NINE[:2], "Ada Byron or Grace Hopper", ["Grace Hopper"])[0].passed
    assert _said(ex, NINE[:2], "Grace Hopper", ["Grace Hopper"])[0].passed
    # the enum-like column: "pilot or cook" names both of its values
    assert not _said(ex, NINE, "a pilot or a cook", ["pilot"])[0].passed


def test_the_turns_other_answers_are_no_candidates(ex: Executor) -> None:
    """Every reply_contains string of the turn is wanted: a reply naming two asked-for names passes both checks,
    and the value an answer is part of (``Ada Byron`` for ``Byron``) is no other candidate."""
    both = _said(ex, NINE[:3], "Ada Byron and Alan Turing", ["Ada Byron"], ["Alan Turing"])
    assert [r.passed for r in both] == [True, True]
    assert _said(ex, NINE[:3], "Ada Byron", ["Byron"])[0].passed


def test_a_check_is_capped_by_every_column_that_holds_one_of_its_strings(ex: Executor) -> None:
    """The answer's column is found from any spelling of it: a shorter spelling (a surname, part of a phone
    number) that no value equals is capped by the column whose values contain it, or by the column holding the
    check's other spelling; a string no column holds (a computed answer) has no candidates."""
    shotgun = "One of: " + ", ".join(NINE)
    assert not _said(ex, NINE, shotgun, ["Hopper"])[0].passed  # no value equals it: the column containing it
    assert not _said(ex, NINE, shotgun, ["Grace Hopper", "Hopper"])[0].passed
    assert _said(ex, NINE, "Hopper", ["Grace Hopper", "Hopper"])[0].passed
    assert _said(ex, NINE, "Status: overdue. " + ", ".join(NINE), ["overdue"])[0].passed


@pytest.mark.parametrize("others, allowed", [(0, 0), (1, 0), (2, 0), (3, 1), (4, 1), (5, 2), (6, 2), (7, 3), (8, 3),
                                             (9, 4), (100, 4)])
def test_allowed_other_names(others: int, allowed: int) -> None:
    from gym_envs.checks.text import MAX_REPLY_NAMES, allowed_other_names

    assert allowed_other_names(others) == allowed and allowed < MAX_REPLY_NAMES


def _names_too_many_read_afresh(reply: str, wanted: list[str], columns: list[tuple[str, list[str]]]) -> str | None:
    """:func:`~gym_envs.checks.text.names_too_many` as its rule reads, every value matched again each time."""
    from gym_envs.checks.text import allowed_other_names, text_contains

    for label, values in columns:
        others: dict[str, str] = {}
        for v in values:
            key = v.strip().lower()
            if len(key) >= 3 and key not in others and not any(text_contains(w, v) or text_contains(v, w)
                                                               for w in wanted):
                others[key] = v
        named = [v for v in others.values() if text_contains(reply, v)]
        if len(named) > allowed_other_names(len(others)):
            shown = ", ".join(repr(v) for v in named[:5]) + (", ..." if len(named) > 5 else "")
            return (f"it also names {len(named)} of the {len(others)} other values of {label} ({shown}), and a reply "
                    f"may name at most {allowed_other_names(len(others))} of them")
    return None


def test_names_too_many_answers_as_reading_every_value_afresh() -> None:
    """The other values of a column are remembered by the column and the answers: the same column with other answers,
    or other replies, is judged as a fresh reading judges it."""
    from gym_envs.checks.text import names_too_many

    names = [" Ada Byrne", "Grace Hopper", "ada byrne", "Alan Turing", "Hopper", "Edsger Dijkstra", "Jo", "42",
             "007", "Barbara Liskov", "Ken Thompson", "Dennis Ritchie"]
    codes = ["A-12", "A-120", "12", "1,200", "B-7", "7", "C-99", "twelve"]
    columns = [("people.name", names), ("orders.code", codes)]
    replies = ["Ada Byrne", "It is Grace Hopper, not Alan Turing or Ken Thompson or Dennis Ritchie.",
               "Candidates: " + ", ".join(names), "A-12, A-120, 12, 7 and C-99", "12 or 7 or 1,200 or twelve", "",
               "hopper HOPPER Liskov thompson"]
    outcomes = set()
    for wanted in (["Ada Byrne"], ["Hopper"], ["12"], ["Grace Hopper", "7"], [], ["A-12"]):
        for _ in range(2):  # the second time from what was remembered
            for reply in replies:
                why = names_too_many(reply, wanted, columns)
                assert why == _names_too_many_read_afresh(reply, wanted, columns), (reply, wanted)
                outcomes.add(why is None)
    assert outcomes == {True, False}
