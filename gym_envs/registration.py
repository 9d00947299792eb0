"""Gymnasium registration of envwright's environments (one place, idempotent).

``gymnasium.make("envwright/ToolEnv-v0", ...)`` builds through :func:`make_tool_env`, which refuses an
option ``ToolEnv`` does not take with the closest names (``rewad_mode`` -> ``reward_mode``), where
Python's own ``TypeError`` would only name the typo.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from gym_envs.env import ToolEnv, check_tool_env_options

__all__ = ["TOOL_ENV_ID", "make_tool_env", "register_envs"]

TOOL_ENV_ID = "envwright/ToolEnv-v0"


def make_tool_env(**options: Any) -> ToolEnv:
    """A :class:`~gym_envs.env.ToolEnv` from keyword options, an unknown option refused with a suggestion."""
    check_tool_env_options(options)
    return ToolEnv(**options)


def register_envs() -> None:
    """Register ``envwright/ToolEnv-v0`` unless it is already registered. ``gymnasium.make_vec`` builds
    a :class:`~gym_envs.vector.ToolVectorEnv` for it unless ``vectorization_mode`` says otherwise."""
    if TOOL_ENV_ID not in gym.registry:
        gym.register(id=TOOL_ENV_ID, entry_point="gym_envs.registration:make_tool_env",
                     vector_entry_point="gym_envs.vector:ToolVectorEnv", disable_env_checker=False)
