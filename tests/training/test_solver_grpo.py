"""Two GRPO steps through TRL's GRPOTrainer with our rollout function (tiny model, scripted actions)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gym_envs.spec import save_spec
from tests.training.conftest import solver_plan
from training.config import config_from_dict
from training.errors import ConfigError
from training.generation import ScriptedGenerator
from training.solver import TaskPool, _expand, build_solver_trainer, load_specs, task_key


def test_prompts_arrive_repeated_or_are_expanded() -> None:
    assert _expand(["a", "a", "b", "b"], 2) == (["a", "a", "b", "b"], True)
    assert _expand(["a", "b"], 2) == (["a", "a", "b", "b"], False)


def test_load_specs_sources(tmp_path: Path, spec: Any) -> None:
    assert [s.id for s in load_specs(["examples:bank-ledger"])] == ["bank-ledger"]
    save_spec(spec, tmp_path / "envs" / "library-demo.json")
    assert [s.id for s in load_specs([str(tmp_path / "envs")])] == ["library-demo"]
    with pytest.raises(ConfigError, match="appear twice"):
        load_specs(["examples:bank-ledger", "examples:bank-ledger"])
    with pytest.raises(ConfigError, match="not 'examples'"):
        load_specs([str(tmp_path / "missing")])


def test_two_grpo_steps_through_trl(tmp_path: Path, tiny_dir: Path, tokenizer: Any, spec: Any) -> None:
    from transformers import AutoModelForCausalLM

    save_spec(spec, tmp_path / "envs" / "library-demo.json")
    cfg = config_from_dict({
        "model": {"name_or_path": str(tiny_dir), "device": "cpu"},
        "rollout": {"max_turn_tokens": 48, "max_completion_tokens": 512, "max_steps": 8, "executor": "inprocess"},
        "solver": {"num_generations": 2, "envs": [str(tmp_path / "envs")]},
        "run": {"output_dir": str(tmp_path / "run"), "report_to": []},
        "grpo": {"per_device_train_batch_size": 2, "max_steps": 2, "logging_steps": 1, "learning_rate": 1e-3,
                 "save_strategy": "no"}})
    model = AutoModelForCausalLM.from_pretrained(tiny_dir)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    seen: list[list[Any]] = []
    trainer = build_solver_trainer(cfg, model=model, tokenizer=tokenizer, on_episodes=seen.append,
                                   generator=ScriptedGenerator(tokenizer, solver_plan(wrong_every=2)))
    masks: list[Any] = []
    generate_and_score = trainer._generate_and_score_completions

    def capture(inputs: Any) -> Any:
        out = generate_and_score(inputs)
        masks.append((out["completion_mask"].clone(), out.get("tool_mask")))
        return out

    trainer._generate_and_score_completions = capture
    result = trainer.train()
    assert result.global_step == 2
    # TRL handed the rollout function each task repeated num_generations times
    assert trainer.envwright_rollout_func.calls == [{"prompts": 2, "repeated": True, "episodes": 2}] * 2
    # one episode of each group borrowed the wrong book: rewards 1 and 0, the env's state decided
    for eps in seen:
        assert sorted(e.reward for e in eps) == [0.0, 1.0]
        assert all(e.status == "terminated" and e.steps[1].results[0]["changes"] == 1 for e in eps)
    # environment tokens reached TRL's loss mask as zeros
    completion_mask, tool_mask = masks[0]
    assert tool_mask is not None
    ep = seen[0][0]
    n = len(ep.completion_ids)
    assert tool_mask[0, :n].tolist() == ep.env_mask and 0 in ep.env_mask
    assert (completion_mask * tool_mask).sum() < completion_mask.sum()
    changed = [n for n, p in model.named_parameters() if not (p.detach() == before[n]).all()]
    assert changed, "two GRPO steps with non-zero advantages must move the weights"
    records = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in records if "loss" in r]
    assert [r["step"] for r in steps] == [1, 2]
    assert steps[0]["rewards/env_reward/mean"] == 0.5 and steps[0]["env/episode_passed"] == 0.5
    assert "env/env_seconds" in steps[0] and steps[0]["env/status_terminated"] == 1.0


def test_task_pool(spec: Any) -> None:
    from training.rollout import TaskRef

    pool = TaskPool([TaskRef(spec, "t0")])
    assert pool.keys() == [task_key("library-demo", "t0")]
    with pytest.raises(KeyError, match="unknown task key"):
        pool.get("nope")


def test_grpo_step_with_the_trainers_own_generation(tmp_path: Path, tiny_dir: Path, tokenizer: Any,
                                                    spec: Any) -> None:
    """No scripted text: the rollout samples from the training model through TRL's unwrapped model."""
    from transformers import AutoModelForCausalLM

    save_spec(spec, tmp_path / "envs" / "library-demo.json")
    cfg = config_from_dict({
        "model": {"name_or_path": str(tiny_dir), "device": "cpu"},
        "generation": {"engine": "transformers", "batch_size": 2},
        "rollout": {"max_turn_tokens": 4, "max_completion_tokens": 12, "executor": "inprocess"},
        "solver": {"num_generations": 2, "envs": [str(tmp_path / "envs")]},
        "run": {"output_dir": str(tmp_path / "run"), "report_to": []},
        "grpo": {"per_device_train_batch_size": 2, "max_steps": 1, "save_strategy": "no"}})
    seen: list[list[Any]] = []
    model = AutoModelForCausalLM.from_pretrained(tiny_dir)
    trainer = build_solver_trainer(cfg, model=model, tokenizer=tokenizer, on_episodes=seen.append)
    assert trainer.train().global_step == 1
    assert model.training  # generation switched to eval mode and back
    eps = seen[0]
    assert len(eps) == 2 and all(e.model_tokens > 0 and e.gen_seconds > 0 for e in eps)
    assert all(len(e.logprobs) == len(e.completion_ids) for e in eps)
