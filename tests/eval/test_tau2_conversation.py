"""A converted τ² task is a conversation with a simulated user, scored as τ² scores it.

τ²'s policy tells the agent to confirm before a write; the task's scripted user answers the confirmation and the turn
goes on. τ² reads communicated information in every message of the agent, so a fact said before the confirmation
counts, for our checks and for τ²'s evaluator alike. τ²'s natural-language assertions are judged checks: never in the
score.
"""

from __future__ import annotations

from typing import Any

import pytest

from eval.tau2 import _backend
from eval.tau2.convert import UNKNOWN, Conversion, convert
from gym_envs.checks import JudgedCheck, ReplyContainsCheck
from gym_envs.env import ToolEnv
from gym_envs.sandbox import InProcessExecutor
from tests.fixtures.tau2 import needs_tau2

pytestmark = needs_tau2

#: retail 40: three reads, then a write; τ² wants the gift card's balance (60) and the card paid with said
TASK = "40"
SAID = "Your gift card balance is 60 and the order was paid with your mastercard."


@pytest.fixture(scope="module")
def retail() -> Conversion:
    return convert("retail", task_ids=[TASK])


def _tau2_task() -> Any:
    return next(t for t in _backend.tasks("retail") if str(t.id) == TASK)


def _play(conv: Conversion, messages: list[Any]) -> tuple[float, list[str]]:
    """Play ``messages`` (a tool call dict or a plain text) through our env: the last reward and the user's replies."""
    ex = InProcessExecutor()
    env = ToolEnv(conv.spec, TASK, executor=ex, max_steps=20)
    replies: list[str] = []
    reward = 0.0
    try:
        env.reset(options={"task": TASK, "episode_seed": 0})
        for m in messages:
            action = {"content": m, "tool_calls": []} if isinstance(m, str) else {"content": "", "tool_calls": [m]}
            obs, reward, done, _, _ = env.step(action)
            if isinstance(m, str) and not done:
                replies.append(obs)
    finally:
        env.close()
        ex.close()
    return reward, replies


def _gold() -> list[_backend.Call]:
    return [_backend.Call(a.name, dict(a.arguments)) for a in _tau2_task().evaluation_criteria.actions]


def test_the_scripted_user_confirms_a_write_and_the_information_said_before_it_counts(retail: Conversion) -> None:
    gold = _gold()
    reads, writes = gold[:-1], gold[-1:]
    ask = f"{SAID} I will change the payment method to your visa. Shall I proceed?"
    calls = [{"name": c.name, "arguments": c.arguments} for c in gold]
    reward, replies = _play(retail, [*calls[:-1], ask, calls[-1], "Done."])
    assert reward == 1.0 and len(replies) == 1 and "go ahead" in replies[0].lower()
    # τ²'s own evaluator on the same conversation: the same verdict
    played = _backend.replay("retail", _tau2_task(), [*reads, _backend.Said("assistant", ask),
                                                      _backend.Said("user", replies[0]), *writes], "Done.")
    assert _backend.reward("retail", _tau2_task(), played.messages)[0] == 1.0
    # without the information anywhere, both fail
    quiet = "I will change the payment method to your visa. Shall I proceed?"
    reward, _ = _play(retail, [*calls[:-1], quiet, calls[-1], "Done."])
    played = _backend.replay("retail", _tau2_task(), [*reads, _backend.Said("assistant", quiet),
                                                      _backend.Said("user", replies[0]), *writes], "Done.")
    assert reward == 0.0 and _backend.reward("retail", _tau2_task(), played.messages)[0] == 0.0


def test_a_question_the_scenario_does_not_answer_gets_the_unknown_reply(retail: Conversion) -> None:
    _, replies = _play(retail, ["What is your favourite colour?", "Goodbye."])
    assert replies == [UNKNOWN]


def test_the_task_carries_taus_scenario_and_reads_information_in_the_whole_conversation(retail: Conversion) -> None:
    task = retail.spec.task(TASK)
    assert task.scenario is not None and task.scenario.goal == task.turns[0].instruction
    assert task.scenario.on_confirm == "yes" and task.scenario.facts == {}
    infos = [c for c in task.turns[0].checks if isinstance(c, ReplyContainsCheck)]
    assert [c.any_of[0] for c in infos] == list(_tau2_task().evaluation_criteria.communicate_info)
    assert all(c.scope == "conversation" and c.match == "substring" for c in infos)


def test_natural_language_assertions_are_judged_checks_outside_the_score() -> None:
    conv = convert("airline", task_ids=["17"])
    (task,) = conv.spec.tasks
    judged = [c.assertion for c in task.turns[0].checks if isinstance(c, JudgedCheck)]
    assert judged == list(conv.tasks[task.id].nl_assertions) and len(judged) == 3
    assert conv.tasks[task.id].evaluable  # the judged checks are not in τ²'s reward basis: the task is scored


def test_a_judge_decides_taus_assertions_apart_from_the_score(tmp_path) -> None:
    """``--judge-backend``: τ²'s assertions are decided and reported apart; the pass rate is the same without it."""
    from eval.runner import EvalConfig, run_eval

    def judge(prompt: Any) -> str:  # the assertion is the question after the conversation
        asked = prompt[-1]["content"].rsplit("Is this true of the conversation:", 1)[-1]
        return "YES" if "refuse" in asked.lower() else "NO"

    config = EvalConfig(policy="scripted", model="reference", suites=["tau2:airline"], limit=2, executor="inprocess",
                        progress=False, n_boot=10, judge_backend="scripted",
                        judge_opts={"backend_options": {"completions": judge}})
    run = run_eval(config)
    assertions = [c for t in convert("airline", task_ids=[r["task_id"] for r in run.records]).spec.tasks
                  for c in t.turns[0].checks if isinstance(c, JudgedCheck)]
    block = run.summary["judged"]["suites"]["tau2:airline"]
    assert block["assertions"] == block["decided"] == len(assertions) > 0
    assert 0 < block["passed"] == sum("refuse" in c.assertion.lower() for c in assertions) < len(assertions)
    plain = run_eval(EvalConfig(**{**config.__dict__, "judge_backend": None, "judge_opts": {}}))
    assert plain.summary["judged"]["suites"]["tau2:airline"]["decided"] == 0
    assert [r["passed"] for r in plain.records] == [r["passed"] for r in run.records] == [True, True]
