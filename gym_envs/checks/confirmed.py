"""The ``confirmed`` check (spec_version 2): the named writes were made only after the user confirmed them.

Every call of ``tools`` the turn attempted must come after a plain message of the agent in the same turn that the
user answered with a confirmation (``Said.confirmed``), with no other plain message of the agent in between: a write
asked about and agreed to, as τ²-bench's policies require. Doing nothing passes it; a task without a scenario has
no user, so any such call fails it. It reads no state. Adequacy: it catches any wrong trajectory that fails it,
in particular the reference with its confirmation (its ``say`` item) left out.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from gym_envs.checks.base import BaseCheck, CallView, Said, TurnView, Verdict

__all__ = ["ConfirmedCheck"]


class ConfirmedCheck(BaseCheck):
    """Passes when every attempted call of ``tools`` follows a message the user answered with a confirmation."""

    kind: Literal["confirmed"] = "confirmed"
    tools: list[str] = Field(min_length=1, description="The write tools that need the user's confirmation.")

    since: ClassVar[int] = 2
    prompt: ClassVar[str] = ('{"kind": "confirmed", "tools": ["tool"]}: each call of those tools came after the '
                             'user confirmed it (a question the user answered yes)')
    idle_passes: ClassVar[bool] = True

    def verdict(self, view: TurnView, answers: list[Any]) -> Verdict:
        last: Said | None = None
        bad: list[str] = []
        for event in view.events():
            if isinstance(event, Said):
                last = event
            elif isinstance(event, CallView) and event.name in self.tools and not (last and last.confirmed):
                bad.append(event.name)
        if bad:
            why = "the user's last answer was no confirmation" if last else "nobody asked the user"
            return Verdict(False, f"{', '.join(dict.fromkeys(bad))} called without the user's confirmation ({why})")
        return Verdict(True, "every such call was confirmed" if any(c.name in self.tools for c in view.calls)
                       else f"no call of {', '.join(self.tools)}")

    def summary(self) -> str:
        return "the user confirmed each call of " + ", ".join(self.tools)

    def tool_names(self) -> list[str]:
        return list(self.tools)
