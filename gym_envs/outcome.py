"""How one turn of an episode went: its calls, what the user answered, its reply, its checks and what they credit.

Role: :class:`TurnOutcome` is the record :class:`~gym_envs.env.ToolEnv` keeps per turn (the episode's
last ``info["turn_results"]`` holds their :meth:`~TurnOutcome.to_dict`) and the one its replay methods
(:mod:`gym_envs.replay`) rebuild; both modules import it from here, so neither imports the other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gym_envs.checks import Said
from gym_envs.sandbox import CallResult, CheckResult

__all__ = ["TurnOutcome"]


@dataclass
class TurnOutcome:
    """How one turn went."""

    index: int
    instruction: str
    calls: list[CallResult] = field(default_factory=list)
    call_actions: list[int] = field(default_factory=list)  #: per call, the action of the turn that made it (from 0)
    said: list[Said] = field(default_factory=list)  #: the agent's messages the user answered (the turn went on)
    actions: int = 0  #: the agent's actions in this turn so far
    reply: str = ""
    checks: list[CheckResult] = field(default_factory=list)
    scored: bool = False
    #: per check, whether it passes if the agent does nothing in this turn (judged as the turn begins, in the
    #: ``progress`` reward mode or with ``track_progress``; else None)
    free: list[bool] | None = None
    #: the turn's ``judged`` checks: ``{"index", "kind", "assertion", "passed", "detail"}``, ``passed`` None until a
    #: judge (evaluation's) decides it
    judged: list[dict[str, Any]] = field(default_factory=list)

    def add_calls(self, results: list[CallResult]) -> None:
        """Record calls made by the turn's latest action."""
        self.calls.extend(results)
        self.call_actions.extend([max(0, self.actions - 1)] * len(results))

    @property
    def passed(self) -> bool:
        return self.scored and all(c.passed for c in self.checks)

    @property
    def credited(self) -> int:
        """The checks the ``progress`` mode credits: those passed that doing nothing fails, and the passed ones
        doing nothing keeps (the guards) only beside one of those, or where every check of the turn is kept by
        doing nothing (doing nothing is then the task). Without ``free``: every passed check."""
        passed = [c.passed for c in self.checks]
        if self.free is None or len(self.free) != len(passed):
            return sum(passed)
        progress = sum(p and not f for p, f in zip(passed, self.free, strict=True))
        guards = sum(p and f for p, f in zip(passed, self.free, strict=True))
        return progress + (guards if progress or all(self.free) else 0)

    def to_dict(self) -> dict[str, Any]:
        out = {"index": self.index, "instruction": self.instruction, "reply": self.reply,
               "calls": [c.to_dict() for c in self.calls], "checks": [c.to_dict() for c in self.checks],
               "passed": self.passed}
        if self.free is not None:
            out["free"] = list(self.free)
        if self.said:
            out["said"] = [{"text": s.text, "reply": s.reply, "confirmed": s.confirmed} for s in self.said]
        if self.judged:
            out["judged"] = [dict(j) for j in self.judged]
        return out
