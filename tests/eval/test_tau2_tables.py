"""eval.tau2.tables and eval.tau2.policy on fixtures built here (no τ² needed)."""

from __future__ import annotations

import sqlite3

import pytest

from eval.tau2.convert import task_id
from eval.tau2.policy import split_policy
from eval.tau2.tables import (
    MAX_STATEMENT_CHARS,
    Column,
    Table,
    check_rows,
    digests,
    insert_sql,
    literal,
    schema_sql,
    seed_sql,
    setup_statements,
)
from gym_envs.sandbox import InProcessExecutor
from gym_envs.spec import parse_spec

T = Table("t", (Column("k"), Column("n", "INTEGER"), Column("x", "", null=True, comment="a number"),
                Column("s", null=True)), ("k",), "a test table")
ROWS = [("a", 1, 0, "it's"), ("b", 2, 0.0, None), ("c", -3, 1e-07, "x" * 50), ("d", 2**62, 100.0, "é ✓"),
        ("e", 0, 12.340000000000003, "")]


def _db(sql: str) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.executescript(sql)
    return conn


def test_literals_read_back_as_the_same_values_in_an_untyped_column() -> None:
    conn = _db(schema_sql([T]) + seed_sql([T], {"t": ROWS}))
    back = conn.execute("SELECT * FROM t ORDER BY k").fetchall()
    assert back == ROWS and [type(r[2]) for r in back] == [int, float, float, float, float]  # 0 stays an int


def test_a_bool_or_an_unknown_type_has_no_literal() -> None:
    for bad in (True, b"x", [1]):
        with pytest.raises(TypeError):
            literal(bad)


def test_digests_equal_the_runtimes_digest_of_the_filled_table() -> None:
    spec = parse_spec({
        "spec_version": 2, "id": "digest-check", "title": "t",
        "state": {"schema_sql": schema_sql([T]), "seed_sql": seed_sql([T], {"t": ROWS})},
        "tools": [{"name": "noop"}], "code": "def noop(db):\n    return 1\n",
        "tasks": [{"id": "x", "kind": "read", "turns": [{"instruction": "i", "checks": [
            {"kind": "state", "digests": digests([T], {"t": ROWS})}]}]}]})
    ex = InProcessExecutor()
    try:
        session = ex.session(spec)
        assert session.digest()["tables"] == digests([T], {"t": ROWS})
    finally:
        ex.close()


def test_insert_statements_stay_under_the_statement_limit_and_keep_every_row() -> None:
    rows = [(f"k{i}", i, float(i) / 7, "v" * 300) for i in range(400)]
    stmts = insert_sql(T, rows)
    assert len(stmts) > 1 and all(len(s) <= MAX_STATEMENT_CHARS for s in stmts)
    conn = _db(schema_sql([T]) + "\n".join(stmts))
    assert sorted(conn.execute("SELECT * FROM t").fetchall()) == sorted(rows)


def test_setup_statements_turn_one_set_of_rows_into_another() -> None:
    target = [ROWS[0], ("b", 2, 5.5, "changed"), ROWS[3], ("z", 9, None, None)]
    stmts = setup_statements([T], {"t": ROWS}, {"t": target})
    conn = _db(schema_sql([T]) + seed_sql([T], {"t": ROWS}))
    for s in stmts:
        conn.execute(s)
    assert sorted(conn.execute("SELECT * FROM t").fetchall()) == sorted(target)
    assert setup_statements([T], {"t": ROWS}, {"t": list(reversed(ROWS))}) == []  # row order is no change


def test_rows_that_do_not_fit_the_tables_are_refused_saying_where() -> None:
    with pytest.raises(ValueError, match=r"t\.n"):
        check_rows([T], {"t": [("a", "1", None, None)]})
    with pytest.raises(ValueError, match="two rows with the key"):
        check_rows([T], {"t": [ROWS[0], ROWS[0]]})
    with pytest.raises(ValueError, match="unknown table"):
        check_rows([T], {"u": []})


def test_task_ids_are_kept_when_valid_and_made_valid_and_distinct_otherwise() -> None:
    assert task_id("42") == "42"
    long_a = "[mobile_data_issue]airplane_mode_on|user_abroad_roaming_enabled_off[PERSONA:None]"
    long_b = long_a.replace("off", "on")
    a, b = task_id(long_a), task_id(long_b)
    assert a != b and all(len(x) <= 64 and x.replace("-", "").replace("_", "").replace(".", "").isalnum()
                          for x in (a, b))


POLICY = """# Shop policy

The current time is noon.

You must authenticate the user first.

Once authenticated, you can look things up.

## Domain basic

### Order
Each order has:
- an id
- a status

## Cancel order

An order can only be cancelled if it is pending.

Payment:
- The refund goes to the original method.
- If paid by gift card:
  - the card is credited at once
"""


def test_policy_rules_are_the_sections_and_normative_intro_lines_the_rest_is_description() -> None:
    description, rules = split_policy(POLICY, tool_enforced=("can only be cancelled if",))
    texts = [r.text for r in rules]
    assert texts == ["You must authenticate the user first.",
                     "Cancel order: An order can only be cancelled if it is pending.",
                     "Cancel order: Payment: The refund goes to the original method.",
                     "Cancel order: Payment: If paid by gift card: the card is credited at once"]
    assert [r.enforced for r in rules] == ["policy", "tool", "policy", "policy"]
    assert "Shop policy" not in description and "## Cancel order" not in description
    for line in ("The current time is noon.", "Once authenticated, you can look things up.", "## Domain basic",
                 "### Order", "- a status"):
        assert line in description
