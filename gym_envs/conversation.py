"""A turn's conversation and its verdicts: the user who answers the agent, and the checks scored on the turn.

Role: the methods of :class:`~gym_envs.env.ToolEnv` that know what was said in a turn (gym_envs/ENVSPEC.md, "A turn
with a user"):

* :meth:`Conversation._hear`: a plain message of the agent goes to the task's user (a task with a ``scenario``);
  its :class:`~gym_envs.users.UserReply` goes on with the turn, or ``None`` lets the message end it. The user is
  ``ToolEnv``'s ``user`` (the :class:`~gym_envs.users.ScriptedUser` by default), or the reply the episode engine
  decided for this message (:meth:`Conversation.preset_reply`: a model-backed user answers a batch of episodes at
  once); once the user has replied ``max_replies`` times in a turn it is not asked again;
* :meth:`Conversation.user_context`: what the user is asked about a message (the engine asks its own user with it);
* :meth:`Conversation.turn_view`: the turn as checks see it (its calls with the action that made each, the
  messages the user answered, the agent's messages of earlier turns), and :meth:`Conversation.score_reply` the
  turn's checks on it (:func:`gym_envs.checks.judge`, one round trip to the sandbox).

A ``judged`` check is never scored here: it is recorded undecided in the turn's ``judged`` list.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from gym_envs.checks import BaseCheck, CallView, Said, TurnView, answers_of, judge
from gym_envs.outcome import TurnOutcome
from gym_envs.sandbox import CheckResult, Session
from gym_envs.spec import Task, Turn
from gym_envs.users import UserContext, UserReply, UserSimulator

__all__ = ["Conversation"]


class Conversation:
    """The conversation and scoring methods of :class:`~gym_envs.env.ToolEnv` (see the module docstring)."""

    # what these methods use of ToolEnv, which sets it
    session: Session | None
    task: Task | None
    turns: list[TurnOutcome]
    turn_index: int
    user: UserSimulator
    _preset: UserReply | None
    _prior: list[str]  #: the agent's messages of the turns before the first played one (a replayed prefix)

    if TYPE_CHECKING:
        def _check_live(self) -> None: ...

    # -- the user ------------------------------------------------------------------------------------------------
    def preset_reply(self, reply: UserReply) -> None:
        """Use ``reply`` as the user's answer to the next plain message (the episode engine's user decided it)."""
        self._preset = reply

    def user_context(self, message: str) -> UserContext | None:
        """What the user is asked when the agent sends ``message`` now; None when no user answers it (a task without
        a scenario, or a user that has replied ``max_replies`` times in this turn)."""
        task = self.task
        if task is None or task.scenario is None or not self.turns:
            return None
        outcome = self.turns[-1]
        if len(outcome.said) >= task.scenario.max_replies:
            return None
        conversation: list[tuple[str, str]] = []
        for t in self.turns:
            conversation.append(("user", t.instruction))
            for s in t.said:
                conversation += [("assistant", s.text), ("user", s.reply)]
            if t.scored:
                conversation.append(("assistant", t.reply))
        return UserContext(task.scenario, self.turn_index, outcome.instruction, message, tuple(conversation),
                           len(outcome.said))

    def _hear(self, message: str) -> UserReply | None:
        """The user's reply to a plain message of the agent, or None when the message ends the turn."""
        preset, self._preset = self._preset, None
        context = self.user_context(message)
        if context is None:
            return None
        reply = preset if preset is not None else self.user.reply(context)
        if reply.ends_turn:
            return None
        outcome = self.turns[-1]
        outcome.said.append(Said(message, str(reply.text), reply.confirmed, outcome.actions - 1))
        return reply

    # -- the checks ----------------------------------------------------------------------------------------------
    def turn_view(self, reply: str) -> TurnView:
        """The current turn as its checks see it, ended by ``reply``."""
        assert self.task is not None
        outcome = self.turns[-1]
        calls = [CallView(c.name, c.arguments, c.ok, a) for c, a in zip(outcome.calls, outcome.call_actions,
                                                                        strict=True)]
        history = list(self._prior)
        for t in self.turns[:-1]:
            history += [s.text for s in t.said]
            if t.scored:
                history.append(t.reply)
        turn = self.task.turns[self.turn_index]
        return TurnView(reply, calls, tuple(outcome.said), tuple(history), answers_of(turn.checks))

    def score_reply(self, reply: str, only: Sequence[int] | None = None) -> list[CheckResult]:
        """The current turn's checks (those at the indexes ``only``, default every scored one) as they would score if
        ``reply`` ended the turn now, without ending it: the state, the turn's calls and the episode stay
        as they are (the validity gate scores several candidate replies on one state this way, and the
        cheap checks before the costly ones). Each result's ``index`` is the check's index in the turn."""
        self._check_live()
        return self.score_view(self.turn_view(reply), only)

    def score_view(self, view: TurnView, only: Sequence[int] | None = None,
                   checks: Sequence[BaseCheck] | None = None) -> list[CheckResult]:
        """The current turn's checks, or ``checks`` (another turn's), those at ``only`` (default every scored one), on
        ``view`` and the current state, without ending the turn (:meth:`score_reply` is this with the turn's own
        view)."""
        self._check_live()
        assert self.task is not None
        return judge(self.session, self.task.turns[self.turn_index].checks if checks is None else checks, view, only)

    def _check_turn(self, reply: str, only: Sequence[int] | None = None) -> list[CheckResult]:
        assert self.task is not None
        return judge(self.session, self.task.turns[self.turn_index].checks, self.turn_view(reply), only)

    def _free_checks(self, turn: Turn) -> list[bool]:
        """Per scored check of ``turn``, whether it passes if the agent does nothing in the turn (no call, an empty
        reply), judged on the state as the turn begins. A kind that doing nothing passes by definition (an
        ``unchanged`` check: its mark is this state) is not run."""
        scored = [i for i, c in enumerate(turn.checks) if c.scored]
        judged = [i for i in scored if not turn.checks[i].idle_passes]
        verdicts = {r.index: r.passed for r in judge(self.session, turn.checks, TurnView(), judged)} if judged else {}
        return [verdicts.get(i, True) for i in scored]

    @staticmethod
    def _undecided(turn: Turn) -> list[dict[str, Any]]:
        """The turn's ``judged`` checks, undecided (a judge in evaluation decides them)."""
        return [{"index": i, "kind": c.kind, "assertion": c.question() or "", "passed": None,
                 "detail": "undecided: no judge"} for i, c in enumerate(turn.checks) if not c.scored]

    def _scored_checks(self) -> int:
        """How many checks of the task count in the scores (``judged`` ones do not)."""
        assert self.task is not None
        return sum(c.scored for t in self.task.turns for c in t.checks)
