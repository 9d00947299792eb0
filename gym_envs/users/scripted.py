"""The scripted user: deterministic answers to the questions a scenario covers (gym_envs/ENVSPEC.md, "The scripted
user").

:class:`ScriptedUser` is ``ToolEnv``'s default user for scenario tasks, and so the gate's, the tests' and CPU
training's. On the agent's plain message it gives, in this order: the facts an asking sentence names and the message
does not already state (``My zip code is 19122.``); the ``on_confirm`` answer to a request to confirm or go ahead;
``unknown`` to any other question; else it ends the turn. ``ToolEnv`` stops asking it after ``max_replies`` replies
in a turn. It keeps no state: the same message in the same scenario always gets the same answer.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from gym_envs.users.base import END_TURN, UserContext, UserReply, UserSimulator
from gym_envs.users.scenario import Scenario, fact_text

__all__ = ["CONFIRM_NO", "CONFIRM_YES", "ScriptedUser", "asking_sentences", "facts_asked", "scripted_reply"]

CONFIRM_YES = "Yes, please go ahead."
CONFIRM_NO = "No, please don't."

#: a sentence: up to ``.``, ``!`` or ``?`` followed by a space or the end, or a line break (``4.50`` and ``e.g.x`` stay)
_SENTENCE = re.compile(r"[^.!?\n]+(?:[.!?]+(?![\s]|$)[^.!?\n]+)*[.!?]*")
_REQUEST = re.compile(r"\b(?:please|kindly)\s+(?:provide|tell|give|share|send|confirm|enter|specify)\b|"
                      r"\b(?:could|can|would)\s+you\b|\blet me know\b|\bmay i have\b|\bi need your\b", re.IGNORECASE)
_CONFIRM = re.compile(r"\b(?:confirm|proceed|go ahead|shall i|should i|do you want me to|would you like me to|"
                      r"is (?:that|this) (?:ok|okay|alright|correct|right|fine)|are you sure|may i)\b", re.IGNORECASE)
#: words every request phrase holds: a message with none of them makes no request (a cheap test first)
_REQUEST_HINTS = ("please", "kindly", "could", "can", "would", "let me know", "may i have", "i need your")
#: the words the confirmation phrases begin with: a message with none of them asks no confirmation (a cheap test first)
_CONFIRM_HINTS = ("confirm", "proceed", "ahead", "shall", "should", "want me", "like me", "is that", "is this",
                  "sure", "may i")
_NON_WORD = re.compile(r"[^a-z0-9]+")  #: what separates words (``_``, ``-``, punctuation, spaces)


def _words(text: str) -> list[str]:
    """The lowercase ASCII words of ``text`` (``_``, ``-`` and punctuation separate them; fact names are ASCII)."""
    return [w for w in _NON_WORD.split(text.lower()) if w]


def _requests(text: str) -> bool:
    """Whether ``text`` makes a request (``please provide``, ``could you``...): a cheap test of the words first."""
    low = text.lower()
    return any(h in low for h in _REQUEST_HINTS) and _REQUEST.search(text) is not None


def asking_sentences(message: str) -> list[str]:
    """The sentences of ``message`` that ask: those ending with ``?`` and those making a request."""
    if "?" not in message and not _requests(message):
        return []
    sentences = (s.strip() for s in _SENTENCE.findall(message))
    return [s for s in sentences if s and (s.endswith("?") or _requests(s))]


@dataclass(frozen=True)
class _Facts:
    """A scenario's facts prepared for matching (made once per scenario): one pattern finding any name as a phrase
    of whole words, the fact each phrase names, the names of several words (each word may stand anywhere in the
    sentence), each fact's value in lowercase."""

    pattern: re.Pattern[str] | None
    by_phrase: dict[str, str]
    multi: tuple[tuple[str, frozenset[str]], ...]
    values: dict[str, str]


@functools.lru_cache(maxsize=256)
def _prepare(facts: tuple[tuple[str, str], ...]) -> _Facts:
    by_phrase: dict[str, str] = {}
    multi: list[tuple[str, frozenset[str]]] = []
    for key, _ in facts:
        for name in Scenario.fact_names(key):
            words = _words(name)
            if words:
                by_phrase.setdefault(" ".join(words), key)
                if len(words) > 1:
                    multi.append((key, frozenset(words)))
    alternatives = sorted(by_phrase, key=len, reverse=True)
    pattern = re.compile(r"(?<![a-z0-9])(?:" + "|".join(r"[^a-z0-9]+".join(map(re.escape, p.split()))
                                                          for p in alternatives) + r")(?![a-z0-9])") \
        if alternatives else None
    return _Facts(pattern, by_phrase, tuple(multi), {k: v.lower() for k, v in facts})


def facts_asked(scenario: Scenario, message: str, asking: list[str] | None = None) -> list[str]:
    """The keys of the facts ``message`` asks for, in the scenario's order: named by an asking sentence (a name as a
    phrase, or each of its words, as whole words) and not already stated in the message."""
    asking = asking_sentences(message) if asking is None else asking
    if not asking or not scenario.facts:
        return []
    facts = _prepare(scenario.facts_said())
    named: set[str] = set()
    for sentence in asking:
        low = sentence.lower()
        if facts.pattern is not None:
            named.update(facts.by_phrase[" ".join(_words(m))] for m in facts.pattern.findall(low))
        if facts.multi:
            seen = set(_NON_WORD.split(low))
            named.update(key for key, words in facts.multi if words <= seen)
    if not named:
        return []
    text = message.lower()
    return [key for key in facts.values if key in named and facts.values[key] not in text]


def _asks_to_confirm(asking: list[str]) -> bool:
    for s in asking:
        low = s.lower()
        if any(h in low for h in _CONFIRM_HINTS) and _CONFIRM.search(s):
            return True
    return False


def scripted_reply(scenario: Scenario, message: str) -> UserReply:
    """The scripted user's answer to ``message`` (module docstring)."""
    asking = asking_sentences(message)
    if not asking:
        return END_TURN
    asked = facts_asked(scenario, message, asking)
    if asked:
        return UserReply(" ".join(f"My {Scenario.fact_names(k)[0]} is {fact_text(scenario.facts[k])}." for k in asked))
    if _asks_to_confirm(asking):
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
