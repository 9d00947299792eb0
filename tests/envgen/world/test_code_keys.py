"""A world's tool code reads each shown record's references as keys in the statement that reads the records
(:func:`envgen.world.code.select_sql`): one query for a list, whatever its length, and the keys a lookup of each
referenced record gives (None for a reference that is NULL)."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from envgen.world.compile import compile_world
from gym_envs.sandbox import InProcessExecutor, StateDB
from tests.envgen.world.store_world import _WORLD, store_world

LOCKER = {"name": "locker", "role": "catalog", "key": {"name": "locker_code", "kind": "code"}, "prefix": "LK",
          "refs": [{"name": "holder", "entity": "customer", "nullable": True}],
          "fields": [{"name": "size", "kind": "category", "values": ["small", "large"]},
                     {"name": "heated", "kind": "boolean"}, {"name": "fee", "kind": "money"}], "rows": 12}
OPS = [{"name": "take_locker", "kind": "acquire", "entity": "locker", "holder": "holder"},
       {"name": "free_locker", "kind": "release", "entity": "locker", "holder": "holder"}]


@pytest.fixture(scope="module")
def shop() -> Any:
    world = store_world(entities=[*_WORLD["entities"], LOCKER], operations=[*_WORLD["operations"], *OPS])
    return compile_world(world, env_id="test-shop-keys", seed=3).spec


def _seed(spec: Any) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.executescript(spec.state.schema_sql)
    conn.executescript(spec.state.seed_sql)
    return conn


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts of the statements tool code runs (every ``db.query`` and ``db.execute``)."""
    seen: list[str] = []
    made = StateDB.statement

    def statement(self: StateDB, mode: str, **kw: Any) -> Any:
        run = made(self, mode, **kw)

        def counting(sql: Any, params: Any = ()) -> Any:
            seen.append(sql)
            return run(sql, params)
        return counting

    monkeypatch.setattr(StateDB, "statement", statement)
    return seen


def test_a_list_costs_the_same_queries_whatever_its_length(shop: Any, counted: list[str]) -> None:
    conn = _seed(shop)
    sizes = dict(conn.execute('SELECT o.order_number, count(l.id) FROM orders o JOIN lines l ON l.order_id = o.id '
                              'GROUP BY o.id HAVING count(l.id) > 0 ORDER BY count(l.id), o.id').fetchall())
    short, long = next(iter(sizes)), list(sizes)[-1]
    assert sizes[long] > sizes[short]
    ex = InProcessExecutor()
    session = ex.session(shop)
    made = []
    for number in (short, long):
        counted.clear()
        result = session.call("get_order_details", {"order_number": number})
        assert result.ok and len(result.result["lines"]) == sizes[number]
        made.append(len(counted))
    ex.close()
    assert made[0] == made[1] == 3  # the order, then a page of its lines with their keys, and how many there are


def test_shown_keys_are_the_referenced_records_keys(shop: Any) -> None:
    conn = _seed(shop)
    skus = dict(conn.execute("SELECT id, sku FROM products"))
    numbers = dict(conn.execute("SELECT id, order_number FROM orders"))
    ex = InProcessExecutor()
    session = ex.session(shop)
    checked = 0
    for number, in conn.execute("SELECT order_number FROM orders ORDER BY id LIMIT 10"):
        for line in session.call("get_order_details", {"order_number": number}).result["lines"]:
            product_id, order_id = conn.execute("SELECT product_id, order_id FROM lines WHERE line_code = ?",
                                                [line["line_code"]]).fetchone()
            assert (line["product_sku"], line["order_number"]) == (skus[product_id], numbers[order_id])
            checked += 1
    ex.close()
    assert checked


def test_a_null_reference_shows_none_and_a_set_one_its_key(shop: Any) -> None:
    ex = InProcessExecutor()
    session = ex.session(shop)
    search = next(t.name for t in shop.tools if t.name.startswith("search_locker"))
    email = _seed(shop).execute("SELECT email FROM customers ORDER BY id LIMIT 1").fetchone()[0]
    lockers = session.call(search, {"limit": 50}).result["lockers"]
    free = next(lk for lk in lockers if lk["holder_email"] is None)
    taken = session.call("take_locker", {"locker_code": free["locker_code"], "holder_email": email})
    assert taken.ok and taken.result["holder_email"] == email
    again = {lk["locker_code"]: lk["holder_email"] for lk in session.call(search, {"limit": 50}).result["lockers"]}
    assert again[free["locker_code"]] == email
    freed = session.call("free_locker", {"locker_code": free["locker_code"]})
    assert freed.ok and freed.result["holder_email"] is None
    ex.close()


def test_a_shown_record_is_its_columns_with_keys_money_and_booleans(shop: Any) -> None:
    """``show``: every column but ``id`` in table order, a reference as the referenced record's key under the
    reference's parameter name, money in currency units, a boolean as a boolean."""
    conn = _seed(shop)
    conn.row_factory = sqlite3.Row
    ex = InProcessExecutor()
    session = ex.session(shop)
    search = next(t.name for t in shop.tools if t.name.startswith("search_locker"))
    emails = dict(conn.execute("SELECT id, email FROM customers").fetchall())
    shown = session.call(search, {"limit": 50}).result["lockers"]
    rows = conn.execute("SELECT * FROM lockers ORDER BY id").fetchall()
    assert len(shown) == len(rows)
    for got, row in zip(shown, rows, strict=True):
        want = {"holder_email": emails.get(row["holder_id"]), "locker_code": row["locker_code"],
                "size": row["size"], "heated": bool(row["heated"]), "fee": row["fee"] / 100}
        assert list(got) == list(want) and got == want
        assert type(got["heated"]) is bool
    ex.close()
