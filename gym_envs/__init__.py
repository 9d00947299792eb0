"""envwright's runtime: the environment spec, the check kinds (:mod:`gym_envs.checks`, one class each, registered by
name), the simulated users of scenario tasks (:mod:`gym_envs.users`), the restricted executor, ``ToolEnv``, and the
one episode engine (:mod:`gym_envs.engine`: training and evaluation play their episodes through it, with the messages
and tokens of :mod:`gym_envs.messages`).

``import gym_envs`` registers ``envwright/ToolEnv-v0`` with Gymnasium::

    import gymnasium as gym, gym_envs
    env = gym.make("envwright/ToolEnv-v0", spec="path/to/spec.json", task="t0")
"""

from gym_envs.env import ToolEnv, reset_many, step_many, system_prompt
from gym_envs.parsing import parse_action
from gym_envs.registration import TOOL_ENV_ID, register_envs
from gym_envs.sandbox import CallResult, CheckResult, Limits, ToolError, make_executor
from gym_envs.spec import EnvSpec, SpecError, as_spec, load_spec, parse_spec, save_spec
from gym_envs.vector import ToolVectorEnv

register_envs()

__all__ = [
    "TOOL_ENV_ID",
    "CallResult",
    "CheckResult",
    "EnvSpec",
    "Limits",
    "SpecError",
    "ToolEnv",
    "ToolError",
    "ToolVectorEnv",
    "as_spec",
    "load_spec",
    "make_executor",
    "parse_action",
    "parse_spec",
    "reset_many",
    "save_spec",
    "step_many",
    "system_prompt",
]
