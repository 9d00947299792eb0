"""The ``state`` check (spec_version 2): named tables equal the state the reference reaches, by table digest.

A table's digest is the SHA-256 of its sorted row texts (gym_envs/ENVSPEC.md, "Table digests"), computed in the
sandbox (a ``{"digests": tables}`` probe); τ²-bench's database hash, per table.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from gym_envs.checks.base import BaseCheck, Cost, Probe, TurnView, Verdict

__all__ = ["StateCheck"]


class StateCheck(BaseCheck):
    """Passes when each named table's digest equals the one given: the state the reference reaches."""

    kind: Literal["state"] = "state"
    digests: dict[str, str] = Field(min_length=1, description="Table name -> the table's SHA-256 digest "
                                                              "(gym_envs/ENVSPEC.md, 'Table digests').")

    since: ClassVar[int] = 2
    prompt: ClassVar[str] = ('{"kind": "state", "digests": {"table": "sha256"}}: those tables hold exactly the rows '
                             'the reference leaves (table digests)')
    cost: ClassVar[Cost] = "costly"

    @field_validator("digests")
    @classmethod
    def _hex(cls, v: dict[str, str]) -> dict[str, str]:
        bad = [t for t, d in v.items() if not re.fullmatch(r"[0-9a-f]{64}", d)]
        if bad:
            raise ValueError(f"digests of {bad} are not 64 lowercase hex digits (SHA-256)")
        return v

    def probes(self, view: TurnView) -> list[Probe]:
        return [{"digests": sorted(self.digests)}]

    def verdict(self, view: TurnView, answers: list[Any]) -> Verdict:
        now = answers[0]
        differ = sorted(t for t, d in self.digests.items() if now.get(t) != d)
        return Verdict(not differ, f"differs from the expected state: {differ}" if differ else "the expected state")

    def summary(self) -> str:
        return "tables " + ", ".join(sorted(self.digests)) + " as the reference leaves them"
