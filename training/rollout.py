"""Solver rollouts: the trainer's episodes, played through the one episode engine.

:func:`rollout` plays a list of tasks together through :func:`gym_envs.engine.play` (the lifecycle and the
messages and tokens a model sees are :mod:`gym_envs.episode` and :mod:`gym_envs.messages`, the same code
evaluation plays through). The policy is :class:`GeneratorPolicy`: each round of the engine makes **one**
batched ``generate`` call over every unfinished episode's token context; the environments step together
(one round trip per worker process for all their tool calls; resets likewise):

1. the prompt is the env's system prompt (which lists the tools; ``tools=`` also goes to the template with
   ``rollout.pass_tools``) and the first instruction;
2. an action with tool calls gets the results back as ``tool`` messages (one per call, parse errors
   included); a plain message ends the turn and the next instruction comes as a ``user`` message, unless the task
   has a scenario and its simulated user answers it (the answer comes as a ``user`` message and the turn goes
   on): the scripted user by default, a model's with ``rollout.user_backend`` (:func:`scenario_user`, built once
   per configuration and asked for every episode of a round at once);
3. those environment tokens are appended with ``env_mask`` 0 (left out of the loss); the model's own tokens,
   end-of-turn token included, have ``env_mask`` 1;
4. an episode ends when the env terminates it (last turn scored) or truncates it (``rollout.max_steps``
   actions, raised for a task whose reference needs more: :func:`step_budget`), when its tokens run out
   (``rollout.max_completion_tokens``, or one action reaching ``rollout.max_turn_tokens`` without ending), or when
   generation or the env fails -- a failure is data: the episode keeps its tokens, gets reward 0 and records
   ``status`` and ``error``.

The reward is :func:`training.rewards.solver_reward` of the env's score; an episode cut short by the token
budget is scored as it stands (unplayed turns fail). Every episode records its transcript, per-step actions
and parsed calls, tool errors and the time spent generating and in the environment.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from gym_envs.engine import play
from gym_envs.env import ToolEnv
from gym_envs.episode import Action, Episode, Step, TaskRef
from gym_envs.episode_env import ToolEnvAdapter
from gym_envs.messages import ChatFormat
from gym_envs.sandbox import Executor, default_executor
from gym_envs.seeding import stable_seed
from gym_envs.spec import EnvSpec
from gym_envs.users import UserSimulator
from training.config import RolloutConfig
from training.generation import Generator
from training.rewards import solver_reward

__all__ = ["Episode", "GeneratorPolicy", "Step", "TaskRef", "batch_stats", "rollout", "scenario_user", "solver_episode",
           "step_budget", "step_budgets", "tasks_of"]


def step_budget(task: TaskRef, max_steps: int) -> int:
    """The actions an episode of ``task`` may take: ``rollout.max_steps``, raised to what the task's reference takes
    and a margin where it needs more (:meth:`gym_envs.spec.Task.step_budget`, which evaluation reads too), so a task
    with a long reference (a world's read of a listing's later pages) is never truncated before it can pass."""
    return _spec(task).task(task.task_id).step_budget(max_steps)


def step_budgets(tasks: Sequence[TaskRef], max_steps: int) -> dict[str, Any]:
    """How the tasks' step limits (:func:`step_budget`) stand against ``rollout.max_steps``, for a run's report:
    ``configured``, ``raised`` (how many tasks get more), ``largest`` (the most any gets) and ``tasks``."""
    limits = [step_budget(t, max_steps) for t in tasks]
    return {"configured": max_steps, "tasks": len(limits), "raised": sum(n > max_steps for n in limits),
            "largest": max(limits, default=max_steps)}


def _spec(task: TaskRef) -> EnvSpec:
    if task.spec is None:
        raise ValueError(f"the trainer plays tasks of environment specs; {task.key} has none")
    return task.spec


def tasks_of(specs: Sequence[EnvSpec], *, per_env: int | None = None, skip_last: int = 0,
             seed: int = 0) -> list[TaskRef]:
    """Tasks of each spec (the first ``per_env``, leaving out the last ``skip_last``)."""
    out = []
    for spec in specs:
        tasks = spec.tasks[: len(spec.tasks) - skip_last] if skip_last else spec.tasks
        out += [TaskRef(spec, t.id, seed) for t in tasks[:per_env]]
    return out


class GeneratorPolicy:
    """A :class:`~training.generation.Generator` as the engine's policy: one ``generate`` over the token
    contexts of every unfinished episode, each with its own budget of new tokens (an episode without one gets
    the largest); sampling seeded from ``seed`` and the call's number."""

    def __init__(self, generator: Generator, *, temperature: float, top_p: float, seed: int):
        self.generator = generator
        self.temperature = temperature
        self.top_p = top_p
        self.seed = seed
        self.calls = 0

    def act_batch(self, episodes: Sequence[Episode]) -> list[Action]:
        budgets = [ep.budget for ep in episodes]
        largest = max((b for b in budgets if b is not None), default=1)
        outs = self.generator.generate([ep.context() for ep in episodes],
                                       max_new_tokens=[max(1, b) if b is not None else largest for b in budgets],
                                       temperature=self.temperature, top_p=self.top_p,
                                       seed=stable_seed(self.seed, self.calls))
        self.calls += 1
        return [Action(value=g.text, ids=list(g.ids), logprobs=list(g.logprobs), finish=g.finish, error=g.error)
                for g in outs]


_USERS: dict[str, UserSimulator] = {}


def scenario_user(cfg: RolloutConfig) -> UserSimulator | None:
    """The model-backed user of ``rollout.user_backend`` (made once per configuration and kept: loading a model per
    rollout would cost more than the rollout), or None: each scenario task's scripted user."""
    if cfg.user_backend is None:
        return None
    key = json.dumps([cfg.user_backend, cfg.user_model, cfg.user_options], sort_keys=True, default=str)
    if key not in _USERS:
        from envgen.users import make_user

        _USERS[key] = make_user(cfg.user_backend, cfg.user_model, **cfg.user_options)
    return _USERS[key]


def solver_episode(task: TaskRef, cfg: RolloutConfig, executor: Executor) -> Episode:
    """A task's episode as the trainer plays it: its ``ToolEnv`` in ``rollout.reward_mode`` with the progress
    fraction tracked (every episode's score has it beside the mode that pays, for the held-out figures), and the
    configured user of scenario tasks (:func:`scenario_user`)."""
    spec = _spec(task)

    def make() -> ToolEnvAdapter:
        return ToolEnvAdapter(ToolEnv(spec, task.task_id, reward_mode=cfg.reward_mode,
                                      max_steps=step_budget(task, cfg.max_steps), executor=executor,
                                      max_observation_chars=cfg.max_observation_chars, track_progress=True),
                              task.task_id)

    return Episode(task, make, user=scenario_user(cfg))


def rollout(tasks: Sequence[TaskRef], generator: Generator, chat: ChatFormat, cfg: RolloutConfig, *,
            seed: int = 0, executor: Executor | str | None = None, temperature: float | None = None,
            sync: Callable[[bool], bool] | None = None) -> list[Episode]:
    """Play every task to the end, advancing all unfinished episodes together (module docstring); each
    episode's ``reward`` is the solver reward (0 for a failed one).

    ``sync(any_active_here) -> any_active_anywhere`` keeps several processes in step (:func:`gym_envs.engine.play`).
    """
    if isinstance(executor, Executor):
        ex = executor
    elif executor is not None:
        ex = default_executor(executor)
    else:  # this process's share of rollout.sandbox_workers
        from training.parallel import launched_world, rollout_executor

        ex = rollout_executor(cfg, *launched_world())
    policy = GeneratorPolicy(generator, temperature=cfg.temperature if temperature is None else temperature,
                             top_p=cfg.top_p, seed=seed)
    episodes = play([solver_episode(t, cfg, ex) for t in tasks], policy, chat=chat,
                    max_completion_tokens=cfg.max_completion_tokens, max_turn_tokens=cfg.max_turn_tokens, sync=sync)
    for ep in episodes:
        ep.reward = (0.0 if ep.failed else
                     solver_reward(ep.score, mode=cfg.reward_mode, parse_errors=ep.parse_errors,
                                   parse_error_penalty=cfg.parse_error_penalty))
    return episodes


def batch_stats(episodes: Sequence[Episode]) -> dict[str, Any]:
    """Aggregate numbers of a batch of episodes (for metrics)."""
    n = len(episodes) or 1
    gen = sum(e.gen_seconds for e in episodes)
    env = sum(e.env_seconds for e in episodes)
    tokens = sum(e.model_tokens for e in episodes)
    statuses: dict[str, int] = {}
    for e in episodes:
        statuses[e.status] = statuses.get(e.status, 0) + 1
    return {"episodes": len(episodes), "reward": sum(e.reward for e in episodes) / n,
            "pass_rate": sum(e.passed for e in episodes) / n, "model_tokens": tokens,
            "env_tokens": sum(e.env_tokens for e in episodes), "gen_seconds": gen, "env_seconds": env,
            "tokens_per_second": tokens / gen if gen > 0 else 0.0,
            "tool_calls": sum(e.tool_calls for e in episodes) / n,
            "tool_errors": sum(e.tool_errors for e in episodes) / n, "statuses": statuses}
