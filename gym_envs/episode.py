"""Episodes: a task played by a policy against an environment, one action at a time, as data.

Role: the record and the step of the one episode engine (the lock-step loop is :mod:`gym_envs.engine`).
Training's rollouts, self-play, distillation, the benches and every evaluation suite play their episodes as
:class:`Episode` objects, so the messages and tokens a model sees are built by one piece of code
(:mod:`gym_envs.messages`) wherever it plays.

The lifecycle of an episode (after verifiers' single rollout lifecycle):

1. **open** -- its environment (:class:`~gym_envs.episode_env.EpisodeEnv`) is made (``env`` factory) and reset
   (``EpisodeEnv.reset_many``: the resets of every episode of a batch share the executor's round trips); the
   chat starts with the system prompt and the first instruction; with a :class:`~gym_envs.messages.ChatFormat`
   the prompt is rendered to tokens.
2. **act** -- the policy answers every unfinished episode of the batch at once (``act_batch``); an answer is
   text (``<tool_call>`` blocks or a plain message), a structured ``{"content", "tool_calls"}`` action, an
   :class:`Action` carrying sampled token ids and log-probabilities, or a :class:`PolicyFailure`.
3. **apply** -- :meth:`Episode.apply` records the action: its tokens (model tokens, ``env_mask`` 1; a text
   action is tokenised as its text and EOS), the assistant message, a :class:`Step`. An action cut by its
   token budget ends the episode (``turn_too_long``, or ``max_tokens`` when the episode's budget is spent).
   A plain message (no call) in a task with a scenario is answered by the task's **user**: the environment's own
   (``ToolEnv``'s :class:`~gym_envs.users.ScriptedUser` by default), or the episode's ``user`` when it has one (a
   :class:`~gym_envs.users.UserSimulator`, e.g. a model-backed user: the engine asks it for every such message
   of a batch at once, :func:`ask_users`, and hands each environment its reply, :class:`UserAnswered`).
4. **step** -- the environments of the batch step together (``EpisodeEnv.step_many``; ``ToolEnv``'s tool
   calls travel to each worker process in one round trip) and :meth:`Episode.observe` records the answer: one
   ``tool`` message per result or parse error, the user's reply as a user message (the turn goes on), the next
   instruction as a user message when a turn ended, the environment tokens (``env_mask`` 0) up to the next
   generation prompt.
5. **end** -- terminated (the last turn was scored), truncated (``max_steps``: the environment's action budget or
   the episode's ``max_actions``; ``max_tokens``; ``turn_too_long``; the turn ended with ``stop_at_turn_end``), or
   failed. :meth:`Episode.settle` then keeps the environment's score and per-turn records and closes it.

A failure is data: whatever goes wrong (the environment cannot be made, reset or stepped; the policy raises or
returns a :class:`PolicyFailure`; the model backend gives no completion; scoring fails) ends *that* episode
with a :class:`FailureStage`, a status and an ``error`` text (:func:`episode_failure`), never the batch. A
**backend failure** (stage ``backend``: no completion came back) is not the model's: evaluation leaves such
episodes unscored.

Simulated users (gym_envs/ENVSPEC.md, "Conversations with a simulated user"): the environment answers a scenario
task's plain messages with its scripted user unless the episode has a ``user`` of its own; either way the
environment records the reply (what a ``confirmed`` check reads), and the chat and tokens show it as a user message.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from gym_envs.episode_env import EpisodeEnv, Opening, Outcome, UserAnswered
from gym_envs.errors import exception_text
from gym_envs.messages import ChatFormat, assistant_message, chat_messages, tool_messages, user_message
from gym_envs.parsing import action_text, parse_action
from gym_envs.users import UserSimulator

if TYPE_CHECKING:
    from gym_envs.spec import EnvSpec

__all__ = ["EPISODE_STATUSES", "FAILURE_STATUSES", "TRUNCATION_STATUSES", "Action", "Episode", "FailureStage",
           "PolicyFailure", "Step", "TaskRef", "ask_users", "episode_failure", "episode_id"]

#: How an episode ended.
#:
#: * ``terminated``: the task's last turn ended (the environment scored it);
#: * ``max_steps``: the environment's action budget, or the episode's ``max_actions``, ran out;
#: * ``max_tokens``: the episode's token budget (``max_completion_tokens``) ran out;
#: * ``turn_too_long``: one action reached its token budget without an end-of-turn token;
#: * ``turn_ended``: the turn ended and the episode was to stop there (``stop_at_turn_end``);
#: * ``generation_error``: the model backend gave no completion (stage ``backend``);
#: * ``policy_error``: the policy raised or returned a :class:`PolicyFailure` (stage ``policy``);
#: * ``env_error``: the environment could not be made, reset, stepped or scored (a lost worker, a broken spec).
EPISODE_STATUSES = ("terminated", "max_steps", "max_tokens", "turn_too_long", "turn_ended", "generation_error",
                    "policy_error", "env_error")
TRUNCATION_STATUSES = ("max_steps", "max_tokens", "turn_too_long")
FAILURE_STATUSES = ("generation_error", "policy_error", "env_error")


class FailureStage(StrEnum):
    """Where an episode failed (a record's ``error_stage``)."""

    RESET = "reset"  #: the environment could not be made or open the episode
    POLICY = "policy"  #: the policy raised or returned a :class:`PolicyFailure`
    BACKEND = "backend"  #: the model backend gave no completion (the episode never reached the model)
    STEP = "step"  #: the environment raised on a step
    SCORING = "scoring"  #: the finished episode could not be scored


_LEAD = {FailureStage.RESET: "reset failed", FailureStage.POLICY: "policy failed", FailureStage.STEP: "step failed",
         FailureStage.SCORING: "scoring failed", FailureStage.BACKEND: "no completion from the model"}
_STATUS = {FailureStage.RESET: "env_error", FailureStage.STEP: "env_error", FailureStage.SCORING: "env_error",
           FailureStage.POLICY: "policy_error", FailureStage.BACKEND: "generation_error"}


@dataclass(frozen=True)
class PolicyFailure:
    """Returned in place of an action when the policy could not produce one (the episode ends with ``error``
    set; the other episodes of the batch carry on). ``backend``: the model backend gave no completion, so the
    episode ends at stage ``backend``."""

    message: str
    backend: bool = False


def episode_failure(stage: FailureStage, cause: BaseException | PolicyFailure | str = "") -> str:
    """The ``error`` text of an episode that failed at ``stage`` because of ``cause`` (``"step failed:
    KeyError: 'x'"``; an exception is written with :func:`gym_envs.errors.exception_text`)."""
    if isinstance(cause, BaseException):
        why = exception_text(cause)
    elif isinstance(cause, PolicyFailure):
        why = cause.message
    else:
        why = cause
    return f"{_LEAD[stage]}: {why}" if why else _LEAD[stage]


@dataclass(frozen=True)
class TaskRef:
    """One task: the environment it belongs to, with the seed of its episode and where it is reported.

    Training gives the spec (``TaskRef(spec, task_id, episode_seed)``); a suite whose tasks are not specs
    (BFCL) gives ``env_id``, ``kind`` and ``n_turns`` instead. ``key`` names the task (``suite/env/task``,
    without the suite when there is none).
    """

    spec: EnvSpec | None = field(default=None, compare=False, repr=False)
    task_id: str = ""
    episode_seed: int = 0
    source: str = ""  #: where the environment came from, when that is reported apart (held-out sources)
    suite: str = ""  #: the evaluation suite the task belongs to
    env_id: str = ""  #: the environment's id (default: the spec's)
    kind: str = ""  #: the task's kind (default: the spec task's)
    n_turns: int = 0  #: the task's turns (default: the spec task's)
    split: str | None = None  #: the library split (evaluation)
    meta: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        if not self.task_id:
            raise ValueError("a task needs its task_id")
        if self.spec is not None:
            task = self.spec.task(self.task_id)
            object.__setattr__(self, "env_id", self.env_id or self.spec.id)
            object.__setattr__(self, "kind", self.kind or task.kind)
            object.__setattr__(self, "n_turns", self.n_turns or len(task.turns))
        if not self.env_id:
            raise ValueError(f"task {self.task_id!r} needs its spec or its env_id")

    @property
    def key(self) -> str:
        return "/".join(p for p in (self.suite, self.env_id, self.task_id) if p)


@dataclass
class Action:
    """A policy's answer for one episode, beyond plain text or a structured action.

    ``value`` is the action as text (``<tool_call>`` blocks or a message) or a structured ``{"content",
    "tool_calls"}``; ``None`` means the decoding of ``ids`` (a token-level policy). ``ids`` are the sampled
    tokens (ending with the end-of-turn token when ``finish == "stop"``) and ``logprobs`` their
    log-probabilities under the sampling distribution. ``finish``: ``stop``, ``length`` (cut by the token
    budget) or ``error`` (no completion: a backend failure, ``error`` says why).
    """

    value: str | dict[str, Any] | None = None
    ids: list[int] | None = None
    logprobs: list[float] | None = None
    finish: str = "stop"
    error: str | None = None

    @classmethod
    def of(cls, answer: Any) -> Action:
        """An answer of ``act_batch`` (text, a structured action or an :class:`Action`) as an :class:`Action`."""
        return answer if isinstance(answer, Action) else cls(value=answer)


@dataclass
class Step:
    """One action of an episode and what the environment answered."""

    turn: int
    text: str  #: the action as text (a structured action as its JSON)
    calls: list[dict[str, Any]]
    start: int  #: offset of the action's tokens in ``completion_ids``
    end: int
    finish: str
    message_index: int = 0  #: number of chat messages before this action
    observation: list[dict[str, Any]] = field(default_factory=list)  #: messages appended after the action
    results: list[dict[str, Any]] = field(default_factory=list)  #: the env's tool results (name, arguments, ok, ...)
    turn_ended: bool = False
    turn_passed: bool | None = None  #: the turn's verdict when this action ended it
    user_reply: str | None = None  #: what the episode's user answered to this plain message (the turn went on)


class Episode:
    """One play of one task (module docstring): the chat, the tokens, the steps and how it ended.

    Args:
        task: the task played.
        env: a function making its environment (called as the episode opens: a failure there is data).
        trial: which trial of the task this is (evaluation plays several).
        seed: the episode seed the environment is reset with (default: ``task.episode_seed``).
        user: the user who answers the plain messages of a scenario task (a :class:`~gym_envs.users.UserSimulator`;
            default None: the environment's own, the scripted user).
        oracle: ``oracle(turn) -> (items, reply)``, the reference plan of a turn (for scripted policies): call dicts
            (``{"name", "arguments"}``, with ``action`` numbering the actions that make calls together) and
            ``{"say": text}`` messages, then the final reply.
        max_actions: the episode ends after this many actions (``max_steps``; None: the environment decides).
        stop_at_turn_end: end the episode when a turn ends (``turn_ended``), e.g. a teacher's recovery.
        meta: the caller's own data (turn tags, calls made before a resumed state, ...).

    Fields a policy reads: :attr:`messages` (the chat, :mod:`gym_envs.messages`; :meth:`chat` without the
    bookkeeping keys), :attr:`tools`, :attr:`turn`, :attr:`steps_in_turn`, :meth:`context` (the token context:
    prompt and completion so far), :attr:`budget` (the most tokens its next action may have; None: no token
    budget), :meth:`reference`; it may count tokens with :meth:`add_usage`.
    """

    def __init__(self, task: TaskRef, env: Callable[[], EpisodeEnv] | None = None, *, trial: int = 0,
                 seed: int | None = None, user: UserSimulator | None = None,
                 oracle: Callable[[int], tuple[list[dict[str, Any]], str]] | None = None,
                 max_actions: int | None = None, stop_at_turn_end: bool = False, meta: dict[str, Any] | None = None):
        if max_actions is not None and max_actions < 1:
            raise ValueError(f"max_actions must be >= 1 (or None), got {max_actions}")
        self.task = task
        self.trial = trial
        self.seed = task.episode_seed if seed is None else seed
        self.user = user
        self.pending_message: str | None = None  #: a plain message the episode's own user is to answer
        self.oracle = oracle
        self.max_actions = max_actions
        self.stop_at_turn_end = stop_at_turn_end
        self.meta = dict(meta or {})
        self._make_env = env
        self.env: EpisodeEnv | None = None
        self.chat_format: ChatFormat | None = None
        self.max_completion_tokens: int | None = None
        self.max_turn_tokens: int | None = None
        self.messages: list[dict[str, Any]] = []
        self.tools: list[dict[str, Any]] = []
        self.prompt_ids: list[int] = []
        self.completion_ids: list[int] = []
        self.env_mask: list[int] = []  #: 1 = model token (trained), 0 = environment token
        self.logprobs: list[float] = []
        self.steps: list[Step] = []
        self.status = "pending"  #: ``pending``, ``running``, then one of :data:`EPISODE_STATUSES`
        self.error: str | None = None
        self.stage: FailureStage | None = None
        self.close_error: str | None = None
        self.score: dict[str, float] = {}  #: the environment's scores at the end (unplayed turns failed)
        self.turns: list[dict[str, Any]] = []  #: the environment's per-turn records at the end
        self.reward = 0.0  #: set by the caller (training's solver reward)
        self.turn = 0
        self.steps_in_turn = 0
        self.tool_calls = 0
        self.tool_errors = 0
        self.parse_errors = 0
        self.gen_seconds = 0.0
        self.env_seconds = 0.0
        self.seconds = 0.0  #: wall time from opening to the end
        self.usage = {"prompt_tokens": 0, "completion_tokens": 0, "calls": 0}
        self._started = 0.0

    # -- what policies and callers read --------------------------------------------------------------
    @property
    def done(self) -> bool:
        return self.status not in ("pending", "running")

    @property
    def failed(self) -> bool:
        return self.status in FAILURE_STATUSES

    @property
    def truncated(self) -> bool:
        return self.status in TRUNCATION_STATUSES

    @property
    def passed(self) -> bool:
        """Every check of every turn passed, and nothing failed."""
        return not self.failed and float(self.score.get("episode", 0.0)) == 1.0

    @property
    def tracks_tokens(self) -> bool:
        return self.chat_format is not None

    @property
    def model_tokens(self) -> int:
        return sum(self.env_mask)

    @property
    def env_tokens(self) -> int:
        return len(self.env_mask) - sum(self.env_mask)

    @property
    def budget(self) -> int | None:
        """The most tokens the next action may have (None: no token budget)."""
        left = [n for n in (self.max_turn_tokens,
                            None if self.max_completion_tokens is None
                            else self.max_completion_tokens - len(self.completion_ids)) if n is not None]
        return min(left) if left else None

    def context(self) -> list[int]:
        """The token context of the next action: the prompt and the completion so far."""
        return self.prompt_ids + self.completion_ids

    def chat(self) -> list[dict[str, Any]]:
        """The messages without the bookkeeping keys (what a backend receives)."""
        return chat_messages(self.messages)

    def reference(self) -> tuple[list[dict[str, Any]], str]:
        """The current turn's reference plan (``oracle``'s items: calls and ``say`` messages) and final message."""
        if self.oracle is None:
            raise RuntimeError("this episode has no reference trajectory")
        return self.oracle(self.turn)

    def add_usage(self, prompt_tokens: int = 0, completion_tokens: int = 0) -> None:
        self.usage["prompt_tokens"] += int(prompt_tokens or 0)
        self.usage["completion_tokens"] += int(completion_tokens or 0)
        self.usage["calls"] += 1

    @property
    def episode_id(self) -> str:
        """A unique id of this trial of the task (:func:`episode_id`)."""
        return episode_id(self.task, self.trial)

    # -- the lifecycle (module docstring) ------------------------------------------------------------
    def make_env(self) -> EpisodeEnv | None:
        """Make the environment (once); a failure ends the episode at stage ``reset``."""
        self._started = self._started or time.perf_counter()
        if self.env is None and not self.done:
            t0 = time.perf_counter()
            try:
                if self._make_env is None:
                    raise RuntimeError("the episode has no environment")
                self.env = self._make_env()
            except Exception as e:  # the boundary: an env that cannot even be made is a failed episode
                self.fail(FailureStage.RESET, e)
            self.env_seconds += time.perf_counter() - t0
        return self.env

    def start(self, opening: Opening | BaseException, seconds: float = 0.0) -> None:
        """Begin the chat from the environment's opening (or its failure: a failed episode)."""
        self.env_seconds += seconds
        if isinstance(opening, BaseException):
            self.fail(FailureStage.RESET, opening)
            return
        self.status = "running"
        self.tools = list(opening.tools)
        self.messages = [{"role": "system", "content": opening.system}, user_message(opening.instruction)]
        if self.chat_format is not None:
            self.prompt_ids = self.chat_format.prompt_ids(self.messages, self.tools)

    def resume(self, env: EpisodeEnv, messages: list[dict[str, Any]], *, turn: int,
               tools: list[dict[str, Any]]) -> None:
        """Go on from a state reached elsewhere: ``env`` is open in it and ``messages`` is the chat so far (it ends
        with a user or tool message). The token record then holds only what is played from here."""
        self._started = time.perf_counter()
        self.env, self.messages, self.tools, self.turn = env, list(messages), list(tools), turn
        self.status = "running"

    def reset(self) -> str:
        """Open the episode on its own (the engine opens a batch together); returns the first instruction."""
        env = self.make_env()
        if env is not None:
            t0 = time.perf_counter()
            opening: Opening | BaseException
            try:
                opening = env.reset(self.seed)
            except Exception as e:  # the boundary, as in EpisodeEnv.reset_many
                opening = e
            self.start(opening, time.perf_counter() - t0)
        return self.messages[1]["content"] if len(self.messages) > 1 else ""

    def step(self, answer: Any) -> Outcome | None:
        """One answer, played on its own (the engine steps a batch together): the environment's outcome, or
        ``None`` when it was not stepped (the episode ended)."""
        if self.done or self.env is None:
            raise RuntimeError("the episode is not running; reset() it first")
        action = self.apply(answer)
        if action is None or self.done:
            return None
        asked = ask_users([(self, action)])
        if not asked:  # the episode's user failed: the episode ended
            return None
        action = asked[0][1]
        t0 = time.perf_counter()
        outcome: Outcome | BaseException
        try:
            outcome = self.env.step(action)
        except Exception as e:  # the boundary, as in EpisodeEnv.step_many
            outcome = e
        self.observe(outcome, time.perf_counter() - t0)
        return outcome if isinstance(outcome, Outcome) else None

    def fail(self, stage: FailureStage, cause: BaseException | PolicyFailure | str = "") -> None:
        """End the episode because the harness, the policy or the backend failed at ``stage`` (recorded, never
        raised): every exception caught while an episode is played comes here."""
        self.error = episode_failure(stage, cause)
        self.stage = stage
        self.status = _STATUS[stage]

    def end(self, status: str) -> None:
        """End the episode with a status of :data:`EPISODE_STATUSES` that is not a failure."""
        if status not in EPISODE_STATUSES or status in FAILURE_STATUSES:
            raise ValueError(f"not an ending status: {status!r} (failures go through fail())")
        self.status = status

    def _append(self, ids: Sequence[int], *, model: bool, logprobs: Sequence[float] | None = None) -> None:
        self.completion_ids += list(ids)
        self.env_mask += [1 if model else 0] * len(ids)
        self.logprobs += list(logprobs) if logprobs is not None else [0.0] * len(ids)

    def _room(self, ids: Sequence[int]) -> bool:
        """Whether environment tokens fit before the token budget (else the episode ends ``max_tokens``)."""
        limit = self.max_completion_tokens
        if limit is not None and len(self.completion_ids) + len(ids) >= limit:
            self.end("max_tokens")
            return False
        return True

    def apply(self, answer: Any) -> Any:
        """Record one answer of the policy (step 3 of the module docstring); returns the action the environment
        must step with, or ``None`` when there is nothing to step (the episode ended). A plain message that the
        episode's own user is to answer is kept in :attr:`pending_message` (:func:`ask_users` asks it)."""
        if isinstance(answer, PolicyFailure):
            self.fail(FailureStage.BACKEND if answer.backend else FailureStage.POLICY, answer)
            return None
        action = Action.of(answer)
        if action.finish == "error":
            self.fail(FailureStage.BACKEND, action.error or "the backend failed")
            return None
        chat, finish, value = self.chat_format, action.finish, action.value
        ids = list(action.ids) if action.ids is not None else None
        lps = list(action.logprobs) if action.logprobs is not None else None
        if chat is not None and ids is None:
            ids = chat.assistant_ids(action_text(value if value is not None else ""))
        budget = self.budget
        if ids is not None and budget is not None and len(ids) > budget:
            ids, lps, finish = ids[:budget], lps[:budget] if lps is not None else None, "length"
        if value is None:
            value = chat.decode(ids) if chat is not None and ids is not None else ""
        start = len(self.completion_ids)
        if chat is not None and ids is not None:
            self._append(ids, model=True, logprobs=lps)
        parsed = parse_action(value)
        step = Step(self.turn, action_text(value), parsed.calls, start, len(self.completion_ids), finish,
                    len(self.messages))
        self.steps.append(step)
        self.steps_in_turn += 1
        self.messages.append(assistant_message(value, parsed, len(self.steps)))
        if finish != "stop":
            spent = self.max_completion_tokens is not None and len(self.completion_ids) >= self.max_completion_tokens
            self.end("max_tokens" if spent else "turn_too_long")
            return None
        self.pending_message = parsed.content if parsed.is_message and self.user is not None else None
        return value

    def _out_of_actions(self) -> bool:
        """End the episode (``max_steps``) once it has taken ``max_actions`` actions, before any more tokens."""
        if self.max_actions is not None and len(self.steps) >= self.max_actions:
            self.end("max_steps")
            return True
        return False

    def observe(self, outcome: Outcome | BaseException, seconds: float = 0.0) -> None:
        """Record what the environment answered to the last action (step 4 of the module docstring)."""
        self.env_seconds += seconds
        if isinstance(outcome, BaseException):  # a failure is data: the env (or its worker) broke on this action
            self.fail(FailureStage.STEP, outcome)
            return
        step = self.steps[-1]
        step.results = list(outcome.results)
        step.turn_passed = outcome.turn_passed
        self.tool_calls += len(outcome.results)
        self.tool_errors += sum(not r.get("ok", True) for r in outcome.results)
        self.parse_errors += len(outcome.parse_errors)
        if outcome.score is not None:
            self.score = dict(outcome.score)
        if outcome.tools is not None:
            self.tools = list(outcome.tools)
        new = tool_messages([r["name"] for r in outcome.results], outcome.contents, outcome.parse_errors,
                            len(self.steps)) if outcome.results or outcome.parse_errors else []
        if outcome.user_reply is not None:
            step.user_reply = outcome.user_reply
            new.append(user_message(outcome.user_reply))
        step.turn_ended = outcome.turn_ended
        if outcome.turn_ended:
            self.turn += 1
            self.steps_in_turn = 0
            if not outcome.done:
                new.append(user_message(outcome.instruction))
        self.messages += new
        step.observation = new
        if outcome.done:
            self.end("terminated" if outcome.terminated else "max_steps")
            return
        if outcome.turn_ended and self.stop_at_turn_end:
            self.end("turn_ended")
            return
        if self._out_of_actions():
            return
        if self.chat_format is not None:
            suffix = (self.chat_format.user_suffix_ids(outcome.instruction) if outcome.turn_ended
                      else self.chat_format.user_suffix_ids(outcome.user_reply) if outcome.user_reply is not None
                      else self.chat_format.tool_suffix_ids(new))
            if self._room(suffix):
                self._append(suffix, model=False)

    def settle(self) -> None:
        """After the end: keep the environment's score and per-turn records, close it (a failure to score is
        recorded at stage ``scoring`` unless the episode already failed; a failure to close as ``close_error``)."""
        env = self.env
        if env is not None and self.status != "pending" and self.stage is not FailureStage.RESET:
            try:
                self.score = dict(env.score())
                self.turns = env.turn_records()
            except Exception as e:  # the boundary: scoring a broken episode must not crash the batch
                if self.error is None:
                    self.fail(FailureStage.SCORING, e)
        if env is not None:
            try:
                env.close()
            except Exception as e:  # the boundary: the episode was scored; its result stands, the failure is recorded
                self.close_error = exception_text(e)
        self.seconds = time.perf_counter() - self._started if self._started else 0.0

    def record(self) -> dict[str, Any]:
        """A compact JSON-able summary (no token ids, no transcript)."""
        return {"env_id": self.task.env_id, "task_id": self.task.task_id, "seed": self.seed,
                "status": self.status, "error": self.error, "reward": self.reward, "score": self.score,
                "passed": self.passed, "steps": len(self.steps), "tool_calls": self.tool_calls,
                "tool_errors": self.tool_errors, "parse_errors": self.parse_errors,
                "model_tokens": self.model_tokens, "env_tokens": self.env_tokens,
                "gen_seconds": self.gen_seconds, "env_seconds": self.env_seconds,
                "actions": [s.text for s in self.steps]}


def ask_users(todo: Sequence[tuple[Episode, Any]]) -> list[tuple[Episode, Any]]:
    """Ask each episode's own user about its pending plain message, every episode of one user in one
    ``reply_batch``, and hand the replies to the environments with the actions (:class:`UserAnswered`). A message
    no user answers (the task has no scenario, the user has replied ``max_replies`` times) is stepped as it is; a
    user that raises fails its episodes at stage ``step`` (the environment's user broke, not the policy). Returns the
    actions to step (the failed episodes left out)."""
    asks: dict[int, tuple[UserSimulator, list[int], list[Any]]] = {}
    out: list[tuple[Episode, Any]] = list(todo)
    for j, (ep, _) in enumerate(out):
        message, ep.pending_message = ep.pending_message, None
        if message is None or ep.user is None or ep.env is None:
            continue
        context = ep.env.user_context(message)
        if context is not None:
            entry = asks.setdefault(id(ep.user), (ep.user, [], []))
            entry[1].append(j)
            entry[2].append(context)
    failed: set[int] = set()
    for user, idx, contexts in asks.values():
        t0 = time.perf_counter()
        try:
            replies = list(user.reply_batch(contexts))
            if len(replies) != len(idx):
                raise RuntimeError(f"the user gave {len(replies)} replies for {len(idx)} messages")
        except Exception as e:  # the boundary: a user that breaks fails its episodes, the batch goes on
            for j in idx:
                out[j][0].fail(FailureStage.STEP, f"the simulated user failed: {exception_text(e)}")
                failed.add(j)
            continue
        share = (time.perf_counter() - t0) / len(idx)
        for j, reply in zip(idx, replies, strict=True):
            ep, action = out[j]
            ep.env_seconds += share
            out[j] = (ep, UserAnswered(action, reply))
    return [x for j, x in enumerate(out) if j not in failed]


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-")


def episode_id(task: TaskRef, trial: int) -> str:
    """A unique id for trial ``trial`` of ``task``: a readable slug of ``suite/env/task/trial`` and a hash
    of those exact parts. The slug alone is lossy (env ``a-b`` with task ``c`` and env ``a`` with task
    ``b-c`` share it); the hash makes ids differ whenever the parts do. Letters, digits, ``_.-`` only, so
    it is safe as an HTML anchor and a file name."""
    parts = json.dumps([task.suite, task.env_id, task.task_id, trial], ensure_ascii=True)
    return f"{_slug(f'{task.key}/{trial}')}-{hashlib.sha256(parts.encode()).hexdigest()[:12]}"
