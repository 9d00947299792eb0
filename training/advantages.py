"""Advantages: pure functions from rewards to per-sample learning signals.

* :func:`group_advantages` -- GRPO's baseline: each reward minus the mean of its
  group (the G rollouts of one task), optionally divided by the group's
  (``scale="group"``) or the batch's (``scale="batch"``) standard deviation.
* :func:`normalize_per_role` -- self-play trains one model on two roles whose
  rewards live on different scales (a proposer reward in [-1, 1] from a solve
  rate, a solver reward in [0, 1] from checks). Each role's advantages are
  standardised over that role's samples of the batch only, so neither role's
  scale or sample count swamps the other's signal.
* :func:`selfplay_advantages` -- both together: every sample gets its group's
  baseline first (a solver group is the ``k`` episodes of one task, a proposer
  group the ``G`` proposals sampled from one prompt: the same document and the
  same routed skill), then every role is standardised.

A role or group whose rewards are all equal gets advantage 0: it carries no signal
(so does a group of one sample: it has no baseline).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Hashable, Sequence

__all__ = ["group_advantages", "normalize_per_role", "selfplay_advantages"]


def _std(xs: Sequence[float]) -> float:
    return statistics.pstdev(xs) if len(xs) > 1 else 0.0


def group_advantages(rewards: Sequence[float], groups: Sequence[Hashable], *, scale: str = "group",
                     eps: float = 1e-4) -> list[float]:
    """Reward minus its group's mean, scaled by ``group`` or ``batch`` std (or ``none``)."""
    if len(rewards) != len(groups):
        raise ValueError(f"{len(rewards)} rewards for {len(groups)} group labels")
    if scale not in ("group", "batch", "none"):
        raise ValueError(f"scale must be 'group', 'batch' or 'none', got {scale!r}")
    members: dict[Hashable, list[int]] = defaultdict(list)
    for i, g in enumerate(groups):
        members[g].append(i)
    out = [0.0] * len(rewards)
    for idx in members.values():
        vals = [rewards[i] for i in idx]
        mean = statistics.fmean(vals)
        std = _std(vals)
        for i in idx:
            out[i] = rewards[i] - mean
            if scale == "group":
                out[i] = out[i] / (std + eps) if std > 0 else 0.0
    if scale == "batch":
        std = _std(list(rewards))
        out = [a / (std + eps) if std > 0 else 0.0 for a in out]
    return out


def normalize_per_role(values: Sequence[float], roles: Sequence[str], *, eps: float = 1e-4) -> list[float]:
    """Standardise ``values`` separately over each role's samples: ``(x - mean_role) / std_role``."""
    if len(values) != len(roles):
        raise ValueError(f"{len(values)} values for {len(roles)} role labels")
    return group_advantages(values, roles, scale="group", eps=eps)


def selfplay_advantages(rewards: Sequence[float], roles: Sequence[str], groups: Sequence[Hashable]) -> list[float]:
    """Group baseline within each (role, group), then per-role standardisation (module docstring)."""
    if not len(rewards) == len(roles) == len(groups):
        raise ValueError(f"{len(rewards)} rewards, {len(roles)} roles and {len(groups)} groups: one each per sample")
    centred = group_advantages(rewards, list(zip(roles, groups, strict=True)), scale="none")
    return normalize_per_role(centred, roles)
