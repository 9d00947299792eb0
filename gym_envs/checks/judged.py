"""The ``judged`` check (spec_version 2): an assertion about the conversation that a judge model decides.

The runtime never decides it: it counts in no reward mode and the gate never reads it. Evaluation given a judge
(``envwright eval --judge-backend B --judge-model M``) asks the judge about it once the episode is over and reports the
verdict apart from the state-based score (the turn record's ``judged``); without a judge it stays undecided.
:func:`judge_prompt` is the question the judge is asked.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Literal

from pydantic import Field

from gym_envs.checks.base import BaseCheck, TurnView, Verdict

__all__ = ["JUDGE_NO", "JUDGE_YES", "JudgedCheck", "judge_prompt", "judge_verdict"]

JUDGE_YES, JUDGE_NO = "YES", "NO"


class JudgedCheck(BaseCheck):
    """An assertion a judge model decides on the conversation; never scored by the runtime."""

    kind: Literal["judged"] = "judged"
    assertion: str = Field(min_length=1, description="What must be true of the conversation, in plain words.")

    since: ClassVar[int] = 2
    prompt: ClassVar[str] = ('{"kind": "judged", "assertion": "..."}: decided by a judge model in evaluation only, '
                             'never in the reward')
    scored: ClassVar[bool] = False
    idle_passes: ClassVar[bool] = True

    def verdict(self, view: TurnView, answers: list[Any]) -> Verdict:
        return Verdict(False, "undecided: only a judge model decides it")

    def summary(self) -> str:
        return f"judged: {self.assertion}"

    def question(self) -> str:
        return self.assertion

    def catches(self, mutant: str) -> bool:
        return False


def judge_prompt(assertion: str, transcript: Sequence[tuple[str, str]]) -> list[dict[str, str]]:
    """The chat a judge model answers for one assertion: the conversation (``(role, text)`` pairs: the user's and the
    agent's messages, tool calls and results) and the question, to be answered with ``YES`` or ``NO`` first."""
    lines = "\n".join(f"[{role}] {text}" for role, text in transcript)
    return [{"role": "system", "content": "You judge conversations between a user and a customer-service agent. "
             f"Answer with {JUDGE_YES} or {JUDGE_NO} first, then one sentence of reason."},
            {"role": "user", "content": f"Conversation:\n{lines}\n\nIs this true of the conversation: "
             f"{assertion}\nAnswer {JUDGE_YES} or {JUDGE_NO}."}]


def judge_verdict(text: str) -> bool | None:
    """A judge's answer as a verdict: ``True`` for a YES, ``False`` for a NO, ``None`` when it gave neither first."""
    head = text.strip().lstrip("*#'\"` ").upper()
    if head.startswith(JUDGE_YES):
        return True
    if head.startswith(JUDGE_NO):
        return False
    return None
