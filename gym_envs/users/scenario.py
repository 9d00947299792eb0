"""A task's scenario (spec_version 2): the simulated user the agent talks to (gym_envs/ENVSPEC.md, "Conversations").

:class:`Scenario` is the pydantic model of a task's ``scenario``: who the user is (``persona``), what they want
(``goal``, hidden from the agent), what they know (``facts``), how they answer a request to confirm (``on_confirm``)
and a question no fact answers (``unknown``), and how many replies they give per turn (``max_replies``).
:meth:`Scenario.fact_names` splits a fact's name into its alternatives (``"zip code|postcode"``).
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator

__all__ = ["FACT_NAME", "Scenario", "fact_text"]

#: one name of a fact: letters, digits, spaces, ``_``, ``-`` and ``'`` (a fact's key lists names separated by ``|``)
FACT_NAME = r"[A-Za-z0-9][A-Za-z0-9 _'-]{0,39}"


def fact_text(value: str | int | float | bool) -> str:
    """A fact's value as the user says it (a boolean as ``yes`` / ``no``)."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


class Scenario(BaseModel):
    """The simulated user of a task (gym_envs/ENVSPEC.md, "Conversations with a simulated user")."""

    model_config = ConfigDict(extra="forbid")

    persona: str = Field(default="", description="Who the user is and how they talk.")
    goal: str = Field(min_length=1, description="The user's hidden instructions: what they want and how to react.")
    facts: dict[str, str | int | float | bool] = Field(
        default_factory=dict, description="What the user knows and tells when asked, by name ('zip code|postcode' "
                                          "lists alternatives; the first is said).")
    on_confirm: Literal["yes", "no"] = Field(default="yes", description="The answer to a request to confirm.")
    unknown: str = Field(default="I don't know.", min_length=1,
                         description="The reply to a question no fact answers.")
    max_replies: int = Field(default=5, ge=0, le=50, description="Replies per turn; then a plain message ends it.")
    _said: tuple[tuple[str, str], ...] | None = PrivateAttr(default=None)

    def facts_said(self) -> tuple[tuple[str, str], ...]:
        """``(key, value as the user says it)`` of each fact, in order (made once per scenario; read from the private
        store directly: pydantic's attribute fallback costs microseconds, and the scripted user reads it for every
        message)."""
        private = self.__pydantic_private__
        said = private.get("_said") if private is not None else None
        if said is None:
            said = self._said = tuple((k, fact_text(v)) for k, v in self.facts.items())
        return said

    @field_validator("facts")
    @classmethod
    def _fact_names(cls, v: dict[str, str | int | float | bool]) -> dict[str, str | int | float | bool]:
        for key, value in v.items():
            if not re.fullmatch(f"{FACT_NAME}(?:\\|{FACT_NAME})*", key):
                raise ValueError(f"fact name {key!r}: use words of letters and digits (alternatives separated by "
                                 "'|', e.g. 'zip code|postcode')")
            if not fact_text(value).strip():
                raise ValueError(f"fact {key!r} has an empty value")
        return v

    @staticmethod
    def fact_names(key: str) -> list[str]:
        """The alternative names of a fact's key, the one the user says first."""
        return [n.strip() for n in key.split("|") if n.strip()]
