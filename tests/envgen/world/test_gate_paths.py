"""A compiled world's code keeps no state between calls, so the gate takes its fast paths on it (checkpoints at a
turn's start, lookups and drops judged in place, extra writes after the reference), and those paths give exactly
the verdict that replaying every wrong trajectory from the episode start gives."""

from __future__ import annotations

from typing import Any

import pytest

from envgen.gate import validate_spec
from envgen.world.compile import compile_world
from gym_envs.sandbox.purity import stateless
from tests.envgen.world.store_world import store_world


@pytest.fixture(scope="module")
def shop() -> Any:
    return compile_world(store_world(), env_id="test-shop", seed=3).spec


def test_the_world_code_is_stateless(shop: Any) -> None:
    assert stateless(shop.code)


def _outcomes(verdict: Any) -> list[tuple[Any, ...]]:
    return sorted((m["task"], m["turn"], m["rule"], m["mutation"], m["outcome"]) for m in verdict.mutations)


def test_the_fast_paths_give_the_replays_verdict_on_a_world(shop: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import envgen.gate.adequacy as adequacy

    fast = validate_spec(shop, executor="inprocess", seed=7)
    monkeypatch.setattr(adequacy, "stateless", lambda code: False)  # every wrong trajectory replayed
    slow = validate_spec(shop, executor="inprocess", seed=7)
    assert fast.accepted and slow.accepted, fast.reasons
    assert (fast.mutants, fast.killed, fast.mutation_score) == (slow.mutants, slow.killed, slow.mutation_score)
    assert fast.mutants > 20
    assert _outcomes(fast) == _outcomes(slow)
    assert fast.calls < slow.calls  # the fast paths replay less


def test_the_worker_gives_the_in_process_verdict_on_a_world(shop: Any) -> None:
    here = validate_spec(shop, executor="inprocess", seed=7)
    there = validate_spec(shop, executor="worker", seed=7)
    assert (here.accepted, here.mutants, here.killed) == (there.accepted, there.mutants, there.killed)
    assert _outcomes(here) == _outcomes(there)


def test_wrong_trajectories_started_from_the_references_checkpoints_are_judged_as_from_their_turns_start(
        shop: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A wrong trajectory starts from a checkpoint after the reference's items it shares, and a turn begins on the
    checkpoint after the whole reference of the turn before (:mod:`envgen.gate.starts`): every wrong trajectory, in
    order and with its detail, is the one playing each from its turn's start gives."""
    import envgen.gate.adequacy as adequacy
    import envgen.gate.extras as extras
    from gym_envs.env import ToolEnv

    begun: list[int] = []
    begin_turn = ToolEnv.begin_turn
    monkeypatch.setattr(ToolEnv, "begin_turn", lambda self, turn, history=(): begun.append(turn) or
                        begin_turn(self, turn, history))
    fast = validate_spec(shop, executor="inprocess", seed=7)
    assert begun  # some turns began on the turn before's checkpoint
    for module in (adequacy, extras):
        monkeypatch.setattr(module, "shared_items", lambda *a, **k: 0)
    slow = validate_spec(shop, executor="inprocess", seed=7)
    assert fast.accepted and slow.accepted, fast.reasons
    assert fast.mutations == slow.mutations and fast.mutants > 20
    assert fast.calls < slow.calls
