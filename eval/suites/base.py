"""The suite interface, and what an evaluated episode records.

A :class:`Suite` is a named set of tasks (:class:`~gym_envs.episode.TaskRef`) that opens episodes of the one
episode engine (:class:`~gym_envs.episode.Episode`, played by :func:`gym_envs.engine.play`): each suite gives
its tasks' environments as :class:`~gym_envs.episode.EpisodeEnv` objects and their reference plan as the
episode's oracle, and the engine builds what the policy sees (:mod:`gym_envs.messages`), exactly as training
does. :func:`eval_record` is an episode's line of ``results.jsonl``. :func:`split_of` assigns a document to
``train`` or ``heldout``.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from typing import Any, ClassVar

from gym_envs.episode import Episode, TaskRef

__all__ = ["MAX_RESULT_CHARS", "SPLITS", "Suite", "eval_record", "split_of"]

SPLITS = ("train", "heldout", "all")
MAX_RESULT_CHARS = 4_000  # per call result kept in the turn records (the transcript keeps the full text)
_UNSCORED = {"episode": 0.0, "turns": 0.0, "checks": 0.0}


def split_of(key: str, heldout_fraction: float = 0.2, salt: str = "envwright-split-v1") -> str:
    """``"heldout"`` or ``"train"`` for a document id, by a deterministic hash."""
    if not 0.0 <= heldout_fraction <= 1.0:
        raise ValueError(f"heldout_fraction must be in [0, 1], got {heldout_fraction}")
    u = int.from_bytes(hashlib.sha256(f"{salt}:{key}".encode()).digest()[:8], "big") / 2**64
    return "heldout" if u < heldout_fraction else "train"


def eval_record(ep: Episode) -> dict[str, Any]:
    """The JSON-able record of a settled episode (a line of ``results.jsonl``): score (zeros when it was never
    scored), per-turn records, the transcript, how it ended (``error`` and ``error_stage`` on a failure)."""
    rec = {
        "episode_id": ep.episode_id, "suite": ep.task.suite, "env_id": ep.task.env_id,
        "task_id": ep.task.task_id, "kind": ep.task.kind, "split": ep.task.split,
        "trial": ep.trial, "seed": ep.seed, "passed": ep.passed, "score": ep.score or dict(_UNSCORED),
        "steps": len(ep.steps), "truncated": ep.truncated, "error": ep.error,
        "error_stage": ep.stage and ep.stage.value, "usage": dict(ep.usage), "turns": ep.turns,
        "transcript": ep.messages, "seconds": round(ep.seconds, 4),
    }
    if ep.close_error is not None:
        rec["close_error"] = ep.close_error
    return rec


class Suite(ABC):
    """A named set of tasks that can open episodes.

    ``Options`` is the dataclass of the options the registry builds it with, and :meth:`from_spec` opens it
    from a CLI spec (:func:`eval.suites.make_suite`).
    """

    name: str = "suite"
    Options: ClassVar[type]

    @classmethod
    @abstractmethod
    def from_spec(cls, arg: str, options: Any) -> Suite:
        """The suite a CLI spec names (``arg``: what follows ``name:``), with its built ``Options``."""

    @abstractmethod
    def tasks(self) -> list[TaskRef]:
        """Every task of the suite, in a stable order."""

    @abstractmethod
    def episode(self, task: TaskRef, *, trial: int, seed: int, max_turn_steps: int = 20) -> Episode:
        """A new (not yet opened) episode of ``task``: its environment, oracle and step budget."""

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
