"""With a model-backed user, a τ² task opens with the user's own message, not τ²'s scenario: the agent sees only
what the user says (τ²'s protocol), and the scenario stays the user's."""

from __future__ import annotations

from typing import Any

from eval.runner import open_conversations
from eval.suites.tau2 import Tau2Suite
from gym_envs.env import ToolEnv
from gym_envs.users import ModelUser
from tests.fixtures.tau2 import needs_tau2

pytestmark = needs_tau2


def test_a_model_user_writes_the_opening_and_the_agent_never_sees_the_scenario() -> None:
    suite = Tau2Suite("retail", limit=2, executor="inprocess")
    try:
        tasks = suite.tasks()
        scenarios = {t.task_id: t.spec.task(t.task_id).turns[0].instruction for t in tasks if t.spec is not None}
        asked: list[Any] = []

        def generate(chats: list[list[dict[str, str]]]) -> list[str | None]:
            asked.extend(chats)
            return ["Hello, I need help with an order.", None][: len(chats)]

        counts = open_conversations(suite, tasks, ModelUser(generate))
        assert counts == {"written": 1, "fallback": 1}
        assert len(asked) == 2  # one chat per task, under the user's instructions
        assert all(scenarios[t.task_id] in chat[0]["content"] for t, chat in zip(tasks, asked, strict=True))
        opened = suite.tasks()
        first = [t.spec.task(t.task_id).turns[0].instruction for t in opened if t.spec is not None]
        assert first == ["Hello, I need help with an order.", "Hi."]  # a failed opening: the agent has to ask
        for t in opened:
            assert t.spec is not None and t.spec.task(t.task_id).scenario.goal == scenarios[t.task_id]
            env = ToolEnv(t.spec, t.task_id, executor=suite.executor)  # as the suite's episodes make it
            try:
                obs, info = env.reset(seed=0)
                assert obs == t.spec.task(t.task_id).turns[0].instruction  # the user's opening, never the scenario
                assert scenarios[t.task_id] not in obs + info["system_prompt"]
            finally:
                env.close()
    finally:
        suite.close()
    fresh = Tau2Suite("retail", limit=2, executor="inprocess")  # the converted domain itself is untouched
    try:
        assert [t.spec.task(t.task_id).turns[0].instruction for t in fresh.tasks() if t.spec is not None] == [
            scenarios[t.task_id] for t in tasks]
    finally:
        fresh.close()
