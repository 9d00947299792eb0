"""Training and held-out task sets of the solver."""

from __future__ import annotations

import pytest

from gym_envs.examples import load_all
from training.config import config_from_dict
from training.errors import ConfigError
from training.solver import TaskPool


def _cfg(**solver: object) -> object:
    return config_from_dict({"model": {"name_or_path": "x"}, "solver": {"envs": ["examples"], **solver}})


def test_holdout_tasks_and_envs_are_disjoint_from_training() -> None:
    specs = load_all()
    cfg = _cfg(holdout_tasks=1, holdout_envs=2)
    train = TaskPool.from_config(cfg)
    held = TaskPool.from_config(cfg, holdout=True)
    assert not set(train.keys()) & set(held.keys())
    held_envs = {s.id for s in specs[-2:]}
    assert not {t.spec.id for t in train.tasks.values()} & held_envs
    # every task of the held-out environments, and the last task of each training environment
    assert len(held) == sum(len(s.tasks) for s in specs[-2:]) + len(specs) - 2
    assert len(train) + len(held) == sum(len(s.tasks) for s in specs)


def test_holding_out_every_environment_is_refused() -> None:
    with pytest.raises(ConfigError, match="hold out fewer"):
        TaskPool.from_config(_cfg(holdout_envs=len(load_all())))
    with pytest.raises(ValueError, match="holdout_envs must be >= 0"):
        _cfg(holdout_envs=-1)
