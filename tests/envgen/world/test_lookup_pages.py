"""A lookup's lists of a record's child records are paged as a search is (envgen.world.render's contract): a page,
the list's total and the next page's offset, so a printer with a hundred jobs is never cut at a fixed count without
the agent being told; and the task writer's references read on through those pages to the record they need (or every
page, for a total), so the gate accepts a task about a record past the first page."""

from __future__ import annotations

import copy
import random
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from envgen.gate import validate_spec
from envgen.world.compile import CompiledWorld, compile_world
from envgen.world.render import MAX_PAGE_SIZE, PAGE_SIZE
from envgen.world.sim import Simulator
from envgen.world.tasks.base import Draft, DraftTurn, Writer
from gym_envs.spec import parse_spec
from tests.envgen.world.operator_world import _WORLD as _PRINT_ROOM
from tests.envgen.world.operator_world import operator_world
from tests.envgen.world.store_world import _WORLD as _SHOP
from tests.envgen.world.store_world import simulated, store_world


@pytest.fixture(scope="module")
def crowded() -> Iterator[tuple[CompiledWorld, Simulator]]:
    """Two printers share 200 jobs: the busier one holds far more than the most a page may show."""
    entities = copy.deepcopy(_PRINT_ROOM["entities"])
    entities[1]["rows"], entities[2]["rows"] = 2, 200
    yield from simulated(operator_world(entities=entities), "test-print-lookup-pages", 1)


def _busiest(w: Writer) -> tuple[dict[str, Any], list[str]]:
    printers = w.rows(w.world.entity("printer"))
    jobs = w.rows(w.world.entity("print_job"))
    pid, _ = Counter(j["printer_id"] for j in jobs).most_common(1)[0]
    printer = next(p for p in printers if p["id"] == pid)
    return printer, [j["job_number"] for j in sorted(jobs, key=lambda j: j["id"]) if j["printer_id"] == pid]


def test_a_lookup_pages_a_long_child_list_and_says_how_long_it_is(crowded: Any) -> None:
    cw, sim = crowded
    printer, jobs = _busiest(Writer(cw.world, sim, random.Random(0)))
    assert len(jobs) > MAX_PAGE_SIZE  # more than any one page may show
    run = sim.run()
    first = run.call("get_printer_details", {"printer_code": printer["printer_code"]})
    assert first.ok, first.error
    assert first.result["print_jobs"] == jobs[:PAGE_SIZE]
    assert first.result["print_jobs_total"] == len(jobs) and first.result["print_jobs_next_offset"] == PAGE_SIZE
    seen, offset = list(first.result["print_jobs"]), first.result["print_jobs_next_offset"]
    while offset is not None:
        page = run.call("get_printer_details", {"printer_code": printer["printer_code"], "offset": offset,
                                                "limit": MAX_PAGE_SIZE})
        assert page.ok and page.result["printer_code"] == printer["printer_code"]
        seen += page.result["print_jobs"]
        offset = page.result["print_jobs_next_offset"]
    assert seen == jobs  # every job once, in a fixed order
    too_many = run.call("get_printer_details", {"printer_code": printer["printer_code"], "limit": MAX_PAGE_SIZE + 1})
    assert not too_many.ok and "limit" in str(too_many.error)
    run.close()
    tool = next(t for t in cw.spec.tools if t.name == "get_printer_details")
    assert {"limit", "offset"} <= set(tool.parameters["properties"]) and "print_jobs_total" in tool.description
    patron_lookup = next(t for t in cw.spec.tools if t.name == "find_patron_by_email")  # a record without children
    assert "offset" not in patron_lookup.parameters["properties"]


def test_a_reference_reads_on_through_a_lookup_to_the_page_of_its_record_and_the_gate_accepts_it(crowded: Any) -> None:
    cw, sim = crowded
    w = Writer(cw.world, sim, random.Random(0))
    printer, jobs = _busiest(w)
    by_key = {j["job_number"]: j for j in w.rows(w.world.entity("print_job"))}
    at = next(i for i in range(2 * PAGE_SIZE, len(jobs)) if by_key[jobs[i]]["state"] == "queued")
    look = {"name": "get_printer_details", "arguments": {"printer_code": printer["printer_code"]}}
    hold = {"name": "hold_job", "arguments": {"job_number": jobs[at]}}
    task = w.finish(Draft("read_then_write", "lookup_page", [DraftTurn("-", [look, hold])]), 0)
    assert task is not None
    offsets = [c["arguments"].get("offset", 0) for c in task["turns"][0]["reference"][:-1]]
    assert offsets == list(range(0, at // PAGE_SIZE * PAGE_SIZE + 1, PAGE_SIZE))  # up to the page that holds it
    # a search of the same printer's jobs in the turn lists them: the lookup is not read on as well
    listing = {"name": "list_printer_queue", "arguments": {"printer_code": printer["printer_code"]}}
    both = w.finish(Draft("read_then_write", "lookup_page", [DraftTurn("-", [look, listing, hold])]), 0)
    assert both is not None
    names = [(c["name"], c["arguments"].get("offset", 0)) for c in both["turns"][0]["reference"]]
    assert [n for n in names if n[0] == "get_printer_details"] == [("get_printer_details", 0)]
    assert len([n for n in names if n[0] == "list_printer_queue"]) == at // PAGE_SIZE + 1
    say = f"Please put job {jobs[at]} on printer {printer['printer_code']} on hold."
    spec = parse_spec({**cw.spec.model_dump(mode="json", exclude_none=True),
                       "tasks": [{**task, "turns": [{**task["turns"][0], "instruction": say}]}]})
    verdict = validate_spec(spec, executor="inprocess")
    assert verdict.accepted, verdict.reasons


def test_a_total_over_a_records_lines_reads_every_page_of_them() -> None:
    entities = copy.deepcopy(_SHOP["entities"])
    entities[2]["rows"], entities[3]["rows"] = 4, 150  # about forty lines an order
    cw = compile_world(store_world(entities=entities), env_id="test-shop-lookup-pages", seed=2)
    sim = Simulator(cw.spec)
    try:
        w = Writer(cw.world, sim, random.Random(0))
        lines = w.rows(w.world.entity("line"))
        oid, n = Counter(r["order_id"] for r in lines).most_common(1)[0]
        assert n > 2 * PAGE_SIZE
        order = next(o for o in w.rows(w.world.entity("order")) if o["id"] == oid)
        look = next(o.name for o in cw.world.ops if o.kind == "lookup" and o.entity.name == "order")
        call = {"name": look, "arguments": {"order_number": order["order_number"]}}
        cents = sum(int(r["quantity"]) * int(r["unit_price"]) for r in lines if r["order_id"] == oid)
        answer = [f"{cents / 100:.2f}"]
        summed = w.finish(Draft("read", "total", [DraftTurn("-", [call], kind="read", answers=[answer],
                                                            sums=True)]), 0)
        asked = w.finish(Draft("read", "total", [DraftTurn("-", [call], kind="read", answers=[answer])]), 0)
    finally:
        sim.close()
    assert summed is not None and asked is not None
    assert len(summed["turns"][0]["reference"]) == -(-n // PAGE_SIZE)  # every page of the order's lines
    assert asked["turns"][0]["reference"] == [call]  # no line is needed by key: the first page is the record
