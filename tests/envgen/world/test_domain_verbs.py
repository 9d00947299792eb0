"""A service's own operations beyond get/list/update: gift-wrapping or upgrading an order in any of the states that
allow it (a transition without a target keeps the state), a fee charged to the owner's credit, a replacement
allowed once, a refund of what the record holds, a locker taken from a referenced store (see
``envgen/world/WORLDS.md``, Operations). Each refuses with its message and writes nothing when its guard fails."""

from __future__ import annotations

import copy
import datetime
import random
from collections.abc import Iterator
from typing import Any

import pytest

from envgen.world.blueprint import WorldBlueprint
from envgen.world.compile import compile_world
from envgen.world.data import Pools
from envgen.world.normalize import to_world
from envgen.world.render import describe
from envgen.world.sim import Run, Simulator
from envgen.world.tasks.base import Writer
from envgen.world.tasks.families import Families
from envgen.world.tasks.withheld import _writes
from gym_envs.spec import EnvSpec

_STORE: dict[str, Any] = {
    "id": "test_store", "title": "Corner store", "domain": "an online shop for household goods",
    "persona": "a customer",
    "entities": [
        {"name": "customer", "role": "person", "key": {"name": "email", "kind": "email"},
         "fields": [{"name": "full_name", "kind": "person_name"},
                    {"name": "store_credit", "kind": "money", "max": 3000}],
         "rows": 40},
        {"name": "pickup_store", "role": "record", "key": {"name": "store_code", "kind": "code"}, "prefix": "ST",
         "fields": [{"name": "lockers_free", "kind": "count", "min": 0, "max": 3}],
         "states": ["open", "closed"], "rows": 12},
        {"name": "order", "role": "main", "key": {"name": "order_number", "kind": "code"}, "prefix": "ORD",
         "refs": [{"name": "customer", "entity": "customer", "owner": True},
                  {"name": "pickup_store", "entity": "pickup_store"}],
         "fields": [{"name": "delivery_due", "kind": "date"}, {"name": "gift_wrap", "kind": "boolean"},
                    {"name": "express_delivery", "kind": "boolean"},
                    {"name": "replacements_sent", "kind": "count", "min": 0, "max": 1},
                    {"name": "refund_due", "kind": "money"}, {"name": "locker", "kind": "boolean"}],
         "states": ["pending", "processing", "shipped", "delivered", "returned"], "final": ["returned"],
         "rows": 200},
    ],
    "operations": [
        {"name": "gift_wrap_order", "kind": "transition", "entity": "order", "sources": ["pending", "processing"],
         "conditions": [{"kind": "compare", "field": "gift_wrap", "op": "==", "value": 0,
                         "message": "The order is already gift-wrapped."}],
         "effects": [{"kind": "set", "field": "gift_wrap", "value": 1}],
         "phrase": "have {record} gift-wrapped", "reasons": ["it is a present"]},
        {"name": "upgrade_to_express", "kind": "transition", "entity": "order", "sources": ["pending", "processing"],
         "conditions": [{"kind": "compare", "field": "express_delivery", "op": "==", "value": 0,
                         "message": "The order already goes by express courier."}],
         "effects": [{"kind": "set", "field": "express_delivery", "value": 1},
                     {"kind": "shift", "field": "delivery_due", "value": -2},
                     {"kind": "add", "field": "store_credit", "ref": "customer", "value": 1500, "sign": -1}],
         "phrase": "upgrade {record} to express delivery", "reasons": ["I need it before the weekend"]},
        {"name": "request_replacement", "kind": "transition", "entity": "order", "target": "shipped",
         "sources": ["delivered"],
         "conditions": [{"kind": "compare", "field": "replacements_sent", "op": "<", "value": 1,
                         "message": "A replacement was already sent for this order."}],
         "effects": [{"kind": "add", "field": "replacements_sent", "value": 1}],
         "phrase": "send a replacement for {record}", "reasons": ["it arrived damaged"]},
        {"name": "confirm_delivery", "kind": "transition", "entity": "order", "target": "delivered",
         "sources": ["shipped"], "phrase": "confirm that {record} has arrived", "reasons": ["it is here"]},
        {"name": "refund_order", "kind": "transition", "entity": "order", "sources": ["returned"],
         "conditions": [{"kind": "compare", "field": "refund_due", "op": ">", "value": 0,
                         "message": "There is nothing left to refund on this order."}],
         "effects": [{"kind": "add", "field": "store_credit", "ref": "customer", "value": 1, "scale": "refund_due"},
                     {"kind": "set", "field": "refund_due", "value": 0}],
         "phrase": "refund {record} to my store credit", "reasons": ["I sent it back"]},
        {"name": "send_to_locker", "kind": "transition", "entity": "order", "sources": ["pending"],
         "conditions": [{"kind": "ref_state", "ref": "pickup_store", "values": ["open"],
                         "message": "That store is {state}."},
                        {"kind": "compare", "field": "locker", "op": "==", "value": 0,
                         "message": "The order already goes to a locker."}],
         "effects": [{"kind": "set", "field": "locker", "value": 1},
                     {"kind": "add", "field": "lockers_free", "ref": "pickup_store", "value": 1, "sign": -1}],
         "phrase": "send {record} to a pickup locker", "reasons": ["I am out all day"]},
        {"name": "cancel_order", "kind": "transition", "entity": "order", "target": "returned",
         "sources": ["pending"], "phrase": "cancel {record}", "reasons": ["I changed my mind"]},
    ],
    "vocabulary": {"titles": ["Kettle", "Lamp"]},
}


def _world(**changes: Any) -> WorldBlueprint:
    return WorldBlueprint.model_validate({**copy.deepcopy(_STORE), **changes})


@pytest.fixture(scope="module")
def run() -> Iterator[Run]:
    sim = Simulator(compile_world(_world(), env_id="test-store", seed=0).spec)
    episode = sim.run()
    yield episode
    episode.close()
    sim.close()


def _rows(run: Run, table: str) -> list[dict[str, Any]]:
    return run.tables()[table]


def _row(run: Run, table: str, key: str, value: Any) -> dict[str, Any]:
    return next(r for r in _rows(run, table) if r[key] == value)


def _order(run: Run, **want: Any) -> dict[str, Any]:
    return next(r for r in _rows(run, "orders") if all(r[k] == v for k, v in want.items()))


def test_a_transition_without_a_target_keeps_each_source_state_then_its_guard_refuses(run: Run) -> None:
    for state in ("pending", "processing"):
        order = _order(run, state=state, gift_wrap=0)
        done = run.call("gift_wrap_order", {"order_number": order["order_number"]})
        assert done.ok, done.error
        assert done.result["state"] == state and done.result["gift_wrap"] is True
        again = run.call("gift_wrap_order", {"order_number": order["order_number"]})
        assert not again.ok and again.error == "The order is already gift-wrapped."
    shipped = _order(run, state="shipped", gift_wrap=0)
    refused = run.call("gift_wrap_order", {"order_number": shipped["order_number"]})
    assert not refused.ok
    assert refused.error == (f"The order {shipped['order_number']} is shipped; gift wrap order applies only to "
                             "pending or processing orders.")
    assert _row(run, "orders", "order_number", shipped["order_number"]) == shipped


def test_a_fee_comes_off_the_owners_credit_and_the_due_date_moves_sooner(run: Run) -> None:
    customers = {c["id"]: c for c in _rows(run, "customers")}
    order = next(o for o in _rows(run, "orders") if o["state"] == "processing" and o["express_delivery"] == 0
                 and customers[o["customer_id"]]["store_credit"] >= 1500)
    credit = customers[order["customer_id"]]["store_credit"]
    done = run.call("upgrade_to_express", {"order_number": order["order_number"]})
    assert done.ok, done.error
    assert done.result["state"] == "processing" and done.result["express_delivery"] is True
    due = datetime.date.fromisoformat(order["delivery_due"])
    assert done.result["delivery_due"] == (due - datetime.timedelta(days=2)).isoformat()
    assert _row(run, "customers", "id", order["customer_id"])["store_credit"] == credit - 1500


def test_a_fee_the_owner_cannot_pay_is_refused_and_nothing_is_written(run: Run) -> None:
    customers = {c["id"]: c for c in _rows(run, "customers")}
    order = next(o for o in _rows(run, "orders") if o["state"] == "pending" and o["express_delivery"] == 0
                 and customers[o["customer_id"]]["store_credit"] < 1500)
    customer = customers[order["customer_id"]]
    refused = run.call("upgrade_to_express", {"order_number": order["order_number"]})
    assert not refused.ok and refused.error.startswith("Not enough store credit")
    assert _row(run, "orders", "order_number", order["order_number"]) == order
    assert _row(run, "customers", "id", customer["id"]) == customer


def test_a_replacement_is_sent_once_per_order(run: Run) -> None:
    order = _order(run, state="delivered", replacements_sent=0)
    key = {"order_number": order["order_number"]}
    done = run.call("request_replacement", key)
    assert done.ok and done.result["state"] == "shipped" and done.result["replacements_sent"] == 1
    assert run.call("confirm_delivery", key).ok
    refused = run.call("request_replacement", key)
    assert not refused.ok and refused.error == "A replacement was already sent for this order."
    assert _row(run, "orders", "order_number", order["order_number"])["state"] == "delivered"


def test_a_refund_credits_what_the_record_holds_then_nothing_is_left_to_refund(run: Run) -> None:
    order = next(o for o in _rows(run, "orders") if o["state"] == "returned" and o["refund_due"] > 0)
    credit = _row(run, "customers", "id", order["customer_id"])["store_credit"]
    done = run.call("refund_order", {"order_number": order["order_number"]})
    assert done.ok and done.result["refund_due"] == 0 and done.result["state"] == "returned"
    assert _row(run, "customers", "id", order["customer_id"])["store_credit"] == credit + order["refund_due"]
    again = run.call("refund_order", {"order_number": order["order_number"]})
    assert not again.ok and again.error == "There is nothing left to refund on this order."
    assert _row(run, "customers", "id", order["customer_id"])["store_credit"] == credit + order["refund_due"]


def test_a_referenced_record_refuses_by_its_state_or_its_count_and_a_free_one_is_taken(run: Run) -> None:
    stores = {s["id"]: s for s in _rows(run, "pickup_stores")}
    pending = [o for o in _rows(run, "orders") if o["state"] == "pending" and o["locker"] == 0]
    closed = next(o for o in pending if stores[o["pickup_store_id"]]["state"] == "closed")
    refused = run.call("send_to_locker", {"order_number": closed["order_number"]})
    assert not refused.ok and refused.error == "That store is closed."
    full = next(o for o in pending if stores[o["pickup_store_id"]]["state"] == "open"
                and stores[o["pickup_store_id"]]["lockers_free"] == 0)
    refused = run.call("send_to_locker", {"order_number": full["order_number"]})
    assert not refused.ok and refused.error.startswith("Not enough lockers free")
    assert _row(run, "orders", "order_number", full["order_number"]) == full
    free = next(o for o in pending if stores[o["pickup_store_id"]]["state"] == "open"
                and stores[o["pickup_store_id"]]["lockers_free"] > 0)
    lockers = stores[free["pickup_store_id"]]["lockers_free"]
    done = run.call("send_to_locker", {"order_number": free["order_number"]})
    assert done.ok and done.result["locker"] is True and done.result["state"] == "pending"
    assert _row(run, "pickup_stores", "id", free["pickup_store_id"])["lockers_free"] == lockers - 1


def test_a_state_keeping_operation_says_which_states_it_accepts_and_writes_no_state() -> None:
    world = to_world(_world())
    wrap, replace = world.op("gift_wrap_order"), world.op("request_replacement")
    assert wrap.keeps_state and not replace.keeps_state
    assert "Refused when: the order is not pending or processing; The order is already gift-wrapped" in describe(wrap)
    assert _writes(wrap) == {"gift_wrap"} and _writes(replace) == {"state", "replacements_sent"}


def test_a_transition_without_a_target_or_sources_is_dropped_with_the_reason() -> None:
    bad = {"name": "wrap_anything", "kind": "transition", "entity": "order", "phrase": "wrap {record}",
           "effects": [{"kind": "set", "field": "gift_wrap", "value": 1}], "reasons": ["why not"]}
    repairs: list[str] = []
    world = to_world(_world(operations=[*_STORE["operations"], bad]), repairs)
    assert "wrap_anything" not in {o.name for o in world.ops}
    assert any("wrap_anything" in r and "needs the source states it accepts" in r for r in repairs), repairs


def test_tasks_ask_for_the_new_operations_and_refuse_them_in_states_they_do_not_accept() -> None:
    new = {"gift_wrap_order", "upgrade_to_express", "request_replacement", "refund_order", "send_to_locker"}
    called: set[str] = set()
    refused: set[str] = set()
    for seed in range(6):
        spec = EnvSpec.model_validate(compile_world(_world(), env_id="test-store", seed=seed).spec.model_dump())
        for task in spec.tasks:
            called |= {c.name for turn in task.turns for c in turn.calls()}
            refused |= {op for op in new if task.id.endswith(f"refuse_{op}")}
    assert new <= called, new - called
    assert refused, "no task asks for a state-keeping operation on a record in a state it refuses"


def test_a_change_that_fits_none_of_the_records_does_not_stop_the_request_for_another() -> None:
    """The change a request asks for is drawn among the main record's operations; one that no record allows (a
    guard no order meets) is passed over for the next, so the draw never ends the request."""
    never = {"name": "engrave_order", "kind": "transition", "entity": "order", "sources": ["pending", "processing"],
             "conditions": [{"kind": "compare", "field": "replacements_sent", "op": ">", "value": 5,
                             "message": "Only orders with more than five replacements can be engraved."}],
             "phrase": "engrave {record}", "reasons": ["it is a keepsake"]}
    wrap = next(o for o in _STORE["operations"] if o["name"] == "gift_wrap_order")
    cw = compile_world(_world(operations=[never, wrap]), env_id="test-store-goal", seed=0)
    sim = Simulator(cw.spec)
    try:
        for seed in range(8):
            rng = random.Random(seed)
            fam = Families(Writer(cw.world, sim, rng), Pools(rng, currency=cw.world.currency))
            draft = fam.write_goal()
            assert draft is not None, seed
            assert [c["name"] for t in draft.turns for c in t.calls][-1] == "gift_wrap_order"
    finally:
        sim.close()
