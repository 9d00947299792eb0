"""The episode abstraction every suite is played through, and the suite interface.

:class:`TaskRef` names a task, :class:`Episode` plays one (the contract is in :mod:`eval.suites`),
:class:`History` is what a policy sees of it, :class:`Suite` is a named set of tasks that opens
episodes. :func:`split_of` assigns a document to ``train`` or ``heldout``; :func:`episode_id` names
an episode; :func:`assistant_message` and :func:`tool_messages` write the chat messages both kinds
of episode append (:mod:`eval.suites.generated`, :mod:`eval.suites.bfcl`).
"""

from __future__ import annotations

import hashlib
import json
import re
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from eval.errors import FailureStage, PolicyFailure, episode_failure
from gym_envs.errors import ErrorKind

__all__ = ["MAX_RESULT_CHARS", "SPLITS", "Episode", "History", "StepOutcome", "Suite", "TaskRef",
           "assistant_message", "episode_id", "split_of", "tool_messages"]

SPLITS = ("train", "heldout", "all")
MAX_RESULT_CHARS = 4_000  # per call result kept in the turn records (the transcript keeps the full text)


def split_of(key: str, heldout_fraction: float = 0.2, salt: str = "envwright-split-v1") -> str:
    """``"heldout"`` or ``"train"`` for a document id, by a deterministic hash."""
    if not 0.0 <= heldout_fraction <= 1.0:
        raise ValueError(f"heldout_fraction must be in [0, 1], got {heldout_fraction}")
    u = int.from_bytes(hashlib.sha256(f"{salt}:{key}".encode()).digest()[:8], "big") / 2**64
    return "heldout" if u < heldout_fraction else "train"


@dataclass(frozen=True)
class TaskRef:
    """One task of a suite (an episode template): where it lives and what kind it is."""

    suite: str
    env_id: str
    task_id: str
    kind: str
    n_turns: int
    split: str | None = None
    meta: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def key(self) -> str:
        return f"{self.suite}/{self.env_id}/{self.task_id}"


@dataclass
class History:
    """What a policy sees of an episode: the chat so far, the tools, where it stands.

    ``reference()`` exposes the oracle plan of the current turn (calls and final message); only
    the scripted reference policy may use it. Policies may add token counts with ``add_usage``.
    """

    episode_id: str
    task: TaskRef
    trial: int
    seed: int
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    turn: int = 0
    steps_in_turn: int = 0
    usage: dict[str, int] = field(default_factory=lambda: {"prompt_tokens": 0, "completion_tokens": 0,
                                                             "calls": 0})
    _oracle: Callable[[int], tuple[list[dict[str, Any]], str]] | None = field(default=None, repr=False)

    def reference(self) -> tuple[list[dict[str, Any]], str]:
        """The current turn's reference calls (``{"name", "arguments"}``) and final message."""
        if self._oracle is None:
            raise RuntimeError("this episode has no reference trajectory")
        return self._oracle(self.turn)

    def chat(self) -> list[dict[str, Any]]:
        """The messages without envwright's bookkeeping keys (what a backend should receive)."""
        return [{k: v for k, v in m.items() if k not in ("raw", "step")} for m in self.messages]

    def add_usage(self, prompt_tokens: int = 0, completion_tokens: int = 0) -> None:
        self.usage["prompt_tokens"] += int(prompt_tokens or 0)
        self.usage["completion_tokens"] += int(completion_tokens or 0)
        self.usage["calls"] += 1


@dataclass
class StepOutcome:
    """What one action did."""

    observation: str
    turn_ended: bool
    done: bool
    tool_results: list[dict[str, Any]] = field(default_factory=list)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-")


def episode_id(task: TaskRef, trial: int) -> str:
    """A unique id for trial ``trial`` of ``task``: a readable slug of ``suite/env/task/trial`` and a hash
    of those exact parts. The slug alone is lossy (env ``a-b`` with task ``c`` and env ``a`` with task
    ``b-c`` share it); the hash makes ids differ whenever the parts do. Letters, digits, ``_.-`` only, so
    it is safe as an HTML anchor and a file name."""
    parts = json.dumps([task.suite, task.env_id, task.task_id, trial], ensure_ascii=True)
    return f"{_slug(f'{task.key}/{trial}')}-{hashlib.sha256(parts.encode()).hexdigest()[:12]}"


def assistant_message(action: Any, parsed: Any, step: int) -> dict[str, Any]:
    """The canonical (OpenAI-form) assistant message for an action, the action itself under ``raw``."""
    msg: dict[str, Any] = {"role": "assistant", "content": parsed.content, "step": step}
    if parsed.calls:
        msg["tool_calls"] = [
            {"id": f"call_{step}_{i}", "type": "function",
             "function": {"name": c["name"], "arguments": json.dumps(c["arguments"], ensure_ascii=False)}}
            for i, c in enumerate(parsed.calls)]
    # the action as the policy gave it: text, or a JSON-safe copy of a structured action
    msg["raw"] = action if isinstance(action, str) else json.loads(json.dumps(action, default=str))
    return msg


def tool_messages(calls: list[dict[str, Any]], contents: list[str], errors: list[str],
                   step: int) -> list[dict[str, Any]]:
    """The ``tool`` messages of a step: one per call's result, one per unparsable call (a parse error)."""
    out = [{"role": "tool", "tool_call_id": f"call_{step}_{i}", "name": c["name"], "content": text}
           for i, (c, text) in enumerate(zip(calls, contents, strict=True))]
    out += [{"role": "tool", "tool_call_id": None, "name": "parse_error",
             "content": json.dumps({"error": e, "type": ErrorKind.PARSE_ERROR.value})} for e in errors]
    return out


class Episode(ABC):
    """One play of one task (the contract is in :mod:`eval.suites`'s docstring)."""

    def __init__(self, task: TaskRef, *, trial: int, seed: int, max_turn_steps: int):
        if max_turn_steps < 1:
            raise ValueError("max_turn_steps must be >= 1")
        self.task = task
        self.trial = trial
        self.seed = seed
        self.max_turn_steps = max_turn_steps
        self.episode_id = episode_id(task, trial)
        self.history = History(self.episode_id, task, trial, seed, [], [], _oracle=self.reference_turn)
        self.done = False
        self.truncated = False
        self.steps = 0
        self.error: str | None = None
        self.error_stage: FailureStage | None = None

    # -- API -----------------------------------------------------------------------------------
    @abstractmethod
    def reset(self) -> str:
        """Open the episode; returns the first user message (also appended to the history)."""

    @abstractmethod
    def step(self, action: Any) -> StepOutcome:
        """Apply one action (see the module docstring)."""

    @classmethod
    def step_many(cls, episodes: list[Episode], actions: list[Any]) -> list[StepOutcome | Exception]:
        """``episode.step(action)`` for several episodes of this class: the outcome, or the exception
        that step raised. Here they step one by one; a class whose episodes can share the work
        overrides it (:class:`~eval.suites.generated.ToolEnvEpisode` sends all their tool calls to a worker
        in one round trip)."""
        out: list[StepOutcome | Exception] = []
        for ep, action in zip(episodes, actions, strict=True):
            try:
                out.append(ep.step(action))
            except Exception as e:  # the batch's boundary: the exception is this episode's entry (runner: fail)
                out.append(e)
        return out

    @abstractmethod
    def reference_turn(self, turn: int) -> tuple[list[dict[str, Any]], str]:
        """The oracle's calls and final message for ``turn``."""

    @abstractmethod
    def score(self) -> dict[str, float]:
        """``{"episode", "turns", "checks"}`` (unplayed turns count as failed; a suite whose episodes run in the
        ``progress`` mode adds ``progress``)."""

    @abstractmethod
    def turn_records(self) -> list[dict[str, Any]]:
        """Per turn: index, instruction, calls, reply, passed, checks, tags."""

    def close(self) -> None:  # noqa: B027  (optional hook)
        """Free the episode's resources (idempotent)."""

    def fail(self, stage: FailureStage, cause: BaseException | PolicyFailure | str = "") -> None:
        """End the episode because the harness or the policy failed at ``stage`` (recorded, never raised).

        The evaluator's boundary (:mod:`eval.errors`): every exception caught while an episode is
        played comes here."""
        self.error = episode_failure(stage, cause)
        self.error_stage = stage
        self.done = True

    def record(self) -> dict[str, Any]:
        """The JSON-able record of the episode (a line of ``results.jsonl``)."""
        try:
            score, turns = self.score(), self.turn_records()
        except Exception as e:  # the boundary: scoring a broken episode must not crash the run
            score, turns = {"episode": 0.0, "turns": 0.0, "checks": 0.0}, []
            if self.error is None:
                self.fail(FailureStage.SCORING, e)
        return {
            "episode_id": self.episode_id, "suite": self.task.suite, "env_id": self.task.env_id,
            "task_id": self.task.task_id, "kind": self.task.kind, "split": self.task.split,
            "trial": self.trial, "seed": self.seed,
            "passed": score["episode"] == 1.0 and self.error is None, "score": score,
            "steps": self.steps, "truncated": self.truncated, "error": self.error,
            "error_stage": self.error_stage and self.error_stage.value,
            "usage": dict(self.history.usage), "turns": turns, "transcript": self.history.messages,
        }


class Suite(ABC):
    """A named set of tasks that can open episodes."""

    name: str = "suite"

    @abstractmethod
    def tasks(self) -> list[TaskRef]:
        """Every task of the suite, in a stable order."""

    @abstractmethod
    def episode(self, task: TaskRef, *, trial: int, seed: int, max_turn_steps: int = 20) -> Episode:
        """A new (not yet reset) episode of ``task``."""

    @abstractmethod
    def tool_docs(self) -> list[dict[str, Any]]:
        """Every tool as ``{"env_id", "name", "description", "parameters"}`` (for contamination)."""

    @abstractmethod
    def task_texts(self) -> list[tuple[str, str]]:
        """``(task key, all user instructions joined)`` per task (for contamination)."""

    def info(self) -> dict[str, Any]:
        """What the run's summary records about the suite beside its episodes (a benchmark's conversion figures);
        ``{}`` by default."""
        return {}

    def benchmark_agreement(self, *, limit: int | None = None, seed: int = 0) -> dict[str, Any] | None:
        """With ``--agreement``: how our scoring agrees with the benchmark's own evaluator on the suite's first
        ``limit`` tasks, for suites converted from a benchmark (τ²); None for the others."""
        return None

    def close(self) -> None:  # noqa: B027  (optional hook)
        """Release shared resources (executors)."""
