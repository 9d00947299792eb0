"""Gymnasium registration of envwright's environments (one place, idempotent)."""

from __future__ import annotations

import gymnasium as gym

TOOL_ENV_ID = "envwright/ToolEnv-v0"


def register_envs() -> None:
    """Register ``envwright/ToolEnv-v0`` unless it is already registered. ``gymnasium.make_vec`` builds
    a :class:`~gym_envs.vector.ToolVectorEnv` for it unless ``vectorization_mode`` says otherwise."""
    if TOOL_ENV_ID not in gym.registry:
        gym.register(id=TOOL_ENV_ID, entry_point="gym_envs.env:ToolEnv",
                     vector_entry_point="gym_envs.vector:ToolVectorEnv", disable_env_checker=False)
