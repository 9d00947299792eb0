"""Solver rollouts: batched multi-turn episodes over :class:`~gym_envs.env.ToolEnv`.

:func:`rollout` plays a list of tasks together. Each step makes **one** batched
``generate`` call over every unfinished episode, then steps every episode's env
with its action text at once (:func:`~gym_envs.env.step_many`: the tool calls of
all episodes travel to a worker process in one round trip; resets likewise go
through :func:`~gym_envs.env.reset_many`):

1. the prompt is the env's system prompt (which lists the tools; ``tools=`` also
   goes to the template with ``rollout.pass_tools``) and the first instruction;
2. an action with tool calls gets the results back as ``tool`` messages (one per
   call, parse errors included); a plain message ends the turn and the next
   instruction comes as a ``user`` message;
3. those environment tokens are appended with ``env_mask`` 0 (left out of the
   loss); the model's own tokens, end-of-turn token included, have ``env_mask`` 1;
4. an episode ends when the env terminates it (last turn scored) or truncates it
   (``rollout.max_steps`` actions), when its tokens run out
   (``rollout.max_completion_tokens``, or one action reaching
   ``rollout.max_turn_tokens`` without ending), or when generation or the env
   fails -- a failure is data: the episode keeps its tokens, gets reward 0 and
   records ``status`` and ``error``.

The reward is :func:`training.rewards.solver_reward` of the env's score; an
episode cut short by the token budget is scored as it stands (unplayed turns
fail). Every episode records its transcript, per-step actions and parsed calls,
tool errors and the time spent generating and in the environment.
"""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from gym_envs.env import ToolEnv, reset_many, step_many
from gym_envs.errors import ErrorKind, exception_text
from gym_envs.parsing import parse_action
from gym_envs.sandbox import CallResult, Executor, default_executor
from gym_envs.seeding import stable_seed
from gym_envs.spec import EnvSpec
from training.chat import ChatFormat
from training.config import RolloutConfig
from training.errors import FAILURE_STATUSES, TRUNCATION_STATUSES, ConfigError
from training.generation import Generated, Generator
from training.rewards import episode_passed, solver_reward

__all__ = ["Episode", "Step", "TaskRef", "batch_stats", "env_messages", "fit_step_budget", "rollout", "tasks_of"]


@dataclass(frozen=True)
class TaskRef:
    """One task of one environment, with the seed of its episode."""

    spec: EnvSpec
    task_id: str
    episode_seed: int = 0
    source: str = ""  #: where the environment came from, when that is reported apart (held-out sources)

    @property
    def key(self) -> str:
        return f"{self.spec.id}/{self.task_id}"


def fit_step_budget(tasks: Sequence[TaskRef], max_steps: int, what: str) -> list[TaskRef]:
    """The tasks whose reference fits in ``max_steps`` actions (``rollout.max_steps``), with a warning that
    names how many were left out and the budget that keeps them all. A task that needs more actions than
    the episode allows is truncated in every attempt: it can never pass, so it adds only noise to GRPO
    and an unreachable zero to a pass rate. Raises :class:`ConfigError` when no task fits."""
    need = {t.key: t.spec.task(t.task_id).reference_actions() for t in tasks}
    kept = [t for t in tasks if need[t.key] <= max_steps]
    if len(kept) < len(tasks):
        over = sorted({k for k, n in need.items() if n > max_steps})
        msg = (f"{what}: {len(over)} of {len(need)} tasks need more actions than rollout.max_steps={max_steps} "
               f"(up to {max(need.values())}: one per reference call and a reply per turn), so no attempt "
               f"could pass them")
        if not kept:
            raise ConfigError(f"{msg}; none is left. Set rollout.max_steps to at least {min(need.values())} "
                              f"({max(need.values())} keeps them all)")
        warnings.warn(f"{msg}; they are left out. Set rollout.max_steps to {max(need.values())} to keep them",
                      stacklevel=2)
    return kept


def tasks_of(specs: Sequence[EnvSpec], *, per_env: int | None = None, skip_last: int = 0,
             seed: int = 0) -> list[TaskRef]:
    """Tasks of each spec (the first ``per_env``, leaving out the last ``skip_last``)."""
    out = []
    for spec in specs:
        tasks = spec.tasks[: len(spec.tasks) - skip_last] if skip_last else spec.tasks
        out += [TaskRef(spec, t.id, seed) for t in tasks[:per_env]]
    return out


@dataclass
class Step:
    """One model action and what the environment answered."""

    turn: int
    text: str
    calls: list[dict[str, Any]]
    start: int  #: offset of the action's tokens in ``completion_ids``
    end: int
    finish: str
    message_index: int = 0  #: number of chat messages before this action
    observation: list[dict[str, Any]] = field(default_factory=list)  #: messages appended after the action
    results: list[dict[str, Any]] = field(default_factory=list)  #: the env's tool results (name, arguments, ok, ...)
    turn_ended: bool = False
    turn_passed: bool | None = None  #: the turn's verdict when this action ended it


@dataclass
class Episode:
    """A played task as tokens, transcript and outcome."""

    task: TaskRef
    prompt_ids: list[int]
    messages: list[dict[str, Any]]
    completion_ids: list[int] = field(default_factory=list)
    env_mask: list[int] = field(default_factory=list)  #: 1 = model token (trained), 0 = environment token
    logprobs: list[float] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    status: str = "running"
    error: str | None = None
    score: dict[str, float] = field(default_factory=dict)
    reward: float = 0.0
    turn: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    parse_errors: int = 0
    gen_seconds: float = 0.0
    env_seconds: float = 0.0

    @property
    def done(self) -> bool:
        return self.status != "running"

    @property
    def passed(self) -> bool:
        return episode_passed(self.score)

    @property
    def truncated(self) -> bool:
        return self.status in TRUNCATION_STATUSES

    @property
    def failed(self) -> bool:
        return self.status in FAILURE_STATUSES

    @property
    def model_tokens(self) -> int:
        return sum(self.env_mask)

    @property
    def env_tokens(self) -> int:
        return len(self.env_mask) - sum(self.env_mask)

    def append(self, ids: Sequence[int], *, model: bool, logprobs: Sequence[float] | None = None) -> None:
        self.completion_ids += list(ids)
        self.env_mask += [1 if model else 0] * len(ids)
        self.logprobs += list(logprobs) if logprobs is not None else [0.0] * len(ids)

    def record(self) -> dict[str, Any]:
        """A JSON-able summary (no token ids)."""
        return {"env_id": self.task.spec.id, "task_id": self.task.task_id, "seed": self.task.episode_seed,
                "status": self.status, "error": self.error, "reward": self.reward, "score": self.score,
                "passed": self.passed, "steps": len(self.steps), "tool_calls": self.tool_calls,
                "tool_errors": self.tool_errors, "parse_errors": self.parse_errors,
                "model_tokens": self.model_tokens, "env_tokens": self.env_tokens,
                "gen_seconds": self.gen_seconds, "env_seconds": self.env_seconds,
                "actions": [s.text for s in self.steps]}


def env_messages(info: dict[str, Any], obs: str) -> tuple[list[dict[str, Any]], bool]:
    """The messages an env step adds to the chat, and whether the turn ended.

    Tool calls give one ``tool`` message per result (and one per parse error); an ended turn
    gives the next instruction as a ``user`` message (nothing when the episode is over).
    """
    if "turn_passed" in info:
        return ([{"role": "user", "content": obs}] if obs else []), True
    msgs = [{"role": "tool", "name": r["name"], "content": CallResult(**r).observation()}
            for r in info.get("tool_results") or []]
    msgs += [{"role": "tool", "name": "parse_error",
              "content": json.dumps({"error": e, "type": ErrorKind.PARSE_ERROR.value})}
             for e in info.get("parse_errors") or []]
    return msgs, False


class _Live:
    """An episode in progress: its env and its record (``start`` once its env has been reset)."""

    def __init__(self, task: TaskRef, chat: ChatFormat, cfg: RolloutConfig, executor: Executor):
        self.task = task
        self.env: ToolEnv | None = None
        self.env_seconds = 0.0
        self.ep: Episode | None = None
        t0 = time.perf_counter()
        try:
            # track_progress: every episode's score has the progress fraction beside the mode that pays (one
            # check of the turn's checks more per turn), for the held-out figures
            self.env = ToolEnv(task.spec, task.task_id, reward_mode=cfg.reward_mode, max_steps=cfg.max_steps,
                               executor=executor, max_observation_chars=cfg.max_observation_chars,
                               track_progress=True)
        except Exception as e:  # the boundary: a spec whose env cannot even be made is a failed episode
            self.fail(chat, e)
        self.env_seconds += time.perf_counter() - t0

    def fail(self, chat: ChatFormat, e: BaseException) -> None:
        self.ep = Episode(self.task, [chat.eos_id], [], status="env_error", error=exception_text(e))
        if self.env is not None:
            self.env.close()
            self.env = None

    def start(self, chat: ChatFormat, reset: tuple[str, dict[str, Any]] | BaseException, seconds: float) -> None:
        """Begin the record from the env's reset (or its failure: a failed episode, not a crash)."""
        self.env_seconds += seconds
        if isinstance(reset, BaseException):
            self.fail(chat, reset)
        else:
            obs, info = reset
            messages = [{"role": "system", "content": info["system_prompt"]}, {"role": "user", "content": obs}]
            self.ep = Episode(self.task, chat.prompt_ids(messages, self.task.spec.openai_tools()), messages)
        assert self.ep is not None
        self.ep.env_seconds += self.env_seconds

    @property
    def record(self) -> Episode:
        assert self.ep is not None, "the episode has not started"
        return self.ep

    def context(self) -> list[int]:
        return self.record.prompt_ids + self.record.completion_ids


def _start(lives: list[_Live], chat: ChatFormat) -> None:
    """Reset every live env at once; the time is shared equally among them."""
    ready = [lv for lv in lives if lv.env is not None]
    t0 = time.perf_counter()
    try:
        resets: list[Any] = reset_many([lv.env for lv in ready],  # type: ignore[misc]
                                       options=[{"task": lv.task.task_id, "episode_seed": lv.task.episode_seed}
                                                for lv in ready], return_exceptions=True)
    except Exception as e:  # the boundary: reset_many itself broke, every env fails alike
        resets = [e] * len(ready)
    share = (time.perf_counter() - t0) / max(1, len(ready))
    for lv, r in zip(ready, resets, strict=True):
        lv.start(chat, r, share)
    for lv in lives:
        if lv.ep is None:
            raise AssertionError("an episode neither started nor failed")


def _finish(live: _Live, status: str, cfg: RolloutConfig, error: str | None = None) -> None:
    ep = live.record
    ep.status = status
    ep.error = error
    if not ep.score and status not in FAILURE_STATUSES and live.env is not None and live.env.task is not None:
        ep.score = live.env.score()  # cut short by tokens: scored as it stands
    ep.reward = (0.0 if status in FAILURE_STATUSES else
                 solver_reward(ep.score, mode=cfg.reward_mode, parse_errors=ep.parse_errors,
                               parse_error_penalty=cfg.parse_error_penalty))


def _advance(live: _Live, out: Generated, budget: int, chat: ChatFormat, cfg: RolloutConfig) -> str | None:
    """Apply one generated action to an episode's record (see the module docstring); returns the
    text the env must step with, or ``None`` when the episode ended here."""
    ep = live.record
    if out.finish == "error":
        _finish(live, "generation_error", cfg, out.error)
        return None
    ids, lps, finish = list(out.ids), list(out.logprobs), out.finish
    if len(ids) > budget:
        ids, lps, finish = ids[:budget], lps[:budget], "length"
    start = len(ep.completion_ids)
    ep.append(ids, model=True, logprobs=lps)
    text = out.text if out.text is not None else chat.decode(ids)
    parsed = parse_action(text)
    step = Step(ep.turn, text, parsed.calls, start, len(ep.completion_ids), finish, len(ep.messages))
    ep.steps.append(step)
    if finish != "stop":
        left = cfg.max_completion_tokens - len(ep.completion_ids)
        _finish(live, "turn_too_long" if left > 0 else "max_tokens", cfg)
        return None
    ep.messages.append({"role": "assistant", "content": text})
    if live.env is None:  # never reset: already finished with env_error
        return None
    return text


def _observe(live: _Live, stepped: tuple[str, float, bool, bool, dict[str, Any]] | BaseException, seconds: float,
             chat: ChatFormat, cfg: RolloutConfig) -> None:
    """Record what the env answered to the episode's last action."""
    ep = live.record
    ep.env_seconds += seconds
    if isinstance(stepped, BaseException):  # a failure is data: the env (or its worker) broke on this action
        _finish(live, "env_error", cfg, f"{type(stepped).__name__}: {stepped}")
        return
    obs, _, terminated, truncated, info = stepped
    step = ep.steps[-1]
    results = info.get("tool_results") or []
    step.results = results
    if "turn_passed" in info:
        step.turn_passed = bool(info["turn_passed"])
    ep.tool_calls += len(results)
    ep.tool_errors += sum(not r["ok"] for r in results)
    ep.parse_errors += len(info.get("parse_errors") or [])
    if "score" in info:
        ep.score = dict(info["score"])
    msgs, step.turn_ended = env_messages(info, obs)
    if step.turn_ended:
        ep.turn += 1
    if terminated or truncated:
        _finish(live, "terminated" if terminated else "max_steps", cfg)
        return
    suffix = chat.user_suffix_ids(obs) if step.turn_ended else chat.tool_suffix_ids(msgs)
    if len(ep.completion_ids) + len(suffix) >= cfg.max_completion_tokens:
        _finish(live, "max_tokens", cfg)
        return
    step.observation = msgs
    ep.messages += msgs
    ep.append(suffix, model=False)


def _step(todo: list[tuple[_Live, str]], chat: ChatFormat, cfg: RolloutConfig) -> None:
    """Step every env with its action at once; the time is shared equally among them."""
    if not todo:
        return
    t0 = time.perf_counter()
    try:
        stepped: list[Any] = step_many([lv.env for lv, _ in todo],  # type: ignore[misc]
                                       [text for _, text in todo], return_exceptions=True)
    except Exception as e:  # the boundary: step_many itself broke, every env fails alike
        stepped = [e] * len(todo)
    share = (time.perf_counter() - t0) / len(todo)
    for (lv, _), r in zip(todo, stepped, strict=True):
        _observe(lv, r, share, chat, cfg)


def rollout(tasks: Sequence[TaskRef], generator: Generator, chat: ChatFormat, cfg: RolloutConfig, *,
            seed: int = 0, executor: Executor | str | None = None, temperature: float | None = None,
            sync: Callable[[bool], bool] | None = None) -> list[Episode]:
    """Play every task to the end, advancing all unfinished episodes together (module docstring).

    ``sync(any_active_here) -> any_active_anywhere`` keeps several processes in step: each calls
    ``generate`` (with no rows once its own episodes are done) until every process is done, as the
    collective operations inside vLLM's server mode and DeepSpeed ZeRO-3 require.
    """
    ex = executor if isinstance(executor, Executor) else default_executor(executor or cfg.executor)
    temp = cfg.temperature if temperature is None else temperature
    lives: list[_Live] = []
    try:
        lives = [_Live(task, chat, cfg, ex) for task in tasks]
        _start(lives, chat)
        step = 0
        while True:
            active = [lv for lv in lives if not lv.record.done]
            for lv in active:
                if cfg.max_completion_tokens - len(lv.record.completion_ids) <= 0:
                    _finish(lv, "max_tokens", cfg)
            active = [lv for lv in active if not lv.record.done]
            if not (sync(bool(active)) if sync is not None else active):
                break
            budgets = [min(cfg.max_turn_tokens, cfg.max_completion_tokens - len(lv.record.completion_ids))
                       for lv in active]
            t0 = time.perf_counter()
            outs = generator.generate([lv.context() for lv in active], max_new_tokens=max(budgets, default=1),
                                      temperature=temp, top_p=cfg.top_p, seed=stable_seed(seed, step))
            share = (time.perf_counter() - t0) / max(1, len(active))
            todo: list[tuple[_Live, str]] = []
            for lv, out, budget in zip(active, outs, budgets, strict=True):
                lv.record.gen_seconds += share
                text = _advance(lv, out, budget, chat, cfg)
                if text is not None:
                    todo.append((lv, text))
            _step(todo, chat, cfg)
            step += 1
    finally:
        for lv in lives:
            if lv.env is not None:
                lv.env.close()
    return [lv.record for lv in lives]


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
