"""What a turn's reply must contain: the oracle's reply and the distinctiveness of ``reply_contains`` strings.

Role: the reply side of the check-adequacy rule (:mod:`envgen.gate.adequacy`). The reference
trajectory ends each turn with :func:`oracle_reply`; a ``reply_contains`` string must be distinctive
(:func:`answer_problem`, :func:`reply_problems`): at least 3 characters unless numeric, and not contained
in the turn's instruction, a tool's description or a generic reply (for a number: not as a number of its
own), or a reply that repeats them would be paid without answering. Task writers use the same functions
to pick answers the gate accepts (:mod:`envgen.blueprint.render.tasks`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from envgen.gate.mutants import GENERIC_REPLY
from envgen.gate.values import is_numeric
from gym_envs.checks.text import text_contains
from gym_envs.spec import EnvSpec, Task, Turn

__all__ = ["GENERIC_REPLIES", "answer_problem", "oracle_reply", "reply_problems", "tool_texts"]

GENERIC_REPLIES = (GENERIC_REPLY, "OK, all done.", "Sure, I have taken care of it.", "Here is what I found.",
                   "I have no idea.")
"""Replies that carry no answer: a ``reply_contains`` string they contain pays a reply that says nothing.
(A refusal is no generic reply: it is the answer of a decline turn and of the refused part of a mixed one.)"""

def oracle_reply(turn: Turn) -> str:
    """The reference trajectory's final message for a turn: the first answer string of each check that reads a
    message (a ``reply_contains`` check: :meth:`~gym_envs.checks.BaseCheck.answers`; the oracle knows the answer),
    else ``"Done."``."""
    parts = [a[0] for c in turn.checks if (a := c.answers())]
    return " ".join(parts) if parts else GENERIC_REPLY


def _contains(text: str, s: str) -> bool:
    """Whether a reply that repeats ``text`` would pass a check for ``s``: the runtime's own matcher."""
    return text_contains(text, s)


def tool_texts(spec_tools: Iterable[Any]) -> list[tuple[str, str]]:
    """``(where, text)`` of each tool's description with its parameters' descriptions (tool objects or
    OpenAI-format dicts)."""
    out = []
    for t in spec_tools:
        d = t if isinstance(t, dict) else t.model_dump()
        props = (d.get("parameters") or {}).get("properties") or {}
        params = [str(p.get("description", "")) for p in props.values() if isinstance(p, dict)]
        out.append((f"the description of tool {d.get('name')!r}", " ".join([str(d.get("description", "")), *params])))
    return out


def answer_problem(answer: str, instruction: str, tools: list[tuple[str, str]], generic: Iterable[str]) -> str | None:
    """Why a ``reply_contains`` string is not distinctive, or None: shorter than 3 characters (unless a
    number), or contained in the instruction, a tool's description or a generic reply (a number: as a
    number of its own)."""
    if len(answer.strip()) < 3 and not is_numeric(answer):
        return (f"reply_contains string {answer!r} is shorter than 3 characters: almost any reply contains it; "
                "check for the distinctive answer (a name, a value)")
    places = [("the instruction", instruction), *tools, *((f"the generic reply {g!r}", g) for g in generic)]
    where = next((name for name, text in places if _contains(text, answer)), None)
    if where is None:
        return None
    return (f"reply_contains string {answer!r} is contained in {where}, so a reply that repeats it passes "
            "without answering; check for a value only the right answer contains")


def reply_problems(spec: EnvSpec, task: Task, ti: int, *, tools: list[tuple[str, str]] | None = None) -> list[str]:
    """Why the answer strings of turn ``ti``'s checks (``reply_contains``) are not distinctive (empty when they are).
    ``tools``: ``tool_texts(spec.tools)`` when the caller has it (made here otherwise).

    The tool descriptions do not count for a reply that is about the tools rather than an answer read
    through them: a ``decline`` turn (it says what the tools cannot do, and why) and a turn that asks back (a
    ``missing_parameter`` task's turn before the last: it asks for a parameter, which every tool schema names), by
    the turn's ``expects`` or its task's kind."""
    turn = task.turns[ti]
    about_tools = (task.kind == "decline" or turn.expects is not None
                   or (task.kind == "missing_parameter" and ti + 1 < len(task.turns)))
    if about_tools:
        tools = []
    elif tools is None:
        tools = tool_texts(spec.tools)
    out = []
    for check in turn.checks:
        out += [p for s in check.answers() if (p := answer_problem(s, turn.instruction, tools, GENERIC_REPLIES))]
    return out
