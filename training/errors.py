"""Errors of the trainer, and the names of the ways an episode can end.

A configuration problem raises :class:`ConfigError` (a ``ValueError``) whose
message names the offending key and says how to fix it. Everything that goes
wrong *during* training (a generation that fails, a tool that crashes the
environment, an episode that runs out of tokens) is data: it ends that one
episode with one of the :data:`EPISODE_STATUSES` and an ``error`` text, and the
batch carries on.

The boundaries, the only places where an exception of any type becomes a result (each such
``except Exception`` says so, and writes it with :func:`gym_envs.errors.exception_text`): the
generators (:mod:`training.generation`: a failed generation is a row that ends with ``"error"``,
``generation_error``) and the rollout (:mod:`training.rollout`: an environment that cannot be made,
reset or stepped ends its episode with ``env_error``; self-distillation's plays likewise).

One failure is not data: an engine whose weights were not synced (:class:`StaleWeightsError`), since every
sample it gives is then from another policy than the one being trained.
"""

from __future__ import annotations

__all__ = ["EPISODE_STATUSES", "FAILURE_STATUSES", "TRUNCATION_STATUSES", "CheckpointError", "ConfigError",
           "StaleWeightsError"]

#: How an episode ended.
#:
#: * ``terminated``: the task's last turn ended (the env scored it);
#: * ``max_steps``: the env's action budget (``rollout.max_steps``) ran out;
#: * ``max_tokens``: the episode's token budget (``rollout.max_completion_tokens``) ran out;
#: * ``turn_too_long``: one action reached ``rollout.max_turn_tokens`` without an end-of-turn token;
#: * ``generation_error``: the generator failed for this episode;
#: * ``env_error``: the environment raised (a lost worker, a broken spec).
EPISODE_STATUSES = ("terminated", "max_steps", "max_tokens", "turn_too_long", "generation_error", "env_error")
TRUNCATION_STATUSES = ("max_steps", "max_tokens", "turn_too_long")
FAILURE_STATUSES = ("generation_error", "env_error")


class ConfigError(ValueError):
    """A training configuration that cannot work; the message says what to change."""


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be read or does not match the run; the message says why."""


class StaleWeightsError(RuntimeError):
    """The generation engine samples from weights the trainer has moved past (it was not synced after an
    optimizer step, or a sync did not reach it); training on those samples would be off-policy without saying
    so. The message says what was seen (:mod:`training.weight_sync`)."""
