"""A small self-service world built for the tests: a shop's customers, products, orders and order lines."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from envgen.world.blueprint import WorldBlueprint
from envgen.world.compile import CompiledWorld, compile_world
from envgen.world.sim import Simulator

_WORLD: dict[str, Any] = {
    "id": "test_shop", "title": "Corner shop", "domain": "an online corner shop", "persona": "a customer",
    "entities": [
        {"name": "customer", "role": "person", "key": {"name": "email", "kind": "email"},
         "fields": [{"name": "full_name", "kind": "person_name"}, {"name": "postcode", "kind": "postcode"},
                    {"name": "credit", "kind": "money"}], "rows": 40},
        {"name": "product", "role": "catalog", "key": {"name": "sku", "kind": "code"}, "prefix": "SKU",
         "fields": [{"name": "title", "kind": "title"}, {"name": "price", "kind": "money"},
                    {"name": "stock", "kind": "count"},
                    {"name": "category", "kind": "category", "values": ["tea", "coffee", "snacks"]}],
         "states": ["active", "retired"], "rows": 30},
        {"name": "order", "role": "main", "key": {"name": "order_number", "kind": "code"}, "prefix": "ORD",
         "refs": [{"name": "customer", "entity": "customer", "owner": True}],
         "fields": [{"name": "placed_on", "kind": "date"}, {"name": "address", "kind": "street_address"}],
         "states": ["pending", "shipped", "cancelled"], "final": ["cancelled"], "rows": 90},
        {"name": "line", "role": "child", "key": {"name": "line_code", "kind": "code"}, "prefix": "LN",
         "refs": [{"name": "order", "entity": "order", "owner": True}, {"name": "product", "entity": "product"}],
         "fields": [{"name": "quantity", "kind": "quantity", "min": 1, "max": 9},
                    {"name": "unit_price", "kind": "money"}], "rows": 150},
    ],
    "operations": [
        {"name": "cancel_order", "kind": "transition", "entity": "order", "target": "cancelled",
         "sources": ["pending"], "phrase": "cancel {record}"},
        {"name": "change_address", "kind": "update", "entity": "order", "fields": ["address"],
         "conditions": [{"kind": "state_in", "values": ["pending"], "message": "The order is {state}."}]},
        {"name": "add_line", "kind": "create", "entity": "line", "fields": ["quantity"],
         "conditions": [{"kind": "ref_state", "ref": "product", "values": ["active"], "message": "Retired."}],
         "effects": [{"kind": "copy", "field": "unit_price", "source": "product.price"},
                     {"kind": "add", "field": "stock", "ref": "product", "arg": "quantity", "sign": -1}]},
        {"name": "grant_credit", "kind": "adjust", "entity": "customer", "fields": ["credit"]},
    ],
    "policy": [
        {"kind": "confirm", "op": "cancel_order", "text": "Confirm before cancelling."},
        {"kind": "limit", "op": "grant_credit", "field": "credit_over_limit", "value": 20,
         "text": "At most $20 of credit a request; more goes to a person."},
    ],
    "vocabulary": {"titles": ["Green Tea", "Espresso Beans", "Oat Biscuits", "Rooibos", "Dark Chocolate"],
                   "adjectives": ["Organic", "Smoked", "Mild"]},
}


def store_world(**changes: Any) -> WorldBlueprint:
    """The corner shop world, with top-level keys replaced by ``changes``."""
    return WorldBlueprint.model_validate({**copy.deepcopy(_WORLD), **changes})


def simulated(bp: WorldBlueprint, env_id: str, seed: int) -> Iterator[tuple[CompiledWorld, Simulator]]:
    """A module fixture's world: ``bp`` compiled and its simulator, closed when the fixture ends
    (``yield from simulated(...)``)."""
    cw = compile_world(bp, env_id=env_id, seed=seed)
    sim = Simulator(cw.spec)
    yield cw, sim
    sim.close()
