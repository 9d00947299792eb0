"""The one episode engine: lock-step batches, the messages it builds, failures as data, the simulated user."""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from typing import Any

import pytest

from gym_envs.engine import play
from gym_envs.env import ToolEnv
from gym_envs.episode import Episode, PolicyFailure, TaskRef
from gym_envs.episode_env import ToolEnvAdapter
from gym_envs.parsing import format_tool_call
from gym_envs.spec import as_spec
from gym_envs.users import END_TURN, UserContext, UserReply, UserSimulator
from tests.fixtures.library_spec import SPEC

PLAN = [format_tool_call("find_book", {"title": "Dune"}),
        format_tool_call("borrow_book", {"member_id": 7, "book_id": 3}), "Done.",
        format_tool_call("list_loans", {"member_id": 7}), "Member 7 has 2 books out."]


def _episode(spec: Any = None, **kw: Any) -> Episode:
    spec = spec or as_spec(copy.deepcopy(SPEC))
    return Episode(TaskRef(spec, "t0"), lambda: ToolEnvAdapter(ToolEnv(spec, "t0", executor="inprocess"), "t0"), **kw)


class Plan:
    """Answers each episode with the next action of the plan; counts the batched calls."""

    def __init__(self, plan: Sequence[Any] = PLAN):
        self.plan, self.calls = list(plan), []  # type: list[Any], list[int]

    def act_batch(self, episodes: Sequence[Episode]) -> list[Any]:
        self.calls.append(len(episodes))
        return [self.plan[len(ep.steps)] if len(ep.steps) < len(self.plan) else "Nothing." for ep in episodes]


def test_lock_step_one_batched_call_per_round_and_openai_messages() -> None:
    policy = Plan()
    eps = play([_episode() for _ in range(3)], policy)
    assert policy.calls == [3] * 5
    for ep in eps:
        assert ep.status == "terminated" and ep.passed and ep.score["episode"] == 1.0 and ep.env is not None
        roles = [m["role"] for m in ep.messages]
        assert roles == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant", "user",
                         "assistant", "tool", "assistant"]
        call, result = ep.messages[2], ep.messages[3]
        assert call["tool_calls"][0]["id"] == result["tool_call_id"] == "call_1_0" and call["raw"] == PLAN[0]
        assert ep.steps[1].results[0]["name"] == "borrow_book" and ep.steps[2].turn_ended
        assert ep.turns[0]["passed"] and ep.turns[1]["reply"] == PLAN[-1]
        assert not ep.completion_ids  # no ChatFormat: no token record


def test_failures_are_typed_and_stay_in_their_episode() -> None:
    bad = as_spec(copy.deepcopy(SPEC))
    bad.state.schema_sql = "CREATE TABLE broken ("

    class Mixed:
        def act_batch(self, episodes: Sequence[Episode]) -> list[Any]:
            return [PolicyFailure("server down", backend=True) if ep.trial == 1 else
                    PolicyFailure("cannot") if ep.trial == 2 else PLAN[len(ep.steps)] for ep in episodes]

    eps = play([_episode(trial=0), _episode(trial=1), _episode(trial=2), _episode(bad, trial=3)], Mixed())
    assert eps[0].passed and eps[0].error is None
    assert (eps[1].status, eps[1].stage, eps[1].error) == ("generation_error", "backend",
                                                           "no completion from the model: server down")
    assert (eps[2].status, eps[2].stage) == ("policy_error", "policy") and eps[2].error == "policy failed: cannot"
    assert eps[3].status == "env_error" and eps[3].stage == "reset" and eps[3].error.startswith("reset failed")

    class Raises:
        def act_batch(self, episodes: Sequence[Episode]) -> list[Any]:
            raise RuntimeError("model server unreachable")

    ep, = play([_episode()], Raises())
    assert ep.stage == "policy" and ep.error == "policy failed: RuntimeError: model server unreachable"


def test_continuous_batching_refills_finished_slots() -> None:
    policy = Plan(["Nothing to do.", "Still nothing."])  # a plain message per turn: two actions an episode
    eps = play([_episode() for _ in range(5)], policy, concurrency=2)
    assert max(policy.calls) == 2 and sum(policy.calls) == 10 and all(ep.done for ep in eps)


class Clarifies(UserSimulator):
    """A user of the episode's own that answers the first plain message of each turn, then lets the next one end it;
    it counts the batches it was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.batches: list[int] = []

    def reply_batch(self, contexts: Sequence[UserContext]) -> list[UserReply]:
        self.batches.append(len(contexts))
        self.asked += [c.message for c in contexts]
        return [UserReply("I mean the book 'Dune', by Herbert.") if c.replies == 0 else END_TURN for c in contexts]


def _scenario_spec() -> Any:
    spec = copy.deepcopy(SPEC)
    spec["spec_version"] = 2
    spec["tasks"][0]["scenario"] = {"goal": "Borrow Dune for member 7, then ask how many books they have."}
    return as_spec(spec)


def test_the_episodes_own_user_answers_within_the_turn_in_one_batch() -> None:
    """A user of the episode's own (a model-backed one, say) answers a scenario task's plain messages: every episode
    of a round in one batch; its reply continues the turn, the environment records it, and END_TURN lets the
    message end the turn."""
    user = Clarifies()
    plan = ["Which book?", *PLAN[:2], "Done.", "How many?", PLAN[3], PLAN[4]]
    eps = play([_episode(_scenario_spec(), user=user, trial=k) for k in range(2)], Plan(plan))
    for ep in eps:
        assert ep.passed, ep.turns
        assert ep.steps[0].user_reply == "I mean the book 'Dune', by Herbert." and not ep.steps[0].turn_ended
        assert [m["role"] for m in ep.messages[2:4]] == ["assistant", "user"]
        assert ep.turns[0]["reply"] == "Done." and ep.turns[0]["said"][0]["text"] == "Which book?"
    assert user.asked[:2] == ["Which book?", "Which book?"] and user.batches[0] == 2


def test_without_a_scenario_no_user_is_asked() -> None:
    user = Clarifies()
    ep, = play([_episode(user=user)], Plan(["Which book?", "How many?"]))
    assert user.asked == [] and ep.steps[0].turn_ended and ep.steps[0].user_reply is None


def test_an_episode_can_stop_after_a_number_of_actions_or_at_the_end_of_a_turn() -> None:
    ep, = play([_episode(max_actions=2)], Plan())
    assert ep.status == "max_steps" and ep.truncated and len(ep.steps) == 2
    ep, = play([_episode(stop_at_turn_end=True)], Plan())
    assert ep.status == "turn_ended" and len(ep.steps) == 3 and ep.steps[-1].turn_passed


def test_a_policy_that_answers_the_wrong_number_fails_its_batch() -> None:
    class Short:
        def act_batch(self, episodes: Sequence[Episode]) -> list[Any]:
            return []

    eps = play([_episode(), _episode()], Short())
    assert all(ep.stage == "policy" and "0 answers for 2 episodes" in (ep.error or "") for ep in eps)


def test_task_refs_need_an_environment() -> None:
    with pytest.raises(ValueError, match="needs its spec or its env_id"):
        TaskRef(task_id="t0")
    assert TaskRef(task_id="t0", env_id="e", suite="s").key == "s/e/t0"
    assert TaskRef(as_spec(copy.deepcopy(SPEC)), "t0").key == "library-demo/t0"



def test_each_tool_result_the_model_sees_is_cut_at_the_envs_observation_limit_with_a_marker() -> None:
    """A call's tool message is its result cut at ``max_observation_chars`` (as the gym observation is), saying how
    much was cut; the call itself ran in full."""
    spec = as_spec(copy.deepcopy(SPEC))
    spec.state.seed_sql = spec.state.seed_sql.replace("'Herbert'", "'" + "Frank Herbert; " * 100 + "'")
    env = ToolEnv(spec, "t0", executor="inprocess", max_observation_chars=300)
    ep, = play([Episode(TaskRef(spec, "t0"), lambda: ToolEnvAdapter(env, "t0"))], Plan())
    shown = ep.messages[3]["content"]
    full = json.dumps(ep.steps[0].results[0]["result"], ensure_ascii=False)
    kept = shown.index("...[truncated: ")
    assert len(full) > 1_000 and len(shown) <= 300 and full.startswith(shown[:kept])
    assert shown[kept:] == f"...[truncated: {len(full) - kept} of {len(full)} characters not shown]"
    assert ep.passed
