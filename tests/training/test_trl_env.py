"""The TRL ``environment_factory`` adapter: typed tool methods, episodes, rewards, and a GRPO step."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from envgen.gate import oracle_reply
from gym_envs.examples import load_all
from training.trl_env import (
    SpecEnvironment,
    environment_class,
    environment_dataset,
    environment_factories,
    envwright_reward,
)


def _single_turn(spec: Any) -> Any:
    return next(t for t in spec.tasks if len(t.turns) == 1)


def test_tool_schemas_survive_transformers_schema_reader() -> None:
    from transformers.utils import get_json_schema

    for spec in load_all():
        env = environment_class(spec)()
        for tool in spec.tools:
            fn = get_json_schema(getattr(env, tool.name))["function"]
            want = tool.parameters
            assert fn["name"] == tool.name
            assert set(fn["parameters"].get("properties", {})) == set(want.get("properties", {}))
            assert set(fn["parameters"].get("required", [])) == set(want.get("required", []))
            for name, prop in want.get("properties", {}).items():
                if "enum" in prop:
                    assert fn["parameters"]["properties"][name]["enum"] == prop["enum"]
        env._close()


@pytest.mark.parametrize("spec", load_all(), ids=lambda s: s.id)
def test_reference_calls_through_methods_earn_full_reward(spec: Any) -> None:
    task = next((t for t in spec.tasks if len(t.turns) == 1), None)
    if task is None:
        pytest.skip("no single-turn task")
    env = environment_class(spec)()
    env.reset(task_id=task.id, prompt=[])
    for call in task.turns[0].reference:
        obs = getattr(env, call.name)(**dict(call.arguments))
        assert "error" not in json.loads(obs) if obs.startswith("{") else True
    reply = oracle_reply(task.turns[0])
    assert envwright_reward([[{"role": "assistant", "content": reply}]], environments=[env]) == [1.0]
    assert env._finish("ignored")["passed"]  # scored once: later calls return the same result
    # the same task, untouched: the checks fail (unless the task's state checks hold without calls)
    env.reset(task_id=task.id)
    wrong = envwright_reward([[{"role": "assistant", "content": "I cannot help."}]], environments=[env])[0]
    assert wrong is not None and 0.0 <= wrong <= 1.0
    env._close()


def test_bad_arguments_are_an_observation_not_an_exception() -> None:
    spec = load_all()[0]
    env = environment_class(spec)()
    env.reset(task_id=_single_turn(spec).id)
    tool = next(t for t in spec.tools if t.parameters.get("required"))
    obs = json.loads(getattr(env, tool.name)())  # a required argument is missing
    assert obs["type"] == "InvalidArguments" and "missing" in obs["error"]
    first = tool.parameters["required"][0]
    obs = json.loads(getattr(env, tool.name)(**{first: {"not": "valid"}}))
    assert "error" in obs
    env._close()


def test_dataset_and_factories() -> None:
    specs = load_all()
    ds = environment_dataset(specs)
    assert set(ds.column_names) == {"prompt", "env_id", "task_id", "environment"}
    singles = sum(len(t.turns) == 1 for s in specs for t in s.tasks)
    assert len(ds) == singles and len(environment_dataset(specs, multi_turn=True)) == sum(len(s.tasks) for s in specs)
    row = ds[0]
    assert row["prompt"][0]["role"] == "system" and row["prompt"][1]["role"] == "user"
    factories = environment_factories(specs)
    assert isinstance(factories, dict) and set(factories) == {s.id for s in specs}
    one = environment_factories(specs[:1])
    assert isinstance(one, type) and issubclass(one, SpecEnvironment)
    assert "environment" not in environment_dataset(specs[:1]).column_names


def test_names_python_cannot_take_are_refused() -> None:
    spec = load_all()[0].model_copy(deep=True)
    spec.tools[0].name = "reset"  # assignment is not validated: the spec module's rule is met only here
    with pytest.raises(ValueError, match="'reset' is reserved by TRL's environment_factory"):
        environment_class(spec)
    spec = load_all()[0].model_copy(deep=True)
    tool = next(t for t in spec.tools if t.parameters.get("properties"))
    tool.parameters["properties"]["class"] = {"type": "string"}
    with pytest.raises(ValueError, match="'class' is a Python keyword"):
        environment_class(spec)


def test_a_bad_spec_is_skipped_with_its_reason_not_fatal_for_the_others() -> None:
    good = load_all()[:2]
    bad = load_all()[2].model_copy(deep=True)
    bad.tools[0].name = "reset"
    with pytest.warns(UserWarning, match=rf"skipping environment '{bad.id}'.*'reset' is reserved"):
        factories = environment_factories([good[0], bad, good[1]])
    assert isinstance(factories, dict) and set(factories) == {s.id for s in good}
    rows = environment_dataset([good[0], bad, good[1]])
    assert set(rows["env_id"]) == {s.id for s in good} and set(rows["environment"]) == {s.id for s in good}
    with pytest.warns(UserWarning), pytest.raises(ValueError, match="no environment"):
        environment_factories([bad])


def test_reward_needs_environments() -> None:
    with pytest.raises(ValueError, match="environment_factory"):
        envwright_reward(["x"])


def test_grpo_trainer_with_environment_factory(tiny_dir: Path, tmp_path: Path) -> None:
    """One GRPO step of TRL's own tool loop over an example environment, with the tiny model."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from training.chat import load_chat_template

    spec = next(s for s in load_all() if s.id == "library-loans")
    tok = AutoTokenizer.from_pretrained(tiny_dir)
    tok.chat_template = load_chat_template("trl:qwen3")
    model = AutoModelForCausalLM.from_pretrained(tiny_dir)
    args = GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=2, num_generations=2, max_steps=1,
                      max_completion_length=16, logging_steps=1, save_strategy="no", report_to=[],
                      use_cpu=True, bf16=False, learning_rate=1e-4)
    trainer = GRPOTrainer(model=model, reward_funcs=[envwright_reward], args=args, processing_class=tok,
                          train_dataset=environment_dataset([spec], tasks_per_env=2),
                          environment_factory=environment_factories([spec]))
    # TRL found one tool per spec tool, and the chat template renders their schemas into the prompt
    assert sorted(m.__name__ for m in trainer.tools) == sorted(t.name for t in spec.tools)
    rendered = tok.apply_chat_template(environment_dataset([spec])[0]["prompt"], tools=trainer.tools,
                                       tokenize=False, add_generation_prompt=True)
    assert all(f'"name": "{t.name}"' in rendered for t in spec.tools)
    out = trainer.train()
    assert out.global_step == 1
    logged = [r for r in trainer.state.log_history if "reward" in r]
    assert logged and 0.0 <= logged[0]["reward"] <= 1.0
    assert "rewards/envwright_reward/mean" in logged[0]


def _scripted_trainer(tiny_dir: Path, tmp_path: Path, spec: Any, task: Any, *, call_tools: bool) -> Any:
    """A GRPOTrainer over one task whose generation is scripted: the task's reference calls (when
    ``call_tools``), one per round of TRL's tool loop, then the reference reply."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from training.chat import load_chat_template

    tok = AutoTokenizer.from_pretrained(tiny_dir)
    tok.chat_template = load_chat_template("trl:qwen3")
    args = GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=2, num_generations=2, max_steps=1,
                      max_completion_length=512, logging_steps=1, save_strategy="no", report_to=[], use_cpu=True,
                      bf16=False)
    ds = environment_dataset([spec]).filter(lambda r: r["task_id"] == task.id)
    trainer = GRPOTrainer(model=AutoModelForCausalLM.from_pretrained(tiny_dir), reward_funcs=[envwright_reward],
                          args=args, processing_class=tok, train_dataset=ds,
                          environment_factory=environment_factories([spec]))
    refs = task.turns[0].reference if call_tools else []

    def scripted(prompt_ids: list[list[int]], *args: Any, **kwargs: Any) -> tuple[list[list[int]], None]:
        out = []
        for ids in prompt_ids:
            done = tok.decode(ids).count("<tool_response>")  # tool results so far in this rollout
            if done < len(refs):
                call = {"name": refs[done].name, "arguments": dict(refs[done].arguments)}
                text = f"<tool_call>\n{json.dumps(call)}\n</tool_call>"
            else:
                text = oracle_reply(task.turns[0])
            out.append(tok.encode(text + "<|im_end|>", add_special_tokens=False))
        return out, None

    trainer._generate_single_turn = scripted
    return trainer


@pytest.mark.parametrize("call_tools", [True, False])
def test_trl_tool_loop_calls_the_methods_and_state_decides(tiny_dir: Path, tmp_path: Path, call_tools: bool) -> None:
    spec = next(s for s in load_all() if s.id == "library-loans")
    task = next(t for t in spec.tasks if t.kind == "execute" and len(t.turns) == 1)
    trainer = _scripted_trainer(tiny_dir, tmp_path, spec, task, call_tools=call_tools)
    trainer.train()
    log = next(r for r in trainer.state.log_history if "reward" in r)
    if call_tools:  # TRL parsed the calls, ran our methods, and the state checks passed
        assert log["tools/call_frequency"] > 0 and log["tools/failure_frequency"] == 0
        assert log["rewards/envwright_reward/mean"] == 1.0
    else:  # the same reply without the calls: the state says the work was not done
        assert log["rewards/envwright_reward/mean"] < 1.0


def test_solver_config_selects_trls_tool_loop(tiny_dir: Path, tmp_path: Path) -> None:
    """``solver.loop: trl`` builds a GRPOTrainer over TRL's environment_factory loop from the typed config."""
    from training.config import config_from_dict
    from training.metrics import read_metrics
    from training.model import load_policy
    from training.solver import TaskPool, build_solver_trainer

    cfg = config_from_dict({
        "model": {"name_or_path": str(tiny_dir), "device": "cpu", "chat_template": "trl:qwen3"},
        "rollout": {"max_steps": 3, "max_turn_tokens": 16, "max_completion_tokens": 16, "executor": "inprocess",
                    "reward_mode": "checks"},
        "solver": {"num_generations": 2, "envs": ["examples:library-loans", "examples:bank-ledger"],
                   "holdout_tasks": 1, "loop": "trl"},
        "run": {"output_dir": str(tmp_path / "run"), "report_to": []},
        "grpo": {"per_device_train_batch_size": 2, "max_steps": 1, "save_strategy": "no", "logging_steps": 1}})
    model, tok = load_policy(cfg, wrap_lora=False)
    trainer = build_solver_trainer(cfg, model=model, tokenizer=tok)
    assert set(trainer.environment_factories) == {"library-loans", "bank-ledger"}
    assert trainer.args.max_tool_calling_iterations == 3
    rows = trainer.train_dataset
    held = {(t.spec.id, t.task_id) for t in TaskPool.from_config(cfg, holdout=True).tasks.values()}
    assert not held & set(zip(rows["env_id"], rows["task_id"], strict=True))  # held-out tasks stay out
    assert trainer.train().global_step == 1
    records = [r for r in read_metrics(cfg.run.output_dir) if "reward" in r]
    assert records and "rewards/envwright_reward/mean" in records[0]


def test_trl_loop_without_single_turn_tasks_says_what_to_change() -> None:
    from training.config import config_from_dict
    from training.errors import ConfigError
    from training.solver import build_solver_trainer

    spec = next(s for s in load_all() if s.id == "library-loans")
    assert len(spec.tasks[0].turns) > 1  # the first task has several turns: nothing for TRL's loop
    cfg = config_from_dict({"model": {"name_or_path": "unused", "device": "cpu"},
                            "solver": {"envs": ["examples:library-loans"], "tasks_per_env": 1, "loop": "trl"}})
    with pytest.raises(ConfigError, match=r"set solver\.loop=envwright"):
        build_solver_trainer(cfg, model=object(), tokenizer=object())
