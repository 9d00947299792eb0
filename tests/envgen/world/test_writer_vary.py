"""The AST writer's variation of a catalog domain (``envgen.proposers.world.writer.vary``): reads and writes are
left out alike, never a read the compiler would add back, a grafted operation, or a write below four; the same
seed leaves out the same operations."""

from __future__ import annotations

import copy
import random
import statistics
from typing import Any

from envgen.proposers.world.writer import vary
from envgen.world.blueprint import WorldBlueprint

_READS = ("lookup", "search", "count", "total")


def _t(name: str, src: str, tgt: str) -> dict[str, Any]:
    return {"name": name, "kind": "transition", "entity": "order", "target": tgt, "sources": [src],
            "phrase": f"{name.replace('_', ' ')} {{record}}", "reasons": ["I need to"]}


_SHOP: dict[str, Any] = {
    "id": "test_shop", "title": "Corner shop", "domain": "a small online shop", "persona": "a customer",
    "entities": [
        {"name": "customer", "role": "person", "key": {"name": "email", "kind": "email"},
         "fields": [{"name": "full_name", "kind": "person_name"}, {"name": "credit", "kind": "money"}], "rows": 20},
        {"name": "product", "role": "catalog", "key": {"name": "sku", "kind": "code"},
         "fields": [{"name": "title", "kind": "title"}], "rows": 20},
        {"name": "courier", "role": "record", "key": {"name": "courier_code", "kind": "code"},
         "fields": [{"name": "company", "kind": "company"}], "rows": 10},
        {"name": "order", "role": "main", "key": {"name": "order_number", "kind": "code"},
         "refs": [{"name": "customer", "entity": "customer", "owner": True},
                  {"name": "courier", "entity": "courier"}],
         "fields": [{"name": "note", "kind": "description"}],
         "states": ["pending", "packed", "shipped", "delivered", "cancelled"], "final": ["delivered", "cancelled"],
         "rows": 60},
    ],
    "operations": [
        {"name": "find_customer", "kind": "lookup", "entity": "customer"},
        {"name": "get_order", "kind": "lookup", "entity": "order"},
        {"name": "list_customer_orders", "kind": "search", "entity": "order", "by": "customer"},
        {"name": "search_products", "kind": "search", "entity": "product"},
        {"name": "get_courier", "kind": "lookup", "entity": "courier"},
        {"name": "list_courier_orders", "kind": "search", "entity": "order", "by": "courier"},
        _t("pack_order", "pending", "packed"), _t("ship_order", "packed", "shipped"),
        _t("cancel_order", "pending", "cancelled"), _t("confirm_delivery", "shipped", "delivered"),
        _t("unpack_order", "packed", "pending"),
        {"name": "leave_note", "kind": "update", "entity": "order", "fields": ["note"],
         "phrase": "add the note {value} to {record}", "reasons": ["the bell is broken"]},
        {"name": "issue_credit", "kind": "adjust", "entity": "customer", "fields": ["credit"],
         "phrase": "add {value} of credit to {record}", "reasons": ["my order was late"]},
    ],
    "policy": [{"kind": "confirm", "op": "cancel_order", "text": "Confirm before cancelling an order."}],
    "vocabulary": {"titles": ["Mug", "Kettle"]},
}
_ESSENTIAL = {"find_customer", "get_order", "list_customer_orders", "search_products"}  # the compiler adds them


def _varied(seed: int, keep: list[str] | None = None) -> WorldBlueprint:
    bp = WorldBlueprint.model_validate(copy.deepcopy(_SHOP))
    vary(bp, keep or [], random.Random(seed))
    return bp


def _read_share(bp: WorldBlueprint) -> float:
    return sum(o.kind in _READS for o in bp.operations) / len(bp.operations)


def test_reads_and_writes_are_left_out_alike_keeping_the_domains_mix_on_average() -> None:
    whole = WorldBlueprint.model_validate(copy.deepcopy(_SHOP))
    varied = [_varied(seed) for seed in range(300)]
    gone = [{o.name for o in whole.operations} - {o.name for o in bp.operations} for bp in varied]
    kinds = {o.name: o.kind for o in whole.operations}
    assert all(1 <= len(g) <= 3 for g in gone if g)
    assert any(kinds[n] in _READS for g in gone for n in g)  # a read is left out too
    assert any(kinds[n] not in _READS for g in gone for n in g)
    mean = statistics.mean(_read_share(bp) for bp in varied)
    assert abs(mean - _read_share(whole)) < 0.04, (mean, _read_share(whole))


def test_never_a_read_the_compiler_adds_back_a_kept_operation_or_a_write_below_four() -> None:
    for seed in range(300):
        bp = _varied(seed, keep=["ship_order"])
        names = {o.name for o in bp.operations}
        assert _ESSENTIAL | {"ship_order"} <= names
        assert sum(o.kind not in _READS for o in bp.operations) >= 4
        if "cancel_order" not in names:  # a rule about a left-out tool goes with it
            assert not any(p.op == "cancel_order" for p in bp.policy)


def test_the_same_seed_leaves_out_the_same_operations() -> None:
    for seed in range(20):
        assert _varied(seed).model_dump() == _varied(seed).model_dump()


def test_a_domain_whose_reads_are_all_essential_still_leaves_out_one_to_three_writes() -> None:
    essential_only = copy.deepcopy(_SHOP)
    essential_only["operations"] = [o for o in essential_only["operations"]
                                    if o["name"] not in ("get_courier", "list_courier_orders")]
    whole = {o["name"] for o in essential_only["operations"]}
    for seed in range(100):
        bp = WorldBlueprint.model_validate(copy.deepcopy(essential_only))
        vary(bp, [], random.Random(seed))
        gone = whole - {o.name for o in bp.operations}
        assert 1 <= len(gone) <= 3 and not gone & _ESSENTIAL, (seed, gone)
