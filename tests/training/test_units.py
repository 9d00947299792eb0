"""Pure pieces: advantages, rewards, action comparison, histogram, metric flattening."""

from __future__ import annotations

import pytest

from gym_envs.parsing import format_tool_call
from training.advantages import group_advantages, normalize_per_role, selfplay_advantages
from training.distill import same_action
from training.metrics import flatten
from training.rewards import env_reward, episode_reward, solve_rate, solver_reward
from training.selfplay import histogram


def test_group_advantages() -> None:
    adv = group_advantages([1.0, 0.0, 1.0, 1.0], ["a", "a", "b", "b"], scale="none")
    assert adv == [0.5, -0.5, 0.0, 0.0]
    scaled = group_advantages([1.0, 0.0, 0.0, 0.0], ["a", "a", "b", "b"], scale="group")
    assert scaled[0] == pytest.approx(1.0, rel=1e-3) and scaled[2:] == [0.0, 0.0]
    with pytest.raises(ValueError, match="scale"):
        group_advantages([1.0], ["a"], scale="nope")


def test_per_role_normalisation_is_separate() -> None:
    roles = ["proposer", "proposer", "proposer", "solver", "solver"]
    values = [-1.0, 0.0, 1.0, 10.0, 30.0]
    adv = normalize_per_role(values, roles)
    prop, solv = adv[:3], adv[3:]
    assert sum(prop) == pytest.approx(0.0, abs=1e-6) and sum(solv) == pytest.approx(0.0, abs=1e-6)
    assert max(solv) == pytest.approx(1.0, rel=1e-3)  # the solver's scale does not leak into the proposer's
    assert max(prop) == pytest.approx(1.2247, rel=1e-3)


def test_selfplay_advantages_group_baseline_then_roles() -> None:
    rewards = [1.0, 0.0, 1.0, 1.0, 0.5, -1.0]
    roles = ["solver", "solver", "solver", "solver", "proposer", "proposer"]
    groups = ["t0", "t0", "t1", "t1", "p", "p"]
    adv = selfplay_advantages(rewards, roles, groups)
    assert adv[2] == adv[3] == 0.0  # a group that always passes carries no signal
    assert adv[0] > 0 > adv[1]
    assert adv[4] > 0 > adv[5]


def test_rewards() -> None:
    score = {"episode": 0.0, "turns": 0.5, "checks": 0.75}
    assert episode_reward(score, "turns") == 0.5
    assert episode_reward(None) == 0.0
    assert solver_reward(score, mode="checks", parse_errors=2, parse_error_penalty=0.1) == pytest.approx(0.55)
    assert solve_rate([True, False, True, True]) == 0.75
    logged = {}
    out = env_reward(["p"] * 2, ["c"] * 2, env_reward=[1.0, 0.0], episode_status=["terminated", "max_steps"],
                     episode_passed=[1.0, 0.0], log_metric=logged.__setitem__)
    assert out == [1.0, 0.0]
    assert logged["env/status_max_steps"] == 0.5 and logged["env/episode_passed"] == 0.5


def test_same_action() -> None:
    a = format_tool_call("borrow_book", {"member_id": 7, "book_id": 3})
    b = '<tool_call>{"arguments": {"book_id": 3, "member_id": 7}, "name": "borrow_book"}</tool_call>'
    assert same_action(a, b)
    assert not same_action(a, format_tool_call("borrow_book", {"member_id": 7, "book_id": 2}))
    assert same_action("Done.", "All set, the loan is recorded.")
    assert not same_action(a, "Done.")


def test_histogram_and_flatten() -> None:
    h = histogram([0.0, 0.5, 1.0, 0.99], 4)
    assert h["counts"] == [1.0, 0.0, 1.0, 2.0]
    assert flatten({"a": {"b": 1, "c": True, "d": "x", "e": float("nan")}, "f": 2.5}) == {"a/b": 1.0, "a/c": 1.0,
                                                                                           "f": 2.5}
