"""The ``unchanged`` check: tables equal their content at the start of the turn.

The turn's start is marked when the turn begins (``Session.mark``: table digests kept in the sandbox); the verdict
compares the digests now (a ``{"digests": ...}`` probe) with the marked ones (``{"marks": None}``). Empty ``tables``
means every table, and then any write at all fails it.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from gym_envs.checks.base import BaseCheck, Cost, Probe, TurnView, Verdict

__all__ = ["UnchangedCheck"]


class UnchangedCheck(BaseCheck):
    """Passes when ``tables`` (every table when empty) equal their content at the start of the turn."""

    kind: Literal["unchanged"] = "unchanged"
    tables: list[str] = Field(default_factory=list, description="Tables to compare; empty means all.")

    prompt: ClassVar[str] = ('{"kind": "unchanged", "tables": []}: those tables did not change ([] means all '
                             'tables)')
    cost: ClassVar[Cost] = "costly"
    idle_passes: ClassVar[bool] = True
    marks_turn: ClassVar[bool] = True

    def probes(self, view: TurnView) -> list[Probe]:
        return [{"digests": list(self.tables) or None}, {"marks": None}]

    def verdict(self, view: TurnView, answers: list[Any]) -> Verdict:
        now, marks = answers
        changed = [t for t, d in now.items() if marks.get(t) != d]
        if not self.tables:
            changed += [t for t in marks if t not in now]
        return Verdict(not changed, f"changed: {sorted(changed)}" if changed else "unchanged")

    def summary(self) -> str:
        return ", ".join(self.tables) if self.tables else "all tables"

    def guards_all_writes(self) -> bool:
        return not self.tables
