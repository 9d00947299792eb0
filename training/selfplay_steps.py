"""The pieces of a self-play round between the rollout and the optimizer: samples, advantages, the update schedule.

* :func:`draw_tasks` -- which tasks of a proposed environment the solver plays (a
  seeded draw, so every task kind gets played, not only the first);
* :func:`proposer_samples` -- one sample per proposal: the tokens the policy
  sampled (prompt and completion, all trained), its reward, and its GRPO group
  (the ``G`` proposals of one prompt);
* :func:`solver_samples` -- one sample per solver episode: model tokens trained,
  environment tokens masked, its reward, its group (the ``k`` episodes of one task
  of one environment);
* :func:`assign_advantages` -- group baselines per role, then per-role
  standardisation (:func:`training.advantages.selfplay_advantages`);
* :func:`scheduled_update` -- the optimizer steps of the round's GRPO phase
  (``selfplay.schedule``: ``joint`` or ``sequential``), with the statistics of
  each role (``update.proposer.samples``: the proposer samples that carried a
  learning signal into the step); each phase is one optimizer step, or
  ``grpo.num_iterations`` passes of ``grpo.steps_per_generation`` steps.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

from gym_envs.seeding import stable_seed
from gym_envs.spec import EnvSpec
from training.advantages import selfplay_advantages
from training.loss import Sample, update
from training.rollout import Episode

__all__ = ["assign_advantages", "draw_tasks", "proposer_samples", "role_counts", "scheduled_update",
           "solver_samples"]


def draw_tasks(spec: EnvSpec, n: int | None, seed: int) -> list[str]:
    """``n`` task ids of ``spec`` (all when ``n`` is None or larger), drawn with a seed, in the spec's order (each
    episode gets the actions its task needs: :func:`training.rollout.step_budget`)."""
    ids = [t.id for t in spec.tasks]
    if n is None or n >= len(ids):
        return ids
    keep = set(random.Random(stable_seed(seed, spec.id)).sample(ids, n))
    return [i for i in ids if i in keep]


def proposer_samples(candidates: Sequence[Any], record_for: Callable[[str | None], Any],
                     weight: float) -> tuple[list[Sample], int]:
    """Samples of the round's proposals (``record_for(raw) -> Sampled``); also how many had nothing sampled."""
    out, missing = [], 0
    for c in candidates:
        rec = record_for(c.proposal.raw)
        if rec is None or not rec.completion_ids:
            missing += 1  # a generation error: nothing was sampled, nothing to learn from
            continue
        out.append(Sample(rec.prompt_ids, rec.completion_ids, [1] * len(rec.completion_ids), role="proposer",
                          weight=weight, meta={"reward": c.reward, "group": c.group, "valid": c.valid}))
    return out, missing


def solver_samples(episodes: Sequence[Episode], groups: Sequence[str], weight: float) -> list[Sample]:
    """Samples of the solver's episodes; ``groups[i]`` is episode ``i``'s GRPO group. Each carries the sampler's
    log-probabilities of its tokens (the episodes were sampled at the update's temperature, without a grammar:
    the sampler-trainer gap is measured on them)."""
    return [Sample(e.prompt_ids, e.completion_ids, e.env_mask, role="solver", weight=weight,
                   meta={"reward": e.reward, "group": g},
                   sampler_logprobs=list(e.logprobs) if len(e.logprobs) == len(e.completion_ids) else None)
            for e, g in zip(episodes, groups, strict=True) if e.completion_ids]


def assign_advantages(samples: Sequence[Sample]) -> None:
    """Set every sample's advantage (group baseline per role, then per-role standardisation)."""
    advs = selfplay_advantages([s.meta["reward"] for s in samples], [s.role for s in samples],
                               [s.meta["group"] for s in samples])
    for s, a in zip(samples, advs, strict=True):
        s.advantage = a


def role_counts(samples: Sequence[Sample], role: str) -> dict[str, float]:
    """What a step learns from one role: samples with a signal (advantage not 0, tokens to train) and tokens."""
    live = [s for s in samples if s.role == role and s.trained_tokens > 0 and s.advantage != 0.0]
    return {"samples": float(len(live)), "trained_tokens": float(sum(s.trained_tokens for s in live))}


def scheduled_update(model: Any, optimizer: Any, samples: Sequence[Sample], *, schedule: str, pad_id: int,
                     cfg: Any, reference: Any = None, seed: int = 0) -> dict[str, Any]:
    """The GRPO phase's optimizer step(s) (module docstring; each role's phase is
    :func:`training.loss.update`'s steps: one, or ``grpo.num_iterations`` x ``grpo.steps_per_generation``);
    returns ``{"proposer": {...}, "solver": {...}, "steps": n, ...}`` where each role's ``samples`` counts the
    samples that carried a signal. ``seed`` (the round) varies the mini-batches' shuffle."""
    out: dict[str, Any] = {"schedule": schedule}
    if schedule == "joint":
        stats = update(model, optimizer, list(samples), pad_id=pad_id, cfg=cfg, reference=reference, seed=seed)
        out.update(stats)
        out["steps"] = int(stats["steps"])
        for role in ("proposer", "solver"):
            out[role] = role_counts(samples, role)
        return out
    if schedule != "sequential":
        raise ValueError(f"schedule must be 'joint' or 'sequential', got {schedule!r}")
    out["steps"] = 0
    for role in ("proposer", "solver"):
        stats = update(model, optimizer, [s for s in samples if s.role == role], pad_id=pad_id, cfg=cfg,
                       reference=reference, seed=seed)
        out[role] = stats
        out["steps"] += int(stats["steps"])
    out["samples"] = out["proposer"]["samples"] + out["solver"]["samples"]
    out["loss"] = out["proposer"]["loss"] + out["solver"]["loss"]
    return out
