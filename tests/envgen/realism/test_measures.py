"""``envgen.realism``: the measures of a spec built here (tables read from its state, references run for their
results, hops traced through them), pooled over a set, and the defensive policy read."""

from __future__ import annotations

import math
from typing import Any

import pytest

from envgen.realism import (
    Call,
    Table,
    TaskRecord,
    Turn,
    World,
    env_realism,
    hop_depth,
    is_filter_and_choose,
    is_generic_parent,
    measure_specs,
    realism,
    repeated_reads,
    slug_counts,
    world_of_spec,
)
from gym_envs.spec import EnvSpec, parse_spec

SCHEMA = """
CREATE TABLE customers (id INTEGER PRIMARY KEY, email TEXT NOT NULL UNIQUE, name TEXT NOT NULL);
CREATE TABLE shelf_groups (id INTEGER PRIMARY KEY, label TEXT NOT NULL UNIQUE, max_shelves INTEGER NOT NULL);
CREATE TABLE orders (
  id INTEGER PRIMARY KEY,
  customer_id INTEGER NOT NULL REFERENCES customers(id),
  shelf_group_id INTEGER NOT NULL REFERENCES shelf_groups(id),
  status TEXT NOT NULL CHECK (status IN ('pending', 'shipped', 'cancelled')),
  note TEXT NOT NULL DEFAULT ''
);
"""
SEED = """
INSERT INTO customers VALUES (1, 'ana@example.com', 'Ana Souza'), (2, 'bo@example.com', 'Bo Lind');
INSERT INTO shelf_groups VALUES (1, 'number meadow', 5), (2, 'readfunc raven', 3);
INSERT INTO orders VALUES (11, 1, 1, 'pending', 'Leave at the door'), (12, 1, 2, 'shipped', 'gift wrap'),
  (13, 2, 1, 'shipped', '');
"""
CODE = '''
def find_customer(db, email):
    rows = db.query("SELECT id, email, name FROM customers WHERE email = ?", [email])
    if not rows:
        raise ToolError("no customer " + email)
    return rows[0]


def list_orders(db, customer_id):
    return db.query("SELECT id, status, note FROM orders WHERE customer_id = ? ORDER BY id", [customer_id])


def get_order(db, order_id):
    return db.query("SELECT id, customer_id, status FROM orders WHERE id = ?", [order_id])[0]


def cancel_order(db, order_id):
    db.execute("UPDATE orders SET status = 'cancelled' WHERE id = ?", [order_id])
    return {"id": order_id, "status": "cancelled"}
'''


def _tool(name: str, **params: str) -> dict[str, Any]:
    properties = {k: {"type": v} for k, v in params.items()}
    return {"name": name, "description": name,
            "parameters": {"type": "object", "required": list(params), "properties": properties}}


def _spec(**changes: Any) -> dict[str, Any]:
    unchanged = {"kind": "unchanged", "tables": []}
    cancelled = {"kind": "sql", "query": "SELECT status FROM orders WHERE id = 11", "expect": [["cancelled"]]}
    spec = {
        "id": "shop-demo", "title": "Shop", "state": {"schema_sql": SCHEMA, "seed_sql": SEED}, "code": CODE,
        "tools": [_tool("find_customer", email="string"), _tool("list_orders", customer_id="integer"),
                  _tool("get_order", order_id="integer"), _tool("cancel_order", order_id="integer")],
        "tasks": [
            {"id": "cancel-pending", "kind": "read_then_write", "turns": [
                {"instruction": "Cancel the pending order of ana@example.com, please.", "checks": [cancelled],
                 "reference": [{"name": "find_customer", "arguments": {"email": "ana@example.com"}},
                               {"name": "list_orders", "arguments": {"customer_id": 1}},
                               {"name": "cancel_order", "arguments": {"order_id": 11}}]}]},
            {"id": "order-by-id", "kind": "read", "turns": [
                {"instruction": "What is the status of the order with id 12?", "checks": [unchanged],
                 "reference": [{"name": "get_order", "arguments": {"order_id": 12}}]},
                {"instruction": "And is it 'readfunc raven' that holds it? Check again.", "checks": [unchanged],
                 "reference": [{"name": "get_order", "arguments": {"order_id": 12}}]}]},
        ],
    }
    spec.update(changes)
    return spec


@pytest.fixture(scope="module")
def world() -> World:
    return world_of_spec(parse_spec(_spec()), "inprocess")


def test_the_state_is_read_by_introspection(world: World) -> None:
    tables = {t.name: t for t in world.tables}
    assert {n: t.rows for n, t in tables.items()} == {"customers": 2, "shelf_groups": 2, "orders": 3}
    orders, customers = tables["orders"], tables["customers"]
    assert orders.references == {"customers", "shelf_groups"} and orders.enums["status"] == {
        "pending", "shipped", "cancelled"}
    assert orders.int_key_values == {11, 12, 13} and not orders.surrogate_key  # its number is its only key
    assert customers.key_columns == {"id", "email"} and customers.surrogate_key
    assert world.problem is None


def test_the_reference_runs_for_its_results(world: World) -> None:
    calls = world.tasks[0].turns[0].calls
    assert calls[0].result == {"id": 1, "email": "ana@example.com", "name": "Ana Souza"} and not calls[0].writes
    assert [r["id"] for r in calls[1].result] == [11, 12] and calls[2].writes


def test_the_measures_of_one_environment(world: World) -> None:
    e = env_realism(world)
    assert (e.tools, e.crud_tools) == (4, 3)  # cancel_order is the domain's own verb
    # strings: customers.name (2, capitalised), shelf_groups.label (2 slugs), orders.note (2 filled: a sentence
    # and 'gift wrap'), the quoted 'readfunc raven'; emails are key-like, statuses an enum
    assert (e.slugs, e.strings) == (4, 7) == slug_counts(world)
    assert e.generic_parents == 1  # shelf_groups(label, max_shelves), pointed to by orders
    assert e.hops == [2, 0] and e.filter_choose == 1
    assert (e.repeated_reads, e.reads) == (1, 4)  # the second get_order(12)
    assert (e.turns_naming_ids, e.tasks_naming_ids) == (1, 1)  # 'with id 12'
    assert e.first_turn_words == [7, 10] and e.policy_rules == 0 and e.policy_tasks == 0


def test_hops_and_filter_and_choose_read_results_not_coincidences() -> None:
    find = Call("find_group", {"label": "blue"}, {"id": 9, "label": "blue"})
    listing = Call("list_items", {"group_id": 5}, [{"id": 9, "group_id": 5}, {"id": 4, "group_id": 5}])
    move = Call("move_item", {"item_id": 3, "group_id": 9}, {"ok": True}, writes=True)
    # 9 is in the listing too (a record's id), but the shallowest source holding it is find_group: 1 hop, no choice
    task = TaskRecord("t", (Turn("Put item 3 in the group 'blue'; first list group 5.", (find, listing, move)),), 3)
    assert hop_depth(task) == 1 and not is_filter_and_choose(task)
    said = TaskRecord("t", (Turn("Move item 3 to group 9.", (listing, move)),), 3)
    assert hop_depth(said) == 0  # the user said 9
    pick = Call("archive_item", {"item_id": 4}, None, writes=True)
    chose = TaskRecord("t", (Turn("Archive the other item of group 5.", (listing, pick)),), 3)
    assert hop_depth(chose) == 1 and is_filter_and_choose(chose)
    every = Call("touch_group", {"group_id": 7}, None)
    same = TaskRecord("t", (Turn("x", (Call("list", {}, [{"g": 7}, {"g": 7}]), every)),), 2)
    assert not is_filter_and_choose(same)  # a value every listed record holds picks none of them
    two = TaskRecord("t", (Turn("Find 'blue'.", (find,)), Turn("List it.", (Call("list_items", {"group_id": 9},
                      [{"item_id": 31}, {"item_id": 32}]),)), Turn("Drop one.", (Call("drop", {"item_id": 32}),))), 3)
    assert hop_depth(two) == 2 and is_filter_and_choose(two)  # across turns
    ids = Call("user_orders", {"user": "ana"}, {"orders": ["#W1", "#W2"], "email": "ana@example.com"})
    one_of_ids = TaskRecord("t", (Turn("Cancel Ana's pending order.", (ids, Call("cancel", {"order_id": "#W2"}))),), 2)
    assert is_filter_and_choose(one_of_ids)  # a list of ids offers a choice as a list of records does


def test_repeated_reads_use_the_known_read_tools_when_given() -> None:
    a = Call("get", {"x": 1}, writes=False)
    task = TaskRecord("t", (Turn("x", (a, a, Call("put", {"x": 1}, writes=True), a)),), 2)
    assert repeated_reads(task) == (2, 3) and repeated_reads(task, frozenset()) == (0, 0)
    assert repeated_reads(task, frozenset({"get", "put"})) == (2, 4)


def test_a_generic_parent_needs_a_child_and_nothing_but_a_label_and_capacities() -> None:
    parent = Table("bins", 3, ("id", "label", "max_items"), primary_key="id", key_columns=frozenset({"id"}))
    child = Table("items", 3, ("id", "bin_id"), primary_key="id", references=frozenset({"bins"}))
    assert is_generic_parent(parent, [parent, child]) and not is_generic_parent(parent, [parent])
    real = Table("warehouses", 3, ("id", "label", "max_items", "city"), primary_key="id")
    assert not is_generic_parent(real, [real, Table("items", 1, references=frozenset({"warehouses"}))])


def test_a_set_is_pooled_and_empty_figures_are_none(world: World) -> None:
    other = World("tiny", ("get_thing",), (), (TaskRecord("t", (Turn("Hello there friend"),), 1),), has_results=False)
    r = realism([world, other])
    assert (r.envs, r.tasks, r.turns) == (2, 3, 4)
    assert math.isclose(r.crud_share, 3 / 5)  # get_thing: a "thing" is not the tiny world's data
    assert r.tables_per_env == 3.0  # over the environments that have tables
    assert math.isclose(r.rows_per_table, 7 / 3) and r.main_table_rows == 3 and r.generic_parent_share == 1.0
    assert math.isclose(r.row_id_turn_share, 1 / 4) and math.isclose(r.row_id_task_share, 1 / 3)
    assert r.first_turn_words == 7.0 and r.skeletons == 4 and r.top20_coverage == 1.0
    assert r.hop_depth == 1.0 and r.hop2_share == 0.5 and r.filter_choose_share == 0.5  # over traced tasks only
    assert r.policy_rules_per_env == 0 and r.problems == []
    empty = realism([])
    assert empty.envs == 0 and empty.crud_share is None and empty.hop_depth is None and empty.tables_per_env is None


def test_a_spec_that_does_not_build_or_parse_is_named_not_raised() -> None:
    broken = _spec(id="broken-shop", state={"schema_sql": SCHEMA, "seed_sql": "INSERT INTO nowhere VALUES (1);"})
    r = measure_specs([_spec(), broken, {"id": "junk"}], "inprocess")
    assert r.envs == 2 and len(r.problems) == 2
    assert any(p.startswith("broken-shop: the state does not build") for p in r.problems)
    assert any(p.startswith("junk: not measured") for p in r.problems)


def test_code_that_does_not_load_leaves_the_hops_untraced() -> None:
    w = world_of_spec(parse_spec(_spec(id="no-code", code="def find_customer(db, email):\n    return (\n")),
                      "inprocess")
    assert w.problem is not None and w.problem.startswith("the code does not load")
    assert not w.has_results and all(not c.ok for c in w.tasks[0].turns[0].calls)
    e = env_realism(w)
    assert e.hops is None and e.tools == 4 and e.tables == 3  # the rest is still measured


def test_the_policy_and_policy_tasks_are_read_from_a_v2_spec() -> None:
    data = _spec()
    data["spec_version"] = 2
    data["policy"] = [{"text": "Never cancel a shipped order."}, {"text": "Confirm first.", "enforced": "policy"}]
    data["tasks"][1]["policy"] = [2]
    w = world_of_spec(EnvSpec.model_validate(data), "inprocess")
    assert (w.policy_rules, w.policy_tasks) == (2, 1)
    assert [t.policy for t in w.tasks] == [False, True]


def test_a_tasks_references_run_from_its_own_starting_state() -> None:
    d = _spec(spec_version=2)
    d["tasks"][1]["setup_sql"] = ["INSERT INTO orders VALUES (14, 2, 2, 'pending', 'setup')"]
    d["tasks"][1]["turns"][0]["reference"] = [{"name": "get_order", "arguments": {"order_id": 14}}]
    w = world_of_spec(parse_spec(d), "inprocess")
    call = w.tasks[1].turns[0].calls[0]
    assert call.ok and call.result == {"id": 14, "customer_id": 2, "status": "pending"}
