"""The ``reply_contains`` check: the agent's message says the answer (gym_envs/ENVSPEC.md's row states every rule).

The text rules are :mod:`gym_envs.checks.text`. The state is read in one case: a message that contains a string
answer (not a number) names it, unless it lists the candidates instead; the columns holding any of the check's
strings (``{"columns": text}`` probes) give the candidates, and every string of the turn's ``reply_contains`` checks
(``TurnView.answers``) is no candidate. ``scope`` (spec_version 2): ``turn`` judges the turn's final message,
``conversation`` every message of the agent so far, each on its own: one that passes is enough. ``match``
(spec_version 2): ``answer`` applies those rules; ``substring`` finds a string as text only (case-insensitive, the
message's commas removed: τ²-bench's rule for communicated information), reading no state.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from gym_envs.checks.base import BaseCheck, Probe, TurnView, Verdict
from gym_envs.checks.text import MAX_REPLY_NUMBERS, is_number, names_too_many, reply_contains
from gym_envs.errors import cap_text

__all__ = ["ReplyContainsCheck"]


class ReplyContainsCheck(BaseCheck):
    """Passes when the turn's final reply (or, with ``scope: conversation``, any message of the agent so far)
    contains one of ``any_of`` (case-insensitive; numbers as numbers of their own; no list of candidates)."""

    kind: Literal["reply_contains"] = "reply_contains"
    any_of: list[str] = Field(min_length=1)
    scope: Literal["turn", "conversation"] = Field(
        default="turn", description="spec_version 2: 'turn' reads the turn's final message, 'conversation' every "
                                    "message of the agent so far.")
    match: Literal["answer", "substring"] = Field(
        default="answer", description="spec_version 2: 'answer' finds a number as a number of its own and refuses a "
                                      "list of the candidates; 'substring' finds a string anywhere in a message, "
                                      "case-insensitive, the message's commas removed (τ²-bench's rule).")

    prompt: ClassVar[str] = ('{"kind": "reply_contains", "any_of": ["answer", ...]}: the agent\'s final reply '
                             'contains one of them')

    @field_validator("any_of")
    @classmethod
    def _non_empty(cls, v: list[str]) -> list[str]:
        if any(not s.strip() for s in v):
            raise ValueError("strings must be non-empty")
        return v

    def _messages(self, view: TurnView) -> list[str]:
        return view.messages() if self.scope == "conversation" else [view.reply]

    def _strings(self) -> list[str]:
        """The strings that are no number (their columns give the candidates a message may name)."""
        return [s for s in self.any_of if not is_number(s)]

    def probes(self, view: TurnView) -> list[Probe]:
        """The columns of the check's string answers, when a message names one of them and no number."""
        if self.match == "substring":  # text only: no candidates to read
            return []
        for text in self._messages(view):
            found = [s for s in self.any_of if reply_contains(text, s)]
            if found and not any(is_number(s) for s in found):
                return [{"columns": s} for s in self._strings()]
        return []

    def verdict(self, view: TurnView, answers: list[Any]) -> Verdict:
        if self.match == "substring":
            return self._substring(self._messages(view))
        held: dict[str, list[str]] = {}
        for columns in answers:
            for label, values in columns:
                held.setdefault(label, values)
        wanted = list(view.answers) or self.any_of
        messages = self._messages(view)
        first: Verdict | None = None
        for text in messages:
            v = self._one(text, held, wanted)
            if v.passed:
                return v if len(messages) == 1 else Verdict(True, f"{v.detail} in the conversation")
            first = first or v if "found" in v.detail else first
        if first is not None:
            return first
        where = "any message of the agent" if self.scope == "conversation" else "the reply"
        return Verdict(False, f"{where} contains none of {self.any_of} (a number counts as a number of its own, "
                              f"in a reply that names at most {MAX_REPLY_NUMBERS} numbers)")

    def _substring(self, messages: list[str]) -> Verdict:
        """``match: substring``: a string of ``any_of`` in a message, case-insensitive, the message's commas removed."""
        for text in messages:
            plain = text.lower().replace(",", "")
            found = next((s for s in self.any_of if s.lower() in plain), None)
            if found is not None:
                where = " in the conversation" if len(messages) > 1 else ""
                return Verdict(True, f"found {found!r} as text{where}")
        where = "any message of the agent" if self.scope == "conversation" else "the reply"
        return Verdict(False, f"{where} contains none of {self.any_of} as text (case-insensitive, commas removed)")

    def _one(self, text: str, held: dict[str, list[str]], wanted: list[str]) -> Verdict:
        """One message's verdict: a string found, and (for one that is no number) few enough candidates named of
        every column that holds one of the check's strings."""
        found = [s for s in self.any_of if reply_contains(text, s)]
        if not found:
            return Verdict(False, "none")
        number = next((s for s in found if is_number(s)), None)
        if number is not None:
            return Verdict(True, f"found {number!r}")
        why = names_too_many(text, wanted, list(held.items()))
        if why is None:
            return Verdict(True, f"found {found[0]!r}")
        return Verdict(False, cap_text(f"found {found[0]!r}, but {why}: a list of the candidates is no answer", 300))

    def summary(self) -> str:
        scope = " (in the conversation)" if self.scope == "conversation" else ""
        match = " (as text)" if self.match == "substring" else ""
        return "any of " + json.dumps(self.any_of, ensure_ascii=False) + match + scope

    def v2_features(self) -> list[str]:
        return [f"a reply_contains check's {field!r}" for field, default in (("scope", "turn"), ("match", "answer"))
                if getattr(self, field) != default]

    @classmethod
    def version_1_schema(cls, schema: dict[str, Any]) -> None:
        schema.get("properties", {}).pop("scope", None)
        schema.get("properties", {}).pop("match", None)

    def answers(self) -> list[str]:
        return list(self.any_of)
