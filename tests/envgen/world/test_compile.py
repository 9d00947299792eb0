"""The world compiler end to end: a world blueprint in, a spec the gate accepts out, with realistic parts."""

from __future__ import annotations

import json
import re

import pytest

from envgen.errors import CompileError
from envgen.gate import validate_spec
from envgen.world.compile import compile_world
from envgen.world.sim import Simulator
from tests.envgen.world.store_world import store_world


@pytest.fixture(scope="module")
def shop():
    return compile_world(store_world(), env_id="test-shop", seed=3)


def test_the_compiled_world_is_a_v2_spec_with_its_policy_and_policy_tasks(shop):
    spec = shop.spec
    assert spec.spec_version == 2
    assert len(spec.policy) >= 5
    assert {r.enforced for r in spec.policy} == {"tool", "policy"} or all(r.enforced == "policy" for r in spec.policy)
    assert sum(1 for t in spec.tasks if t.policy) >= 2
    assert all(1 <= n <= len(spec.policy) for t in spec.tasks for n in t.policy)


def test_the_gate_accepts_the_compiled_world(shop):
    verdict = validate_spec(shop.spec, executor="inprocess")
    assert verdict.accepted, verdict.reasons


def test_the_compiler_is_deterministic_given_the_seed():
    a = compile_world(store_world(), env_id="test-shop", seed=5).spec.to_json()
    b = compile_world(store_world(), env_id="test-shop", seed=5).spec.to_json()
    c = compile_world(store_world(), env_id="test-shop", seed=6).spec.to_json()
    assert a == b and a != c


def test_tables_hold_the_requested_rows_with_valid_references(shop):
    sim = Simulator(shop.spec)
    run = sim.run()
    try:
        t = run.tables()
    finally:
        run.close()
        sim.close()
    assert [len(t[n]) for n in ("customers", "products", "orders", "lines")] == [40, 30, 90, 150]
    ids = {n: {r["id"] for r in rows} for n, rows in t.items()}
    assert all(r["customer_id"] in ids["customers"] for r in t["orders"])
    assert all(r["order_id"] in ids["orders"] and r["product_id"] in ids["products"] for r in t["lines"])
    price = {r["id"]: r["price"] for r in t["products"]}
    assert all(r["unit_price"] == price[r["product_id"]] for r in t["lines"])  # seed rows agree with the tools
    assert len({r["email"] for r in t["customers"]}) == 40  # keys are unique


def test_tools_speak_keys_never_row_ids(shop):
    for tool in shop.spec.tools:
        props = tool.parameters.get("properties", {})
        assert not any(p == "id" or p.endswith("_id") for p in props), tool.name
    sim = Simulator(shop.spec)
    run = sim.run()
    try:
        order = run.tables()["orders"][0]
        got = run.call("cancel_order", {"order_number": order["order_number"]})
    finally:
        run.close()
        sim.close()
    shown = got.result if got.ok else {}
    assert "id" not in shown and "customer_id" not in shown
    assert got.ok == (order["state"] == "pending")


def test_user_turns_never_name_a_row_id(shop):
    for task in shop.spec.tasks:
        for turn in task.turns:
            assert not re.search(r"#\d+\b|\bid \d+", turn.instruction), turn.instruction


def test_refusals_forbid_the_tool_only_the_policy_forbids(shop):
    """A policy refusal's turn (the first of its task; a session may go on after it) is judged by what changed."""
    refusals = [t for t, f in zip(shop.spec.tasks, shop.families, strict=True) if f == "policy_refusal"]
    assert refusals
    for task in refusals:
        first = task.turns[0]
        assert {c.kind for c in first.checks} & {"unchanged", "state", "calls", "sql"}
        assert not any(c.kind == "reply_contains" and any("sorry" in s for s in c.any_of)
                       for c in first.checks)  # a refusal is judged by what changed, not phrases


def test_a_world_whose_operations_write_nothing_is_refused_with_a_reason():
    bp = store_world()
    bp.operations = [o for o in bp.operations if o.kind in ("lookup", "search")]
    with pytest.raises(CompileError, match="write"):
        compile_world(bp, env_id="test-shop-ro", seed=0)


def test_write_checks_come_from_the_state_the_reference_reaches(shop):
    """Every write turn pins the whole state with a state check, and its reference reaches it."""
    writes = [u for t in shop.spec.tasks for u in t.turns if any(c.kind == "state" for c in u.checks)]
    assert writes
    for u in writes:
        state = next(c for c in u.checks if c.kind == "state")
        assert set(state.digests) >= {"orders", "customers"}
    assert json.loads(shop.spec.to_json())["spec_version"] == 2
