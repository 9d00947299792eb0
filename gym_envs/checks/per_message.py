"""The ``calls_per_message`` check (spec_version 2): no action of the turn made more than ``max`` tool calls.

A policy such as "one tool call at a time" (τ²-bench's airline and retail policies). Doing nothing passes it; it
reads no state. A reference is played in actions of at most ``max`` calls (:meth:`max_calls_per_action`).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, ClassVar, Literal

from pydantic import Field

from gym_envs.checks.base import BaseCheck, TurnView, Verdict

__all__ = ["CallsPerMessageCheck"]


class CallsPerMessageCheck(BaseCheck):
    """Passes when every action of the turn made at most ``max`` tool calls."""

    kind: Literal["calls_per_message"] = "calls_per_message"
    max: int = Field(ge=1, description="The most tool calls one message of the agent may make.")

    since: ClassVar[int] = 2
    prompt: ClassVar[str] = ('{"kind": "calls_per_message", "max": 1}: no message of the agent makes more than max '
                             'tool calls')
    idle_passes: ClassVar[bool] = True

    def verdict(self, view: TurnView, answers: list[Any]) -> Verdict:
        per = Counter(c.action for c in view.calls)
        most = max(per.values(), default=0)
        if most > self.max:
            return Verdict(False, f"a message made {most} tool calls; at most {self.max} allowed")
        return Verdict(True, f"at most {most} per message")

    def summary(self) -> str:
        return f"at most {self.max} tool call{'s' if self.max != 1 else ''} per message"

    def max_calls_per_action(self) -> int:
        return self.max
