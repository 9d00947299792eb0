"""The scripted user: deterministic answers to the questions a scenario covers (gym_envs/ENVSPEC.md, "The scripted
user").

:class:`ScriptedUser` is ``ToolEnv``'s default user for scenario tasks, and so the gate's, the tests' and CPU
training's. On the agent's plain message it gives, in this order: the facts an asking sentence names and the message
does not already state (``My zip code is 19122.``); the ``on_confirm`` answer to a request to confirm or go ahead;
``unknown`` to any other question; else it ends the turn. ``ToolEnv`` stops asking it after ``max_replies`` replies
in a turn. It keeps no state: the same message in the same scenario always gets the same answer.
"""

from __future__ import annotations

import re

from gym_envs.users.base import END_TURN, UserContext, UserReply, UserSimulator
from gym_envs.users.scenario import Scenario, fact_text

__all__ = ["CONFIRM_NO", "CONFIRM_YES", "ScriptedUser", "asking_sentences", "facts_asked", "scripted_reply"]

CONFIRM_YES = "Yes, please go ahead."
CONFIRM_NO = "No, please don't."

_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")
_REQUEST = re.compile(r"\b(?:please|kindly)\s+(?:provide|tell|give|share|send|confirm|enter|specify)\b|"
                      r"\b(?:could|can|would)\s+you\b|\blet me know\b|\bmay i have\b|\bi need your\b", re.IGNORECASE)
_CONFIRM = re.compile(r"\b(?:confirm|proceed|go ahead|shall i|should i|do you want me to|would you like me to|"
                      r"is (?:that|this) (?:ok|okay|alright|correct|right|fine)|are you sure|may i)\b", re.IGNORECASE)


def _words(text: str) -> str:
    """Lowercase, ``_`` and ``-`` read as spaces, runs of space as one."""
    return " ".join(re.sub(r"[_-]", " ", text.lower()).split())


def asking_sentences(message: str) -> list[str]:
    """The sentences of ``message`` that ask: those ending with ``?`` and those making a request."""
    sentences = [s.strip() for s in _SPLIT.split(message) if s and s.strip()]
    return [s for s in sentences if s.endswith("?") or _REQUEST.search(s)]


def _names(sentence: str, name: str) -> bool:
    """Whether ``sentence`` names ``name``: as a phrase, or each of its words, as whole words."""
    text, want = _words(sentence), _words(name)
    if re.search(rf"\b{re.escape(want)}\b", text):
        return True
    words = want.split()
    return len(words) > 1 and all(re.search(rf"\b{re.escape(w)}\b", text) for w in words)


def facts_asked(scenario: Scenario, message: str) -> list[str]:
    """The keys of the facts ``message`` asks for, in the scenario's order: named by an asking sentence and not
    already stated in the message."""
    asking = asking_sentences(message)
    low = message.lower()
    return [key for key, value in scenario.facts.items()
            if fact_text(value).lower() not in low
            and any(_names(s, n) for s in asking for n in Scenario.fact_names(key))]


def scripted_reply(scenario: Scenario, message: str) -> UserReply:
    """The scripted user's answer to ``message`` (module docstring)."""
    asked = facts_asked(scenario, message)
    if asked:
        return UserReply(" ".join(f"My {Scenario.fact_names(k)[0]} is {fact_text(scenario.facts[k])}." for k in asked))
    asking = asking_sentences(message)
    if any(_CONFIRM.search(s) for s in asking):
        yes = scenario.on_confirm == "yes"
        return UserReply(CONFIRM_YES if yes else CONFIRM_NO, confirmed=yes)
    if any(s.endswith("?") for s in asking):
        return UserReply(scenario.unknown)
    return END_TURN


class ScriptedUser(UserSimulator):
    """The deterministic user (module docstring)."""

    label = "scripted"

    def reply(self, context: UserContext) -> UserReply:
        return scripted_reply(context.scenario, context.message)
