"""What the episode engine steps: an environment behind one episode, and its view of a ``ToolEnv``.

Role: :class:`EpisodeEnv` is the interface between the engine (:mod:`gym_envs.episode`, :mod:`gym_envs.engine`) and
an environment: ``reset`` gives the :class:`Opening` (system prompt, first instruction, tools), ``step`` the
:class:`Outcome` of an action (tool results and what the model sees of them, parse errors, what the user answered,
whether the turn or the episode ended, the next instruction), ``score`` and ``turn_records`` what the episode
earned; ``user_context`` what the task's simulated user would be asked about a plain message (None: no user answers
it), so that the engine's own user (a model-backed one) can answer a batch of episodes at once and hand each
environment its reply (:class:`UserAnswered`). ``reset_many`` and ``step_many`` take the envs of one class together
(one by one here; :class:`ToolEnvAdapter` sends every env's tool calls to each worker process in one round trip,
:func:`gym_envs.env.step_many`). Evaluation suites whose tasks are not ``ToolEnv`` specs (BFCL) implement it too.

Contract: an exception of one env in ``reset_many``/``step_many`` is that env's entry (its episode fails),
never the batch's.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gym_envs.env import ToolEnv, cut_observation, reset_many, step_many
from gym_envs.sandbox import CallResult
from gym_envs.users import UserContext, UserReply

__all__ = ["EpisodeEnv", "Opening", "Outcome", "ToolEnvAdapter", "UserAnswered"]


@dataclass
class Opening:
    """What an environment shows as an episode opens."""

    system: str  #: the system prompt (it lists the tools)
    instruction: str  #: the first user message
    tools: list[dict[str, Any]]  #: the tools in OpenAI ``tools=`` form


@dataclass(frozen=True)
class UserAnswered:
    """A plain message of the agent with the reply the engine's user gave it (the environment records it)."""

    action: Any
    reply: UserReply


@dataclass
class Outcome:
    """What an environment answered to one action."""

    results: list[dict[str, Any]] = field(default_factory=list)  #: per call: ``name``, ``arguments``, ``ok``, ...
    contents: list[str] = field(default_factory=list)  #: what the model sees of each result
    parse_errors: list[str] = field(default_factory=list)  #: calls that could not be parsed
    turn_ended: bool = False
    turn_passed: bool | None = None  #: the turn's verdict when this action ended it
    user_reply: str | None = None  #: the user's answer to this plain message (the turn goes on)
    instruction: str = ""  #: the next user message when a turn ended and the episode goes on
    terminated: bool = False  #: the last turn ended
    truncated: bool = False  #: the environment's action budget ran out
    score: dict[str, float] | None = None  #: the environment's scores when the episode ended here
    tools: list[dict[str, Any]] | None = None  #: the tools offered from now on, when they changed

    @property
    def done(self) -> bool:
        return self.terminated or self.truncated


class EpisodeEnv(ABC):
    """What the engine steps: a task's environment behind one episode (:class:`ToolEnvAdapter` for generated
    environments; evaluation suites add theirs, e.g. BFCL's). ``reset_many`` and ``step_many`` work on envs of
    one class and return each env's answer or the exception it raised; here they go one by one."""

    @abstractmethod
    def reset(self, seed: int) -> Opening:
        """Open the episode with this seed."""

    @abstractmethod
    def step(self, action: Any) -> Outcome:
        """Apply one action (text or a structured action)."""

    @abstractmethod
    def score(self) -> dict[str, float]:
        """``{"episode", "turns", "checks", ...}`` for the episode so far (unplayed turns count as failed)."""

    def turn_records(self) -> list[dict[str, Any]]:
        """Per turn, what reports show (index, instruction, calls, reply, passed, checks); none by default."""
        return []

    def user_context(self, message: str) -> UserContext | None:
        """What the task's user is asked about the plain ``message`` now (None: no user answers it; the default)."""
        return None

    def close(self) -> None:  # noqa: B027  (optional hook)
        """Free what the env holds (idempotent)."""

    @classmethod
    def reset_many(cls, envs: Sequence[EpisodeEnv], seeds: Sequence[int]) -> list[Opening | BaseException]:
        out: list[Opening | BaseException] = []
        for env, seed in zip(envs, seeds, strict=True):
            try:
                out.append(env.reset(seed))
            except Exception as e:  # the batch's boundary: this env's entry (the episode fails at reset)
                out.append(e)
        return out

    @classmethod
    def step_many(cls, envs: Sequence[EpisodeEnv], actions: Sequence[Any]) -> list[Outcome | BaseException]:
        out: list[Outcome | BaseException] = []
        for env, action in zip(envs, actions, strict=True):
            try:
                out.append(env.step(action))
            except Exception as e:  # the batch's boundary: this env's entry (the episode fails at step)
                out.append(e)
        return out



def _openai(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``{"name", "description", "parameters"}`` tools in OpenAI ``tools=`` form."""
    return [{"type": "function", "function": t} for t in tools]


class ToolEnvAdapter(EpisodeEnv):
    """A :class:`~gym_envs.env.ToolEnv` playing one task, as the engine steps it.

    What the model sees of each call (its tool message) is the call's result as JSON, cut at the env's
    ``max_observation_chars`` with a marker that says how much was cut (:func:`~gym_envs.env.cut_observation`).
    ``tags`` (one dict per turn) are added to the per-turn records (evaluation's action-class tags);
    ``max_result_chars`` cuts each call's result there.
    """

    def __init__(self, env: ToolEnv, task_id: str, *, tags: Sequence[dict[str, Any]] | None = None,
                 max_result_chars: int = 4_000):
        self.env = env
        self.task_id = task_id
        self.tags = list(tags) if tags is not None else None
        self.max_result_chars = max_result_chars

    def _options(self, seed: int) -> dict[str, Any]:
        return {"task": self.task_id, "episode_seed": seed}

    def _opening(self, reset: tuple[str, dict[str, Any]]) -> Opening:
        obs, info = reset
        return Opening(info["system_prompt"], obs, _openai(info["tools"]))

    def _outcome(self, stepped: tuple[str, float, bool, bool, dict[str, Any]]) -> Outcome:
        obs, _, terminated, truncated, info = stepped
        results = list(info.get("tool_results") or [])
        ended = "turn_passed" in info
        limit = self.env.max_observation_chars
        return Outcome(results=results,
                       contents=[cut_observation(CallResult(**r).observation(), limit) for r in results],
                       parse_errors=list(info.get("parse_errors") or []), turn_ended=ended,
                       turn_passed=bool(info["turn_passed"]) if ended else None, instruction=obs if ended else "",
                       terminated=terminated, truncated=truncated, score=info.get("score"),
                       user_reply=info.get("user_reply"), tools=_openai(info["tools"]) if "tools" in info else None)

    def _action(self, action: Any) -> Any:
        """The action to step with: an engine user's reply is handed to the env for the message it answers."""
        if isinstance(action, UserAnswered):
            self.env.preset_reply(action.reply)
            return action.action
        return action

    def user_context(self, message: str) -> UserContext | None:
        return self.env.user_context(message)

    def reset(self, seed: int) -> Opening:
        return self._opening(self.env.reset(options=self._options(seed)))

    def step(self, action: Any) -> Outcome:
        return self._outcome(self.env.step(self._action(action)))

    @classmethod
    def reset_many(cls, envs: Sequence[EpisodeEnv], seeds: Sequence[int]) -> list[Opening | BaseException]:
        adapters: list[ToolEnvAdapter] = list(envs)  # type: ignore[arg-type]
        resets: list[Any] = reset_many([a.env for a in adapters], return_exceptions=True,
                                       options=[a._options(s) for a, s in zip(adapters, seeds, strict=True)])
        return [r if isinstance(r, BaseException) else a._opening(r) for a, r in zip(adapters, resets, strict=True)]

    @classmethod
    def step_many(cls, envs: Sequence[EpisodeEnv], actions: Sequence[Any]) -> list[Outcome | BaseException]:
        adapters: list[ToolEnvAdapter] = list(envs)  # type: ignore[arg-type]
        stepped: list[Any] = step_many([a.env for a in adapters], [a._action(x) for a, x in zip(adapters, actions,
                                                                                             strict=True)],
                                       return_exceptions=True)
        return [r if isinstance(r, BaseException) else a._outcome(r) for a, r in zip(adapters, stepped, strict=True)]

    def score(self) -> dict[str, float]:
        return self.env.score()

    def turn_records(self) -> list[dict[str, Any]]:
        out = []
        for t in self.env.turns:
            calls = []
            for c in t.calls:
                d = c.to_dict()
                text = c.observation()
                d["result"] = text if len(text) <= self.max_result_chars else text[:self.max_result_chars] + "..."
                calls.append(d)
            rec = {"index": t.index, "instruction": t.instruction, "calls": calls, "reply": t.reply,
                   "passed": t.passed, "scored": t.scored, "checks": [c.to_dict() for c in t.checks]}
            if t.said:
                rec["said"] = [{"text": s.text, "reply": s.reply, "confirmed": s.confirmed} for s in t.said]
            if t.judged:
                rec["judged"] = [dict(j) for j in t.judged]
            if self.tags is not None:
                rec["tags"] = self.tags[t.index]
            out.append(rec)
        return out

    def close(self) -> None:
        self.env.close()
