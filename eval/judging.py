"""Judged assertions: a judge model decides a run's ``judged`` checks, reported apart from the state-based score.

Role: after the episodes of an ``envwright eval`` run are played, :func:`judge_records` asks the judge
(:class:`envgen.users.Judge`, given by ``--judge-backend``/``--judge-model``) about every ``judged`` check of every
record's turns, on the record's whole conversation (:func:`conversation`: the user's and the agent's messages, the
agent's tool calls and their results), and writes each verdict into the turn record's ``judged`` entry (``passed``
True, False, or None when the judge gave none; ``detail`` the judge's answer). The score, the pass rates and every
reward stay those of the state-based checks: a judged verdict is counted only in :func:`judged_summary`, per suite.
Without a judge every entry stays undecided.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from envgen.errors import BackendError
from envgen.users import Judge

__all__ = ["conversation", "judge_records", "judged_markdown", "judged_summary"]

_RESULT_CHARS = 1_000  #: characters of a tool result the judge reads


def conversation(messages: Iterable[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """A record's transcript as ``(role, text)`` lines for the judge (the system prompt left out)."""
    out: list[tuple[str, str]] = []
    for m in messages:
        role = m.get("role")
        if role == "user":
            out.append(("user", str(m.get("content") or "")))
        elif role == "assistant":
            calls = [f"{c['function']['name']}({c['function'].get('arguments', '')})"
                     for c in m.get("tool_calls") or [] if isinstance(c, Mapping) and "function" in c]
            text = str(m.get("content") or "")
            out.append(("assistant", " ".join(p for p in [text, *(f"[calls {c}]" for c in calls)] if p)))
        elif role == "tool":
            out.append(("tool", str(m.get("content") or "")[:_RESULT_CHARS]))
    return out


def judge_records(records: list[dict[str, Any]], judge: Judge) -> int:
    """Decide every ``judged`` entry of ``records`` (in place, module docstring); returns how many were asked. A
    judge whose whole batch failed leaves them undecided, saying why."""
    slots: list[dict[str, Any]] = []
    items: list[tuple[str, list[tuple[str, str]]]] = []
    for rec in records:
        lines = conversation(rec.get("transcript") or [])
        for turn in rec.get("turns") or []:
            for entry in turn.get("judged") or []:
                slots.append(entry)
                items.append((str(entry.get("assertion", "")), lines))
    if not items:
        return 0
    try:
        verdicts = judge.decide(items)
    except BackendError as e:
        verdicts = [(None, f"the judge failed: {e}")] * len(items)
    for entry, (passed, text) in zip(slots, verdicts, strict=True):
        entry["passed"] = passed
        entry["detail"] = text or "the judge gave no verdict"
        entry["judge"] = judge.label
    return len(items)


def judged_summary(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Per suite: ``assertions`` (judged checks played), ``decided``, ``passed`` and ``pass_rate`` (over those
    decided; None when none was), apart from every state-based figure."""
    out: dict[str, dict[str, Any]] = {}
    for rec in records:
        for turn in rec.get("turns") or []:
            for entry in turn.get("judged") or []:
                block = out.setdefault(str(rec.get("suite")), {"assertions": 0, "decided": 0, "passed": 0})
                block["assertions"] += 1
                if entry.get("passed") is not None:
                    block["decided"] += 1
                    block["passed"] += entry["passed"] is True
    for block in out.values():
        block["pass_rate"] = block["passed"] / block["decided"] if block["decided"] else None
    return out


def judged_markdown(summary: Mapping[str, Any], code: Callable[[Any], str]) -> list[str]:
    """The report's lines on the judged assertions (none when the run had no judged check); ``code`` quotes the
    untrusted names (the report's ``md_code``)."""
    judged = summary.get("judged") or {}
    if not judged.get("suites"):
        return []
    out = ["\n### Judged assertions (apart from the score)\n",
           f"judge: {code(judged.get('judge') or 'none: undecided')}"]
    for suite, b in judged["suites"].items():
        rate = "undecided" if b["pass_rate"] is None else f"{b['pass_rate']:.3f}"
        out.append(f"- {code(suite)}: {b['passed']} of {b['decided']} decided passed (pass rate {rate}); "
                   f"{b['assertions']} assertions")
    return out
