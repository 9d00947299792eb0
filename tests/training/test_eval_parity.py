"""What a model sees in evaluation is exactly what it trained on: one episode played through the trainer's
rollout and through the evaluator's runner gives the same messages and the same token ids."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from eval.policies import ModelPolicy, Policy
from eval.runner import play_suite
from eval.suites import SpecSuite
from gym_envs.episode import Episode, TaskRef
from gym_envs.seeding import stable_seed
from tests.training.conftest import solver_plan
from training.config import RolloutConfig
from training.generation import ScriptedGenerator, TransformersGenerator
from training.rollout import rollout


class ScriptPolicy(Policy):
    """The evaluator's view of a scripted solver: the same script of the decoded token context."""

    label = "script"
    batched = True

    def __init__(self, tokenizer: Any, script: Callable[[str], str]):
        self.tokenizer, self.script = tokenizer, script

    def act_batch(self, episodes: Sequence[Episode]) -> list[Any]:
        return [self.script(self.tokenizer.decode(ep.context(), skip_special_tokens=False)) for ep in episodes]


def _both(spec: Any, train: Callable[[TaskRef], Episode], evaluate: Callable[[SpecSuite, TaskRef], Episode]
          ) -> tuple[Episode, Episode]:
    suite = SpecSuite("parity", [spec], executor="inprocess")
    try:
        task = suite.tasks()[0]
        evaluated = evaluate(suite, task)
    finally:
        suite.close()
    trained = train(TaskRef(spec, task.task_id, stable_seed(0, task.key, 0)))  # the evaluator's episode seed
    return trained, evaluated


def _same(trained: Episode, evaluated: Episode) -> None:
    assert trained.messages == evaluated.messages
    assert trained.prompt_ids == evaluated.prompt_ids and trained.prompt_ids
    assert trained.completion_ids == evaluated.completion_ids and trained.completion_ids
    assert trained.env_mask == evaluated.env_mask
    assert [s.text for s in trained.steps] == [s.text for s in evaluated.steps]
    assert trained.status == evaluated.status and trained.score["episode"] == evaluated.score["episode"]


def test_a_multi_turn_episode_renders_the_same_in_training_and_in_evaluation(spec: Any, chat: Any,
                                                                              tokenizer: Any) -> None:
    """Tool calls, tool results (with their call ids), the next instruction, the final reply: message for
    message and token for token."""
    cfg = RolloutConfig(max_turn_tokens=96, max_completion_tokens=1200, executor="inprocess")
    trained, evaluated = _both(
        spec,
        lambda task: rollout([task], ScriptedGenerator(tokenizer, solver_plan()), chat, cfg)[0],
        lambda suite, task: play_suite(suite, [(task, 0)], ScriptPolicy(tokenizer, solver_plan()), chat=chat)[0])
    _same(trained, evaluated)
    assert trained.passed and evaluated.passed and len(trained.steps) == 5
    tool = next(m for m in evaluated.messages if m["role"] == "tool")
    call = next(m for m in evaluated.messages if m.get("tool_calls"))
    assert tool["tool_call_id"] == call["tool_calls"][0]["id"]  # the eval transcript's OpenAI form, in training too


def test_a_model_samples_from_the_same_tokens_in_training_and_in_evaluation(tiny_dir: Any, spec: Any, chat: Any,
                                                                            tokenizer: Any) -> None:
    """The trainer's generator and the evaluator's ``transformers`` policy on one model, greedy: the evaluator
    drives the backend through the episode's tokens, so both sample the same action from the same context."""
    from transformers import AutoModelForCausalLM

    from envgen.backends.transformers_local import TransformersBackend
    from training.model import eos_ids_of

    model = AutoModelForCausalLM.from_pretrained(tiny_dir)
    cfg = RolloutConfig(max_turn_tokens=12, max_completion_tokens=200, executor="inprocess", temperature=0.0)
    generator = TransformersGenerator(model, eos_ids=eos_ids_of(model, tokenizer), pad_id=chat.pad_id)
    policy = ModelPolicy("transformers", "tiny", backend=TransformersBackend.from_objects(model, tokenizer),
                         max_new_tokens=cfg.max_turn_tokens, temperature=0.0)
    assert policy.chat is not None  # the token path
    trained, evaluated = _both(spec, lambda task: rollout([task], generator, chat, cfg)[0],
                               lambda suite, task: play_suite(suite, [(task, 0)], policy)[0])
    _same(trained, evaluated)
    assert evaluated.usage["completion_tokens"] > 0


def test_the_chat_path_is_there_when_asked_for(tiny_dir: Any, tokenizer: Any) -> None:
    from transformers import AutoModelForCausalLM

    from envgen.backends.transformers_local import TransformersBackend

    backend = TransformersBackend.from_objects(AutoModelForCausalLM.from_pretrained(tiny_dir), tokenizer)
    assert ModelPolicy("transformers", "tiny", backend=backend, tokens=False).chat is None
    with pytest.raises(ValueError, match="samples text only"):
        ModelPolicy("openai", "m", backend=object(), tokens=True)
