"""Replaying a known prefix of an episode cheaply: what the validity gate plays its wrong trajectories with.

Role: the methods of :class:`~gym_envs.env.ToolEnv` for callers that replay the same turns many times
(:mod:`envgen.gate.adequacy` plays about a hundred wrong trajectories per environment):

* :meth:`Replays.reset_to_turn`: a reset that makes the calls of the turns before a turn without scoring
  them, then begins that turn (:meth:`Replays.begin_turn`: that beginning alone, on the state as it is);
* :meth:`Replays.call_tools`: tool calls in the current turn, as a step would make them, without building
  the observation; :meth:`Replays.say`: a plain message the task's user answers (a reference's ``say`` item);
* :meth:`Replays.checkpoint` / :meth:`Replays.restore`: a checkpoint of the episode (the executor's, see
  :meth:`gym_envs.sandbox.Session.fork`: only for code that keeps no state but its database, in process)
  and the turns so far, and back to it.

Each gives the state and turn record that playing the same calls through :meth:`ToolEnv.step` gives.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gym_envs.outcome import TurnOutcome
from gym_envs.sandbox import CallResult, Executor, Session
from gym_envs.spec import EnvSpec, Task
from gym_envs.users import UserReply

__all__ = ["EpisodeCheckpoint", "Replays"]


@dataclass
class EpisodeCheckpoint:
    """Where an episode was when :meth:`ToolEnv.checkpoint` made it (see :meth:`ToolEnv.restore`)."""

    token: int
    session: str
    turns: list[TurnOutcome]
    turn_index: int
    steps: int
    transcript: int


def _copy(t: TurnOutcome) -> TurnOutcome:
    """A turn record whose lists are its own (a checkpoint's copy): every field copied, its lists new."""
    new = object.__new__(TurnOutcome)
    new.__dict__.update(t.__dict__)
    new.calls, new.call_actions, new.said = list(t.calls), list(t.call_actions), list(t.said)
    new.checks, new.judged = list(t.checks), list(t.judged)
    return new


class Replays:
    """The prefix-replay methods of :class:`~gym_envs.env.ToolEnv` (see the module docstring)."""

    # what these methods use of ToolEnv, which sets it
    env_spec: EnvSpec
    executor: Executor
    session: Session | None
    task: Task | None
    turns: list[TurnOutcome]
    turn_index: int
    steps: int
    done: bool
    max_steps: int
    transcript: list[tuple[str, str]]
    _system_prompt: str
    _tool_dicts: list[dict[str, Any]]
    _prior: list[str]
    _preset: Any

    if TYPE_CHECKING:
        def _choose_episode(self, seed: int | None, options: dict[str, Any] | None) -> int: ...
        def _open_episode(self, episode_seed: int) -> None: ...
        def _begin_turn(self) -> str: ...
        def _check_live(self) -> None: ...
        def _truncate(self, info: dict[str, Any]) -> float: ...
        def _outcome(self, index: int, instruction: str) -> TurnOutcome: ...
        def _hear(self, message: str) -> UserReply | None: ...
        def _opening_prompt(self) -> str: ...
        def _offer_at(self, turn: int) -> None: ...
        def _refusal(self, name: str, arguments: Any) -> CallResult | None: ...
        def _call(self, name: str, arguments: Any, *, offer_all: bool = False) -> CallResult: ...

    def reset_to_turn(self, turn: int, calls: Sequence[Mapping[str, Any]], *, seed: int | None = None,
                      options: dict[str, Any] | None = None,
                      history: Sequence[str] = ()) -> tuple[str, dict[str, Any]]:
        """Reset as :meth:`reset` does, then make ``calls`` (``{"name", "arguments"}``, in order) and begin
        turn ``turn`` (counted from 0) of the task: the state is the one playing the turns before it with
        those calls gives, without scoring them (they count as unscored and failed in :meth:`score`).

        For callers that replay a known prefix many times: the validity gate puts each wrong trajectory of
        a later turn at that turn's start this way. Returns the turn's observation and the reset's info
        (``info["turn"]`` is ``turn``, ``info["tools"]`` the tools offered at it); each call's result is in
        ``info["prior_results"]``. The tools a task withholds are offered as the turns before revealed them:
        ``calls`` may use those offered at turn ``turn - 1`` (a call of any other is refused, as in a step)."""
        episode_seed = self._choose_episode(seed, options)
        assert self.task is not None
        if not 0 <= turn < len(self.task.turns):
            raise ValueError(f"turn {turn} out of range for task {self.task.id!r} ({len(self.task.turns)} turns)")
        self._open_episode(episode_seed)
        session = self.session
        assert session is not None
        self._system_prompt = self._opening_prompt()
        self._offer_at(turn - 1)
        results: list[CallResult | None] = [self._refusal(c["name"], c.get("arguments")) for c in calls]
        made = iter(self.executor.call_many([(session, c["name"], c.get("arguments"))
                                             for c, r in zip(calls, results, strict=True) if r is None]))
        results = [r if r is not None else next(made) for r in results]
        obs = self.begin_turn(turn, history)
        info = {"task_id": self.task.id, "task_kind": self.task.kind, "turn": turn,
                "n_turns": len(self.task.turns), "tools": self._tool_dicts, "system_prompt": self._system_prompt,
                "env_id": self.env_spec.id, "prior_results": [r.to_dict() for r in results if r is not None]}
        return obs, info

    def begin_turn(self, turn: int, history: Sequence[str] = ()) -> str:
        """Begin turn ``turn`` of the task on the episode's state as it is, as :meth:`reset_to_turn` begins it after
        making its calls: for a caller whose episode already holds the state the calls of the turns before give (the
        validity gate restores a checkpoint made after the reference's calls of the turn before). The turns before
        count as unscored, ``history`` holds the agent's messages in them; returns the turn's observation."""
        assert self.task is not None
        if not 0 <= turn < len(self.task.turns):
            raise ValueError(f"turn {turn} out of range for task {self.task.id!r} ({len(self.task.turns)} turns)")
        self._system_prompt = self._opening_prompt()
        self._offer_at(turn - 1)
        self.turns = [self._outcome(i, t.instruction) for i, t in enumerate(self.task.turns[:turn])]
        self.turn_index = turn
        self.steps = 0
        self.done = False
        self._prior, self._preset = list(history), None
        self.transcript = [("system", self._system_prompt)]
        return self._begin_turn()

    def call_tools(self, calls: Sequence[Mapping[str, Any]], *, offer_all: bool = False, continues: bool = False,
                   ends: bool = True) -> list[CallResult]:
        """Make tool calls (``{"name", "arguments"}``) in the current turn, as a :meth:`step` whose action
        is just these calls would (one step; they are the turn's calls, scored when the turn ends), without
        building an observation or a transcript entry: for callers that read the results themselves (the
        validity gate). ``offer_all``: a tool the task still withholds is called as if it were offered (the
        gate checks that a turn's checks catch it used early, whatever the runtime refuses). Returns the
        calls' results.

        One action's calls may also be made in parts (the gate keeps a checkpoint between two calls of one action):
        ``ends=False`` leaves the action open after these calls, and ``continues=True`` makes these calls in the
        open action instead of beginning another (no calls: just end it). The parts of an action give the step
        count, the turn record and the end of the episode at the step budget that making its calls at once gives."""
        self._check_live()
        assert self.session is not None
        if not continues:
            self.steps += 1
            self.turns[-1].actions += 1
        results = [self._call(c["name"], c.get("arguments"), offer_all=offer_all) for c in calls]
        self.turns[-1].add_calls(results)
        if ends and self.steps >= self.max_steps:
            self._truncate({})
        return results

    def say(self, text: str) -> UserReply | None:
        """Send ``text`` as the agent's plain message in the current turn, as a :meth:`step` with that message would
        (one step), when the task's user answers it: returns the reply (the turn goes on), or None, and then the
        turn is *not* ended (a caller replaying a reference's ``say`` items reports a message the user did not
        answer instead)."""
        self._check_live()
        self.steps += 1
        self.turns[-1].actions += 1
        heard = self._hear(text)
        if self.steps >= self.max_steps:
            self._truncate({})
        return heard

    def checkpoint(self) -> EpisodeCheckpoint | None:
        """A checkpoint of the episode as it is now, between steps, for :meth:`restore`; None when the
        executor has no cheap one (see :meth:`gym_envs.sandbox.Session.fork`): replay instead."""
        self._check_live()
        assert self.session is not None
        token = self.session.fork()
        if token is None:
            return None
        turns = [_copy(t) for t in self.turns]
        return EpisodeCheckpoint(token, self.session.id, turns, self.turn_index, self.steps, len(self.transcript))

    def restore(self, cp: EpisodeCheckpoint) -> bool:
        """Put the episode back where :meth:`checkpoint` made ``cp`` (the state, the turns so far, the step
        count). Returns whether ``cp`` can be restored again (False: the state was rebuilt by replay)."""
        assert self.session is not None
        if cp.session != self.session.id or self.task is None:
            raise RuntimeError("this checkpoint belongs to another episode")
        kept = self.session.restore(cp.token)
        self.turns = [_copy(t) for t in cp.turns]
        self.turn_index, self.steps, self.done = cp.turn_index, cp.steps, False
        self._offer_at(cp.turn_index)
        del self.transcript[cp.transcript:]
        return kept
