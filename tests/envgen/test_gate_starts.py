"""Where the gate starts a wrong trajectory (:mod:`envgen.gate.starts`): from a checkpoint after the reference's first
items, the rest played as the trajectory's actions, the turn and the state are those playing it whole gives."""

from __future__ import annotations

import json
from typing import Any

import pytest

from envgen.gate.adequacy import MutationRun
from envgen.gate.mutants import Mutant, RefTurn, trajectory
from envgen.gate.starts import shared_items
from gym_envs.env import ToolEnv
from gym_envs.examples import example_path
from gym_envs.spec import Say, ToolCall, as_spec


def _spec(pace: int | None) -> Any:
    """The shop's cancellation turn: say, a run of three calls, say, a call (at ``pace`` calls an action)."""
    spec = json.loads(example_path("shop-support").read_text())
    turn = spec["tasks"][0]["turns"][0]
    ref = turn["reference"]
    turn["reference"] = [ref[0], ref[1], ref[3], {"name": "find_customer", "arguments": {"email": "ana@example.com"}},
                         ref[4], ref[5]]
    turn["checks"] = [c for c in turn["checks"] if c["kind"] != "calls_per_message"] + \
        ([{"kind": "calls_per_message", "max": pace}] if pace else [])
    return as_spec(spec)


def _record(env: ToolEnv) -> tuple[Any, ...]:
    t = env.turns[-1]
    return ([(c.name, c.arguments, c.ok, c.result, c.changes) for c in t.calls], list(t.call_actions),
            [(s.text, s.reply, s.action) for s in t.said], t.actions, env.steps, env.state_digest())


def _mutants(ref: RefTurn) -> list[Mutant]:
    """The reference's own items, and the reference with its last call's argument changed and with a call added."""
    calls = ref.calls
    changed = ToolCall(name=calls[-1].name, arguments={"code": "B-2001"})
    same = list(range(len(calls)))
    return [Mutant(5, "argument", "same", calls, same),
            Mutant(5, "argument", "last changed", [*calls[:-1], changed], same),
            Mutant(7, "extra", "one more", [*calls, changed], [*same, None])]


@pytest.mark.parametrize("pace", [None, 1, 2])
def test_a_trajectory_started_after_any_number_of_the_references_items_is_the_trajectory_played_whole(
        pace: int | None) -> None:
    spec = _spec(pace)
    env = ToolEnv(spec, executor="inprocess", max_steps=1000)
    try:
        run = MutationRun(env, spec, seed=5)
        assert run.stateless
        refs = run.reference(spec.tasks[0], replies=False)
        ref = refs[0]
        assert ref.passed
        for m in _mutants(ref):
            items = trajectory(ref, m)
            run._trail = None
            assert run._start_at(refs, 0, 0) == 0
            run._play_items(ref.turn, items)
            whole = _record(env)
            for k in range(shared_items(ref, items, m) + 1):
                made = run._start_at(refs, 0, k)
                assert made == k
                run._play_items(ref.turn, items, made=k)
                assert _record(env) == whole, (m.label, k)
        assert shared_items(ref, trajectory(ref, _mutants(ref)[1]), _mutants(ref)[1]) == len(ref.turn.reference) - 1
        assert any(isinstance(i, Say) for i in ref.turn.reference[:4])
    finally:
        env.close()


def test_calls_are_the_same_only_with_the_same_argument_types() -> None:
    spec = _spec(None)
    env = ToolEnv(spec, executor="inprocess")
    try:
        run = MutationRun(env, spec, seed=5)
        ref = run.reference(spec.tasks[0], replies=False)[0]
    finally:
        env.close()
    calls = ref.calls
    same = list(range(len(calls)))
    for value in (1, 1.0, True):
        other = ToolCall(name=calls[0].name, arguments={"email": value})
        m = Mutant(5, "argument", "x", [other, *calls[1:]], same)
        assert shared_items(ref, trajectory(ref, m), m) == 1  # the first say only
    copy = Mutant(5, "argument", "x", [ToolCall(name=c.name, arguments=dict(c.arguments)) for c in calls], same)
    assert shared_items(ref, trajectory(ref, copy), copy) == len(ref.turn.reference)
    assert shared_items(ref, trajectory(ref, copy), copy, says=False) == 0  # the reference begins with a say
    early = Mutant(7, "early", "x", calls, same)
    assert shared_items(ref, trajectory(ref, early), early) == 0
