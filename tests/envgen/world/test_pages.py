"""A world's searches return pages (envgen.world.render's contract), and the task writer's references read on to
the page that holds what the task needs, so a request about a record past the first page is solvable and the gate
accepts it."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest

from envgen.gate import validate_spec
from envgen.world.compile import CompiledWorld
from envgen.world.render import MAX_PAGE_SIZE, PAGE_SIZE
from envgen.world.sim import Simulator
from envgen.world.tasks.base import Draft, DraftTurn, Writer
from gym_envs.spec import parse_spec
from tests.envgen.world.store_world import simulated, store_world


@pytest.fixture(scope="module")
def shop() -> Iterator[tuple[CompiledWorld, Simulator]]:
    yield from simulated(store_world(), "test-shop-pages", 3)


def _busiest(w: Writer) -> tuple[Any, Any, list[dict[str, Any]]]:
    """The main entity, the customer with the most orders, and those orders (in the listing's order)."""
    main = next(e for e in w.world.entities if e.role == "main")
    person = next(e for e in w.world.entities if e.role == "person")
    scope = max(w.rows(person), key=lambda c: (len(w.owned(main, c)), -c["id"]))
    return main, scope, sorted(w.owned(main, scope), key=lambda r: r["id"])


def test_a_search_returns_pages_that_cover_the_listing_once(shop: Any) -> None:
    cw, sim = shop
    w = Writer(cw.world, sim, random.Random(0))
    _, scope, orders = _busiest(w)
    assert len(orders) > PAGE_SIZE  # the fixture's busiest customer has more than one page
    run = sim.run()
    first = run.call("list_customer_orders", {"customer_email": scope["email"]})
    assert first.ok and len(first.result["orders"]) == PAGE_SIZE
    assert first.result["total"] == len(orders) and first.result["next_offset"] == PAGE_SIZE
    seen, offset = [r["order_number"] for r in first.result["orders"]], first.result["next_offset"]
    while offset is not None:
        page = run.call("list_customer_orders", {"customer_email": scope["email"], "offset": offset, "limit": 3})
        assert page.ok and len(page.result["orders"]) <= 3
        seen += [r["order_number"] for r in page.result["orders"]]
        offset = page.result["next_offset"]
    assert seen == [r["order_number"] for r in orders]
    whole = run.call("list_customer_orders", {"customer_email": scope["email"], "limit": MAX_PAGE_SIZE})
    assert whole.result["next_offset"] is None or len(orders) > MAX_PAGE_SIZE
    too_many = run.call("list_customer_orders", {"customer_email": scope["email"], "limit": MAX_PAGE_SIZE + 1})
    assert not too_many.ok and "limit" in str(too_many.error)
    run.close()


def test_an_answer_on_the_second_page_is_read_there_by_the_reference_and_the_gate_accepts_it(shop: Any) -> None:
    cw, sim = shop
    w = Writer(cw.world, sim, random.Random(0))
    _, scope, orders = _busiest(w)
    target = orders[PAGE_SIZE]  # the first record of the second page
    assert target["address"] not in {r["address"] for r in orders[:PAGE_SIZE]}
    listing = {"name": "list_customer_orders", "arguments": {"customer_email": scope["email"]}}
    say = (f"Hi, this is {scope['full_name']} ({scope['email']}). Which delivery address is on my order "
           f"{target['order_number']}? I can't remember which one I gave.")
    task = w.finish(Draft("read", "page_two", [DraftTurn(say, [listing], kind="read",
                                                         answers=[[target["address"]]])]), 0)
    assert task is not None
    reference = task["turns"][0]["reference"]
    assert reference == [listing, {"name": "list_customer_orders",
                                   "arguments": {"customer_email": scope["email"], "offset": PAGE_SIZE}}]
    spec = parse_spec({**cw.spec.model_dump(mode="json", exclude_none=True), "tasks": [task]})
    verdict = validate_spec(spec, executor="inprocess")
    assert verdict.accepted, verdict.reasons


def test_a_write_on_a_record_of_a_later_page_reads_up_to_that_page_only(shop: Any) -> None:
    cw, sim = shop
    w = Writer(cw.world, sim, random.Random(0))
    _, scope, orders = _busiest(w)
    target = orders[-1]
    product = next(p for p in w.rows(next(e for e in w.world.entities if e.role == "catalog"))
                   if p["state"] == "active")
    listing = {"name": "list_customer_orders", "arguments": {"customer_email": scope["email"]}}
    add = {"name": "add_line", "arguments": {"order_number": target["order_number"], "product_sku": product["sku"],
                                             "quantity": 1}}
    task = w.finish(Draft("read_then_write", "page_write", [DraftTurn("-", [listing, add])]), 0)
    assert task is not None
    pages = [c["arguments"].get("offset", 0) for c in task["turns"][0]["reference"][:-1]]
    assert pages == list(range(0, (len(orders) - 1) // PAGE_SIZE * PAGE_SIZE + 1, PAGE_SIZE)) and len(pages) > 1
    assert task["turns"][0]["reference"][-1] == add
    first = w.finish(Draft("read_then_write", "page_write", [DraftTurn("-", [listing, {
        **add, "arguments": {**add["arguments"], "order_number": orders[0]["order_number"]}}])]), 0)
    assert first is not None and len(first["turns"][0]["reference"]) == 2  # on the first page: no more read
