"""Training sees the conversations evaluation sees: GRPO rollouts of scenario tasks through the one engine, with the
scripted user by default and a model-backed one when ``rollout.user_backend`` is set."""

from __future__ import annotations

from typing import Any

import pytest

from gym_envs.examples import load_example
from gym_envs.parsing import format_tool_call
from gym_envs.users import STOP
from tests.training.test_rollout import segments
from training.config import RolloutConfig, config_from_dict
from training.errors import ConfigError
from training.generation import ScriptedGenerator, TransformersGenerator
from training.rollout import TaskRef, rollout, scenario_user

PLAN = ["I can help. What is the email address on your account?",
        format_tool_call("find_customer", {"email": "ana@example.com"}),
        "Thanks. What is the order number?",
        format_tool_call("get_order", {"code": "A-1042"}),
        "Order A-1042 is pending: I can cancel it and refund it. Shall I go ahead?",
        format_tool_call("cancel_order", {"code": "A-1042"}),
        "Done: A-1042 is cancelled and 37.50 goes back to your card."]


def _cancel_plan(context: str) -> str:
    step = context.count("<|im_start|>assistant") - 1
    return PLAN[step] if step < len(PLAN) else "Nothing more."


def _cfg(**kw: Any) -> RolloutConfig:
    return RolloutConfig(**({"max_steps": 12, "max_turn_tokens": 96, "max_completion_tokens": 2400,
                             "executor": "inprocess"} | kw))


def test_a_scenario_rollout_hears_the_scripted_user_and_masks_its_words(chat: Any, tokenizer: Any) -> None:
    spec = load_example("shop-support")
    episodes = rollout([TaskRef(spec, "cancel-with-confirmation", 1)] * 2, ScriptedGenerator(tokenizer, _cancel_plan),
                       chat, _cfg())
    for ep in episodes:
        assert ep.status == "terminated" and ep.passed and ep.reward == 1.0, ep.turns
        assert [s.user_reply for s in ep.steps if s.user_reply] == [
            "My email is ana@example.com.", "My order number is A-1042.", "Yes, please go ahead."]
        env_text = "".join(t for m, t in segments(tokenizer, ep.completion_ids, ep.env_mask) if m == 0)
        model_text = "".join(t for m, t in segments(tokenizer, ep.completion_ids, ep.env_mask) if m == 1)
        assert "My order number is A-1042." in env_text and "Yes, please go ahead." in env_text
        assert "My order number" not in model_text  # the user's words are never trained on
        assert [m["role"] for m in ep.messages[1:4]] == ["user", "assistant", "user"]


def test_a_model_backed_user_plays_the_scenario_in_training(chat: Any, tokenizer: Any) -> None:
    def user_model(prompt: Any) -> str:
        last = prompt[-1]["content"].lower()
        return ("ana@example.com" if "email" in last else "It's A-1042." if "order number" in last
                else "Sure, go ahead." if "go ahead" in last else STOP)

    cfg = _cfg(user_backend="scripted", user_options={"backend_options": {"completions": user_model}})
    ep, = rollout([TaskRef(load_example("shop-support"), "cancel-with-confirmation", 2)],
                  ScriptedGenerator(tokenizer, _cancel_plan), chat, cfg)
    assert ep.passed, ep.turns
    assert [s.user_reply for s in ep.steps if s.user_reply] == ["ana@example.com", "It's A-1042.", "Sure, go ahead."]


def test_the_tiny_model_plays_scenario_tasks_on_cpu(tiny_dir: Any, chat: Any) -> None:
    """Sampled text from a random model: whatever it says, the episodes of both scenario tasks end as data."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_dir)
    gen = TransformersGenerator(model, eos_ids=[chat.eos_id], pad_id=chat.pad_id)
    spec = load_example("shop-support")
    episodes = rollout([TaskRef(spec, t.id, 3) for t in spec.tasks], gen, chat, _cfg(max_turn_tokens=24,
                                                                                         max_completion_tokens=400))
    assert all(ep.done and not ep.failed for ep in episodes), [ep.error for ep in episodes]
    assert all(len(ep.completion_ids) == len(ep.env_mask) for ep in episodes)


def test_the_user_model_options_need_a_backend() -> None:
    with pytest.raises(ConfigError, match=r"rollout\.user_backend"):
        config_from_dict({"rollout": {"user_model": "some/model"}})


def test_a_transformers_model_plays_the_user_through_the_backend_registry(tiny_dir: Any, chat: Any,
                                                                          tokenizer: Any) -> None:
    """The model-backed user on a real ``transformers`` backend (the tiny random model, on CUDA when visible): it is
    asked once per plain message of the agent, in batches, and whatever it writes is the next user message or ends
    the turn; the episodes end as data."""
    cfg = _cfg(user_backend="transformers", user_model=str(tiny_dir),
               user_options={"max_new_tokens": 6, "seed": 3, "backend_options": {"dtype": "fp32"}})
    spec = load_example("shop-support")
    episodes = rollout([TaskRef(spec, "cancel-with-confirmation", 4), TaskRef(spec, "order-status", 5)],
                       ScriptedGenerator(tokenizer, _cancel_plan), chat, cfg)
    user = scenario_user(cfg)
    assert user is not None and user.label.startswith("transformers:")
    asked = user.generate.requests  # type: ignore[attr-defined]
    assert asked >= 2 and user.generate.failures == 0  # type: ignore[attr-defined]
    for ep in episodes:
        assert ep.done and not ep.failed, ep.error
        replies = [s.user_reply for s in ep.steps if s.user_reply]
        assert all(isinstance(r, str) and r.strip() and "###STOP###" not in r for r in replies)
        assert len(ep.completion_ids) == len(ep.env_mask)
