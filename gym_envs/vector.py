"""``ToolVectorEnv``: a vector of :class:`~gym_envs.env.ToolEnv` whose steps travel together.

Role: the vector env that ``gymnasium.make_vec("envwright/ToolEnv-v0", num_envs=N, ...)`` builds
by default (``vectorization_mode="sync"`` and ``"async"`` still give Gymnasium's own). It is a
:class:`gymnasium.vector.SyncVectorEnv` (same spaces, autoreset modes, ``reset_mask``, ``infos``
layout, ``call``/``get_attr``/``set_attr``) whose ``reset`` and ``step`` go through
:func:`~gym_envs.env.reset_many` and :func:`~gym_envs.env.step_many`: the sub-envs share one
executor (the process-wide default unless ``executor=`` says otherwise), so a step of N envs costs
one round trip per worker process instead of one per tool call.

Contract: every method returns exactly what ``SyncVectorEnv`` over the same sub-envs returns; the
one difference is on failure, where a sub-env's exception is raised after the other sub-envs have
been stepped (``SyncVectorEnv`` stops at the first).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from copy import deepcopy
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from gymnasium.vector.utils import concatenate, iterate

from gym_envs.env import ToolEnv, check_tool_env_options, reset_many, step_many

__all__ = ["ToolVectorEnv"]


class ToolVectorEnv(SyncVectorEnv):
    """``SyncVectorEnv`` over ``ToolEnv`` sub-envs, batching their executors' round trips.

    Args:
        env_fns: functions that each make a :class:`~gym_envs.env.ToolEnv`; or leave it out and give
            ``num_envs`` and the ``ToolEnv`` keyword arguments (``spec=``, ``task=``, ...), as
            ``gymnasium.make_vec`` does.
        num_envs: the number of sub-envs when ``env_fns`` is left out.
        copy, observation_mode, autoreset_mode: as for ``SyncVectorEnv``.
    """

    def __init__(self, env_fns: Iterator[Callable[[], ToolEnv]] | Sequence[Callable[[], ToolEnv]] | None = None,
                 *, num_envs: int | None = None, copy: bool = True, observation_mode: str = "same",
                 autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP, **env_kwargs: Any):
        if env_fns is None:
            if num_envs is None or num_envs < 1:
                raise ValueError("give env_fns, or num_envs >= 1 and the ToolEnv arguments (spec=, task=, ...)")
            limit = env_kwargs.pop("max_episode_steps", None)  # Gymnasium's name for ToolEnv's max_steps
            if limit is not None and env_kwargs.setdefault("max_steps", limit) != limit:
                raise ValueError(f"max_episode_steps={limit} and max_steps={env_kwargs['max_steps']} disagree; "
                                 "give one of them")
            check_tool_env_options(env_kwargs)
            env_fns = [lambda: ToolEnv(**env_kwargs)] * num_envs
        elif env_kwargs or num_envs is not None:
            raise ValueError("give either env_fns or num_envs with ToolEnv arguments, not both")
        super().__init__(list(env_fns), copy=copy, observation_mode=observation_mode, autoreset_mode=autoreset_mode)
        for env in self.envs:
            if not isinstance(env, ToolEnv):  # a wrapper's own step would be bypassed
                self.close()
                raise TypeError(f"ToolVectorEnv steps ToolEnv sub-envs directly; got {type(env).__name__} "
                                "(make them with ToolEnv(...), not gymnasium.make, or use SyncVectorEnv)")
        self.tool_envs: list[ToolEnv] = list(self.envs)  # type: ignore[arg-type]

    def reset(self, *, seed: int | list[int | None] | None = None,
              options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        n = self.num_envs
        seeds: list[int | None] = ([None] * n if seed is None else [seed + i for i in range(n)]
                                   if isinstance(seed, int) else list(seed))
        if len(seeds) != n:
            raise ValueError(f"If seeds are passed as a list the length must match num_envs={n} but got "
                             f"length={len(seeds)}.")
        mask = np.ones((n,), dtype=np.bool_)
        if options is not None and "reset_mask" in options:
            options = dict(options)
            mask = options.pop("reset_mask")
            if not isinstance(mask, np.ndarray):
                raise TypeError(f"`options['reset_mask']` must be a numpy array, got {type(mask)}")
            if mask.shape != (n,):
                raise ValueError(f"`options['reset_mask']` must have shape `({n},)`, got {mask.shape}")
            if mask.dtype != np.bool_:
                raise TypeError(f"`options['reset_mask']` must have `dtype=np.bool_`, got {mask.dtype}")
            if not np.any(mask):
                raise ValueError("`options['reset_mask']` must contain a boolean array with at least one True "
                                 f"value, got reset_mask={mask}")
        chosen = [i for i in range(n) if mask[i]]
        results = reset_many([self.tool_envs[i] for i in chosen], seeds=[seeds[i] for i in chosen],
                             options=[options] * len(chosen))
        self._terminations[mask] = False
        self._truncations[mask] = False
        self._autoreset_envs[mask] = False
        infos: dict[str, Any] = {}
        for i, (obs, info) in zip(chosen, results, strict=True):
            self._env_obs[i] = obs
            infos = self._add_info(infos, info, i)
        self._observations = concatenate(self.single_observation_space, self._env_obs, self._observations)
        return deepcopy(self._observations) if self.copy else self._observations, infos

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        n = self.num_envs
        actions = list(iterate(self.action_space, actions))
        mode = self.autoreset_mode
        if mode == AutoresetMode.DISABLED:
            assert not self._autoreset_envs.any(), f"{self._autoreset_envs=}"
        elif mode not in (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP):
            raise ValueError(f"Unexpected autoreset mode, {mode}")
        resetting = [i for i in range(n) if mode == AutoresetMode.NEXT_STEP and self._autoreset_envs[i]]
        stepping = [i for i in range(n) if i not in resetting]
        env_infos: list[dict[str, Any]] = [{} for _ in range(n)]
        for i, (obs, info) in zip(resetting, reset_many([self.tool_envs[i] for i in resetting]), strict=True):
            self._env_obs[i], env_infos[i] = obs, info
            self._rewards[i] = 0.0
            self._terminations[i] = self._truncations[i] = False
        stepped = step_many([self.tool_envs[i] for i in stepping], [actions[i] for i in stepping])
        for i, (obs, reward, terminated, truncated, info) in zip(stepping, stepped, strict=True):
            self._env_obs[i], self._rewards[i], env_infos[i] = obs, reward, info
            self._terminations[i], self._truncations[i] = terminated, truncated
        finals: dict[int, dict[str, Any]] = {}
        if mode == AutoresetMode.SAME_STEP:
            done = [i for i in stepping if self._terminations[i] or self._truncations[i]]
            for i, (obs, info) in zip(done, reset_many([self.tool_envs[i] for i in done]), strict=True):
                finals[i] = {"final_obs": self._env_obs[i], "final_info": env_infos[i]}
                self._env_obs[i], env_infos[i] = obs, info
        infos: dict[str, Any] = {}
        for i in range(n):  # in index order, as SyncVectorEnv builds them
            if i in finals:
                infos = self._add_info(infos, finals[i], i)
            infos = self._add_info(infos, env_infos[i], i)
        self._observations = concatenate(self.single_observation_space, self._env_obs, self._observations)
        self._autoreset_envs = np.logical_or(self._terminations, self._truncations)
        return (deepcopy(self._observations) if self.copy else self._observations, np.copy(self._rewards),
                np.copy(self._terminations), np.copy(self._truncations), infos)
