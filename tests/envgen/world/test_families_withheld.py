"""The withheld-tool family: a change asked for while its tool is withheld, then again once the user says the
service can do it now (spec_version 2 ``withheld_tools`` / ``reveal_tools``)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from envgen.gate import validate_spec
from envgen.world.compile import compile_world
from envgen.world.tasks.withheld import _NEWS
from gym_envs.spec import EnvSpec, Task
from tests.envgen.world.store_world import _WORLD, store_world


def _withheld(spec: EnvSpec) -> list[Task]:
    return [t for t in spec.tasks if t.withheld_tools]


@pytest.fixture(scope="module")
def shop() -> Any:
    return compile_world(store_world(), env_id="test-shop-2", seed=3)


def test_the_task_asks_first_changes_nothing_then_reveals_the_tool_and_acts(shop: Any) -> None:
    tasks = _withheld(shop.spec)
    assert len(tasks) == 1  # one task of the world, not every task
    task = tasks[0]
    assert task.withheld_tools == ["change_address"] and task.kind == "read_then_write"
    first, second = task.turns[:2]
    assert [c.kind for c in first.checks] == ["unchanged"] and not first.checks[0].tables
    # the agent finds the order before it says it cannot change it: those reads are the first turn's, not the next's
    (change,) = second.calls()
    assert change.name == "change_address" and second.expects is None
    writes = {o["name"] for o in _WORLD["operations"] if o["kind"] not in ("lookup", "search")}
    assert first.expects == "decline" and first.calls() and not {c.name for c in first.calls()} & writes
    assert "change the address of my" in first.instruction
    assert second.reveal_tools == ["change_address"] and second.reference[-1].name == "change_address"
    assert any(second.instruction.startswith(news) for news in _NEWS)
    assert "change the address" in second.instruction  # the request is said again, in the person's words
    assert {c.kind for c in second.checks} == {"sql", "state"}
    assert all(not u.reveal_tools for u in task.turns[2:])
    assert [f for f in shop.families if f == "withheld_tool"] == ["withheld_tool"]


def test_the_phrasing_of_the_news_varies() -> None:
    said = set()
    for seed in range(6):
        for task in _withheld(compile_world(store_world(), env_id="test-shop-2", seed=seed).spec):
            said.add(next(n for n in _NEWS if task.turns[1].instruction.startswith(n)))
    assert len(said) >= 3


def test_the_gate_accepts_the_world_and_kills_the_early_change(shop: Any) -> None:
    verdict = validate_spec(shop.spec, executor="inprocess")
    assert verdict.accepted, verdict.reasons
    task = _withheld(shop.spec)[0]
    early = [m for m in verdict.mutations if m["task"] == task.id and m["turn"] == 1 and "reveals" in m["mutation"]]
    assert [m["outcome"] for m in early] == ["killed"]


def test_not_every_world_gets_one() -> None:
    assert not _withheld(compile_world(store_world(), env_id="test-shop", seed=3).spec)  # its draw says no


def test_a_tool_another_tool_can_stand_in_for_is_never_withheld() -> None:
    ops = copy.deepcopy(_WORLD["operations"])
    ops.append({"name": "fix_address", "kind": "update", "entity": "order", "fields": ["address"]})
    world = compile_world(store_world(operations=ops), env_id="test-shop-2", seed=3)
    assert not _withheld(world.spec)  # change_address and fix_address write the same field; cancel is confirmed
