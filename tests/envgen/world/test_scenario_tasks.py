"""A world's scenario tasks: the simulated user is asked who they are, or to confirm a change, before the agent acts;
the gate accepts them and the scripted user answers the reference's questions."""

from __future__ import annotations

import re

import pytest

from envgen.depth import spec_depth
from envgen.gate import validate_spec
from envgen.realism import measure_specs
from envgen.world.compile import CompiledWorld, compile_world
from gym_envs.spec import Say, ToolCall
from gym_envs.users.scripted import scripted_reply
from tests.envgen.world.store_world import store_world


@pytest.fixture(scope="module")
def shops() -> list[CompiledWorld]:
    return [compile_world(store_world(), env_id="test-shop", seed=seed, n_tasks=10) for seed in range(3)]


def _scenarios(worlds: list[CompiledWorld]) -> list[object]:
    return [t for cw in worlds for t in cw.spec.tasks if t.scenario is not None]


def test_a_world_library_holds_scenario_tasks_of_one_turn(shops: list[CompiledWorld]) -> None:
    tasks = [t for cw in shops for t in cw.spec.tasks]
    scenarios = _scenarios(shops)
    assert len(scenarios) >= 0.15 * len(tasks), (len(scenarios), len(tasks))
    for task in scenarios:
        (turn,) = task.turns  # type: ignore[attr-defined]
        assert any(isinstance(item, Say) for item in turn.reference)
        assert task.scenario.goal  # type: ignore[attr-defined]


def test_a_withheld_identity_is_a_fact_the_agent_must_ask_for(shops: list[CompiledWorld]) -> None:
    asked = 0
    for task in _scenarios(shops):
        scenario = task.scenario  # type: ignore[attr-defined]
        if not scenario.facts:
            continue
        asked += 1
        (turn,) = task.turns  # type: ignore[attr-defined]
        ((_name, value),) = scenario.facts.items()
        assert str(value) not in turn.instruction  # the user did not say it
        question = turn.reference[0]
        assert isinstance(question, Say)  # the agent asks first
        reply = scripted_reply(scenario, question.say)
        assert str(value) in (reply.text or ""), (question.say, reply)
        later = [item for item in turn.reference[1:] if isinstance(item, ToolCall)]
        assert any(str(value) in str(c.arguments.values()) for c in later)  # the answer finds the person
    assert asked


def test_a_change_the_policy_wants_confirmed_is_asked_right_before_the_write(shops: list[CompiledWorld]) -> None:
    worlds = [*shops, *(compile_world(store_world(), env_id="test-shop", seed=seed, n_tasks=10) for seed in (3, 4, 5))]
    confirmed = 0
    for task in _scenarios(worlds):
        (turn,) = task.turns  # type: ignore[attr-defined]
        checks = [c for c in turn.checks if c.kind == "confirmed"]
        if not checks:
            continue
        confirmed += 1
        tool = checks[0].tools[0]
        at = next(i for i, item in enumerate(turn.reference) if isinstance(item, ToolCall) and item.name == tool)
        ask = turn.reference[at - 1]
        assert isinstance(ask, Say)
        assert scripted_reply(task.scenario, ask.say).confirmed  # type: ignore[attr-defined]
    assert confirmed


def test_the_gate_accepts_scenario_tasks_and_depth_counts_the_users_answers(shops: list[CompiledWorld]) -> None:
    cw = shops[0]
    verdict = validate_spec(cw.spec, executor="inprocess")
    assert verdict.accepted, [f"{r.code}: {r.message}" for r in verdict.reasons]
    scenario = next(t for t in cw.spec.tasks if t.scenario is not None)
    one = cw.spec.model_copy(update={"tasks": [scenario]})
    says = sum(isinstance(item, Say) for item in scenario.turns[0].reference)
    depth = spec_depth([one])
    assert depth.turns_per_task == 1 + says  # the instruction, then one user turn per answered question
    assert depth.calls_per_task == len(scenario.turns[0].calls())
    share = measure_specs([cw.spec], executor="inprocess").scenario_share  # what stats and the bench report
    assert share == sum(t.scenario is not None for t in cw.spec.tasks) / len(cw.spec.tasks)


def test_the_agent_states_the_change_in_the_operations_words_before_asking() -> None:
    phrased = store_world()
    for op in phrased.operations:
        if op.name == "cancel_order":
            op.phrase = "call off {record} for good"
    asks = []
    for world in (store_world(), phrased):
        for seed in range(6):
            for task in _scenarios([compile_world(world, env_id="test-shop", seed=seed, n_tasks=10)]):
                (turn,) = task.turns  # type: ignore[attr-defined]
                if any(c.kind == "confirmed" for c in turn.checks):
                    asks += [(world is phrased, item.say) for item in turn.reference if isinstance(item, Say)
                             and scripted_reply(task.scenario, item.say).confirmed]  # type: ignore[attr-defined]
    assert {p for p, _ in asks} == {False, True}
    for is_phrased, say in asks:
        wanted = r"call off order ORD-\d+ for good" if is_phrased else r"cancel order ORD-\d+"
        assert re.search(wanted, say), say
        assert not re.search(r"order for ORD-", say), say
