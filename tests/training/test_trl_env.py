"""The TRL ``environment_factory`` adapter: typed tool methods, episodes, rewards, and a GRPO step."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from envgen.gate import oracle_reply
from gym_envs.examples import load_all
from gym_envs.spec import Say
from gym_envs.turns import END_TURN_TOOL
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
    """Every task, each later instruction coming back from the turn-ending tool, earns 1.0; scored once. A scenario
    task's messages to the user go through the same tool, and the simulated user's answer comes back from it."""
    env = environment_class(spec)()
    for task in spec.tasks:
        env.reset(task_id=task.id, prompt=[])
        for i, turn in enumerate(task.turns):
            for item in turn.reference:
                if isinstance(item, Say):
                    assert "user_reply" in json.loads(env.envwright_end_turn(item.say)), item
                    continue
                obs = getattr(env, item.name)(**dict(item.arguments))
                assert "error" not in json.loads(obs) if obs.startswith("{") else True
            answer = json.loads(env.envwright_end_turn(oracle_reply(turn)))
            if i + 1 < len(task.turns):
                assert answer == {"next_request": task.turns[i + 1].instruction}
            else:
                assert answer["conversation_over"] is True
        assert envwright_reward([[{"role": "assistant", "content": "Bye."}]], environments=[env]) == [1.0], task.id
        assert env._finish("ignored")["passed"]  # scored once: later calls return the same result
    # the first task, untouched: the checks fail (unless the task's state checks hold without calls)
    env.reset(task_id=spec.tasks[0].id)
    wrong = envwright_reward([[{"role": "assistant", "content": "I cannot help."}]], environments=[env])[0]
    assert wrong is not None and 0.0 <= wrong < 1.0
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
    assert len(ds) == sum(len(s.tasks) for s in specs)  # every task, whatever its number of turns
    assert any(len(t.turns) > 1 for s in specs for t in s.tasks)
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


def test_a_task_that_withholds_a_tool_is_left_out_saying_why() -> None:
    from gym_envs.spec import parse_spec
    from tests.fixtures.withheld import withheld_spec

    spec = parse_spec(withheld_spec())
    with pytest.warns(UserWarning, match=r"1 task\(s\) left out that withhold a tool until a later turn.*"
                                         r"library-loans: renew-later"):
        rows = environment_dataset([spec])
    assert "renew-later" not in rows["task_id"] and len(rows) == len(spec.tasks) - 1
    with pytest.warns(UserWarning), pytest.raises(ValueError, match="no tasks for the dataset"):
        environment_dataset([spec], tasks=[(spec.id, "renew-later")])


def test_reward_needs_environments() -> None:
    with pytest.raises(ValueError, match="environment_factory"):
        envwright_reward(["x"])


def test_grpo_trainer_with_environment_factory(tiny_dir: Path, tmp_path: Path) -> None:
    """One GRPO step of TRL's own tool loop over an example environment, with the tiny model."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from training.model import load_chat_template

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
    # TRL found one tool per spec tool and the turn-ending tool; the chat template renders their schemas
    names = [t.name for t in spec.tools] + [END_TURN_TOOL]
    assert sorted(m.__name__ for m in trainer.tools) == sorted(names)
    rendered = tok.apply_chat_template(environment_dataset([spec])[0]["prompt"], tools=trainer.tools,
                                       tokenize=False, add_generation_prompt=True)
    assert all(f'"name": "{n}"' in rendered for n in names)
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

    from training.model import load_chat_template

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


def test_a_multi_turn_task_played_through_trls_loop_earns_toolenvs_reward(tiny_dir: Path, tmp_path: Path,
                                                                          spec: Any) -> None:
    """TRL's own loop, scripted generation: turn 1's reference calls and its reply through the turn-ending
    tool, whose result is turn 2's instruction; turn 2 answered wrongly, then a closing message. The reward
    is what ToolEnv pays for the same calls and replies, and neither 0 nor 1."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from gym_envs.env import ToolEnv
    from training.model import load_chat_template

    task = spec.tasks[0]
    assert len(task.turns) == 2
    replies = ["Done: Dune is lent to member 7.", "I could not count them."]  # the second fails its reply check
    plan: list[dict[str, Any] | str] = [{"name": c.name, "arguments": dict(c.arguments)}
                                        for c in task.turns[0].reference]
    plan += [{"name": END_TURN_TOOL, "arguments": {"reply": r}} for r in replies]
    plan.append("Goodbye.")
    tok = AutoTokenizer.from_pretrained(tiny_dir)
    tok.chat_template = load_chat_template("trl:qwen3")
    seen: dict[int, str] = {}  # the rollout's text when the script was asked for action k of the plan

    def scripted(prompt_ids: list[list[int]], *args: Any, **kwargs: Any) -> tuple[list[list[int]], None]:
        out = []
        for ids in prompt_ids:
            text = tok.decode(ids)
            k = text.count("<tool_response>")  # one call per round: one result per action so far
            seen[k] = text
            action = plan[k]
            body = action if isinstance(action, str) else f"<tool_call>\n{json.dumps(action)}\n</tool_call>"
            out.append(tok.encode(body + "<|im_end|>", add_special_tokens=False))
        return out, None

    args = GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=2, num_generations=2, max_steps=1,
                      max_completion_length=1024, logging_steps=1, save_strategy="no", report_to=[], use_cpu=True,
                      bf16=False, max_tool_calling_iterations=len(plan))
    ds = environment_dataset([spec]).map(lambda r: {"episode_seed": 11})
    trainer = GRPOTrainer(model=AutoModelForCausalLM.from_pretrained(tiny_dir), reward_funcs=[envwright_reward],
                          args=args, processing_class=tok, train_dataset=ds,
                          environment_factory=environment_factories([spec], reward_mode="checks"))
    trainer._generate_single_turn = scripted
    trainer.train()

    # the turn-ending tool's result put turn 2's instruction before the model, and only after turn 1 ended
    n = len(task.turns[0].reference)
    before, after = seen[n], seen[n + 1]  # asked for turn 1's reply, then for turn 2's first action
    assert task.turns[1].instruction not in before
    assert json.dumps({"next_request": task.turns[1].instruction}) in after
    log = next(r for r in trainer.state.log_history if "reward" in r)
    assert log["tools/call_frequency"] > 0 and log["tools/failure_frequency"] == 0
    results = [e.result for e in trainer.environments]
    assert [len(r["turns"]) for r in results] == [2, 2] and [t["reply"] for t in results[0]["turns"]] == replies

    env = ToolEnv(spec, reward_mode="checks", executor="inprocess")  # the same trajectory, straight on ToolEnv
    env.reset(options={"task": task.id, "episode_seed": 11})
    total = sum(env.step({"name": c.name, "arguments": dict(c.arguments)})[1] for c in task.turns[0].reference)
    total += sum(env.reply(r)[1] for r in replies)
    assert env.done and 0.0 < total < 1.0
    assert [r["reward"] for r in results] == [pytest.approx(total)] * 2
    assert log["rewards/envwright_reward/mean"] == pytest.approx(total)
    env.close()


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
    # TRL caps every episode's rounds alike: the largest step budget of the pool's tasks (no task is cut short)
    from training.rollout import step_budget

    assert trainer.args.max_tool_calling_iterations == max(step_budget(t, 3)
                                                           for t in TaskPool.from_config(cfg).tasks.values())
    rows = trainer.train_dataset
    held = {(t.spec.id, t.task_id) for t in TaskPool.from_config(cfg, holdout=True).tasks.values()}
    assert not held & set(zip(rows["env_id"], rows["task_id"], strict=True))  # held-out tasks stay out
    assert trainer.train().global_step == 1
    records = [r for r in read_metrics(cfg.run.output_dir) if "reward" in r]
    assert records and "rewards/envwright_reward/mean" in records[0]


def test_trl_loop_keeps_every_task_and_gives_its_rounds_the_longest_references_budget() -> None:
    """``solver.loop: trl`` trains on every task, those whose reference needs more tool rounds than
    ``rollout.max_steps`` too: TRL's round cap is raised to the largest task's step budget."""
    import warnings

    from gym_envs.spec import STEP_MARGIN
    from training.config import config_from_dict
    from training.solver import TaskPool

    spec = next(s for s in load_all() if s.id == "library-loans")
    need = {t.id: t.reference_actions() for t in spec.tasks}
    budget = sorted(need.values())[len(need) // 2]
    cfg = config_from_dict({"model": {"name_or_path": "unused", "device": "cpu"}, "rollout": {"max_steps": budget},
                            "solver": {"envs": ["examples:library-loans"], "loop": "trl"}})
    assert any(n > budget for n in need.values())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pool = TaskPool.from_config(cfg)
    assert {r.task_id for r in pool.tasks.values()} == set(need)
    from training.rollout import step_budgets

    assert step_budgets(list(pool.tasks.values()), budget)["largest"] == max(need.values()) + STEP_MARGIN


def test_tasks_of_a_spec_trl_cannot_carry_are_counted_and_explained() -> None:
    good = load_all()[:2]
    bad = load_all()[2].model_copy(deep=True)
    bad.tools[0].name = "reset"
    total = sum(len(s.tasks) for s in [*good, bad])
    with pytest.warns(UserWarning, match=rf"{len(bad.tasks)} of {total} tasks left out.*{bad.id} "
                                         rf"\({len(bad.tasks)} tasks\): tool name 'reset' is reserved"):
        rows = environment_dataset([good[0], bad, good[1]])
    assert len(rows) == total - len(bad.tasks)
    with pytest.warns(UserWarning, match="1 of 2 tasks left out"):
        environment_dataset([*good, bad], tasks=[(good[0].id, good[0].tasks[0].id), (bad.id, bad.tasks[0].id)])
    with pytest.warns(UserWarning), pytest.raises(ValueError, match=r"no tasks for the dataset.*'reset' is reserved"):
        environment_dataset([bad])
