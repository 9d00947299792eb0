"""The one episode engine: episodes of any environment played by any policy, in lock-step.

Role: every place that runs a policy against environments (GRPO rollouts, self-play, distillation, the
benches, every evaluation suite) calls :func:`play` (the lifecycle of one episode is in
:mod:`gym_envs.episode`; what it steps, in :mod:`gym_envs.episode_env`). Each round of the loop:

1. up to ``concurrency`` episodes are active; a finished one's slot is refilled at once (continuous
   batching), and the episodes that join are opened together (``EpisodeEnv.reset_many``);
2. **one** ``policy.act_batch`` call answers every unfinished episode (a token-level policy samples every
   context in one batch); an exception there fails the batch's episodes at stage ``policy``;
3. the answers are applied (:meth:`Episode.apply`: tokens, messages), the episodes' own users answer the plain
   messages of scenario tasks, one batch per user (:func:`~gym_envs.episode.ask_users`), and the environments
   step together (``EpisodeEnv.step_many``: for ``ToolEnv``, :func:`gym_envs.env.step_many`, one round trip
   per worker process for all of their tool calls); the time spent generating and in the environments is
   shared equally among the episodes;
4. finished episodes are settled (score, per-turn records, environment closed) and reported to ``on_done``.

``chat`` (a :class:`~gym_envs.messages.ChatFormat`) makes every episode keep its token record (prompt,
completion, ``env_mask``, log-probabilities), which token-level policies read (:meth:`Episode.context`);
``max_completion_tokens`` and ``max_turn_tokens`` bound it, and so does ``context_window`` (the model's: prompt and
completion together must fit it, so an episode's completion budget is what its prompt leaves; a prompt that leaves
no room fails the episode at stage ``policy`` with a message saying so, instead of a model reading past its
window). ``sync(any_active_here) -> any_active_anywhere``
keeps several processes in step: each calls ``act_batch`` (with no episodes once its own are done) until every
process is done, as the collective operations inside vLLM's server mode and DeepSpeed ZeRO-3 require.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

from gym_envs.episode import Episode, FailureStage, ask_users
from gym_envs.episode_env import EpisodeEnv
from gym_envs.messages import ChatFormat

__all__ = ["OBSERVATION_CHARS", "Policy", "play"]

#: characters of a tool result (or instruction) a model is shown, in training (``rollout.max_observation_chars``)
#: and in evaluation alike; the rest is cut
OBSERVATION_CHARS = 4_000


class Policy(Protocol):
    """What the engine asks for actions: one answer per episode, in order (see :class:`Episode` for what a
    policy reads of an episode and :class:`~gym_envs.episode.Action` for what it may answer)."""

    def act_batch(self, episodes: Sequence[Episode]) -> Sequence[Any]: ...


def _by_class(episodes: Sequence[Episode]) -> dict[type[EpisodeEnv], list[Episode]]:
    groups: dict[type[EpisodeEnv], list[Episode]] = {}
    for ep in episodes:
        groups.setdefault(type(ep.env), []).append(ep)  # type: ignore[arg-type]
    return groups


def _open(episodes: Sequence[Episode]) -> None:
    """Make and reset the environments of episodes that join the batch, a class of environment at a time."""
    for ep in episodes:
        ep.make_env()
    ready = [ep for ep in episodes if ep.env is not None and ep.status == "pending"]
    for cls, group in _by_class(ready).items():
        t0 = time.perf_counter()
        try:
            openings: list[Any] = cls.reset_many([ep.env for ep in group],  # type: ignore[misc]
                                                 [ep.seed for ep in group])
        except Exception as e:  # the boundary: reset_many itself broke, every env of the group fails alike
            openings = [e] * len(group)
        share = (time.perf_counter() - t0) / len(group)
        for ep, opening in zip(group, openings, strict=True):
            ep.start(opening, share)


def _act(live: list[Episode], policy: Policy) -> list[tuple[Episode, Any]]:
    """One ``act_batch`` over the live episodes, applied; returns the actions the environments must step."""
    t0 = time.perf_counter()
    try:
        answers = list(policy.act_batch(live))
        if len(answers) != len(live):
            raise RuntimeError(f"the policy gave {len(answers)} answers for {len(live)} episodes")
    except Exception as e:  # the boundary: the batch's episodes fail alike, the run goes on
        for ep in live:
            ep.fail(FailureStage.POLICY, e)
        return []
    share = (time.perf_counter() - t0) / max(1, len(live))
    todo = []
    for ep, answer in zip(live, answers, strict=True):
        ep.gen_seconds += share
        action = ep.apply(answer)
        if action is not None and not ep.done:
            todo.append((ep, action))
    return todo


def _step(todo: list[tuple[Episode, Any]]) -> None:
    """Step every environment with its action, a class of environment at a time."""
    actions = {id(ep): action for ep, action in todo}
    for cls, group in _by_class([ep for ep, _ in todo]).items():
        t0 = time.perf_counter()
        try:
            outcomes: list[Any] = cls.step_many([ep.env for ep in group],  # type: ignore[misc]
                                                [actions[id(ep)] for ep in group])
        except Exception as e:  # the boundary: step_many itself broke, every env of the group fails alike
            outcomes = [e] * len(group)
        share = (time.perf_counter() - t0) / len(group)
        for ep, outcome in zip(group, outcomes, strict=True):
            ep.observe(outcome, share)


def _fit_window(episodes: Sequence[Episode], window: int | None) -> None:
    """Bound each opened episode's completion by what its prompt leaves of the model's context window."""
    if window is None:
        return
    for ep in episodes:
        if ep.status != "running" or not ep.tracks_tokens:
            continue
        room = window - len(ep.prompt_ids)
        if room < 1:
            ep.fail(FailureStage.POLICY, f"the prompt is {len(ep.prompt_ids)} tokens, which does not fit the model's "
                                         f"context window of {window} tokens: use a model with a longer context, or a "
                                         "shorter system prompt (the policy and the tool schemas)")
        elif ep.max_completion_tokens is None or ep.max_completion_tokens > room:
            ep.max_completion_tokens = room


def _settle_done(active: list[Episode], on_done: Callable[[Episode], None] | None) -> list[Episode]:
    """End the episodes whose token budget is spent, settle every finished one; returns those still active."""
    for ep in active:
        limit = ep.max_completion_tokens
        spent = limit is not None and len(ep.completion_ids) >= limit
        if ep.status == "running" and spent:
            ep.end("max_tokens")
    for ep in [ep for ep in active if ep.done]:
        ep.settle()
        if on_done is not None:
            on_done(ep)
    return [ep for ep in active if not ep.done]


def play(episodes: Iterable[Episode], policy: Policy, *, chat: ChatFormat | None = None,
         max_completion_tokens: int | None = None, max_turn_tokens: int | None = None,
         concurrency: int | None = None, sync: Callable[[bool], bool] | None = None,
         on_done: Callable[[Episode], None] | None = None, context_window: int | None = None) -> list[Episode]:
    """Play every episode to its end (module docstring); returns them in the order given.

    ``concurrency``: episodes in flight (None: all at once; ``sync`` needs all at once). ``on_done`` sees each
    episode as it is settled. ``context_window``: the model's, in tokens (with ``chat``; None: unbounded).
    """
    if context_window is not None and context_window < 1:
        raise ValueError(f"context_window must be >= 1 (or None), got {context_window}")
    eps = list(episodes)
    if concurrency is not None and concurrency < 1:
        raise ValueError(f"concurrency must be >= 1 (or None: all at once), got {concurrency}")
    if sync is not None and concurrency is not None and concurrency < len(eps):
        raise ValueError("sync keeps processes in step over one batch: play every episode at once (concurrency=None)")
    for ep in eps:
        ep.chat_format = chat
        ep.max_completion_tokens = max_completion_tokens
        ep.max_turn_tokens = max_turn_tokens
    pending = deque(eps)
    active: list[Episode] = []
    limit = concurrency or max(1, len(eps))
    try:
        while True:
            fresh = [pending.popleft() for _ in range(min(len(pending), limit - len(active)))]
            if fresh:
                _open(fresh)
                _fit_window(fresh, context_window)
                active += fresh
            active = _settle_done(active, on_done)
            live = [ep for ep in active if ep.status == "running"]
            if sync is not None:
                if not sync(bool(live)):
                    break
            elif not live:
                if not pending:
                    break
                continue
            _step(ask_users(_act(live, policy)))
    finally:
        for ep in active:
            if not ep.done and ep.env is not None:  # interrupted: close what is still open
                ep.env.close()
    return eps
