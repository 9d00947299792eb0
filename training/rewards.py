"""Rewards: small pure functions of an episode's outcome or a proposal's verdict.

Solver side (an episode over ToolEnv):

* :func:`episode_reward` -- the env's score in the configured mode (``episode``:
  1.0 iff every check of every turn passed; ``turns``; ``checks``), 0.0 for an
  episode that failed before it could be scored;
* :func:`solver_reward` -- that, minus ``parse_error_penalty`` per unparsable
  tool call (0 by default: the env's checks are the reward);
* :func:`solve_rate` -- the share of a task's G episodes that passed (what the
  proposer reward is computed from).

Proposer side: :func:`proposer_reward` is envgen's (Skill-SP or SPADE), reused
as it is, so the self-play trainer and the generation pipeline agree.

TRL side: :func:`env_reward` is a ``GRPOTrainer`` reward function that returns
the per-episode rewards the rollout function computed (forwarded as the extra
field ``env_reward``) and logs rollout statistics through ``log_metric``.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from typing import Any

from envgen.skills.rewards import proposer_reward

__all__ = ["env_reward", "episode_passed", "episode_reward", "proposer_reward", "solve_rate", "solver_reward"]


def episode_reward(score: dict[str, float] | None, mode: str = "episode") -> float:
    """The env's score of an episode in ``mode`` (0.0 when the episode was never scored)."""
    if not score:
        return 0.0
    if mode not in score:
        raise ValueError(f"unknown reward mode {mode!r}; the env scores {sorted(score)}")
    return float(score[mode])


def episode_passed(score: dict[str, float] | None) -> bool:
    """True when every check of every turn passed."""
    return bool(score) and float(score.get("episode", 0.0)) == 1.0  # type: ignore[union-attr]


def solver_reward(score: dict[str, float] | None, *, mode: str = "episode", parse_errors: int = 0,
                  parse_error_penalty: float = 0.0) -> float:
    """:func:`episode_reward` minus ``parse_error_penalty`` per unparsable tool call."""
    return episode_reward(score, mode) - parse_error_penalty * parse_errors


def solve_rate(passed: Sequence[bool]) -> float:
    """Share of episodes that passed (0.0 for none)."""
    return sum(bool(p) for p in passed) / len(passed) if passed else 0.0


def env_reward(prompts: list[Any], completions: list[Any], env_reward: list[float] | None = None,
               log_metric: Callable[[str, float], None] | None = None, **kwargs: Any) -> list[float]:
    """TRL reward function: the rollout's per-episode reward (extra field ``env_reward``).

    Also logs the rollout's statistics (``episode_passed``, ``env_seconds``, ``gen_seconds``,
    ``tool_calls``, statuses) when TRL passes ``log_metric``.
    """
    if env_reward is None:
        raise ValueError("env_reward needs the rollout function's 'env_reward' field; train with "
                         "training.solver.make_rollout_func")
    if log_metric is not None:
        for key in ("episode_passed", "env_seconds", "gen_seconds", "tool_calls", "tool_errors", "steps"):
            values = kwargs.get(key)
            if values:
                log_metric(f"env/{key}", statistics.fmean(float(v) for v in values))
        statuses = kwargs.get("episode_status") or []
        for status in sorted(set(statuses)):
            log_metric(f"env/status_{status}", statuses.count(status) / len(statuses))
    return [float(r) for r in env_reward]
