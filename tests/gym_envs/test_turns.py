"""The turn-ending control (``gym_envs.turns``) that the MCP server and the TRL adapter share."""

from __future__ import annotations

import pytest

from gym_envs.env import ToolEnv
from gym_envs.examples import load_example
from gym_envs.spec import RESERVED_TOOL_NAMES, Turn
from gym_envs.turns import END_TURN_TOOL, TurnEnd, end_turn


def _reply(turn: Turn) -> str:
    """The reference trajectory's final message (what the validity gate sends)."""
    parts = [c.any_of[0] for c in turn.checks if c.kind == "reply_contains"]
    return " ".join(parts) if parts else "Done."


def test_the_control_name_is_reserved_for_every_spec() -> None:
    assert END_TURN_TOOL in RESERVED_TOOL_NAMES


def test_end_turn_gives_the_next_instruction_then_the_score_as_toolenv_pays() -> None:
    spec = load_example("support-tickets")
    task = max(spec.tasks, key=lambda t: len(t.turns))
    assert len(task.turns) > 2
    env = ToolEnv(spec, reward_mode="checks", executor="inprocess")
    env.reset(options={"task": task.id, "episode_seed": 3})
    total = 0.0
    for i, turn in enumerate(task.turns):
        for call in turn.reference:
            total += env.step({"name": call.name, "arguments": dict(call.arguments)})[1]
        ended = end_turn(env, _reply(turn) if i != 1 else "")  # turn 2 answered with nothing
        total += ended.reward
        assert ended.turn == i and len(ended.checks) == len(turn.checks)
        if i + 1 < len(task.turns):
            assert not ended.done and ended.next_instruction == task.turns[i + 1].instruction
            assert ended.next_turn == i + 1 and ended.score is None
            assert set(ended.to_dict()) == {"turn", "checks", "turn_passed", "reward", "done", "next_instruction",
                                            "next_turn"}
    assert ended.done and env.done and not ended.truncated
    assert ended.score == env.score() and ended.score["checks"] == pytest.approx(total)
    assert ended.episode_passed is (ended.score["episode"] == 1.0)
    assert ended.to_dict()["score"] == ended.score and "next_instruction" not in ended.to_dict()
    with pytest.raises(RuntimeError, match="episode is over"):
        end_turn(env, "again")
    env.close()


def test_a_turn_ended_at_the_step_limit_ends_the_episode_truncated() -> None:
    spec = load_example("support-tickets")
    task = max(spec.tasks, key=lambda t: len(t.turns))
    env = ToolEnv(spec, reward_mode="episode", executor="inprocess", max_steps=1)
    env.reset(options={"task": task.id})
    ended = end_turn(env, "Done.")
    assert isinstance(ended, TurnEnd) and ended.done and ended.truncated and ended.next_instruction is None
    assert ended.score is not None and ended.score["episode"] == 0.0 and ended.episode_passed is False
    env.close()
