"""Every place that names the reward modes names the runtime's own (``gym_envs.env.REWARD_MODES``): the command-line
choices are spelled out so that the CLI does not import Gymnasium, and this keeps them from drifting."""

from __future__ import annotations

import typing

import click

from gym_envs.env import REWARD_MODES


def _choices(command: click.Command, option: str) -> tuple[str, ...]:
    (param,) = [p for p in command.params if p.name == option]
    assert isinstance(param.type, click.Choice)
    return tuple(param.type.choices)


def test_the_commands_offer_every_reward_mode() -> None:
    from envgen.cli.interop import serve
    from training.bench.learning import command as learning

    assert _choices(serve, "reward_mode") == REWARD_MODES
    assert _choices(learning, "reward_mode") == REWARD_MODES


def test_the_training_config_takes_every_reward_mode() -> None:
    from training.config import RolloutConfig

    hints = typing.get_type_hints(RolloutConfig)
    assert typing.get_args(hints["reward_mode"]) == REWARD_MODES


def test_trl_environments_take_every_reward_mode() -> None:
    import pytest

    from gym_envs.examples import load_example
    from training.trl_env import environment_class

    spec = load_example("library-loans")
    for mode in REWARD_MODES:
        assert environment_class(spec, reward_mode=mode).reward_mode == mode
    with pytest.raises(ValueError, match="reward_mode must be one of episode, turns, checks, progress"):
        environment_class(spec, reward_mode="dense")
