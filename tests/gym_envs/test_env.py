"""ToolEnv: episode semantics, reward modes, truncation, parsing, rendering, registration, vector envs."""

from __future__ import annotations

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import gym_envs  # noqa: F401  (registers envwright/ToolEnv-v0)
from gym_envs.env import ToolEnv
from gym_envs.parsing import format_tool_call, parse_action
from tests.fixtures.library_spec import SPEC

FIND = '<tool_call>{"name": "find_book", "arguments": {"title": "Dune"}}</tool_call>'
BORROW = {"content": "", "tool_calls": [{"name": "borrow_book", "arguments": {"member_id": 7, "book_id": 3}}]}
LIST = '{"name": "list_loans", "arguments": {"member_id": 7}}'


@pytest.fixture(params=["inprocess", "worker"])
def env(request):
    e = ToolEnv(SPEC, task="t0", executor=request.param, render_mode="ansi")
    yield e
    e.close()


def test_full_episode_reward_and_info(env):
    obs, info = env.reset(seed=0)
    assert obs.startswith("Member 7 wants to borrow")
    assert info["n_turns"] == 2 and len(info["tools"]) == 3 and "find_book" in info["system_prompt"]
    obs, r, term, trunc, info = env.step(FIND)
    assert '"Dune"' in obs and r == 0.0 and not term and info["tool_results"][0]["ok"]
    env.step(BORROW)
    obs, r, term, trunc, info = env.step("Borrowed.")
    assert obs.startswith("How many books") and info["turn_passed"] and info["checks"][0]["passed"]
    env.step(LIST)
    obs, r, term, trunc, info = env.step("Member 7 has two books out.")
    assert term and not trunc and r == 1.0 and info["episode_passed"]
    assert info["score"] == {"episode": 1.0, "turns": 1.0, "checks": 1.0}
    text = env.render()
    assert "[turn 0] PASSED" in text and "[turn 1] PASSED" in text
    with pytest.raises(RuntimeError, match="reset"):
        env.step("again")


def test_reply_ends_the_turn_without_parsing(env):
    env.reset(seed=0)
    env.step(BORROW)
    # text that step() would parse as a tool call is, through reply(), the agent's message
    obs, _, _, _, info = env.reply(LIST)
    assert obs.startswith("How many books") and info["turn_passed"] and env.turn_index == 1
    assert env.transcript[-2] == ("assistant", LIST)
    with pytest.raises(TypeError, match="text"):
        env.reply({"content": "x"})
    env.step(LIST)
    assert env.reply("Member 7 has two books out.")[2]
    with pytest.raises(RuntimeError, match="reset"):
        env.reply("again")


def test_reset_is_fresh_state(env):
    env.reset(seed=0)
    env.step(BORROW)
    env.reset(seed=0)
    _, _, _, _, info = env.step(BORROW)
    assert info["tool_results"][0]["ok"], "the loan of the previous episode leaked into this one"


@pytest.mark.parametrize("mode,expected", [("episode", [0.0, 0.0]), ("turns", [0.5, 0.0]), ("checks", [0.5, 0.0])])
def test_reward_modes_sum_to_fraction(mode, expected):
    env = ToolEnv(SPEC, task="t0", executor="inprocess", reward_mode=mode)
    env.reset(seed=0)
    env.step(BORROW)
    rewards = [env.step("done")[1]]
    rewards.append(env.step("I do not know")[1])
    assert rewards == expected
    env.close()


def test_max_steps_truncates_and_scores_current_turn():
    env = ToolEnv(SPEC, task="t0", executor="inprocess", max_steps=2, reward_mode="turns")
    env.reset(seed=0)
    env.step(FIND)
    _, r, term, trunc, info = env.step(BORROW)
    assert trunc and not term
    assert info["checks"][0]["passed"] and r == 0.5  # the state already satisfied turn 0's check
    assert info["score"]["turns"] == 0.5 and info["truncated_at_turn"] == 0


def test_errors_are_observations():
    env = ToolEnv(SPEC, task="t0", executor="inprocess")
    env.reset(seed=0)
    obs, *_ = env.step('<tool_call>{"name": "nope", "arguments": {}}</tool_call>')
    assert "UnknownTool" in obs
    obs, *_ = env.step('<tool_call>{"name": "borrow_book", "arguments": {"member_id": "x"}}</tool_call>')
    assert "InvalidArguments" in obs and "book_id" in obs
    obs, *_ = env.step("<tool_call>{not json</tool_call>")
    assert "ParseError" in obs
    obs, *_ = env.step(format_tool_call("find_book", {"title": "Nothing"}) + format_tool_call("list_loans",
                                                                                         {"member_id": 7}))
    assert obs.startswith("[") and "ToolError" in obs and "Emma" in obs  # two calls, two results


def test_parsing_forms():
    p = parse_action("<think>plan</think>Sure. " + FIND + FIND)
    assert [c["name"] for c in p.calls] == ["find_book", "find_book"] and p.content == "Sure."
    assert parse_action('```json\n{"name": "a", "arguments": "{\\"x\\": 1}"}\n```').calls == [
        {"name": "a", "arguments": {"x": 1}}]
    assert parse_action('[{"name": "a", "parameters": {}}, {"name": "b", "arguments": {}}]').calls[1]["name"] == "b"
    assert parse_action({"tool_calls": [{"function": {"name": "a", "arguments": "{}"}}]}).calls[0]["name"] == "a"
    assert parse_action('<tool_call>{"name": "a", "arguments": {}}').calls[0]["name"] == "a"  # unterminated
    assert parse_action("Just text {not a call}").is_message
    assert parse_action('{"answer": 3}').is_message


def test_make_and_check_env():
    env = gym.make("envwright/ToolEnv-v0", spec=SPEC, task="t0", executor="inprocess")
    check_env(env.unwrapped)
    obs, _ = env.reset(seed=3)
    assert obs.startswith("Member 7") and env.unwrapped.env_spec.id == "library-demo"
    env.close()
    with pytest.raises(KeyError, match="no task"):
        ToolEnv(SPEC, task="missing", executor="inprocess")
    with pytest.raises(ValueError, match="reward_mode"):
        ToolEnv(SPEC, reward_mode="dense", executor="inprocess")


def _vector_run(vec):
    obs, _ = vec.reset(seed=[0, 1])
    assert all(o.startswith("Member 7") for o in obs)
    obs, *_ = vec.step([FIND, LIST])
    assert '"Dune"' in obs[0] and "Emma" in obs[1]
    return obs


def test_sync_vector_env():
    vec = gym.vector.SyncVectorEnv([lambda: ToolEnv(SPEC, task="t0", executor="inprocess") for _ in range(2)])
    _vector_run(vec)
    vec.close()


def test_async_vector_env_returns_real_observations():
    vec = gym.vector.AsyncVectorEnv([lambda: ToolEnv(SPEC, task="t0", executor="inprocess") for _ in range(2)],
                                    shared_memory=False)
    _vector_run(vec)
    vec.close()
