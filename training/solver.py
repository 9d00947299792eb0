"""``envwright train solver``: GRPO on environment tasks through TRL's ``GRPOTrainer`` and a rollout function.

TRL owns the training loop (batching, the GRPO loss, the optimizer, logging,
checkpoints, accelerate/DeepSpeed, vLLM weight sync); we own the rollout:

* the dataset is one row per task, its ``prompt`` a task key
  (``envwright-task:ENV_ID/TASK_ID``) that :class:`TaskPool` resolves to the spec
  and task -- the rollout builds the real chat (system prompt with the tools,
  first instruction) itself, at the tokenizer boundary, as TRL asks;
* :func:`make_rollout_func` returns TRL's ``rollout_func(prompts, trainer)``.
  TRL's ``RepeatSampler`` hands it every prompt already repeated
  ``num_generations`` times (consecutive copies; checked on TRL 1.16, whose
  docstring says otherwise), so it plays one episode per prompt; if the
  prompts ever arrive unrepeated it plays G episodes per prompt. All episodes
  of the call advance together (:func:`training.rollout.rollout`). It returns
  ``prompt_ids``, ``completion_ids``, ``logprobs``, ``env_mask`` (environment
  tokens out of the loss) and per-episode fields for the reward functions;
* the reward function is :func:`training.rewards.env_reward` (the env's checks);
  it also logs rollout statistics (``env/*``) through TRL's ``log_metric``.

Generation uses the trainer's vLLM engine when ``generation.engine`` is
``vllm`` (TRL syncs its weights before the call; :func:`require_trl_synced` fails loudly
if it did not, and with ``generation.vllm_sleep`` the engine sleeps from the end of the
rollout to the next) and otherwise Hugging Face ``generate`` on the unwrapped training
model (DeepSpeed ZeRO-3 gathers it). TRL reports the sampler-trainer log-probability
gap every step (``sampling/sampling_logp_difference/{mean,max}``); :func:`gap_callback`
fails the run when its mean is above ``generation.max_logprob_gap``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from gym_envs.messages import ChatFormat
from gym_envs.seeding import stable_seed
from gym_envs.spec import EnvSpec, load_spec
from training.config import TrainConfig, config_to_dict
from training.errors import ConfigError
from training.generation import Generator, TransformersGenerator
from training.parallel import check_world
from training.rollout import Episode, TaskRef, rollout, step_budget, tasks_of
from training.trl_config import generation_autocast, to_grpo_config

__all__ = ["KEY_PREFIX", "TaskPool", "build_solver_trainer", "close_process_group", "gap_callback",
           "load_sourced_specs", "load_specs", "make_rollout_func", "task_key", "train_solver"]

KEY_PREFIX = "envwright-task:"


def task_key(env_id: str, task_id: str) -> str:
    """The dataset prompt that stands for one task."""
    return f"{KEY_PREFIX}{env_id}/{task_id}"


def load_specs(sources: Sequence[str]) -> list[EnvSpec]:
    """Specs from ``examples``, ``examples:NAME``, a library folder, a spec file or a folder of specs."""
    return [spec for _, spec in load_sourced_specs(sources)]


def load_sourced_specs(sources: Sequence[str]) -> list[tuple[str, EnvSpec]]:
    """:func:`load_specs` with the source each spec came from, as ``(source, spec)`` pairs in order."""
    from gym_envs.examples import load_all, load_example

    out: list[tuple[str, EnvSpec]] = []
    for src in sources:
        if src == "examples":
            found = load_all()
        elif src.startswith("examples:"):
            found = [load_example(src.split(":", 1)[1])]
        else:
            p = Path(src)
            if p.is_file():
                found = [load_spec(p)]
            elif (p / "specs").is_dir():
                found = [load_spec(f) for f in sorted((p / "specs").glob("*.json"))]
            elif p.is_dir():
                found = [load_spec(f) for f in sorted(p.glob("*.json"))]
            else:
                raise ConfigError(f"solver.envs: {src!r} is not 'examples', 'examples:NAME', a library folder, "
                                  "a spec file or a folder of spec files")
        out += [(src, spec) for spec in found]
    ids = [s.id for _, s in out]
    if len(set(ids)) != len(ids):
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        raise ConfigError(f"solver.envs: environment ids {dupes} appear twice; list each source once")
    if not out:
        raise ConfigError(f"solver.envs {list(sources)} holds no environment specs")
    return out


class TaskPool:
    """Task keys and the tasks they stand for."""

    def __init__(self, tasks: Sequence[TaskRef]):
        self.tasks = {task_key(t.env_id, t.task_id): t for t in tasks}
        if not self.tasks:
            raise ConfigError("no tasks to train on (check solver.envs, solver.tasks_per_env, solver.holdout_tasks)")

    @classmethod
    def from_config(cls, cfg: TrainConfig, *, holdout: bool = False) -> TaskPool:
        """Training tasks, or with ``holdout`` the held-out ones: the last ``holdout_tasks`` of every
        training environment plus every task of the last ``holdout_envs`` environments."""
        specs = load_specs(cfg.solver.envs)
        k = cfg.solver.holdout_envs
        if k >= len(specs):
            raise ConfigError(f"solver.holdout_envs is {k} but solver.envs holds {len(specs)} environments: "
                              "hold out fewer, so that some remain to train on")
        train, held_envs = (specs[:-k], specs[-k:]) if k else (specs, [])
        if holdout:  # the split itself
            n = cfg.solver.holdout_tasks
            tasks = [TaskRef(s, t.id) for s in train for t in s.tasks[len(s.tasks) - n:]] if n else []
            return cls(tasks + [TaskRef(s, t.id) for s in held_envs for t in s.tasks])
        return cls(tasks_of(train, per_env=cfg.solver.tasks_per_env, skip_last=cfg.solver.holdout_tasks))

    def keys(self) -> list[str]:
        return list(self.tasks)

    def get(self, key: str) -> TaskRef:
        try:
            return self.tasks[key]
        except KeyError:
            raise KeyError(f"unknown task key {key!r}: prompts of the solver dataset must be task keys "
                           f"({KEY_PREFIX}ENV/TASK)") from None

    def dataset(self) -> Any:
        from datasets import Dataset

        return Dataset.from_dict({"prompt": self.keys()})

    def __len__(self) -> int:
        return len(self.tasks)


def trainer_generator(trainer: Any, cfg: TrainConfig, eos_ids: list[int], pad_id: int) -> Generator:
    """The trainer's vLLM engine, or HF generate on the unwrapped training model."""
    if getattr(trainer, "use_vllm", False):
        from training.vllm_generator import VLLMGenerator

        return VLLMGenerator(eos_ids=eos_ids, engine=trainer.vllm_generation)
    from trl.models.utils import unwrap_model_for_generation

    def unwrap() -> Any:
        return unwrap_model_for_generation(trainer.model_wrapped, trainer.accelerator,
                                           gather_deepspeed3_params=trainer.args.ds3_gather_for_generation,
                                           gradient_checkpointing_kwargs=trainer.args.gradient_checkpointing_kwargs)

    g = cfg.generation
    return TransformersGenerator(trainer.model, eos_ids=eos_ids, pad_id=pad_id, batch_size=g.batch_size,
                                 sort_by_length=g.sort_by_length, static_cache=g.static_cache, compile=g.compile,
                                 unwrap=unwrap, autocast_bf16=generation_autocast(cfg))


def process_sync(accelerator: Any) -> Callable[[bool], bool] | None:
    """``any_active_here -> any_active_anywhere`` across processes (None for one process)."""
    if getattr(accelerator, "num_processes", 1) <= 1:
        return None
    import torch

    def sync(active: bool) -> bool:
        flag = torch.tensor([int(active)], device=accelerator.device)
        return bool(accelerator.gather(flag).sum().item() > 0)

    return sync


def _expand(prompts: list[Any], g: int, *, rank: int = 0, world: int = 1) -> tuple[list[str], bool]:
    """The task keys of a rollout call, and whether they arrived repeated (G consecutive copies a task).

    TRL cuts the generation batch into one contiguous slice a process, so with several processes a group of G
    copies may be split between two of them: this process's slice starts ``rank * len(prompts) % g`` copies into
    a group, and (with several processes) may end inside one."""
    keys = [str(p) for p in prompts]
    offset = rank * len(keys) % g
    repeated = ((world > 1 or len(keys) % g == 0)
                and all(keys[i] == keys[max(0, i - (i + offset) % g)] for i in range(len(keys))))
    return (keys, True) if repeated else ([k for k in keys for _ in range(g)], False)


def rollout_fields(episodes: Sequence[Episode], eos_id: int) -> dict[str, list[Any]]:
    """What the rollout function returns to TRL for a list of episodes."""
    out: dict[str, list[Any]] = {k: [] for k in (
        "prompt_ids", "completion_ids", "logprobs", "env_mask", "env_reward", "episode_status", "episode_passed",
        "env_seconds", "gen_seconds", "tool_calls", "tool_errors", "steps")}
    for ep in episodes:
        comp, mask, lps = ep.completion_ids, ep.env_mask, ep.logprobs
        if not comp:  # TRL needs at least one completion token; an untrained EOS stands in
            comp, mask, lps = [eos_id], [0], [0.0]
        out["prompt_ids"].append(list(ep.prompt_ids) or [eos_id])  # an episode that never opened has no prompt
        out["completion_ids"].append(list(comp))
        out["env_mask"].append(list(mask))
        out["logprobs"].append(list(lps))
        out["env_reward"].append(ep.reward)
        out["episode_status"].append(ep.status)
        out["episode_passed"].append(float(ep.passed))
        out["env_seconds"].append(ep.env_seconds)
        out["gen_seconds"].append(ep.gen_seconds)
        out["tool_calls"].append(ep.tool_calls)
        out["tool_errors"].append(ep.tool_errors)
        out["steps"].append(len(ep.steps))
    return out


def make_rollout_func(pool: TaskPool, chat: ChatFormat, cfg: TrainConfig, *,
                      generator: Generator | Callable[[Any], Generator] | None = None,
                      on_episodes: Callable[[list[Episode]], None] | None = None) -> Callable[[list[Any], Any], dict]:
    """TRL's ``rollout_func`` over the pool's tasks (see the module docstring).

    ``generator`` replaces the trainer's generation (a :class:`Generator`, or a function of the
    trainer returning one); ``on_episodes`` sees every call's episodes (tests, logging).
    The function's ``calls`` attribute records ``{"prompts", "repeated", "episodes"}`` per call.
    """
    from training.model import eos_ids_of

    calls: list[dict[str, Any]] = []

    def rollout_func(prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
        training = trainer.model.training
        g = trainer.num_generations if training else trainer.num_generations_eval
        step = trainer.state.global_step
        rank = trainer.accelerator.process_index
        keys, repeated = _expand(list(prompts), g, rank=rank, world=getattr(trainer.accelerator, "num_processes", 1))
        tasks = [TaskRef(pool.get(k).spec, pool.get(k).task_id, stable_seed(cfg.run.seed, k, step)) for k in keys]
        if generator is None:
            gen = trainer_generator(trainer, cfg, eos_ids_of(trainer.model, chat.tokenizer), chat.pad_id)
        else:
            gen = generator(trainer) if callable(generator) and not isinstance(generator, Generator) else generator
        require_trl_synced(trainer)
        try:
            episodes = rollout(tasks, gen, chat, cfg.rollout, seed=stable_seed(cfg.run.seed, step, rank, training),
                               sync=process_sync(trainer.accelerator))
        finally:
            gen.sleep()  # vLLM's sleep mode: the engine's memory is the trainer's until the next rollout
        calls.append({"prompts": len(prompts), "repeated": repeated, "episodes": len(episodes)})
        if on_episodes is not None:
            on_episodes(episodes)
        return rollout_fields(episodes, chat.eos_id)

    rollout_func.calls = calls  # type: ignore[attr-defined]
    return rollout_func


def require_trl_synced(trainer: Any) -> None:
    """Raise :class:`~training.errors.StaleWeightsError` when TRL's vLLM engine was not synced since the
    trainer's last optimizer step (TRL syncs it before it calls the rollout function; its ``_last_loaded_step``
    records the step of the last sync)."""
    if not getattr(trainer, "use_vllm", False):
        return
    loaded, step = getattr(trainer, "_last_loaded_step", None), trainer.state.global_step
    if loaded is not None and loaded != step:
        from training.errors import StaleWeightsError

        raise StaleWeightsError(f"TRL's vLLM engine holds the weights of step {loaded} but the trainer is at step "
                                f"{step}: its rollouts would come from an older policy")


#: TRL's per-step sampler-trainer gap (``|log p_vllm - log p_trainer|`` over completion tokens), logged when
#: ``use_vllm`` and ``vllm_importance_sampling_correction`` (TRL's default) are on.
TRL_GAP_KEYS = ("sampling/sampling_logp_difference/mean", "sampling/sampling_logp_difference/max")


def gap_callback(limit: float | None) -> Any:
    """A ``TrainerCallback`` that reads TRL's logged sampler-trainer gap (:data:`TRL_GAP_KEYS`) every step and
    raises :class:`~training.errors.StaleWeightsError` when its mean is above ``limit``
    (``generation.max_logprob_gap``; :func:`training.weight_sync.check_gap`)."""
    from transformers import TrainerCallback

    from training.weight_sync import SamplerGap, check_gap

    class GapCheck(TrainerCallback):  # type: ignore[misc]
        def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None,
                   **kwargs: Any) -> None:
            mean = (logs or {}).get(TRL_GAP_KEYS[0])
            if mean is None:
                return
            gap = SamplerGap(float(mean), float((logs or {}).get(TRL_GAP_KEYS[1], mean)), 1)
            check_gap(gap, limit, engine="vllm", syncs=int(state.global_step))

    return GapCheck()


def build_solver_trainer(cfg: TrainConfig, *, model: Any = None, tokenizer: Any = None,
                         run_dir: str | Path | None = None, generator: Any = None,
                         on_episodes: Callable[[list[Episode]], None] | None = None,
                         callbacks: Sequence[Any] = ()) -> Any:
    """A ``GRPOTrainer`` over the configured environments with our rollout function."""
    from trl import GRPOTrainer

    from training.metrics import metrics_callback
    from training.model import load_policy, peft_config
    from training.rewards import env_reward

    check_world(cfg, "solver")
    run = Path(run_dir or cfg.run.output_dir)
    if cfg.solver.loop == "trl":
        return _build_trl_loop_trainer(cfg, run, model=model, tokenizer=tokenizer, callbacks=callbacks)
    args = to_grpo_config(cfg, run / "trainer")
    if model is None or tokenizer is None:
        model, tokenizer = load_policy(cfg, wrap_lora=False)
    chat = ChatFormat(tokenizer, pass_tools=cfg.rollout.pass_tools)
    pool = TaskPool.from_config(cfg)
    rollout_func = make_rollout_func(pool, chat, cfg, generator=generator, on_episodes=on_episodes)
    run.mkdir(parents=True, exist_ok=True)
    (run / "config.json").write_text(json.dumps(config_to_dict(cfg), indent=1, default=str))
    reward_funcs: list[Any] = [env_reward]
    trainer = GRPOTrainer(model=model, reward_funcs=reward_funcs, args=args, train_dataset=pool.dataset(),
                          processing_class=tokenizer, rollout_func=rollout_func, peft_config=peft_config(cfg),
                          callbacks=[metrics_callback(run / "metrics.jsonl"),
                                     gap_callback(cfg.generation.max_logprob_gap), *callbacks])
    trainer.envwright_rollout_func = rollout_func  # type: ignore[attr-defined]
    return trainer


def _build_trl_loop_trainer(cfg: TrainConfig, run: Path, *, model: Any, tokenizer: Any,
                            callbacks: Sequence[Any]) -> Any:
    """``solver.loop: trl``: GRPOTrainer with TRL's ``environment_factory`` tool loop over the pool's
    tasks, every turn of each (see :mod:`training.trl_env`)."""
    from trl import GRPOTrainer

    from training.metrics import metrics_callback
    from training.model import load_policy, peft_config
    from training.trl_env import environment_dataset, environment_factories, envwright_reward

    pool = TaskPool.from_config(cfg)
    refs = list(pool.tasks.values())
    specs = [s for s in {t.env_id: t.spec for t in refs}.values() if s is not None]
    try:
        dataset = environment_dataset(specs, tasks=[(t.env_id, t.task_id) for t in refs])
    except ValueError as e:
        raise ConfigError(f"solver.loop is trl, but TRL's loop can serve none of the {len(refs)} training tasks "
                          f"({e}): fix those specs, add others to solver.envs, or set solver.loop=envwright") from None
    # TRL caps the tool rounds of every episode alike: the largest task's step budget, so none is cut short
    rounds = max((step_budget(t, cfg.rollout.max_steps) for t in refs), default=cfg.rollout.max_steps)
    args = to_grpo_config(cfg, run / "trainer", max_tool_calling_iterations=rounds)
    if model is None or tokenizer is None:
        model, tokenizer = load_policy(cfg, wrap_lora=False)
    run.mkdir(parents=True, exist_ok=True)
    (run / "config.json").write_text(json.dumps(config_to_dict(cfg), indent=1, default=str))
    return GRPOTrainer(model=model, reward_funcs=[envwright_reward], args=args, train_dataset=dataset,
                       processing_class=tokenizer, peft_config=peft_config(cfg),
                       environment_factory=environment_factories(specs, reward_mode=cfg.rollout.reward_mode,
                                                                  executor=cfg.rollout.executor),
                       callbacks=[metrics_callback(run / "metrics.jsonl"),
                                  gap_callback(cfg.generation.max_logprob_gap), *callbacks])


def train_solver(cfg: TrainConfig, **kwargs: Any) -> dict[str, Any]:
    """Build the trainer and train; returns TRL's training output as a dict."""
    trainer = build_solver_trainer(cfg, **kwargs)
    resume: Any = cfg.run.resume
    if resume == "latest":
        resume = True
    out = trainer.train(resume_from_checkpoint=resume)
    trainer.save_model(str(Path(cfg.run.output_dir) / "final"))
    return {"global_step": out.global_step, "training_loss": out.training_loss, **(out.metrics or {})}


def close_process_group() -> None:
    """End the ``torch.distributed`` group of a multi-process launch (all ranks wait for each other);
    for the end of a program (``envwright train solver`` calls it), not for a library caller that
    goes on using the group."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
