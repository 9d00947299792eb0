"""The user simulator interface: what a user is asked, and what it answers.

Role: in a task with a scenario, a plain message of the agent goes to the task's user simulator before it may end
the turn (gym_envs/ENVSPEC.md, "A turn with a user"). A :class:`UserSimulator` answers a :class:`UserContext` (the
scenario, the turn's instruction, the message, the conversation so far) with a :class:`UserReply`: a reply (the turn
goes on) or :data:`END_TURN`. Two implementations: the deterministic :class:`~gym_envs.users.scripted.ScriptedUser`
(``ToolEnv``'s default) and :class:`~gym_envs.users.model.ModelUser` (a model plays the scenario). ``ToolEnv`` keeps
the bound: once the user has replied ``max_replies`` times in a turn it is not asked again.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from gym_envs.users.scenario import Scenario

__all__ = ["END_TURN", "UserContext", "UserReply", "UserSimulator", "is_confirmation"]


@dataclass(frozen=True)
class UserReply:
    """What the user answered: ``text`` (the next user message; None ends the turn), and whether it confirms what
    the agent asked (what a ``confirmed`` check reads)."""

    text: str | None
    confirmed: bool = False

    @property
    def ends_turn(self) -> bool:
        return self.text is None


END_TURN = UserReply(None)  #: the user ends the turn: the agent's message is the turn's final reply


@dataclass(frozen=True)
class UserContext:
    """What the user is asked about: the agent's ``message`` in turn ``turn`` of a task with ``scenario``.

    ``conversation`` is the conversation the user has seen before ``message``: ``("user", text)`` for its own
    messages (each turn's instruction, its replies) and ``("assistant", text)`` for the agent's plain messages (never
    tool calls or results). ``replies``: how many times it has replied in this turn already."""

    scenario: Scenario
    turn: int
    instruction: str
    message: str
    conversation: tuple[tuple[str, str], ...] = ()
    replies: int = 0


class UserSimulator:
    """A user simulator (module docstring): :meth:`reply` answers one message; :meth:`reply_batch` many at once (the
    episode engine asks every episode of a batch together, so a model-backed user generates them in one call)."""

    label = "user"

    def reply(self, context: UserContext) -> UserReply:
        return self.reply_batch([context])[0]

    def reply_batch(self, contexts: Sequence[UserContext]) -> list[UserReply]:
        if type(self).reply is UserSimulator.reply:
            raise NotImplementedError(f"{type(self).__name__} must implement reply or reply_batch")
        return [self.reply(c) for c in contexts]

    def open_batch(self, scenarios: Sequence[Scenario]) -> list[str | None]:
        """The first message of each scenario's conversation, written by this user; None: the task's first
        instruction opens it (this default: a scripted user writes no message of its own). A suite whose
        instructions carry what only the user should know asks a model-backed user for its opening instead."""
        return [None] * len(scenarios)

    def close(self) -> None:
        """Release what the user holds (a model)."""


_YES = re.compile(r"^\W*(?:yes|yeah|yep|sure|ok|okay|go ahead|please do|please proceed|please go ahead|confirm|"
                  r"confirmed|correct|that's right|that is right|absolutely|of course)\b", re.IGNORECASE)


def is_confirmation(text: str) -> bool:
    """Whether a user's reply confirms what it was asked: it begins with a yes (``yes``, ``sure``, ``okay``, ``go
    ahead``, ``please do``, ``confirmed``, ``correct``, ``that's right``...)."""
    return bool(_YES.match(text))
