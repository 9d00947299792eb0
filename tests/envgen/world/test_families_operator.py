"""Tasks of an operator world: staff name a record by its key, through its container, or by whose it is,
and the reference reads only what the request names."""

from __future__ import annotations

import re

import pytest

from envgen.world.compile import CompiledWorld, compile_world
from envgen.world.sim import Simulator
from tests.envgen.world.operator_world import operator_world


@pytest.fixture(scope="module")
def compiled() -> list[CompiledWorld]:
    return [compile_world(operator_world(), env_id="test-print-room", seed=seed, n_tasks=10) for seed in range(3)]


def test_the_reference_reads_a_container_only_when_the_request_names_it(compiled: list[CompiledWorld]) -> None:
    checked = 0
    for cw in compiled:
        printers = _keys(cw, "printers", "printer_code")
        for task in cw.spec.tasks:
            said = ""
            for turn in task.turns:
                said += " " + turn.instruction
                for call in turn.reference:
                    for value in call.arguments.values():
                        if value in printers:
                            checked += 1
                            assert value in said, (task.id, call.name, value, said)
    assert checked  # some tasks do name a printer


def test_a_job_named_by_whose_it_is_is_found_through_the_person_search(compiled: list[CompiledWorld]) -> None:
    """The person's search is in the reference, after the read of the printer's queue. The reads may come in
    another turn of the conversation: a session does not repeat a read (a queue or a search an earlier request
    read is not read again), and a refused request's reads come with the request that follows it (a refusal that
    ends the conversation keeps none: no check could tell them missing)."""
    found = ordered = 0
    for cw in compiled:
        for task in cw.spec.tasks:
            calls = [c.model_dump(include={"name", "arguments"}) for turn in task.turns for c in turn.reference]
            for i, turn in enumerate(task.turns):
                m = re.search(r"([A-Z][\w'-]+ [A-Z][\w'-]+)'s print job for printer (PRN-\d+)", turn.instruction)
                if m is None or not any(t.reference for t in task.turns[i:]):
                    continue
                found += 1
                search = {"name": "search_patrons", "arguments": {"query": m.group(1)}}
                start = sum(len(t.reference) for t in task.turns[:i])  # the calls of the earlier requests
                if search in calls[:start]:
                    continue
                assert search in calls[start:], (task.id, m.group(0))
                at = start + calls[start:].index(search)
                queue = {"name": "list_printer_queue", "arguments": {"printer_code": m.group(2)}}
                assert queue in calls[:at], (task.id, m.group(0))  # this request's read, or an earlier one's
                ordered += 1
    assert found and ordered


def _keys(cw: CompiledWorld, table: str, key: str) -> set[str]:
    sim = Simulator(cw.spec)
    run = sim.run()
    try:
        return {row[key] for row in run.tables()[table]}
    finally:
        run.close()
        sim.close()
