"""Where a wrong trajectory starts: its turn's start, or a checkpoint after the reference's first items.

Role: the methods of :class:`~envgen.gate.adequacy.MutationRun` that put the episode where a wrong trajectory of a turn
first differs from the reference, and play the rest of it. A wrong trajectory of turn ``ti`` whose first ``k`` items
are the reference's (the same calls, the same ``say`` items, in the same order: :func:`shared_items`) starts after
them: neither the turns before ``ti`` nor those ``k`` items are played again when a checkpoint holds the episode
there.

* :class:`Trail`: the checkpoints (:meth:`~gym_envs.env.ToolEnv.checkpoint`: for code that keeps no state but its
  database) made at one turn, by how many of the reference's items were played: 0 at the turn's start, then after
  the reference's first items as wrong trajectories ask for them. They nest (SQLite savepoints): going back to one
  drops those made after it, so the trail keeps those at or before it.
* :meth:`Starts._start_at`: the episode at the turn's start with the reference's first ``k`` items played, from the
  deepest checkpoint at or before ``k``, else from the checkpoint after the whole reference of the turn before (the
  turn begun on it: :meth:`~gym_envs.env.ToolEnv.begin_turn`), else from a reset to the turn
  (:meth:`~gym_envs.env.ToolEnv.reset_to_turn`); then the reference's items after it, leaving a checkpoint at ``k``.
* :meth:`Starts._play_items`: a trajectory's items played as the agent's actions (at the turn's pace), its first
  ``made`` items skipped (those :meth:`Starts._start_at` played).

The state, the turn record and the step count are those playing the whole trajectory from the turn's start gives: a
call's result is a function of the state it runs on and its arguments (the code keeps no state of its own), the
scripted user's answer a function of the conversation (which a checkpoint holds: it keeps no state of its own), and
the actions are the trajectory's: the chunking of items into actions (:func:`~gym_envs.spec.reference_plan`) over
its first ``k`` items depends on those items only, and the calls made before a checkpoint are made as parts of the
action that holds them (:meth:`~gym_envs.env.ToolEnv.call_tools` with ``ends=False``), which the trajectory
continues or ends (``continues=True``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from envgen.gate.mutants import Mutant, RefTurn, call_dicts
from gym_envs.env import ToolEnv
from gym_envs.replay import EpisodeCheckpoint
from gym_envs.spec import Say, ToolCall, Turn, reference_plan
from gym_envs.users import ScriptedUser

__all__ = ["Starts", "Trail", "shared_items"]


@dataclass
class Trail:
    """The checkpoints of one turn (see the module docstring): reference items played -> checkpoint."""

    task: str
    turn: int
    points: dict[int, EpisodeCheckpoint] = field(default_factory=dict)


def _same(a: ToolCall | Say, b: ToolCall | Say) -> bool:
    """The same item: the same ``say``, or a call of the same tool with the same arguments, types and order included
    (``1``, ``1.0`` and ``True`` differ)."""
    if a is b:
        return True
    return isinstance(a, ToolCall) and isinstance(b, ToolCall) and a.name == b.name and \
        a.arguments == b.arguments and json.dumps(a.arguments, default=str) == json.dumps(b.arguments, default=str)


def shared_items(ref: RefTurn, items: list[ToolCall | Say], m: Mutant | None, *, says: bool = True) -> int:
    """How many of the reference's first items a trajectory of ``m`` (its ``items``; None: the reference's own) plays
    before it differs from the reference's, up to its first ``say`` item unless ``says`` (the user answers alike
    after a restore): 0 for a mutant that calls withheld tools (another offer)."""
    if m is not None and m.kind == "early":
        return 0
    reference = ref.turn.reference
    k = 0
    while k < len(items) and k < len(reference) and _same(items[k], reference[k]) and \
            (says or not isinstance(reference[k], Say)):
        k += 1
    return k


class Starts:
    """The start methods of :class:`~envgen.gate.adequacy.MutationRun` (see the module docstring)."""

    # what these methods use of MutationRun, which sets it
    env: ToolEnv
    seed: int
    played: int
    stateless: bool
    _trail: Trail | None

    @property
    def _says_kept(self) -> bool:
        """Whether a checkpoint after a ``say`` item gives what replaying it gives: the user keeps no state (the
        scripted user's answer is a function of the conversation)."""
        return isinstance(self.env.user, ScriptedUser)

    def _start_at(self, refs: list[RefTurn], ti: int, k: int = 0) -> int | None:
        """Put the episode at the start of turn ``ti`` with the reference's first ``k`` items played (the action of the
        last, a call, left open) when the turn has checkpoints (code that keeps no state, an executor that makes
        them): from the deepest one at or before ``k``, else from the one after the whole reference of the turn
        before, else after replaying the calls of the turns before it (not scored: the reference passed them),
        leaving one at the turn's start and one at ``k``. Returns how many of the
        reference's items were played (``k``, or 0 without checkpoints: the trajectory plays them), or None when a
        ``say`` of them went unanswered (the trajectory stops there)."""
        env, ref = self.env, refs[ti]
        task = ref.task
        self.played += 1
        trail = self._trail
        at = None
        if trail is not None and trail.task == task.id and trail.turn == ti:
            at = max((j for j in trail.points if j <= k), default=None)
        if trail is not None and at is not None:
            kept = env.restore(trail.points[at])
            for j in [j for j in trail.points if j > at or (j == at and not kept)]:
                del trail.points[j]  # gone with the savepoint rolled back to (or rebuilt from the log)
            if not kept:
                self._checkpoint(trail, at)
        else:
            before = len(refs[ti - 1].turn.reference) if ti else 0
            if trail is not None and ti and trail.task == task.id and trail.turn == ti - 1 and before in trail.points:
                env.restore(trail.points[before])  # the turn before, its reference played: begin this one on it
                env.begin_turn(ti, ref.history)
            elif ti:
                env.reset_to_turn(ti, [{"name": c.name, "arguments": c.arguments} for prior in refs[:ti]
                                       for c in prior.calls], options={"task": task.id, "episode_seed": self.seed},
                                  history=ref.history)
            else:
                env.reset(options={"task": task.id, "episode_seed": self.seed})
            at = 0
            trail = self._trail = Trail(task.id, ti)
            self._checkpoint(trail, 0)
            if not trail.points:
                return 0
        if k > at:
            if not self._advance(ref.turn, at, k):
                return None
            self._checkpoint(trail, k)
        return k

    def _checkpoint(self, trail: Trail, k: int) -> None:
        """A checkpoint of the episode as it is now, at ``k`` reference items played, when the code keeps no state
        and the executor makes one."""
        cp = self.env.checkpoint() if self.stateless else None
        if cp is not None:
            trail.points[k] = cp

    def _advance(self, turn: Turn, made: int, k: int) -> bool:
        """Play the reference's items ``made`` to ``k`` (its first ``made`` played, the action of the last, a call,
        open), each call in the action that holds it in the reference's plan, the last action left open; False when
        a ``say`` went unanswered."""
        env, pace = self.env, turn.pace()
        items = turn.reference
        run = next((j + 1 for j in range(made - 1, -1, -1) if isinstance(items[j], Say)), 0)  # its calls start here
        for i in range(made, k):
            item = items[i]
            open_action = i > 0 and not isinstance(items[i - 1], Say)
            if isinstance(item, Say):
                if open_action:
                    env.call_tools([], continues=True)  # the action before ends
                if env.say(item.say) is None:
                    return False
                run = i + 1
                continue
            begins = not open_action or (pace is not None and (i - run) % pace == 0)
            if begins and open_action:
                env.call_tools([], continues=True)
            env.call_tools(call_dicts([item]), continues=not begins, ends=False)
        return True

    def _play_items(self, turn: Turn, items: list[ToolCall | Say], *, offer_all: bool = False,
                    made: int = 0) -> str | None:
        """Play a trajectory's items in the current turn as the agent's actions
        (:func:`~gym_envs.spec.reference_plan` at the turn's pace): calls made (with ``offer_all``, a tool the task
        still withholds as if it were offered), each ``say`` sent as a plain message the user answers. ``made``: its
        first items are played already, the action of the last, a call, open (:meth:`_start_at`). Returns the first
        ``say`` the user did not answer (the turn did not go on as the reference's), else None."""
        pending = made
        for action in reference_plan(items, turn.pace()):
            if isinstance(action, Say):
                if pending:
                    pending -= 1
                elif self.env.say(action.say) is None:
                    return action.say
                continue
            if pending:
                n = min(pending, len(action))
                pending -= n
                if not pending:  # the open action: its other calls, and its end
                    self.env.call_tools(call_dicts(action[n:]), offer_all=offer_all, continues=True)
                continue  # (an action played whole before the start was ended there)
            self.env.call_tools(call_dicts(action), offer_all=offer_all)
        return None
